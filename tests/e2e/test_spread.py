"""Spread runs (``convy run --workers N`` / ``--ray ADDRESS``) played by real worker processes on
a real Ray: one the run starts on this machine, or the session's cluster of two nodes
(``raycluster.py``). The project is written here: an agent and the models on the stand-in, which
every request reaches carrying the process that sent it (and that process's parent, the raylet
of its node), so the stand-in's record tells who played what, and where.

The agent's file also installs an audit hook in every process that loads it, the driver and each
worker: each opening of ``attempts.jsonl`` for writing is noted with its process, so a test can
tell that the driver alone wrote the run. Kills are triggered by what the stand-in has seen
(its Nth request), never by time; waits poll for a condition with a deadline that only a hang
reaches. Nothing measures how fast convy is: the limits are checked on the stand-in's record of
when requests arrived.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from support.process import CONVY, start_convy
from support.raycluster import LocalCluster as RayCluster
from support.standin import StandIn, Status, judged
from support.waiting import wait_until

from convy.attempt import Attempt
from convy.judge import Verdict
from convy.outcome import Outcome
from convy.spread import Batches, Played

DEADLINE = 300.0  # seconds a wait may take before the test gives up: only a hang reaches it
SCENARIOS = ("greet", "repeat", "thanks")

AGENT = '''\
"""An agent on the stand-in's /agent endpoint. Each conversation says when it opens and closes, and
each request names the process that sent it and that process's parent."""

import os
import sys
import uuid
from contextlib import asynccontextmanager

from convy import Answer, JsonEndpoint

URL = {url!r}
WRITES = {writes!r}


def _noted(event, args):
    # Every opening of attempts.jsonl for writing, in whichever process loaded this file.
    if event != "open" or not args or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    if not os.fsdecode(args[0]).endswith("attempts.jsonl"):
        return
    mode = args[1] if len(args) > 1 and isinstance(args[1], str) else ""
    flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
    if flags & (os.O_WRONLY | os.O_RDWR) or any(letter in mode for letter in "wax+"):
        with open(WRITES, "a") as noted:
            noted.write(f"{{os.getpid()}}\\n")


sys.addaudithook(_noted)

if {fail_in_workers!r}:
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        raise RuntimeError("the bot's licence is not valid on this machine")


class Talk:
    def __init__(self, connection, session):
        self._connection = connection
        self._session = session

    async def turn(self, message):
        reply = await self._connection.response(self._said(message.text))
        return Answer(reply.value["output"]["text"])

    def _said(self, text):
        return {{"session": self._session, "message": text, "pid": os.getpid(), "ppid": os.getppid()}}


class Bot:
    def __init__(self):
        self._endpoint = JsonEndpoint(URL + "/agent")

    @asynccontextmanager
    async def conversation(self):
        async with self._endpoint.connection() as connection:
            talk = Talk(connection, uuid.uuid4().hex)
            await connection.response(talk._said("<open>"), "/open")
            try:
                yield talk
            finally:
                await connection.response(talk._said("<close>"), "/close")


agent = Bot()
'''

MODELS = '''\
import os

from convy import ChatJudge, Models, OpenAiModel

