"""The waits of an attempt, for its timeline.

A participant's ``busy.Places`` and its ``pacing.Pacing`` note each stretch one of its requests
spent waiting — for a busy service's pause, for its pace, for a free place — as a ``Wait`` in the
``Waits`` of the attempt the request belongs to (``noted``), which ``scenario.Scenario.outcome``
sets in ``WAITS``, a context variable, and copies into the attempt's ``outcome.Outcome``; the
report draws them. The record, the variable and the noting are here, apart from the pacing that
fills them, so that what reads an attempt's waits (``outcome.py``, ``attempt.py``) reads them
without ``busy.py``.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Literal

import msgspec

Who = Literal["agent", "user", "judge"]


class Wait(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """A stretch of an attempt spent waiting: who waited, from when (seconds from the attempt's
    start), how long, and why — a ``busy`` service's pause, the participant's ``pace``, or a free
    ``place`` among the participant's places."""

    who: Who
    start: float
    seconds: float
    why: Literal["busy", "pace", "place"] = "busy"


class Waits:
    """The waits of one attempt, collected as they happen; ``origin`` is the attempt's start in
    the event loop's time."""

    def __init__(self, origin: float) -> None:
        self.origin = origin
        self.noted: list[Wait] = []


WAITS: ContextVar[Waits | None] = ContextVar("convy_waits", default=None)


def noted(who: Who, start: float, seconds: float, why: Literal["busy", "pace", "place"]) -> None:
    """A wait of ``who``'s from ``start`` (the event loop's time) for ``seconds``, noted in the
    attempt's ``Waits`` where it is longer than a millisecond."""
    waits = WAITS.get()
    if waits is not None and seconds > 0.001:
        waits.noted.append(Wait(who, start - waits.origin, seconds, why))
