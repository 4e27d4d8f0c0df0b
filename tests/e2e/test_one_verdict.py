"""One verdict in every output (issue 24's audit): a run that exits 6 is never a green JUnit
suite or summary, a scenario its budget cut short is an error as ``pytest --convy`` fails it, the
summary's headline gives the command's verdict, and ``--max-not-judged`` is kept in the run's
rule so JUnit decides not-judged attempts as the command does. Through the real command on
projects of fakes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from junitparser import JUnitXml
from support.fakeproject import MODELS, FakeProject
from support.process import CONVY
from test_budgets import AGENT as PRICED
from test_exit_codes import BREAKS_ON_ODD, FLIPPING, GREET, HALF, KEY, NEEDS_USER, STEADY, convy, made, runs


def priced(tmp_path: Path, scenarios: int, attempts: int) -> Path:
    """Scenarios of one message whose answer costs $0.10, played one attempt at a time."""
    files = {f"s{number}.yaml": GREET for number in range(scenarios)}
    folder = FakeProject(PRICED.format(priced=True), MODELS, files, attempts).written(tmp_path / "project")
    with (folder / "pyproject.toml").open("a", encoding="utf-8") as toml:
        toml.write("agent_places = 1\njudge_places = 1\n")
    return folder


def suite(path: Path):  # noqa: ANN201 - junitparser's suite
    (one,) = JUnitXml.fromfile(str(path))
    return one


def errors(path: Path) -> dict[str, tuple[str, str]]:
    """Each erring case of the file's one suite: its type and message, by name."""
    return {case.name: (case.result[0].type, case.result[0].message) for case in suite(path) if case.result and case.result[0]._tag == "error"}


