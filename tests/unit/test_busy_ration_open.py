"""A pace still opening when a second limit first refuses, behind a proxy's count per window that
says what is left of the requests it has answered (LiteLLM's, ``test_busy_ration.Answered``): with
answers of a second, each window's count says plenty is left until late, nothing holds the sends
to one at a time, and no count's refusal ends the opening before a rate limit behind the proxy
refuses. Found by a reviewer on win2, ration4 and rev15 alike.

Played in virtual time (``clock.in_virtual_time``): the seconds are the event loop's, the same on a
fast or a loaded machine."""

from __future__ import annotations

import asyncio

from support.clock import START, in_virtual_time
from test_busy_ration import Answered, Bucketed

from convy.busy import Patience, Places


class Rated(Bucketed, Answered):
    """``Answered``'s count of ``rpm`` a window of ``window`` s, answers of ``latency``, behind which,
    from ``after`` seconds on, a bucket of ``rate`` a second and ``burst`` refuses what it has no
    unit for with a Retry-After of a second (the model's own rate limit, passed on), as
    ``test_busy_ration.Bucketed`` does behind ``Minute``: its bucket, before ``Answered``'s count."""

    def __init__(
        self, after: float, rate: float, burst: float, rpm: int = 1000, window: float = 10.0, latency: float = 1.0
    ) -> None:
        Answered.__init__(self, (latency,), rpm, window)
        self.after, self.rate, self.burst = after, rate, burst
        self.units, self.filled, self.crowded = burst, 0.0, 0


def played(service: Rated, requests: int) -> float:
    """The wall of ``requests`` requests through places with no cap, against ``service``."""

    async def main() -> float:
        places = Places(0, patience=Patience(3600))
        await asyncio.gather(*(places.sent(service) for _ in range(requests)))
        return asyncio.get_running_loop().time() - START

    wall: float = in_virtual_time(main)
    return wall


def test_an_opening_pace_is_not_grown_past_what_the_places_could_send() -> None:
    """3,000 requests against 999 a window of 10 s, answers of a second, and a bucket of 20 a
    second (burst 3) behind the count from 12 s on. The opening pace grew a step at every answer
    while the places, not it, held the requests back (the places' release at an answer spaced two
    sends by its gap, however small): some 1,000 answers took it to 1e22 a second, the bucket's
    first refusal found no two sends let through at distinct moments and halved it, and so did
    each pause after, some 70 of them, each ending in a burst of the places' worth into the bucket:
    31,221 refusals, 177.4 s. Grown only while under what the places could send in a latency
    (``answers.climbed``), 64 refusals, 58 of them the sends of the 20 ms the first took to come
    back, then one at each of six pauses, 106.1 s. Once answers of a second counted (slow1), the
    opening's refusal found the pace from the bucket's burst, 3,014 a second, cut a tenth at each
    pause after: 674 refusals, 140.8 s. Now sends let through at the pace's own gaps, the refused
    one no quicker, tell no rate (``refusals.opening_refused``: the pace is taken at 603 a
    second, 3,044 over the five sends counted at its gaps, more than the 497 answered in a
    second), and the burst each pause saves up cuts it by its number (``gaps.saved_up``):
    82 refusals, 105.7 s (the opening alone, cut a tenth a pause after, 169 and 127.1 s)."""
    service = Rated(12.0, 20.0, 3.0)
    wall = played(service, 3000)
    assert service.answered == 3000
    assert service.crowded < 100, service.crowded
    assert wall < 120.0, wall


def test_a_pace_found_from_a_buckets_burst_is_not_cut_a_tenth_a_pause_down_to_its_rate() -> None:
    """As the last test with answers of 0.98 s. Until slow1, answers of exactly a second were all
    trimmed from the last second's at once (``Pace.heard`` trimmed from the answer's moment), the
    opening's refusal saw at most one answered in a second and made the pace up at one a latency,
    doubling from there; here, and now there too, it finds it from the sends let through just
    before, the bucket's burst, at the pace they were let go at, far over the bucket's rate: 627
    refusals, 119.0 s (3,076 a second cut a tenth a pause, some 47 pauses); now the pace is taken
    at 1,025 a second (a burst of three after a lull), cut by the burst at the next pauses: 37
    refusals, 85.5 s."""
    service = Rated(12.0, 20.0, 3.0, latency=0.98)
    wall = played(service, 3000)
    assert service.answered == 3000
    assert service.crowded < 100, service.crowded
    assert wall < 120.0, wall
