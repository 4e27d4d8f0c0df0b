"""An outside review of slow1 and slow2 (``quota.Pace.most`` counting answers by their send moments,
``refusals.opening_refused`` reading no rate from the sends let through at the pace's own gaps and
``gaps.saved_up``) against open1, with answers of a second or more. Each case runs in virtual
time (``clock.in_virtual_time``). The strict xfails are where slow2 is worse than open1 (open1
passes them); the last one fails on open1 too, and is kept for its figures."""

from __future__ import annotations

import asyncio
import random
import statistics

import pytest
from support.clock import START, in_virtual_time
from support.project import Key, conversations
from support.standin import Bucket
from test_busy_bare import Wired
from test_busy_demand_review import played as project
from test_busy_demand_review import strict
from test_busy_ration_open import Rated, played

from convy.busy import Patience, Places

WAYS = (1, 2, 3)


class Halved(Wired):
    """``Wired`` whose bucket's rate is halved from 8 s on (a provider lowering a tier's limit)."""

    async def __call__(self) -> str:
        if asyncio.get_running_loop().time() - START >= 8.0:
            self.limit.rate = 25.0
        return await super().__call__()


class Mixed(Wired):
    """``Wired`` whose answers take anything from ``low`` to ``high`` seconds (seeded), so they come
    back out of the order they were sent in, as a real model's do."""

    def __init__(self, limit: Bucket, seed: int, low: float, high: float) -> None:
        super().__init__(limit, "k", seed)
        self.draw = random.Random(seed + 100)
        self.low, self.high = low, high

    async def __call__(self) -> str:
        self.latency = self.draw.uniform(self.low, self.high)
        return await super().__call__()


class Slow(Key):
    """``project.Key`` whose answers take ``latency`` seconds rather than its 100 ms."""

    latency = 1.0

    async def __call__(self) -> str:
        answer = await super().__call__()
        await asyncio.sleep(self.latency - 0.1)
        return answer


def wired(burst: int, latency: float, seed: int, rate: float = 50.0) -> Wired:
    """One key to a bucket of ``rate`` a second with ``burst`` that tells nothing, answers of ``latency``."""
    key = Wired(Bucket(rate, burst, headers=False), "k", seed)
    key.latency = latency
    return key


def run(key: Wired, requests: int, participants: int = 1) -> tuple[float, int]:
    """``requests`` requests of each of ``participants`` (places that grow, one each, as a user and
    a judge sharing a key), sent at once: the virtual seconds they took and the refusals."""

    async def main() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        senders = [Places(0, patience=Patience(3600)) for _ in range(participants)]
        await asyncio.gather(*(sender.sent(key) for sender in senders for _ in range(requests)))
        return loop.time() - start

    wall: float = in_virtual_time(main)
    return wall, key.refused


@pytest.mark.parametrize(("burst", "latency"), [(20, 1.0), (50, 1.0), (20, 2.0), (50, 2.0)])
def test_a_bucket_with_a_large_burst_and_slow_answers(burst: int, latency: float) -> None:
    """500 requests against a bucket of 50 a second with a burst of 20 or 50, answers of 1 or 2 s.
    Better on slow2: burst 20, 1 s 18.3-21.4 s (open1 22.8 s); burst 50, 1 s 14.9-15.1 s (20.3 s);
    burst 20, 2 s 27.1 s (32.1-33.1 s); burst 50, 2 s 24.0-24.2 s (29.8-30.8 s). But one way of
    burst 20, 1 s is refused 9 times on slow2 (1 on open1)."""
    for seed in WAYS:
        wall, refused = run(wired(burst, latency, seed), 500)
        assert refused <= 10, f"way {seed}: {refused} refusals"
        assert wall <= 34.0, f"way {seed}: {wall:.2f} s"


@pytest.mark.xfail(
    strict=True,
    reason=(
        "held1: 8, 7, 7 refusals where main 3, 3, 4: held at the wire, the opening's first refusal "
        "reads the step over the limit the burst let it climb to (58 to 55 against 50) exactly, "
        "where the way's jitter spread it from 42 to 63; over 12 ways 80 refusals where 54"
    ),
)
def test_a_key_shared_by_two_participants_with_answers_of_two_seconds() -> None:
    """A user and a judge, 300 requests each, on one bucket of 50 a second (burst 10), answers of
    2 s: slow2 29.2-30.0 s, 3-4 refusals; open1 34.6 s, 2-3."""
    for seed in WAYS:
        wall, refused = run(wired(10, 2.0, seed), 300, participants=2)
        assert refused <= 5, f"way {seed}: {refused} refusals"
        assert wall <= 35.0, f"way {seed}: {wall:.2f} s"


@pytest.mark.xfail(strict=True, reason="slow1 and slow2: 19 refusals in two ways of three where open1 has 7-10")
def test_a_limit_halved_mid_run_with_answers_of_a_second() -> None:
    """800 requests against a bucket of 50 a second (burst 10) halved to 25 at 8 s, answers of 1 s.
    open1: 9, 10, 7 refusals, 44.8, 45.4, 43.5 s. slow2: 6, 19, 19 refusals, 39.1, 47.0, 47.0 s:
    the way that does better is quicker by 5.7 s, the two that do worse are slower by 1.6-3.5 s
    and refused twice as often (the saved-up rule cutting by the burst after the halving, or the
    pace found at slow1's count over the new rate, not yet told apart)."""
    for seed in WAYS:
        key = Halved(Bucket(50, 10, headers=False), "k", seed)
        key.latency = 1.0
        wall, refused = run(key, 800)
        assert refused <= 12, f"way {seed}: {refused} refusals, {wall:.2f} s"


