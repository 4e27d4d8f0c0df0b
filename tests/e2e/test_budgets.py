"""Budgets: ``--max-cost``, ``--max-tokens`` and ``--max-minutes`` stop a run from starting new
attempts, keep those under way, keep the run as stopped (exit 6), and ``convy resume`` with a
larger budget plays the rest. Through the real command on a project of fakes; the minutes budget,
which reads a clock, in-process with a clock the test moves by hand.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from decimal import Decimal
from pathlib import Path

from support.clock import in_virtual_time
from support.fakeproject import FakeProject
from support.process import environment, start_convy
from support.waiting import wait_until
from test_exit_codes import GREET, MODELS, convy, runs

from convy.agent import Answer, Cost, Usage
from convy.bench import Bench
from convy.budget import Budget, Outlay
from convy.checks import Check, Rule
from convy.fakes import FakeAgent, FakeJudge, MemoryJournal
from convy.index import Index, Listing
from convy.judge import Models
from convy.records import Complete, Limits, RunSpec, Stopped
from convy.scenario import Scenario
from convy.spent import Dollars, Stop
from convy.storage import RunJournal

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


# Slow, costly attempts: every answer waits many turns of the event loop (no clock), so that
# attempts started together are under way together, and costs $0.10 for 100 tokens. The agent
# notes the most conversations it ever had open at once in the project's file ``together``, and
# from its third conversation on waits while the file ``hold`` exists (so a test can stop the run
# part way, on a condition and not on time).
COSTLY = """\
import asyncio
from contextlib import asynccontextmanager
from decimal import Decimal
from pathlib import Path

from convy.agent import Answer, Cost, Usage

HERE = Path(__file__).resolve().parent.parent
seen = {"open": 0, "most": 0, "opened": 0}


class Talk:
    def __init__(self, number):
        self.number = number

    async def turn(self, message):
        for _ in range(200):
            await asyncio.sleep(0)
        while self.number > 2 and (HERE / "hold").exists():
            await asyncio.sleep(0.01)
        return Answer("hello " + message.text, Usage(input=60, output=40, cost=Cost(Decimal("0.10"), "provider")))


class Costly:
    @asynccontextmanager
    async def conversation(self):
        seen["open"] += 1
        seen["opened"] += 1
        seen["most"] = max(seen["most"], seen["open"])
        (HERE / "together").write_text(str(seen["most"]))
        try:
            yield Talk(seen["opened"])
        finally:
            seen["open"] -= 1


agent = Costly()
"""


def costly(tmp_path: Path, scenarios: int = 4, attempts: int = 5, places: int = 4, settings: str = "") -> Path:
    """A project of ``scenarios`` scenarios played ``attempts`` times each by the costly agent, ``places`` at once."""
    files = {f"s{number}.yaml": GREET for number in range(scenarios)}
    folder = FakeProject(COSTLY, MODELS, files, attempts).written(tmp_path / "project")
    with (folder / "pyproject.toml").open("a", encoding="utf-8") as toml:
        toml.write(f"agent_places = {places}\njudge_places = 1\n{settings}")
    return folder


def spent(project: Path) -> Decimal:
    """What the run's kept attempts cost, as the agent priced them."""
    return Decimal("0.10") * kept(project)


def test_a_budget_is_a_cap_with_four_places_and_slow_costly_attempts(tmp_path: Path) -> None:
    """With four places and attempts that overlap, no attempt starts whose likely cost would cross --max-cost: the run spends at most the budget (every attempt costs the same $0.10, the most any has cost), stops with exit 6, and where the budget allows it plays four at once."""
    for budget, plays, together in (("0.15", 1, 1), ("0.35", 3, 2), ("1.05", 10, 4)):
        project = costly(tmp_path / budget)
        done = convy(project, "run", "--max-cost", budget)
        assert done.returncode == 6, done.stdout + done.stderr
        assert spent(project) <= Decimal(budget)  # and so within the budget and one attempt's most
        assert kept(project) == plays
        assert int((project / "together").read_text()) == together
        status = run_json(project)["status"]
        assert status["type"] == "stopped"
        assert Decimal(status["spent"]["cost"]) == spent(project)
        assert f"stopped by budget: ${spent(project):.2f} of ${Decimal(budget):.2f} (cost)" in done.stdout


