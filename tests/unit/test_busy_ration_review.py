"""A reviewer's tests of what a participant does after LiteLLM's refusal of a count used up
(branch ration4: ``busy.Places``' counted-out refusal, ``refusals.ended_at_count`` and
``refusals.beside_count``), against the state before (win2, 2ffde39), in virtual time with the
stand-ins of ``test_busy_ration.py``: a count whose rpm is lowered mid-run, answers of a second,
counts of 10 and 3,000 a minute, two participants on one model, an outage as the window turns and
once it has, a proxy whose window turns after its Retry-After says, and a second limit met after
the count (a model carrying so many at once, a rate limit).

The plain tests hold on ration4; most failed on win2, whose cut at the count's refusal held every
window after the first to some 10 a second (each says what win2 measured). The ones marked
``xfail`` fail on ration4 and hold on win2, with the figures in their reasons: the bound the first
refusal of another limit puts on the pace (what was under way, over the latency) is a found pace,
which grows back a twentieth of a percent a second at most; under a rate limit with answers of a
second it holds the participant at some 3 a second for the rest of the run. Where the model's
limit on requests at once began while the window's burst was under way, the bound was over it,
found down from there a tenth each 5 s pause (16 to 28 refusals, up to 1.6x win2's wall): those
two failed on ration4 (3c94f87) and hold since the second refusal of such a limit is bounded
too (``refusals.beside_count``). The first, too, since the pace a bound held under grows back
toward what its refusal found once ten of that limit's pauses went by."""

from __future__ import annotations

import asyncio
import math

import pytest
from support.clock import START, in_virtual_time
from test_busy_ration import Bucketed, Crowded, Minute, Outage, answered_by_window

from convy.busy import Busy, Patience, Places
from convy.http import RateHeaders
from convy.quota import TOLD, Services


class Lowered(Minute):
    """``Minute`` whose rpm is lowered to ``to`` at ``at`` seconds (the proxy's config changed)."""

    def __init__(self, at: float, to: int, rpm: int = 100, window: float = 10.0) -> None:
        super().__init__(rpm, window)
        self.at, self.to = at, to

    async def __call__(self, group: str = "") -> str:
        if asyncio.get_running_loop().time() - START >= self.at:
            self.rpm = self.to
        return await super().__call__(group)


class Late(Minute):
    """``Minute`` on a proxy whose windows turn ``late`` seconds after the participant's clock's,
    and whose refusal's Retry-After is the time to the turn on the participant's clock, at least a
    second: the first request after the wait meets the same count, used up, and is refused again."""

    def __init__(self, rpm: int = 100, window: float = 10.0, late: float = 1.5) -> None:
        super().__init__(rpm, window)
        self.late = late

    async def __call__(self, group: str = "") -> str:
        told = TOLD.get()
        if told is not None:
            told.service = "the proxy"
        now = asyncio.get_running_loop().time() - START
        which = math.floor((now - self.late) / self.window)
        count = self.counts.get((group, which), 0)
        if count + 1 >= self.rpm:
            self.refusals[(group, which)] = self.refusals.get((group, which), 0) + 1
            await asyncio.sleep(self.refusing)
            raise Busy("429 Too Many Requests", max(1.0, math.ceil((which + 1) * self.window - now)))
        self.counts[(group, which)] = count + 1
        await asyncio.sleep(self.latency)
        if told is not None:
            told.heard = RateHeaders(
                {
                    "x-ratelimit-remaining-requests": str(self.rpm - count - 1),
                    "x-ratelimit-limit-requests": str(self.rpm),
                }
            ).heard()
        self.answered += 1
        return "answer"


class CrowdedLate(Crowded, Late):
    """``Crowded`` behind ``Late``'s proxy: its model carries 8 at once from ``after`` on."""

    def __init__(self, after: float, late: float) -> None:
        Crowded.__init__(self, after)  # and through it ``Late``'s, of 99 a window of 10 s
        self.late = late