@pytest.mark.xfail(strict=True, reason="slow1 and slow2: more refusals behind a count then a small bucket")
@pytest.mark.parametrize(("rate", "most"), [(20.0, 55), (5.0, 65)])
def test_an_opening_behind_a_count_then_a_small_bucket_at_1500_requests(rate: float, most: int) -> None:
    """``test_busy_ration_open``'s shape at half the requests (1,500): 999 a window of 10 s, then a
    bucket of ``rate`` a second (burst 3) from 12 s, answers of 1 s. Bucket of 20: open1 48
    refusals, 34.19 s; slow2 65, 35.32 s. Bucket of 5: open1 57, 71.29 s; slow2 80, 72.41 s. With
    answers of 2 s slow2 is better at 20 (9, 101.4 s against 20, 118.0 s) but worse at 5 (29,
    316.0 s against 19, 314.3 s); with 3 s better at 5 (14 against 29), worse at 20 (11 against 9)."""
    service = Rated(12.0, rate, 3.0, latency=1.0)
    wall = played(service, 1500)
    assert service.answered == 1500
    assert service.crowded <= most, f"{service.crowded} refusals, {wall:.2f} s"


@pytest.mark.xfail(strict=True, reason="open1 and slow2 alike: 50-172 s where the floor is some 15 s")
def test_answers_of_widely_varying_latency_come_near_the_floor() -> None:
    """500 requests against a bucket of 50 a second (burst 1), answers of 0.1 to 5 s drawn per
    request, coming back out of order: the floor is some 15 s (10 s of sends and the slowest
    answer). Both open1 and slow2 take 91.65, 158.82 and 172.45 s (burst 20: 36.6, 80.7, 50.4 s)
    with 1-10 refusals: the same bytes, so not slow2's doing, but the pace (or the places, one
    a round of answers) holds the sends far under the limit when the latency varies. It is the
    places: way 1 with 300 places 26.20 s, with 50 35.18 s (open1 37.18), growing 91.65 s; answers
    of 1-3 s growing 48.00 s (open1 54.81), 300 places 23.94; 0.5-1.5 s growing 29.44, 50 places
    19.73."""
    for seed in WAYS:
        wall, refused = run(Mixed(Bucket(50, 1, headers=False), seed, 0.1, 5.0), 500)
        assert wall <= 30.0, f"way {seed}: {wall:.2f} s, {refused} refusals"


@pytest.mark.parametrize(
    ("rate", "attempts", "latency", "most"), [(5, 17, 1.0, 27.5), (5, 17, 2.0, 41.0), (50, 167, 1.0, 48.0)]
)
def test_the_project_shape_with_slow_answers(rate: float, attempts: int, latency: float, most: float) -> None:
    """bench/busy.py's project (``test_busy_demand_review.played``), each participant a strict
    bucket of ``rate`` a second, answers of ``latency``, six ways: the median. 300 a minute, 1 s:
    slow2 21.46 s, 14 refusals in all (open1 26.50, 17); 2 s: 29.31, 7 (39.24, 30); 3,000 a minute,
    1 s: 37.09, 25 (46.44, 46). With the agent and the judge on one key alike (21.57 against 25.92,
    41.29 against 48.13), and at 3 s (5/s the same bytes; 50/s 89.01 against 100.05)."""
    walls = [
        project(seed, attempts, strict(rate), strict(rate), strict(rate), latency=latency)[0]
        for seed in (1, 2, 3, 4, 5, 6)
    ]
    assert statistics.median(walls) <= most, f"{statistics.median(walls):.2f} s"


@pytest.mark.xfail(strict=True, reason="slow1/slow2: 54 refusals where open1 has 9, behind a token limit")
def test_a_token_limit_that_tells_nothing_with_answers_of_a_second() -> None:
    """The project, 100 conversations, each participant a bucket of 5,000 tokens a second (1,000
    saved up: ten requests' worth) that tells nothing, requests of about 100 tokens, answers of 1 s,
    six ways. open1: 9 refusals in all, median 23.97 s, the slowest 24.13; slow1 62, 25.44, 27.92;
    slow2 54, 24.43, 26.05. (A bucket of 1,000 a second, 200 saved up, 25 conversations, is better
    on slow2: 33 refusals, 21.42 s against 62, 27.95; answers of 2 s the same or better.)"""
    walls, refusals = [], 0
    for seed in (1, 2, 3, 4, 5, 6):
        keys = {
            who: Slow(who[0], Bucket(5000, 1000, unit="tokens", headers=False), seed + offset, 100.0)
            for who, offset in (("user", 0), ("agent", 100), ("judge", 200))
        }

        async def main(keys: dict[str, Slow] = keys) -> float:
            return await conversations(keys, 100)

        walls.append(in_virtual_time(main))
        refusals += sum(key.refused() for key in keys.values())
    assert refusals <= 20, f"{refusals} refusals, the slowest way {max(walls):.2f} s"
