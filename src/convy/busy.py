"""Busy services, and how much and how fast each participant of a run sends.

A service that refuses a request without acting on it (HTTP 429 or 503) makes its caller raise
``Busy``; that request, and only that one, may be sent again. ``Places`` is one participant's share
of the run — the agent's, the simulated user's model's, or the judge's:

- how many of its conversations or requests are under way at once (``size``), handed out first
  come, first served. A ``cap`` a team set holds it; with none, it starts at ``START`` and grows
  while the places, not the pace, hold requests back, the service answers in time and each place
  still yields answers (one place more per such answer, doubling them in a round as a TCP slow
  start does, or two where most places are held between the participant's requests, as the
  agent's by conversations whose turns are the simulated user's requests too; after a refusal of a service that told nothing of its rate, one per ``size`` such
  answers), and halves at a refusal while nothing paces the service (then the pace's cut alone
  answers it), so that a service with no limit is not held to a few at once, and a paced one gets
  what its rate needs for its latency;
- how fast it sends: at the rate its service allows, found with no setting, and capped by
  ``per_minute``: one request at a time until the service has answered once, then at the pace it
  tells or its answers and refusals find (``pacing.Pacing``, which ``Places`` holds);
- how long one request may wait for a busy service in all (``Patience``). A refusal's pause is
  the time until the participant's next send; after it, requests go one by one at the pace, the
  refused ones first.

Retries live here and nowhere else. Every wait is noted in the attempt's ``waits.Waits`` (a
context variable set by the attempt), for the timeline of the report. Places keep their moments
in the event loop's time and wait with the loop's timers, so a loop with a virtual clock runs
them in virtual time.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from contextvars import ContextVar, Token
from typing import Any, Generic, Literal, TypeVar

import msgspec

from convy.answers import climbed, counted, grown, measured, news
from convy.deadlines import LIMIT
from convy.growth import Growth
from convy.loops import running
from convy.pacing import Asked, Pacing, Ticket
from convy.quota import OVERLAP, SHARE_MOST, TOLD, UNSAID, Heard, Quota, Send, Service, Services, Told
from convy.refusals import beside_count, ended_at_count, opening_ended, ready, reset, taught, unused
from convy.waits import Who, noted

T = TypeVar("T")

_ROUNDING = 0.001  # how much shorter than it is a reset said in milliseconds may be
# Places with no cap start at START and grow to at most _MOST_PLACES (``records.Limits``' bound),
# as their answers say they should (``growth.Growth``: an answer in time, places that pay, the slow
# start, the halving at a refusal). An answer quicker than ``quota.OVERLAP`` is the machine's own
# work (an in-process fake), which more places would not overlap with anything: it grows nothing.
START = 4
_MOST_PLACES = 100_000


# A request let go the free way (``Places.freely``): its service, its number there, when it went,
# its rank among the participant's requests (the order a refusal's tries keep), and for one held
# in a place the token of its ``Told`` (``TOLD``), reset as it ends. A plain tuple: one is made for
# most requests of a run whose participants answer in-process.
Freed = tuple[Service, int, float, int, "Token[Told | None] | None"]


# ``TOLD``'s set and reset as the free way calls them, bound once: looked up on the variable at
# each call (``TOLD.set(...)``), the two cost about 1,000 instructions more a request in a run
# (cachegrind, bench/free_way.py), though not in a loop of them alone.
_TOLD_SET, _TOLD_RESET = TOLD.set, TOLD.reset


def _loop_time() -> float:
    """The running event loop's time."""
    return running().time()


def _clocked(loop: asyncio.AbstractEventLoop) -> Callable[[], float]:
    """The clock the free way reads, found where it begins: asyncio's own loops read
    ``time.monotonic`` (``BaseEventLoop.time``), which is then read itself, for a fifth of what
    finding the running loop and asking it costs (``_loop_time``) on every request; a loop of
    another clock (a virtual one in tests, uvloop's) is asked as it is, bound to it. A
    participant's places are made in the loop that uses them (``records.Limits.places``): bound
    to it, the clock is the one every other way of theirs reads."""
    if type(loop).time is asyncio.BaseEventLoop.time:
        return time.monotonic
    return loop.time


class Busy(Exception):
    """A service refused a request before acting on it; sending it again is safe.

    ``retry_after`` is the seconds the service asked to wait, when it said. ``final`` marks a
    request already sent again until the participant's patience ran out (``Places.resent``): the
    turn it was part of is not played again. ``spent`` is what the agent's turn had spent before
    the refusal (an ``agent.Answer`` whose text is unused: its requests and steps), given by an
    agent that knows it, so an attempt that ends on it keeps them.
    """

    def __init__(self, reason: str, retry_after: float | None = None, spent: Any = None, final: bool = False) -> None:
        super().__init__(reason)
        self.retry_after = retry_after
        self.spent = spent
        self.final = final

    def spending(self, spent: Any) -> Busy:
        """The same refusal, carrying what the turn had ``spent`` (an ``agent.Answer``)."""
        return Busy(str(self), self.retry_after, spent, self.final)



