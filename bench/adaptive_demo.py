"""``--attempts auto`` on scenarios of known pass rates: how many attempts each got and why it
stopped, beside what a fixed run of the most would have played.

Three scenarios whose claim a ``fakes.Rated`` judge holds at 1.0, 0.5 and 0.9 (any first n rulings
showing the rate), 5 to 60 attempts each, until the 95% interval is at most 0.3 wide. Run:
``python bench/adaptive_demo.py``.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from convy.adaptive import Adaptive, Narrow
from convy.bench import Bench
from convy.fakes import FakeAgent, FakeJudge, Rated
from convy.judge import Models
from convy.records import Limits, RunSpec
from convy.report import Summary
from convy.runs import Read, Runs
from convy.scenario import Scenario
from convy.storage import RunJournal

RATES = {"always": 1.0, "half": 0.5, "mostly": 0.9, "rarely": 0.2}
MOST = 60

with tempfile.TemporaryDirectory() as where:
    results = Path(where)
    scenarios = tuple(Scenario(id=name, script=("hi",), judge=(f"passes {name}",)) for name in RATES)
    spec = RunSpec("demo", "bot", scenarios, MOST, Limits(), adaptive=Adaptive(5, Narrow(0.3)))
    judge = FakeJudge(Rated({f"passes {name}": rate for name, rate in RATES.items()}))
    bench = Bench(FakeAgent(lambda text: "hello"), Models(judge=judge), spec.limits)
    asyncio.run(RunJournal(results / "bot" / "demo").play(spec, spec.player(bench)))
    read = Runs(results).one(results / "bot" / "demo")
    assert isinstance(read, Read)
    summary = Summary(read)
    print(f"rule: {summary.header().adaptive}")
    print(f"{'scenario':<10} {'true rate':>9} {'attempts':>8} {'passed':>7}  why it stopped")
    grouped = summary.by_scenario()
    tallies = summary.tallies()
    for name, why in summary.stopped().items():
        tally = tallies[name]
        print(f"{name:<10} {RATES[name]:>9.1f} {len(grouped[name]):>8} {tally.passed:>4}/{tally.judged:<3} {why}")
    total = len(summary.attempts())
    print(f"run {read.status()}: {total} attempts played, against {len(RATES) * MOST} for a fixed {MOST} each ({total / (len(RATES) * MOST):.0%})")
