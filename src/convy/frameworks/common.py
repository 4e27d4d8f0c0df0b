"""What the adapters of agents built on frameworks share, none of it a framework's."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import Any, TypeVar

import msgspec

from convy.agent import Cost, Usage
from convy.busy import Busy
from convy.paced import COSTS

T = TypeVar("T")


async def unwrapped(run: Awaitable[T]) -> tuple[T, list[Cost | None]]:
    """What a framework's ``run`` of a turn gives, and the cost the provider reported for each of
    its requests, in order (``paced.COSTS``: the frameworks drop it); where it raised for a request
    refused past the agent's patience (``paced.Paced``'s ``Busy``, wrapped in the framework's
    client's own error), that ``Busy``, which says the service stayed busy: a busy service's, not
    the agent's failure."""
    costs: list[Cost | None] = []
    listening = COSTS.set(costs)
    try:
        return await run, costs
    except Exception as error:
        busy = busy_under(error)
        if busy is not None:
            raise busy from None
        raise
    finally:
        COSTS.reset(listening)


def costed(usages: list[Usage], costs: list[Cost | None]) -> list[Usage]:
    """Each request's usage with the cost its provider reported, where it reported one (the costs
    read off the wire, one a request in order, where as many as the usages; else as they are)."""
    if len(costs) != len(usages):
        return usages
    return [usage if cost is None else msgspec.structs.replace(usage, cost=cost) for usage, cost in zip(usages, costs, strict=True)]


def busy_under(error: BaseException) -> Busy | None:
    """The ``Busy`` a framework's error came of (a request refused past the agent's patience,
    which the framework's client wrapped in its own error), where one is."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, Busy):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def arguments_of(args: Any) -> dict[str, Any]:
    """A tool call's arguments as a mapping: JSON text read, anything else kept under ``arguments``."""
    match args:
        case dict():
            return args
        case str() if args.strip():
            try:
                value = json.loads(args)
            except ValueError:
                return {"arguments": args}
            return value if isinstance(value, dict) else {"arguments": value}
        case _:
            return {}


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
