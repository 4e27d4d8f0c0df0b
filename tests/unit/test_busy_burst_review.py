"""An outside review of burst5, a change tried and not landed: a pace the opening's refusal took
from a burst's sends (``refusals.opening_refused``'s ``pace.unfounded`` branch) grew again after 5
pauses' time, where main waits ``refusals._BRACKETED`` (20). Each case is played in virtual time
(``clock.in_virtual_time``) through ``test_busy_bare.Wired``'s way to the wire, twelve seeded ways
(1-12), and read as the median wall and the refusals summed over them; figures are burst5 and main,
with seeds 13-24 where they were played too.

What was found: request buckets with answers of a fixed 1 or 2 s play the same bytes on both at 50
a second (at 20 all but two shapes, at 100 a few refusals more), as do token buckets whose answers
take 1 or 2 s; with a fixed 0.1 s, within noise. Token buckets of 0.1 s answers with one to two
requests' worth saved up gained 2.8 to 6.0 s, the shape burst5 was made for. The loss is answers
whose latency varies (0.2-1.0, 0.3-0.9, 0.5-1.5, 1-3 s, drawn per request): the opening's refusal
reads the sends as a burst, and where main holds the pace under the limit the rest of the run,
refused once, burst5 grew it again some 6 s in and was refused at every step from there (20 a
second, burst 10, way 3: refused at 5.8 s only on main; at 5.8, 12.4, 13.8, 15.3, 17.1, 19.2 and
21.8 s on burst5, 24.16 s where 21.83). Refusals rose by a fifth to more than double; the wall
mostly within 2%, a few 2-3% slower, some quicker. Growing again sooner only where the pace was
the sends' rate over their number (not the most answered in a second) kept 14 of these 22 losses.

On main the cases burst5 did worse are plain tests (bounded between main's figure and burst5's),
so that a change like it is caught; where burst5 was quicker, strict xfails: a change that gets
there turns them into plain tests."""

from __future__ import annotations

import asyncio
import functools
import statistics

import pytest
from support.clock import START, in_virtual_time
from support.project import Key, conversations
from support.standin import Bucket
from test_busy_bare import Wired
from test_busy_held_review import tokens
from test_busy_slow_review import Mixed, Slow, run

WAYS = range(1, 13)


class Changed(Mixed):
    """``Mixed`` (answers drawn between ``low`` and ``high``; fixed where they are the same) whose
    bucket's rate becomes ``rate`` from ``at`` seconds on (a provider changing a tier's limit)."""

    def __init__(self, limit: Bucket, seed: int, low: float, high: float, at: float, rate: float) -> None:
        super().__init__(limit, seed, low, high)
        self.latency, self.at, self.rate = low, at, rate

    async def __call__(self) -> str:
        if asyncio.get_running_loop().time() - START >= self.at:
            self.limit.rate = self.rate
        return await super().__call__()


def key(rate: float, burst: float, low: float, high: float, seed: int) -> Wired:
    """One key to a bucket of ``rate`` a second with ``burst`` that tells nothing, its answers
    taking ``low`` (or drawn per request up to ``high``)."""
    limit = Bucket(rate, burst, headers=False)
    made = Mixed(limit, seed, low, high) if high > low else Wired(limit, "k", seed)
    made.latency = low
    return made


@functools.cache
def requests(
    rate: float, burst: float, low: float, high: float, count: int, participants: int = 1
) -> tuple[float, int]:
    """``count`` requests of each of ``participants`` (none knowing of the others) on one bucket:
    the median wall of the twelve ways, and their refusals in all."""
    ways = [run(key(rate, burst, low, high, seed), count, participants) for seed in WAYS]
    return statistics.median(wall for wall, _ in ways), sum(refused for _, refused in ways)


