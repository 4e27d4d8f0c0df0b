"""Benchmark of convy against rate-limited services: how close to a service's limit it plays with
default settings, and how often it is refused on the way; and how many attempts per second it
plays when nothing limits it.

The service is the test stand-in (``tests/support/standin.py``), a real HTTP server answering after
``--latency`` seconds (100 ms), run in a child process so that its work is not charged to convy.
The agent is a ``JsonAgent`` on its ``/agent`` endpoint, played through the real ``Bench`` with
**default settings** (``Limits()``: no places set, so they start at 4 and grow while the
service keeps up; no per-minute; before issue 27, 4 agent places); each attempt is a scripted
scenario of ``--turns`` messages (one request each) decided by a ``check:``.

**Time is scaled.** A limit of 1,200 requests a minute is 20 a second: ``--requests`` (300) agent
requests need 15 s at it, the *floor*. Every shape runs at ``--rate`` (20) a second:

- ``bucket 1``: a token bucket with burst 1 (a request every 50 ms at most), answering 429 with
  ``Retry-After`` in whole seconds (at least 1, rounded up, as real providers do), and OpenAI's
  ``x-ratelimit-*`` headers on every response;
- ``bucket 1, bare``: the same bucket without any ``x-ratelimit-*`` header: only 429s tell;
- ``bucket 20``: a token bucket with burst 20;
- ``window``: at most ``rate`` requests in any sliding second;
- ``halved``: a burst-1 bucket whose rate halves a third of the way through the floor;
- ``shared``: the agent and the judge (a ``ChatJudge``, one request per claim, ``--claims``) on the
  same key: one burst-1 bucket counts both; the floor counts both;
- ``shared bare``: the same without any ``x-ratelimit-*`` header: what one participant finds of
  the limit from its refusals alone, the other goes at too;
- ``tokens``: a token limit (TPM) alone: a bucket of tokens (a request's body bytes / 4) with a
  second's worth of burst, filled at ``rate`` times a request's tokens a second;
- ``advice4``, ``advice16``: the strict bucket with what an earlier README advised for it,
  ``agent_per_minute`` 1,150 (0.96 of the limit: its own floor is 1.04x) and 4 or 16 places;
- ``nginx``: nginx's ``limit_req`` in front of the stand-in (a limit written by others): ``rate``
  a second, no burst (a request sooner than 1/rate after the last one admitted is refused, to the
  millisecond), 429 with ``Retry-After: 1`` and no ``x-ratelimit-*`` header; its access log
  counts what it received and refused. Played only where ``nginx`` is installed.

The two shapes that tell nothing but a 429 (``bare``, ``nginx``) have their best printed beside
them: the rate is found only by being refused, and each refusal costs a whole ``Retry-After`` (1 s,
a fifteenth of the floor): two for any client that does not know the limit and does not hold a
service with no limit back (``bench/bare_floor.py``), 1.13x; every later refusal adds another
second. So too for ``--project``'s shapes without headers: their target is 1.10x (1.15x for a
shared key) of the floor plus two seconds, and the row shows that ratio too.

For each: ``wall / floor``, ``refused`` (429s / requests the server received), and the spread of
the attempts' own durations (p50/p95/max seconds: waiting for a place or a pace must be fair, no
attempt left behind for minutes); the floor is the requests (or tokens) the server let through
divided by the rate, less the 20 a burst of 20 lets through at once, plus, for ``halved``, the
slower second part. ``--before SRC`` plays the same cases with convy's source at ``SRC`` (such as
main's: ``git archive main src | tar -x -C /tmp/before``, then ``/tmp/before/src``) in a child process, each cut off at
``--cap`` times its floor, and prints both side by side.

Uncapped (``--only uncapped``), issue 27's case: ``--uncapped-attempts`` (50) attempts of a
scenario whose simulated user and judge are models on the stand-in too (``--turns`` turns of user
then agent, one claim judged), no limit anywhere, with **default settings** (no ``*_places`` set:
the places grow) beside every participant's places set to the attempts (all at once: what the
service allows at best); with ``--before``, the default settings of the source at ``SRC`` too.
Each row: wall seconds (best of ``--repeat``), its ratio to all at once, and the most requests
the stand-in had under way at once.

Free cases (``--only free``), no limit at all, ``--free-attempts`` attempts with
``agent_places`` = each of ``--concurrency``: attempts per second against the ideal ``places /
(latency x turns)``, as a ratio; and the same requests sent by a bare asyncio loop with httpx2
alone, the baseline that shows what the machine and the HTTP client allow without convy.

**A project as users write it** (``--project``, or ``--project SHAPE ...``): each attempt a scenario
with a ``user:`` section, its simulated user an ``OpenAiModel`` (``user-model``) on the stand-in's
``/v1/chat/completions``, the agent a ``JsonAgent`` on ``/agent``, the judge a ``ChatJudge``
(``judge-model``) on the chat completions too; the stand-in's chat reply tells them apart by the
model asked: the user says a new message each turn and ``###STOP###`` after ``--turns`` answers,
the judge decides (``standin.judged``). Default settings (``Limits()``), ``--latency`` 100 ms.
Each key is a stand-in of its own with a limit of its own, the participants sharing a key reach
the same one (the same address and key: one limit counts them, as convy's pacing sees it). The
limits are real rates; the attempts of a shape are as many as keep its busiest key at its limit
for about ``--seconds`` (10). The shapes:

- ``p-b{burst}@{per_minute}``: strict buckets, each participant its own, for each ``--bursts`` (1 5
  20) x ``--rates`` (60 300 1200 3000 a minute), with ``x-ratelimit-*`` headers;
- ``p-bare@{per_minute}``: burst 1 with no header, at ``--bare-rates`` (300 3000);
- ``p-halved``: burst 1 at 1,200 a minute, halving a third of the way through the floor;
- ``p-tokens``: a token limit alone (a request's body bytes / 4), a second's worth of burst, at
  about 1,200 requests' worth a minute for each participant;
- ``p-agent+judge``, ``p-user+judge``, ``p-all``: those on one key (one 1,200-a-minute bucket),
  the others on their own; ``p-all-bare``: all three on one key with no header;
- ``p-free``: no limit, ``--free-project`` (50) attempts, beside what full concurrency allows
  (``at_once``: the same requests by a bare asyncio loop with httpx2, every attempt under way at
  once, on the same stand-ins just after the run; its target's ratio is against that, as the
  issue's "within 2x of what full concurrency allows" asks, the chain's printed as its floor);
- ``p-litellm``: LiteLLM's proxy (``.venv-proxy``, offline; the shape exists where it is
  installed) in front of the stand-in, the user's and the judge's deployments each with the
  router's ``rpm`` (``--litellm-rpm``, 300; counted per minute of the clock), both reached with
  the proxy's one key; 1.5 minutes' worth of the user's requests, started at a minute's first
  second (the wait for it is not timed).

The floor counts every participant: for each limit, what it let through (requests or tokens,
less the burst let through at once) over its rate, plus the last answer's latency; and an
attempt's chain of requests one after another (user, agent, ..., the user's last, the judge), which
is all a run needs with every attempt under way at once; the floor is the most of these. Beside
it, for buckets, the time of a client that knew each limit exactly (``knowing_floor``): every
attempt under way at once, each request sent as soon as its chain and its key's bucket allow,
worked out, not played. With answers of 100 ms the two are within 2%; with answers of a second
the attempts' requests come in waves, and it is some 1.1x the floor (p-b1@1200 11.95 s for 10.9). For
``p-litellm``, the minutes of the rpm the requests let through need; and beside it the floor of a
client that honours the proxy's Retry-After (``honest_floor``): LiteLLM asks for 60 s whatever is
left of its minute, so the minute before the last is left at its refusal, a whole 60 s before the
next requests go, up to a minute later than its turn; and outside that wait, the requests through
the proxy go no quicker than it carries them, measured before the run on a deployment of its own
with no rpm (``Litellm.capacity``: about 60 a second on 2 cores, each answered in up to a second
at the concurrency of a run where its upstream takes 0.1 s). ``BUSY_TRACE=FILE`` writes every
request and every wait of a project shape as JSON lines (``Traced``; the ``--before`` row's to
FILE-before); ``bench/busy_trace.py FILE`` says where a ``p-litellm`` run's seconds went. Printed per shape: the issue's
target, floor, wall, wall/floor, refused (429s / received, in all and per key: ``u``, ``a``,
``j``), the attempts' duration spread; with ``--before SRC`` the same shape by convy's source at
``SRC`` on the row below. The run ends with ``PROBLEMS`` if an attempt was lost or not judged, or
the stand-ins did not answer each participant exactly what the attempts needed.

    .venv/bin/python bench/busy.py                                  # every shape, about 2 minutes
    .venv/bin/python bench/busy.py --before /tmp/main/src           # and the state before, side by side
    .venv/bin/python bench/busy.py --requests 60 --only bucket1     # a quick look
    .venv/bin/python bench/busy.py --only free
    .venv/bin/python bench/busy.py --only uncapped --before /tmp/main/src
    .venv/bin/python bench/busy.py --project --before /tmp/main/src # a project, every shape, about 25 minutes
    .venv/bin/python bench/busy.py --project p-all p-free --seconds 4
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import math
import multiprocessing
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import httpx2
import msgspec

TESTS = Path(__file__).resolve().parent.parent / "tests"
SHAPES = ("bucket1", "bare", "bucket20", "window", "halved", "shared", "shared_bare", "tokens", "advice4", "advice16", "nginx")
LABELS = {
    "bucket1": "bucket, burst 1",
    "bare": "bucket, burst 1, no headers",
    "bucket20": "bucket, burst 20",
    "window": "sliding window",
    "halved": "rate halves mid-run",
    "shared": "agent + judge, one key",
    "shared_bare": "agent + judge, one key, bare",
    "tokens": "token limit (TPM)",
    "advice4": "burst 1, per_minute 1150, 4",
    "advice16": "burst 1, per_minute 1150, 16",
    "nginx": "nginx limit_req, burst 0",
}
# The advice an earlier README gave for a strict limit: a per-minute cap a little under it, and places.
ADVICE = {"advice4": {"agent_per_minute": 1150, "agent_places": 4}, "advice16": {"agent_per_minute": 1150, "agent_places": 16}}
BODY_TOKENS = 14  # about what one agent request's body counts as tokens (bytes / 4) in the stand-in
# The shapes that say nothing of their limit but a 429 with Retry-After: 1 (a second at least).
UNTOLD = ("bare", "nginx")
# The refusals any client needs to find such a limit without knowing it, each a whole second: one
# to bound it, another to find it within a few percent, unless the client opens so slowly that a
# service with no limit is held back (``bench/bare_floor.py``; bench/README.md).
REFUSALS_NEEDED = 2


def judged(request: dict[str, Any]) -> str:
    """The stand-in's chat reply for the shared case: a judge's decision."""
    return '{"reason": "it said so", "pass": true, "confidence": 0.9}'


def limit_of(shape: str, rate: float, floor: float) -> Any:
    """The stand-in's limit for a shape (built in the stand-in's process)."""
    from support.standin import Bucket, Changing, Window

    match shape:
        case "bucket1" | "shared" | "advice4" | "advice16":
            return Bucket(rate, 1)
        case "bare" | "shared_bare":
            return Bucket(rate, 1, headers=False)
        case "bucket20":
            return Bucket(rate, 20)
        case "window":
            return Window(round(rate), 1.0)
        case "halved":
            return Changing(Bucket(rate, 1), Bucket(rate / 2, 1), after=floor / 3)
        case "tokens":
            return Bucket(rate * BODY_TOKENS, rate * BODY_TOKENS, unit="tokens")
        case "nginx":
            return None  # nginx limits, in front of the stand-in
    raise ValueError(shape)


class Nginx:
    """nginx in front of a URL, limiting every request with its own ``limit_req``: ``rate`` a
    second, no burst (strict: a request sooner than 1/rate after the last admitted one is
    refused, to the millisecond), 429 with ``Retry-After: 1``, no ``x-ratelimit-*`` header. It
    counts what it received and refused from its access log."""

    def __init__(self, upstream: str, rate: float) -> None:
        self.upstream = upstream
        self.rate = rate

    def __enter__(self) -> Nginx:
        import socket
        import tempfile

        self._folder = Path(tempfile.mkdtemp(prefix="busy-nginx-"))
        with socket.socket() as probe:  # a free port, taken by nginx at once after
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        folder = self._folder
        (folder / "nginx.conf").write_text(
            f"""
