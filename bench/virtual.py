"""What the virtual-time benches (``bare_virtual.py``, ``bare_rates.py``, ``small_limits.py``,
``rpm_window.py``) share: convy's source to play, this tree's or the one ``--before`` names, and the
tests' support and unit modules they play it with (the virtual clock, the stand-in's limits, the
project's attempts)."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def played_from(before: str | None) -> None:
    """Put convy's source at ``before`` (or this tree's) and the tests' modules first on the path."""
    sys.path[:0] = [before or str(ROOT / "src"), str(ROOT / "tests"), str(ROOT / "tests" / "unit")]


def summed(ways: list[tuple[float, int]]) -> tuple[float, float, str]:
    """Seeded ways' (wall, refusals) as a row prints them: the median wall, the worst, and each
    way's refusals in a line."""
    walls = [wall for wall, _ in ways]
    return statistics.median(walls), max(walls), " ".join(str(count) for _, count in ways)
