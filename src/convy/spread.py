"""A run spread over many processes and machines, on Ray (decision 10).

``Crew`` is a ``Player`` like ``Bench``: ``RunJournal.play`` holds the run's folder as it always
does, and the crew plays the attempts the folder lacks. It starts ``Hand``s — Ray actors, each a
process of its own with its own event loop, which load the agent and the models from the
project's files — and hands them attempts in batches, one call each (``Hand.plays``); each hand
plays a batch's attempts at once with a ``bench.Stage`` of its own and streams their outcomes back
as they end, all those that ended together in one message, each with the places the hand's agent
and judge have now (``Room``: with no cap they grow in the hand), so that the driver hands it as
many attempts at once as they are. Only this process (the driver) records:
``run.lock``, ``attempts.jsonl`` and ``run.json`` are written here alone, exactly as by a run in
one process. An attempt whose hand died before it answered is handed to another, and an outcome
is recorded once, whoever played it.

The run's limits hold for the whole run. Each hand keeps a share of them (``Limits.shared``):
whole parts of every participant's places and per-minute caps that add up to the run's, and its
part of every rate a service tells (``quota.Services.part``). A pause a service asks of one hand
is passed to every other (``Hand.hold``), so a refusal slows them all. A hand that dies is
replaced by a new one with the same share.

Ray is an optional extra: nothing here imports it until a crew plays.
"""

from __future__ import annotations

import asyncio
import importlib
import math
import os
import time
import warnings
from collections import Counter, deque
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import msgspec

from convy.bench import Bench, Stage
from convy.budget import Budget, BudgetedJournal, Earlier, Spending
from convy.judge import Judging
from convy.outcome import Outcome
from convy.plan import Journal, Planned, Playlist
from convy.problems import ConfigurationError, Unplayed, WorkersLost
from convy.prompt import Prompt
from convy.quota import Services
from convy.records import Limits
from convy.scenario import Scenario
from convy.settings import LOCAL, Spread
from convy.user import UserChecks
from convy.vital import News, Pulse, Vigil, Vitals, Who


class Setup(msgspec.Struct, frozen=True):
    """What a hand needs besides the project's files: the run's scenarios, its share of the limits,
    the simulator prompt, how claims are judged and the simulated user checked."""

    scenarios: tuple[Scenario, ...]
    limits: Limits
    prompt: Prompt | None
    judging: Judging
    user_checks: UserChecks
    number: int
    of: int


class Room(msgspec.Struct, frozen=True, array_like=True):
    """How many places a hand's agent and judge have as an attempt ends. With no cap they grow
    and shrink in the hand, where the driver cannot see them: it hands each hand as many
    attempts at once as the hand says it has places, as a ``Bench`` has ``Stage.hands`` workers.
    The simulated user's places are not told: its requests are made within the agent's
    conversations, so they bound no attempt the driver hands out."""

    agent: int
    judge: int

    def under_way(self) -> int:
        """The attempts to have under way in the hand: one for each of the agent's places and each
        of the judge's, so that some are judged while others play."""
        return self.agent + self.judge


class Played(msgspec.Struct, frozen=True):
    """What a hand sends back of one attempt: its outcome, what the hand heard of the
    participants since it last told (``vital.News``), for the driver's vitals, and its places
    now (``Room``), for the attempts the driver hands it."""

    outcome: Outcome
    news: News
    room: Room


_SETUP = msgspec.msgpack.Decoder(Setup)
_PLAYED = msgspec.msgpack.Decoder(Played)
_ENDED = msgspec.msgpack.Decoder(list[Played])  # one message of a batch: the attempts that ended together
_PACK = msgspec.msgpack.Encoder()


