"""The ``convy`` command run as a user runs it: the venv's own binary, a process of its own in a
project's folder, written once for every test that runs it (each had its own before).

The environment is this process's without any ``CONVY_*`` variable: the settings of whoever runs
the suite must not change the project's own. A test that keeps more out (a gateway of the
machine's, Ray's address) names it; one that needs a stricter rule makes the environment itself.
"""

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

# The command installed beside the Python that runs the tests: the convy under test, as PYTHONPATH says.
CONVY = Path(sys.executable).with_name("convy")

# Seconds a command may take before the test gives up: a hang guard, far more than any needs under load.
DEADLINE = 300.0


def environment(without: Iterable[str] = (), **variables: str) -> dict[str, str]:
    """This process's variables but the ``CONVY_*`` and ``OTEL_*`` ones and those named in ``without``, then ``variables``."""
    left = set(without)
    # Nor OpenTelemetry's: a collector set where the suite runs would be sent every test's traces.
    kept = {name: value for name, value in os.environ.items() if not name.startswith(("CONVY_", "OTEL_")) and name not in left}
    return kept | variables


def run_convy(
    folder: Path, *arguments: str, env: Mapping[str, str] | None = None, timeout: float = DEADLINE, **options: Any
) -> subprocess.CompletedProcess[str]:
    """``convy ARGUMENTS`` run in ``folder`` to its end, nothing on its input, its output kept as text.
    ``env`` is ``environment()`` unless given; ``options`` go to ``subprocess.run`` (``preexec_fn``)."""
    return subprocess.run(
        [str(CONVY), *arguments], cwd=folder, env=environment() if env is None else dict(env),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, check=False, **options,
    )


def start_convy(folder: Path, *arguments: str, env: Mapping[str, str] | None = None, **options: Any) -> subprocess.Popen:
    """``convy ARGUMENTS`` started in ``folder`` and left running, nothing on its input; where its
    output goes is the caller's (``stdout``, ``stderr``: by default the test's own)."""
    return subprocess.Popen(
        [str(CONVY), *arguments], cwd=folder, env=environment() if env is None else dict(env),
        stdin=subprocess.DEVNULL, **options,
    )