def test_a_run_that_reached_or_crossed_its_budget_exits_6_though_every_attempt_was_played(tmp_path: Path) -> None:
    """The first attempt, whose cost nobody knew before it ended, may cross the budget; a run that played every attempt and reached or crossed its budget doing so is finished but exits 6, and says what it spent against the cap."""
    crossed = costly(tmp_path / "crossed", scenarios=1, attempts=1)
    done = convy(crossed, "run", "--max-cost", "0.05", "--summary", "summary.md")
    assert done.returncode == 6, done.stdout + done.stderr
    status = run_json(crossed)["status"]
    assert status["type"] == "finished"
    assert status["reached"]["cost"] == "0.10"
    (run,) = runs(crossed)
    assert (
        f"bot: run {run} reached its budget: $0.10 of $0.05 (cost), $0.10 the most one attempt cost; "
        "every planned attempt was played"
    ) in done.stdout.splitlines()
    page = (crossed / "results" / "bot" / run / "report.html").read_text(encoding="utf-8")
    assert "reached its budget: $0.10 of $0.05 (cost)" in page
    assert "This run reached its budget: \\$0.10 of \\$0.05 (cost)" in (crossed / "summary.md").read_text(encoding="utf-8")
    reached = costly(tmp_path / "reached", scenarios=3, attempts=1)
    assert convy(reached, "run", "--max-cost", "0.30").returncode == 6
    assert kept(reached) == 3
    within = costly(tmp_path / "within", scenarios=3, attempts=1)
    assert convy(within, "run", "--max-cost", "0.31").returncode == 0


def test_the_resume_hint_names_a_budget_that_plays_the_rest(tmp_path: Path) -> None:
    """The hint of a stopped run names a budget that plays on: run as it says, the resume plays every attempt left and finishes within it (exit 0), also after a first attempt that crossed the budget."""
    for budget in ("0.05", "0.35"):
        project = costly(tmp_path / budget)
        done = convy(project, "run", "--max-cost", budget)
        assert done.returncode == 6, done.stdout + done.stderr
        before = kept(project)
        hint = done.stdout.splitlines()[-1].partition("to play the rest: convy ")[2].split()
        assert hint[:2] == ["resume", runs(project)[0]] and hint[2] == "--max-cost", done.stdout
        assert Decimal(hint[3]) > spent(project)
        resumed = convy(project, *hint)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert kept(project) == 20 > before
        assert run_json(project)["status"]["type"] == "finished"
        assert spent(project) <= Decimal(hint[3])


def test_with_two_budgets_that_bind_the_hint_raises_both_and_following_it_plays_on(tmp_path: Path) -> None:
    """--max-cost 0.35 and --max-tokens 350 both bind after three $0.10, 100-token attempts: the hint names both, raised to what the 17 left would spend and a tenth more, and the resume run as it says plays every attempt left (exit 0). A limit the rest fits in is left out: it holds from run.json."""
    project = costly(tmp_path / "both")
    done = convy(project, "run", "--max-cost", "0.35", "--max-tokens", "350")
    assert done.returncode == 6, done.stdout + done.stderr
    run = runs(project)[0]
    last = done.stdout.splitlines()[-1]
    assert last.endswith(f"to play the rest: convy resume {run} --max-cost 2.20 --max-tokens 2200"), last
    resumed = convy(project, *last.partition("to play the rest: convy ")[2].split())
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert kept(project) == 20
    assert "budget: spent $2.00 of $2.20 (cost), 2,000 of 2,200 tokens (tokens)" in resumed.stdout
    roomy = costly(tmp_path / "roomy")
    done = convy(roomy, "run", "--max-cost", "0.35", "--max-tokens", "100000")
    assert done.stdout.splitlines()[-1].endswith(f"convy resume {runs(roomy)[0]} --max-cost 2.20"), done.stdout


