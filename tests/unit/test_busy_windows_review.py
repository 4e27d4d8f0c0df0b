"""A reviewer's tests of how windows and limits that do not say their size are told apart
(``quota.Meter._counted_down``, ``_slid`` and ``_sized``, branch win1): the shapes of real
providers' limits, a way to the wire of up to 30 ms, answers out of order, and the misreadings
each reading risks — a bucket read as a sliding window, a fixed window read as one that spends its
limit evenly, a window without its size read at its size where a refusal says nothing is left.

Played in virtual time as ``test_busy_small_review.py`` plays them (``played``), or with a wider
way to the wire and answers that take 20 to 600 ms (``played_wide``: an answer to a later request
may come before an earlier one's). Five of these failed on win1 (ab7cf3a) and were mended after
the review: a bucket's words read as a sliding window's (OpenAI's 200 and 250 a minute 1.2 x their
floor), a refusal's reset read as a sliding window's length, and a refusal of a limit that does not
say its size read at the size its words told. The one marked ``xfail`` still fails, with the
reason and what it measured: the trade named in bench/README.md."""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from support.clock import START, in_virtual_time
from support.project import conversations
from support.standin import Bucket, Window
from test_busy_small_review import Key, Limit, Run, Unsized, _reset, played

from convy.busy import Busy
from convy.http import RateHeaders
from convy.quota import TOLD, Meter, Quota


