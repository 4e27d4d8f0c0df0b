"""One participant against a bucket of 50 a second that tells nothing, its answers taking a second
or more, as a real model's do, played by convy's ``Places`` in virtual time (issue 27: close to
the floor whatever the shape; the places after the first refusal).

``bare_rates.py`` answers in 100 ms, where the places after a refusal grow back within a second
whatever they do; here 500 requests, all waiting from the start, are sent by one participant whose
places grow (``tests/unit/test_busy_slow_review.py``'s ``run``: ``Places(0)``) through
``bare_virtual.py``'s way to the wire (0.5 to 8 ms, seeded) against the test stand-in's bucket
(``Bucket(50, burst, headers=False)``, ``Retry-After`` in whole seconds), each answer taking the
shape's latency, or one drawn per request between two (``Mixed``: the answers come back out of the
order they were sent in). ``shared`` puts two participants of 300 requests each on one bucket,
neither knowing of the other (two processes on one key). Printed per shape: the floor (the
requests less the burst, at 50 a second, and the slowest answer), the median wall of ``--ways``
seeded ways and the worst, and each way's refusals.

    .venv/bin/python bench/slow_answers.py
    .venv/bin/python bench/slow_answers.py b1/2 b50/1 --ways 12
    .venv/bin/python bench/slow_answers.py --before /tmp/main/src   # convy's source at SRC instead
"""

from __future__ import annotations

import argparse

from virtual import played_from, summed

# name: (burst, the least latency, the most, participants)
SHAPES = {
    "b1/0.5": (1, 0.5, 0.5, 1),
    "b1/1": (1, 1.0, 1.0, 1),
    "b1/2": (1, 2.0, 2.0, 1),
    "b1/0.5-1.5": (1, 0.5, 1.5, 1),
    "b1/1-3": (1, 1.0, 3.0, 1),
    "b1/0.1-5": (1, 0.1, 5.0, 1),
    "b5/1": (5, 1.0, 1.0, 1),
    "b5/2": (5, 2.0, 2.0, 1),
    "b10/1": (10, 1.0, 1.0, 1),
    "b10/2": (10, 2.0, 2.0, 1),
    "b20/1": (20, 1.0, 1.0, 1),
    "b20/2": (20, 2.0, 2.0, 1),
    "b20/0.5-1.5": (20, 0.5, 1.5, 1),
    "b50/1": (50, 1.0, 1.0, 1),
    "b50/2": (50, 2.0, 2.0, 1),
    "shared-b10/2": (10, 2.0, 2.0, 2),
    "shared-b20/2": (20, 2.0, 2.0, 2),
}
RATE = 50.0


def played(shape: tuple[int, float, float, int], seed: int) -> tuple[float, int]:
    """One way of ``shape``: the wall, and the refusals."""
    from support.standin import Bucket
    from test_busy_bare import Wired
    from test_busy_slow_review import Mixed, run

    burst, low, high, participants = shape
    limit = Bucket(RATE, burst, headers=False)
    key = Mixed(limit, seed, low, high) if high > low else Wired(limit, "k", seed)
    key.latency = low
    return run(key, 500 if participants == 1 else 300, participants)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shapes", nargs="*", help=f"the shapes (default all: {' '.join(SHAPES)})")
    parser.add_argument("--ways", type=int, default=6, help="seeded ways (default 6)")
    parser.add_argument("--before", metavar="SRC", help="convy's source at SRC rather than this tree's")
    arguments = parser.parse_args()
    played_from(arguments.before)
    for name in arguments.shapes or SHAPES:
        shape = SHAPES[name]
        burst, _, high, participants = shape
        ways = [played(shape, seed) for seed in range(1, arguments.ways + 1)]
        requests = 500 if participants == 1 else 600
        floor = (requests - burst) / RATE + high
        median, worst, refused = summed(ways)
        print(
            f"{name:13} floor {floor:5.2f}  wall median {median:6.2f} ({median / floor:.2f}x)"
            f" worst {worst:6.2f}  refused: {refused}",
            flush=True,
        )


if __name__ == "__main__":
    main()
