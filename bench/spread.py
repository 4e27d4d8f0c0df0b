"""Benchmark of a run spread over worker processes on Ray (``convy run --workers N``, issue 12),
beside the same run played by one process, in the same script.

The project is written to a temporary folder: ``--scenarios`` (10) scripted scenarios of
``--turns`` (3) messages, ``--attempts`` (10,000) attempts in all, its agent a ``JsonAgent`` on the
test stand-in's ``/agent`` (``tests/support/standin.py``, a real HTTP server in a child process, answering
each request after ``--latency``, 100 ms) and its judge a ``ChatJudge`` on the same stand-in,
deciding ``--claims`` (1) claims besides one ``check:``. ``agent_places`` and ``judge_places`` are
``--places`` (256): the places' floor, ``min(agent_places / (latency x turns), judge_places /
(latency x claims))`` attempts a second, is well above what two cores can play, so the CPU is the
cap. A second table plays ``--limited-attempts`` (500) with ``agent_places`` = ``--limited-places``
(8): there the places cap it, whatever the number of workers.

Each case is the real command, ``python -m convy -C PROJECT run [--workers N]``, in a child
process (the driver): its CPU time and peak RSS are its own (``getrusage(RUSAGE_SELF)``, written
by the child as it exits), not those of Ray's processes. A thread of this script reads ``/proc``
every ``--every`` (0.1 s) meanwhile: the CPU of the driver's threads (Ray's threads and the
Python thread apart), of the Ray workers playing attempts (``ray::Hand``), of Ray's other
processes (raylet, GCS, idle workers, agents), and of the stand-in. Per attempt, two figures:

- *whole*: the CPU of the whole command (start, Ray's start, the run, the report) / attempts;
- *steady*: the CPU spent between the first and the last attempt recorded (from
  ``attempts.jsonl``: each attempt's end) / the attempts recorded in between: the cost of one more
  attempt, what the model of many machines is made of.

Attempts per second are shown for the whole command, for the play (``run.json``'s start to its
end, Ray's start included) and steady (first to last attempt recorded); the ratio to one process
is of the steady rates, and the ratio to the floor shows whether the places cap it.

The baseline is ``bare``: the same HTTP requests (each attempt an httpx2 client posting ``turns``
agent messages, then ``claims`` chat requests) from a bare asyncio loop in this process, as many
at once as places: what one process and the stand-in allow without convy.

With ``--slope ATTEMPTS`` each case of the main table is played at that many attempts too, and
the driver's memory at both sizes is printed with what one more attempt adds to it: during the
play (the most resident memory sampled while attempts were recorded: what a long run's driver
grows by as it plays) and at its peak (``ru_maxrss``: the report at the end included, which is
made from every attempt read back), with the driver's steady CPU per attempt and the ceiling
it makes, ``1 / driver CPU`` attempts a second. ``--before SRC`` plays each case with a base
convy's source too (``git archive cc9ebe0 src``), just before this checkout's, so both sides
are measured side by side under the same load.

The model: N machines of C cores, each playing attempts for ``worker CPU`` (the hands' and Ray's
other processes' steady CPU per attempt), one driver recording them all for ``driver CPU``:
``attempts/s = min(N x C / worker CPU, 1 / driver CPU, floor)``, the figures taken from the
largest measured number of workers.

    .venv/bin/python bench/spread.py                           # 10,000 attempts, about 10 minutes on 2 cores
    .venv/bin/python bench/spread.py --quick                   # 1,000 attempts (and 200 limited): a try
    .venv/bin/python bench/spread.py --workers 2 --no-limited --profile /tmp/driver.prof   # cProfile of the driver of --workers 2
    .venv/bin/python bench/spread.py --attempts 8000 --slope 2000 --workers 2 --no-limited --no-bare --before /tmp/base/src
                                                      # the driver's memory per attempt and its ceiling, before and after
    .venv/bin/python bench/spread.py --attempts 1500 --latency 0.3 --places 0 --workers 1 --no-limited --no-bare --no-one --before /tmp/base/src
                                                      # places with no cap, growing in one worker: how many attempts it is handed at once
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "bench"))
sys.path.insert(0, str(HERE / "tests"))

from busy import Service  # noqa: E402  (the stand-in in a child process)

TICKS = os.sysconf("SC_CLK_TCK")

# The driver: convy's command line, in this child, writing its own CPU time and peak RSS as it
# exits (RUSAGE_SELF: the driver alone, not the Ray processes it started), under cProfile if told.
DRIVER = """
import atexit, json, resource, sys

