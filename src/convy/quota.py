"""What services say of their limits, and what the participants of a run make of it.

A response may say what is left of a service's limits (``x-ratelimit-*`` headers, read in
``http.py``): a ``Quota`` of requests and of tokens, together what was ``Heard``. The HTTP layer
hands it up to ``Places`` through ``TOLD``, a context variable holding the ``Told`` of the request
under way, with the name of the service (its address and a digest of its key). A ``Service`` is
what a run's participants know of one service: a ``Meter`` per limit — what is left, how fast it
grows back, what a request costs —, the ``Pace`` found where it tells nothing, and the latest
sends against it; ``Services`` finds the one of a name, so that participants on one address and
key share it.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar

import msgspec


class Quota(msgspec.Struct, frozen=True):
    """What a service said is left of one of its limits: ``remaining`` units now, whole again
    (``limit`` units) in ``reset`` seconds. ``limit`` is 0 when the service did not say it."""

    remaining: float
    reset: float
    limit: float = 0.0

    def rate(self) -> float:
        """Units per second the limit allows read as a sliding window's: all of it within the
        reset. That is also the rate of a token bucket with nothing left; with more left, a
        bucket's units last while the rate seems higher (``refill``). 0 when it cannot be told."""
        whole = self.limit if self.limit > 0 else self.remaining + 1
        return whole / self.reset if self.reset > 0 else 0.0

    def used(self) -> float:
        """The units of the limit in use: taken and not grown back yet (0 when the limit is not said)."""
        return max(self.limit - self.remaining, 0.0)

    def refill(self) -> float:
        """Units per second the limit allows read as a token bucket's: the reset is the time the
        units in use take to grow back ("the time until the rate limit resets to its initial
        state", as OpenAI documents it). 0 when it cannot be told."""
        return self.used() / self.reset if self.reset > 0 else 0.0


class Left(msgspec.Struct, frozen=True):
    """What a service said is left of one of its limits, without saying when more comes:
    ``remaining`` units (of ``limit``, 0 when not said). LiteLLM's proxy says so of a model's
    ``rpm`` on every answer (its own count, e.g. 15 of 16) and sends no reset with it. It tells no
    rate, only when the limit is used up: then a request goes one at a time (``Ration``)."""

    remaining: float
    limit: float = 0.0


class NoQuota(msgspec.Struct, frozen=True):
    """A service that said nothing of one of its limits."""


class Heard(msgspec.Struct, frozen=True):
    """What a service's response said of its limits, on requests and on tokens."""

    requests: Quota | Left | NoQuota = NoQuota()
    tokens: Quota | Left | NoQuota = NoQuota()

    def quoted(self) -> bool:
        """Whether the service said what is left of any of its limits and when it is whole again
        (a ``Quota``): what the meters pace on. What is left alone (``Left``) says no time."""
        match (self.requests, self.tokens):
            case (Quota(), _) | (_, Quota()):
                return True
            case _:
                return False


UNSAID = Heard()  # what a request's Told holds until its service says something of its limits


class Told:
    """The last thing a service said of its limits while one request of a participant was sent,
    and which service it was (``service``: an address and a digest of the key, never shown; empty
    for a request that no service got, answered in-process). The HTTP layer fills it through
    ``TOLD``, naming the service as the request starts; ``Places`` reads the name while the
    request is under way, and the rest when it is done. Until then both are the class's: nothing
    heard, no service, so a request answered in-process costs no more than the object.

    The HTTP layer also tells the moment the request went on the wire (``wrote``), which may be
    well after ``Places`` let it go: a new connection is opened first (a thread resolves the
    address, a TLS handshake takes round trips). This one tells nobody; the ``Told`` of a request
    ``Places`` paces hears it (``listened``), to pace the next send from then.

    Where ``Places`` holds a strict limit, it lets a request go a little ahead of its moment, so
    that the work of building it is done by then, and the HTTP layer waits in ``writable``, just
    before the head is written, for the moment itself (``due`` tells it, and that the layer
    waits): the request reaches the service at its moment, not late by however long the way to
    the wire took this time. So too, before a participant's first answer, for a request that
    names a service a neighbour on the same key already paces: it is written at the neighbour's
    next moment, not beside the neighbour's sends. This one has no moment: it is written at once."""

    heard: Heard = UNSAID
    service: str = ""

    def listened(self) -> bool:
        """Whether anyone wants to hear when the request went on the wire."""
        return False

    def due(self, now: float) -> float | None:
        """The moment the request may be written, asked at the wire at ``now``; None for at once."""
        return None

    async def writable(self) -> None:
        """Wait, just before the request's head is written, for the moment it may go on the wire."""
        loop = asyncio.get_running_loop()
        moment = self.due(loop.time())
        if moment is None:
            return
        while (now := loop.time()) < moment - _GRAIN:
            await asyncio.sleep(moment - now - _GRAIN)
        # The loop's timers ring up to a millisecond late (epoll counts in milliseconds): the last
        # of the wait is spent letting the loop's other work run, turn by turn, until the moment,
        # for at most _TURNS turns, and while the clock moves from one turn to the next (a loop
        # in virtual time moves it only when everything waits for a timer).
        for _ in range(_TURNS):
            if now >= moment:
                return
            await asyncio.sleep(0)
            then, now = now, loop.time()
            if now == then:
                break
        while (now := loop.time()) < moment:
            await asyncio.sleep(moment - now)

    def wrote(self, moment: float) -> None:
        """The request's head went on the wire at ``moment`` (the event loop's time)."""


