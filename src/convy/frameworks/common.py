"""What the adapters of agents built on frameworks share, none of it a framework's."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import Any, TypeVar

from convy.busy import Busy

T = TypeVar("T")


async def unwrapped(run: Awaitable[T]) -> T:
    """What a framework's ``run`` of a turn gives; where it raised for a request refused past the
    agent's patience (``paced.Paced``'s ``Busy``, wrapped in the framework's client's own error),
    that ``Busy``, which says the service stayed busy: a busy service's, not the agent's failure."""
    try:
        return await run
    except Exception as error:
        busy = busy_under(error)
        if busy is not None:
            raise busy from None
        raise


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
