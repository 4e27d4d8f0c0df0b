"""Playing a run: the bench that plays attempts at once, and the folder that keeps them.

``Bench`` plays attempts concurrently against one agent, each participant (the agent, the
simulated user's model, the judge) within its own places. ``Journal`` is what receives each attempt
as it ends; ``RunJournal`` is the one that keeps a run's folder::

    results/<agent>/<run-id>/
        run.json        the RunSpec and the run's status, rewritten whole and atomically
        attempts.jsonl  one Outcome per line, appended the moment an attempt ends
        run.lock        held while a process plays the run

A process killed mid-write leaves at most a torn last line, which is cut off when the folder is
read again, and ``RunJournal.play`` plays only the attempts the folder lacks. While a run plays, the
lines of the attempts that ended together are appended with one write and flushed to the disk with
one ``fdatasync`` as soon as the event loop is free, and only then is any of those attempts taken as
kept — passed on to be shown, counted — so what a run has said it keeps survives a kill and a power
loss alike; ``run.json`` is flushed before it is renamed into place (decision 8). A write the file
system refuses (a full disk, a file-size limit, a read-only mount) leaves no part of a line behind
and stops the run with ``Unwritable``.
"""

from __future__ import annotations

import asyncio
import fcntl
import math
import os
import secrets
from array import array
from collections.abc import Callable, Container, Coroutine, Iterable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Protocol

import msgspec

from convy.adaptive import Adaptive, Rounds
from convy.agent import Agent, Answer, Message, TimeLimited, turned
from convy.budget import Budget, Counted, Earlier, Outlay, Spending
from convy.busy import START, Patience, Places, Seat, Who
from convy.conduct import UserChecks, UserReview
from convy.dialog import ChatJudge, Checked, PatientJudge, Prompt
from convy.files import RegularFile, Replaced
from convy.model import Absent, Models, PatientModel
from convy.panel import Judging, Panel, Poll
from convy.passing import PassRule
from convy.placed import Placed
from convy.problems import ConfigurationError, FieldProblem, Unplayed, Unwritable, WorkersLost
from convy.quota import Services
from convy.scenario import Outcome, Scenario
from convy.secrets import Secrets
from convy.vital import DeadService, Vigil, Vitals, WatchedAgent


class RunInUse(ConfigurationError):
    """Another process is playing this run."""


class RunDamaged(ConfigurationError):
    """A run's ``run.json`` is there but cannot be read; its attempts still can."""


class Limits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How much each participant does at once and per minute (0: no limit), how long it waits for
    a busy service (``*_patience``, seconds per request), how long a dialogue may go, and the
    agent's time limits in seconds. Places with no cap (0) start at ``busy.START`` and grow while
    the service keeps up (``busy.Places``); a number is a cap a team sets to protect a service."""

    agent_places: int = 0
    user_places: int = 0
    judge_places: int = 0
    agent_per_minute: int = 0
    user_per_minute: int = 0
    judge_per_minute: int = 0
    agent_patience: float = 300.0
    user_patience: float = 300.0
    judge_patience: float = 300.0
    max_turns: int = 10
    open_seconds: float = 60.0
    turn_seconds: float = 120.0
    close_seconds: float = 60.0

    # Each participant's cap of places, by who it is: the one list of those fields, for every
    # reader that goes through them (``starting`` reads one by its participant's name too).
    PLACES: ClassVar[dict[Who, str]] = {"agent": "agent_places", "user": "user_places", "judge": "judge_places"}

    # The largest value each may take: beyond them a run would never end or would not fit in
    # memory, and a number that is not finite would not read back from run.json.
    MOST: ClassVar[dict[str, float]] = {
        "max_turns": 1_000,
        "agent_places": 100_000,
        "user_places": 100_000,
        "judge_places": 100_000,
        "agent_per_minute": 1_000_000,
        "user_per_minute": 1_000_000,
        "judge_per_minute": 1_000_000,
        "agent_patience": 1_000_000.0,
        "user_patience": 1_000_000.0,
        "judge_patience": 1_000_000.0,
        "open_seconds": 1_000_000.0,
        "turn_seconds": 1_000_000.0,
        "close_seconds": 1_000_000.0,
    }

    def __post_init__(self) -> None:
        for name, most in self.MOST.items():
            value = getattr(self, name)
            if value is None:  # a setting left unset (``Settings.min_attempts``)
                continue
            if value != value or value in (math.inf, -math.inf):  # compared, never made a float: an int may not fit one
                raise ValueError(f"{name}: must be a finite number")
            if value > most:
                raise ValueError(f"{name}: must be at most {most:,.0f}")
        if self.max_turns < 1:
            raise ValueError("max_turns: must be at least 1")
        for name in self.PLACES.values():
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: must be 0 (no cap: places grow) or more")
        for name in ("agent_per_minute", "user_per_minute", "judge_per_minute"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: must be 0 (no limit) or more")
        for name in ("agent_patience", "user_patience", "judge_patience"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: must be 0 or more")
        for name in ("open_seconds", "turn_seconds", "close_seconds"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}: must be more than 0")

    def shared(self, number: int, of: int) -> Limits:
        """The share of these limits that worker ``number`` (from 0) of ``of`` keeps in a spread
        run: every participant's places and per-minute cap split in whole parts that add up to
        the run's (the first workers keeping one more of what does not split evenly); a cap of 0,
        no cap, stays none. The run's hands are never more than the smallest of them."""
        parts = {}
        for name in (
            "agent_places", "user_places", "judge_places", "agent_per_minute", "user_per_minute", "judge_per_minute",
        ):
            whole = getattr(self, name)
            parts[name] = whole // of + (1 if number < whole % of else 0)
        return msgspec.structs.replace(self, **parts)

    def starting(self, who: Who) -> int:
        """How many places ``who`` has as the run starts: its cap, or ``START`` with none (they grow
        from there). What a stopped run's budget is reckoned with (``report.Stop.more``), and what
        a spread run hands each worker before the worker says how its places grew."""
        return getattr(self, f"{who}_places") or START

    def places(self, who: Who, services: Services | None = None) -> Places:
        """New places for one participant of a run, made in the event loop that will use them;
        participants given the same ``services`` share what they learn of a service they share."""
        return Places(
            getattr(self, f"{who}_places"),
            who,
            getattr(self, f"{who}_per_minute"),
            Patience(getattr(self, f"{who}_patience")),
            services,
        )


class Journal(Protocol):
    """Receives each attempt the moment it ends."""

    def record(self, outcome: Outcome) -> None: ...


