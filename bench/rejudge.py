"""Benchmark of re-judging: a recorded run of ``--attempts`` (10,000) attempts decided again by a
``ChatJudge`` whose model is the test stand-in (tests/support/standin.py, a real HTTP server on 127.0.0.1)
answering each request after ``--latency`` (100 ms), with ``judge_places`` = each of ``--places``.

The source run is written straight to a temporary folder (``run.json`` and ``attempts.jsonl``: each
attempt three turns with usage and a tool call, like a played run's), then re-judged as
``convy rejudge`` does it: ``Rejudging`` through ``RunJournal.play`` into a new folder, the
attempts read from the source line by line. Nothing else is asked: no agent, no user.

The floor is what the places allow: each claim is one request holding one place for one latency,
so at best ``places / (latency x claims)`` attempts a second. Printed for each number of places:
attempts per second, the ratio to that floor, the main thread's CPU per attempt (the event loop's:
convy's work, not the stand-in's, which answers in a process of its own so that it takes neither
CPU nor the interpreter lock from convy's), and the process's peak RSS after the run.

    python bench/rejudge.py
    python bench/rejudge.py --attempts 2000 --places 8 32 --claims 2
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "tests"))


def source(folder: Path, attempts: int, claims: int) -> tuple[object, Path]:
    """A finished run of ``attempts`` attempts (10 scenarios), written whole: its spec and folder."""
    import msgspec

    from convy.agent import Answer, Call, NoUsage, Reported, Usage
    from convy.judge import Claim, Confidence, Verdict
    from convy.outcome import Outcome
    from convy.records import Complete, Limits, RunFile, RunSpec
    from convy.scenario import Scenario
    from convy.transcript import Transcript, Turn

    scenarios = tuple(
        msgspec.convert(
            {"id": f"s{number}", "script": ["Hello", "Where is my order?", "Thanks"], "judge": [f"claim {n}" for n in range(claims)]},
            Scenario,
        )
        for number in range(10)
    )
    each = attempts // len(scenarios)
    spec = RunSpec(id="source", agent="bot", scenarios=scenarios, attempts=each, limits=Limits())
    run = folder / "bot" / "source"
    run.mkdir(parents=True)
    turns = tuple(
        Turn(
            message,
            Answer(f"answer to {message}: your order A-{number} is on its way", Usage(120, 40), (Call("lookup", {"order": "A-1"}, Reported({"ok": True})),)),
            True,
            0.1 * number,
            0.0,
            NoUsage(),
            0.1 * number,
            0.05,
        )
        for number, message in enumerate(("Hello", "Where is my order?", "Thanks"))
    )
    verdict = Verdict(tuple(Claim(f"claim {n}", True, "it held", Confidence(0.9)) for n in range(claims)))
    encoder = msgspec.json.Encoder()
    with (run / "attempts.jsonl").open("wb") as lines:
        for scenario in scenarios:
            for attempt in range(1, each + 1):
                outcome = Outcome(scenario.id, attempt, "2026-01-01T00:00:00.000+00:00", 0.4, Transcript(turns), "finished", verdict, judge_start=0.3, judge_seconds=0.1, judge_requests=(Usage(300, 30),) * claims)
                lines.write(encoder.encode(outcome) + b"\n")
    (run / "run.json").write_bytes(encoder.encode(RunFile(spec, Complete("2026-01-01T00:00:00.000+00:00", "2026-01-01T00:10:00.000+00:00"))))
    return spec, run


class Served:
    """The stand-in in a process of its own (``--serve``), so that its answering takes no CPU, and
    no interpreter lock, from the process that re-judges: its ``url`` once it listens, and the
    requests it ``received`` once it has stopped."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.received = 0

    def __enter__(self) -> Served:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--latency", str(self.latency)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        return self

    def __exit__(self, *raised: object) -> None:
        out, _ = self.process.communicate("")  # stdin closed: the server stops and says its count
        self.received = int(out.strip())


def serve(options: argparse.Namespace) -> None:
    """The stand-in, answering every request with a decision after ``--latency``, until stdin closes."""
    from support.standin import StandIn

    decision = '{"reason": "the agent answered", "pass": true, "confidence": 0.9}'
    with StandIn(reply=lambda request: decision, latency=options.latency) as server:
        print(server.url, flush=True)
        sys.stdin.read()
        print(len(server.received), flush=True)


def child(options: argparse.Namespace) -> None:
    """One measure: re-judge the source with ``--places`` places, in this process, and print a line."""
    import msgspec

    from convy import ChatJudge, OpenAiModel
    from convy.records import Origin
    from convy.rejudge import Rejudging
    from convy.storage import RunJournal

    places = options.places[0]
    with tempfile.TemporaryDirectory() as folder:
        spec, run = source(Path(folder), options.attempts, options.claims)
        with Served(options.latency) as server:
            judge = ChatJudge(OpenAiModel("judge", f"{server.url}/v1", "k"))
            limits = msgspec.structs.replace(spec.limits, judge_places=places)  # type: ignore[attr-defined]
            rejudged = msgspec.structs.replace(spec, id="rejudged", limits=limits, origin=Origin("bot", "source"))
            rejudging = Rejudging(RunJournal(run), judge, limits)
            wall, cpu = time.perf_counter(), time.thread_time()
            kept = asyncio.run(RunJournal(Path(folder) / "bot" / "rejudged").play(rejudged, rejudging))
            wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
        requests = server.received
        count = len(kept.outcomes)
        assert count == spec.attempts * len(spec.scenarios), count  # type: ignore[attr-defined]
        assert requests == count * options.claims, requests
        size = (run / "attempts.jsonl").stat().st_size
    floor = places / (options.latency * options.claims)
    rate = count / wall
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{places:>6}  {count:>8}  {wall:>7.1f} s  {rate:>8.1f}/s  {floor:>8.1f}/s  {rate / floor:>6.2f}  "
        f"{cpu / count * 1e6:>8.0f} µs  {peak:>7.0f} MB  {size / 1e6:>6.1f} MB",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attempts", type=int, default=10_000)
    parser.add_argument("--claims", type=int, default=1, help="judge claims per attempt (one request each)")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds the stand-in takes to answer")
    parser.add_argument("--places", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve:
        serve(options)
        return
    if options.child:
        child(options)
        return
    head = subprocess.run(["git", "-C", str(HERE), "log", "-1", "--format=%h %s"], capture_output=True, text=True).stdout[:80]
    print(f"convy {head.strip()} · load {os.getloadavg()[0]:.2f} · {options.attempts} attempts × {options.claims} claim(s), latency {options.latency * 1000:.0f} ms")
    print(f"{'places':>6}  {'attempts':>8}  {'wall':>9}  {'rate':>10}  {'floor':>10}  {'ratio':>6}  {'CPU/att':>11}  {'peak RSS':>10}  {'source':>9}")
    for places in options.places:
        # Each in a process of its own, so that one's peak memory is not the next one's.
        subprocess.run(
            [sys.executable, __file__, "--child", "--attempts", str(options.attempts), "--claims", str(options.claims),
             "--latency", str(options.latency), "--places", str(places)],
            check=True,
        )


if __name__ == "__main__":
    main()
