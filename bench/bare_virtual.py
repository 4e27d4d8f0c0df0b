"""``bench/busy.py --project``'s shapes without headers, played by convy's ``Places`` in virtual time.

The same attempts as the bench's (a simulated user's request, then the agent's, three turns, the
user's last, then the judge's, each participant with places that grow), against the test stand-in's
strict bucket (``standin.Bucket``, burst 1, no header, ``Retry-After`` in whole seconds) on a
virtual clock (``support.clock``): no HTTP, no stand-in process, the same moments on any machine.
Each request takes a seeded way to the wire (0.5 ms to ``--way``, as ``tests/unit/test_busy_bare.py``'s
``Wired``), waits there for the moment its ``Told`` says, then takes a while to be written: a
tenth of a millisecond, ``--steady`` more (a machine loaded the whole run: every write that long)
and an exponential ``--write`` more, or, with ``--loaded P``, now and then
(a chance P at each send) 0.3 to 1 s in which every write takes 5 to 25 ms, the machine busy; the
limit counts it once written. Shapes: ``p-bare@300`` and ``p-bare@3000`` (each participant a key of
its own), ``p-all-bare`` (one key of 1,200 a minute for the three), ``p-free`` (no limit, 50
attempts). Printed per shape: the floor (the busiest key's requests let through over its rate,
plus an answer; for ``p-free`` what full concurrency allows, ``at_once``: its chain of 0.8 s and
the ways to the wire, about 0.85 s), the median wall of ``--ways`` seeded ways and the
worst, and the refusals per key of each way.

    .venv/bin/python bench/bare_virtual.py
    .venv/bin/python bench/bare_virtual.py p-bare@3000 --loaded 0.05 --ways 26
    .venv/bin/python bench/bare_virtual.py --only-user   # the agent's and the judge's keys with no limit
    .venv/bin/python bench/bare_virtual.py --turns       # the agent's requests inside its turns (a JsonAgent's)
    .venv/bin/python bench/bare_virtual.py --before /tmp/main/src  # convy's source at SRC instead
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from typing import Any

from virtual import played_from

SHAPES = {  # the limit a second, the attempts, whether the three share one key
    "p-bare@300": (5.0, 13, False),
    "p-bare@3000": (50.0, 125, False),
    "p-all-bare": (20.0, 25, True),
    "p-free": (0.0, 50, False),
}
LATENCY = 0.1


def keyed(arguments: argparse.Namespace) -> Any:
    """The class of a key reached through the way to the wire ``arguments`` describe."""
    from test_busy_bare import Bare, Wired

    from convy.quota import TOLD

    class Written(Wired):
        async def __call__(self) -> str:
            told = TOLD.get()
            if told is not None and not told.service:
                told.service = self.name
            loop = asyncio.get_running_loop()
            await asyncio.sleep(self.way.uniform(0.0005, self.most))
            if told is not None:
                await told.writable()
                if stretch := self.stretched(loop.time(), arguments.loaded):
                    await asyncio.sleep(stretch)
                elif arguments.write or arguments.steady:
                    exponential = self.way.expovariate(1 / arguments.write) if arguments.write else 0.0
                    await asyncio.sleep(0.0001 + arguments.steady + exponential)
                told.wrote(loop.time())
            return await Bare.__call__(self)

    return Written


def played(name: str, seed: int, arguments: argparse.Namespace) -> tuple[float, float, dict[str, int]]:
    """One way of a shape: the wall, the floor, and the refusals of each key."""
    from support.clock import in_virtual_time
    from support.project import conversations
    from support.standin import Bucket

    rate, attempts, shared = SHAPES[name]
    written = keyed(arguments)

    def key(label: str, offset: int, limited: bool = True) -> Any:
        bucket = Bucket(rate, 1, headers=False) if rate and limited else Bucket(1e9, 1e9, headers=False)
        return written(bucket, label, seed + offset, arguments.way)

    if shared:
        one = key("one key", 0)
        keys = {"user": one, "agent": one, "judge": one}
    else:
        keys = {
            "user": key("u", 0),
            "agent": key("a", 100, not arguments.only_user),
            "judge": key("j", 200, not arguments.only_user),
        }

    async def main() -> float:
        return await conversations(keys, attempts, turns=arguments.turns)

    wall: float = in_virtual_time(main)
    if not rate:
        return wall, at_once(written, seed, attempts, arguments), {}
    let_through = sum(1 for _, let in keys["user"].reached if let)
    refused = {"u+a+j": keys["user"].refused} if shared else {who[0]: service.refused for who, service in keys.items()}
    return wall, (let_through - 1) / rate + LATENCY, refused


def at_once(written: Any, seed: int, attempts: int, arguments: argparse.Namespace) -> float:
    """What full concurrency allows ``p-free``: its attempts all under way at once with no places
    and no pace, each request by a way to the wire seeded as the shape's (the chain of 0.8 s and
    its eight ways, about 0.85 s), the yardstick of its target."""
    from support.clock import in_virtual_time
    from support.standin import Bucket

    keys = {who: written(Bucket(1e9, 1e9, headers=False), who[0], seed + offset, arguments.way) for who, offset in (("user", 0), ("agent", 100), ("judge", 200))}

    async def main() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()

        async def attempt() -> None:
            for _ in range(3):
                await keys["user"]()
                await keys["agent"]()
            await keys["user"]()
            await keys["judge"]()

        await asyncio.gather(*(attempt() for _ in range(attempts)))
        return loop.time() - start

    wall: float = in_virtual_time(main)
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shapes", nargs="*", choices=(*SHAPES, []), help="the shapes (default: all)")
    parser.add_argument("--ways", type=int, default=12, help="seeded ways to the wire (default 12)")
    parser.add_argument("--way", type=float, default=0.008, help="the longest way to the wire, seconds (default 0.008)")
    parser.add_argument(
        "--write", type=float, default=0.0, help="the mean of a write's time past 0.1 ms, seconds (default 0)"
    )
    parser.add_argument(
        "--steady", type=float, default=0.0, help="what every write takes more, the machine loaded for good (default 0)"
    )
    parser.add_argument(
        "--loaded", type=float, default=0.0, help="the chance at each send of a stretch of load (default 0)"
    )
    parser.add_argument("--only-user", action="store_true", help="the agent's and the judge's keys with no limit")
    parser.add_argument(
        "--turns", action="store_true", help="each agent's request sent inside an agent's turn, as a JsonAgent's is"
    )
    parser.add_argument("--before", metavar="SRC", help="convy's source at SRC rather than this tree's")
    arguments = parser.parse_args()
    played_from(arguments.before)
    for name in arguments.shapes or SHAPES:
        ways = [played(name, seed, arguments) for seed in range(1, arguments.ways + 1)]
        walls = [wall for wall, _, _ in ways]
        floor = statistics.median(floor for _, floor, _ in ways)  # one for each way: p-free's at once
        refused = " ".join("/".join(f"{who}{count}" for who, count in counts.items()) for _, _, counts in ways)
        print(
            f"{name:<12} floor {floor:5.2f}  wall median {statistics.median(walls):5.2f} ({statistics.median(walls) / floor:.3f}x)"
            f" worst {max(walls):5.2f}  refused: {refused}",
            flush=True,
        )


if __name__ == "__main__":
    main()
