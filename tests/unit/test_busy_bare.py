"""Services that say nothing of their limits but a 429 with a whole-second Retry-After: how a
participant's first sends to one go, in virtual time (``clock.in_virtual_time``), against the
stand-in's strict bucket (``standin.Bucket`` without headers)."""

from __future__ import annotations

import asyncio
import math
import random

from support.clock import in_virtual_time
from support.project import conversations
from support.standin import Bucket

from convy.busy import Busy, Patience, Places, Services
from convy.quota import TOLD


class Bare:
    """A service over HTTP behind ``limit``, telling nothing of it: it names itself in the
    request's ``Told`` as convy's HTTP layer does, refuses with the limit's Retry-After, and
    answers after ``latency`` seconds. It keeps when each request reached it, and which were
    refused."""

    def __init__(self, limit: Bucket, latency: float = 0.1, name: str = "bare") -> None:
        self.limit = limit
        self.latency = latency
        self.name = name
        self.reached: list[tuple[float, bool]] = []  # when, and whether it was let through

    @property
    def refused(self) -> int:
        return sum(1 for _, let in self.reached if not let)

    async def __call__(self) -> str:
        told = TOLD.get()
        if told is not None and not told.service:
            told.service = self.name
        now = asyncio.get_running_loop().time()
        wait, _ = self.limit.admit(now, 1)
        self.reached.append((now, wait is None))
        if wait is not None:
            raise Busy("429 Too Many Requests", float(wait))
        await asyncio.sleep(self.latency)
        return "answer"


class Wired(Bare):
    """``Bare`` reached through a way to the wire as convy's HTTP layer's: each request takes from
    half a millisecond to ``most`` seconds there (a new connection, the loop busy; seeded), waits
    at the wire for the moment its ``Told`` says it may be written, and tells when it was; the
    limit counts it from then."""

    def __init__(self, limit: Bucket, name: str, seed: int, most: float = 0.008) -> None:
        super().__init__(limit, name=name)
        self.way = random.Random(seed)
        self.most = most

    async def __call__(self) -> str:
        await self.written()
        return await super().__call__()

    async def written(self) -> None:
        """The request's way to the wire: its service named, the seeded way taken, the wait there
        for its moment, and when it was written told."""
        told = TOLD.get()
        if told is not None and not told.service:
            told.service = self.name
        await asyncio.sleep(self.way.uniform(0.0005, self.most))
        if told is not None:
            await told.writable()
            told.wrote(asyncio.get_running_loop().time())

    until = -1.0  # the end of the stretch of load under way, if any (``stretched``)

    def stretched(self, now: float, loaded: float) -> float:
        """How long a write at ``now`` takes on a machine loaded now and then (bench/bare_virtual.py
        ``--loaded``): at each write, a chance ``loaded`` of a stretch of 0.3 to 1 s (not within a
        second of the last one's end) in which every write takes 5 to 25 ms; 0 outside one. Drawn
        from the key's seeded way."""
        if loaded and now > self.until + 1.0 and self.way.random() < loaded:
            self.until = now + self.way.uniform(0.3, 1.0)
        return self.way.uniform(0.005, 0.025) if now < self.until else 0.0


def played(service: Bare, places: int, requests: int) -> float:
    """Virtual seconds ``requests`` requests of one participant with ``places`` (0: they grow)
    take against ``service``."""

    async def main() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        sender = Places(places, patience=Patience(600))
        await asyncio.gather(*(sender.sent(service) for _ in range(requests)))
        return loop.time() - start

    return in_virtual_time(main)


def test_after_the_first_answer_the_waiting_requests_go_spaced_not_at_once() -> None:
    """Once a service that says nothing has answered its first request, the requests that waited
    for that answer go a little apart (the places' worth over the answer's latency), not all in
    the same instant: against a strict bucket of 50 a second, its first second refuses one
    request, not all but the first of those let go at once with it (2 of the 4 places' worth)."""
    service = Bare(Bucket(50, 1, headers=False))
    played(service, 0, 100)
    first = service.reached[0][0]
    assert sum(1 for moment, let in service.reached if not let and moment < first + 1.0) == 1


def test_a_strict_limit_of_50_a_second_with_no_headers_is_found_with_one_refusal() -> None:
    """500 requests against a strict bucket of 50 a second that tells nothing: the pace that
    opened at the first answer, grown a twentieth at each answer, is refused once where it passes
    the limit, and is found there, a little under the quickest let through: one pause in all
    (12.1 s of virtual time against a floor of 10 s; 13.2 s and three refusals when the places'
    worth went at once after the first answer, and the pace was made up from that refusal,
    doubling to the limit's, refused there a second time)."""
    service = Bare(Bucket(50, 1, headers=False))
    seconds = played(service, 0, 500)
    assert sum(1 for _, let in service.reached if let) == 500
    assert service.refused == 1
    assert seconds <= 12.5, f"{seconds:.2f} s of virtual time"


