"""A review of the rule that, after a refusal, a key of one participant's own climbs only where
the pace held its requests back for long (``answers.pressed``): the shapes it should leave alone
or mend, and the ones where it made a run slower than before it (branch win2).

Every case plays bench/busy.py's project in virtual time (a simulated user's request, then the
agent's, three turns, the user's last, then the judge's), each participant's key a strict bucket
that tells nothing but a 429 with a whole-second Retry-After (``standin.Bucket`` without headers),
or unlimited, reached through twelve seeded ways to the wire of up to 8 ms (``Wired``, seeds 1 to
12 as bench/bare_virtual.py's). The figures quoted are the median of those twelve ways, in
virtual seconds."""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Callable
from typing import Any

import pytest
from support.clock import in_virtual_time
from support.project import Key, conversations
from support.standin import Bucket, Changing, Drained
from test_busy_bare import Wired

from convy.busy import Patience, Places

WAYS = range(1, 13)


def unlimited() -> Bucket:
    return Bucket(1e9, 1e9, headers=False)


def strict(rate: float) -> Callable[[], Any]:
    return lambda: Bucket(rate, 1, headers=False)


def played(
    seed: int,
    attempts: int,
    user: Callable[[], Any],
    agent: Callable[[], Any],
    judge: Callable[[], Any],
    latency: float = 0.1,
    shared: str = "",
) -> tuple[float, dict[str, int]]:
    """One way of ``attempts`` conversations against the limits the three factories make, each
    service answering in ``latency``; ``shared`` names the participants of one key ("ua": the
    simulated user's and the agent's, "aj": the agent's and the judge's). The wall, and the
    refusals of each key."""
    keys = {
        "user": Wired(user(), "u", seed),
        "agent": Wired(agent(), "a", seed + 100),
        "judge": Wired(judge(), "j", seed + 200),
    }
    for key in keys.values():
        key.latency = latency
    match shared:
        case "ua":
            keys["agent"] = keys["user"]
        case "aj":
            keys["judge"] = keys["agent"]
        case _:
            pass

    async def main() -> float:
        return await conversations(keys, attempts)

    wall: float = in_virtual_time(main)
    return wall, {key.name: key.refused for key in keys.values()}


def median_wall(
    attempts: int,
    user: Callable[[], Any],
    agent: Callable[[], Any],
    judge: Callable[[], Any],
    latency: float = 0.1,
    shared: str = "",
) -> float:
    """The median wall of the twelve ways of ``played``."""
    return statistics.median(played(seed, attempts, user, agent, judge, latency, shared)[0] for seed in WAYS)


# --- slower at demand2 than win2, mended by counting the requests that wait for the pace -------


def test_a_slow_agent_s_key_climbs_at_once_from_a_pace_made_up_far_under_its_limit() -> None:
    """167 conversations whose user's and judge's services are unlimited and whose agent's key is
    a strict bucket of 50 a second, every service answering in a second: the agent's key is the
    bottleneck, its opening is refused, and the pace made up then (0.9 a second: an answer of a
    second leaves no second of answers counted) climbs on the first answers of the requests
    piled up behind it, as it did before the rule: the median way within 42.5 s (42.20 at win2
    and now; 43.16 at demand2, slower in all twelve ways, when the climb waited for three gaps
    of it, 3.3 s, of backlog behind, the dozens of requests waiting ahead not counted). Since slow1
    the answers of a second count among those let through (``Pace.heard``), the opening's refusal
    finds the pace from them rather than making it up: 37.57 s."""
    wall = median_wall(167, unlimited, strict(50), unlimited, latency=1.0)
    assert wall <= 42.5, f"{wall:.2f} s"


def test_a_slower_agent_s_key_climbs_at_once_too() -> None:
    """The same at 20 a second with services answering in two seconds (67 conversations), the
    pace made up at 0.45 a second: the median way within 41.5 s (40.62 at win2 and now; 42.79 at
    demand2, slower by 2.2 s in all twelve ways, after 6.7 s of backlog; 33.64 since slow1)."""
    wall = median_wall(67, unlimited, strict(20), unlimited, latency=2.0)
    assert wall <= 41.5, f"{wall:.2f} s"


