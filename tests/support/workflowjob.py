"""The GitHub Actions workflow that ``convy init --ci github`` writes, played on this machine.

Its shell steps are run as GitHub runs them (``bash --noprofile --norc -eo pipefail``, in order, a
failed step skipping the steps that do not ask for ``!cancelled()``), in a project made by
``convy init`` that stands for the repository's checkout. What is real: every ``run:`` script as
the file holds it, the ``convy`` command of this environment, bash, find, comm, cp. What is stood
in: ``actions/checkout`` (the project is the workspace), ``actions/setup-python`` (this
environment), ``python -m pip`` (a script on PATH that records its arguments, nothing installed;
any other ``python`` is this Python), ``$GITHUB_OUTPUT`` and ``$GITHUB_STEP_SUMMARY`` (files), ``${{ ... }}`` expressions
(the values a pull request or a push would give), the steps' ``if:`` conditions (read term by term
for those two events), ``gh`` (a script on PATH that records its arguments, lists the runs it is
told of or fails as on a repository whose base branch has no such workflow, downloads a run's
artifact as a copy of a folder the workflow uploaded on an earlier push, and finds the comment to
update when told of one), and the ``uses:`` upload and JUnit steps (their output lists the files
they would take, or warns that there is none).

Run as a script it plays the three cases of issue 24's closing note and prints each step's exit
code and last lines: ``PYTHONPATH=src:tests .venv/bin/python -m support.workflowjob``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import yaml

from support.fakeproject import GREEN, Greens
from support.process import run_convy

BIN = Path(sys.executable).parent
CONVY = BIN / "convy"  # the venv's, as support.process runs it
WORKFLOW = Path(".github/workflows/convy.yml")
# The variables a developer's shell may hold that would give the template's models a gateway.
GATEWAY = ("GATEWAY_URL", "GATEWAY_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY", "USER_MODEL", "JUDGE_MODEL", "AGENT_MODEL")
BASE_RUN_ID = "4242"

# Stands in for GitHub's CLI: each call's arguments as a JSON line in $GH_CALLS. `run list` prints
# the ids in $GH_RUNS, one a line, or, when that file is not there, fails as gh does on a
# repository whose base branch has no workflow of that name; `run download` copies
# $GH_ARTIFACTS/<id> into --dir, or fails as for an artifact that expired; `api` on the comments
# finds the id in $GH_COMMENT when that file is there, else none.
GH = f"""#!{sys.executable}
import json, os, shutil, sys
arguments = sys.argv[1:]
with open(os.environ["GH_CALLS"], "a") as calls:
    calls.write(json.dumps(arguments) + "\\n")
if arguments[:2] == ["run", "list"]:
    if not os.path.exists(os.environ["GH_RUNS"]):
        sys.exit("could not find any workflows named convy.yml")
    print(open(os.environ["GH_RUNS"]).read(), end="")
elif arguments[:2] == ["run", "download"]:
    artifact = os.path.join(os.environ["GH_ARTIFACTS"], arguments[2])
    if not os.path.isdir(artifact):
        sys.exit("no valid artifacts found to download")
    shutil.copytree(artifact, arguments[arguments.index("--dir") + 1], dirs_exist_ok=True)
elif arguments[:2] == ["api", "--paginate"] and os.path.exists(os.environ["GH_COMMENT"]):
    print(open(os.environ["GH_COMMENT"]).read())
"""

# Stands in for the runner's Python: `python -m pip` only records its arguments as a JSON line in
# $PIP_CALLS (nothing is installed); anything else is this Python.
PYTHON = f"""#!{sys.executable}
import json, os, sys
if sys.argv[1:3] != ["-m", "pip"]:
    os.execv({sys.executable!r}, [{sys.executable!r}, *sys.argv[1:]])
with open(os.environ["PIP_CALLS"], "a") as calls:
    calls.write(json.dumps(sys.argv[1:]) + "\\n")
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
    return run_convy(folder, *arguments, env=clean(), timeout=120)


class Step(msgspec.Struct, frozen=True):
    """What one step did: its exit code, and what it printed (stdout, then stderr)."""

    code: int
    printed: str = ""

    def last(self, lines: int = 6) -> list[str]:
        return self.printed.rstrip("\n").splitlines()[-lines:]


