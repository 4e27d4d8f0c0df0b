"""Benchmark of convy against a rate-limited service: how close to the limit it plays, how much it
is refused on the way, and how many attempts per second it plays when nothing limits it.

The service is the test stand-in (``tests/standin.py``), a real HTTP server answering after
``--latency`` seconds (100 ms), run in a child process so that its work is not charged to convy.
The agent is a ``JsonAgent`` on its ``/agent`` endpoint, played through the real ``Bench``; each
attempt is a scripted scenario of ``--turns`` messages (one request each) decided by a ``check:``
(no judge model). With ``--with-user`` the scenario also has a simulated user, an ``OpenAiModel``
on a second stand-in with the same limit (``user_per_minute`` set like the agent's), so each
attempt is one scripted turn and ``turns - 1`` turns the user model writes.

**The minute is scaled.** The stand-in admits ``--per-minute`` (R) requests in any sliding window
of ``--window`` seconds (W; 429 with ``Retry-After`` beyond), so a "minute" lasts W seconds and
the benchmark finishes in about a minute instead of an hour. convy's ``agent_per_minute`` counts
real 60-second minutes, so the limit set to match is ``R * 60 / W``.

Rate-limited cases, ``--attempts`` attempts each, ``--places`` agent places:

- ``paced``: ``agent_per_minute`` set to the limit (``R * 60 / W``);
- ``unpaced``: no per-minute limit: convy relies on the 429s alone (``Retry-After`` pausing all
  the agent's requests, and places halved at a refusal).

For each: ``wall / floor``, where the floor is the time the limit needs for the requests that must
be answered (attempts x turns, divided by R per W seconds); ``refused`` = 429s / requests the
server received; the attempts that ended well (``finished``).

Free cases, no limit at all, ``--free-attempts`` attempts with ``agent_places`` = each of
``--concurrency`` (64 and 256): attempts per second against the ideal ``places / (latency x
turns)`` (every place always busy with a request), as a ratio; and the same requests sent by a
bare asyncio loop with httpx2 alone (one client per attempt, as a ``JsonAgent`` conversation
has), the baseline that shows what the machine and the HTTP client allow without convy.

    .venv/bin/python bench/busy.py                          # the default: about 2 to 3 minutes
    .venv/bin/python bench/busy.py --attempts 40 --free-attempts 512   # a quick look
    .venv/bin/python bench/busy.py --only paced unpaced --with-user
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import platform
import subprocess
import sys
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx2
import msgspec

import convy
from convy import Absent, Bench, JsonAgent, JsonEndpoint, Limits, Models, OpenAiModel, Plan, Scenario
from convy.fakes import MemoryJournal

TESTS = Path(__file__).resolve().parent.parent / "tests"


# --- the stand-in, in a child process -----------------------------------------------------------


def _serve(pipe: Any, settings: dict[str, Any]) -> None:
    sys.path.insert(0, str(TESTS))
    from standin import StandIn

    with StandIn(**settings) as server:
        pipe.send(server.url)
        while True:
            match pipe.recv():
                case "stats":
                    received = [record for record in server.received if record.kind in ("agent", "chat")]
                    answered = Counter((r.conversation, r.message) for r in received if r.status == 200)
                    pipe.send(
                        {
                            "received": len(received),
                            "refused": server.refused,
                            "statuses": dict(Counter(r.status for r in received)),
                            "answered": sum(answered.values()),
                            "answered_twice": sum(1 for times in answered.values() if times > 1),
                            "peak": server.peak_in_flight,
                            "errors": len(server.errors),
                        }
                    )
                case _:
                    pipe.send(None)
                    return


class Service:
    """A stand-in in a child process: its URL while it runs, and what it received."""

    def __init__(self, **settings: Any) -> None:
        self.settings = settings

    def __enter__(self) -> Service:
        context = multiprocessing.get_context("spawn")
        self._pipe, theirs = context.Pipe()
        self._process = context.Process(target=_serve, args=(theirs, self.settings), daemon=True)
        self._process.start()
        self.url: str = self._pipe.recv()
        return self

    def stats(self) -> dict[str, Any]:
        self._pipe.send("stats")
        return self._pipe.recv()

    def __exit__(self, *exc: object) -> None:
        self._pipe.send("stop")
        self._pipe.recv()
        self._process.join(10)


# --- one case -----------------------------------------------------------------------------------


class Case(msgspec.Struct, frozen=True):
    name: str
    attempts: int
    turns: int
    limits: Limits
    latency: float
    per_minute: int | None  # the stand-in's limit per window (None: no limit)
    window: float
    with_user: bool = False


class Result(msgspec.Struct, frozen=True):
    case: Case
    wall: float
    cpu: float  # CPU seconds of this process (the stand-ins run in others)
    stops: dict[str, int]
    agent: dict[str, Any]
    user: dict[str, Any] | None


def scenario(turns: int, with_user: bool) -> Scenario:
    fields: dict[str, Any] = {"id": "busy", "judge": [{"check": {"said": "You said"}}]}
    if with_user:
        fields |= {"user": "You ask about your order.", "script": ["Hello."], "max_turns": turns}
    else:
        fields |= {"script": [f"Message {number}." for number in range(1, turns + 1)]}
    return msgspec.convert(fields, Scenario)


async def bare(url: str, attempts: int, turns: int, places: int) -> None:
    """The free case's requests without convy: ``places`` workers, each attempt one httpx2 client
    (as a JsonAgent's conversation has) posting ``turns`` messages one after another."""
    context = httpx2.create_ssl_context(trust_env=False)  # made once, as convy does
    planned = iter(range(attempts))

    async def worker() -> None:
        for attempt in planned:
            async with httpx2.AsyncClient(
                verify=context, trust_env=False, limits=httpx2.Limits(max_connections=1, max_keepalive_connections=1)
            ) as client:
                for turn in range(1, turns + 1):
                    response = await client.post(url + "/agent", json={"message": f"Message {turn}.", "session": str(attempt)})
                    response.raise_for_status()
                    response.json()

    await asyncio.gather(*(worker() for _ in range(min(places, attempts))))


def baseline(case: Case) -> tuple[float, float]:
    """Seconds, and CPU seconds of this process, the bare loop takes for the free case's attempts."""
    with Service(latency=case.latency, per_minute=None, window=case.window) as service:
        start, cpu = time.perf_counter(), time.process_time()
        asyncio.run(bare(service.url, case.attempts, case.turns, case.limits.agent_places))
        return time.perf_counter() - start, time.process_time() - cpu


def played(case: Case) -> Result:
    settings = {"latency": case.latency, "per_minute": case.per_minute, "window": case.window}
    with ExitStack() as stack:
        agent_service = stack.enter_context(Service(**settings))
        user_service = stack.enter_context(Service(**settings)) if case.with_user else None
        agent = JsonAgent(JsonEndpoint(agent_service.url + "/agent"), reply="output.text")
        user = OpenAiModel("stand-in", user_service.url + "/v1") if user_service else Absent()
        bench = Bench(agent, Models(user=user), case.limits)
        journal = MemoryJournal()
        start, cpu = time.perf_counter(), time.process_time()
        asyncio.run(bench.run(Plan((scenario(case.turns, case.with_user),), case.attempts), journal))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        return Result(
            case,
            wall,
            cpu,
            dict(Counter(outcome.stop for outcome in journal.outcomes)),
            agent_service.stats(),
            user_service.stats() if user_service else None,
        )


# --- the report ---------------------------------------------------------------------------------


def tree() -> str:
    """The commit convy's source is at, and its changed files, when it is a git checkout."""
    source = Path(convy.__file__).parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "-C", str(source), "status", "--porcelain", "--", "."], capture_output=True, text=True, check=True
        ).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return ""
    changed = [line[3:] for line in changed if line.strip()]
    return f", commit {commit}" + (f", changed: {' '.join(changed)}" if changed else ", unchanged")


