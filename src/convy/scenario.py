"""Scenarios, read from YAML, and the attempts they play.

A scenario file becomes a ``Scenario`` where it enters: the strict YAML loader, then
``msgspec.convert``, whose checks (and each record's ``__post_init__``) name the field at fault.
``Scenarios`` reads a project's folder of them, reporting every broken file at once; ``Matching``
picks some by path, id or tag.

``Scenario.outcome`` plays one attempt: the script, then the simulated user, against the agent,
then the judge and the checks. It returns an ``Outcome``, the record the run folder keeps. Each
participant answers for its own errors only: the agent's fail the attempt, the models' leave it
without a verdict (but for a check that code decided failed), and an error of convy's own code
goes on to the caller.
"""

from __future__ import annotations

import asyncio
import difflib
import fnmatch
import functools
import math
import re
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

import msgspec
import yaml

from convy.agent import Agent, AgentFailure, Answer, Call, Message, NoUsage, OutOfTime, Usage
from convy.busy import WAITS, Busy, Wait, Waits
from convy.judge import Checked, Claim, Failed, Graded, Judge, NoVerdict, Ruling, Verdict
from convy.layout import Layout
from convy.loops import running
from convy.model import Absent, Model, ModelFailure, StillBusy
from convy.passing import Share
from convy.pattern import Pattern
from convy.problems import (
    ConfigurationError,
    EmptyReply,
    FieldProblem,
    Outside,
    Problems,
    ScenarioError,
    ServiceFailure,
    kind_of,
)
from convy.prompt import STOP, Prompt
from convy.slots import Slotted, nearest
from convy.spelling import Spelling
from convy.transcript import Finished, Stop, Transcript, Turn, Unchecked, UserFault
from convy.user import Conduct, Noted, SimulatedUser, UserReview
from convy.variants import PERSONA, Matrix, Persona, Personas, Value, Variant
from convy.yamlfile import YamlFile

# Fills one field's text with a scenario's values: the field's name (for the error), its text, and
# how a value is written into it.
Fill = Callable[[str, str, Callable[[Any], str]], str]

_SPECIAL = frozenset("\\.^$|?*+()[]{}")


def _literal(value: Any) -> str:
    """A value written into a pattern so that it matches as written: ``12.5`` matches "12.5"."""
    return "".join("\\" + char if char in _SPECIAL else char for char in str(value))


class Check(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True, dict=True):
    """A claim decided by code from the transcript: a tool called or not, a pattern said or not.

    Its text and its pattern are made once, when first needed, and kept beside its fields
    (never encoded or compared): a run decides it in every attempt.
    """

    called: str = ""
    with_: dict[str, Any] = msgspec.field(default_factory=dict, name="with")
    not_called: str = ""
    said: str = ""
    not_said: str = ""

    def __post_init__(self) -> None:
        given = [name for name in ("called", "not_called", "said", "not_said") if getattr(self, name)]
        if len(given) != 1:
            raise ValueError("check: give exactly one of called, not_called, said, not_said")
        if self.with_ and not self.called:
            raise ValueError("with: goes only with called")
        for field in ("called", "not_called"):  # a tool's name as code calls it, lookup(), is never a tool's name
            name = getattr(self, field)
            if "(" in name:
                bare = name.split("(", 1)[0].strip()
                inside = name.split("(", 1)[1].rstrip(") ").strip()
                fix = f"{field}: {bare}" + (", and its arguments under with: {...}" if inside else "")
                raise ValueError(f"{field}: {name!r}: a tool's name, without brackets: {fix}")
        for field in ("said", "not_said"):
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
            said=fill("said", self.said, _literal),
            not_said=fill("not_said", self.not_said, _literal),
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
        return f"never said /{self.not_said}/"

    def claim(self, transcript: Transcript) -> Claim:
        """This check decided on the transcript, with the turn that decided it as the reason."""
        if self.called or self.not_called:
            return self._tool(transcript)
        return self._said(transcript)

    def settled(self, transcript: Transcript) -> tuple[Claim, ...]:
        """This check decided on a dialogue that was cut short, if more turns could not change it
        (one claim), or nothing: ``called`` and ``said`` are settled once they hold, ``not_called``
        and ``not_said`` once they fail."""
        claim = self.claim(transcript)
        return (claim,) if claim.held == bool(self.called or self.said) and not claim.doubt else ()

    def _tool(self, transcript: Transcript) -> Claim:
        # One pass over the steps, ended where the check is decided: at the first call of the tool
        # for ``not_called``, at the first that fits for ``called``; past them, how many times it
        # was called and with what, or the tools called instead, to show a miss.
        name = self.called or self.not_called
        turns = transcript.turns
        # Most replies held the path where the calls would be: the first one found says so.
        if turns and all(turn.answer.unheld for turn in turns):  # no reply held it
            unheld = {turn.answer.unheld for turn in turns}
            paths = ", ".join(repr(path) for path in sorted(unheld))
            kinds = sorted({turn.answer.unheld_as for turn in turns} - {""})
            said = (
                f"its calls path {paths} held {' or '.join(kinds)}, never a list of calls"
                if kinds
                else f"no reply of the agent held its calls path {paths}"
            )
            return Claim(self.text(), False, f"{said}: no tool call could be seen", by="code", doubt="unseen")
        calls = 0
        given: list[dict[str, Any]] = []  # the arguments of the calls of that tool, to show a miss
        tools: dict[str, None] = {}  # the tools called, in order, to show a name never called
        for number, turn in enumerate(turns, start=1):
            for step in turn.answer.steps:
                match step:
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
        if self.not_called:
            return Claim(self.text(), True, f"agent never called {name}", by="code")
        if calls:
            wanted = ", ".join(f"{key}={value!r}" for key, value in self.with_.items())
            return Claim(
                self.text(), False, f"agent called {name} {calls} time(s), never with {wanted}: {self._given(given)}", by="code"
            )
        if tools:
            shown = ", ".join(list(tools)[: self.SHOWN_CALLS]) + (", ..." if len(tools) > self.SHOWN_CALLS else "")
            return Claim(self.text(), False, f"agent never called {name}; it called {shown}", by="code")
        return Claim(self.text(), False, f"agent never called {name}", by="code")

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
            if key not in given or given[key] != value:
                return False
        return True

    @functools.cached_property
    def _pattern(self) -> Pattern:
        return Pattern(self.said or self.not_said)

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


# The slots the simulator prompt is filled with, besides the scenario's vars (and its matrix's and
# persona's values), each with what it holds: docs/protocols.md lists these.
PROMPT_SLOTS: dict[str, str] = {
    "instructions": "the scenario's user text, its slots filled",
    "user": "the same as instructions",
    "stop": f"the mark that ends the dialogue, {STOP}",
}


