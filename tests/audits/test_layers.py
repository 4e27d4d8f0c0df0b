"""The layers of ``pyproject.toml``'s import-linter contracts hold: ``lint-imports`` finds no import,
at load time or inside a function, that points up a layer or across one (issue 28, item 4). And
it is a check that can fail: the same contract over a copy of the package with one import
pointing up is broken, and names it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).parent / "lint-imports"


def linted(source: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the project's contract, over the convy package found under ``source``."""
    environment = {**os.environ, "PYTHONPATH": str(source)}
    return subprocess.run(
        [str(LINT), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300,
    )


def test_no_import_points_up_a_layer() -> None:
    done = linted(ROOT / "src")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "convy's layers KEPT" in done.stdout
    assert "readers without the engine KEPT" in done.stdout
    assert "Contracts: 2 kept, 0 broken." in done.stdout


def test_an_import_inside_a_function_that_points_up_breaks_the_contract(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "src" / "convy", tmp_path / "convy", ignore=shutil.ignore_patterns("__pycache__", "template"))
    stats = tmp_path / "convy" / "stats.py"
    stats.write_text(stats.read_text(encoding="utf-8") + "\n\ndef _up() -> None:\n    from convy.cli import main  # noqa: F401\n", encoding="utf-8")
    done = linted(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "convy's layers BROKEN" in done.stdout
    assert "convy.stats is not allowed to import convy.cli" in done.stdout


def test_a_reader_that_loads_the_engine_through_another_module_breaks_the_contract(tmp_path: Path) -> None:
    """The readers (report, comparison, settings...) stand above the engine's layer, so the layers
    alone would let them import it: the second contract forbids it, even through a module between."""
    shutil.copytree(ROOT / "src" / "convy", tmp_path / "convy", ignore=shutil.ignore_patterns("__pycache__", "template"))
    records = tmp_path / "convy" / "records.py"
    records.write_text(records.read_text(encoding="utf-8") + "\n\ndef _engine() -> None:\n    from convy.bench import Bench  # noqa: F401\n", encoding="utf-8")
    done = linted(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "readers without the engine BROKEN" in done.stdout
    assert "convy.report is not allowed to import convy.bench" in done.stdout
