"""The pytest plugin (``pytest --convy``), run by pytest's own ``pytester`` on a project made of the
fakes: which items it collects, how each ends and says why, ``-k`` and ``-m``, a broken project as
a collection error, the run folder and report it leaves, and that without ``--convy`` it does
nothing at all. Then that it plays as ``convy run`` does: ``attempts = "auto"`` in rounds, the
budgets (a stop fails what it cut short), the project's ``.env`` when pytest is started from the
folder above it (the template too, on the stand-in, in a process of its own), ``--lf`` on matrix
variants, and outside text with its line breaks written out.

The project has five scenarios: one that passes, one whose check fails, one whose agent raises
(with a key and an escape sequence in its error), one its judge cannot decide, and one that needs
the simulated user's model, which the project lacks.
"""

from __future__ import annotations

import importlib.util
import json
import re
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from support.fakeproject import MODELS, Command, FakeProject
from support.process import environment
from support.standin import StandIn
from test_services_cli import KEY, Made, Roles

import convy.cli.pytest_items  # noqa: F401

# pytester runs pytest in this process, and after each run takes out of sys.modules every module
# the run imported: a module imported again beside parts of the old one (PyYAML's events) is not
# the same classes. What the plugin and the project import is loaded here first, and so is kept.
import convy.fakes  # noqa: F401
import convy.http  # noqa: F401
import convy.page  # noqa: F401
import convy.settings  # noqa: F401

pytest_plugins = ["pytester"]

SECRET = "sk-canary-5d1e8b7c29a04f63bb"

AGENT = '''\
import os

from convy.fakes import FakeAgent


def answer(text):
    if "crash" in text:
        raise RuntimeError(f"bot exploded \\x1b[31mred key={os.environ['BOT_API_KEY']}")
    if "refund" in text:
        return "I guarantee a refund today"
    return "hello " + text


agent = FakeAgent(answer)
'''

SCENARIOS = {
    "greet.yaml": "tags: [smoke]\nscript: [hi]\njudge:\n  - check: {said: hello}\n",
    "refund.yaml": "tags: [billing]\nscript: [refund please]\njudge:\n  - The bot is polite.\n  - check: {not_said: guarantee}\n",
    "crash.yaml": "script: [crash now]\njudge:\n  - check: {said: hello}\n",
    "unjudged.yaml": "script: [hi]\njudge:\n  - An unjudgeable claim.\n",
    "chat.yaml": "tags: [smoke]\nuser: You want to chat.\njudge:\n  - check: {said: hello}\n",
}


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project, in pytester's folder (pytest's rootdir there), with the agent's key set."""
    monkeypatch.setenv("BOT_API_KEY", SECRET)
    return FakeProject(AGENT, MODELS, SCENARIOS, 2).written(pytester.path)


def sections(output: str) -> dict[str, str]:
    """The failures pytest printed, by the heading of each (``bot::refund``)."""
    found = re.split(r"^_{3,} (\S+) _{3,}$", output, flags=re.MULTILINE)
    return {name: body.split("\n=")[0].split("\n-----")[0] for name, body in zip(found[1::2], found[2::2])}


def runs(project: Path) -> list[Path]:
    return sorted((project / "results" / "bot").iterdir()) if (project / "results" / "bot").is_dir() else []


def test_each_scenario_is_an_item_that_passes_fails_or_is_skipped(pytester: pytest.Pytester, project: Path) -> None:
    """Every scenario is an item of the agent: passed, failed or skipped as its run kept it."""
    result = pytester.runpytest("--convy", "-v", "-ra", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=3, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "convy::bot::chat SKIPPED*",
            "convy::bot::crash FAILED*",
            "convy::bot::greet PASSED*",
            "convy::bot::refund FAILED*",
            "convy::bot::unjudged FAILED*",
            "SKIPPED [[]1[]] scenarios/chat.yaml: for agent bot, needs a model for the simulated user: *",
        ]
    )