class Scenario(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True, dict=True):
    """One scenario: who the simulated user is, what it says first, and the claims to decide.

    Its claims and checks are listed once, the first time they are asked for, and kept beside
    its fields (``dict=True`` gives it room for them; they are never encoded or compared): a run
    asks for them in every attempt.
    """

    id: str
    judge: tuple[str | Rule, ...]
    user: str = ""
    # Set once its slots are filled from its values (``variants``), never in a file: its texts are
    # then final, and a literal "{{" in them (written \\{{) is text.
    filled: bool = False
    vars: dict[str, Any] = {}  # text, numbers or true/false: checked below, naming the key
    script: tuple[str, ...] = ()
    max_turns: int | None = None
    tags: tuple[str, ...] = ()
    matrix: dict[str, Any] = {}  # each key a list of values: one variant per combination (variants.py)
    variant: Variant | None = None  # set on each variant a matrix made, never in a file
    fail_under: float | None = None  # the share of judged attempts it must pass (passing.PassRule.bar); unset: all

    MOST_VARIANTS: ClassVar[int] = 64  # a scenario's variants without --max-variants
    UNWRITTEN: ClassVar[tuple[str, ...]] = ("filled", "variant")  # set by convy, never in a file
    # Fields an author puts in a scenario that live elsewhere, each with where (``Layout`` says it).
    ELSEWHERE: ClassVar[dict[str, str]] = {
        "attempts": "attempts are set for the whole run: [tool.convy] attempts, or convy run -k N",
        "persona": "it belongs under matrix (matrix: {persona: [name, ...]})",
        "personas": "personas are named in personas.yaml beside scenarios/, and chosen under matrix (matrix: {persona: [name, ...]})",
    }

    def __post_init__(self) -> None:
        problems = tuple(dict.fromkeys(self._problems()))  # the filled copy's checks repeat its own
        if problems:
            raise Problems(problems)

    def _problems(self) -> Iterator[str]:
        """Every problem of its fields, each ``field: what is wrong``: an author sees them all at once."""
        if not self.id.strip():
            yield "id: must not be empty"
        if not self.judge:
            yield "judge: give at least one claim"
        for number, entry in enumerate(self.judge):
            match entry:
                case str(text) if not text.strip():
                    yield f"judge[{number}]: an empty claim"
        values = [
            f"vars.{name}: not a value: {name} is a field of the scenario; it belongs at the top of the file, not under vars"
            if name in self.__struct_fields__ and isinstance(value, dict | list)
            else problem
            for name, value in self.vars.items()
            if (problem := Value(value).problem(f"vars.{name}"))
        ]
        for field, names in (("vars", self.vars), ("matrix", self.matrix)):
            for name in names:
                if name in PROMPT_SLOTS:
                    values.append(
                        f"{field}.{name}: the simulator prompt fills {{{{ {name} }}}} itself "
                        f"({PROMPT_SLOTS[name]}): give the value another name"
                    )
        yield from values
        if not self.user.strip() and not self.script:
            yield "user: a scenario needs a user, a script, or both"
        if self.max_turns is not None and self.max_turns < 1:
            yield "max_turns: must be at least 1"
        if self.fail_under is not None and (not math.isfinite(self.fail_under) or not 0.0 <= self.fail_under <= 1.0):
            yield "fail_under: must be between 0 and 1 (0.8 for 80%)"
        if self.max_turns is not None and 1 <= self.max_turns < len(self.script):
            yield f"script: {len(self.script)} messages, more than max_turns ({self.max_turns})"
        for number, line in enumerate(self.script):
            if not line.strip():
                yield f"script[{number}]: an empty message"
        if self.filled:
            if len(self.user.encode("utf-8", "surrogatepass")) > Prompt.LIMIT:
                yield f"user: the filled instructions {Prompt(self.user).oversize({})}"
            return
        if values:  # the slots are filled from the values: checked once they are sound
            return
        try:
            if self.matrix:
                self._matrix_checked()
            # A persona's values may fill any slot: each variant is checked as it is made (and a
            # persona named under vars, where its values fill nothing, is said then).
            if PERSONA not in self.matrix and not (PERSONA in self.vars and self.variant is None):
                self._filled({**self.vars, **{key: key for key in self.matrix}}, None)
        except Problems as problems:
            yield from problems.lines
        except ValueError as error:
            yield str(error)

    def _matrix_checked(self) -> None:
        """A matrix's own problems: its values, and every key but ``persona`` a slot it fills."""
        if self.variant is not None:
            raise ValueError("matrix: a variant has no matrix of its own")
        problem = Matrix(self.matrix).problem()
        if problem:
            raise ValueError(problem)
        for key in self.matrix:
            if key in self.vars:
                raise ValueError(f"matrix.{key}: also a var: give it in vars or in matrix, not both")
        slots = self._slots()
        for key in self.matrix:
            if key != PERSONA and key not in slots:
                raise ValueError(f"matrix.{key}: fills no {{{{ {key} }}}} in user, script or judge")

    def _slots(self) -> frozenset[str]:
        """The names of every slot of its texts: user, script, claims and checks."""
        found: set[str] = set()

        def seen(field: str, text: str, shown: Callable[[Any], str]) -> str:
            found.update(Slotted(text).slots())
            return text

        self._judged(seen, {})
        seen("user", self.user, str)
        for line in self.script:
            seen("script", line, str)
        return frozenset(found)

    def _judged(self, fill: Fill, values: dict[str, Any]) -> tuple[str | Rule, ...]:
        """The ``judge:`` entries with their texts filled by ``fill``, each field named by its place."""
        judged: list[str | Rule] = []
        for number, entry in enumerate(self.judge):
            place = f"judge[{number}]"
            try:
                judged.append(self._entry(entry, place, fill, values))
            except ValueError as error:  # a filled entry's own problem (a check's pattern filled empty) is named too
                said = str(error)
                raise ValueError(said if said.startswith(place) else f"{place}: {said}") from None
        return tuple(judged)

    def _entry(self, entry: str | Rule, place: str, fill: Fill, values: dict[str, Any]) -> str | Rule:
        match entry:
            case str(text):
                return fill(place, text, str)
            case Rule(check=Check() as check):

                def checked(field: str, text: str, shown: Callable[[Any], str]) -> str:
                    made = fill(f"{place}.check.{field}", text, shown)
                    if text and not made and not field.startswith("with"):
                        raise ValueError(f"{place}.check.{field}: empty once its slots are filled: give their values some text")
                    if field in Written.PATTERNS and made != text:
                        self._filled_pattern(f"{place}.check.{field}", text, made, values)
                    return made

                return Rule(check=check.filled(checked, values))
            case Rule(claim=claim, grades=grades, pass_=bar):
                return Rule(
                    claim=fill(f"{place}.claim", claim, str),
                    grades=tuple(fill(f"{place}.grades[{at}]", grade, str) for at, grade in enumerate(grades)),
                    pass_=fill(f"{place}.pass", bar, str),
                )

    def _filled_pattern(self, place: str, text: str, made: str, values: dict[str, Any]) -> None:
        """A ``ValueError`` when a check's pattern, once its slots are filled from ``values``, can
        never match or matches every reply (``${{ amount }}`` filled with 12.00 is ``$12\\.00``),
        naming the values. Left alone while a matrix's slots hold their own names (the first look)."""
        slots = sorted(Slotted(text).slots())
        if any(slot in self.matrix and values.get(slot) == slot for slot in slots) or Pattern(made).problem():
            return
        field = place.rsplit(".", 1)[-1]
        if not Pattern(text).problem() and _unsound(field, Pattern(text)):
            return  # unsound as written, slots and all: said once, by Written
        unsound = _unsound(field, Pattern(made))
        if unsound:
            given = ", ".join(f"{slot}={values[slot]!r}" for slot in slots if slot in values)
            cut = Written.SHOWN
            raise ValueError(
                f"{place}: /{_written(text[:cut])}/ filled with {given} is /{_written(made[:cut])}/, which {unsound}"
                + (f": {text.replace('$', chr(92) + '$')[:cut]}" if unsound.endswith("dollar sign") and text.count("$") == 1 else "")
            )

    def _filled(
        self, values: dict[str, Any], variant: Variant | None, person: Persona | None = None, listed: str = "personas.yaml"
    ) -> Scenario:
        """This scenario with every slot of its user, script, claims and checks filled from
        ``values`` (and every ``\\{{`` made ``{{``), as ``variant`` when it is one (``person``,
        the persona its values came from, as ``listed`` names its file); a ``ValueError`` names
        the field and the slot at fault."""
        where = f" (variant {variant.label()})" if variant is not None else ""
        givers = "vars, matrix or persona" if PERSONA in self.matrix else "vars or matrix" if self.matrix else "vars"
        problems: list[str] = []

        def fill(field: str, text: str, shown: Callable[[Any], str]) -> str:
            # A problem is kept and the text left as it is: every field is filled, every problem said.
            slotted = Slotted(text)
            problem = slotted.stray()
            if problem:
                problems.append(f"{field}: {problem}{where}")
                return text
            missing = sorted(slotted.slots() - set(values))
            if missing:
                near = nearest(missing[0], values)
                hint = f" (is {{{{ {missing[0]} }}}} a slip for {{{{ {near} }}}}?)" if near else ""
                if person is not None and (near in person.values or not near):  # the slip is likely the persona's
                    hint = f" (persona {person.name!r} of {listed} has no {missing[0]}" + (
                        f"; is its {near} a slip for {missing[0]}?)" if near else ")"
                    )
                problems.append(f"{field}: {slotted.missing(values)} in {givers}{hint}{where}")
                return text
            oversize = Prompt(text).oversize(values)
            if oversize:
                problems.append(f"{field}: the filled {'instructions' if field == 'user' else 'text'} {oversize}{where}")
                return text
            # A pattern (its values written in as text) keeps a \{ before name}: its own escape for a brace.
            return slotted.filled(values, shown, "\\{" if shown is _literal else "{")

        before = len(problems)
        try:
            judged = self._judged(fill, values)
        except ValueError as error:  # a filled entry's own problem, unless it comes of a slot already said
            judged = ()
            if len(problems) == before:
                problems.append(str(error))
        user = fill("user", self.user, str)
        script = tuple(fill(f"script[{number}]", line, str) for number, line in enumerate(self.script))
        if problems:
            raise Problems(tuple(problems))
        return Scenario(
            id=variant.id() if variant is not None else self.id,
            judge=judged,
            user=user,
            vars=values,
            script=script,
            max_turns=self.max_turns,
            tags=self.tags,
            variant=variant,
            filled=True,
            fail_under=self.fail_under,
        )

    def variants(self, personas: Personas = Personas(), most: int | None = None) -> tuple[Scenario, ...]:
        """The scenarios this one plays, each with its slots filled (its user, script, claims and
        checks): itself, or with a matrix one variant per combination of its values, each with
        them among its vars (a persona's values too), its id saying them (``id[key=value,...]``),
        its ``variant`` keeping them. A ``ValueError`` names the field at fault: a persona unknown,
        more variants than ``most`` (``MOST_VARIANTS`` unless given), a slot with no value."""
        if self.filled:
            return (self,)
        if not self.matrix:
            named = personas.named(self.vars[PERSONA]) if isinstance(self.vars.get(PERSONA), str) else None
            if named is not None:
                raise ValueError(
                    f"vars.{PERSONA}: {named.name!r} is a persona of {personas.shown}, but under vars it is one value "
                    f"and the persona's values fill nothing: write matrix: {{{PERSONA}: [{named.name}]}}"
                )
            return (self._filled(self.vars, None),)
        most = self.MOST_VARIANTS if most is None else most
        matrix = Matrix(self.matrix)
        if PERSONA in self.matrix:
            names = matrix.values(PERSONA, personas)
            if not names:
                where = f"there is no {personas.shown} beside scenarios/" if personas.absent else f"{personas.shown} lists no persona"
                raise ValueError(f"matrix.{PERSONA}: all, but {where}")
            for number, name in enumerate(names):
                if name == "all" and personas.named(name) is None:
                    raise ValueError(
                        f"matrix.{PERSONA}[{number}]: all in a list is a persona's name: for every persona, "
                        f"write {PERSONA}: all, not in a list"
                    )
                if personas.named(name) is None:
                    raise ValueError(f"matrix.{PERSONA}[{number}]: {personas.missing(name)}")
        count = matrix.count(personas)
        if count > most:
            raise ValueError(
                f"matrix: {count:,} variants, more than {most:,}: give --max-variants {count} to play them all"
            )
        made: list[Scenario] = []
        for values in matrix.combinations(personas):
            variant = Variant(self.id, values)
            filled = {**self.vars, **values}
            person = personas.named(values[PERSONA]) if PERSONA in values else None
            if person is not None:
                for key in person.values:
                    if key in filled:
                        raise ValueError(
                            f"matrix.{PERSONA}: persona {person.name!r} sets {key}, also a var or matrix key"
                        )
                filled.update(person.values)
            made.append(self._filled(filled, variant, person, personas.shown))
        return tuple(made)

    def claims(self) -> tuple[str | Graded, ...]:
        """The claims a judge decides, in order: the entries that are not checks."""
        return self._claims

    @functools.cached_property
    def _claims(self) -> tuple[str | Graded, ...]:
        asked: list[str | Graded] = []
        for entry in self.judge:
            match entry:
                case str(text):
                    asked.append(text)
                case Rule(check=None, claim=text, grades=()):
                    asked.append(text)
                case Rule(check=None, claim=text, grades=grades, pass_=bar):
                    asked.append(Graded(text, grades, bar))
        return tuple(asked)

    def needs(self) -> tuple[Literal["user", "judge"], ...]:
        """The models this scenario cannot be played without."""
        needs: tuple[Literal["user", "judge"], ...] = ("user",) if self.user.strip() else ()
        return needs + (("judge",) if self.claims() else ())

    def checks(self, transcript: Transcript) -> tuple[Claim, ...]:
        """Every check decided on the whole dialogue, in the scenario's order."""
        return tuple(check.claim(transcript) for check in self._checks)

    def settled(self, transcript: Transcript) -> tuple[Claim, ...]:
        """The checks that more turns could not change, decided on a dialogue cut short."""
        return tuple(claim for check in self._checks for claim in check.settled(transcript))

    def placed(self, checks: tuple[Claim, ...]) -> tuple[tuple[int, Claim], ...]:
        """Checks decided without a verdict (some of this scenario's, in its order), each with
        its place in the ``judge:`` list, from 1."""
        left = list(checks)
        found: list[tuple[int, Claim]] = []
        for number, entry in enumerate(self.judge, start=1):
            match entry:
                case Rule(check=Check() as check) if left and check.text() == left[0].claim:
                    found.append((number, left.pop(0)))
                case _:
                    pass
        return tuple(found)

    def tool_checks(self) -> tuple[str, ...]:
        """Its checks of the agent's tool calls (``called``, ``not_called``), as reports show them."""
        return tuple(check.text() for check in self._checks if check.called or check.not_called)

    @functools.cached_property
    def _checks(self) -> tuple[Check, ...]:
        found: list[Check] = []
        for entry in self.judge:
            match entry:
                case Rule(check=Check() as check):
                    found.append(check)
                case _:
                    pass
        return tuple(found)

    def verdict(self, ruling: Ruling, transcript: Transcript) -> Verdict:
        """The judge's decisions and the checks, together in the scenario's order."""
        judged = iter(ruling.claims)
        decided: list[Claim] = []
        for check in self._entries:
            decided.append(next(judged) if check is None else check.claim(transcript))
        return Verdict(tuple(decided))

    @functools.cached_property
    def _entries(self) -> tuple[Check | None, ...]:
        """Its ``judge:`` entries as ``verdict`` walks them, told apart once rather than on every
        attempt: each check, and ``None`` for a claim the judge decides."""
        found: list[Check | None] = []
        for entry in self.judge:
            match entry:
                case Rule(check=Check() as check):
                    found.append(check)
                case _:
                    found.append(None)
        return tuple(found)

    def simulated(self, model: Model, prompt: Prompt) -> SimulatedUser:
        """The simulated user of this scenario, told ``prompt`` as ``told`` fills it."""
        own = (self.instructions(), *(str(value) for value in self.vars.values()))
        return SimulatedUser(model, self.told(prompt), own)

    def instructions(self) -> str:
        """Its ``user:`` text, its slots filled (a scenario kept by a run before its slots were
        filled where it was read has them filled here, as then)."""
        return self.user if self.filled else Prompt(self.user).filled(self.vars)

    def told(self, prompt: Prompt) -> str:
        """``prompt`` filled with the slots of ``PROMPT_SLOTS`` and this scenario's vars; a
        ``ValueError`` for a slot left empty or a prompt that would be too large."""
        instructions = self.instructions()
        values: dict[str, Any] = {**self.vars, "instructions": instructions, "user": instructions, "stop": STOP}
        try:
            return prompt.filled(values)
        except ValueError as error:
            missing = sorted(prompt.slots() - set(values))
            near = nearest(missing[0], values) if missing else ""
            hint = f" (is {{{{ {missing[0]} }}}} a slip for {{{{ {near} }}}}?)" if near else ""
            raise ValueError(f"{error}{hint}") from None

    async def outcome(
        self, attempt: int, agent: Agent, user: Any, judge: Judge | Absent, max_turns: int, review: UserReview = UserReview()
    ) -> Outcome:
        """Play one attempt: the dialogue with the agent, then the judge and the checks.

        ``agent`` is the agent as a run holds it (``TimeLimited``, which makes it ``Accountable``):
        its errors arrive as ``AgentFailure`` or ``Busy`` and fail the attempt or leave it without
        a verdict. ``user`` is this scenario's ``SimulatedUser`` (unused when it is fully scripted),
        whose model's errors are ``ModelFailure``; ``judge`` decides the claims (unused when there
        are only checks), made ``Checked`` here so its errors are too. A model's failure leaves the
        attempt without a verdict, but with the checks code could decide, and failed if one of
        them failed. Any other error is convy's own and goes on to the caller.

        With a simulated user, its conduct is checked by code once the dialogue is over
        (``conduct.Conduct``), and by a model for the checks ``review`` asks for; a fault leaves a
        whole dialogue not judged with the fault as its reason (the judge is not asked; the checks
        more turns could not change are decided, and one that failed fails the attempt), unless
        ``review`` says such faults are counted.
        """
        limit = self.max_turns or max_turns
        if not self.user.strip():  # with no user the dialogue is exactly the script: a run's max_turns
            limit = max(limit, len(self.script))  # below it is refused before (Project.scripted), bar the default
        started = _STARTS.now()
        clock = time.monotonic()
        waits = Waits(running().time())
        noting = WAITS.set(waits)
        # A run's judge is already ``Checked`` (``bench.RunJudge.within``): checked twice, it would
        # cut the dialogue to what was said and read its ruling back twice, to the same effect.
        checked = judge if isinstance(judge, Checked) else Checked(judge)
        try:
            return await self._played(attempt, agent, user, checked, limit, started, clock, waits, review)
        finally:
            WAITS.reset(noting)

    async def _played(
        self,
        attempt: int,
        agent: Agent,
        user: Any,
        judge: Judge,
        limit: int,
        started: str,
        clock: float,
        waits: Waits,
        review: UserReview,
    ) -> Outcome:
        transcript = Transcript()
        stop: Stop = "finished"
        result: Failed | NoVerdict | None = None  # how the dialogue was cut short, if it was
        pending = ""
        opened = closed = 0.0
        ending: tuple[tuple[Usage | NoUsage, ...], float] | None = None
        asked: tuple[tuple[Usage | NoUsage, ...], float] | None = None  # the user's request of the turn under way
        broken: Answer | None = None  # what the turn the agent broke off had spent, when it said
        simulated = bool(self.user.strip())  # whether a simulated user speaks after the script
        empty = False  # whether the user's model gave an empty reply, its "empty" fault
        # Only AgentFailure and Busy are caught around the dialogue: the agent raises nothing else
        # (``Accountable``), the user's model raises ModelFailure, caught where it speaks, and any
        # other error is a bug of convy's, which must be seen rather than blamed on the agent.
        # A failure may be of a class the agent or a model defined: its text is read as an
        # outside exception's, which cannot fail.
        try:
            mark = time.monotonic()
            async with agent.conversation() as conversation:
                # One reading of the clock between a turn's parts: where the user's part ends the
                # agent's begins, and where the agent's ends the next turn's begins.
                moment = time.monotonic()
                opened = moment - mark
                moment -= clock
                while True:
                    user_start = moment
                    done = len(transcript.turns)
                    scripted = done < len(self.script)
                    if done >= limit and (scripted or simulated):
                        stop = "max_turns"
                        break
                    if scripted:
                        message, usage = Message(self.script[done]), NoUsage()
                    elif not simulated:
                        break
                    else:
                        try:
                            spoken = await user.spoken(transcript)
                        except StillBusy as failure:
                            stop, result = "model_failed", NoVerdict("busy", Outside(failure).text())
                            ending = (failure.requests, time.monotonic() - clock - user_start)
                            break
                        except ServiceFailure as failure:
                            stop, result = "model_failed", NoVerdict("user", Outside(failure).text(), service=True)
                            ending = (failure.requests, time.monotonic() - clock - user_start)
                            break
                        except ModelFailure as failure:
                            match failure:
                                case EmptyReply():
                                    empty = True
                                case _:
                                    pass
                            stop, result = "model_failed", NoVerdict("user", Outside(failure).text())
                            ending = (failure.requests, time.monotonic() - clock - user_start)
                            break
                        match spoken.move:
                            case Finished():
                                ending = ((spoken.usage,), time.monotonic() - clock - user_start)
                                break
                            case Message() as message:  # sent to the agent as the user said it
                                usage = spoken.usage
                    spoken_text = message.text
                    agent_start = time.monotonic() - clock
                    user_seconds = agent_start - user_start
                    pending = spoken_text
                    asked = None if scripted else ((usage,), user_seconds)
                    answer = await conversation.turn(message)
                    moment = time.monotonic() - clock
                    agent_seconds = moment - agent_start
                    pending, asked = "", None
                    turn = Turn(spoken_text, answer, scripted, user_start, user_seconds, usage, agent_start, agent_seconds)
                    transcript = Transcript(transcript.turns + (turn,))  # ``Transcript.__add__``, in line
                mark = time.monotonic()
            closed = time.monotonic() - mark
        except OutOfTime as failure:
            stop, result = "time_limit", Failed(Outside(failure).text(), pending)
            broken = _spent(failure.spent)
        except Busy as busy:
            stop, result = "agent_busy", NoVerdict("busy", f"the agent stayed busy: {Outside(busy).text()}")
            broken = _spent(busy.spent)
        except AgentFailure as failure:
            stop, result = "agent_failed", Failed(Outside(failure).text(), pending)
            broken = _spent(failure.spent)
        if asked is not None and ending is None:
            # The simulated user's request of a turn the agent did not answer: no turn holds it.
            ending = asked
        judge_start = time.monotonic() - clock
        faults: tuple[UserFault, ...] = ()
        unchecked: tuple[Unchecked, ...] = ()
        reviewing: tuple[Usage | NoUsage, ...] = ()  # the model's requests for the user's checks: the judge's
        if simulated:
            faults = Conduct(transcript, stop, empty).faults(user.instructions)
            counted = review.checks.faults == "count"
            # A model is asked only of a dialogue still to be judged, and only when the run asks
            # it anything (most runs ask no model-decided check: nothing to await, nothing to sort).
            if review.checks.asked and result is None and (counted or not Noted.withholding(faults)):
                reviewed = await review.reviewed(transcript, stop, user.prompt)
                if reviewed.faults:
                    faults = tuple(sorted(faults + reviewed.faults, key=lambda fault: fault.turn))
                unchecked, reviewing = reviewed.unchecked, reviewed.requests
            withheld = () if counted or result is not None else Noted.withholding(faults)  # none when counted
            if withheld:
                result = NoVerdict("user", "; ".join(fault.said() for fault in withheld))
        judged = await self.judged(transcript, judge, result)
        judge_seconds = time.monotonic() - clock - judge_start
        return Outcome(
            scenario=self.id,
            attempt=attempt,
            started=started,
            seconds=time.monotonic() - clock,
            transcript=transcript,
            stop=stop,
            result=judged.result,
            open_seconds=opened,
            close_seconds=closed,
            judge_start=judge_start,
            judge_seconds=judge_seconds,
            judge_requests=reviewing + judged.requests,
            waits=tuple(waits.noted),
            user_ending=() if ending is None else ending[0],
            user_ending_seconds=0.0 if ending is None else ending[1],
            agent_ending=broken,
            user_faults=faults,
            user_unchecked=unchecked,
        )

    async def judged(self, transcript: Transcript, judge: Judge, cut: Failed | NoVerdict | None) -> Judged:
        """The dialogue decided: by ``judge`` (made ``Checked``) and code when it is whole (``cut``
        is ``None``), its claims against this scenario's; by code alone, as far as more turns could
        not change it, when a model cut it short (``NoVerdict``); not at all when the agent failed.
        A played attempt ends here, and so does each attempt ``convy rejudge`` decides again."""
        match cut:
            case None:
                # The dialogue is whole: the judge decides its claims, and code every check.
                asked = self.claims()
                try:
                    ruling = await judge.ruling(asked, transcript) if asked else Ruling(())
                    return Judged(self.verdict(ruling, transcript), ruling.requests)
                except StillBusy as failure:
                    return Judged(NoVerdict("busy", Outside(failure).text(), self.checks(transcript)), failure.requests)
                except ServiceFailure as failure:
                    checks = self.checks(transcript)
                    return Judged(NoVerdict("judge", Outside(failure).text(), checks, service=True), failure.requests)
                except ModelFailure as failure:
                    return Judged(NoVerdict("judge", Outside(failure).text(), self.checks(transcript)), failure.requests)
            case NoVerdict():
                # The dialogue was cut short: only the checks more turns could not change count.
                return Judged(msgspec.structs.replace(cut, checks=self.settled(transcript)))
            case Failed():
                return Judged(cut)

    async def rejudged(self, outcome: Outcome, judge: Judge) -> Outcome:
        """A recorded attempt of this scenario decided again by ``judge`` against this scenario's
        claims and checks, its dialogue as it was (``convy rejudge``). A whole dialogue (it ended
        ``finished`` or at ``max_turns``) is judged again, whatever its judge said before, a failed
        judgement included; one a model cut short keeps its ``NoVerdict`` with the checks re-decided
        that more turns could not change; one the agent failed stays ``Failed``. The attempt keeps
        its start and the dialogue's times and waits; its judge's part is this judgement's, from the
        moment the dialogue ended (``judge_start``), and it is marked ``rejudged``."""
        match outcome.result:
            case Failed() as failed:
                cut: Failed | NoVerdict | None = failed
            case NoVerdict() as none if outcome.stop in ("model_failed", "agent_busy"):
                cut = none
            case NoVerdict(who="user") as none if outcome.user_faults:
                cut = none  # its simulated user misbehaved: not judged again, as it was not judged then
            case _:
                cut = None
        clock = time.monotonic()
        waits = Waits(asyncio.get_running_loop().time() - outcome.judge_start)
        noting = WAITS.set(waits)
        try:
            judged = await self.judged(outcome.transcript, Checked(judge), cut)
        finally:
            WAITS.reset(noting)
        seconds = time.monotonic() - clock if cut is None else 0.0
        return msgspec.structs.replace(
            outcome,
            seconds=outcome.judge_start + seconds,
            result=judged.result,
            judge_seconds=seconds,
            judge_requests=judged.requests,
            waits=tuple(wait for wait in outcome.waits if wait.who != "judge") + tuple(waits.noted),
            rejudged=True,
        )