@dataclass
class Minute:
    """A fixed window on the clock's minutes, as most gateways count one: ``count`` requests in
    each minute of the clock, the first request ``offset`` seconds into one; its reset counts down
    to the minute's end."""

    count: int
    offset: float = 17.0
    used: int = 0
    index: int = -1

    def admit(self, now: float, cost: float) -> tuple[int | None, dict[str, str]]:
        moment = now - START + self.offset
        index = int(moment // 60.0)
        if index != self.index:
            self.index, self.used = index, 0
        end = (index + 1) * 60.0 - moment
        wait = None
        if self.used < self.count:
            self.used += 1
        else:
            wait = max(1, math.ceil(end))
        return wait, {
            "x-ratelimit-limit-requests": str(self.count),
            "x-ratelimit-remaining-requests": str(self.count - self.used),
            "x-ratelimit-reset-requests": _reset(max(0.0, end)),
        }


class WideKey(Key):
    """``Key`` with a way to the wire of 0.5 ms to ``way`` s and an answer after ``answer`` seconds
    (drawn between the two), seeded."""

    def __init__(self, name: str, limit: Limit, seed: int, way: float, answer: tuple[float, float]) -> None:
        super().__init__(name, limit, seed)
        self.wide = way
        self.answer = answer
        self.answers = random.Random(seed * 7919 + 77)

    async def __call__(self) -> str:
        told = TOLD.get()
        if told is not None and not told.service:
            told.service = self.name
        loop = asyncio.get_running_loop()
        await asyncio.sleep(self.way.uniform(0.0005, self.wide))
        if told is not None:
            await told.writable()
            told.wrote(loop.time())
        now = loop.time()
        wait, headers = self.limit.admit(now, 1.0)
        if told is not None:
            told.heard = RateHeaders(headers).heard()
        self.reached.append((now - START, wait is None))
        if wait is not None:
            raise Busy("429 Too Many Requests", float(wait))
        await asyncio.sleep(self.answers.uniform(*self.answer))
        return "answer"


def played_wide(
    limit: Callable[[], Limit], seed: int, attempts: int, way: float, answer: tuple[float, float] = (0.1, 0.1)
) -> Run:
    """``played`` with a way to the wire of up to ``way`` seconds and answers of ``answer``: a
    limit made by ``limit`` for each participant's key."""
    keys: dict[str, Key] = {
        who: WideKey(who, limit(), seed + offset, way, answer) for offset, who in enumerate(("user", "agent", "judge"))
    }

    async def main() -> float:
        return await conversations(keys, attempts)

    wall: float = in_virtual_time(main)
    return Run(wall, keys)


# ------------------------------------------------------------------- a bucket read as a window


def test_a_bucket_with_many_in_use_keeps_its_next_unit_a_units_time_away() -> None:
    """A bucket of 250 a minute (OpenAI's reset: the time until it is full) says "4 left, whole
    in 59.04 s", "2 left, whole in 59.52 s" and "0 left, whole in 60 s", its units spent in a
    burst since the send 249 before, at 1 s: the next unit comes 0.24 s after the last word."""
    meter = Meter()
    meter.heard(Quota(remaining=4, reset=59.04, limit=250), 0, 13.6, [], 1.0, False, True)
    meter.heard(Quota(remaining=2, reset=59.52, limit=250), 1, 13.8, [], 1.0, False, True)
    meter.heard(Quota(remaining=0, reset=60.0, limit=250), 2, 14.0, [], 1.0, False, True, oldest=1.0)
    assert meter.ready(14.0, 1.0) <= 14.0 + 1.0, meter.ready(14.0, 1.0)


def test_a_bucket_of_250_a_minute_is_paced_within_5_percent_of_its_floor() -> None:
    """A bucket of 250 a minute saving up 250, OpenAI's shape: the user's 500 requests, less the
    250 saved up, at 250 a minute, 60 s."""
    run = played(lambda: Bucket(250 / 60, 250.0), 0, 125)
    assert run.wall <= 1.05 * (500 - 250) / (250 / 60), run.wall


def test_a_bucket_of_200_a_minute_on_a_slow_way_is_paced_within_5_percent_of_its_floor() -> None:
    run = played_wide(lambda: Bucket(200 / 60, 200.0), 1, 100, 0.03)
    assert run.wall <= 1.05 * (400 - 200) / (200 / 60), run.wall


# ------------------------------------------------------------------- windows on the clock


def test_a_fixed_window_on_the_clocks_minutes_is_not_refused_on_a_slow_way() -> None:
    """A fixed window of 60 a minute on the clock's minutes, a way of up to 30 ms: none of the
    user's 160 requests refused (7526fb5: 62 to 65 of all keys'), within 1.02 x 7526fb5's 108 s."""
    run = played_wide(lambda: Minute(60), 0, 40, 0.03)
    assert run.refused() == 0, run.refused()
    assert run.wall <= 1.02 * 108.1, run.wall


@pytest.mark.xfail(
    strict=True,
    reason="win1 (3e42521): read over its longest reset, 43 s of the first minute and then 60, a "
    "fixed window of 1,000 a minute spends its requests evenly at 16.7 to 23 a second, not what "
    "each minute allows at once: 103.8 s for the user's 2,000 requests, 0 refused (7526fb5 "
    "81.5 s, 59 to 69 refused, 1.27x quicker). The trade-off bench/README.md names for 100 in 10 s.",
)
def test_a_fixed_window_of_1000_a_minute_is_no_slower_than_before() -> None:
    """The window's first minute is 43 s long, and allows 1,000; the next 1,000 at once."""
    run = played(lambda: Minute(1000), 0, 500)
    assert run.wall <= 1.05 * 81.5, run.wall


def test_a_sliding_window_of_sixty_a_minute_with_answers_out_of_order_is_not_refused() -> None:
    """Answers after 20 to 600 ms, so that a later request's comes before an earlier one's: a
    sliding window of 60 a minute, none of the user's 160 requests refused (7526fb5: 34 to 36)."""
    run = played_wide(lambda: Window(60, 60.0), 0, 40, 0.008, (0.02, 0.6))
    assert run.refused() == 0, run.refused()
    assert run.wall <= 1.45 * (160 - 60), run.wall


def test_a_sliding_window_of_sixty_a_minute_refused_before_its_last_word_is_not_refused_again() -> None:
    """A sliding window of 60 a minute: the user's 160 requests within 1.45 x their floor (7526fb5:
    1.32x to 1.38x), at most 2% of all refused."""
    run = played(lambda: Window(60, 60.0), 1, 40)
    assert run.refused() <= 0.02 * run.requests(), run.refused()
    assert run.wall <= 1.45 * (160 - 60), run.wall


# ------------------------------------------------------------------ limits without their size


def test_a_sliding_window_that_does_not_say_its_size_is_not_refused_once_its_spent() -> None:
    """A sliding window of 60 a minute without ``x-ratelimit-limit-requests``: the user's 160
    requests with at most 1% of all refused, within 1.65 x their floor (7526fb5: 1.58x, none)."""
    run = played(lambda: Unsized(Window(60, 60.0)), 1, 40)
    assert run.refused() <= 0.01 * run.requests(), run.refused()
    assert run.wall <= 1.65 * (160 - 60), run.wall
