"""Time limits under way in an event loop, watched by one timer for each length of limit.

``asyncio.timeout`` arms a timer of the loop for every block it limits and cancels it when the
block ends: a run of 10,000 attempts of 6 turns made and threw away 80,000 timers, most of them
for blocks that ended at once. ``Deadlines`` keeps the limits of one length under way in a set and
arms one timer, at the end of the first of them; when it rings, every limit whose time has come
expires, and the timer is armed again at the end of the first one left. A limit that ends leaves
the set; a conversation's limit is the same object again for its next turn (``again``), so a
turn's limit makes nothing and arms nothing (its closing has one of its own: a task a turn left
waiting holds the turns' limit, ``LIMIT``). A ``Deadline`` is used as
``asyncio.timeout`` is, with the same meaning: when its time is up, the task is cancelled, and the block ends in
``TimeoutError`` unless it was cancelled for another reason too (then the cancellation goes on);
``expired`` tells a limit's own ``TimeoutError`` from one raised inside. A block inside may be
``held``: its time is not counted, and the limit ends that much later (``LIMIT`` is the limit of
the agent's turn under way, which a wait for a busy service holds).
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from types import TracebackType

from convy.loops import running


class Deadline:
    """One block's time limit: the task it stops, when, and whether it expired. Made by
    ``Deadlines.limit`` or ``here``, entered once, with ``async with`` as ``asyncio.timeout`` is
    or with a plain ``with`` around the block's awaits (the same, for two coroutines less); made
    anew from the same object for the next block by ``again``."""

    __slots__ = (
        "_deadlines", "_seconds", "_under_way", "_task", "_cancelling", "_expired", "_ended", "when", "_held", "_held_at"
    )
    _under_way: set[Deadline]  # those of its length under way, itself among them while it is: set as it is watched

    def __init__(self, deadlines: Deadlines, seconds: float, when: float, task: asyncio.Task[object] | None) -> None:
        self._deadlines = deadlines
        self._seconds = seconds
        self.when = when
        self._task = task  # the task it stops: found by ``Deadlines.here``, or when entered
        self._cancelling = task.cancelling() if task is not None else 0
        self._expired = False
        self._ended = False
        self._held = 0  # waits under way that the limit does not count (a busy service's)
        self._held_at = 0.0  # when the first of them began

    def again(self, seconds: float | None = None) -> Deadline:
        """A limit of ``seconds`` (the same length as this one's unless given) from now, for a
        block of the task running now, entered by it at once, as ``Deadlines.here`` makes it: this
        same object once its block has ended and no wait holds it (the opening and turns of a
        conversation, one after another), else a new one."""
        deadlines = self._deadlines
        loop = deadlines._loop
        length = self._seconds if seconds is None else seconds
        # A task running now in the loop the limits were last used in is of the loop running
        # now: the one thread runs one loop at a time. Asking so, rather than for the running loop
        # (which asks the system for the process's id on every call), costs a dictionary's lookup.
        # A limit a wait still holds (a request the last block left waiting in a task of its own)
        # is not begun again: the wait's end would be counted against the new block's limit (its
        # ``_held`` below zero, the limit never run out), so the new block gets a limit of its own.
        task = asyncio.current_task(loop) if self._ended and not self._held and loop is not None else None
        if task is None or loop is None:
            return deadlines.here(length)
        self.when = loop.time() + length
        self._task = task
        self._cancelling = task.cancelling()
        self._expired = self._ended = False
        self._held = 0
        if length == self._seconds:
            self._under_way.add(self)
            if length not in deadlines._timers:
                deadlines._armed(self.when, length, loop)
        else:  # watched among the limits of its new length, as a new one would be
            self._seconds = length
            deadlines._watched(self, loop)
        return self

    def held(self) -> _Held:
        """A block whose time this limit does not count: the limit ends as much later as it lasted
        (a wait for a busy service inside an agent's turn is not the agent's time)."""
        return _Held(self)

    def _hold(self) -> None:
        if not self._held:
            self._held_at = running().time()
        self._held += 1

    def _unhold(self) -> None:
        self._held -= 1
        if self._held or self._ended:
            return
        loop = running()
        self.when += loop.time() - self._held_at
        self._deadlines._armed(self.when, self._seconds, loop)  # a ring it missed while held

    def expired(self) -> bool:
        """Whether the time ran out while the block was under way."""
        return self._expired

    def __enter__(self) -> Deadline:
        if self._task is None:  # the task it stops is the one it is entered in
            task = asyncio.current_task(running())
            if task is None:
                raise RuntimeError("a deadline is kept inside a task")
            self._task = task
            self._cancelling = task.cancelling()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._ended = True
        self._under_way.discard(self)
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
        self._expired = True
        if self._task is not None:
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
    length, and one timer armed no later than the end of the first. Used from another loop, it
    starts afresh."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._under_way: dict[float, set[Deadline]] = {}
        self._timers: dict[float, asyncio.TimerHandle] = {}  # by length: its one timer

    def limit(self, seconds: float) -> Deadline:
        """A limit of ``seconds`` from now, for one ``async with`` block entered at once (by
        whichever task enters it)."""
        loop = running()
        deadline = Deadline(self, seconds, loop.time() + seconds, None)
        self._watched(deadline, loop)
        return deadline

    def here(self, seconds: float) -> Deadline:
        """``limit``, for a block of the task running now, entered by it at once: the task is
        found here, with the loop already at hand, rather than again as the block is entered."""
        loop = running()
        deadline = Deadline(self, seconds, loop.time() + seconds, asyncio.current_task(loop))
        self._watched(deadline, loop)
        return deadline

    def _watched(self, deadline: Deadline, loop: asyncio.AbstractEventLoop) -> None:
        if loop is not self._loop:
            self._loop, self._under_way, self._timers = loop, {}, {}
        seconds = deadline._seconds
        under_way = self._under_way.get(seconds)
        if under_way is None:
            under_way = self._under_way[seconds] = set()
        under_way.add(deadline)
        deadline._under_way = under_way
        if seconds not in self._timers:  # else it rings before this one ends: all of a length last as long
            self._timers[seconds] = loop.call_at(deadline.when, self._rung, loop, seconds)

    def _armed(self, when: float, seconds: float, loop: asyncio.AbstractEventLoop) -> None:
        """The timer of ``seconds`` rings no later than ``when``."""
        if loop is not self._loop:
            return
        timer = self._timers.get(seconds)
        if timer is not None:
            if timer.when() <= when:
                return
            timer.cancel()
        self._timers[seconds] = loop.call_at(when, self._rung, loop, seconds)

    def _rung(self, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
        # Every limit of this length whose time has come expires, as its own timer would have
        # rung in this same round of the loop; one held by a wait is left to its end (``_unhold``
        # arms the timer again for it), and the timer is armed again for the first left.
        if loop is not self._loop:
            return  # a timer of a loop this one has since been used without
        del self._timers[seconds]
        now = loop.time()
        first: float | None = None
        for deadline in tuple(self._under_way.get(seconds, ())):
            if deadline._expired or deadline._held:
                continue
            if deadline.when > now:
                if first is None or deadline.when < first:
                    first = deadline.when
            elif deadline._task is not None:  # one made but not entered yet stops nothing yet
                deadline._expire()
        if first is not None:
            self._timers[seconds] = loop.call_at(first, self._rung, loop, seconds)


# The time limit of the agent's turn under way (``agent.TimeLimited``), held while one of its
# requests waits for a busy service (``busy.Places.resent``).
LIMIT: ContextVar[Deadline | None] = ContextVar("convy_turn_limit", default=None)