def _spent(given: Any) -> Answer | None:
    """What a failed turn had spent as the agent's failure carries it: an ``Answer`` (its requests
    and steps), checked where it enters as the agent's answers are; anything else is nothing."""
    match given:
        case Answer():
            try:
                return _SPENT.decode(msgspec.json.encode(given))
            except Exception:  # noqa: BLE001 - the agent's own object, holding anything
                return None
        case _:
            return None


_SPENT = msgspec.json.Decoder(Answer)


class _Starts:
    """When attempts start, as ISO 8601 text in UTC to the millisecond (what
    ``datetime.isoformat(timespec="milliseconds")`` writes). The text of the whole second is made
    once a second and only the milliseconds once an attempt: a datetime made and written for each
    was about a hundredth of an attempt with instant fakes."""

    __slots__ = ("_second", "_text")

    def __init__(self) -> None:
        self._second = -1
        self._text = ""

    def now(self) -> str:
        moment = time.time()
        second = math.floor(moment)
        if second != self._second:
            self._second = second
            self._text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        return f"{self._text}.{int((moment - second) * 1000):03d}+00:00"


_STARTS = _Starts()


class Judged(msgspec.Struct, frozen=True, gc=False):
    """A dialogue's result as its judge and the checks decided it, and what the judge's requests
    took (those of a judgement that failed included)."""

    result: Verdict | Failed | NoVerdict
    requests: tuple[Usage | NoUsage, ...] = ()



