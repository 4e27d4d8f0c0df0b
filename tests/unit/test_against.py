"""A run played against a base until the comparison is decided (issue 13, ``convy run --against
BASE --attempts auto``): a candidate much worse than its base is decided worse in far fewer
attempts than its most; one no different is never decided (seeded), and stops at its most or its
budget saying so; an interrupted run, resumed, keeps the attempts an uninterrupted one keeps; a
bad ``--against`` exits 2 naming the option. With the fakes: ``fakes.Rated`` holds a claim at a
known rate, a seeded ``Drawn`` at random at a known rate."""

from __future__ import annotations

import asyncio
import json
import random
from decimal import Decimal
from pathlib import Path

import pytest
from support.drawn import Drawn
from support.fakeproject import FakeProject
from test_adaptive import Breaking, Broken, Table
from test_exit_codes import convy, runs

from convy.adaptive import Adaptive, Against, BaseJudged, Marks
from convy.agent import Answer, Cost, Usage
from convy.bench import Bench
from convy.budget import Budget
from convy.fakes import FakeAgent, FakeJudge, Rated
from convy.judge import Models
from convy.records import Complete, Limits, RunSpec, Stopped
from convy.report import Summary
from convy.runs import Runs
from convy.scenario import Scenario
from convy.sequential import Sequential, Undecided
from convy.storage import Kept, RunJournal

NAMES = ("a", "b", "c", "d")
SCENARIOS = tuple(Scenario(id=name, script=("hi",), judge=(f"passes {name}",)) for name in NAMES)


def bench(held: object, budget: Budget | None = None) -> Bench:
    agent = FakeAgent(lambda text: Answer("hello", Usage(input=60, output=40, cost=Cost(Decimal("0.10"), "provider"))))
    return Bench(agent, Models(judge=FakeJudge(held)), budget=budget)  # type: ignore[arg-type]


def based(tmp_path: Path, held: object, attempts: int = 40) -> Kept:
    """A finished base run of every scenario, ``attempts`` each."""
    spec = RunSpec("base", "bot", SCENARIOS, attempts, Limits())
    return asyncio.run(RunJournal(tmp_path / "bot" / "base").play(spec, bench(held)))


def against(id: str, base: Kept, most: int = 40) -> RunSpec:
    rule = Against("bot", "base", 0.05, BaseJudged(base.outcomes, 0.0).marks(NAMES))
    return RunSpec(id, "bot", SCENARIOS, most, Limits(), adaptive=Adaptive(1, rule))


def test_a_much_worse_candidate_is_decided_worse_in_far_fewer_attempts_than_its_most(tmp_path: Path) -> None:
    base = based(tmp_path, Rated({f"passes {name}": 0.9 for name in NAMES}))
    spec = against("c", base)
    kept = asyncio.run(RunJournal(tmp_path / "bot" / "c").play(spec, spec.player(bench(Rated({f"passes {name}": 0.5 for name in NAMES})))))
    assert len(kept.outcomes) <= 4 * 40 // 3  # far fewer than its most, 160
    summary = Summary(Runs(tmp_path).one(tmp_path / "bot" / "c"))  # type: ignore[arg-type]
    assert summary.run.status() == "finished"
    assert summary.against().startswith("real change: worse, e = ")
    assert f"after {len(kept.outcomes)} judged attempts" in summary.against()
    assert summary.base() == "bot/base"
    header = summary.view().header
    assert header.against == summary.against() and header.against_run == "bot/base"
    assert header.adaptive == "up to 40 attempts per scenario, until the comparison with bot/base is decided (α 0.05)"
    assert header.planned == len(kept.outcomes)
    for why in summary.stopped().values():
        assert why.startswith("comparison decided: real change (worse), e = ")


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_a_candidate_no_different_from_its_base_is_never_decided(tmp_path: Path, seed: int) -> None:
    """Both at 0.8, drawn at random (seeded): the run ends undecided at its most, or futile."""
    base = based(tmp_path, Drawn(0.8, seed), attempts=20)
    spec = against("c", base, most=20)
    asyncio.run(RunJournal(tmp_path / "bot" / "c").play(spec, spec.player(bench(Drawn(0.8, 1000 + seed)))))
    summary = Summary(Runs(tmp_path).one(tmp_path / "bot" / "c"))  # type: ignore[arg-type]
    assert summary.run.status() == "finished"
    said = summary.against()
    assert said.startswith(("no verdict within max attempts: within noise so far, e = ", "futile: no verdict can be reached within the attempts left")), said
    assert "real change" not in said and "budget" not in said, said  # no budget was set: the plan ended it


