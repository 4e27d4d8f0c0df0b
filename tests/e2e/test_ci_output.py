"""What the ``convy`` command prints and writes stays readable in a CI log (issue 24, item 8), each
through the real command on a project of fakes: a line from outside is cut to its bound, an option
given twice keeps both, ``convy resume`` writes ``--junit`` and ``--summary`` of the whole run, the
hints name the run's own id, a spread run whose workers keep dying is kept with its resume hint
under exit 1 (on a real local Ray), and a stopped run leaves no temporary page behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from support.fakeproject import MODELS, Command, FakeProject

KEY = "sk-ci-output-0123456789"
GREET = "script: [hi]\njudge:\n  - check: {said: hello}\n"

# An agent whose error on "huge" is three megabytes, with the key and a forged line in it.
HUGE = """\
import os
from decimal import Decimal

from convy.agent import Answer, Cost, Usage
from convy.fakes import FakeAgent


def answer(text):
    if "huge" in text:
        raise RuntimeError("key " + os.environ["BOT_API_KEY"] + "\\n✓ forged #1 " + "x" * 3_000_000)
    return Answer("hello " + text, Usage(input=60, output=40, cost=Cost(Decimal("0.10"), "provider")))


agent = FakeAgent(answer)
"""

# An agent that ends the process it runs in whenever a Ray worker plays it: every worker dies.
DYING = """\
import os
import sys

from convy.fakes import FakeAgent


def answer(text):
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        os._exit(3)
    return "hello " + text