worker_processes 1;
daemon off;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    log_format status '$status';
    access_log {folder}/access.log status;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    limit_req_zone $server_port zone=one:1m rate={round(self.rate)}r/s;
    limit_req_status 429;
    upstream standin {{ server {self.upstream.removeprefix("http://")}; keepalive 64; }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            limit_req zone=one;
            proxy_pass http://standin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
        error_page 429 = @busy;
        location @busy {{
            add_header Retry-After 1 always;
            return 429 '{{"error": {{"message": "Rate limit reached (nginx)"}}}}';
        }}
    }}
}}
"""
        )
        self._process = subprocess.Popen(["nginx", "-p", str(folder), "-c", str(folder / "nginx.conf")], stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"nginx did not start: {self._process.stderr.read().decode() if self._process.stderr else ''}") from None
                time.sleep(0.02)
        return self

    def statuses(self) -> Counter[str]:
        log = self._folder / "access.log"
        return Counter(log.read_text().split()) if log.exists() else Counter()

    def __exit__(self, *exc: object) -> None:
        self._process.terminate()
        self._process.wait(10)
        shutil.rmtree(self._folder, ignore_errors=True)


# --- the stand-in, in a child process -----------------------------------------------------------


def _serve(pipe: Any, settings: dict[str, Any]) -> None:
    sys.path.insert(0, str(TESTS))
    from support.standin import StandIn

    shape = settings.pop("shape", None)
    if shape is not None:
        settings["limit"] = limit_of(shape, settings.pop("rate"), settings.pop("floor"))
    if settings.pop("judge", False):
        settings["reply"] = judged
    if settings.pop("project", False):
        settings["reply"] = uncapped_reply
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
                            "refused": sum(1 for r in received if r.status == 429),
                            "answered": sum(1 for r in received if r.status == 200),
                            "answered_twice": sum(1 for r in received if r.kind == "agent" and answered[(r.conversation, r.message)] > 1) // 2,
                            "tokens": server.tokens_admitted,
                            "peak": server.peak_in_flight,
                            "errors": len(server.errors),
                            # when each request of the limited participants arrived, and whether it was let through
                            "arrivals": [(r.time, r.status == 200) for r in received],
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


# --- one limited case, played in this process ---------------------------------------------------


def scenario(turns: int, claims: int) -> Any:
    from convy import Scenario

    judge: list[Any] = [{"check": {"said": "You said"}}] + [f"The agent answers claim {n}." for n in range(1, claims + 1)]
    fields = {"id": "busy", "judge": judge, "script": [f"Message {number}." for number in range(1, turns + 1)]}
    return msgspec.convert(fields, Scenario)


def limited(shape: str, arguments: argparse.Namespace) -> dict[str, Any]:
    """Play one shape (default settings unless told); what the stand-in saw, and the wall time."""
    from convy import Absent, Bench, ChatJudge, JsonAgent, JsonEndpoint, Models, OpenAiModel, Plan
    from convy.fakes import MemoryJournal

    claims = arguments.claims if shape in ("shared", "shared_bare") else 0
    attempts = max(1, arguments.requests // arguments.turns)
    floor = attempts * arguments.turns / arguments.rate
    settings = {"latency": arguments.latency, "shape": shape, "rate": arguments.rate, "floor": floor, "judge": claims > 0}
    with Service(**settings) as service, (Nginx(service.url, arguments.rate) if shape == "nginx" else nullcontext()) as edge:
        url = edge.url if edge is not None else service.url
        agent = JsonAgent(JsonEndpoint(url + "/agent"), reply="output.text")
        judge = ChatJudge(OpenAiModel("stand-in", url + "/v1")) if claims else Absent()
        bench = Bench(agent, Models(judge=judge), limits_of(shape, arguments))
        journal = MemoryJournal()
        start = time.monotonic()  # the stand-in stamps arrivals on this clock too
        asyncio.run(bench.run(Plan((scenario(arguments.turns, claims),), attempts), journal))
        end = time.monotonic()
        wall = end - start
        stats = service.stats()
        stats["where"] = where_of(stats.pop("arrivals"), start, end, arguments.rate)
        if edge is not None:  # the stand-in saw only what nginx let through
            statuses = edge.statuses()
            stats["refused"], stats["received"] = statuses["429"], sum(statuses.values())
    stops = Counter(outcome.stop for outcome in journal.outcomes)
    judged_well = sum(1 for outcome in journal.outcomes if type(outcome.result).__name__ == "Verdict")
    durations = sorted(outcome.seconds for outcome in journal.outcomes)
    spread = [durations[min(len(durations) - 1, int(share * len(durations)))] for share in (0.5, 0.95)] + durations[-1:]
    return {"wall": wall, "attempts": attempts, "stops": dict(stops), "verdicts": judged_well, "spread": spread, **stats}


def where_of(arrivals: list[tuple[float, bool]], start: float, end: float, rate: float) -> dict[str, float]:
    """Where the wall time went, in seconds, from when the requests arrived at the stand-in: before
    the first arrived (``lead``); between the first and the last let through, beyond a whole gap of
    the rate between each two (``late``: gaps up to twice the rate's, the lateness of each send;
    ``stalls``: longer gaps, a refusal's pause or a lack of requests); after the last let through
    (``tail``: its answer, and the end of the run). For a limit of another shape than a strict
    bucket, the gaps may be shorter than the rate's: ``late`` is then what they make up for."""
    admitted = sorted(moment for moment, let in arrivals if let)
    if not arrivals or not admitted:
        return {}
    gap = 1 / rate
    gaps = [later - earlier for earlier, later in zip(admitted, admitted[1:], strict=False)]
    late = sum(seconds - gap for seconds in gaps if seconds <= 2 * gap)
    stalls = sum(seconds - gap for seconds in gaps if seconds > 2 * gap)
    ordered = sorted(seconds for seconds in gaps) or [gap]
    return {
        "lead": min(moment for moment, _ in arrivals) - start,
        "late": late,
        "stalls": stalls,
        "tail": end - admitted[-1],
        "gap_p50": ordered[len(ordered) // 2],
        "gap_min": ordered[0],
    }


def limits_of(shape: str, arguments: argparse.Namespace) -> Any:
    """A limited case's settings: the defaults, unless --agent-places or --agent-per-minute, or
    the shape is the earlier README's advice."""
    from convy import Limits

    given = {"agent_places": arguments.agent_places, "agent_per_minute": arguments.agent_per_minute, **ADVICE.get(shape, {})}
    return Limits(**{name: value for name, value in given.items() if value is not None})


def settings_of(arguments: argparse.Namespace) -> str:
    """The limited cases' settings, as the table's heading says them."""
    given = {"agent_places": arguments.agent_places, "agent_per_minute": arguments.agent_per_minute}
    changed = ", ".join(f"{name}={value}" for name, value in given.items() if value is not None)
    return f"Limits({changed})" if changed else "default settings (Limits())"


def floor_of(shape: str, result: dict[str, Any], arguments: argparse.Namespace) -> float:
    """Seconds the limit needs, at the least, for what the server let through."""
    rate = arguments.rate
    match shape:
        case "tokens":
            return result["tokens"] / (rate * BODY_TOKENS)
        case "halved":
            first = result["attempts"] * arguments.turns / rate / 3
            return first + (result["answered"] - first * rate) / (rate / 2)
        case "bucket20":  # the first 20 need no wait
            return (result["answered"] - 20) / rate
        case _:
            return result["answered"] / rate


def child(shape: str, arguments: argparse.Namespace, source: str, cap: float) -> dict[str, Any] | None:
    """One shape played by convy's source at ``source`` in a child process; None when it ran past ``cap`` s."""
    command = [sys.executable, __file__, "--case", shape, *sys.argv[1:]]
    environment = {**os.environ, "PYTHONPATH": source}
    # A session of its own, so that one cut off ends with what it started (its stand-ins, a
    # LiteLLM proxy), which would otherwise outlive it.
    process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=cap)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 15)
        process.communicate()
        return None
    if process.returncode:
        return {"failed": (err.strip().splitlines() or ["no output"])[-1]}
    return json.loads(out.strip().splitlines()[-1])


