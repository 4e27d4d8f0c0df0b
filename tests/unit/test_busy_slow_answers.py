"""A service that answers in a second or more, where it says nothing but a 429: what the pace
finds of its limit from the sends it let through (``quota.Pace.most``).

Real models answer in 1 to 10 s. ``Pace.most`` is the most answered requests sent within one
second; it counted the answers whose send moments lay in the second before the answer came, so an
answer that took a second or more was trimmed as it came, and none ever counted. The opening's
refusal then took the limit for under a request per latency (0.9 a second against a bucket of
50, answers of 1 s) and climbed from there. Every case runs in virtual time, one participant
against a strict bucket that tells nothing (``standin.Bucket`` without headers, burst 1,
``Retry-After: 1``), reached through seeded ways to the wire of up to 8 ms (``Wired``)."""

from __future__ import annotations

import asyncio
import statistics

import pytest
from support.clock import in_virtual_time
from support.standin import Bucket
from test_busy_bare import Wired

from convy.answers import counted
from convy.busy import Patience, Places
from convy.quota import Send, Service

WAYS = range(1, 7)


def lone(latency: float, places: int, seed: int, requests: int = 500, rate: float = 50) -> tuple[float, int]:
    """``requests`` requests of one participant with ``places`` (0: they grow), sent at once,
    against a strict bucket of ``rate`` a second answering in ``latency``: the virtual seconds
    they took and the refusals."""
    key = Wired(Bucket(rate, 1, headers=False), "k", seed)
    key.latency = latency

    async def main() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        sender = Places(places, patience=Patience(600))
        await asyncio.gather(*(sender.sent(key) for _ in range(requests)))
        return loop.time() - start

    wall: float = in_virtual_time(main)
    return wall, key.refused


@pytest.mark.parametrize("latency", [0.5, 1.0, 2.0, 5.0])
def test_answers_that_take_a_second_or_more_count_among_those_let_through(latency: float) -> None:
    """Requests sent 50 a second, each answered ``latency`` later: the most sent within a second
    and answered is 50 (51 sends span a second), whatever the latency. At open1, 1 for answers of
    1 s (each trimmed as it came, but for the one on the second's edge), 0 for 2 s and 5 s, 26
    for 0.5 s (the half second of sends before the answer)."""
    service = Service()
    for number in range(300):
        sent = number / 50
        counted(service, Send(service, number, sent), sent + latency, 4, 0, False)
    pace = service.pace
    assert pace.most in (50, 51), pace.most


def test_a_slow_service_s_opening_refusal_finds_the_pace_from_the_sends_let_through() -> None:
    """500 requests of one participant whose places grow, against a strict bucket of 50 a second
    answering in a second: the opening's refusal finds the pace near the limit from the sends let
    through (about 48 a second), not one a latency (0.9) climbing back through more refusals.
    Each way refused once or twice, within 27 s (25.2 to 26.3 s, 1 to 2 refusals; open1 32.0 to
    35.0 s, 3 to 6 refusals: the opening's refusal made the pace up at 0.9 a second, and a refusal
    came each time the climb from there passed the limit). What is left of the floor (11 s) is the
    places: after the refusal they widen by one a round of answers, a second here (17 places at
    the refusal, 33 at the end)."""
    for seed in WAYS:
        wall, refused = lone(1.0, 0, seed)
        assert refused <= 2, f"way {seed}: {refused} refusals"
        assert wall <= 27.0, f"way {seed}: {wall:.2f} s"


@pytest.mark.xfail(strict=True, reason="the opening's refusal at the second send, one answer heard")
@pytest.mark.parametrize("latency", [0.5, 1.0, 2.0])
def test_enough_places_for_a_slow_service_come_near_the_floor(latency: float) -> None:
    """500 requests with 200 places (enough for 50 a second answered in 2 s) against a strict
    bucket of 50 a second answering in ``latency``: the median way within 1.15 x the floor
    (500 / 50 + latency). Not yet, and not for slow answers alone: the opening pace (200 places
    over the first answer's latency, 100 to 400 a second) is refused at its second or third send,
    when the lone first answer is all that was heard, so ``Pace.most`` is 1 however it counts,
    and the pace is made up at one a latency (0.9 a second for 1 s), from which it climbs to the
    limit in some 6 s, doubling about once a latency. 0.5 s: 16.5 to 16.7 s (1.57 to 1.59 x),
    1 s: 18.2 to 19.3 s (1.66 to 1.76 x), 2 s: 23.2 s (1.93 x), 2 to 4 refusals, the same before
    and after counting the answers by their send moments."""
    walls = [lone(latency, 200, seed)[0] for seed in WAYS]
    floor = 500 / 50 + latency
    assert statistics.median(walls) <= 1.15 * floor, f"{statistics.median(walls):.2f} s against {floor:.1f}"
