"""What an answer teaches of a service's limits.

A service that answers a request says the participants sharing its key went no faster than it
allows. What they aim at lives on its ``Service`` (``quota.py``): the share of the rates it tells,
and, where it tells none, the ``Pace`` found from its answers and refusals. An answer counts among
the last second's (``counted``); the service's first, where it said nothing of its limits, opens
a pace of the places' worth over its latency (``opened``); an answer to a request sent after the
last cut (``news``) gives a step of the share back (``grown``) and, while the pace held requests
back, tries the pace, which grows a little (``climbed``; the opening pace only while under what
the places could send). What the service said of its limits with an answer or a refusal is heard
by its meters (``measured``).

``busy.Places`` decides when an answer is heard, and keeps its own places and queue (its way to
the wire is ``wire.Wire``'s); what the answer says of the limit is read here, from the ``Service``
and the little of the participant's it is handed (its places, its cap per minute, whether its
requests wait at the wire for their moment, whether one waited for the pace), and changes the
``Service`` alone.
``refusals.py`` is its sibling: neither imports the other, and the share's bounds they both read
are in ``quota.py``. Nothing here reads a clock or waits: the moment of the answer is given.
"""

from __future__ import annotations

import math

from convy.quota import (
    OVERLAP,
    SHARE,
    SHARE_CUT,
    SHARE_HELD_CUT,
    SHARE_MOST,
    Heard,
    NoQuota,
    Pace,
    Quota,
    Send,
    Service,
)

# Each answer gives a two-hundredth of a refusal's cut of the share back, and a little of what is
# missing to the most (so that a burst of refusals while the machine was busy for a second or two
# is made up within some seconds): about one refusal in a hundred or two requests, at the share
# the jitter of the moment allows.
_ANSWERS_PER_REFUSAL = 200
_SHARE_BACK = 0.002  # of what is missing to SHARE_MOST, per answer
# Without word from the service, the pace doubles every half second until the first refusal after
# the start's, which finds it (``refusals.taught``). It then grows by _GROWTH of itself a second
# while requests pass: slowly, since a refusal costs a whole second, and one every twenty seconds
# (2% cut, grown back at a thousandth a second) cost more than the cut.
_GROWTH = 0.0005
# After the first refusal the pace climbs only where it holds requests back for longer than their
# coming in bursts does: some of the participant's requests waited for it without a break for at
# least _PRESSED gaps of it, or _PRESSED of them wait for it at once, or some waited for a place
# meanwhile (``climbed``).
_PRESSED = 3
# The step of the pace at each answer from the service's first answer to its first refusal
# (``opened``): a service with no limit outgrows it within some answers, and a limit's refusal
# brackets it within the step (``refusals.opening_refused``).
_OPEN_STEP = 1.05
# The opening pace grows so only while under _OPEN_ROOM places' worth over the answer's latency
# (the participant's places, or the sends of every participant on the key while the answered
# request was under way, if more): the places grow at most two at an answer in their slow start
# (``growth._FOLD``), three times as many after a round of answers, and a pace over what they
# could then send holds nothing back.
_OPEN_ROOM = 3
# Once the pace was found at the opening's refusal, it grows on an answer only while the latest
# two sends on the wire of a strict limit went no further apart than _WRITTEN_APART gaps of it
# (``written_apart``).
_WRITTEN_APART = 1.2


def counted(service: Service, send: Send, now: float, size: int, per_minute: int, gated: bool) -> None:
    """An answer to ``send`` heard at ``now``: among the last second's answers, and, for a
    request sent after the last cut, a step of the share aimed at given back. ``size`` is the
    participant's places, ``per_minute`` its cap, ``gated`` whether its requests wait at the wire
    for their moment."""
    pace = service.pace
    pace.heard(send.moment)
    if not pace.opened and send.service is service:
        opened(service, now - send.moment, size, per_minute)
    elif pace.opening and now - send.moment >= OVERLAP:
        # Never slower than the places' worth over an answer's latency: the places double in
        # a round of answers while nothing refuses (``growth.Growth.grown``), and a pace that grew
        # only its step at each answer held them back (bench/busy.py p-free: 1.9 s against 1.7).
        pace.rate = max(pace.rate, size / (now - send.moment))
    if service.share < SHARE_MOST and news(service, send):
        grown(service, gated)