def test_a_budget_stops_the_run_undecided_and_says_so(tmp_path: Path) -> None:
    """$0.10 an attempt, $1.50 buys 15: a run no different from its base is stopped by it."""
    base = based(tmp_path, Rated({}))
    spec = against("c", base)
    asyncio.run(RunJournal(tmp_path / "bot" / "c").play(spec, spec.player(bench(Rated({}), Budget(cost=1.5)))))
    run = RunJournal(tmp_path / "bot" / "c").run()
    assert isinstance(run.status, Stopped) and run.status.spent.budget == "cost"
    summary = Summary(Runs(tmp_path).one(tmp_path / "bot" / "c"))  # type: ignore[arg-type]
    assert summary.against().startswith("no verdict within the budget: budget spent, e = ")
    assert all(why.startswith("budget spent: undecided, e = ") for why in summary.stopped().values())


def test_the_course_replays_the_watch_round_by_round() -> None:
    """The rounds the course asks for are the watch's asks, played in attempt-number order: the
    course's verdict after replaying known outcomes is the watch's after the same rounds."""
    chooser = random.Random(4)
    base = {name: "".join("1" if chooser.random() < 0.9 else "0" for _ in range(12)) for name in NAMES}
    rule = Against("bot", "base", 0.05, base)
    outcome = {(name, number): "passed" if chooser.random() < 0.6 else "failed" for name in NAMES for number in range(1, 13)}
    statuses: dict[str, dict[int, str]] = {name: {} for name in NAMES}
    watch = Sequential(0.05, 12).started({name: tuple(mark == "1" for mark in base[name]) for name in NAMES})
    played = dict.fromkeys(NAMES, 0)
    while True:
        course = rule.course(NAMES, statuses, 1, 12)
        wanted = course.wanted()
        if not wanted:
            break
        asks = watch.asks()
        assert wanted == [(ask.scenario, played[ask.scenario] + 1) for ask in asks]  # one attempt a block here
        for name, number in wanted:
            statuses[name][number] = outcome[(name, number)]
        watch = watch.played({ask.scenario: _tally(outcome[(ask.scenario, played[ask.scenario] + 1)]) for ask in asks})
        for ask in asks:
            played[ask.scenario] += 1
    assert course.verdict == watch.verdict()
    assert not isinstance(course.verdict, Undecided)


def _tally(status: str):  # type: ignore[no-untyped-def]
    from convy.stats import Tally

    return Tally(int(status == "passed"), 1)


