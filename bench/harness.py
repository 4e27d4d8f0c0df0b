"""Benchmark of convy's harness itself, not of any model: how fast and how lean it plays attempts.

Every participant is an instant fake, so the time and memory measured are convy's own bookkeeping
(and the fakes', shown apart by the baselines):

- the agent is a ``FakeAgent`` answering at once with an ``Answer`` that has a ``Usage`` and one
  ``Call`` step;
- the simulated user is a ``FakeModel`` replying at once (never with the stop mark, so every
  attempt runs to ``max_turns``);
- the judge is a ``FakeJudge``; the scenario has 2 judged claims and 2 ``check:`` claims;
- the scenario has a ``user:``, 1 scripted message and ``max_turns`` = ``--turns``, so an attempt
  is 1 scripted turn then ``turns - 1`` simulated-user turns.

Cases, each playing ``--attempts`` attempts of ``--turns`` turns:

- ``baseline``: a bare asyncio loop (as many worker tasks as the bench uses) opening the fake
  agent's conversation and calling its ``turn`` directly ``--turns`` times: no convy bookkeeping,
  no user model, no judge, nothing recorded. Every ratio is against this one.
- ``fakes``: the same bare loop, also asking the fake user model and the fake judge what the bench
  would ask them: the cost of the fakes themselves, without convy.
- ``memory``: ``Bench.run`` writing to a ``MemoryJournal``.
- ``folder``: ``RunJournal.play`` of a new run folder (``attempts.jsonl`` on disk, in a temporary
  folder, the lines of the attempts that end together flushed as one); ``play`` returns what it
  kept without reading the file back. The read of the whole file (``RunJournal.kept()``, what
  ``convy report`` does) is timed on its own afterwards.
- ``records``: ``Bench.run`` writing straight to a ``RunJournal``, without ``play``: the folder's
  cost without the lock, ``run.json`` and the final read.
- ``traced``: ``folder``, each attempt's trace sent to a collector as it is kept (issue 30).
- ``spans``: ``folder``, with an agent that sends two spans a turn, as one instrumented with
  OpenTelemetry does, through an exporter in a process of its own, to a collector that drops them.
- ``waited``: ``spans``, each attempt waiting once at its end, for nothing (a stand-in receiver
  that hears nothing and lets each attempt go at the loop's next turn), as an attempt waits for
  its agent's spans: handing its place to another worker, and taken up again. With instant fakes
  no attempt of the other cases ever waits (one worker plays them all in one step of the loop),
  so this is the floor of any receiver that waits for the spans before the checks read them.
- ``received``: ``spans``, with the spans sent to convy's receiver (``receive_traces``): waited
  for at each attempt's end, joined to the calls, kept in the records. Its cost is against ``spans``,
  and against ``waited``: what receiving costs past its waiting.

Throughput is measured in this process without tracemalloc (its hooks slow every allocation
down), the cases interleaved, the median of ``--repeat`` runs. Memory is measured afterwards in a
fresh child process per case and measure, since ``ru_maxrss`` is a high-water mark of the whole
process: one child with tracemalloc on for the Python heap's peak, one with it off for the
process's peak resident size (tracemalloc's own tables would inflate that).

The fakes' logs (``FakeAgent.messages``, ``FakeModel.requests``) would keep every message of the
run; they are swapped for logs that keep nothing, so the memory figures are convy's.

An instant fake never suspends, so by default one worker task plays every attempt in a single step
of the event loop. ``--yielding`` makes the fake agent's turn ``await asyncio.sleep(0)`` (still no
waiting) in every case, so the workers take turns as they would with a real agent.

    python bench/harness.py                       # 10000 attempts x 6 turns, all cases
    python bench/harness.py --attempts 2000 --turns 10 --repeat 5 --yielding
    python bench/harness.py --only memory         # one case, once, in this process
    python -m cProfile -s cumtime bench/harness.py --only memory --attempts 5000 | head -60
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import gc
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec

import convy
import convy.busy
from convy import (
    Answer,
    Bench,
    Call,
    Limits,
    Message,
    Models,
    Outcome,
    Plan,
    Reply,
    RunJournal,
    RunSpec,
    Said,
    Scenario,
    Transcript,
    Usage,
    Verdict,
)
from convy.fakes import FakeAgent, FakeJudge, FakeModel, MemoryJournal
from convy.user import UserChecks

TITLES = {
    "baseline": "baseline: bare asyncio, agent turns only",
    "fakes": "bare asyncio + fake user + fake judge",
    "memory": "Bench.run -> MemoryJournal",
    "folder": "RunJournal.play (run folder on disk)",
    "records": "Bench.run -> RunJournal.record only",
    "traced": "RunJournal.play, traces sent to a collector",
    "spans": "folder, the agent sending its spans elsewhere",
    "waited": "spans, each attempt waiting once for nothing",
    "received": "folder, the agent's spans received by convy",
}
CASES = tuple(TITLES)


# --- the setup every case shares -------------------------------------------------------------


class Setup(msgspec.Struct, frozen=True):
    attempts: int
    turns: int
    folder: Path  # where run folders are made
    yielding: bool = False

    def limits(self) -> Limits:
        return Limits(max_turns=self.turns)

    def scenario(self) -> Scenario:
        # As a scenario file would give it: a user, one scripted message, two claims, two checks.
        return msgspec.convert(
            {
                "id": "shop/order-lamp",
                "user": "You want to order {{ item }} and have it delivered on {{ day }}.",
                "vars": {"item": "a desk lamp", "day": "Friday"},
                "script": ["Hello, I would like to order something."],
                "max_turns": self.turns,
                "judge": [
                    "The agent was polite.",
                    "The agent confirmed the order.",
                    {"check": {"called": "lookup", "with": {"item": "lamp"}}},
                    {"check": {"said": "order"}},
                ],
            },
            Scenario,
        )

    def agent(self, sent: Callable[[], None] | None = None) -> Any:
        """The fake agent; with ``sent``, which it calls at each turn (an exporter of its spans)."""

        def answered(text: str) -> Answer:
            if sent is not None:
                sent()
            return Answer("Your order for the lamp is noted. Anything else?", Usage(input=120, output=14), (Call("lookup", {"item": "lamp"}),))

        agent = FakeAgent(answered)
        agent.messages = _forgetful()  # type: ignore[assignment]
        return Yielding(agent) if self.yielding else agent

    def user(self) -> FakeModel:
        model = FakeModel(lambda messages: Reply("Yes, and please deliver it on Friday.", Usage(input=300, output=9)))
        model.requests = _forgetful()  # type: ignore[assignment]
        return model

    def judge(self) -> FakeJudge:
        return FakeJudge()

    def bench(self) -> Bench:
        # The fake user repeats itself and never stops: its faults are counted, so every attempt is
        # judged as before the user's checks (which still run on every attempt, and are measured).
        return Bench(self.agent(), Models(self.user(), self.judge()), self.limits(), user_checks=UserChecks(faults="count"))

    def plan(self) -> Plan:
        return Plan((self.scenario(),), self.attempts)

    def workers(self) -> int:
        limits = self.limits()
        # As Bench.run starts (places with no cap start at START; with instant fakes they do not grow).
        # A convy from before places with no cap (``--before``) has no START: its places are capped.
        start = getattr(convy.busy, "START", 4)
        return min(self.attempts, (limits.agent_places or start) + (limits.judge_places or start))

    def smaller(self, attempts: int) -> Setup:
        return msgspec.structs.replace(self, attempts=min(self.attempts, attempts))


def _forgetful() -> deque[Any]:
    """A log that keeps nothing: appending works, nothing is held."""
    return deque(maxlen=0)


class Yielding:
    """The same agent, whose every turn lets the event loop run once before answering (no waiting)."""

    def __init__(self, agent: Any) -> None:
        self._agent = agent

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[Any]:
        async with self._agent.conversation() as conversation:
            yield _YieldingConversation(conversation)


class _YieldingConversation:
    def __init__(self, conversation: Any) -> None:
        self._conversation = conversation

    async def turn(self, message: Message) -> Answer:
        await asyncio.sleep(0)
        return await self._conversation.turn(message)


# --- the cases -----------------------------------------------------------------------------------
#
# ``play`` is what is timed and measured; ``left`` is what the case leaves its caller (held while
# memory is measured); ``checked`` looks at what was played, afterwards, outside every measure.


class Looked(msgspec.Struct):
    """What a case played, seen afterwards."""

    attempts: int
    jsonl_bytes: int = 0
    reread_seconds: float = 0.0
    played_seconds: float = 0.0  # of a traced run: its play alone, until its last attempt was kept


class Case:
    def __init__(self, setup: Setup) -> None:
        self.setup = setup

    async def play(self) -> None:
        raise NotImplementedError

    def left(self) -> Any:
        return None

    def checked(self, reread: bool) -> Looked:
        raise NotImplementedError

    def _gathered(self, worker: Any) -> Any:
        async def gathered() -> None:
            async with asyncio.TaskGroup() as group:
                for _ in range(self.setup.workers()):
                    group.create_task(worker())

        return gathered()

    def _attempt(self, outcome: Outcome) -> None:
        # Attempts that failed early would measure nothing: insist on the full dialogue, judged.
        if len(outcome.transcript.turns) != self.setup.turns or not isinstance(outcome.result, Verdict):
            raise SystemExit(f"an attempt did not play as planned: {outcome.stop}, {outcome.result}")
        if not all(claim.held for claim in outcome.result.claims):
            raise SystemExit(f"a claim did not hold: {outcome.result}")


class Baseline(Case):
    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.agent = setup.agent()
        self.done = 0

    async def play(self) -> None:
        queue = iter(range(self.setup.attempts))

        async def worker() -> None:
            for _ in queue:
                async with self.agent.conversation() as conversation:
                    for _ in range(self.setup.turns):
                        await conversation.turn(Message("Yes, and please deliver it on Friday."))
                self.done += 1

        await self._gathered(worker)

    def checked(self, reread: bool) -> Looked:
        return Looked(self.done)


class Fakes(Baseline):
    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.user, self.judge = setup.user(), setup.judge()
        self.claims = setup.scenario().claims()

    async def play(self) -> None:
        queue = iter(range(self.setup.attempts))
        asked = (Said("system", "You are a user."), Said("user", "[The agent is ready.]"))
        empty = Transcript()

        async def worker() -> None:
            for _ in queue:
                async with self.agent.conversation() as conversation:
                    await conversation.turn(Message("Hello, I would like to order something."))
                    for _ in range(self.setup.turns - 1):
                        await conversation.turn(Message((await self.user.reply(asked)).text))
                await self.judge.ruling(self.claims, empty)
                self.done += 1

        await self._gathered(worker)


class InMemory(Case):
    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.bench, self.plan, self.journal = setup.bench(), setup.plan(), MemoryJournal()

    async def play(self) -> None:
        await self.bench.run(self.plan, self.journal)

    def left(self) -> Any:
        return self.journal

    def checked(self, reread: bool) -> Looked:
        self._attempt(self.journal.outcomes[0])
        return Looked(len(self.journal.outcomes))


class InFolder(Case):
    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.bench = setup.bench()
        self.journal = RunJournal(Path(tempfile.mkdtemp(prefix="run-", dir=setup.folder)))
        self.spec = RunSpec(  # a run's folder is named by its id
            id=self.journal.folder.name, agent="fake", scenarios=(setup.scenario(),), attempts=setup.attempts, limits=setup.limits()
        )
        self.kept: Any = None

    async def play(self) -> None:
        self.kept = await self.journal.play(self.spec, self.bench)

    def left(self) -> Any:
        return self.kept

    def checked(self, reread: bool) -> Looked:
        self._attempt(self.kept.outcomes[0])
        looked = Looked(len(self.kept.outcomes), (self.journal.folder / "attempts.jsonl").stat().st_size)
        self.kept = None
        if reread:  # the read of attempts.jsonl whole, as convy report reads it: timed on its own
            gc.collect()
            start = time.perf_counter()
            self.journal.kept()
            looked.reread_seconds = time.perf_counter() - start
        _removed(self.journal.folder)
        return looked


class Records(Case):
    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.bench, self.plan = setup.bench(), setup.plan()
        self.journal = RunJournal(Path(tempfile.mkdtemp(prefix="run-", dir=setup.folder)))

    async def play(self) -> None:
        await self.bench.run(self.plan, self.journal)

    def checked(self, reread: bool) -> Looked:
        path = self.journal.folder / "attempts.jsonl"
        with path.open("rb") as lines:
            self._attempt(msgspec.json.decode(lines.readline(), type=Outcome))
            count = 1 + sum(1 for _ in lines)
        looked = Looked(count, path.stat().st_size)
        _removed(self.journal.folder)
        return looked


class Traced(InFolder):
    """``folder``, with each attempt's trace sent over OTLP/HTTP (binary Protobuf) to a collector on
    127.0.0.1 as it is kept, as ``convy run`` does when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set: the
    time includes sending the last ones once the play has ended."""

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.collector = Collector()
        self.played_seconds = 0.0

    def checked(self, reread: bool) -> Looked:
        looked = super().checked(False)
        looked.played_seconds = self.played_seconds
        return looked

    async def play(self) -> None:
        # Here, not at the top: a convy from before issue 30 plays the other cases.
        from convy.collector import OtlpEndpoint, Shipped, SignalEndpoint, Start
        from convy.traces import RunContext

        endpoint = OtlpEndpoint(SignalEndpoint(f"{self.collector.url}/v1/traces"), SignalEndpoint(f"{self.collector.url}/v1/logs"))
        start = Start(endpoint, RunContext.of(self.spec, "in_progress", "bench"))
        shipped = Shipped(_Nothing(), self.journal.folder, start, _refused)
        began = time.perf_counter()
        try:
            self.kept = await self.journal.play(self.spec, self.bench, shipped)
            self.played_seconds = time.perf_counter() - began
        finally:
            problem = shipped.closed()
            self.collector.close()
        if problem or shipped.sent != self.setup.attempts:
            raise SystemExit(f"traced: {shipped.sent} of {self.setup.attempts} traces taken: {problem}")


class _Nothing:
    """A journal that keeps nothing: the run's folder is its record."""

    def record(self, outcome: Outcome) -> None:
        pass


