"""``--against`` says its plan before it spends (issue 26, item 3). A base of 3 attempts against a
most of 60 played blocks of 20 and 400 attempts for a drop that 40 decide, and said nothing first.
Now the candidate's attempts per scenario are bounded at 4× the base's (``Sequential.fitted``, kept
as ``Against.ratio``; 0 in runs kept before, which play as they did), and the run says, before it
plays, the most it may play, its blocks, after how many attempts a flip of every scenario is
decided and the smallest change it could decide; ``--dry-run`` adds the spend at the base's cost
per attempt and what the budget allows. The bound keeps the sequential test valid (a smoke
simulation of false alarms under it) and keeps its power (a seeded simulation against a fall to
50%: the 4× bound decides as often as the unbounded plan, a fixed 2× does not)."""

from __future__ import annotations

import random

import msgspec
import pytest
from scipy import stats
from test_against import project
from test_exit_codes import convy, runs

from convy.adaptive import Adaptive, Against
from convy.sequential import Decided, Sequential
from convy.stats import Tally

TEN = {f"s{i}": "111" for i in range(10)}


def test_the_bound_is_fitted_to_the_base_and_absent_in_old_runs() -> None:
    assert Sequential(0.05, 60, ratio=4).fitted(3) == 12
    assert Sequential(0.05, 6, ratio=4).fitted(3) == 6  # the run's most, when lower
    assert Sequential(0.05, 60).fitted(3) == 60  # no ratio: the old rule
    old = msgspec.json.decode(b'{"least": 1, "until": {"type": "against", "agent": "bot", "run": "r1", "base": {"s": "111"}}}', type=Adaptive)
    assert isinstance(old.until, Against) and old.until.ratio == 0 and old.until.fitted("s", 60) == 60
    # an old run's course asks what it asked before: one block of 20 (the base of 3 spread over 60)
    assert [len(one.missing) for one in old.course(("s",), (), 60, 0.0).standings] == [20]  # type: ignore[union-attr]
    new = Adaptive(1, Against("bot", "r1", 0.05, {"s": "111"}, Sequential.RATIO))
    assert [len(one.missing) for one in new.course(("s",), (), 60, 0.0).standings] == [4]  # type: ignore[union-attr]
    assert new.said(60).startswith("up to 12 attempts per scenario, ")


def test_the_plan_says_the_most_the_blocks_a_flip_and_the_smallest_change() -> None:
    assert Against("bot", "r1", 0.05, TEN, 4).plan(list(TEN), 60).lines() == (
        "against bot/r1 (3 judged attempts per scenario): at most 120 attempts (10 scenarios × up to 12, bounded at 4× the base's: "
        "more would only make each block larger), in blocks of 4 per scenario",
        "a change of every scenario from passing to failing (or back) is decided after 80 attempts; "
        "a change under about 16 points cannot be decided with this base",
    )
    assert Against("bot", "r1", 0.05, TEN, 4).plan(list(TEN), 6).lines() == (
        "against bot/r1 (3 judged attempts per scenario): at most 60 attempts (10 scenarios × up to 6), in blocks of 2 per scenario",
        "a change of every scenario from passing to failing (or back) is decided after 40 attempts; "
        "a change under about 17 points cannot be decided with this base",
    )
    # the old rule, unbounded, would have played 400 for the same flip
    assert Sequential(0.05, 60).started({name: (True,) * 3 for name in TEN}).flipped() == 400


def test_a_base_that_can_decide_nothing_says_so_with_the_fix() -> None:
    lines = Against("bot", "r1", 0.05, {"s": "111"}, 4).plan(["s"], 60).lines()
    assert lines[1] == (
        "this base can decide nothing: not even a change of every scenario from passing to failing, within 12 attempts; "
        "a base with 5 judged attempts per scenario would (convy run -k 5 plays one)"
    )


def decided_share(ratio: int, runs: int = 200, rate: float = 0.5) -> float:
    """The share of seeded runs against a base of 3 passing attempts in each of 10 scenarios that
    decide a candidate at ``rate``, under the bound ``ratio`` (0: none; most 60)."""
    chooser = random.Random(26)
    decided = 0
    for _ in range(runs):
        watch = Sequential(0.05, 60, ratio=ratio).started({name: (True,) * 3 for name in TEN})
        while not isinstance(verdict := watch.verdict(), Decided) and (asks := watch.asks()):
            watch = watch.played({ask.scenario: Tally(sum(chooser.random() < rate for _ in range(ask.attempts)), ask.attempts) for ask in asks})
        decided += isinstance(verdict, Decided)
    return decided / runs


def test_the_4x_bound_keeps_the_power_a_fixed_2x_loses() -> None:
    assert decided_share(0) == 1.0
    assert decided_share(Sequential.RATIO) == 1.0
    assert decided_share(2) < 0.9  # 86%: a fixed 2× (40 attempts) misses some


def test_false_alarms_stay_at_alpha_under_the_bound() -> None:
    alpha, runs = 0.05, 300
    chooser = random.Random(20_261_204)
    alarms = 0
    for run in range(runs):
        rate = (0.5, 0.8, 0.95)[run % 3]
        size = (3, 5, 8)[run % 3 - 1]
        base = {f"s{i}": tuple(chooser.random() < rate for _ in range(size)) for i in range(3)}
        watch = Sequential(alpha, 60, ratio=Sequential.RATIO).started(base)
        while not isinstance(watch.verdict(), Decided) and (asks := watch.asks()):
            watch = watch.played({ask.scenario: Tally(sum(chooser.random() < rate for _ in range(ask.attempts)), ask.attempts) for ask in asks})
        alarms += isinstance(watch.verdict(), Decided)
    assert alarms <= stats.binom.isf(1e-4, runs, alpha)


def test_the_command_says_its_plan_before_playing_and_the_dry_run_its_spend(tmp_path: pytest.TempPathFactory) -> None:
    folder = project(tmp_path, rate=1.0)  # type: ignore[arg-type]
    with (folder / "pyproject.toml").open("a", encoding="utf-8") as toml:
        toml.write("max_cost = 1\n")
    (folder / "pyproject.toml").write_text((folder / "pyproject.toml").read_text().replace("attempts = 30", "attempts = 3"))
    assert convy(folder, "run").returncode == 0
    (base,) = runs(folder)
    (folder / "models.py").write_text((folder / "models.py").read_text().replace("1.0", "0.0"))  # the candidate always fails
    dry = convy(folder, "run", "--attempts", "auto", "--against", base, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"  against bot/{base} (3 judged attempts per scenario): at most 36 attempts (3 scenarios × up to 12, bounded at 4×" in dry.stdout
    assert "  the base's spend per attempt is not known (its requests reported no tokens or cost)" in dry.stdout
    assert "  the budget: max_cost $1: how many attempts it allows is not known (the base's spend is not)" in dry.stdout
    assert "would run 1 agent × 3 scenarios × up to 12 attempts, auto = up to 36 attempts" in dry.stdout
    assert runs(folder) == [base]  # nothing played
    done = convy(folder, "run", "--attempts", "auto", "--against", base)
    lines = done.stdout.splitlines()
    plan = next(number for number, line in enumerate(lines) if line.startswith(f"against bot/{base} (3 judged"))
    first = next(number for number, line in enumerate(lines) if " #1 " in line)
    assert plan < first  # said before anything was played
    assert lines[plan + 1].startswith("a change of every scenario from passing to failing (or back) is decided after 36 attempts")
    played = next(name for name in runs(folder) if name != base)
    kept = (folder / "results" / "bot" / played / "attempts.jsonl").read_text().splitlines()
    assert len(kept) <= 36