_GRAIN = 0.001  # how late the event loop's timers may ring
_WIRED_BACK = 16  # how far back among the latest sends one that went on the wire is looked for
# The fewest units in use that tell a bucket's rate within 5%, each count a whole number; and how
# far apart the units in use of two words must be to tell a bucket from a window.
_COUNTABLE = 20.0
_APART = 0.25
_SAVED = 1.0  # the seconds of a bucket's rate spent at once at the most
_KEPT = 0.125  # the part of what a bucket saves up kept in it, for requests that cost more than the mean
_TURNS = 200  # the most turns of the loop spent on that last part of a wait
_TURNED = 0.05  # the most a fixed window's next unit is counted to come after its end
_ALIKE = 0.01  # how near two resets are to be a sliding window's length both


TOLD: ContextVar[Told | None] = ContextVar("convy_told", default=None)


class Meter:
    """One limit of a service as a participant sees it: ``level`` units at ``moment``, growing
    back at ``rate`` per second up to ``limit``; a request costs ``cost`` units."""

    def __init__(self) -> None:
        self.rate = 0.0
        self.limit = math.inf
        self.level = math.inf
        self.moment = 0.0
        self.cost = 0.0
        self.seen = -1  # the send number of the request whose response set the level
        self.rated = -1  # the send number of the request whose response set the rate
        self.said = (0.0, 0.0)  # the remaining units that response said, and when it was sent
        # Whether the limit is a token bucket (its reset the time the units in use take to grow
        # back) rather than a sliding window (its reset the window's length), told by ``_rate``;
        # and the units in use and the reset of the last admitted word that could tell.
        self.bucket = False
        self.sample = (0.0, 0.0)
        # The rate the latest admitted word that said nothing was left told (0: none yet): one
        # that says some is left, too few in use to tell a bucket from a window, reads no quicker.
        # And the limit that word said: a word that says another has no cap from it (a key's
        # limit raised mid-run: a bucket paced at the old rate never says none is left again).
        self.emptied = 0.0
        self.emptied_of = 0.0
        # Whether the limit is a fixed window, whose reset counts down to the window's end rather
        # than saying the window's length (a sliding window's) or the time the units in use take
        # to grow back (a bucket's), told by ``_counted_down`` (and so for the rest of the run);
        # the send number, the moment, the end (sent plus reset), what was left and the limit of
        # the latest admitted word; and the longest reset said of the limit: a fixed window's
        # length, or nearly.
        self.fixed = False
        self.ends = (-1, 0.0, 0.0, 0.0, 0.0)
        self.longest = 0.0
        # Whether the limit is a sliding window, told by ``_slid``; and the send number, what was
        # left, the reset and the limit of the admitted word the next is told apart from.
        self.sliding = False
        self.alike = (-1, 0.0, 0.0, 0.0)
        # Of a limit whose words do not say its size, the size they tell (0: none yet), and the
        # most said to be left, and one, since the latest refusal and between the two before it
        # (``_sized``).
        self.sized = 0.0
        self.lately = 0.0
        self.before = 0.0

    def ready(self, now: float, share: float) -> float:
        """The first moment a request's cost is there, at ``share`` of the rate."""
        if self.rate <= 0:
            return now
        level, need = self._level(now, share), self.cost
        if self.bucket:
            # Requests cost more or less than the cost counted, which is their mean, and so do
            # those under way, counted at it: one that costs more, sent when the mean is there, is
            # refused. A bucket keeps growing back while some is kept in it, so keeping another
            # request's worth, or an eighth of what it saves up if more, costs no time, unless
            # that would keep it full.
            most = self._most()
            need = max(need, min(need + max(need, most * _KEPT), most - need))
        if level >= need:
            return now
        return now + (need - level) / (self.rate * share)

    def back(self, moment: float) -> None:
        """A request's cost is there again at ``moment`` (and not before): the unit a refused
        request was counted to take comes back then, as the service said."""
        self.level, self.moment = max(self.cost, 1.0), moment

    def take(self, now: float, share: float) -> None:
        self.level = self._level(now, share) - self.cost
        self.moment = now

    def heard(
        self,
        quota: Quota,
        number: int,
        sent: float,
        later: list[float],
        share: float,
        counted: bool,
        admitted: bool,
        oldest: float = -math.inf,
    ) -> bool:
        """The service said ``quota`` of the request sent at ``sent`` (send number ``number``);
        ``later`` are the moments of this participant's sends after it, and ``oldest`` that of the
        send a whole limit before (the limit's count of sends back, this one among them; -inf when
        not known). A response older than the last one is ignored. Whether the service's rate is
        now lower than it was."""
        # A refusal's reset is the time until the next unit, and says nothing of the rate. An
        # admitted request's word on the rate counts even when it comes after a newer refusal
        # (which comes back at once, the answer only after the service's work): else a limit
        # lowered is never heard of while its refusals keep coming first.
        was_bucket = self.bucket
        said = quota  # as said, before a limit that does not say its size is sized
        if quota.limit <= 0:
            quota = self._sized(quota, admitted)
        if admitted:
            self._counted_down(quota, number, sent)
            self._slid(quota, number)
        rate = self._rate(quota) if admitted else 0.0
        if not admitted and quota.remaining < 1 and quota.reset > 0:
            # Whether its reset is the time until the next unit or until the whole limit, a
            # refusal's word read as a window's is no slower than the limit: the rate, and what
            # words with some left may read until one admitted says none is, are held to it. The
            # first refusals come before any such word, while the rate is still read from words
            # with much left. Of a limit that does not say its size, read as said, one unit in
            # its reset: read at the size its words told, "0 left, whole in 59 s" of a window of
            # 60 a minute spent before its own "0 left" was heard was 60 in 59 s, the rate
            # itself, and the next requests went a second apart into the spent window, refused
            # until it slid (tests/unit/test_busy_windows_review.py: 27 of 347, 2.3 x the floor).
            bound = said.rate()
            same = self.emptied > 0 and quota.limit == self.emptied_of
            self.emptied, self.emptied_of = min(self.emptied, bound) if same else bound, quota.limit
            if self.rate > bound:
                self.rate = bound
        lowered = False
        if rate > 0 and number > self.rated:
            # Found to be a bucket, the limit's rate reads lower than it did as a window's: the
            # same limit, better read, not one lowered.
            lowered = rate < 0.9 * self.rate and was_bucket == self.bucket
            self.rate, self.rated = rate, number
        if number <= self.seen:
            return lowered
        if quota.limit > 0:
            self.limit = quota.limit
        if counted and admitted:
            before, when = self.said
            if self.seen < 0:
                used = quota.limit - quota.remaining if quota.limit > quota.remaining else 1.0
            else:
                # What was left then, grown back since, is no more than the whole limit.
                grown = min(before + self.rate * (sent - when), self.limit)
                used = (grown - quota.remaining) / max(1, number - self.seen)
            used = min(max(used, 1.0), max(self.limit, 1.0))
            self.cost = used if self.cost <= 0 else 0.7 * self.cost + 0.3 * used
        elif not counted:
            self.cost = 1.0
        self.seen = number
        if admitted:
            self.said = (quota.remaining, sent)
        # What is left now: the service's word, played forward through the sends it had not seen.
        self.level, self.moment = min(quota.remaining, self._most()), sent
        if self.fixed and quota.remaining < 1 and quota.reset > 0 and self.rate > 0:
            # A fixed window with nothing left gives nothing back until it turns, and then all
            # of it. The next unit a little after the end (half a gap, _TURNED at most), so that
            # a request on a quicker way to the service than the one that said so does not reach
            # it before the end: counted at the end itself, 10 or 11 requests of about 210 were
            # refused (bench/small_limits.py fixed5/1s).
            turned = sent + quota.reset + min(0.5 / (self.rate * share), _TURNED)
            self.level, self.moment = max(self.cost, 1.0), turned
        elif self.sliding and quota.remaining < 1 and self.rate > 0:
            # A sliding window with nothing left gives back its next unit when the oldest of the
            # sends it counts leaves it, its reset after that send, not a gap of the rate after
            # this one: the requests go as their answers come while words say some is left, and
            # the window slides past the first of them a whole window after it
            # (bench/small_limits.py window5/1s: the sixth within a second refused, then a
            # whole-second pause, 21% of the user's requests). Read at the share, as the rate
            # is, so that a send on a quicker way than the oldest's does not reach it before it
            # leaves; sends that went evenly at the rate come out at the gap after this one.
            # A refusal's reset is the time until the next unit, not the window's length: that
            # is the latest admitted word's.
            length = quota.reset if admitted else self.alike[2]
            back = oldest + length / share
            if back > sent + max(self.cost, 1.0) / (self.rate * share):
                self.level, self.moment = max(self.cost, 1.0), back
        for moment in later:
            self.take(moment, share)
        return lowered

    def _sized(self, quota: Quota, admitted: bool) -> Quota:
        """``quota``, of a limit that does not say its size, with the size its words tell: the
        most said to be left, and one. Read with its own remaining and one alone, "0 left, whole
        in 0.1 s" of a bucket of 50 a second saving up 5 was 10 a second, and held the pace there
        to the run's end, 4.7 x the floor (bench/small_limits.py unsized-bucket5@50): paced under
        its rate, a bucket never says none is left again. A bucket says its size less one when it
        is full, a window when its count starts; a limit that never is says less, and reads
        slower than it is, never quicker. A limit lowered meanwhile reads quicker, and is
        refused: the size is then what the words between the last two refusals and between the
        two before said, the more of the two (a word that said some was left in each). Lowered at
        each refusal to what the words since the one before said, a bucket whose few words
        between two refusals said little was read smaller, its cap of words with nothing left
        forgotten when the size grew back (another limit), and refused far more often (of 50 a
        second saving up 5, its refusals saying when the next unit comes: 23 to 62 of the
        user's requests in 4 ways against 2 to 7)."""
        self.lately = max(self.lately, quota.remaining + 1)
        self.sized = max(self.sized, self.lately)
        sized = Quota(quota.remaining, quota.reset, self.sized)
        if not admitted and self.lately > 1:
            if self.before > 0:
                self.sized = max(self.before, self.lately)
            self.before, self.lately = self.lately, 0.0
        return sized

    def _counted_down(self, quota: Quota, number: int, sent: float) -> None:
        """Tell from an admitted request's ``quota`` whether the limit is a fixed window: its reset
        counts down to the window's end, so two words of one window end at the same moment
        (sent plus reset) although units were taken between them. A sliding window's end moves
        on with each word by the time between them (its reset is its length); a bucket's by a
        unit's time for each unit taken, at least the reset over the units in use. Read as a
        sliding window's, a fixed window's word is the quicker the later in the window, "0 left
        of 5, whole in 0.1 s" 50 a second, and the requests sent at that were refused until the
        window turned: about half the user's (``tests/unit/test_busy_small_review.py``)."""
        last, then, ended, left, limit = self.ends
        if number <= last or quota.reset <= 0:
            return
        end = sent + quota.reset
        self.ends = (number, sent, end, quota.remaining, quota.limit)
        if quota.limit != limit:
            self.longest = 0.0
        self.longest = max(self.longest, quota.reset)
        if self.bucket or self.fixed or quota.limit != limit or left - quota.remaining < 1:
            return
        moved = abs(end - ended)
        self.fixed = moved < 0.5 * (sent - then) and moved < 0.5 * quota.reset / max(quota.used(), 1.0)

    def _slid(self, quota: Quota, number: int) -> None:
        """Tell from an admitted request's ``quota`` whether the limit is a sliding window: its
        reset, said of the request just admitted, is its length, the same whatever is left. A
        bucket's grows with the units in use: two words whose remaining differ by two or more
        differ by more than a unit's time, a part of their reset of at least one over the units
        in use. Told again at each such pair: a bucket whose words agree by chance is not read
        as a window for the rest of the run."""
        last, left, reset, limit = self.alike
        if number <= last or quota.reset <= 0:
            return
        if quota.limit == limit and abs(quota.remaining - left) < 2:
            return  # too close to tell: the word to tell the next from stays
        if quota.limit == limit:
            # Alike within half a unit's time, too: a bucket of 250 a minute with 246 and 248 in
            # use says resets 0.8% apart, and read as a sliding window, its "0 left, whole in
            # 60 s" held the next unit 34 s (1.2 x the floor). A limit known a bucket stays one.
            unit = 0.5 * max(quota.reset, reset) / max(quota.used(), 1.0)
            alike = abs(quota.reset - reset) <= min(_ALIKE * max(quota.reset, reset), unit)
            self.sliding = alike and not self.bucket
        self.alike = (number, quota.remaining, quota.reset, quota.limit)

    def _rate(self, quota: Quota) -> float:
        """The rate an admitted request's ``quota`` tells of (0: none, the last one holds).

        A sliding window's reset, said of the request just admitted, is the window's length: its
        whole limit comes within it (``Quota.rate``). A token bucket's is the time the units in
        use take to grow back (``Quota.refill``); read as a window's, a bucket with much left
        seems far quicker than it is (156,000 tokens a second for 7,800 measured), and the cost
        of a request, inferred with that rate, as far off. One word fits both: a bucket with
        nothing left is a window of its reset. Two words with different units in use tell them
        apart: a window's reset stays its length, a bucket's grows with the units in use. Until
        they do, the limit is read as a window, as before: a window read as a bucket would be
        held to the rate it is used at, never quicker.

        Read as a window's, a word that says some is left of a bucket is quicker than the bucket
        by as much as the bucket's whole over the units in use: with 4 of 5 left, 250 a second for
        a bucket of 50, and the requests sent at it are refused (bench/busy.py p-b5@3000: after a
        refusal's pause the bucket is full, its words say 4 left, and 9 to 27 of the user's 500
        requests were refused in virtual time, ``tests/unit/test_busy_small.py``). A word that says
        nothing is left reads alike as either, so, until the two are told apart, one that says some
        is left reads no quicker than the latest that said none. A window's words all read alike;
        a bucket with a limit of fewer than ``_COUNTABLE`` units, never told apart, is paced on its
        words with nothing left, while they say the same limit: a bucket raised from 10 to 19 a
        second, held to its old words, went at 10 to the run's end
        (``tests/unit/test_busy_small_review.py``)."""
        if self.fixed:
            # A fixed window's whole comes back once a window: over its length, the longest reset
            # it said (its first request's, or nearly).
            return Quota(quota.remaining, self.longest, quota.limit).rate()
        used = quota.used()
        if quota.reset > 0 and quota.remaining < 1:
            self.emptied, self.emptied_of = quota.rate(), quota.limit
        elif quota.limit != self.emptied_of:
            self.emptied = 0.0
        if quota.reset <= 0 or used < _COUNTABLE:
            # Too few units in use for whole numbers to tell a bucket's rate (a remaining of 19
            # of 20 may be 19.99): a bucket's holds; a window's is told by any word.
            if self.bucket:
                return 0.0
            return min(quota.rate(), self.emptied) if self.emptied > 0 else quota.rate()
        before, reset = self.sample
        if before >= _COUNTABLE and abs(used - before) > _APART * max(used, before):
            # A bucket's rate, units in use over reset, stays; a window's reset stays.
            as_bucket = abs(math.log(used * reset / (before * quota.reset)))
            as_window = abs(math.log(quota.reset / reset))
            self.bucket = as_bucket < as_window
        self.sample = (used, quota.reset)
        return quota.refill() if self.bucket else quota.rate()

    def _level(self, now: float, share: float) -> float:
        return min(self._most(), self.level + self.rate * share * (now - self.moment))

    def _most(self) -> float:
        """The most that is saved up to spend at once. Of a window, one request's worth: requests
        go evenly, never in a burst that it would give back only when it has slid past. A bucket
        gives back what is spent at its rate whenever it was spent: what it saved up goes at once,
        up to a second's worth (OpenAI enforces a minute's limit over shorter periods: "60,000
        requests/minute may be enforced as 1,000 requests/second")."""
        most = max(self.cost, 1.0)
        if self.bucket:
            most = max(most, self.rate * _SAVED)
        return min(self.limit, most)


