"""The event loop running now, found for a fraction of what ``asyncio.get_running_loop`` costs.

On Python 3.11 ``asyncio.get_running_loop`` asks the system for the process's id on every call
(a system call, some 400 ns here), to tell a child forked from a process with a running loop from
its parent; 3.12 dropped that. convy asks for the loop on every request a participant sends
(``busy.Places``) and every time limit it begins (``deadlines``): some twenty times an attempt.

``running`` keeps the loop it last found in each thread: while that loop runs, it is the one
running now, since a thread runs one loop at a time and a loop runs in one thread. A child forked
from this process forgets it (``os.register_at_fork``), as asyncio's own check would have.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading


class _Last(threading.local):
    """The loop ``running`` last found in this thread."""

    loop: asyncio.AbstractEventLoop | None = None


_LAST = _Last()


def _forgotten() -> None:
    _LAST.loop = None


os.register_at_fork(after_in_child=_forgotten)


def _running() -> asyncio.AbstractEventLoop:
    """The running event loop of this thread; ``RuntimeError`` when none runs, as asyncio's."""
    last = _LAST.loop
    if last is not None and last.is_running():
        return last
    loop = _LAST.loop = asyncio.get_running_loop()
    return loop


running = _running if sys.version_info < (3, 12) else asyncio.get_running_loop
