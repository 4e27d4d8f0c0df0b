"""A token bucket with a burst that tells nothing (only 429 and a ``Retry-After``), answers of a
second or more (issue 27: at most 1% refused for strict buckets of burst 1 to 20). The opening's
refusal finds the pace from the gaps of the sends the bucket's saved-up burst let through, far
over its rate (245 a second against 50, burst 10); each pause then saves up a burst that lets that
pace through for a tenth of a second, refused again, and cut a tenth a pause the pace took some
14 refusals of 500 to come down. Refused twice in a row within a second of a pause, over the most
the service answered of the sends of one second, the pace is cut to that most
(``refusals.drained``). Each case runs in virtual time (``clock.in_virtual_time``), through
``bench/bare_virtual.py``'s way to the wire, seeded (``bench/slow_answers.py``'s shapes)."""

from __future__ import annotations

import pytest
from test_busy_ahead_review import median_wall
from test_busy_slow_review import run, wired

WAYS = range(1, 7)


@pytest.mark.parametrize(
    ("burst", "latency"),
    [
        (5, 1.0),
        (10, 1.0),
        (20, 1.0),
        (5, 2.0),
    ],
)
def test_a_bucket_with_a_burst_is_refused_at_most_one_request_in_a_hundred(burst: int, latency: float) -> None:
    """500 requests of one participant against a bucket of 50 a second, answers of 1 or 2 s: at
    most 5 refusals in each of 6 ways. Before burst1, cut a tenth a pause: burst 5, 1 s 5-10
    refusals (now 3-4); burst 10, 1 s 1-14 (1-4); burst 20, 1 s 1-10 (1-5); burst 5, 2 s 1-10
    (1-5)."""
    for seed in WAYS:
        wall, refused = run(wired(burst, latency, seed), 500)
        assert refused <= 5, f"way {seed}: {refused} refusals, {wall:.2f} s"


def test_a_burst_of_twenty_on_each_key_of_a_project() -> None:
    """125 attempts, each participant on a bucket of 50 a second, burst 20, of its own that tells
    nothing (``test_busy_ahead_review``'s shape): the median way within 14.5 s, 13.73 now where
    the pace cut a tenth a pause took 17.53."""
    wall = median_wall(125, burst=20.0)
    assert wall <= 14.5, f"{wall:.2f} s"