def test_a_run_its_budget_stopped_is_no_green_suite_and_its_cut_short_scenario_errs(tmp_path: Path) -> None:
    """Stopped by --max-cost with 4 of 6 attempts kept (exit 6): the suite has an error case `budget` naming what was spent of what, the scenario the stop cut short is an error `not played in full`, the same through `convy report --junit`, and the summary's headline says the stop."""
    project = priced(tmp_path, scenarios=2, attempts=3)
    done = convy(project, "run", "--max-cost", "0.45", "--junit", "junit.xml", "--summary", "summary.md")
    assert done.returncode == 6, done.stdout + done.stderr
    (run,) = runs(project)
    lines = (project / "results" / "bot" / run / "attempts.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4
    kept = {f"s{number}": sum(1 for line in lines if json.loads(line)["scenario"] == f"s{number}") for number in range(2)}
    found = errors(project / "junit.xml")
    assert found["budget"][0] == "budget"
    assert found["budget"][1].startswith("the run was stopped by budget: $0.40 of $0.45 (cost)")
    short = [scenario for scenario, count in kept.items() if count < 3]
    assert short and all(found[one] == ("not_played", found[one][1]) for one in short)
    for one in short:
        assert found[one][1].startswith(f"not played in full: {kept[one]} of 3 attempts (the run was stopped by budget")
    assert int(suite(project / "junit.xml").errors) == len(found) == 1 + len(short)
    headline = (project / "summary.md").read_text(encoding="utf-8").split("\n\n")[2]
    assert headline.startswith("**✗ Not passed (exit 6):** the run was stopped by budget: \\$0.40 of \\$0.45 (cost)"), headline
    assert "✓ Passed" not in (project / "summary.md").read_text(encoding="utf-8")
    again = convy(project, "report", run, "--junit", "again.xml")
    assert again.returncode == 0, again.stderr
    assert (project / "again.xml").read_bytes() == (project / "junit.xml").read_bytes()


def test_a_run_that_reached_its_budget_is_no_green_suite(tmp_path: Path) -> None:
    """Every attempt played, but its budget reached (exit 6): the suite has the `budget` error case and the summary's headline says it, the pass rule's sentence after it."""
    project = priced(tmp_path, scenarios=1, attempts=1)
    done = convy(project, "run", "--max-cost", "0.05", "--junit", "junit.xml", "--summary", "summary.md")
    assert done.returncode == 6, done.stdout + done.stderr
    written = suite(project / "junit.xml")
    assert (int(written.failures), int(written.errors)) == (0, 1)
    (kind, message) = errors(project / "junit.xml")["budget"]
    assert kind == "budget" and message.startswith("the run reached its budget: $0.10 of $0.05 (cost)")
    text = (project / "summary.md").read_text(encoding="utf-8")
    assert (
        "**✗ Not passed (exit 6):** the run reached its budget: \\$0.10 of \\$0.05 (cost)" in text
        and "the pass rule, on the attempts judged: every scenario met the pass rule" in text
    ), text
    assert "✓ Passed" not in text


def flipping(tmp_path: Path) -> Path:
    """Two scenarios of four attempts each; the one whose answers flip has two of them not judged."""
    folder = FakeProject(FLIPPING, BREAKS_ON_ODD, {"flip.yaml": HALF, "steady.yaml": STEADY}, 4).written(tmp_path / "project")
    with (folder / "pyproject.toml").open("a", encoding="utf-8") as toml:
        toml.write("agent_places = 1\n")
    return folder


def test_max_not_judged_is_one_verdict_in_the_command_junit_the_summary_and_pytest(tmp_path: Path) -> None:
    """2 of 8 attempts not judged under --max-not-judged 0.3: convy run exits 0, the JUnit suite has no error (the case passes on its judged attempts and its output says the rest), the summary says Passed, `convy report --junit` agrees, and CONVY_MAX_NOT_JUDGED=0.3 pytest --convy passes."""
    project = flipping(tmp_path)
    done = convy(project, "run", "--max-not-judged", "0.3", "--junit", "junit.xml", "--summary", "summary.md")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 of 8 attempts not judged (25.0%): within --max-not-judged 30.0%" in done.stdout
    (run,) = runs(project)
    assert json.loads((project / "results" / "bot" / run / "run.json").read_text(encoding="utf-8"))["spec"]["rule"] == {"max_not_judged": 0.3}
    written = suite(project / "junit.xml")
    assert (int(written.failures), int(written.errors)) == (0, 0)
    assert "✓ flip: 2 of 2 judged attempts passed" in written._elem.find("system-out").text
    assert "2 not judged, within max_not_judged 30.0% (2 of 8 attempts in the run)" in written._elem.find("system-out").text
    assert "**✓ Passed:** every scenario met the pass rule (2 of 8 attempts not judged, within max_not_judged 30%)" in (
        project / "summary.md"
    ).read_text(encoding="utf-8")
    assert convy(project, "report", run, "--junit", "again.xml").returncode == 0
    assert (project / "again.xml").read_bytes() == (project / "junit.xml").read_bytes()
    (project / "count").unlink()
    tested = subprocess.run(
        [str(CONVY.parent / "pytest"), "--convy", "-q", "-p", "no:cacheprovider"],
        cwd=project, capture_output=True, text=True, env=_environment(project, CONVY_MAX_NOT_JUDGED="0.3"), timeout=300,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    (project / "count").unlink()
    beyond = convy(project, "run", "--max-not-judged", "0.2", "--junit", "beyond.xml", "--summary", "beyond.md")
    assert beyond.returncode == 5
    assert errors(project / "beyond.xml")["flip"][0] == "not_judged"
    assert "**✗ Not passed (exit 5):** 2 of 8 attempts not judged (25.0%): more than max_not_judged 20.0%" in (
        project / "beyond.md"
    ).read_text(encoding="utf-8")


def test_a_scenario_with_no_attempt_judged_is_never_a_pass(tmp_path: Path) -> None:
    """Within --max-not-judged, a scenario none of whose attempts was judged still fails the run (exit 5), as its JUnit case errs: the tolerance is for a few attempts, not a scenario left untested."""
    unjudged = "script: [hi]\njudge:\n  - An unjudgeable claim.\n"
    files = {f"g{number}.yaml": GREET for number in range(4)} | {"unjudged.yaml": unjudged}
    project = FakeProject(PRICED.format(priced=True), MODELS, files, 1).written(tmp_path / "project")
    done = convy(project, "run", "--max-not-judged", "0.25", "--junit", "junit.xml", "--summary", "summary.md")
    assert done.returncode == 5, done.stdout + done.stderr
    assert "bot: no attempt judged of 1 scenario: unjudged" in done.stdout
    assert errors(project / "junit.xml")["unjudged"][0] == "not_judged"
    assert "**✗ Not passed (exit 5):** no attempt judged of 1 scenario: unjudged" in (project / "summary.md").read_text(encoding="utf-8")


def _environment(project: Path, **variables: str) -> dict[str, str]:
    environment = {name: value for name, value in os.environ.items() if not name.startswith("CONVY_")}
    return environment | {"BOT_API_KEY": KEY, **variables}


def test_compare_says_no_verdict_when_the_candidate_tested_nothing_or_the_pair_is_not_comparable(tmp_path: Path) -> None:
    """`convy compare` (with or without --fail-on-regression) and its summary say "nothing was tested in the candidate" or "not comparable: …" where they would say "within noise": there is no verdict to give."""
    project = made(tmp_path, {"greet.yaml": GREET, "needs.yaml": NEEDS_USER, "other.yaml": GREET})
    assert convy(project, "run", "--scenarios", "greet").returncode == 0
    (base,) = runs(project)
    assert convy(project, "run", "--scenarios", "needs").returncode == 7
    (empty,) = set(runs(project)) - {base}
    assert convy(project, "run", "--scenarios", "other").returncode == 0
    (other,) = set(runs(project)) - {base, empty}
    for gate, code in (("--fail-on-regression", 7), ("--no-op", 0)):
        arguments = ["compare", base, empty, "--summary", "untested.md", *([gate] if gate != "--no-op" else [])]
        untested = convy(project, *arguments)
        assert untested.returncode == code, untested.stdout + untested.stderr
        assert "within noise" not in untested.stdout
        assert f": nothing was tested in the candidate: run {empty} has no judged attempt" in untested.stdout
        summary = (project / "untested.md").read_text(encoding="utf-8")
        assert "within noise" not in summary
        assert f"→ —: – no verdict, nothing was tested in the candidate: run {empty} has no judged attempt**" in summary.replace("\\", "")
    for gate, code in (("--fail-on-regression", 9), ("--no-op", 0)):
        arguments = ["compare", base, other, "--summary", "apart.md", *([gate] if gate != "--no-op" else [])]
        apart = convy(project, *arguments)
        assert apart.returncode == code, apart.stdout + apart.stderr
        assert "within noise" not in apart.stdout
        assert ": not comparable: no scenario was judged in both runs" in apart.stdout
        summary = (project / "apart.md").read_text(encoding="utf-8")
        assert "within noise" not in summary
        assert "→ 100%: – no verdict, not comparable: no scenario was judged in both runs**" in summary.replace("\\", "")
