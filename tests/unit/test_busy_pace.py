"""One key, one pace: participants of a run that send to one service with one key share what they
learn of its limit, whether or not the service tells it in headers — the pace found from its
refusals, the pause a refusal asks for, and that the service has answered — so that one refused
before its first answer goes at the pace its neighbour found, not one request per Retry-After.

Played in virtual time (``clock.in_virtual_time``): the seconds asserted are the event loop's,
the same on a fast or a loaded machine."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from support.clock import START, in_virtual_time
from support.standin import Bucket

from convy.busy import Busy, Patience, Places
from convy.http import RateHeaders
from convy.quota import TOLD, Services

KEY = "one key"


class Shared:
    """A service in virtual time behind a strict bucket (burst 1) that every participant reaches
    with the same key: each request names it in its ``Told`` as it starts, as convy's HTTP layer
    does. Refused: 429 with a whole-second Retry-After, and, when ``headers``, what is left as
    ``x-ratelimit-*`` headers. It counts, for each participant, what it let through and refused,
    and when each request arrived."""

    def __init__(self, rate: float = 20.0, headers: bool = True, latency: float = 0.1) -> None:
        self.limit = Bucket(rate, 1, headers=headers)
        self.latency = latency
        self.answered: dict[str, int] = {}
        self.refused: dict[str, int] = {}
        self.arrived: dict[str, list[tuple[float, bool]]] = {}

    async def __call__(self, who: str) -> str:
        told = TOLD.get()
        if told is not None:
            told.service = KEY
        now = asyncio.get_running_loop().time()
        wait, headers = self.limit.admit(now, 1)
        if told is not None:
            told.heard = RateHeaders(headers).heard()
        self.arrived.setdefault(who, []).append((now, wait is None))
        if wait is not None:
            self.refused[who] = self.refused.get(who, 0) + 1
            raise Busy("429 Too Many Requests", float(wait))
        self.answered[who] = self.answered.get(who, 0) + 1
        await asyncio.sleep(self.latency)
        return "answer"


def played(service: Shared, agent: int, judge: int, judge_from: float) -> dict[str, float]:
    """``agent`` requests of an agent (4 places) from the start and ``judge`` requests of a judge
    (8 places) from ``judge_from`` seconds on, both on one key: when each participant's last
    request was answered, in seconds from the start."""

    async def main() -> dict[str, float]:
        loop = asyncio.get_running_loop()
        services = Services()
        places = {
            "agent": Places(4, "agent", patience=Patience(600), services=services),
            "judge": Places(8, "judge", patience=Patience(600), services=services),
        }
        ends: dict[str, float] = {}

        async def sending(who: str, requests: int, after: float) -> None:
            await asyncio.sleep(after)
            await asyncio.gather(*(places[who].sent(lambda: service(who)) for _ in range(requests)))
            ends[who] = loop.time() - START

        await asyncio.gather(sending("agent", agent, 0.0), sending("judge", judge, judge_from))
        return ends

    result: dict[str, float] = in_virtual_time(main)
    return result


@pytest.mark.parametrize("headers", [True, False], ids=["headers", "bare"])
def test_a_participant_refused_before_its_first_answer_takes_its_neighbours_pace(headers: bool) -> None:
    """The agent has found the limit of a strict bucket of 20 a second when the judge, on the same
    key, starts: the judge's first request, sent before it knew which service it was, is refused,
    and from then on its requests go at the pace the agent found, both together within the limit.
    400 requests within 1.1 x their floor of 20 s (with no headers, plus the two seconds of
    pauses the pace is found with, as for one participant alone: 23.9 s either way), at most 4
    refused; with no headers, before the pace was shared, the judge went one request per
    Retry-After at first, then at a pace of its own beside the agent's, and took 338 s."""
    service = Shared(headers=headers)
    ends = played(service, agent=300, judge=100, judge_from=3.0)
    # Without headers, the rate is found only by being refused: two whole-second pauses, as one
    # participant alone needs (its first requests at once, then the pace growing past the limit).
    pauses = 0.0 if headers else 2.0
    assert service.answered == {"agent": 300, "judge": 100}
    assert sum(service.refused.values()) <= 4, service.refused
    assert service.refused.get("judge", 0) <= 1, service.refused
    assert max(ends.values()) <= 1.1 * (400 / 20 + pauses), ends


