"""An outside review of combo1 against land16: the places' regrowth after the first refusal while a
pace found from the refusals keeps the rate (``growth.Growth._regrows``, ``_overshot``), and a queue
read from the quickest of the latest eight answers, not their median (``growth.Growth._timed``).
Each case runs in virtual time (``clock.in_virtual_time``), the same on any machine. Plain tests
hold on both (or are better on combo1); the strict xfails are where combo1 does worse than land16
(land16 passes them), with both figures."""

from __future__ import annotations

import asyncio
import random
import statistics

import pytest
from support.clock import in_virtual_time
from support.project import Key, conversations
from support.standin import Bucket
from test_busy import Answering
from test_busy_slow_review import Halved, Mixed, run, wired

from convy.busy import Places

WAYS = (1, 2, 3)


def grown(service: Answering, requests: int) -> int:
    """The places ``requests`` requests sent at once to ``service`` grew to (no limit, no refusal)."""

    async def main() -> int:
        places = Places(0)
        await asyncio.gather(*(places.sent(service) for _ in range(requests)))
        return places.size

    size: int = in_virtual_time(main)
    return size


class Loaded(Answering):
    """A service with no limit whose answers take longer the more it is sent at once: ``base``
    seconds and ``step`` more for each request under way (a server slowing gradually, no queue)."""

    def __init__(self, base: float, step: float) -> None:
        super().__init__()
        self.base, self.step = base, step

    async def __call__(self) -> str:
        self.inside += 1
        self.most = max(self.most, self.inside)
        try:
            await asyncio.sleep(self.base + self.step * self.inside)
        finally:
            self.inside -= 1
        return "answer"


class Bypass(Answering):
    """A service that serves ``serves`` requests at once, ``slow`` seconds each, and queues the
    rest, but answers a share ``quick`` of them (drawn, seeded) in ``fast`` seconds beside the
    queue: a cache in front of a model, or short prompts a gateway sends elsewhere."""

    def __init__(self, serves: int, slow: float, fast: float, quick: float) -> None:
        super().__init__(slow, serves=serves)
        self.slow, self.fast, self.quick = slow, fast, quick
        self.draw = random.Random(1)

    async def __call__(self) -> str:
        self.inside += 1
        self.most = max(self.most, self.inside)
        try:
            if self.draw.random() < self.quick:
                await asyncio.sleep(self.fast)
            else:
                assert self.serving is not None
                async with self.serving:
                    await asyncio.sleep(self.slow)
        finally:
            self.inside -= 1
        return "answer"


class Drawn(Key):
    """``project.Key`` whose answers take from ``low`` to ``high`` seconds (seeded) rather than 100 ms."""

    def __init__(self, name: str, limit: Bucket, seed: int, low: float, high: float) -> None:
        super().__init__(name, limit, seed)
        self.draw = random.Random(seed + 7)
        self.low, self.high = low, high

    async def __call__(self) -> str:
        answer = await super().__call__()
        await asyncio.sleep(self.draw.uniform(self.low, self.high) - 0.1)
        return answer


def project(rate: float, attempts: int, low: float, high: float, headers: bool) -> tuple[list[float], list[int]]:
    """Six ways of ``attempts`` conversations (user, agent, judge, each a strict bucket of ``rate``
    a second of its own), answers of ``low`` to ``high`` s: the walls and the refusals of each way."""
    walls, refusals = [], []
    for seed in (1, 2, 3, 4, 5, 6):
        keys = {
            who: Drawn(who[0], Bucket(rate, 1, headers=headers), seed + offset, low, high)
            for who, offset in (("user", 0), ("agent", 100), ("judge", 200))
        }

        async def main(keys: dict[str, Drawn] = keys) -> float:
            return await conversations(keys, attempts)

        walls.append(in_virtual_time(main))
        refusals.append(sum(key.refused() for key in keys.values()))
    return walls, refusals


@pytest.mark.parametrize(("serves", "most"), [(1, 16), (2, 24), (16, 80)])
def test_a_service_that_queues_still_stops_the_places(serves: int, most: int) -> None:
    """400 requests to a service that serves 1, 2 or 16 at once (0.1 s each) and queues the rest:
    a queue delays the quickest answer too, and the places stop as on land16 (13, 21 and 69 both;
    answers of 1 s the same)."""
    assert grown(Answering(0.1, serves=serves), 400) <= most


@pytest.mark.parametrize(("serves", "most"), [(1, 16), (2, 16), (16, 32)])
def test_a_service_that_queues_answers_of_widely_varying_latency_still_stops_the_places(serves: int, most: int) -> None:
    """The same, each answer drawn from 0.1 to 5 s: 13, 14 and 29 places (land16 12, 14, 25)."""
    draw = random.Random(7)
    assert grown(Answering(lambda: draw.uniform(0.1, 5.0), serves=serves), 400) <= most


@pytest.mark.parametrize(("base", "step"), [(0.1, 0.01), (1.0, 0.1)])
def test_a_service_slowing_gradually_with_load_stops_the_places(base: float, step: float) -> None:
    """600 requests to a service whose answers take ``step`` s more for each request under way:
    51 places on both (three times the latency unloaded is reached there)."""
    assert grown(Loaded(base, step), 600) <= 60


def test_with_no_limit_the_places_grow_as_before_and_past_a_spread() -> None:
    """No limit: answers of 1 s, 600 requests, 304 places on both; answers drawn from 0.1 to 5 s,
    200 (land16: 12, the spread read as a queue)."""
    assert grown(Answering(1.0), 600) >= 300
    draw = random.Random(3)
    assert grown(Answering(lambda: draw.uniform(0.1, 5.0)), 600) >= 150