class Hand:
    """A worker of a spread run: a Ray actor, in a process of its own on any node of the cluster.
    It loads the agent and the models from the project's files (``folder``, or the folder Ray
    shipped it, which is where it starts), plays each attempt it is handed within its share of the
    run's limits, and sends the outcome back with the secrets it knows hidden. It changes inside:
    what it loaded, its ``Stage`` (made in the actor's event loop at the first attempt), and the
    other hands it tells of a service's pause."""

    def __init__(self, folder: str, agent: str, setup: bytes) -> None:
        self._folder = Path(folder) if folder else Path.cwd()
        self._agent = agent
        self._setup = _SETUP.decode(setup)
        self._scenarios = {one.id: one for one in self._setup.scenarios}
        self._bench: Bench | None = None
        self._secrets: Any = None
        self._stage: Stage | None = None
        self._services: Services | None = None
        self._vitals = Vitals()  # this hand's: its participants stop sending once dead here
        self._peers: tuple[Any, ...] = ()
        self._error = ""

    async def ready(self) -> str:
        """Load the project: "" once it is loaded, or the project's error as convy says it."""
        self._loaded()
        return self._error

    def _loaded(self) -> None:
        # Loading awaits nothing: the first of the calls that need it loads, whole, before any
        # other call of the actor's runs.
        if self._bench is not None or self._error:
            return
        from convy.loaded import Loaded
        from convy.project import Project

        try:
            loaded = Loaded(Project(self._folder), self._agent)
            agent, models = loaded.parts()
            self._secrets = loaded.secrets(agent, models)
        except ConfigurationError as error:
            self._error = str(error)
            return
        setup = self._setup
        self._bench = Bench(agent, models, setup.limits, setup.prompt, None, setup.judging, setup.user_checks)

    async def pid(self) -> int:
        """This hand's process (for the tests that kill one)."""
        return os.getpid()

    async def peers(self, peers: list[Any]) -> None:
        """The other hands of the run, told of each pause a service asks of this one."""
        self._peers = tuple(peers)

    async def hold(self, service: str, until: float) -> None:
        """Another hand was asked to pause ``service`` until ``until`` (the time since the epoch):
        this one pauses it too."""
        loop = asyncio.get_running_loop()
        self._played_with()
        assert self._services is not None
        self._services.held(service, loop.time() + until - time.time())

    async def answered(self, who: Who, name: str) -> None:
        """A participant answered another hand: alive here too, though this hand's requests to it
        were all refused so far."""
        self._vitals.answered_elsewhere(who, name)

    async def play(self, scenario: str, attempt: int) -> bytes:
        """Play one attempt; its outcome, with the secrets this hand knows hidden, and what it heard
        of the participants (``Played``, as msgpack)."""
        return _PACK.encode(await self._one(self._played_with(), scenario, attempt))

    async def plays(self, batch: list[tuple[str, int]]) -> AsyncIterator[bytes]:
        """Play a batch of attempts at once, each as ``play`` does, and stream them back as they end:
        one message (a list of ``Played``, as msgpack) for the attempts that ended since the last,
        so the driver records each as soon as it can, and a hand that dies loses only those it had
        not sent. Ray calls this as a streaming generator: the driver's one call a batch, not one
        an attempt, is what lets it hand out more attempts a second."""
        stage = self._played_with()
        # Each attempt's task says it ended (not ``asyncio.wait``, which would hook onto every task
        # still under way each time one ends).
        ended: list[asyncio.Task[Played]] = []
        woken = asyncio.Event()

        def done(task: asyncio.Task[Played]) -> None:
            ended.append(task)
            woken.set()

        tasks = [asyncio.ensure_future(self._one(stage, scenario, attempt)) for scenario, attempt in batch]
        for task in tasks:
            task.add_done_callback(done)
        left = len(tasks)
        try:
            while left:
                await woken.wait()
                woken.clear()
                now = ended[:]
                del ended[:]
                left -= len(now)
                yield _PACK.encode([task.result() for task in now])  # convy's own error in one stops the batch
        finally:
            for task in tasks:
                task.cancel()  # those under way when the batch stops: a task that ended ignores it

    async def _one(self, stage: Stage, scenario: str, attempt: int) -> Played:
        with self._vitals.noting() as noted:
            outcome = await stage.played(Planned(self._scenarios[scenario], attempt))
        if self._secrets is not None:
            outcome = self._secrets.kept(outcome)
        news = self._vitals.news(noted)
        if self._secrets is not None and news.beats:
            news = self._secrets.kept(news)
        judge = stage.judge_places.size if stage.judge_places is not None else 0
        return Played(outcome, news, Room(stage.places.size, judge))

    def _played_with(self) -> Stage:
        if self._stage is None:
            self._loaded()
            if self._bench is None:
                raise ConfigurationError(f"a worker could not load the project: {self._error}")
            self._services = Services(1 / self._setup.of, self._heard)
            self._stage = self._bench.stage(self._setup.scenarios, self._services, self._vitals)
        return self._stage

    def _heard(self, service: str, pause: float) -> None:
        until = time.time() + pause
        for peer in self._peers:
            peer.hold.remote(service, until)


