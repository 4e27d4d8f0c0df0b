"""What the adapters of agents built on frameworks share, none of it a framework's."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, TypeVar

import msgspec

from convy.agent import Cost, NoUsage, Unpriced, Usage
from convy.busy import Busy
from convy.chat import Prices
from convy.paced import WIRE, Heard
from convy.pauses import asking
from convy.tracecontext import TRACED, TraceContext

T = TypeVar("T")


class Approval(msgspec.Struct, frozen=True):
    """The person's answer to an agent that paused to ask before running a tool, as a tool call
    records it (``Call.approval``), with the error a denied call is kept with (it was not run)."""

    mark: Literal["approved", "denied"]
    error: str = ""

    @property
    def given(self) -> bool:
        return self.mark == "approved"


async def approval(tool: str, arguments: Mapping[str, Any]) -> Approval:
    """Ask the person of the attempt playing now (``asking``) whether ``tool`` may run with
    ``arguments``, at the moment the framework paused: the scenario's approvals answer, or the
    simulated user where they say ``user``; the pause is kept as an ``Asked`` step by the attempt.
    A denied call's error says who denied it, as the transcript shows the call."""
    asked = await asking().decided(tool, arguments)
    if asked.approved():
        return Approval("approved")
    match asked.by:
        case "user":
            return Approval("denied", f"not run: the simulated user denied {tool}")
        case "nobody":
            return Approval("denied", f"not run: nobody answered whether to run {tool}")  # the simulated user's model failed
        case _:
            return Approval("denied", f"not run: the scenario's approvals deny {tool}")


async def unwrapped(run: Awaitable[T]) -> tuple[T, list[Heard | None]]:
    """What a framework's ``run`` of a turn gives, and what each of its requests took as its
    answer said on the wire (``paced.WIRE``: every request the turn sent, a sub-agent's too, with
    the provider's cost, which the frameworks drop); where it raised for a request refused past the
    agent's patience (``paced.Paced``'s ``Busy``, wrapped in the framework's client's own error),
    that ``Busy``, which says the service stayed busy: a busy service's, not the agent's failure."""
    heard: list[Heard | None] = []
    listening = WIRE.set(heard)
    joined = _joined(TRACED.get())
    try:
        return await run, heard
    except Exception as error:
        busy = busy_under(error)
        if busy is not None:
            raise busy from None
        raise
    finally:
        if joined is not None:
            joined()
        WIRE.reset(listening)


def _joined(traced: TraceContext | None) -> Callable[[], None] | None:
    """The turn's trace context made OpenTelemetry's current one while the framework plays it, so
    the spans a framework's own instrumentation makes (pydantic-ai's, an OpenTelemetry-instrumented
    client's) join the attempt's trace under the turn (issue 30); what undoes it, or None where
    there is no turn or no OpenTelemetry API installed."""
    if traced is None:
        return None
    try:
        from opentelemetry import context
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
    except ImportError:
        return None
    token = context.attach(TraceContextTextMapPropagator().extract(traced.headers()))
    return lambda: context.detach(token)


def counted(framework: list[Usage], wire: list[Heard | None], prices: Prices) -> list[Usage | NoUsage]:
    """Each request's usage: as its answer said on the wire where every request of the turn was
    read there (convy's own reading of a reply: one with no usage is no usage, never free; the
    provider's cost; priced by the model the request named); else what the framework counted (a
    streamed reply, another API's), each with the provider's cost read on the wire where as many
    were read."""
    if wire and all(one is not None for one in wire):
        return [_priced(one, prices) for one in wire if one is not None]
    if len(wire) == len(framework):
        return [
            msgspec.structs.replace(usage, cost=one.usage.cost) if one is not None and isinstance(one.usage, Usage) and isinstance(one.usage.cost, Cost) else usage
            for usage, one in zip(framework, wire, strict=True)
        ]
    return list(framework)


def _priced(heard: Heard, prices: Prices) -> Usage | NoUsage:
    usage = heard.usage
    match usage:
        case Usage(cost=Unpriced(), unreported=()):
            cached = usage.cached if isinstance(usage.cached, int) else 0
            return msgspec.structs.replace(usage, cost=prices.cost(heard.model, usage.input, usage.output, cached))
        case _:
            return usage


def busy_under(error: BaseException) -> Busy | None:
    """The ``Busy`` a framework's error came of (a request refused past the agent's patience,
    which the framework's client wrapped in its own error), where one is."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, Busy):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def plain(value: Any) -> Any:
    """A tool's result or an agent's output as JSON holds it: a pydantic model as its dump,
    anything JSON cannot hold as its text."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value