class Planned(msgspec.Struct, frozen=True):
    """One attempt a run plays: a scenario and the attempt's number, from 1."""

    scenario: Scenario
    attempt: int

    def key(self) -> tuple[str, int]:
        """Its scenario's id and its number, as its outcome names it."""
        return (self.scenario.id, self.attempt)


class Plan(msgspec.Struct, frozen=True):
    """Every scenario, played ``attempts`` times: the attempts of a run, in order."""

    scenarios: tuple[Scenario, ...]
    attempts: int = 1

    def __iter__(self) -> Iterator[Planned]:
        for scenario in self.scenarios:
            for attempt in range(1, self.attempts + 1):
                yield Planned(scenario, attempt)

    def __len__(self) -> int:
        return len(self.scenarios) * self.attempts


class Playlist(Protocol):
    """Attempts a ``Player`` plays: how many, and each in turn (a ``Plan``, ``Lacking``, a tuple
    of ``Planned``), walked as often as the player needs."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Planned]: ...


class Lacking:
    """The attempts of a ``Plan`` its run's folder lacks, in the plan's order: made one at a time
    as they are walked, never held (a tuple of them was about 60 bytes an attempt); of those kept,
    a byte an attempt of the plan, for a run resumed. A plain class: nothing in it changes once made."""

    __slots__ = ("_plan", "_kept", "_count")

    def __init__(self, plan: Plan, kept: Iterable[Outcome]) -> None:
        self._plan = plan
        self._kept: dict[str, bytearray] = {}
        wanted = {scenario.id for scenario in plan.scenarios}
        found = 0
        for outcome in kept:
            if outcome.scenario in wanted and 1 <= outcome.attempt <= plan.attempts:
                marks = self._kept.setdefault(outcome.scenario, bytearray(plan.attempts + 1))
                found += not marks[outcome.attempt]
                marks[outcome.attempt] = 1
        self._count = len(plan) - found

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Planned]:
        nothing = bytes(self._plan.attempts + 1)
        for scenario in self._plan.scenarios:
            marks = self._kept.get(scenario.id, nothing)
            for attempt in range(1, self._plan.attempts + 1):
                if not marks[attempt]:
                    yield Planned(scenario, attempt)


class Bench(msgspec.Struct, frozen=True):
    """Plays attempts against an agent, with the project's models, within the limits.

    ``prompt`` is the simulator prompt a scenario's user is told with. ``budget``, when one is
    set, is what the run may spend: a worker starts an attempt only when what it would likely
    spend still fits (``budget.Spending.taken``), and the attempts under way when none fits end
    and are recorded (with none, nothing is counted). ``judging`` is how
    its claims are judged: with one judge asked once, the judge is asked directly, as it always
    was; otherwise through a ``Poll`` of every judge, each patient within the judge's places.
    ``user_checks`` is how its simulated user is checked: by code always, by the judge's chat model
    for the checks it asks (``RunJudge.model``), and whether a fault leaves the attempt not judged.
    """

    agent: Agent
    models: Models
    limits: Limits = Limits()
    prompt: Prompt | None = None
    budget: Budget | None = None
    judging: Judging = Judging()
    user_checks: UserChecks = UserChecks()

    async def run(self, planned: Playlist, journal: Journal, earlier: Iterable[Outcome] | Earlier = ()) -> Spending | None:
        """Play every planned attempt, each recorded in ``journal`` as it ends; with a budget,
        only until it is spent (counting the attempts ``earlier`` kept too), and what was spent."""
        vigil = Vigil(journal)  # each participant watched: one whose service refuses it for good stops the run
        stage = self.stage((one.scenario for one in planned), vitals=vigil.vitals)
        plan = iter(planned)
        spending: Spending | None = None
        if self.budget is not None:  # a wrapper, only with a budget: a run without one counts nothing
            spending = self.budget.spending(earlier, asyncio.get_running_loop().time)
            vigil.journal = Counted(journal, spending)

        total = len(planned)  # the same all run long: asked once, not before every attempt
        workers = min(total, stage.hands())

        async def worker(group: asyncio.TaskGroup) -> None:
            # A worker takes an agent's place before it takes an attempt, so an attempt starts, and
            # its time with it, only once it has the place: there are more workers than agent
            # places (the others judge), and a wait for a place is not the attempt's doing. With a
            # budget, it then waits until the budget lets the attempt start.
            nonlocal workers
            while True:
                seat = await stage.seat()
                try:
                    vigil.alive()  # a participant is dead: no attempt starts
                    # The next attempt: at once with no budget (no coroutine to await for it), else
                    # once the spending lets it start.
                    one: Planned | None
                    if spending is None:
                        one = next(plan, None)
                    else:
                        one = await spending.taken(plan, Planned.key)
                except BaseException:
                    seat.release()
                    raise
                if one is None:
                    seat.release()
                    return
                if workers < min(total, stage.hands()):
                    # Places with no cap have grown: one more worker, waiting for the next place.
                    workers += 1
                    group.create_task(worker(group))  # noqa: F821 - deleted only once the play has ended
                await vigil.attempt(stage.seated(one, seat))

        try:
            with vigil.watching():  # a dead participant's stop, alone; at the end, attempts still held stop it too
                async with asyncio.TaskGroup() as group:
                    for _ in range(workers):
                        group.create_task(worker(group))
        finally:
            # ``worker`` starts more of itself: its closure holds it, and it the stage, a cycle
            # that only the collector (set to run rarely) would free; an adaptive run plays a
            # bench a round, and kept every round's stage until then.
            del worker
        # A task group lets a worker that ends cancelled go without a word, its attempt with it:
        # the bench is not done until every planned attempt was recorded, or left in the plan by
        # a budget that was spent.
        left = sum(1 for _ in plan)
        if vigil.recorded + left != len(planned):
            raise Unplayed(
                f"{len(planned) - left - vigil.recorded} of {len(planned)} planned attempts ended without being recorded"
            )
        return spending

    def budgeted(self, budget: Budget | None) -> Bench:
        """This bench with another budget."""
        return msgspec.structs.replace(self, budget=budget)

    def stage(self, scenarios: Iterable[Scenario], services: Services | None = None, vitals: Vitals | None = None) -> Stage:
        """Everything the attempts of ``scenarios`` are played with, made in the event loop that
        plays them: the participants' places (sharing ``services``), the agent within its time
        limits, the simulated users, the judge; with ``vitals``, each participant ``Watched``."""
        from convy.dialog import DefaultPrompts

        prompt = self.prompt or Prompt(DefaultPrompts().user())
        services = Services() if services is None else services
        places = {who: self.limits.places(who, services) for who in ("agent", "user", "judge")}
        agent: Any = TimeLimited(self.agent, self.limits.open_seconds, self.limits.turn_seconds, self.limits.close_seconds)
        models = self.models
        if vitals is not None:
            agent = WatchedAgent(agent, vitals.pulse("agent"))
            models = Models(vitals.watched(models.user, "user"), vitals.watched(models.judge, "judge"))
        user = PatientModel(models.user, places["user"])  # contained by the scenario's SimulatedUser
        judge = RunJudge(models.judge, self.judging).within(places["judge"])
        review = UserReview(self.user_checks, RunJudge(models.judge).model(places["judge"]))
        # A scenario's simulated user is the same for all its attempts: its prompt is filled once,
        # however many times the scenario comes (a run passes one per attempt).
        unique = {scenario.id: scenario for scenario in scenarios}
        users = {
            key: scenario.simulated(user, prompt) if scenario.user.strip() else Absent()
            for key, scenario in unique.items()
        }
        return Stage(agent, places["agent"], users, judge, review, self.limits.max_turns, places["judge"])


class Stage(msgspec.Struct, frozen=True):
    """What a bench plays attempts with in one event loop: the agent, its places, each scenario's
    simulated user, the judge and the review of the users' conduct. A ``Bench`` makes one for a
    run; a worker of a spread run (``spread.py``) makes one for all the attempts it is handed."""

    agent: Any
    places: Places
    users: dict[str, Any]
    judge: Any
    review: UserReview
    max_turns: int
    judge_places: Places | None = None

    def hands(self) -> int:
        """How many attempts to have under way at once: one for each of the agent's places and
        each of the judge's, as many as they are now (places with no cap grow), so that some are
        judged while others play."""
        return self.places.size + (self.judge_places.size if self.judge_places is not None else 0)

    def seat(self) -> Coroutine[Any, Any, Seat]:
        """Wait for one of the agent's places."""
        return self.places.seat()

    async def seated(self, one: Planned, seat: Seat) -> Outcome:
        """Play one attempt in the agent's place ``seat``, given back when its conversation closes."""
        try:
            return await one.scenario.outcome(
                one.attempt,
                _Seated(self.agent, self.places, seat),
                self.users[one.scenario.id],
                self.judge,
                self.max_turns,
                self.review,
            )
        finally:
            seat.release()

    async def played(self, one: Planned) -> Outcome:
        """Play one attempt once one of the agent's places is free."""
        return await self.seated(one, await self.seat())


