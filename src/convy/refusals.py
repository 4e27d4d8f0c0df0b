"""What a refusal teaches of a service's limits.

A service that refuses a request (``busy.Busy``) says the participants sharing its key went a
little too fast. What they aim at lives on its ``Service`` (``quota.py``): the share of the rates
it tells, and, where it tells none, the ``Pace`` found from its answers and refusals. The first
refusal of a request sent after the last cut cuts the share (of a send paced on what the service
said is left), and finds the pace from the sends let through before it (``taught``): at the first
refusal after the service's first answer, from the sends of the opening pace
(``opening_refused``); later, as close under the refused send's pace as the sends let through
tell, and down to the most answered in a second where each pause's saved-up burst alone let the
pace through (``drained``). A refusal of the request sent alone once the service said nothing was
left of its count cuts nothing, but ends a pace still opening or growing at what the window let through
(``ended_at_count``); the first refusal of another limit after it holds the pace to what was
under way then, over a latency (``beside_count``). A strict limit's refusal that says its next
unit comes within a gap gives back the unit the refused send was counted to take (``unused``).

``busy.Places`` decides when a refusal is news, pauses the participants and lets go of the send;
what the refusal says of the limit is read here, from the ``Service`` alone, which holds all it
changes, and what the gaps of the sends before it tell of it from ``gaps.py``. Nothing here reads a clock or waits: the moment of the refusal is given.
"""

from __future__ import annotations

import math

from convy.gaps import SPACED, gap, quickest, ran, saved_up, since
from convy.quota import SHARE_CUT, SHARE_HELD_CUT, Heard, Quota, Send, Service

# What a refusal takes off the share of the rate a service tells that its participants aim at
# (``Service.share``): 3% (``quota.SHARE_CUT``), up to 5% when the service says the request came
# that early, never below _SHARE_LEAST. An answer gives a step of it back (``answers.grown``), so
# that there is about one refusal in a hundred or two requests, at the share the jitter of the
# moment allows. Where a strict limit's requests wait at the wire for their moment, the jitter of
# the way there is mostly gone, and a refusal takes 2.5% off rather than 3%
# (``quota.SHARE_HELD_CUT``, given back over as many answers).
_SHARE_LEAST = 0.05
_SHARE_DEEPEST = 0.95  # the most one refusal takes off: a request far too early is not jitter
# Without word from the service, the pace doubles every half second until the first refusal after
# the start's; then it goes on at _BARE_AIM of the pace last let through (each refusal costs a
# whole Retry-After, a second of every participant on the key: a little under beats over, but
# 5% under, as it was, cost more than the refusals it saved). A refusal then takes _BARE_CUT off
# the pace, or a tenth when it comes within _AGAIN seconds of the last pause (a limit lower than
# thought, or shared) — unless it is the first since the pace was found: that is the estimate a
# little high, or the jitter of the way there, not a lower limit.
_CUT = 0.9
_BARE_AIM = 0.99
# The most the doubling pace grows at one answer once it was halved: the limit is then known to
# be under twice the pace, and a few requests a second doubling every half second would take a
# step of a third at each answer, the pace last let through (from which the limit is found) as
# far under it.
_STEP = 1.05
# The most a pace made up at the start's refusal from the lone first answer grows at one answer:
# the limit is then under a request per latency, a few a second, where doubling every half second
# is a step of a third or more at each answer, and the refusal that ends it finds the limit only
# within that step (bench/busy.py p-bare@300: the user's key found at 4.2 a second against 5).
_FIRST_STEP = 1.1
_BARE_CUT = 0.98
# At the first refusal after a service's first answer (``opening_refused``), the sends let through
# went at the pace when the quickest of them is at least _OPEN_SPACED of the pace the refused one
# was let go at: the opening pace grows at most twice between two sends (the places doubled).
_OPEN_SPACED = 0.5
# And they bracket the limit when the quickest of them is at least _OPEN_BRACKET of the refused
# one's rate (its gap after the send before it): the pace is found there, under the two.
_OPEN_BRACKET = 0.8
# Where they went far slower than the pace but still at least _OPEN_WIDE of the refused one's rate,
# the pace grows on from theirs, not from halfway: halfway up so narrow a bracket was as likely
# over the limit as under.
_OPEN_WIDE = 0.5
# There, a send let through went at the refused one's own gap where its gap was within half a
# step of it (``gaps.ran``), and _HELD of them in a row say the pace held there, not just climbed to it.
_SAME_GAP = _STEP**-0.5
_HELD = 2
_AGAIN = 2.0
# The refusals in a row within a second of a pause, the pace over the most answered in a second,
# that take the pace down to that most (``drained``).
_DRAINED = 2
# The pauses of a limit met after a count's refusal, and bounded by what was under way then
# (``beside_count``), after which the pace grows back toward what its refusal found.
_PROBED_AFTER = 10
# The pauses a pace the opening's refusal took from a lower bound of the limit holds before it
# grows again (``Pace.bracketed_from``): the refusal that then finds it costs a pause, paid back
# where the run goes on as long again. After ten, 500 requests against a bucket of 50 a second
# (some 11 s) were refused a second time at their end (tests/unit/test_busy_bare.py), and with
# answers of 0.5 to 1.5 s (some 22 s) a third (tests/unit/test_busy_regrowth.py).
_BRACKETED = 2 * _PROBED_AFTER