def shown(shape: str, result: dict[str, Any] | None, arguments: argparse.Namespace, cap: float) -> str:
    if result is None:
        return f"{'> ' + format(cap / (arguments.requests / arguments.rate), '.1f'):>6}x  (cut off at {cap:.0f} s)"
    if "failed" in result:
        return f"failed: {result['failed'][:60]}"
    floor = floor_of(shape, result, arguments)
    share = result["refused"] / result["received"] if result["received"] else 0.0
    spread = "/".join(f"{seconds:.1f}" for seconds in result.get("spread", ()))
    return f"{result['wall'] / floor:6.2f}x {result['refused']:4d}/{result['received']:<4d} {share:5.1%}   {spread:<14}"


def spent(result: dict[str, Any] | None) -> str:
    """Where a case's wall time went (``where_of``), in seconds."""
    where = (result or {}).get("where")
    if not where:
        return ""
    return (
        f"lead {where['lead']:.2f} late {where['late']:.2f} stalls {where['stalls']:.2f} tail {where['tail']:.2f}"
        f" gap {where['gap_p50'] * 1000:.1f}ms"
    )


def bound_of(shape: str, arguments: argparse.Namespace) -> str:
    """What a limit that tells nothing allows at best: the rate is found only by being refused,
    each refusal costs a whole Retry-After (1 s), and nothing is sent meanwhile. Two refusals are
    what any client needs that does not know the limit and does not hold a service with no limit
    back (``bench/bare_floor.py``: a first to bound the limit, a second to find it within a few
    percent), as convy finds it too."""
    if shape not in UNTOLD:
        return ""
    floor = arguments.requests / arguments.rate
    return f"   best: {1 + REFUSALS_NEEDED / floor:.2f}x ({REFUSALS_NEEDED} refusals x 1 s)"


def problems_of(shape: str, result: dict[str, Any], arguments: argparse.Namespace) -> list[str]:
    """What went wrong that should not: a message answered twice, a server error, an attempt lost."""
    problems = []
    if result["answered_twice"]:
        problems.append(f"{shape}: {result['answered_twice']} agent messages answered twice")
    if sum(result["stops"].values()) != result["attempts"]:
        problems.append(f"{shape}: {sum(result['stops'].values())} of {result['attempts']} attempts recorded")
    if result["errors"]:
        problems.append(f"{shape}: the stand-in had {result['errors']} errors")
    unfinished = {stop: count for stop, count in result["stops"].items() if stop != "finished"}
    if unfinished:
        problems.append(f"{shape}: attempts that did not finish: {unfinished}")
    return problems


# --- a project as users write it: a simulated user, an agent and a judge, each on a model ---------
# Each participant reaches a stand-in of its own with a key of its own (one limit each), or shares
# one with the others its shape names (one key, one limit counting them all). The stand-ins of a
# case run together in one child process, each on its own port and thread.

PARTS = ("user", "agent", "judge")
MODELS = {"user": "user-model", "judge": "judge-model"}
# What each participant's request carries, about, in tokens (bytes / 4, as the stand-in counts
# them) at 3 turns: the token limit's rate is set from these so its floor is near the others'.
TOKENS = {"user": 390, "agent": 32, "judge": 450}
INSTRUCTIONS = "You are Dana. Your parcel is late and you want to know when it comes."


class Project(msgspec.Struct, frozen=True):
    """One shape of the project bench: which participants share a key (``keys``, each group one
    stand-in and one limit), the limit each key has, its rate, and the target the issue sets."""

    name: str
    label: str
    keys: tuple[tuple[str, ...], ...]
    limit: str  # "bucket", "halved", "tokens", "litellm" (the proxy's rpm for the user and the judge) or "none"
    per_minute: float = 0.0
    burst: float = 1.0
    headers: bool = True
    target: float = 1.10
    attempts: int = 0  # 0: as many as make the floor about --seconds

    def rate(self) -> float:
        return self.per_minute / 60


