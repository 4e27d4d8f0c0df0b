"""Limits that tell what is left in ``x-ratelimit-*`` headers, of shapes a small limit's words may be
misread with (``quota.Meter.emptied``), played by convy's ``Places`` in virtual time.

``bench/busy.py --project``'s attempts (a simulated user's request, then the agent's, three turns,
the user's last, then the judge's), each participant a key of its own to the limit, or one key for
the three (``shared-*``), as ``tests/unit/test_busy_small_review.py`` plays them: a seeded way to
the wire of 0.5 to 8 ms, an answer after 100 ms, a refusal with a whole-second ``Retry-After``.
Printed per case: the floor (the user's requests, less what the limit saves up, at its rate; all
three's on one key), the median wall of ``--ways`` seeded ways and its ratio to the floor, the
worst, the median of all keys' refusals and the most, and the user's requests let through a second
over its last 5 s of requests (a limit raised or halved mid-run: the pace it ended at).

    .venv/bin/python bench/small_limits.py                               # every case, 4 ways
    .venv/bin/python bench/small_limits.py raise-bucket10to19 --ways 8
    .venv/bin/python bench/small_limits.py --before /tmp/before-split1/src   # convy's source at SRC
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from virtual import played_from


@dataclass
class RoundRobin:
    """Limits behind one address and key, each request to the next in turn (a balancer over
    deployments with a limit each): each word tells of the one that answered."""

    each: tuple[Any, ...]
    turn: int = 0

    def admit(self, now: float, cost: float) -> tuple[int | None, dict[str, str]]:
        limit = self.each[self.turn % len(self.each)]
        self.turn += 1
        result: tuple[int | None, dict[str, str]] = limit.admit(now, cost)
        return result


def cases() -> dict[str, tuple[Callable[[], Any], int, float, bool, float]]:
    """Each case: the limit (made anew for each key), the attempts, the floor in seconds, whether
    the three share one key, and the tokens a request costs on average (0: a limit on requests)."""
    from support.standin import Bucket, Changing, Window
    from test_busy_small_review import Fixed, NextUnit, Overdrawn, Unsized

    return {
        "bucket5@50": (lambda: Bucket(50.0, 5.0), 125, (500 - 5) / 50, False, 0.0),
        "window5/1s": (lambda: Window(5, 1.0), 25, (100 - 5) / 5, False, 0.0),
        "window3/1s": (lambda: Window(3, 1.0), 15, (60 - 3) / 3, False, 0.0),
        "window10/60s": (lambda: Window(10, 60.0), 5, (20 - 10) / (10 / 60), False, 0.0),
        "fixed5/1s": (lambda: Fixed(5, 1.0), 25, (100 - 5) / 5, False, 0.0),
        "fixed10/10s": (lambda: Fixed(10, 10.0), 10, (40 - 10) / 1, False, 0.0),
        "raise-window5to10": (
            lambda: Changing(Window(5, 1.0), Window(10, 1.0), 5.0),
            50,
            5 + (200 - 25) / 10,
            False,
            0.0,
        ),
        "raise-fixed5to10": (lambda: Changing(Fixed(5, 1.0), Fixed(10, 1.0), 5.0), 50, 5 + (200 - 25) / 10, False, 0.0),
        "raise-bucket10to19": (
            lambda: Changing(Bucket(10.0, 10.0), Bucket(19.0, 19.0), 3.0),
            60,
            3 + (240 - 30) / 19,
            False,
            0.0,
        ),
        "raise-long-bucket10to19": (
            lambda: Changing(Bucket(10.0, 10.0), Bucket(19.0, 19.0), 3.0),
            250,
            3 + (1000 - 30) / 19,
            False,
            0.0,
        ),
        "raise-bucket5@50to10@100": (
            lambda: Changing(Bucket(50.0, 5.0), Bucket(100.0, 10.0), 2.0),
            250,
            2 + (1000 - 100) / 100,
            False,
            0.0,
        ),
        "raise-bucket5@50to5@100": (
            lambda: Changing(Bucket(50.0, 5.0), Bucket(100.0, 5.0), 2.0),
            250,
            2 + (1000 - 100) / 100,
            False,
            0.0,
        ),
        "halve-bucket5@50to5@25": (
            lambda: Changing(Bucket(50.0, 5.0), Bucket(25.0, 5.0), 2.0),
            125,
            2 + (500 - 100) / 25,
            False,
            0.0,
        ),
        "halve-window10to5": (
            lambda: Changing(Window(10, 1.0), Window(5, 1.0), 3.0),
            25,
            3 + (100 - 30) / 5,
            False,
            0.0,
        ),
        "nextunit-refusal": (lambda: NextUnit(Bucket(50.0, 5.0)), 125, (500 - 5) / 50, False, 0.0),
        "overdrawn-bucket5@50": (
            lambda: Overdrawn(Bucket(50.0, 5.0), 3.0, 20.0),
            125,
            (500 - 5) / 50 + 0.4,
            False,
            0.0,
        ),
        "overdrawn-long-bucket5@50": (
            lambda: Overdrawn(Bucket(50.0, 5.0), 3.0, 20.0),
            500,
            (2000 - 5) / 50 + 0.4,
            False,
            0.0,
        ),
        "overdrawn-bucket10@10": (
            lambda: Overdrawn(Bucket(10.0, 10.0), 3.0, 20.0),
            50,
            (200 - 10) / 10 + 2,
            False,
            0.0,
        ),
        "unsized-bucket5@50": (lambda: Unsized(Bucket(50.0, 5.0)), 125, (500 - 5) / 50, False, 0.0),
        "unsized-window5/1s": (lambda: Unsized(Window(5, 1.0)), 25, (100 - 5) / 5, False, 0.0),
        "openai500rpm": (lambda: Bucket(500 / 60, 500.0), 250, (1000 - 500) / (500 / 60), False, 0.0),
        "tokens-small": (lambda: Bucket(500.0, 50.0, unit="tokens"), 125, (500 * 10 - 50) / 500, False, 10.0),
        "roundrobin-5@50+5@50": (
            lambda: RoundRobin((Bucket(50.0, 5.0), Bucket(50.0, 5.0))),
            125,
            (500 - 10) / 100,
            False,
            0.0,
        ),
        "roundrobin-5@50+10@100": (
            lambda: RoundRobin((Bucket(50.0, 5.0), Bucket(100.0, 10.0))),
            125,
            (500 - 15) / 100,
            False,
            0.0,
        ),
        "shared-bucket5@50": (lambda: Bucket(50.0, 5.0), 50, (400 - 5) / 50, True, 0.0),
        "shared-window5/1s": (lambda: Window(5, 1.0), 8, (64 - 5) / 5, True, 0.0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help="the cases (default: all)")
    parser.add_argument("--ways", type=int, default=4, help="seeded ways to the wire (default 4: seeds 0, 1, 3, 9)")
    parser.add_argument("--before", metavar="SRC", help="convy's source at SRC rather than this tree's")
    arguments = parser.parse_args()
    played_from(arguments.before)
    from test_busy_small_review import played

    known = cases()
    unknown = [name for name in arguments.cases if name not in known]
    if unknown:
        parser.error(f"unknown cases {unknown}; known: {', '.join(known)}")
    seeds = [0, 1, 3, 9, *range(10, 10 + max(0, arguments.ways - 4))][: arguments.ways]
    for name in arguments.cases or known:
        limit, attempts, floor, shared, tokens = known[name]
        runs = [played(limit, seed, attempts, shared, tokens) for seed in seeds]
        walls = [run.wall for run in runs]
        refused = [run.refused() for run in runs]
        lately = "" if shared else f"  user's last 5 s {statistics.median(run.lately() for run in runs):6.1f}/s"
        print(
            f"{name:<26} floor {floor:6.2f}  wall median {statistics.median(walls):6.2f}"
            f" ({statistics.median(walls) / floor:.3f}x) worst {max(walls):6.2f}"
            f"  refused median {statistics.median(refused):5.1f} most {max(refused):3d}{lately}",
            flush=True,
        )


if __name__ == "__main__":
    main()
