"""A bucket whose limit is a handful of requests, telling what is left in ``x-ratelimit-*`` headers:
its words with some left, read as a window's, are far quicker than the bucket.

A bucket of 50 a second saving up 5 (``bench/busy.py``'s ``p-b5@3000``) says "4 left, whole in
20 ms" of a request sent when it was full. Read as a window of 5 requests, that is 250 a second;
whole numbers this small never tell a bucket from a window (``quota.Meter._rate``). So after each
pause, when the bucket had grown full, convy sent at five times the limit and was refused a dozen
times in 100 ms (a trace of the wall-clock bench, one run in four; in virtual time, every seeded
way: 9 to 27 of the user's 500 requests). Played in virtual time (``clock.in_virtual_time``)."""

from __future__ import annotations

import pytest
from support.clock import in_virtual_time
from support.project import Key, conversations
from support.standin import Bucket

from convy.quota import Meter, Quota


def played(seed: int, attempts: int = 125) -> dict[str, Key]:
    """``attempts`` attempts of bench/busy.py's project: a simulated user's request then the
    agent's, three turns, the user's last, then the judge's; each participant a key of its own to
    a bucket of 50 a second saving up 5, and places that grow."""
    keys = {who: Key(who, Bucket(50.0, 5.0), seed + offset) for offset, who in enumerate(("user", "agent", "judge"))}

    async def main() -> None:
        await conversations(keys, attempts)

    in_virtual_time(main)
    return keys


@pytest.mark.parametrize("seed", [0, 1, 3, 9])
def test_a_bucket_of_five_is_refused_at_most_one_request_in_a_hundred_and_never_twice_at_once(seed: int) -> None:
    """Of the run's 1,000 requests at most 1% refused, and no key refused twice within an answer's
    100 ms: a refusal is heard before the next request goes. Before, 13 to 29 refused each way
    (seed 1: 27 of the user's), most in bursts of 4 to 7 within 60 ms after a pause."""
    keys = played(seed)
    requests = sum(len(key.reached) for key in keys.values())
    refused = {who: [moment for moment, let in key.reached if not let] for who, key in keys.items()}
    assert sum(map(len, refused.values())) <= 0.01 * requests, refused
    for who, moments in refused.items():
        close = [(a, b) for a, b in zip(moments, moments[1:]) if b - a < 0.1]
        assert not close, (who, close)


def test_a_word_with_some_left_reads_no_quicker_than_one_with_none_left() -> None:
    """A bucket of 50 a second saving up 5: "0 left, whole in 100 ms" reads 50 a second; then
    "4 left, whole in 20 ms" would read 250 as a window's, and reads 50."""
    meter = Meter()
    meter.heard(Quota(remaining=0, reset=0.1, limit=5), 0, 0.0, [], 1.0, False, True)
    assert meter.rate == pytest.approx(50.0)
    meter.heard(Quota(remaining=4, reset=0.02, limit=5), 1, 1.2, [], 1.0, False, True)
    assert meter.rate == pytest.approx(50.0)
    # A window's words all read alike, and a lower one is heard at once.
    meter.heard(Quota(remaining=3, reset=0.2, limit=5), 2, 1.3, [], 1.0, False, True)
    assert meter.rate == pytest.approx(25.0)


def test_a_refusal_holds_a_rate_read_from_words_with_much_left() -> None:
    """Before any word says none is left, the rate is read from words with some left, five times
    the bucket's; a refusal saying "0 left, whole in 90 ms" brings it down to 5 / 0.09 at once,
    and the next word with some left reads no quicker."""
    meter = Meter()
    meter.heard(Quota(remaining=4, reset=0.02, limit=5), 0, 0.0, [], 1.0, False, True)
    assert meter.rate == pytest.approx(250.0)
    meter.heard(Quota(remaining=0, reset=0.09, limit=5), 1, 0.05, [], 1.0, False, False)
    assert meter.rate == pytest.approx(5 / 0.09)
    meter.heard(Quota(remaining=4, reset=0.02, limit=5), 2, 1.1, [], 1.0, False, True)
    assert meter.rate == pytest.approx(5 / 0.09)
