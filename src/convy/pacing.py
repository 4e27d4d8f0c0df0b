"""When a participant's requests go: its queue and its pace.

A participant sends at the rate its service allows, found with no setting. Until the service has
answered once, one request goes at a time — to a service over HTTP: convy's HTTP layer names the
service in a request's ``Told`` as the request starts, and a participant whose request under way
named none answers in-process (a fake, an agent's own code), where waiting would protect nothing.
Where the service tells what is left of its limits (``Quota``: requests and tokens left, and when
they are whole again), the participant paces its sends on that before any refusal. Where it tells
nothing, the requests that waited for its first answer go at a pace of the places' worth over that
answer's latency, not at once (a strict limit refuses the second of two sent together), growing at
each answer until the first refusal; a refusal sets a pace a little under the rate the service let
through, and the pace grows slowly while requests pass and wait for it: additive increase,
multiplicative decrease, on the rate and not on the places. ``per_minute`` caps it. A refusal's
pause (``Retry-After``, or the more exact reset the service sent) is the time until the
participant's next send; after it, requests go one by one at the pace, the refused ones first.

``busy.Places`` holds the places, tries each request (the free way among them) and decides what an
answer or a refusal does to the participant; what it holds as ``Places._pacing`` is kept here
(``Pacing``): the service it sends to, known by name once its requests name it; what is under way;
the requests waiting for their moment, and the timer that lets them go; the moment the cap per
minute allows next; and its way to the wire (``wire.Wire``). What an answer or a refusal teaches
of the service's limits is ``answers.py``'s and ``refusals.py``'s, which ``Places`` asks. Moments
are the event loop's time and waits its timers, so a loop with a virtual clock runs them in
virtual time.
"""

from __future__ import annotations

import asyncio
import heapq
import math
from bisect import insort
from typing import Literal

from convy.quota import SHARE, Ration, Send, Service, Services, Told
from convy.waits import Who, noted
from convy.wire import Wire

# Where the HTTP layer tells when a request went on the wire and the limit is strict, the next
# send is paced from then (``wire.Wire``): it waits for the last let go to be on the wire
# (``Pacing.unwritten``), at most _HOLD seconds.
_HOLD = 1.0


class Asked(Told):
    """The ``Told`` of a request a participant lets go at its pace: it tells the pacing when the
    request went on the wire."""

    def __init__(self, pacing: Pacing, send: Send, gated: bool) -> None:
        self._pacing = pacing
        self._send = send
        self._gated = gated  # a strict limit paced from the wire: the HTTP layer waits for its moment

    def listened(self) -> bool:
        return True

    def due(self, now: float) -> float | None:
        pacing = self._pacing
        if self._gated:
            return pacing.wire.due(self._send, now, pacing.service)
        if pacing.answered_once:
            return None  # sent to a service the participant knows, at its pace already
        return pacing.first(self._send, now, self.service)

    def wrote(self, moment: float) -> None:
        self._pacing.wrote(self._send, moment)


class Ticket:
    """A request waiting for its moment to be sent: older requests go first."""

    def __init__(self, rank: tuple[float, int], future: asyncio.Future[Send]) -> None:
        self.rank = rank
        self.future = future

    def __lt__(self, other: Ticket) -> bool:
        return self.rank < other.rank


