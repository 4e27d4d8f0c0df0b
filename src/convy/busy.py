"""Busy services, and how much each participant of a run does at once.

A service that refuses a request without acting on it (HTTP 429 or 503) makes its caller raise
``Busy``; that request, and only that one, may be sent again. ``Places`` is one participant's share
of the run — the agent's, the simulated user's model's, or the judge's:

- how many of its conversations or requests are under way at once (``size``), fewer while its
  service is busy (halved at a refusal) and more again as it recovers (one more after as many
  answers in a row as it has places);
- how many requests it sends per minute (``per_minute``), spaced evenly;
- how long one request may wait for a busy service in all (``Patience``), after which the
  ``Busy`` is raised on. A refusal's ``Retry-After`` pauses every request of the participant, not
  only the refused one, so a rate-limited service is not hit again before it said it is ready.

Retries live here and nowhere else. Every wait is noted in the attempt's ``Waits`` (a context
variable set by the attempt), for the timeline of the report.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Literal, TypeVar

import msgspec

Who = Literal["agent", "user", "judge"]
T = TypeVar("T")


class Busy(Exception):
    """A service refused a request before acting on it; sending it again is safe.

    ``retry_after`` is the seconds the service asked to wait, when it said.
    """

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class Patience(msgspec.Struct, frozen=True):
    """How long one request may wait for a busy service, in all its tries, in seconds."""

    seconds: float = 300.0
    first: float = 1.0  # the wait after a refusal that gave no Retry-After (or 0), doubled each time

    def __post_init__(self) -> None:
        if self.seconds < 0 or self.first <= 0:
            raise ValueError("patience must be at least 0 s, and its first wait more than 0 s")


class Wait(msgspec.Struct, frozen=True, gc=False):
    """A stretch of an attempt spent waiting: who waited, from when (seconds from the attempt's
    start), how long, and why — a ``busy`` service's pause, the participant's per-minute ``pace``,
    or a free ``place`` among the participant's places."""

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


class Places:
    """A participant's places: how much it has under way at once, how fast it sends, how long it waits.

    It changes inside — what is under way, the places allowed now, the next moment a request may
    go, a pause a service asked for — and shows only its counts: ``peak`` (the most under way at
    once), ``refused`` (requests a service refused) and ``given_up`` (requests that ran out of
    patience).
    """

    def __init__(self, size: int, who: Who = "agent", per_minute: int = 0, patience: Patience | None = None) -> None:
        if size < 1:
            raise ValueError("a participant needs at least one place")
        if per_minute < 0:
            raise ValueError("per_minute cannot be negative (0: no limit)")
        self.size = size
        self.who: Who = who
        self.per_minute = per_minute
        self.patience = patience or Patience()
        self.peak = 0
        self.refused = 0
        self.given_up = 0
        self._allowed = size
        self._taken = 0
        self._answered = 0
        self._next = 0.0
        self._paused_until = 0.0
        self._shrunk_at = -math.inf
        self._changed = asyncio.Condition()

    @asynccontextmanager
    async def one(self) -> AsyncIterator[None]:
        """Hold one place while the block runs: a conversation, or one try of a request."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        async with self._changed:
            await self._changed.wait_for(lambda: self._taken < self._allowed)
            self._taken += 1
            self.peak = max(self.peak, self._taken)
        self._noted(start, loop.time() - start, "place")
        try:
            yield
        finally:
            async with self._changed:
                self._taken -= 1
                self._changed.notify_all()

    async def sent(self, request: Callable[[], Awaitable[T]]) -> T:
        """``request`` sent within a place, at the participant's pace, tried again while the
        service is busy and the participant's patience lasts."""
        return await self._tried(request, held=True)

    async def retried(self, request: Callable[[], Awaitable[T]], paced: bool = True) -> T:
        """``request`` sent at the participant's pace and tried again while busy, in a place the
        caller already holds (a turn of an open conversation). Unless ``paced``, it waits for a
        pause a service asked for but takes no slot of the minute: opening a conversation, which
        sends nothing for convy's own agents."""
        return await self._tried(request, held=False, paced=paced)

    async def _tried(self, request: Callable[[], Awaitable[T]], held: bool, paced: bool = True) -> T:
        loop = asyncio.get_running_loop()
        waited = 0.0
        delay = self.patience.first
        while True:
            try:
                if held:
                    async with self.one():
                        await self._paced(paced, waited)
                        answer = await request()
                else:
                    await self._paced(paced, waited)
                    answer = await request()
            except Busy as busy:
                # A Retry-After of 0 (or a date gone by) says nothing of how long the service
                # stays busy: taken at its word, it would be asked again at once, without end.
                pause = busy.retry_after if busy.retry_after else delay
                delay = min(delay * 2, 60.0)
                if waited + pause > self.patience.seconds:
                    # A pause longer than anyone's patience is not imposed on the others: their
                    # own refusals will tell them.
                    self.refused += 1
                    self.given_up += 1
                    raise Busy(
                        f"{busy} — still busy after waiting {waited:.1f} s (patience {self.patience.seconds:g} s)",
                        busy.retry_after,
                    ) from busy
                await self._busy(pause)
                start = loop.time()
                await asyncio.sleep(pause)
                waited += pause
                self._noted(start, loop.time() - start, "busy")
                continue
            await self._answered_once()
            return answer

    async def _paced(self, slotted: bool, waited: float) -> None:
        """Wait for a pause a service asked for, then for this request's slot in the minute; a
        pause longer than what is left of the request's patience gives up at once."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        left = self.patience.seconds - waited
        if self._paused_until - start > left:
            self.given_up += 1
            raise Busy(
                f"the service asked to wait {self._paused_until - start:.1f} s more, past the patience of "
                f"{self.patience.seconds:g} s"
            )
        while loop.time() < self._paused_until:
            await asyncio.sleep(self._paused_until - loop.time())
        self._noted(start, loop.time() - start, "busy")
        if self.per_minute and slotted:
            start = loop.time()
            slot = max(start, self._next)
            self._next = slot + 60.0 / self.per_minute
            if slot > start:
                await asyncio.sleep(slot - start)
            self._noted(start, loop.time() - start, "pace")

    async def _busy(self, pause: float) -> None:
        loop = asyncio.get_running_loop()
        self.refused += 1
        self._answered = 0
        self._paused_until = max(self._paused_until, loop.time() + pause)
        # Many requests refused at once are one sign of one overload: shrink once per pause.
        if loop.time() - self._shrunk_at >= max(pause, 0.1):
            self._shrunk_at = loop.time()
            async with self._changed:
                self._allowed = max(1, self._allowed // 2)

    async def _answered_once(self) -> None:
        if self._allowed >= self.size:
            return
        self._answered += 1
        if self._answered >= self._allowed:
            self._answered = 0
            async with self._changed:
                self._allowed += 1
                self._changed.notify_all()

    def _noted(self, start: float, seconds: float, why: Literal["busy", "pace", "place"]) -> None:
        waits = WAITS.get()
        if waits is not None and seconds > 0.001:
            waits.noted.append(Wait(self.who, start - waits.origin, seconds, why))