@functools.cache
def changed(rate: float, burst: float, low: float, high: float, at: float, then: float) -> tuple[float, int]:
    """800 requests on a bucket of ``rate`` a second (``burst``) that becomes ``then`` at ``at`` s."""
    ways = [run(Changed(Bucket(rate, burst, headers=False), seed, low, high, at, then), 800) for seed in WAYS]
    return statistics.median(wall for wall, _ in ways), sum(refused for _, refused in ways)


@functools.cache
def token_limit(rate: float, burst: float, attempts: int, only_user: bool) -> tuple[float, int]:
    """``test_busy_held_review.tokens`` over the twelve ways: answers of 0.1 s."""
    ways = [tokens(seed, rate, burst, attempts, only_user) for seed in WAYS]
    return statistics.median(wall for wall, _ in ways), sum(refused for _, refused in ways)


def slow_tokens(seed: int, burst: float, latency: float) -> tuple[float, int]:
    """100 conversations, each participant a bucket of 5,000 tokens a second with ``burst`` that
    tells nothing, answers of ``latency``."""

    class Answered(Slow):
        pass

    Answered.latency = latency
    made: dict[str, Key] = {
        who: Answered(who[0], Bucket(5000, burst, unit="tokens", headers=False), seed + offset, 100.0)
        for who, offset in (("user", 0), ("agent", 100), ("judge", 200))
    }

    async def main() -> float:
        return await conversations(made, 100)

    wall: float = in_virtual_time(main)
    return wall, sum(key.refused() for key in made.values())


# --- burst5 worse than main: answers of varying latency (held on main) ----------------------------


def test_twenty_a_second_burst_ten_answers_of_half_to_one_and_a_half_seconds() -> None:
    """300 requests on a bucket of 20 a second (burst 10), answers of 0.5 to 1.5 s. main: 37
    refusals, 22.90 s; burst5 73, 23.48 s: grown again some 6 s after the opening's refusal, it
    is refused every 1.3 to 2.6 s for the rest of the run in four of the first six ways (main once
    in those four; the other two the same bytes)."""
    wall, refused = requests(20, 10, 0.5, 1.5, 300)
    assert refused <= 45, f"{refused} refusals"
    assert wall <= 23.2, f"{wall:.2f} s"


def test_a_short_run_of_twenty_a_second_burst_ten_answers_of_half_to_one_and_a_half_seconds() -> None:
    """The same, 200 requests (some 16 s): the regrowth's refusals cost pauses the run is too
    short to pay back. main 22 refusals, 16.38 s; burst5 39, 16.64 s."""
    wall, refused = requests(20, 10, 0.5, 1.5, 200)
    assert refused <= 28, f"{refused} refusals"
    assert wall <= 16.5, f"{wall:.2f} s"


@pytest.mark.parametrize(
    ("rate", "burst", "low", "high", "count", "most"),
    [
        pytest.param(20, 5, 0.5, 1.5, 300, 68, id="20/s-b5-0.5-1.5"),
        pytest.param(20, 10, 0.3, 0.9, 300, 66, id="20/s-b10-0.3-0.9"),
        pytest.param(50, 10, 0.5, 1.5, 600, 33, id="50/s-b10-0.5-1.5"),
        pytest.param(50, 20, 0.5, 1.5, 750, 30, id="50/s-b20-0.5-1.5"),
    ],
)
def test_varying_answers_are_refused_no_more_often(
    rate: float, burst: float, low: float, high: float, count: int, most: int
) -> None:
    """A bucket of ``rate`` a second with ``burst``, answers drawn between ``low`` and ``high``.
    main (burst5) refusals and median walls: 20/s b5 0.5-1.5 s, 62 (84), 26.90 s (26.69); 20/s
    b10 0.3-0.9 s, 57 (84), 20.85 s (21.13); 50/s b10 0.5-1.5 s, 27 (42), 24.96 s (25.27); 50/s
    b20 0.5-1.5 s, 24 (42), 24.92 s (24.92). The walls within 1.5% either way."""
    wall, refused = requests(rate, burst, low, high, count)
    assert refused <= most, f"{refused} refusals, {wall:.2f} s"