class Pacing:
    """When a participant's requests go: the service it sends to and whether it has answered, its
    sends under way, the requests waiting for their moment (``tickets``, oldest first) and the timer
    that lets them go, the moment its cap per minute allows the next send, what the service said is
    left (``ration``) and its way to the wire (``wire``).

    It changes inside as requests are let go, named, written, answered and refused, and lets each go
    at its moment itself (``turn``, ``release``). ``busy.Places`` reads its fields and asks the rest:
    it knows the service when a request names it (``known``), lets a request go at once on its
    quick path (``let_at_once``, ``answered_plainly``), and tells it of an answer (``answered``), a
    refusal's pause (``pause``) and each send that ended (``landed``). ``tickets`` is the list
    ``Places`` reads as its ``_send_queue`` (the free way asks it on every request): changed in
    place, never replaced."""

    def __init__(self, services: Services, per_minute: int) -> None:
        self._services = services
        self._per_minute = per_minute
        # Its own until the service says who it is; then the one it shares with the participants
        # on the same key, with what they found of its limit: what the service said is left, or
        # the ``Pace`` found without word from it, and the pause its latest refusal asked for.
        self.service = Service(SHARE)
        # Whether this participant knows its service has answered a request (its own or, once it
        # knows which service it sends to, a neighbour's on the same key: ``Pace.answered``).
        self.answered_once = False
        self.asking: Told | None = None  # the latest request sent; whether it named a service over HTTP
        # Whether a request not paced itself (one inside an agent's turn paced as a whole) was told
        # of the service's limits, which its pacing, counting the turn, did not hear: the turn's
        # answer is then no word from the service (``busy.Places._tried``).
        self.unheard = False
        # The numbers of its sends flying, in order: how many fly, and what is left counts those before an answered one (``Ration``).
        self.under_way: list[int] = []
        self.sent = 0  # sends let go here (``busy.Places.sends`` counts those on the free way apart)
        self.next = 0.0  # the moment per_minute allows the next send
        self.ration = Ration()  # what its service said is left without a reset, as its answers said it
        # What its way to the wire said (``Wire``): whether the HTTP layer tells when a request
        # went on the wire and waits there for its moment, the latest send on the wire.
        self.wire = Wire()
        # The latest send let go and not on the wire yet, while it is told: the next waits for it
        # (``release``), at most _HOLD seconds.
        self.unwritten: Send | None = None
        # The first of the latest sends let go while the ``Ration`` had nothing left, one at a time
        # (-1: the latest was let go with some left): the sends before it went as the window let them.
        self.held_from = -1
        self.tickets: list[Ticket] = []
        self._timer: asyncio.TimerHandle | None = None
        self.backlog = math.inf  # since when requests have waited for the pace without a break (inf: none waits)
        self.queued = -math.inf  # when a request last began to wait for its moment at the pace

    async def turn(
        self,
        rank: tuple[float, int],
        paced: bool,
        refused_at: float,
        start: float,
        why: Literal["busy", "pace"],
        who: Who,
    ) -> Send:
        """Wait for a request's moment to be sent, from ``start`` (``busy.Places._turn``, which
        found the pause within the participant's patience), the wait noted as ``who``'s."""
        loop = asyncio.get_running_loop()
        if not paced:
            # A request not paced itself (inside a turn paced as a whole) sent again after a
            # refusal takes a gap of the pace found without word from the service: the turn's gap
            # was its first try's. Sent again at the pause's end beside the paced requests let go
            # then, it took the one unit a strict bucket had grown back, and the first paced send
            # after the pause was refused (the pace halved, and found again from far below: bench
            # p-all-bare 2-3x its floor). Not through the queue: the turn it is part of is under
            # way, and a request waiting there for the turn's answer (``_alone``) would never go.
            pace = self.service.pace
            while True:
                moment = self.paused()
                metered = not self.unmetered()
                if refused_at >= 0 and pace.rate > 0 and not metered:
                    moment = max(moment, pace.next)
                elif refused_at >= 0 and metered:
                    # So too where the service tells what is left: sent again at its reset, the
                    # request took the unit the neighbours on the key counted on, and the next of
                    # theirs was refused (bench/busy.py p-all's start). It waits for a unit and
                    # takes it, as a paced send does.
                    moment = max(moment, self._moment(loop.time()))
                if loop.time() >= moment:
                    break
                await asyncio.sleep(moment - loop.time())
            if refused_at >= 0:
                if not self.unmetered():
                    self.service.took(loop.time(), self.service.aim())
                self._took(loop.time())
            noted(who, start, loop.time() - start, why)
            return Send(self.service, -1, loop.time())
        if not self.tickets and not self._alone() and self.unwritten is None and self._moment(start) <= start:
            return self._let(start)  # its moment is now and no one is before it: no ticket to wait on
        future: asyncio.Future[Send] = loop.create_future()
        if not self.tickets:
            self.backlog = start  # requests wait for the pace from now (``busy.Places._kept_up``)
        heapq.heappush(self.tickets, Ticket(rank, future))
        # The pace found without headers is tried by answers sent meanwhile (``busy.Places._answer``),
        # of any participant on the key where one of them waits: on a key all three share, only the
        # answers of a participant with requests of its own waiting grew the shared pace, and
        # the climb after the opening's refusal took longer.
        self.queued = self.service.pace.queued = start
        self.release()
        try:
            send = await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.landed(future.result())
            self.release()
            raise
        noted(who, start, send.moment - start, why)
        return send

    def release(self) -> None:
        """Let go the requests whose moment has come, oldest first, and wake up for the next."""
        loop = asyncio.get_running_loop()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self.tickets:
            ticket = self.tickets[0]
            if ticket.future.done():
                heapq.heappop(self.tickets)
                continue
            if self._alone():
                return
            now = loop.time()
            if self.unwritten is not None:
                until = self.unwritten.moment + _HOLD
                if now < until:  # the last one let go is not on the wire yet: the pace counts from then
                    self._timer = loop.call_at(until, self.release)
                    return
                self.unwritten = None
            at = self._moment(now)
            ahead = self.wire.ahead(self.service, self._per_minute)
            if at - ahead > now:
                self._timer = loop.call_at(at - ahead, self.release)
                return
            heapq.heappop(self.tickets)
            ticket.future.set_result(self._let(now, max(at, now)))
        self.backlog = math.inf  # nothing waits for the pace any more

    def _let(self, now: float, moment: float | None = None) -> Send:
        """One request let go now, for ``moment`` (now unless it is let go ahead of it)."""
        metered = not self.unmetered()
        due = now if moment is None else moment
        service = self.service
        send = Send(service, service.took(due, service.aim()), due, metered, service.pace.rate, due - now)
        self.sent += 1
        insort(self.under_way, send.number)
        if not self.ration.dry(send.number):
            self.held_from = -1
        elif self.held_from < 0:
            self.held_from = send.number
        self._took(due)
        if self.wire.told and self.service.strict and not self.service.pace.opening:
            # Not while the pace opens: a service with no limit was held so to the way to the
            # wire's pace, one send at a time (bench/bare_virtual.py p-free 1.78 s, 1.66 not so).
            self.unwritten = send
        return send

    def let_at_once(self, now: float) -> tuple[Send, Asked]:
        """``_let``, with no meter and no pace (metered False, pace 0, the next send now), for a
        first try ``busy.Places._tried`` sends at once. No meter has a rate (``_clear``), so the
        send takes nothing from any: ``Service.took`` without its loop over them."""
        service = self.service
        number = service.sends
        service.sent.append(now)
        service.sends = number + 1
        send = Send(service, number, now)
        self.sent += 1
        insort(self.under_way, number)
        if self.next < now:
            self.next = now
        told = self.asking = Asked(self, send, False)  # _clear: not strict, so not held at the wire
        return send, told

    def answered_plainly(self, send: Send) -> None:
        """``send``, let go at once (``let_at_once``), was answered by a service that said nothing
        of its limits, with no pace found yet: the service has answered, and what ``landed`` lets
        go, but the queue, which ``busy.Places._plainly_landed`` lets go once the answer is counted."""
        self.answered_once = self.service.pace.answered = True
        self.under_way.remove(send.number)
        if self.unwritten is send:
            self.unwritten = None

    def answered(self) -> None:
        """Its service answered a request: the participant knows it has."""
        self.answered_once = self.service.pace.answered = True

    def flies(self, number: int) -> None:
        """A send let go the free way, its ``number`` there, was refused: under way until its
        refusal lands it."""
        insort(self.under_way, number)

    def _alone(self) -> bool:
        """Whether a request waits for the one under way: a service not heard from yet gets one
        request at a time, once the request under way has named it (or none has told yet). The
        name is enough to know it: one a neighbour on the same key has heard from already gets
        requests at the pace the neighbour found, not one at a time. So too once a service that
        says what is left without when more comes has nothing left (``Ration``): one request at a
        time, whose answer or refusal tells whether more is left or how long to wait."""
        if not self.under_way:
            return False
        if self.answered_once:
            return self.ration.dry(self.service.sends)
        asking = self.asking
        if asking is None:
            return True
        if not asking.service:
            return False
        self.known(asking.service)
        return not self.answered_once

    def known(self, service: str) -> None:
        """A request of this participant named its ``service``: from now on the participant shares
        what the participants on the same key learn of it, and knows whether it has answered."""
        self.service = self._services.of(service, self.service)
        if self.service.pace.answered:
            self.answered_once = True

    def paused(self) -> float:
        """Until when the participant's service asked it to pause: a refusal to this participant or
        to another on the same key, or to another process of a spread run."""
        return max(self.service.pace.paused_until, self._services.paused(self.service))

    def told(self, send: Send, paced: bool) -> Told:
        """The ``Told`` of a request let go: the latest, when paced, which hears when it went on
        the wire."""
        if not paced:
            return Told()
        # A send let go ahead of its moment is held at the wire for it, even if the service it was
        # let go against has since been found to be another one, which is not strict.
        gated = send.ahead > 0.0 or (self.wire.told and self.service.strict)
        told = self.asking = Asked(self, send, gated)
        return told

    def first(self, send: Send, now: float, service: str) -> float | None:
        """``send``, let go before any answer, is at the wire at ``now``, and has just named its
        ``service``: the moment it may be written. Where a neighbour on the same key has found the
        service's pace, or heard what is left of its limits, that neighbour's next moment, taken
        for it: let go as though the service were new, it reached the key beside the neighbour's
        sends at the limit, and was refused (bench/busy.py p-all and p-all-bare: the judge's first
        request, each run). None, at once, for a service nobody here knew."""
        if not service or send.service is not self.service:
            return None
        self.known(service)
        shared = self.service
        if shared is send.service:
            return None  # nobody knew it: this participant's own
        paused = self.paused()
        if shared.pace.rate <= 0.0 and self.unmetered():
            return paused if paused > now else None  # nothing found of its limit yet, but a pause
        moment = max(now, self._moment(now))
        self.wire.first(send, shared.took(moment, shared.aim()))
        self._took(moment)
        return moment

    def wrote(self, send: Send, moment: float) -> None:
        """``send`` went on the wire at ``moment`` (``Wire.wrote``): where the limit is strict, the
        next send is let go from then."""
        service = self.service
        soonest = self.wire.wrote(send, moment, service, self._per_minute)
        if self.unwritten is send:
            self.unwritten = None
        if not service.strict:
            return
        if soonest > self.next:  # the cap per minute counted from the wire
            self.next = soonest
        if self.tickets:
            self.release()

    def _moment(self, now: float) -> float:
        service = self.service
        moment = max(self.paused(), self.next, service.pace.next)
        for meter in service.meters.values():
            if meter.rate > 0:  # a meter without a rate is always ready
                moment = max(moment, meter.ready(now, service.aim()))
        return moment

    def _took(self, now: float) -> None:
        pace = self.service.pace
        if pace.rate > 0.0 and self.unmetered():
            # The pace found without word from the service is the service's: the next send of
            # any participant on its key keeps a gap after this one.
            pace.next = max(pace.next, now) + 1.0 / pace.rate
        if self._per_minute:
            # A cap per minute is kept on average: a send let go a little late (a timer fired
            # late, a place came free late) is made up by the next, by at most a tenth of a gap.
            gap = 60.0 / self._per_minute
            self.next = (self.next if now - self.next <= gap / 10 else now) + gap
        elif self.next < now:
            self.next = now

    def unmetered(self) -> bool:
        for meter in self.service.each:  # a loop, not all(): this runs on every send
            if meter.rate > 0.0:  # a float to a float: quicker than to an int
                return False
        return True

    def landed(self, send: Send) -> None:
        """``send`` ended, answered or refused: no longer under way."""
        self.under_way.remove(send.number)
        if self.unwritten is send:  # it ended before it was on the wire (or the layer never told)
            self.unwritten = None
        if self.tickets:  # nothing waits: nothing to let go, and a timer left would find nothing
            self.release()

    def pause(self, now: float, pause: float, told: Told, *, asked: bool) -> None:
        """A refusal's pause of ``pause`` seconds from ``now`` (``asked``: as long as the service
        asked, not made up where it said nothing, ``Pace.asked``): the next send of every participant
        on the service's key waits for its end, and the other processes of a spread run are told
        of it. The sends before it and after it are two stretches (``Pace.resumed``): a gap across
        the pause is the pause, not a pace the service let through. That holds for the pause of a
        request not paced itself too (inside a turn paced as a whole): counted across it, the gap
        of a second told ``gaps.quickest`` that one request a second was all the limit let through,
        and the pace, found at 1 a second, grew a two-thousandth a second from there (bench/busy.py
        p-all-bare 19x its floor)."""
        pace = self.service.pace
        if now + pause >= pace.paused_until:
            pace.asked = asked
        pace.paused_until = max(pace.paused_until, now + pause)
        pace.resumed = max(pace.resumed, pace.paused_until)
        if told.service:
            self._services.refused(told.service, pause)
