"""bench/busy.py's project played in virtual time by convy's ``Places``, without HTTP: each attempt
a simulated user's request then the agent's, three turns, the user's last, then the judge's, each
participant with places that grow; and ``Key``, a participant's key to a limit that says what is
left in ``x-ratelimit-*`` headers. Shared by the pacing tests and the virtual-time benches, so that
each plays the one shape of attempt."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol, TypeVar

from convy.agent import turned
from convy.busy import TURN, Busy, Patience, Places
from convy.http import RateHeaders
from convy.quota import TOLD, Services
from support.clock import START

T = TypeVar("T")


class Limit(Protocol):
    def admit(self, now: float, cost: float) -> tuple[int | None, dict[str, str]]: ...


class Key:
    """A key to a service in virtual time behind ``limit``: each request takes a seeded way of
    0.5 to 8 ms to the wire (waiting there while its ``Told`` says), then the limit counts it
    (``tokens`` a request on average, when a token limit counts them) and says what is left in
    headers; refused, a 429 with a whole-second Retry-After, answered after 100 ms. It keeps when
    each request reached it and whether it was let through."""

    def __init__(self, name: str, limit: Limit, seed: int, tokens: float = 0.0) -> None:
        self.name = name
        self.limit = limit
        self.tokens = tokens
        self.way = random.Random(seed)
        self.reached: list[tuple[float, bool]] = []

    async def __call__(self) -> str:
        told = TOLD.get()
        if told is not None and not told.service:
            told.service = self.name
        loop = asyncio.get_running_loop()
        await asyncio.sleep(self.way.uniform(0.0005, 0.008))
        if told is not None:
            await told.writable()
            told.wrote(loop.time())
        now = loop.time()
        cost = self.way.uniform(0.5, 1.5) * self.tokens if self.tokens else 1.0
        wait, headers = self.limit.admit(now, cost)
        if told is not None:
            told.heard = RateHeaders(headers).heard()
        self.reached.append((now - START, wait is None))
        if wait is not None:
            raise Busy("429 Too Many Requests", float(wait))
        await asyncio.sleep(0.1)
        return "answer"

    def refused(self) -> int:
        return sum(1 for _, let in self.reached if not let)

    def let_through(self, since: float, until: float) -> float:
        """Requests let through a second from ``since`` to ``until`` (seconds from the start)."""
        return sum(1 for moment, let in self.reached if let and since <= moment < until) / (until - since)


def turning(request: Callable[[], Awaitable[T]]) -> Callable[[str], Awaitable[T]]:
    """An agent's turn that sends ``request`` over convy's HTTP layer as a ``JsonAgent`` does:
    through the turn under way (``busy.TURN``), sent again on its own while its service is busy."""

    async def turn(message: str) -> T:
        under_way = TURN.get()
        assert under_way is not None
        return await under_way.resent(request)

    return turn


async def conversations(
    keys: Mapping[str, Callable[[], Awaitable[str]]], attempts: int, agent_per_minute: int = 0, turns: bool = False
) -> float:
    """``attempts`` attempts at once, each participant's requests through places of its own that
    grow (``Places(0)``, the participants sharing what they learn of a key through one
    ``Services``), to ``keys["user"]``, ``keys["agent"]`` and ``keys["judge"]``, the agent capped at
    ``agent_per_minute`` where given: the seconds they took. With ``turns``, each of the agent's
    requests is sent inside an agent's turn (``agent.turned``), as an agent over convy's HTTP layer
    sends it (a ``JsonAgent``): the first turn paced as a whole, its request not paced again; the
    later turns not paced, their requests paced one by one."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    services = Services()
    user, judge = (Places(0, who, patience=Patience(600), services=services) for who in ("user", "judge"))
    agent = Places(0, "agent", agent_per_minute, patience=Patience(600), services=services)

    turn = turning(keys["agent"])

    async def attempt() -> None:
        async with agent.one():
            for _ in range(3):
                await user.sent(keys["user"])
                if turns:
                    await turned(agent, turn, "")  # type: ignore[arg-type]
                else:
                    await agent.retried(keys["agent"])
            await user.sent(keys["user"])
        await judge.sent(keys["judge"])

    await asyncio.gather(*(attempt() for _ in range(attempts)))
    return loop.time() - start