class Crew(msgspec.Struct, frozen=True):
    """A run's attempts played by Ray actors (``Hand``s), recorded by this process alone.

    ``bench`` is the run as one process would play it — its limits, prompt, budget, judging and
    user checks (its agent and models stay here: each hand loads its own) — ``folder`` and
    ``agent`` the project and the agent each hand loads, ``spread`` where and by how many.
    ``hands`` says how many hands play, and on how many nodes."""

    bench: Bench
    folder: Path
    agent: str
    spread: Spread

    MOST_REPLACED: ClassVar[int] = 3  # hands replaced per hand started, before the run gives up
    EXCLUDED: ClassVar[tuple[str, ...]] = (
        "results/", ".env", ".env.*", ".envrc", ".git/", ".venv*/", "__pycache__/", "*.pyc", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/",
    )

    @property
    def budget(self) -> Budget | None:
        return self.bench.budget

    def budgeted(self, budget: Budget | None) -> Crew:
        return msgspec.structs.replace(self, bench=self.bench.budgeted(budget))

    async def run(self, planned: Playlist, journal: Journal, earlier: Iterable[Outcome] | Earlier = ()) -> Spending | None:
        """Play every planned attempt on the hands, each recorded in ``journal`` here as its
        outcome comes back; with a budget, only until it is spent."""
        if not planned:
            return self.bench.budget.spending(earlier, asyncio.get_running_loop().time) if self.bench.budget is not None else None
        ray = self.spread.ray()
        if not ray.is_initialized():
            self._connected(ray)
        # The connection stays for the next play of this process (an adaptive run's next round,
        # the next agent's run); Ray ends it as the process ends, and a Ray it started with it.
        return await _Play(self, ray, planned, journal, earlier).played()

    def hands(self) -> tuple[int, int]:
        """How many hands play, and the nodes of the cluster they may be on (once connected)."""
        ray = self.spread.ray()
        cpus = int(ray.cluster_resources().get("CPU", 1))
        nodes = sum(1 for node in ray.nodes() if node.get("Alive"))
        return self.spread.hands(self.bench.limits, cpus), nodes

    def connected(self) -> Crew:
        """This crew, with Ray reached (started, for ``LOCAL``) now, before the run's folder is
        made: an address that cannot be reached is said with nothing played. The plays use the
        connection."""
        ray = self.spread.ray()
        if not ray.is_initialized():
            self._connected(ray)
        return self

    def _connected(self, ray: Any) -> None:
        self._quieted()
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing is sent anywhere
        options: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": "ERROR",
            "configure_logging": True,
        }
        if self.spread.where() == LOCAL:
            # A Ray of the run's own: the hands read the project where it is. "local" starts a new
            # one even where this machine runs a Ray already (a node of a cluster, a `ray start`),
            # which Ray would otherwise join.
            options["num_cpus"] = max(self.spread.workers, os.cpu_count() or 1)
            try:
                ray.init(address="local", **options)
            except Exception as error:
                raise ConfigurationError(f"Ray could not be started on this machine: {error}") from None
            return
        # A cluster, maybe of other machines: the project's files go with the job, never its .env
        # or its results (a node has its keys in its own environment).
        options["runtime_env"] = {"working_dir": str(self.folder), "excludes": list(self.EXCLUDED)}
        self.spread.reachable()
        try:
            with warnings.catch_warnings():  # Ray's own warnings would come before convy's one line
                warnings.simplefilter("ignore")
                ray.init(address=self.spread.where(), **options)
        except Exception as error:
            hint = ""
            if self.spread.where().startswith("ray://") and "timeout" in str(error):
                # Ray 2.59 and later ask a client for the cluster's token, and say only "timeout"
                hint = (
                    " (a cluster with token authentication needs RAY_AUTH_MODE=token here, and its token in "
                    "~/.ray/auth_token or RAY_AUTH_TOKEN: ray get-auth-token on the head node prints it)"
                )
            raise ConfigurationError(
                f"--ray {self.spread.where()}: cannot reach the Ray cluster: {error}{hint}"
            ) from None
        self._unpacked(ray)

    @staticmethod
    def _unpacked(ray: Any) -> None:
        # The nodes of one machine share the folder Ray unpacks the shipped project in (the
        # session's ``runtime_resources``), and each node unpacks a package new to it by removing
        # that folder and filling it again (Ray 2.60: ``download_and_unpack_package(overwrite=
        # True)``), each as the job connects, seconds apart on a busy machine: a hand whose process
        # had started in the folder before another node's turn found its working directory gone
        # ("a worker could not be started: ... FileNotFoundError"). So the hands start once each
        # such node has unpacked it: a call pinned to a node starts only then, and no node unpacks
        # it again. The calls have a runtime environment of their own (the job's, and a variable),
        # so that no process Ray started for them, maybe before the last node's turn, is handed a
        # hand; the process that ran one ends after it (``max_calls``), not kept idle for the run.
        # A machine with one node unpacks into a folder of its own: nothing is waited for.
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        alive = [node for node in ray.nodes() if node.get("Alive")]
        machines = Counter(node["NodeManagerAddress"] for node in alive)
        present = ray.remote(max_calls=1)(_present)
        own = {"env_vars": {"UNPACKED_FOR_CONVY": "1"}}
        calls = [
            present.options(
                num_cpus=0,
                runtime_env=own,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
            ).remote()
            for node in alive
            if machines[node["NodeManagerAddress"]] > 1
        ]
        # Only that they ended counts: a node that died meanwhile, or could not unpack the project,
        # is for the hands to meet and say.
        if calls:
            ray.wait(calls, num_returns=len(calls))

    def _quieted(self) -> None:
        # A driver's thread prints the cluster's error messages ("A worker died or was killed")
        # straight to sys.stdout, whatever ray.init was told: convy's output is its own, and a
        # worker's death is handled here (its attempts handed to another). Ray looks the printer
        # up in its module each time, so the module's is replaced.
        worker = importlib.import_module("ray._private.worker")
        worker.__dict__["print_to_stdstream"] = _Unprinted()

    def shipped(self) -> bool:
        """Whether the project's files are shipped to the hands (a cluster's), not read in place."""
        return self.spread.where() != LOCAL


