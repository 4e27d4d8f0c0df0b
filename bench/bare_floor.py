"""How many refusals a client needs to find a limit that tells nothing but a 429 (issue 27 item 1).

A small model, in virtual time, of the busiest key of ``bench/busy.py``'s shapes without headers
(``p-bare@300``, ``p-bare@3000``, ``p-all-bare``): one key behind a strict token bucket (burst 1,
``rate`` a second, full at the start: a request is let through when at least 1/rate has passed
since the last one let through); ``rate * seconds`` requests all waiting from the start (the key
is the run's bottleneck); a request let through is answered after ``latency``; a refused one is
answered at once with ``Retry-After: 1`` (a whole second, as the stand-in and real providers say
for any rate of one a second or more), which the client honours: nothing goes to the key for a
second after a refusal. Nothing else is said. There is no jitter: every send reaches the bucket
at the moment the client chose. The floor is the bench's: (requests - 1) / rate + latency.

The client knows the latency and that the limit is at least ``--least`` a second (5: 300 a
minute, the lowest of the bench's shapes without headers; issue 27's range goes down to 60 a
minute, ``--least 1``, where every client of the family does worse), and nothing more: its sends
before its first refusal follow a schedule fixed in advance (an answer says only "let through",
which every request before the first refusal is), and so do its sends between two refusals. The model plays every client of a family against every
rate of a fine grid and keeps, for each client, its worst ratio of wall to the floor plus
``k`` seconds (the refusals a client is allowed):

- the opening: the second send ``gap`` after the first, each next one ``step`` times sooner
  (a geometric climb), until the first refusal. A client must also do well on a service with no
  limit at all (``p-free``: within 2x an attempt's chain of 0.8 s): its opening must have
  ``--waiting`` (50) requests sent within ``--opening`` (0.27 s: a third of the chain's 0.8 s
  spare, one for each key a chain goes through);
- after the first refusal, the limit is between the gap refused and the least gap let through
  (or 1/``--least`` where none was): the client climbs again, from ``start`` times the gap
  refused (at most the least let through), each send ``fine`` times sooner, until a second
  refusal; and after it, in a third stretch, from the least gap let through, ``finer`` times
  sooner each send, until a third (or it holds at the least gap let through: ``finer`` 0).
  After its last planned refusal it holds the least gap let through.

A client that plans no climb after its first refusal (``start`` 0) is refused at most once; one
that plans one climb, at most twice; and so on. What this prints: for each number of refusals
allowed, the best client of the family, its worst ratio over the rates, and what it does at 5,
20 and 50 a second, the busiest keys of ``p-bare@300``, ``p-all-bare`` and ``p-bare@3000``.

    .venv/bin/python bench/bare_floor.py
    .venv/bin/python bench/bare_floor.py --opening 10   # no service without a limit to do well on
    .venv/bin/python bench/bare_floor.py --least 1      # limits down to 60 a minute
"""

from __future__ import annotations

import argparse
import itertools
import math
from collections.abc import Iterator

import msgspec


class Client(msgspec.Struct, frozen=True):
    """A client of the family: its opening (``gap``, ``step``), its climb after the first refusal
    (``start``, ``fine``; ``start`` 0: none) and after the second (``finer``; 0: none)."""

    gap: float
    step: float
    start: float = 0.0
    fine: float = 0.0
    finer: float = 0.0


class Played(msgspec.Struct, frozen=True):
    """One client against one rate: the wall, the floor, and the refusals."""

    rate: float
    wall: float
    floor: float
    refused: int


def opening_time(client: Client, waiting: int) -> float:
    """Seconds the opening takes to send ``waiting`` requests to a service with no limit."""
    return sum(client.gap / client.step**index for index in range(waiting - 1))


def played(client: Client, rate: float, seconds: float, latency: float, least: float) -> Played:
    """``client`` against a strict bucket of ``rate`` a second with ``rate * seconds`` requests waiting."""
    requests = max(2, round(rate * seconds))
    unit = 1 / rate  # the least gap the bucket lets through
    last = 0.0  # when the last request let through arrived (the first, at 0)
    sent = 1
    refused = 0
    low, high = 0.0, 1 / least  # the gap of the limit is in (low, high]
    stretch = 0  # 0: the opening; 1: the climb after the first refusal; 2: after the second
    gap = client.gap
    while sent < requests:
        if gap > low and gap < unit:  # refused: the pause, then the same request again
            refused += 1
            low = gap
            last += gap + 1.0  # a second from the refusal; the bucket is full again by then
            sent += 1
            stretch += 1
            if stretch == 1 and client.start > 0:
                gap = min(client.start * low, high)
            elif stretch == 2 and client.finer > 0:
                gap = high  # from the least let through, climbing again
            else:
                gap = high  # the last stretch: hold the least gap let through
                stretch = 3
            continue
        if stretch == 3:  # holding: the rest at this gap
            last += gap * (requests - sent)
            break
        last += gap
        sent += 1
        high = min(high, gap)
        ratio = {0: client.step, 1: client.fine, 2: client.finer}.get(stretch, 0.0)
        if ratio > 1 and gap / ratio > low:
            gap /= ratio
        elif ratio > 1:
            gap = high  # the next step would be refused for sure: hold
            stretch = 3
    return Played(rate, last + latency, (requests - 1) / rate + latency, refused)