@pytest.mark.parametrize("headers", [True, False], ids=["headers", "bare"])
def test_neighbours_on_one_key_send_no_closer_together_than_the_pace_allows(headers: bool) -> None:
    """Once the judge knows its service, the two participants' requests reach it no more often,
    together, than the limit they share: of the judge's requests after its first, none is
    refused, and the requests let through over any two seconds of the run's busy middle are at
    most the limit's."""
    service = Shared(headers=headers)
    played(service, agent=300, judge=100, judge_from=3.0)
    judge = service.arrived["judge"]
    assert all(let for _, let in judge[1:]), judge[:5]
    moments = sorted(moment for arrivals in service.arrived.values() for moment, let in arrivals if let)
    for index, moment in enumerate(moments):
        within = sum(1 for other in moments[index:] if other < moment + 2.0)
        assert within <= 2.0 * 20 + 1, (moment - START, within)


def test_a_refusals_pause_holds_every_participant_on_the_key() -> None:
    """A service that says nothing of its limits refuses the agent's request and asks for a pause
    of a second: the judge, on the same key and heard from already, sends nothing to it before
    the pause ends either, though the bucket would let it through a tenth of a second later."""
    service = Shared(headers=False, latency=0.0)

    async def main() -> tuple[float, list[float]]:
        loop = asyncio.get_running_loop()
        services = Services()
        agent = Places(4, "agent", patience=Patience(600), services=services)
        judge = Places(4, "judge", patience=Patience(600), services=services)
        await agent.sent(lambda: service("agent"))
        await judge.sent(lambda: service("judge"))  # both know the service now: it answered each
        await asyncio.sleep(1.0)
        service.limit.level = 0.0  # someone else took the unit: the next request is refused
        service.limit.moment = loop.time()
        refused = asyncio.create_task(agent.sent(lambda: service("agent")))
        while not service.refused:
            await asyncio.sleep(0)
        paused = loop.time()
        await asyncio.sleep(0.1)  # the bucket's unit is back: only the pause holds the judge
        await judge.sent(lambda: service("judge"))
        await refused
        return paused, [moment for moment, _ in service.arrived["judge"]]

    paused, judged = run_virtual(main)
    assert judged[-1] >= paused + 1.0, (judged[-1] - paused)


def test_a_participant_alone_on_its_key_still_goes_one_request_at_a_time_until_answered() -> None:
    """A participant whose service no neighbour has heard from is refused before any answer: it
    learns nothing of the rate from that, and sends one request at a time until an answer comes,
    as it did before the pace was shared."""
    service = Shared(headers=False)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        service.limit.level = 0.0
        service.limit.moment = loop.time()
        judge = Places(8, "judge", patience=Patience(600), services=Services())
        await asyncio.gather(*(judge.sent(lambda: service("judge")) for _ in range(20)))

    run_virtual(main)
    arrived = service.arrived["judge"]
    assert service.answered == {"judge": 20}
    assert [let for _, let in arrived[:2]] == [False, True], arrived[:3]
    assert arrived[1][0] >= arrived[0][0] + 1.0, "the next request waited for the Retry-After"
    assert arrived[2][0] >= arrived[1][0] + service.latency, "and the one after it for its answer"


def resent_turn(service: Any) -> Any:
    """An agent's turn whose one request to ``service`` goes out through the turn under way
    (``busy.TURN``), as convy's HTTP layer sends a request inside a turn."""
    from convy.agent import Answer
    from convy.busy import TURN

    async def turn() -> Answer:
        under_way = TURN.get()
        assert under_way is not None
        await under_way.resent(lambda: service("agent"))
        return Answer("answer")

    return turn


def run_virtual(main: Any) -> Any:
    return in_virtual_time(main)


