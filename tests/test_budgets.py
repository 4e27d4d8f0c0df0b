"""Budgets: ``--max-cost``, ``--max-tokens`` and ``--max-minutes`` stop a run from starting new
attempts, keep those under way, keep the run as stopped (exit 6), and ``convy resume`` with a
larger budget plays the rest. Through the real command on a project of fakes; the minutes budget,
which reads a clock, in-process with a clock the test moves by hand.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from decimal import Decimal
from pathlib import Path

from fakeproject import FakeProject
from test_exit_codes import GREET, MODELS, convy, runs

from convy.agent import Answer, Cost, Usage
from convy.bench import Bench, Complete, Limits, RunJournal, RunSpec, Stopped
from convy.budget import Budget
from convy.fakes import FakeAgent, FakeJudge, MemoryJournal
from convy.model import Models
from convy.report import Index, Listing
from convy.scenario import Check, Rule, Scenario

# Each answer took 100 tokens and, with PRICED, cost $0.10; a message with "silent" in it was
# answered with no usage reported (its scenario, asilent, is played first).
AGENT = """\
from decimal import Decimal

from convy.agent import Answer, Cost, NoUsage, Unpriced, Usage
from convy.fakes import FakeAgent

PRICED = {priced}


def answer(text):
    if "silent" in text:
        return Answer("hello " + text, NoUsage())
    cost = Cost(Decimal("0.10"), "provider") if PRICED else Unpriced()
    return Answer("hello " + text, Usage(input=60, output=40, cost=cost))


agent = FakeAgent(answer)
"""

SILENT = "script: [silent hi]\njudge:\n  - check: {said: hello}\n"


def made(tmp_path: Path, attempts: int = 10, priced: bool = True, places: int = 1, settings: str = "") -> Path:
    """A project whose one scenario is played ``attempts`` times, ``places`` attempts at once."""
    scenarios = {"greet.yaml": GREET, "asilent.yaml": SILENT} if not priced else {"greet.yaml": GREET}
    folder = FakeProject(AGENT.format(priced=priced), MODELS, scenarios, attempts).written(tmp_path / "project")
    with (folder / "pyproject.toml").open("a", encoding="utf-8") as toml:
        toml.write(f"agent_places = {places}\njudge_places = 1\n{settings}")
    return folder


def run_json(project: Path) -> dict:
    (run,) = runs(project)
    return json.loads((project / "results" / "bot" / run / "run.json").read_text(encoding="utf-8"))


def kept(project: Path) -> int:
    (run,) = runs(project)
    return len((project / "results" / "bot" / run / "attempts.jsonl").read_text(encoding="utf-8").splitlines())


def test_a_cost_budget_stops_the_run_with_exit_6_and_says_which_budget_and_how_to_go_on(tmp_path: Path) -> None:
    """A run under --max-cost starts no attempt that would likely cross it (the most one attempt has cost so far, $0.10, no longer fits), is kept as stopped with what it spent, and exits 6 with one line naming the budget and a resume command whose budget plays the rest."""
    project = made(tmp_path)
    done = convy(project, "run", "--max-cost", "0.25")
    assert done.returncode == 6, done.stderr
    status = run_json(project)["status"]
    assert status["type"] == "stopped"
    assert status["spent"]["budget"] == "cost"
    assert Decimal(status["spent"]["cost"]) == Decimal("0.20")  # two attempts of $0.10: a third would cross $0.25
    assert status["spent"]["most"] == 0.1
    assert kept(project) == 2
    (run,) = runs(project)
    # the rest: 8 attempts at $0.10 on top of $0.20, and a tenth more
    assert (
        f"run {run} stopped by budget: $0.20 of $0.25 (cost), $0.10 the most one attempt cost; "
        f"to play the rest: convy resume {run} --max-cost 1.10"
    ) in done.stdout


def test_a_token_budget_stops_the_run(tmp_path: Path) -> None:
    """--max-tokens counts every kept attempt's tokens (the agent's 100 per answer) and starts no attempt whose 100 would cross it."""
    project = made(tmp_path)
    done = convy(project, "run", "--max-tokens", "350")
    assert done.returncode == 6, done.stderr
    assert kept(project) == 3
    assert "stopped by budget: 300 of 350 tokens (tokens), 100 the most one attempt took" in done.stdout


def test_the_budget_is_read_from_tool_convy_and_from_the_environment(tmp_path: Path) -> None:
    """max_tokens in [tool.convy] and CONVY_MAX_TOKENS each set the budget."""
    project = made(tmp_path, settings="max_tokens = 200\n")
    assert convy(project, "run").returncode == 6
    assert kept(project) == 2
    other = made(tmp_path / "other")
    assert convy(other, "run", CONVY_MAX_TOKENS="300").returncode == 6
    assert kept(other) == 3


def test_the_first_attempt_plays_alone_until_its_spend_is_known(tmp_path: Path) -> None:
    """With four places, a budget that the first attempt spends whole stops the run after that one attempt: none started beside it before its spend was known."""
    project = made(tmp_path, attempts=20, places=4)
    done = convy(project, "run", "--max-tokens", "100")
    assert done.returncode == 6, done.stderr
    assert kept(project) == 1
    assert run_json(project)["status"]["spent"]["tokens"] == 100


def test_resume_with_a_larger_budget_finishes_the_run_and_with_the_same_stops_at_once(tmp_path: Path) -> None:
    """The budget counts the whole run's spend: resumed with the same budget the run stops again with nothing played (exit 6), with a larger one it is finished (exit 0)."""
    project = made(tmp_path)
    assert convy(project, "run", "--max-cost", "0.25").returncode == 6
    (run,) = runs(project)
    again = convy(project, "resume", run, "--max-cost", "0.25")
    assert again.returncode == 6, again.stderr
    assert kept(project) == 2
    assert run_json(project)["status"]["type"] == "stopped"
    done = convy(project, "resume", run, "--max-cost", "5")
    assert done.returncode == 0, done.stderr
    assert kept(project) == 10
    assert run_json(project)["status"]["type"] == "finished"
    assert "budget: spent $1.00 of $5.00 (cost)" in done.stdout


