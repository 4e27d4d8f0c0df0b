"""One participant against a count of requests per window that says what is left without a reset
and refuses with a whole window's Retry-After, as LiteLLM's proxy counts a model's ``rpm``
(``tests/unit/test_busy_ration.py``'s ``Minute``), in virtual time: how long each window's requests
took, and the run's wall.

    .venv/bin/python bench/rpm_window.py                  # 300 a minute, 450 requests
    .venv/bin/python bench/rpm_window.py 100 10 150       # rpm, window seconds, requests
    .venv/bin/python bench/rpm_window.py --before /tmp/before/src
"""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter

from virtual import played_from


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rpm", nargs="?", type=int, default=300, help="the count a window (default 300)")
    parser.add_argument("window", nargs="?", type=float, default=60.0, help="the window, seconds (default 60)")
    parser.add_argument("requests", nargs="?", type=int, default=450, help="requests (default 450)")
    parser.add_argument("--before", metavar="SRC", help="convy's source at SRC rather than this tree's")
    arguments = parser.parse_args()
    played_from(arguments.before)
    from support.clock import START, in_virtual_time
    from test_busy_ration import Minute

    from convy.busy import Patience, Places

    service = Minute(rpm=arguments.rpm, window=arguments.window, latency=0.1)
    answered: list[float] = []

    async def played() -> float:
        places = Places(0, patience=Patience(600))

        async def one() -> None:
            await places.sent(service)
            answered.append(asyncio.get_running_loop().time() - START)

        await asyncio.gather(*(one() for _ in range(arguments.requests)))
        return asyncio.get_running_loop().time() - START

    wall: float = in_virtual_time(played)
    windows = Counter(int(moment // arguments.window) for moment in answered)
    print(f"{arguments.rpm} a window of {arguments.window:g} s, {arguments.requests} requests: wall {wall:.2f} s, refused {sum(service.refusals.values())}")
    for window in sorted(windows):
        moments = sorted(moment for moment in answered if int(moment // arguments.window) == window)
        print(f"  window {window}: {len(moments)} answered from {moments[0]:.2f} to {moments[-1]:.2f} s ({moments[-1] - moments[0]:.2f} s)")


if __name__ == "__main__":
    main()
