"""When a participant's sends went on the wire, and when the next may be written.

Where convy's HTTP layer tells when a request went on the wire (``quota.Told.wrote``), and once
the service has refused a request or said its limit holds one request at a time (a limit strict
enough for that: a loose one, a burst or a window, is not troubled and would only lose the time),
the next send is paced from then: a request let go on time but written late (its new connection
opened first) would otherwise reach the service closer to the next one than the pace, and a strict
limit refuses that. Where the HTTP layer also waits for a request's moment just before writing it
(``quota.Told.writable``), a strict limit's request is let go a little ahead of its moment and
written at it.

``pacing.Pacing`` lets the requests go, holds the next until the last is on the wire and keeps
the pace and the queue; what the wire said is kept here (``Wire``, which it holds): whether the HTTP
layer tells and waits, the latest delays from a send's moment to the wire, the latest send on the
wire. ``Pacing`` hands it the little it reads (the service, the cap per minute). Nothing here reads
a clock or waits: the moments are given.
"""

from __future__ import annotations

import math
from collections import deque

from convy.quota import SHARE_HELD, Send, Service

# The least of the last _LEADS delays between letting a request go and its being on the wire is
# taken off the gap, as the next request takes at least that too. Enough of them to outlast a
# stretch of load (a second at 50 a second): with the latest 16, writes slowed by one (5 to 25 ms
# each) filled them all, and the first send after it, written on time, came that much early to a
# strict limit and was refused; with every send waiting at the wire (half a gap ahead) that was
# most of them, and bench/bare_virtual.py p-bare@3000 --loaded 0.05 took 22.75 s at the median of
# 60 ways, 17.92 at a quarter of a gap, 16.14 so. (Taking the lead only while the latest 16 held
# within 2 ms mended that too, but a machine loaded for good whose writes took 5 ms and a jitter
# of 1 lost it: 16.12 s, not 13.88, with --steady 0.005 --write 0.001.)
_LEADS = 64
# Where the HTTP layer also waits for a request's moment just before writing it (``Told.writable``),
# a strict limit's request is let go _AHEAD seconds ahead of its moment, at most _AHEAD_GAP of a
# gap: it is built by then, and written at its moment rather than late by however long its way
# took this time, which, paid by every send after the last, added up to one gap in twenty. The
# same for every participant: the ones sharing a limit would otherwise race for it, and the one
# let go furthest ahead win every time. (A participant lets its next go only once this one is on
# the wire, so that its two never wait there together.) At a quarter of a gap, a way of up to 8 ms (a new
# connection, the loop busy) was longer than the lead at 50 a second in a third of the sends, each
# a millisecond or two late, and a limit of one request at a time lets no time a send missed be
# made up: the user's key of bench/bare_virtual.py p-bare@3000, paced at 48.3 a second, was let
# through at 47 (13.51 s, median of 60 ways; at half a gap 13.20), and at 100 to 200 a second,
# where a quarter of a gap is 1 to 2.5 ms, most sends were late (bench/bare_rates.py 200 a second
# 20.6 s, now 17.1).
_AHEAD = 0.01
_AHEAD_GAP = 0.5