class Patience(msgspec.Struct, frozen=True):
    """How long one request may wait for a busy service, in all its tries, in seconds."""

    seconds: float = 300.0
    first: float = 1.0  # the wait after a refusal that gave no Retry-After (or 0), doubled each time

    def __post_init__(self) -> None:
        if self.seconds < 0 or self.first <= 0:
            raise ValueError("patience must be at least 0 s, and its first wait more than 0 s")


class _Unnamed(Told):
    """The ``Told`` of the requests a participant sends the free way (in ``Places._tried``): one
    for all of them, hearing nothing. A service that names itself on it (the HTTP layer, as a
    request starts) ends the free way: the participant's next requests are sent as any are, each
    with its own ``pacing.Asked``, and hear from it. The name is kept (``named``) for a refusal of
    the request that gave it, whose pause the other processes of a spread run are then told of."""

    def __init__(self, places: Places) -> None:
        self._places = places
        self.named = ""

    @property
    def service(self) -> str:
        return ""

    @service.setter
    def service(self, service: str) -> None:
        if service:
            self.named = service
            self._places._free = None

    @property
    def heard(self) -> Heard:
        return UNSAID

    @heard.setter
    def heard(self, heard: Heard) -> None:
        pass  # what a service said of a request sent the free way is not kept: the next ones hear it


class Seat:
    """One place taken from a participant's ``Places`` and held until ``release``, which may be
    called more than once."""

    def __init__(self, places: Places) -> None:
        self._places = places
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            self._places._freed()


