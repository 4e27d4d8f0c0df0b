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
import functools
import math
import time
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Literal

import msgspec

from convy.agent import Agent, AgentFailure, Answer, Asked, Call, Message, NoUsage, OutOfTime, Usage, spent_of
from convy.busy import Busy
from convy.checks import PATTERNS, QUOTED, Check, Fill, Rule, literal, slashed, why_unsound
from convy.judge import Checked, Claim, Failed, Graded, Judge, NoVerdict, Ruling, Verdict
from convy.loops import running
from convy.model import Absent, Model, ModelFailure, StillBusy
from convy.outcome import UNTIMED, Judged, Outcome
from convy.pattern import Pattern
from convy.pauses import ASKING, DECISIONS, Approvals, Asking, Decision
from convy.playing import InCharacter, PlayedTool
from convy.problems import (
    EmptyReply,
    Outside,
    Problems,
    ServiceFailure,
)
from convy.prompt import STOP, Prompt
from convy.receiver import Received, Receiver
from convy.slots import Slotted, nearest
from convy.tools import TOOLS, Tool, Toolbox, joined, path_of, same
from convy.toolserver import served
from convy.tracecontext import TRACED, TraceContext, TraceIds
from convy.traced import dialogue
from convy.transcript import Finished, Stop, Transcript, Turn, Unchecked, UserFault
from convy.user import Conduct, Noted, SimulatedUser, UserReview
from convy.variants import PERSONA, Matrix, Persona, Personas, Value, Variant
from convy.waits import STARTS, WAITS, Waits

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
    tools: tuple[Tool, ...] = ()  # tools the scenario declares and answers for (tools.py), fresh each attempt
    state: dict[str, Any] = {}  # what those tools start each attempt with
    approvals: dict[str, str] = {}  # its answers to an agent that asks before running a tool: approve, deny or user

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
        yield from self._tool_problems()
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

    def _tool_problems(self) -> Iterator[str]:
        """What is wrong between its tools, their state and its checks: a tool declared twice, a
        state no tool has, a path whose first key is a slip for one of the state's, a check of the
        state with no tools, or of a call of a tool whose name is a slip for one it declares; an
        approval that is not approve or deny, or names a slip for a declared tool."""
        names: dict[str, int] = {}
        for number, tool in enumerate(self.tools):
            if tool.name in names:
                yield f"tools[{number}].name: {tool.name} is declared twice (tools[{names[tool.name]}] too)"
            names.setdefault(tool.name, number)
        if self.state and not self.tools:
            yield "state: no tool reads or changes it: declare the scenario's tools under tools:"
        for asked, said in self.approvals.items():
            if said not in DECISIONS:
                meant = nearest(str(said), DECISIONS)
                yield f"approvals.{asked}: {said!r} is not an answer: approve, deny or user" + (f" (did you mean {meant}?)" if meant else "")
            elif said == "user" and not self.user.strip():
                yield f"approvals.{asked}: user: the scenario has no simulated user to decide (no user:); answer approve or deny"
            if names and asked not in names and (meant := nearest(asked, names)):
                yield f"approvals.{asked}: not a tool of the scenario: did you mean {meant}?"
        keys = set(self.state)
        written: set[str] = set()  # the first keys the tools' answers set
        for number, tool in enumerate(self.tools):
            fixtures = [(f"answers[{at}]", fixture) for at, fixture in enumerate(tool.answers)]
            fixtures += [("default", tool.default)] if tool.default is not None else []
            for where, fixture in fixtures:
                paths = [("read", fixture.read)] if fixture.read else []
                paths += [(f"set.{path}", path) for path in fixture.set]
                for field, path in paths:
                    first = path_of(path)[0]
                    if field != "read":
                        written.add(first)
                    if self.state and first not in keys and not Slotted(first).slots() and (near := nearest(first, keys)):
                        yield f"tools[{number}].{where}.{field}: {first} is not in state: did you mean {near}?"
        for number, entry in enumerate(self.judge):
            match entry:
                case Rule(check=Check(state=state)) if state and not self.tools:
                    yield f"judge[{number}].check.state: the scenario declares no tools, so there is no state to check: declare them under tools:"
                case Rule(check=Check(state=state)) if state:
                    for path in state:
                        first = path_of(path)[0]
                        if first not in keys | written and not Slotted(first).slots():
                            near = nearest(first, keys | written)
                            fix = f": did you mean {near}?" if near else f" (it holds {', '.join(sorted(keys | written))})" if keys | written else ""
                            yield f"judge[{number}].check.state.{path}: {first} is in no state the tools start with or set{fix}"
                case Rule(check=Check(called=called, not_called=not_called)) if self.tools and (called or not_called):
                    name = called or not_called
                    near = nearest(name, names) if name not in names and not Slotted(name).slots() else ""
                    if near:
                        field = "called" if called else "not_called"
                        yield f"judge[{number}].check.{field}: {name} is not a tool of the scenario: did you mean {near}?"
                case Rule(check=Check(asked_approval=asked, not_asked_approval=unasked)) if asked or unasked:
                    # A slip for a tool the scenario declares or its approvals name: a check of
                    # a name never asked about would hold (or fail) whatever the agent did.
                    name = asked or unasked
                    known = set(names) | set(self.approvals)
                    near = nearest(name, known) if name not in known and not Slotted(name).slots() else ""
                    if near:
                        field = "asked_approval" if asked else "not_asked_approval"
                        yield f"judge[{number}].check.{field}: {name} is not a tool of the scenario or its approvals: did you mean {near}?"
                case _:
                    pass

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
                    if field in PATTERNS and made != text:
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
        if not Pattern(text).problem() and why_unsound(field, Pattern(text)):
            return  # unsound as written, slots and all: said once, by Written
        unsound = why_unsound(field, Pattern(made))
        if unsound:
            given = ", ".join(f"{slot}={values[slot]!r}" for slot in slots if slot in values)
            cut = QUOTED
            raise ValueError(
                f"{place}: /{slashed(text[:cut])}/ filled with {given} is /{slashed(made[:cut])}/, which {unsound}"
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
            return slotted.filled(values, shown, "\\{" if shown is literal else "{")

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
            tools=self.tools,
            state=self.state,
            approvals=self.approvals,
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
        # A tool a model plays (simulate: true) is played by the simulated user's model.
        played = self.user.strip() or any(tool.simulate for tool in self.tools)
        needs: tuple[Literal["user", "judge"], ...] = ("user",) if played else ()
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
        """Its checks of the agent's tool calls (``called``, ``not_called``) that only the agent's
        own report can decide, as reports show them: not those of a tool it declares, whose calls
        its tools see themselves."""
        served = {tool.name for tool in self.tools}
        return tuple(check.text() for check in self._checks if (check.called or check.not_called) and (check.called or check.not_called) not in served)

    @functools.cached_property
    def _answers(self) -> Approvals:
        """Its ``approvals:`` as an attempt's agent reads them (``pauses.Approvals``), made once."""
        decisions: dict[str, Decision] = {
            tool: "approve" if said == "approve" else "user" if said == "user" else "deny"
            for tool, said in self.approvals.items()
        }
        return Approvals(decisions)

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
        """The simulated user of this scenario, told ``prompt`` as ``told`` fills it; a scenario
        with no ``user:`` (a script, and tools a model plays) has its model told nothing."""
        if not self.user.strip():
            return SimulatedUser(model, "")
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
        self,
        attempt: int,
        agent: Agent,
        user: Any,
        judge: Judge | Absent,
        max_turns: int,
        review: UserReview = UserReview(),
        receiver: Receiver | None = None,
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
        (``user.Conduct``), and by a model for the checks ``review`` asks for; a fault leaves a
        whole dialogue not judged with the fault as its reason (the judge is not asked; the checks
        more turns could not change are decided, and one that failed fails the attempt), unless
        ``review`` says such faults are counted.

        With a ``receiver`` (``receive_traces``), the agent's own spans of the attempt's trace are
        taken once the dialogue is over, the tool calls they show joined to its turns
        (``traced.dialogue``) before anything is decided, and the spans kept in the attempt's record.
        """
        limit = self.max_turns or max_turns
        if not self.user.strip():  # with no user the dialogue is exactly the script: a run's max_turns
            limit = max(limit, len(self.script))  # below it is refused before (Project.scripted), bar the default
        started = STARTS.now()
        ids = TraceIds.new()  # the attempt's trace: its turns are sent under it, its export carries it
        clock = time.monotonic()
        waits = Waits(running().time())
        noting = WAITS.set(waits)
        # A run's judge is already ``Checked`` (``judge.RunJudge.within``): checked twice, it would
        # cut the dialogue to what was said and read its ruling back twice, to the same effect.
        checked = judge if isinstance(judge, Checked) else Checked(judge)
        # The scenario's tools, fresh for this attempt: its agent's code reaches them (tools.toolbox).
        # The dialogue so far, as the simulated user answers a question the agent pauses to ask in
        # the middle of a turn: the turns before, and the message of the turn under way.
        heard: list[tuple[Transcript, str]] = [(Transcript(), "")]
        model = getattr(user, "model", None)  # the simulated user's, which also plays simulated tools
        simulator = PlayedTool(model) if model is not None and any(tool.simulate for tool in self.tools) else None
        answerer = (
            InCharacter(model, user.prompt, lambda: heard[0]) if model is not None and self.user.strip() else None
        )
        person = Asking(self._answers, answerer, origin=clock)
        serve = functools.partial(served, asking=person)  # over MCP, a call the approvals name is asked about
        box = Toolbox(self.tools, self.state, serve, simulator) if self.tools else None
        tooling = TOOLS.set(box)
        asking = ASKING.set(person)
        if receiver is not None:
            receiver.opened(ids.trace)
        try:
            return await self._played(
                attempt, agent, user, checked, limit, started, clock, waits, review, box, person, heard, ids, receiver
            )
        finally:
            if receiver is not None:
                receiver.forgotten(ids.trace)
            ASKING.reset(asking)
            TOOLS.reset(tooling)
            WAITS.reset(noting)
            if box is not None:
                await box.closed()  # its MCP server, where the agent asked for one

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
        box: Toolbox | None,
        person: Asking,
        heard: list[tuple[Transcript, str]],
        ids: TraceIds,
        receiver: Receiver | None,
    ) -> Outcome:
        transcript = Transcript()
        sent: list[str] = []  # the span id of each turn sent to the agent, as its trace context gave it
        stop: Stop = "finished"
        result: Failed | NoVerdict | None = None  # how the dialogue was cut short, if it was
        pending = ""
        opened = closed = UNTIMED
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
                    heard[0] = (transcript, spoken_text)
                    sent.append(ids.turn(done + 1))
                    traced = TRACED.set(TraceContext(ids.trace, sent[-1]))
                    try:
                        answer = await conversation.turn(message)
                    finally:
                        TRACED.reset(traced)
                    if box is not None:  # the calls the scenario's tools served in the turn, in its answer
                        answer = joined(answer, box.taken(), box.tools)
                    if person.asked:  # the pauses the agent made to ask, after its steps
                        answer = _paused(answer, person.taken())
                    moment = time.monotonic() - clock
                    agent_seconds = moment - agent_start
                    pending, asked = "", None
                    turn = Turn(spoken_text, answer, scripted, user_start, user_seconds, usage, agent_start, agent_seconds)
                    transcript = Transcript(transcript.turns + (turn,))  # ``Transcript.__add__``, in line
                    # The simulated user's model failed while it answered the agent's question or
                    # played a tool: the agent was told no, and the attempt ends as the model's.
                    if failed := person.failure or (box.failure if box is not None else None):
                        stop, result = "model_failed", _unanswered(failed)
                        break
                mark = time.monotonic()
            closed = time.monotonic() - mark
        except OutOfTime as failure:
            stop, result = "time_limit", Failed(Outside(failure).text(), pending)
            broken = spent_of(failure.spent)
        except Busy as busy:
            stop, result = "agent_busy", NoVerdict("busy", f"the agent stayed busy: {Outside(busy).text()}")
            broken = spent_of(busy.spent)
        except AgentFailure as failure:
            stop, result = "agent_failed", Failed(Outside(failure).text(), pending)
            broken = spent_of(failure.spent)
        unanswered = person.failure or (box.failure if box is not None else None)
        if unanswered is not None and stop in ("agent_failed", "time_limit"):
            # The agent broke off after the model failed to answer its question or to play its
            # tool: it was handed a failure not its own, and the attempt is the model's.
            stop, result = "model_failed", _unanswered(unanswered)
        if asked is not None and ending is None:
            # The simulated user's request of a turn the agent did not answer: no turn holds it.
            ending = asked
        if box is not None:
            # Calls served in a turn the agent broke off are kept with what that turn spent, and
            # the state the tools were left in beside the dialogue, for the checks of it.
            left = box.taken()
            if left:
                broken = joined(broken or Answer(""), left, box.tools)
        if left_asked := person.taken():  # pauses in a turn the agent broke off, kept with it
            broken = _paused(broken or Answer(""), left_asked)
        if box is not None:
            transcript = msgspec.structs.replace(transcript, state=box.state)
        received = Received()
        if receiver is not None:
            # The turns the agent answered are waited for; spans of one it broke off are kept if they came.
            received = await receiver.taken(ids.trace, sent[: len(transcript.turns)])
            declared = box.tools if box is not None else ()
            whole = received.whole and received.tooled
            transcript, broken = dialogue(transcript, broken, received.tools, received.links, sent, whole, declared)
            if unseen := receiver.unseen(received):  # its calls are seen in its spans alone, which did not show them
                transcript = msgspec.structs.replace(transcript, unseen=unseen)
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
            user_ending_seconds=UNTIMED if ending is None else ending[1],
            agent_ending=broken,
            user_faults=faults,
            user_unchecked=unchecked,
            trace=ids.trace,
            spans=received.spans,
            spans_dropped=received.dropped,
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
        seconds = time.monotonic() - clock if cut is None else UNTIMED
        return msgspec.structs.replace(
            outcome,
            seconds=outcome.judge_start + seconds,
            result=judged.result,
            judge_seconds=seconds,
            judge_requests=judged.requests,
            waits=tuple(wait for wait in outcome.waits if wait.who != "judge") + tuple(waits.noted),
            rejudged=True,
        )


def _paused(answer: Answer, asked: tuple[Asked, ...]) -> Answer:
    """``answer`` with the pauses its agent made to ask a person, in the order they came: one that
    asked to run a tool just before the call it asked about (the first of that tool with those
    arguments not yet placed after a pause), any other after its steps (a question's place among
    the calls is not known)."""
    steps = list(answer.steps)
    gated: set[int] = set()  # the calls a pause was placed before, by identity
    for pause in asked:
        place = None
        for number, step in enumerate(steps):
            match step:
                case Call(name=name, arguments=arguments) if pause.tool == name and id(step) not in gated and same(arguments, pause.arguments):
                    place = number
                    break
                case _:
                    pass
        if place is None:
            steps.append(pause)
        else:
            gated.add(id(steps[place]))
            steps.insert(place, pause)
    return msgspec.structs.replace(answer, steps=tuple(steps))


def _unanswered(failure: ModelFailure) -> NoVerdict:
    """The attempt's end when the simulated user's model failed to answer the agent's question or
    to play a tool: as where it fails to speak, the model's (busy: the service's)."""
    text = Outside(failure).text()
    match failure:
        case StillBusy():
            return NoVerdict("busy", text)
        case ServiceFailure():
            return NoVerdict("user", text, service=True)
        case _:
            return NoVerdict("user", text)