@pytest.mark.xfail(
    strict=True,
    reason="combo1: 19 and 23 places where land16 has 12 and 12: one quick answer in the latest eight hides the queue",
)
@pytest.mark.parametrize(("serves", "quick"), [(1, 0.2), (2, 0.05)])
def test_a_queue_with_some_answers_served_beside_it_still_stops_the_places(serves: int, quick: float) -> None:
    """A service that serves 1 or 2 at once (1 s each) and queues the rest, but answers a share
    (20%, 5%) in 0.1 s beside the queue: 600 requests. land16 stops at 12 and 12 places (its
    median reads the queue); combo1 at 19 and 23 (a queue of 17 and 21, 9-18 s of waiting, no
    more answers a second), as a quick answer among the latest eight makes every slow one in
    time. With 16 served, 10% quick: 15 -> 61. Reading the second or third quickest instead does
    not mend it (20-23) and costs the spread (200 -> 103, 42 places)."""
    assert grown(Bypass(serves, 1.0, 0.1, quick), 600) <= 16


@pytest.mark.parametrize(
    ("rate", "attempts", "low", "high", "most"),
    [(50, 167, 1.0, 1.0, 32.0), (50, 167, 2.0, 2.0, 53.0), (50, 167, 1.0, 2.0, 55.0), (5, 17, 1.0, 2.0, 29.0)],
)
def test_the_project_with_strict_buckets_that_tell_nothing_is_quicker(
    rate: float, attempts: int, low: float, high: float, most: float
) -> None:
    """The project (user, agent, judge), each a strict bucket of its own that tells nothing,
    answers of 1 s, 2 s, or 1 to 2 s, six ways, median: 50/s 36.80 -> 30.27 s, 68.80 -> 50.44,
    74.18 -> 52.30; 5/s, 1-2 s, 31.01 -> 27.84 (but refused more: the next case)."""
    walls, _ = project(rate, attempts, low, high, headers=False)
    assert statistics.median(walls) <= most, f"{statistics.median(walls):.2f} s"


@pytest.mark.xfail(strict=True, reason="combo1: 26 refusals in six ways where land16 has 23")
def test_the_project_at_5_a_second_with_answers_of_1_to_2_s_is_refused_no_more() -> None:
    """The project at 5 a second, 17 attempts, answers of 1 to 2 s, no headers: refusals
    5 3 3 4 4 4 (23) on land16, 6 3 4 4 4 5 (26) on combo1. At 1 s, 14 -> 15; at 2 s, 7 -> 8."""
    _, refusals = project(5, 17, 1.0, 2.0, headers=False)
    assert sum(refusals) <= 23, refusals


def test_the_project_with_buckets_that_tell_their_rate_is_unchanged() -> None:
    """With headers the pace is told, not found, and nothing of the change applies: 50/s, 1 s,
    median 23.69 s and no refusal on both."""
    walls, refusals = project(50, 167, 1.0, 1.0, headers=True)
    assert statistics.median(walls) <= 23.8
    assert sum(refusals) == 0


@pytest.mark.parametrize(
    ("latency", "most", "refusals"),
    [
        (2.0, 55.0, 3),
        (1.0, 48.0, 9),
    ],
)
def test_a_strict_limit_halved_mid_run(latency: float, most: float, refusals: int) -> None:
    """800 requests, a strict bucket of 50 a second halved to 25 at 8 s. Answers of 2 s: 65.33,
    66.16, 66.29 s on land16 (1, 1, 2 refusals), 51.98, 52.43, 53.72 on combo1 (1, 1, 3). Answers
    of 1 s: land16 47.08, 47.93, 46.83 s (9, 8, 9 refusals); combo1 47.97, 47.93, 49.06 (9, 8, 10):
    the places grown back to the refusal's, then the limit halved under them."""
    for seed in WAYS:
        key = Halved(Bucket(50, 1, headers=False), "k", seed)
        key.latency = latency
        wall, refused = run(key, 800)
        assert wall <= most, f"way {seed}: {wall:.2f} s"
        assert refused <= refusals, f"way {seed}: {refused} refusals"


def test_two_participants_on_one_strict_key_with_answers_of_1_to_2_s() -> None:
    """Two participants unknown to each other, 300 requests each, one strict bucket of 50 a second
    that tells nothing, answers of 1 to 2 s: land16 100.83, 140.80, 221.79 s (14, 22, 30
    refusals); combo1 259.25, 140.80, 221.79 (9, 22, 30), a strict xfail until a refusal another
    sender brought was no longer read as the pace's (``refusals.unseen``): 101.99, 117.14, 73.44.
    Far from the floor (some 14 s) still (``test_busy_shared_key.py``)."""
    for seed in WAYS:
        wall, refused = run(Mixed(Bucket(50, 1, headers=False), seed, 1.0, 2.0), 300, participants=2)
        assert wall <= 230.0, f"way {seed}: {wall:.2f} s, {refused} refusals"


@pytest.mark.xfail(
    strict=True,
    reason=(
        "held1: 21.71, 20.86, 21.43 s but 8, 10, 6 refusals: the opening held at the wire reads the "
        "second participant's pace over the limit from what the burst let through, exactly, where "
        "the way's jitter spread it"
    ),
)
def test_two_participants_on_one_bucket_with_a_burst_of_10() -> None:
    """The same on a bucket of 50 a second with a burst of 10, answers of 1 s: land16 25.04,
    21.71, 21.96 s (6, 8, 7 refusals), combo1 25.04, 21.57, 20.34 (6, 7, 5)."""
    for seed in WAYS:
        wall, refused = run(wired(10, 1.0, seed), 300, participants=2)
        assert wall <= 25.1, f"way {seed}: {wall:.2f} s"
        assert refused <= 7, f"way {seed}: {refused} refusals"