class RunJudge(msgspec.Struct, frozen=True):
    """A run's judge as each attempt asks it: within the judge's places, again while its service
    is busy and its patience lasts, and ``Checked``. With one judge asked once (``judging.direct``)
    the judge is asked directly, as it always was; otherwise through a ``Poll`` of every judge of
    the panel (or of the one judge, asked ``judging.repeats`` times), each vote ``Checked`` so it
    has its claim's shape. A played run (``Bench``) and a re-judged one (``rejudge.Rejudging``) ask
    it the same way."""

    judge: Any
    judging: Judging = Judging()

    def within(self, places: Places) -> Checked:
        judge = self.judge
        match judge:
            case Panel(judges=judges):
                names = judge.names()
            case _:
                if self.judging.direct():
                    return Checked(self._patient(judge, places))
                judges, names = (judge,), (judge.name,)
        return Checked(Poll(tuple(Checked(self._patient(one, places)) for one in judges), names, self.judging))

    def model(self, places: Places) -> Any:
        """The chat model the simulated user's model-decided checks are asked of: the judge's (a
        ``ChatJudge``'s, or a panel's first ``ChatJudge``'s), within the judge's places and patient
        as its requests are; ``Absent`` with the reason when the judge has no chat model."""
        judge = self.judge
        match judge:
            case Panel(judges=judges):
                pass
            case _:
                judges = (judge,)
        for one in judges:
            match one:
                case ChatJudge(model=model):
                    return PatientModel(model, places)
                case _:
                    pass
        match judge:
            case Absent(reason=reason):
                return Absent(f"the judge is absent: {reason}")
        return Absent(f"the judge {judge.name} has no chat model to ask")

    def _patient(self, judge: Any, places: Places) -> Any:
        # A ChatJudge sends one request per claim: it waits for a busy service request by
        # request, so a refusal never sends again the claims already decided. Any other judge
        # is tried again whole.
        match judge:
            case ChatJudge(model=model):
                return msgspec.structs.replace(judge, model=PatientModel(model, places))
            case _:
                return PatientJudge(judge, places)


class Player(Protocol):
    """What plays the attempts of a run that its folder lacks: a ``Bench``, a ``spread.Crew``, a
    ``rejudge.Rejudging`` that decides recorded dialogues again, or ``adaptive.Rounds`` around one
    of them, which plays only the attempts its rule wants."""

    @property
    def budget(self) -> Budget | None: ...

    def budgeted(self, budget: Budget | None) -> Player:
        """The same player with another budget (``adaptive.Rounds`` gives each round what is left)."""
        ...

    async def run(
        self, planned: Playlist, journal: Journal, earlier: Iterable[Outcome] | Earlier = ()
    ) -> Spending | None: ...


class _Seated(msgspec.Struct, frozen=True):
    """The agent for one attempt, whose place the bench took before the attempt began: its
    conversation holds that place and gives it back when it closes, so the judge decides after."""

    agent: Any
    places: Places
    seat: Seat

    def conversation(self) -> _SeatedConversation:
        return _SeatedConversation(self)


class _SeatedConversation:
    """A ``_Seated`` agent's conversation: opened as its places allow (again while the service is
    busy), each turn within them (``agent.turned``), and the seat given back when it
    closes. A plain class, entered once: it holds the agent's context manager and conversation
    between the opening and the closing (an ``asynccontextmanager`` and an ``AsyncExitStack``
    cost several times as much, on every attempt)."""

    __slots__ = ("_seated", "_manager", "_origin")
    _manager: AbstractAsyncContextManager[Any]  # both set once the agent's is open
    _origin: Any

    def __init__(self, seated: _Seated) -> None:
        self._seated = seated

    async def __aenter__(self) -> _SeatedConversation:
        try:
            # Not paced (``paced`` False), given positionally: a keyword costs more on every attempt.
            self._origin = await self._seated.places.retried(self._opened, False)
        except BaseException:
            self._seated.seat.release()
            raise
        return self

    async def _opened(self) -> Any:
        # One try of the opening: a refused one is not open, and the next try opens anew.
        manager = self._seated.agent.conversation()
        opened = await manager.__aenter__()
        self._manager = manager
        return opened

    def turn(self, message: Message) -> Coroutine[Any, Any, Answer]:
        # Each request of the turn sent again on its own while busy; the turn only when the
        # agent's own code said it was refused (``agent.turned``).
        return turned(self._seated.places, self._origin.turn, message)  # no partial: a third of a microsecond a turn

    async def __aexit__(
        self, kind: type[BaseException] | None, failed: BaseException | None, trace: TracebackType | None
    ) -> None:
        try:
            await self._manager.__aexit__(kind, failed, trace)
        finally:
            self._seated.seat.release()