class Wire:
    """What a participant's way to the wire said: whether the HTTP layer tells when a send went on
    the wire (``told``) and waits there for its moment (``gated``), the latest delays from a send's
    moment to the wire, and the latest send on the wire, and when (``wired``).

    It changes inside as the HTTP layer tells it (``due``, ``wrote``), and lets nothing go itself:
    ``pacing.Pacing`` reads ``told`` and asks how long before its moment a request is let go
    (``ahead``); ``busy.Places`` reads ``told``, ``gated`` and ``wired`` for what an answer or a
    refusal teaches."""

    def __init__(self) -> None:
        self.told = False  # whether the HTTP layer tells when a request went on the wire
        self.gated = False  # whether the HTTP layer waits for a send's moment just before the wire
        self.wired: tuple[Send | None, float] = (None, 0.0)  # the latest send on the wire, and when
        self._leads: deque[float] = deque(maxlen=_LEADS)  # the latest delays from a send's moment to the wire
        self._waited: Send | None = None  # the latest send that waited there
        # A first send held for a neighbour's moment (``first``), and its number there.
        self._first_taken: tuple[Send | None, int] = (None, -1)

    def due(self, send: Send, now: float, service: Service) -> float:
        """``send`` is at the wire at ``now``: the moment it may be written. ``service`` is the
        participant's now."""
        if not self.gated:  # the delays to the wire from here on are the wait's, not the whole way's
            self.gated = True
            self._leads.clear()
            if service.strict:
                service.share = max(service.share, SHARE_HELD)
        if now < send.moment:  # it waits: how late the wait ends is a lead of the next send
            self._waited = send
        return send.moment

    def first(self, send: Send, number: int) -> None:
        """``send``, let go before any answer, is held at the wire for the moment it took of a
        neighbour's on the same key (``pacing.Pacing.first``), as that service's send ``number``."""
        self._first_taken = (send, number)

    def ahead(self, service: Service, per_minute: int) -> float:
        """How long before its moment a request is let go: a little, where the HTTP layer waits at
        the wire for the moment and the limit is strict (0 otherwise)."""
        if not (self.gated and self.told and service.strict):
            return 0.0
        gap = _spacing(service, per_minute)
        rate = service.meters["requests"].rate
        if rate > 0:
            gap = max(gap, 1 / (rate * service.aim()))
        return min(_AHEAD, gap * _AHEAD_GAP)

    def wrote(self, send: Send, moment: float, service: Service, per_minute: int) -> float:
        """``send`` went on the wire at ``moment``: the next is on the wire no sooner than a gap of
        the pace after it, given that it too takes at least the least delay of late. The moment
        the cap ``per_minute`` allows the next send from then (-inf where it does not count from
        the wire); ``service`` is the participant's now."""
        self.told = True
        self.wired = (send, moment)
        if send is self._waited or not self.gated:  # a send that did not wait there says nothing of the wait
            self._leads.append(max(moment - send.moment, 0.0))
        if send.service is service and service.unmetered():
            # A service that tells nothing: where its sends went on the wire is what its limit
            # saw, and what a refusal reads (``gaps.quickest``, ``gaps.gap``). Their way
            # there takes from half a millisecond to several (a new connection, the loop busy), as
            # much as a quarter of a gap at 50 a second: read from when they were let go, sends let
            # through 21 ms apart on the wire were taken for 19, and the pace found over the limit,
            # refused at its first send after the pause and twice more (a virtual clock's way to
            # the wire of up to 8 ms). So too once it is strict: a send let go at its moment, not
            # ahead (the participant's first since it held sends at the wire), reaches it late by
            # its way, and ``Service.late`` moves only the latest send. The judge's first on a key
            # it shares with the agent, let go 15 ms after the agent's and written 22 ms after it,
            # was read at 15: the pace was taken for found at 66 a second against a bucket of 50,
            # and cut down from there at four pauses of a second (tests/unit/test_busy_ahead_review.py,
            # the agent capped at 2,400 a minute: 18.67 s at the median of 12 ways, now 16.97).
            service.wired(send.number, moment)
        if not service.strict:
            return -math.inf
        lead = min(self._leads) if self._leads else 0.0
        if send.service is service:
            # Counted from then against what is left of the service's limits, which the
            # participants sharing it all read.
            service.late(send.number, moment - lead)
        elif self._first_taken[0] is send:
            # Held for the moment it took of a neighbour's (``first``), and written late: the
            # neighbour's next send keeps a whole gap after it, counted from the wire itself (its
            # delay to the wire was the wait, not a lead the next one takes too).
            service.late(self._first_taken[1], moment)
        if service.unmetered():
            # A limit told of by its refusals alone: a gap of the pace found from the wire, for
            # every participant sharing it. A cap per minute lower than that is kept on average by
            # ``pacing.Pacing._took``, not here: the lateness of each send on its way would otherwise
            # add up, send after send.
            pace = service.pace
            if pace.rate > 0:
                pace.next = max(pace.next, moment + 1.0 / pace.rate - lead)
            elif per_minute:
                return moment + 60.0 / per_minute - lead
        return -math.inf


def _spacing(service: Service, per_minute: int) -> float:
    """The seconds between two sends that ``per_minute`` asks for, or the pace found without word
    from the ``service``."""
    gap = 60.0 / per_minute if per_minute else 0.0
    rate = service.pace.rate
    if rate > 0 and service.unmetered():
        gap = max(gap, 1.0 / rate)
    return gap