def taught(
    service: Service, send: Send, heard: Heard, now: float, pause: float, held: bool, newly_strict: bool
) -> None:
    """The refusal at ``now`` of ``send``, the first of a request sent after the last cut (many
    refused at once are one sign of one overload), with ``heard`` what the service said and
    ``pause`` the time it asked for: the share cut, where the send was paced on what the service
    said is left and the refusal did not just show the limit strict (``newly_strict``: from now on
    the sends are paced from the wire, which is what it asked for, not a lower share), by less
    where requests are ``held`` at the wire; and the pace found, where the service tells nothing."""
    pace = service.pace
    pace.cut_after = service.sends - 1
    pace.ceiling = 0.0  # a refusal ends the pace's growth back to what a bound held it under
    pace.bracketed_from = math.inf  # and a pace it finds or cuts is no longer the opening's lower bound
    if send.metered and not newly_strict:  # a request sent before the service said anything tells nothing of the share
        share_cut = cut(service, heard)
        if held:  # held at the wire: less jitter to make room for
            share_cut = max(share_cut, SHARE_HELD_CUT)
        service.share = max(_SHARE_LEAST, service.share * share_cut)
    let_through = pace.let_through(now)
    # Another sender on the same key that the participants here do not see (two participants of
    # one run whose keys are one gateway's, or two processes): its sends take what the limit had,
    # and refusals come that the pace did not cause. Read as the pace's, they found it where the
    # other's sends left it, cut it a tenth at each one soon after a pause, and it stayed there,
    # growing a twentieth of a percent a second (``answers._GROWTH``): two participants of 300
    # requests each on one strict bucket of 50 a second that tells nothing (the floor some 14 s),
    # answers of 1 s, one found at 0.6 a second went on so alone for 400 s (464.1 s), and with
    # answers of 1 to 2 s one cut from 3.9 to 1.3 a second in 13 refusals, for the 176 s it was
    # alone (221.8 s; tests/unit/test_busy_shared_key.py). A refusal the pace cannot have caused
    # (``unseen``) neither finds nor cuts it: the pause alone answers it. It, or one at a gap the
    # limit let through more than a second after a pause (``behind``, past the second a bucket's
    # saved-up burst drains in), says the limit may be shared so: the pace found is tried again
    # later (``answers.climbed``). An opening pace refused so is found as at any opening's
    # refusal: nothing was found yet to keep.
    if unseen(service, send):
        pace.unseen = True
        if pace.rate > 0 and not pace.opening and not pace.passed:
            # Not twice in a row: the pause ends a whole number of seconds after the refusal, and
            # with the pace kept the first send after it goes at the pause's end, so an outside
            # sender steady at a rate that divides a second meets it in the same phase each time:
            # 20 a second on a bucket of 50 (burst 1), refused once a second for good, 100
            # requests never done where main took 725-918 s (tests/unit/test_busy_unseen_review.py;
            # now 434-760 s). The second is read as the pace's, whose cut moves the sends after
            # the pause.
            pace.passed = True
            return
    elif send.moment - pace.resumed >= 1.0 and behind(service, send):
        pace.unseen = True
    pace.passed = False
    if pace.opening and opening_refused(service, send, pause):
        pass
    elif pace.rate > 0 and pace.growing and send.pace > 0:
        # The pace has just passed the limit: as close to it as can be told is the pace
        # half a step before the refused send's, or the quickest the last sends went
        # and were let through, whichever is lower. Unless no request sent at the pace
        # was answered yet, and it was made up from a pause: the service is still busy
        # (with requests not paced, inside the turns that were), and the pace is kept.
        # Cut, it would stay far under the limit for the rest of the run (a pace of one
        # request a second halved, then growing a thousandth a second: 32 x the floor).
        if pace.proven:
            most = quickest(service, send)
            half_step = max(2 ** (-1 / send.pace), pace.step**-0.5)
            between = gap(service, send)
            refused = 1 / between if between > 0 else math.inf
            if most < math.inf and most >= _OPEN_BRACKET * refused:
                # The refused send itself came close over the quickest let through
                # (on the wire): the limit is between the two, whatever pace the sends
                # were let go at, as at the opening's refusal. Read from the pace alone,
                # the agent's sends, spaced by the user's answers, were taken for slower
                # than it, and the pace grew on from them to a third refusal (a virtual
                # clock's way to the wire of up to 8 ms, 50 a second).
                pace.rate = min(most, refused) * _BARE_AIM
                pace.growing = False
                pace.estimated = True
            elif most == math.inf or most < SPACED * send.pace * half_step**2:
                # No two sends let through since the last pause: the refused one's pace
                # is too quick, and nothing tells how much. Half of it, still doubling,
                # is found from below, where what is let through tells; a pace kept
                # near it was refused again and again (12 refusals at 5 a second). So
                # too where the last sends let through went much slower than the pace
                # (spaced by what came to send, not by it; the pace a whole step back, two
                # half steps, is what sends at the pace went at: against one half step, the
                # sends of 5 a second, a step of a third, were taken for spaced, and the
                # pace climbed on in steps of 5% to its next refusal): the limit is somewhere
                # between, and found from the quicker of the two, still growing; taken
                # for it, the pace stayed there (bench/busy.py p-bare@3000: the agent's
                # key at 28 a second against a limit of 50, 2.8x the floor).
                pace.rate = max(send.pace / 2, most * _BARE_AIM if most < math.inf else 0.0)
                pace.step = _STEP
            else:
                pace.rate = min(send.pace * half_step, most) * _BARE_AIM
                pace.growing = False
                pace.estimated = True
    elif pace.rate > 0:
        # Refused again soon after the last pause: a lower limit, or one shared with
        # others. Otherwise a refusal now and then, the jitter of the way there.
        # The first refusal after the pace was found from a refused send is the estimate
        # a little high, or the jitter of the way there: a little off, however soon.
        again = send.moment - pace.resumed < _AGAIN and not pace.estimated
        pace.drained = pace.drained + 1 if drained(service, send) else 0
        burst = saved_up(service, send) if pace.unfounded else 0
        pace.unfounded = burst > 0
        if burst:
            # A pace the opening took from sends that told no rate, and the few let through
            # since the pause went as quick as the refused one: a burst the pause saved up,
            # used up at the pace's own gaps. Where the pace is far over the limit, its units
            # grew back by under one over those gaps: the limit is under the pace over their
            # number, and the pace grows on from there. Cut a tenth a pause, it came down from
            # 600 a second to a bucket's 20 (burst 3) over some 30 pauses, each one's sends in
            # flight refused (tests/unit/test_busy_ration_open.py, answers of 1 s: 187
            # refusals, 127.1 s, now 82 and 105.7). Not for a pace found otherwise: a token
            # bucket of two requests' worth, the pace 1.2 to 1.4 times its rate, lets three or
            # four through after a pause, the units growing back between them, and cut so the
            # pace fell to under half its rate (test_busy_demand_review.py, 18.26 -> 21.09 s).
            pace.rate = min(pace.rate * _CUT, pace.rate / burst)
            pace.growing, pace.estimated, pace.step = True, False, _STEP
        elif pace.drained >= _DRAINED:
            # Over the most the service ever answered of the sends of one second, and refused
            # within a second of a pause, twice in a row: a pace let through only on what each
            # pause saved up, found at the opening's refusal from the gaps of sends a bucket's
            # burst let through (``opening_refused``). A whole second of sends tells the limit,
            # the burst within it: the pace is that most. Cut a tenth a pause, a bucket of 50 a
            # second (burst 10, answers of 1 s) found at 245 was refused at every pause down to
            # 68, 14 refusals of 500 (bench/slow_answers.py b10/1); cut to the most, 57, 4 at
            # most in 12 ways. At the first such refusal, not the second, a strict limit's pace
            # found near it (a bucket of 20, 18.5 a second) was cut to the few answered early in
            # the run (11), and grew back a twentieth of a percent a second
            # (tests/unit/test_busy_pace.py: 33.0 s against a bound of 30).
            # But the most may be young: with answers of 0.1 s the opening met a bucket's burst
            # a few seconds in, when some 26 of one second's sends were answered (50 a second,
            # burst 10), and held at 26 the pace grew back a twentieth of a percent a second
            # (2,000 requests: 74.99 s where 50.36 cut a tenth a pause). So it grows back toward
            # twice that most, doubling over a second's answers, once ten pauses' worth went by:
            # where the most was the limit's, one refusal more finds it again (50.23 s, 45
            # refusals in six ways where 30 held and 77 a tenth a pause;
            # tests/unit/test_busy_drained_review.py).
            pace.ceiling, pace.probe = min(pace.rate, 2 * pace.most), 2 ** (1 / pace.most)
            pace.probe_from = now + _PROBED_AFTER * max(pause, 1.0)
            pace.rate = pace.most * _BARE_AIM
            pace.growing = pace.estimated = False
        else:
            pace.rate *= _CUT if again else _BARE_CUT
            pace.growing = pace.estimated = False
    else:
        # The rate let through so far, over the last second or less when the run is younger.
        sent = service.sent
        seconds = min(1.0, max(now - sent[0], 0.1)) if sent else 1.0
        # Or, where the service let more through in a second earlier in the run, that: a
        # refusal after a lull (the requests waiting for another participant, whose own
        # pace was being found) saw next to nothing let through in the last second, and a
        # pace made up from it (one request a second) took seconds to double back up to
        # the limit, the participants waiting on this one stalled meanwhile (bench/busy.py
        # p-bare@3000: the agent's key at one a second after 40 answers at up to ~30).
        # (Less one: a second holds one send more than the gaps of the rate let through.)
        made_up = let_through / seconds if let_through else 0.0
        if made_up < pace.most - 1:
            made_up = float(pace.most - 1)
        if made_up and pace.most <= 1 and send.number <= let_through:
            # The refused send was the first after the lone request answered (a service
            # not heard from gets one at a time: ``pacing.Pacing._alone``), and went as it was answered:
            # the limit is under one request per latency, and nothing let through tells
            # how far (two or more would: a rate they went at). Half of it, and the pace
            # doubles from there: 0.9
            # of it was refused at its second send, a whole second more, and halved then
            # (bench/busy.py p-bare@300: 9 a second made up from a 100 ms latency against
            # a limit of 5).
            pace.rate = made_up / 2
            pace.step = _FIRST_STEP
        else:
            pace.rate = _CUT * made_up if made_up else 1.0 / max(pause, 0.001)
        pace.proven = made_up > 0
    pace.rate = max(pace.rate, 0.01)
    if pace.regrown_from > 0:
        # The growth begun again (``answers.climbed``) ends here: where it found the pace no
        # higher than it began, within a step, the limit is where it was, and the next growth
        # waits twice as long, so that a participant alone pays a refusal more only now and then.
        pace.regrow_waits = 2 * pace.regrow_waits if pace.rate <= pace.regrown_from * _STEP else 1
        pace.regrown_from = 0.0
    # Tried again once no refusal has found or cut it for ten pauses' time, or as many more as
    # above: so, while the other sender goes on, mostly once it is done. (Not counted from the
    # refusals at a gap let through, which its sends brought every few seconds, it was tried
    # sooner, but such a refusal is as often the jitter of a loaded machine's way to the wire,
    # and a key the agent and the judge share there was tried too often: 27.0 s where 25.6,
    # tests/unit/test_busy_ahead_review.py.)
    pace.regrow_from = now + _PROBED_AFTER * max(pause, 1.0) * pace.regrow_waits