def test_p_bare_at_1200_a_minute_with_services_answering_in_two_seconds() -> None:
    """bench/bare_virtual.py's p-bare shape at 20 a second (50 conversations, each participant a
    strict bucket of its own) with every service answering in two seconds, the user's and the
    agent's openings refused and their paces made up at 0.45 a second: the median way within
    45.5 s (44.88 at win2 and open1; 47.43 at demand2, slower in 11 of the 12 ways; 34.96 since
    slow1, whose openings' refusals find the paces from the answers of 2 s, now counted)."""
    wall = median_wall(50, strict(20), strict(20), strict(20), latency=2.0)
    assert wall <= 45.5, f"{wall:.2f} s"


def drained(rate: float) -> Callable[[], Any]:
    """A strict bucket of ``rate`` a second that tells nothing, spent by a neighbour on the key
    just before the first request: refused before anything was answered, the pace is made up
    from the pause (a request a second) and doubles from there (bench/README.md: seed 31 of
    p-bare@3000, where the agent's key came to this of itself)."""
    return lambda: Drained(Bucket(rate, 1, headers=False), 1.0)


def test_p_bare_with_the_agent_s_key_refused_at_its_first_request() -> None:
    """p-bare@3000's shape (125 conversations, each key a strict bucket of 50 a second) with the
    agent's key refused at its first request: its pace, made up at a request a second with the
    seated conversations' requests waiting behind it, climbs on their answers at once; the median
    way within 17.5 s (17.38 at win2, 16.32 now; 18.20 at demand2, slower in 9 of the 12 ways,
    when the climb waited for three seconds of backlog)."""
    wall = median_wall(125, strict(50), drained(50), strict(50))
    assert wall <= 17.5, f"{wall:.2f} s"


def test_an_agent_s_key_that_is_the_bottleneck_refused_at_its_first_request() -> None:
    """The agent's key a strict bucket of 20 a second under the user's and the judge's of 50 (66
    conversations), refused at its first request: the median way within 15.9 s (15.85 at win2,
    14.87 now; 16.83 at demand2, slower in 10 of the 12 ways)."""
    wall = median_wall(66, strict(50), drained(20), strict(50))
    assert wall <= 15.9, f"{wall:.2f} s"


@pytest.mark.xfail(
    strict=True,
    reason=(
        "the agent's climb from a request a second stalls while its few places (3 to 12) hold "
        "fewer than three of its requests waiting and their backlog breaks: it reaches the limit "
        "at 6.3 s against 4.1 at win2 (seed 1), median 15.94 s against 15.55, slower in 8 of 12 "
        "ways (demand2: 18.02, slower in all 12, the limit reached at 8.2 s); counting what waits "
        "against the places taken (half, a third, a quarter of them) gave 15.94, 15.83, 15.64"
    ),
)
def test_an_agent_s_key_alone_refused_at_its_first_request() -> None:
    """The agent's key alone limited, a strict bucket of 50 a second refused at its first request
    (167 conversations, the user's and the judge's services unlimited): the median way within
    15.6 s (15.55 at win2)."""
    wall = median_wall(167, unlimited, drained(50), unlimited)
    assert wall <= 15.6, f"{wall:.2f} s"


# --- left alone, or mended, by the rule ------------------------------------------------------


def test_a_key_the_user_and_the_agent_share_climbs_as_before() -> None:
    """One strict key of 20 a second for the simulated user and the agent (40 conversations, the
    judge unlimited): several participants on a key keep the old climb, their bursts falling
    between each other's; the same moments as win2's, the median way 17.38 s."""
    wall = median_wall(40, strict(20), strict(20), unlimited, shared="ua")
    assert wall <= 17.5, f"{wall:.2f} s"