class Job(msgspec.Struct, frozen=True):
    """The workflow's job, played on this machine as the event ``event`` would play it."""

    workflow: dict[str, Any]
    workspace: Path
    stand_ins: Path
    event: str  # "pull_request" or "push"
    fork: bool = False  # a pull request from a fork: no secrets, a read-only token
    base_ref: str = "main"  # the branch the pull request is to be merged into
    against: str = ""  # the repository variable CONVY_AGAINST ("" when not set)
    settings: dict[str, str] = {}  # CONVY_ variables of the job's environment, as a repository might set

    def condition(self, text: str, failed: bool) -> bool:
        """A step's ``if:``, each ``&&`` term read as GitHub would for this event (a term this
        reading does not know fails the test, so a new condition is never guessed)."""
        terms = [term.strip() for term in text.removeprefix("${{").removesuffix("}}").split("&&")]
        known = {
            "!cancelled()": True,
            "github.event_name == 'pull_request'": self.event == "pull_request",
            "github.event.pull_request.head.repo.full_name == github.repository": not self.fork,
        }
        if not failed or "!cancelled()" in terms:
            return all(known[term] for term in terms)
        return False

    def value(self, text: str, outputs: dict[str, dict[str, str]]) -> str:
        """``text`` with its ``${{ ... }}`` expressions given what GitHub would give them."""
        given = {
            "github.token": "stand-in-token",
            "github.base_ref": self.base_ref,
            "github.event.pull_request.number": "7",
            "vars.CONVY_AGAINST || 'false'": self.against or "false",
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

    def played(self) -> tuple[dict[str, Step], dict[str, dict[str, str]]]:
        """Each step by its name (a skipped step is absent; a ``uses:`` step is 0 when what it
        uploads or publishes is there), and the outputs of the steps by id."""
        job = self.workflow["jobs"]["convy"]
        outputs: dict[str, dict[str, str]] = {}
        steps: dict[str, Step] = {}
        failed = False
        summary = self.stand_ins / "step-summary.md"
        for number, step in enumerate(job["steps"]):
            name = step.get("name", step.get("uses", ""))
            if "if" in step and not self.condition(str(step["if"]), failed):
                continue
            if failed and "if" not in step:  # GitHub's default condition, success()
                continue
            if "uses" in step:
                steps[name] = self.used(step, outputs)
                continue
            environment = clean() | {
                "PATH": f"{self.stand_ins}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}",
                "GITHUB_OUTPUT": str(self.stand_ins / f"output-{number}"),
                "GITHUB_STEP_SUMMARY": str(summary),
                "GITHUB_REPOSITORY": "owner/repository",
                "GH_CALLS": str(self.stand_ins / "gh-calls.jsonl"),
                "GH_RUNS": str(self.stand_ins / "runs"),
                "GH_ARTIFACTS": str(self.stand_ins / "artifacts"),
                "GH_COMMENT": str(self.stand_ins / "comment-id"),
                "PIP_CALLS": str(self.stand_ins / "pip-calls.jsonl"),
            }
            for key, text in {**job.get("env", {}), **step.get("env", {})}.items():
                environment[key] = self.value(str(text), outputs)
            environment |= self.settings
            script = self.stand_ins / f"step-{number}.sh"
            script.write_text(step["run"])
            done = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=self.workspace,
                env=environment,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=300,
            )
            steps[name] = Step(done.returncode, done.stdout)
            failed = failed or done.returncode != 0
            output = self.stand_ins / f"output-{number}"
            if "id" in step and output.exists():
                outputs[step["id"]] = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        if steps.get("Pass or fail", Step(1)).code == 0:
            self.held()
        return steps, outputs

    def held(self) -> None:
        """The property of issue 24 for a job that passed: it played a run, and every run it
        played judged an attempt and met the project's pass rule, as `convy report` reads it back
        (``fakeproject.Greens``, which the suite's session also checks)."""
        listed = (self.workspace / self.workflow["jobs"]["convy"]["env"]["OUT"] / "runs.txt").read_text().split()
        runs = tuple((self.workspace / Path(path).parent, f"the workflow's job on {self.event}") for path in listed)
        assert runs, "the job passed, but it played no run"
        wrong = Greens(runs).wrong()
        assert not wrong, "\n".join(wrong)
        GREEN.extend(runs)

    def used(self, step: dict[str, Any], outputs: dict[str, dict[str, str]]) -> Step:
        """A ``uses:`` step stood in for. The upload and JUnit steps pass with a warning when
        there is no file to take, as theirs do when set as this workflow sets them
        (``if-no-files-found: warn``; ``require_tests`` left false)."""
        match step["uses"].split("@")[0]:
            case "actions/checkout" | "actions/setup-python":
                return Step(0)
            case "actions/upload-artifact":
                assert step["with"]["if-no-files-found"] == "warn"
                paths = self.value(step["with"]["path"], outputs).split()
            case "mikepenz/action-junit-report":
                assert step["with"].get("require_tests", False) is False
                paths = [self.value(step["with"]["report_paths"], outputs)]
            case other:
                raise AssertionError(f"no stand-in for {other}")
        found = sorted(str(hit.relative_to(self.workspace)) for path in paths for hit in self.workspace.glob(path.removeprefix("./")))
        return Step(0, "\n".join(found) if found else f"warning: no files found for {' '.join(paths)}")

