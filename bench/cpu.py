"""Benchmark of the CPU a whole run's process takes, with instant fakes: convy's own bookkeeping.

The case is ``harness.py``'s ``memory`` case (``Bench.run`` into a ``MemoryJournal``, every
participant an instant fake, an attempt of ``--turns`` turns judged), played once in a fresh
child process from its start to its end: the interpreter, the imports and the run, as a user's
``convy run`` pays for them (with its modules' bytecode cached, as an installed package has it,
whatever ``PYTHONDONTWRITEBYTECODE`` says). Each child's CPU time (user + system) is read from
``resource.getrusage(RUSAGE_CHILDREN)`` around it, so no figure depends on what the machine does
meanwhile but through caches and frequency: CPU time is less disturbed by a loaded machine than
wall time, though not immune.

``--before SRC`` plays the same case with convy's source at ``SRC`` (such as main's:
``git archive <commit> src | tar -x -C /tmp/before``, then ``/tmp/before/src``), interleaved with
this convy's runs, ``--repeat`` times each; the medians and their ratio are printed.

``--profile`` also plays each convy once more under ``cProfile`` (the run alone, not the
imports) and prints the share of the run's time in the pacing layer — the functions of
``convy/busy.py`` and what they call outside convy (the event loop's clock, context variables,
deques) — and the files that take the most. A profiler charges every call its own cost, which
inflates a layer of many small calls; so the same child also measures the share without one:
the run beside the same run whose ``Places._tried`` only holds a place and awaits the request
(and the free way its callers take, ``Places.freely`` and the step after it, only holds a place).

    python bench/cpu.py                                   # 10000 attempts x 6 turns, this convy
    python bench/cpu.py --before /tmp/cpu-before/src --repeat 5 --profile
    python bench/cpu.py --attempts 2000 --repeat 3 --before /tmp/cpu-before/src
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "src"


def _child_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


# The bare free way, in place of convy's ``Places._tried`` and the free way its callers take (an
# agent's turn, a model, a judge: ``Places.freely`` and the step after it): a place held, and
# nothing else. What the pacing layer costs is a run's time beside the same run with these.


async def _bare_tried(self: Any, request: Any, held: bool, paced: bool = True) -> Any:
    if not held:
        return await request()
    self._taken += 1
    self.peak = max(self.peak, self._taken)
    try:
        return await request()
    finally:
        self._freed()


def _bare_freely(self: Any, held: bool) -> Any:
    if held:
        self._taken += 1
        self.peak = max(self.peak, self._taken)
    return (None, 0, 0.0, 0, held)


def _bare_ended(self: Any, ticket: Any) -> None:
    if ticket[4]:
        self._freed()


BARE = {"_tried": _bare_tried, "freely": _bare_freely, "freely_answered": _bare_ended, "freely_failed": _bare_ended}


def played(source: Path, attempts: int, turns: int, profile: bool = False) -> str:
    """One run in a fresh child process with convy's source at ``source``: its CPU seconds, or
    (``profile``) what its profile says."""
    command = [sys.executable, __file__, "--child", "--attempts", str(attempts), "--turns", str(turns)]
    command += ["--profile"] if profile else []
    # As an installed convy runs: its modules' compiled bytecode is kept (``__pycache__``, written
    # by the warm-up run if need be), not compiled again by every process of a shell that says not to.
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(command, env=env | {"PYTHONPATH": str(source)}, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the run with convy from {source} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def timed(source: Path, attempts: int, turns: int) -> float:
    before = _child_cpu()
    played(source, attempts, turns)
    return _child_cpu() - before


def child(attempts: int, turns: int, profile: bool) -> None:
    """The run itself, in the child: nothing printed but what ``--profile`` found."""
    sys.path.insert(0, str(HERE))
    import harness

    from convy.fakes import MemoryJournal

    setup = harness.Setup(attempts, turns, Path(tempfile.gettempdir()))
    if profile:
        print(without_pacing(setup, harness, MemoryJournal))
    bench, plan, journal = setup.bench(), setup.plan(), MemoryJournal()
    if not profile:
        asyncio.run(bench.run(plan, journal))
    else:
        profiler = cProfile.Profile()
        profiler.enable()
        asyncio.run(bench.run(plan, journal))
        profiler.disable()
        print(shares(pstats.Stats(profiler)))
    if len(journal.outcomes) != attempts:
        raise SystemExit(f"{len(journal.outcomes)} attempts played, not {attempts}")
    harness.InMemory(setup)._attempt(journal.outcomes[-1])


def without_pacing(setup: Any, harness: Any, journal: Any, runs: int = 9) -> str:
    """The pacing layer's share measured without a profiler: the run's CPU time beside the same
    run whose ``Places._tried`` (every request's first try) only holds a place and awaits the
    request, runs interleaved in this process, medians. A profiler charges each call its own
    cost, which inflates code made of many small calls, such as this layer; this does not. Runs
    of at most 2,000 attempts, many of them: a loaded machine's disturbances come and go slowly,
    and short runs side by side meet the same ones."""
    setup = setup.smaller(2000)
    import time

    from convy.busy import Places

    # (``freely`` and the rest only where the convy played has them: the state before may not.)
    names = [name for name in ("_tried", "freely", "freely_answered", "freely_failed") if hasattr(Places, name)]
    paced = tuple(getattr(Places, name) for name in names)

    seconds: dict[str, list[float]] = {"paced": [], "bare": []}
    for _ in range(runs):
        for name, way in (("paced", paced), ("bare", tuple(BARE[method] for method in names))):
            for method, function in zip(names, way, strict=True):
                setattr(Places, method, function)
            bench, plan = setup.bench(), setup.plan()
            start = time.process_time()
            asyncio.run(bench.run(plan, journal()))
            seconds[name].append(time.process_time() - start)
    for method, function in zip(names, paced, strict=True):
        setattr(Places, method, function)
    whole, without = statistics.median(seconds["paced"]), statistics.median(seconds["bare"])
    requests = setup.attempts * (2 * setup.turns + 1)  # the agent's turns, the user's replies, the judge, the opening
    return (
        f"pacing layer without a profiler: {1 - without / whole:.1%} of the run, {(whole - without) / requests * 1e6:.2f} us a request"
        f" ({setup.attempts:,} attempts: {whole:.2f} s, {without:.2f} s with a bare _tried; medians of {runs}, interleaved)"
    )


def _file(function: tuple[str, int, str]) -> str:
    path = function[0]
    return "convy/" + path.rsplit("/convy/", 1)[1] if "/convy/" in path else ""


def shares(stats: pstats.Stats) -> str:
    """The pacing layer's share of the profiled time, and the files' shares, as text."""
    table = stats.stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in table.values())
    files: dict[str, float] = {}
    pacing = 0.0
    for function, (_, _, own, _, callers) in table.items():
        name = _file(function)
        if name:
            files[name] = files.get(name, 0.0) + own
            if name == "convy/busy.py":
                pacing += own
        else:
            # Outside convy (the event loop's clock, a context variable, a deque): charged to its
            # callers, each for the time of its calls from it.
            for caller, (_, _, from_caller, _) in callers.items():
                if _file(caller) == "convy/busy.py":
                    pacing += from_caller
                    files["convy/busy.py"] = files.get("convy/busy.py", 0.0) + from_caller
    top = sorted(files.items(), key=lambda item: -item[1])[:6]
    shown = ", ".join(f"{name[6:]} {seconds / total:.0%}" for name, seconds in top)
    return f"pacing layer (busy.py and what it calls outside convy) {pacing / total:.1%} of the run; own time by file: {shown}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=10_000, help="attempts (default 10000)")
    parser.add_argument("--turns", type=int, default=6, help="turns per attempt (default 6)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each convy, interleaved, medians shown (default 3)")
    parser.add_argument("--before", type=Path, metavar="SRC", help="also play convy's source at SRC, side by side")
    parser.add_argument("--profile", action="store_true", help="also profile one run of each: the pacing layer's share")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # the run itself
    options = parser.parse_args(argv)
    if options.attempts < 1 or options.turns < 1 or options.repeat < 1:
        parser.error("--attempts, --turns and --repeat must be at least 1")
    if options.child:
        child(options.attempts, options.turns, options.profile)
        return 0
    sources = {"now": SOURCE} | ({"before": options.before.resolve()} if options.before else {})
    for name, source in sources.items():
        if not (source / "convy" / "__init__.py").is_file():
            raise SystemExit(f"--before {source}: no convy package there (convy/__init__.py)")
    print(
        f"CPU of a whole process: {options.attempts:,} attempts x {options.turns} turns, instant fakes, "
        f"Bench.run -> MemoryJournal; {options.repeat} run(s) of each convy, interleaved; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    for name, source in sources.items():
        print(f"  {name}: convy from {source}")
    for source in sources.values():  # a warm-up: the file cache, the first start of the interpreter
        timed(source, min(options.attempts, 50), options.turns)
    seconds: dict[str, list[float]] = {name: [] for name in sources}
    for _ in range(options.repeat):
        for name, source in sources.items():
            seconds[name].append(timed(source, options.attempts, options.turns))
    for name, runs in seconds.items():
        each = " ".join(f"{one:.2f}" for one in runs)
        print(f"{name:>7}: {statistics.median(runs):.2f} s CPU median ({each})")
    if options.before:
        now, before = statistics.median(seconds["now"]), statistics.median(seconds["before"])
        print(f"  now / before: {now / before:.3f} (medians)")
    print(f"  load average at the end {os.getloadavg()[0]:.2f}")
    if options.profile:
        for name, source in sources.items():
            print(f"{name:>7}: {played(source, options.attempts, options.turns, profile=True).strip()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