def limited_row(result: Result, label: str) -> str:
    case = result.case
    assert case.per_minute is not None
    needed = case.attempts * case.turns  # agent requests that must be answered
    floor = needed / case.per_minute * case.window
    agent = result.agent
    share = agent["refused"] / agent["received"] if agent["received"] else 0.0
    finished = result.stops.get("finished", 0) + result.stops.get("max_turns", 0)
    row = (
        f"{label:<28} {result.wall:7.1f} s {floor:6.1f} s {result.wall / floor:6.2f}"
        f"   {agent['refused']:4d}/{agent['received']:<5d} {share:6.1%}   {finished}/{case.attempts}"
    )
    if result.user is not None:
        user = result.user
        user_share = user["refused"] / user["received"] if user["received"] else 0.0
        row += f"   user {user['refused']}/{user['received']} {user_share:.1%}"
    others = {stop: count for stop, count in result.stops.items() if stop not in ("finished", "max_turns")}
    if others:
        row += f"   {others}"
    return row


def free_rows(results: list[Result], bare: list[tuple[float, float]]) -> str:
    """The best of the repeats of a free case (least wall time), and of its baseline."""
    result = min(results, key=lambda result: result.wall)
    case = result.case
    places = case.limits.agent_places
    ideal = places / (case.latency * case.turns)
    measured = case.attempts / result.wall
    rows = [
        f"  convy Bench     {result.wall:6.1f} s {measured:7.1f}/s  ratio {measured / ideal:4.2f}"
        f"   CPU {result.cpu / case.attempts * 1000:5.2f} ms/attempt   (server peak {result.agent['peak']} at once)"
    ]
    if bare:
        wall, cpu = min(bare)
        alone = case.attempts / wall
        rows.append(
            f"  bare httpx2     {wall:6.1f} s {alone:7.1f}/s  ratio {alone / ideal:4.2f}"
            f"   CPU {cpu / case.attempts * 1000:5.2f} ms/attempt"
        )
    return f"agent_places={places}: ideal {ideal:.1f} attempts/s\n" + "\n".join(rows)