class Ration:
    """What is left of a limit on requests whose service says how much (``Left``) but not when
    more comes, as one participant heard it. Sends may go while some is left, counted from the
    latest answer that said it (``number``, the send it answered) through the sends let go after
    it, by any participant on the key; once none is left, the participant sends one request at a
    time (``pacing.Pacing._alone``), until an answer says more is left (the limit's window turned) or a
    refusal's wait tells when: sending every request under way into the limit had them all refused
    at once (bench/busy.py p-litellm: 5-6% of the proxy's requests refused, where one a minute is
    all a client needs to hear the wait).

    A participant's own, not its ``Service``'s: behind LiteLLM's proxy, one key reaches model
    groups with a limit each (the simulated user's and the judge's), and each answer says what is
    left of its own group's. Shared, the judge's answers said the user's group had plenty left.

    LiteLLM's router lets through one request fewer than its ``rpm`` (it refuses once the count
    plus one reaches the limit: after "1 left" comes a refusal), so the last unit said to be left
    is not counted on: it goes as that one request at a time, which costs a round trip against a
    service whose last unit is real, and a refusal against LiteLLM that nothing else could spare.

    What LiteLLM's proxy says is left is of the requests it has answered, while its router counts
    a request as it lets it through: an answer that comes back before a request sent earlier, still
    under way there, says one more is left than the router has. So the participant's requests sent
    before the answered one and still under way when its answer is heard (``older``) are taken
    from what it says is left, as those sent after it are. Counted from the answered one on alone,
    as they were, one request went past the limit for each, refused (test_proxy_busy.py's, two in
    one CI): the proxy answers out of order on a loaded machine, and wherever the model behind it
    is quicker with one request than another."""

    def __init__(self) -> None:
        self.remaining = math.inf  # left as of the answer to send ``number`` (inf: nothing said)
        self.number = -1
        self.older = 0  # the participant's sends before ``number`` under way when its answer was heard

    def heard(self, number: int, said: Quota | Left | NoQuota, under_way: Sequence[int] = ()) -> None:
        """The answer to send ``number`` said ``said`` of the limit on requests, heard while the
        participant's sends numbered ``under_way`` (in order) were under way. A response older than
        the last one is ignored; one that says no ``Left`` ends the ration (it says nothing now, or
        says its reset, which the meters pace on)."""
        if number <= self.number:
            return
        self.number = number
        match said:
            case Left(remaining=remaining):
                self.remaining = remaining
                self.older = bisect_left(under_way, number)
            case Quota() | NoQuota():
                self.remaining = math.inf

    def dry(self, sends: int) -> bool:
        """Whether the send numbered ``sends`` would reach a limit with nothing left: the sends
        after the one answered, this one among them, and those before it still under way when it
        was heard take what was left but its last unit."""
        return sends - self.number + self.older >= self.remaining


