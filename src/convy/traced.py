"""The tool calls an agent's own spans show, joined to the dialogue they were made in (issue 30, item 4).

An agent instrumented with OpenTelemetry records each tool it runs as an ``execute_tool`` span,
whether or not its replies say so. ``joined`` finds each one's turn — the span of convy's that the
agent's spans of that turn descend from (``tracecontext.TraceIds.turn``) — and puts it in that
turn's answer as a ``Call`` marked ``traced``: on the call the agent reported or the scenario's
tools served of the same tool with the same arguments, where there is one, else after the turn's
steps. The checks and the judge then see what the agent did, not only what it said it did.
"""

from __future__ import annotations

import json
from collections.abc import Container, Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec

from convy.agent import Answer, Call, NotReported, Reported, Step
from convy.received import AgentSpan
from convy.tools import same
from convy.transcript import Transcript
from convy.views import SpanView


class Traced(msgspec.Struct, frozen=True):
    """A tool call a span showed, and whether the span gave its arguments whole (the conventions
    make them optional, and a text cut short does not read as JSON): one whose arguments are not
    known is matched to a call of its tool by the name alone."""

    call: Call
    known: bool = True


def calls(tools: Sequence[AgentSpan], links: Mapping[str, str], turns: Mapping[str, int]) -> dict[int, list[Traced]]:
    """The tool calls ``tools`` show (spans of ``execute_tool``; ``links``: each span's parent, by
    its id), by the number of the turn (``turns``: each turn's span id and number) they descend
    from, each turn's in the order they started; a call under no turn's span is left out."""
    found: dict[int, list[tuple[int, Traced]]] = {}
    for span in tools:
        tool = span.tool()
        if not tool:
            continue
        number = _turn_of(span.parent, links, turns)
        if number is not None:
            found.setdefault(number, []).append((span.start, _call(span, tool)))
    return {number: [call for _, call in sorted(listed, key=lambda pair: pair[0])] for number, listed in found.items()}


def _turn_of(place: str, parent: Mapping[str, str], turns: Mapping[str, int]) -> int | None:
    for _ in range(len(parent) + 1):  # a chain of parents that loops ends here
        if place in turns:
            return turns[place]
        if place not in parent:
            return None
        place = parent[place]
    return None


def _call(span: AgentSpan, tool: str) -> Traced:
    attributes = span.attributes
    given = attributes.get("gen_ai.tool.call.arguments")
    arguments, known = _decoded(given)
    result = attributes.get("gen_ai.tool.call.result")
    failed = attributes.get("error.type")
    call = Call(
        tool,
        arguments if isinstance(arguments, dict) else {} if given is None or not known else {"arguments": arguments},
        _UNREPORTED if result is None else Reported(_decoded(result)[0]),
        span.seconds(),
        error=span.error or (failed if isinstance(failed, str) else ""),
        traced=True,
    )
    return Traced(call, given is not None and known)


_UNREPORTED = NotReported()


def _decoded(value: Any) -> tuple[Any, bool]:
    """An attribute the conventions give as JSON text, read as JSON where it is (and whether it
    was); any other value as it is. Read as the standard library reads it (``NaN``, and numbers
    past a double's range, too), by msgspec where it can, which is quicker."""
    if isinstance(value, str):
        try:
            return _JSON(value), True
        except msgspec.DecodeError:
            pass
        except RecursionError:  # nested past what a reader follows: not read
            return value, False
        try:
            return json.loads(value), True
        except (ValueError, RecursionError):
            return value, False
    return value, True


_JSON = msgspec.json.Decoder().decode


