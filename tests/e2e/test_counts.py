"""Counts said in words: one scenario, one attempt, in the run's lines, the dry run and the Markdown
summary, through the real command."""

from __future__ import annotations

from pathlib import Path

from support.fakeproject import FakeProject
from test_exit_codes import AGENT, GREET, MODELS, convy


def test_one_scenario_and_one_attempt_are_said_in_the_singular(tmp_path: Path) -> None:
    """A project of one scenario played once says "1 scenario × 1 attempt" before it plays, "of 1 attempt" after, and "1 scenario:" in the summary; the dry run says it too. Two are still plural."""
    project = FakeProject(AGENT, MODELS, {"greet.yaml": GREET}, 1).written(tmp_path / "one")
    dry = convy(project, "run", "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "bot: 1 scenario × 1 attempt = 1 attempt" in dry.stdout
    assert "would run 1 agent × 1 scenario × 1 attempt = 1 attempt; nothing was sent" in dry.stdout
    done = convy(project, "run", "--summary", "summary.md")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("bot: 1 scenario × 1 attempt → "), done.stdout
    assert "bot: 1 passed, 0 failed, 0 not judged of 1 attempt · pass rate" in done.stdout
    summary = (project / "summary.md").read_text(encoding="utf-8")
    assert "· 1 scenario: 1 always pass" in summary, summary
    assert "scenarios" not in done.stdout.replace("(mean over scenarios)", ""), done.stdout
    two = FakeProject(AGENT, MODELS, {"greet.yaml": GREET, "again.yaml": GREET}, 2).written(tmp_path / "two")
    done = convy(two, "run", "--summary", "summary.md")
    assert done.stdout.startswith("bot: 2 scenarios × 2 attempts → "), done.stdout
    assert "of 4 attempts ·" in done.stdout
    assert "· 2 scenarios: 2 always pass" in (two / "summary.md").read_text(encoding="utf-8")