class Outcome(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """One attempt as it ended: the dialogue, why it stopped, its result, and the judge's part.

    Times are seconds; ``judge_start`` counts from the attempt's start like a turn's times, and
    so does each of ``waits``, the stretches spent waiting for a busy service or a pace.
    ``user_ending`` is the simulated user's last request, the one that ended the dialogue — by
    saying it was done, by failing after it was answered, or by speaking in a turn the agent then
    did not answer (no turn holds it) — with its time in ``user_ending_seconds``; ``agent_ending``
    what the agent's broken-off turn had spent, when its failure said (``AgentFailure.spent``,
    ``Busy.spent``): its requests and tool calls; ``judge_requests`` holds the judge's requests, those of a judgement
    that failed included, and those of the simulated user's model-decided checks before them.
    ``user_faults`` are what the simulated user's checks found (``conduct.py``), the earliest first,
    and ``user_unchecked`` the model-decided checks asked that were not decided; a line kept before
    them reads back with none. ``rejudged`` marks an attempt ``convy rejudge`` decided again: its
    dialogue, and what the agent's and the user model's requests took, were recorded by the run it
    was re-judged from and are that run's spending, not this one's (``Attempt`` counts only its
    judge's requests).
    """

    scenario: str
    attempt: int
    started: str
    seconds: float
    transcript: Transcript
    stop: Stop
    result: Verdict | Failed | NoVerdict
    open_seconds: float = 0.0
    close_seconds: float = 0.0
    judge_start: float = 0.0
    judge_seconds: float = 0.0
    judge_requests: tuple[Usage | NoUsage, ...] = ()
    waits: tuple[Wait, ...] = ()
    user_ending: tuple[Usage | NoUsage, ...] = ()
    user_ending_seconds: float = 0.0
    rejudged: bool = False
    user_faults: tuple[UserFault, ...] = ()  # what the simulated user's checks found (issue 11)
    user_unchecked: tuple[Unchecked, ...] = ()  # the model-decided checks asked that were not decided, and why
    agent_ending: Answer | None = None  # what the turn the agent broke off had spent, when it said (issue 26)

    def status(self, trust: float) -> Literal["passed", "failed", "not_judged"]:
        """Passed, failed, or not judged (no verdict, or a verdict with claims not trusted).

        An attempt without a verdict is failed still when a check decided by code failed."""
        match self.result:
            case Verdict() as verdict:
                match verdict.status(trust):
                    case "passed":
                        return "passed"
                    case "failed":
                        return "failed"
                    case "not_trusted":
                        return "not_judged"
            case Failed():
                return "failed"
            case NoVerdict() as none:
                return none.status()

    def unsaid(self) -> Outcome:
        """This attempt without the words of its dialogue: each turn's message, and the text and
        steps (thoughts, tool calls) of each answer of the agent, its broken-off turn's too, left
        out; its numbers, usage, times, stop and result (every claim and reason) kept. A run read
        unsaid (``placed.Placed``) walks its attempts so, one at a time, where the words are not
        needed (JUnit, the Markdown summary, the judging section); a dialogue is read again in full
        only to be shown or matched to its labels."""
        replace = msgspec.structs.replace
        ending = self.agent_ending
        return replace(
            self,
            transcript=Transcript(
                tuple([replace(turn, message="", answer=turn.answer.unsaid()) for turn in self.transcript.turns])
            ),
            agent_ending=None if ending is None else ending.unsaid(),
        )

    def unseen(self) -> tuple[tuple[str, str], ...]:
        """The agent's calls paths that no reply of this dialogue held a list at, each with what
        a reply held there instead ("" for nothing), when a tool check was left undecided for it
        (``Claim.doubt == "unseen"``); none otherwise."""
        match self.result:
            case Verdict(claims=claims) | NoVerdict(checks=claims) if any(claim.doubt == "unseen" for claim in claims):
                turns = self.transcript.turns
                return tuple(sorted({(turn.answer.unheld, turn.answer.unheld_as) for turn in turns if turn.answer.unheld}))
            case _:
                return ()


class Scenarios(msgspec.Struct, frozen=True):
    """The scenario files under a project's ``scenarios/`` folder, a scenario with a matrix as
    its variants: at most ``most_variants`` each (``Scenario.MOST_VARIANTS`` unless given), its
    personas read from ``personas`` (the project's ``personas.yaml`` unless given)."""

    folder: Path
    most_variants: int | None = None
    personas: Path | None = None

    def every(self) -> tuple[Scenario, ...]:
        """Every scenario, by id; any broken file is a ``ScenarioError`` listing all problems."""
        scenarios, problems = self.sound()
        if problems:
            raise ScenarioError(problems)
        return scenarios

    # What a scenario file's name ends with, in any case: both spellings of YAML's, read alike.
    SUFFIXES: ClassVar[tuple[str, ...]] = (".yaml", ".yml")

    def files(self) -> tuple[Path, ...]:
        """The scenario files under the folder, at any depth, in order: every file named ``.yaml``
        or ``.yml``."""
        if not self.folder.is_dir():
            return ()
        return tuple(sorted(path for path in self.folder.rglob("*") if path.suffix.lower() in self.SUFFIXES))

    def _absent(self) -> str:
        """Why there is no folder of scenarios, with a folder beside it that was likely meant."""
        name = self.folder.name
        said = f"{name}/: no such folder of scenarios (one scenario per file: {name}/<id>.yaml)"
        near = Spelling(frozenset({name.upper()}))
        beside = self.folder.parent
        meant = sorted(path.name for path in beside.iterdir() if path.is_dir() and (near.meant(path.name) or path.name.upper() == name.upper())) if beside.is_dir() else []
        return said + (f"; {meant[0]}/ is not read: rename it {name}/" if meant else "")

    def _misnamed(self) -> list[str]:
        """A line for each file meant as a scenario whose name would leave it unread: saved as text
        (``greeting.yaml.txt``) or with YAML's suffix mistyped (``greeting.ymal``, ``.yam``). Notes,
        backups (``~``) and hidden files are left alone."""
        problems: list[str] = []
        for path in sorted(self.folder.rglob("*")):
            name = path.name
            if not path.is_file() or name.startswith(".") or name.endswith("~") or path.suffix.lower() in self.SUFFIXES:
                continue
            stem, suffix = path.stem, path.suffix.lower().removeprefix(".")
            if suffix == "txt" and Path(stem).suffix.lower() in self.SUFFIXES:
                meant = stem
            elif suffix != "xml" and Spelling(frozenset({"YAML", "YML"})).meant(suffix):
                meant = f"{stem}.yaml"
            else:
                continue
            shown = f"{self.folder.name}/{path.relative_to(self.folder).as_posix()}"
            problems.append(f"{shown}: not read: a scenario file's name ends in .yaml or .yml; rename it {shown.rsplit('/', 1)[0]}/{meant}")
        return problems

    def _personas(self) -> Personas:
        """The personas given, or the project's: ``personas.yaml`` or ``personas.yml`` beside the
        folder, read alike (both there is a mistake: which one is meant?)."""
        if self.personas is not None:
            return Personas.read(self.personas, self.personas.name)
        there = [name for name in Personas.NAMES if (self.folder.parent / name).exists()]
        if len(there) > 1:
            return Personas(problems=(f"{there[0]} and {there[1]}: two files of personas; keep one of them",))
        name = there[0] if there else Personas.NAMES[0]
        return Personas.read(self.folder.parent / name, name)

    def sound(self) -> tuple[tuple[Scenario, ...], tuple[str, ...]]:
        """The scenarios of the sound files, by id, and one line for each problem of the others
        (and of the personas, when there are any)."""
        found, problems = self.located()
        return tuple(scenario for scenario, _ in found.values()), problems

    def located(self) -> tuple[dict[str, tuple[Scenario, str]], tuple[str, ...]]:
        """As ``sound``, each scenario by its id with the file it is in (``scenarios/a.yaml``)."""
        problems: list[str] = []
        found: dict[str, tuple[Scenario, str]] = {}
        if not self.folder.is_dir():
            return {}, (self._absent(),)
        personas = self._personas()
        problems.extend(personas.problems)
        problems.extend(self._misnamed())
        # A file of personas put among the scenarios first: the scenarios that name its personas follow from it.
        for path in sorted(self.files(), key=lambda path: path.stem.lower() != "personas"):
            shown = f"{self.folder.name}/{path.relative_to(self.folder).as_posix()}"
            try:
                scenario = ScenarioFile(path, shown, path.relative_to(self.folder).with_suffix("").as_posix()).scenario()
            except ScenarioError as error:
                problems.extend(error.problems)
                continue
            try:
                variants = scenario.variants(personas, self.most_variants)
            except Problems as error:
                problems.extend(f"{shown}: {line}" for line in error.lines)
                continue
            except ValueError as error:
                problems.append(f"{shown}: {error}")
                continue
            for variant in variants:
                if variant.id in found:
                    other = found[variant.id][1]
                    if Path(other).with_suffix("") == Path(shown).with_suffix(""):  # a.yaml beside a.yml
                        problems.append(f"{other} and {shown}: two files of scenario {variant.id!r}; keep one of them")
                        break
                    problems.append(f"{shown}: id: {variant.id!r} is also the id of {other}")
                    continue
                found[variant.id] = (variant, shown)
        return found, tuple(problems)


# A word in one pair of braces, "{ref}" (or "{ref}}"), where a slot takes two: "{{ ref }}"; "\{ref}"
# is one written on purpose.
_BRACED = re.compile(r"(?<![{\\])\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}?(?!\})")
# A judge entry's text that starts as a check or a claim written as YAML does: "check: {said: Hi}".
_KEYED = re.compile(r"\s*(\{\s*)?(check|called|not_called|said|not_said|claim)\s*:")


def _written(text: str) -> str:
    """A pattern as a line shows it, between slashes: a newline or other control character in it
    written as its escape (``\\n``), so the line stays one line."""
    return "".join(char if char.isprintable() or char == " " else repr(char)[1:-1] for char in text)


def _unsound(field: str, pattern: Pattern) -> str:
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
        f"drop the empty alternative: /{_written(bare.text if len(bare.text) <= Written.SHOWN else bare.text[: Written.SHOWN] + '...')}/"
        if bare.text != pattern.text and bare.text and not bare.problem() and not _unsound(field, bare)
        else "give it text the reply must hold"
        if field == "said"
        else "give it text the reply must not hold"
    )
    return f"matches every reply, even an empty one, so the check {decided}: {fix}"