def opening_ended(service: Service, now: float) -> None:
    """A refusal at ``now`` of a request not paced itself (inside a turn paced as a request) while
    the service's opening pace went on: the opening pace let it go beside a neighbour's, which the
    limit could not take. The opening ends, at the pace the sends let through so far went at, or,
    where they tell nothing, a request per the first answer's latency, doubling every half second
    from there. Kept, it went on after the pause as quickly, refused again: two pauses where a run
    without it had one (bench/busy.py p-all-bare, the agent's first request)."""
    pace = service.pace
    pace.opening = False
    latest = Send(service, service.sends, now)
    most = quickest(service, latest) if pace.most > 1 else math.inf
    pace.rate = most * _BARE_AIM if most < math.inf else 1 / pace.latency
    pace.step, pace.proven = math.inf, True


def ended_at_count(service: Service, held_from: int) -> None:
    """A refusal of a request sent alone once the service had said nothing was left of its count
    (``busy.Places``' ``Ration``, which held the sends from ``held_from`` on to one at a time): the
    count used up, not a pace past what the service carries, so nothing is cut. But a pace still
    opening or growing ends there, at what the window let through while the Ration did not hold
    it: the sends since the last pause numbered before ``held_from``, over their span. Kept
    opening, it grew on with the places to some 10^6 a second, nothing else refusing it, and a
    second limit met later (a model that carries 8 at once) was refused 648 times where it was
    not at all (tests/unit/test_busy_ration.py). Made up instead from the sends the Ration held,
    one per answer, as the first refusal's pace is (``opening_refused``), it was 10 a second
    where the window had let through 150, and the next window's requests went at that
    (bench/rpm_window.py: LiteLLM's second minute's 151 in 15 s, the first's 299 in 0.8).
    What the window let through is only at least the limit, slowed by the opening itself: the pace
    grows on from it, a step at most at each answer, as where the sends let through went far
    slower than the refused one. Taken for found, a window that opened on slow answers (0.5 s)
    held the next to its own rate, 99 in 2.3 s; and found from the window's later half alone,
    quicker, a model carrying 8 at once met later was refused 93 times rather than 27. Nothing
    but the count has tried that rate, and the window's sends, let go within a latency of one
    another, say nothing of a limit on requests at once: the first refusal of another limit
    bounds it by what was under way then too (``beside_count``), where read as a rate alone the
    model carrying 8 at once was still refused 27 times (now 4: those sent before its first
    refusal came back)."""
    pace = service.pace
    if pace.rate <= 0 or not (pace.opening or pace.growing):
        return  # not paced, or a pace found already, which a later refusal corrects
    moments = [moment for number, moment in service.latest() if number < held_from and moment >= pace.resumed]
    span = max(moments) - min(moments) if moments else 0.0
    if span > 0:
        pace.rate = (len(moments) - 1) / span
    elif pace.opening:
        pace.rate = 1 / pace.latency  # nothing tells: a request per the first answer's latency, as ``opening_ended``
    else:
        # Nothing let through since the last pause (refused one at a time through an outage,
        # once nothing was left): the pace is what the window before let through still. Made up
        # as at the opening, it was 10 a second after a 19 s outage, the next window's 99 in 2.7 s.
        return
    pace.opening, pace.growing, pace.estimated, pace.proven = False, True, False, True
    pace.step = _STEP
    pace.counted = 2


