"""The driver's memory slope of the commands that read or play a run's attempts besides ``convy
run`` (issue 27, item 6), beside a base convy, in the same script: ``convy rejudge`` of a finished
run, ``convy resume`` of that run cut 10 attempts short (then marked interrupted), and ``convy run
--attempts auto`` (5 to the most a scenario, a target width no scenario reaches: every scenario
plays its most, in rounds of 5, 10, 20, ... attempts).

The project is ``bench/whole.py``'s (instant fakes, 10 scenarios, 100 places), at ``--sizes``
attempts a scenario (200 and 1,000 by default). Each case is the real command in a child process,
measured twice: its peak resident size (``ru_maxrss``, from ``os.wait4``) and, in another child,
the peak of Python's allocations (``tracemalloc``, started before convy is imported). Printed for
each side, each case and each measure: the peaks at both sizes and what one more attempt adds.

    .venv/bin/python bench/slopes.py --before /tmp/main-before/src
    .venv/bin/python bench/slopes.py --sizes 50 200 --cases auto --before /tmp/main-before/src
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from whole import Made, header

HERE = Path(__file__).resolve().parent.parent
CASES = ("rejudge", "resume", "auto")

TRACED = """
import sys, tracemalloc
tracemalloc.start()
from convy.cli import main
code = main(sys.argv[1:])
print(f"traced {tracemalloc.get_traced_memory()[1]}", file=sys.stderr)
raise SystemExit(code)
"""


def measured(src: Path, traced: bool, argv: list[str]) -> float:
    """The child's peak in MiB: resident, or Python's allocations (``traced``)."""
    env = {**os.environ, "PYTHONPATH": str(src), "NO_COLOR": "1"}
    command = [sys.executable, "-c", TRACED, *argv] if traced else [sys.executable, "-m", "convy", *argv]
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(child.pid, 0)
        errors.seek(0)
        said = errors.read().decode()
    if os.waitstatus_to_exitcode(status) not in (0, 1, 3):
        raise SystemExit(f"{' '.join(argv)} exited {os.waitstatus_to_exitcode(status)}:\n{said[-3000:]}")
    if traced:
        return int(said.strip().splitlines()[-1].split()[1]) / (1024 * 1024)
    return usage.ru_maxrss / 1024


class Sized:
    """A project of ``attempts`` a scenario with one finished run, and that run cut short kept aside."""

    def __init__(self, root: Path, src: Path, attempts: int) -> None:
        self.attempts = attempts
        self.project = Made(10, attempts, 100).write(root / f"p{attempts}")
        env = {**os.environ, "PYTHONPATH": str(src), "NO_COLOR": "1"}
        subprocess.run([sys.executable, "-m", "convy", "-C", str(self.project), "run"], env=env, capture_output=True, check=False)
        (self.source,) = (path.name for path in (self.project / "results" / "shop").iterdir())
        self.aside = root / f"cut{attempts}"
        shutil.copytree(self.project / "results" / "shop" / self.source, self.aside)
        # Cut at the start of its tenth line from the end, read from there: this process stays
        # small, and its children (forked from it) start no larger than it (ru_maxrss counts that).
        with open(self.aside / "attempts.jsonl", "rb+") as file:
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - 4 * 1024 * 1024))
            tail = file.read()
            at = len(tail) - 1
            for _ in range(10):
                at = tail.rfind(b"\n", 0, at)
            file.truncate(size - len(tail) + at + 1)
        run = json.loads((self.aside / "run.json").read_bytes())
        run["spec"]["id"] = "cut"
        run["status"] = {"type": "interrupted", "started": run["status"]["started"], "ended": run["status"]["ended"]}
        (self.aside / "run.json").write_text(json.dumps(run))
        for name in ("report.html", "summary.json", "run.lock"):
            (self.aside / name).unlink(missing_ok=True)

    def argv(self, case: str) -> list[str]:
        match case:
            case "rejudge":
                return ["-C", str(self.project), "rejudge", self.source]
            case "resume":
                cut = self.project / "results" / "shop" / "cut"
                shutil.rmtree(cut, ignore_errors=True)
                shutil.copytree(self.aside, cut)
                return ["-C", str(self.project), "resume", "cut"]
            case _:
                most = str(self.attempts)
                return ["-C", str(self.project), "run", "--attempts", "auto", "--min-attempts", str(min(5, self.attempts)), "--max-attempts", most, "--target-width", "0.001"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs=2, default=[200, 1000], metavar=("FEW", "MANY"), help="attempts a scenario")
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--before", type=Path, required=True, help="the src folder of the base convy")
    options = parser.parse_args()
    header(options.before)
    sides = {"before": options.before, "this": HERE / "src"}
    root = Path(tempfile.mkdtemp(prefix="convy-slopes-"))
    try:
        sized = [Sized(root, HERE / "src", attempts) for attempts in options.sizes]
        found: dict[tuple[str, str, str, int], float] = {}
        for one in sized:
            for case in options.cases:
                for side, src in sides.items():  # side by side, size by size
                    for what in ("rss", "traced"):
                        found[case, side, what, one.attempts] = measured(src, what == "traced", one.argv(case))
        few, many = (10 * attempts for attempts in options.sizes)
        print(f"peak MiB at {few:,} and {many:,} attempts (10 scenarios), and what one more attempt adds to it")
        print(f"  {'':8} {'':7} {'':7} {f'{few:,}':>8} {f'{many:,}':>8} {'B/attempt':>10}")
        for case in options.cases:
            for what in ("rss", "traced"):
                for side in sides:
                    small, large = (found[case, side, what, attempts] for attempts in options.sizes)
                    slope = (large - small) * 1024 * 1024 / (many - few)
                    print(f"  {case:8} {what:7} {side:7} {small:8.1f} {large:8.1f} {slope:10.0f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