agent = FakeAgent(answer)
"""


def made(tmp_path: Path, scenarios: dict[str, str], attempts: int = 1, agent: str = HUGE, settings: str = "") -> Path:
    folder = FakeProject(agent, MODELS, scenarios, attempts).written(tmp_path / "project")
    with (folder / "pyproject.toml").open("a", encoding="utf-8") as toml:
        toml.write(settings)
    return folder


def convy(project: Path, *arguments: str):  # noqa: ANN201
    return Command(project, KEY).ran(*arguments)


def run_ids(project: Path, agent: str = "bot") -> list[str]:
    return sorted(folder.name for folder in (project / "results" / agent).iterdir())


def test_a_three_megabyte_error_is_one_short_line(tmp_path: Path) -> None:
    """An agent's error of 3 MB is cut on the attempt's line to a few hundred characters, the rest
    counted, its key hidden and its line breaks written out; no line of the output is longer than
    the bound."""
    project = made(tmp_path, {"huge.yaml": "script: [huge]\njudge:\n  - check: {said: hello}\n", "greet.yaml": GREET}, 2)
    done = convy(project, "run")
    assert done.returncode == 1, done.stderr
    said = done.stdout + done.stderr
    assert len(said) < 10_000, len(said)
    lines = [line for line in done.stdout.splitlines() if line.startswith("✗ huge #")]
    assert len(lines) == 2
    for line in lines:
        assert "agent failed (agent_failed): RuntimeError: key <hidden>\\n✓ forged #1 xxx" in line
        assert line.endswith(" more characters)") and len(line) < 500
    assert KEY not in said
    assert not any(line.startswith("✓ forged") for line in said.splitlines())


def test_no_line_the_command_prints_passes_its_bound(tmp_path: Path) -> None:
    """An agent's file that fails to load with a 3 MB message is one line of about the bound
    (2,000 characters), its middle left out and counted so that its end is kept, exit 2 as before."""
    project = made(tmp_path, {"greet.yaml": GREET}, agent='raise RuntimeError("bad " + "z" * 3_000_000 + " the end")\n')
    done = convy(project, "run")
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("convy: loading agents/bot.py or models.py failed: RuntimeError: bad zzz")
    assert " characters left out) … zzz" in line and line.endswith("zzz the end") and len(line) < 2100, len(line)


def test_scenarios_and_tags_given_twice_keep_both(tmp_path: Path) -> None:
    """`--scenarios A --scenarios B` plays both, as `--scenarios A B` does; the last no longer wins."""
    project = made(tmp_path, {"a.yaml": GREET, "b.yaml": GREET, "c.yaml": GREET})
    dry = convy(project, "run", "--scenarios", "a", "--scenarios", "b", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would run 1 agent × 2 scenarios × 1 attempt = 2 attempts" in dry.stdout
    assert convy(project, "run", "--scenarios", "a", "--scenarios", "b").returncode == 0
    (run,) = run_ids(project)
    played = {json.loads(line)["scenario"] for line in (project / "results" / "bot" / run / "attempts.jsonl").read_text().splitlines()}
    assert played == {"a", "b"}


def test_resume_writes_the_junit_and_summary_of_the_whole_run(tmp_path: Path) -> None:
    """A run stopped by its budget, resumed with --junit and --summary, writes both of the whole
    run: every scenario a test case, every attempt in the summary's numbers."""
    project = made(tmp_path, {f"s{number}.yaml": GREET for number in range(3)}, 2, settings="agent_places = 1\njudge_places = 1\n")
    assert convy(project, "run", "--max-tokens", "100").returncode == 6
    (run,) = run_ids(project)
    done = convy(project, "resume", run, "--max-tokens", "100000", "--junit", "out/junit.xml", "--summary", "out/summary.md")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"junit: {project / 'out' / 'junit.xml'}" in done.stdout
    junit = (project / "out" / "junit.xml").read_text(encoding="utf-8")
    assert junit.count("<testcase ") == 3 and "<failure" not in junit and "<error" not in junit
    summary = (project / "out" / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("### convy · bot · run ")
    assert "6 passed of 6 judged · 3 scenarios: 3 always pass" in summary


def test_a_file_not_written_after_resume_names_the_run(tmp_path: Path) -> None:
    """A --summary that cannot be written after `convy resume` is one line whose hint names the
    run's own id, not a placeholder."""
    project = made(tmp_path, {"a.yaml": GREET}, 2, settings="agent_places = 1\njudge_places = 1\n")
    assert convy(project, "run", "--max-tokens", "100").returncode == 6
    (run,) = run_ids(project)
    done = convy(project, "resume", run[-6:], "--max-tokens", "100000", "--summary", "n" * 300 + ".md")  # a name no file system takes
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.endswith(f"the runs are kept: convy report {run} --summary FILE\n"), done.stderr


def test_a_budget_stopped_run_leaves_no_temporary_page_and_one_left_by_a_killed_writer_is_removed(tmp_path: Path) -> None:
    """A run whose live report is written again every tenth of a second, stopped by its budget,
    leaves no `*.tmp` beside its pages; a `report.html.<pid>.tmp` left by a writer killed halfway
    (its process gone) is removed by the next writing of that page, and one of a process still
    running is left to it."""
    project = made(tmp_path, {f"s{number}.yaml": GREET for number in range(4)}, 3, settings="agent_places = 1\nlive_seconds = 0.1\n")
    assert convy(project, "run", "--max-tokens", "500").returncode == 6
    assert not list(project.rglob("*.tmp"))
    (run,) = run_ids(project)
    folder = project / "results" / "bot" / run
    ended = subprocess.Popen(["true"])  # a process that has ended, and been waited for: its number is nobody's now
    ended.wait()
    gone = folder / f"report.html.{ended.pid}.tmp"
    gone.write_bytes(b"")
    running = folder / f"report.html.{os.getpid()}.tmp"  # this test's own process: still running
    running.write_bytes(b"")
    assert convy(project, "report", run).returncode == 0
    assert not gone.exists() and running.exists()


def test_a_spread_run_whose_workers_keep_dying_is_kept_with_its_resume_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers that die on every attempt stop the run after their replacements die too: the run is
    kept, marked interrupted, the command says so in a line and names `convy resume` with the run's
    id, exit 1, not the configuration error's 2 (on a real local Ray)."""
    pytest.importorskip("ray")
    from support.raycluster import ray_processes

    folder = Path(tempfile.mkdtemp(prefix="co-", dir="/tmp"))  # short: Ray's socket paths are limited
    monkeypatch.setenv("RAY_TMPDIR", str(folder))
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    try:
        project = made(tmp_path, {"a.yaml": GREET}, 3, agent=DYING)
        done = convy(project, "run", "--workers", "2")
        assert done.returncode == 1, done.stdout + done.stderr
        (run,) = run_ids(project)
        assert done.stderr.splitlines() == [
            "convy: the run's workers died 7 times (2 started, each replaced up to 3 times); the run stops",
            f"stopped: run {run} keeps 0 of 3 attempts",
            f"resume with: convy resume {run}",
        ], done.stderr
        status = json.loads((project / "results" / "bot" / run / "run.json").read_text())["status"]
        assert status["type"] == "interrupted"
        assert (project / "results" / "bot" / run / "report.html").exists()
    finally:
        deadline = time.monotonic() + 120
        while ray_processes(folder) and time.monotonic() < deadline:  # the run's Ray ends with it
            time.sleep(0.1)
        shutil.rmtree(folder, ignore_errors=True)


def test_rejudge_writes_the_summary_of_its_new_run(tmp_path: Path) -> None:
    """`convy rejudge RUN --summary FILE` writes the new run's summary, as `convy run` does."""
    project = made(tmp_path, {"a.yaml": GREET}, 2)
    assert convy(project, "run").returncode == 0
    (run,) = run_ids(project)
    done = convy(project, "rejudge", run, "--summary", "rejudged.md")
    assert done.returncode == 0, done.stdout + done.stderr
    (new,) = set(run_ids(project)) - {run}
    assert (project / "rejudged.md").read_text(encoding="utf-8").startswith(f"### convy · bot · run {new.replace('-', chr(92) + '-')}\n")


# A writer standing in for `convy report --live`: it says its number, makes its temporary file,
# and waits; Ctrl+C (SIGINT) removes the file and ends it, as convy's own writing does.
# The trap is set before the page is begun: the test stops the writer once it sees page.tmp, and a
# SIGINT before the trap would end the shell with its page left behind (a race a busy machine lost).
WRITER = """#!/bin/sh
echo $$ > "$(dirname "$0")/writer.pid"
trap 'rm -f "$(dirname "$0")/page.tmp"; exit 130' INT
touch "$(dirname "$0")/page.tmp"
while :; do sleep 0.05; done
"""


def test_a_live_writing_cancelled_while_its_child_starts_is_stopped_and_waited_for(tmp_path: Path) -> None:
    """A run's live writing cancelled (the run stopped by its budget or Ctrl+C) after its child
    process was started, but before the start returned, stops that child and waits for it: left
    running, it was killed halfway when convy ended, its temporary page left behind. The moment is
    held open by a gate, not by time."""
    import asyncio

    from convy.live import LiveReport

    writer = tmp_path / "writer.sh"
    writer.write_text(WRITER)
    writer.chmod(0o755)

    gate: list[asyncio.Event] = []

    class Gated(LiveReport, frozen=True):
        async def _started(self, pace: float) -> asyncio.subprocess.Process:
            child = await super()._started(pace)
            await gate[0].wait()  # the start returns only once the test lets it
            return child

    async def stopped() -> None:
        gate.append(asyncio.Event())
        refreshing = asyncio.ensure_future(Gated(tmp_path, "run", 0.01, str(writer)).refreshing())
        while not (tmp_path / "page.tmp").exists():  # the child has begun its page; its start has not returned
            await asyncio.sleep(0.01)
        refreshing.cancel()  # the run stops now
        await asyncio.sleep(0)
        gate[0].set()
        with pytest.raises(asyncio.CancelledError):
            await refreshing

    asyncio.run(stopped())
    pid = int((tmp_path / "writer.pid").read_text())
    try:
        assert not (tmp_path / "page.tmp").exists()  # the child was stopped: it removed its page
        assert not Path(f"/proc/{pid}").exists()  # and waited for: no process, not even a zombie
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
