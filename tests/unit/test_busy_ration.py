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
