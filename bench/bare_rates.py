"""One participant against a strict limit that tells nothing, at rates from 5 to 200 a second, played
by convy's ``Places`` in virtual time (issue 27 item 3: what a quicker opening costs a limit).

``bare_virtual.py``'s shapes put three participants on keys of 50 a second at most, and a change
to how the places open (``busy.START``, the opening pace) can leave them as they were while it
costs a lone participant a refusal and a second at a limit just under the opening's first gap
(``tests/unit/test_busy_bare.py``'s 500 requests at 50 a second). Here, for each rate, ten
seconds' worth of requests all waiting from the start, sent by one participant whose places
grow from the start's (``Places(0, "user")``) through ``bare_virtual.py``'s way to the wire (0.5 ms
to ``--way``, seeded; the limit counts a request once written) against the test stand-in's strict
bucket (burst 1, no header, ``Retry-After`` in whole seconds), answered in 100 ms. Printed per
rate: the floor ((requests - 1) / rate + 0.1), the median wall of ``--ways`` seeded ways and the
worst, and each way's refusals.

    .venv/bin/python bench/bare_rates.py
    .venv/bin/python bench/bare_rates.py 40 50 60 --ways 26
    .venv/bin/python bench/bare_rates.py --before /tmp/main/src   # convy's source at SRC instead
"""

from __future__ import annotations

import argparse
import asyncio

from virtual import played_from, summed

RATES = (5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 80.0, 100.0, 150.0, 200.0)
LATENCY = 0.1


def played(rate: float, seed: int, most: float) -> tuple[float, int]:
    """One way: the wall of ten seconds' worth of requests at ``rate``, and the refusals."""
    from support.clock import in_virtual_time
    from support.standin import Bucket
    from test_busy_bare import Wired

    from convy.busy import Patience, Places

    key = Wired(Bucket(rate, 1, headers=False), "key", seed, most)
    requests = round(rate * 10)

    async def main() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        places = Places(0, "user", patience=Patience(600))
        await asyncio.gather(*(places.sent(key) for _ in range(requests)))
        return loop.time() - start

    wall: float = in_virtual_time(main)
    assert sum(1 for _, let in key.reached if let) == requests
    return wall, key.refused


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rates", nargs="*", type=float, help="the limits, requests a second (default: 5 to 200)")
    parser.add_argument("--ways", type=int, default=12, help="seeded ways to the wire (default 12)")
    parser.add_argument("--way", type=float, default=0.008, help="the longest way to the wire, seconds (default 0.008)")
    parser.add_argument("--before", metavar="SRC", help="convy's source at SRC rather than this tree's")
    arguments = parser.parse_args()
    played_from(arguments.before)
    for rate in arguments.rates or RATES:
        ways = [played(rate, seed, arguments.way) for seed in range(1, arguments.ways + 1)]
        floor = (round(rate * 10) - 1) / rate + LATENCY
        median, worst, refused = summed(ways)
        print(
            f"{rate:5g}/s  floor {floor:5.2f}  wall median {median:5.2f} ({median / floor:.3f}x)"
            f" worst {worst:5.2f}  refused: {refused}",
            flush=True,
        )


if __name__ == "__main__":
    main()
