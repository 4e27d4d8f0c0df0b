"""What the virtual-time benches (``bare_virtual.py``, ``bare_rates.py``, ``small_limits.py``,
``rpm_window.py``) share: convy's source to play, this tree's or the one ``--before`` names, and the
tests' support and unit modules they play it with (the virtual clock, the stand-in's limits, the
project's attempts)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def played_from(before: str | None) -> None:
    """Put convy's source at ``before`` (or this tree's) and the tests' modules first on the path."""
    sys.path[:0] = [before or str(ROOT / "src"), str(ROOT / "tests"), str(ROOT / "tests" / "unit")]