def clients(opening: float, waiting: int) -> Iterator[Client]:
    """The family, openings that keep a service with no limit within ``opening`` only."""
    for gap, step in itertools.product(
        (0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0), (1.02, 1.05, 1.1, 1.2, 1.35, 1.5, 2.0, 3.0)
    ):
        first = Client(gap, step)
        if opening_time(first, waiting) > opening:
            continue
        yield first
        for start, fine in itertools.product((1.2, 1.5, 2.0, 3.0, 1e9), (1.01, 1.02, 1.03, 1.05, 1.08, 1.12, 1.2, 1.5)):
            yield Client(gap, step, start, fine)
            for finer in (1.005, 1.01, 1.02, 1.05):
                yield Client(gap, step, start, fine, finer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0, help="the floor the requests make at the limit")
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--least", type=float, default=5.0, help="the lowest limit a client allows for, a second")
    parser.add_argument("--most", type=float, default=50.0, help="the highest limit played, a second")
    parser.add_argument("--waiting", type=int, default=50, help="requests waiting at the start of a run with no limit")
    parser.add_argument("--opening", type=float, default=0.27, help="seconds the opening may take to send them")
    arguments = parser.parse_args()
    rates = [arguments.least * (arguments.most / arguments.least) ** (index / 120) for index in range(121)]
    rates += [5.0, 20.0, 50.0]
    best: dict[int, tuple[float, Client]] = {}
    once = math.inf  # the best worst ratio to the floor plus 1 s of the clients never refused twice
    for client in clients(arguments.opening, arguments.waiting):
        games = [played(client, rate, arguments.seconds, arguments.latency, arguments.least) for rate in rates]
        if max(game.refused for game in games) <= 1:
            once = min(once, max(game.wall / (game.floor + 1) for game in games))
        for allowed in (1, 2, 3):
            worst = max(game.wall / (game.floor + allowed) for game in games)
            if allowed not in best or worst < best[allowed][0]:
                best[allowed] = (worst, client)
    print(
        f"one key, strict bucket, {arguments.seconds:g} s of requests at the limit, answers after {arguments.latency * 1000:g} ms,"
        f" Retry-After 1 s; limits {arguments.least:g} to {arguments.most:g} a second; {arguments.waiting} requests sent"
        f" within {arguments.opening:g} s with no limit"
    )
    for allowed, (worst, client) in sorted(best.items()):
        print(f"\nthe floor plus {allowed} s: the best client's worst ratio {worst:.3f}x  ({client})")
        print(f"  opening with no limit: {opening_time(client, arguments.waiting):.2f} s")
        for rate in (5.0, 20.0, 50.0):
            game = played(client, rate, arguments.seconds, arguments.latency, arguments.least)
            print(
                f"  {rate * 60:5.0f}/min: floor {game.floor:5.2f} s, wall {game.wall:5.2f} s, {game.refused} refused;"
                f" {game.wall / game.floor:.3f}x the floor, {game.wall / (game.floor + allowed):.3f}x (floor + {allowed} s)"
            )
        worst_game = max(
            (played(client, rate, arguments.seconds, arguments.latency, arguments.least) for rate in rates),
            key=lambda game: game.wall / (game.floor + allowed),
        )
        print(
            f"  worst at {worst_game.rate:.2f}/s: {worst_game.refused} refused, {worst_game.wall / (worst_game.floor + allowed):.3f}x"
        )
    print("\nrefusals of the best client for 'the floor plus 2 s', across the rates:", end=" ")
    client = best[2][1]
    counts = sorted(
        {played(client, rate, arguments.seconds, arguments.latency, arguments.least).refused for rate in rates}
    )
    print(counts, "at most" if counts else "")
    # Of the clients refused at most once at every rate, not the best for the floor plus 1 s, which
    # may be refused twice (the review rev7 found the line giving 1.181x where such clients do 1.890x).
    print(f"a client refused at most once: {once:.3f}x (floor + 1 s) at best")


if __name__ == "__main__":
    main()