def opened(service: Service, latency: float, size: int, per_minute: int) -> None:
    """The service's first answer, which took ``latency``: where it said nothing of its limits
    and nothing paces it (``per_minute``, the participant's cap), the sends waiting for it (a
    service not heard from gets one request at a time, ``pacing.Pacing._alone``) go at a pace of the
    places' worth (``size``) over that latency, which grows by _OPEN_STEP at each answer while it
    holds requests back, until the first refusal. Let go at once, the second of them reached a
    strict limit with no gap, and was refused: a whole Retry-After before anything was found of
    the limit, and a second refusal at the end of the climb from the pace made up from that one
    (bench/busy.py p-bare@3000, p-all-bare: two pauses of a second each)."""
    pace = service.pace
    pace.opened = True
    if per_minute or pace.rate > 0.0 or not service.unmetered() or latency < OVERLAP:
        return
    pace.rate = max(size, 1) / latency
    pace.latency = latency
    pace.step = _OPEN_STEP
    pace.opening = True
    # Its sends are held at the wire for their moments from now on, as a strict limit's are
    # (``wire.Wire``), and the opening's refusal reads their gaps there, not ones the way to the
    # wire made: let go at the opening pace (40 a second, the places' worth over 100 ms), the
    # first sends after the first answer reached a strict bucket of 50 a second under its gap
    # (a way of up to 8 ms), one was refused before two were answered, and the pace, made up
    # from nothing, climbed from 9 a second to its next refusal (bench/bare_virtual.py
    # p-bare@3000 --only-user: 11 ways of 60 over 1.10x the floor and two refusals, now none).
    service.strict = True


def news(service: Service, send: Send) -> bool:
    """Whether an answer or refusal of ``send`` is news of the pace: it was sent after the
    last cut, against the service the participant now knows it sends to."""
    return send.service is service and send.number > service.pace.cut_after


def grown(service: Service, gated: bool) -> None:
    """A step of the share aimed at given back: a refusal's cut made up over
    _ANSWERS_PER_REFUSAL answers, the smaller one where requests are held at the wire too
    (``gated``, and the limit strict), so that they are not refused more often there."""
    cut = SHARE_HELD_CUT if gated and service.strict else SHARE_CUT
    growth = (1 - cut) / _ANSWERS_PER_REFUSAL + _SHARE_BACK * (SHARE_MOST - service.share)
    service.share = min(SHARE_MOST, service.share + growth)