def beside_count(service: Service, under_way: int, latency: float, now: float, pause: float) -> None:
    """The first refusal of a limit other than the count since the count's refusal ended the pace
    at what its window let through (``ended_at_count``), taught as any (``taught``), with
    ``under_way`` of the participant's requests sent before the refused one still under way and
    its answers taking ``latency``, at ``now``, pausing ``pause``: the pace is at most that many
    a latency, a little under.
    Nothing but the count had tried the window's rate, and its sends, let go within a latency
    of one another, went before any came back: they tell nothing of a limit on requests at
    once. Read as a rate alone, the sends let through as quick as the refused one, a model
    carrying 8 at once (answers of 0.1 s) was taken for a limit of 158 a second, found down from
    there a tenth at each 5 s pause: 27 refusals, 68.7 s where 46.1 before the guard; held to
    8 a latency, 79 a second, 4 (those sent before the first refusal came back), 38.8 s
    (tests/unit/test_busy_ration.py, bench/crowded.py). The participant's own requests only:
    on a key two share, each holds the pace to its part, slower than it need be, not over. A
    rate limit refused as soon after the pause is held lower than it needs only a while: where
    ``taught`` left the pace growing, it grows back a step at each answer (a strict limit of 150
    a second met at the second send after the pause: 10 a second, back over 100 within 3 s).

    Where the first left the pace found, the next refusal of such a limit is bounded so too: the
    requests under way at the first may have been sent before the limit began (a model carrying
    8 at once from the middle of a window's burst, 11.3 s, found 17 under way), and the bound,
    168 a second, was over it, found down from there a tenth each 5 s pause: 25 refusals, 68.8 s
    where win2 0 and 46.1; bounded again at the second, by the 8 then under way, 9 and 33.8 s
    (tests/unit/test_busy_ration_review.py). Not where the first left it growing: a strict limit
    met at the second send after the pause is found as any by its next refusal, which bounded
    again by the one or two then under way held it lower (answers of 1 s, a bucket of 5 a
    second: 93.2 s rather than 84.3).

    Nor does one refusal tell a limit on requests at once from a rate limit whose burst was all
    that was under way: bounded so and found, the pace grows back a twentieth of a percent a
    second, and with answers of 1 s a rate limit of 20 a second (burst 3) held the participant
    at 3 a second for the rest of the run (600 requests in 119.2 s where win2 43.4). So the
    pace the first bound held under is a ceiling it grows back toward, doubling over as many
    answers as were under way, once ten of that limit's pauses have gone by: where the limit was
    on requests at once, its next refusal costs one pause more, a tenth of the time held, and
    bounds the pace again, kept (47.8 s for those 600; a model carrying 8 at once met after the
    count, 1,000 requests: 114.6 s where 108.1, win2 122.1)."""
    pace = service.pace
    first = pace.counted > 1
    pace.counted = 1 if first and not pace.growing else 0
    if under_way > 0 and latency > 0:
        bound = under_way / latency * _BARE_AIM
        if first and not pace.growing and bound < pace.rate:
            pace.ceiling, pace.probe = pace.rate, 2 ** (1 / under_way)
            pace.probe_from = now + _PROBED_AFTER * max(pause, latency)
        pace.rate = min(pace.rate, bound)