class Written(msgspec.Struct, frozen=True):
    """A scenario file's fields as its author wrote them (the mapping read, before it is converted),
    looked over for the mistakes that would convert and then play wrong without a word: a check
    field left empty, a pattern that can never match or matches every reply, a ``with:`` value
    left null, a slot in the id or a tag (never filled there), a tag with spaces round it or given
    twice, a ``{ref}`` with one pair of braces where ``ref`` has a value, a check written in quotes
    as a claim. Looked for where a file is read only: a run's kept scenario reads back as kept."""

    data: dict[Any, Any]
    blanks: frozenset[str] = frozenset()  # the paths of values left out (YamlData.blanks), not a null written

    PATTERNS: ClassVar[tuple[str, ...]] = ("said", "not_said")
    NAMES: ClassVar[tuple[str, ...]] = ("called", "not_called")
    SHOWN: ClassVar[int] = 60  # the characters of a text a line quotes

    def problems(self) -> Iterator[str]:
        """One line per mistake, ``field: what is wrong``, with the fix."""
        data = self.data
        yield from self._id(data.get("id"))
        yield from self._tags(data.get("tags"))
        names = {str(key) for field in ("vars", "matrix") if isinstance(data.get(field), dict) for key in data[field]}
        if isinstance(data.get("vars"), dict):
            for key, value in data["vars"].items():
                if isinstance(value, str):
                    yield from self._valued(f"vars.{key}", value, names)
        if isinstance(data.get("matrix"), dict):
            for key, values in data["matrix"].items():
                for number, value in enumerate(values if isinstance(values, list) else ()):
                    if isinstance(value, str):
                        yield from self._valued(f"matrix.{key}[{number}]", value, names)
        if isinstance(data.get("user"), str):
            yield from self._braced("user", data["user"], names)
        if isinstance(data.get("script"), list):
            for number, line in enumerate(data["script"]):
                if isinstance(line, str):
                    yield from self._braced(f"script[{number}]", line, names)
        if isinstance(data.get("judge"), list):
            for number, entry in enumerate(data["judge"]):
                yield from self._entry(f"judge[{number}]", entry, names)

    def _id(self, written: Any) -> Iterator[str]:
        if isinstance(written, str) and (Slotted(written).slots() or "{{" in written):
            yield (
                f"id: {self._cut(written)!r} has a slot, and an id is never filled: write the id itself "
                "(a matrix adds its values to each variant's id, as seat[seat=12A])"
            )

    def _tags(self, written: Any) -> Iterator[str]:
        if not isinstance(written, list):
            return
        seen: dict[str, int] = {}
        for number, tag in enumerate(written):
            if not isinstance(tag, str):
                continue
            place = f"tags[{number}]"
            if Slotted(tag).slots() or "{{" in tag:
                yield f"{place}: {self._cut(tag)!r} has a slot, and a tag is never filled: write the tag itself"
            elif not tag.strip():
                yield f"{place}: an empty tag: give it a word, or leave it out"
            elif tag != tag.strip():
                yield f"{place}: {tag!r} has spaces round it, and --tag matches a tag as written: write {tag.strip()!r}"
            elif tag.casefold() in seen:
                earlier = written[seen[tag.casefold()]]
                yield (
                    f"{place}: {tag!r} is given already, at tags[{seen[tag.casefold()]}]: leave one out"
                    if earlier == tag
                    else f"{place}: {tag!r} is tags[{seen[tag.casefold()]}] {earlier!r} in another case, and "
                    f"--tag matches a tag as written: keep one spelling"
                )
            seen.setdefault(tag.strip().casefold(), number)

    def _entry(self, place: str, entry: Any, names: set[str]) -> Iterator[str]:
        match entry:
            case str(text):
                keyed = _KEYED.match(text)
                written = text.strip()
                if keyed and keyed.group(2) in ("claim", "check"):
                    fix = f"- {written}"
                elif keyed and keyed.group(1):
                    fix = f"- check: {written}"
                else:
                    fix = f"- check: {{{written}}}"
                if keyed and self._sound(fix):
                    kind = "claim" if keyed.group(2) == "claim" else "check"
                    yield (
                        f"{place}: {self._cut(written)!r} is in quotes, so it is a claim's text the judge would be asked, "
                        f"but it reads as a {kind}: write it without the quotes, {self._cut(fix)}"
                    )
                    return
                yield from self._braced(place, text, names)
            case {"check": dict() as check}:
                yield from self._check(f"{place}.check", check, names)
            case dict():
                for field in ("claim", "pass"):
                    if isinstance(entry.get(field), str):
                        yield from self._braced(f"{place}.{field}", entry[field], names)
            case _:
                pass

    @staticmethod
    def _sound(fix: str) -> bool:
        """Whether ``fix``, a judge entry written as YAML (``- check: {said: Hi}``), reads as a sound
        entry that passes these looks too: only then is a quoted entry that reads so refused
        ("check: the agent greets the user back" is a claim's text)."""
        try:
            entry = yaml.safe_load(fix)
        except yaml.YAMLError:
            return False
        match entry:
            case [dict() as mapping]:
                try:
                    msgspec.convert(mapping, Rule)
                except (msgspec.ValidationError, ValueError):
                    return False
                return not any(Written({"judge": [mapping]}).problems())
            case _:
                return False

    def _check(self, place: str, check: dict[Any, Any], names: set[str]) -> Iterator[str]:
        for field in (*self.NAMES, *self.PATTERNS):
            value = check.get(field)
            if field not in check or not isinstance(value, str):
                continue
            if not value.strip():
                yield (
                    f"{place}.{field}: empty, and an empty pattern matches every reply: give the text to look for, or leave {field} out"
                    if field in self.PATTERNS
                    else f"{place}.{field}: empty: give the tool's name, or leave {field} out"
                )
                continue
            yield from self._braced(f"{place}.{field}", value, names)
            if field in self.PATTERNS and not Pattern(value).problem():
                yield from self._pattern(f"{place}.{field}", field, Pattern(value))
        if isinstance(check.get("with"), dict):
            yield from self._arguments(f"{place}.with", check["with"], names)

    def _pattern(self, place: str, field: str, pattern: Pattern) -> Iterator[str]:
        unsound = _unsound(field, pattern)
        if unsound:
            yield f"{place}: /{_written(self._cut(pattern.text))}/ {unsound}"

    def _arguments(self, place: str, given: dict[Any, Any] | list[Any], names: set[str]) -> Iterator[str]:
        # A null written (null or ~) is a value the agent must pass, null; nothing written is a slip.
        items = given.items() if isinstance(given, dict) else enumerate(given)
        for key, value in items:
            at, shown = (f"{place}.{key}", f"{key}:") if isinstance(given, dict) else (f"{place}[{key}]", "-")
            match value:
                case None if at in self.blanks:
                    yield (
                        f"{at}: no value (YAML reads {shown} with nothing after it as null): write the value "
                        f"the agent must pass, in quotes when it is text ({shown} '12A'), or null for a null"
                    )
                case str():
                    yield from self._braced(at, value, names)
                case dict() | list():
                    yield from self._arguments(at, value, names)
                case _:
                    pass

    def _braced(self, place: str, text: str, names: set[str]) -> Iterator[str]:
        for found in _BRACED.finditer(text):
            if found.group(1) in names:
                yield (
                    f"{place}: {found.group(0)} would stay as written, one pair of braces: "
                    f"did you mean {{{{ {found.group(1)} }}}}, or \\{{{found.group(1)}}} for the braces themselves?"
                )

    def _valued(self, place: str, text: str, names: set[str]) -> Iterator[str]:
        # A value is sent as it is, never filled: {name} there is sent with its braces, as written.
        for found in _BRACED.finditer(text):
            if found.group(1) in names:
                yield (
                    f"{place}: {found.group(0)} would be sent as written, and a value is not filled: put "
                    f"{{{{ {found.group(1)} }}}} in the text the value goes into, or, for the braces themselves, "
                    f"write the text there with \\{{{found.group(1)}}}"
                )

    def _cut(self, text: str) -> str:
        return text if len(text) <= self.SHOWN else text[: self.SHOWN] + "..."