def climbed(service: Service, send: Send, waited: bool, now: float, backlog: float, waiting: int, size: int) -> None:
    """An answer to ``send``, news of the pace found without word from the service: one answer
    is worth the gap it filled. Only while the pace holds requests back (``waited``: one of the
    participant's waited for it while this one was under way, as ``growth.Growth.grown`` asks the
    other way round; or one of any participant on the key did, ``Pace.queued``): a pace that is
    not what spaces the sends (the places are, or nothing to send) is not tried by its answers,
    and doubled on them it ran far past the limit unrefused (320 a second against a bucket of 50,
    held back by three places), until the places grew, and its first refusal found it there.
    ``backlog`` is since when the participant's requests have waited for the pace without a break
    (minus infinity while some wait for a place), and ``waiting`` how many wait for it now; while
    the pace grows after a refusal, on a key of its own it grows only where those say the pace
    held them back (``pressed``). While it opens, only while under what the participant's
    ``size`` places, or the key's sends while ``send`` was under way, could send in its latency
    once grown (_OPEN_ROOM): on a key two participants share, one's places alone held the other
    back (tests/unit/test_busy_ration.py, the user's and the judge's models behind one key)."""
    pace = service.pace
    seconds = 1.0 / pace.rate
    if not (waited or pace.queued >= send.moment):
        pass
    elif pace.proven and send.moment < pace.resumed + seconds / 2:
        # The first send after a pause went at its end, with no gap of the pace before it:
        # its answer tried nothing of the pace. Grown on it (a third at 5 a second), the
        # pace's next send was refused, a whole second more, and the pace halved again
        # (bench/busy.py p-bare@300: three pauses of each key after the start's). Unless
        # the pace was made up from the pause itself (one request a second, refused before
        # anything was answered): kept, its next send waited out a whole second more.
        pass
    elif pace.opening and pace.rate * (now - send.moment) >= _OPEN_ROOM * max(size, service.sends - send.number):
        # Opening at more than the places could send in a latency, even grown: the places hold
        # the requests back, not the pace, and a send that waited for it waited only its gap
        # behind a neighbour let go at the same answer. Grown a step at each such answer, some
        # 1,000 answers took it to some 1e22 a second, and a rate limit met then found no two
        # sends let through at distinct moments, halved it at each of some 70 pauses, each
        # ending in a burst of the places' worth into it (tests/unit/test_busy_ration_open.py:
        # 31,221 refusals, 177.4 s; kept under, 64 and 106.1 s).
        pass
    elif pace.growing and not (pace.opening or service.shared or pressed(pace, now, backlog, waiting)):
        # Not held back for long: the bursts of a participant that asks for less than the pace.
        # (A key several participants share is tried on the answers of each while any waits,
        # their bursts between each other's: tests/unit/test_busy_bare.py, all three on one key.)
        pass
    elif pace.growing and not pace.opening and written_apart(service):
        # The sends go on the wire further apart than the pace (writes of 5 to 25 ms each on a
        # loaded machine, one send at a time), and the requests waiting are held by that, not
        # by the pace: grown on the answers to sends of a latency before, which went at the pace
        # before the load, it ran on untried, and the first send once the writes were quick
        # again went at it and was refused, the sends let through before telling only what the
        # load let through. With answers of 1 s, from 40 to 72 a second within 0.6 s against a
        # bucket of 50, six refusals in 1,000 requests where two found it
        # (tests/unit/test_busy_unseen_review.py, way 3 of a machine loaded now and then:
        # 41.68 s, now 36.4 and two; bench/bare_virtual.py p-bare@3000 --loaded 0.05, the median of
        # twelve ways 16.36 s, now 14.50).
        pass
    elif pace.growing:
        pace.rate *= pace.step if pace.opening else min(2 ** (2 * seconds), pace.step)
        # The gap after the last send shrinks with it: a pace made up from a pause (one
        # request a second) doubled would otherwise still wait out the whole second.
        pace.next -= seconds - 1.0 / pace.rate
    elif pace.rate < pace.ceiling and send.moment >= pace.probe_from:
        # Held under what its refusal found by what was under way then (``refusals.beside_count``),
        # long enough that one more pause of that limit costs little: a rate limit, not one on
        # requests at once, leaves it room, and at _GROWTH it would take the rest of the run.
        pace.rate = min(pace.ceiling, pace.rate * min(2 ** (2 * seconds), pace.probe))
        pace.next -= seconds - 1.0 / pace.rate
    elif pace.unseen and send.moment >= pace.regrow_from:
        # On a limit another sender may share unseen (``refusals.unseen``, ``refusals.behind``),
        # the pace was found, or cut, from what that sender's sends left it, and at _GROWTH it would
        # take the rest of the run to come back: two participants on one strict bucket of 50 a
        # second, one found at 0.6 a second went on so alone for 400 s once the other was done
        # (tests/unit/test_busy_shared_key.py). Gone so long with no refusal that found or cut it,
        # it grows as at the start until the next refusal finds it again: a refusal more where
        # the limit is where it was found (``regrow_waits``).
        pace.growing, pace.step, pace.regrown_from = True, math.inf, pace.rate
    elif send.moment >= pace.bracketed_from:
        # Taken at the opening's refusal from a lower bound of the limit (``refusals.opening_refused``),
        # it has held that long with no refusal: it grows as at the start, once, and its next
        # refusal finds it between the sends let through and the refused one, a step apart.
        pace.bracketed_from = math.inf
        pace.growing, pace.step = True, math.inf
    else:
        pace.rate *= 1 + _GROWTH * seconds
    pace.proven = True