def opening_refused(service: Service, send: Send, pause: float) -> bool:
    """The first refusal since the service's first answer (``answers.opened``), of ``send``:
    whether it found the pace. The limit is at least the quickest the last sends went and were let
    through, and under the gap the refused one came after the send before it: the pace is the
    lower of the two, a little under. The opening pace need not have spaced the sends (a
    participant whose requests come as its neighbours' answers do: the agent's, after the
    simulated user's), so the sends themselves tell, not the pace they were let go at, and
    where they went close under the refused one, the pace is found there whatever pace they
    were let go at; but where they went far slower than the refused one, they tell only that
    the limit is at least theirs, and the pace goes on growing from theirs, or, where they
    went far slower than the pace too, from halfway to the refused one's gap.
    Where no two sends were let through (the lone first answer's, the limit under one request
    per latency), nothing is found: it is made up as where nothing paced the service. Where the
    refused one went no quicker than sends let through at the pace, they tell no rate (a burst
    saved up, or a limit just begun): the pace is taken from what was answered in a second.
    Where what it is taken from bounds the limit only from below, it grows again once _BRACKETED
    pauses (``pause``) have gone by with no refusal (``Pace.bracketed_from``)."""
    pace = service.pace
    pace.opening = False
    pace.step = math.inf
    most = quickest(service, send)
    if pace.most <= 1:
        if most == math.inf:
            pace.rate = 0.0  # the lone first answer's next send: made up from what was let through
            return False
        # A later one, those before it not answered yet: the limit is at least about one
        # request per the first answer's latency (the lone answer's next send went so), as
        # made up where the places' worth went at once; a little under, doubling from there.
        pace.rate = _CUT / pace.latency
        pace.proven = True
        return True
    pace.proven = True
    if most == math.inf:
        # No two sends let through since the last pause (the first after it was refused, the
        # pause a neighbour's): half the pace it went at, growing a step at most at each
        # answer. Made up from what was let through, as though nothing had paced the
        # service, it started from one request a second (bench/busy.py p-all-bare: 0.9 a
        # second against 20, the start of the run lost).
        pace.rate = send.pace / 2
        pace.step = _STEP
        return True
    between = gap(service, send, wired=True)
    refused = 1 / between if between > 0 else most
    spaced = most >= _OPEN_SPACED * send.pace
    if most < _OPEN_BRACKET * refused:
        # The sends let through went far slower than the refused one itself went: the limit
        # is somewhere between what they went at and the refused one's gap, not at the lower.
        # Where they went far slower than the pace the refused one was let go at too (more
        # than the opening pace grows between two sends: twice, where the places doubled),
        # spaced by what came to send, not by the pace, the pace grows on from halfway, unless
        # they went at least half as quick as the refused one (_OPEN_WIDE): halfway up from
        # 50 to 62 a second on the wire was 55.6, against a limit of 50, refused at its first
        # send after the pause and halved (a virtual clock's way to the wire of up to 8 ms).
        # Taken for it, the pace stayed there, growing a two-thousandth a second
        # (tests/unit/test_busy_pace.py: 25 a second against a limit of 50; bench/busy.py p-bare@3000's
        # agent at 28). From halfway between (the geometric mean), it grows a step at most at
        # each answer while it holds requests back, so only a participant that needs more
        # than what its sends went at so far climbs on to a second refusal. (Compared with the
        # refused one's gap alone, a loaded machine's send refused 13 a second after sends
        # let through at 13, against a limit of 50, was taken for the limit: bench/busy.py
        # p-bare@3000 3.4x its floor. And where only the sends were at the pace, the user's
        # key there was found at 30 to 34 a second against 50, the refused one at 45 to 64:
        # 1.6x to 2.0x its floor.)
        # Where the sends did go at the pace, the limit was seen near them (from halfway up,
        # the user's key at 50 went at 52, refused again at the pause's end and halved).
        halfway = math.sqrt(most * min(refused, send.pace or refused))
        pace.rate = (most if spaced or most >= _OPEN_WIDE * refused else halfway) * _BARE_AIM
        pace.step = _STEP
        return True
    run = ran(service, send)
    held = ran(service, send, _SAME_GAP) - 1  # the sends let through at the refused one's own gap
    if refused <= most and most >= SPACED * send.pace and pace.most < refused and run > 1 and held >= _HELD:
        # The refused one came no quicker than the sends let through, all at the pace's own
        # gaps: no rate lies between them. They went through on what the limit had saved up (a
        # bucket's burst), or before it began, and tell only that it is under them. What it let
        # through over a whole second is what was answered (``Pace.most``); and a burst of that
        # many, used up at once, grew back under a unit over their gaps: the pace is the more of
        # the two, not growing, and a refusal of the burst each pause saves up cuts it as much
        # (``taught``). Left growing, a bucket of 100 a second (burst 10) met at 276, the pace
        # taken at 91, it climbed on to 1,565 over 25 s while the places held the sends, and was
        # cut a tenth a pause from there (answers of 2 s: 227 refusals, 90.3 s; now 1, 70.3). Found from the sends, a bucket of 20 a second (burst 3) met by an
        # opening pace of 3,044 a second, after a count's window had 497 answered in a second,
        # was cut a tenth a pause from there, each pause's sends in flight refused (answers of
        # 1 s: 674 refusals, 140.8 s; of 0.98 s, 627 and 119.0; tests/unit/test_busy_ration_open.py).
        # The sends must have gone at the pace: spaced by the limit or by what came to send (a
        # token bucket of two requests' worth, test_busy_demand_review.py), the refused one as
        # slow tells the limit near them, and a pace made up from the few answered was too low.
        # And the pace must have held at the refused one's gap (_HELD sends let through at it),
        # not just climbed to it: the opening's sends are held at the wire for their moments, so
        # their gaps are the pace's, which climbs a step at each answer, one or two sends at
        # each. Refused at the second send of a step, the first let through, the refused one was
        # no quicker than it, and the pace was made up from the few answered: where another
        # sender on the key (unseen) had taken the unit, the pace was halved (two participants
        # on one strict bucket of 50 a second, answers of 1 s: 12.2 a second taken for 5.9,
        # 96.1 s for the slowest of three ways; a burst of 10: 39.6 for 14.9, 26.4 s;
        # tests/unit/test_busy_shared_key.py, test_busy_regrowth_review.py). The way's jitter
        # had put the refused one's gap over or under the quickest let through, one way or the
        # other at random. Found at the step instead (below), the limit's, or the share the
        # other sender left, is where the sends went.
        pace.rate = max(pace.most, refused / run) * _BARE_AIM
        pace.growing = False
        pace.unfounded = True
        # A burst's refusal cuts it, but nothing raises it where it is under the limit: sends held
        # at the wire for their moments went at the pace's own gaps, five in a row as quick as the
        # refused one, and a bucket of 25 a second (burst 10) was paced at 17 to 21 for the whole
        # run, the limit raised to 50 at 4 s unseen (tests/unit/test_busy_drained_review.py: the
        # median way 33.42 s; 30.87 where the way to the wire's jitter broke the row after two or
        # three, the pace taken over the limit and cut to it; so 29.35).
        pace.bracketed_from = send.moment + _BRACKETED * max(pause, 1.0)
        return True
    pace.rate = min(most, refused) * _BARE_AIM
    # Found, where the sends let through went close under the refused one: the limit is
    # between them, and a pace grown on from there to its next refusal cost a pause of every
    # participant waiting on it (bench/busy.py p-bare@3000: the agent's key refused twice at
    # the start, each time a second of every conversation). So too where they went far
    # slower than the opening pace (spaced by what came to send): close under the refused
    # one, halfway between was as likely over the limit as under (the agent's key at 50 a
    # second, let through at 50, refused at 59, started at 53, refused at its first send
    # after the pause and halved: three refusals).
    pace.growing = False
    pace.estimated = True
    if refused > most * _STEP**2:
        # More than the opening's steps apart, the limit may be as far over the sends let
        # through: held at the wire, those of a bucket of 50 a second went at 45, the refused
        # one at 55 (the places doubled between them), and found at 45 the pace stayed there
        # (tests/unit/test_busy_unseen_review.py, 3,000 requests: 67.5 s, 63.4 to 64.8 where the
        # way to the wire's jitter took the refused one's gap for far quicker, and the pace grew
        # on from the sends' to a second refusal; so 64.2 to 65.7).
        pace.bracketed_from = send.moment + _BRACKETED * max(pause, 1.0)
    return True