def test_an_interrupted_run_keeps_its_command_line_budget_on_resume(tmp_path: Path) -> None:
    """A budget given to `convy run` is kept in run.json: the run interrupted (Ctrl+C) part way and resumed with no option stops at that budget (exit 6); resumed with a larger one it plays on to the end, and keeps that one."""
    project = costly(tmp_path, scenarios=1, attempts=10, places=1)
    (project / "hold").write_text("the agent waits from its third conversation while this file exists\n")
    process = start_convy(
        project, "run", "--max-cost", "0.55", env=environment(BOT_API_KEY="k"), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    two = wait_until(
        lambda: len(list((project / "results").glob("bot/*/attempts.jsonl"))) == 1 and kept(project) >= 2,
        "the run to keep two attempts", process=process,
    )
    assert two, "the run never kept two attempts"
    process.send_signal(signal.SIGINT)
    _, errors = process.communicate(timeout=90)
    assert process.returncode == 130, errors
    assert run_json(project)["status"]["type"] == "interrupted"
    assert run_json(project)["spec"]["budget"]["cost"] == 0.55
    (project / "hold").unlink()
    (run,) = runs(project)
    resumed = convy(project, "resume", run)
    assert resumed.returncode == 6, resumed.stdout + resumed.stderr
    assert kept(project) == 5  # $0.50: a sixth attempt would cross $0.55
    assert "stopped by budget: $0.50 of $0.55 (cost)" in resumed.stdout
    larger = convy(project, "resume", run, "--max-cost", "5")
    assert larger.returncode == 0, larger.stdout + larger.stderr
    assert kept(project) == 10
    assert run_json(project)["spec"]["budget"]["cost"] == 5.0


def test_a_run_of_attempts_auto_keeps_within_its_budget(tmp_path: Path) -> None:
    """A run whose attempts are spent adaptively (rounds of attempts, four at once) lets no attempt start that would cross its budget either, and exits 6."""
    project = costly(tmp_path, settings='min_attempts = 5\nmax_attempts = 40\n')
    (project / "pyproject.toml").write_text((project / "pyproject.toml").read_text().replace("attempts = 5", 'attempts = "auto"', 1))
    done = convy(project, "run", "--max-cost", "0.75")
    assert done.returncode == 6, done.stdout + done.stderr
    assert spent(project) <= Decimal("0.75")
    assert kept(project) == 7
    assert run_json(project)["status"]["type"] == "stopped"


class Sleepy:
    """An agent whose every answer takes a minute on the event loop's clock (virtual in the test)
    and one token."""

    class Talk:
        async def turn(self, message: object) -> Answer:
            await asyncio.sleep(60)
            return Answer("hi", Usage(1, 0))

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[Sleepy.Talk]:
        yield Sleepy.Talk()


def test_no_attempt_starts_that_would_likely_end_after_the_minutes_allowed(tmp_path: Path) -> None:
    """Under --max-minutes an attempt starts only while the minutes left hold the longest one so far: with attempts of a minute, four at once, and 4.5 minutes, four rounds are played (the fifth would end at 5) and the run stops within its minutes. On a virtual clock: the minutes pass at once."""
    scenario = Scenario(id="s", script=("hi",), judge=(Rule(check=Check(said="hi")),))
    spec = RunSpec("r", "bot", (scenario,), 40, Limits(agent_places=4, judge_places=1))
    journal = RunJournal(tmp_path / "bot" / "r")
    memory = MemoryJournal()

    async def main() -> float:
        start = asyncio.get_running_loop().time()
        await journal.play(spec, Bench(Sleepy(), Models(), spec.limits, budget=Budget(minutes=4.5)), memory)
        return (asyncio.get_running_loop().time() - start) / 60

    took = in_virtual_time(main)
    status = journal.run().status
    assert isinstance(status, Stopped)
    assert status.spent.budget == "minutes"
    assert len(memory.outcomes) == 16
    assert took <= 4.5
    assert status.spent.most == 1.0
    assert Stop(status.spent).text() == "stopped by budget: 4 minutes of 4.5 minutes (minutes), 1 minute the longest one attempt took"


def test_a_small_minutes_budget_is_said_in_seconds() -> None:
    """Times under a minute are said in seconds, never as 0.0 minutes; longer ones in minutes."""
    said = Stop(Outlay("minutes", 0.05, minutes=0.051, most=0.02)).text()
    assert said == "stopped by budget: 3.1 s of 3 s (minutes), 1.2 s the longest one attempt took"
    assert Stop(Outlay("minutes", 2.5, minutes=2.0, most=0.5)).text() == (
        "stopped by budget: 2 minutes of 2.5 minutes (minutes), 30 s the longest one attempt took"
    )


def test_the_resume_hint_is_what_the_rest_would_spend_and_a_tenth_more_rounded_up() -> None:
    """The hint's budget: what was spent and the most one attempt spent for each attempt left, and a tenth more, rounded up (cost to the cent, tokens to two figures); minutes, which count one play, as rounds of the agent's places; at least one attempt more; twice the budget when no attempt's spend is known."""
    assert Stop(Outlay("cost", 0.25, "0.20", most=0.1)).more(8) == "--max-cost 1.10"
    assert Stop(Outlay("cost", 0.05, "0.1234", most=0.1234)).more(0) == "--max-cost 0.28"  # one more, at least
    assert Stop(Outlay("tokens", 350, tokens=300, most=100)).more(17) == "--max-tokens 2200"
    assert Stop(Outlay("tokens", 350, tokens=312, most=104)).more(3) == "--max-tokens 690"  # 686.4, to two figures
    assert Stop(Outlay("tokens", 700, tokens=400, most=200)).more(13) == "--max-tokens 3300"  # 3000 and a tenth: exact
    assert Stop(Outlay("tokens", 7, tokens=4, most=2)).more(1) == "--max-tokens 7"  # 6.6: whole tokens
    assert Stop(Outlay("minutes", 4.5, minutes=4.0, most=1.0)).more(10, places=4) == "--max-minutes 3.3"  # 3 rounds
    assert Stop(Outlay("minutes", 0.05, minutes=0.05, most=1 / 60)).more(13, places=4) == "--max-minutes 0.074"
    assert Stop(Outlay("minutes", 1, minutes=1.0, most=0.0)).more(10, places=4) == "--max-minutes 2"


def test_a_minutes_hint_counts_rounds_of_the_places_the_run_starts_with() -> None:
    """The places a run starts with are the run's limits' word (``Limits.starting``): a cap, or
    with none the places they grow from (4). The hint for 10 attempts left, each a minute, is 3
    rounds of 4 and a tenth more; with a cap of 2, 5 rounds."""
    uncapped, capped = Limits().starting("agent"), Limits(agent_places=2).starting("agent")
    assert (uncapped, capped, Limits(judge_places=3).starting("judge")) == (4, 2, 3)
    assert Stop(Outlay("minutes", 4.5, minutes=4.0, most=1.0)).more(10, places=uncapped) == "--max-minutes 3.3"
    assert Stop(Outlay("minutes", 4.5, minutes=4.0, most=1.0)).more(10, places=capped) == "--max-minutes 5.5"


def test_a_budget_below_a_cent_is_said_with_its_figures_never_as_nothing() -> None:
    """`--max-cost 1e-9` was said `spent $0.00 of $0.00`: a budget that is not nothing is never said as one."""
    assert [Dollars(amount).text() for amount in (0, 0.0, 1e-9, 0.0049, 0.01, 0.5, 2.2)] == [
        "$0.00", "$0.00", "$0.000000001", "$0.0049", "$0.01", "$0.50", "$2.20"
    ]