def quick(windows: dict[int, list[float]], full: int, within: float) -> bool:
    """Whether each window after the first (the opening's, the same before and after the change) in
    which at least ``full`` were answered had them all within ``within``."""
    return all(
        moments[-1] - moments[0] < within for window, moments in windows.items() if window > 0 and len(moments) >= full
    )


# ------------------------------------------------------------------ the count alone


@pytest.mark.parametrize(("rpm", "window", "requests"), [(300, 60.0, 450), (300, 10.0, 1000), (10, 60.0, 40)])
def test_each_window_after_the_counts_refusal_goes_as_quickly_as_the_first(
    rpm: int, window: float, requests: int
) -> None:
    """LiteLLM's rpm over windows of a minute and of 10 s, and a tiny one of 10 a minute: one
    refusal a window, each window's requests answered within a second of its first (ration4: at
    most 0.81 s; win2: 300 a minute's second minute 15.1 s, 300 in 10 s some 100 a window at 10 a
    second and 80.5 s in all where 32.3, 10 a minute's windows 0.8 to 0.9 s)."""
    service = Minute(rpm=rpm, window=window)
    windows = answered_by_window(service, requests, Places(0, patience=Patience(3600)))
    assert service.answered == requests
    assert set(service.refusals.values()) == {1}, service.refusals
    assert quick(windows, 2, 1.0 if rpm > 10 else 0.5), windows


def test_a_count_of_3000_a_minute_is_refused_once_a_window_and_its_next_window_as_quick() -> None:
    """3,000 a minute, 4,500 requests: one refusal, the next minute's 1,501 within half a second
    (ration4 0.18 s, win2 0.20 s: 61.6 s in all each)."""
    service = Minute(rpm=3000, window=60.0)
    windows = answered_by_window(service, 4500, Places(0, patience=Patience(3600)))
    assert service.refusals == {("", 0): 1}
    assert quick(windows, 2, 0.5), {
        window: (len(moments), moments[-1] - moments[0]) for window, moments in windows.items()
    }


def test_an_rpm_lowered_mid_run_is_refused_once_a_window_not_hammered() -> None:
    """100 a window of 10 s lowered to 30 at 15 s, 400 requests: the no-cut refusal does not hammer
    the lowered count; one refusal a window, each window's requests within a second (ration4: 8
    windows of 29, each within 0.5 s, 85.2 s in all; win2: 10 refusals, windows of 18 to 42 at 10
    a second, 133.5 s)."""
    service = Lowered(15.0, 30)
    windows = answered_by_window(service, 400, Places(0, patience=Patience(3600)))
    assert service.answered == 400
    assert set(service.refusals.values()) == {1}, service.refusals
    assert quick(windows, 10, 1.0), windows


@pytest.mark.parametrize("latency", [1.0, 2.0])
def test_with_answers_of_seconds_each_window_goes_at_what_it_lets_through(latency: float) -> None:
    """Answers of 1 and 2 s, 99 a window of 10 s, 350 requests: the window's rate let through is
    far under what the count allows, but the pace grows on from it: each full window's requests
    after the first within 6 s, all by 60 s (ration4: 50.2 and 53.4 s; win2: 179.7 and 261.9 s,
    some 10 and 5 a window after the first refusal)."""
    service = Minute(rpm=100, window=10.0, latency=latency)
    windows = answered_by_window(service, 350, Places(0, patience=Patience(3600)))
    assert service.answered == 350
    assert quick(windows, 90, 6.0), windows
    assert max(max(moments) for moments in windows.values()) < 60.0


def test_a_proxy_whose_window_turns_late_refuses_the_lone_request_again_and_nothing_is_cut() -> None:
    """The proxy's windows turn 1.5 s after its Retry-After says: the request sent alone after
    the wait meets the same count, used up, and is refused again, a second at a time. Those
    refusals are counted out too, and cut nothing: at most 3 a window, each window's requests
    within a second (ration4: 8 refusals, 32.5 s; win2: 2 refusals, windows at 10 a second,
    38.3 s)."""
    service = Late()
    windows = answered_by_window(service, 450, Places(0, patience=Patience(3600)))
    assert service.answered == 450
    assert max(service.refusals.values()) <= 3, service.refusals
    assert quick(windows, 10, 1.0), windows


