"""A reviewer's tests of how a small limit's words are read (``quota.Meter.emptied``, 3652b49): a
word with some left, too few units in use to tell a bucket from a window, reads no quicker than
the latest admitted word that said none was left, nor than a refusal's. Each test names the case
it attacks: windows small and fixed, limits raised and halved mid-run, refusals whose reset is the
time until the next unit, a limit that does not say its size, a neighbour outside convy that
overdraws the bucket, big limits, tokens, and participants sharing a key.

Played in virtual time (``clock.in_virtual_time``) with ``bench/busy.py``'s project: a simulated
user's request then the agent's, three turns, the user's last, then the judge's; each participant
a key of its own (or one key for all three) to the limit under attack. The floor of a run is the
user's requests, less what the limit saves up, at the limit's rate. A test marked ``xfail`` fails
on the change under review, with the reason and what it measured; where it failed before the
change too, the reason says so."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from support.clock import in_virtual_time
from support.project import Key, Limit, conversations
from support.standin import Bucket, Changing, Window

from convy.quota import Meter, Quota


def _reset(seconds: float) -> str:
    """A reset as OpenAI writes it ("20ms", "1s"), as the stand-in's limits do."""
    return f"{math.ceil(seconds * 1000)}ms" if seconds < 1 else f"{seconds:.3g}s"