class Fingerprints(msgspec.Struct, frozen=True):
    """SHA-256 of what a run started with: the scenario files, the agent's file, models.py, and
    the simulator prompt's text."""

    scenarios: str = ""
    agent: str = ""
    models: str = ""
    prompt: str = ""


class UserShape(msgspec.Struct, frozen=True, omit_defaults=True):
    """What the simulated user of a run was (issue 11): its model's name, the settings of that
    model that shape what it says (those it exposes of ``temperature``, ``top_p``, ``seed``,
    ``max_tokens``, ``effort`` and the ``extra`` fields of its requests — never its key or its
    URL), and the SHA-256 of each scenario's simulator prompt as filled for it (the prompt's text
    with the scenario's instructions and vars: what the model is told), by scenario id.

    ``known`` is false in a run.json written before it was kept, and in a run with no simulated
    user at all: a comparison then has nothing of it to compare. A re-judged run keeps its source's
    (its dialogues are the source's)."""

    known: bool = False
    model: str = ""
    settings: dict[str, Any] = {}
    prompts: dict[str, str] = {}

    def changes(self, other: UserShape, scenarios: Iterable[str]) -> list[str]:
        """What differs from this user to ``other``, in words ("model a → b", "temperature 0.2 →
        0.7", "its filled prompt in 2 of 5 scenarios"), the prompts looked at in ``scenarios``
        only; nothing when either is not known."""
        if not (self.known and other.known):
            return []
        said: list[str] = []
        if self.model != other.model:
            said.append(f"model {self.model or 'none'} → {other.model or 'none'}")
        for name in sorted(set(self.settings) | set(other.settings)):
            before, after = self.settings.get(name), other.settings.get(name)
            if before != after:
                said.append(f"{name} {self._said(before)} → {self._said(after)}")
        looked = [scenario for scenario in scenarios if scenario in self.prompts and scenario in other.prompts]
        differ = sum(1 for scenario in looked if self.prompts[scenario] != other.prompts[scenario])
        if differ:
            said.append(f"its filled prompt in {differ} of {len(looked)} scenarios compared")
        return said

    def _said(self, value: Any) -> str:
        # A setting's value as a comparison says it: JSON, or "unset".
        return "unset" if value is None else msgspec.json.encode(value).decode()


class ModelNames(msgspec.Struct, frozen=True, omit_defaults=True):
    """The models of a run, by name only: an object would carry its keys.

    ``judge`` is the judge's name, a panel's names joined with ", " (as a run.json before panels
    has it); ``panel`` the panel's judges one by one (empty for one judge). ``agent`` is the model
    the agent runs on, when it says (``ChatAgent.model``, or a ``model`` attribute of the project's
    agent: "" when it does not), ``agent_provider`` its provider, and ``providers`` each judge's
    whose provider is known (``providers.Made``): for the report to name a judge that may favour
    the agent's own provider."""

    user: str = "absent"
    judge: str = "absent"
    panel: tuple[str, ...] = ()
    agent: str = ""
    agent_provider: str = ""
    providers: dict[str, str] = {}

    def alike(self) -> tuple[str, ...]:
        """The judges from the same provider as the agent's model: possibly biased towards it."""
        if not self.agent_provider:
            return ()
        return tuple(judge for judge in self.judges() if self.providers.get(judge) == self.agent_provider)

    def judges(self) -> tuple[str, ...]:
        """The run's judges one by one: a panel's, or the one judge (none when it was absent)."""
        if self.panel:
            return self.panel
        return () if self.judge == "absent" else (self.judge,)


class Skipped(msgspec.Struct, frozen=True):
    """A scenario the run did not play, and why: one reason per model it needs and lacks."""

    scenario: str
    reasons: tuple[str, ...]


class FolderName(msgspec.Struct, frozen=True):
    """A field naming one folder of ``results/<agent>/<run>``: one plain, printable name of at most
    ``LONGEST`` characters, never a path (``ValueError`` naming the field otherwise)."""

    field: str
    name: str

    LONGEST: ClassVar[int] = 200

    def check(self) -> None:
        name = self.name
        if name in ("", ".", "..") or "/" in name or "\\" in name or not name.isprintable():
            raise ValueError(f"{self.field}: not a folder's name")
        if len(name) > self.LONGEST:
            raise ValueError(f"{self.field}: longer than {self.LONGEST} characters")


class RunName(msgspec.Struct, frozen=True):
    """A run's name as a person gave it (``convy run --name "prompt B"``): one printable line of
    at most ``LONGEST`` characters with something in it, or none at all (``""``). Checked where it
    enters (the command line) and where it is read back (run.json, which anyone may have edited):
    a name is shown on pages and in terminals, so it must never carry a control character."""

    text: str

    LONGEST: ClassVar[int] = 80

    def problem(self) -> str | None:
        """What is wrong with the name, in words that say the fix; None for a sound one."""
        if not self.text.strip():
            return "must not be blank: give a few words, e.g. --name \"prompt B\""
        if not self.text.isprintable():
            return "must be one line of printable characters (no tabs, newlines or control characters)"
        if len(self.text) > self.LONGEST:
            return f"{len(self.text)} characters: give at most {self.LONGEST}"
        return None


class Origin(msgspec.Struct, frozen=True):
    """The run whose recorded dialogues a re-judged run decides again (``convy rejudge``): its
    agent and id, so its folder is ``results/<agent>/<run>``."""

    agent: str
    run: str

    def __post_init__(self) -> None:
        # Read from run.json, which anyone may have written: results/<agent>/<run> must never lead
        # out of results/ (an absolute path joined to it would replace it).
        FolderName("agent", self.agent).check()
        FolderName("run", self.run).check()


