"""A run's report kept up to date while the run plays (issue 13): ``LiveReport``, ``Paced`` and
``Tethered``.

The pages are made in a child process, ``convy report --live SECONDS RUN``, which reads the run
folder as it is on the disk (its attempts flushed so far, its ``run.json`` saying running, its
lock held by the process that plays), writes ``report.html`` and ``results/index.html`` whole
through ``files.Replaced`` (so a reader never sees a part of a page), and ends. Made in this
process, a page of 10,000 attempts (about 2.5 s of Python) would hold the interpreter's lock
from the event loop that plays the run the whole time, in a thread as well as in the loop; the
child shares nothing with the run but the disk and the machine's cores.

The child ends with the process that started it (``Tethered``): a ``convy run`` killed outright
leaves no writing behind it to put a page of a run nobody plays over the one a later command wrote.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from contextlib import suppress
from datetime import datetime
from pathlib import Path
from typing import ClassVar

import msgspec

from convy.views import LiveView


class Paced(msgspec.Struct, frozen=True):
    """How often the pages of a run under way are written again: about every ``every`` seconds.
    A page older than ``stale`` seconds with no newer one was left by a process that has ended
    (killed, say, before it could mark its run), and stops reloading itself."""

    every: float

    def view(self, now: datetime) -> LiveView:
        return LiveView(every=self.every, written=now.isoformat(), stale=3 * self.every + 60)


class LiveReport(msgspec.Struct, frozen=True):
    """The report of run ``run`` of the project in ``project``, and the index, written again while
    the run plays: the first time ``FIRST`` seconds after the start (or ``every``, if sooner),
    then ``every`` seconds after the last writing ended, or ``SLOWER`` times as long as that
    writing took when longer. So one writing is under way at a time, and the child process
    is busy at most a third of the time (a page of 10,000 attempts takes a few seconds to make:
    the pages of a larger run are written less often). ``python`` is the interpreter the child
    runs in: this one."""

    project: Path
    run: str
    every: float = 5.0
    python: str = sys.executable

    FIRST: ClassVar[float] = 1.0
    SLOWER: ClassVar[float] = 2.0
    GRACE: ClassVar[float] = 30.0  # how long a writing stopped by SIGINT may take to end before it is killed

    async def refreshing(self) -> None:
        """Write the pages again and again until cancelled. A writing under way when it is
        cancelled is stopped (SIGINT: its temporary file removed, ``report.html`` left whole) and
        waited for, so nothing it writes can land after the report the caller writes next. A
        writing that fails (a full disk, say) is left: the next one, or the caller's report at
        the end, writes the pages."""
        loop = asyncio.get_running_loop()
        wait = min(self.FIRST, self.every)
        while True:
            await asyncio.sleep(wait)
            began = loop.time()
            await self._written(max(self.every, wait))
            wait = max(self.every, self.SLOWER * (loop.time() - began))

    async def _written(self, pace: float) -> int:
        """One writing, in a child process; its exit code."""
        # Cancelled while the child is being started, the child may be running already: it is
        # stopped and waited for all the same. Left running, it would go on writing after the
        # caller's report, and be killed halfway when this process ends (its ``.tmp`` left behind).
        starting = asyncio.ensure_future(self._started(pace))
        try:
            child = await asyncio.shield(starting)
        except OSError:  # no process could be started now (too many open, say): the next writing tries again
            return -1
        except asyncio.CancelledError:
            with suppress(OSError):
                await self._stopped(await starting)
            raise
        try:
            return await child.wait()
        finally:
            if child.returncode is None:  # cancelled while it writes: stopped, and waited for
                await self._stopped(child)

    async def _stopped(self, child: asyncio.subprocess.Process) -> None:
        """Stop a writing under way (SIGINT: its temporary file removed, the page left whole) and
        wait for it; one that does not end within ``GRACE`` seconds (SIGINT ignored, say) is killed."""
        with suppress(ProcessLookupError):
            child.send_signal(signal.SIGINT)
        try:
            async with asyncio.timeout(self.GRACE):
                await asyncio.shield(child.wait())
        except TimeoutError:
            with suppress(ProcessLookupError):
                child.kill()
            await asyncio.shield(child.wait())

    async def _started(self, pace: float) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            self.python,
            "-m",
            "convy",
            "-C",
            str(self.project),
            "report",
            "--live",
            repr(pace),
            "--parent",
            str(os.getpid()),
            self.run,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )


class Tethered(msgspec.Struct, frozen=True):
    """The tie of a live writing (this process, ``convy report --live``) to ``parent``, the
    ``convy run`` that started it. On Linux the kernel kills this process when its parent ends,
    however it ends (``PR_SET_PDEATHSIG``, SIGKILL: a page half written stays in its ``.tmp``,
    which the next writing of that page removes, its process being gone: ``files.Replaced``); a parent that ended before the tie was
    made is seen in ``held``, and the writing is not done. Elsewhere only that is checked, and a
    writing already begun when its parent is killed finishes, whole."""

    parent: int

    PR_SET_PDEATHSIG: ClassVar[int] = 1  # linux/prctl.h

    def held(self) -> bool:
        """Tie this process to its parent; whether the parent is still the one that started it."""
        if sys.platform == "linux":
            import ctypes  # here: only this child needs it, and every command loads this module

            ctypes.CDLL(None, use_errno=True).prctl(self.PR_SET_PDEATHSIG, signal.SIGKILL)
        return os.getppid() == self.parent