def drained(service: Service, refused: Send) -> bool:
    """Whether ``refused`` came within a second of the last pause at a pace over the most the
    service ever answered of the sends of one second (``Pace.most``), after two or more sends since
    the pause, but fewer than that most: the pace went through on what the pause saved up, not on
    what the limit lets through in a second. More sends than the most since the pause, the most
    is the few answered early in the run, or what the places held the sends to, and tells nothing."""
    pace = service.pace
    if refused.moment - pace.resumed >= 1.0 or pace.rate <= pace.most:
        return False
    since = sum(1 for number, moment in service.latest() if number < refused.number and moment >= pace.resumed)
    return 1 < since < pace.most


def unseen(service: Service, refused: Send) -> bool:
    """Whether ``refused`` is a refusal its participants' own sends cannot have caused: the first
    send since the last pause, at or after its end, where that pause was as long as the service
    asked (``Pace.asked``). A limit that refuses a request only where those before it came too close
    (a token bucket, a window) had a request's worth again by then: another sender, which the
    participants here do not see, took it. (After a pause made up where the service said nothing,
    the made-up wait may just have been too short.)"""
    pace = service.pace
    if pace.resumed == -math.inf or not pace.asked or refused.moment < pace.resumed:
        return False
    return since(service, refused) == 0


