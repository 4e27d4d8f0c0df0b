"""An outside review of burst1's ``refusals.drained`` (a found pace refused twice in a row within a
second of a pause, over ``Pace.most`` and after fewer sends since the pause than it, cut to that
most) against land15 (cut a tenth a pause). ``Pace.most`` is the most answered of the sends of one
second over the run so far: where the first refusal came early (answers of 0.1 s, the opening
doubling into a bucket's burst within a second or two), it is young, some 17 to 31 against a limit
of 50, and the pace cut to it grew back a twentieth of a percent a second, held there for the
rest of the run. The first four are where burst1 is worse than land15 (land15 passes them; strict
xfails until the pace cut to the most grows back toward twice it, rev18's mend), the rest where it
holds or gains. Each case is the median of six seeded ways in virtual time
(``clock.in_virtual_time``), through ``bench/bare_virtual.py``'s way to the wire; the figures are
land15 -> burst1."""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Callable

import pytest
from support.clock import START, in_virtual_time
from support.project import conversations
from support.standin import Bucket
from test_busy_ahead_review import keys
from test_busy_bare import Wired
from test_busy_slow_review import Slow, run, wired

WAYS = range(1, 7)


class Changed(Wired):
    """``Wired`` whose bucket's rate becomes ``rate`` from ``at`` seconds on (a provider changing a
    tier's limit mid-run), its answers taking ``latency``."""

    def __init__(self, limit: Bucket, seed: int, latency: float, at: float, rate: float) -> None:
        super().__init__(limit, "k", seed)
        self.latency, self.at, self.rate = latency, at, rate

    async def __call__(self) -> str:
        if asyncio.get_running_loop().time() - START >= self.at:
            self.limit.rate = self.rate
        return await super().__call__()


def ways(way: Callable[[int], tuple[float, int]]) -> tuple[float, int]:
    """The median wall of ``way`` over ``WAYS``, and its refusals in all."""
    played = [way(seed) for seed in WAYS]
    return statistics.median(wall for wall, _ in played), sum(refused for _, refused in played)


def project(seed: int, burst: int, latency: float, shared: str = "") -> tuple[float, int]:
    """125 of bench/bare_virtual.py's attempts, each participant on a bucket of 50 a second with
    ``burst`` (the ones in ``shared`` on one), answers of ``latency``: the wall and the refusals."""
    made = keys(seed, burst=float(burst), shared=shared)
    for key in made.values():
        key.latency = latency

    async def main() -> float:
        return await conversations(made, 125)

    wall = in_virtual_time(main)
    return wall, sum(key.refused for key in {key.name: key for key in made.values()}.values())


def token(seed: int) -> tuple[float, int]:
    """``test_busy_slow_review``'s token limit that tells nothing (100 conversations, each
    participant a bucket of 5,000 tokens a second, 1,000 saved up), answers of 1 s."""
    made = {
        who: Slow(who[0], Bucket(5000, 1000, unit="tokens", headers=False), seed + offset, 100.0)
        for who, offset in (("user", 0), ("agent", 100), ("judge", 200))
    }

    async def main() -> float:
        return await conversations(made, 100)

    wall = in_virtual_time(main)
    return wall, sum(key.refused() for key in made.values())


# --- where burst1 is worse than land15 ------------------------------------------------------


def test_answers_of_a_tenth_of_a_second_over_a_long_run() -> None:
    """2,000 requests against a bucket of 50 a second (burst 10), answers of 0.1 s: the median way
    within 55 s. land15 50.36 s, 77 refusals in all; burst1 74.99 s, 30: the opening's refusal
    came some 3 to 4 s in, when at most 26 or 27 of one second's sends were answered, and the
    pace found from the burst's gaps (119 to 215 a second) was cut to 25.7-26.7 and held there,
    growing a twentieth of a percent a second (2,000 / 26.7 is 75 s). Growing back from
    there toward twice the most once ten pauses' worth went by (rev18's mend): 50.23 s, 45."""
    wall, refused = ways(lambda seed: run(wired(10, 0.1, seed), 2000))
    assert wall <= 55.0, f"{wall:.2f} s, {refused} refusals"


def test_a_limit_raised_mid_run_with_answers_of_a_tenth_of_a_second() -> None:
    """800 requests against a bucket of 25 a second (burst 10) raised to 50 at 4 s, answers of
    0.1 s: the median way within 32 s. land15 26.59 s, 17 refusals; burst1 39.54 s, 13 (one way's
    pace cut to a most of 17 before the raise, and held near it after); mended 30.87 s, 13."""
    wall, refused = ways(lambda seed: run(Changed(Bucket(25, 10, headers=False), seed, 0.1, 4.0, 50.0), 800))
    assert wall <= 32.0, f"{wall:.2f} s, {refused} refusals"


def test_a_limit_raised_mid_run_is_as_quick_as_before() -> None:
    """The raised limit above within 28.5 s, as land15 (26.59 s): mended, the pace cut to a most
    of 17 grew back only to twice it, 34 a second, under the raised 50, and then a twentieth of a
    percent a second (30.87 s; burst1 39.54). held1: 27.64 s, the opening's refusal read at its
    step rather than as a saved-up burst (but see the next test)."""
    wall, refused = ways(lambda seed: run(Changed(Bucket(25, 10, headers=False), seed, 0.1, 4.0, 50.0), 800))
    assert wall <= 28.5, f"{wall:.2f} s, {refused} refusals"