def joined(answer: Answer, traced: Sequence[Traced], declared: Container[str] = ()) -> Answer:
    """``answer`` with the calls ``traced`` in its turn: each marks the first unmarked call of the
    same tool with the same arguments among its steps (by the name alone where the span did not
    give them whole), or follows them; one that follows them of a tool the scenario ``declared``
    ran the agent's own code, never the scenario's tool, and is marked ``claimed`` as a call the
    agent reported of it would be (``tools.joined``). On a call the agent reported, what the span
    says wins: its error, and its result where the report gave none; a call the scenario's tools
    served keeps what they answered."""
    if not traced:
        return answer
    steps: list[Step] = list(answer.steps)
    left: list[Call] = []
    replace = msgspec.structs.replace
    for seen in traced:
        call = seen.call
        name, known, place = call.name, seen.known, -1
        for number, step in enumerate(steps):  # the first unmarked call of the tool, with the same arguments where known
            if type(step) is Call and step.name == name and not step.traced and (not known or same(step.arguments, call.arguments)):
                place = number
                break
        if place < 0:
            left.append(replace(call, source="claimed") if name in declared else call)
            continue
        step = steps[place]
        assert type(step) is Call
        if step.source:  # served by the scenario's tools: what they answered is what happened
            steps[place] = replace(step, traced=True)
        else:
            result = step.result if type(call.result) is NotReported else call.result
            steps[place] = replace(step, traced=True, error=call.error or step.error, result=result)
    return msgspec.structs.replace(answer, steps=tuple(steps) + tuple(left))


def dialogue(
    transcript: Transcript,
    broken: Answer | None,
    tools: Sequence[AgentSpan],
    links: Mapping[str, str],
    turns: Sequence[str],
    whole: bool,
    declared: Container[str] = (),
) -> tuple[Transcript, Answer | None]:
    """The dialogue, and the turn the agent broke off (``broken``, the turn after the last), with
    the calls ``tools`` show joined to their turns (``links``: each span's parent, by its id);
    ``turns`` the span ids of the turns in order, ``declared`` the tools the scenario declares.
    The transcript is marked ``traced`` when its tool calls can be read from the spans (``whole``:
    every turn had spans of the agent's, which shows its tool calls, and none was left out): its
    calls were then seen whatever its replies held."""
    found = calls(tools, links, {span: number for number, span in enumerate(turns, start=1)})
    replace = msgspec.structs.replace
    played = tuple(
        replace(turn, answer=joined(turn.answer, found.get(number, ()), declared)) if number in found else turn
        for number, turn in enumerate(transcript.turns, start=1)
    )
    after = found.get(len(transcript.turns) + 1, ())
    if after:
        broken = joined(broken or Answer(""), after, declared)
    return replace(transcript, turns=played, traced=whole), broken


SHOWN_SPANS = 200  # the agent's spans an attempt's timeline draws (the first to start)


def timeline(spans: Sequence[AgentSpan], started: str, seconds: float, first: float) -> list[SpanView]:
    """The agent's own spans on the attempt's timeline, on a lane of their own, each placed from the
    attempt's start (``started``, as its record keeps it, to the millisecond) by the clock of the
    machine that made it; where that clock is not this one's (a span would fall outside the
    attempt's ``seconds``), the earliest is placed where the first turn of the agent's began
    (``first``), the rest after it as they were. The first ``SHOWN_SPANS`` to start, where there are more."""
    if not spans:
        return []
    ordered = sorted(spans, key=lambda span: span.start)[:SHOWN_SPANS]
    earliest = ordered[0].start / 1e9
    latest = max(span.end for span in ordered) / 1e9
    try:
        origin = datetime.fromisoformat(started).timestamp()
    except ValueError:  # no start to place them from (a line edited by hand)
        origin = earliest - first
    if earliest - origin < -_SLACK or latest - origin > seconds + _SLACK:
        origin = earliest - first
    shown: list[SpanView] = []
    for span in ordered:
        said = span.name + (f" ({span.service})" if span.service else "") + (f": error: {span.error}" if span.error else "")
        shown.append(SpanView(lane="traced", start=span.start / 1e9 - origin, seconds=span.seconds(), label=said))
    return shown


_SLACK = 1.0  # seconds a span may seem to fall outside its attempt, the clocks' and the start's rounding