def test_a_request_inside_a_turn_paced_itself_waits_the_reset_not_the_whole_retry_after() -> None:
    """A request inside an agent's turn that was paced as a whole (``retried(paced=False)``), refused
    by a service that says when its next unit comes (``x-ratelimit-reset-requests``: 50 ms), is
    sent again then, not after the Retry-After rounded up to a whole second (the pause every
    participant on the key waits for, since the pace is shared)."""
    service = Shared(headers=True, latency=0.0)

    async def main() -> list[tuple[float, bool]]:
        loop = asyncio.get_running_loop()
        agent = Places(4, "agent", patience=Patience(600), services=Services())
        service.limit.level = 0.0  # someone else took the unit: the next comes in 50 ms
        service.limit.moment = loop.time()
        await agent.retried(lambda: service("agent"), paced=False)
        return service.arrived["agent"]

    arrived = run_virtual(main)
    assert [let for _, let in arrived] == [False, True]
    assert arrived[1][0] - arrived[0][0] == pytest.approx(0.051), "the reset, and a millisecond for its rounding"


class Jittery(Shared):
    """``Shared``, its requests taking a moment to reach it: exponentially spread, 2 ms on
    average, from a seeded generator (the same moments on any machine)."""

    def __init__(self, headers: bool, seed: int) -> None:
        super().__init__(headers=headers)
        self.random = random.Random(seed)

    async def __call__(self, who: str) -> str:
        told = TOLD.get()
        if told is not None:
            told.service = KEY
        await asyncio.sleep(self.random.expovariate(1 / 0.002))
        return await super().__call__(who)


def test_a_pace_made_up_from_a_pause_is_not_cut_before_a_request_at_it_is_answered() -> None:
    """An agent's first turns are paced as turns, their requests not paced again: they come back
    together after a refusal's pause, and a request paced at a rate made up from that pause (one
    a second: nothing was let through yet) is refused among them. That says nothing of the limit:
    the pace is kept, and grows once its requests are answered. 100 conversations of 3 turns
    against 20 a second, with no headers: within 2 x the floor of 15 s; before, the made-up pace
    was halved and the pace grew a thousandth a second from there: 488 s."""
    from convy.agent import Message, turned

    service = Jittery(headers=False, seed=0)

    async def main() -> float:
        loop = asyncio.get_running_loop()
        places = Places(4, "agent", patience=Patience(600), services=Services())

        turn = resent_turn(service)

        async def conversation() -> None:
            async with places.one():
                for _ in range(3):
                    await turned(places, lambda message: turn(), Message("hello"))

        await asyncio.gather(*(conversation() for _ in range(100)))
        return loop.time() - START

    seconds = run_virtual(main)
    assert service.answered == {"agent": 300}
    assert seconds <= 2.0 * 15.0, f"{seconds:.1f} s of virtual time"


def test_a_pause_inside_a_turn_paced_as_a_whole_is_not_read_as_the_pace_let_through() -> None:
    """A simulated user, an agent and a judge on one key with no headers, as a project plays them:
    the agent's first turns are paced as turns, their requests not paced again, and each refusal
    of those asks for a whole-second pause. The pace found at the next refusal of a paced request
    is read from the gaps between the sends before it since the last pause; those gaps must not
    span the pause of a request that was not paced. 50 conversations (400 requests) against 20 a
    second: within 2 x the floor of 20 s. Before, with that seed, the gap of the pause told that
    one request a second was let through: the pace stayed near 1 a second, 368 s in all (bench
    p-all-bare, 19 x its floor, now and then)."""
    from convy.agent import Message, turned

    service = Jittery(headers=False, seed=4)

    async def main() -> float:
        loop = asyncio.get_running_loop()
        services = Services()
        agent = Places(0, "agent", patience=Patience(600), services=services)
        user = Places(0, "user", patience=Patience(600), services=services)
        judge = Places(0, "judge", patience=Patience(600), services=services)

        turn = resent_turn(service)

        async def conversation() -> None:
            async with agent.one():
                for _ in range(3):
                    await user.sent(lambda: service("user"))
                    await turned(agent, lambda message: turn(), Message("hello"))
                await user.sent(lambda: service("user"))
            await judge.sent(lambda: service("judge"))

        await asyncio.gather(*(conversation() for _ in range(50)))
        return loop.time() - START

    seconds = run_virtual(main)
    assert service.answered == {"user": 200, "agent": 150, "judge": 50}
    assert seconds <= 2.0 * 20.0, f"{seconds:.1f} s of virtual time"