def _refused(said: str) -> None:
    raise SystemExit(said)


class Collector:
    """A collector on 127.0.0.1, in a process of its own as a real one is: it reads each request
    whole and answers 200, as fast as it can."""

    SERVER = """
import http.server, sys
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""

    def __init__(self) -> None:
        self._process = subprocess.Popen([sys.executable, "-c", self.SERVER], stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        self.url = f"http://127.0.0.1:{self._process.stdout.readline().strip()}"

    def close(self) -> None:
        self._process.kill()
        self._process.wait()


class Spans(InFolder):
    """``folder``, with an agent that sends its own spans as one instrumented with OpenTelemetry
    does: each turn it hands the turn's trace context to a process beside it (its exporter), which
    sends two spans a turn (``invoke_agent`` and ``execute_tool lookup``, under the turn's span)
    over OTLP/HTTP as they come. Here they go to a collector that drops them: the agent's own cost,
    which ``received`` is measured against."""

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.collector = Collector()
        self.exporter = Exporter(self.collector.url)
        self.bench = msgspec.structs.replace(self.bench, agent=setup.agent(self.exporter.send))

    async def play(self) -> None:
        try:
            await super().play()
        finally:
            self.exporter.close()
            self.collector.close()


class Waited(Spans):
    """``spans``, each attempt waiting once at its end for nothing, as it waits for its agent's
    spans with ``receive_traces``: the floor of any receiver that waits."""

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.bench = msgspec.structs.replace(self.bench, receiver=_nothing_heard())


def _nothing_heard() -> Any:
    from convy.receiver import Received as Came  # here: a convy from before issue 30 plays the other cases
    from convy.receiver import Receiver

    class Heard(Receiver):
        """A receiver that hears nothing: each attempt hands its place on and waits one turn of
        the loop, as one waits for spans still to come."""

        @asynccontextmanager
        async def serving(self, waiting: Callable[[], None] | None = None) -> AsyncIterator[Receiver]:
            self._waiting = waiting
            try:
                yield self
            finally:
                self.close()

        def opened(self, trace: str) -> None:
            pass

        async def taken(self, trace: str, turns: Any) -> Came:
            assert self._waiting is not None
            self._waiting()
            await asyncio.sleep(0)
            # Nothing came: the dialogue's calls are those the agent reported (a dialogue taken as
            # traced would count none of them, its spans showing none).
            return Came()

    return Heard()


class Received(InFolder):
    """``spans``, but sent to convy: the run receives them (``receive_traces``), waits at each
    attempt's end for its turns' spans, joins the tool spans to the calls and keeps the spans in
    the attempt's record."""

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        from convy.receiver import Receiver  # here: a convy from before issue 30 plays the other cases

        self.receiver = Receiver()
        self.exporter = Exporter(self.receiver.url)
        self.bench = msgspec.structs.replace(self.bench, agent=setup.agent(self.exporter.send), receiver=self.receiver)

    async def play(self) -> None:
        try:
            await super().play()
        finally:
            self.exporter.close()
            self.receiver.close()

    def checked(self, reread: bool) -> Looked:
        outcome = self.kept.outcomes[0]
        if not outcome.transcript.traced or len(outcome.agent_spans()) != 2 * self.setup.turns:
            raise SystemExit(f"received: an attempt kept {len(outcome.agent_spans())} spans, traced {outcome.transcript.traced}")
        return super().checked(reread)


class Exporter:
    """An agent's span exporter, in a process of its own as an agent behind HTTP would have it:
    the agent writes each turn's trace id and span id to its pipe (``send``, 48 bytes, no waiting),
    and it posts the spans in OTLP/HTTP requests (binary Protobuf) on a kept-alive connection,
    batched as the SDK's ``BatchSpanProcessor`` does: a request as soon as 512 spans wait (its
    ``max_export_batch_size``), and what waits once no turn has come for 2 ms (its schedule delay,
    shortened: its 5 s would be the whole run with instant fakes)."""

    # The spans of a turn are made once, by convy's own encoder, with ids that stand in for the
    # turn's; each turn then has its ids written in. An agent's SDK encodes in C (the protobuf
    # package's upb): encoding them afresh in Python would have the fake agent's exporter, not
    # convy, set the pace of ``received``, which waits for them.
    SENDER = """
import http.client, os, select, sys, time, urllib.parse
from convy.otlp import INTERNAL, Signals, Span, fields
BATCH, IDLE, GATHER = 512, 0.002, 0.0005  # spans a request at most; seconds without a turn before what is kept goes; seconds to let turns gather
TRACE, TURN, TOP, TOOL = "ab" * 16, "cd" * 8, "ef" * 8, "9a" * 8
made = Signals({"service.name": "shop"}, "shop", "1", (
    Span(TRACE, TOP, TURN, "invoke_agent shop", INTERNAL, 1_000, 4_000),
    Span(TRACE, TOOL, TOP, "execute_tool lookup", INTERNAL, 2_000, 3_000,
         {"gen_ai.tool.name": "lookup", "gen_ai.tool.call.arguments": '{"item": "lamp"}'}),
)).proto_traces()

def varint(number):
    out = b""
    while number >= 0x80:
        out += bytes([number & 0x7F | 0x80])
        number >>= 7
    return out + bytes([number])

def field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload

(resource_spans,) = [value for number, value in fields(made) if number == 1]
resource = b"".join(field(number, value) for number, value in fields(resource_spans) if number != 2)
(scope_spans,) = [value for number, value in fields(resource_spans) if number == 2]
scope = b"".join(field(number, value) for number, value in fields(scope_spans) if number != 2)
template = b"".join(field(2, value) for number, value in fields(scope_spans) if number == 2)
marks = [bytes.fromhex(mark) for mark in (TRACE, TURN, TOP, TOOL)]
assert [template.count(mark) for mark in marks] == [2, 1, 2, 1]
url = urllib.parse.urlsplit(sys.argv[1])
connection = http.client.HTTPConnection(url.hostname, url.port)

def post(spans):
    body = field(1, resource + field(2, scope + b"".join(spans)))
    connection.request("POST", "/v1/traces", body, {"content-type": "application/x-protobuf"})
    connection.getresponse().read()

pending, spans, number, ended = b"", [], 0, False
while not ended:
    came = select.select([0], [], [], IDLE if spans else None)[0]
    if came:
        data = os.read(0, 1 << 16)
        ended = not data
        pending += data
        whole = len(pending) - len(pending) % 48
        records, pending = pending[:whole], pending[whole:]
        for place in range(0, len(records), 48):
            number += 2
            ids = (bytes.fromhex(records[place:place + 32].decode()), bytes.fromhex(records[place + 32:place + 48].decode()),
                   number.to_bytes(8, "big"), (number + 1).to_bytes(8, "big"))
            one = template
            for mark, given in zip(marks, ids):
                one = one.replace(mark, given)
            spans.append(one)
    while len(spans) >= BATCH // 2 or spans and (not came or ended):
        post(spans[: BATCH // 2])
        spans = spans[BATCH // 2 :]
    if came and not ended and len(spans) < BATCH // 2:
        time.sleep(GATHER)  # the SDK's worker sleeps until a batch is full, not woken by each span
"""

    def __init__(self, url: str) -> None:
        self._process = subprocess.Popen([sys.executable, "-c", self.SENDER, url], stdin=subprocess.PIPE)
        assert self._process.stdin is not None
        self._pipe = self._process.stdin.fileno()
        with contextlib.suppress(OSError):  # room for many turns: the agent never waits on its exporter
            fcntl.fcntl(self._pipe, 1031, 1 << 20)  # F_SETPIPE_SZ

    def send(self) -> None:
        from convy import trace_context

        here = trace_context()
        if here is not None:
            os.write(self._pipe, (here.trace_id + here.span_id).encode())

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait()


KINDS: dict[str, type[Case]] = {
    "baseline": Baseline,
    "fakes": Fakes,
    "memory": InMemory,
    "folder": InFolder,
    "records": Records,
    "traced": Traced,
    "spans": Spans,
    "waited": Waited,
    "received": Received,
}


def _removed(folder: Path) -> None:
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()


# --- measuring -----------------------------------------------------------------------------------


class Played(msgspec.Struct):
    """One case played once: its time, what it played, and (in a child) its memory figures."""

    case: str
    seconds: float
    looked: Looked
    gc_seconds: float = 0.0  # of ``seconds``, the time in the cyclic garbage collector
    full_collections: int = 0  # of those collections, the ones of the oldest generation
    memory: dict[str, int] = {}


class Collections:
    """The time the cyclic garbage collector takes while it is watched, from ``gc.callbacks``."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.full = 0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._start
            self.full += info["generation"] == 2

    def __enter__(self) -> Collections:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exception: object) -> None:
        gc.callbacks.remove(self)


def _maxrss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # Linux says KiB, macOS bytes


def played(case: str, setup: Setup, measure: str = "none", reread: bool = False) -> Played:
    """Play ``case`` once; ``measure`` is "traced" (tracemalloc on), "rss" (ru_maxrss) or "none"."""
    one = KINDS[case](setup)
    gc.collect()
    memory: dict[str, int] = {"rss_before": _maxrss_bytes()}
    if measure == "traced":
        tracemalloc.start()
    with Collections() as collections:
        start = time.perf_counter()
        asyncio.run(one.play())
        seconds = time.perf_counter() - start
    if measure == "traced":
        current, peak = tracemalloc.get_traced_memory()  # ``current`` still counts what the case left
        tracemalloc.stop()
        memory |= {"traced_peak": peak, "traced_left": current}
    memory["rss_peak"] = _maxrss_bytes()
    looked = one.checked(reread)
    if looked.attempts != setup.attempts:
        raise SystemExit(f"{case}: {looked.attempts} attempts played, not {setup.attempts}")
    return Played(case, seconds, looked, collections.seconds, collections.full, memory if measure != "none" else {})


def throughput(setup: Setup, repeat: int) -> dict[str, list[Played]]:
    """Every case ``repeat`` times in this process, interleaved, after a short warm-up of each."""
    for case in CASES:
        played(case, setup.smaller(200))
    runs: dict[str, list[Played]] = {case: [] for case in CASES}
    for _ in range(repeat):
        for case in CASES:
            runs[case].append(played(case, setup, reread=True))
    return runs


def in_children(setup: Setup, measure: str) -> dict[str, Played]:
    """Every case once, each in a fresh process of this script, with the memory ``measure``."""
    found: dict[str, Played] = {}
    for case in CASES:
        command = [
            sys.executable, __file__,
            "--only", case, "--measure", measure, "--json",
            "--attempts", str(setup.attempts), "--turns", str(setup.turns), "--dir", str(setup.folder),
        ] + (["--yielding"] if setup.yielding else [])  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{case} ({measure}) failed:\n{done.stdout}{done.stderr}")
        found[case] = msgspec.json.decode(done.stdout.strip().splitlines()[-1], type=Played)
    return found


# --- showing -------------------------------------------------------------------------------------


def _tree() -> str:
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


def _mib(count: float) -> str:
    return f"{count / 2**20:.1f} MiB"


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[column]) for row in (head, *rows)) for column in range(len(head))]
    lines = []
    for row in (head, tuple("-" * width for width in widths), *rows):
        cells = [row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def shown_throughput(setup: Setup, runs: dict[str, list[Played]], repeat: int) -> str:
    # Other work on the machine only ever adds time, so the best run is the least disturbed one;
    # the median is shown beside it, each against the baseline's own best and median.
    best_base = min(one.seconds for one in runs["baseline"])
    median_base = statistics.median(one.seconds for one in runs["baseline"])
    rows = []
    for case in CASES:
        times = [one.seconds for one in runs[case]]
        best, median = min(times), statistics.median(times)
        rows.append(
            (
                TITLES[case],
                f"{setup.attempts / best:,.0f}",
                f"{setup.attempts / median:,.0f}",
                f"{best / setup.attempts * 1e6:.1f}",
                f"{best / (setup.attempts * setup.turns) * 1e6:.1f}",
                f"{best / best_base:.1f}x",
                f"{median / median_base:.1f}x",
                f"{statistics.median(one.gc_seconds / one.seconds for one in runs[case]):.0%}",
                f"{statistics.median(one.full_collections for one in runs[case]):.0f}",
            )
        )
    head = (
        "case",
        "attempts/s best",
        "median",
        "us/attempt",
        "us/turn",
        "time / baseline, best",
        "median",
        "in gc",
        "full gcs",
    )
    reread = [one.looked.reread_seconds for one in runs["folder"]]
    folder = min(one.seconds for one in runs["folder"])
    traced = [one for one in runs.get("traced", []) if one.looked.played_seconds]
    played = min((one.looked.played_seconds for one in traced), default=0.0)
    tail = min((one.seconds - one.looked.played_seconds for one in traced), default=0.0)
    return "\n".join(
        [
            f"Throughput: tracemalloc off, in this process, cases interleaved, {repeat} run(s) each;",
            "  us/attempt and us/turn from the best run; 'in gc': the run's time in the cyclic garbage collector",
            "  (gc.callbacks), 'full gcs': collections of the oldest generation, both the median over the runs",
            _table(head, rows),
            f"  a read of the whole attempts.jsonl (RunJournal.kept(), as convy report reads it), alone: {min(reread):.3f} s best,"
            f" {statistics.median(reread):.3f} s median ({min(reread) / folder:.0%} of play's best, which no longer does it)",
            *(
                [
                    f"  traced: the play alone, until its last attempt was kept: {played:.3f} s best, {played / folder:.2f}x folder's best;"
                    f" the last trace taken {tail:.3f} s after (best): the process beside the run catching up"
                ]
                if traced
                else []
            ),
            *(
                [
                    f"  received: {min(one.seconds for one in runs['received']) / min(one.seconds for one in runs['spans']):.2f}x spans' best,"
                    f" {statistics.median(one.seconds for one in runs['received']) / statistics.median(one.seconds for one in runs['spans']):.2f}x its median:"
                    " convy's cost of receiving the agent's spans (each attempt waits for its turns', joins and keeps them);"
                    f" {min(one.seconds for one in runs['received']) / min(one.seconds for one in runs['waited']):.2f}x waited's best,"
                    f" {statistics.median(one.seconds for one in runs['received']) / statistics.median(one.seconds for one in runs['waited']):.2f}x its median:"
                    " past the waiting itself, which costs"
                    f" {statistics.median(one.seconds for one in runs['waited']) / statistics.median(one.seconds for one in runs['spans']):.2f}x spans' median"
                ]
                if runs.get("received") and runs.get("spans") and runs.get("waited")
                else []
            ),
        ]
    )


def shown_memory(setup: Setup, traced: dict[str, Played], rss: dict[str, Played], launched: int) -> str:
    rows = []
    for case in CASES:
        size = rss[case].looked.jsonl_bytes
        before, after = rss[case].memory["rss_before"], rss[case].memory["rss_peak"]
        rows.append(
            (
                TITLES[case],
                _mib(traced[case].memory["traced_peak"]),
                _mib(traced[case].memory["traced_left"]),
                _mib(before),
                _mib(after),
                _mib(after - before),
                f"{_mib(size)} ({size / setup.attempts:,.0f} B/attempt)" if size else "-",
            )
        )
    head = ("case", "tracemalloc peak", "left at end", "maxrss before", "maxrss after", "growth", "attempts.jsonl")
    return "\n".join(
        [
            "Memory: a fresh child process per case and measure, each playing the case once",
            "  tracemalloc: on from just before the run to just after it; 'left' is still allocated then,",
            "    with the case's result held (MemoryJournal's outcomes, the Kept that play returns);",
            "  ru_maxrss (resource.getrusage): another child, tracemalloc off; 'before' is the process's peak",
            "    after imports and a 50-attempt warm-up, 'growth' what the run added to it. The children were",
            f"    started before this process played anything (its own ru_maxrss then: {_mib(launched)}), as",
            "    Linux carries the parent's peak over into a child's ru_maxrss.",
            _table(head, rows),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=10_000, help="attempts per case (default 10000)")
    parser.add_argument("--turns", type=int, default=6, help="turns per attempt: 1 scripted, the rest simulated (default 6)")
    parser.add_argument("--repeat", type=int, default=3, help="throughput runs per case, median shown (default 3)")
    parser.add_argument("--yielding", action="store_true", help="the fake agent yields to the event loop each turn")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory measures")
    parser.add_argument("--dir", type=Path, default=None, help="where run folders are made (default: the temp folder)")
    parser.add_argument("--only", choices=CASES, help="play one case once in this process (for a profiler), then stop")
    parser.add_argument("--measure", choices=("none", "traced", "rss"), default="none", help="with --only: memory measure")
    parser.add_argument("--json", action="store_true", help="with --only: print the figures as one JSON line")
    options = parser.parse_args(argv)
    if options.attempts < 1 or options.turns < 1 or options.repeat < 1:
        parser.error("--attempts, --turns and --repeat must be at least 1")

    with tempfile.TemporaryDirectory(prefix="convy-bench-", dir=options.dir) as scratch:
        setup = Setup(options.attempts, options.turns, Path(scratch), options.yielding)
        if options.only:
            played(options.only, setup.smaller(50))  # imports, caches and first-time costs out of the way
            one = played(options.only, setup, options.measure)
            print(msgspec.json.encode(one).decode() if options.json else one)
            return 0
        print(
            f"convy {convy.__version__} harness benchmark: {setup.attempts:,} attempts x {setup.turns} turns"
            f" (1 scripted + {setup.turns - 1} simulated-user), 2 judged claims + 2 checks, instant fakes"
            + (", the agent yielding each turn" if setup.yielding else "")
        )
        print(
            f"Python {platform.python_version()} on {platform.system()} {platform.machine()},"
            f" {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, run folders under {scratch}"
        )
        print(f"convy from {Path(convy.__file__).parent}{_tree()}")
        print()
        # Children first: on Linux a process's ru_maxrss starts from the peak of the process that
        # started it (execve keeps it), so they must start before this process plays anything big.
        launched = _maxrss_bytes()
        memory = None
        if not options.no_memory:
            print("measuring memory in child processes, then throughput here...", file=sys.stderr, flush=True)
            memory = in_children(setup, "traced"), in_children(setup, "rss")
        print(shown_throughput(setup, throughput(setup, options.repeat), options.repeat))
        if memory is not None:
            print()
            print(shown_memory(setup, *memory, launched))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