@pytest.mark.parametrize("after", [2, 9, 23, 41])
def test_an_interrupted_run_resumed_keeps_the_attempts_an_uninterrupted_one_keeps(tmp_path: Path, after: int) -> None:
    """Every attempt of the most played once (at 0.6 against a base at 0.9), then replayed by
    (scenario, attempt): interrupted part way through a round and resumed with the rule read back
    from run.json, the run keeps exactly the attempts of the run played through, and the same
    verdict."""
    base = based(tmp_path, Rated({f"passes {name}": 0.9 for name in NAMES}))
    fixed = RunSpec("all", "bot", SCENARIOS, 40, Limits())
    whole = asyncio.run(RunJournal(tmp_path / "bot" / "all").play(fixed, bench(Drawn(0.6, 7))))
    table = {(one.scenario, one.attempt): one for one in whole.outcomes}

    straight = asyncio.run(RunJournal(tmp_path / "bot" / "a").play(against("a", base), against("a", base).player(Table(table))))  # type: ignore[arg-type]
    broken = RunJournal(tmp_path / "bot" / "b")
    with pytest.raises(Broken):
        asyncio.run(broken.play(against("b", base), against("b", base).player(Table(table)), Breaking(after)))  # type: ignore[arg-type]
    assert Runs(tmp_path).one(broken.folder).status() == "interrupted"  # type: ignore[union-attr]
    again = broken.run().spec  # the rule as run.json keeps it, the base's attempts with it
    assert again.adaptive == against("b", base).adaptive
    resumed = asyncio.run(broken.play(again, again.player(Table(table)), earlier=broken.kept(again)))  # type: ignore[arg-type]
    keys = lambda kept: sorted((one.scenario, one.attempt) for one in kept.outcomes)  # noqa: E731
    assert keys(resumed) == keys(straight)
    assert len(straight.outcomes) < 4 * 40
    assert isinstance(broken.run().status, Complete)
    said = [Summary(Runs(tmp_path).one(tmp_path / "bot" / id)).against() for id in ("a", "b")]  # type: ignore[arg-type]
    assert said[0] == said[1] and said[0].startswith("real change: worse")


MODELS = """\
from convy.fakes import FakeJudge, Rated
from convy.judge import Models

models = Models(judge=FakeJudge(Rated({{"passes a": {rate}, "passes b": {rate}, "passes c": {rate}}})))
"""
AGENT = "from convy.fakes import FakeAgent\n\nagent = FakeAgent(lambda text: 'hello')\n"


def project(tmp_path: Path, rate: float = 0.9) -> Path:
    files = {f"{name}.yaml": f"script: [hi]\njudge:\n  - passes {name}\n" for name in "abc"}
    folder = FakeProject(AGENT, MODELS.format(rate=rate), files, 30).written(tmp_path / "project")
    # Its claims hold by chance: the project measures a pass rate against a base, and accepts any
    # (the pass rule, issue 24), so its runs exit 0 and the comparison decides.
    with (folder / "pyproject.toml").open("a", encoding="utf-8") as toml:
        toml.write("fail_under = 0\n")
    return folder


def test_the_command_plays_against_a_base_and_says_the_verdict(tmp_path: Path) -> None:
    folder = project(tmp_path)
    assert convy(folder, "run").returncode == 0
    (base,) = runs(folder)
    (folder / "models.py").write_text(MODELS.format(rate=0.5))  # the candidate: worse
    (folder / "scenarios" / "new.yaml").write_text("script: [hi]\njudge:\n  - passes new\n")
    done = convy(folder, "run", "--attempts", "auto", "--against", base[-6:], "--max-attempts", "30")
    assert done.returncode == 0, done.stderr
    assert f"bot: 3 scenarios × up to 30 attempts per scenario, until the comparison with bot/{base} is decided (α 0.05)" in done.stdout
    verdict = next(line for line in done.stdout.splitlines() if line.startswith(f"against bot/{base}: "))
    assert verdict.startswith(f"against bot/{base}: real change: worse, e = ")
    used = int(verdict.split(" after ")[1].split(" ")[0])
    assert used < 3 * 30 // 2
    assert f"  new: not in base run bot/{base}" in done.stdout  # left out, and said
    assert "  a: " in done.stdout and "comparison decided: real change (worse)" in done.stdout
    candidate = next(name for name in runs(folder) if name != base)
    saved = json.loads((folder / "results" / "bot" / candidate / "run.json").read_text())
    assert saved["spec"]["adaptive"]["until"]["type"] == "against" and saved["spec"]["adaptive"]["until"]["run"] == base
    assert [scenario["id"] for scenario in saved["spec"]["scenarios"]] == ["a", "b", "c"]
    compared = convy(folder, "compare", base, candidate)
    assert compared.returncode == 0 and ": real (worse)" in compared.stdout
    assert convy(folder, "report", candidate).returncode == 0
    assert convy(folder, "resume", candidate).returncode == 0  # decided: nothing more wanted
    after = json.loads((folder / "results" / "bot" / candidate / "run.json").read_text())
    assert after["status"]["type"] == "finished"
    assert sum(1 for _ in (folder / "results" / "bot" / candidate / "attempts.jsonl").open()) == used