def test_a_request_inside_a_turn_paced_as_a_whole_is_sent_again_at_the_pace() -> None:
    """With no headers, once a pace was found, a request inside a turn paced as a whole (not paced
    itself) is refused by a strict bucket, and a paced request waits for the pause: after it, the
    two go a gap of the pace apart, not both at the pause's end, where the bucket has grown back
    one unit and refuses one of them again (a second of every participant on the key lost)."""
    service = Shared(headers=False, latency=0.1)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        agent = Places(4, "agent", patience=Patience(600), services=Services())
        await agent.sent(lambda: service("agent"))
        await asyncio.gather(*(agent.sent(lambda: service("agent")) for _ in range(3)))  # a pace found
        assert agent._pacing.service.pace.rate > 0
        await asyncio.sleep(2.0)
        service.limit.level = 0.0  # someone else took the unit: the next request is refused
        service.limit.moment = loop.time()
        await asyncio.gather(agent.retried(lambda: service("agent"), paced=False), agent.sent(lambda: service("agent")))

    run_virtual(main)
    arrived = service.arrived["agent"][-3:]
    assert [let for _, let in arrived] == [False, True, True], arrived
    assert arrived[2][0] - arrived[1][0] >= 1 / 20, arrived


def test_a_refusal_after_a_lull_goes_on_at_what_the_service_let_through_before() -> None:
    """Without headers, a participant's requests go at 25 a second, all let through by a strict
    bucket of 50, then nothing for a second and a half (its requests waited on another
    participant), then 30 at once: the first refusal finds next to nothing let through in the last
    second, but the service let 25 a second through before, and the pace goes on from about that
    rather than from one request a second, doubled back up over seconds while everything
    waiting on the participant stalled (bench/busy.py p-bare@3000: the agent's key at one a
    second after 40 answers). Within the half second after the pause, at least 8 are sent (13; before:
    3)."""
    service = Shared(rate=50.0, headers=False)

    async def main() -> None:
        places = Places(0, "agent", patience=Patience(600), services=Services())
        await places.sent(lambda: service("agent"))  # until a first answer, one at a time
        steady = []
        for _ in range(39):
            steady.append(asyncio.ensure_future(places.sent(lambda: service("agent"))))
            await asyncio.sleep(0.04)
        await asyncio.gather(*steady)
        await asyncio.sleep(1.5)
        await asyncio.gather(*(places.sent(lambda: service("agent")) for _ in range(30)))

    run_virtual(main)
    arrived = service.arrived["agent"]
    assert service.answered == {"agent": 70}
    assert all(let for _, let in arrived[:40]), [(round(m - START, 3), let) for m, let in arrived[:45]]
    refused = next(moment for moment, let in arrived[40:] if not let)
    pause_end = refused + 1.0
    after = [moment for moment, _ in arrived if pause_end <= moment < pause_end + 0.5]
    assert len(after) >= 8, [round(moment - pause_end, 3) for moment, _ in arrived if moment >= pause_end][:12]


def test_a_pace_refused_after_sends_slower_than_it_is_not_taken_for_the_limit() -> None:
    """Without headers, the pace has grown past a strict bucket of 50 a second (to 80: answers to
    requests that waited a moment for it grow it, while what there was to send came slower) and
    the last requests went 25 a second, spaced by what came to send; then 20 come at once, and
    the second, at the pace, is refused. The gaps let through (25 a second) say the limit is at
    least that, not that it is: the pace is found from there on, still growing, and the last of
    the 20 go at 40 a second or more (49; before: the pace was set at 25 and grew a two-thousandth
    a second; bench/busy.py p-bare@3000's agent at 28 a second against 50, 2.8x the floor)."""
    service = Shared(rate=50.0, headers=False)
    paces: list[float] = []

    async def main() -> None:
        places = Places(0, "agent", patience=Patience(600), services=Services())
        await places.sent(lambda: service("agent"))  # until a first answer, one at a time
        await asyncio.gather(*(places.sent(lambda: service("agent")) for _ in range(4)))  # the start's refusal
        pace = places._pacing.service.pace
        assert pace.rate > 0 and pace.growing and pace.proven
        await asyncio.sleep(1.0)
        pace.rate = 80.0
        spaced = []
        for _ in range(5):
            spaced.append(asyncio.ensure_future(places.sent(lambda: service("agent"))))
            await asyncio.sleep(0.04)
        await asyncio.gather(*spaced)
        await asyncio.gather(*(places.sent(lambda: service("agent")) for _ in range(20)))
        paces.append(pace.rate)

    run_virtual(main)
    arrived = service.arrived["agent"]
    assert service.answered == {"agent": 30}
    assert sum(service.refused.values()) <= 6, service.refused
    let = [moment for moment, let in arrived if let]
    last = let[-5:]
    assert 4 / (last[-1] - last[0]) >= 40, ([round(moment - START, 3) for moment in let[-8:]], paces)