def projects(arguments: argparse.Namespace) -> dict[str, Project]:
    """Every project shape, by name, for the rates and bursts asked."""
    own = tuple((part,) for part in PARTS)
    found: list[Project] = []
    for burst in arguments.bursts:
        for per_minute in arguments.rates:
            label = f"bucket {burst:g}, {per_minute:g}/min"
            found.append(Project(f"p-b{burst:g}@{per_minute:g}", label, own, "bucket", per_minute, burst))
    for per_minute in arguments.bare_rates:
        found.append(Project(f"p-bare@{per_minute:g}", f"bucket 1, {per_minute:g}/min, no headers", own, "bucket", per_minute, headers=False))
    middle = 1200.0
    found += [
        Project("p-halved", f"bucket 1, {middle:g}/min, halves", own, "halved", middle),
        Project("p-tokens", f"token limit, ~{middle:g} req/min", own, "tokens", middle),
        Project("p-agent+judge", f"agent+judge one key, {middle:g}/min", (("user",), ("agent", "judge")), "bucket", middle, target=1.15),
        Project("p-user+judge", f"user+judge one key, {middle:g}/min", (("user", "judge"), ("agent",)), "bucket", middle, target=1.15),
        Project("p-all", f"all three one key, {middle:g}/min", (PARTS,), "bucket", middle, target=1.15),
        Project("p-all-bare", f"all three one key, {middle:g}/min, bare", (PARTS,), "bucket", middle, headers=False, target=1.15),
        Project("p-free", f"no limit, {arguments.free_project} attempts", own, "none", target=2.0, attempts=arguments.free_project),
    ]
    if LITELLM.is_file():
        label = f"LiteLLM proxy, u & j rpm {arguments.litellm_rpm:g}"
        found.append(Project("p-litellm", label, own, "litellm", arguments.litellm_rpm))
    return {project.name: project for project in found}


def asked_of(arguments: argparse.Namespace) -> dict[str, int]:
    """Requests each participant sends in an attempt: the user's first message and one after each
    answer (the last says it is done), the agent's turns, the judge's claims."""
    return {"user": arguments.turns + 1, "agent": arguments.turns, "judge": arguments.claims}


def attempts_of(project: Project, arguments: argparse.Namespace) -> int:
    """Attempts that keep the busiest key at its limit for about ``--seconds``."""
    if project.attempts:
        return project.attempts
    asked = asked_of(arguments)
    if project.limit == "litellm":  # half as many again as a minute of the user's deployment
        return max(1, round(1.5 * project.per_minute / asked["user"]))
    busiest = max(sum(asked[part] for part in group) for group in project.keys)
    burst = project.burst if project.limit == "bucket" else 0  # let through at once: not in the floor
    return max(1, round((arguments.seconds * project.rate() + burst) / busiest))


def chain_of(arguments: argparse.Namespace) -> float:
    """An attempt's requests one after another, each answered after the latency: what a run takes
    at the least with every attempt under way at once (its judge's claims asked at once)."""
    asked = asked_of(arguments)
    return (asked["user"] + asked["agent"] + min(1, asked["judge"])) * arguments.latency


def knowing_floor(project: Project, attempts: int, arguments: argparse.Namespace) -> float:
    """What a client that knows every limit exactly, with no places to hold it back, takes: every
    attempt under way at once, each request sent as soon as its attempt's chain has the answer
    before it and its key's bucket (``project.rate()``, burst ``project.burst``, halved after a
    third of the planned floor for ``halved``) has a unit, the requests of a key in the order they
    came to send, each answered after the latency (the judge's claims asked at once). ``project_floor``
    counts what the busiest limit lets through and one attempt's chain, each alone; with slow
    answers the attempts' requests come in waves (an attempt's user requests two latencies apart),
    which no client can spread over the limit evenly, and this is what one that knew the limits
    could reach. Nothing here is timed: the requests' moments are worked out. 0 for a limit it does
    not play (tokens, the proxy's, none)."""
    if project.limit not in ("bucket", "halved"):
        return 0.0
    asked = asked_of(arguments)
    chain = ["user", "agent"] * asked["agent"] + ["user"]
    key_of = {part: index for index, group in enumerate(project.keys) for part in group}
    rate, burst = project.rate(), project.burst
    halves_at = planned_floor(project, arguments) / 3 if project.limit == "halved" else math.inf
    units = [burst] * len(project.keys)  # each key's bucket, full at the start
    counted = [0.0] * len(project.keys)  # when each was last counted: its latest send

    def grown(have: float, since: float, until: float) -> float:
        """A key's ``have`` units at ``since``, grown by ``until`` (at the rate, halved from halves_at)."""
        whole = max(0.0, min(until, halves_at) - since)
        halved = max(0.0, until - max(since, halves_at))
        return min(burst, have + rate * whole + rate / 2 * halved)

    def unit_at(key: int, moment: float) -> float:
        """The first moment from ``moment`` on, and no sooner than the key's latest send, at which
        the key has a unit; taken."""
        now = max(moment, counted[key])
        have = grown(units[key], counted[key], now)
        if have < 1.0:
            if now < halves_at and now + (1.0 - have) / rate <= halves_at:
                now += (1.0 - have) / rate
            else:
                have = grown(have, now, max(now, halves_at))
                now = max(now, halves_at) + (1.0 - have) / (rate / 2)
            have = 1.0
        units[key], counted[key] = have - 1.0, now
        return now

    ready = [(0.0, number, 0) for number in range(attempts)]  # (when it may go, attempt, step)
    heapq.heapify(ready)
    end = 0.0
    while ready:
        moment, number, step = heapq.heappop(ready)
        if step == len(chain):  # the judge's claims, asked at once
            answered = max(unit_at(key_of["judge"], moment) for _ in range(asked["judge"])) + arguments.latency
        else:
            answered = unit_at(key_of[chain[step]], moment) + arguments.latency
            if step + 1 < len(chain) or asked["judge"]:
                heapq.heappush(ready, (answered, number, step + 1))
        end = max(end, answered)
    return end


def planned_floor(project: Project, arguments: argparse.Namespace) -> float:
    asked = asked_of(arguments)
    attempts = attempts_of(project, arguments)
    if project.limit == "none":
        return chain_of(arguments)
    if project.limit == "litellm":  # from the first second of a minute, to the next one
        return 59.0
    busiest = max(sum(asked[part] for part in group) for group in project.keys)
    return max(chain_of(arguments), attempts * busiest / project.rate())


def project_reply(request: dict[str, Any], turns: int) -> str:
    """The stand-in's chat reply, for the simulated user (a new message each turn, done after
    ``turns`` answers) or the judge (its decision), told apart by the model asked."""
    from support.standin import judged

    if request.get("model") == MODELS["judge"]:
        return judged(request)
    said = sum(1 for message in request["messages"] if message.get("role") == "assistant")
    if said >= turns:
        return "###STOP###"
    return f"Question {said + 1}: could you check where it is now and when it will be here?"


def limit_built(project: Project, group: tuple[str, ...], after: float) -> Any:
    """A key's limit, built in the stand-ins' process."""
    from support.standin import Bucket, Changing

    rate = project.rate()
    match project.limit:
        case "bucket":
            return Bucket(rate, project.burst, headers=project.headers)
        case "halved":
            return Changing(Bucket(rate, 1, headers=project.headers), Bucket(rate / 2, 1, headers=project.headers), after=after)
        case "tokens":
            tokens = rate * sum(TOKENS[part] for part in group)
            return Bucket(tokens, tokens, unit="tokens", headers=project.headers)
        case "none" | "litellm":
            return None
    raise ValueError(project.limit)


def _serve_project(pipe: Any, project: Project, latency: float, turns: int, after: float) -> None:
    sys.path.insert(0, str(TESTS))
    from contextlib import ExitStack
    from functools import partial

    from support.standin import StandIn

    with ExitStack() as stack:
        servers = [
            stack.enter_context(
                StandIn(latency=latency, api_key=key_of(group), limit=limit_built(project, group, after), reply=partial(project_reply, turns=turns))
            )
            for group in project.keys
        ]
        pipe.send([server.url for server in servers])
        while True:
            match pipe.recv():
                case "stats":
                    pipe.send([_stats(server) for server in servers])
                case _:
                    pipe.send(None)
                    return


def _stats(server: Any) -> dict[str, Any]:
    # Not the requests of the LiteLLM proxy's probe of what it carries (``Litellm.capacity``).
    received = [record for record in server.received if record.kind in ("agent", "chat") and (record.json or {}).get("model") != PROBE]
    who = Counter(
        ("agent" if record.kind == "agent" else "judge" if (record.json or {}).get("model") == MODELS["judge"] else "user")
        for record in received
        if record.status == 200
    )
    return {
        "received": len(received),
        "refused": sum(1 for record in received if record.status == 429),
        "answered": sum(1 for record in received if record.status == 200),
        "who": dict(who),
        "tokens": server.tokens_admitted,
        "errors": len(server.errors),
    }


def key_of(group: tuple[str, ...]) -> str:
    return "key-" + "-".join(group)


