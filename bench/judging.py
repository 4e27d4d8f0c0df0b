"""Benchmark of judging: an attempt's wall time with 1, 3 and 5 claims for a ChatJudge whose
model is the test stand-in (tests/support/standin.py, a real HTTP server on 127.0.0.1) answering each
request after ``--latency`` (100 ms), beside a base convy (by default ``main``, unpacked with
``git archive``) and the ideal.

An attempt is one scripted message to an instant ``FakeAgent``, then the judge: every second of
the attempt is the judge's. The ideal is one request's latency, whatever the number of claims
(every claim asked at once); a judge that asks one claim after another takes claims x latency.
Each side plays ``--attempts`` (5) attempts in a child process of its own (``--child``), twice:

- *alone*: each attempt a run of its own (a new ``asyncio.run``). Its judge meets a service that
  has not answered yet, and convy sends a participant's requests one at a time until its service
  first answers (and says what it allows), so the claims after the first wait for that answer:
  about two latencies, whatever the number of claims.
- *in a run*: the attempts of one run, one after another (one agent place, its turn taking two
  latencies, so that each attempt's judge starts after the one before it was answered), as a
  real run plays them: the first pays that wait, and every later attempt asks its claims at once.
  Shown: the best judge's time (``Outcome.judge_seconds``) of the later attempts.

The best attempt of each is shown, and its ratio to the ideal.

With ``--repeats K`` this side asks the judge K times per claim (``judge_repeats``; the base, one
judge asked once, as a convy before repeats would): this/base is then what K votes per claim cost
in time, ideally 1 (every vote is asked at once).

    python bench/judging.py
    python bench/judging.py --latency 0.5 --claims 1 5 10
    python bench/judging.py --repeats 5
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


class Slow:
    """The same agent, answering each turn after ``seconds``."""

    def __init__(self, agent, seconds):  # type: ignore[no-untyped-def]
        self.agent, self.seconds = agent, seconds

    @contextlib.asynccontextmanager
    async def conversation(self):  # type: ignore[no-untyped-def]
        async with self.agent.conversation() as inner:
            yield _Slowed(inner, self.seconds)


class _Slowed:
    def __init__(self, inner, seconds):  # type: ignore[no-untyped-def]
        self.inner, self.seconds = inner, seconds

    async def turn(self, message):  # type: ignore[no-untyped-def]
        await asyncio.sleep(self.seconds)
        return await self.inner.turn(message)


def child(options: argparse.Namespace) -> None:
    """Play the attempts in this process (the convy on PYTHONPATH) and print their wall times."""
    import msgspec

    sys.path.insert(0, str(HERE / "tests"))
    from support.standin import StandIn

    from convy import Bench, ChatJudge, Limits, Models, OpenAiModel, Plan, Scenario
    from convy.fakes import FakeAgent, MemoryJournal

    found: dict[str, list[float]] = {}
    decision = '{"reason": "the agent greeted the user", "pass": true, "confidence": 0.9}'
    with StandIn(reply=lambda request: decision, latency=options.latency) as server:
        for claims in options.claims:
            scenario = msgspec.convert(
                {"id": "judged", "script": ["Hello"], "judge": [f"claim number {number}" for number in range(claims)]}, Scenario
            )
            judge = ChatJudge(OpenAiModel("judge", f"{server.url}/v1", "k"))
            bench = Bench(FakeAgent(lambda text: "Hello, how can I help?"), Models(judge=judge))
            if options.repeats > 1:  # only this side: a convy before repeats has no Judging
                from convy.judge import Judging

                bench = Bench(bench.agent, bench.models, judging=Judging(repeats=options.repeats))
            walls: list[float] = []
            for _ in range(options.attempts):
                journal = MemoryJournal()
                start = time.perf_counter()
                asyncio.run(bench.run(Plan((scenario,), 1), journal))
                walls.append(time.perf_counter() - start)
                (outcome,) = journal.outcomes
                if len(outcome.result.claims) != claims:  # type: ignore[union-attr]
                    raise SystemExit(f"the attempt was not judged: {outcome.result}")
            found[str(claims)] = walls
            # The same attempts in one run, one after another: the service has answered once.
            journal = MemoryJournal()
            one_by_one = Bench(Slow(bench.agent, 2 * options.latency), bench.models, Limits(agent_places=1), judging=bench.judging) if options.repeats > 1 else Bench(Slow(bench.agent, 2 * options.latency), bench.models, Limits(agent_places=1))
            asyncio.run(one_by_one.run(Plan((scenario,), max(2, options.attempts)), journal))
            later = sorted(journal.outcomes, key=lambda outcome: outcome.attempt)[1:]
            if any(len(outcome.result.claims) != claims for outcome in later):  # type: ignore[union-attr]
                raise SystemExit("an attempt of the run was not judged")
            found[f"run {claims}"] = [outcome.judge_seconds for outcome in later]
    print(json.dumps(found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--claims", type=int, nargs="+", default=[1, 3, 5])
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--attempts", type=int, default=5)
    parser.add_argument("--base", type=Path, help="the src folder of the base convy (default: main, unpacked)")
    parser.add_argument("--base-commit", default="main")
    parser.add_argument("--repeats", type=int, default=1, help="this side asks each claim K times (judge_repeats)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options)
        return
    with tempfile.TemporaryDirectory(prefix="convy-judging-") as root:
        base = options.base
        if base is None:
            archive = subprocess.run(["git", "-C", str(HERE), "archive", options.base_commit, "src"], check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", root], input=archive, check=True)
            base = Path(root) / "src"
        argv = [sys.executable, __file__, "--child", "--latency", str(options.latency), "--attempts", str(options.attempts), "--claims"]
        argv += [str(claims) for claims in options.claims]
        sides = {}
        for name, src in (("base", base), ("this", HERE / "src")):
            asked = argv + (["--repeats", str(options.repeats)] if name == "this" else [])
            done = subprocess.run(asked, env={**os.environ, "PYTHONPATH": str(src)}, capture_output=True, text=True)
            if done.returncode:
                raise SystemExit(f"{name}: {done.stderr[-2000:]}")
            sides[name] = json.loads(done.stdout.strip().splitlines()[-1])
    ideal = options.latency
    print(f"an attempt judged by a ChatJudge on the stand-in at {options.latency * 1000:.0f} ms a request (best of {options.attempts}); ideal {ideal * 1000:.0f} ms")
    if options.repeats > 1:
        print(f"  this side asks each claim {options.repeats} times (judge_repeats), the base once")
    print(f"  {'claims':>6} {'':9} {'base ms':>9} {'this ms':>9} {'this/base':>10} {'base/ideal':>11} {'this/ideal':>11}")
    for claims in options.claims:
        for label, key in (("alone", str(claims)), ("in a run", f"run {claims}")):
            if key not in sides["base"]:
                print(f"  {claims:6} {label:9} {'—':>9}")
                continue
            one, two = min(sides["base"][key]), min(sides["this"][key])
            print(f"  {claims:6} {label:9} {one * 1000:9.0f} {two * 1000:9.0f} {two / one:10.2f} {one / ideal:11.2f} {two / ideal:11.2f}")


if __name__ == "__main__":
    main()
