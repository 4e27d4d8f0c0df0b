"""The exit codes of docs/results.md's "Results and exit codes", each made by the real ``convy`` command on a
project of fakes, and the order in which they win when several apply (``cli.exits.Worst``).

The project's agent answers ``hello …``, raises on a message with ``crash`` in it, and answers
``bye`` once the file ``worse`` exists in the project; its judge holds every claim but one with
``unjudgeable`` in it, on which it raises (the attempt is not judged). Nothing here measures time:
the one wait polls for a file with a generous deadline and fails only when it passes.
"""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

import pytest
from support.fakeproject import MODELS, Command, FakeProject, Greens
from support.process import start_convy
from support.waiting import wait_until
from test_blame import (
    CANCELLING,  # an agent that cancels the task it runs in: the run stops with attempts unrecorded, exit 2
)

from convy import cli
from convy.cli.exits import Worst

KEY = "sk-exit-codes-0123456789"
DEADLINE = 300.0  # a hang guard, not a measure of speed

AGENT = """\
from pathlib import Path

from convy.fakes import FakeAgent

WORSE = Path(__file__).resolve().parent.parent / "worse"


def answer(text):
    if "crash" in text:
        raise RuntimeError("the bot broke")
    return "bye" if WORSE.exists() else "hello " + text


agent = FakeAgent(answer)
"""

# An agent that says it has started, then never answers: the run is under way until stopped.
ASLEEP = """\
import asyncio
from contextlib import asynccontextmanager
from pathlib import Path

STARTED = Path(__file__).resolve().parent.parent / "started"


class Asleep:
    async def turn(self, message):
        STARTED.touch()
        await asyncio.sleep(3600)
        return "hi"


class Agent:
    @asynccontextmanager
    async def conversation(self):
        yield Asleep()


agent = Agent()
"""

# An agent whose answers to "flip" alternate, "odd flip" then "even flip" (a counter kept in the
# project), and a judge that breaks down on a dialogue with "odd" in it: of a scenario of HALF,
# every other attempt is not judged, whatever order its attempts are played in. Other messages are
# answered "steady …", and one with "crash" in it raises.
FLIPPING = """\
from pathlib import Path

from convy.fakes import FakeAgent

COUNT = Path(__file__).resolve().parent.parent / "count"


def answer(text):
    if "crash" in text:
        raise RuntimeError("the bot broke")
    if "flip" not in text:
        return "steady " + text
    number = int(COUNT.read_text()) + 1 if COUNT.exists() else 1
    COUNT.write_text(str(number))
    return ("odd " if number % 2 else "even ") + text


agent = FakeAgent(answer)
"""

BREAKS_ON_ODD = """\
from convy.fakes import FakeJudge
from convy.judge import Models


def held(claim, transcript):
    if "odd" in str(transcript):
        raise ValueError("the judge broke down")
    return True


models = Models(judge=FakeJudge(held))
"""

HALF = "script: [flip]\njudge:\n  - The bot is polite.\n"  # with FLIPPING and BREAKS_ON_ODD: half not judged
STEADY = "script: [hi]\njudge:\n  - check: {said: hi}\n"  # passes with FLIPPING

GREET = "script: [hi]\njudge:\n  - check: {said: hello}\n"
CRASH = "script: [crash now]\njudge:\n  - check: {said: hello}\n"
UNJUDGED = "script: [hi]\njudge:\n  - An unjudgeable claim.\n"
FAILS = "script: [hi]\njudge:\n  - check: {said: never}\n"


def made(
    tmp_path: Path, scenarios: dict[str, str], attempts: int = 1, settings: str = "", agent: str = AGENT, models: str = MODELS
) -> Path:
    """The project with these scenarios, and ``settings`` added to its ``[tool.convy]``."""
    folder = FakeProject(agent, models, scenarios, attempts).written(tmp_path / "project")
    with (folder / "pyproject.toml").open("a", encoding="utf-8") as toml:
        toml.write(settings)
    return folder


