"""The tools a scenario declares and answers for, and the small state they share.

A scenario's ``tools:`` declares each tool as an agent sees it (``Tool``: a name, a description,
the JSON schema of its arguments) and how it answers (``Fixture``: for a call whose arguments hold
``when``, a result, or the value at a path of the state, ``read``, or an error; changes to the
state, ``set``; a delay), with a ``default`` for every other call. Its ``state:`` is what the tools
start each attempt with. ``Toolbox`` is one attempt's tools: it answers each call, changes its own
copy of the state, and keeps every call it saw as a ``Call`` step that says where its answer came
from (``Call.source``). While an attempt plays, its agent reaches them through ``toolbox()``.

Inside a tool's answers, ``{{ name }}`` is the call's argument ``name`` (a value that is one slot
alone takes the argument as it came: a number stays a number); the scenario's ``vars`` are not
filled there. A path is keys joined by dots, ``bookings.ABC123.seat``, and its keys may be slots.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import re
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, Literal, Protocol

import msgspec

from convy.agent import Answer, Call, NotReported, NoUsage, Reported, Source, Usage
from convy.problems import ModelFailure, Problems, kind_of
from convy.slots import Slotted, nearest

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a tool's name as the Chat Completions API takes it
_KINDS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}
_LONGEST_DELAY = 600.0  # seconds a fixture may hold its answer back


class ToolError(Exception):
    """A tool's answer that is an error, as ``Toolbox.call`` raises it: the error's text."""


class Fixture(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """One answer of a tool: for a call whose arguments hold every ``when`` (the default has
    none), ``result`` (null where none is given), the value at the state's path ``read``, or
    ``error``; the state's paths in ``set`` given their values; after ``delay`` seconds."""

    when: dict[str, Any] = {}
    result: Any = None
    read: str = ""
    error: str = ""
    set: dict[str, Any] = {}
    delay: float = 0.0

    def __post_init__(self) -> None:
        problems: list[str] = []
        given = [name for name in ("result", "read", "error") if getattr(self, name) not in (None, "")]
        if len(given) > 1:
            problems.append(f"{given[1]}: give one of result, read and error, not {' and '.join(given)}")
        if not 0 <= self.delay <= _LONGEST_DELAY:
            problems.append(f"delay: {self.delay:g} s: give 0 to {_LONGEST_DELAY:g} seconds")
        for field, path in (("read", self.read), *((f"set.{key}", key) for key in self.set)):
            if path and (problem := _unsound_path(path)):
                problems.append(f"{field}: {problem}")
        if problems:
            raise Problems(tuple(problems))

    def fits(self, arguments: Mapping[str, Any]) -> bool:
        """Whether a call with ``arguments`` gets this answer: each ``when`` given, with its value
        (``1`` and ``1.0`` alike, ``1`` and ``"1"`` not), and each argument its slots name given (an
        answer that writes in ``{{ note }}`` does not answer a call that left ``note`` out)."""
        return all(key in arguments and same(arguments[key], value) for key, value in self.when.items()) and all(
            name in arguments for _, name in self.slots()
        )

    def slots(self) -> Iterator[tuple[str, str]]:
        """Each ``{{ name }}`` of its answer, with the field it is in."""
        for field, value in (("result", self.result), ("read", self.read), ("error", self.error), ("set", self.set)):
            yield from ((field, name) for name in _slots(value))


