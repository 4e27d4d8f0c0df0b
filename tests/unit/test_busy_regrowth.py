"""The places after a service's first refusal (``growth.Growth``): where a pace found from the
refusals keeps the rate, they grow back as in their slow start to as many as when the refusal
came, not by one a round of answers; not where the pace was found far over what they sent (a
bucket's burst), and back to what the refusal left where, grown back, they outran the limit.
``Growth`` read alone (no clock: the moments are given), and whole runs in virtual time
(``clock.in_virtual_time``)."""

from __future__ import annotations

from support.standin import Bucket
from test_busy_slow_review import Mixed, run, wired

from convy.growth import Growth
from convy.quota import Send, Service

WAYS = (1, 2, 3)


class Answers:
    """A participant's sends to ``service`` and their answers, each ``latency`` after its send,
    the sends ``gap`` apart, read by ``growth`` as ``busy.Places`` hands them (every place taken, a
    round of answers begun at each, nothing waiting for the pace); ``size`` its places."""

    def __init__(self, size: int, gap: float = 0.01, latency: float = 1.0) -> None:
        self.service, self.growth = Service(), Growth()
        self.size, self.gap, self.latency = size, gap, latency
        self.now = 0.0

    def send(self) -> Send:
        self.now += self.gap
        return Send(self.service, self.service.took(self.now, 1.0), self.now)

    def answered(self, count: int) -> list[int]:
        """The places each of ``count`` answers (to as many sends) grew by."""
        grown = []
        for _ in range(count):
            send = self.send()
            more = self.growth.grown(send, send.moment + self.latency, self.size, True, False, 0, self.service, 0)
            self.size += more
            grown.append(more)
        return grown

    def refused(self) -> int:
        """The places a refusal of the next send leaves (0: as many)."""
        left = self.growth.narrowed(self.send(), self.size, self.service, 0)
        self.size = left or self.size
        return left


def halved(pace: float, gap: float = 0.02) -> Answers:
    """Places grown from 2 to 40 in their slow start (answers of 1 s: 40 a second), sent ``gap``
    apart, refused and halved to 20, the refusal finding the pace at ``pace`` a second
    (``refusals.taught``)."""
    answers = Answers(2, gap)
    assert answers.answered(38) == [1] * 38  # the slow start: one more an answer
    assert answers.refused() == 20
    answers.service.pace.rate, answers.service.pace.growing = pace, False
    return answers


def test_a_pace_found_near_what_the_places_sent_lets_them_grow_back_as_in_the_slow_start() -> None:
    """A pace of 48 a second, found where the places sent 40: they grow back one an answer to
    the 40 the refusal came at, then by one a round of answers (one for 40 answers), as before."""
    answers = halved(48.0)
    assert answers.answered(20) == [1] * 20
    assert answers.size == 40
    assert sum(answers.answered(40)) == 1


def test_a_pace_found_far_over_what_the_places_sent_leaves_them_growing_one_a_round() -> None:
    """A pace of 200 a second, found where the places sent 40 (over 2.5 times that: sends a
    bucket's burst let through at once tell nothing of its rate): they grow by one a round of
    answers, as before, and the pace is not what keeps the rate."""
    answers = halved(200.0)
    assert sum(answers.answered(20)) == 1


def test_the_places_grown_back_go_back_where_they_not_the_pace_held_the_sends_when_refused() -> None:
    """Grown back to 40, sent 20 a second (the answers' places), under the pace of 48: the next
    refusal of the pace shows the places outran the limit, not the pace, and they go back to the
    20 the first refusal left; from then on by one a round of answers."""
    answers = halved(48.0, gap=0.05)
    answers.answered(20)
    assert answers.size == 40
    assert answers.refused() == 20
    assert sum(answers.answered(20)) == 1


def test_the_places_are_kept_where_the_pace_held_the_sends_when_refused() -> None:
    """Grown back to 40, sent 50 a second (over 0.9 of the pace of 48: it, not the places, spaced
    them on the way to the service): the refusal is the pace's to answer, and the places are kept;
    but they grow back no more, by one a round from then on."""
    answers = halved(48.0)
    answers.answered(20)
    assert answers.refused() == 0
    assert answers.size == 40
    assert sum(answers.answered(40)) == 1


def test_a_strict_bucket_with_answers_of_a_second_or_more_is_served_quicker_after_its_first_refusal() -> None:
    """500 requests against a strict bucket of 50 a second (burst 1) that tells nothing: the
    places halved at the first refusal grow back in some rounds rather than one place a round.
    Answers of 1 s: 19.84, 20.84, 21.12 s (25.17, 26.24, 26.15 before); 2 s: 34.01, 35.52, 34.00
    (45.29, 47.94, 48.49); 0.5 to 1.5 s: 24.39, 21.73, 22.23 (29.43, 27.20, 27.14). Refused as
    often or less (2 s: 2, 4, 2 where 3, 6, 7)."""
    for seed in WAYS:
        for latency, most, refusals in ((1.0, 22.5, 2), (2.0, 37.0, 4)):
            wall, refused = run(wired(1, latency, seed), 500)
            assert wall <= most, f"way {seed}, answers of {latency} s: {wall:.2f} s"
            assert refused <= refusals, f"way {seed}, answers of {latency} s: {refused} refusals"
        wall, refused = run(Mixed(Bucket(50, 1, headers=False), seed, 0.5, 1.5), 500)
        assert wall <= 25.5, f"way {seed}, answers of 0.5-1.5 s: {wall:.2f} s"
        assert refused <= 1, f"way {seed}, answers of 0.5-1.5 s: {refused} refusals"


def test_a_bucket_with_a_burst_of_its_rate_is_not_refused_at_every_pause() -> None:
    """500 requests against a bucket of 50 a second with a burst of 50, answers of 1 s: its
    opening's refusal finds the pace at 130 a second, from sends the burst let through. The places
    halved to 48 keep the rate; grown back to the 97 the refusal came at and kept there, they were
    refused again (3, 1, 1 times; grown on past them as in the slow start, 4 to 5 times, 15.6 s);
    gone back to 48 at the first of those, 2, 1, 1 (15.54, 14.91, 14.92 s; 1 each and 15.06,
    14.91, 14.92 before)."""
    for seed in WAYS:
        wall, refused = run(wired(50, 1.0, seed), 500)
        assert refused <= 2, f"way {seed}: {refused} refusals, {wall:.2f} s"
        assert wall <= 16.0, f"way {seed}: {wall:.2f} s"
