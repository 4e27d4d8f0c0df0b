"""Virtual time for tests: an asyncio event loop whose clock jumps to the next timer as soon as
every task is waiting, as trio's ``MockClock(autojump_threshold=0)`` does.

``Places`` keeps its moments in the event loop's time and waits with the loop's timers, so under
this loop a test that waits a minute of pacing or a service's pause runs at once, and the same
test gives the same moments on a fast or a loaded machine. Sockets still work (the loop looks at
them without waiting before it jumps), but a test that waits on a real server belongs on the real
clock: under this one, its timeouts would pass in no time.

    answer = in_virtual_time(main)      # main: an async function with no arguments
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Awaitable, Callable
from typing import Any

START = 1000.0  # far enough from 0 that no "never" sentinel of the code under test is a real moment


class _Jumping:
    """A selector that, when nothing is ready and the loop would wait for a timer, moves the
    loop's clock to that timer instead."""

    def __init__(self, loop: VirtualLoop) -> None:
        self._selector = selectors.DefaultSelector()
        self._loop = loop

    def select(self, timeout: float | None = None) -> list[Any]:
        events = self._selector.select(0)
        if events or timeout == 0:
            return events
        if timeout is None or self._loop.working:  # only a socket or another thread can wake the loop
            return self._selector.select(None)
        self._loop.now += timeout
        return []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._selector, name)


class VirtualLoop(asyncio.SelectorEventLoop):
    """An event loop whose ``time()`` moves only when every task waits for a timer: not while a
    thread works for one (``run_in_executor``, ``asyncio.to_thread``), which takes real time."""

    def __init__(self) -> None:
        self.now = START
        self.working = 0  # the calls in threads under way
        super().__init__(_Jumping(self))  # type: ignore[arg-type]

    def time(self) -> float:
        return self.now

    def run_in_executor(self, executor: Any, func: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        self.working += 1
        future = super().run_in_executor(executor, func, *args)
        future.add_done_callback(self._worked)
        return future

    def _worked(self, future: asyncio.Future[Any]) -> None:
        self.working -= 1


def in_virtual_time(main: Callable[[], Awaitable[Any]]) -> Any:
    """What ``main()`` returns, run to its end on a ``VirtualLoop``."""
    with asyncio.Runner(loop_factory=VirtualLoop) as runner:
        return runner.run(main())
