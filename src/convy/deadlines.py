"""Time limits under way in an event loop, watched by one timer for each length of limit.

``asyncio.timeout`` arms a timer of the loop for every block it limits and cancels it when the
block ends: a run of 10,000 attempts of 6 turns made and threw away 80,000 timers, most of them
for blocks that ended at once. ``Deadlines`` keeps the limits of one length in the order they end —
the order they began, their length being the same — and arms one timer, at the end of the first
one still under way; a limit that ends costs a flag. A ``Deadline`` is used as
``asyncio.timeout`` is, with the same meaning: when its time is up, the task is cancelled, and
the block ends in ``TimeoutError`` unless it was cancelled for another reason too (then the
cancellation goes on); ``expired`` tells a limit's own ``TimeoutError`` from one raised inside.
A block inside may be ``held``: its time is not counted, and the limit ends that much later
(``LIMIT`` is the limit of the agent's turn under way, which a wait for a busy service holds).
"""

from __future__ import annotations

import asyncio
from collections import deque
from contextvars import ContextVar
from types import TracebackType


class Deadline:
    """One block's time limit: the task it stops, when, and whether it expired. Made by
    ``Deadlines.limit``, entered once, with ``async with`` as ``asyncio.timeout`` is or with a
    plain ``with`` around the block's awaits (the same, for two coroutines less)."""

    __slots__ = ("_task", "_cancelling", "_expired", "_ended", "when", "_held", "_held_at", "_late", "_own")

    def __init__(self, when: float, task: asyncio.Task[object] | None = None) -> None:
        self.when = when
        self._task = task  # the task it stops: found by ``Deadlines.here``, or when entered
        self._cancelling = task.cancelling() if task is not None else 0
        self._expired = False
        self._ended = False
        self._held = 0  # waits under way that the limit does not count (a busy service's)
        # _held_at (when the first of them began) and _late (its time came while it was held) are
        # set when first needed, and read only after: a limit that ends at once never sets them.
        self._own = False  # moved on by a wait: watched by a timer of its own, not its length's

    def held(self) -> _Held:
        """A block whose time this limit does not count: the limit ends as much later as it lasted
        (a wait for a busy service inside an agent's turn is not the agent's time)."""
        return _Held(self)

    def _hold(self) -> None:
        if not self._held:
            self._held_at = asyncio.get_running_loop().time()
        self._held += 1

    def _unhold(self) -> None:
        self._held -= 1
        if self._held or self._ended:
            return
        loop = asyncio.get_running_loop()
        self.when += loop.time() - self._held_at
        self._own, self._late = True, False
        loop.call_at(self.when, self._rung)

    def _rung(self) -> None:
        # A timer of its own: a later wait may have moved the limit on since it was armed.
        if not self._held and asyncio.get_running_loop().time() >= self.when:
            self._expire()

    def expired(self) -> bool:
        """Whether the time ran out while the block was under way."""
        return self._expired

    def __enter__(self) -> Deadline:
        if self._task is None:  # the task it stops is the one it is entered in
            task = asyncio.current_task()
            if task is None:
                raise RuntimeError("a deadline is kept inside a task")
            self._task = task
            self._cancelling = task.cancelling()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._ended = True
        task, self._task = self._task, None  # an ended limit holds no task
        if self._expired and task is not None:
            # As asyncio.timeout: the cancellation is the limit's own unless another came too.
            if task.uncancel() <= self._cancelling and kind is asyncio.CancelledError:
                raise TimeoutError from error

    async def __aenter__(self) -> Deadline:
        return self.__enter__()

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.__exit__(kind, error, trace)

    def _expire(self) -> None:
        if self._ended or self._task is None:
            return
        if self._held:  # its time is up only once the wait that holds it is over
            self._late = True
            return
        self._expired = True
        self._task.cancel()


class _Held:
    """A block a ``Deadline`` does not count (``Deadline.held``)."""

    __slots__ = ("_deadline",)

    def __init__(self, deadline: Deadline) -> None:
        self._deadline = deadline

    def __enter__(self) -> None:
        self._deadline._hold()

    def __exit__(self, *exc: object) -> None:
        self._deadline._unhold()


class Deadlines:
    """The time limits under way in the running event loop: for each length, those of that
    length in the order they end, and one timer armed at the end of the first. Used from another
    loop, it starts afresh."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._under_way: dict[float, deque[Deadline]] = {}
        self._timers: dict[float, float] = {}  # by length: when its one timer rings

    def limit(self, seconds: float) -> Deadline:
        """A limit of ``seconds`` from now, for one ``async with`` block entered at once (by
        whichever task enters it)."""
        return self._limit(seconds, False)

    def here(self, seconds: float) -> Deadline:
        """``limit``, for a block of the task running now, entered by it at once: the task is
        found here, with the loop already at hand, rather than again as the block is entered
        (an agent's turn's limit, made and entered some hundred thousand times in a run)."""
        return self._limit(seconds, True)

    def _limit(self, seconds: float, here: bool) -> Deadline:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._under_way, self._timers = loop, {}, {}
        deadline = Deadline(loop.time() + seconds, asyncio.current_task(loop) if here else None)
        under_way = self._under_way.get(seconds)
        if under_way is None:
            under_way = self._under_way[seconds] = deque()
        while under_way and (under_way[0]._ended or under_way[0]._own):
            under_way.popleft()
        under_way.append(deadline)
        if seconds not in self._timers:
            self._timers[seconds] = deadline.when
            loop.call_at(deadline.when, self._rung, loop, seconds)
        return deadline

    def _rung(self, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
        # The loop runs a timer once its moment has come: every limit that ends by then expires,
        # as its own timer would have rung in this same round of the loop.
        if loop is not self._loop:
            return  # a timer of a loop this one has since been used without
        armed = self._timers.pop(seconds)
        now = max(armed, loop.time())
        under_way = self._under_way[seconds]
        while under_way and (under_way[0]._ended or under_way[0]._own or under_way[0].when <= now):
            deadline = under_way.popleft()
            if not deadline._own:  # one moved on by a wait rings by its own timer
                deadline._expire()
        if under_way:
            when = under_way[0].when
            self._timers[seconds] = when
            loop.call_at(when, self._rung, loop, seconds)


# The time limit of the agent's turn under way (``agent.TimeLimited``), held while one of its
# requests waits for a busy service (``busy.Places.resent``).
LIMIT: ContextVar[Deadline | None] = ContextVar("convy_turn_limit", default=None)