def test_the_dry_run_says_up_to_the_most(tmp_path: Path) -> None:
    done = convy(project(tmp_path), "run", "--dry-run", "--attempts", "auto", "--max-attempts", "25")
    assert done.returncode == 0, done.stderr
    assert "bot: 3 scenarios × up to 25 attempts, auto = up to 75 attempts" in done.stdout


def unfinished(folder: Path) -> str:
    (base,) = runs(folder)
    path = folder / "results" / "bot" / base / "run.json"
    saved = json.loads(path.read_text())
    saved["status"]["type"] = "interrupted"
    path.write_text(json.dumps(saved))
    return base


@pytest.mark.parametrize("case", ["unknown", "agent", "unfinished", "shared", "fixed"])
def test_a_bad_against_exits_2_naming_the_option(tmp_path: Path, case: str) -> None:
    folder = project(tmp_path)
    assert convy(folder, "run").returncode == 0
    (base,) = runs(folder)
    options: tuple[str, ...] = ("run", "--attempts", "auto", "--against", base)
    named = "--against"
    match case:
        case "unknown":
            options = ("run", "--attempts", "auto", "--against", "no-such-run")
        case "agent":
            (folder / "agents" / "other.py").write_text(AGENT)
            options = ("run", "other", "--attempts", "auto", "--against", base)
        case "unfinished":
            unfinished(folder)
        case "shared":
            for name in "abc":
                (folder / "scenarios" / f"{name}.yaml").write_text(f"script: [hello]\njudge:\n  - passes {name}\n")
        case "fixed":
            options = ("run", "--against", base)
    done = convy(folder, *options)
    assert done.returncode == 2, done.stdout + done.stderr
    assert named in done.stderr and "Traceback" not in done.stderr
    assert runs(folder) == [base]  # nothing played


def test_target_width_is_refused_with_against(tmp_path: Path) -> None:
    folder = project(tmp_path)
    assert convy(folder, "run").returncode == 0
    (base,) = runs(folder)
    done = convy(folder, "run", "--attempts", "auto", "--against", base, "--target-width", "0.2")
    assert done.returncode == 2 and "--target-width" in done.stderr


class Bar:
    """A progress bar's stand-in: the totals it was given."""

    def __init__(self) -> None:
        self.totals: list[int] = []

    def update(self, task: object, **fields: object) -> None:
        if "total" in fields:
            self.totals.append(fields["total"])  # type: ignore[arg-type]


def test_the_progress_bars_total_grows_round_by_round(tmp_path: Path) -> None:
    """The bar of a run of --attempts auto is given what the rule wants so far, found again at
    each round's end: it grows from the first round to the attempts the run kept, never to its most."""
    from convy.cli.console import Printed, Shown

    base = based(tmp_path, Rated({f"passes {name}": 0.9 for name in NAMES}))
    spec = against("c", base)
    kept = asyncio.run(RunJournal(tmp_path / "bot" / "c").play(spec, spec.player(bench(Rated({f"passes {name}": 0.5 for name in NAMES})))))
    assert spec.adaptive is not None
    rule = spec.adaptive

    def planned(marks: Marks) -> int:
        return rule.marked(NAMES, marks, spec.attempts).planned()

    bar = Bar()
    with open(tmp_path / "lines", "w") as out:
        printed = Printed(Shown(out), bar, 0, 0.0, planned)
        for outcome in kept.outcomes:
            printed.record(outcome)
    assert planned(Marks(0.0)) == len(NAMES)  # the first round: one attempt of each
    assert bar.totals == sorted(bar.totals) and len(bar.totals) > 2
    assert bar.totals[-1] == len(kept.outcomes) < len(NAMES) * spec.attempts
