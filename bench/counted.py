"""Benchmark of what summing a run holds: its attempts counted in one pass (``counted.Counted``)
against every outcome read back and summed (``report.Summary``), per attempt, at two sizes.

Runs like real ones (bench/pages.py's ``Played``: varied text, tool calls, usage and costs,
claims and checks) are played once with instant fakes, ``--scenarios`` (10) scenarios, at each
of ``--sizes`` (1,000 and 4,000 attempts in all). Each case then runs in a child process of its
own, on the same folders, and prints its peak of Python allocations (``tracemalloc``), its peak
resident memory (``VmHWM``, the interpreter and imports included) and its CPU time; the
slope is what one more attempt adds between the two sizes, the figure that says whether memory
is flat:

- ``listing``: what the index does for a run whose ``summary.json`` is missing or stale
  (``Listing.one``): with ``--before SRC`` (``git archive 23e6b8f src``), the same call in the
  base convy, which read the run whole and summed it, side by side;
- ``counted``: ``Counted.of`` and ``Totals.counted`` alone;
- ``held``: ``Summary(Runs.one(folder)).totals()``, every outcome held;
- ``report``: ``convy report``'s way: the run read by ``Runs.one`` (unsaid, ``Runs(unsaid=True)``,
  in a convy that has it; whole before), ``Summary``, its verdict and its report page
  (``ReportPage.parts``);
- ``end``: what ``convy run`` does at its end: the run read back unsaid (``RunJournal.unsaid``:
  numbers and claims, not the dialogues' words; since the streamed summary, only where each line
  begins, ``placed.Placed``), summed, its verdict, causes and totals, and its report page, whose
  dialogues are read again from their lines one at a time (``Summary.said``);
  in a convy without ``unsaid`` (``--before``), the run read back whole, as its end did.

``--before SRC`` measures ``listing``, ``report`` and ``end`` with that convy too, side by side.

The totals each case finds are printed as a digest: the cases agree when their digests do.

    .venv/bin/python bench/counted.py
    .venv/bin/python bench/counted.py --sizes 1000 4000 --before /tmp/summary-before/src
    .venv/bin/python bench/counted.py --sizes 2000 20000 --before /tmp/main-before/src   # the run's end, before and after
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
CASES = ("listing", "counted", "held", "report", "end")
BEFORE = ("listing", "report", "end")  # the cases measured with --before too


def child(case: str, folder: Path) -> None:
    """One case, measured in this process; its figures printed as one line of JSON."""
    import msgspec

    from convy.index import Listing
    from convy.report import Summary
    from convy.runs import Read, Runs
    from convy.storage import RunJournal

    spec = RunJournal(folder).run().spec
    results = folder.parent.parent
    (folder / "summary.json").unlink(missing_ok=True)
    tracemalloc.start()
    started = time.process_time()
    match case:
        case "listing":
            listed = Listing(results).one(folder)
            totals = getattr(listed, "totals", None)
            (folder / "summary.json").unlink(missing_ok=True)
        case "counted":
            from convy.counted import Counted
            from convy.totals import Totals

            totals = Totals.counted(Counted.of(folder, spec))
        case "held":
            read = Runs(results).one(folder)
            assert isinstance(read, Read)
            totals = Summary(read).totals()
        case "report":
            from convy.page import ReportPage

            runs = Runs(results, True) if "unsaid" in Runs.__struct_fields__ else Runs(results)
            read = runs.one(folder)
            assert isinstance(read, Read)
            summary = Summary(read)
            summary.verdict()
            for _ in ReportPage(summary).parts():
                pass
            totals = summary.totals()
        case "end":
            from convy.page import ReportPage

            journal = RunJournal(folder)
            unsaid = getattr(journal, "unsaid", None)
            kept = journal.kept(spec) if unsaid is None else unsaid(spec)
            read = Read(folder, journal.run(), kept.outcomes, kept.broken, False)
            # A convy whose Read held the lines' places apart (``at``) is given them; since the
            # streamed summary, the outcomes unsaid are those places (``placed.Placed``).
            placed = unsaid is not None and "at" in Read.__struct_fields__
            summary = Summary(msgspec.structs.replace(read, at=kept.at) if placed else read)
            summary.verdict()
            summary.breakdown()
            for _ in ReportPage(summary).parts():
                pass
            totals = summary.totals()
    cpu = time.process_time() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    digest = hashlib.sha256(msgspec.json.encode(totals)).hexdigest()[:12]
    # VmHWM, not ``ru_maxrss``: Linux carries a process's ``ru_maxrss`` across fork and exec, so a
    # child of this script, which played the runs, would start at the script's own peak.
    status = Path("/proc/self/status").read_text()
    rss = int(status.split("VmHWM:", 1)[1].split()[0]) * 1024
    print(json.dumps({"peak": peak, "rss": rss, "cpu": cpu, "digest": digest}))


def measured(case: str, folder: Path, src: Path) -> dict[str, float | str]:
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{HERE}"}
    done = subprocess.run(
        [sys.executable, __file__, "--child", case, str(folder)], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(f"{case} failed:\n{done.stderr}")
    found: dict[str, float | str] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs=2, default=(1000, 4000))
    parser.add_argument("--scenarios", type=int, default=10)
    parser.add_argument("--before", type=Path, help="a base convy's src (git archive 031b2d4 src: /tmp/main-before/src)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.child[0], Path(options.child[1]))
        return
    sys.path[:0] = [str(SRC), str(HERE)]
    from pages import Played

    print(f"load average {os.getloadavg()[0]:.2f}; {options.scenarios} scenarios; sizes {options.sizes}")
    sides = [("after", SRC)] + ([("before", options.before)] if options.before else [])
    with tempfile.TemporaryDirectory(prefix="convy-counted-") as temporary:
        folders: dict[int, Path] = {}
        for size in options.sizes:
            per = max(1, size // options.scenarios)
            folders[size] = Played(options.scenarios, per, f"run-{size}").play(Path(temporary) / f"p{size}" / "results", 1)
        rows: list[tuple[str, str, dict[int, dict[str, float | str]]]] = []
        for case in CASES:
            for side, src in sides:
                if side == "before" and case not in BEFORE:
                    continue
                rows.append((case, side, {size: measured(case, folders[size], src) for size in options.sizes}))
        small, large = options.sizes
        attempts = {size: (size // options.scenarios) * options.scenarios for size in options.sizes}
        span = attempts[large] - attempts[small]
        print(
            f"{'case':<9}{'side':<8}{'peak ' + str(small):>12}{'peak ' + str(large):>12}{'B/attempt':>11}"
            f"{'rss ' + str(small):>11}{'rss ' + str(large):>11}{'rss B/att':>11}{'cpu us/att':>12}  digest"
        )
        for case, side, figures in rows:
            one, two = figures[small], figures[large]
            slope = (float(two["peak"]) - float(one["peak"])) / span
            rss_slope = (float(two["rss"]) - float(one["rss"])) / span
            cpu = float(two["cpu"]) / attempts[large] * 1e6
            print(
                f"{case:<9}{side:<8}{float(one['peak']) / 1e6:>10.1f}MB{float(two['peak']) / 1e6:>10.1f}MB{slope:>11.0f}"
                f"{float(one['rss']) / 1e6:>9.1f}MB{float(two['rss']) / 1e6:>9.1f}MB{rss_slope:>11.0f}{cpu:>12.0f}  "
                f"{one['digest']} {two['digest']}"
            )


if __name__ == "__main__":
    main()