def workflow(project: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((project / WORKFLOW).read_text())
    return loaded


def made(folder: Path) -> Path:
    """A project by ``convy init`` with the workflow, cut to what plays and passes with no model:
    the scenarios that need one, the agent on the gateway and the demo's two deliberate failures
    are taken out (a test that wants them puts them back)."""
    assert convy(folder.parent, "init", str(folder)).returncode == 0
    assert convy(folder, "init", "--ci", "github").returncode == 0
    (folder / "agents" / "assistant.py").unlink()
    for scenario in ("orders/impatient", "orders/status", "refunds/upset-customer", "orders/late", "refunds/in-transit"):
        (folder / "scenarios" / f"{scenario}.yaml").unlink()
    return folder


def stand_ins(folder: Path) -> Path:
    folder.mkdir()
    for name, text in (("gh", GH), ("python", PYTHON)):
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)
    return folder


def pushed(project: Path, stand: Path, run: str = BASE_RUN_ID) -> None:
    """The workflow played for a push to the default branch, its run kept as the artifact of run
    ``run`` that the next pull request downloads, and the workspace then as a fresh checkout."""
    steps, _ = Job(workflow(project), project, stand, "push").played()
    assert steps["Play the scenarios"].code == 0, steps["Play the scenarios"].printed
    assert steps["Pass or fail"].code == 0
    assert "Download the base branch's last run" not in steps
    shutil.copytree(project / "convy-ci" / "run", stand / "artifacts" / run)
    with open(stand / "runs", "a") as runs:
        runs.write(run + "\n")
    fresh(project, stand)


def fresh(project: Path, stand: Path) -> None:
    """The workspace as a new checkout, and the job's files as on a new runner."""
    for folder in (project / "results", project / "convy-ci"):
        shutil.rmtree(folder, ignore_errors=True)
    for name in ("step-summary.md", "gh-calls.jsonl", "pip-calls.jsonl"):
        (stand / name).unlink(missing_ok=True)


def first_pull_request(root: Path) -> tuple[dict[str, Step], Path]:
    """The pull request that adds the workflow: the base branch has never played it."""
    project = made(root / "repository")
    stand = stand_ins(root / "stand-ins")
    steps, _ = Job(workflow(project), project, stand, "pull_request").played()
    return steps, stand


def new_agent_and_a_broken_one(root: Path) -> tuple[dict[str, Step], Path]:
    """A pull request that adds an agent (``concierge``, no base run) and breaks ``shop``."""
    project = made(root / "repository")
    stand = stand_ins(root / "stand-ins")
    pushed(project, stand)
    shutil.copy(project / "agents" / "shop.py", project / "agents" / "concierge.py")
    with open(project / "agents" / "shop.py", "a") as file:
        file.write(BROKEN)
    steps, _ = Job(workflow(project), project, stand, "pull_request").played()
    return steps, stand


def broken_project(root: Path) -> tuple[dict[str, Step], Path]:
    """A pull request whose scenario file ``convy check`` refuses."""
    project = made(root / "repository")
    stand = stand_ins(root / "stand-ins")
    pushed(project, stand)
    with open(project / "scenarios" / "off-topic.yaml", "a") as file:
        file.write("judge: [\n")
    steps, _ = Job(workflow(project), project, stand, "pull_request").played()
    return steps, stand


def main() -> None:
    """Each case's steps: exit code and last lines, then the comment it would post."""
    for case in (first_pull_request, new_agent_and_a_broken_one, broken_project):
        with tempfile.TemporaryDirectory() as folder:
            steps, stand = case(Path(folder))
            print(f"=== {case.__name__.replace('_', ' ')}: {(case.__doc__ or '').strip()}")
            for name, step in steps.items():
                print(f"--- {name}: exit {step.code}")
                for line in step.last(3):
                    print(f"    {line}")
            comment = (stand.parent / "repository" / "convy-ci" / "comment.md").read_text().splitlines()
            print(f"--- the comment ({len(comment)} lines; headings and the lines under them):")
            for number, line in enumerate(comment):
                if line.startswith(("#", "**", "    ", "Not compared", "No run")) or (number and comment[number - 1].startswith("#")):
                    print(f"    {line}")


if __name__ == "__main__":
    main()
