"""Where a ``p-litellm`` run's seconds went, from the file ``BUSY_TRACE=FILE bench/busy.py --project
p-litellm`` wrote (``busy.Traced``): the stretch before the proxy's first refusal, its wait, and the
stretch after; the requests through the proxy in each and at what rate, their latency beside the
agent's (which reaches its stand-in directly); when the requests under way through the proxy first
reached 32, and what the proxy needs at ``--capacity`` requests a second (the bench's
``Litellm.capacity``, printed on its row).

    .venv/bin/python bench/busy_trace.py /tmp/trace.jsonl --capacity 62
"""

from __future__ import annotations

import argparse
import json


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace")
    parser.add_argument("--capacity", type=float, default=0.0, help="requests a second the proxy carries")
    arguments = parser.parse_args()
    with open(arguments.trace) as file:
        rows = [json.loads(line) for line in file]
    run = next(row for row in rows if "start" in row)
    origin, wall = run["start"], run["wall"]
    requests = sorted((row for row in rows if "sent" in row), key=lambda row: row["sent"])
    proxied = [row for row in requests if "model" in str(row["who"])]
    refused = [row for row in requests if row["status"] != 200]
    if not refused:
        print(f"wall {wall:.1f} s, nothing refused")
        return
    first = refused[0]
    refusal = first["answered"] - origin
    resumed = min(row["sent"] for row in requests if row["sent"] > first["answered"]) - origin
    before = [row for row in proxied if row["sent"] - origin < refusal]
    after = [row for row in proxied if row["sent"] - origin >= resumed]

    def latency(chosen: list[dict]) -> float:
        return median([row["answered"] - row["sent"] for row in chosen if row["status"] == 200])

    moment = 0.0
    while moment < refusal and sum(1 for row in proxied if row["sent"] - origin <= moment < row["answered"] - origin) < 32:
        moment += 0.05
    print(f"wall {wall:.1f} s; {len(refused)} refused; requests through the proxy {len(proxied)}")
    print(f"  before the first refusal {refusal:5.1f} s: {len(before)} through the proxy, {len(before) / refusal:.0f}/s, latency p50 {latency(before):.2f} s; 32 under way at {moment:.2f} s")
    print(f"  the proxy's wait         {resumed - refusal:5.1f} s (asked {first.get('wait')})")
    print(f"  after it                 {wall - resumed:5.1f} s: {len(after)} through the proxy, {len(after) / (wall - resumed):.0f}/s, latency p50 {latency(after):.2f} s")
    agent = [row for row in requests if row not in proxied]
    print(f"  the agent's requests, direct: latency p50 {latency(agent):.3f} s")
    if arguments.capacity:
        print(f"  at {arguments.capacity:g}/s the proxy needs {len(before) / arguments.capacity:.1f} s before and {len(after) / arguments.capacity:.1f} s after")


if __name__ == "__main__":
    main()