class Stands:
    """A case's stand-ins in a child process: their URLs while they run, and what each received."""

    def __init__(self, project: Project, arguments: argparse.Namespace) -> None:
        self.arguments = (project, arguments.latency, arguments.turns, planned_floor(project, arguments) / 3)

    def __enter__(self) -> Stands:
        context = multiprocessing.get_context("spawn")
        self._pipe, theirs = context.Pipe()
        self._process = context.Process(target=_serve_project, args=(theirs, *self.arguments), daemon=True)
        self._process.start()
        self.urls: list[str] = self._pipe.recv()
        return self

    def stats(self) -> list[dict[str, Any]]:
        self._pipe.send("stats")
        return self._pipe.recv()

    def __exit__(self, *exc: object) -> None:
        self._pipe.send("stop")
        self._pipe.recv()
        self._process.join(10)


def project_scenario(arguments: argparse.Namespace) -> Any:
    from convy import Scenario

    claims = [f"The agent answered question {number}." for number in range(1, arguments.claims + 1)]
    fields = {"id": "parcel", "user": INSTRUCTIONS, "max_turns": arguments.turns + 2, "judge": claims}
    return msgspec.convert(fields, Scenario)


class Traced:
    """Where ``BUSY_TRACE`` names a file, every request of the run as JSON lines: who (the model,
    or the path), when it was sent, on the wire (its head written, where the HTTP layer told) and
    answered (the clock's seconds), its status, what is left
    that the answer said and the wait a refusal asked for; and after the run each wait convy chose
    (``Outcome.waits``, who, from when, how long, why). A hook of the bench's, around the HTTP
    layer's one request (``JsonConnection._response``): convy itself keeps no such log."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.rows: list[dict[str, Any]] = []

    def __enter__(self) -> Traced:
        import contextvars

        from convy import http

        self._connection, self._original = http.JsonConnection, http.JsonConnection._response
        self._wire, self._hook = http.OnTheWire, http.OnTheWire.__call__
        rows, original, hook = self.rows, self._original, self._hook
        current: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("traced", default=None)

        async def on_the_wire(wire: Any, event: str, info: dict[str, Any]) -> None:
            await hook(wire, event, info)
            row = current.get()
            if row is not None and event.endswith(".send_request_headers.complete"):
                row["wire"] = time.time()  # when its head was written: the moment the limit counts, give or take the way

        async def traced(connection: Any, body: Any, path: str) -> Any:
            row: dict[str, Any] = {"who": (body.get("model") if isinstance(body, dict) else None) or path, "sent": time.time()}
            current.set(row)
            try:
                response = await original(connection, body, path)
            except Exception as error:
                row |= {"answered": time.time(), "status": type(error).__name__, "wait": getattr(error, "retry_after", None)}
                rows.append(row)
                raise
            row |= {"answered": time.time(), "status": 200, "left": response.headers.get("x-ratelimit-remaining-requests")}
            rows.append(row)
            return response

        http.JsonConnection._response = traced  # type: ignore[method-assign]
        http.OnTheWire.__call__ = on_the_wire  # type: ignore[method-assign]
        return self

    def waits(self, outcomes: Any) -> None:
        from datetime import datetime

        for outcome in outcomes:
            began = datetime.fromisoformat(outcome.started).timestamp()
            for wait in outcome.waits:
                self.rows.append({"wait": wait.why, "who": wait.who, "from": began + wait.start, "seconds": wait.seconds})

    def __exit__(self, *exc: object) -> None:
        self._connection._response = self._original  # type: ignore[method-assign]
        self._wire.__call__ = self._hook  # type: ignore[method-assign]
        with open(self.path, "w") as file:
            file.writelines(json.dumps(row) + "\n" for row in self.rows)


def played(name: str, arguments: argparse.Namespace) -> dict[str, Any]:
    """Play one project shape with default settings; what each stand-in saw, and the wall time."""
    from pydantic import SecretStr

    from convy import Bench, ChatJudge, JsonAgent, JsonEndpoint, Limits, Models, OpenAiModel, Plan
    from convy.fakes import MemoryJournal

    project = projects(arguments)[name]
    attempts = attempts_of(project, arguments)
    with Stands(project, arguments) as stands:
        url = {part: stands.urls[index] for index, group in enumerate(project.keys) for part in group}
        key = {part: key_of(group) for group in project.keys for part in group}
        proxy = Litellm(url, key, project.per_minute) if project.limit == "litellm" else nullcontext()
        capacity = 0.0
        with proxy as edge:
            if edge is not None:  # the user and the judge reach the proxy, with its key
                url |= {"user": edge.url, "judge": edge.url}
                key |= {"user": PROXY_KEY, "judge": PROXY_KEY}
                capacity = edge.capacity()
                time.sleep((61 - time.time() % 60) % 60)  # from the first second of a minute, as the proxy counts them
            agent = JsonAgent(JsonEndpoint(url["agent"] + "/agent", {"authorization": f"Bearer {key['agent']}"}), reply="output.text")
            user = OpenAiModel(MODELS["user"], url["user"] + "/v1", key=SecretStr(key["user"]))
            judge = ChatJudge(OpenAiModel(MODELS["judge"], url["judge"] + "/v1", key=SecretStr(key["judge"])))
            bench = Bench(agent, Models(user=user, judge=judge), Limits())
            journal = MemoryJournal()
            second = time.time() % 60
            spent = edge.cpu() if edge is not None else 0.0
            trace = os.environ.get("BUSY_TRACE")
            if trace and getattr(arguments, "case", None):  # the --before child's, beside the run's
                trace += "-before"
            with Traced(trace) if trace else nullcontext() as traced:
                started = time.time()
                start = time.monotonic()
                asyncio.run(bench.run(Plan((project_scenario(arguments),), attempts), journal))
                wall = time.monotonic() - start
                if traced is not None:
                    traced.rows.append({"start": started, "wall": wall})
                    traced.waits(journal.outcomes)
            stats = stands.stats()
            statuses = edge.statuses() if edge is not None else Counter()
            spent = edge.cpu() - spent if edge is not None else 0.0
            full = 0.0
            if project.limit == "none":  # what full concurrency allows, on the same stand-ins, after the run
                start = time.monotonic()
                asyncio.run(at_once(url, key, attempts, arguments.turns))
                full = time.monotonic() - start
    stops = Counter(outcome.stop for outcome in journal.outcomes)
    verdicts = sum(1 for outcome in journal.outcomes if type(outcome.result).__name__ == "Verdict")
    durations = sorted(outcome.seconds for outcome in journal.outcomes)
    spread = [durations[min(len(durations) - 1, int(share * len(durations)))] for share in (0.5, 0.95)] + durations[-1:]
    proxied = {"received": sum(statuses.values()), "refused": statuses["429"], "capacity": capacity, "cpu": spent}
    return {
        "wall": wall,
        "attempts": attempts,
        "stops": dict(stops),
        "verdicts": verdicts,
        "spread": spread,
        "keys": stats,
        "second": second,
        "proxy": proxied,
        "full": full,
    }


async def at_once(url: dict[str, str], key: dict[str, str], attempts: int, turns: int) -> None:
    """A project's requests with every attempt under way at once and nothing else: a bare asyncio
    loop with httpx2 alone, one client per participant as convy keeps, each attempt's chain one
    request after another (the user's, the agent's, ..., the user's last, the judge's), bodies the
    size of convy's. What full concurrency allows on this machine, the yardstick of ``p-free``."""
    context = httpx2.create_ssl_context(trust_env=False)
    clients = {
        part: httpx2.AsyncClient(verify=context, trust_env=False, timeout=60, headers={"authorization": f"Bearer {key[part]}"})
        for part in ("user", "agent", "judge")
    }

    async def chat(part: str, messages: list[dict[str, str]]) -> str:
        response = await clients[part].post(url[part] + "/v1/chat/completions", json={"model": MODELS[part], "messages": messages})
        response.raise_for_status()
        return str(response.json()["choices"][0]["message"]["content"])

    async def attempt(number: int) -> None:
        said: list[dict[str, str]] = [{"role": "system", "content": INSTRUCTIONS}]
        for _ in range(turns):
            message = await chat("user", said)
            response = await clients["agent"].post(url["agent"] + "/agent", json={"message": message, "session": str(number)})
            response.raise_for_status()
            said += [{"role": "assistant", "content": message}, {"role": "user", "content": str(response.json())}]
        await chat("user", said)
        dialogue = "\n".join(f"{line['role'].upper()}: {line['content']}" for line in said[1:])
        await chat("judge", [{"role": "user", "content": f"{dialogue}\nThe claim: The agent answered question 1."}])

    try:
        await asyncio.gather(*(attempt(number) for number in range(attempts)))
    finally:
        for client in clients.values():
            await client.aclose()


