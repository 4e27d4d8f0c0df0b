"""Claims decided by code: a scenario's checks (a tool called or not, a pattern said or not) and the judge entries they are written among (``Rule``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar

import msgspec

from convy.agent import Asked, Call
from convy.judge import Claim
from convy.pattern import Pattern
from convy.problems import (
    kind_of,
)
from convy.slots import Slotted
from convy.tools import at_path, path_of, same
from convy.transcript import Transcript

# Fills one field's text with a scenario's values: the field's name (for the error), its text, and
# how a value is written into it.
# The fields of a check that hold a pattern, and the characters of a text a problem line quotes.
PATTERNS: tuple[str, ...] = ("said", "not_said", "said_done")
QUOTED = 60

Fill = Callable[[str, str, Callable[[Any], str]], str]


_SPECIAL = frozenset("\\.^$|?*+()[]{}")


def literal(value: Any) -> str:
    """A value written into a pattern so that it matches as written: ``12.5`` matches "12.5"."""
    return "".join("\\" + char if char in _SPECIAL else char for char in str(value))


class Check(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True, dict=True):
    """A claim decided by code from the transcript: a tool called or not, a pattern said or not,
    or the scenario's tools' state as the dialogue left it (``state``: each path's value).

    Its text and its pattern are made once, when first needed, and kept beside its fields
    (never encoded or compared): a run decides it in every attempt.
    """

    called: str = ""
    with_: dict[str, Any] = msgspec.field(default_factory=dict, name="with")
    not_called: str = ""
    said: str = ""
    not_said: str = ""
    state: dict[str, Any] = {}
    asked_approval: str = ""
    not_asked_approval: str = ""
    said_done: str = ""
    by_calling: str = ""

    KINDS: ClassVar[tuple[str, ...]] = (
        "called", "not_called", "said", "not_said", "state", "asked_approval", "not_asked_approval", "said_done"
    )

    def __post_init__(self) -> None:
        given = [name for name in self.KINDS if getattr(self, name)]
        if len(given) != 1:
            raise ValueError(f"check: give exactly one of {', '.join(self.KINDS)}")
        for path in self.state:
            if any(not key.strip() for key in path_of(path)):
                raise ValueError(f"state.{path}: a path is keys joined by dots, none empty: bookings.ABC123.seat")
        if self.with_ and not self.called:
            raise ValueError("with: goes only with called")
        if self.said_done and not self.by_calling.strip():
            raise ValueError("said_done: give the tool that does what the words say under by_calling: cancel_booking")
        if self.by_calling and not self.said_done:
            raise ValueError("by_calling: goes only with said_done, the words that say it was done")
        for field in ("called", "not_called", "by_calling"):  # a tool's name as code calls it, lookup(), is never a tool's name
            name = getattr(self, field)
            if "(" in name:
                bare = name.split("(", 1)[0].strip()
                inside = name.split("(", 1)[1].rstrip(") ").strip()
                fix = f"{field}: {bare}" + (", and its arguments under with: {...}" if inside else "")
                raise ValueError(f"{field}: {name!r}: a tool's name, without brackets: {fix}")
        for field in ("said", "not_said", "said_done"):
            pattern = getattr(self, field)
            problem = Pattern(pattern).problem() if pattern else ""
            if problem:
                raise ValueError(f"{field}: {problem}")

    def filled(self, fill: Fill, values: dict[str, Any]) -> Check:
        """This check with its slots filled by ``fill`` (which names the field at fault): a
        pattern's slots take their value as text, not as pattern; a ``with:`` value that is one
        slot alone takes its value as it is (a number stays a number)."""
        return Check(
            called=fill("called", self.called, str),
            with_=self._argument(fill, values, "with", self.with_),
            not_called=fill("not_called", self.not_called, str),
            said=fill("said", self.said, literal),
            not_said=fill("not_said", self.not_said, literal),
            state={
                fill(f"state.{path}", path, str): self._argument(fill, values, f"state.{path}", value)
                for path, value in self.state.items()
            },
            asked_approval=fill("asked_approval", self.asked_approval, str),
            not_asked_approval=fill("not_asked_approval", self.not_asked_approval, str),
            said_done=fill("said_done", self.said_done, literal),
            by_calling=fill("by_calling", self.by_calling, str),
        )

    def _argument(self, fill: Fill, values: dict[str, Any], field: str, value: Any) -> Any:
        match value:
            case str() if Slotted(value).alone() in values:
                return values[Slotted(value).alone()]
            case str():
                return fill(field, value, str)
            case dict():
                return {
                    fill(field, str(key), str): self._argument(fill, values, f"{field}.{key}", item)
                    for key, item in value.items()
                }
            case list():
                return [self._argument(fill, values, f"{field}[{number}]", item) for number, item in enumerate(value)]
            case _:
                return value

    def text(self) -> str:
        """The check as a claim, as reports show it."""
        return self._text

    @functools.cached_property
    def _text(self) -> str:
        if self.called:
            arguments = ", ".join(f"{key}={value!r}" for key, value in self.with_.items())
            return f"called {self.called}" + (f" with {arguments}" if arguments else "")
        if self.not_called:
            return f"never called {self.not_called}"
        if self.said:
            return f"said /{self.said}/"
        if self.asked_approval:
            return f"asked approval before {self.asked_approval}"
        if self.not_asked_approval:
            return f"never asked approval before {self.not_asked_approval}"
        if self.said_done:
            return f"called {self.by_calling} before saying /{self.said_done}/"
        if self.state:
            return "state " + ", ".join(f"{path} is {msgspec.json.encode(value).decode()}" for path, value in self.state.items())
        return f"never said /{self.not_said}/"

    def claim(self, transcript: Transcript) -> Claim:
        """This check decided on the transcript, with the turn that decided it as the reason."""
        if self.called or self.not_called:
            return self._tool(transcript)
        if self.state:
            return self._state(transcript)
        if self.asked_approval or self.not_asked_approval:
            return self._asked(transcript)
        if self.said_done:
            return self._done(transcript)
        return self._said(transcript)

    def settled(self, transcript: Transcript) -> tuple[Claim, ...]:
        """This check decided on a dialogue that was cut short, if more turns could not change it
        (one claim), or nothing: ``called`` and ``said`` are settled once they hold, ``not_called``
        and ``not_said`` once they fail; ``state`` never (a later call may change it); an approval
        check as ``called`` and ``not_called`` are."""
        if self.state:
            return ()
        claim = self.claim(transcript)
        return (claim,) if claim.held == bool(self.called or self.said or self.asked_approval) and not claim.doubt else ()

    def _tool(self, transcript: Transcript) -> Claim:
        # One pass over the steps, ended where the check is decided: at the first call of the tool
        # for ``not_called``, at the first that fits for ``called``; past them, how many times it
        # was called and with what, or the tools called instead, to show a miss.
        name = self.called or self.not_called
        turns = transcript.turns
        # Most replies held the path where the calls would be: the first one found says so. Where
        # the scenario's own tools served the calls (a state kept), they saw every one. Where not
        # every call could be seen, one that was still decides; none seen decides nothing (below).
        unseen = self._unseen(transcript)
        calls = 0
        given: list[dict[str, Any]] = []  # the arguments of the calls of that tool, to show a miss
        tools: dict[str, None] = {}  # the tools called, in order, to show a name never called
        traced = transcript.traced
        reported = 0  # the first turn where the agent reported a call of that tool its spans did not show
        for number, turn in enumerate(turns, start=1):
            for step in turn.answer.steps:
                match step:
                    case Call(source="claimed"):  # reported, never seen by the scenario's tool of that name
                        pass
                    case Call(source="", traced=False) if traced and self.called:  # reported, never seen in its own spans
                        # (for not_called the agent's own word that it called the tool is enough)
                        if step.name == name and not reported:
                            reported = number
                    case Call(name=called) if called == name:
                        if self.not_called:  # decided at the first call: its turn is the reason
                            return Claim(self.text(), False, f"agent called {name} in turn {number}", by="code")
                        if self._with(step):  # decided at the first call that fits, as below
                            return Claim(self.text(), True, f"agent called {name} in turn {number}", by="code")
                        calls += 1
                        given.append(step.arguments)
                    case Call(name=called):
                        tools[called] = None
                    case _:
                        pass
        if unseen:
            return Claim(self.text(), False, unseen, by="code", doubt="unseen")
        unshown = f" (it reported a call of it in turn {reported}, which its own spans did not show)" if reported else ""
        if self.not_called:
            return Claim(self.text(), True, f"agent never called {name}{unshown}", by="code")
        if calls:
            wanted = ", ".join(f"{key}={value!r}" for key, value in self.with_.items())
            return Claim(
                self.text(), False, f"agent called {name} {calls} time(s), never with {wanted}: {self._given(given)}", by="code"
            )
        if tools:
            shown = ", ".join(list(tools)[: self.SHOWN_CALLS]) + (", ..." if len(tools) > self.SHOWN_CALLS else "")
            return Claim(self.text(), False, f"agent never called {name}{unshown}; it called {shown}", by="code")
        return Claim(self.text(), False, f"agent never called {name}{unshown}", by="code")

    @staticmethod
    def _unseen(transcript: Transcript) -> str:
        """Why not every tool call of the dialogue could be seen, or "": no reply held the path where
        the agent's calls would be, or its calls are seen only in its spans and not all of those came
        (``Transcript.unseen``); the scenario's own tools served none (no state kept), and no spans
        of the agent's showed them all (``Transcript.traced``). Most replies held the path: the
        first one found says so. A call that was seen still decides a check (``_tool``)."""
        turns = transcript.turns
        if not turns or transcript.state is not None or transcript.traced:
            return ""
        if transcript.unseen:  # seen only in spans, which did not show them
            return transcript.unseen
        if not all(turn.answer.unheld for turn in turns):
            return ""
        unheld = {turn.answer.unheld for turn in turns}
        paths = ", ".join(repr(path) for path in sorted(unheld))
        kinds = sorted({turn.answer.unheld_as for turn in turns} - {""})
        said = (
            f"its calls path {paths} held {' or '.join(kinds)}, never a list of calls"
            if kinds
            else f"no reply of the agent held its calls path {paths}"
        )
        return f"{said}: no tool call could be seen"

    SHOWN_CALLS: ClassVar[int] = 3  # the calls (or tools) a failed check shows
    SHOWN_VALUE: ClassVar[int] = 40  # the characters of each argument's value it shows

    def _given(self, given: list[dict[str, Any]]) -> str:
        """What the agent's calls were given, as a failed ``with:`` shows them: each call's
        arguments (the first few), and for an argument given with the value asked for but of
        another kind (``'12'`` for ``12``), which kind each is."""
        shown = "; ".join(
            "(" + ", ".join(f"{key}={self._value(value)}" for key, value in arguments.items()) + ")"
            for arguments in given[: self.SHOWN_CALLS]
        )
        said = f"it was given {shown}{'; ...' if len(given) > self.SHOWN_CALLS else ''}"
        for key, value in self.with_.items():
            other = next((arguments[key] for arguments in given if key in arguments and arguments[key] != value), None)
            if other is not None and str(other) == str(value) and type(other) is not type(value):
                said += (
                    f" ({key} came as {kind_of(other)}, {other!r}, where with: has "
                    f"{kind_of(value)}, {value!r}: write it as the agent sends it)"
                )
                break
        return said

    def _value(self, value: Any) -> str:
        written = repr(value)
        return written if len(written) <= self.SHOWN_VALUE else written[: self.SHOWN_VALUE] + "..."

    def _with(self, call: Call) -> bool:
        """Whether the call was given every argument ``with:`` asks for, with its value."""
        given = call.arguments
        for key, value in self.with_.items():
            if key not in given or not same(given[key], value):  # as JSON reads them: 1 and 1.0 alike, 1 and true not
                return False
        return True

    def _asked(self, transcript: Transcript) -> Claim:
        """Whether the agent paused to ask before running the tool: a pause of the attempt's
        (``Asked``), or a call the agent's own report marks asked about; the first turn it asked in,
        and the answer, as the reason."""
        name = self.asked_approval or self.not_asked_approval
        for number, turn in enumerate(transcript.turns, start=1):
            for step in turn.answer.steps:
                match step:
                    case Asked(tool=tool, answer=answer, by=by) if tool == name:
                        answered = "nobody answered (denied)" if by == "nobody" else f"the {by} answered {answer}"
                        return Claim(self.text(), bool(self.asked_approval), f"agent asked before {name} in turn {number}, and {answered}", by="code")
                    case Call(name=called, approval=approval) if called == name and approval:
                        return Claim(self.text(), bool(self.asked_approval), f"agent asked before {name} in turn {number}, and was {approval}", by="code")
                    case _:
                        pass
        return Claim(self.text(), not self.asked_approval, f"agent never asked before {name}", by="code")

    def _state(self, transcript: Transcript) -> Claim:
        """Whether the tools' state as the dialogue left it holds each path's value, the first that
        does not as the reason."""
        state = transcript.state
        if state is None:
            return Claim(self.text(), False, "no state of the scenario's tools was kept for this dialogue", by="code")
        for path, wanted in self.state.items():
            found, value = at_path(state, path_of(path))
            if not found:
                return Claim(self.text(), False, f"the tools' state has nothing at {path}", by="code")
            if not same(value, wanted):
                return Claim(self.text(), False, f"the tools' state has {path} = {self._json(value)}", by="code")
        shown = ", ".join(f"{path} = {self._json(at_path(state, path_of(path))[1])}" for path in self.state)
        return Claim(self.text(), True, f"the tools' state has {shown}", by="code")

    def _json(self, value: Any) -> str:
        """A value of the tools' state as JSON writes it (true, null), cut as a failed check shows it."""
        written = msgspec.json.encode(value).decode()
        return written if len(written) <= self.SHOWN_VALUE else written[: self.SHOWN_VALUE] + "..."

    @functools.cached_property
    def _pattern(self) -> Pattern:
        return Pattern(self.said or self.not_said or self.said_done)

    def _done(self, transcript: Transcript) -> Claim:
        """Whether, each time the agent's words said the thing was done (``said_done``), a call of
        ``by_calling`` that did it had been seen by then, in that turn or one before: served by
        the scenario's own tools, shown by the agent's own spans, or, where no spans of the
        agent's were received for the dialogue, reported by the agent. A call that failed, that
        the person asked denied, or that only the agent claimed of a tool the scenario declares
        did nothing. The first turn that said it decides."""
        name, pattern = self.by_calling, self._pattern
        done = 0  # the turn of the first call that did it
        failed = ""  # what the latest call that did not do it was, to say
        for number, turn in enumerate(transcript.turns, start=1):
            for step in turn.answer.steps:
                match step:
                    case Call(name=called) if called == name and not done:
                        why = self._undone(step, transcript.traced)
                        if why:
                            failed = f"; its call in turn {number} {why}"
                        else:
                            done = number
                    case _:
                        pass
            found = pattern.found(turn.answer.text)
            if found is None:
                continue
            reply = turn.answer.text
            shown = found or (reply if len(reply) <= self.SHOWN_VALUE else reply[: self.SHOWN_VALUE] + "...")
            if done:
                return Claim(self.text(), True, f"agent called {name} in turn {done}, and said {shown!r} in turn {number}", by="code")
            unseen = self._unseen(transcript)
            if unseen:
                return Claim(self.text(), False, f"agent said {shown!r} in turn {number}, but {unseen}", by="code", doubt="unseen")
            return Claim(
                self.text(), False, f"agent said {shown!r} in turn {number}, but no call of {name} that did it was seen by then{failed}", by="code"
            )
        return Claim(self.text(), True, f"agent never said anything matching /{pattern.text}/", by="code")

    @staticmethod
    def _undone(call: Call, traced: bool) -> str:
        """Why ``call`` did not do its tool's work, as a failed ``said_done`` says it; "" where it did.
        ``traced``: the dialogue's calls were seen in the agent's own spans, so one they did not
        show, and the scenario's tools did not serve, is the agent's word alone."""
        if call.error:
            return f"failed ({call.error})"
        match call.source:
            case "denied":
                return "was denied by the person asked"
            case "claimed":
                return "was only said by the agent: the scenario's tool never saw it"
            case "unanswered" | "invalid" | "unknown":
                return "got no answer"
            case "" if traced and not call.traced:
                return "was only reported by the agent: its spans did not show it"
            case _:
                return ""

    def _said(self, transcript: Transcript) -> Claim:
        pattern = self._pattern
        for number, turn in enumerate(transcript.turns, start=1):
            found = pattern.found(turn.answer.text)
            if found is not None:
                # An empty match (a not_said of "refund|") quotes nothing: the reply is shown instead.
                reply = turn.answer.text
                shown = found or (reply if len(reply) <= self.SHOWN_VALUE else reply[: self.SHOWN_VALUE] + "...")
                reason = f"agent said {shown!r} in turn {number}"
                return Claim(self.text(), bool(self.said), reason, by="code")
        reason = f"agent never said anything matching /{pattern.text}/"
        return Claim(self.text(), not self.said, reason, by="code")


class Rule(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """A judge entry written as a mapping: a claim, a graded claim, or a check."""

    claim: str = ""
    grades: tuple[str, ...] = ()
    pass_: str = msgspec.field(default="", name="pass")
    check: Check | None = None

    def __post_init__(self) -> None:
        if self.check is not None:
            if self.claim or self.grades or self.pass_:
                raise ValueError("check: a check stands alone, with no claim, grades or pass beside it")
            return
        if not self.claim.strip():
            raise ValueError("claim: give the claim, or a check")
        if self.grades:
            if len(self.grades) < 2:
                raise ValueError("grades: give at least two, worst first")
            twice = sorted({grade for grade in self.grades if self.grades.count(grade) > 1})
            if twice:
                raise ValueError(f"grades: {', '.join(map(repr, twice))} given twice")
            if not self.pass_:
                raise ValueError("pass: give the worst grade that still passes")
            if self.pass_ not in self.grades:
                raise ValueError(f"pass: must be one of the grades: {', '.join(self.grades)}")
        elif self.pass_:
            raise ValueError("pass: goes only with grades")


def slashed(text: str) -> str:
    """A pattern as a line shows it, between slashes: a newline or other control character in it
    written as its escape (``\\n``), so the line stays one line."""
    return "".join(char if char.isprintable() or char == " " else repr(char)[1:-1] for char in text)


def why_unsound(field: str, pattern: Pattern) -> str:
    """Why a check's pattern (one convy can match) would decide it the same way whatever the agent
    said, with the fix, or "": an anchor that can never match, or a pattern that matches every reply."""
    match pattern.stranded():
        case "$":
            return (
                "can never match: $ is the end of the reply (or of a line, with (?m)), "
                "and text follows it; write \\$ for a dollar sign"
            )
        case "^":
            return (
                "can never match: ^ is the start of the reply (or of a line, with (?m)), "
                "and text comes before it; write \\^ for a caret"
            )
        case "$\n":
            return (
                "can never match: without (?m), $ is the end of the reply, and a newline follows it; "
                "start it with (?m) for the end of a line, or leave out the newline"
            )
        case "\n^":
            return (
                "can never match: without (?m), ^ is the start of the reply, and a newline comes before it; "
                "start it with (?m) for the start of a line, or leave out the newline"
            )
        case _:
            pass
    if not pattern.anywhere():
        return ""
    decided = "always holds" if field == "said" else "always fails"
    bare = Pattern(pattern.text.strip("|"))
    fix = (
        f"drop the empty alternative: /{slashed(bare.text if len(bare.text) <= QUOTED else bare.text[: QUOTED] + '...')}/"
        if bare.text != pattern.text and bare.text and not bare.problem() and not why_unsound(field, bare)
        else "give it text the reply must hold"
        if field == "said"
        else "give it text the reply must not hold"
    )
    return f"matches every reply, even an empty one, so the check {decided}: {fix}"