def test_a_finished_run_keeps_its_budget_and_its_report_says_what_was_spent_of_it(tmp_path: Path) -> None:
    """A run that kept within its budget keeps the budget in run.json's status and its page says what it spent of it; a run with none writes no budget."""
    project = made(tmp_path, attempts=3)
    done = convy(project, "run", "--max-cost", "5", "--max-tokens", "10000")
    assert done.returncode == 0, done.stderr
    status = run_json(project)["status"]
    assert status["type"] == "finished"
    assert status["budget"] == {"cost": 5.0, "tokens": 10000, "minutes": 0.0}
    (run,) = runs(project)
    page = (project / "results" / "bot" / run / "report.html").read_text(encoding="utf-8")
    assert "budget: spent $0.30 of $5.00 (cost), 300 of 10,000 tokens (tokens)" in page
    plain = made(tmp_path / "plain", attempts=1)
    assert convy(plain, "run").returncode == 0
    assert "budget" not in run_json(plain)["status"]
    (run,) = runs(plain)
    assert "budget: spent" not in (plain / "results" / "bot" / run / "report.html").read_text(encoding="utf-8")


def test_unpriced_and_unreported_requests_are_said(tmp_path: Path) -> None:
    """A cost budget over unpriced requests says it could not be checked in full; a token budget says how many requests reported no tokens."""
    project = made(tmp_path, priced=False, attempts=3)
    done = convy(project, "run", "--max-cost", "1")
    assert done.returncode == 0, done.stderr
    assert "budget: spent $0.00 of $1.00 (cost); 6 requests unpriced: the cost could not be checked in full" in done.stdout
    other = made(tmp_path / "other", priced=False, attempts=4)
    stopped = convy(other, "run", "--max-tokens", "250")
    assert stopped.returncode == 6, stopped.stderr
    assert (
        "stopped by budget: 200 of 250 tokens (tokens), 100 the most one attempt took; "
        "4 requests not reported: their tokens are not counted"
    ) in stopped.stdout


def test_the_report_and_the_index_say_the_stop(tmp_path: Path) -> None:
    """The run's page carries the stop's words, summary.json's run and the index list the run as stopped, and the Markdown summary's headline says it."""
    project = made(tmp_path)
    done = convy(project, "run", "--max-cost", "0.25", "--summary", "summary.md", "--junit", "junit.xml")
    assert done.returncode == 6, done.stderr
    (run,) = runs(project)
    page = (project / "results" / "bot" / run / "report.html").read_text(encoding="utf-8")
    assert "stopped by budget: $0.20 of $0.25 (cost)" in page
    runs_listed, _ = Listing(project / "results").every()  # as the index reads them, summary.json beside each
    assert [row.status for row in Index(runs_listed).view().runs] == ["stopped"]
    assert (project / "results" / "bot" / run / "summary.json").exists()
    assert "This run was stopped by budget: \\$0.20 of \\$0.25 (cost)" in (project / "summary.md").read_text(encoding="utf-8")
    assert "stopped by budget" in (project / "junit.xml").read_text(encoding="utf-8")


def test_the_minutes_option_is_accepted_and_a_budget_not_reached_finishes(tmp_path: Path) -> None:
    """--max-minutes is accepted by run and resume and shown when the run stays within it."""
    project = made(tmp_path, attempts=2)
    done = convy(project, "run", "--max-minutes", "600")
    assert done.returncode == 0, done.stderr
    assert "budget: spent within 600 minutes (minutes)" in done.stdout
    (run,) = runs(project)
    assert convy(project, "resume", run, "--max-minutes", "600").returncode == 0