def test_a_key_the_agent_and_the_judge_share_climbs_as_before() -> None:
    """One strict key of 20 a second for the agent and the judge (60 conversations, the user
    unlimited): the same moments as win2's, the median way 15.34 s."""
    wall = median_wall(60, unlimited, strict(20), strict(20), shared="aj")
    assert wall <= 15.5, f"{wall:.2f} s"


def test_an_agent_s_key_that_is_the_bottleneck_is_not_slowed() -> None:
    """The agent's key a strict bucket of 20 a second under the user's and the judge's of 50
    (66 conversations): its requests pile up behind the pace, which climbs as before; the user's
    key, no longer climbed on its bursts, is refused less (14 refusals in the twelve ways against
    21 at win2), and the median way is 14.39 s against 15.15."""
    walls, user_refusals = [], 0
    for seed in WAYS:
        wall, refused = played(seed, 66, strict(50), strict(20), strict(50))
        walls.append(wall)
        user_refusals += refused["u"]
    assert statistics.median(walls) <= 15.2, f"{statistics.median(walls):.2f} s"
    assert user_refusals <= 21, f"{user_refusals} refusals of the user's key"


def test_a_limit_halved_then_restored_on_the_user_s_key() -> None:
    """The user's key a strict bucket of 50 a second, 25 from 3 s to 6 s, then 50 again (125
    conversations, the agent's and the judge's at 50): its requests wait for places all the
    while, and its pace finds the lower limit and the restored one as before; the median way
    18.88 s (19.23 at win2)."""

    def halved() -> Changing:
        return Changing(strict(50)(), Changing(strict(25)(), strict(50)(), 3.0), 3.0)

    wall = median_wall(125, halved, strict(50), strict(50))
    assert wall <= 19.3, f"{wall:.2f} s"


def test_a_limit_of_60_a_minute() -> None:
    """Each participant a strict bucket of one request a second (3 conversations): the median way
    16.07 s, as at win2."""
    wall = median_wall(3, strict(1), strict(1), strict(1))
    assert wall <= 16.1, f"{wall:.2f} s"


def test_a_token_limit_that_tells_nothing() -> None:
    """Each participant a bucket of 1,000 tokens a second, 200 at most saved up, that tells
    nothing, its requests about 100 tokens (25 conversations): the median way 18.26 s, as at
    win2, the agent's key refused 39 times in the twelve ways against 48 (36 at demand2)."""
    walls, agent_refusals = [], 0
    for seed in WAYS:
        keys = {
            who: Key(who[0], Bucket(1000, 200, unit="tokens", headers=False), seed + offset, 100.0)
            for who, offset in (("user", 0), ("agent", 100), ("judge", 200))
        }

        async def main(keys: dict[str, Key] = keys) -> float:
            return await conversations(keys, 25)

        walls.append(in_virtual_time(main))
        agent_refusals += keys["agent"].refused()
    assert statistics.median(walls) <= 18.3, f"{statistics.median(walls):.2f} s"
    assert agent_refusals <= 48, f"{agent_refusals} refusals of the agent's key"


def test_a_lone_key_asked_in_waves() -> None:
    """One participant asking 500 requests in waves of three every tenth of a second (30 a
    second) of a strict bucket of 50 that tells nothing: the waves wait for places, and the
    pace is as before; every way within 16.8 s (16.73 at the most)."""
    for seed in WAYS:
        key = Wired(Bucket(50, 1, headers=False), "k", seed)

        async def main(key: Wired = key) -> float:
            loop = asyncio.get_running_loop()
            start = loop.time()
            places = Places(0, "user", patience=Patience(600))

            async def one(index: int) -> None:
                await asyncio.sleep((index // 3) * 0.1)
                await places.sent(key)

            await asyncio.gather(*(one(index) for index in range(500)))
            return loop.time() - start

        wall = in_virtual_time(main)
        assert wall <= 16.8, f"way {seed}: {wall:.2f} s"
        assert key.refused <= 2, f"way {seed}: {key.refused} refusals"