def _present() -> None:
    """Nothing: a call that starts on a node once the node has unpacked the project (``Crew._unpacked``)."""


class _Unprinted(msgspec.Struct, frozen=True):
    """What Ray's driver would print of the cluster's errors, left unprinted."""

    def __call__(self, data: Any, ignore_prefix: bool) -> None:
        return None


class _Slot:
    """One hand's place in the crew: the hand now in it, replaced when it dies, its share, the
    places the hand last said it has (``None`` until it says: those it starts with), and how many
    feeders hand it batches."""

    def __init__(self, number: int, hand: Any, share: Limits) -> None:
        self.number = number
        self.hand = hand
        self.generation = 0
        self.share = share
        self.room: Room | None = None
        self.feeders = 0


class Batches(msgspec.Struct, frozen=True):
    """How many attempts one call hands a hand, of a play of ``planned`` attempts on ``hands``
    hands: at most a quarter of what the hand has under way at once (so it has at least four
    calls under way, and an attempt slower than its batch's others holds back few places), at most
    a quarter of its share of the play (so the play's last attempts still go to every hand), and at
    most ``MOST``, so that a hand that dies sends few attempts back to be played again. One at a
    time where a budget lets each attempt start on its own (``budgeted``)."""

    planned: int
    hands: int
    budgeted: bool = False

    MOST: ClassVar[int] = 64

    def size(self, under_way: int) -> int:
        if self.budgeted:
            return 1
        return max(1, min(self.MOST, under_way // 4, self.planned // (max(self.hands, 1) * 4)))


class _Play:
    """One play of a crew: the hands, the attempts handed out and those to hand out again."""

    def __init__(self, crew: Crew, ray: Any, planned: Playlist, journal: Journal, earlier: Iterable[Outcome] | Earlier) -> None:
        self._crew = crew
        self._ray = ray
        self._planned = planned
        self._plan: Iterator[Planned] = iter(planned)
        self._spending: Spending | None = None
        bench = crew.bench
        if bench.budget is not None:  # each attempt handed out once the budget lets it start
            self._spending = bench.budget.spending(earlier, asyncio.get_running_loop().time)
            journal = BudgetedJournal(journal, self._spending)
        # The driver's vitals, told by each hand what it heard: a participant dead for the run stops
        # every hand, as a bench's stops its workers.
        self._vigil = Vigil(journal)
        self._again: deque[Planned] = deque()  # handed to a hand that died before it answered
        # Only an attempt handed out again can come back twice (a call either answers or fails), so
        # only those attempts' keys are kept: a run of a million attempts does not hold a million
        # keys in this process, just a count.
        self._replayed: set[tuple[str, int]] = set()  # handed out again
        self._replayed_recorded: set[tuple[str, int]] = set()  # of those, recorded
        self._replaced = 0
        self._slots: list[_Slot] = []
        self._group: asyncio.TaskGroup | None = None  # the feeders', while they feed
        self._drained = False  # the plan has no attempt left to hand out (one handed out again may come)
        self._actor = ray.remote(Hand)
        self._scenarios = tuple({one.scenario.id: one.scenario for one in planned}.values())

    async def played(self) -> Spending | None:
        ray = self._ray
        count, _ = self._crew.hands()
        hands = [self._started(number, count) for number in range(count)]
        limits = self._crew.bench.limits
        self._slots = [_Slot(number, hand, limits.shared(number, count)) for number, hand in enumerate(hands)]
        await self._ready(hands)
        await self._introduced()
        # A dead participant's stop comes out alone; at the end, attempts still held stop the run too.
        with self._vigil.watching():
            try:
                # The feeders take turns, one of each hand's then the next of each: the first attempts
                # go one to each hand, not all to the first hand while the others wait with nothing.
                async with asyncio.TaskGroup() as group:
                    self._group = group
                    for turn in range(max(self._feeders(slot, count) for slot in self._slots)):
                        for slot in self._slots:
                            if turn < self._feeders(slot, count):
                                self._fed(slot, count)
            finally:
                for slot in self._slots:
                    ray.kill(slot.hand, no_restart=True)
        recorded = self._vigil.recorded
        left = sum(1 for _ in self._plan)
        if recorded + left != len(self._planned):
            raise Unplayed(
                f"{len(self._planned) - left - recorded} of {len(self._planned)} planned attempts "
                "ended without being recorded"
            )
        return self._spending

    def _feeders(self, slot: _Slot, count: int) -> int:
        """How many batches the slot's hand is handed at once: together, one attempt for each of its
        agent's places and each of its judge's, so that it judges some while it plays others."""
        return math.ceil(self._under_way(slot) / self._batch(slot, count))

    def _under_way(self, slot: _Slot) -> int:
        """The attempts the slot's hand has under way at once: as many as the places it last said
        it has (``Room``), or, until it says, as its share of the agent's and the judge's places
        starts with (places with no cap grow in the hand from there, and it says so)."""
        if slot.room is not None:
            return slot.room.under_way()
        return slot.share.starting("agent") + slot.share.starting("judge")

    def _fed(self, slot: _Slot, count: int) -> None:
        """One more feeder for the slot's hand."""
        assert self._group is not None
        slot.feeders += 1
        self._group.create_task(self._feeding(slot, count))

    def _grown(self, slot: _Slot, count: int) -> None:
        """More feeders for the slot's hand while it has fewer than its places now call for: its
        places grew (``Bench.run`` adds a worker the same way). One that has more lets the extra
        end as each comes back for its next batch (``_feeding``)."""
        while not self._drained and slot.feeders < self._feeders(slot, count):
            self._fed(slot, count)

    def _batch(self, slot: _Slot, count: int) -> int:
        return Batches(len(self._planned), count, self._spending is not None).size(self._under_way(slot))

    def _started(self, number: int, count: int, cpus: float = 1.0) -> Any:
        bench = self._crew.bench
        setup = Setup(
            self._scenarios, bench.limits.shared(number, count), bench.prompt, bench.judging, bench.user_checks, number, count
        )
        folder = "" if self._crew.shipped() else str(self._crew.folder)
        # One CPU's worth each where the run started Ray itself (it made as many as there are
        # hands); a cluster's hands are spread over its nodes. A replacement asks for none: the
        # node that died may have taken the only CPUs free with it, and it must be placed.
        return self._actor.options(num_cpus=cpus, scheduling_strategy="SPREAD", max_concurrency=100_000).remote(
            folder, self._crew.agent, _PACK.encode(setup)
        )

    async def _ready(self, hands: list[Any]) -> None:
        # Each hand loads the project; a project that cannot be loaded is said once, however many
        # hands found it so.
        said = await asyncio.gather(*(self._answer(hand.ready.remote()) for hand in hands))
        for error in said:
            if error:
                raise ConfigurationError(f"a worker could not load the project: {error}")

    async def _answer(self, ref: Any) -> Any:
        try:
            return await ref
        except self._ray.exceptions.RayActorError as error:
            raise ConfigurationError(f"a worker could not be started: {error}") from None

    async def _introduced(self) -> None:
        hands = [slot.hand for slot in self._slots]
        await asyncio.gather(
            *(hand.peers.remote([other for other in hands if other is not hand]) for hand in hands),
            return_exceptions=True,  # a hand that died meanwhile is replaced when it is next handed an attempt
        )

    async def _next(self) -> Planned | None:
        # One handed out again was let start already: it is still under way, for the budget.
        if self._again:
            return self._again.popleft()
        if self._spending is None:
            one = next(self._plan, None)
        else:
            one = await self._spending.taken(self._plan, Planned.key)
        self._drained = one is None
        return one

    async def _feeding(self, slot: _Slot, count: int) -> None:
        """Hand batches of attempts to the slot's hand, one call at a time, until there are none
        left, or the hand's places have shrunk and it has more feeders than they call for; record
        each attempt as its outcome comes back, and add feeders as the hand says its places grew."""
        try:
            await self._fed_batches(slot, count)
        finally:
            slot.feeders -= 1

    async def _fed_batches(self, slot: _Slot, count: int) -> None:
        dead = self._ray.exceptions.RayActorError
        while True:
            self._vigil.alive()  # a participant is dead for the run: no attempt is handed out
            if slot.feeders > self._feeders(slot, count):
                return  # the hand's places shrank: this feeder's attempts would only wait there
            size = self._batch(slot, count)
            batch: dict[tuple[str, int], Planned] = {}
            while len(batch) < size:
                one = await self._next()
                if one is None:
                    break
                batch[one.key()] = one
            if not batch:
                return
            hand, generation = slot.hand, slot.generation
            try:
                async for message in hand.plays.options(num_returns="streaming").remote(list(batch)):
                    for played in _ENDED.decode(await message):
                        noted = self._heard(hand, played)
                        one = batch.pop((played.outcome.scenario, played.outcome.attempt))
                        if self._first(one):  # played twice: the first outcome back is the one kept
                            self._vigil.record(played.outcome, noted)
                        if slot.generation == generation:  # not a hand replaced since: its own places
                            slot.room = played.room
                    self._grown(slot, count)
            except dead:
                for one in batch.values():  # those not sent back: played again, by another hand
                    self._again.append(one)
                    self._replayed.add(one.key())
                await self._replaced_in(slot, generation, count)
                continue
            except self._ray.exceptions.RayTaskError as error:
                raise error.as_instanceof_cause() from None  # convy's own error in the hand stops the run

    def _heard(self, hand: Any, played: Played) -> set[Pulse]:
        """What a hand heard of the participants, told to the driver's vitals and, of one that
        answered at last, to every other hand; the participants the attempt noted, for its record."""
        noted, answered = self._vigil.vitals.told(played.news)
        for who, name in answered:  # alive for the run: every other hand hears it, and sends to it again
            for other in self._slots:
                if other.hand is not hand:
                    other.hand.answered.remote(who, name)
        return noted

    def _first(self, one: Planned) -> bool:
        """Whether this is the first outcome back of the attempt."""
        key = (one.scenario.id, one.attempt)
        if key not in self._replayed:
            return True
        if key in self._replayed_recorded:
            return False
        self._replayed_recorded.add(key)
        return True

    async def _replaced_in(self, slot: _Slot, generation: int, count: int) -> None:
        """A new hand in the slot whose hand of ``generation`` died; one that dies before it is
        ready counts as another death. Past the bound, the run stops: ``WorkersLost``."""
        dead = self._ray.exceptions.RayActorError
        while slot.generation == generation:  # else another feeder of the slot replaced it already
            slot.generation += 1
            generation = slot.generation
            self._replaced += 1
            if self._replaced > Crew.MOST_REPLACED * count:
                raise WorkersLost(
                    f"the run's workers died {self._replaced} times ({count} started, each replaced "
                    f"up to {Crew.MOST_REPLACED} times)"
                )
            slot.hand = self._started(slot.number, count, cpus=0.0)
            slot.room = None  # a new hand's places start over
            try:
                said = await slot.hand.ready.remote()
            except dead:
                continue  # died before it was ready: replaced again, unless another feeder did
            if said:
                raise ConfigurationError(f"a worker could not load the project: {said}")
            await self._introduced()
            return