class ScenarioFile(msgspec.Struct, frozen=True):
    """One scenario file; ``default_id`` is its path under ``scenarios/`` without ``.yaml`` (or ``.yml``)."""

    path: Path
    shown: str
    default_id: str

    def scenario(self) -> Scenario:
        try:
            read = YamlFile(self.path, self.shown).read()
        except ConfigurationError as error:
            raise ScenarioError((str(error),)) from None
        data = read.data
        match data:
            case dict():
                pass
            case None:
                raise ScenarioError((f"{self.shown}: empty: a scenario needs at least a judge and a user or a script",))
            case list() if self.path.stem.lower() == "personas":
                folder = self.shown.split("/", 1)[0]
                raise ScenarioError((
                    f"{self.shown}: read as a scenario, since it is in {folder}/: personas are read from "
                    f"personas.yaml beside {folder}/; move it there",
                ))
            case _:
                raise ScenarioError((f"{self.shown}: must be a mapping of fields (id, user, script, judge, ...)",))
        # Two fields convy sets itself, never read from a file: said, then left out of the rest.
        own = {
            "variant": "convy sets it on each variant of a matrix; write matrix:",
            "filled": "convy sets it once the slots are filled; leave it out",
        }
        problems = [f"{self.shown}: {field}: {said}" for field, said in own.items() if field in data]
        written = {"id": self.default_id, **{key: value for key, value in data.items() if key not in own}}
        if "fail_under" in written:  # "90%" is 0.9, as in [tool.convy], .env and on the command line
            written["fail_under"] = Share(written["fail_under"]).number()
        # Other text is told how to write a share, as a number out of range is.
        shares = {"fail_under: expected a number, got text": 'fail_under: expected a number, got text (0.8 or "80%")'}
        problems.extend(f"{self.shown}: {self._quoted(shares.get(line, line), data)}" for line in Layout(Scenario).problems(written))
        problems.extend(f"{self.shown}: {line}" for line in Written(data, read.blanks).problems())
        problems = list(dict.fromkeys(problems))
        if problems:
            raise ScenarioError(tuple(problems))
        try:
            scenario = msgspec.convert(written, Scenario)
        except msgspec.ValidationError as error:  # what Layout did not foresee is still said, in one line
            raise ScenarioError((f"{self.shown}: {FieldProblem(str(error), Scenario).text()}",)) from None
        try:  # the run folder keeps it as JSON: what would not read back the same is refused now
            kept = _SCENARIO.decode(msgspec.json.encode(scenario))
        except (TypeError, ValueError, msgspec.MsgspecError) as error:
            raise ScenarioError((f"{self.shown}: cannot be kept in a run folder: {error}",)) from None
        if kept != scenario:
            raise ScenarioError((f"{self.shown}: cannot be kept in a run folder as it is written",))
        return scenario


    @staticmethod
    def _quoted(line: str, data: dict[str, Any]) -> str:
        """``line`` with the fix for a tag YAML read as a number (``tags: [2024]``): quote it."""
        found = re.fullmatch(r"tags\[(\d+)\]: expected text, got (?:a whole number|a number)", line)
        tags = data.get("tags")
        if found is None or not isinstance(tags, list) or int(found[1]) >= len(tags):
            return line
        return f"{line}: write it in quotes, '{tags[int(found[1])]}'"


