"""Where ``convy run``'s memory grows with its attempts, phase by phase (issue 27, item 6): the
play, the read back (``RunJournal.unsaid``), the digest (``digest.Digest.of``), what is summed
after it, the report's writing (``Project.reported``), ``summary.json`` and the index.

``bench/whole.py --slope`` gives the whole process's peak at two sizes; this says which phase
holds it and what grows there. ``bench/whole.py``'s project (instant fakes, 10 scenarios, 100
places) is played at ``--sizes`` attempts a scenario, each ``convy run`` in a child process that
runs convy's own ``main`` with a hook on each phase's entry:

- resident (always): the most ``VmRSS`` seen in each phase, sampled every 10 ms, and ``VmHWM``
  as each phase ends (the process's peak so far: the phase whose end raises it holds the peak);
- ``--traced``, in another child: Python's allocations (``tracemalloc``) at their peak in each
  phase (``reset_peak`` as each begins) and a snapshot as each ends, and the snapshots of the two
  sizes diffed, grouped by traceback (the convy frames of each shown): what one more attempt
  adds to what each phase leaves held, by where it was allocated. Slow (tracemalloc keeps
  ``--frames`` frames of every allocation): minutes at 20,000 attempts;
- with ``--malloc``, in the resident child: what glibc's allocator holds as each phase ends
  (``mallinfo2``, every arena: the bytes in use, and those freed but kept), which tells memory
  held by objects, Python's or Ray's C++, from memory freed and kept by the allocator.

    .venv/bin/python bench/phases.py                                  # 2,000 and 20,000 attempts, resident
    .venv/bin/python bench/phases.py --sizes 200 2000 --traced --src /tmp/before/src
    .venv/bin/python bench/phases.py --auto                           # of --attempts auto, as whole.py --auto plays it
    .venv/bin/python bench/phases.py --workers 2 --sizes 200 800      # the driver of a run spread on 2 Ray workers

With ``--workers N`` the run is spread over N Ray workers (``convy run --workers N``) and what is
measured is its driver, the one process that records the attempts and writes the report: the
workers are processes of Ray's, neither sampled nor traced.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


class _Mallinfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2``: what its allocator holds, summed over every arena."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")
    ]


def malloc() -> tuple[int, int]:
    """The bytes glibc's allocator has in use (mmapped blocks included) and those freed but kept
    in its arenas; (0, 0) where there is no ``mallinfo2`` (not glibc, or older than 2.33)."""
    try:
        function = ctypes.CDLL(None).mallinfo2
    except AttributeError:
        return 0, 0
    function.restype = _Mallinfo2
    info = function()
    return info.uordblks + info.hblkhd, info.fordblks


def child(mode: str, out: Path, argv: list[str], frames: int) -> None:
    """Run ``convy argv`` here, measuring each phase (``mode``: ``rss``, ``malloc`` — ``rss`` and
    the allocator's figures — or ``traced``) into ``out``."""
    import tracemalloc

    if mode == "traced":
        tracemalloc.start(frames)
    import convy.digest
    import convy.index
    import convy.project
    import convy.storage
    from convy.cli import main

    phase = ["start"]
    found: dict[str, int] = {}
    snapshots: dict[str, tracemalloc.Snapshot] = {}
    stop = threading.Event()

    def status(name: str) -> int:
        with open("/proc/self/status") as file:
            return next(int(line.split()[1]) * 1024 for line in file if line.startswith(name))

    def sampled() -> None:
        while not stop.wait(0.01):
            found[phase[0]] = max(found.get(phase[0], 0), status("VmRSS:"))

    def switched(to: str) -> None:
        if mode == "traced":
            found[phase[0]] = tracemalloc.get_traced_memory()[1]
            snapshots[phase[0]] = tracemalloc.take_snapshot()
            tracemalloc.reset_peak()
        else:
            found[phase[0]] = max(found.get(phase[0], 0), status("VmRSS:"))
            found[phase[0] + " hwm"] = status("VmHWM:")
            if mode == "malloc":
                found[phase[0] + " malloc used"], found[phase[0] + " malloc free"] = malloc()
        phase[0] = to

    def entered(owner: object, name: str, to: str, after: str | None = None) -> None:
        import inspect

        original = inspect.getattr_static(owner, name)
        function = original.__func__ if isinstance(original, (staticmethod, classmethod)) else original
        if inspect.iscoroutinefunction(function):

            async def hooked(*args: object, **named: object) -> object:
                switched(to)
                return await function(*args, **named)

        else:

            def hooked(*args: object, **named: object) -> object:  # type: ignore[misc]
                switched(to)
                done = function(*args, **named)
                if after is not None:
                    switched(after)
                return done

        kind = type(original) if isinstance(original, (staticmethod, classmethod)) else None
        setattr(owner, name, kind(hooked) if kind is not None else hooked)

    entered(convy.storage.RunJournal, "play", "play")
    entered(convy.storage.RunJournal, "unsaid", "read back")
    entered(convy.digest.Digest, "of", "digest", after="summed")
    entered(convy.project.Project, "reported", "report")
    entered(convy.index.Listing, "kept", "summary.json")
    entered(convy.project.Project, "indexed", "index")
    if mode in ("rss", "malloc"):
        threading.Thread(target=sampled, daemon=True).start()
    main(argv)
    switched("exit")
    stop.set()
    (out / f"{'rss' if mode == 'malloc' else mode}.json").write_text(json.dumps(found))
    if mode == "traced":
        (out / "snapshots.pickle").write_bytes(pickle.dumps(snapshots))


def diffed(small: Path, few: int, large: Path, many: int, top: int) -> None:
    """Each phase's snapshot at both sizes, diffed: what one more attempt adds, by traceback."""
    import tracemalloc

    left_out = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib._bootstrap*>")]
    before, after = (pickle.loads((where / "snapshots.pickle").read_bytes()) for where in (small, large))
    for phase in after:
        if phase not in before:
            continue
        stats = after[phase].filter_traces(left_out).compare_to(before[phase].filter_traces(left_out), "traceback")
        grown = sum(stat.size_diff for stat in stats)
        print(f"\n  held as {phase} ends: {grown / (many - few):.1f} B/attempt more")
        for stat in stats[:top]:
            if abs(stat.size_diff) / (many - few) < 1:
                break
            where = [f"{frame.filename.split('convy/')[-1]}:{frame.lineno}" for frame in reversed(stat.traceback) if "convy/" in frame.filename][:4]
            print(f"    {stat.size_diff / (many - few):8.1f} B/attempt  {stat.count_diff:+8d} blocks  {' < '.join(where)}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, mode, out, frames, *argv = sys.argv
        child(mode, Path(out), argv, int(frames))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs=2, default=[200, 2000], metavar=("FEW", "MANY"), help="attempts a scenario")
    parser.add_argument("--src", type=Path, default=HERE / "src", help="the convy to measure (its src folder)")
    parser.add_argument("--traced", action="store_true", help="also tracemalloc's peaks and snapshots, diffed between the sizes")
    parser.add_argument("--auto", action="store_true", help="play it as --attempts auto, as bench/whole.py --auto does")
    parser.add_argument("--workers", type=int, default=0, help="spread the run over this many Ray workers, and measure its driver")
    parser.add_argument("--malloc", action="store_true", help="also glibc's allocator's bytes in use and kept free as each phase ends")
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--top", type=int, default=12)
    options = parser.parse_args()
    sys.path.insert(0, str(HERE / "bench"))
    from whole import Made

    root = Path(tempfile.mkdtemp(prefix="convy-phases-"))
    env = {**os.environ, "PYTHONPATH": str(options.src), "NO_COLOR": "1", "BENCH_TEXT": "plain", "RAY_USAGE_STATS_ENABLED": "0"}
    try:
        found: dict[tuple[str, int], dict[str, int]] = {}
        for attempts in options.sizes:
            project = Made(10, attempts, 100).write(root / f"p{attempts}")
            for mode in ("rss", "traced") if options.traced else ("rss",):
                out = root / f"{mode}{attempts}"
                out.mkdir()
                auto = ["--attempts", "auto", "--min-attempts", str(min(5, attempts)), "--max-attempts", str(attempts), "--target-width", "0.001"]
                run = ["run", *(auto if options.auto else []), *(["--workers", str(options.workers)] if options.workers else [])]
                told = "malloc" if mode == "rss" and options.malloc else mode
                command = [sys.executable, __file__, "--child", told, str(out), str(options.frames), "-C", str(project), *run]
                subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=True)
                found[mode, attempts] = json.loads((out / f"{mode}.json").read_text())
        few, many = (10 * attempts for attempts in options.sizes)
        for mode in ("rss", "traced") if options.traced else ("rss",):
            said = "resident (most in the phase; hwm: the process's peak as it ends)" if mode == "rss" else "traced (peak in the phase)"
            print(f"{said}, MiB at {few:,} and {many:,} attempts, and B/attempt")
            small, large = found[mode, options.sizes[0]], found[mode, options.sizes[1]]
            for phase, value in large.items():
                if phase in small:
                    print(f"  {phase:20} {small[phase] / 2**20:8.1f} {value / 2**20:8.1f} {(value - small[phase]) / (many - few):8.0f}")
        if options.traced:
            diffed(root / f"traced{options.sizes[0]}", few, root / f"traced{options.sizes[1]}", many, options.top)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
