"""A service that says what is left of its limit but not when more comes, as LiteLLM's proxy does
of a model's ``rpm`` (``x-ratelimit-remaining-requests`` and ``-limit-`` with no reset): once
nothing is left, a participant sends one request at a time, not every request under way into
the limit.

Played in virtual time (``clock.in_virtual_time``): the seconds are the event loop's, the same on a
fast or a loaded machine."""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from support.clock import START, in_virtual_time

from convy.busy import Busy, Patience, Places
from convy.http import RateHeaders
from convy.quota import TOLD, Heard, Left, NoQuota, Quota, Ration, Services


@pytest.mark.parametrize(
    ("headers", "heard"),
    [
        # LiteLLM's proxy on a model with an rpm: its own count, no reset.
        ({"x-ratelimit-remaining-requests": "15", "x-ratelimit-limit-requests": "16"}, Heard(Left(15, 16), NoQuota())),
        ({"x-ratelimit-remaining-requests": "3"}, Heard(Left(3, 0), NoQuota())),
        ({"x-ratelimit-remaining-tokens": "900", "x-ratelimit-limit-tokens": "1000"}, Heard(NoQuota(), Left(900, 1000))),
        # With a reset, what is left and when it is whole again, as before.
        (
            {"x-ratelimit-remaining-requests": "15", "x-ratelimit-limit-requests": "16", "x-ratelimit-reset-requests": "1s"},
            Heard(Quota(15, 1.0, 16), NoQuota()),
        ),
        # A reset without what is left says nothing; nor does a remaining that is not a number.
        ({"x-ratelimit-reset-requests": "1s"}, Heard()),
        ({"x-ratelimit-remaining-requests": "many"}, Heard()),
    ],
)
def test_what_is_left_is_read_with_or_without_a_reset(headers: dict[str, str], heard: Heard) -> None:
    assert RateHeaders(httpx2.Headers(headers)).heard() == heard


def test_what_is_left_without_a_reset_tells_no_time() -> None:
    """Only a ``Quota`` is quoted: what the meters pace on, with a time. A refusal that said what
    is left without a reset would otherwise be sent again at once, as at a reset of 0."""
    assert not Heard(Left(0, 16), NoQuota()).quoted()
    assert Heard(Left(0, 16), Quota(5, 1.0)).quoted()


def test_a_ration_is_dry_at_its_last_unit_and_opens_at_a_newer_answer() -> None:
    """Sends after the one answered take what it said is left, but its last unit (LiteLLM's router
    refuses after "1 left"); an older answer changes nothing, one that says no ``Left`` ends it."""
    ration = Ration()
    assert not ration.dry(0), "nothing said: never dry"
    ration.heard(0, Left(15, 16))
    assert [ration.dry(sends) for sends in (1, 14, 15)] == [False, False, True]
    ration.heard(14, Left(1, 16))
    assert ration.dry(15)
    ration.heard(3, Left(12, 16))
    assert ration.dry(15), "an older answer is not news"
    ration.heard(15, Left(15, 16))
    assert not ration.dry(16), "the window turned: more is left"
    ration.heard(16, NoQuota())
    assert not ration.dry(1000)


def test_a_ration_takes_what_is_left_for_the_sends_before_the_answered_one_still_under_way() -> None:
    """An answer's count may leave out a request sent before the one answered and still under way
    (LiteLLM's proxy counts the requests it has answered): taken from what it says is left, as
    the sends after the answered one are."""
    ration = Ration()
    ration.heard(9, Left(7, 16))
    assert [ration.dry(sends) for sends in (15, 16)] == [False, True], "nothing before it under way"
    ration = Ration()
    ration.heard(9, Left(7, 16), (6, 8, 10, 11))
    assert [ration.dry(sends) for sends in (13, 14)] == [False, True], "6 and 8 under way, taken"
    ration.heard(8, Left(6, 16), (6, 10, 11))
    assert ration.dry(14), "an older answer is not news"
    ration.heard(12, Left(3, 16), (6, 13))
    assert [ration.dry(sends) for sends in (13, 14)] == [False, True], "6 still under way"


