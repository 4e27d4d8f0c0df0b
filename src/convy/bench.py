"""The engine that plays a run's attempts: ``Bench``.

``Bench`` plays attempts concurrently against one agent, each participant (the agent, the
simulated user's model, the judge) within its own places, through a ``Stage`` made in the event
loop that plays (a spread run's hands make one too). It is a ``plan.Player``: ``RunJournal.play``
(``storage.py``) hands it the attempts the run's folder lacks and a ``plan.Journal`` that keeps
each one as it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Iterable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any

import msgspec

from convy.agent import Agent, Answer, Conversation, Message, TimeLimited, turned
from convy.budget import Budget, BudgetedJournal, Earlier, Spending
from convy.busy import Places, Seat
from convy.judge import Judge, Judging, Models, RunJudge
from convy.model import Absent, PatientModel
from convy.outcome import Outcome
from convy.plan import Journal, Planned, Playlist
from convy.problems import Unplayed
from convy.prompt import Prompt
from convy.quota import Services
from convy.receiver import Receiver
from convy.records import Limits
from convy.scenario import Scenario
from convy.user import SimulatedUser, UserChecks, UserReview
from convy.vital import Vigil, Vitals, WatchedAgent


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
    receiver: Receiver | None = None  # where the agent's own spans come, with receive_traces (issue 30)

    async def run(self, planned: Playlist, journal: Journal, earlier: Iterable[Outcome] | Earlier = ()) -> Spending | None:
        """Play every planned attempt, each recorded in ``journal`` as it ends; with a budget,
        only until it is spent (counting the attempts ``earlier`` kept too), and what was spent."""
        vigil = Vigil(journal)  # each participant watched: one whose service refuses it for good stops the run
        stage = self.stage((one.scenario for one in planned), vitals=vigil.vitals)
        plan = iter(planned)
        spending: Spending | None = None
        if self.budget is not None:  # a wrapper, only with a budget: a run without one counts nothing
            spending = self.budget.spending(earlier, asyncio.get_running_loop().time)
            vigil.journal = BudgetedJournal(journal, spending)

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
                if handed and (task := asyncio.current_task()) in handed:
                    # Its attempt waited for spans, and a worker took its place meanwhile: it ends,
                    # so the workers stay as many as the places, however many attempts waited.
                    handed.discard(task)
                    workers -= 1
                    return

        groups: list[asyncio.TaskGroup] = []
        handed: set[asyncio.Task[object] | None] = set()  # the workers whose attempt waits for spans, its place handed on

        def freed() -> None:
            # An attempt waits for its agent's spans (``receive_traces``), holding no place: one
            # more worker takes the place it left, so the agent's places are not idle meanwhile,
            # and the one that waits ends with its attempt.
            nonlocal workers
            task = asyncio.current_task()
            if groups and workers < total and task not in handed:  # one worker more for each attempt, however often it waits
                handed.add(task)
                workers += 1
                groups[0].create_task(worker(groups[0]))  # noqa: F821 - deleted only once the play has ended

        try:
            async with self._receiving(freed):
                with vigil.watching():  # a dead participant's stop, alone; at the end, attempts still held stop it too
                    async with asyncio.TaskGroup() as group:
                        groups.append(group)
                        for _ in range(workers):
                            group.create_task(worker(group))
        finally:
            # ``worker`` starts more of itself: its closure holds it, and it the stage, a cycle
            # that only the collector (set to run rarely) would free; an adaptive run plays a
            # bench a round, and kept every round's stage until then.
            del worker, freed
        # A task group lets a worker that ends cancelled go without a word, its attempt with it:
        # the bench is not done until every planned attempt was recorded, or left in the plan by
        # a budget that was spent.
        left = sum(1 for _ in plan)
        if vigil.recorded + left != len(planned):
            raise Unplayed(
                f"{len(planned) - left - vigil.recorded} of {len(planned)} planned attempts ended without being recorded"
            )
        return spending

    def _receiving(self, freed: Callable[[], None]) -> AbstractAsyncContextManager[object]:
        """The receiver answering while the attempts play, where there is one, told what frees a
        worker while an attempt waits for its agent's spans."""
        return contextlib.nullcontext() if self.receiver is None else self.receiver.serving(freed)

    def budgeted(self, budget: Budget | None) -> Bench:
        """This bench with another budget."""
        return msgspec.structs.replace(self, budget=budget)

    def stage(self, scenarios: Iterable[Scenario], services: Services | None = None, vitals: Vitals | None = None) -> Stage:
        """Everything the attempts of ``scenarios`` are played with, made in the event loop that
        plays them: the participants' places (sharing ``services``), the agent within its time
        limits, the simulated users, the judge; with ``vitals``, each participant ``Watched``."""
        from convy.prompt import default_user_prompt

        prompt = self.prompt or Prompt(default_user_prompt())
        services = Services() if services is None else services
        places = {who: self.limits.places(who, services) for who in ("agent", "user", "judge")}
        agent: Agent = TimeLimited(self.agent, self.limits.open_seconds, self.limits.turn_seconds, self.limits.close_seconds)
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
            key: scenario.simulated(user, prompt) if "user" in scenario.needs() else Absent()
            for key, scenario in unique.items()
        }
        return Stage(agent, places["agent"], users, judge, review, self.limits.max_turns, places["judge"], self.receiver)


class Stage(msgspec.Struct, frozen=True):
    """What a bench plays attempts with in one event loop: the agent, its places, each scenario's
    simulated user, the judge and the review of the users' conduct. A ``Bench`` makes one for a
    run; a worker of a spread run (``spread.py``) makes one for all the attempts it is handed."""

    agent: Agent
    places: Places
    users: dict[str, SimulatedUser | Absent]
    judge: Judge
    review: UserReview
    max_turns: int
    judge_places: Places | None = None
    receiver: Receiver | None = None

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
                self.receiver,
            )
        finally:
            seat.release()

    async def played(self, one: Planned) -> Outcome:
        """Play one attempt once one of the agent's places is free."""
        return await self.seated(one, await self.seat())


class _Seated(msgspec.Struct, frozen=True):
    """The agent for one attempt, whose place the bench took before the attempt began: its
    conversation holds that place and gives it back when it closes, so the judge decides after."""

    agent: Agent
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
    _manager: AbstractAsyncContextManager[Conversation]  # both set once the agent's is open
    _origin: Conversation

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

    async def _opened(self) -> Conversation:
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


