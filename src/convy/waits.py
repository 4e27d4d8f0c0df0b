"""The waits of an attempt, for its timeline.

A participant's ``busy.Places`` and its ``pacing.Pacing`` note each stretch one of its requests
spent waiting — for a busy service's pause, for its pace, for a free place — as a ``Wait`` in the
``Waits`` of the attempt the request belongs to (``noted``), which ``scenario.Scenario.outcome``
sets in ``WAITS``, a context variable, and copies into the attempt's ``outcome.Outcome``; the
report draws them. The record, the variable and the noting are here, apart from the pacing that
fills them, so that what reads an attempt's waits (``outcome.py``, ``attempt.py``) reads them
without ``busy.py``. ``STARTS`` gives the moment each attempt starts, as its record keeps it.
"""

from __future__ import annotations

import math
import time
from contextvars import ContextVar
from datetime import UTC, datetime
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


STARTS = _Starts()  # each attempt's start, as its record keeps it
