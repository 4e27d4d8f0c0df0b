"""A proxy's count of requests per window met, then a second limit behind it, in virtual time: the
model carrying only so many requests at once (``tests/unit/test_busy_ration.py``'s ``Crowded``),
or, with ``--bucket``, a bucket of so many a second (``Bucketed``: a rate limit, to see that it is
not held to what a limit on requests at once would allow). How often each limit refused, how long
each window's requests took, and the run's wall.

    .venv/bin/python bench/crowded.py                     # 8 at once from 12 s on, 350 requests
    .venv/bin/python bench/crowded.py --after 25 --carries 2 --requests 500
    .venv/bin/python bench/crowded.py --bucket 100 5      # 100 a second, a burst of 5, from 12 s
    .venv/bin/python bench/crowded.py --before /tmp/before/src
"""

from __future__ import annotations

import argparse

from virtual import played_from


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--after", type=float, default=12.0, help="when the second limit begins (default 12 s)")
    parser.add_argument("--carries", type=int, default=8, help="requests the model carries at once (default 8)")
    parser.add_argument("--wait", type=float, default=5.0, help="the model's Retry-After (default 5 s)")
    parser.add_argument(
        "--bucket",
        nargs=2,
        type=float,
        metavar=("RATE", "BURST"),
        help="a bucket (Retry-After 1 s) rather than the model's",
    )
    parser.add_argument("--requests", type=int, default=350, help="requests (default 350)")
    parser.add_argument("--before", metavar="SRC", help="convy's source at SRC rather than this tree's")
    arguments = parser.parse_args()
    played_from(arguments.before)
    from test_busy_ration import Bucketed, Crowded, answered_by_window

    from convy.busy import Patience, Places

    service: Crowded | Bucketed
    if arguments.bucket:
        service = Bucketed(arguments.after, *arguments.bucket)
        second = f"a bucket of {arguments.bucket[0]:g} a second (burst {arguments.bucket[1]:g})"
    else:
        service = Crowded(arguments.after, arguments.carries, arguments.wait)
        second = f"{arguments.carries} at once"
    windows = answered_by_window(service, arguments.requests, Places(0, patience=Patience(600)))
    wall = max(max(moments) for moments in windows.values())
    print(
        f"{service.rpm} a window of {service.window:g} s, {second} from {arguments.after:g} s, "
        f"{arguments.requests} requests: wall {wall:.2f} s, refused by the count {sum(service.refusals.values())}, "
        f"by the second limit {service.crowded}"
    )
    for window in sorted(windows):
        moments = sorted(windows[window])
        print(
            f"  window {window}: {len(moments)} answered from {moments[0]:.2f} to {moments[-1]:.2f} s ({moments[-1] - moments[0]:.2f} s)"
        )


if __name__ == "__main__":
    main()