def test_capped_places_spread_too() -> None:
    """With places a team set (8), the start against a strict bucket of 20 a second that tells
    nothing refuses the first send after the lone first answer, not the other seven with it."""
    service = Bare(Bucket(20, 1, headers=False))
    played(service, 8, 100)
    first = service.reached[0][0]
    assert sum(1 for moment, let in service.reached if not let and moment < first + 0.5) == 1


def test_conversations_against_services_with_no_limit_are_not_held_by_the_opening_pace() -> None:
    """400 conversations (a simulated user's request, then the agent's, three turns, and the
    user's last), each participant's places growing from the start's, against two services over
    HTTP that answer in 100 ms, tell nothing and limit nothing: the opening pace (the places'
    worth over an answer's latency, never slower than the places) lets them grow as they would
    with none, and all end within 2 s of virtual time (1.79 s; 2.40 s when the places' worth went
    at once after the first answer)."""
    unlimited = Bucket(1e9, 1e9, headers=False)
    user_service, agent_service = Bare(unlimited, name="user's model"), Bare(unlimited, name="agent")

    async def main() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        user, agent = Places(0, "user"), Places(0, "agent")

        async def conversation() -> None:
            async with agent.one():
                for _ in range(3):
                    await user.sent(user_service)
                    await agent.retried(agent_service)
                await user.sent(user_service)

        await asyncio.gather(*(conversation() for _ in range(400)))
        return loop.time() - start

    seconds = in_virtual_time(main)
    assert user_service.refused == agent_service.refused == 0
    assert seconds <= 2.0, f"{seconds:.2f} s of virtual time"


def test_a_refusal_close_over_the_sends_let_through_finds_the_pace() -> None:
    """125 conversations (a simulated user's request, then the agent's, three turns, and the
    user's last), each participant on a strict bucket of 50 a second of its own that tells
    nothing, reached through a way to the wire of up to 8 ms (twelve seeded ways): no key is
    refused more than twice, the opening's refusal and one more, and the two keys 40 times in all
    (35; 48 before, a third refusal of a key in two ways). Where a refusal came close over the
    quickest sends let through, on the wire, the limit is between the two, and the pace is found
    there: read from when the sends were let go, sends 21 ms apart on the wire were taken for 19,
    the pace found over the limit and refused at its first send after the pause; and the agent's
    sends, which come as the user's answers do, far slower than its pace, were taken to tell only
    that the limit is at least theirs, the pace started from halfway to the refused one's gap, as
    likely over the limit as under, or grew on from them to a third refusal."""
    most, refusals = [], 0
    for seed in range(1, 13):
        agent_service = Wired(Bucket(50, 1, headers=False), "agent", seed)
        user_service = Wired(Bucket(50, 1, headers=False), "user's model", seed + 100)

        async def main(user_service: Wired = user_service, agent_service: Wired = agent_service) -> None:
            user, agent = Places(0, "user", patience=Patience(600)), Places(0, "agent", patience=Patience(600))

            async def conversation() -> None:
                async with agent.one():
                    for _ in range(3):
                        await user.sent(user_service)
                        await agent.retried(agent_service)
                    await user.sent(user_service)

            await asyncio.gather(*(conversation() for _ in range(125)))

        in_virtual_time(main)
        assert sum(1 for _, let in agent_service.reached if let) == 375
        assert sum(1 for _, let in user_service.reached if let) == 500
        most.append(max(user_service.refused, agent_service.refused))
        refusals += user_service.refused + agent_service.refused
    assert max(most) <= 2, f"the most refusals of a key, in each way: {most}"
    assert refusals <= 40, f"{refusals} refusals"