def written_apart(service: Service) -> bool:
    """Whether the latest two sends on the wire of a strict ``service`` went further apart than
    _WRITTEN_APART gaps of its pace: something else than the pace spaces the sends now (their
    writes slowed by a loaded machine), and an answer, to a send of a latency before, does not
    try the pace."""
    before, last = service.written
    return service.strict and before > -math.inf and (last - before) * service.pace.rate > _WRITTEN_APART


def pressed(pace: Pace, now: float, backlog: float, waiting: int) -> bool:
    """Whether the pace held a participant's requests back for longer than their coming in bursts
    does, as an answer at ``now`` tells it: they have waited for it without a break since
    ``backlog``, _PRESSED gaps of it or more (minus infinity while some wait for a place: more is
    asked than the places and the pace let go), or _PRESSED or more of them wait for it now
    (``waiting``), the last for as many gaps. A participant whose requests come as another's
    answers do (the agent's, after the simulated user's) has a few wait a little now and then,
    coming closer than the pace, while on average it asks for far less than it: grown on every
    such answer, the agent's pace after its first refusal ran on past the limit and was refused
    once or twice more, each a second of every conversation (bench/bare_virtual.py p-bare@3000:
    93 refusals of the agent's key in 60 ways, 60 at the least). Counted behind alone, a pace
    made up far under the limit with the run's requests piled up behind it (at the opening's
    refusal, from an answer that took a second or two: a request a second or less) climbed only
    after three of its gaps, seconds of every conversation (tests/unit/test_busy_demand_review.py:
    the agent's key behind services that answer in 2 s, 42.8 s against 40.6)."""
    return waiting >= _PRESSED or now - backlog >= _PRESSED / pace.rate


def measured(service: Service, send: Send, heard: Heard, admitted: bool, wired: tuple[Send | None, float]) -> None:
    """What the service said of its limits (``heard``) with the answer, or refusal (not
    ``admitted``), of ``send``, heard by its meters; ``wired`` is the participant's latest send on
    the wire, and when it went there."""
    if send.service is not service or not heard.quoted():
        return  # sent before the participant knew which service it was (the next will tell), or nothing said
    number, sent = send.number, send.moment
    match heard.requests:
        case Quota(limit=limit) if 0 < limit <= 1 and wired[0] is send:
            # A limit that holds one request at a time counts it from when it reached the
            # service: the first request of a participant opens its connection first, and
            # counted from when it was let go, the unit it took came back tens of milliseconds
            # later than counted, and the next send was refused (bench/busy.py p-b1@300: the
            # user's and the agent's second request, each run).
            sent = max(sent, wired[1])
        case _:
            pass
    oldest = -math.inf  # the oldest send the limit counts, where it says nothing is left
    match heard.requests:
        case Quota(remaining=remaining, limit=limit) if remaining < 1:
            size = limit if limit > 0 else service.meters["requests"].sized  # the size its words told
            if size >= 1:
                # A refusal was not counted: the oldest send counted is a whole limit before it.
                oldest = service.moment_of(number - int(size) + (1 if admitted else 0))
        case _:
            pass
    later: list[float] = []  # the sends after it: the newest end of ``sent``, whose numbers only grow
    for count, moment in service.latest():
        if count <= number:
            break
        later.append(moment)
    later.reverse()
    for name, quota in (("requests", heard.requests), ("tokens", heard.tokens)):
        match quota:
            case Quota():
                meter = service.meters[name]
                if meter.heard(quota, number, sent, later, service.aim(), name == "tokens", admitted, oldest):
                    # The refusals just before were the limit coming down, not jitter.
                    service.share = max(service.share, SHARE)
            case NoQuota():
                pass