class Minute:
    """A service in virtual time with LiteLLM's router's ``rpm``: counted per window of ``window``
    seconds from the start, each lets through ``rpm - 1`` requests, saying what is left of its own
    count (no reset) on each answer, and refuses the rest with a fixed Retry-After of a whole
    window, whatever is left of it, a little sooner than it answers (``refusing``): the requests
    sent meanwhile reach it refused too. It notes the windows of the refusals."""

    def __init__(self, rpm: int = 20, window: float = 60.0, latency: float = 0.1, refusing: float = 0.02) -> None:
        self.rpm, self.window, self.latency, self.refusing = rpm, window, latency, refusing
        self.counts: dict[tuple[str, int], int] = {}
        self.refusals: dict[tuple[str, int], int] = {}
        self.answered = 0

    async def __call__(self, group: str = "") -> str:
        """A request to the model ``group``: each group has an rpm of its own, behind one key."""
        told = TOLD.get()
        if told is not None:
            told.service = "the proxy"
        which = int((asyncio.get_running_loop().time() - START) // self.window)
        count = self.counts.get((group, which), 0)
        if count + 1 >= self.rpm:
            self.refusals[(group, which)] = self.refusals.get((group, which), 0) + 1
            await asyncio.sleep(self.refusing)
            raise Busy("429 Too Many Requests", self.window)
        self.counts[(group, which)] = count + 1
        await asyncio.sleep(self.latency)
        if told is not None:
            told.heard = RateHeaders({
                "x-ratelimit-remaining-requests": str(self.rpm - count - 1),
                "x-ratelimit-limit-requests": str(self.rpm),
            }).heard()
        self.answered += 1
        return "answer"


def test_a_limit_said_without_a_reset_refuses_one_request_a_window_not_all_under_way() -> None:
    """40 requests with 8 places against 19 a window: three windows, and at the end of each of the
    first two one request refused, the one sent alone once nothing was left, whose refusal told the
    wait. Sent as before, every request sent past the window's count before the first refusal came
    back was refused: 6 at the end of the first window, 2 at the end of the second."""
    service = Minute()
    places = Places(8, patience=Patience(600))

    async def main() -> None:
        await asyncio.gather(*(places.sent(service) for _ in range(40)))

    in_virtual_time(main)
    assert service.answered == 40
    assert service.refusals == {("", 0): 1, ("", 1): 1}
    assert places.refused == 2


def test_what_is_left_is_each_participants_own_on_a_key_shared_with_another_limit() -> None:
    """Behind LiteLLM's proxy, one key reaches the simulated user's model and the judge's, each
    with an rpm of its own, and each answer says what is left of its own model's. The judge's
    answers, saying plenty is left of its own, do not open the user's: the user meets one refusal
    a window, as alone."""
    service = Minute()
    services = Services()
    user = Places(8, "user", patience=Patience(600), services=services)
    judge = Places(2, "judge", patience=Patience(600), services=services)

    async def main() -> None:
        await asyncio.gather(
            *(user.sent(lambda: service("user")) for _ in range(40)),
            *(judge.sent(lambda: service("judge")) for _ in range(12)),
        )

    in_virtual_time(main)
    assert service.answered == 52
    assert {key: count for key, count in service.refusals.items() if key[0] == "user"} == {("user", 0): 1, ("user", 1): 1}


class Answered(Minute):
    """``Minute`` as LiteLLM's proxy counts what it says is left: its router counts a request as it
    lets it through, and refuses by that count, but what an answer says is left is of the requests
    it has answered by then. The answers take ``latencies`` in turn, so that one sent later may
    come back before one sent earlier and still under way, whose request its count leaves out."""

    def __init__(self, latencies: tuple[float, ...], rpm: int = 20, window: float = 60.0) -> None:
        super().__init__(rpm, window)
        self.latencies = latencies
        self.done: dict[tuple[str, int], int] = {}

    async def __call__(self, group: str = "") -> str:
        told = TOLD.get()
        if told is not None:
            told.service = "the proxy"
        which = int((asyncio.get_running_loop().time() - START) // self.window)
        count = self.counts.get((group, which), 0)
        if count + 1 >= self.rpm:
            self.refusals[(group, which)] = self.refusals.get((group, which), 0) + 1
            await asyncio.sleep(self.refusing)
            raise Busy("429 Too Many Requests", self.window)
        self.counts[(group, which)] = count + 1
        await asyncio.sleep(self.latencies[count % len(self.latencies)])
        done = self.done[(group, which)] = self.done.get((group, which), 0) + 1
        if told is not None:
            told.heard = RateHeaders({
                "x-ratelimit-remaining-requests": str(self.rpm - done),
                "x-ratelimit-limit-requests": str(self.rpm),
            }).heard()
        self.answered += 1
        return "answer"


def test_requests_still_under_way_that_were_sent_before_the_one_answered_are_counted_as_taken() -> None:
    """Answered out of the order they were sent, the answer to one request says what is left of a
    count that leaves out requests sent before it and still under way. Each of those is counted as
    taken from what it says is left, as those sent after it are: at the end of each window one
    request is refused, alone. Counted as taken only from the answered one on, as before, one more
    request went past the window's count for each, and all were refused."""
    service = Answered((0.5, 0.1, 0.5, 0.2, 0.3))
    places = Places(8, patience=Patience(600))

    async def main() -> None:
        await asyncio.gather(*(places.sent(service) for _ in range(40)))

    in_virtual_time(main)
    assert service.answered == 40
    assert service.refusals == {("", 0): 1, ("", 1): 1}
    assert places.refused == 2


def test_after_a_windows_refusal_the_next_windows_requests_go_as_quickly_as_the_first_windows() -> None:
    """150 requests against 99 a window of 10 s, places growing from the start's: the first
    window's 99 go in 0.65 s, then the one sent alone once nothing was left is refused and the
    participant waits the window out; the second window's 51 then go as quickly, all answered
    within 0.4 s of its first, at the pace the first window's let through (11.27 s in all). The refusal is the count used up, not a pace or places
    past what the service carries: cut for it, as before, they stayed cut after the wait, and the
    51 took 5 s (15.91 s in all; LiteLLM's 300 a minute: the second minute's 151 in 15 s)."""
    service = Minute(rpm=100, window=10.0)
    places = Places(0, patience=Patience(600))
    answered: list[float] = []

    async def one() -> None:
        await places.sent(service)
        answered.append(asyncio.get_running_loop().time() - START)

    async def main() -> None:
        await asyncio.gather(*(one() for _ in range(150)))

    in_virtual_time(main)
    assert service.refusals == {("", 0): 1}
    second = sorted(moment for moment in answered if moment >= 10.0)
    assert len(second) == 51
    assert second[-1] - second[0] < 0.5, (second[0], second[-1])


def answered_by_window(service: Minute, requests: int, places: Places) -> dict[int, list[float]]:
    """The moments ``requests`` requests through ``places`` were answered, by the service's window."""
    answered: dict[int, list[float]] = {}

    async def one() -> None:
        await places.sent(service)
        moment = asyncio.get_running_loop().time() - START
        answered.setdefault(int(moment // service.window), []).append(moment)

    async def main() -> None:
        await asyncio.gather(*(one() for _ in range(requests)))

    in_virtual_time(main)
    return answered


def test_answered_out_of_order_the_next_windows_requests_still_go_as_quickly_as_the_first_windows() -> None:
    """As the last test, with answers that come back out of the order they were sent (``Ration``'s
    ``older``): 250 requests against 99 a window of 10 s, one refusal a window, and each window's
    requests answered within a second of its first. Cut at each window's refusal, as before 69521f3,
    the pace fell to some 20 a window (86.6 s in all, where 26.3 s with the refusal left uncut)."""
    service = Answered((0.5, 0.1, 0.5, 0.2, 0.3), rpm=100, window=10.0)
    windows = answered_by_window(service, 250, Places(0, patience=Patience(600)))
    assert service.answered == 250
    assert sorted(windows) == [0, 1, 2]
    assert all(moments[-1] - moments[0] < 2.0 for moments in windows.values()), windows
    assert sum(service.refusals.values()) == len(service.refusals) == 2


def test_each_participants_next_window_goes_as_quickly_on_a_key_shared_with_another_limit() -> None:
    """The simulated user's and the judge's models behind one proxy key, each with 39 a window of
    10 s: each participant's refusal is its own count used up, and neither's cuts the pace they
    share. 150 requests each go in four windows, each window's within a second (33.3 s in all;
    cut at each refusal, as before 69521f3, five windows and 47.0 s, a window's 39 in 5.4 s)."""
    service = Minute(rpm=40, window=10.0)
    services = Services()
    user = Places(0, "user", patience=Patience(600), services=services)
    judge = Places(0, "judge", patience=Patience(600), services=services)
    answered: dict[tuple[str, int], list[float]] = {}

    async def one(places: Places, group: str) -> None:
        await places.sent(lambda: service(group))
        moment = asyncio.get_running_loop().time() - START
        answered.setdefault((group, int(moment // service.window)), []).append(moment)

    async def main() -> None:
        await asyncio.gather(*(one(user, "user") for _ in range(150)), *(one(judge, "judge") for _ in range(150)))

    in_virtual_time(main)
    assert service.answered == 300
    assert {window for _, window in answered} == {0, 1, 2, 3}
    assert all(moments[-1] - moments[0] < 1.0 for moments in answered.values()), answered


class Outage(Minute):
    """``Minute`` with an outage: from ``start`` to ``end`` every request is refused at once with a
    Retry-After of a second, as a proxy passes on its overloaded model's 503s."""

    def __init__(self, start: float, end: float, rpm: int = 100, window: float = 10.0) -> None:
        super().__init__(rpm, window)
        self.start, self.end = start, end
        self.out = 0

    async def __call__(self, group: str = "") -> str:
        if self.start <= asyncio.get_running_loop().time() - START < self.end:
            self.out += 1
            await asyncio.sleep(self.refusing)
            raise Busy("503 Service Unavailable", 1.0)
        return await super().__call__(group)


def test_an_outage_met_once_nothing_is_left_is_tried_one_request_a_second_and_left_at_full_pace() -> None:
    """An outage from the moment the first window's count ran out (0.7 s) to 20 s: the participant,
    sending one request at a time once nothing was left, meets one refusal a second of it, not
    every request under way; after it, the windows' requests go as quickly as the first's. Each
    refusal cut the pace before 69521f3 (the same 19 refusals, then some 17 a window: 110.9 s in
    all, where 31.4 s uncut). A refusal through the outage ends nothing of the pace: nothing was let
    through since the last pause to tell a rate (made up as one request per latency, 10 a second,
    the next window's 99 took 2.7 s)."""
    service = Outage(0.7, 20.0)
    windows = answered_by_window(service, 250, Places(0, patience=Patience(600)))
    assert service.answered == 250
    assert service.out <= 20
    assert all(moments[-1] - moments[0] < 1.0 for moments in windows.values()), windows


class Crowded(Minute):
    """``Minute`` whose model, from ``after`` seconds on, carries only ``carries`` requests at once
    and refuses the rest with a Retry-After of ``wait`` (a second limit behind the proxy's count:
    its model's own, passed on), while the proxy's answers still say what is left of its count."""

    def __init__(self, after: float, carries: int = 8, wait: float = 5.0) -> None:
        super().__init__(rpm=100, window=10.0)
        self.after, self.carries, self.wait = after, carries, wait
        self.under_way = self.crowded = 0

    async def __call__(self, group: str = "") -> str:
        if asyncio.get_running_loop().time() - START >= self.after and self.under_way >= self.carries:
            self.crowded += 1
            await asyncio.sleep(self.refusing)
            raise Busy("429 Too Many Requests", self.wait)
        self.under_way += 1
        try:
            return await super().__call__(group)
        finally:
            self.under_way -= 1


@pytest.mark.parametrize(("carries", "after"), [(8, 12.0), (2, 12.0), (8, 25.0)])
def test_a_second_limit_met_after_a_windows_refusal_is_respected_at_its_first_refusal(
    carries: int, after: float
) -> None:
    """350 requests against 99 a window of 10 s, the model behind carrying only ``carries`` at once
    from ``after`` seconds on (its own 429, Retry-After 5 s): the pace's opening ends at the first
    window's refusal, at what that window let through (151 a second), and the model's first
    refusal comes while ``carries`` of the participant's requests sent before it are under way:
    from then on the pace is at most that many a latency, and the model refuses only the
    requests sent before its first refusal came back (4 each; 38.8, 34.2 and 38.0 s in all).
    Read as a rate alone, the sends let through since the pause as quick as the refused one, the
    pace was found 1% under 160 a second and cut a tenth at each 5 s pause: 27, 45 and 21
    refusals, 68.7, 148.9 and 63.0 s (ration4 before ``refusals.beside_count``). Left opening
    (69521f3), the pace grew with the places to some 10^6 a second and every pause ended in a
    burst of 47 into the model: 648 refusals, 111.8 s. Before 69521f3, 0 and 46.1 s: the pace
    made up from the sends the Ration held, 10 a second, was under what the model carries, and
    so was every window's (bench/crowded.py)."""
    service = Crowded(after, carries)
    answered_by_window(service, 350, Places(0, patience=Patience(600)))
    assert service.answered == 350
    assert service.crowded <= 5, service.crowded


class Bucketed(Minute):
    """``Minute`` behind which, from ``after`` seconds on, a bucket of ``rate`` a second and ``burst``
    refuses what it has no unit for with a Retry-After of a second (a rate limit behind the
    proxy's count: its model's own, passed on)."""

    def __init__(self, after: float, rate: float, burst: float) -> None:
        super().__init__(rpm=100, window=10.0)
        self.after, self.rate, self.burst = after, rate, burst
        self.units, self.filled, self.crowded = burst, 0.0, 0

    async def __call__(self, group: str = "") -> str:
        now = asyncio.get_running_loop().time() - START
        if now >= self.after:
            self.units = min(self.burst, self.units + (now - self.filled) * self.rate)
            if self.units < 1:
                self.crowded += 1
                await asyncio.sleep(self.refusing)
                raise Busy("429 Too Many Requests", 1.0)
            self.units -= 1
        self.filled = now
        return await super().__call__(group)


def test_a_rate_limit_met_after_a_windows_refusal_is_not_held_to_what_was_under_way() -> None:
    """As the last test, with a bucket of 50 a second (burst 5) behind the count from 12 s on
    rather than a limit on requests at once: its first refusal holds the pace to the 6 then under
    way a latency (59 a second), a little over its rate, where its next refusals find it as any
    (``taught``), and the last window's 53 go at it (within 1.1 s), 4 refusals in all. Read as a
    rate alone, the pace found 1% under 160 a second and cut a tenth at each pause, it was refused
    18 times, the last window's 82 in 5.3 s."""
    service = Bucketed(12.0, 50.0, 5.0)
    windows = answered_by_window(service, 350, Places(0, patience=Patience(600)))
    assert service.answered == 350
    assert service.crowded <= 5, service.crowded
    last = windows[max(windows)]
    assert len(last) > 50 and last[-1] - last[0] < 1.5, (len(last), last[0], last[-1])
