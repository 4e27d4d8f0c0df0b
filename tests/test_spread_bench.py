"""How a spread run hands out its attempts (found with ``bench/spread.py``): on a real Ray the run
starts for itself, a run with fewer attempts than one worker's feeders is played by every worker,
not by the first alone. The agent answers with the process it runs in, so each recorded attempt
tells which worker played it."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import msgspec
import pytest

pytest.importorskip("ray", reason="Ray is an optional extra (pip install 'convy[ray]'); not installed here")

from convy.scenario import Outcome  # noqa: E402

AGENT = """
import os

from convy import Answer
from convy.fakes import FakeAgent

agent = FakeAgent(lambda message: Answer(f"process {os.getpid()}"))
"""

MODELS = """
from convy import Models

models = Models()
"""


def test_a_run_of_fewer_attempts_than_one_workers_feeders_is_played_by_both_workers(tmp_path: Path) -> None:
    # 4 attempts; agent_places 4 and judge_places 8 split between 2 workers: 2 + 4 feeders each,
    # so the first worker's feeders alone could take every attempt.
    project = tmp_path / "project"
    (project / "agents").mkdir(parents=True)
    (project / "scenarios").mkdir()
    (project / "agents" / "bot.py").write_text(AGENT)
    (project / "models.py").write_text(MODELS)
    for name in ("greet", "thanks"):
        (project / "scenarios" / f"{name}.yaml").write_text(
            f"id: {name}\nscript:\n  - Hello from {name}.\njudge:\n  - check:\n      said: process\n"
        )
    (project / "pyproject.toml").write_text("[tool.convy]\nattempts = 2\nagent_places = 4\njudge_places = 8\n")

    ran = subprocess.run(
        [sys.executable, "-m", "convy", "-C", str(project), "run", "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert ran.returncode == 0, ran.stdout + ran.stderr
    (run,) = (project / "results" / "bot").iterdir()
    outcomes = msgspec.json.Decoder(Outcome).decode_lines((run / "attempts.jsonl").read_bytes())
    assert sorted((outcome.scenario, outcome.attempt) for outcome in outcomes) == [
        ("greet", 1), ("greet", 2), ("thanks", 1), ("thanks", 2)
    ]
    players = Counter(outcome.transcript.turns[0].answer.text for outcome in outcomes)  # type: ignore[union-attr]
    assert sorted(players.values()) == [2, 2], players