@pytest.mark.parametrize(
    ("rate", "burst", "count", "most"),
    [pytest.param(50, 20, 500, 26, id="50/s-b20-500"), pytest.param(100, 2, 1500, 48, id="100/s-b2-1500")],
)
def test_varying_answers_are_refused_no_more_often_than_main_at_the_commits_own_shape(
    rate: float, burst: float, count: int, most: int
) -> None:
    """Answers of 0.5 to 1.5 s. 50 a second, burst 20, 500 requests: main 23 refusals, 19.14 s;
    burst5 32, 19.32 s. 100 a second, burst 2, 1,500 requests: main 43, 45.63 s; burst5 55,
    45.16 s."""
    wall, refused = requests(rate, burst, 0.5, 1.5, count)
    assert refused <= most, f"{refused} refusals, {wall:.2f} s"


@pytest.mark.parametrize(
    ("low", "high", "most"), [pytest.param(0.3, 0.9, 26.2, id="0.3-0.9"), pytest.param(0.2, 1.0, 27.7, id="0.2-1.0")]
)
def test_a_hundred_a_second_burst_ten_with_varying_answers_is_no_slower(low: float, high: float, most: float) -> None:
    """1,500 requests on a bucket of 100 a second (burst 10), answers drawn between ``low`` and
    ``high``: the slowest walls found, 2-3% over main's. main 25.87 s (0.3-0.9) and 27.43 s
    (0.2-1.0); burst5 26.68 and 27.94."""
    wall, refused = requests(100, 10, low, high, 1500)
    assert wall <= most, f"{wall:.2f} s, {refused} refusals"


@pytest.mark.parametrize(
    ("rate", "burst", "low", "high", "count", "most"),
    [
        pytest.param(20, 10, 1.0, 3.0, 300, 20, id="20/s-b10-1-3"),
        pytest.param(50, 3, 0.5, 1.5, 750, 73, id="50/s-b3-0.5-1.5"),
    ],
)
def test_varying_answers_quicker_but_refused_more_often(
    rate: float, burst: float, low: float, high: float, count: int, most: int
) -> None:
    """Where burst5 trades refusals for wall: 20 a second, burst 10, answers of 1 to 3 s: main 17
    refusals, 31.87 s; burst5 26, 31.45 s. 50 a second, burst 3, 0.5 to 1.5 s: main 67, 37.38 s;
    burst5 82, 36.38 s."""
    wall, refused = requests(rate, burst, low, high, count)
    assert refused <= most, f"{refused} refusals, {wall:.2f} s"


# --- burst5 worse than main: a limit changed mid-run, a shared key --------------------------------


@pytest.mark.parametrize(("burst", "most"), [pytest.param(10, 38, id="b10"), pytest.param(20, 30, id="b20")])
def test_a_limit_raised_mid_run_with_varying_answers(burst: float, most: int) -> None:
    """800 requests on a bucket of 25 a second raised to 50 at 4 s, answers of 0.5 to 1.5 s: the
    regrowth finds the raised limit, but by refusals, and no quicker. main: burst 10 33 refusals,
    30.34 s, burst 20 24, 25.90 s; burst5 46, 30.56 s and 43, 25.90 s."""
    wall, refused = changed(25, burst, 0.5, 1.5, 4.0, 50)
    assert refused <= most, f"{refused} refusals, {wall:.2f} s"


def test_a_limit_halved_at_eight_seconds_with_quick_answers() -> None:
    """800 requests on a bucket of 50 a second (burst 10) halved to 25 at 8 s, answers of 0.1 s:
    the pace grown again some 5 s after the opening meets the lowered limit by refusals. main 81
    refusals, 34.89 s; burst5 106, 35.27 s (seeds 13-24 closer: 86 where 81)."""
    wall, refused = changed(50, 10, 0.1, 0.1, 8.0, 25)
    assert refused <= 90, f"{refused} refusals"
    assert wall <= 35.1, f"{wall:.2f} s"