def test_a_dry_run_shows_the_budget_and_where_it_came_from(tmp_path: Path) -> None:
    """`convy run --dry-run` lists each budget in force with its source: the option, the variable or [tool.convy]."""
    project = made(tmp_path, settings="max_minutes = 30\n")
    done = convy(project, "run", "--dry-run", "--max-cost", "0.4", CONVY_MAX_TOKENS="5000")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "  max_cost          0.4           --max-cost" in lines
    assert "  max_tokens        5000          CONVY_MAX_TOKENS" in lines
    assert "  max_minutes       30.0          [tool.convy]" in lines


def test_a_negative_budget_is_a_configuration_error(tmp_path: Path) -> None:
    """A budget below 0 is refused before anything is sent (exit 2), naming the option."""
    project = made(tmp_path)
    done = convy(project, "run", "--max-cost", "-1")
    assert done.returncode == 2
    assert "--max-cost:" in done.stderr  # the option, as it was given


class Hand:
    """A clock moved by hand: each reading is the time set."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_minutes_budget_counts_this_play_from_its_start_on_the_clock_it_is_given() -> None:
    """The minutes budget is reached once the clock it reads has moved as many minutes on, and stays reached."""
    clock = Hand()
    spending = Budget(minutes=2).spending((), clock)
    assert spending.reached() is None
    clock.now = 119.0
    assert spending.reached() is None
    clock.now = 120.0
    assert spending.reached() == "minutes"
    clock.now = 0.0
    assert spending.reached() == "minutes"
    outlay = spending.outlay()
    assert outlay is not None and outlay.budget == "minutes"


def test_no_new_attempt_is_taken_once_the_budget_is_spent() -> None:
    """A bench with a budget hands out no attempt once it is spent; the ones it did not take stay in the plan."""
    clock = Hand()
    spending = Budget(minutes=1).spending((), clock)
    queue = iter(range(5))

    async def taken() -> int | None:
        return await spending.taken(queue, lambda number: ("s", number))

    assert asyncio.run(taken()) == 0
    clock.now = 60.0
    assert asyncio.run(taken()) is None
    assert spending.stopped() == "minutes"
    assert list(queue) == [1, 2, 3, 4]


def test_a_bench_without_a_budget_plays_everything_and_counts_nothing(tmp_path: Path) -> None:
    """A run with no budget is played whole and marked finished; with a spent one it is marked stopped."""
    agent = FakeAgent(lambda text: Answer("hi", Usage(10, 10, cost=Cost(Decimal("1"), "provider"))))
    scenario = Scenario(id="s", script=("hi",), judge=(Rule(check=Check(said="hi")),))
    spec = RunSpec("r1", "bot", (scenario,), 4, Limits(agent_places=1, judge_places=1))
    models = Models(judge=FakeJudge(lambda claim, transcript: True))
    whole = RunJournal(tmp_path / "bot" / "r1")
    asyncio.run(whole.play(spec, Bench(agent, models, spec.limits)))
    assert isinstance(whole.run().status, Complete)
    spec2 = RunSpec("r2", "bot", (scenario,), 4, Limits(agent_places=1, judge_places=1))
    stopped = RunJournal(tmp_path / "bot" / "r2")
    memory = MemoryJournal()
    asyncio.run(stopped.play(spec2, Bench(agent, models, spec2.limits, budget=Budget(cost=1.5)), memory))
    status = stopped.run().status
    assert isinstance(status, Stopped)
    assert status.spent.cost == "1"  # a second attempt of $1 would cross $1.50
    assert len(memory.outcomes) == 1


class Slow:
    """An agent whose every answer waits a few turns of the event loop (no clock), so that
    attempts overlap, and took one token."""

    class Talk:
        async def turn(self, message: object) -> Answer:
            for _ in range(5):
                await asyncio.sleep(0)
            return Answer("hi", Usage(1, 0))

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[Slow.Talk]:
        yield Slow.Talk()


def test_attempts_under_way_at_the_stop_end_and_are_kept_and_counted(tmp_path: Path) -> None:
    """With four attempts at once, the attempts under way when the budget lets no more start still end and are kept, the run's spend counts them all, and it stays within the budget when every attempt spends as much."""
    scenario = Scenario(id="s", script=("hi",), judge=(Rule(check=Check(said="hi")),))
    spec = RunSpec("r", "bot", (scenario,), 20, Limits(agent_places=4, judge_places=1))
    journal = RunJournal(tmp_path / "bot" / "r")
    memory = MemoryJournal()
    asyncio.run(journal.play(spec, Bench(Slow(), Models(), spec.limits, budget=Budget(tokens=10)), memory))
    status = journal.run().status
    assert isinstance(status, Stopped)
    assert len(memory.outcomes) == 10  # a token each: the tenth reached it
    assert status.spent.tokens == 10
    assert len(journal.kept().outcomes) == len(memory.outcomes)