class RunSpec(msgspec.Struct, frozen=True):
    """What a run plays: enough to play the rest of it later, and to tell two runs apart."""

    id: str
    agent: str
    scenarios: tuple[Scenario, ...]
    attempts: int
    limits: Limits
    trust: float = 0.0
    models: ModelNames = ModelNames()
    fingerprints: Fingerprints = Fingerprints()
    skipped: tuple[Skipped, ...] = ()
    convy: str = ""
    budget: Budget = Budget()  # what it may spend, as its last play was given it (``convy resume`` keeps it); Budget(): none
    origin: Origin | None = None  # a re-judged run's source; None for a run that was played
    judging: Judging = Judging()  # how its claims are judged (a run.json before it: once, by one judge)
    user: UserShape = UserShape()  # what its simulated user was (a run.json before it: not known)
    user_checks: UserChecks = UserChecks()  # how its simulated user is checked (before it: by code, faults not judged)
    adaptive: Adaptive | None = None  # the rule that spends its attempts, ``attempts`` then the most (None: all played)
    rule: PassRule = PassRule()  # what the project accepts of it (a run.json before it: every attempt passes)
    name: str = ""  # what a person called it (``convy run --name``); "" for none (a run.json before names)

    MOST_ATTEMPTS: ClassVar[int] = 10_000
    LONGEST_NAME: ClassVar[int] = FolderName.LONGEST

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts: must be at least 1")
        if self.attempts > self.MOST_ATTEMPTS:
            raise ValueError(f"attempts: must be at most {self.MOST_ATTEMPTS:,}")
        if not 0.0 <= self.trust <= 1.0:
            raise ValueError("trust: must be between 0 and 1")
        # The run's folder is results/<agent>/<id>: each must be one plain name, never a path.
        FolderName("id", self.id).check()
        FolderName("agent", self.agent).check()
        if self.name:
            problem = RunName(self.name).problem()
            if problem is not None:
                raise ValueError(f"name: {problem}")
        if self.adaptive is not None and self.adaptive.least > self.attempts:
            raise ValueError("min_attempts: must be at most max_attempts")

    def planned(self) -> Plan:
        return Plan(self.scenarios, self.attempts)

    def player(self, player: Player) -> Player:
        """What plays this run: ``player``, or, for a run whose attempts are spent adaptively,
        ``adaptive.Rounds`` around it."""
        if self.adaptive is None:
            return player
        return Rounds(player, self.adaptive, tuple(scenario.id for scenario in self.scenarios), self.attempts, self.trust)


class RunId(msgspec.Struct, frozen=True):
    """A new run's id: when it started, and a few random letters so two runs never share one."""

    moment: datetime

    def text(self) -> str:
        return f"{self.moment.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


class Running(msgspec.Struct, frozen=True, tag="running"):
    """A run being played, or whose process died without a word (its lock is then free)."""

    started: str


class Complete(msgspec.Struct, frozen=True, tag="finished", omit_defaults=True):
    """A run whose every planned attempt is kept; ``budget``, the budget its last play was given,
    when one was set (left out of run.json when none was: an older convy, which does not know the
    field, reads such a run as finished); ``reached``, what was spent when the play reached or
    crossed that budget with its last attempts (those under way, or the first, whose spend was not
    known before it ended), else ``None``."""

    started: str
    ended: str
    budget: Budget = Budget()
    reached: Outlay | None = None


class Interrupted(msgspec.Struct, frozen=True, tag="interrupted"):
    """A run stopped before its end, by Ctrl+C or an error; ``convy resume`` plays the rest."""

    started: str
    ended: str


class Stopped(msgspec.Struct, frozen=True, tag="stopped"):
    """A run its budget stopped: no attempt was started once what it would likely spend no longer
    fitted, those under way were kept; ``spent`` says which budget and what was spent. ``convy resume`` with a larger budget
    plays the rest. (Added after the first three: decision 5 says what an older convy makes of it.)"""

    started: str
    ended: str
    spent: Outlay


class RunFile(msgspec.Struct, frozen=True):
    """``run.json``: the run's spec and status."""

    spec: RunSpec
    status: Running | Complete | Interrupted | Stopped
    format: int = 1


class Seen(msgspec.Struct, frozen=True):
    """``attempts.jsonl`` as the system described it just before it was read: its device, inode,
    size and modification time; all 0 when there was no such file. Only a process holding
    ``run.lock`` appends to the file or cuts it, so one that is seen the same under the lock holds
    the lines read then."""

    device: int = 0
    inode: int = 0
    size: int = 0
    modified: int = 0


class Bounds(msgspec.Struct, frozen=True):
    """A run's plan as the attempts read are held to it: its scenarios' ids, and its attempts at
    most (``RunJournal.read``, ``Kept.within``)."""

    scenarios: frozenset[str]
    attempts: int

    @classmethod
    def of(cls, spec: RunSpec) -> Bounds:
        return cls(frozenset(scenario.id for scenario in spec.scenarios), spec.attempts)

    def holds(self, outcome: Outcome) -> bool:
        return outcome.scenario in self.scenarios and 1 <= outcome.attempt <= self.attempts


class Kept(msgspec.Struct, frozen=True):
    """What a run's ``attempts.jsonl`` holds: the attempts read, and the lines left out — those
    that could not be read, those that repeat an attempt read before, those that are not an attempt
    of the run's plan (``foreign``: a scenario it does not play, an attempt past its number), and a
    last line cut short by a process stopped while writing it (``torn``, played again on resume);
    ``seen``, the file as it was when they were read (``Kept(())``: a run with no such file yet);
    ``plan``, the plan they were held to as they were read (``None``: none), so that holding them
    to that plan again (``within``) need not walk them (for a ``Placed``, read the file again)."""

    outcomes: Sequence[Outcome]  # a tuple, or for ``RunJournal.unsaid`` a ``Placed``: where each line begins
    unreadable: int = 0
    repeated: int = 0
    foreign: int = 0
    torn: int = 0
    seen: Seen = Seen()
    plan: Bounds | None = None

    @property
    def broken(self) -> int:
        """Every line left out."""
        return self.unreadable + self.repeated + self.foreign + self.torn

    def within(self, spec: RunSpec) -> Kept:
        """These attempts, without those the run's plan does not hold (counted ``foreign``):
        themselves, unwalked, when they were read held to that very plan."""
        plan = Bounds.of(spec)
        if plan == self.plan:
            return self
        outcomes = self.outcomes
        kept = [at for at, one in enumerate(outcomes) if plan.holds(one)]
        match outcomes:
            case Placed():
                planned: Sequence[Outcome] = outcomes.chosen(kept)
            case _:
                planned = tuple(outcomes[at] for at in kept)
        return msgspec.structs.replace(self, outcomes=planned, foreign=self.foreign + len(outcomes) - len(planned), plan=plan)

    def note(self) -> str:
        """The lines left out, in words, for the terminal; empty when none was but a torn last line."""
        said = [
            f"{count} {what}"
            for count, what in (
                (self.unreadable, "could not be read"),
                (self.repeated, "repeated an attempt read before"),
                (self.foreign, "held an attempt the run did not plan"),
            )
            if count
        ]
        if not said:
            return ""
        total = self.unreadable + self.repeated + self.foreign
        return f"{total} line{'s' if total != 1 else ''} of attempts.jsonl skipped: {', '.join(said)}"

    def __repr__(self) -> str:
        # Short: asyncio formats the repr of a finished task's result (and so of every attempt
        # here) when asyncio.run restores its SIGINT handler, 0.5 s for 10,000 attempts.
        return f"Kept({len(self.outcomes)} outcomes, {self.broken} broken)"