def test_two_participants_sharing_a_bucket_with_a_burst_of_three() -> None:
    """A user and a judge, 300 requests each, on one bucket of 50 a second (burst 3), answers of
    0.5 to 1.5 s: main 80 refusals, 25.46 s; burst5 115, 26.06 s."""
    wall, refused = requests(50, 3, 0.5, 1.5, 300, 2)
    assert refused <= 90, f"{refused} refusals"
    assert wall <= 25.8, f"{wall:.2f} s"


# --- burst5 quicker, but refused more often: the walls strict xfails on main, the refusals held ---

TRADED = [
    pytest.param("shared-b5", id="two-on-50/s-b5-0.5-1.5"),
    pytest.param("shared-b10", id="two-on-50/s-b10-0.5-1.5"),
    pytest.param("raised-at-10", id="25->50/s-at-10s-b10-1s"),
    pytest.param("halved-at-3", id="50->25/s-at-3s-b10-1s"),
    pytest.param("tokens-150", id="tokens-5000/s-b150-user"),
    pytest.param("tokens-2500", id="tokens-2500/s-b300"),
]
# name: (the play, burst5's median wall, its bound, main's refusals, burst5's, their bound)
FIGURES = {
    "shared-b5": (lambda: requests(50, 5, 0.5, 1.5, 300, 2), 23.07, 23.6, 58, 87, 64),
    "shared-b10": (lambda: requests(50, 10, 0.5, 1.5, 300, 2), 20.95, 21.4, 47, 69, 52),
    "raised-at-10": (lambda: changed(25, 10, 1.0, 1.0, 10.0, 50), 30.55, 31.2, 14, 33, 18),
    "halved-at-3": (lambda: changed(50, 10, 1.0, 1.0, 3.0, 25), 44.25, 45.0, 102, 122, 108),
    "tokens-150": (lambda: token_limit(5000, 150, 125, True), 25.39, 26.0, 57, 68, 60),
    "tokens-2500": (lambda: token_limit(2500, 300, 80, False), 22.56, 23.0, 66, 78, 70),
}


@pytest.mark.xfail(strict=True, reason="burst5 (not landed) was quicker than main here (see FIGURES)")
@pytest.mark.parametrize("name", TRADED)
def test_quicker_than_main(name: str) -> None:
    """Two participants (300 requests each) on one bucket of 50 a second with a burst of 5 or 10,
    answers of 0.5 to 1.5 s: main 24.60 and 23.38 s (seeds 13-24 at 10: 21.13); burst5 23.07 and
    20.95 (20.49). 800 requests on a bucket of 25 a second (burst 10) raised to 50 at 10 s,
    answers of 1 s: main 38.11 s (13-24 the same); burst5 30.55 (31.01), the regrowth finding the
    raise 20 s sooner. 50 a second (burst 10) halved to 25 at 3 s, answers of 1 s: main 47.87 s;
    burst5 44.25 (13-24: 44.26). Tokens, the user's key alone 5,000 a second with 150 saved up,
    125 conversations: main 31.38 s; burst5 25.39 (13-24: the same bytes, 27.08). Each
    participant's key 2,500 tokens a second with 300 saved up, 80 conversations: main 25.15 s;
    burst5 22.56."""
    play, _, most, _, _, _ = FIGURES[name]
    wall, refused = play()
    assert wall <= most, f"{wall:.2f} s, {refused} refusals"


@pytest.mark.parametrize("name", TRADED)
def test_refused_no_more_often_than_main_where_quicker(name: str) -> None:
    """The shapes of ``test_quicker_than_main``, refused (main -> burst5 in all twelve ways): two on
    50/s b5 58 -> 87, b10 47 -> 69 (seeds 13-24: 55 -> 70); raised at 10 s 14 -> 33 (17 -> 29);
    halved at 3 s 102 -> 122 (111 -> 125); tokens 5,000/s b150 the user's 57 -> 68 (13-24: 58,
    the same bytes); tokens 2,500/s b300 66 -> 78."""
    play, _, _, _, _, most = FIGURES[name]
    wall, refused = play()
    assert refused <= most, f"{refused} refusals, {wall:.2f} s"


