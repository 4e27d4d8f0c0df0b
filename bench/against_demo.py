"""``convy run --against BASE --attempts auto`` for a few effect sizes: the verdict each run
reached and the attempts it used, beside the most it could have played.

Five scenarios, a base run of 40 attempts each at 0.9; the candidate's claims hold at the base's
rate plus the effect, drawn at random (seeded, five runs an effect), up to 40 attempts each,
α 0.05. Played by convy's bench with its fakes, through ``adaptive.Rounds``, as the command plays
it. Run: ``python bench/against_demo.py``.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.drawn import Drawn  # noqa: E402  (the judge's seeded rule the tests of --against use)

from convy.adaptive import Adaptive, Against, BaseJudged  # noqa: E402
from convy.bench import Bench
from convy.fakes import FakeAgent, FakeJudge  # noqa: E402
from convy.judge import Models
from convy.records import Limits, RunSpec
from convy.report import Summary  # noqa: E402
from convy.runs import Read, Runs  # noqa: E402
from convy.scenario import Scenario  # noqa: E402
from convy.storage import RunJournal

NAMES = ("billing", "refund", "login", "greeting", "handoff")
BASE_RATE = 0.9
MOST = 40
EFFECTS = (-0.4, -0.2, -0.1, 0.0)
SEEDS = range(5)


def played(results: Path, id: str, spec: RunSpec, rate: float, seed: int) -> Summary:
    bench = Bench(FakeAgent(lambda text: "hello"), Models(judge=FakeJudge(Drawn(rate, seed))), Limits())
    asyncio.run(RunJournal(results / "bot" / id).play(spec, spec.player(bench)))
    read = Runs(results).one(results / "bot" / id)
    assert isinstance(read, Read)
    return Summary(read)


scenarios = tuple(Scenario(id=name, script=("hi",), judge=(f"passes {name}",)) for name in NAMES)
print(f"{len(NAMES)} scenarios; base: {MOST} attempts each at {BASE_RATE:.0%}; candidate: up to {MOST} each, α 0.05")
print(f"{'effect':>7} {'seed':>4} {'attempts':>8} {'of':>4}  verdict")
with tempfile.TemporaryDirectory() as where:
    results = Path(where)
    for effect in EFFECTS:
        used: list[int] = []
        decided = 0
        for seed in SEEDS:
            base = played(results, f"base-{effect}-{seed}", RunSpec(f"base-{effect}-{seed}", "bot", scenarios, MOST, Limits()), BASE_RATE, seed)
            rule = Adaptive(1, Against("bot", base.run.file.spec.id, 0.05, BaseJudged(base.run.outcomes, 0.0).marks(NAMES)))
            id = f"cand-{effect}-{seed}"
            summary = played(results, id, RunSpec(id, "bot", scenarios, MOST, Limits(), adaptive=rule), BASE_RATE + effect, 100 + seed)
            attempts = len(summary.attempts())
            used.append(attempts)
            decided += summary.against().startswith("real change")
            print(f"{effect * 100:>+6.0f}% {seed:>4} {attempts:>8} {len(NAMES) * MOST:>4}  {summary.against()}")
        print(
            f"{effect * 100:>+6.0f}%  decided {decided} of {len(SEEDS)}; mean attempts {sum(used) / len(used):.0f} "
            f"of {len(NAMES) * MOST} ({sum(used) / len(used) / (len(NAMES) * MOST):.0%})"
        )