def checked(result: Result) -> list[str]:
    """What went wrong that should not: a turn answered twice, a server error, an attempt lost."""
    case, problems = result.case, []
    # Every agent message goes to its own conversation (a session of its own) and is answered once.
    # The user model's requests carry no session, so only their number is checked.
    if result.agent["answered_twice"]:
        problems.append(f"{case.name}: {result.agent['answered_twice']} agent messages answered twice")
    if result.agent["answered"] != case.attempts * case.turns:
        problems.append(f"{case.name}: {result.agent['answered']} agent requests answered, not attempts x turns")
    if result.user is not None and result.user["answered"] != case.attempts * (case.turns - 1):
        problems.append(f"{case.name}: {result.user['answered']} user requests answered, not attempts x (turns - 1)")
    for who, stats in (("agent", result.agent), ("user", result.user)):
        if stats is not None and stats["errors"]:
            problems.append(f"{case.name}: the {who} stand-in had {stats['errors']} errors")
    if sum(result.stops.values()) != result.case.attempts:
        problems.append(f"{result.case.name}: {sum(result.stops.values())} of {result.case.attempts} attempts recorded")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=100, help="attempts of each rate-limited case (default 100)")
    parser.add_argument("--turns", type=int, default=3, help="agent requests per attempt (default 3)")
    parser.add_argument("--per-minute", type=int, default=60, help="R: requests the stand-in admits per window (default 60)")
    parser.add_argument("--window", type=float, default=6.0, help="W: the scaled minute, in seconds (default 6)")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds the stand-in takes per answer (default 0.1)")
    parser.add_argument("--places", type=int, default=8, help="agent_places of the rate-limited cases (default 8)")
    parser.add_argument("--free-attempts", type=int, default=1536, help="attempts of each free case (default 1536)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[64, 256], help="agent_places of the free cases")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each free case, the best shown (default 2)")
    parser.add_argument("--no-baseline", action="store_true", help="do not time the free cases' requests without convy")
    parser.add_argument("--with-user", action="store_true", help="a simulated user (OpenAiModel) on a second limited stand-in")
    parser.add_argument("--only", nargs="+", choices=("paced", "unpaced", "free"), default=("paced", "unpaced", "free"))
    arguments = parser.parse_args()

    scaled = round(arguments.per_minute * 60 / arguments.window)
    print(
        f"convy {convy.__version__} from {Path(convy.__file__).parent}{tree()}\n"
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"The stand-in admits R={arguments.per_minute} requests per {arguments.window:g} s sliding window "
        f"(a minute scaled to {arguments.window:g} s: {scaled} per real minute), answers after "
        f"{arguments.latency * 1000:g} ms, and 429s beyond with Retry-After (whole seconds)."
    )
    print(f"Each attempt: {arguments.turns} agent requests (JsonAgent)" + (
        ", all but the first written by a simulated user (OpenAiModel, its own limited stand-in)."
        if arguments.with_user else ", scripted."
    ))
    print()
    problems: list[str] = []
    limited = [(name, rate) for name, rate in (("paced", scaled), ("unpaced", 0)) if name in arguments.only]
    if limited:
        floor = arguments.attempts * arguments.turns / arguments.per_minute * arguments.window
        print(f"Rate-limited: {arguments.attempts} attempts, agent_places={arguments.places}; "
              f"floor = {arguments.attempts * arguments.turns} requests / R per W = {floor:.1f} s "
              f"(the stand-in's first window is empty, so a burst can beat it by up to R requests)")
        print(f"{'case':<28} {'wall':>9} {'floor':>8} {'wall/floor':>6}   {'refused/received':>16}   finished")
        for name, rate in limited:
            limits = Limits(
                agent_places=arguments.places,
                agent_per_minute=rate,
                user_per_minute=rate if arguments.with_user else 0,
            )
            case = Case(name, arguments.attempts, arguments.turns, limits, arguments.latency,
                        arguments.per_minute, arguments.window, arguments.with_user)
            result = played(case)
            label = f"paced (agent_per_minute={rate})" if rate else "unpaced (per_minute 0)"
            print(limited_row(result, label), flush=True)
            problems += checked(result)
        print()
    if "free" in arguments.only:
        print(
            f"No limit: {arguments.free_attempts} attempts, best of {arguments.repeat}; ideal = places / "
            f"({arguments.latency:g} s x {arguments.turns} turns); CPU: this process's, the stand-in runs in another"
        )
        for places in arguments.concurrency:
            limits = Limits(agent_places=places)
            case = Case(f"free-{places}", arguments.free_attempts, arguments.turns, limits, arguments.latency, None,
                        arguments.window, False)
            results, bare_runs = [], []
            for _ in range(arguments.repeat):  # interleaved, so a burst of other work hits both alike
                results.append(played(case))
                problems += checked(results[-1])
                if not arguments.no_baseline:
                    bare_runs.append(baseline(case))
            print(free_rows(results, bare_runs), flush=True)
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")
    if problems:
        print()
        print("PROBLEMS:")
        for problem in problems:
            print(f"  {problem}")
        sys.exit(1)


if __name__ == "__main__":
    main()
