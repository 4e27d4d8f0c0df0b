"""A run on a slow disk: what waiting for the run folder's appends to reach the disk costs the run.

A run appends each attempt's line to ``attempts.jsonl`` and flushes it with ``fdatasync`` as soon
as it ends, so that a crash loses nothing kept. On a local SSD that takes a millisecond or two; on
a network disk (NFS, a cloud volume, a CI runner's) ten to fifty. Here the agent answers each turn
in ``--turn`` seconds (a real clock), a fake simulated user and a fake judge answer at once, and
``--places`` attempts play at once; each ``fdatasync`` is made to take ``--sync`` seconds longer
(a sleep before the real one), as a slow disk would. Printed: the run's wall time with the disk
as it is (the floor), with the slow disk, and, with ``--before SRC``, with the slow disk and
convy's source at SRC (the state before a change), each the median of ``--repeat`` runs, each run
in a process of its own, and the ratios to the floor.

    .venv/bin/python bench/slow_disk.py
    .venv/bin/python bench/slow_disk.py --sync 0.05 --attempts 400 --before /tmp/main/src
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "src"

CHILD = """
import asyncio, os, sys, tempfile, time
source, sync, attempts, turns, turn, places = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
sys.path.insert(0, source)
from pathlib import Path
from convy import Answer, Bench, Limits, Models, Reply, RunJournal, RunSpec, Rule, Scenario, Usage
from convy.checks import Check
from convy.fakes import FakeJudge, FakeModel
synced = os.fdatasync
def slow(descriptor):
    time.sleep(sync)  # a disk that takes this much longer to say the line is on it
    synced(descriptor)
os.fdatasync = slow

class Agent:
    class Talk:
        async def turn(self, message):
            await asyncio.sleep(turn)
            return Answer("Noted. Anything else?", Usage(120, 14))
    from contextlib import asynccontextmanager
    @asynccontextmanager
    async def conversation(self):
        yield Agent.Talk()

scenario = Scenario(id="s", script=("hi",), user="a customer who wants a lamp", max_turns=turns,
                    judge=(Rule(check=Check(said="Noted")), Rule(claim="the agent was polite")))
user = FakeModel(lambda messages: Reply("And please deliver it on Friday.", Usage(300, 9)))
with tempfile.TemporaryDirectory() as folder:
    spec = RunSpec("r", "bot", (scenario,), attempts, Limits(agent_places=places, judge_places=places))
    journal = RunJournal(Path(folder) / "bot" / "r")
    bench = Bench(Agent(), Models(user, FakeJudge()), spec.limits)
    start = time.perf_counter()
    kept = asyncio.run(journal.play(spec, bench))
    seconds = time.perf_counter() - start
    assert len(kept.outcomes) == attempts, len(kept.outcomes)
print(seconds)
"""


def played(source: Path, sync: float, arguments: argparse.Namespace) -> float:
    """One run in a process of its own, convy from ``source``: its wall time in seconds."""
    command = [sys.executable, "-c", CHILD, str(source), str(sync), str(arguments.attempts), str(arguments.turns), str(arguments.turn), str(arguments.places)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"a run with convy from {source} failed:\n{done.stderr}")
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=200, help="attempts a run (default 200)")
    parser.add_argument("--turns", type=int, default=4, help="turns an attempt (default 4)")
    parser.add_argument("--turn", type=float, default=0.05, help="seconds the agent takes a turn (default 0.05)")
    parser.add_argument("--places", type=int, default=16, help="attempts at once (default 16)")
    parser.add_argument("--sync", type=float, default=0.02, help="seconds more each fdatasync takes (default 0.02)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, median shown (default 3)")
    parser.add_argument("--before", type=Path, default=None, help="convy's source of another state, played on the slow disk too")
    arguments = parser.parse_args()
    sides = [("this convy, the disk as it is (floor)", SOURCE, 0.0), (f"this convy, each sync {arguments.sync * 1000:.0f} ms slower", SOURCE, arguments.sync)]
    if arguments.before is not None:
        sides.append((f"{arguments.before}, each sync {arguments.sync * 1000:.0f} ms slower", arguments.before, arguments.sync))
    times: dict[str, list[float]] = {name: [] for name, _, _ in sides}
    for _ in range(arguments.repeat):  # interleaved, so a drift of the machine falls on each alike
        for name, source, sync in sides:
            times[name].append(played(source, sync, arguments))
    least = arguments.attempts * arguments.turns * arguments.turn / arguments.places
    print(
        f"{arguments.attempts} attempts x {arguments.turns} turns of {arguments.turn} s, {arguments.places} at once"
        f" (the agent's time alone: {least:.2f} s); median of {arguments.repeat} runs each, each run in a process of its own"
    )
    floor = statistics.median(times[sides[0][0]])
    for name, _, _ in sides:
        median = statistics.median(times[name])
        print(f"  {name:60} {median:7.2f} s  {median / floor:5.2f}x the floor  (runs: {', '.join(f'{one:.2f}' for one in times[name])})")


if __name__ == "__main__":
    main()