def test_a_failure_names_the_claims_their_reasons_and_attempts_and_the_report(
    pytester: pytest.Pytester, project: Path
) -> None:
    """A failed item says which claim failed, why in each attempt by number, and where the report is."""
    result = pytester.runpytest("--convy", "-p", "no:cacheprovider")
    (run,) = runs(project)
    refund = sections(result.stdout.str())["bot::refund"]
    assert "0 of 2 judged attempts passed" in refund
    assert "claims that failed:\n- never said /guarantee/ (held 0 of 2 decided)" in refund
    assert "    #1: agent said 'guarantee' in turn 1\n    #2: agent said 'guarantee' in turn 1" in refund
    assert "The bot is polite" not in refund  # a claim that held is not named
    assert f"report: {(run / 'report.html').relative_to(project)}" in refund


def test_an_agents_failure_and_an_unjudged_attempt_read_as_such(pytester: pytest.Pytester, project: Path) -> None:
    """An attempt the agent failed, or that was not judged, is said so, not as a claim that failed;
    the agent's key stays hidden and its escape sequence is written out."""
    result = pytester.runpytest("--convy", "-p", "no:cacheprovider")
    output = result.stdout.str()
    found = sections(output)
    crash, unjudged = found["bot::crash"], found["bot::unjudged"]
    assert "the agent failed:\n- #1: agent_failed: " in crash and "\n- #2: agent_failed: " in crash
    assert "claims that failed" not in crash
    assert "bot exploded \\x1b[31mred" in crash
    assert "none of 2 attempts judged" in unjudged
    assert "not judged:\n- #1: judge: " in unjudged and "the judge broke down" in unjudged
    assert "claims that failed" not in unjudged
    assert SECRET not in output and SECRET[:8] not in output
    assert "\x1b" not in output


def test_the_run_folder_and_report_are_those_convy_run_writes(pytester: pytest.Pytester, project: Path) -> None:
    """One run for the session, kept with its report and the index, listing the scenario it skipped."""
    result = pytester.runpytest("--convy", "-p", "no:cacheprovider")
    (run,) = runs(project)
    assert (run / "report.html").is_file() and (project / "results" / "index.html").is_file()
    spec = json.loads((run / "run.json").read_text(encoding="utf-8"))["spec"]
    assert [scenario["id"] for scenario in spec["scenarios"]] == ["crash", "greet", "refund", "unjudged"]
    assert [skipped["scenario"] for skipped in spec["skipped"]] == ["chat"]
    assert len((run / "attempts.jsonl").read_text(encoding="utf-8").splitlines()) == 8
    assert SECRET not in (run / "attempts.jsonl").read_text(encoding="utf-8")
    result.stdout.fnmatch_lines(["*- convy -*", f"bot: run {run.name}: 2 passed, 4 failed, 2 not judged of 8 attempts*"])


def test_k_and_m_select_the_scenarios_played(pytester: pytest.Pytester, project: Path) -> None:
    """``-k`` on the ids and ``-m`` on the tags (markers, so ``--strict-markers`` holds) choose what the run plays."""
    pytester.runpytest("--convy", "-k", "greet or refund", "-p", "no:cacheprovider").assert_outcomes(passed=1, failed=1)
    by_tag = pytester.runpytest("--convy", "-m", "billing", "--strict-markers", "-p", "no:cacheprovider")
    by_tag.assert_outcomes(failed=1)
    played = [
        [scenario["id"] for scenario in json.loads((run / "run.json").read_text(encoding="utf-8"))["spec"]["scenarios"]]
        for run in runs(project)
    ]
    assert sorted(played) == [["greet", "refund"], ["refund"]]


