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

from virtual import played_from


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rpm", nargs="?", type=int, default=300, help="the count a window (default 300)")
    parser.add_argument("window", nargs="?", type=float, default=60.0, help="the window, seconds (default 60)")
    parser.add_argument("requests", nargs="?", type=int, default=450, help="requests (default 450)")
    parser.add_argument("--before", metavar="SRC", help="convy's source at SRC rather than this tree's")
    arguments = parser.parse_args()
    played_from(arguments.before)
    from test_busy_ration import Minute, answered_by_window

    from convy.busy import Patience, Places

    service = Minute(rpm=arguments.rpm, window=arguments.window, latency=0.1)
    windows = answered_by_window(service, arguments.requests, Places(0, patience=Patience(600)))
    wall = max(max(moments) for moments in windows.values())
    print(f"{arguments.rpm} a window of {arguments.window:g} s, {arguments.requests} requests: wall {wall:.2f} s, refused {sum(service.refusals.values())}")
    for window in sorted(windows):
        moments = sorted(windows[window])
        print(f"  window {window}: {len(moments)} answered from {moments[0]:.2f} to {moments[-1]:.2f} s ({moments[-1] - moments[0]:.2f} s)")


if __name__ == "__main__":
    main()