@dataclass
class Fixed:
    """A fixed window: ``count`` requests in each ``seconds`` from the first request on; its reset
    counts down to the window's end (as GitHub's and many gateways' do), not the window's length."""

    count: int
    seconds: float
    start: float | None = None
    used: int = 0
    index: int = -1

    def admit(self, now: float, cost: float) -> tuple[int | None, dict[str, str]]:
        self.start = now if self.start is None else self.start
        index = int((now - self.start) // self.seconds)
        if index != self.index:
            self.index, self.used = index, 0
        end = self.start + (index + 1) * self.seconds
        wait = None
        if self.used < self.count:
            self.used += 1
        else:
            wait = max(1, math.ceil(end - now))
        return wait, {
            "x-ratelimit-limit-requests": str(self.count),
            "x-ratelimit-remaining-requests": str(self.count - self.used),
            "x-ratelimit-reset-requests": _reset(max(0.0, end - now)),
        }


@dataclass
class NextUnit:
    """A bucket whose refusals say, as their reset, the time until the next unit rather than
    until it is whole; its other words as ``Bucket``'s."""

    bucket: Bucket

    def admit(self, now: float, cost: float) -> tuple[int | None, dict[str, str]]:
        wait, headers = self.bucket.admit(now, cost)
        if wait is not None:
            level = self.bucket.level or 0.0
            headers["x-ratelimit-reset-requests"] = _reset(max(0.001, (1 - level) / self.bucket.rate))
        return wait, headers


@dataclass
class Unsized:
    """A limit whose words say what is left and when it is whole, but not its size (no
    ``x-ratelimit-limit-*``): a word is then read as ``remaining + 1`` over its reset."""

    inner: Limit

    def admit(self, now: float, cost: float) -> tuple[int | None, dict[str, str]]:
        wait, headers = self.inner.admit(now, cost)
        return wait, {name: value for name, value in headers.items() if not name.startswith("x-ratelimit-limit-")}


@dataclass
class Overdrawn:
    """``bucket`` on a key that a client outside convy also uses: ``units`` more than the bucket
    holds spent ``at`` seconds after the first request, as a service that charges a request's
    cost after the fact lets it be (the bucket's level below zero, its refusals' reset long)."""

    bucket: Bucket
    at: float
    units: float
    start: float | None = None
    done: bool = False

    def admit(self, now: float, cost: float) -> tuple[int | None, dict[str, str]]:
        self.start = now if self.start is None else self.start
        bucket = self.bucket
        if not self.done and now - self.start >= self.at:
            self.done = True
            level = (
                bucket.burst
                if bucket.level is None
                else min(bucket.burst, bucket.level + (now - bucket.moment) * bucket.rate)
            )
            bucket.level, bucket.moment = level - self.units, now
        return bucket.admit(now, cost)


@dataclass(frozen=True)
class Run:
    wall: float  # seconds from the start to the last answer
    keys: dict[str, Key]

    def refused(self) -> int:
        return sum(key.refused() for key in {id(key): key for key in self.keys.values()}.values())

    def requests(self) -> int:
        return sum(len(key.reached) for key in {id(key): key for key in self.keys.values()}.values())

    def lately(self, seconds: float = 5.0) -> float:
        """The user's requests let through a second over its last ``seconds`` of requests."""
        user = self.keys["user"]
        last = max(moment for moment, _ in user.reached)
        return user.let_through(last - seconds, last)


def played(limit: Callable[[], Limit], seed: int, attempts: int, shared: bool = False, tokens: float = 0.0) -> Run:
    """``attempts`` attempts of bench/busy.py's project against a limit made by ``limit``: one for
    each participant's key, or, ``shared``, one key for all three (one service, so one pace)."""
    if shared:
        one = limit()
        keys = {
            who: Key("one key", one, seed + offset, tokens) for offset, who in enumerate(("user", "agent", "judge"))
        }
    else:
        keys = {who: Key(who, limit(), seed + offset, tokens) for offset, who in enumerate(("user", "agent", "judge"))}

    async def main() -> float:
        return await conversations(keys, attempts)

    wall: float = in_virtual_time(main)
    return Run(wall, keys)


def admitted(meter: Meter, number: int, quota: Quota) -> None:
    meter.heard(quota, number, float(number), [], 1.0, False, True)


def refused(meter: Meter, number: int, quota: Quota) -> None:
    meter.heard(quota, number, float(number), [], 1.0, False, False)


# ------------------------------------------------------------------------------- limits raised


def test_a_meter_forgets_what_a_limit_said_once_a_new_limit_is_said() -> None:
    """A bucket of 10 a second saving up 10 says "0 left, whole in 1 s": 10 a second. Raised to 19
    saving up 19, it says "18 left, whole in 53 ms": whatever that reads, it is a new limit, and
    the old one's word holds it to nothing (3652b49 held it to 10)."""
    meter = Meter()
    admitted(meter, 0, Quota(remaining=0, reset=1.0, limit=10))
    assert meter.rate == pytest.approx(10.0)
    admitted(meter, 1, Quota(remaining=18, reset=0.053, limit=19))
    assert meter.rate > 10.0


@pytest.mark.parametrize("seed", [0, 1])
def test_a_bucket_raised_mid_run_is_paced_at_its_new_rate(seed: int) -> None:
    """A bucket of 10 a second saving up 10, raised after 3 s to 19 saving up 19 (a key's tier
    raised): the user's 240 requests within 1.1 x their floor of 14 s, at 0.9 x the new rate or
    more at the end. Before 3652b49, 12.9 s and 19 a second; with it, 22.8 s and 10.2, the cap
    read from the old limit's words holding to the run's end."""
    run = played(lambda: Changing(Bucket(10.0, 10.0), Bucket(19.0, 19.0), 3.0), seed, 60)
    floor = 3.0 + (240 - 30) / 19
    assert run.lately() >= 0.9 * 19, run.lately()
    assert run.wall <= 1.1 * floor, (run.wall, floor)


@pytest.mark.xfail(
    strict=True,
    reason="3652b49: the limit said stays 5, so nothing tells the bucket quicker: held at 54 a second "
    "of 100 (1.74x the floor, 2 refused). Not worse in time than before, which read the raise "
    "as 250 a second and was refused 106 to 374 times (1.04x to 4.6x the floor).",
)
def test_a_bucket_raised_to_a_quicker_rate_of_the_same_size_is_paced_at_it() -> None:
    """A bucket of 50 a second saving up 5, after 2 s 100 a second saving up 5: at the end, the
    user's requests go at 0.9 x the new rate or more."""
    run = played(lambda: Changing(Bucket(50.0, 5.0), Bucket(100.0, 5.0), 2.0), 0, 250)
    assert run.lately() >= 0.9 * 100, run.lately()


def test_a_small_window_raised_mid_run_is_paced_at_its_new_rate() -> None:
    """A sliding window of 5 a second, 10 after 5 s: its words with nothing left come often (all
    of a window's read alike), so the new rate is heard within seconds: the user's 200 requests
    within 1.15 x their floor (24.7 s of 22.5, before the change and with it)."""
    run = played(lambda: Changing(Window(5, 1.0), Window(10, 1.0), 5.0), 0, 50)
    assert run.lately() >= 0.85 * 10, run.lately()
    assert run.wall <= 1.15 * (5.0 + (200 - 25) / 10), run.wall


# ------------------------------------------------------------------------------ limits lowered


@pytest.mark.parametrize("seed", [0, 1])
def test_a_bucket_halved_mid_run_is_refused_a_handful_of_times(seed: int) -> None:
    """A bucket of 50 a second saving up 5, halved after 2 s: the user's 500 requests within 1.05 x
    their floor of 18 s, at most 5 refused. Before the change, up to 27 refused and 1.12 x."""
    run = played(lambda: Changing(Bucket(50.0, 5.0), Bucket(25.0, 5.0), 2.0), seed, 125)
    assert run.refused() <= 5, run.refused()
    assert run.wall <= 1.05 * (2.0 + (500 - 100) / 25), run.wall


def test_a_refusal_with_a_long_reset_holds_the_rate_only_until_a_word_says_none_is_left() -> None:
    """A neighbour outside convy overdraws a bucket of 50 a second saving up 5 by 20 requests at
    3 s: the refusals then say "0 left, whole in 0.42 s", 12 a second, and hold the rate to it. The
    first admitted word that says none is left lets it go: over the last 10 s of 2,000 requests,
    at 0.9 x the limit or more (49.8; before the change, 11 to 15 a second to the end, 140 s)."""
    run = played(lambda: Overdrawn(Bucket(50.0, 5.0), 3.0, 20.0), 0, 500)
    assert run.lately(10.0) >= 0.9 * 50, run.lately(10.0)
    assert run.wall <= 1.2 * ((2000 - 5) / 50 + 0.4), run.wall


# ------------------------------------------------------------------------------ other shapes


def test_a_small_windows_words_read_alike_with_some_or_none_left() -> None:
    """A sliding window's reset is its length whatever is left: "0 left of 5, whole in 1 s" and
    "3 left of 5, whole in 1 s" both read 5 a second, and a refusal's "0 left, whole in 0.4 s" (its
    oldest request leaves then) no slower."""
    meter = Meter()
    admitted(meter, 0, Quota(remaining=0, reset=1.0, limit=5))
    assert meter.rate == pytest.approx(5.0)
    admitted(meter, 1, Quota(remaining=3, reset=1.0, limit=5))
    assert meter.rate == pytest.approx(5.0)
    refused(meter, 2, Quota(remaining=0, reset=0.4, limit=5))
    admitted(meter, 3, Quota(remaining=4, reset=1.0, limit=5))
    assert meter.rate == pytest.approx(5.0)


def test_a_fixed_windows_words_that_end_together_read_over_its_length() -> None:
    """A fixed window of 5 a second: "4 left, whole in 1 s" sent at 0 and "3 left, whole in 0.8 s"
    at 0.2 both end at 1 s, so the reset counts down to the window's end: 5 a second, not 6.25 as
    the second alone reads; and after "0 left, whole in 0.1 s" at 0.9, nothing until it turns."""
    meter = Meter()
    meter.heard(Quota(remaining=4, reset=1.0, limit=5), 0, 0.0, [], 1.0, False, True)
    meter.heard(Quota(remaining=3, reset=0.8, limit=5), 1, 0.2, [], 1.0, False, True)
    assert meter.fixed
    assert meter.rate == pytest.approx(5.0)
    meter.heard(Quota(remaining=0, reset=0.1, limit=5), 2, 0.9, [], 1.0, False, True)
    assert meter.ready(0.95, 1.0) > 1.0


def test_a_sliding_windows_words_are_not_read_as_a_fixed_windows() -> None:
    """A sliding window's reset is its length: its words end a send's time apart, never together."""
    meter = Meter()
    for number in range(5):
        admitted(meter, number, Quota(remaining=4 - number, reset=1.0, limit=5))
    assert not meter.fixed
    assert meter.ready(4.0, 1.0) == pytest.approx(4.2)


def test_a_sliding_window_of_five_a_second_is_refused_at_most_once_in_fifty() -> None:
    """A sliding window's words say some is left, and the user's requests go as their answers
    come, 100 ms apart, until the sixth within a second: read as a bucket's, "0 left" gave the
    next unit back a gap after it, and it was refused and all paused a whole second (21 of the
    user's 100 each seed, 1.25x the floor, before 3652b49 and with it). Its next unit comes when
    the oldest of the sends it counts leaves: none refused, within 1.1 x the floor of 19 s."""
    run = played(lambda: Window(5, 1.0), 0, 25)
    assert run.refused() <= 0.02 * run.requests(), run.refused()
    assert run.wall <= 1.1 * (100 - 5) / 5, run.wall


def test_a_sliding_windows_next_unit_comes_when_its_oldest_send_leaves() -> None:
    """Five sends of a window of 5 a second, 0.1 s apart: "0 left, whole in 1 s" of the fifth, at
    0.4, gives its next unit back when the first leaves, a second after it (at the share), not a
    gap after the fifth. Words whose remaining differ by two, with the same reset, tell it."""
    meter = Meter()
    for number in range(5):
        quota = Quota(remaining=4 - number, reset=1.0, limit=5)
        meter.heard(quota, number, number / 10, [], 0.98, False, True, oldest=0.0 if number == 4 else -math.inf)
    assert meter.sliding
    assert meter.ready(0.5, 0.98) == pytest.approx(1 / 0.98)
    bucket = Meter()  # of 50 a second saving up 5: its reset grows with the units in use
    admitted(bucket, 0, Quota(remaining=4, reset=0.02, limit=5))
    admitted(bucket, 1, Quota(remaining=2, reset=0.06, limit=5))
    assert not bucket.sliding


def test_a_fixed_window_whose_reset_counts_down_is_refused_at_most_once_in_ten() -> None:
    """A fixed window of 5 a second whose reset counts down to its end: read as a sliding window's,
    its words are the quicker the later in the window ("0 left, whole in 0.1 s" 50 a second), and
    61 to 65 of the user's 100 requests were refused before 3652b49, 42 to 52 with it. Told by two
    words that end at the same moment, it is read over its length, and nothing goes after "0
    left" until it turns: none refused, the user's requests within 1.1 x their floor of 19 s."""
    run = played(lambda: Fixed(5, 1.0), 0, 25)
    assert run.refused() <= 0.1 * run.requests(), run.refused()
    assert run.wall <= 1.1 * (100 - 5) / 5, run.wall


def test_a_refusal_that_says_when_the_next_unit_comes_holds_nothing_back() -> None:
    """A bucket of 50 a second saving up 5 whose refusals say the time until its next unit, 20 ms
    or less: read as a window's, 250 a second or more, above the limit, so it lowers nothing. The
    user's 500 requests within 1.1 x their floor, at most 1.5% of all refused (before the change,
    up to 3%)."""
    for seed in (0, 1):
        run = played(lambda: NextUnit(Bucket(50.0, 5.0)), seed, 125)
        assert run.refused() <= 0.015 * run.requests(), (seed, run.refused())
        assert run.wall <= 1.1 * (500 - 5) / 50, (seed, run.wall)


def test_a_bucket_that_does_not_say_its_size_is_paced_within_twice_its_floor() -> None:
    """Without its size, a word read as remaining + 1 over its reset made "0 left, whole in 100 ms"
    of a bucket of 50 a second 10 a second: 4.5x the floor and 331 refused before 3652b49 (median
    of 4 seeds), 4.75x and 0 or 1 with it. Its size is what its words said was left, and one: its
    first, of a full bucket, says 4 left."""
    run = played(lambda: Unsized(Bucket(50.0, 5.0)), 0, 125)
    assert run.wall <= 2.0 * (500 - 5) / 50, run.wall
    assert run.refused() <= 0.01 * run.requests(), run.refused()


def test_a_limit_that_does_not_say_its_size_reads_the_most_its_words_said_was_left() -> None:
    """ "4 left, whole in 20 ms", then "0 left, whole in 100 ms": a size of 5, 50 a second."""
    meter = Meter()
    admitted(meter, 0, Quota(remaining=4, reset=0.02))
    admitted(meter, 1, Quota(remaining=0, reset=0.1))
    assert meter.rate == pytest.approx(50.0)


def test_a_big_bucket_whose_early_words_have_few_units_in_use_is_not_refused() -> None:
    """OpenAI's 500 requests a minute, a bucket saving up 500: its first words say "499 left, whole
    in 120 ms", 4,166 a second read as a window's. What it saved up goes first, then the user's
    1,000 requests within 1.2 x their floor of 60 s, none refused (68.5 s, as before the change).
    A refusal's "0 left of 500, whole in 60 s" reads the bucket's own 8.3 a second."""
    run = played(lambda: Bucket(500 / 60, 500.0), 0, 250)
    assert run.refused() == 0
    assert run.wall <= 1.2 * (1000 - 500) / (500 / 60), run.wall
    meter = Meter()
    admitted(meter, 0, Quota(remaining=499, reset=0.12, limit=500))
    refused(meter, 1, Quota(remaining=0, reset=60.0, limit=500))
    assert meter.rate == pytest.approx(500 / 60)


def test_a_small_token_limit_is_paced_as_before() -> None:
    """A bucket of 500 tokens a second saving up 50, requests of 5 to 15 tokens: the user's 500
    requests within 1.1 x their floor of 9.9 s, at most 5% refused (18 to 19 of about 1,000, as
    before the change: a word with none of 50 tokens left is rare)."""
    run = played(lambda: Bucket(500.0, 50.0, unit="tokens"), 0, 125, tokens=10.0)
    assert run.refused() <= 0.05 * run.requests(), run.refused()
    assert run.wall <= 1.1 * (500 * 10 - 50) / 500, run.wall


@pytest.mark.parametrize("seed", [0, 1])
def test_neighbours_on_one_small_bucket_are_refused_a_handful_of_times(seed: int) -> None:
    """The user, the agent and the judge on one key to a bucket of 50 a second saving up 5 (one
    ``Service``, one meter): their 400 requests within 1.1 x their floor of 7.9 s, at most 6
    refused (before the change, up to 9)."""
    run = played(lambda: Bucket(50.0, 5.0), seed, 50, shared=True)
    assert run.refused() <= 6, run.refused()
    assert run.wall <= 1.1 * (400 - 5) / 50, run.wall
