"""How many places a participant with no cap has: how they grow at its answers and halve at a refusal.

``busy.Places`` holds a participant's places (``size``), hands them out and frees them; with no
cap a team set, whether an answer grows them, and by how much, and whether a refusal halves them,
is read here (``Growth``), from what the answers so far say of the service: its usual latency
(``Growth._timed``), what a round of answers yields per place (``Growth._paid``), and whether the
places are still in their slow start (doubling in a round of answers) or, after a refusal of a
service that told nothing of its rate, widen by a part of one place per answer (or, while a pace
found from the refusals keeps the rate, grow back as in the slow start). ``Places`` hands
it the little of its own it reads (its places, whether a place was free since the round of answers
began, whether requests waited for the pace, what a request under way stands for, its service and
its cap per minute), and changes the places itself. Nothing here reads a clock or waits: the
moment of the answer is given.
"""

from __future__ import annotations

import math
from collections import deque

from convy.quota import Send, Service

# An answer is in time when it, and the median of the latest _RECENT answers timed, took at most
# _IN_TIME times the usual latency: the least median of _RECENT answers seen so far. A service that
# queues what it cannot serve at once answers later as more is sent, and is sent no more; one that
# answers as fast with more under way is sent more. (The least of the medians, not of the latest
# answers: the latest of a queueing service would creep up with its queue, and the places with
# them. And a median, not the quickest answer ever: a model's answers take from a fraction of a
# second to many, and against its quickest one most would be late; a few slow ones among many in
# time are the answers' lengths, not a queue.) Until _RECENT answers were timed there is no usual
# latency yet, and every answer is in time. The first usual latency is at most _UNQUEUED times the
# quickest of those answers: they came while the places were few, but a service that serves one
# or two at a time and queues the rest had queued most of them already, and its quickest found it
# idle (such a service had 20 places, now 13; one that serves 16 at once, 60, where the quickest
# answer ever, as before, let it have 112).
# But the least of many medians is far under the median where the answers' latencies spread widely
# (a model's, from a tenth of a second to five: 0.55 to 0.70 s where the median is 2.55), and
# against it most answers read late and the latest median read as a queue, so the places never grew
# (500 requests against a strict bucket of 50 a second, bench/slow_answers.py b1/0.1-5: 165.6 s,
# the floor 15). A queue delays every answer, the quickest too, and a spread does not: the service
# is taken to queue where even the quickest of the latest _RECENT took over _IN_TIME times the usual
# latency, and an answer over that bound is in time still where the quickest of them was not over
# the usual one (87.1 s there; a service that serves one at a time stops its places as before).
#
# And they grow only while a place pays: a round of answers (as many as the places, _RECENT at the
# least) with every place taken yields, per place and second, at least _YIELD of the most a round
# yielded. A place held while its request waits for the pace, or a conversation held while its
# other participants' requests wait for theirs, yields less the more there are: the places then
# stop at twice what the rate needs for the latency, or a few times that where they doubled in
# the round that showed it (bench/busy.py's strict bucket of 3,000 a minute: the agent's 40
# conversations where about 13 keep the user's key busy; 118 without it), rather than hold every
# attempt of a run under way at once, each crawling at the pace, and their judges all asked at
# the end.
_IN_TIME = 3.0
_RECENT = 8
_UNQUEUED = 2.0
_YIELD = 0.5
# In the slow start of a service nothing paces, a place may be held while no request of its own is
# under way: the agent's places hold whole conversations, and with the simulated user on a model a
# turn is the user's request, then the agent's, so that about half of them have an agent's request
# under way. One place more per answer then doubled the agent's requests under way only every
# other round trip (every turn): 50 conversations against an unlimited stand-in answering in
# 100 ms all began only after 1.3 s (bench/busy.py's p-free). So the places grow by as many as
# each request under way stands for (places taken / requests under way), at most _FOLD: a turn's
# two requests. More (three) grew the conversations faster than the user's own places, so that
# conversations waited for them and stopped paying (``_paid``) for seconds on a virtual clock.
_FOLD = 2
# After the first refusal of a service that tells nothing, the places are halved, and where a pace
# was found from the refusals the pace, not the places, keeps the rate: they grow back as in their
# slow start (``Growth._regrows``) to as many as when the refusal came, rather than by one a round
# of answers, which with answers of a second or more took the rest of the run (a strict bucket of
# 50 a second, answers of 1 s: the places halved to 16 where 48 keep it busy, 500 requests in
# 26.2 s against a floor of some 11; now 20.8). Past those, by one a round again: the limit let
# them through, and where two participants share a key unknown to each other, one grown back to
# its pace's worth (88 places, answers of 2 s, where the refusal came at 51) held the other's
# share too, and the pause of its refusal left both refused at every pause after (12 refusals
# where 3; tests/unit/test_busy_slow_review.py).
# But only where the pace found is at most _TRUSTED times what the places sent a second on
# average when the refusal came (their number over the latency). A strict limit refuses the first
# gap under its own, so the pace found there is near what the sends went at, within the bursts of
# the slow start, whose places double in a round and go in bunches (a strict bucket of 50 a
# second: 1.1 to 2.0 times with answers of 0.5 to 2 s, 1.4 to 2.7 with answers of 1 to 3 s);
# a pace found at more was found from the gaps of sends that a bucket's burst let through at
# once (a bucket of 50 a second, burst 20, answers of 2 s: 192 a second, the places sending 58),
# which tell nothing of its rate. The places, halved, are then what keeps the rate near the
# limit; grown back to such a pace, they ran into the limit, and each refusal's pause left the
# requests that waited through it to go at once at the pace, far over the limit, refused again
# (two participants on one key, answers of 2 s: 9 and 8 refusals in two ways of three, where 3
# and 4). A strict limit's pace found so (answers of 0.1 to 5 s, the latency of the latest few
# answers far from the usual) is not trusted either, and its places grow as before.
_TRUSTED = 2.5
# And the places grown back so go back to what the refusal left at the first refusal after (one
# not of a pace still growing, which finds the pace) where they, not the pace, held the sends:
# those sent in the latency before the refused one (since the last pause) went at under _HELD of
# the pace. The pace is then over the limit, as a bucket's burst let it be found (a bucket of 50
# a second, burst 50, answers of 1 s: found at 130 a second, the places grown back to 97), and
# kept, the places made each pause's waiting requests go at it, refused again (a burst of 20: 8
# refusals where 4; two participants on one key, burst 10, answers of 2 s: 11 where 3).
_HELD = 0.9