class Pace:
    """The pace found for a service from its answers and refusals alone, where it says nothing of
    its limits, and the pause its latest refusal asked for. Its ``Service`` holds it, so that the
    participants sharing a key share it too: one refused before its first answer goes on at the
    pace its neighbour found, and a refusal's pause holds them all, as the limit they share does.
    ``busy.Places`` finds and changes it, with what a refusal and an answer teach of it
    (``refusals.py``, ``answers.py``)."""

    def __init__(self) -> None:
        self.rate = 0.0  # requests a second, all participants together (0: not paced)
        self.growing = True  # doubling until the first refusal after the start's
        # Set at the service's first answer, where it said nothing of its limits: the places'
        # worth spread over that answer's latency, grown by a step at each answer until the first
        # refusal, rather than sent at once (``answers.opened``).
        self.opening = False
        self.opened = False  # whether that was done already for this service
        self.latency = 1.0  # the first answer's latency, where it opened the pace
        self.estimated = False  # found at that refusal, and refused nothing since
        self.step = math.inf  # the most it grows at one answer while doubling
        # Whether a request sent at the rate was answered: a rate made up from a pause, with
        # nothing let through yet, tells nothing of the limit until then.
        self.proven = False
        self.next = 0.0  # the moment the pace allows the next send, of whichever participant
        self.queued = -math.inf  # when a request of any participant last began to wait for the pace
        self.paused_until = 0.0  # the moment the latest refusal's pause ends
        # Whether that pause was as long as the service asked (a Retry-After, or the reset it
        # said), not made up where it said nothing (``busy.Patience.first``): a limit that said
        # how long to wait has a request's worth again at its end (``refusals.unseen``).
        self.asked = False
        self.resumed = -math.inf  # when the last refusal's pause ended
        self.cut_after = -1  # refusals of requests sent up to this send number are news already taken
        self.answers: deque[float] = deque()  # when the answered requests of the last second were sent
        # The most of the last second's answers as of their latest trim (``most`` reads it beside
        # those counted now): between two trims the answers only grow, so the most of them is the
        # count just before the next one, kept then, and not read on every answer.
        self.trimmed_most = 0
        self.answered = False  # whether the service has answered a request of any participant
        # Taken at the opening's refusal from what was answered, the sends let through telling no
        # rate (``refusals.opening_refused``): a refusal of a burst each pause saves up then cuts
        # it by the burst's number, until one that is not (``gaps.saved_up``).
        self.unfounded = False
        # How many refusals in a row came within a second of a pause, the pace over ``most``: a
        # pace let through only on what each pause saved up (``refusals.drained``).
        self.drained = 0
        # The refusals of another limit still to be bounded by what was under way then
        # (``refusals.beside_count``), since the pace was made to stand on what a count's window
        # let through alone (``refusals.ended_at_count``): two at most, none once they came.
        self.counted = 0
        # Where the first of those held a found pace under what ``taught`` found (``ceiling``),
        # the pace grows back toward it from ``probe_from`` on, ``probe`` at each answer, until
        # the next refusal (0: no such bound).
        self.ceiling = 0.0
        self.probe = 1.0
        self.probe_from = math.inf
        # Whether a sender the participants here do not see may take from the same limit: a
        # refusal came that their own sends cannot have caused, or that a strict limit would not
        # have (``refusals.unseen``, ``refusals.behind``). A pace found then grows again as at the
        # start from ``regrow_from`` on, once no refusal has found or cut it for a while
        # (``answers.climbed``); ``regrown_from`` is the rate it grew again from (0: not growing
        # so), and ``regrow_waits`` how many times ten pauses' time it waits: twice as long after
        # each such growth that found the pace no higher than it began.
        self.unseen = False
        self.regrow_from = math.inf
        self.regrown_from = 0.0
        self.regrow_waits = 1
        self.passed = False  # whether the last refusal taught was one ``refusals.unseen`` passed over
        # Where the opening's refusal took the pace from what bounds the limit only from below
        # (``refusals.opening_refused``), from when it grows again as at the start, once, until its
        # next refusal finds it (``answers.climbed``; inf: not so). Found, a pace is otherwise moved
        # up only a twentieth of a percent a second, and a refusal moves it only down.
        self.bracketed_from = math.inf

    @property
    def most(self) -> int:
        """The most requests sent within one second that were answered, over the whole run: what
        the service is known to let through, beside the last second's, which a lull (the requests
        waiting on another participant, or a pause) leaves with next to nothing."""
        return max(self.trimmed_most, len(self.answers))

    def heard(self, sent: float) -> None:
        """An answer to a request sent at ``sent``: among the last second's answers, and the most of
        them so far. The second is one of sends, the one before ``sent``, not the one before the
        answer came: an answer that took a second or more was sent before that second, and was
        trimmed as it came, so none ever counted, and the opening's refusal took the limit for
        under a request per latency (0.9 a second against a bucket of 50, answers of 1 s)."""
        answers = self.answers
        answers.append(sent)
        gone = sent - 1.0
        if answers[0] < gone:
            self._trimmed(len(answers) - 1, gone)  # the count before this answer, at its most since the last trim

    def let_through(self, now: float) -> int:
        """How many of the requests sent in the second before ``now`` were answered."""
        answers = self.answers
        gone = now - 1.0
        if answers and answers[0] < gone:
            self._trimmed(len(answers), gone)
        return len(answers)

    def _trimmed(self, most: int, gone: float) -> None:
        """The answers to requests sent before ``gone`` leave the last second's, ``most`` of them
        counted just before: the most since the last trim, kept."""
        if most > self.trimmed_most:
            self.trimmed_most = most
        answers = self.answers
        while answers and answers[0] < gone:  # an answer that took over a second goes at once
            answers.popleft()


