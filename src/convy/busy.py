"""How much each participant of a run does at once.

``Places`` is one participant's share of the run: the agent's places bound how many conversations
are open at once, the simulated user's and the judge's how many of their model requests are under
way. A bench makes new ones for every run, in the event loop that waits for them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class Places:
    """A participant's places: how many of its conversations or requests may be under way at once.

    It changes inside (the requests under way, and the most that ever were, ``peak``) and nothing of
    that leaves it but the peak.
    """

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("a participant needs at least one place")
        self.size = size
        self.peak = 0
        self._taken = 0
        self._free = asyncio.Semaphore(size)

    @asynccontextmanager
    async def one(self) -> AsyncIterator[None]:
        async with self._free:
            self._taken += 1
            self.peak = max(self.peak, self._taken)
            try:
                yield
            finally:
                self._taken -= 1