class Growth:
    """What a participant's answers so far say of how many places it should have, with no cap: the
    latest answers' latencies and the usual one, the round of answers under way and the most a
    round yielded, and whether the places are in their slow start or widen by parts of one.

    It changes inside as answers and refusals come, and holds no places itself: ``busy.Places``
    asks it how many its places grow (``grown``) or how many a refusal leaves (``narrowed``)."""

    def __init__(self) -> None:
        self._doubling = True  # one more per answer in time until the first refusal
        self._widening = 0.0  # after it: the part of a place grown so far, 1 / size per answer in time
        # Or, while a pace found keeps the rate, one more per answer in time (``_regrows``), until
        # the first refusal of that pace: whether that is still to come, and whether they grew so.
        self._regrowing = True
        self._regrew = False
        self._refused_size = 0  # the places when the first refusal came (``narrowed``)
        self._halved_to = 0  # and what it left of them
        self._refused_worth = 0.0  # what the places sent a second on average when it came
        self._latencies: deque[float] = deque(maxlen=_RECENT)  # of the latest answers timed (grown)
        self._usual = math.inf  # the least median of _RECENT answers timed (_timed): the service's latency unqueued
        self._round_from = 0.0  # when the round of answers began (_paid)
        self._round_answers = 0
        self._round_size = 0  # the places when it began
        self._best_yield = 0.0  # the most answers a second one place yielded in a round
        self._paying = True  # whether the last round yielded at least _YIELD of that
        self._narrowed_after = -1  # refusals of requests sent up to this number are one overload, halved for already

    @property
    def usual(self) -> float:
        """The service's latency unqueued, as its answers so far tell it (``_timed``): inf until
        _RECENT were timed, and with a cap, whose places time none."""
        return self._usual

    def grown(
        self,
        send: Send,
        now: float,
        size: int,
        slack: bool,
        backlogged: bool,
        held: int,
        service: Service,
        per_minute: int,
    ) -> int:
        """How many places more ``send``'s answer at ``now`` grows the participant's ``size`` places
        by, where they held requests back: one unless the pace held requests back all the while it
        was under way (``backlogged``), when the answer came in time (``_timed``) and the places pay
        (``_paid``; ``slack``, whether a place was free since the round of answers began). The
        places double so in a round while the service keeps up, as a TCP window does in its slow
        start: a service with no limit has all the run's requests under way within a few rounds.
        While nothing paces the service, places held between the participant's requests
        (conversations in their user's part of a turn) count too: as many more as each request under
        way stands for (``held``: the places taken over the requests under way, 0 where none is or
        some wait for the pace), at most _FOLD, so that its requests under way double in a round, not
        only the places. After a refusal of a service whose rate is found from refusals alone, a part
        of one (1 / ``size``): a round's answers grow one place; or, while a pace found from the
        refusals keeps the rate (``_regrows``), one, as in the slow start. Where the service told its
        rate, the pace keeps to it whatever the places, and they grow as before the refusal.

        Requests that wait for the pace now and then (a strict limit spaces its sends, and some
        come while the last is still spaced) say nothing of the places: only a pace that held
        requests back from this one's send to its answer, without a break, does, as more places
        would then only make more wait."""
        timed = self._timed(now - send.moment)
        if not self._paid(send, now, size, slack) or not timed:
            return 0
        if backlogged:  # requests waited for the pace all the while it was under way
            return 0
        grown = 1
        if not self._doubling and service.unmetered():
            if self._regrows(send, size, service):
                self._regrew = True
            else:
                self._widening += 1.0 / size
                if self._widening < 1.0:
                    return 0
                self._widening -= 1.0
        elif self._doubling and held and _unpaced(service, per_minute):
            # Places held between this participant's requests (by conversations, whose turns
            # are their other participants' requests too): one more for each place a request
            # under way stands for, so that the requests under way, not the places, double.
            grown = max(1, min(_FOLD, held))
        return grown

    def _regrows(self, send: Send, size: int, service: Service) -> bool:
        """Whether ``send``'s answer, after the first refusal, grows the places (``size``) by one,
        as in the slow start: a pace found from the refusals keeps the rate (_TRUSTED), no refusal
        of it came since, and they are fewer than when the first came. Not for an answer to a request sent before the places were halved, which came
        while they were more: grown on those too, through the pause, the places were twice as many
        when its waiting requests went, and they were refused."""
        pace = service.pace
        return (
            self._regrowing
            and send.number > self._narrowed_after
            and pace.rate > 0
            and not pace.opening
            and pace.rate <= _TRUSTED * self._refused_worth
            and size < self._refused_size
        )

    def _latency(self) -> float:
        """The median of the latest answers' latencies (0 where none was timed)."""
        latencies = sorted(self._latencies)
        return latencies[len(latencies) // 2] if latencies else 0.0

    def _timed(self, latency: float) -> bool:
        """Whether an answer that took ``latency`` came in time: the quickest of the latest _RECENT
        answers timed within _IN_TIME of the usual latency (the least median of them so far, the
        first at most _UNQUEUED times the quickest of the first _RECENT answers), and it within
        _IN_TIME of it too, unless that quickest was within the usual latency itself."""
        latencies = self._latencies
        latencies.append(latency)
        if len(latencies) < _RECENT:
            return True  # no usual latency yet
        ordered = sorted(latencies)
        median = ordered[_RECENT // 2]
        if self._usual == math.inf:
            self._usual = min(median, _UNQUEUED * ordered[0])
        elif median < self._usual:
            self._usual = median
        elif ordered[0] > _IN_TIME * self._usual:
            return False  # the service has begun to queue: even the quickest of its latest answers is late
        # A slow answer beside quick ones is the spread of the service's answers, not a queue.
        return latency <= _IN_TIME * self._usual or ordered[0] <= self._usual

    def _paid(self, send: Send, now: float, size: int, slack: bool) -> bool:
        """Whether the places pay: ``send``'s answer at ``now`` counted in the round of answers
        under way, which begins anew where a place was free since (``slack``: a round counts the
        answers of places all taken), and ends after as many answers as there were places (_RECENT
        at the least). Its answers per second and place (the places counted half at the start, half
        at the end: they grow during it, to ``size`` now) are its yield; the places pay while the
        last round's was at least _YIELD of the most any round's was. A round that does not pay so
        far ends after _RECENT answers, before the places double in it: 40 conversations rather than
        64 where a pace held them back (bench/busy.py's strict bucket of 3,000 a minute)."""
        if slack:
            self._round_from = send.moment
            self._round_answers = 0
            self._round_size = size
        answers = self._round_answers = self._round_answers + 1
        if answers < _RECENT:
            return self._paying
        seconds = now - self._round_from
        if seconds <= 0.0:
            return self._paying
        rate = 2 * answers / (seconds * (self._round_size + size))
        if answers < self._round_size and (rate >= _YIELD * self._best_yield or not self._paying):
            return self._paying  # the round goes on; one that cannot pay ends at once, before the places double in it
        if rate > self._best_yield:
            self._best_yield = rate
        self._paying = rate >= _YIELD * self._best_yield
        self._round_from = now
        self._round_answers = 0
        self._round_size = size
        return self._paying

    def narrowed(self, send: Send, size: int, service: Service, per_minute: int) -> int:
        """The places a refusal of ``send`` leaves of ``size`` (0: as many): half, once for the
        requests under way then (many refused at once are one sign of one overload); from then on
        they grow by one for as many answers in time as there are places. Only while nothing paces
        the ``service`` (no rate it said is left, no ``per_minute``, no pace found from its
        refusals): then the places were all that held requests back, and the refusal is theirs to
        answer. Once a pace does, a refusal is the pace a little quick (the jitter of the way there, or a lower limit), and the
        pace's cut in ``busy.Places._refusal`` answers it: one overload signal, one answer. Halving
        the places too held half the conversations back at every refusal (a strict bucket of 3,000
        a minute refuses one request in a hundred or two through the jitter, and its places never
        grew to what the limit allows; with no headers, three participants on keys of their own
        at 5 a second, on a virtual clock, took 2.4x their floor rather than 1.8x), while the
        pace, not the places, was what held the sends. Unless the places grew back since, and the
        refusal shows they outran the pace's limit (``_overshot``)."""
        if send.number <= self._narrowed_after:
            return 0
        pace = service.pace
        if per_minute or not service.unmetered():
            return 0
        if pace.rate > 0 and not pace.opening:
            return self._overshot(send, size, service)
        self._narrowed_after = service.sends - 1
        self._doubling = False
        self._widening = 0.0
        self._refused_size = size
        self._halved_to = max(1, size // 2)
        latency = self._latency()
        self._refused_worth = size / latency if latency > 0 else 0.0
        return self._halved_to

    def _overshot(self, send: Send, size: int, service: Service) -> int:
        """The places a refusal of ``send`` leaves of ``size`` once a pace was found: as many,
        unless it is the first refusal of the pace found (not one still growing, which finds it)
        since the places grew back (``_regrows``), and they held the sends, not the pace (_HELD):
        they go back to what the first refusal left, and grow by one a round from there."""
        pace = service.pace
        if pace.growing or not self._regrowing or send.number <= pace.cut_after:
            return 0  # the pace still searching, or a refusal of an overload the pace was cut for already
        self._regrowing = False
        if not self._regrew or size <= self._halved_to or not self._outran(send, service):
            return 0
        self._narrowed_after = service.sends - 1
        self._widening = 0.0
        return self._halved_to

    def _outran(self, send: Send, service: Service) -> bool:
        """Whether the sends before ``send``, over the latency before it (since the last pause),
        went at under _HELD of the pace: the places held them, not the pace. Every participant's on
        the key counts, as the limit does."""
        latency = self._latency()
        since = max(send.moment - latency, service.pace.resumed)
        count = 0
        for number, moment in service.latest():
            if number >= send.number:
                continue
            if moment < since:
                return count < _HELD * service.pace.rate * (send.moment - since)
            count += 1
        return False  # the sends kept do not reach back so far: too many to tell


def _unpaced(service: Service, per_minute: int) -> bool:
    """Whether nothing paces a participant's sends: no rate its ``service`` told, no pace found
    from its refusals, no ``per_minute`` cap."""
    pace = service.pace
    return not per_minute and (pace.rate == 0.0 or pace.opening) and service.unmetered()