def test_the_agent_s_key_is_not_climbed_past_its_limit_on_the_bursts_of_the_user_s_answers() -> None:
    """125 conversations (a simulated user's request, then the agent's, three turns, the user's
    last, then the judge's), each participant on a strict bucket of 50 a second of its own that
    tells nothing, through a way to the wire of up to 8 ms (twelve seeded ways, those of
    bench/bare_virtual.py p-bare@3000): the agent's key, asked for three of every four of the
    user's requests, is refused at its opening and, in at most four of the ways, once more (4
    now; 7 when the pace grew after a refusal on every answer while one of the agent's requests
    waited, the few that come closer than the pace in the bursts of the user's answers: it climbed
    past the limit, a second of every conversation). It was 2 while a strict limit's sends were
    let go a quarter of a gap ahead (``wire._AHEAD_GAP``): a third of them came a millisecond or
    two late, and a pace grown a little past the limit (an opening that found the sends far
    slower than the refused one grows on while pressed) slipped through on them; written at
    their moment, it is refused, in seeds 2 and 4 of these twelve (73 refusals of the agent's key
    in 60 ways, 69 before, and the ways 13.20 s at the median where 13.51)."""
    twice = []
    for seed in range(1, 13):
        keys = {
            who: Wired(Bucket(50, 1, headers=False), who[0], seed + offset)
            for who, offset in (("user", 0), ("agent", 100), ("judge", 200))
        }

        async def main(keys: dict[str, Wired] = keys) -> None:
            await conversations(keys, 125)

        in_virtual_time(main)
        assert sum(1 for _, let in keys["agent"].reached if let) == 375
        if keys["agent"].refused > 1:
            twice.append(seed)
    assert len(twice) <= 4, f"the ways whose agent's key was refused more than once: {twice}"


def test_on_a_key_all_three_share_every_answer_grows_the_pace_while_one_of_them_waits() -> None:
    """25 conversations whose simulated user, agent and judge all reach one strict bucket of 20 a
    second that tells nothing, through a way to the wire of up to 8 ms (twelve seeded ways): after
    the opening's refusal, the pace climbs back to the limit on the answers of every participant
    on the key while any of them has a request waiting for it, and its refusal there comes within
    2.3 s of the first request in every way (2.0 to 2.25 s). Grown only on the answers of a
    participant with a request of its own waiting, it came as late as 2.43 s, the key under its
    limit meanwhile."""
    last = []
    for seed in range(1, 13):
        key = Wired(Bucket(20, 1, headers=False), "one key", seed)

        async def main(key: Wired = key) -> None:
            services = Services()
            user = Places(0, "user", patience=Patience(600), services=services)
            agent = Places(0, "agent", patience=Patience(600), services=services)
            judge = Places(0, "judge", patience=Patience(600), services=services)

            async def conversation() -> None:
                async with agent.one():
                    for _ in range(3):
                        await user.sent(key)
                        await agent.retried(key)
                    await user.sent(key)
                await judge.sent(key)

            await asyncio.gather(*(conversation() for _ in range(25)))

        in_virtual_time(main)
        assert sum(1 for _, let in key.reached if let) == 200
        refused = [moment for moment, let in key.reached if not let]
        last.append(refused[-1] - key.reached[0][0])
    assert max(last) <= 2.3, f"the key's last refusal, in each way: {[round(moment, 2) for moment in last]}"


class Loaded(Bare):
    """``Bare`` reached through a way to the wire that waits at the wire for the moment its
    ``Told`` says, as convy's HTTP layer does, and then takes ``busy`` seconds to write the request
    while the machine is loaded (from ``loaded`` to ``until``, seconds from the first request), a
    tenth of a millisecond otherwise; the limit counts it once written."""

    def __init__(self, limit: Bucket, loaded: float, until: float, busy: float = 0.015) -> None:
        super().__init__(limit, name="loaded")
        self.loaded, self.until, self.busy = loaded, until, busy
        self.start = -1.0

    async def __call__(self) -> str:
        told = TOLD.get()
        if told is not None and not told.service:
            told.service = self.name
        loop = asyncio.get_running_loop()
        if self.start < 0:
            self.start = loop.time()
        await asyncio.sleep(0.0005)
        if told is not None:
            await told.writable()
            since = loop.time() - self.start
            await asyncio.sleep(self.busy if self.loaded <= since < self.until else 0.0001)
            told.wrote(loop.time())
        return await super().__call__()


def test_a_machine_loaded_for_good_keeps_the_pace_near_the_limit() -> None:
    """500 requests against a strict bucket of 50 a second that tells nothing, every one written
    5 ms after its moment (a machine loaded the whole run, not for a stretch: each write after the
    wait at the wire takes that long). The next send is paced from when the last went on the wire,
    less the delay the next one takes too: taken off whole, the gaps on the wire are the pace's,
    and the 500 take 12.7 s of virtual time (main, the least of the last 16 delays); with at most
    1 ms taken off (``_LEAD_MOST``), every gap is 4 ms longer than the pace, a fifth of a gap of
    20, and they take 14.7 s (the second half let through at 0.74 of the limit, against 0.87)."""
    service = Loaded(Bucket(50, 1, headers=False), loaded=0.0, until=math.inf, busy=0.005)
    seconds = played(service, 0, 500)
    assert sum(1 for _, let in service.reached if let) == 500
    assert seconds <= 13.5, f"{seconds:.2f} s of virtual time, {service.refused} refused"