class Tool(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """A tool as a scenario declares it: its ``name`` and ``description`` as the agent sees them,
    ``parameters`` (the JSON schema of its arguments, an object's; none, no arguments), its
    ``answers``, the first that fits a call answering it, and the ``default`` for any other call;
    or, with ``simulate``, a model playing the tool answers any other call (the simulated user's
    model, ``playing.PlayedTool``); with neither, such a call gets an error that says no answer was
    declared for it."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = {}
    answers: tuple[Fixture, ...] = ()
    default: Fixture | None = None
    simulate: bool = False

    def __post_init__(self) -> None:
        problems = list(self._problems())
        if problems:
            raise Problems(tuple(problems))

    def _problems(self) -> Iterator[str]:
        if not _NAME.fullmatch(self.name):
            yield f"name: {self.name!r}: a tool's name is 1 to 64 letters, digits, _ or -"
        yield from self._schema_problems()
        names = self.arguments()
        if self.default is not None and self.default.when:
            yield "default.when: the default answers every call no answer fits: leave when out"
        if self.default is not None and self.simulate:
            yield "simulate: the default answers every call no answer fits, so a model would never play the tool: give default or simulate: true, not both"
        if not self.answers and self.default is None and not self.simulate:
            yield "answers: none, and no default: every call would be an error; give its answers, default: {error: ...} for a tool that always fails, or simulate: true for a model to play it"
        fixtures = [(f"answers[{number}]", fixture) for number, fixture in enumerate(self.answers)]
        if self.default is not None:
            fixtures.append(("default", self.default))
        for where, fixture in fixtures:
            for key, value in fixture.when.items():
                if key not in names:
                    yield f"{where}.when.{key}: {self._unknown(key)}"
                elif unfit := self.unfit({key: value}, whole=False):
                    yield f"{where}.when.{key}: {value!r} can never fit a call: {unfit}"
            for field, slot in fixture.slots():
                if slot not in names:
                    yield f"{where}.{field}: {{{{ {slot} }}}}: {self._unknown(slot)}"
            for field, value in (("result", fixture.result), ("error", fixture.error), ("set", fixture.set)):
                if stray := _stray(value):
                    yield f"{where}.{field}: {stray}"

    def _schema_problems(self) -> Iterator[str]:
        schema = self.parameters
        if not schema:
            return
        if schema.get("type", "object") != "object":
            yield f"parameters.type: {schema['type']!r}: a tool's arguments are an object: type: object"
        properties = schema.get("properties", {})
        if not isinstance(properties, dict):
            yield f"parameters.properties: expected a mapping of each argument's schema, got {kind_of(properties)}"
            return
        if not properties and "type" not in schema:
            yield "parameters: give the JSON schema of the arguments: {type: object, properties: {name: {type: string}}}"
        for name, property_ in properties.items():
            if not isinstance(property_, dict):
                yield f"parameters.properties.{name}: expected a schema such as {{type: string}}, got {kind_of(property_)}"
                continue
            kind = property_.get("type")
            kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
            for one in kinds:
                if one not in _KINDS:
                    near = nearest(str(one), _KINDS)
                    fix = f": did you mean {near}?" if near else f": one of {', '.join(_KINDS)}"
                    yield f"parameters.properties.{name}.type: {one!r} is not a JSON schema type{fix}"
            if "enum" in property_ and not isinstance(property_["enum"], list):
                yield f"parameters.properties.{name}.enum: expected a list of the values it may take, got {kind_of(property_['enum'])}: enum: [{property_['enum']}]"
        required = schema.get("required", [])
        if not isinstance(required, list):
            yield f"parameters.required: expected a list of argument names, got {kind_of(required)}"
            return
        for name in required:
            if name not in properties:
                yield f"parameters.required: {name!r}: {self._unknown(str(name))}"

    def _unknown(self, name: str) -> str:
        names = self.arguments()
        if not names:
            return f"{self.name} takes no arguments (its parameters declare none)"
        near = nearest(name, names)
        return f"not an argument of {self.name}" + (f": did you mean {near}?" if near else f" (it takes {', '.join(sorted(names))})")

    def arguments(self) -> frozenset[str]:
        """The names of the arguments its parameters declare."""
        properties = self.parameters.get("properties", {})
        return frozenset(properties) if isinstance(properties, dict) else frozenset()

    def function(self) -> dict[str, Any]:
        """The tool as the Chat Completions API's ``tools`` list holds it."""
        parameters = self.parameters or {"type": "object", "properties": {}}
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": parameters}}

    def unfit(self, arguments: Mapping[str, Any], whole: bool = True) -> str:
        """What is wrong with ``arguments`` for this tool's parameters, or "": an argument it does
        not declare, one it requires missing (where they are a ``whole`` call's), or a value of
        another type or outside its enum."""
        properties = self.parameters.get("properties", {})
        for name in self.parameters.get("required", []) if whole else ():
            if name not in arguments:
                return f"{self.name} requires {name}"
        for name, value in arguments.items():
            if name not in properties:
                return f"{self.name} takes no argument {name}" + (f" (it takes {', '.join(sorted(properties))})" if properties else "")
            declared = properties[name]
            kind = declared.get("type")
            kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
            if kinds and not any(_typed(value, one) for one in kinds):
                return f"{name} must be {' or '.join(kinds)}, got {kind_of(value)}"
            if isinstance(declared.get("enum"), list) and not any(same(value, allowed) for allowed in declared["enum"]):
                return f"{name} must be one of {', '.join(map(repr, declared['enum']))}, got {value!r}"
        return ""

    def answer(self, arguments: Mapping[str, Any]) -> tuple[Fixture | None, Source]:
        """The answer a call with ``arguments`` gets, and where it comes from."""
        for fixture in self.answers:
            if fixture.fits(arguments):
                return fixture, "fixture"
        if self.default is not None:
            return self.default, "default"
        return None, "simulated" if self.simulate else "unanswered"


class Serving(Protocol):
    """A server of a toolbox's tools (``toolserver.ToolServer``): its address, and its end."""

    url: str

    async def stop(self) -> None: ...


# A model playing a tool (``playing.PlayedTool``): the tool, the call's arguments and the state
# now; the value it answered with and its request's usage. It raises a ``ModelFailure``.
Simulator = Callable[[Tool, Mapping[str, Any], Mapping[str, Any]], Awaitable[tuple[Any, Usage | NoUsage]]]


class Toolbox:
    """One attempt's tools: the scenario's ``tools``, its own copy of their ``state``, and every
    call they saw (``calls``, in order), each a ``Call`` step whose ``source`` says where its answer
    came from; once an agent asked for its address (``url``), the server that serves them over MCP,
    which ``serve`` starts; and the model that plays a tool with ``simulate`` (``simulator``), with
    its failure where it failed (``failure``: the agent is told the call failed, and the attempt
    ends as the model's failure). Changes inside as calls come; made anew for each attempt."""

    def __init__(
        self,
        tools: tuple[Tool, ...],
        state: Mapping[str, Any],
        serve: Callable[[Toolbox], Awaitable[Serving]] | None = None,
        simulator: Simulator | None = None,
    ) -> None:
        self.simulator = simulator
        self.failure: ModelFailure | None = None
        self.tools = {tool.name: tool for tool in tools}
        self.state: dict[str, Any] = copy.deepcopy(dict(state))
        self.calls: list[Call] = []
        self._taken = 0  # the calls already joined to an answer (``taken``)
        self._serve = serve
        self._serving: Serving | None = None
        self._starting: asyncio.Lock | None = None  # made in the attempt's loop, the first time ``url`` is asked

    async def url(self) -> str:
        """The address of an MCP server (Streamable HTTP, on 127.0.0.1) that serves these tools,
        started the first time it is asked for and stopped at the attempt's end: for an agent, or
        its framework, that reaches its tools as an MCP client."""
        if self._serving is None:
            if self._serve is None:
                raise LookupError("these tools are not served over MCP here: only an attempt a run plays serves them")
            self._starting = self._starting or asyncio.Lock()
            async with self._starting:
                if self._serving is None:
                    self._serving = await self._serve(self)
        return self._serving.url

    async def closed(self) -> None:
        """Its server stopped, where one was started."""
        serving, self._serving = self._serving, None
        if serving is not None:
            await serving.stop()

    def functions(self) -> list[dict[str, Any]]:
        """The tools as the Chat Completions API's ``tools`` list holds them."""
        return [tool.function() for tool in self.tools.values()]

    async def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """Call the tool ``name``: its result, or a ``ToolError`` with the error it answered with
        (arguments that do not fit its parameters, or none declared for them, are errors too)."""
        call = await self.served(name, arguments or {})
        if call.error:
            raise ToolError(call.error)
        match call.result:
            case Reported(value=value):
                return value
            case NotReported():
                return None

    def denied(self, name: str, arguments: Mapping[str, Any]) -> Call:
        """The call of ``name`` with ``arguments``, which the person asked before it ran denied:
        never run, kept with the error that says so."""
        call = Call(name, dict(arguments), error=f"not run: the user declined to let {name} run", source="denied", approval="denied")
        return self._kept(call, time.perf_counter())

    async def served(self, name: str, arguments: Mapping[str, Any], approval: Literal["", "approved"] = "") -> Call:
        """The call of ``name`` with ``arguments`` answered and kept: its ``Call`` step (marked
        ``approval`` where the person was asked first and said yes)."""
        if approval:
            call = await self.served(name, arguments)
            marked = msgspec.structs.replace(call, approval=approval)
            at = next(place for place in range(len(self.calls) - 1, -1, -1) if self.calls[place] is call)  # others may have come meanwhile
            self.calls[at] = marked
            return marked
        start = time.perf_counter()
        given = dict(arguments)
        tool = self.tools.get(name)
        if tool is None:
            near = nearest(name, self.tools)
            declared = f"did you mean {near}?" if near else f"it declares {', '.join(sorted(self.tools)) or 'none'}"
            return self._kept(Call(name, given, error=f"the scenario declares no tool {name}: {declared}", source="unknown"), start)
        if unfit := tool.unfit(given):
            return self._kept(Call(name, given, error=f"arguments do not fit {name}'s parameters: {unfit}", source="invalid"), start)
        fixture, source = tool.answer(given)
        if source == "simulated":
            return await self._simulated(tool, given, start)
        if fixture is None:
            return self._kept(Call(name, given, error=f"the scenario declares no answer of {name} for these arguments", source="unanswered"), start)
        if fixture.delay:
            try:
                await asyncio.sleep(fixture.delay)
            except asyncio.CancelledError:  # the agent's turn or the attempt ended meanwhile: kept, then cut off
                self._kept(Call(name, given, error=f"cut off: the call's answer was held {fixture.delay:g} s", source=source), start)
                raise
        changes = [(_path(path, given), value) for path, value in fixture.set.items()]
        for keys, _ in changes:
            if problem := _settable(self.state, keys):
                return self._kept(Call(name, given, error=f"the answer's set: cannot set {'.'.join(keys)}: {problem}", source=source), start)
        for keys, value in changes:
            _put(self.state, keys, copy.deepcopy(_filled(value, given)))
        if fixture.error:
            return self._kept(Call(name, given, error=str(_filled(fixture.error, given)), source=source), start)
        if fixture.read:
            found = _got(self.state, _path(fixture.read, given))
            if found is _MISSING:
                return self._kept(Call(name, given, error=f"nothing at {'.'.join(_path(fixture.read, given))}", source=source), start)
            return self._kept(Call(name, given, Reported(copy.deepcopy(found)), source=source), start)
        return self._kept(Call(name, given, Reported(_filled(fixture.result, given)), source=source), start)

    async def _simulated(self, tool: Tool, given: dict[str, Any], start: float) -> Call:
        """The call answered by the model that plays the tool."""
        if self.simulator is None or self.failure is not None:
            why = (
                "no model plays it here"
                if self.simulator is None
                else "the model that plays it failed earlier in this attempt"
            )
            return self._kept(
                Call(tool.name, given, error=f"{tool.name} is simulated and {why}", source="simulated"), start
            )
        try:
            value, usage = await self.simulator(tool, given, copy.deepcopy(self.state))
        except ModelFailure as failure:  # kept for the attempt, which ends as the model's failure
            self.failure = failure
            spent = failure.requests[0] if failure.requests else None
            return self._kept(
                Call(tool.name, given, error=f"the model playing {tool.name} failed", source="simulated", usage=spent),
                start,
            )
        except asyncio.CancelledError:
            # The agent's turn was cut off (its time limit) while the model still played the tool:
            # the model's slowness, not the agent's; the call is kept, its request counted unreported.
            self.failure = ModelFailure(f"the model playing {tool.name} was still answering when the agent's turn was cut off")
            self._kept(Call(tool.name, given, error=f"cut off: the model playing {tool.name} was still answering", source="simulated", usage=NoUsage()), start)
            raise
        return self._kept(Call(tool.name, given, Reported(value), source="simulated", usage=usage), start)

    def _kept(self, call: Call, start: float) -> Call:
        call = msgspec.structs.replace(call, seconds=time.perf_counter() - start)
        self.calls.append(call)
        return call

    def taken(self) -> tuple[Call, ...]:
        """The calls since the last taken: those of the turn that just ended."""
        calls = tuple(self.calls[self._taken :])
        self._taken = len(self.calls)
        return calls


def joined(answer: Answer, served: tuple[Call, ...], declared: Mapping[str, Tool]) -> Answer:
    """``answer`` with the calls the scenario's tools served during its turn: each in place of the
    first call the agent reported of the same tool with the same arguments (the tools' answer is
    what happened), the others after its steps; and a call the agent reported of a tool the
    scenario ``declared`` that its tools never saw marked so: ``source`` "denied" where the person
    it asked said no (never run), else "claimed"; no check counts it."""
    steps = list(answer.steps)
    claimed = [number for number, step in enumerate(steps) if type(step) is Call and not step.source and step.name in declared]
    if not served and not claimed:
        return answer
    left: list[Call] = []
    used: set[int] = set()
    for call in served:
        place = next(
            (
                number
                for number, step in enumerate(steps)
                # the same call reported (unmarked), or the very step the toolbox kept, which an
                # agent's code may put in its answer as it got it (``served``)
                if number not in used
                and type(step) is Call
                and (step == call or not step.source and step.name == call.name and same(step.arguments, call.arguments))
            ),
            None,
        )
        if place is None:
            left.append(call)
        else:
            reported = steps[place]
            approval = reported.approval if type(reported) is Call else ""  # the answer to its pause, as the agent's adapter marked it
            steps[place] = msgspec.structs.replace(call, approval=approval)
            used.add(place)
    for number in claimed:
        if number not in used:
            # Not seen by the tools: denied by the person the agent asked (never run), or only claimed.
            denied = getattr(steps[number], "approval", "") == "denied"
            steps[number] = msgspec.structs.replace(steps[number], source="denied" if denied else "claimed")
    return msgspec.structs.replace(answer, steps=tuple(steps) + tuple(left))


TOOLS: contextvars.ContextVar[Toolbox | None] = contextvars.ContextVar("convy_tools", default=None)


def toolbox() -> Toolbox:
    """The tools of the attempt playing now, as its scenario declared them: for an agent's code to
    call (``await toolbox().call("change_seat", {...})``) or hand to its framework
    (``toolbox().functions()``). A ``LookupError`` outside an attempt, or where the scenario
    declares no tools."""
    box = TOOLS.get()
    if box is None:
        raise LookupError("no scenario tools here: toolbox() is for an agent's code while an attempt of a scenario with tools: plays")
    return box


_MISSING = object()  # nothing at a path of the state


def path_of(text: str) -> tuple[str, ...]:
    """The keys of a path written ``a.b.c``, slots left as written."""
    return tuple(text.split("."))


def at_path(state: Any, keys: tuple[str, ...]) -> tuple[bool, Any]:
    """Whether ``state`` holds a value at ``keys``, and that value."""
    found = _got(state, keys)
    return (False, None) if found is _MISSING else (True, found)


def _got(state: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        match state:
            case dict() if key in state:
                state = state[key]
            case list() if key.isdigit() and int(key) < len(state):
                state = state[int(key)]
            case _:
                return _MISSING
    return state


def _settable(state: dict[str, Any], keys: tuple[str, ...]) -> str:
    """Why ``keys`` cannot be set in ``state``, or "": a key on the way that is a value neither a
    mapping nor a list (its value would be lost), or a list's key that is not one of its indexes."""
    here: Any = state
    for depth, key in enumerate(keys):
        at = ".".join(keys[: depth + 1])
        match here:
            case dict():
                if depth < len(keys) - 1 and key in here and not isinstance(here[key], dict | list):
                    return f"{at} holds {kind_of(here[key])}, not a mapping or a list"
                here = here.get(key, {})
            case list():
                if not key.isdigit() or int(key) >= len(here):
                    return f"{'.'.join(keys[:depth]) or 'it'} is a list of {len(here)}, and {key!r} is not one of its indexes"
                here = here[int(key)]
            case _:
                return f"{'.'.join(keys[:depth])} holds {kind_of(here)}"
    return ""


def _put(state: dict[str, Any], keys: tuple[str, ...], value: Any) -> None:
    """``value`` at ``keys`` of ``state``, the mappings on the way made where missing (a key of a
    list is its index); a value on the way that is neither is replaced by a mapping."""
    here: Any = state
    for key in keys[:-1]:
        match here:
            case list() if key.isdigit() and int(key) < len(here):
                if not isinstance(here[int(key)], dict | list):
                    here[int(key)] = {}
                here = here[int(key)]
            case dict():
                if not isinstance(here.get(key), dict | list):
                    here[key] = {}
                here = here[key]
            case _:
                return
    match here:
        case list() if keys[-1].isdigit() and int(keys[-1]) < len(here):
            here[int(keys[-1])] = value
        case dict():
            here[keys[-1]] = value
        case _:
            pass


def _path(text: str, arguments: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(Slotted(key).filled(arguments) for key in path_of(text))


def _unsound_path(text: str) -> str:
    if any(not key.strip() for key in path_of(text)):
        return f"{text!r}: a path is keys joined by dots, none empty: bookings.ABC123.seat"
    return ""


def _filled(value: Any, arguments: Mapping[str, Any]) -> Any:
    """``value`` with the call's arguments in its slots: a text that is one slot alone takes the
    argument as it came; keys and other texts take it as text."""
    match value:
        case str() if (alone := Slotted(value).alone()) and alone in arguments:
            return copy.deepcopy(arguments[alone])
        case str():
            return Slotted(value).filled(arguments)
        case dict():
            return {Slotted(str(key)).filled(arguments): _filled(item, arguments) for key, item in value.items()}
        case list():
            return [_filled(item, arguments) for item in value]
        case _:
            return value


def _slots(value: Any) -> Iterator[str]:
    match value:
        case str():
            yield from sorted(Slotted(value).slots())
        case dict():
            for key, item in value.items():
                yield from sorted(Slotted(str(key)).slots())
                yield from _slots(item)
        case list():
            for item in value:
                yield from _slots(item)
        case _:
            pass


def _stray(value: Any) -> str:
    match value:
        case str():
            return Slotted(value).stray()
        case dict():
            return next((problem for key, item in value.items() if (problem := _stray(str(key)) or _stray(item))), "")
        case list():
            return next((problem for item in value if (problem := _stray(item))), "")
        case _:
            return ""


def same(one: Any, other: Any) -> bool:
    """Equal as JSON values: ``1`` and ``1.0`` alike; ``True`` and ``1``, ``1`` and ``"1"`` not."""
    if type(one) is str:  # the most common, first
        return type(other) is str and one == other
    if isinstance(one, bool) or isinstance(other, bool):
        return type(one) is type(other) and one == other
    match one, other:
        case dict(), dict():
            return one.keys() == other.keys() and all(same(one[key], other[key]) for key in one)
        case list(), list():
            return len(one) == len(other) and all(same(a, b) for a, b in zip(one, other, strict=True))
        case (int() | float()), (int() | float()):
            return one == other
        case _:
            return type(one) is type(other) and one == other


def _typed(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool) or isinstance(value, float) and value.is_integer()
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, _KINDS.get(kind, (object,))) and not (kind != "boolean" and isinstance(value, bool))