# The share of the rates a service tells that its participants aim at (``Service.share``). What is
# left of it absorbs the jitter of the way there: of a strict bucket's, a request that arrives
# even a millisecond before the next unit is refused. It starts at SHARE; a refusal takes 3% off
# it (SHARE_CUT, ``refusals.taught``), or 2.5% (SHARE_HELD_CUT) where a strict limit's requests
# wait at the wire for their moment, the jitter of the way there mostly gone; each answer gives a
# step of that back (``answers.grown``), up to SHARE_MOST. Here, beside the share, so that what a
# refusal teaches and what an answer teaches read them from the ground, neither from the other.
SHARE = 0.98  # to start with
SHARE_MOST = 0.995
SHARE_CUT = 0.97
SHARE_HELD_CUT = 0.975
# Where a strict limit's requests wait at the wire for their moment, the jitter of the way there
# is mostly gone: the share is raised to SHARE_HELD (``wire.Wire.due``), and a refusal takes 2.5%
# off it rather than 3% (SHARE_HELD_CUT, given back over as many answers). A margin kept for jitter
# that is not there is lost on every gap: a strict bucket saves nothing up for a request that comes
# late. The share is the service's, the same for every participant sharing it.
SHARE_HELD = 0.995
# An answer quicker than OVERLAP is the machine's own work (an in-process fake), not a service's
# latency: it opens no pace (``answers.opened``), and more places would not overlap it with
# anything (``busy.Places._kept_up``).
OVERLAP = 0.001