class Wired(Shared):
    """``Shared``, each request waiting, once it has named the service, for the moment its ``Told``
    says it may be written, as convy's HTTP layer waits just before a request's head goes on the
    wire."""

    async def __call__(self, who: str) -> str:
        told = TOLD.get()
        if told is not None:
            told.service = KEY
            await told.writable()
        return await super().__call__(who)


@pytest.mark.parametrize("headers", [True, False], ids=["headers", "bare"])
def test_a_participants_first_request_to_a_key_its_neighbour_paces_goes_at_the_neighbours_pace(headers: bool) -> None:
    """The agent has found the limit of a strict bucket of 20 a second when the judge, on the same
    key, starts. The judge's first request names the service as it starts, and the service is
    one its neighbour paces: it waits at the wire for the agent's next moment, taken for it, and is
    let through, as every later one. None of the judge's requests is refused (before: its first,
    sent as though the service were new, reached the key beside the agent's sends at the limit,
    and was refused, each run of bench/busy.py p-all and p-all-bare)."""
    service = Wired(headers=headers)
    ends = played(service, agent=300, judge=100, judge_from=3.0)
    assert service.answered == {"agent": 300, "judge": 100}
    assert service.refused.get("judge", 0) == 0, service.refused
    pauses = 0.0 if headers else 2.0
    assert max(ends.values()) <= 1.1 * (400 / 20 + pauses), ends


def beside_the_user(service: Shared) -> None:
    """A simulated user's three requests, then ten more under way, when the agent's request inside
    a turn paced as a whole (not paced itself) goes to the same key: played on a virtual clock."""

    async def main() -> None:
        services = Services()
        user = Places(4, "user", patience=Patience(600), services=services)
        agent = Places(4, "agent", patience=Patience(600), services=services)
        for _ in range(3):
            await user.sent(lambda: service("user"))
        users = [asyncio.ensure_future(user.sent(lambda: service("user"))) for _ in range(10)]
        await asyncio.sleep(0)
        await agent.retried(lambda: service("agent"), paced=False)
        await asyncio.gather(*users)

    run_virtual(main)


def test_a_request_inside_a_turn_paced_as_a_whole_sent_again_takes_its_unit_from_what_is_left() -> None:
    """A simulated user sends at a strict bucket of 20 a second that tells what is left, its
    requests a gap apart; the agent's request, inside a turn paced as a whole (not paced itself),
    reaches the key beside one of them and is refused. Sent again when the service said the next
    unit comes, it takes that unit from what the participants on the key count is left, so the
    user's next send waits a gap after it: one refusal in all (before: the user's next send,
    counted against a unit the agent's had taken, was refused too; bench/busy.py p-all's start)."""
    service = Shared(headers=True, latency=0.0)
    beside_the_user(service)
    assert service.answered == {"user": 13, "agent": 1}
    assert sum(service.refused.values()) == 1, service.refused


def test_a_first_request_inside_a_turn_paced_as_a_whole_goes_at_its_neighbours_moment() -> None:
    """A simulated user sends at a strict bucket of 20 a second that tells what is left, its
    requests a gap apart, when the agent's first request, inside a turn paced as a whole (not
    paced itself), starts: it names the service, one its neighbour paces, and waits at the wire
    for the user's next moment, taken for it. Nothing is refused (before: it went at once, beside
    the user's send, and was refused; bench/busy.py p-all's and p-all-bare's start, each run)."""
    service = Wired(headers=True, latency=0.0)
    beside_the_user(service)
    assert service.answered == {"user": 13, "agent": 1}
    assert service.refused == {}, service.refused


