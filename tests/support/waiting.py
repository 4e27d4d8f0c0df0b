"""Waiting for a condition: the one way the tests wait for something another process or thread does.

The project's rule is that no test depends on the clock or the machine's speed: never a sleep then an
assert, never a bound on how long something took. A test that needs a run to have kept five attempts,
a server to have written down a reply or a process to have ended polls for exactly that, and the
timeout is there only so that a hang fails with a name instead of waiting for pytest-timeout: it is
generous, and only a broken convy reaches it, however loaded the machine.
"""

import subprocess
import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")

# Seconds: far beyond what any working wait takes on two loaded cores (the longest, starting a Ray
# cluster or LiteLLM's proxy, takes a few tens), so reaching it means a hang.
PATIENCE = 300.0


def wait_until(
    condition: Callable[[], T],
    what: str,
    *,
    timeout: float = PATIENCE,
    process: subprocess.Popen | None = None,
    every: float = 0.01,
) -> T:
    """The first true value ``condition`` gives, polled every ``every`` seconds; the test fails
    saying it waited for ``what`` if none comes within ``timeout``.

    With a ``process`` (a ``convy`` the test started), the wait also ends when that process does,
    giving the condition's value once more after it ended (so what it wrote last is seen): falsy if
    the condition never held. Whether that is a failure is the caller's to say, as in
    ``assert wait_until(..., process=run), "the run ended before it kept an attempt"``.
    """
    ends = time.monotonic() + timeout
    while True:
        given = condition()
        if given:
            return given
        if process is not None and process.poll() is not None:
            return condition()
        if time.monotonic() > ends:
            pytest.fail(f"waited {timeout:g} s for {what}")
        time.sleep(every)
