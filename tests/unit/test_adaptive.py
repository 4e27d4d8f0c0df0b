"""Attempts spent adaptively (issue 13, ``--attempts auto``): scenarios of known pass rates get
few, many or in-between attempts; a run stops by its most, by its budget; an interrupted run,
resumed, ends where an uninterrupted one would; bad options exit 2 naming the option. With the
fakes: ``fakes.Rated`` holds a scenario's claim at a known rate, any first n rulings showing it."""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal
from pathlib import Path

import pytest
from support.fakeproject import FakeProject
from test_exit_codes import convy, runs

from convy.adaptive import Adaptive, Narrow
from convy.agent import Answer, Cost, Usage
from convy.bench import Bench
from convy.budget import Budget
from convy.fakes import FakeAgent, FakeJudge, Rated
from convy.judge import Models
from convy.outcome import Outcome
from convy.records import Complete, Limits, RunSpec, Stopped
from convy.report import Summary
from convy.runs import Runs
from convy.scenario import Scenario
from convy.storage import RunJournal

RATES = {"always": 1.0, "half": 0.5, "mostly": 0.9}
SCENARIOS = tuple(Scenario(id=name, script=("hi",), judge=(f"passes {name}",)) for name in RATES)
IDS = tuple(RATES)


def spec(id: str, most: int = 60, least: int = 5, width: float = 0.3) -> RunSpec:
    return RunSpec(id, "bot", SCENARIOS, most, Limits(), adaptive=Adaptive(least, Narrow(width)))


def bench(budget: Budget | None = None) -> Bench:
    agent = FakeAgent(lambda text: Answer("hello", Usage(input=60, output=40, cost=Cost(Decimal("0.10"), "provider"))))
    return Bench(agent, Models(judge=FakeJudge(Rated({f"passes {name}": rate for name, rate in RATES.items()}))), budget=budget)


def played(folder: Path, run: RunSpec, player: Bench) -> dict[str, int]:
    kept = asyncio.run(RunJournal(folder).play(run, run.player(player)))
    counts = {name: 0 for name in IDS}
    for outcome in kept.outcomes:
        counts[outcome.scenario] += 1
    return counts


def test_known_rates_get_few_many_and_in_between_attempts_and_the_report_says_why(tmp_path: Path) -> None:
    """1.0, 0.5 and 0.9 under 5 to 60 attempts and a width of 0.3: the sure scenario gets fewest,
    the even one most, the other between; each stopped narrow enough, and the run is finished."""
    folder = tmp_path / "bot" / "r"
    counts = played(folder, spec("r"), bench())
    assert counts["always"] < counts["mostly"] < counts["half"] < 60
    assert counts["always"] <= 12 and counts["half"] >= 30
    read = Runs(tmp_path).one(folder)
    summary = Summary(read)  # type: ignore[arg-type]
    assert read.status() == "finished"  # type: ignore[union-attr]
    assert summary.header().planned == sum(counts.values())  # not 3 × 60: the rest was never wanted
    view = summary.view()
    for scenario in view.scenarios:
        assert scenario.adaptive.startswith("narrow enough: width 0."), scenario.adaptive
        assert float(scenario.adaptive.split("width ")[1].split(" ")[0]) <= 0.3
    assert view.header.adaptive == "5 to 60 attempts per scenario, until its 95% interval is at most 0.3 wide"
    saved = json.loads((folder / "run.json").read_text())
    assert saved["spec"]["adaptive"] == {"least": 5, "until": {"type": "narrow", "width": 0.3}}
    assert saved["status"]["type"] == "finished"


def test_a_scenario_that_never_narrows_enough_stops_at_the_most(tmp_path: Path) -> None:
    counts = played(tmp_path / "bot" / "r", spec("r", most=12, width=0.05), bench())
    assert counts == {"always": 12, "half": 12, "mostly": 12}
    summary = Summary(Runs(tmp_path).one(tmp_path / "bot" / "r"))  # type: ignore[arg-type]
    assert set(summary.stopped().values()) == {w for w in summary.stopped().values() if w.startswith("max attempts: width")}


def test_a_spent_budget_stops_the_rounds_and_the_scenarios_say_so(tmp_path: Path) -> None:
    """Each attempt costs $0.10: $2.00 buys 20 attempts, fewer than the rule wants (~70)."""
    folder = tmp_path / "bot" / "r"
    counts = played(folder, spec("r"), bench(Budget(cost=2.0)))
    assert sum(counts.values()) < 30
    run = RunJournal(folder).run()
    assert isinstance(run.status, Stopped) and run.status.spent.budget == "cost"
    summary = Summary(Runs(tmp_path).one(folder))  # type: ignore[arg-type]
    assert any(why.startswith("budget spent: width") for why in summary.stopped().values())


def test_a_budget_the_rule_stays_within_finishes_the_run(tmp_path: Path) -> None:
    folder = tmp_path / "bot" / "r"
    played(folder, spec("r"), bench(Budget(cost=100.0)))
    assert isinstance(RunJournal(folder).run().status, Complete)


class Broken(Exception):
    pass


class Breaking:
    """A journal that stops the play once ``after`` attempts were kept (an interruption)."""

    def __init__(self, after: int) -> None:
        self.after = after
        self.seen = 0

    def record(self, outcome: Outcome) -> None:
        self.seen += 1
        if self.seen >= self.after:
            raise Broken()