class Service:
    """What the participants of a run know of one service's limits: what is left of each, the pace
    found where it tells nothing, and the latest sends made against them. Participants that send
    to the same service with the same key share one, so together they keep within the limit they
    share."""

    def __init__(self, share: float = 1.0) -> None:
        self.meters = {"requests": Meter(), "tokens": Meter()}
        self.pace = Pace()
        # The share of the rates told that its participants aim at, the same for all of them: one
        # that aimed higher than another would be let go first for every unit.
        self.share = share
        self.each = tuple(self.meters.values())  # the same meters, for the loops of every send
        # The moments of the latest sends. Every send is numbered here and noted at once, so the
        # numbers of those kept are the last ones given, in order (``latest``): a moment alone is
        # kept, without a tuple of its number, made and let go on every request of a run.
        self.sent: deque[float] = deque(maxlen=256)
        self.sends = 0
        self.strict = False  # it has refused a request: sends must keep their gaps as they reach it
        # When the latest two of its sends went on the wire, the later last, where it tells
        # nothing of its limits (``wired``): whether they go at the pace (``answers.written_apart``).
        self.written = (-math.inf, -math.inf)
        # The last send written late once it was no longer the latest, and when (``late``): what
        # ``refusals.behind`` reads of the send before a refused one.
        self.written_late: tuple[int, float] = (-1, -math.inf)
        self.shared = False  # more than one participant of this process sends to it (``answers.climbed``)
        # This process's part of the service's rates: 1 alone, 1/N for each of the N workers of a
        # spread run, so that together they aim at what one process would.
        self.part = 1.0
        # A pause another process of a spread run was told to make (the event loop's time): no
        # request of this one goes before it ends either.
        self.paused_until = 0.0

    def aim(self) -> float:
        """The share of the rates the service told that this process aims at."""
        return self.share * self.part

    def unmetered(self) -> bool:
        """Whether no limit the service told of has a rate: what paces it, if anything, was found
        from its refusals alone. (``pacing.Pacing.unmetered`` reads the same in line: it is asked on
        every paced send, where a call of another object's method is an attribute read more.)"""
        for meter in self.each:
            if meter.rate > 0.0:
                return False
        return True

    def moment_of(self, number: int) -> float:
        """The moment of send ``number`` among the latest (-inf when it is not kept)."""
        back = self.sends - number
        return self.sent[-back] if 1 <= back <= len(self.sent) else -math.inf

    def latest(self) -> Iterator[tuple[int, float]]:
        """The latest sends, the newest first: each one's number and moment."""
        return zip(itertools.count(self.sends - 1, -1), reversed(self.sent))

    def took(self, now: float, share: float) -> int:
        """Note a send at ``now``; its number."""
        number = self.sends
        self.sent.append(now)
        self.sends = number + 1
        for meter in self.each:
            if meter.rate > 0.0:  # what is left of a limit with no rate yet is never read: its first word sets it
                meter.take(now, share)
        return number

    def wired(self, number: int, moment: float) -> None:
        """Send ``number`` went on the wire at ``moment``: among the latest sends, it is noted
        from then, and as the latest written. (Its limits are not: a service with none known.)"""
        back = self.sends - number  # how far from the end of ``sent`` it is kept
        if 1 <= back <= min(len(self.sent), _WIRED_BACK):
            self.sent[-back] = moment
        self.written = (self.written[1], moment)

    def late(self, number: int, moment: float) -> None:
        """Send ``number`` reached the service no sooner than ``moment``, later than it was let go:
        if it is still the latest send, each limit counts it from then, so that the next send, of
        whichever participant, keeps a whole gap after it; if not, it is noted as ``written_late``."""
        if self.sent and self.sends - 1 != number:
            self.written_late = (number, moment)
            return
        if not self.sent or self.sent[-1] >= moment:
            return
        self.sent[-1] = moment
        for meter in self.meters.values():
            if meter.rate > 0 and meter.moment < moment:
                # What was left when it was let go, at most a request's worth, is what is left
                # when it went: the limit grew back nothing for it meanwhile.
                meter.moment = moment