_SCENARIO = msgspec.json.Decoder(Scenario)


class Matching(msgspec.Struct, frozen=True):
    """The scenarios a run plays: those whose id or path fits a pattern, and that carry a tag."""

    patterns: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    def chosen(self, scenarios: tuple[Scenario, ...]) -> tuple[Scenario, ...]:
        return tuple(scenario for scenario in scenarios if self._fits(scenario))

    def unmatched(self, scenarios: tuple[Scenario, ...]) -> bool:
        """Whether some pattern or tag given matches none of ``scenarios``: a mistake even when the
        others choose some (a mistyped second ``--scenarios`` is not dropped in silence); ``missed``
        says which."""
        tags = {tag for scenario in scenarios for tag in scenario.tags}
        return any(not Matching((pattern,)).chosen(scenarios) for pattern in self.patterns) or any(
            tag not in tags for tag in self.tags
        )

    def missed(self, scenarios: tuple[Scenario, ...], folder: str = "scenarios/") -> str:
        """Why none of ``scenarios`` is chosen, said with what is near: for a pattern that fits
        none, the nearest ids; for a tag no scenario has, the tags there are."""
        if not scenarios:
            return f"no scenario files in {folder} (one scenario per file: {folder}<id>.yaml)"
        ids = sorted({name for scenario in scenarios for name in (scenario.id, scenario.variant.of if scenario.variant else scenario.id)})
        reasons: list[str] = []
        for pattern in self.patterns:
            if not Matching((pattern,)).chosen(scenarios):
                asked = pattern.removeprefix("./").removeprefix(folder)
                for suffix in Scenarios.SUFFIXES:
                    asked = asked.removesuffix(suffix)
                parts = [part.strip() for part in pattern.split(",") if part.strip()]
                if len(parts) > 1 and all(Matching((part,)).chosen(scenarios) for part in parts):
                    reasons.append(f"--scenarios {pattern}: no such scenario; give each apart, with spaces: --scenarios {' '.join(parts)}")
                    continue
                near = difflib.get_close_matches(asked, ids, n=3, cutoff=0.5)
                reasons.append(
                    f"--scenarios {pattern}: no such scenario; "
                    + (f"nearest: {', '.join(near)}" if near else f"the ids are {', '.join(ids[:10])}{', ...' if len(ids) > 10 else ''}")
                )
        tags = sorted({tag for scenario in scenarios for tag in scenario.tags})
        for tag in self.tags:
            parts = [part.strip() for part in tag.split(",") if part.strip()]
            if tag not in tags and len(parts) > 1 and all(part in tags for part in parts):
                reasons.append(f"--tag {tag}: no scenario has it; give each apart, with spaces: --tag {' '.join(parts)}")
            elif tag not in tags and (cased := [known for known in tags if known.casefold() == tag.strip().casefold()]):
                reasons.append(f"--tag {tag}: no scenario has it; a tag is matched as written: --tag {cased[0]}")
            elif tag not in tags:
                reasons.append(f"--tag {tag}: no scenario has it; " + (f"the tags are {', '.join(tags)}" if tags else "no scenario has a tag"))
        if reasons:
            return "no scenario matches: " + "; ".join(reasons)
        return f"no scenario matches both --scenarios {' '.join(self.patterns)} and --tag {' '.join(self.tags)}"

    @staticmethod
    def _within(base: str, pattern: str) -> bool:
        # A folder of scenarios (orders, orders/, scenarios/orders) chooses every scenario in it.
        folder = pattern.removeprefix("./").removeprefix("scenarios/").rstrip("/")
        return bool(folder) and fnmatch.fnmatchcase(base, f"{folder}/*")

    def _fits(self, scenario: Scenario) -> bool:
        # A variant is chosen by its own id (given exactly: ``[`` starts a set in a glob) or by
        # what chooses the scenario it was made from, its id or its file.
        base = scenario.variant.of if scenario.variant is not None else scenario.id
        names = (scenario.id, base, *(f"{folder}{base}{suffix}" for folder in ("scenarios/", "") for suffix in Scenarios.SUFFIXES))
        by_pattern = not self.patterns or any(
            pattern == scenario.id
            or fnmatch.fnmatchcase(name, pattern.removeprefix("./"))
            or self._within(base, pattern)
            for pattern in self.patterns
            for name in names
        )
        by_tag = not self.tags or any(tag in scenario.tags for tag in self.tags)
        return by_pattern and by_tag