@pytest.mark.xfail(strict=True, reason="held1: 40 refusals in the three ways where mended had 13")
def test_a_limit_raised_mid_run_is_refused_no_more_often_than_before() -> None:
    """The raised limit above refused no more than 16 times in the three ways (mended: 13)."""
    wall, refused = ways(lambda seed: run(Changed(Bucket(25, 10, headers=False), seed, 0.1, 4.0, 50.0), 800))
    assert refused <= 16, f"{wall:.2f} s, {refused} refusals"


def test_a_burst_of_five_with_answers_of_a_tenth_of_a_second() -> None:
    """500 requests against a bucket of 50 a second (burst 5), answers of 0.1 s: the median way
    within 22 s. land15 19.99 s, 52 refusals; burst1 24.30 s, 19 (cut to 17.8-31.7); mended 20.65 s, 25."""
    wall, refused = ways(lambda seed: run(wired(5, 0.1, seed), 500))
    assert wall <= 22.0, f"{wall:.2f} s, {refused} refusals"


def test_the_project_with_bursts_of_ten_and_answers_of_a_tenth_of_a_second() -> None:
    """125 attempts, each participant on a bucket of 50 a second (burst 10) of its own, answers of
    0.1 s: the median way within 18 s. land15 17.17 s, 39 refusals; burst1 18.57 s, 17; mended
    17.63 s, 21."""
    wall, refused = ways(lambda seed: project(seed, 10, 0.1))
    assert wall <= 18.0, f"{wall:.2f} s, {refused} refusals"


# --- where burst1 holds or gains --------------------------------------------------------------


def test_a_limit_halved_mid_run_with_answers_of_a_second() -> None:
    """``test_busy_slow_review``'s halved bucket (50 a second, burst 10, 25 from 8 s), 800
    requests, answers of 1 s: land15 45.95 s, 94 refusals; burst1 42.52 s, 63 (cut to a most of
    57 before the halving, then a tenth a pause as before)."""
    wall, refused = ways(lambda seed: run(Changed(Bucket(50, 10, headers=False), seed, 1.0, 8.0, 25.0), 800))
    assert wall <= 45.0, f"{wall:.2f} s"
    assert refused <= 80, f"{refused} refusals"


def test_a_limit_halved_mid_run_with_answers_of_a_tenth_of_a_second() -> None:
    """The same halved at 4 s, answers of 0.1 s: land15 43.44 s, 119 refusals; burst1 35.37 s, 46
    (a pace cut to a young most, 26, is under the halved limit's 25 soon after)."""
    wall, refused = ways(lambda seed: run(Changed(Bucket(50, 10, headers=False), seed, 0.1, 4.0, 25.0), 800))
    assert wall <= 40.0, f"{wall:.2f} s"
    assert refused <= 80, f"{refused} refusals"


def test_a_token_limit_that_tells_nothing() -> None:
    """``test_busy_slow_review``'s token limit, answers of 1 s: land15 24.18 s, 54 refusals;
    burst1 21.26 s, 21."""
    wall, refused = ways(token)
    assert wall <= 22.5, f"{wall:.2f} s"
    assert refused <= 30, f"{refused} refusals"


@pytest.mark.parametrize(
    ("participants", "requests", "latency", "most", "refusals"),
    [
        pytest.param(
            2,
            300,
            1.0,
            21.5,
            40,
            marks=pytest.mark.xfail(
                strict=True,
                reason=(
                    "combo2: 21.92 s and 34 refusals. The two know nothing of each other, and one grows "
                    "back to the 48 places of its first refusal while the other's refusals cut its own "
                    "pace to 27 a second (way 5: 23.61 s where burst1 took 19.46)"
                ),
            ),
        ),
        pytest.param(
            3,
            200,
            2.0,
            29.0,
            30,
            marks=pytest.mark.xfail(
                strict=True, reason="combo2: 28.36 s, but 37 refusals: each grows back to its first refusal's places"
            ),
        ),
    ],
)
def test_participants_sharing_a_key_with_a_burst(
    participants: int, requests: int, latency: float, most: float, refusals: int
) -> None:
    """Two participants (300 requests each, answers of 1 s) or three (200 each, 2 s) on one bucket
    of 50 a second, burst 10: two land15 21.72 s, 51 refusals, burst1 21.15 s, 30; three the same
    bytes, 28.64 s, 26 (one cut, to a most of 34, in one way)."""
    wall, refused = ways(lambda seed: run(wired(10, latency, seed), requests, participants))
    assert wall <= most, f"{wall:.2f} s"
    assert refused <= refusals, f"{refused} refusals"


@pytest.mark.parametrize(
    ("latency", "most"),
    [
        pytest.param(
            3.0,
            38.5,
            marks=pytest.mark.xfail(
                strict=True, reason="combo2: way 1 refused 4 times (38.15 s) where burst1 took 38.13 s and 3"
            ),
        ),
        (5.0, 53.0),
    ],
)
def test_answers_of_several_seconds_are_never_cut_to_the_most(latency: float, most: float) -> None:
    """500 requests against a bucket of 50 a second (burst 10), answers of 3 or 5 s: no refusal
    came within a second of a pause twice in a row, the same bytes as land15 (38.15 s, 14
    refusals; 52.66 s, 6), at most 3 refusals a way."""
    played = [run(wired(10, latency, seed), 500) for seed in WAYS]
    assert statistics.median(wall for wall, _ in played) <= most
    assert max(refused for _, refused in played) <= 3