class Table:
    """A player of known outcomes: each planned attempt's outcome taken from ``outcomes`` by
    (scenario, attempt), so two plays of the same attempts get the same outcomes."""

    def __init__(self, outcomes: dict[tuple[str, int], Outcome]) -> None:
        self.outcomes = outcomes
        self.budget = None

    def budgeted(self, budget: Budget | None) -> Table:
        return self

    async def run(self, planned, journal, earlier=()):  # type: ignore[no-untyped-def]
        for one in planned:
            await asyncio.sleep(0)
            journal.record(self.outcomes[(one.scenario.id, one.attempt)])
        return None


@pytest.mark.parametrize("after", [3, 17, 40])
def test_an_interrupted_run_resumed_stops_where_an_uninterrupted_one_does(tmp_path: Path, after: int) -> None:
    """Every attempt of the most played once with the rated judge, then replayed by (scenario,
    attempt): the run interrupted part way through a round and resumed with the rule read back
    from run.json keeps exactly the attempts of the run played through."""
    fixed = RunSpec("all", "bot", SCENARIOS, 60, Limits())
    whole = asyncio.run(RunJournal(tmp_path / "bot" / "all").play(fixed, bench()))
    table = {(one.scenario, one.attempt): one for one in whole.outcomes}

    straight = asyncio.run(RunJournal(tmp_path / "bot" / "a").play(spec("a"), spec("a").player(Table(table))))  # type: ignore[arg-type]
    broken = RunJournal(tmp_path / "bot" / "b")
    with pytest.raises(Broken):
        asyncio.run(broken.play(spec("b"), spec("b").player(Table(table)), Breaking(after)))  # type: ignore[arg-type]
    assert Runs(tmp_path).one(broken.folder).status() == "interrupted"  # type: ignore[union-attr]
    again = broken.run().spec  # the rule as run.json keeps it
    assert again.adaptive == spec("b").adaptive
    resumed = asyncio.run(broken.play(again, again.player(Table(table)), earlier=broken.kept(again)))  # type: ignore[arg-type]
    keys = lambda kept: sorted((one.scenario, one.attempt) for one in kept.outcomes)  # noqa: E731
    assert keys(resumed) == keys(straight)
    assert isinstance(broken.run().status, Complete)


def test_a_finished_adaptive_run_resumed_plays_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "bot" / "r"
    before = sum(played(folder, spec("r"), bench()).values())
    journal = RunJournal(folder)
    kept = asyncio.run(journal.play(spec("r"), spec("r").player(bench()), earlier=journal.kept(spec("r"))))
    assert len(kept.outcomes) == before


MODELS = """\
from convy.fakes import FakeJudge, Rated
from convy.judge import Models

models = Models(judge=FakeJudge(Rated({"passes always": 1.0, "passes half": 0.5, "passes mostly": 0.9})))
"""
AGENT = "from convy.fakes import FakeAgent\n\nagent = FakeAgent(lambda text: 'hello')\n"


def project(tmp_path: Path, settings: str = "") -> Path:
    files = {f"{name}.yaml": f"script: [hi]\njudge:\n  - passes {name}\n" for name in RATES}
    folder = FakeProject(AGENT, MODELS, files, 3).written(tmp_path / "project")
    with (folder / "pyproject.toml").open("a", encoding="utf-8") as toml:
        toml.write("fail_under = 0\n")  # its claims hold by chance: the project measures pass rates and accepts any
        toml.write(settings)
    return folder


def test_the_command_plays_auto_and_says_each_scenarios_attempts_and_why(tmp_path: Path) -> None:
    folder = project(tmp_path)
    done = convy(folder, "run", "--attempts", "auto", "--min-attempts", "5", "--max-attempts", "60", "--target-width", "0.3")
    assert done.returncode == 0, done.stderr
    assert "3 scenarios × 5 to 60 attempts per scenario, until its 95% interval is at most 0.3 wide" in done.stdout
    assert "  always: 9 attempts, narrow enough: width 0.299 ≤ 0.3" in done.stdout
    assert "  half: " in done.stdout and "  mostly: " in done.stdout
    (run,) = runs(folder)
    assert json.loads((folder / "results" / "bot" / run / "run.json").read_text())["spec"]["attempts"] == 60
    assert convy(folder, "resume", run).returncode == 0  # finished: nothing more wanted


def test_the_settings_give_auto_too(tmp_path: Path) -> None:
    folder = project(tmp_path, 'min_attempts = 4\nmax_attempts = 8\ntarget_width = 0.1\n')
    (folder / "pyproject.toml").write_text((folder / "pyproject.toml").read_text().replace("attempts = 3", 'attempts = "auto"'))
    done = convy(folder, "run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("8 attempts, max attempts: width") == 3


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (("--target-width", "0"), "--target-width"),
        (("--target-width", "1.5"), "--target-width"),
        (("--min-attempts", "70", "--max-attempts", "60"), "--min-attempts"),
        (("--min-attempts", "0"), "--min-attempts"),
    ],
)
def test_bad_options_exit_2_naming_the_option(tmp_path: Path, options: tuple[str, ...], named: str) -> None:
    done = convy(project(tmp_path), "run", "--attempts", "auto", *options)
    assert done.returncode == 2
    assert named in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "project" / "results").exists()