class Places:
    """A participant's places: how much it has under way at once, how fast it sends, how long it waits.

    It changes inside — who waits for a place, with no ``cap`` (``size`` 0) how many places it has,
    and when its requests go (``pacing.Pacing``: what is under way, who waits for a moment to send,
    the pace it found for its service and what the service said is left) — and shows only its counts: ``size`` (its places now), ``peak`` (the
    most under way at once), ``refused`` (requests a service refused), ``given_up`` (requests that
    ran out of patience) and ``sends``.
    """

    def __init__(
        self,
        size: int,
        who: Who = "agent",
        per_minute: int = 0,
        patience: Patience | None = None,
        services: Services | None = None,
    ) -> None:
        if size < 0:
            raise ValueError("places cannot be negative (0: no cap, they grow)")
        if per_minute < 0:
            raise ValueError("per_minute cannot be negative (0: no limit)")
        self.cap = size  # set by the team (0: none, the places grow and shrink)
        self.size = size or START
        self.who: Who = who
        self.per_minute = per_minute
        self.patience = patience or Patience()
        self.peak = 0
        self.refused = 0
        self.given_up = 0
        self._taken = 0
        self._place_queue: deque[asyncio.Future[None]] = deque()
        self._services = services or Services()
        # When its requests go (``Pacing``): the service it sends to, what is under way, the
        # requests waiting for their moment, its way to the wire. Those waiting are read here as
        # ``_send_queue``, the same list: the free way asks it on every request, one hop less.
        # Places holds fewer than 30 fields: from 30 on, CPython 3.11 keeps an object's fields in a
        # dict of its own, not in line, and every read of one costs more, on the free way on every
        # request (bench/free_way.py's paced figure: 157,294 instructions an attempt with the 35
        # fields it held before ``Pacing``, 146,052 with its 23, 156,793 with 12 unused added).
        self._pacing = Pacing(self._services, per_minute)
        self._send_queue: list[Ticket] = self._pacing.tickets
        # The ranks given so far: one to each first try, in the order they began, which a
        # refusal's tries keep (``_later``). A try on the free way is a send as well (``sends``):
        # it is counted by its rank alone, one count less on every request; the ranks of the
        # other tries, and the sends counted apart from them (``Pacing.sent``), are counted too.
        self._ranked = 0
        self._ranked_apart = 0  # ranks given to tries not sent the free way
        # Its service, while its latest answers came in-process, without word from any service:
        # its first tries that wait for nothing are then sent the free way (``_tried``) until a
        # request names one; None otherwise. Never again after a refusal or a turn's request over
        # HTTP (``refused``, ``inward``), which end it for good: ``freely`` asks this alone for
        # the three, and sends to the service it holds, ``Pacing.service`` (which no request
        # changes while the free way lasts: a request that names a service ends it first).
        self._free: Service | None = None
        self._unnamed = _Unnamed(self)
        # The clock the free way reads: the event loop's where the free way began (``_clocked``).
        self._clock: Callable[[], float] = _loop_time
        self.inward = False  # whether its turns' requests went through convy's HTTP layer (resent)
        # An agent's turn under way (``agent.turned``), by whether its requests are paced: made
        # once, not on every turn (a turn holds nothing else).
        self.turns = (AgentTurn(self, False), AgentTurn(self, True))
        # With no cap, what its answers say of how many places it should have (``_kept_up``,
        # ``_refusal``). Whether a place was free since the round of answers began is kept here,
        # not there: the free way frees a place on every request, and writes it then.
        self._growth = Growth()
        self._wanting = 0  # its requests that take a place waiting for one (``answers.pressed``)
        self._slack = True  # whether a place was free since the round of answers began (``Growth.grown``)

    @property
    def sends(self) -> int:
        """The requests this participant let go: those on the free way, one to each of their
        ranks, and the others."""
        return self._ranked - self._ranked_apart + self._pacing.sent

    def _rank(self) -> int:
        """A rank for a first try not sent the free way."""
        rank = self._ranked
        self._ranked = rank + 1
        self._ranked_apart += 1
        return rank

    # --- places at once --------------------------------------------------------------------------

    async def seat(self) -> Seat:
        """Wait for a free place, first come first served, and hold it until the seat is released."""
        if self._taken < self.size and not self._place_queue:
            self._taken += 1
        else:
            future = asyncio.get_running_loop().create_future()
            self._place_queue.append(future)
            try:
                await future
            except asyncio.CancelledError:
                if future.done() and not future.cancelled():
                    self._freed()  # handed over as the wait was cancelled: hand it on
                elif future in self._place_queue:  # a place freed meanwhile has passed it by already
                    self._place_queue.remove(future)
                raise
        self.peak = max(self.peak, self._taken)
        return Seat(self)

    @asynccontextmanager
    async def one(self) -> AsyncIterator[None]:
        """Hold one place while the block runs: a conversation, or one try of a request."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        seat = await self.seat()
        noted(self.who, start, loop.time() - start, "place")
        try:
            yield
        finally:
            seat.release()

    def _freed(self) -> None:
        if self._taken <= self.size:  # more are taken than there are places after a refusal: this one goes
            while self._place_queue:
                future = self._place_queue.popleft()
                if not future.done():
                    future.set_result(None)  # the place goes to the one who waited longest
                    return
        self._taken -= 1
        self._slack = True

    def _kept_up(self, send: Send, now: float) -> None:
        """``send`` answered at ``now``: with no cap, where the places held requests back, as many
        places more as its answer grows them by (``Growth.grown``), handed at once to those who
        waited longest. An answer within ``quota.OVERLAP`` grows nothing, and counts in no round of
        answers."""
        if (self._taken < self.size and not self._place_queue) or self.size >= _MOST_PLACES:
            return
        if now - send.moment < OVERLAP:
            return
        slack = self._slack
        self._slack = False  # where a place was free since, a round of answers begins at this one
        pacing = self._pacing
        under_way = pacing.under_way
        # How many places each request under way stands for (0 where none is, or some wait for the pace).
        held = self._taken // len(under_way) if under_way and not self._send_queue else 0
        backlogged = pacing.backlog <= send.moment
        grown = self._growth.grown(send, now, self.size, slack, backlogged, held, pacing.service, self.per_minute)
        if not grown:
            return
        self.size = min(_MOST_PLACES, self.size + grown)
        while self._taken < self.size and self._place_queue:  # the new place goes to the one who waited longest
            future = self._place_queue.popleft()
            if not future.done():
                self._taken += 1
                future.set_result(None)

    # --- sending ---------------------------------------------------------------------------------

    # sent and retried hand back _tried's coroutine itself, to be awaited, and a first try that
    # waits for nothing is sent and answered in it: one coroutine for each of a run's requests,
    # and one frame less on the way each time a request under way waits and wakes.

    def sent(self, request: Callable[[], Awaitable[T]]) -> Coroutine[Any, Any, T]:
        """``request`` sent within a place, at the participant's pace, tried again while the
        service is busy and the participant's patience lasts."""
        return self._tried(request, True)  # positional: a keyword costs more on every request

    def retried(self, request: Callable[[], Awaitable[T]], paced: bool = True) -> Coroutine[Any, Any, T]:
        """``request`` sent at the participant's pace and tried again while busy, in a place the
        caller already holds (a turn of an open conversation). Unless ``paced``, it waits for a
        pause a service asked for but not for the pace: opening a conversation, which sends
        nothing for convy's own agents."""
        return self._tried(request, False, paced)

    def resent(self, request: Callable[[], Awaitable[T]], paced: bool = True) -> Coroutine[Any, Any, T]:
        """``request``, one of the requests an agent sends inside a turn (``TURN``), sent again
        while its service is busy, on its own: never the whole turn. Once its patience runs out
        the ``Busy`` raised is ``final``. From the first of them on, the participant's turns are no
        longer paced as requests themselves (``inward``): their requests are. In a turn that was
        paced itself (begun before that was known), its requests are not paced again (``paced``
        False): they wait only for a pause the service asked for."""
        self.inward = True
        self._free = None  # for good: ``freely`` asks ``_free`` alone
        return self._resent(request, paced)

    async def _resent(self, request: Callable[[], Awaitable[T]], paced: bool) -> T:
        # The request itself sends nothing more through this turn. Its waits for a pause or the
        # pace are not counted against the turn's time limit (``deadlines.LIMIT``, held in ``_later``).
        token = TURN.set(None)
        try:
            return await self._tried(request, False, paced)
        except Busy as busy:
            raise Busy(str(busy), busy.retry_after, busy.spent, final=True) from busy
        finally:
            TURN.reset(token)

    async def _tried(self, request: Callable[[], Awaitable[T]], held: bool, paced: bool = True) -> T:
        """The first try. When it waits for nothing (``_clear``) it is sent now, for a fraction of
        the cost of the way through ``seat``, ``_turn`` and ``_asked``: the seat, the send and the
        answer noted as ``seat``, ``Pacing`` and ``_answer`` note them, in the same order. Otherwise,
        and after a refusal, the tries go on in ``_later``."""
        if paced:
            ticket = self.freely(held)
            if ticket is not None:
                try:
                    answer = await request()
                except Busy as busy:
                    declined = busy
                except BaseException:
                    self.freely_failed(ticket)
                    raise
                else:
                    self.freely_answered(ticket)
                    return answer
                return await self.freely_refused(request, ticket, declined)
        elif (
            not held
            and self._free is not None
            and not self._send_queue
            and not self._services.told_of_pauses
            and not self._free.pace.paused_until
        ):
            # A try not paced (opening a conversation) on the free way: a paced one would take it
            # (``freely``), and no pause was ever asked of its service (``_clear``'s pause, asked
            # without reading the clock: a service never paused has none). It is sent as below,
            # its ``Told`` a plain one (``Pacing.answered_once``) that names the service of a refusal;
            # what it costs less is finding the loop and ``_clear``, the clock and the rank, and
            # the ``Send``, made only for a refusal. One such try an attempt. (The moment and the
            # rank of a try not paced are never read: it waits in no queue, and its refusal reads
            # only its service's name and pause. The moment of the refusal stands for them.)
            service = self._free
            plain = Told()
            token = _TOLD_SET(plain)
            try:
                return await request()
            except Busy as busy:
                refused = _Refused(busy)
            finally:
                _TOLD_RESET(token)
            now = self._clock()
            refusal = (Send(service, -1, now), plain, refused)
            return await self._later(request, False, False, (now, self._rank()), refusal)
        loop = running()
        now = loop.time()
        rank = self._rank()
        if not self._clear(held, paced, now):
            return await self._later(request, held, paced, (now, rank), None)
        if held:
            self._taken += 1
            if self._taken > self.peak:
                self.peak = self._taken
        pacing = self._pacing
        try:
            told: Told
            if paced:
                send, told = pacing.let_at_once(now)  # no meter, no pace: _clear
            else:
                send = Send(pacing.service, -1, now)
                # Before the participant has an answer, its request may reach a key a neighbour
                # paces: its ``Told`` holds it at the wire for the neighbour's moment (``Pacing.first``).
                told = Told() if pacing.answered_once else Asked(pacing, send, False)
            token = TOLD.set(told)
            try:
                answer = await request()
            except Busy as busy:
                refused = _Refused(busy)
            except BaseException:
                if paced:
                    pacing.landed(send)
                raise
            else:
                if not paced and told.heard.quoted():
                    pacing.unheard = True
                if paced:
                    if told.service or told.heard is not UNSAID or pacing.service.pace.rate > 0.0:
                        self._free = None  # a service heard from, or a pace: not the free way
                        self._answer(send, told, paced)
                    elif pacing.unheard:
                        # A turn paced as a whole whose requests, sent over convy's HTTP layer and
                        # not paced again, were told of the service's limits, which nobody heard
                        # (``Pacing.unheard``). Its answer is no word from the service: the next
                        # request goes alone, and its answer's words pace the rest. Taken for a
                        # word that said nothing, the next ones went at once, the agent's third
                        # was refused before its meters had heard a rate, and the conversations
                        # were halved (bench/busy.py p-b1@3000, each run). A service that says
                        # nothing of its limits opens as before.
                        pacing.unheard = False
                        self._free = None
                        pacing.landed(send)
                    else:
                        # A service that said nothing of its limits, with no pace found yet.
                        pacing.answered_plainly(send)
                        service = pacing.service
                        # Answered in-process: the next requests take the free way, unless a
                        # refusal or a turn's request over HTTP (``inward``) ended it for good.
                        self._free = None if self.refused or self.inward else service
                        # A name a request of an earlier stretch of the free way gave is not this
                        # stretch's: ``freely_refused`` reads it wherever ``_free`` is None, which
                        # a refusal of another request also makes it now.
                        self._unnamed.named = ""
                        self._clock = _clocked(loop)
                        self._plainly_answered(service, send.number, now, send)
                return answer
            finally:
                TOLD.reset(token)
        finally:
            if held:
                self._freed()
        return await self._later(request, held, paced, (now, rank), (send, told, refused))

    # The free way, in steps, so that a caller may take it without ``_tried``'s coroutine: the
    # caller awaits the request between ``freely`` and one of ``freely_answered``, ``freely_failed``
    # and ``freely_refused`` (``agent.turned``, ``model.PatientModel``, ``judge.PatientJudge``).

    def freely(self, held: bool) -> Freed | None:
        """A paced first try's start on the free way, or ``None`` where it does not take it.

        The free way: a participant whose answers so far came in-process, naming no service and
        saying nothing of a limit, its turns' requests not over HTTP (``inward``) and nothing
        refused (``_free``, all three, which holds the service it sends to), nothing waiting, no
        pause told by another process, and (``held``) a place free — so no pace, no meter, no
        strict limit: ``_clear``, in short. The moment is read on the loop's own clock
        (``_clocked``). The send is counted as ``Pacing`` counts it, without the ``Send`` and the
        ``pacing.Asked`` of each request, which only a service over HTTP would hear from, and the
        place taken as ``seat`` takes it. (Not ``Pacing.next``, as ``Pacing`` moves it: with no per-minute cap, which the free way never
        has, it is only ever read beside the moment now, and is the moment of a send gone by
        either way.)

        A request held in a place (``sent``: a simulated user's or a judge's model) may go over
        convy's HTTP layer after all: its ``Told`` is the places' ``_Unnamed``, on which the HTTP
        layer names its service as it starts, ending the free way for the next requests. An
        agent's turn (``retried``, ``agent.turned``) needs none: convy's HTTP layer sends a turn's
        requests through the turn under way (``TURN``, ``AgentTurn.resent``), each with a ``Told`` of
        its own, and never reads the turn's; a context variable set and reset on every turn cost
        more than the rest of the free way."""
        service = self._free
        if service is None or self._send_queue or self._services.told_of_pauses:
            return None
        if held:
            taken = self._taken
            if taken >= self.size or self._place_queue:
                return None
            self._taken = taken = taken + 1
            if taken > self.peak:
                self.peak = taken
            told: Token[Told | None] | None = _TOLD_SET(self._unnamed)
        else:
            told = None
        number = service.sends
        now = self._clock()
        service.sent.append(now)
        service.sends = number + 1
        rank = self._ranked
        self._ranked = rank + 1
        return service, number, now, rank, told

    def freely_answered(self, ticket: Freed) -> None:
        """The request ``freely`` let go was answered: counted as ``_answer`` counts it, and its
        place freed. (An agent's own code that calls its service itself answers in-process too,
        as slowly as the service: its places grow as any others.)"""
        # ``_plainly_answered`` (with ``_plainly_landed``) and ``_unseated`` in line: two calls
        # less on every request, three where the places are all taken (an agent's turns, whose
        # conversations hold them).
        service, number, sent, _, told = ticket
        if told is not None:
            _TOLD_RESET(told)
        pace = service.pace
        # ``Pace.heard`` in line: the answer just noted was sent at ``sent``, no older than the
        # second before it, so the trim stops at it at the latest.
        answers = pace.answers
        answers.append(sent)
        gone = sent - 1.0
        if answers[0] < gone:
            heard = len(answers) - 1  # the most since the last trim (``Pace.most``)
            if heard > pace.trimmed_most:
                pace.trimmed_most = heard
            answers.popleft()
            while answers[0] < gone:
                answers.popleft()
        if service.share < SHARE_MOST and number > pace.cut_after:
            grown(self._pacing.service, self._pacing.wire.gated)
        if not self.cap and (self._taken >= self.size or self._place_queue):  # _plainly_landed in line
            answered = self._clock()
            if answered - sent >= OVERLAP:
                self._kept_up(Send(service, number, sent), answered)
        if self._send_queue:
            self._pacing.release()
        if told is None:
            return
        if self._place_queue:
            self._freed()
        else:
            self._taken -= 1
            self._slack = True

    def freely_failed(self, ticket: Freed) -> None:
        """The request ``freely`` let go raised something else than ``Busy``: what ``Pacing.landed``
        lets go (the send was never counted as flying), and its place freed."""
        told = ticket[4]
        if told is not None:
            _TOLD_RESET(told)
        if self._send_queue:
            self._pacing.release()
        if told is not None:
            self._unseated()

    def freely_refused(self, request: Callable[[], Awaitable[T]], ticket: Freed, busy: Busy) -> Coroutine[Any, Any, T]:
        """The request ``freely`` let go was refused: its place freed, and the tries go on as any
        refused request's (``_later``), its send flying until the refusal lands it, and its
        service named if it named one on the way."""
        service, number, now, rank, told = ticket
        if told is not None:
            _TOLD_RESET(told)
            self._unseated()
        self._pacing.flies(number)
        heard = Told()
        if self._free is None:
            heard.service = self._unnamed.named
        refused = (Send(service, number, now), heard, _Refused(busy))
        return self._later(request, told is not None, True, (now, rank), refused)

    def _unseated(self) -> None:
        if self._place_queue:
            self._freed()
        else:  # _freed, with nobody waiting for the place
            self._taken -= 1
            self._slack = True

    def _plainly_answered(self, service: Service, number: int, sent: float, send: Send | None) -> None:
        """``_answer``, for a request of the quick path or the free way (``_tried``), whose service
        said nothing of its limits, with no pace found yet: ``answers.counted``, ``_kept_up`` and what
        ``Pacing.landed`` lets go, in line. The last second's answers are those sent in the second before
        it was ``sent`` (``Pace.heard``): no clock is read for it. An answer within ``OVERLAP``
        grows no place (``_kept_up``): the free way makes no ``Send`` (``send`` None) and reads no
        clock for it where nothing else does."""
        pace = service.pace
        pace.heard(sent)
        if service.share < SHARE_MOST and number > pace.cut_after:  # at the most after some 85 answers
            grown(service, self._pacing.wire.gated)
        if self._send_queue or (not self.cap and (self._taken >= self.size or self._place_queue)):
            self._plainly_landed(service, number, sent, send)  # only where there is any

    def _plainly_landed(self, service: Service, number: int, sent: float, send: Send | None) -> None:
        """What ``_plainly_answered`` does once the answer is counted: ``_kept_up`` and what
        ``Pacing.landed`` lets go."""
        if not self.cap and (self._taken >= self.size or self._place_queue):
            answered = self._clock()  # the clock ``sent`` was read on
            if answered - sent >= OVERLAP:
                self._kept_up(Send(service, number, sent) if send is None else send, answered)
        if self._send_queue:
            self._pacing.release()

    async def _later(
        self,
        request: Callable[[], Awaitable[T]],
        held: bool,
        paced: bool,
        rank: tuple[float, int],
        refused: tuple[Send, Told, _Refused] | None,
    ) -> T:
        """The tries of a request whose first could not go at once, or was ``refused``: each waits
        for a place (when it takes one), for a pause to end and for its moment at the pace."""
        loop = asyncio.get_running_loop()
        refused_at = -1.0
        refusals = 0
        delay = self.patience.first
        while True:
            answer: _Answered[T] | _Refused
            if refused is not None:
                send, told, answer = refused
                refused = None
            elif held:  # as ``one`` holds a place, without a context manager's cost on every request
                start = loop.time()
                self._wanting += 1
                try:
                    seat = await self.seat()
                finally:
                    self._wanting -= 1
                noted(self.who, start, loop.time() - start, "place")
                try:
                    send = await self._turn(rank, paced, refused_at)
                    told = self._pacing.told(send, paced)
                    answer = await self._asked(request, told, send, paced)
                finally:
                    seat.release()
            else:
                limit = LIMIT.get()  # the agent's turn's time limit, which a wait is not counted against
                if limit is None:
                    send = await self._turn(rank, paced, refused_at)
                else:
                    with limit.held():
                        send = await self._turn(rank, paced, refused_at)
                told = self._pacing.told(send, paced)
                answer = await self._asked(request, told, send, paced)
            match answer:
                case _Answered(value=value):
                    return value
                case _Refused(busy=busy):  # noqa: F841 - bound by the pattern
                    now = loop.time()
                    refused_at = now if refused_at < 0 else refused_at
                    refusals += 1
                    # A Retry-After of 0 (or a date gone by) says nothing of how long the service
                    # stays busy: taken at its word, it would be asked again at once, without end.
                    pause = busy.retry_after or delay
                    if not busy.retry_after:
                        delay = min(delay * 2, 60.0)
                    if now + pause - refused_at > self.patience.seconds:
                        # A pause longer than anyone's patience is not imposed on the others:
                        # their own refusals will tell them.
                        self.given_up += 1
                        self._refusal(send, now, 0.0, told, paced, first=False, asked=False)
                        raise Busy(
                            f"{busy} — still busy after waiting {now - refused_at:.1f} s "
                            f"(patience {self.patience.seconds:g} s)",
                            busy.retry_after,
                        ) from busy
                    self._refusal(send, now, pause, told, paced, first=refusals < 3, asked=bool(busy.retry_after))

    def _clear(self, held: bool, paced: bool, now: float) -> bool:
        """Whether a first try at ``now`` would wait for nothing: a free place (when it takes one),
        no pause, and, when paced, no pace — no per-minute, no refusal yet, no limit the service
        told or pace found (by any participant on its key), no one before it — so that it goes at
        once. (``Pacing._alone`` and ``Pacing.unmetered`` in line: this is asked before every
        request.)"""
        if held and (self._taken >= self.size or self._place_queue):
            return False
        pacing = self._pacing
        service = pacing.service
        pace = service.pace
        if pace.paused_until > now or self._services.paused(service) > now:  # here, or in another process of a spread run
            return False
        if not paced:
            return True
        if (
            self.per_minute
            or self.refused
            or pace.rate > 0.0  # found by a neighbour on the same key, if not by this participant
            or self._send_queue
            or service.strict  # a strict limit paces each send from when it went on the wire
            or pacing.unwritten is not None
            or pacing.ration.dry(service.sends)  # nothing left that the service said: one at a time (_alone)
        ):
            return False
        if not pacing.answered_once and pacing.under_way and (pacing.asking is None or pacing.asking.service):
            return False  # _alone
        for meter in service.each:
            if meter.rate > 0.0:
                return False
        return True

    async def _asked(
        self, request: Callable[[], Awaitable[T]], told: Told, send: Send, paced: bool
    ) -> _Answered[T] | _Refused:
        token = TOLD.set(told)
        try:
            answer = await request()
        except Busy as busy:
            return _Refused(busy)
        except BaseException:
            if paced:
                self._pacing.landed(send)
            raise
        finally:
            TOLD.reset(token)
        if told.service or told.heard is not UNSAID:
            self._free = None  # a service heard from: the free way is over
        self._answer(send, told, paced)
        return _Answered(answer)

    def _turn(self, rank: tuple[float, int], paced: bool, refused_at: float) -> Coroutine[Any, Any, Send]:
        """Wait for this request's moment to be sent (``Pacing.turn``), once a pause its service
        asked for is found to end within the participant's patience."""
        start = asyncio.get_running_loop().time()
        left = self.patience.seconds - (start - refused_at if refused_at >= 0 else 0.0)
        paused = self._pacing.paused()
        if paused - start > left:
            self.given_up += 1
            raise Busy(
                f"the service asked to wait {paused - start:.1f} s more, past the patience of "
                f"{self.patience.seconds:g} s"
            )
        why: Literal["busy", "pace"] = "busy" if refused_at >= 0 or paused > start else "pace"
        return self._pacing.turn(rank, paced, refused_at, start, why, self.who)

    def _answer(self, send: Send, told: Told, paced: bool) -> None:
        if not paced:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        pacing = self._pacing
        if told.service:
            pacing.known(told.service)
        pacing.answered()
        service = pacing.service
        measured(service, send, told.heard, True, pacing.wire.wired)
        if send.service is service:  # its number counts this service's sends
            pacing.ration.heard(send.number, told.heard.requests, pacing.under_way)
        match told.heard.requests:
            case Quota(limit=limit) if 0 < limit <= 1:
                # A limit that holds one request at a time (a bucket of burst 1) is strict before
                # it refuses anything: from now on the sends are paced from the wire, where the
                # HTTP layer tells it, and the refusal that would have shown it is not needed.
                service.strict = True
            case _:
                pass
        counted(service, send, now, self.size, self.per_minute, pacing.wire.gated)
        pace = service.pace
        if pace.rate > 0 and news(service, send):
            # Answers to requests sent before the last cut say nothing of the pace after it, nor
            # do those sent before the participant knew its service (the pace was not theirs);
            # those after it try the pace while it holds requests back: one of this participant's
            # waited for it while the answered one was under way (or one of any participant on
            # the key did, which ``climbed`` reads of the pace).
            backlog = -math.inf if self._wanting else pacing.backlog
            waited = bool(self._send_queue) or pacing.queued >= send.moment
            climbed(service, send, waited, now, backlog, len(self._send_queue), self.size)
        if not self.cap:
            self._kept_up(send, now)
        if paced:
            pacing.landed(send)

    def _refusal(self, send: Send, now: float, pause: float, told: Told, paced: bool, *, first: bool, asked: bool) -> None:
        self.refused += 1
        self._free = None  # for good: ``freely`` asks ``_free`` alone
        pacing = self._pacing
        if told.service:
            pacing.known(told.service)
        # Sent alone once the service had said nothing was left (``Ration``): its refusal is the
        # count used up, which only the window's turn gives back, not a pace or places past what
        # the service carries. Neither is cut: cut, they stayed there after the wait (LiteLLM's
        # rpm, bench/busy.py p-litellm: the next minute's 151 requests in 15 s, the first's 299
        # in 0.8, in virtual time). But it still ends a pace opening or growing, at what the
        # sends before the Ration held them went at (``refusals.ended_at_count``): no other
        # refusal may come to end it, and the pace grew on with the places to some 10^6 a second,
        # every pause after a second limit's refusal then ending in a burst into it.
        counted_out = send.service is pacing.service and pacing.ration.dry(send.number)
        if counted_out:
            ended_at_count(pacing.service, pacing.held_from if pacing.held_from >= 0 else send.number)
        elif not self.cap and (narrowed := self._growth.narrowed(send, self.size, pacing.service, self.per_minute)):
            self.size = narrowed
        if not paced:  # a request inside a turn paced as a request itself
            # Not paced, it took nothing from what the participant counts is left: the refusal's
            # own word on when the limit grows back is all there is to go by, and a millisecond
            # more, for a reset said in whole milliseconds.
            said = max(reset(told.heard, "requests"), reset(told.heard, "tokens"))
            if first and said > 0 and pause:
                pause = min(pause, said + _ROUNDING)
            if pacing.service.pace.opening:
                opening_ended(pacing.service, now)
            pacing.pause(now, pause, told, asked=asked)
            pacing.release()
            return
        # Not ``Pacing.answered_once``: a refusal before any answer says nothing of the rate (what was
        # let through is nothing), and a participant that knew no better would go on at once at
        # a rate made up from the pause, refused again and again; until an answer comes, one
        # request at a time. (Unless a neighbour on the same key has had one: ``Pacing.known``.)
        service, pace = pacing.service, pacing.service.pace
        # A refusal shows a strict limit, unless the service says its limit counts more than one
        # request at a time (a window, a burst), where a late request is made up by the next. The
        # first such refusal where the HTTP layer tells when requests went on the wire: from now
        # on they are paced from then, which is what it asked for, not a lower share.
        heard, number = told.heard, send.number
        loose = False
        match heard.requests:
            case Quota(limit=limit) if limit > 1:
                loose = True
            case _:
                pass
        newly_strict = pacing.wire.told and not service.strict and not loose
        service.strict = service.strict or not loose
        if send.service is not service and (pace.rate > 0 or not pacing.unmetered()):
            # Sent before the participant knew its service, whose pace a neighbour on the same key
            # has found (or which says what is left): a request that did not keep that pace says
            # nothing new of it. It goes again at the pace, with no pause of its own, and none
            # imposed on the neighbour, which keeps the limit.
            pacing.landed(send)
            return
        measured(service, send, heard, False, pacing.wire.wired)
        unused(service, send, heard, now)
        if heard.quoted() and first:
            # The service said exactly what is left: the next send goes when that has grown back,
            # which may be sooner than a Retry-After rounded up to whole seconds. A request refused
            # a third time waits the whole Retry-After.
            pause = min(pause, max(ready(service, heard, now) - now, 0.0)) if pause else pause
        if (send.service is not service or number > pace.cut_after) and not counted_out:
            # The first refusal of a request sent after the last cut is news: many requests
            # refused at once are one sign of one overload. (So is one sent before the
            # participant knew its service, of which nobody had found anything yet.)
            counted = pace.counted
            taught(service, send, heard, now, pause, pacing.wire.gated and service.strict, newly_strict)
            if counted:
                # The first since the count's refusal ended the pace at what its window let
                # through (``ended_at_count``): another limit, perhaps of requests at once, which
                # this participant's requests sent before the refused one and still under way
                # bound, over the usual latency (the first answer's until _RECENT were timed, and
                # with a cap, whose places time none).
                under_way = sum(1 for sent in pacing.under_way if sent < number) if send.service is service else 0
                usual = self._growth.usual
                beside_count(service, under_way, usual if usual < math.inf else pace.latency, now, pause)
        pacing.pause(now, pause, told, asked=asked)
        pacing.landed(send)


class AgentTurn:
    """An agent's turn under way: its participant's places, and whether its requests are paced
    (they are unless the turn itself was, ``Places.resent``)."""

    __slots__ = ("places", "paced")

    def __init__(self, places: Places, paced: bool) -> None:
        self.places = places
        self.paced = paced

    def resent(self, request: Callable[[], Awaitable[T]]) -> Coroutine[Any, Any, T]:
        """``request`` sent within this turn's places, again on its own while its service is busy."""
        return self.places.resent(request, self.paced)


# The agent's turn under way: each request the agent sends through convy's HTTP layer in that turn
# is sent again on its own while its service is busy (``AgentTurn.resent``), so a refused request never
# makes the whole turn play again.
TURN: ContextVar[AgentTurn | None] = ContextVar("convy_turn", default=None)


class _Answered(Generic[T]):
    """A request's answer."""

    def __init__(self, value: T) -> None:
        self.value = value


class _Refused:
    """A request's refusal."""

    def __init__(self, busy: Busy) -> None:
        self.busy = busy