URL = {url!r}
SENDER = {{"pid": os.getpid(), "ppid": os.getppid()}}
models = Models(
    user=OpenAiModel("user-model", URL, extra=SENDER),
    judge=ChatJudge(OpenAiModel("judge-model", URL, extra=SENDER)),
)
'''

SCENARIO = """\
script: ["hello from {name}", "and again"]
judge:
  - check: {{said: "hello from {name}"}}
  - The agent repeats what the user said.
  - The agent is polite.
"""


class Roles:
    """The stand-in's answers: the agent's (an echo; ``<open>`` and ``<close>`` kept as the
    conversations open at once), and the judge's (every claim held). ``hooks`` are called with
    each agent turn as it arrives, numbered from 1: a test kills a process there."""

    def __init__(self) -> None:
        self.open: set[str] = set()
        self.peak = 0
        self.turns = 0
        self.hooks: list[Callable[[int, dict[str, Any]], None]] = []
        # (N, gate): the agent's turns after the Nth wait until the gate is set; the judge does not,
        # nor do the conversations of the FREE scenario (told by their first message). Those end
        # whatever the machine's speed, so a test that waits for an attempt recorded never waits on
        # a time limit: with every turn held, a loaded machine's first N turns could all be of
        # conversations not yet ended, each of them left to fail at the 120 s turn limit, by when
        # every attempt had ended and a Ctrl+C found the run complete. The other scenarios' turns
        # (16 at 4 attempts) are more than any N a test holds after: the run cannot end before the gate.
        self.held: tuple[int, threading.Event] | None = None
        self._scenarios: dict[str, str] = {}  # each conversation's scenario, by its session
        self._lock = threading.Lock()

    FREE = "greet"

    async def agent(self, request: dict[str, Any]) -> str:
        message = request["message"]
        with self._lock:
            if message.startswith("hello from "):
                self._scenarios[request["session"]] = message.removeprefix("hello from ")
            held = (
                self.held is not None
                and message not in ("<open>", "<close>")
                and self.turns >= self.held[0]
                and self._scenarios.get(request["session"]) != self.FREE
            )
        while held and self.held is not None and not self.held[1].is_set():
            await asyncio.sleep(0.01)  # the stand-in's own loop goes on: the judge is answered meanwhile
        with self._lock:
            match message:
                case "<open>":
                    self.open.add(request["session"])
                    self.peak = max(self.peak, len(self.open))
                case "<close>":
                    self.open.discard(request["session"])
                case _:
                    self.turns += 1
                    for hook in self.hooks:
                        hook(self.turns, request)
        return f"You said: {message}"

    def chat(self, request: dict[str, Any]) -> str:
        assert request["model"] == "judge-model", request["model"]
        return judged(request)


class Place(msgspec.Struct, frozen=True):
    """The project written for a test, the stand-in it plays against, and ``convy`` run in it."""

    folder: Path
    server: StandIn
    roles: Roles
    processes: list[subprocess.Popen[bytes]] = msgspec.field(default_factory=list)

    def written(self, attempts: int, settings: str = "", fail_in_workers: bool = False) -> Place:
        (self.folder / "agents").mkdir(parents=True, exist_ok=True)
        (self.folder / "scenarios").mkdir(exist_ok=True)
        writes = str(self.folder.parent / "writes.txt")
        agent = AGENT.format(url=self.server.url, writes=writes, fail_in_workers=fail_in_workers)
        (self.folder / "agents" / "bot.py").write_text(agent, encoding="utf-8")
        (self.folder / "models.py").write_text(MODELS.format(url=self.server.url + "/v1"), encoding="utf-8")
        for name in SCENARIOS:
            (self.folder / "scenarios" / f"{name}.yaml").write_text(SCENARIO.format(name=name), encoding="utf-8")
        (self.folder / "pyproject.toml").write_text(f"[tool.convy]\nattempts = {attempts}\n{settings}", encoding="utf-8")
        return self

    def environment(self) -> dict[str, str]:
        # Ray's settings of the session's cluster stay (its folder, its loopback address), not an
        # address to join: each command is told where to play.
        kept = {name: value for name, value in os.environ.items() if not name.startswith("CONVY_") and name != "RAY_ADDRESS"}
        return {**kept, "RAY_USAGE_STATS_ENABLED": "0"}

    def ran(self, *arguments: str, python: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
        """``convy`` run to its end; it never shows a traceback."""
        command = [*python] if python else [str(CONVY)]
        done = subprocess.run(
            [*command, *arguments], cwd=self.folder, env=self.environment(), stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=DEADLINE,
        )
        assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
        return done

    def started(self, *arguments: str) -> subprocess.Popen[bytes]:
        """``convy`` started, its output in files next to the project."""
        with (self.folder.parent / "out.txt").open("wb") as out:
            process = start_convy(self.folder, *arguments, env=self.environment(), stdout=out, stderr=subprocess.STDOUT)
        self.processes.append(process)
        return process

    def said(self) -> str:
        """What the ``convy`` last started said, so far."""
        return (self.folder.parent / "out.txt").read_text(errors="replace")

    def runs(self) -> Path | None:
        """The run folder, once there is one."""
        found = list((self.folder / "results" / "bot").glob("*/run.json"))
        return found[0].parent if found else None

    def run(self) -> Path:
        """The one run folder of the project."""
        found = list((self.folder / "results" / "bot").glob("*/run.json"))
        assert len(found) == 1, found
        return found[0].parent

    def writers(self) -> set[int]:
        """Each process that opened ``attempts.jsonl`` for writing."""
        try:
            return {int(line) for line in (self.folder.parent / "writes.txt").read_text().split()}
        except FileNotFoundError:
            return set()

    def senders(self, kind: str = "agent", since: int = 0) -> Counter[tuple[int, int]]:
        """The agent's turns (or the judge's requests: ``chat``) by the process and its parent that
        sent them; of the requests from the ``since``-th the stand-in received on."""
        return Counter(
            (request.json["pid"], request.json["ppid"])
            for request in list(self.server.received)[since:]
            if request.kind == kind and isinstance(request.json, dict) and "pid" in request.json
            and request.json.get("message") not in ("<open>", "<close>")
        )

    def opened(self) -> Counter[str]:
        """How many conversations each scenario opened: one per attempt played, more when played again."""
        sessions = {
            request.json["session"]: request.json["message"].removeprefix("hello from ")
            for request in self.server.received
            if request.kind == "agent" and str(request.json.get("message", "")).startswith("hello from ")
        }
        return Counter(sessions.values())


@pytest.fixture
def place(tmp_path: Path) -> Iterator[Place]:
    roles = Roles()
    with StandIn(reply=roles.chat, agent_reply=roles.agent, latency=0.02) as server:
        place = Place(tmp_path / "project", server, roles)
        yield place
        for process in place.processes:  # a failed test leaves no convy behind
            if process.poll() is None:
                process.kill()
                process.wait()
        assert server.errors == [], server.errors


def outcomes(run: Path) -> list[Outcome]:
    try:
        data = (run / "attempts.jsonl").read_bytes()
    except FileNotFoundError:
        return []
    # Its lines that end with a newline: a run read while it writes, or killed, may end in a torn line.
    return [msgspec.json.decode(line, type=Outcome) for line in data[: data.rfind(b"\n") + 1].splitlines()]


def each_once(run: Path, attempts: int) -> None:
    """The run folder holds what a run in one process writes: every planned attempt once, the run
    finished, its report and summary written."""
    kept = Counter((outcome.scenario, outcome.attempt) for outcome in outcomes(run))
    assert kept == Counter((name, attempt) for name in SCENARIOS for attempt in range(1, attempts + 1))
    status = json.loads((run / "run.json").read_text())["status"]
    assert status["type"] == "finished", status
    assert {path.name for path in run.iterdir()} == {"attempts.jsonl", "run.json", "run.lock", "report.html", "summary.json"}


def nodes(parents: set[int]) -> set[int]:
    """The raylets (one a node) among the parents of the processes that sent requests."""
    found = set()
    for parent in parents:
        with open(f"/proc/{parent}/cmdline", "rb") as command:
            if b"raylet" in command.read():
                found.add(parent)
    return found


def gone(pid: int) -> bool:
    """Whether the process has ended (a zombie that no one reaped has)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


# --- a whole run, spread ------------------------------------------------------------------------


def test_two_workers_on_a_ray_of_the_runs_own_write_what_one_process_writes(
    place: Place, tmp_path: Path, ray_cluster: RayCluster
) -> None:
    """``--workers 2`` starts a Ray of its own, even with another running on this machine (the
    session's cluster, which Ray would join if asked for no address): both workers play, the
    driver alone writes, and the run folder is the one a run in one process writes, attempt for
    attempt."""
    place.written(attempts=2)
    alone = place.ran("run")
    assert alone.returncode == 0, alone.stdout + alone.stderr
    single = place.run()
    kept_alone = sorted((outcome.scenario, outcome.attempt, outcome.result) for outcome in outcomes(single))
    (tmp_path / "writes.txt").unlink()
    moved = tmp_path / "single"
    single.rename(moved)
    place.server.reset()

    ran = place.ran("run", "--workers", "2")

    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "played by 2 workers on a Ray started for this run (1 node)" in ran.stdout
    run = place.run()
    each_once(run, 2)
    assert sorted((outcome.scenario, outcome.attempt, outcome.result) for outcome in outcomes(run)) == kept_alone
    spread_spec = json.loads((run / "run.json").read_text())["spec"]
    single_spec = json.loads((moved / "run.json").read_text())["spec"]
    assert {key: value for key, value in spread_spec.items() if key != "id"} == {
        key: value for key, value in single_spec.items() if key != "id"
    }
    workers = {pid for pid, _ in place.senders()}
    assert len(workers) == 2, workers  # both played
    assert workers == {pid for pid, _ in place.senders("chat")}  # and judged what they played
    driver = place.writers()
    assert len(driver) == 1 and not driver & workers, (driver, workers)


# --- kills --------------------------------------------------------------------------------------


def test_a_worker_killed_mid_run_has_its_attempts_played_by_another(place: Place, ray_cluster: RayCluster) -> None:
    """SIGKILL of a worker while its attempt waits for the agent: the attempts it had under way are
    played again by the worker that replaces it or the other, and each is recorded once. The kill
    comes at the third turn, when each worker still has several of the attempts it was handed
    under way: those the killed one had go to the one that replaces it."""
    place.written(attempts=3)
    killed: list[int] = []

    def kill(turn: int, request: dict[str, Any]) -> None:
        if turn == 3 and not killed:
            killed.append(request["pid"])
            os.kill(request["pid"], signal.SIGKILL)

    place.roles.hooks.append(kill)

    ran = place.ran("run", "--ray", ray_cluster.address, "--workers", "2")

    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert killed
    # Ray's driver prints "(raylet) A worker died or was killed" to stdout; convy's output is its own
    assert "(raylet)" not in ran.stdout + ran.stderr and "died" not in ran.stdout + ran.stderr, ran.stdout + ran.stderr
    run = place.run()
    each_once(run, 3)
    opened = place.opened()
    planned = len(SCENARIOS) * 3
    replayed = sum(opened.values()) - planned
    assert replayed >= 1, opened  # the attempt the killed worker had under way at least
    workers = {pid for pid, _ in place.senders()}
    assert killed[0] in workers and len(workers) >= 3, workers  # a new worker took the killed one's place
    assert not place.writers() & workers
    print(f"\nworker killed: {planned} attempts, {replayed} replayed, 0 lost, 0 doubled")


@pytest.mark.parametrize("resumed", ["alone", "cluster"])
def test_a_run_whose_driver_is_killed_is_resumed_each_attempt_once(
    place: Place, resumed: str, ray_cluster: RayCluster
) -> None:
    """SIGKILL of ``convy run --ray ADDRESS --workers 2``: its workers go away, and ``convy resume``
    (in this process alone, without Ray; or spread again, on the cluster) plays what the run
    lacks, each attempt once."""
    place.written(attempts=4)
    spread = ("--ray", ray_cluster.address, "--workers", "2")
    again = () if resumed == "alone" else spread
    # After 12 turns no conversation but greet's goes on until the driver is killed; once one of
    # the attempts that ended by then is recorded, the driver is killed (``Roles.FREE``).
    gate = threading.Event()
    place.roles.held = (12, gate)
    process = place.started("run", *spread)
    wait_until(lambda: place.roles.turns >= 12 and (run := place.runs()) is not None and bool(outcomes(run)), "an attempt recorded", every=0.05)
    os.kill(process.pid, signal.SIGKILL)
    gate.set()
    assert process.wait(DEADLINE) == -signal.SIGKILL
    # The workers that sent before the kill: both, or on a loaded machine only the first (the
    # second may not have reached the stand-in before the twelfth turn); never the driver.
    # A worker the driver started may send its first request only after the kill, before it is
    # stopped: the workers are every process that sent until each that sent has ended.
    wait_until(lambda: all(gone(pid) for pid, _ in place.senders()), "the killed run's workers to end", every=0.05)
    workers = {pid for pid, _ in place.senders()}
    assert 1 <= len(workers) <= 2 and process.pid not in workers
    heard = len(place.server.received)  # the resume's requests are those after
    run = place.run()
    before = len(outcomes(run))
    assert 1 <= before < len(SCENARIOS) * 4

    ran = place.ran("resume", run.name, *again)

    assert ran.returncode == 0, ran.stdout + ran.stderr
    each_once(run, 4)
    resumers = {pid for pid, _ in place.senders(since=heard)}
    if resumed == "alone":
        assert "worker" not in ran.stdout, ran.stdout
        assert len(resumers) == 1 and place.writers() >= resumers, (resumers, place.writers())  # the resume played and wrote
    else:
        assert "on the Ray cluster" in ran.stdout, ran.stdout
        assert len(resumers) == 2 and not place.writers() & resumers, (resumers, place.writers())
    print(f"\ndriver killed, resumed {resumed}: {len(SCENARIOS) * 4} attempts, {before} kept before the kill, "
          f"{len(SCENARIOS) * 4 - before} played by the resume, 0 lost, 0 doubled")


def test_a_project_the_workers_cannot_load_fails_the_run_saying_so_once(place: Place, ray_cluster: RayCluster) -> None:
    """The agent loads in the driver but raises in every worker: exit 2, the project's error said
    once, however many workers hit it, and no traceback."""
    place.written(attempts=2, fail_in_workers=True)

    ran = place.ran("run", "--ray", ray_cluster.address, "--workers", "2")

    said = ran.stdout + ran.stderr
    assert ran.returncode == 2, said
    assert said.count("the bot's licence is not valid on this machine") == 1, said
    assert "a worker could not load the project" in said
    assert place.senders() == Counter()


# --- the run's limits, whole ----------------------------------------------------------------------


def test_a_run_on_the_cluster_plays_on_both_nodes_within_the_runs_limits(place: Place, ray_cluster: RayCluster) -> None:
    """``--ray ADDRESS --workers 4`` with ``agent_places = 2`` and caps of 240 a minute on the
    agent and the judge: two workers (the places split no further, and the command says so), one
    on each node; the driver alone writes. Never more than 2 conversations open at once across
    them. Each worker keeps half of each cap, so that together the stand-in never sees more than
    the cap's pace between any two of the agent's (or the judge's) requests, give or take one
    request a worker (as one process may be a little ahead of its pace, making up a late send).
    Either worker keeping the whole cap would send its 6 requests in 1.25 s, the 12 in that time
    where 9 are allowed; without a cap all would come at once."""
    place.written(attempts=2, settings="agent_places = 2\nagent_per_minute = 240\njudge_per_minute = 240\n")

    ran = place.ran("run", "--ray", ray_cluster.address, "--workers", "4")

    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "played by 2 workers (of 4 asked: no more than the limits can be split among) on the Ray cluster" in ran.stdout
    assert "(2 nodes)" in ran.stdout
    each_once(place.run(), 2)
    senders = place.senders()
    assert len(senders) == 2, senders
    assert len(nodes({parent for _, parent in senders})) == 2, senders
    assert 1 <= place.roles.peak <= 2, place.roles.peak
    assert place.roles.open == set()
    workers = {pid for pid, _ in senders}
    assert len(place.writers()) == 1 and not place.writers() & workers
    for kind in ("agent", "chat"):
        arrived = sorted(
            request.time for request in place.server.received
            if request.kind == kind and request.json.get("message") not in ("<open>", "<close>")
        )
        assert len(arrived) == 12, (kind, len(arrived))  # 2 turns, 2 claims judged, of 6 attempts
        sending = len(place.senders(kind))
        assert sending == 2, (kind, sending)
        for first in range(len(arrived)):
            for last in range(first + 1, len(arrived)):
                allowed = 240 * (arrived[last] - arrived[first]) / 60 + 2 * sending
                assert last - first + 1 <= allowed, (kind, first, last, arrived[last] - arrived[first])


def test_a_worker_whose_places_grow_is_handed_more_attempts_at_once(place: Place, ray_cluster: RayCluster) -> None:
    """No place is capped: one worker plays 600 attempts, its places starting at 4 and growing while
    the stand-in answers in time, and it says how many it has with each attempt it sends back
    (``Played.room``), so the driver hands it more at once. More than 64 conversations are open
    at once: the most a driver that could not see the places grow handed one worker (32 for the
    agent, 32 for the judge; at main before this, the peak was 48, with this 121). The stand-in
    answers in a second, so that the machine's own delays stay well within the three times the
    usual answer that counts as in time: at 100 ms, a clean clone's suite beside other work (a
    load of 35 on 2 cores) held the worker, whose own CPU then set its answers' pace, to 57
    places (rightly: more places would not have been answered sooner); at 300 ms, three clean
    clones' suites at once beside three benches, to 60; at a second the same conversations ask a
    tenth of the CPU a second that they asked at 100 ms."""
    place.written(attempts=200)
    place.server.latency = 1.0

    ran = place.ran("run", "--ray", ray_cluster.address, "--workers", "1")

    assert ran.returncode == 0, ran.stdout + ran.stderr
    each_once(place.run(), 200)
    assert len(place.senders()) == 1
    assert place.roles.peak > 64, place.roles.peak
    assert place.roles.open == set()


def test_a_pause_a_service_asks_of_one_worker_is_passed_to_the_others_and_kept(
    place: Place, ray_cluster: RayCluster
) -> None:
    """Two real workers (``Hand``s) on the cluster. The first is refused with Retry-After: it
    tells its peer (here an actor that keeps what it is told) which service to pause and until
    when. The second, told the same, sends nothing to that service before then: the stand-in's
    first request from it arrives after the pause ends."""
    ray = pytest.importorskip("ray", reason="spread runs need Ray: pip install 'convy[ray]'")
    from convy.judge import Judging
    from convy.project import Project
    from convy.records import Limits
    from convy.spread import Hand, Setup
    from convy.user import UserChecks

    place.written(attempts=1)
    scenarios = Project(place.folder).scenarios()
    pack = msgspec.msgpack.Encoder()

    class Told:
        def __init__(self) -> None:
            self.said: list[tuple[str, float]] = []

        def hold(self, service: str, until: float) -> None:
            self.said.append((service, until))

        def heard(self) -> list[tuple[str, float]]:
            return self.said

    ray.init(address=ray_cluster.address, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        hand = ray.remote(Hand).options(num_cpus=0, max_concurrency=1000)
        made = [
            hand.remote(str(place.folder), "bot", pack.encode(Setup(scenarios, Limits(), None, Judging(), UserChecks(), number, 2)))
            for number in range(2)
        ]
        told = ray.remote(Told).options(num_cpus=0).remote()
        assert ray.get([one.ready.remote() for one in made], timeout=DEADLINE) == ["", ""]
        ray.get(made[0].peers.remote([told]), timeout=DEADLINE)
        place.server.faults(Status(429, retry_after=2, path="/agent"))
        before = time.time()
        played = msgspec.msgpack.decode(ray.get(made[0].play.remote("greet", 1), timeout=DEADLINE), type=Played).outcome
        assert played.scenario == "greet"
        wait_until(lambda: bool(ray.get(told.heard.remote())), "the refused worker to tell its peer", every=0.05)
        [(service, until)] = ray.get(told.heard.remote())
        assert service and until >= before + 2

        second = ray.get(made[1].pid.remote())
        for attempt in (2, 3):  # told before its first request to the service, then once it knows it
            pause = time.time() + 1.5
            at = time.monotonic() + (pause - time.time())  # the pause's end on the stand-in's clock
            ray.get(made[1].hold.remote(service, pause), timeout=DEADLINE)
            ray.get(made[1].play.remote("greet", attempt), timeout=DEADLINE)
            turns = [
                request.time for request in place.server.received
                if request.path == "/agent" and request.json["pid"] == second and request.time >= at - 1.5
            ]
            assert len(turns) == 2 and min(turns) >= at - 0.01, (attempt, turns, at)
        for one in made:
            ray.kill(one)
    finally:
        ray.shutdown()


# --- batches ------------------------------------------------------------------------------------

# 12 attempts of each of 3 scenarios on 2 workers, each with 2 agent places and 8 judge places of
# the run's: batches of 2 attempts, five calls under way a hand (Batches, below).
BATCHED = "agent_places = 4\njudge_places = 16\n"


def test_a_batch_is_a_quarter_of_a_hands_places_and_of_its_share_and_one_under_a_budget() -> None:
    assert Batches(36, 2).size(10) == 2  # BATCHED's play: a quarter of 2 + 8 places
    assert Batches(10_000, 2).size(512) == Batches.MOST  # a long run on many places: the most
    assert Batches(40, 2).size(512) == 5  # the run's end: a quarter of a hand's share of it
    assert Batches(6, 2).size(10) == 1  # fewer attempts than hands x 4: one a call
    assert Batches(10_000, 2, budgeted=True).size(512) == 1  # each attempt let start by the budget on its own


def test_a_hand_streams_a_batch_back_each_attempt_once_as_it_ends(place: Place, ray_cluster: RayCluster) -> None:
    """``Hand.plays``, one call for four attempts: the messages that come back hold each of them
    once, their outcomes the ones ``play`` sends for one attempt."""
    ray = pytest.importorskip("ray", reason="spread runs need Ray: pip install 'convy[ray]'")
    from convy.judge import Judging
    from convy.project import Project
    from convy.records import Limits
    from convy.spread import Hand, Setup
    from convy.user import UserChecks

    place.written(attempts=1)
    scenarios = Project(place.folder).scenarios()
    pack = msgspec.msgpack.Encoder()
    ray.init(address=ray_cluster.address, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        hand = ray.remote(Hand).options(num_cpus=0, max_concurrency=1000)
        made = hand.remote(str(place.folder), "bot", pack.encode(Setup(scenarios, Limits(), None, Judging(), UserChecks(), 0, 1)))
        assert ray.get(made.ready.remote(), timeout=DEADLINE) == ""
        batch = [("greet", 1), ("repeat", 1), ("thanks", 1), ("greet", 2)]
        back: list[Played] = []
        for message in made.plays.options(num_returns="streaming").remote(batch):
            back.extend(msgspec.msgpack.decode(ray.get(message, timeout=DEADLINE), type=list[Played]))
        assert sorted((played.outcome.scenario, played.outcome.attempt) for played in back) == sorted(batch)
        assert all(isinstance(played.outcome.result, Verdict) for played in back), [played.outcome.result for played in back]
        ray.kill(made)
    finally:
        ray.shutdown()


def test_attempts_sent_in_batches_are_each_recorded_once_though_a_worker_is_killed(place: Place, ray_cluster: RayCluster) -> None:
    """Batches of two: a worker killed at the fifth turn has attempts of its batches under way, and
    some it has not started; those it had not sent back are played again, and every attempt is
    recorded once."""
    place.written(attempts=12, settings=BATCHED)
    killed: list[int] = []

    def kill(turn: int, request: dict[str, Any]) -> None:
        if turn == 5 and not killed:
            killed.append(request["pid"])
            os.kill(request["pid"], signal.SIGKILL)

    place.roles.hooks.append(kill)

    ran = place.ran("run", "--ray", ray_cluster.address, "--workers", "2")

    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert killed
    run = place.run()
    each_once(run, 12)
    opened = place.opened()
    assert sum(opened.values()) > len(SCENARIOS) * 12, opened  # what the killed one had under way, played again
    assert not place.writers() & {pid for pid, _ in place.senders()}


def test_no_worker_starts_before_every_node_has_unpacked_the_project(place: Place, ray_cluster: RayCluster, full: bool) -> None:
    """Nodes of one machine share the folder Ray unpacks the shipped project in, and each node
    unpacks a package new to it by removing that folder and filling it again, as the job connects.
    A third node, its unpacking held back by Ray's testing hook: the workers start only once it
    has unpacked, so no worker's working directory is removed under it (in the clean-clone CI run a
    worker that read it then failed to start: "a worker could not be started: ...
    FileNotFoundError"), and every turn comes from a worker whose folder is still there.

    With ``--full`` only: a third node started and killed on the session's cluster took 46 s alone
    and up to two minutes in the suite, its longest test by far (December 2026). The rule it proves
    on a real cluster, which nodes the hands wait for, is held in every run of the suite by
    ``test_only_the_nodes_of_a_machine_with_several_are_waited_for_before_the_hands_start``."""
    if not full:
        pytest.skip("a third Ray node held back while it unpacks: run with --full")
    # 8 seconds: the workers on the other two nodes start well within them (without the wait for
    # every node, in the folder the third then removes); with it, what the test finds does not
    # depend on how long they are.
    slow = ray_cluster.add_node({"RAY_RUNTIME_ENV_SLEEP_FOR_TESTING_S": "8"})
    try:
        place.written(attempts=4)
        gate = threading.Event()
        place.roles.held = (1, gate)  # the turns after the first wait until every node has unpacked
        folders: list[str] = []  # each turn's worker's working directory, as the turn arrives

        def noted(turn: int, request: dict[str, Any]) -> None:
            folders.append(os.readlink(f"/proc/{request['pid']}/cwd"))

        place.roles.hooks.append(noted)
        process = place.started("run", "--ray", ray_cluster.address, "--workers", "2")
        assert wait_until(lambda: bool(folders), "a worker's first turn", process=process), place.said()
        package = Path(folders[0].removesuffix(" (deleted)")).name
        wait_until(lambda: unpackings(ray_cluster, package) >= 3, "every node to unpack the project", process=process)
        gate.set()
        assert process.wait(DEADLINE) == 0, place.said()
        each_once(place.run(), 4)
        assert len(folders) > 1 and not [folder for folder in folders if folder.endswith(" (deleted)")], folders
    finally:
        ray_cluster.kill_node(slow)


def unpackings(cluster: RayCluster, package: str) -> int:
    """How many times the cluster's nodes unpacked the package (the folder ``package`` names), as
    their runtime environment agents wrote down."""
    said = f"Downloading package from gcs://{package}.zip "
    logs = cluster.folder.rglob("runtime_env_setup-*.log")
    return sum(log.read_text(errors="replace").count(said) for log in logs)


class Nodes:
    """Ray as ``Crew._unpacked`` asks it: its live nodes, by machine address, and the nodes of the
    calls it waits for."""

    def __init__(self, *machines: str) -> None:
        self.machines = machines
        self.pinned: list[str] = []
        self.waited = 0

    def nodes(self) -> list[dict[str, Any]]:
        return [
            {"NodeID": f"{number:056x}", "NodeManagerAddress": machine, "Alive": True}  # Ray's ids: 28 bytes, in hex
            for number, machine in enumerate(self.machines, start=1)
        ]

    def remote(self, *arguments: Any, **options: Any) -> Any:
        # ray.remote(max_calls=1)(function), then function.options(...).remote()
        return self if not options else lambda function: self

    def options(self, scheduling_strategy: Any, **others: Any) -> Nodes:
        self.pinned.append(scheduling_strategy.node_id)
        return self

    def wait(self, calls: list[Any], num_returns: int) -> None:
        self.waited += num_returns


def test_only_the_nodes_of_a_machine_with_several_are_waited_for_before_the_hands_start() -> None:
    """A machine with one node unpacks the project into a folder of its own: a cluster of one node
    a machine starts its hands at once, as before; nodes that share a machine are each waited for."""
    pytest.importorskip("ray", reason="spread runs need Ray: pip install 'convy[ray]'")
    from convy.spread import Crew

    apart = Nodes("10.0.0.1", "10.0.0.2", "10.0.0.3")
    Crew._unpacked(apart)
    assert apart.pinned == [] and apart.waited == 0

    shared = Nodes("10.0.0.1", "10.0.0.2", "10.0.0.1")
    Crew._unpacked(shared)
    assert shared.pinned == [f"{1:056x}", f"{3:056x}"] and shared.waited == 2


def test_a_batched_run_whose_driver_is_killed_is_resumed_each_attempt_once(place: Place, ray_cluster: RayCluster) -> None:
    """SIGKILL of the driver of a run sent in batches, once an attempt is recorded: what it had
    recorded stays, what its batches had under way is lost with it, and ``convy resume`` on the
    cluster plays the rest, each attempt once."""
    place.written(attempts=12, settings=BATCHED)
    spread = ("--ray", ray_cluster.address, "--workers", "2")
    # After 12 turns no conversation but greet's goes on until the driver is killed, and greet's
    # end whatever the machine's speed (``Roles.FREE``).
    gate = threading.Event()
    place.roles.held = (12, gate)
    process = place.started("run", *spread)
    wait_until(lambda: place.roles.turns >= 12 and (run := place.runs()) is not None and bool(outcomes(run)), "an attempt recorded", every=0.05)
    os.kill(process.pid, signal.SIGKILL)
    gate.set()
    assert process.wait(DEADLINE) == -signal.SIGKILL
    workers = {pid for pid, _ in place.senders()}
    wait_until(lambda: all(gone(pid) for pid in workers), "the killed run's workers to end", every=0.05)
    run = place.run()
    before = len(outcomes(run))
    assert 1 <= before < len(SCENARIOS) * 12

    ran = place.ran("resume", run.name, *spread)

    assert ran.returncode == 0, ran.stdout + ran.stderr
    each_once(run, 12)


# --- without Ray ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [("run", "--workers", "2"), ("run", "--ray"), ("resume", "x", "--workers", "2")])
def test_without_ray_a_spread_run_exits_2_saying_how_to_install_it(place: Place, command: tuple[str, ...]) -> None:
    """Where ``import ray`` fails, asking for workers says Ray is needed and how to install it, and
    writes nothing."""
    place.written(attempts=1)
    if command[0] == "resume":
        done = place.ran("run")
        assert done.returncode == 0, done.stdout + done.stderr
        command = ("resume", place.run().name, *command[2:])
        place.server.reset()
    before = sorted(path for path in place.folder.rglob("*") if "__pycache__" not in path.parts)
    python = (sys.executable, "-c", "import sys; sys.modules['ray'] = None; from convy.cli import main; sys.exit(main())")

    ran = place.ran(*command, python=python)

    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "needs Ray" in ran.stderr and "pip install 'convy[ray]'" in ran.stderr, ran.stderr
    assert sorted(path for path in place.folder.rglob("*") if "__pycache__" not in path.parts) == before
    assert place.senders() == Counter()


# --- a budget -----------------------------------------------------------------------------------


def test_a_spread_run_starts_no_attempt_that_would_cross_its_budget(place: Place) -> None:
    """``--workers 2`` with ``--max-tokens``: the driver lets each attempt start, by the run's count,
    before it hands it to a worker, as one process does, so the run stops within its budget and
    the most one attempt took, exits 6, and is kept as stopped."""
    place.written(attempts=1)
    alone = place.ran("run")
    assert alone.returncode == 0, alone.stdout + alone.stderr
    each = max(
        spent.input + spent.output for spent in (Attempt(outcome, 0.0).every_sum() for outcome in outcomes(place.run()))
    )
    assert each > 0  # the stand-in's models say what each request took
    shutil.rmtree(place.folder / "results")
    place.written(attempts=10, settings="agent_places = 4\n")
    budget = each * 11 // 2  # room for five attempts and a half
    ran = place.ran("run", "--workers", "2", "--max-tokens", str(budget))
    assert ran.returncode == 6, ran.stdout + ran.stderr
    kept = outcomes(place.run())
    taken = sum(spent.input + spent.output for spent in (Attempt(outcome, 0.0).every_sum() for outcome in kept))
    most = max(spent.input + spent.output for spent in (Attempt(outcome, 0.0).every_sum() for outcome in kept))
    assert taken <= budget + most
    assert 1 <= len(kept) < 30
    status = json.loads((place.run() / "run.json").read_text())["status"]
    assert status["type"] == "stopped" and status["spent"]["budget"] == "tokens"
    assert "stopped by budget" in ran.stdout


def test_hands_are_split_by_the_caps_set_and_not_by_places_that_grow() -> None:
    """A run with no place or per-minute set has as many hands as asked (places with no cap grow in
    each hand); a cap set still bounds them, each hand keeping at least one of it."""
    from convy.records import Limits
    from convy.settings import Spread

    assert Spread(4).hands(Limits(), cpus=8) == 4
    assert Spread(0).hands(Limits(), cpus=3) == 3
    assert Spread(4).hands(Limits(agent_places=2), cpus=8) == 2
    assert Spread(4).hands(Limits(judge_per_minute=3), cpus=8) == 3
    assert Limits().shared(1, 4).agent_places == 0