class Send(msgspec.Struct, frozen=True, gc=False):
    """One request let go: to which service's count, its number there, and when. (Not tracked by
    the garbage collector: nothing it holds leads back to it, and one is made for every request.)"""

    service: Service
    number: int
    moment: float
    metered: bool = False  # paced on what the service said is left
    pace: float = 0.0  # the requests a second the participant sent at, without word from the service
    ahead: float = 0.0  # how long before its moment it was let go, to wait at the wire for it


class Services:
    """The services a run's participants send to, each found by what ``Told.service`` says.

    In a process of a spread run, ``part`` is its part of every service's rates, and ``heard`` is
    told of each pause a service asked for (its name and the seconds), to pass on to the other
    processes, whose pauses come in through ``held``. A run in one process has neither."""

    def __init__(self, part: float = 1.0, heard: Callable[[str, float], None] | None = None) -> None:
        self._known: dict[str, Service] = {}
        self._held: dict[str, float] = {}  # pauses of services no participant here has named yet
        # Whether another process of a spread run told of a pause (``held``): a participant's first
        # try then waits for it (``paused``), and never takes ``Places``' free way. A plain
        # attribute, not a property: the free way asks it on every request.
        self.told_of_pauses = False
        self.part = part
        self.heard = heard

    def of(self, service: str, mine: Service) -> Service:
        """The service known by that name, which is ``mine`` if no participant knew it yet."""
        known = self._known.get(service)
        if known is not None:
            if known is not mine:
                known.shared = True
            return known
        mine.part = self.part
        mine.paused_until = max(mine.paused_until, self._held.pop(service, 0.0))
        self._known[service] = mine
        return mine

    def paused(self, mine: Service) -> float:
        """Until when a participant whose service is ``mine`` waits for the pauses other processes
        of a spread run were told: ``mine``'s. A participant learns which service it sends to
        from its first answer; until then it may send to any of those told to pause, so it waits
        for the latest of them all: the first request of a worker that has not heard from a
        service yet is not sent into another's refusal."""
        if not self.told_of_pauses or mine.paused_until or any(known is mine for known in self._known.values()):
            return mine.paused_until
        return max((*self._held.values(), *(known.paused_until for known in self._known.values())), default=0.0)

    def refused(self, service: str, pause: float) -> None:
        """A service refused a request here and asked for ``pause`` seconds: the other processes
        of a spread run are told."""
        if self.heard is not None and service and pause > 0:
            self.heard(service, pause)

    def held(self, service: str, until: float) -> None:
        """Another process was asked to pause sending to ``service`` until ``until`` (this event
        loop's time): so is every participant here."""
        self.told_of_pauses = True
        known = self._known.get(service)
        if known is None:
            self._held[service] = max(self._held.get(service, 0.0), until)
        else:
            known.paused_until = max(known.paused_until, until)