def behind(service: Service, refused: Send) -> bool:
    """Whether ``refused`` came after the send before it no quicker than two or more sends since
    the last pause were let through (``gaps.quickest``): a strict limit would have let it through too.
    Another sender's sends, which the participants here do not see, mostly; or a bucket's burst
    saved up over the pause, used up at the pace's own gaps, or the jitter of the way there."""
    pace = service.pace
    if pace.resumed == -math.inf or refused.moment < pace.resumed or since(service, refused) < 2:
        return False
    between = gap(service, refused)
    number, written = service.written_late
    if number == refused.number - 1:
        # A send kept at the moment it was let go, not written (a service that tells something of
        # its limits; one that tells nothing has its sends noted where they went on the wire,
        # ``Service.wired``, and the difference is then none): the send before, written late on
        # a loaded machine, came closer to this one than the gap says. Read at the gap, all three participants on one key of 50 a second
        # (bare_virtual.py --loaded 0.05) marked it, their pace tried again every 10 s: the
        # median way 47.08 s where 44.05 (tests/unit/test_busy_unseen_review.py).
        between -= max(0.0, written - service.moment_of(number))
    return between > 0 and between * quickest(service, refused) >= 1.0


def cut(service: Service, heard: Heard) -> float:
    """What a refusal leaves of the share: a little; or, when the service said how long before
    its next unit the request came (a bucket's reset, less the time the rest of its burst takes
    to grow back), enough that it would have come in time, but no more than a twentieth off: a
    request far too early tells of something else than the jitter of the way there."""
    rate = service.meters["requests"].rate
    match heard.requests:
        case Quota(reset=reset, limit=limit) if limit >= 1 and rate > 0:
            between = 1 / (rate * service.aim())
            early = reset - (limit - 1) / rate
            if 0 < early < between / 2:
                return min(SHARE_CUT, max(_SHARE_DEEPEST, between / (between + early)))
        case _:
            pass
    return SHARE_CUT


