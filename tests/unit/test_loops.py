"""The running event loop as ``convy.loops.running`` finds it."""

from __future__ import annotations

import asyncio
import threading

import pytest

from convy.loops import running


def test_running_is_the_loop_running_now_in_each_of_successive_loops_and_none_outside() -> None:
    """Each of two loops run one after the other finds itself, not the one kept from before."""

    async def found() -> bool:
        return running() is asyncio.get_running_loop() and running() is asyncio.get_running_loop()

    assert asyncio.run(found()) and asyncio.run(found())
    with pytest.raises(RuntimeError):
        running()


def test_running_in_another_thread_is_that_threads_loop() -> None:
    """A loop running in another thread at the same time finds itself, and this thread's its own."""
    started, done = threading.Event(), threading.Event()
    seen: list[bool] = []

    async def other() -> None:
        seen.append(running() is asyncio.get_running_loop())
        started.set()
        while not done.is_set():
            await asyncio.sleep(0.001)
        seen.append(running() is asyncio.get_running_loop())

    async def here() -> bool:
        await asyncio.to_thread(started.wait)
        mine = running() is asyncio.get_running_loop()
        done.set()
        return mine

    thread = threading.Thread(target=lambda: asyncio.run(other()))
    thread.start()
    try:
        assert asyncio.run(here())
    finally:
        done.set()
        thread.join()
    assert seen == [True, True]