def test_attempts_and_the_agent_are_options(pytester: pytest.Pytester, project: Path) -> None:
    """``--convy-attempts`` sets the attempts of each scenario, and ``--convy-agent`` names the agent."""
    result = pytester.runpytest("--convy", "--convy-agent", "bot", "--convy-attempts", "3", "-k", "greet", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    (run,) = runs(project)
    assert json.loads((run / "run.json").read_text(encoding="utf-8"))["spec"]["attempts"] == 3


def test_the_project_may_be_elsewhere(pytester: pytest.Pytester, project: Path) -> None:
    """``--convy-project`` plays a project in another folder than the rootdir."""
    elsewhere = pytester.mkdir("elsewhere")
    (elsewhere / "pyproject.toml").write_text("", encoding="utf-8")
    result = pytester.runpytest("--convy", f"--convy-project={project}", "-k", "greet", "-p", "no:cacheprovider", elsewhere)
    result.assert_outcomes(passed=1)
    assert len(runs(project)) == 1


def test_a_broken_scenario_file_is_a_collection_error(pytester: pytest.Pytester, project: Path) -> None:
    """A broken scenario file is a collection error naming the file and the field, and nothing is played."""
    (project / "scenarios" / "broken.yaml").write_text("script: [hi]\njudgee: []\n", encoding="utf-8")
    result = pytester.runpytest("--convy", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ERROR collecting convy*", "convy: scenarios/broken.yaml: *judgee*"])
    assert not (project / "results").exists()


def test_models_that_raise_are_a_collection_error(pytester: pytest.Pytester, project: Path) -> None:
    """``models.py`` that raises is a collection error naming it, and nothing is played."""
    (project / "models.py").write_text("raise ValueError('no models today')\n", encoding="utf-8")
    result = pytester.runpytest("--convy", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["convy: loading agents/bot.py or models.py failed: *no models today*"])
    assert not (project / "results").exists()


def test_receive_traces_is_refused_as_a_collection_error_with_the_fix(pytester: pytest.Pytester, project: Path) -> None:
    """pytest --convy loads the agents as it collects them, before spans could be received: the
    setting is refused, not passed over (a check of calls no reply holds would go unseen)."""
    with (project / "pyproject.toml").open("a", encoding="utf-8") as toml:
        toml.write("receive_traces = true\n")
    result = pytester.runpytest("--convy", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["convy: receive_traces: pytest --convy does not receive the agent's spans; play the scenarios with convy run*"])
    assert not (project / "results").exists()


def test_without_convy_nothing_is_collected_or_played(pytester: pytest.Pytester, project: Path) -> None:
    """Without ``--convy`` the session is the project's own tests alone: no scenario item, no run."""
    pytester.makepyfile(test_own="def test_own():\n    assert True\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "convy::" not in result.stdout.str()
    assert not (project / "results").exists()


def test_loading_the_plugin_imports_no_module_of_convy_but_its_own() -> None:
    """pytest loads the plugin named by pyproject's ``pytest11`` entry point in every session of an
    environment where convy is installed; loaded, in a process of its own, it imports of convy only
    the packages it lies in and itself, so a session without ``--convy`` does not pay for the
    command (some 0.1 s) or the engine."""
    declared = tomllib.loads((Path(__file__).parents[3] / "pyproject.toml").read_text(encoding="utf-8"))
    module = declared["project"]["entry-points"]["pytest11"]["convy"]
    code = f"import sys, pytest, {module}; print(*sorted(name for name in sys.modules if name.startswith('convy')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environment())
    parts = module.split(".")
    assert done.stdout.split() == [".".join(parts[: count + 1]) for count in range(len(parts))]


def test_the_projects_own_tests_run_beside_the_scenarios(pytester: pytest.Pytester, project: Path) -> None:
    """With ``--convy`` the project's own tests are collected and run as before, beside the scenarios."""
    pytester.makepyfile(test_own="def test_own():\n    assert True\n")
    result = pytester.runpytest("--convy", "-p", "no:cacheprovider", "-k", "own or greet")
    result.assert_outcomes(passed=2)


def test_xdist_is_refused(pytester: pytest.Pytester, project: Path) -> None:
    """Given pytest-xdist's ``--dist`` (xdist's own where it is installed, as `make test` does, else
    declared here as xdist declares it), ``--convy`` refuses to start."""
    if importlib.util.find_spec("xdist") is None:
        pytester.makeconftest("def pytest_addoption(parser):\n    parser.addoption('--dist', default='no')\n")
    result = pytester.runpytest("--convy", "--dist", "load", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--convy plays the scenarios as one run per agent, in one process*"])
    assert not (project / "results").exists()


def test_a_session_inside_a_running_event_loop_plays_all_the_same(pytester: pytest.Pytester, project: Path) -> None:
    """When a plugin runs the tests inside an event loop, the play runs in a loop of its own and ends the same."""
    pytester.makeconftest(
        "import asyncio\n"
        "import pytest\n\n"
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_runtestloop(session):\n"
        "    async def inside():\n"
        "        items = session.items\n"
        "        for at, item in enumerate(items):\n"
        "            following = items[at + 1] if at + 1 < len(items) else None\n"
        "            item.config.hook.pytest_runtest_protocol(item=item, nextitem=following)\n"
        "    asyncio.run(inside())\n"
        "    return True\n"
    )
    pytester.runpytest("--convy", "-p", "no:cacheprovider").assert_outcomes(passed=1, failed=3, skipped=1)
    assert len(runs(project)) == 1


def test_a_run_that_cannot_be_written_fails_its_items_saying_so(pytester: pytest.Pytester, project: Path) -> None:
    """When the run's folder cannot be made, each of its items fails with convy's line, and nothing is played."""
    (project / "results").write_text("not a folder\n", encoding="utf-8")
    result = pytester.runpytest("--convy", "-k", "greet or refund", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    for body in sections(result.stdout.str()).values():
        assert body.strip().startswith("convy: ") and "results/bot/" in body and "nothing was played" in body


def test_a_session_stopped_by_ctrl_c_keeps_the_run_to_resume(pytester: pytest.Pytester, project: Path) -> None:
    """Ctrl+C during the play stops the session; the run is kept, marked interrupted, and the way on
    is said, after the run of an agent played before it, which is summed up as it ended."""
    (project / "agents" / "able.py").write_text("from convy.fakes import Echo\n\nagent = Echo()\n", encoding="utf-8")
    (project / "agents" / "bot.py").write_text(
        AGENT.replace(
            '    if "crash" in text:',
            '    if "refund" in text and not STOPPED:  # once, as one Ctrl+C\n'
            '        STOPPED.append(True)\n'
            '        os.kill(os.getpid(), signal.SIGINT)\n'
            '    if "crash" in text:',
        ).replace("import os\n", "import os\nimport signal\n\nSTOPPED = []\n"),
        encoding="utf-8",
    )
    # The Ctrl+C is the inner session's: pytester would raise it on, into this one. It comes to
    # Python's own handler, as a terminal's does: a session started in the background by a shell
    # without job control (`make test &`) inherits SIGINT ignored, and asyncio.run then leaves it
    # so, and the Ctrl+C reached nothing (seen under `-n 3`: the run played on and ended).
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        result = pytester.runpytest("--convy", "-p", "no:cacheprovider", no_reraise_ctrlc=True)
    finally:
        signal.signal(signal.SIGINT, handler)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    (run,) = runs(project)
    assert json.loads((run / "run.json").read_text(encoding="utf-8"))["status"]["type"] == "interrupted"
    (before,) = (project / "results" / "able").iterdir()
    result.stdout.fnmatch_lines(
        [f"bot: run {run.name} was stopped; play the rest with: convy resume {run.name}", f"able: run {before.name}: *"]
    )


def test_an_absent_agents_items_are_skipped_and_naming_it_is_an_error(pytester: pytest.Pytester, project: Path) -> None:
    """An absent agent's items are skipped with its reason; named with ``--convy-agent``, it is a collection error."""
    (project / "agents" / "later.py").write_text(
        "from convy.model import Absent\n\nagent = Absent('set LATER_KEY in .env')\n", encoding="utf-8"
    )
    result = pytester.runpytest("--convy", "-ra", "-k", "greet", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["skipped agent later: set LATER_KEY in .env", "SKIPPED [[]1[]] scenarios/greet.yaml: the agent later is absent: set LATER_KEY in .env"]
    )
    named = pytester.runpytest("--convy", "--convy-agent", "later", "-p", "no:cacheprovider")
    named.assert_outcomes(errors=1)
    named.stdout.fnmatch_lines(["convy: agents/later.py: the agent is absent: set LATER_KEY in .env"])


def test_under_fail_on_skip_a_skipped_item_fails_with_the_skips_reason(
    pytester: pytest.Pytester, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under fail_on_skip (CONVY_FAIL_ON_SKIP, or [tool.convy]), as `convy run` exits 8, an item that
    would be skipped (a model it needs is absent, its agent is absent) fails, saying why; the others
    are decided as ever."""
    (project / "agents" / "later.py").write_text(
        "from convy.model import Absent\n\nagent = Absent('set LATER_KEY in .env')\n", encoding="utf-8"
    )
    monkeypatch.setenv("CONVY_FAIL_ON_SKIP", "1")
    result = pytester.runpytest("--convy", "-k", "greet or chat", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    failed = sections(result.stdout.str())
    assert "skipped, and fail_on_skip fails a run that skips any: the agent later is absent: set LATER_KEY in .env" in failed["later::greet"]
    assert "skipped, and fail_on_skip fails a run that skips any: for agent bot, needs a model for the simulated user" in failed["bot::chat"]
    monkeypatch.delenv("CONVY_FAIL_ON_SKIP")
    (project / "pyproject.toml").write_text("[tool.convy]\nattempts = 1\nfail_on_skip = true\n", encoding="utf-8")
    pytester.runpytest("--convy", "-k", "chat", "-p", "no:cacheprovider").assert_outcomes(failed=2)
    (project / "pyproject.toml").write_text("[tool.convy]\nattempts = 1\n", encoding="utf-8")
    pytester.runpytest("--convy", "-k", "greet or chat", "-p", "no:cacheprovider").assert_outcomes(passed=1, skipped=3)


def test_verbose_shows_each_attempt_as_it_ends(pytester: pytest.Pytester, project: Path) -> None:
    """Under ``-v`` each attempt's line is shown as ``convy run`` shows it; without, none is."""
    verbose = pytester.runpytest("--convy", "-v", "-k", "greet or refund", "-p", "no:cacheprovider")
    (run,) = runs(project)
    # Each line on its own: attempts end in no set order.
    for line in (
        f"bot: 2 scenarios × 2 attempts → results/bot/{run.name}",
        "✓ greet #1  1 turn, * · 1 claim held",
        "✗ refund #2  1 turn, * · never said /guarantee/: agent said 'guarantee' in turn 1",
    ):
        verbose.stdout.fnmatch_lines([line])
    quiet = pytester.runpytest("--convy", "-k", "greet", "-p", "no:cacheprovider")
    assert "greet #1" not in quiet.stdout.str()


# --- as `convy run` plays: auto rounds, budgets, the project's folder, --lf, outside text ----------

PRICED = '''\
from decimal import Decimal

from convy.agent import Answer, Cost, Usage
from convy.fakes import FakeAgent


def answer(text):
    return Answer("hello " + text, Usage(input=60, output=40, cost=Cost(Decimal("0.10"), "provider")))


agent = FakeAgent(answer)
'''

PASSES = "script: [hi]\njudge:\n  - check: {said: hello}\n"


def priced(folder: Path, settings: str) -> Path:
    """A project whose two scenarios always pass, each answer costing $0.10 and 100 tokens, with
    these lines of ``[tool.convy]``, one attempt played at a time."""
    FakeProject(PRICED, MODELS, {"greet.yaml": PASSES, "hello.yaml": PASSES}, 1).written(folder)
    (folder / "pyproject.toml").write_text(f"[tool.convy]\nagent_places = 1\njudge_places = 1\n{settings}", encoding="utf-8")
    return folder


def kept(run: Path) -> int:
    return len((run / "attempts.jsonl").read_text(encoding="utf-8").splitlines())


def status(run: Path) -> dict:
    return json.loads((run / "run.json").read_text(encoding="utf-8"))["status"]


def test_auto_attempts_are_played_in_rounds_as_convy_run_plays_them(pytester: pytest.Pytester) -> None:
    """Under ``attempts = "auto"`` the run plays the rounds its rule wants, the attempts ``convy run``
    plays on the same project, not the most each scenario may get."""
    project = priced(pytester.path, 'attempts = "auto"\nmax_attempts = 40\n')
    assert Command(project, SECRET).ran("run").returncode == 0
    result = pytester.runpytest("--convy", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["bot: 2 scenarios × 5 to 40 attempts per scenario, until *"])
    counts = {run.name: kept(run) for run in runs(project)}
    assert len(counts) == 2 and len(set(counts.values())) == 1, counts  # the same rounds, both ways
    assert next(iter(counts.values())) < 2 * 40
    result.stdout.fnmatch_lines(["  greet: * attempts, narrow enough: width *", "  hello: * attempts, narrow enough: width *"])


def test_the_projects_budget_stops_the_play_and_fails_what_it_cut_short(pytester: pytest.Pytester) -> None:
    """``max_cost`` of ``[tool.convy]`` holds: no attempt starts once it is spent, the run is kept as
    stopped, each scenario cut short fails saying the budget and how to play the rest, and the convy
    section says the stop as ``convy run`` does."""
    project = priced(pytester.path, "attempts = 10\nmax_cost = 0.25\n")
    result = pytester.runpytest("--convy", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (run,) = runs(project)
    spent = status(run)
    assert spent["type"] == "stopped" and spent["spent"]["budget"] == "cost"
    assert float(spent["spent"]["cost"]) <= 0.25 + 0.10  # over by at most one attempt's cost
    assert kept(run) < 20
    result.assert_outcomes(failed=2)
    for body in sections(result.stdout.str()).values():
        assert body.strip().startswith(f"run {run.name} stopped by budget: $") and "(cost)" in body
        assert f"to play the rest: convy resume {run.name} --max-cost " in body
    result.stdout.fnmatch_lines(
        [f"bot: run {run.name} stopped by budget: $* of $0.25 (cost)*; to play the rest: convy resume {run.name} --max-cost *"]
    )


def test_a_budget_option_and_a_variable_hold_as_convy_runs_do(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--convy-max-tokens`` is over ``[tool.convy]``, ``CONVY_MAX_COST`` too; a run that kept within
    its budget says what it spent of it."""
    project = priced(pytester.path, "attempts = 2\nmax_tokens = 100000\n")
    result = pytester.runpytest("--convy", "--convy-max-tokens", "250", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] >= 1 and outcomes["failed"] + outcomes.get("passed", 0) == 2  # a scenario played out may pass
    (run,) = runs(project)
    assert status(run)["spent"]["budget"] == "tokens"
    result.stdout.fnmatch_lines([f"bot: run {run.name} stopped by budget: * of 250 tokens (tokens)*; to play the rest: *"])
    monkeypatch.setenv("CONVY_MAX_COST", "5")
    within = pytester.runpytest("--convy", "-p", "no:cacheprovider")
    within.assert_outcomes(passed=2)
    within.stdout.fnmatch_lines(["  budget: spent $0.40 of $5.00 (cost), 400 of 100,000 tokens (tokens)"])


def test_lf_plays_again_the_failed_variants_of_a_matrix(pytester: pytest.Pytester, project: Path) -> None:
    """A variant that failed (``refunds/upset[mood=angry,language=German]``) is found again by
    ``--lf``, which plays it and the other failures alone, as a new run."""
    (project / "scenarios" / "upset.yaml").write_text(
        "matrix:\n  mood: [angry, calm]\n  language: [German, French]\nscript: ['hi {{ mood }} in {{ language }}']\n"
        "judge:\n  - check: {not_said: angry}\n",
        encoding="utf-8",
    )
    first = pytester.runpytest("--convy", "-k", "upset or greet")
    first.assert_outcomes(passed=3, failed=2)
    again = pytester.runpytest("--convy", "--lf", "-k", "upset or greet")
    again.assert_outcomes(failed=2, deselected=7)  # -k's 4, and the 3 that passed
    again.stdout.fnmatch_lines(["run-last-failure: rerun previous 2 failures*"])
    played = {
        tuple(one["id"] for one in json.loads((run / "run.json").read_text(encoding="utf-8"))["spec"]["scenarios"])
        for run in runs(project)
    }
    assert ("upset[mood=angry,language=German]", "upset[mood=angry,language=French]") in played


FORGED = "✓ fake/scenario #1  1 turn, 0.0 s · 1 claim held"


def test_outside_text_keeps_its_line_breaks_written_out(pytester: pytest.Pytester, project: Path) -> None:
    """An agent's error and a model's reason holding a line break and a line that looks like convy's
    own print it written out (``\\n``), in the failure, under ``-v`` and in the convy section: no
    forged line starts a line of pytest's output."""
    (project / "agents" / "bot.py").write_text(
        AGENT.replace('raise RuntimeError(f"bot exploded', f'raise RuntimeError(f"bot exploded\\n{FORGED}\\n'),
        encoding="utf-8",
    )
    (project / "models.py").write_text(
        MODELS.replace("Models(judge=", f"Models(user=Absent('no user\\n{FORGED}'), judge=").replace(
            "from convy import Models", "from convy import Absent, Models"
        ),
        encoding="utf-8",
    )
    result = pytester.runpytest("--convy", "-v", "-ra", "-k", "crash or chat", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, skipped=1)
    output = result.stdout.str()
    assert "bot exploded\\n✓ fake/scenario #1" in sections(output)["bot::crash"]
    assert f"no user\\n{FORGED}" in output  # the skip's reason, in -ra's line and the convy section
    assert not [line for line in output.splitlines() if line.lstrip().startswith("✓ fake/scenario")], output
    assert "\x1b" not in output


def test_a_claim_holding_a_line_break_is_failed_on_one_line(pytester: pytest.Pytester, project: Path) -> None:
    """A claim of a scenario file holding a line break and a line that looks like convy's own is
    written out (``\\n``) in pytest's failure, the claim's own line and each reason quoting it: no
    forged line starts a line of pytest's output."""
    claim = "zzz\\e\\n" + FORGED
    (project / "scenarios" / "greet.yaml").write_text(f'script: [hi]\njudge:\n  - check: {{said: "{claim}"}}\n', encoding="utf-8")
    result = pytester.runpytest("--convy", "-k", "greet", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, deselected=4)
    output = result.stdout.str()
    assert "- said /zzz\\x1b\\n✓ fake/scenario" in sections(output)["bot::greet"], output
    assert not [line for line in output.splitlines() if line.lstrip().startswith("✓ fake/scenario")], output
    assert "\x1b" not in output


SETTLED = '''\
from convy import Env
from convy.fakes import FakeAgent


class BotSettings(Env):
    greeting: str = "nobody set the greeting"


def answer(text):
    return BotSettings().greeting + " " + text  # read while the run plays


agent = FakeAgent(answer)
'''


def test_from_the_projects_parent_folder_its_env_is_read(pytester: pytest.Pytester) -> None:
    """Started from the folder above the project, pytest plays it as ``convy run`` started in it:
    the project's ``.env`` is read by its ``Env`` settings and for the ``CONVY_*`` ones, not the
    one of the folder pytest was started in."""
    project = FakeProject(SETTLED, MODELS, {"greet.yaml": "script: [hi]\njudge:\n  - check: {said: hello there}\n"}, 1).written(
        pytester.path / "project"
    )
    (project / ".env").write_text("GREETING=hello there\nCONVY_ATTEMPTS=2\n", encoding="utf-8")
    (pytester.path / ".env").write_text("GREETING=not this one\nCONVY_ATTEMPTS=5\n", encoding="utf-8")
    result = pytester.runpytest("--convy", "project", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    (run,) = runs(project)
    assert json.loads((run / "run.json").read_text(encoding="utf-8"))["spec"]["attempts"] == 2
    assert Path.cwd() == pytester.path  # the folder pytest was started in, again after the play


def test_the_template_from_its_parent_folder_plays_every_scenario_on_the_gateway(tmp_path: Path) -> None:
    """A project of ``convy init`` with its gateway in ``.env``, run by ``pytest --convy project``
    from the folder above it, in a process of its own: no scenario is skipped for a model, and the
    simulated user, the judge and the assistant's model are asked on the gateway."""
    made = Made(tmp_path / "project")
    made.folder.mkdir()
    assert made.ran("init").returncode == 0
    roles = Roles()
    with StandIn(reply=roles, api_key=KEY) as gateway:
        made.gateway(gateway.url + "/v1")
        with (made.folder / ".env").open("a", encoding="utf-8") as env:
            env.write("CONVY_ATTEMPTS=1\n")
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--convy", "project", "-p", "no:cacheprovider", "-ra"],
            cwd=tmp_path, env=made.environment({}), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
        )
        assert gateway.errors == []
    output = done.stdout + done.stderr
    assert KEY not in output and "Traceback" not in output, output
    assert " skipped" not in output and "SKIPPED" not in output, output
    assert set(roles.seen) == {"user", "judge", "agent"}
    counts = re.search(r"(\d+) failed, (\d+) passed in", output) or re.search(r"(\d+) passed in", output)
    scenarios = len(list((made.folder / "scenarios").rglob("*.yaml")))
    assert counts is not None and sum(int(number) for number in counts.groups()) == 2 * scenarios, output
    assert {path.parent.parent.name for path in (made.folder / "results").glob("*/*/run.json")} == {"assistant", "shop"}


def test_a_bad_option_is_a_collection_error_naming_pytests_option(pytester: pytest.Pytester, project: Path) -> None:
    """A value ``convy run`` would refuse is refused naming the ``--convy-…`` option, and nothing is played."""
    for option, said in (
        ("--convy-max-cost=-1", "convy: --convy-max-cost: must be 0 (no budget) or more"),
        ("--convy-attempts=many", "convy: --convy-attempts: must be a whole number of at least 1, or auto"),
    ):
        result = pytester.runpytest("--convy", option, "-p", "no:cacheprovider")
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines([said])
    assert not (project / "results").exists()


def test_a_project_folder_that_is_not_there_is_a_collection_error(pytester: pytest.Pytester) -> None:
    """``--convy-project`` naming no folder is one line saying so, not a traceback."""
    result = pytester.runpytest("--convy", "--convy-project", "nowhere", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["convy: nowhere: No such file or directory"])
    assert "Traceback" not in result.stdout.str() and Path.cwd() == pytester.path


def test_a_run_that_played_everything_but_reached_its_budget_is_not_green(pytester: pytest.Pytester) -> None:
    """A run that played every attempt and reached its budget doing so passes its items, says so as
    ``convy run`` does, and fails the session, as ``convy run`` exits 6 for it."""
    project = priced(pytester.path, "attempts = 2\nmax_cost = 0.40\n")
    result = pytester.runpytest("--convy", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    (run,) = runs(project)
    assert kept(run) == 4 and status(run)["type"] == "finished"
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            f"bot: run {run.name} reached its budget: $0.40 of $0.40 (cost)*; every planned attempt was played",
            "convy: the session fails: the run of bot reached its budget (convy run exits 6)",
        ]
    )


def test_the_items_follow_the_projects_pass_rule(pytester: pytest.Pytester, project: Path) -> None:
    """A scenario the project's fail_under accepts is a passed item, as `convy run` accepts it; the same
    scenario fails its item without it (issue 24: one verdict everywhere)."""
    with (project / "pyproject.toml").open("a", encoding="utf-8") as toml:
        toml.write("fail_under = 0.5\n")
    accepted = pytester.runpytest("--convy", "-p", "no:cacheprovider", "-k", "greet or refund")
    accepted.assert_outcomes(passed=2)
    assert accepted.ret == 0
    (project / "pyproject.toml").write_text("[tool.convy]\nattempts = 2\n", encoding="utf-8")
    failed = pytester.runpytest("--convy", "-p", "no:cacheprovider", "-k", "greet or refund")
    failed.assert_outcomes(passed=1, failed=1)


def test_a_session_whose_scenarios_were_all_skipped_tested_nothing(pytester: pytest.Pytester, project: Path) -> None:
    """Every chosen scenario skipped for a missing model: no attempt judged, so the session ends with
    pytest's code for nothing tested (5), never 0, and the convy section says so."""
    result = pytester.runpytest("--convy", "-p", "no:cacheprovider", "-k", "chat")
    result.assert_outcomes(skipped=1)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(["convy: nothing was tested: no attempt of a scenario was judged (exit 5)"])


def test_each_attempt_is_sent_as_a_trace_as_convy_run_sends_it(pytester: pytest.Pytester, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With OpenTelemetry's variables set, ``pytest --convy`` sends each attempt's trace as
    ``convy run`` does (issue 30): a root span per attempt, its case and its result."""
    from support.otlpreceiver import OtlpReceiver, attributes

    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        pytester.runpytest("--convy", "-k", "greet", "-p", "no:cacheprovider").assert_outcomes(passed=1)
        roots = [attributes(span.attributes) for span in receiver.spans() if not span.parent_span_id]
    assert sorted((root["test.case.name"], root["convy.attempt"], root["test.case.result.status"]) for root in roots) == [
        ("greet", 1, "pass"), ("greet", 2, "pass"),
    ]