out, profile, argv = sys.argv[1], sys.argv[2], sys.argv[3:]

def said():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open(out, "w") as file:
        json.dump({"cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss / 1024}, file)

atexit.register(said)
from convy.cli import main
if profile:
    import cProfile, time
    profiler = cProfile.Profile(time.thread_time)  # CPU of this thread alone: not waits, not Ray's threads
    profiler.enable()
    try:
        code = main(argv)
    finally:
        profiler.disable()
        profiler.dump_stats(profile)
else:
    code = main(argv)
raise SystemExit(code)
"""

AGENT = """
from convy import JsonAgent, JsonEndpoint

agent = JsonAgent(JsonEndpoint({url!r} + "/agent"), reply="output.text")
"""

MODELS = """
from convy import ChatJudge, Models, OpenAiModel

models = Models(judge=ChatJudge(OpenAiModel("stand-in", {url!r} + "/v1")))
"""


class Project(msgspec.Struct, frozen=True):
    """A project of scripted scenarios whose agent and judge are the stand-in at ``url``."""

    url: str
    scenarios: int
    attempts: int  # in all
    turns: int
    claims: int
    agent_places: int
    judge_places: int

    def write(self, folder: Path) -> Path:
        (folder / "agents").mkdir(parents=True)
        (folder / "scenarios").mkdir()
        (folder / "agents" / "standin.py").write_text(AGENT.format(url=self.url))
        (folder / "models.py").write_text(MODELS.format(url=self.url))
        for number in range(self.scenarios):
            script = "".join(f'  - "Message {turn} of case {number}."\n' for turn in range(1, self.turns + 1))
            claims = "".join(f"  - The agent answers claim {claim}.\n" for claim in range(1, self.claims + 1))
            (folder / "scenarios" / f"case-{number:03}.yaml").write_text(
                f"id: case-{number:03}\nscript:\n{script}judge:\n  - check:\n      said: You said\n{claims}"
            )
        (folder / "pyproject.toml").write_text(
            "[tool.convy]\n"
            f"attempts = {self.attempts // self.scenarios}\n"
            f"agent_places = {self.agent_places}\njudge_places = {self.judge_places}\n"
        )
        return folder

    def floor(self, latency: float) -> float:
        """Attempts a second the places allow at best: each turn holds an agent place and each
        claim a judge place for one latency. Places of 0 have no cap (they grow): no floor."""
        ceilings = [self.agent_places / (latency * self.turns) if self.agent_places else math.inf]
        if self.claims:
            ceilings.append(self.judge_places / (latency * self.claims) if self.judge_places else math.inf)
        return min(ceilings)


class Seen(msgspec.Struct):
    """One process as ``/proc`` showed it last: what it is, its CPU seconds and peak RSS."""

    kind: str
    cpu: float
    rss: float  # MiB, VmHWM


class Sample(msgspec.Struct, frozen=True):
    """The CPU seconds of each kind of process at one moment (``time.time()``), and the driver's
    resident MiB then (VmRSS)."""

    at: float
    cpu: dict[str, float]
    driver_rss: float = 0.0


class Watch:
    """A thread reading ``/proc`` every ``every`` seconds while a driver runs: its threads' CPU,
    and the CPU and peak RSS of every process under it (Ray's) and of the stand-in."""

    def __init__(self, driver: int, standin: int, every: float) -> None:
        self._driver = driver
        self._standin = standin
        self._every = every
        self._stop = threading.Event()
        self.processes: dict[int, Seen] = {}
        self.threads: dict[int, tuple[str, float]] = {}
        self.hand_threads: dict[tuple[int, int], tuple[str, float]] = {}
        self.samples: list[Sample] = []
        self._thread = threading.Thread(target=self._watched, daemon=True)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watched(self) -> None:
        while not self._stop.is_set():
            self._looked()
            self._stop.wait(self._every)

    def _looked(self) -> None:
        parents: dict[int, int] = {}
        stats: dict[int, list[str]] = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            fields = _stat(f"/proc/{entry.name}/stat")
            if fields is not None:
                pid = int(entry.name)
                parents[pid] = int(fields[1])
                stats[pid] = fields
        under = {self._driver}
        for pid in sorted(parents):  # descendants: walk up each process's parents
            chain, steps = pid, 0
            while chain in parents and chain not in under and steps < 64:
                chain, steps = parents[chain], steps + 1
            if chain in under:
                under.add(pid)
        for pid in under | {self._standin}:
            fields = stats.get(pid)
            if fields is None:
                continue
            kind = "driver" if pid == self._driver else "standin" if pid == self._standin else _kind(pid)
            cpu = (int(fields[11]) + int(fields[12])) / TICKS
            known = self.processes.get(pid)
            if known is None:
                self.processes[pid] = Seen(kind, cpu, _hwm(pid))
            else:
                known.cpu = max(known.cpu, cpu)
                known.rss = max(known.rss, _hwm(pid))
                if kind != "ray other":  # an idle worker becomes a hand; never back
                    known.kind = kind
        for tid, name, cpu in _threads(self._driver):
            self.threads[tid] = (name, cpu)
        for pid, seen in self.processes.items():
            if seen.kind == "hands":
                for tid, name, cpu in _threads(pid):
                    self.hand_threads[pid, tid] = (name, cpu)
        totals: dict[str, float] = {}
        for seen in self.processes.values():
            totals[seen.kind] = totals.get(seen.kind, 0.0) + seen.cpu
        self.samples.append(Sample(time.time(), totals, _resident(self._driver)))

    def between(self, start: float, end: float) -> dict[str, float]:
        """CPU seconds of each kind from ``start`` to ``end`` (times since the epoch), the samples
        either side interpolated."""
        kinds = {kind for sample in self.samples for kind in sample.cpu}
        return {kind: self._at(end, kind) - self._at(start, kind) for kind in kinds}

    def _at(self, moment: float, kind: str) -> float:
        samples = self.samples
        for earlier, later in zip(samples, samples[1:], strict=False):
            if earlier.at <= moment <= later.at:
                low, high = earlier.cpu.get(kind, 0.0), later.cpu.get(kind, 0.0)
                return low + (high - low) * (moment - earlier.at) / max(later.at - earlier.at, 1e-9)
        return samples[-1].cpu.get(kind, 0.0) if samples and moment > samples[-1].at else 0.0


def _stat(path: str) -> list[str] | None:
    """The fields of a ``stat`` file after the command's name (the name first), or None once gone."""
    try:
        with open(path, "rb") as file:
            text = file.read().decode(errors="replace")
    except OSError:
        return None
    name = text[text.index("(") + 1 : text.rindex(")")]
    return [name, *text[text.rindex(")") + 2 :].split()[1:]]


def _threads(pid: int) -> list[tuple[int, str, float]]:
    """Each thread of a process: its id, name and CPU seconds."""
    found = []
    try:
        for task in os.scandir(f"/proc/{pid}/task"):
            fields = _stat(f"/proc/{pid}/task/{task.name}/stat")
            if fields is not None:
                found.append((int(task.name), fields[0], (int(fields[11]) + int(fields[12])) / TICKS))
    except OSError:
        pass
    return found


def _kind(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            command = file.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "ray other"
    return "hands" if command.startswith("ray::Hand") else "ray other"


def _resident(pid: int) -> float:
    """A process's resident MiB now (VmRSS)."""
    try:
        with open(f"/proc/{pid}/status") as file:
            for line in file:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _hwm(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as file:
            for line in file:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Line(msgspec.Struct, frozen=True):
    """What this script reads of a recorded attempt."""

    scenario: str
    attempt: int
    started: str
    seconds: float
    result: dict[str, Any]


class Played(msgspec.Struct, frozen=True):
    """One case's figures."""

    name: str
    attempts: int
    wall: float  # the whole command
    play: float  # run.json's start to end
    steady: float  # first to last attempt recorded
    steady_attempts: int
    driver_cpu: float  # the whole command's, RUSAGE_SELF
    driver_rss: float  # MiB, ru_maxrss
    play_rss: float  # MiB, the most VmRSS sampled between the first and the last attempt recorded: the play, not the report
    steady_cpu: dict[str, float]  # each kind's CPU seconds between the first and the last attempt recorded
    whole_cpu: dict[str, float]  # each kind's CPU seconds over the whole command, from /proc
    hand_rss: float  # the largest hand's peak RSS, MiB
    threads: dict[str, float]  # the driver's CPU seconds by thread name
    hand_threads: dict[str, float]  # the hands' CPU seconds by thread name, summed over the hands
    passed: int

    def rate(self) -> float:
        return self.steady_attempts / self.steady if self.steady > 0 else 0.0

    def per_attempt(self, kind: str) -> float:
        """Steady CPU seconds per attempt of a kind of process."""
        return self.steady_cpu.get(kind, 0.0) / max(self.steady_attempts, 1)


class Case(msgspec.Struct, frozen=True):
    """One command to play: ``workers`` 0 is the plain path, one process without Ray."""

    name: str
    workers: int
    project: Path
    standin: int  # the stand-in's pid
    every: float
    profile: str = ""
    src: str = ""  # the convy the driver and its workers import (PYTHONPATH); "" for this checkout's

    def played(self, attempts: int) -> Played:
        argv = ["-C", str(self.project), "run"] + (["--workers", str(self.workers)] if self.workers else [])
        env = {**os.environ, "NO_COLOR": "1", "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": self.src or str(HERE / "src")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        with tempfile.NamedTemporaryFile(suffix=".json") as out, tempfile.TemporaryFile() as errors:
            start = time.perf_counter()
            child = subprocess.Popen(
                [sys.executable, "-c", DRIVER, out.name, self.profile, *argv], env=env, stdout=subprocess.DEVNULL, stderr=errors
            )
            with Watch(child.pid, self.standin, self.every) as watch:
                code = child.wait()
            wall = time.perf_counter() - start
            if code not in (0, 1):
                errors.seek(0)
                raise SystemExit(f"{self.name}: convy run exited {code}:\n{errors.read().decode()[-3000:]}")
            driver = msgspec.json.decode(Path(out.name).read_bytes())
        run = max((self.project / "results" / "standin").iterdir(), key=lambda path: path.stat().st_mtime)
        status = msgspec.json.decode((run / "run.json").read_bytes())["status"]
        play = (datetime.fromisoformat(status["ended"]) - datetime.fromisoformat(status["started"])).total_seconds()
        lines = msgspec.json.Decoder(Line).decode_lines((run / "attempts.jsonl").read_bytes())
        keys = {(line.scenario, line.attempt) for line in lines}
        if len(lines) != attempts or len(keys) != attempts:
            raise SystemExit(f"{self.name}: {len(lines)} lines, {len(keys)} distinct attempts recorded, of {attempts}")
        ends = sorted(datetime.fromisoformat(line.started).timestamp() + line.seconds for line in lines)
        passed = sum(1 for line in lines if line.result.get("type") == "verdict" and all(c.get("held") for c in line.result.get("claims", ())))
        threads: dict[str, float] = {}
        for name, cpu in watch.threads.values():
            threads[name] = threads.get(name, 0.0) + cpu
        hand_threads: dict[str, float] = {}
        for (_pid, tid), (name, cpu) in watch.hand_threads.items():
            name = f"{name} (main)" if tid == _pid else name
            hand_threads[name] = hand_threads.get(name, 0.0) + cpu
        whole: dict[str, float] = {}
        for seen in watch.processes.values():
            whole[seen.kind] = whole.get(seen.kind, 0.0) + seen.cpu
        standin = watch.between(start - 0.0, time.time()).get("standin", 0.0)  # the stand-in lives on: only this command's share
        whole["standin"] = standin
        hands = [seen.rss for seen in watch.processes.values() if seen.kind == "hands"]
        return Played(
            self.name,
            attempts,
            wall,
            play,
            ends[-1] - ends[0],
            len(ends) - 1,
            driver["cpu"],
            driver["rss"],
            max((sample.driver_rss for sample in watch.samples if ends[0] <= sample.at <= ends[-1]), default=0.0),
            watch.between(ends[0], ends[-1]),
            whole,
            max(hands, default=0.0),
            threads,
            hand_threads,
            passed,
        )


async def bare(url: str, attempts: int, turns: int, claims: int, places: int) -> None:
    """The case's requests without convy: ``places`` tasks, each attempt one httpx2 client posting
    ``turns`` agent messages one after another, then ``claims`` chat requests at once."""
    import httpx2

    context = httpx2.create_ssl_context(trust_env=False)
    planned = iter(range(attempts))
    question = {"model": "stand-in", "messages": [{"role": "user", "content": "Did the agent answer?"}]}

    async def worker() -> None:
        for attempt in planned:
            async with httpx2.AsyncClient(verify=context, trust_env=False) as client:
                for turn in range(1, turns + 1):
                    response = await client.post(url + "/agent", json={"message": f"Message {turn}.", "session": str(attempt)})
                    response.raise_for_status()
                    response.json()
                answers = await asyncio.gather(*(client.post(url + "/v1/chat/completions", json=question) for _ in range(claims)))
                for answer in answers:
                    answer.raise_for_status()
                    answer.json()

    await asyncio.gather(*(worker() for _ in range(min(places, attempts))))


def bared(url: str, attempts: int, project: Project) -> tuple[float, float]:
    start, cpu = time.perf_counter(), time.process_time()
    asyncio.run(bare(url, attempts, project.turns, project.claims, project.agent_places))
    return time.perf_counter() - start, time.process_time() - cpu


def ms(seconds: float) -> str:
    return f"{seconds * 1000:6.2f}"


def table(title: str, played: list[Played], floor: float, bare: tuple[float, float] | None, attempts: int) -> None:
    print(title)
    print(
        f"  {'case':<20} {'whole/s':>8} {'play/s':>8} {'steady/s':>9} {'x 1 proc':>8} {'/ floor':>8}"
        f"   {'CPU ms per attempt (steady)':<44}  {'driver':>7} {'driver':>8} {'hand':>8} {'pass':>6}"
    )
    print(
        f"  {'':<20} {'':>8} {'':>8} {'':>9} {'':>8} {'':>8}"
        f"   {'driver':>6} {'hands':>6} {'ray':>6} {'stand':>6} {'total':>6} {'cores':>6}  {'CPU/att':>7} {'peak MiB':>8} {'MiB':>8} {'':>6}"
    )
    one = next((case.rate() for case in played if case.name == "1 process"), None)
    if bare is not None:
        wall, cpu = bare
        rate = attempts / wall
        print(
            f"  {'bare asyncio':<20} {rate:8.1f} {'':>8} {'':>9} {rate / one if one else 0:8.2f} {rate / floor:8.2f}"
            f"   {ms(cpu / attempts)} {'':>6} {'':>6} {'':>6} {'':>6} {'':>6}  (the requests alone, this process)"
        )
    for case in played:
        driver, hands, ray, standin = (case.per_attempt(kind) for kind in ("driver", "hands", "ray other", "standin"))
        total = driver + hands + ray + standin
        print(
            f"  {case.name:<20} {case.attempts / case.wall:8.1f} {case.attempts / case.play:8.1f} {case.rate():9.1f}"
            f" {case.rate() / one if one else 0:8.2f} {case.rate() / floor:8.2f}"
            f"   {ms(driver)} {ms(hands)} {ms(ray)} {ms(standin)} {ms(total)} {total * case.rate():6.2f}"
            f"  {ms(case.driver_cpu / case.attempts):>7} {case.driver_rss:8.0f} {case.hand_rss:8.0f} {case.passed:6d}"
        )
    print(flush=True)


def slope(few: int, small: list[Played], many: int, large: list[Played]) -> None:
    """The driver's memory of each case at two sizes, and what one more attempt adds to it: during
    the play (the most resident while attempts were recorded) and at its peak (the whole command,
    the report included); and the driver's steady CPU per attempt, whose inverse is the most
    attempts a second one driver can record, however many workers play them."""
    print(f"Driver's memory at {few:,} and {many:,} attempts, its growth per attempt between them, and its ceiling:")
    print(
        f"  {'case':<22} {'play MiB':>17} {'play B/att':>10}   {'peak MiB':>17} {'peak B/att':>10}"
        f"   {'driver ms/att':>13} {'ceiling/s':>9}"
    )
    for short, long in zip(small, large, strict=True):
        play = (long.play_rss - short.play_rss) * 1024 * 1024 / (many - few)
        peak = (long.driver_rss - short.driver_rss) * 1024 * 1024 / (many - few)
        driver = long.per_attempt("driver")
        print(
            f"  {long.name:<22} {short.play_rss:8.1f} {long.play_rss:8.1f} {play:10.0f}   {short.driver_rss:8.1f} {long.driver_rss:8.1f}"
            f" {peak:10.0f}   {driver * 1000:13.3f} {1 / driver if driver else 0:9.0f}"
        )
    print(flush=True)


def model(case: Played, floor: float, cores: tuple[int, ...], machines: tuple[int, ...]) -> None:
    worker = case.per_attempt("hands") + case.per_attempt("ray other")
    driver = case.per_attempt("driver")
    print(
        f"Model of N machines (from '{case.name}', steady): worker CPU {worker * 1000:.2f} ms an attempt "
        f"(hands {case.per_attempt('hands') * 1000:.2f} + Ray's others {case.per_attempt('ray other') * 1000:.2f}), "
        f"driver CPU {driver * 1000:.2f} ms (its ceiling {1 / driver:.0f}/s), places' floor {floor:.0f}/s"
    )
    print(
        "  attempts/s = min(N x cores / worker CPU, 1 / driver CPU, floor); the stand-in's CPU is left out (a service "
        "elsewhere); the last column as if the places were raised past the driver's ceiling"
    )
    columns = [(count, floor) for count in cores] + [(cores[-1], float("inf"))]
    print(f"  {'machines':>8}" + "".join(f" {f'{count} cores' + (', no places cap' if limit == float('inf') else ''):>27}" for count, limit in columns))
    for number in machines:
        row = f"  {number:8d}"
        for count, limit in columns:
            bounds = {"workers": number * count / worker, "driver": 1 / driver, "places": limit}
            cap = min(bounds, key=lambda name: bounds[name])
            row += f" {bounds[cap]:17.0f} ({cap:>7})"
        print(row)
    print(flush=True)


def header(options: argparse.Namespace) -> None:

    commit = subprocess.run(["git", "-C", str(HERE), "log", "-1", "--format=%h"], capture_output=True, text=True).stdout.strip()
    changed = subprocess.run(["git", "-C", str(HERE), "status", "--porcelain", "src"], capture_output=True, text=True).stdout.strip()
    try:
        import ray

        ray_version = ray.__version__
    except ImportError:
        ray_version = "not installed"
    load = os.getloadavg()
    print(
        f"convy from {HERE / 'src'} (commit {commit}{', with changes' if changed else ''}), Ray {ray_version}"
        + (f"; the cases marked (before): {options.before}" if options.before else "")
    )
    print(f"Python {platform.python_version()}, {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"argv: {' '.join(sys.argv[1:]) or '(defaults)'}\n", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=10_000, help="attempts of the main table (default 10,000)")
    parser.add_argument("--quick", action="store_true", help="1,000 attempts and 200 limited ones: a try")
    parser.add_argument("--scenarios", type=int, default=10)
    parser.add_argument("--turns", type=int, default=3, help="agent requests per attempt (default 3)")
    parser.add_argument("--claims", type=int, default=1, help="judged claims per attempt, one chat request each (default 1)")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds the stand-in takes per answer (default 0.1)")
    parser.add_argument("--places", type=int, default=256, help="agent_places and judge_places of the main table (default 256; 0: no cap, they grow)")
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2, 4], help="numbers of workers (default 1 2 4; none: no main table)")
    parser.add_argument("--limited-places", type=int, default=8, help="agent_places of the limited table (default 8)")
    parser.add_argument("--limited-attempts", type=int, default=500)
    parser.add_argument("--limited-workers", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--no-limited", action="store_true", help="no limited table")
    parser.add_argument("--no-bare", action="store_true", help="no bare asyncio baseline")
    parser.add_argument("--no-one", action="store_true", help="no one-process case")
    parser.add_argument(
        "--slope",
        type=int,
        metavar="ATTEMPTS",
        help="play each main case at this many attempts too, and print the driver's peak RSS per attempt between the two sizes",
    )
    parser.add_argument(
        "--before",
        metavar="SRC",
        help="a base convy's source folder (git archive cc9ebe0 src): each case played by it too, beside this checkout's",
    )
    parser.add_argument("--every", type=float, default=0.1, help="seconds between two looks at /proc (default 0.1)")
    parser.add_argument("--profile", type=Path, help="cProfile the driver of the first spread case into this file, and print its top")
    parser.add_argument("--dir", type=Path, help="where the projects are written (default: a temporary folder)")
    options = parser.parse_args()
    if options.quick:
        options.attempts, options.limited_attempts = 1_000, 200
    header(options)
    root = Path(tempfile.mkdtemp(prefix="convy-spread-", dir=options.dir))
    try:
        played, limited, floor = tables(options, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    closing(options, played, limited, floor)


def tables(options: argparse.Namespace, root: Path) -> tuple[list[Played], list[Played], float]:
    """Play every case; print the two tables; what was played, and the main table's floor."""
    with Service(latency=options.latency, judge=True) as service:
        standin = service._process.pid
        wide = Project(service.url, options.scenarios, options.attempts, options.turns, options.claims, options.places, options.places)
        wide.write(root / "wide")
        floor = wide.floor(options.latency)
        cases = [] if options.no_one or not options.workers else [Case("1 process", 0, root / "wide", standin, options.every)]
        for index, count in enumerate(options.workers):
            profile = str(options.profile) if options.profile and index == 0 else ""
            cases.append(Case(f"{count} worker{'s' if count > 1 else ''}", count, root / "wide", standin, options.every, profile))
        if options.before:  # each case played by the base convy first, beside this checkout's
            cases = [
                one
                for case in cases
                for one in (msgspec.structs.replace(case, name=f"{case.name} (before)", src=options.before, profile=""), case)
            ]
        played = [case.played(wide.attempts) for case in cases]
        if options.slope and cases:
            fewer = Project(service.url, options.scenarios, options.slope, options.turns, options.claims, options.places, options.places)
            fewer.write(root / "small")
            smaller = [msgspec.structs.replace(case, project=root / "small", profile="") for case in cases]
            slope(fewer.attempts, [case.played(fewer.attempts) for case in smaller], wide.attempts, played)
        bare = None if options.no_bare or not cases else bared(service.url, wide.attempts, wide)
        if cases:
            table(
                f"{wide.attempts:,} attempts of {wide.turns} agent turns + {wide.claims} judged claim(s), stand-in at "
                f"{options.latency * 1000:g} ms; agent_places = judge_places = {wide.agent_places}: floor {floor:.0f}/s "
                f"(agent {wide.agent_places} / ({options.latency:g} s x {wide.turns}))",
                played,
                floor,
                bare,
                wide.attempts,
            )
        limited: list[Played] = []
        if not options.no_limited:
            narrow = Project(
                service.url, options.scenarios, options.limited_attempts, options.turns, options.claims, options.limited_places, options.places
            )
            narrow.write(root / "narrow")
            low = narrow.floor(options.latency)
            small = [Case("1 process", 0, root / "narrow", standin, options.every)] + [
                Case(f"{count} workers", count, root / "narrow", standin, options.every) for count in options.limited_workers
            ]
            limited = [case.played(narrow.attempts) for case in small]
            table(
                f"Limited: {narrow.attempts:,} attempts, agent_places = {narrow.agent_places}: floor {low:.1f}/s "
                f"({narrow.agent_places} / ({options.latency:g} s x {narrow.turns})); the places cap it",
                limited,
                low,
                None,
                narrow.attempts,
            )
    return played, limited, floor


def closing(options: argparse.Namespace, played: list[Played], limited: list[Played], floor: float) -> None:
    """The threads' CPU, the model of many machines and the driver's profile."""
    first = 0 if options.no_one or not options.workers else 1  # the profiled case: the first spread one
    print("CPU over the whole command by thread, of the driver and of its hands summed (seconds; Python's main thread is 'python' or 'ray::Hand...'):")
    for case in played + limited:
        top = sorted(case.threads.items(), key=lambda item: -item[1])
        shown = ", ".join(f"{name} {cpu:.2f}" for name, cpu in top[:7] if cpu >= 0.05)
        print(f"  {case.name:<20} {case.driver_cpu:6.2f} s: {shown}")
        if case.hand_threads:
            top = sorted(case.hand_threads.items(), key=lambda item: -item[1])
            shown = ", ".join(f"{name} {cpu:.2f}" for name, cpu in top[:7] if cpu >= 0.05)
            print(f"  {'  its hands':<12} {sum(case.hand_threads.values()):6.2f} s: {shown}")
    print()
    # A profiled driver's CPU is inflated by the profiler: the model is made of another case.
    spread = [case for index, case in enumerate(played) if not case.name.startswith("1 process") and not (options.profile and index == first)]
    if spread:
        model(spread[-1], floor, (2, 16), (1, 2, 4, 8, 16))
    elif played:
        print("No model: its one spread case was profiled, and the profiler inflates the driver's CPU.\n")
    print(
        f"On this machine ({os.cpu_count()} cores) the driver, the workers, Ray's own processes and the stand-in share "
        "the cores: 'cores' above is how many of them the case kept busy, and past that, more workers cannot play faster."
    )
    if options.profile:
        profiled(options.profile, options.attempts)
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


def profiled(path: Path, attempts: int) -> None:
    """Where the profiled driver's Python thread went: its top functions, and the time under Ray's
    calls, under decoding the outcomes and under recording them."""
    import pstats

    stats = pstats.Stats(str(path))
    entries: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in entries.values())
    by_part: dict[str, float] = {}
    for (file, _line, _name), entry in entries.items():
        part = (
            "ray" if "/ray/" in file
            else "asyncio" if "/asyncio/" in file
            else "convy" if "/convy/" in file
            else "msgspec/builtins" if file == "~"
            else "other"
        )
        by_part[part] = by_part.get(part, 0.0) + entry[2]
    print(f"\ncProfile of the first spread driver (its Python thread's CPU time): {total:.2f} s of own time by where the code is:")
    print("  " + ", ".join(f"{part} {seconds:.2f}" for part, seconds in sorted(by_part.items(), key=lambda item: -item[1])))
    wanted = ("_feeding", "record", "remote", "_actor_method_call", "flushing", "flushed", "fdatasync", "write", "decode")
    print(f"  cumulative CPU of some functions, and per attempt ({attempts:,}):")
    for (file, line, name), entry in sorted(entries.items(), key=lambda item: -item[1][3]):
        if any(word in name for word in wanted) and entry[3] >= 0.01:
            print(
                f"    {entry[3]:7.2f} s cum {entry[3] / attempts * 1e6:7.1f} us/attempt {entry[1]:8d} calls  "
                f"{Path(file).name}:{line} {name}"
            )
    print("  top by own time:")
    for (file, line, name), entry in sorted(entries.items(), key=lambda item: -item[1][2])[:25]:
        print(f"    {entry[2]:7.2f} own {entry[3]:7.2f} cum {entry[1]:8d} calls  {Path(file).name}:{line} {name}")


if __name__ == "__main__":
    main()