def unused(service: Service, send: Send, heard: Heard, now: float) -> None:
    """A strict limit's refusal of the latest send, saying its next unit comes within a gap:
    the unit the send was counted to take is still there, and comes back then, for the refused
    request sent again at once rather than after the send that was to follow it (a gap lost)."""
    meter = service.meters["requests"]
    if not service.strict or meter.rate <= 0 or send.service is not service:
        return
    if not service.sent or service.sends - 1 != send.number:
        return  # a later send, of this participant or another, has taken what comes back
    match heard.requests:
        case Quota(reset=reset, limit=limit) if 0 < limit <= 1 and 0 <= reset < 1 / meter.rate:
            meter.back(now + reset)
        case _:
            pass


def ready(service: Service, heard: Heard, now: float) -> float:
    """When every limit of the service has a request's worth again, a refusal at ``now`` having
    said ``heard``: as the meters count it, or, for a limit with no rate known yet, at the
    refusal's own reset (a limit with no rate known would say "now", and be asked again at once,
    refused again)."""
    return max(
        meter.ready(now, service.aim()) if meter.rate > 0 else now + reset(heard, name)
        for name, meter in service.meters.items()
    )


def reset(heard: Heard, name: str) -> float:
    """The seconds until a limit is whole again as a refusal said it (0 when it did not)."""
    match heard.requests if name == "requests" else heard.tokens:
        case Quota(reset=seconds):
            return seconds
        case _:
            return 0.0