def project_floor(project: Project, result: dict[str, Any], arguments: argparse.Namespace) -> float:
    """Seconds the run needs at the least: for each key, what its limit let through over its rate
    (the burst a bucket lets through at once taken off; for ``halved``, the slower part after a
    third of the planned floor), and the answer to the last; and an attempt's chain of requests;
    the most of these."""
    floors = [chain_of(arguments)]
    rate = project.rate()
    for group, stat in zip(project.keys, result["keys"], strict=True):
        match project.limit:
            case "bucket":
                floors.append(max(0.0, stat["answered"] - project.burst) / rate + arguments.latency)
            case "halved":
                first = planned_floor(project, arguments) / 3
                floors.append(first + max(0.0, stat["answered"] - first * rate) / (rate / 2) + arguments.latency)
            case "tokens":
                tokens = rate * sum(TOKENS[part] for part in group)
                floors.append(max(0.0, stat["tokens"] - tokens) / tokens + arguments.latency)
            case "litellm" if group != ("agent",):  # a new minute for each rpm more
                minutes = math.ceil(stat["who"].get(group[0], 0) / project.per_minute)
                if minutes > 1:
                    floors.append(60 - result["second"] + 60 * (minutes - 2) + arguments.latency)
            case _:
                pass
    return max(floors)


# The wait LiteLLM's router asks for when a deployment's rpm is used up: the whole minute, whatever
# is left of it (``llm_provider-retry-after: 60``; http.RetryAfter).
PROXY_WAIT = 60.0


def honest_floor(project: Project, result: dict[str, Any], arguments: argparse.Namespace) -> float:
    """``project_floor`` for ``p-litellm`` as a client that honours the proxy's Retry-After can
    reach it: the minute before the last one a key's requests need is used up no sooner than it
    begins, its next request is refused then (nothing else tells a client it is used up), and the
    proxy asks for PROXY_WAIT from that refusal, not for what is left of the minute. So the
    minutes but the last are each a whole wait; and outside the waits, every request through the
    proxy goes at what the proxy carries a second at the most (``Litellm.capacity``, measured
    before the run): the key's requests, and the judge's of the attempts whose user's last
    request came after the last wait (each judged after it), then the last answer's latency.
    Without the proxy's capacity counted, the floor took it for instant: a run that sent each
    minute's requests as quickly as the proxy answers them was still 13 s over it (13 s of 73)."""
    floors = [project_floor(project, result, arguments)]
    asked = asked_of(arguments)
    capacity = result["proxy"].get("capacity") or math.inf
    for group, stat in zip(project.keys, result["keys"], strict=True):
        if group == ("agent",):
            continue
        let_through = stat["who"].get(group[0], 0)
        minutes = math.ceil(let_through / project.per_minute)
        after = max(0, let_through - (minutes - 1) * (project.per_minute - 1))  # the router lets rpm - 1 through a minute
        judged = math.ceil(after / asked["user"]) if group == ("user",) else 0
        floors.append(PROXY_WAIT * (minutes - 1) + (let_through + judged) / capacity + arguments.latency)
    return max(floors)


def project_problems(name: str, result: dict[str, Any], arguments: argparse.Namespace) -> list[str]:
    """What went wrong that should not: an attempt lost or not judged, a stand-in's error, or the
    stand-ins' answers not what the attempts needed (a request answered twice, or one missing)."""
    problems = []
    answered: Counter[str] = Counter()
    for stat in result["keys"]:
        answered.update(stat["who"])
    needed = {part: count * result["attempts"] for part, count in asked_of(arguments).items()}
    if dict(answered) != needed:
        problems.append(f"{name}: the stand-ins answered {dict(answered)}, the attempts needed {needed}")
    if sum(result["stops"].values()) != result["attempts"]:
        problems.append(f"{name}: {sum(result['stops'].values())} of {result['attempts']} attempts recorded")
    if any(stat["errors"] for stat in result["keys"]):
        problems.append(f"{name}: the stand-ins had {sum(stat['errors'] for stat in result['keys'])} errors")
    unfinished = {stop: count for stop, count in result["stops"].items() if stop != "finished"}
    if unfinished:
        problems.append(f"{name}: attempts that did not finish: {unfinished}")
    if result["verdicts"] != result["attempts"]:
        problems.append(f"{name}: {result['verdicts']} of {result['attempts']} attempts judged")
    return problems


def project_shown(project: Project, result: dict[str, Any] | None, arguments: argparse.Namespace, cap: float) -> str:
    if result is None:
        return f"cut off at {cap:.0f} s (> {cap / planned_floor(project, arguments):.1f}x the planned floor)"
    if "failed" in result:
        return f"failed: {result['failed'][:80]}"
    floor = project_floor(project, result, arguments)
    refused = sum(stat["refused"] for stat in result["keys"])
    received = sum(stat["received"] for stat in result["keys"])
    each = " ".join(
        f"{'+'.join(part[0] for part in group)} {stat['refused']}/{stat['received']}"
        for group, stat in zip(project.keys, result["keys"], strict=True)
    )
    honest = ""
    if project.limit == "litellm":  # the proxy refuses; the stand-ins behind it see what it let through
        refused, received = result["proxy"]["refused"], result["proxy"]["received"]
        each = f"proxy {result['proxy']['refused']}/{result['proxy']['received']}"
        waited = honest_floor(project, result, arguments)
        carried = result["proxy"].get("capacity", 0.0)
        honest = (
            f"   honouring its {PROXY_WAIT:g} s at {carried:.0f} req/s through it: floor {waited:.1f}, {result['wall'] / waited:.2f}x;"
            f" its CPU {result['proxy'].get('cpu', 0.0):.1f} s"
        )
    spread = "/".join(f"{seconds:.1f}" for seconds in result["spread"])
    if not project.headers:  # its target's ratio too, against the floor plus the refusals needed
        honest = f"   {result['wall'] / (floor + REFUSALS_NEEDED):.2f}x(F+{REFUSALS_NEEDED}s)"
    if result.get("full"):  # against what full concurrency allows here: its target's ratio
        honest = f"   all at once {result['full']:.2f} s: {result['wall'] / result['full']:.2f}x"
    knowing = knowing_floor(project, result["attempts"], arguments)
    if knowing:
        honest += f"   knowing {knowing:.1f} s: {result['wall'] / knowing:.2f}x"
    return (
        f"{floor:6.1f} {result['wall']:6.1f} {result['wall'] / floor:6.2f}x {refused / max(1, received):6.1%}"
        f"  {each:<24} {spread}{honest}"
    )


def project_target(project: Project, arguments: argparse.Namespace) -> str:
    """The issue's target for a shape; where only a 429 tells, the refusals any client needs
    added to the floor (``REFUSALS_NEEDED`` Retry-Afters of a second, on the busiest key)."""
    if project.limit == "none":
        return f"<={project.target:g}x all at once"
    if not project.headers:
        return f"<={project.target:.2f}x(F+{REFUSALS_NEEDED}s)"
    return f"<={project.target:.2f}x, <=1%"


def play_projects(names: list[str], arguments: argparse.Namespace) -> list[str]:
    """Every project shape asked, with the state before beside it; the problems seen."""
    every = projects(arguments)
    print(
        f"\nA project as users write it: a simulated user ({MODELS['user']}) and a ChatJudge ({MODELS['judge']}) on the"
        f" stand-in's chat completions, a JsonAgent on its /agent; {arguments.turns} turns and {arguments.claims} claim(s)"
        f" an attempt; answered after {arguments.latency * 1000:g} ms; default settings (Limits()). Each key its own"
        f" stand-in and limit (u/a/j: user, agent, judge); attempts make the busiest key's floor about {arguments.seconds:g} s."
        f"\nfloor = max(requests or tokens each limit let through / its rate, an attempt's chain {chain_of(arguments):.1f} s)."
        "\nknowing = what a client that knew each bucket's limit exactly would take, every attempt under way at once."
    )
    print(f"{'shape':<34} {'target':<16} {'':<7} {'floor':>6} {'wall':>6} {'ratio':>7} {'refused':>7}  {'per key':<24} attempt s p50/p95/max")
    problems: list[str] = []
    for name in names:
        project = every[name]
        # and the time to start: LiteLLM's proxy takes seconds, then waits for a minute's first
        cap = arguments.cap * planned_floor(project, arguments) + (150 if project.limit == "litellm" else 30)
        result = played(name, arguments)
        print(f"{project.label:<34} {project_target(project, arguments):<16} {'now':<7} {project_shown(project, result, arguments, cap)}", flush=True)
        if arguments.before:
            earlier = child(name, arguments, arguments.before, cap)
            print(f"{'':<34} {'':<16} {'before':<7} {project_shown(project, earlier, arguments, cap)}", flush=True)
        problems += project_problems(name, result, arguments)
    return problems


