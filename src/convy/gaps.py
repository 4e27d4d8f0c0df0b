"""What the gaps between a service's latest sends tell of one it refused.

A strict limit lets a send through only where it came far enough after the one before it: the gaps
of the sends let through since the last pause bound the limit from below (``quickest``), the refused
one's gap from above (``gap``), and how many went as quick as it (``ran``, ``saved_up``) tells a
rate from a burst the pause saved up. ``refusals.py`` reads them to find or cut the pace; they are
read from the ``Service``'s latest sends (``Service.latest``, where each went on the wire for a
service that tells nothing) and change nothing. Nothing here reads a clock or waits.
"""

from __future__ import annotations

import math

from convy.quota import Send, Service

# The gaps let through before a refusal tell the limit when the quickest of them is at least
# SPACED of the refused send's pace half a step back: sends that went at the pace, or nearly.
SPACED = 0.9
# How many sends numbered before a refused one are looked among for the one before it on the wire.
_OVERTAKEN = 16
_QUICKEST = 4  # the gaps between the sends before a refused one that tell what was let through


def before(service: Service, refused: Send) -> list[float]:
    """The moments of the sends since the last pause that came before ``refused``, the newest
    first, up to _QUICKEST and one more."""
    moments: list[float] = []
    for number, moment in service.latest():
        if number >= refused.number:
            continue
        if moment < service.pace.resumed or len(moments) > _QUICKEST:
            break
        moments.append(moment)
    return moments


def since(service: Service, refused: Send) -> int:
    """How many sends since the last pause came before ``refused``, up to _QUICKEST and one more."""
    return len(before(service, refused))


def ran(service: Service, refused: Send, spaced: float = SPACED) -> int:
    """How many sends in a row before ``refused``, since the last pause, went as quick as it did
    (their gaps no longer than its own over ``spaced``), up to _QUICKEST and one more."""
    between = gap(service, refused)
    count, later = 0, -1.0
    for number, moment in service.latest():
        if number > refused.number:
            continue
        if number < refused.number:
            if moment < service.pace.resumed or later - moment > between / spaced or count > _QUICKEST:
                break
            count += 1
        later = moment
    return count


def saved_up(service: Service, refused: Send) -> int:
    """How many sends were let through since the last pause before ``refused``, where they were
    few (two to _QUICKEST) and the refused one came as quick after them as they went: a burst
    the pause saved up, not a rate (0 otherwise). A single one tells no gap (a bucket of one
    refuses the second send of any pace over it), and more than a few at the refused one's
    gaps are a pace a little over the limit draining what was saved, which a tenth corrects."""
    moments: list[float] = []
    for number, moment in service.latest():
        if number > refused.number:
            continue
        if moment < service.pace.resumed:
            break
        if len(moments) > _QUICKEST:
            return 0
        moments.append(moment)
    let_through = len(moments) - 1
    if let_through < 2:
        return 0
    moments.sort(reverse=True)
    gaps = [earlier - later for earlier, later in zip(moments, moments[1:], strict=False)]
    # The refused one's gap no longer than the quickest let through over SPACED: as quick.
    return let_through if max(gaps) > 0 and gaps[0] <= min(gaps) / SPACED else 0


def gap(service: Service, refused: Send, wired: bool = False) -> float:
    """The seconds between a refused send and the send before it (0 when unknown): numbered
    before it, or, ``wired``, the latest of those that went on the wire before it, whatever their
    numbers. Sends not held one behind another reach it out of order: the opening's, on a loaded
    machine, one let go 19 ms after another, written 10 ms before it; the refused one read
    against the send numbered before it, 72 ms earlier, the limit was taken for 14 a second
    against 50 (bench/bare_virtual.py p-bare@3000 --loaded 0.05)."""
    moment = service.moment_of(refused.number)
    if moment == -math.inf:
        return 0.0
    previous = -math.inf
    for number, other in service.latest():
        if number < refused.number - _OVERTAKEN:
            break
        if number < refused.number and not wired:
            return moment - other
        if wired and number != refused.number and other <= moment:
            previous = max(previous, other)
    return moment - previous if previous > -math.inf else 0.0


def quickest(service: Service, refused: Send) -> float:
    """The most sends a second that the gaps between the last few sends before a refused one,
    since the last pause, tell of: each of them was let through (infinite if none tell)."""
    moments = before(service, refused)
    moments.sort(reverse=True)  # moments on the wire (``Service.wired``) may come in another order
    gaps = [earlier - later for earlier, later in zip(moments, moments[1:], strict=False)]
    return 1 / min(gaps) if gaps and min(gaps) > 0 else math.inf