def test_two_participants_on_one_model_each_go_as_quickly_in_the_next_minute() -> None:
    """The user and the judge on one model with one rpm of 300 a minute, behind one key, 450 and
    300 requests: each minute's requests within a second (ration4: 122.2 s in all; win2: the
    second minute's in 13 s, 140.9 s)."""
    service = Minute(rpm=300, window=60.0)
    services = Services()
    user = Places(0, "user", patience=Patience(3600), services=services)
    judge = Places(0, "judge", patience=Patience(3600), services=services)
    answered: dict[int, list[float]] = {}

    async def one(places: Places) -> None:
        await places.sent(service)
        moment = asyncio.get_running_loop().time() - START
        answered.setdefault(int(moment // service.window), []).append(moment)

    async def main() -> None:
        await asyncio.gather(*(one(user) for _ in range(450)), *(one(judge) for _ in range(300)))

    in_virtual_time(main)
    assert service.answered == 750
    assert max(service.refusals.values()) <= 2, service.refusals
    assert quick(answered, 10, 1.0), answered


def test_an_outage_as_the_window_turns_is_tried_a_request_a_second_and_left_at_full_pace() -> None:
    """503s (Retry-After 1 s) from the window's turn at 10 s to 20 s, while the participant sends
    one request at a time, nothing being left: each refusal is counted out, 10 in all, and the
    windows after go as quickly as the first (ration4: 42.9 s; win2: 86.5 s, some 38 a window)."""
    service = Outage(10.0, 20.0)
    windows = answered_by_window(service, 350, Places(0, patience=Patience(3600)))
    assert service.answered == 350
    assert service.out <= 11, service.out
    assert quick(windows, 10, 1.0), windows


@pytest.mark.xfail(
    strict=True,
    reason="ration4 (3c94f87): 503s from 11 s, once the next window's sends were under way at "
    "its pace (some 150 a second), are tried 23 times in 9 s, 2 to 3 at each 1 s pause, where "
    "win2 (10 a second after the count's cut) tried them 9 times; 44.9 s in all where win2 78.6. "
    "With answers of 2 s to the outage's requests, 80 where 40. The cost of the quicker pace "
    "(a refusal is not news until the one before it came back), not of a misread limit.",
)
def test_an_outage_once_the_next_window_opened_is_tried_a_request_a_second() -> None:
    """503s (Retry-After 1 s) from 11 s to 20 s, the window turned and its requests under way."""
    service = Outage(11.0, 20.0)
    answered_by_window(service, 350, Places(0, patience=Patience(3600)))
    assert service.answered == 350
    assert service.out <= 10, service.out


# ------------------------------------------------------------------ a second limit after the count


@pytest.mark.parametrize("after", [11.0, 11.3])
def test_a_limit_on_requests_at_once_that_begins_during_a_windows_burst_is_respected(after: float) -> None:
    """350 requests, 99 a window of 10 s, the model carrying 8 at once from ``after`` on, while the
    second window's burst is under way (10.87 to 11.48 s): its first refusal finds 12 and 17 of the
    participant's requests under way, sent before it began, and bounded by them the pace was
    over the 80 a second it carries (119 and 168), found, cut a tenth each 5 s pause: 16 and 25
    refusals, 54.4 and 68.8 s (ration4, 3c94f87). Bounded again at its second refusal, by the 8
    then under way: 7 and 9, 44.4 and 33.8 s (win2: 0, 46.1 s)."""
    service = Crowded(after)
    windows = answered_by_window(service, 350, Places(0, patience=Patience(3600)))
    assert service.answered == 350
    assert service.crowded <= 10, service.crowded
    assert max(max(moments) for moments in windows.values()) < 47.0


def test_a_limit_on_requests_at_once_behind_a_late_window_is_respected() -> None:
    """450 requests, 99 a window of 10 s turning a second late, the model carrying 8 from 12 s: its
    first refusal finds 17 under way, sent before it began (ration4: bounded at 168 a second,
    found, 28 refusals, 61.6 s); bounded again at the second, 9 refusals, 32.6 s (win2: 0,
    38.3 s)."""
    service = CrowdedLate(12.0, 1.0)
    windows = answered_by_window(service, 450, Places(0, patience=Patience(3600)))
    assert service.answered == 450
    assert service.crowded <= 10, service.crowded
    assert max(max(moments) for moments in windows.values()) < 40.0


def test_a_rate_limit_met_after_the_count_with_answers_of_a_second_is_not_held_to_what_was_under_way() -> None:
    """Answers of 1 s, 299 a window of 10 s, then a rate limit of 20 a second (burst 3) from 12 s,
    600 requests: its first refusal finds 3 under way, and the pace is held to 3 a latency, 2.97
    a second, under the 87.8 ``taught`` found, not growing. Found there, it grew back 0.05% a
    second, some 30 a window for the rest of the run: 119.2 s (ration4, 3c94f87). Grown back
    toward what was found once ten of the limit's pauses went by: 47.8 s (win2 43.4 s)."""
    service = Bucketed(12.0, 20.0, 3.0)
    service.rpm, service.latency = 300, 1.0
    windows = answered_by_window(service, 600, Places(0, patience=Patience(3600)))
    assert service.answered == 600
    assert max(max(moments) for moments in windows.values()) < 60.0


@pytest.mark.xfail(
    strict=True,
    reason="ration4 (3c94f87): answers of 1 s, 99 a window of 10 s, a strict limit of 10 a "
    "second (burst 1) from 12 s: its first refusal finds 1 under way, the pace held to 0.99 a "
    "second, growing a step an answer (an answer a second): the windows after 12 and 27, "
    "63.99 s in all; win2 50.11 s (69 and 89), ration4 before beside_count 48.34 s.",
)
def test_a_strict_limit_met_after_the_count_with_answers_of_a_second_is_not_held_to_one_a_second() -> None:
    """350 requests; win2 ends by 50.1 s."""
    service = Bucketed(12.0, 10.0, 1.0)
    service.latency = 1.0
    windows = answered_by_window(service, 350, Places(0, patience=Patience(3600)))
    assert service.answered == 350
    assert max(max(moments) for moments in windows.values()) < 55.0


@pytest.mark.parametrize(("rate", "burst"), [(20.0, 1.0), (50.0, 1.0), (30.0, 3.0), (100.0, 2.0)])
def test_a_rate_limit_met_after_the_count_with_quick_answers_costs_a_few_refusals(rate: float, burst: float) -> None:
    """Answers of 0.1 s, 350 requests, buckets of 20 to 100 a second from 12 s: at most 5
    refusals of the bucket, all within 42 s (ration4: 1 to 4 refusals, 37.7 to 41.9 s; win2: 0
    refusals, 46.1 s, every window at 10 a second)."""
    service = Bucketed(12.0, rate, burst)
    windows = answered_by_window(service, 350, Places(0, patience=Patience(3600)))
    assert service.answered == 350
    assert service.crowded <= 5, service.crowded
    assert max(max(moments) for moments in windows.values()) < 42.0


def test_a_limit_at_once_met_after_the_count_by_two_participants_on_its_model_costs_a_few_refusals() -> None:
    """The user (no cap) and the judge (6 places) on one model carrying 8 at once from 12 s, 250 and
    100 requests: at most 5 of the model's refusals (ration4: 4, 39.2 s in all; win2: 0, 34.8 s,
    1.13x quicker: the refusals' one 5 s pause, the trade ration4 makes alone too)."""
    service = Crowded(12.0)
    services = Services()
    user = Places(0, "user", patience=Patience(3600), services=services)
    judge = Places(6, "judge", patience=Patience(3600), services=services)

    async def main() -> None:
        await asyncio.gather(*(user.sent(service) for _ in range(250)), *(judge.sent(service) for _ in range(100)))

    in_virtual_time(main)
    assert service.answered == 350
    assert service.crowded <= 5, service.crowded
