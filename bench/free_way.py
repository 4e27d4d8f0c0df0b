"""Benchmark of the free way alone, counted in instructions: what the pacing layer costs an attempt.

An attempt of ``harness.py``'s ``memory`` case sends, through the participants' ``Places``, a
conversation's opening (``retried``, not paced), six agent turns (``agent.turned``), five
simulated user's requests and a judge's (``PatientModel``), every one answered in-process at once,
with the agent's places all held by conversations as a run holds them. This plays those requests
alone, in one process, with nothing else of a run around them, once as convy sends them and once
with ``cpu.py``'s bare free way (a place held, nothing else), under ``valgrind --tool=cachegrind``
at two sizes: the difference of the instructions between the sizes is an attempt's, and the paced
one's beside the bare one's is the pacing layer's. Instructions, unlike CPU time, do not move with
the machine's load, so a cut of a few hundred instructions a request shows, run after run.

The clock (``time.monotonic``, which asyncio's loop and the free way read) moves 50 µs each time
it is read, not with the time the process takes: the free way's steps hang on it (an answer that
took a millisecond grows the places, which a loaded machine's pauses would give at random), and so
every run takes the same steps. About 18 clock reads an attempt make a second of some 1,100
attempts: past the first, the last second's answers are trimmed as a long run trims them.

    python bench/free_way.py                              # this convy, 2000 and 4000 attempts
    python bench/free_way.py --before /tmp/before/src     # and convy's source at SRC
    python bench/free_way.py --play paced 100             # the requests alone, no valgrind
    python bench/free_way.py --whole --attempts 1000      # the whole run's instructions, and the layer's share

``--whole`` counts, the same way, the whole of ``cpu.py``'s run (``harness.py``'s ``memory`` case,
six turns an attempt, every participant an instant fake, judged, into a ``MemoryJournal``) beside
the same run with the bare free way: the instructions an attempt of the run, and the pacing
layer's share of them, issue 27 item 5's "at most 10%" counted in instructions rather than in
CPU time, which moves with the machine's load (``cpu.py --profile``'s share moved from 3.7% to
11.0% between two runs of one convy).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "src"
_STEP = 50e-6  # how far the clock moves each time it is read


def bare() -> None:
    """``cpu.py``'s bare free way in place of convy's: a place held, and nothing else."""
    sys.path.insert(0, str(HERE))
    from cpu import BARE

    from convy.busy import Places

    for name, way in BARE.items():
        setattr(Places, name, way)


async def attempts(count: int, paced: bool) -> None:
    """``count`` attempts' requests, each answered in-process at once."""
    from convy.agent import Answer, Message, Usage, turned
    from convy.busy import Places
    from convy.model import PatientModel, Reply

    class Model:
        name = "instant"

        async def reply(self, messages: Any) -> Reply:
            return Reply("Yes, and please deliver it on Friday.")

    hello, answer = Message("Hello."), Answer("Noted.", Usage(input=1, output=1))

    async def answered(message: Message) -> Answer:
        return answer

    async def opened() -> str:
        return "open"

    agent, user_places, judge_places = Places(0, "agent"), Places(0, "user"), Places(0, "judge")
    user, judge = PatientModel(Model(), user_places), PatientModel(Model(), judge_places)
    await turned(agent, answered, hello)  # the first answers: the free way begins
    await user.reply(())
    await judge.reply(())
    for _ in range(agent.size):  # the conversations under way hold the agent's places
        await agent.seat()
    for _ in range(count):
        await agent.retried(opened, False)
        for turn in range(6):
            await turned(agent, answered, hello)
            if turn < 5:
                await user.reply(())
        await judge.reply(())
    if paced and not (agent._free and user_places._free and judge_places._free):
        raise SystemExit("the requests did not take the free way")


async def whole(count: int) -> None:
    """``cpu.py``'s run of ``count`` attempts of six turns, every participant an instant fake."""
    import tempfile

    sys.path.insert(0, str(HERE))
    import harness

    from convy.fakes import MemoryJournal

    setup = harness.Setup(count, 6, Path(tempfile.gettempdir()))
    journal = MemoryJournal()
    await setup.bench().run(setup.plan(), journal)
    if len(journal.outcomes) != count:
        raise SystemExit(f"{len(journal.outcomes)} attempts played, not {count}")


def counted(source: Path, way: str, count: int, run: str = "--play") -> int:
    """The instructions of a process playing ``count`` attempts ``way``, under cachegrind: the
    requests alone (``--play``) or the whole run (``--whole-play``)."""
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    command += [sys.executable, __file__, run, way, str(count)]
    env = os.environ | {"PYTHONPATH": str(source), "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"the run with convy from {source} failed:\n{done.stdout}{done.stderr}")
    return int(found.group(1).replace(",", ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=2000, help="the smaller size; the larger is twice it (default 2000)")
    parser.add_argument("--before", type=Path, metavar="SRC", help="also count convy's source at SRC")
    parser.add_argument("--whole", action="store_true", help="count cpu.py's whole run, not the requests alone")
    parser.add_argument("--play", nargs=2, metavar=("WAY", "ATTEMPTS"), help=argparse.SUPPRESS)  # the requests
    parser.add_argument("--whole-play", nargs=2, metavar=("WAY", "ATTEMPTS"), help=argparse.SUPPRESS)  # the run
    options = parser.parse_args(argv)
    if options.play or options.whole_play:
        way, count = options.play or options.whole_play
        if way == "bare":
            bare()
        time.monotonic = itertools.count(1000.0, _STEP).__next__  # read as a C function, as the real one is
        asyncio.run(attempts(int(count), way == "paced") if options.play else whole(int(count)))
        return 0
    if options.attempts < 1:
        parser.error("--attempts must be at least 1")
    sources = {"now": SOURCE} | ({"before": options.before.resolve()} if options.before else {})
    small, large = options.attempts, 2 * options.attempts
    if options.whole:
        print(f"instructions an attempt of the whole run (cachegrind, {small:,} and {large:,} attempts): paced, bare, the layer's share")
        for name, source in sources.items():
            runs = {way: [counted(source, way, size, "--whole-play") for size in (small, large)] for way in ("paced", "bare")}
            each = {way: (larger - smaller) / small for way, (smaller, larger) in runs.items()}
            share = 1 - each["bare"] / each["paced"]
            print(f"{name:>7}: {each['paced']:,.0f}, {each['bare']:,.0f}, {share:.1%}  ({source})")
        return 0
    print(f"instructions an attempt (cachegrind, {small:,} and {large:,} attempts): paced, bare, the pacing layer")
    for name, source in sources.items():
        each = {way: (counted(source, way, large) - counted(source, way, small)) / small for way in ("paced", "bare")}
        print(f"{name:>7}: {each['paced']:,.0f}, {each['bare']:,.0f}, {each['paced'] - each['bare']:,.0f}  ({source})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