def convy(project: Path, *arguments: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """``convy`` run in ``project``, with these ``CONVY_*`` variables (and no others)."""
    return Command(project, KEY).ran(*arguments, **variables)


def runs(project: Path, agent: str = "bot") -> list[str]:
    return sorted(folder.name for folder in (project / "results" / agent).iterdir())


def test_every_attempt_judged_and_passed_exits_0(tmp_path: Path) -> None:
    """A run whose every attempt was judged and passed exits 0, with or without a --fail-under it meets."""
    project = made(tmp_path, {"greet.yaml": GREET}, 2)
    assert convy(project, "run").returncode == 0
    assert convy(project, "run", "--fail-under", "100%").returncode == 0


def test_an_attempt_failed_by_the_agent_exits_1(tmp_path: Path) -> None:
    """An attempt failed by the agent (it raised) exits 1."""
    project = made(tmp_path, {"greet.yaml": GREET, "crash.yaml": CRASH})
    done = convy(project, "run")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 passed, 1 failed, 0 not judged of 2 attempts" in done.stdout


def test_a_configuration_error_exits_2_from_run_and_check(tmp_path: Path) -> None:
    """A broken scenario file exits 2 from `convy run` (nothing played) and from `convy check`."""
    project = made(tmp_path, {"greet.yaml": GREET, "broken.yaml": "script: [hi]\njudge: 3\n"})
    ran = convy(project, "run")
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert ran.stderr.startswith("convy: scenarios/broken.yaml: ")
    assert not (project / "results").exists()
    assert convy(project, "check").returncode == 2


def test_a_pass_rate_under_fail_under_exits_3(tmp_path: Path) -> None:
    """A run of judged attempts whose pass rate is below --fail-under exits 3; at the rate asked, 0."""
    project = made(tmp_path, {"greet.yaml": GREET, "fails.yaml": FAILS})
    under = convy(project, "run", "--fail-under", "0.6")
    assert under.returncode == 3, under.stdout + under.stderr
    assert "bot: pass rate 50.0% is below fail_under 60.0%" in under.stdout
    assert convy(project, "run", "--fail-under", "50%").returncode == 0


def test_a_real_regression_exits_4_from_compare_with_fail_on_regression(tmp_path: Path) -> None:
    """`convy compare --fail-on-regression` exits 4 when the pass rate really dropped, and 0 without
    the option, for the same runs the other way round, or for a change within noise."""
    scenarios = {f"s{number}.yaml": GREET for number in range(4)}
    project = made(tmp_path, scenarios, 5)
    assert convy(project, "run").returncode == 0
    (base,) = runs(project)
    (project / "worse").touch()
    assert convy(project, "run").returncode == 3  # every attempt fails its check: the pass rule fails the run
    (candidate,) = set(runs(project)) - {base}  # ids made in one second do not sort in the order they were made
    regressed = convy(project, "compare", base, candidate, "--fail-on-regression")
    assert regressed.returncode == 4, regressed.stdout + regressed.stderr
    assert "real (worse)" in regressed.stdout
    assert convy(project, "compare", base, candidate).returncode == 0
    assert convy(project, "compare", candidate, base, "--fail-on-regression").returncode == 0  # better, not worse
    (project / "worse").unlink()
    assert convy(project, "run").returncode == 0
    (again,) = set(runs(project)) - {base, candidate}
    assert convy(project, "compare", base, again, "--fail-on-regression").returncode == 0  # no change


def test_attempts_not_judged_exit_5_by_default_and_within_max_not_judged_do_not(tmp_path: Path) -> None:
    """With no --max-not-judged any attempt not judged exits 5; a share of the attempts played at or
    above theirs lets the run exit 0, a smaller one exits 5, each said in a line; a scenario none of
    whose attempts was judged is let through at no share."""
    project = made(tmp_path, {"steady.yaml": STEADY, "half.yaml": HALF}, 2, agent=FLIPPING, models=BREAKS_ON_ODD)  # 1 of 4: 25%
    default = convy(project, "run")
    assert default.returncode == 5, default.stdout + default.stderr
    assert (
        "1 of 4 attempts not judged (25.0%): more than --max-not-judged 0.0%: the run fails (exit 5) whatever the pass rule "
        "says; --max-not-judged 25.0% would let them through"
    ) in default.stdout.splitlines()
    within = convy(project, "run", "--max-not-judged", "0.25")
    assert within.returncode == 0, within.stdout + within.stderr
    assert "1 of 4 attempts not judged (25.0%): within --max-not-judged 25.0%" in within.stdout
    assert convy(project, "run", "--max-not-judged", "24%").returncode == 5
    whole = made(tmp_path / "whole", {"greet.yaml": GREET, "unjudged.yaml": UNJUDGED}, 2)  # 2 of 4, all of one scenario
    untested = convy(whole, "run", "--max-not-judged", "0.5")
    assert untested.returncode == 5, untested.stdout + untested.stderr
    assert "2 of 4 attempts not judged (50.0%): within --max-not-judged 50.0%" in untested.stdout
    assert "bot: no attempt judged of 1 scenario: unjudged" in untested.stdout


def test_resume_decides_its_run_by_max_not_judged_too(tmp_path: Path) -> None:
    """`convy resume` of a run with attempts not judged exits 5, or 0 with a --max-not-judged that lets them through."""
    project = made(tmp_path, {"steady.yaml": STEADY, "half.yaml": HALF}, 2, agent=FLIPPING, models=BREAKS_ON_ODD)
    assert convy(project, "run").returncode == 5
    (run,) = runs(project)
    assert convy(project, "resume", run).returncode == 5
    resumed = convy(project, "resume", run, "--max-not-judged", "0.5")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "1 of 4 attempts not judged (25.0%): within --max-not-judged 50.0%" in resumed.stdout


def test_max_not_judged_is_read_from_tool_convy_and_its_variable_the_option_over_both(tmp_path: Path) -> None:
    """`max_not_judged` in [tool.convy], CONVY_MAX_NOT_JUDGED over it and --max-not-judged over both decide
    the share, as every setting is sourced; `convy check` names where it came from."""
    project = made(tmp_path, {"half.yaml": HALF}, 2, "max_not_judged = 0.5\n", agent=FLIPPING, models=BREAKS_ON_ODD)  # 1 of 2
    assert convy(project, "run").returncode == 0
    assert convy(project, "run", CONVY_MAX_NOT_JUDGED="0.25").returncode == 5
    assert convy(project, "run", "--max-not-judged", "1", CONVY_MAX_NOT_JUDGED="0.25").returncode == 0
    checked = convy(project, "check", CONVY_MAX_NOT_JUDGED="0.25")
    assert "  max_not_judged    0.25          CONVY_MAX_NOT_JUDGED" in checked.stdout.splitlines()
    dry = convy(project, "run", "--dry-run", "--max-not-judged", "10%")
    assert "  max_not_judged    0.1           --max-not-judged" in dry.stdout.splitlines()


def test_a_share_that_is_not_one_is_a_configuration_error(tmp_path: Path) -> None:
    """A max_not_judged outside 0 to 1, in [tool.convy], its variable or on the command line, exits 2 naming it."""
    project = made(tmp_path, {"greet.yaml": GREET}, 1, "max_not_judged = 1.5\n")
    table = convy(project, "run")
    assert (table.returncode, table.stderr) == (2, "convy: pyproject.toml: [tool.convy] max_not_judged: must be between 0 and 1\n")
    (project / "pyproject.toml").write_text("[tool.convy]\nattempts = 1\n", encoding="utf-8")
    variable = convy(project, "run", CONVY_MAX_NOT_JUDGED="-1")
    assert variable.returncode == 2 and "CONVY_MAX_NOT_JUDGED: max_not_judged: must be between 0 and 1" in variable.stderr
    option = convy(project, "run", "--max-not-judged", "150%")
    assert option.returncode == 2 and "--max-not-judged" in option.stderr


def test_within_one_run_an_agent_failure_wins_over_not_judged_which_wins_over_fail_under(tmp_path: Path) -> None:
    """One run that has an agent failure, attempts not judged and a pass rate under --fail-under
    exits 1; without the agent failure 5; with the attempts not judged tolerated 3."""
    project = made(tmp_path, {"crash.yaml": CRASH, "half.yaml": HALF, "fails.yaml": FAILS}, 2, agent=FLIPPING, models=BREAKS_ON_ODD)
    assert convy(project, "run", "--fail-under", "0.9").returncode == 1
    (project / "scenarios" / "crash.yaml").unlink()
    assert convy(project, "run", "--fail-under", "0.9").returncode == 5
    assert convy(project, "run", "--fail-under", "0.9", "--max-not-judged", "0.5").returncode == 3


def test_over_several_agents_the_worst_code_wins(tmp_path: Path) -> None:
    """A command that runs several agents exits with the first of their codes in Worst's order: a run
    the project's code stopped (2) over an agent failure (1), which is over attempts not judged (5)."""
    project = made(tmp_path, {"crash.yaml": "script: [hi]\njudge:\n  - check: {said: hello}\n  - An unjudgeable claim.\n"})
    (project / "agents" / "crashing.py").write_text(AGENT.replace('"crash" in text', "True"), encoding="utf-8")
    assert convy(project, "run", "bot").returncode == 5
    assert convy(project, "run", "crashing").returncode == 1
    assert convy(project, "run", "bot", "crashing").returncode == 1
    (project / "agents" / "cancels.py").write_text(CANCELLING, encoding="utf-8")
    assert convy(project, "run", "cancels").returncode == 2
    everyone = convy(project, "run")
    assert everyone.returncode == 2, everyone.stdout + everyone.stderr
    assert {folder.name for folder in (project / "results").iterdir()} >= {"bot", "crashing", "cancels"}


def test_a_file_not_written_after_the_run_wins_over_not_judged(tmp_path: Path) -> None:
    """A --summary that cannot be written after a run with attempts not judged exits 1, not 5: the
    job has not the file it asked for."""
    project = made(tmp_path, {"unjudged.yaml": UNJUDGED})
    done = convy(project, "run", "--summary", "n" * 300 + ".md")  # a name no file system takes
    assert done.returncode == 1, done.stdout + done.stderr
    assert "cannot be written" in done.stderr


@pytest.mark.parametrize(("number", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_run_stopped_by_ctrl_c_or_sigterm_exits_130_or_143(tmp_path: Path, number: int, code: int) -> None:
    """A run under way stopped by SIGINT exits 130, by SIGTERM 143, and says how to resume it."""
    project = made(tmp_path, {"greet.yaml": GREET})
    (project / "agents" / "bot.py").write_text(ASLEEP, encoding="utf-8")
    process = start_convy(
        project,
        "run",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # a shell without job control may have left SIGINT ignored; a user's terminal never does
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    started = wait_until((project / "started").exists, "the run to start its attempt", process=process)
    assert started, "the run ended before it started its attempt"
    process.send_signal(number)
    _, err = process.communicate(timeout=DEADLINE)
    assert process.returncode == code, err
    assert "resume with: convy resume " in err


WORST = [
    ((0, 0), 0),
    ((0, 3), 3),
    ((3, 4), 4),
    ((3, 5), 5),
    ((4, 5), 5),
    ((5, 1), 1),
    ((1, 6), 6),
    ((6, 2), 2),
    ((2, 143), 143),
    ((143, 130), 130),
    ((0, 7), 7),  # a code the order does not list still fails the command
]


@pytest.mark.parametrize(("codes", "worst"), WORST)
def test_worst_takes_the_first_code_in_its_order(codes: tuple[int, ...], worst: int) -> None:
    """Worst's code is the first of 130, 143, 2, 6, 1, 5, 4, 3 among those given, else the largest, else 0."""
    assert Worst(codes).code() == worst
    assert Worst(codes[::-1]).code() == worst


def test_the_docs_the_docstring_and_worst_list_the_same_codes() -> None:
    """docs/results.md's table of exit codes, cli/__init__.py's docstring and Worst's order hold the same codes, each
    below 126 but the signals', none of them a sysexits code."""
    guide = (Path(__file__).parents[2] / "docs" / "results.md").read_text(encoding="utf-8")
    section = guide.split("## Results and exit codes", 1)[1].split("\n## ", 1)[0]
    table = [int(code) for code in re.findall(r"^\| (\d+) \|", section, re.MULTILINE)]
    docstring = [int(code) for code in re.findall(r"^    (\d+) ", cli.__doc__ or "", re.MULTILINE)]
    assert table == docstring == sorted(table)
    assert set(table) == {0, *Worst.ORDER}
    assert all(code < 126 or code in (130, 143) for code in table)
    assert not {code for code in table if 64 <= code <= 78}


NEEDS_USER = "user: You want a refund.\njudge:\n  - check: {said: hello}\n"  # the project has no user model: skipped


def test_a_run_that_tested_nothing_exits_7_and_says_so_everywhere(tmp_path: Path) -> None:
    """Every chosen scenario skipped for a missing model: exit 7, "nothing was tested" on the terminal,
    a JUnit error case of type nothing_tested beside the skipped case, the summary and the page say it."""
    project = made(tmp_path, {"greet.yaml": GREET, "needs.yaml": NEEDS_USER})
    done = convy(project, "run", "--scenarios", "needs", "--junit", "junit.xml", "--summary", "summary.md")
    assert done.returncode == 7, done.stdout + done.stderr
    assert "bot: 0 passed, 0 failed, 0 not judged of 0 attempts · 1 scenario skipped ·" in done.stdout
    assert "bot: nothing was tested: every chosen scenario was skipped (1)" in done.stdout
    junit = (project / "junit.xml").read_text(encoding="utf-8")
    assert '<skipped message="skipped: needs a model for the simulated user' in junit
    assert '<error type="nothing_tested" message="nothing was tested: no attempt was judged' in junit
    assert 'tests="2" failures="0" errors="1" skipped="1"' in junit
    assert "**– Nothing was tested:**" in (project / "summary.md").read_text(encoding="utf-8")
    (run,) = runs(project)
    page = (project / "results" / "bot" / run / "report.html").read_text(encoding="utf-8")
    assert '"tested":false' in page and "every attempt passed" not in page.split("<script", 1)[0]


def test_a_run_whose_every_attempt_went_unjudged_but_let_through_exits_7(tmp_path: Path) -> None:
    """Every attempt not judged, and --max-not-judged 100% letting them through: nothing was tested, exit 7."""
    project = made(tmp_path, {"unjudged.yaml": UNJUDGED}, 2)
    done = convy(project, "run", "--max-not-judged", "1")
    assert done.returncode == 7, done.stdout + done.stderr
    assert "bot: nothing was tested: none of its 2 attempts was judged" in done.stdout


def test_a_failed_scenario_fails_the_run_unless_fail_under_accepts_it(tmp_path: Path) -> None:
    """By default a scenario that failed a judged attempt exits 3, naming it; the run's fail_under
    (flag, [tool.convy] or CONVY_FAIL_UNDER) accepts it while the mean holds, and the JUnit case agrees."""
    project = made(tmp_path, {"greet.yaml": GREET, "fails.yaml": FAILS}, 2)
    default = convy(project, "run", "--junit", "junit.xml")
    assert default.returncode == 3, default.stdout + default.stderr
    assert "bot: 1 of 2 scenarios failed the pass rule (every judged attempt passes;" in default.stdout
    assert "  ✗ fails: 0 of 2 passed, where every judged attempt must pass" in default.stdout
    assert 'failures="1"' in (project / "junit.xml").read_text(encoding="utf-8")
    for accepted in (
        convy(project, "run", "--fail-under", "0.5", "--junit", "junit.xml"),
        convy(project, "run", "--junit", "junit.xml", CONVY_FAIL_UNDER="0.5"),
    ):
        assert accepted.returncode == 0, accepted.stdout + accepted.stderr
        assert "bot: passed the pass rule: pass rate 50.0%, at or above fail_under 50.0%" in accepted.stdout
        assert "accepted short of every attempt, as the project's fail_under allows: fails (0 of 2)" in accepted.stdout
        assert 'failures="0" errors="0"' in (project / "junit.xml").read_text(encoding="utf-8")
    (project / "pyproject.toml").write_text("[tool.convy]\nattempts = 2\nfail_under = 0.75\n", encoding="utf-8")
    below = convy(project, "run", "--junit", "junit.xml")
    assert below.returncode == 3, below.stdout + below.stderr
    assert "bot: pass rate 50.0% is below fail_under 75.0%" in below.stdout
    assert 'failures="1"' in (project / "junit.xml").read_text(encoding="utf-8")


def test_a_scenario_held_to_its_own_fail_under(tmp_path: Path) -> None:
    """A scenario's own `fail_under:` is the share of its judged attempts it must pass: at or above
    it the run exits 0 and its JUnit case passed; above its share, 3; a bar over 1 is refused."""
    project = made(tmp_path, {"greet.yaml": GREET, "fails.yaml": FAILS + "fail_under: 0\n"}, 2)
    done = convy(project, "run", "--junit", "junit.xml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "bot: passed the pass rule: every scenario at or above its fail_under" in done.stdout
    assert 'failures="0"' in (project / "junit.xml").read_text(encoding="utf-8")
    (project / "scenarios" / "fails.yaml").write_text(FAILS + "fail_under: 0.5\n", encoding="utf-8")
    below = convy(project, "run")
    assert below.returncode == 3, below.stdout + below.stderr
    assert "  ✗ fails: 0 of 2 passed (0%), below its fail_under 50%" in below.stdout
    (project / "scenarios" / "fails.yaml").write_text(FAILS + "fail_under: 80\n", encoding="utf-8")
    refused = convy(project, "run")
    assert refused.returncode == 2
    assert "fail_under: must be between 0 and 1 (0.8 for 80%)" in refused.stderr


def test_skips_are_counted_and_fail_on_skip_exits_8(tmp_path: Path) -> None:
    """A skipped scenario is counted on the run's line and is no failure by default; --fail-on-skip
    (or fail_on_skip, CONVY_FAIL_ON_SKIP) exits 8 and makes its JUnit case an error of type skipped."""
    project = made(tmp_path, {"greet.yaml": GREET, "needs.yaml": NEEDS_USER})
    default = convy(project, "run")
    assert default.returncode == 0, default.stdout + default.stderr
    assert "bot: 1 passed, 0 failed, 0 not judged of 1 attempt · 1 scenario skipped ·" in default.stdout
    for failing in (
        convy(project, "run", "--fail-on-skip", "--junit", "junit.xml"),
        convy(project, "run", "--junit", "junit.xml", CONVY_FAIL_ON_SKIP="true"),
    ):
        assert failing.returncode == 8, failing.stdout + failing.stderr
        assert "bot: 1 scenario skipped, and fail_on_skip (--fail-on-skip) fails a run that skipped any" in failing.stdout
        assert '<error type="skipped"' in (project / "junit.xml").read_text(encoding="utf-8")


def test_compare_fails_the_gate_when_the_candidate_tested_nothing_or_the_pair_is_not_comparable(tmp_path: Path) -> None:
    """`convy compare --fail-on-regression` exits 7 for a candidate with no judged attempt and 9 for
    a pair with no scenario judged in both; without the option, 0."""
    project = made(tmp_path, {"greet.yaml": GREET, "needs.yaml": NEEDS_USER, "other.yaml": GREET})
    assert convy(project, "run", "--scenarios", "greet").returncode == 0
    (base,) = runs(project)
    assert convy(project, "run", "--scenarios", "needs").returncode == 7
    (empty,) = set(runs(project)) - {base}
    untested = convy(project, "compare", base, empty, "--fail-on-regression")
    assert untested.returncode == 7, untested.stdout + untested.stderr
    assert f"convy: nothing was tested: the candidate run {empty} has no judged attempt" in untested.stderr
    assert convy(project, "compare", base, empty).returncode == 0
    assert convy(project, "run", "--scenarios", "other").returncode == 0
    (other,) = set(runs(project)) - {base, empty}
    apart = convy(project, "compare", base, other, "--fail-on-regression")
    assert apart.returncode == 9, apart.stdout + apart.stderr
    assert "so --fail-on-regression cannot rule out a regression" in apart.stderr


def test_a_pull_request_that_adds_and_changes_scenarios_is_compared_on_the_ones_it_shares(tmp_path: Path) -> None:
    """A candidate whose project added a scenario and changed another is no 'not comparable' pair:
    those two are left out and said, the scenario both runs share unchanged is compared, and the
    gate passes a pair with no drop (a pull request that adds a scenario must be able to pass)."""
    project = made(tmp_path, {"greet.yaml": GREET, "other.yaml": GREET})
    assert convy(project, "run").returncode == 0
    (base,) = runs(project)
    (project / "scenarios" / "other.yaml").write_text(GREET.replace("[hi]", "[hi there]"), encoding="utf-8")
    (project / "scenarios" / "added.yaml").write_text(GREET, encoding="utf-8")
    assert convy(project, "run").returncode == 0
    (candidate,) = set(runs(project)) - {base}
    compared = convy(project, "compare", base, candidate, "--fail-on-regression")
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "not comparable" not in compared.stdout + compared.stderr
    assert "left out: 0 only in base, 1 only in candidate, 1 changed" in compared.stdout + compared.stderr


def test_the_suites_property_names_a_green_run_that_tested_nothing_or_failed(tmp_path: Path) -> None:
    """The check tests/conftest.py makes of every run that exited 0 (``fakeproject.Greens``) is one
    that can fail: handed a run that failed its pass rule and one that tested nothing, it names both,
    and passes a run that held."""
    project = made(tmp_path, {"greet.yaml": GREET, "fails.yaml": FAILS, "needs.yaml": NEEDS_USER})
    assert convy(project, "run", "--scenarios", "greet").returncode == 0
    assert convy(project, "run", "--scenarios", "fails").returncode == 3
    assert convy(project, "run", "--scenarios", "needs").returncode == 7
    folders = sorted((project / "results" / "bot").iterdir(), key=lambda folder: (folder / "run.json").stat().st_mtime_ns)
    held, failed, untested = folders
    wrong = Greens(((held, "held"), (failed, "failed"), (untested, "untested"))).wrong()
    assert wrong == [
        f"convy failed exited 0, but {failed}: 1 scenario failed the pass rule",
        f"convy untested exited 0, but {untested}: nothing was tested",
    ]


def test_the_demo_passes_by_its_stated_fail_under_and_fails_without_it(tmp_path: Path) -> None:
    """`make demo`'s run (`convy init demo && cd demo && convy run`, no .env) exits 0 because the
    template's pyproject.toml states fail_under with why, and names the three scenarios it accepts;
    without that line the same run exits 3 naming them as failures."""
    assert Command(tmp_path, KEY).ran("init", "demo").returncode == 0
    demo = tmp_path / "demo"
    assert "fail_under = 0.5" in (demo / "pyproject.toml").read_text(encoding="utf-8")
    done = Command(demo, KEY).ran("run")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-4:-2] == [
        "shop: passed the pass rule: pass rate 50.0%, at or above fail_under 50.0%",
        "  accepted short of every attempt, as the project's fail_under allows: orders/late (0 of 3), refunds/in-transit (0 of 3),"
        " refunds/refunded-before (0 of 3)",
    ]
    assert done.stdout.splitlines()[-1] == "– 1 agent skipped (absent): assistant"  # no .env: the gateway's assistant
    settings = (demo / "pyproject.toml").read_text(encoding="utf-8")
    (demo / "pyproject.toml").write_text(settings.replace("fail_under = 0.5\n", ""), encoding="utf-8")
    strict = Command(demo, KEY).ran("run")
    assert strict.returncode == 3, strict.stdout + strict.stderr
    assert strict.stdout.splitlines()[-6:-2] == [
        "shop: 3 of 6 scenarios failed the pass rule (every judged attempt passes; set fail_under (per run or per scenario) to accept less):",
        "  ✗ orders/late: 0 of 3 passed, where every judged attempt must pass",
        "  ✗ refunds/in-transit: 0 of 3 passed, where every judged attempt must pass",
        "  ✗ refunds/refunded-before: 0 of 3 passed, where every judged attempt must pass",
    ]


ABSENT = 'from convy import Absent\n\nagent = Absent("set OFF_URL in .env")\n'


def test_an_absent_agent_is_a_skip_and_every_agent_absent_tested_nothing(tmp_path: Path) -> None:
    """An agent skipped as absent counts as a skip: on the command's lines, as a JUnit case and in the
    summary; with every agent absent the command tested nothing (exit 7, and `convy check` calls it a
    problem); beside a run that played, --fail-on-skip exits 8."""
    project = made(tmp_path, {"greet.yaml": GREET})
    (project / "agents" / "off.py").write_text(ABSENT, encoding="utf-8")
    mixed = convy(project, "run", "--junit", "junit.xml", "--summary", "summary.md")
    assert mixed.returncode == 0, mixed.stdout + mixed.stderr
    assert "- skipped agent off: set OFF_URL in .env" in mixed.stdout
    assert "– 1 agent skipped (absent): off" in mixed.stdout
    junit = (project / "junit.xml").read_text(encoding="utf-8")
    assert '<skipped message="skipped agent off: set OFF_URL in .env">' in junit
    assert 'name="off" timestamp=' in junit and 'tests="1" failures="0" errors="0" skipped="1"' in junit
    summary = (project / "summary.md").read_text(encoding="utf-8")
    assert "**1 agent skipped** (absent):" in summary and "- off: set OFF\\_URL in \\.env" in summary
    failing = convy(project, "run", "--fail-on-skip", "--junit", "junit.xml")
    assert failing.returncode == 8, failing.stdout + failing.stderr
    assert "✗ 1 agent skipped (absent): off, and fail_on_skip fails a run that skips any" in failing.stderr
    assert '<error type="skipped" message="skipped agent off: set OFF_URL in .env (fail_on_skip)"' in (project / "junit.xml").read_text(encoding="utf-8")

    (project / "agents" / "bot.py").write_text(ABSENT, encoding="utf-8")
    for arguments in ((), ("--fail-on-skip",)):
        nothing = convy(project, "run", *arguments, "--junit", "junit.xml", "--summary", "summary.md")
        assert nothing.returncode == 7, nothing.stdout + nothing.stderr
        assert "✗ nothing was tested: every agent was skipped — 2 agents skipped (absent): bot, off" in nothing.stderr
        junit = (project / "junit.xml").read_text(encoding="utf-8")
        assert '<error type="nothing_tested" message="nothing was tested: every agent was skipped, no run was played"' in junit
        assert junit.count('name="agent absent"') == 2
        summary = (project / "summary.md").read_text(encoding="utf-8")
        assert "**– Nothing was tested:** no run was played" in summary and "**2 agents skipped** (absent)" in summary
    for command in (("check",), ("run", "--dry-run")):
        checked = convy(project, *command)
        assert checked.returncode == 7, checked.stdout + checked.stderr
        assert checked.stderr.splitlines() == [
            "convy: nothing would be tested: every agent is absent "
            "(skipped agent bot: set OFF_URL in .env; skipped agent off: set OFF_URL in .env)",
            "1 problem: nothing was sent, nothing written",
        ]


def test_each_scenarios_pattern_and_tag_must_match_even_beside_one_that_does(tmp_path: Path) -> None:
    """A mistyped second --scenarios (or --tag) is refused as it is alone (exit 2, the nearest id), in
    run, --dry-run and rejudge, never dropped while the first one plays."""
    project = made(tmp_path, {"greet.yaml": GREET + "tags: [smoke]\n", "other.yaml": GREET})
    alone = convy(project, "run", "--scenarios", "gret")
    assert alone.returncode == 2
    said = "convy: no scenario matches: --scenarios gret: no such scenario; nearest: greet"
    assert alone.stderr.splitlines() == [said]
    for command in (("run",), ("run", "--dry-run")):
        mistyped = convy(project, *command, "--scenarios", "other", "--scenarios", "gret")
        assert (mistyped.returncode, mistyped.stderr.splitlines()[0]) == (2, said), mistyped.stdout + mistyped.stderr
        tag = convy(project, *command, "--tag", "smoke", "--tag", "smok")
        assert tag.returncode == 2 and "--tag smok: no scenario has it; the tags are smoke" in tag.stderr, tag.stderr
    assert not (project / "results").exists()
    assert convy(project, "run").returncode == 0
    (run,) = runs(project)
    rejudged = convy(project, "rejudge", run, "--scenarios", "other", "gret")
    assert rejudged.returncode == 2, rejudged.stdout + rejudged.stderr
    assert rejudged.stderr.splitlines() == [f"convy: run {run}: no scenario matches: --scenarios gret: no such scenario; nearest: greet"]