class LateFirst(Wired):
    """``Wired``, the judge's first request written ``late`` seconds after its moment (its new
    connection opened while it waited, the loop busy): it tells its ``Told`` when, and the
    limit counts it then. Every other request is written at its moment."""

    def __init__(self, late: float) -> None:
        super().__init__(headers=True, latency=0.1)
        self.late = late

    async def __call__(self, who: str) -> str:
        told = TOLD.get()
        if told is not None:
            told.service = KEY
            await told.writable()
            if who == "judge" and "judge" not in self.arrived:
                await asyncio.sleep(self.late)
            told.wrote(asyncio.get_running_loop().time())
        return await Shared.__call__(self, who)


def test_a_first_request_held_for_a_neighbours_moment_and_written_late_holds_the_neighbours_next() -> None:
    """The judge's first request waits at the wire for the moment it took of the agent's, which
    paces a strict bucket of 20 a second from the wire, and is written 5 ms late. The agent's next
    send keeps a whole gap after it, counted from when it was written: nothing is refused
    (before: counted from the moment taken, the agent's next reached the bucket 5 ms early, and
    was refused; bench/busy.py p-all, now and then)."""
    service = LateFirst(late=0.005)
    played(service, agent=100, judge=20, judge_from=2.0)
    assert service.answered == {"agent": 100, "judge": 20}
    assert service.refused == {}, service.refused


def test_a_pace_made_up_from_a_pause_grows_on_the_first_answer_after_it() -> None:
    """The user, the agent and the judge send their first requests at once on one key with no
    headers: one is let through, the others refused before anything was answered, and the pace
    made up from the pause is one request a second. Its first send after the pause is answered:
    the pace grows on that answer (it was tried: nothing else had been), and the next request goes
    within the second rather than at its end (before: 1.0 s after the first, a second lost at every
    run's start; a pace found from what was let through does not grow on the first answer after a
    pause, which went with no gap of the pace before it)."""
    service = Shared(headers=False)

    async def main() -> None:
        services = Services()
        everyone = [Places(0, who, patience=Patience(600), services=services) for who in ("user", "agent", "judge")]
        await asyncio.gather(*(places.sent(lambda who=places.who: service(who)) for places in everyone for _ in range(10)))

    in_virtual_time(main)
    let = sorted(moment - START for moments in service.arrived.values() for moment, admitted in moments if admitted)
    after = [moment for moment in let if moment >= 1.0]
    assert after[0] < 1.1, let
    assert after[1] - after[0] < 0.5, let


class WrittenLate(Shared):
    """``Shared``, each request waiting at the wire for the moment its ``Told`` says, then written
    ``write`` seconds later (a machine loaded the whole run), and telling its ``Told`` when; the
    limit counts it then."""

    def __init__(self, rate: float, write: float) -> None:
        super().__init__(rate=rate, headers=True, latency=0.1)
        self.write = write

    async def __call__(self, who: str) -> str:
        told = TOLD.get()
        if told is not None:
            told.service = KEY
            await told.writable()
            await asyncio.sleep(self.write)
            told.wrote(asyncio.get_running_loop().time())
        return await Shared.__call__(self, who)


def test_a_strict_limit_that_tells_what_is_left_is_kept_near_while_every_write_is_late() -> None:
    """The agent and the judge, 250 requests each, on one key behind a strict bucket of 50 a
    second that tells what is left, each request written 5 ms after its moment at the wire (the
    machine loaded the whole run). The limit counts each send from the wire less the delay the
    next takes too: within 1.1 x the floor of 10 s (10.2 s with the least of the last 16 delays
    taken off; 12.7 s with at most 1 ms taken off, every gap 4 ms longer than the limit's 20)."""
    service = WrittenLate(rate=50.0, write=0.005)
    ends = played(service, agent=250, judge=250, judge_from=0.0)
    assert service.answered == {"agent": 250, "judge": 250}
    assert max(ends.values()) <= 11.0, ends