_RUN = msgspec.json.Decoder(RunFile)
_OUTCOME = msgspec.json.Decoder(Outcome)


class Left:
    """The lines of ``attempts.jsonl`` left out while ``RunJournal.read`` reads it, by why
    (``Kept``'s counts): a plain class, counted into as the file is read."""

    def __init__(self) -> None:
        self.unreadable = self.repeated = self.foreign = self.torn = 0

    def kept(self, outcomes: Sequence[Outcome] = (), seen: Seen = Seen(), plan: Bounds | None = None) -> Kept:
        return Kept(outcomes, self.unreadable, self.repeated, self.foreign, self.torn, seen, plan)
_ENCODER = msgspec.json.Encoder()


class RunJournal(msgspec.Struct, frozen=True):
    """A run's folder: it keeps each attempt as it ends, and the run's status."""

    folder: Path

    def record(self, outcome: Outcome) -> None:
        """Append the attempt as one line and flush it to the disk; a refused write leaves nothing."""
        _, refused = self._appended(_ENCODER.encode(outcome) + b"\n")
        if refused is not None:
            raise refused

    def _appended(self, data: bytes) -> tuple[int, Unwritable | None]:
        """Append ``data``, whole lines, and flush it to the disk: how many of its bytes are kept,
        and the refusal of a write the file system refused. The file always ends with a whole line."""
        path = self.folder / "attempts.jsonl"
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as error:
            return 0, Unwritable(path, error)
        written = 0
        try:
            size = os.fstat(descriptor).st_size
            try:
                view = memoryview(data)
                while written < len(data):
                    written += os.write(descriptor, view[written:])
                os.fdatasync(descriptor)
            except OSError as error:
                # The disk filled up part way through: the whole lines that went in stay, flushed,
                # and the rest is taken out again, so a later append starts clean. After a failed
                # flush nothing of these lines is trusted to be on the disk: all of them go.
                whole = data.rfind(b"\n", 0, written) + 1 if written < len(data) else 0
                try:
                    os.ftruncate(descriptor, size + whole)
                    if whole:
                        os.fdatasync(descriptor)
                except OSError:
                    whole = 0
                    with suppress(OSError):
                        os.ftruncate(descriptor, size)
                if size == 0 and whole:
                    self._synced_folder()
                return whole, Unwritable(path, error)
        finally:
            os.close(descriptor)
        if size == 0:
            self._synced_folder()
        return len(data), None

    MAX_RUN_BYTES: ClassVar[int] = 16 * 1024 * 1024
    MAX_LINE_BYTES: ClassVar[int] = 64 * 1024 * 1024

    def run(self) -> RunFile:
        """The run's ``run.json``; a missing one is a ``ConfigurationError``, one that cannot be
        read, or whose id is not its folder's name, ``RunDamaged``."""
        path = self.folder / "run.json"
        try:
            run = _RUN.decode(RegularFile(path).data(self.MAX_RUN_BYTES))
        except FileNotFoundError:
            raise ConfigurationError(f"{self.folder}: not a run folder (no run.json)") from None
        except OSError as error:
            raise self._damaged(f"cannot be read: {error.strerror}") from None
        except msgspec.ValidationError as error:
            raise self._damaged(FieldProblem(str(error), RunFile).text()) from None
        except (msgspec.MsgspecError, RecursionError) as error:
            raise self._damaged(f"cannot be read: {error}") from None
        if run.format > 1:
            raise ConfigurationError(f"{path}: written by a newer convy (format {run.format}); upgrade convy")
        if run.spec.id != self.folder.name:
            raise self._damaged(f"spec.id: must be the name of the run's folder, {self.folder.name}")
        return run

    def _damaged(self, said: str) -> RunDamaged:
        return RunDamaged(
            f"{self.folder}/run.json: {said}; its attempts can still be read by convy report and convy "
            "export; restore run.json from a copy to resume the run"
        )

    def read(self, left: Left, spec: RunSpec | None = None) -> Iterator[tuple[int, Outcome]]:
        """The attempts the file keeps, each once (its first line), one at a time with where its
        line begins: the one reader of ``attempts.jsonl`` (``kept``, ``unsaid``, ``recorded`` and
        ``counted.Counted`` all read through it), so all keep and leave out the same lines. A
        blank line is passed over; a last line cut short, one that cannot be read, one of no run's
        attempt, a repeat, and then one ``spec``'s plan does not hold, are left out and counted in
        ``left``. A file convy will not read (a folder, a FIFO, a device) is a
        ``ConfigurationError``."""
        path = self.folder / "attempts.jsonl"
        planned = None if spec is None else {scenario.id for scenario in spec.scenarios}
        most = RunSpec.MOST_ATTEMPTS if spec is None else spec.attempts
        # Each scenario's attempts read, a bit each by number (not the attempt, nor a set's int): a
        # file naming many scenarios each at a high attempt (hand-made, or damaged) holds at most
        # 1.25 KB a name (a byte each held 10 KB: 224 MB for 20,000 names at attempt 10,000).
        seen: dict[str, bytearray] = {}
        try:
            for offset, line in RegularFile(path).placed(self.MAX_LINE_BYTES):
                if line is not None and not line.strip():
                    continue
                if line is not None and not line.endswith(b"\n"):  # the last, cut short
                    left.torn += 1
                    continue
                try:
                    outcome = _OUTCOME.decode(line) if line is not None else None
                except (msgspec.MsgspecError, RecursionError):  # torn, or nested deeper than msgspec reads
                    outcome = None
                if outcome is None:
                    left.unreadable += 1
                    continue
                if not 1 <= outcome.attempt <= RunSpec.MOST_ATTEMPTS:  # no run's attempt, whatever its plan
                    left.foreign += 1
                    continue
                done = seen.get(outcome.scenario)
                if done is None:
                    done = seen[outcome.scenario] = bytearray()
                at, bit = outcome.attempt >> 3, 1 << (outcome.attempt & 7)
                if at >= len(done):
                    done.extend(bytes(max(at + 1, 2 * len(done)) - len(done)))
                elif done[at] & bit:
                    left.repeated += 1
                    continue
                done[at] |= bit
                if planned is not None and (outcome.scenario not in planned or outcome.attempt > most):
                    left.foreign += 1
                    continue
                yield offset, outcome
        except FileNotFoundError:
            return
        except OSError as error:
            raise ConfigurationError(f"{path}: cannot be read: {error.strerror}") from None

    def kept(self, spec: RunSpec | None = None) -> Kept:
        """The attempts kept so far, each once, of the run's plan (``spec``, or else the one its
        ``run.json`` holds, when it can be read); the lines left out are counted. A file convy will
        not read (a folder, a FIFO, a device) is a ``ConfigurationError``."""
        return self._gathered(spec, lambda read: tuple([outcome for _, outcome in read]))

    def unsaid(self, spec: RunSpec | None = None) -> Kept:
        """What ``kept`` gives, each attempt held only as where its line begins (``Placed``: eight
        bytes an attempt), read again from there, one at a time, each time they are walked —
        unsaid (``Outcome.unsaid``), or in full where a dialogue is shown: what the end of a run
        and ``convy report`` sum and report from, holding no attempt."""
        path = self.folder / "attempts.jsonl"
        return self._gathered(spec, lambda read: Placed(path, array("q", (offset for offset, _ in read)), self.MAX_LINE_BYTES))

    def _gathered(self, spec: RunSpec | None, made: Callable[[Iterator[tuple[int, Outcome]]], Sequence[Outcome]]) -> Kept:
        """What ``made`` makes of one walk of ``read`` (``kept``'s attempts, ``unsaid``'s places),
        with the lines it left out and the file as it was seen before."""
        seen = self._seen()
        left = Left()
        plan = self._plan(spec)
        outcomes = made(self.read(left, plan))
        return left.kept(outcomes, seen, None if plan is None else Bounds.of(plan))

    def _plan(self, spec: RunSpec | None) -> RunSpec | None:
        """``spec``, or the one ``run.json`` holds; none when it cannot be read (no plan to hold
        the attempts to)."""
        if spec is not None:
            return spec
        try:
            return self.run().spec
        except ConfigurationError:  # no run.json, or a damaged one
            return None

    def recorded(self, wanted: Container[tuple[str, int]]) -> Iterator[Outcome]:
        """The attempts kept here whose (scenario, attempt) is ``wanted``, each once (its first
        line, as ``kept`` reads it), read line by line as they are asked for: a re-judged run
        streams its source's dialogues rather than holding them all. A line that cannot be read, or
        cut short, is passed over; a file convy will not read is a ``ConfigurationError``."""
        for _, outcome in self.read(Left()):
            if (outcome.scenario, outcome.attempt) in wanted:
                yield outcome

    async def play(
        self,
        spec: RunSpec,
        bench: Player,
        journal: Journal | None = None,
        secrets: Secrets = Secrets(),
        earlier: Kept = Kept(()),
        back: Callable[[RunSpec], Kept] | None = None,
    ) -> Kept:
        """Play the attempts of ``spec`` this folder lacks, holding the folder while it plays; what
        the folder keeps once it has played, read back from it (by ``back``: ``kept``, or
        ``unsaid`` for a caller that sums and reports the run and reads its dialogues again only
        to show them). ``earlier`` is what a caller has read of the folder already (``kept``): it
        is taken as it is while the file is seen the same under the lock, and the file read again
        only when it is not.

        While it plays, this process holds no attempt it plays: each is written and passed on to
        ``journal``, and only counted, so that its memory stays the same however many attempts a
        run plays (a run of 10,000 held 80 MB of them). What the folder keeps is read back from
        ``attempts.jsonl`` at the end, line by line, in one pass: about 25 us an attempt.

        Each attempt is kept here with every one of ``secrets`` hidden from its texts, and once it
        is on the disk goes on to ``journal`` (one that shows it, say), as the folder keeps it.
        The run is marked finished when every attempt is played (with what was spent, when that
        reached its budget), stopped when the bench's budget let no more attempts start (its
        attempts under way kept), and interrupted when anything,
        Ctrl+C included, stops it; that error is raised on, and a write the folder refused as
        ``Unwritable``, attempts that ended unrecorded as ``Unplayed``, each out of its group. A folder that cannot be written before anything is played is a
        ``ConfigurationError``: nothing was sent.
        """
        try:  # a spec that cannot be kept fails before its folder exists, leaving nothing behind
            _ENCODER.encode(spec)
        except (TypeError, ValueError) as error:
            raise ConfigurationError(f"run {spec.id} cannot be kept: {error}") from None
        if spec.id != self.folder.name:  # read back, run.json must name its own folder
            raise ConfigurationError(f"run {spec.id} cannot be kept in {self.folder}: a run's folder is named by its id")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigurationError(f"{Unwritable(self.folder, error)}; nothing was played") from None
        fresh = not (self.folder / "run.json").exists()
        with self._held():
            try:
                self._repaired()
                # A file cut by the repair, or added to by another process since the caller read
                # it, is read again; else what was read holds, and the lines are read once. A file
                # read with a torn last line is read again too: a process that cut it and wrote as
                # many bytes in one tick of the clock would leave its size and time as they were.
                same = not earlier.torn and earlier.seen == self._seen()
                earlier = earlier.within(spec) if same else self.unsaid(spec)
                started = self._started()
                self._written(RunFile(spec, Running(started)))
            except Unwritable as error:
                if fresh:  # a new run that could not start leaves no folder behind
                    with suppress(OSError):
                        (self.folder / "run.lock").unlink()
                        self.folder.rmdir()
                raise ConfigurationError(f"{error}; nothing was played") from None
            missing = Lacking(spec.planned(), earlier.outcomes)
            unflushed = _Unflushed(self, journal, secrets)
            try:
                async with asyncio.TaskGroup() as group:
                    group.create_task(unflushed.flushing())
                    spending = await bench.run(missing, unflushed, earlier.outcomes)
                    unflushed.ended()
                unflushed.flushed()
            except BaseException as error:
                with suppress(Unwritable):  # the attempts that ended before the stop are kept too
                    unflushed.flushed()
                self._marked(RunFile(spec, Interrupted(started, self._now())))
                match error:
                    case BaseExceptionGroup():
                        # each its own line, not a group's trace: a full disk, attempts lost, a
                        # worker of a spread run that could not load the project
                        said, _ = error.split((Unwritable, Unplayed, ConfigurationError, WorkersLost))
                        if said is not None:
                            first = _first(said)
                            match first:
                                case DeadService() if fresh and (not unflushed.kept or first.respecified()):
                                    # A new run that kept nothing, or one that names a model the
                                    # service does not know (resume holds a run to its models), is
                                    # no run of the project: it leaves nothing behind.
                                    self._removed()
                            raise first from None
                raise
            # Stopped: a budget kept an attempt from starting, and attempts were left. Finished with
            # ``reached``: every attempt was played, and the spend reached the budget all the same.
            outlay = None if spending is None else spending.outlay()
            if outlay is not None and spending is not None and spending.stopped() and unflushed.kept < len(missing):
                self._written(RunFile(spec, Stopped(started, self._now(), outlay)))
            elif bench.budget is not None and bench.budget.set():
                reached = outlay if spending is not None and spending.reached() else None
                self._written(RunFile(spec, Complete(started, self._now(), bench.budget, reached)))
            else:
                self._written(RunFile(spec, Complete(started, self._now())))
            if not unflushed.kept:  # nothing appended: the file holds what was read at the start
                return msgspec.structs.replace(earlier, seen=self._seen())
            return (back or self.kept)(spec)

    def _removed(self) -> None:
        """This run's folder gone, with the files a play writes: a new run stopped before it kept
        an attempt (a participant that never answered) joins no history."""
        for name in ("attempts.jsonl", "run.json", "run.lock"):
            with suppress(FileNotFoundError):
                (self.folder / name).unlink()
        with suppress(OSError):
            self.folder.rmdir()
            self.folder.parent.rmdir()  # the agent's folder too, when this was its only run

    @contextmanager
    def _held(self) -> Iterator[None]:
        path = self.folder / "run.lock"
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise ConfigurationError(f"{Unwritable(path, error)}; nothing was played") from None
        try:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise RunInUse(f"run {self.folder.name} is in use by another convy process") from None
            yield
        finally:
            os.close(descriptor)

    def in_use(self) -> bool:
        """Whether a process is playing this run now. Asking writes nothing: a folder without a
        lock file has never been played by a process that is still running; opening it never
        waits (a FIFO put in its place would)."""
        try:
            descriptor = os.open(self.folder / "run.lock", os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return False
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        finally:
            os.close(descriptor)
        return False

    def _seen(self) -> Seen:
        path = self.folder / "attempts.jsonl"
        try:
            found = os.stat(path)
        except FileNotFoundError:
            return Seen()
        except OSError as error:
            raise ConfigurationError(f"{path}: cannot be read: {error.strerror}") from None
        return Seen(found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns)

    def _repaired(self) -> None:
        # A process killed mid-append leaves a last line without its newline: cut it off, so the
        # next line starts clean and that attempt is played again. Only the file's end is read.
        path = self.folder / "attempts.jsonl"
        try:
            with RegularFile(path).opened() as stream:
                end = stream.seek(0, os.SEEK_END)
                cut = end
                while cut > 0:
                    start = max(0, cut - RegularFile.CHUNK)
                    stream.seek(start)
                    chunk = stream.read(cut - start)
                    if cut == end and chunk.endswith(b"\n"):
                        return
                    found = chunk.rfind(b"\n")
                    if found >= 0:
                        cut = start + found + 1
                        break
                    cut = start
        except FileNotFoundError:
            return
        except OSError as error:
            raise ConfigurationError(f"{path}: cannot be read: {error.strerror}") from None
        if cut == end:
            return
        try:
            os.truncate(path, cut)
        except OSError as error:
            raise Unwritable(path, error) from error

    def _written(self, run: RunFile) -> None:
        # Flushed before the rename and the folder after it: after a power loss run.json is the
        # old one or the new one, never an empty file.
        path = self.folder / "run.json"
        try:
            Replaced(path).synced(msgspec.json.format(_ENCODER.encode(run), indent=2) + b"\n")
        except OSError as error:
            raise Unwritable(path, error) from error
        self._synced_folder()

    def _marked(self, run: RunFile) -> None:
        # Marking a run interrupted may meet the full disk that stopped it. run.json then still
        # says running, and with its lock free once this process ends, readers take the run as
        # interrupted all the same.
        with suppress(Unwritable):
            self._written(run)

    def _synced_folder(self) -> None:
        # A new or renamed file is on the disk only once its folder is.
        try:
            descriptor = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return
        try:
            with suppress(OSError):
                os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def _started(self) -> str:
        # A resumed run keeps the moment it first started.
        if (self.folder / "run.json").exists():
            return self.run().status.started
        return self._now()

    def _now(self) -> str:
        return datetime.now(UTC).isoformat(timespec="milliseconds")


class _Unflushed:
    """The attempts of a run that have ended and are not yet on the disk.

    Each is encoded once, as its line, with the run's secrets hidden. The lines of the attempts
    that ended together are appended with one write and flushed with one ``fdatasync`` when the
    event loop comes round to it (``flushing``, a task beside the bench's), and only then is each
    attempt taken as kept: added to ``kept``, and passed on to the journal that shows it. A run
    whose attempts never wait (instant fakes) flushes every ``MOST`` lines, so the lines it has
    not kept stay few. A refused write is raised in the task that flushed, which stops the run.
    ``kept`` counts the attempts kept: the outcomes themselves are let go once passed on.
    """

    MOST = 256

    def __init__(self, folder: RunJournal, journal: Journal | None, secrets: Secrets) -> None:
        self._folder = folder
        self._journal = journal
        self._secrets = secrets
        self._lines: list[bytes] = []
        self._outcomes: list[Outcome] = []
        self._waiting = asyncio.Event()
        self._ended = False
        self.kept = 0

    def record(self, outcome: Outcome) -> None:
        line = _ENCODER.encode(outcome)
        if self._secrets.may_hold(line):
            outcome = self._secrets.kept(outcome)
            line = _ENCODER.encode(outcome)
        self._lines.append(line)
        self._outcomes.append(outcome)
        if len(self._lines) >= self.MOST:
            self.flushed()
        else:
            self._waiting.set()

    async def flushing(self) -> None:
        """Flush what has ended each time the loop comes round to it, until the play has ended."""
        while not self._ended:
            await self._waiting.wait()
            self._waiting.clear()
            self.flushed()

    def ended(self) -> None:
        self._ended = True
        self._waiting.set()

    def flushed(self) -> None:
        """Append and flush the lines not yet on the disk, and pass on the attempts kept."""
        if not self._lines:
            return
        lines, outcomes = self._lines, self._outcomes
        self._lines, self._outcomes = [], []
        data = b"\n".join(lines) + b"\n"
        whole, refused = self._folder._appended(data)
        kept = outcomes if refused is None else outcomes[: data.count(b"\n", 0, whole)]
        self.kept += len(kept)
        if self._journal is not None:
            for outcome in kept:
                self._journal.record(outcome)
        if refused is not None:
            raise refused


def _first(group: BaseExceptionGroup) -> BaseException:
    # The first error of a group, however deeply task groups nest it.
    match group.exceptions[0]:
        case BaseExceptionGroup() as inner:
            return _first(inner)
        case error:
            return error