# --- burst5's gains (strict xfails on main), and where both play the same -------------------------


@pytest.mark.xfail(
    strict=True, reason="burst5 (not landed): 25.72 s where main 29.28 (burst 100), 23.71 where 26.53 (200)"
)
@pytest.mark.parametrize(
    ("burst", "only_user", "most", "refusals"),
    [pytest.param(100, False, 26.2, 92, id="b100-three-keys"), pytest.param(200, True, 24.2, 60, id="b200-user")],
)
def test_a_token_limit_of_one_or_two_requests_worth(burst: float, only_user: bool, most: float, refusals: int) -> None:
    """5,000 tokens a second (requests of 50 to 150), ``burst`` saved up, telling nothing, 125
    conversations, answers of 0.1 s: the shape burst5 was made for. Burst 100, three keys: main
    29.28 s, 89 refusals; burst5 25.72, 89. Burst 200, the user's key: main 26.53, 56; burst5
    23.71, 59. (Burst 50 and 300, and 250 on three keys, play the same bytes on both.)"""
    wall, refused = token_limit(5000, burst, 125, only_user)
    assert wall <= most, f"{wall:.2f} s"
    assert refused <= refusals, f"{refused} refusals"


@pytest.mark.xfail(strict=True, reason="burst5 (not landed): 28.47 s where main 30.33")
def test_a_hundred_a_second_burst_three_quick_answers() -> None:
    """1,500 requests on a bucket of 100 a second (burst 3), answers of 0.1 s: main 30.33 s, 56
    refusals; burst5 28.47, 62."""
    wall, refused = requests(100, 3, 0.1, 0.1, 1500)
    assert wall <= 29.0, f"{wall:.2f} s"
    assert refused <= 66, f"{refused} refusals"


@pytest.mark.parametrize(
    ("rate", "burst", "latency", "count", "most", "refusals"),
    [
        pytest.param(20, 5, 1.0, 300, 24.5, 62, id="20/s-b5-1s"),
        pytest.param(50, 10, 1.0, 750, 29.6, 65, id="50/s-b10-1s"),
        pytest.param(50, 20, 2.0, 750, 35.4, 44, id="50/s-b20-2s"),
    ],
)
def test_answers_of_fixed_latency_play_as_main(
    rate: float, burst: float, latency: float, count: int, most: float, refusals: int
) -> None:
    """Answers of a fixed latency: the same bytes on both. 20/s b5 1 s: 24.16 s, 60 refusals;
    50/s b10 1 s: 29.30 s, 63; 50/s b20 2 s: 35.07 s, 42. (Of the request buckets with answers of
    1 or 2 s, rates 20/50/100 and bursts 2/3/5/10/20, those at 50 a second all play the same bytes;
    at 20 all but burst 3 at 2 s, 69 refusals where 65, and burst 20 at 2 s, 27.01 s and 20 where
    27.07 and 18; at 100 the walls within 0.4%, burst5 up to 5 refusals more in twelve ways.)"""
    wall, refused = requests(rate, burst, latency, latency, count)
    assert wall <= most, f"{wall:.2f} s"
    assert refused <= refusals, f"{refused} refusals"


def test_a_token_limit_with_answers_of_a_second() -> None:
    """100 conversations, each participant 5,000 tokens a second with 200 saved up, answers of
    1 s: the same bytes on both, the median of six ways 26.52 s, 37 refusals (over twelve 26.85
    s, 73; bursts 100, 200, 300 and 400 with answers of 1 or 2 s all the same bytes)."""
    walls = [slow_tokens(seed, 200, 1.0)[0] for seed in range(1, 7)]
    assert statistics.median(walls) <= 27.0, f"{statistics.median(walls):.2f} s"