# --- LiteLLM's proxy with its own rate limits, in front of the stand-in ------------------------

LITELLM = TESTS.parent / ".venv-proxy" / "bin" / "litellm"
PROXY_KEY = "sk-bench-proxy"
PROBE = "probe-model"  # a deployment of the proxy's with no rpm, to measure what it carries a second
PROBES = 320  # requests of the probe: about 5 s at what the proxy carries on 2 cores
PROBING = 64  # at once: about as many as a run has under way through the proxy before its refusal


class Litellm:
    """LiteLLM's proxy (``.venv-proxy``, offline) on a free port, in front of the stand-in's chat
    completions: the simulated user's and the judge's models are two deployments, each with the
    router's own ``rpm`` limit (usage-based-routing-v2: requests counted per minute of the
    clock, a request over it refused with a 429 and not retried), both reached with the proxy's
    one key, as a team's project reaches its proxy."""

    def __init__(self, upstream: dict[str, str], keys: dict[str, str], rpm: float) -> None:
        self.upstream = upstream
        self.keys = keys
        self.rpm = rpm

    def __enter__(self) -> Litellm:
        import socket
        import tempfile

        self._folder = Path(tempfile.mkdtemp(prefix="busy-litellm-"))
        config = {
            "model_list": [
                {
                    "model_name": MODELS[part],
                    "litellm_params": {
                        "model": f"openai/{MODELS[part]}",
                        "api_base": self.upstream[part] + "/v1",
                        "api_key": self.keys[part],
                        "rpm": round(self.rpm),
                    },
                }
                for part in ("user", "judge")
            ]
            + [  # no rpm: what the proxy itself carries a second (``capacity``)
                {"model_name": PROBE, "litellm_params": {"model": f"openai/{PROBE}", "api_base": self.upstream["user"] + "/v1", "api_key": self.keys["user"]}}
            ],
            "router_settings": {"num_retries": 0, "routing_strategy": "usage-based-routing-v2"},
        }
        (self._folder / "config.yaml").write_text(json.dumps(config))  # JSON is YAML
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        environment = {
            **{name: value for name, value in os.environ.items() if not name.startswith(("CONVY_", "OPENAI_", "LITELLM_"))},
            "LITELLM_MASTER_KEY": PROXY_KEY,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # the price map shipped with it: no fetch
        }
        self._log = (self._folder / "proxy.log").open("wb")
        self._probed: Counter[str] = Counter()
        self._process = subprocess.Popen(
            [str(LITELLM), "--config", str(self._folder / "config.yaml"), "--host", "127.0.0.1", "--port", str(port)],
            cwd=self._folder,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx2.get(self.url + "/health/liveliness", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"LiteLLM's proxy did not start: {(self._folder / 'proxy.log').read_text()[-2000:]}")
            time.sleep(0.2)
        return self

    def statuses(self) -> Counter[str]:
        """The status of each chat request of the run the proxy answered, from its access log (the
        probe's taken off)."""
        found = re.findall(r'"POST /v1/chat/completions HTTP/1.1" (\d{3})', (self._folder / "proxy.log").read_text(errors="replace"))
        return Counter(found) - self._probed

    def capacity(self) -> float:
        """Requests a second the proxy carries to its upstream and back, PROBES of them PROBING at
        once on its deployment with no rpm, measured here, before the run, on the same machine:
        a Python process that parses, routes, logs and forwards each request, which on 2 cores
        with the stand-ins and the client beside it answers about 60 a second whatever the
        concurrency (16 at once: 51 a second, 0.32 s each; 64: 65, 0.97 s; 128: 67, 1.65 s;
        upstream 0.1 s). No client goes quicker through it; the floor counts it."""

        # About as long as the user's and the judge's requests (TOKENS): the proxy counts the
        # tokens of each, for its usage-based routing.
        content = "Where is my parcel now, and when will it be here? " * 32
        body = {"model": PROBE, "messages": [{"role": "user", "content": content}]}

        async def probed() -> float:
            left = list(range(PROBES))
            async with httpx2.AsyncClient(trust_env=False, timeout=60) as client:

                async def one() -> None:
                    response = await client.post(self.url + "/v1/chat/completions", json=body, headers={"authorization": f"Bearer {PROXY_KEY}"})
                    response.raise_for_status()

                async def each() -> None:
                    while left:
                        left.pop()
                        await one()

                await one()  # a first request alone: the proxy's first of a deployment sets it up
                start = time.monotonic()
                await asyncio.gather(*(each() for _ in range(PROBING)))
                return PROBES / (time.monotonic() - start)

        self._probed = Counter()
        rate = asyncio.run(probed())
        self._probed = self.statuses()
        return rate

    def cpu(self) -> float:
        """Seconds of CPU the proxy's process has spent so far (Linux's /proc; 0 elsewhere): one
        Python process, which no more than one core runs at a time."""
        try:
            fields = Path(f"/proc/{self._process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __exit__(self, *exc: object) -> None:
        self._process.terminate()
        try:
            self._process.wait(30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._log.close()
        shutil.rmtree(self._folder, ignore_errors=True)


# --- free cases: nothing limits ----------------------------------------------------------------


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


def free(places: int, arguments: argparse.Namespace) -> str:
    """The best of ``--repeat`` runs of convy's Bench and of the bare loop, nothing limiting either."""
    from convy import Bench, JsonAgent, JsonEndpoint, Limits, Models, Plan
    from convy.fakes import MemoryJournal

    attempts, turns = arguments.free_attempts, arguments.turns
    convy_runs, bare_runs = [], []
    with Service(latency=arguments.latency) as service:
        for _ in range(arguments.repeat):  # interleaved, so a burst of other work hits both alike
            agent = JsonAgent(JsonEndpoint(service.url + "/agent"), reply="output.text")
            bench = Bench(agent, Models(), Limits(agent_places=places))
            start, cpu = time.perf_counter(), time.process_time()
            asyncio.run(bench.run(Plan((scenario(turns, 0),), attempts), MemoryJournal()))
            convy_runs.append((time.perf_counter() - start, time.process_time() - cpu))
            if not arguments.no_baseline:
                start, cpu = time.perf_counter(), time.process_time()
                asyncio.run(bare(service.url, attempts, turns, places))
                bare_runs.append((time.perf_counter() - start, time.process_time() - cpu))
    ideal = places / (arguments.latency * turns)
    rows = [f"agent_places={places}: ideal {ideal:.1f} attempts/s"]
    for name, runs in (("convy Bench", convy_runs), ("bare httpx2", bare_runs)):
        if runs:
            wall, cpu = min(runs)
            rows.append(
                f"  {name:<14} {wall:6.1f} s {attempts / wall:7.1f}/s  ratio {attempts / wall / ideal:4.2f}"
                f"   CPU {cpu / attempts * 1000:5.2f} ms/attempt"
            )
    return "\n".join(rows)


# --- uncapped: no limit, no places set (issue 27, item 3) ---------------------------------------


def uncapped_reply(request: dict[str, Any]) -> str:
    """The stand-in's chat reply in a project whose user and judge are models: a judge's decision
    when asked about a claim, else the simulated user's next message."""
    sys.path.insert(0, str(TESTS))
    from support.standin import judged as decided

    messages = request.get("messages", [{}])
    asked = str(messages[-1].get("content", ""))
    return decided(request) if "The claim: " in asked else f"Tell me more about point {len(messages)}."


def uncapped_one(case: str, arguments: argparse.Namespace) -> dict[str, Any]:
    """One uncapped run: ``default`` (no places set) or ``all`` (every participant's places the
    attempts); its wall seconds, what the attempts ended as, and the most the stand-in had at once."""
    from convy import Bench, ChatJudge, JsonAgent, JsonEndpoint, Limits, Models, OpenAiModel, Plan, Scenario
    from convy.fakes import MemoryJournal

    attempts = arguments.uncapped_attempts
    fields = {"id": "uncapped", "user": "You want to know about the shop.", "judge": ["The agent answers."], "max_turns": arguments.turns}
    scenario = msgspec.convert(fields, Scenario)
    every = {f"{who}_places": attempts for who in ("agent", "user", "judge")}
    limits = Limits(**every) if case == "all" else Limits()
    with Service(latency=arguments.latency, project=True) as service:
        model = OpenAiModel("stand-in", service.url + "/v1")
        agent = JsonAgent(JsonEndpoint(service.url + "/agent"), reply="output.text")
        bench = Bench(agent, Models(user=model, judge=ChatJudge(model)), limits)
        journal = MemoryJournal()
        start = time.perf_counter()
        asyncio.run(bench.run(Plan((scenario,), attempts), journal))
        wall = time.perf_counter() - start
        stats = service.stats()
    stops = Counter(outcome.stop for outcome in journal.outcomes)
    verdicts = sum(1 for outcome in journal.outcomes if type(outcome.result).__name__ == "Verdict")
    return {"wall": wall, "peak": stats["peak"], "stops": dict(stops), "verdicts": verdicts, "refused": stats["refused"]}


def uncapped(arguments: argparse.Namespace) -> list[str]:
    """The uncapped rows (best of ``--repeat`` each, interleaved), and the problems met."""
    cases = {"all at once": ("all", None), "default settings, now": ("default", None)}
    if arguments.before:
        cases["default settings, before"] = ("default", arguments.before)
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in cases}
    for _ in range(arguments.repeat):
        for label, (case, source) in cases.items():
            runs[label].append(uncapped_one(case, arguments) if source is None else uncapped_child(case, arguments, source))
    best = {label: min(found, key=lambda run: run["wall"]) for label, found in runs.items()}
    floor = best["all at once"]["wall"]
    rows, problems = [], []
    for label, run in best.items():
        rows.append(f"  {label:<26} {run['wall']:6.2f} s  {run['wall'] / floor:5.2f}x   peak {run['peak']:4d} at once   {run['stops']}")
        if run["verdicts"] != arguments.uncapped_attempts or run["refused"]:
            problems.append(f"uncapped, {label}: {run['verdicts']} verdicts, {run['refused']} refused")
    return rows + [f"PROBLEM: {problem}" for problem in problems]


def uncapped_child(case: str, arguments: argparse.Namespace, source: str) -> dict[str, Any]:
    """One uncapped run by convy's source at ``source``, in a child process."""
    command = [sys.executable, __file__, "--uncapped-case", case, *sys.argv[1:]]
    done = subprocess.run(command, env={**os.environ, "PYTHONPATH": source}, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the report ---------------------------------------------------------------------------------


def tree(source: Path) -> str:
    """The commit convy's source is at, and whether it has changes, when it is a git checkout."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "-C", str(source), "status", "--porcelain", "--", "."], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return f"commit {commit}" + (", with changes" if changed else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="agent requests of each limited case (default 300)")
    parser.add_argument("--turns", type=int, default=3, help="agent requests per attempt (default 3)")
    parser.add_argument("--rate", type=float, default=20.0, help="requests a second every limit allows (default 20)")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds the stand-in takes per answer (default 0.1)")
    parser.add_argument("--claims", type=int, default=1, help="judged claims per attempt in the shared case (default 1)")
    parser.add_argument("--agent-places", type=int, help="agent_places of the limited cases (default: Limits()'s)")
    parser.add_argument("--agent-per-minute", type=int, help="agent_per_minute of the limited cases (default: none)")
    parser.add_argument("--before", metavar="SRC", help="also play the limited cases with convy's source at SRC")
    parser.add_argument("--cap", type=float, default=4.0, help="a --before case is cut off at this many floors (default 4)")
    parser.add_argument("--free-attempts", type=int, default=1536, help="attempts of each free case (default 1536)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[64, 256], help="agent_places of the free cases")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each free case, the best shown (default 2)")
    parser.add_argument("--no-baseline", action="store_true", help="do not time the free cases' requests without convy")
    parser.add_argument("--where", action="store_true", help="also print where each limited case's wall time went")
    parser.add_argument("--uncapped-attempts", type=int, default=50, help="attempts of the uncapped case (default 50)")
    parser.add_argument("--only", nargs="+", choices=(*SHAPES, "free", "uncapped"), default=None, help="the old shapes to play (default: all, unless --project)")
    parser.add_argument("--project", nargs="*", metavar="SHAPE", help="play a project as users write it (every shape, or those named)")
    parser.add_argument("--rates", type=float, nargs="+", default=[60, 300, 1200, 3000], help="per minute, --project's strict buckets")
    parser.add_argument("--bursts", type=float, nargs="+", default=[1, 5, 20], help="bursts of --project's strict buckets")
    parser.add_argument("--bare-rates", type=float, nargs="+", default=[300, 3000], help="per minute, --project's buckets without headers")
    parser.add_argument("--seconds", type=float, default=10.0, help="--project: the busiest key's floor, about (default 10)")
    parser.add_argument("--free-project", type=int, default=50, help="--project: attempts with no limit (default 50)")
    parser.add_argument("--litellm-rpm", type=float, default=300, help="--project: rpm of LiteLLM's deployments (default 300)")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # one case, as JSON (for --before)
    parser.add_argument("--uncapped-case", choices=("default", "all"), help=argparse.SUPPRESS)  # the same, uncapped
    arguments = parser.parse_args()
    if arguments.case:
        case = played(arguments.case, arguments) if arguments.case in projects(arguments) else limited(arguments.case, arguments)
        print(json.dumps(case))
        return
    if arguments.uncapped_case:
        print(json.dumps(uncapped_one(arguments.uncapped_case, arguments)))
        return
    if arguments.project is not None:
        unknown = sorted(set(arguments.project) - set(projects(arguments)))
        if unknown:
            parser.error(f"--project: no shape {', '.join(unknown)}; the shapes: {', '.join(projects(arguments))}")
    if arguments.only is None:
        arguments.only = [] if arguments.project is not None else list(SHAPES)

    import convy

    here = Path(convy.__file__).parent
    print(f"convy {convy.__version__} from {here} ({tree(here)})")
    print(f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    shapes = [shape for shape in SHAPES if shape in arguments.only]
    problems: list[str] = []
    if shapes:
        print(
            f"\nEvery limit allows {arguments.rate:g} requests a second ({arguments.rate * 60:,.0f}/min); "
            f"{arguments.requests} agent requests ({arguments.turns} a attempt), answered after "
            f"{arguments.latency * 1000:g} ms; {settings_of(arguments)}; floor = requests let through / rate."
        )
        before = f"before ({tree(Path(arguments.before))})" if arguments.before else ""
        print(f"{'':<28} {'wall/floor  refused         attempt s p50/p95/max':<47}")
        print(f"{'shape':<28} {'now':<47} {before}")
        cap = arguments.cap * arguments.requests / arguments.rate
        for shape in shapes:
            if shape == "nginx" and shutil.which("nginx") is None:
                print(f"{LABELS[shape]:<28} not played: nginx is not installed (apt-get install -y nginx)")
                continue
            result = limited(shape, arguments)
            row = f"{LABELS[shape]:<28} {shown(shape, result, arguments, cap):<47}"
            earlier = child(shape, arguments, arguments.before, cap) if arguments.before else None
            if arguments.before:
                row += f"   {shown(shape, earlier, arguments, cap)}"
            print(row + bound_of(shape, arguments), flush=True)
            if arguments.where:
                print(f"{'  where (s)':<28} {spent(result):<47}   {spent(earlier) if arguments.before else ''}", flush=True)
            problems += problems_of(shape, result, arguments)
    if arguments.project is not None:
        problems += play_projects(arguments.project or list(projects(arguments)), arguments)
    if "free" in arguments.only:
        print(
            f"\nNo limit: {arguments.free_attempts} attempts, best of {arguments.repeat}; ideal = places / "
            f"({arguments.latency:g} s x {arguments.turns} turns); CPU: this process's, the stand-in runs in another"
        )
        for places in arguments.concurrency:
            print(free(places, arguments), flush=True)
    if "uncapped" in arguments.only:
        print(
            f"\nNo limit, no places set: {arguments.uncapped_attempts} attempts of {arguments.turns} turns (the user's "
            f"model, then the agent) and a claim judged, each request answered after {arguments.latency:g} s; "
            f"best of {arguments.repeat}; x: to all at once"
        )
        for row in uncapped(arguments):
            print(row, flush=True)
            if row.startswith("PROBLEM"):
                problems.append(row.removeprefix("PROBLEM: "))
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")
    if problems:
        print("\nPROBLEMS:")
        for problem in problems:
            print(f"  {problem}")
        sys.exit(1)


if __name__ == "__main__":
    main()
