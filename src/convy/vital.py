"""Whether each participant of a run is alive, and what a run does when one is not.

A participant — the agent, the simulated user's model, the judge's model — whose service refuses
its first requests in a way no retry can mend (``HttpFailure.incurable``: the key refused, no such
path or model, nothing listening) is dead: playing on would only record the same failure once per
attempt, and keep a run whose numbers say nothing of the agent. So a run stops, and says why:

- ``Pulse`` is one participant's requests as the run hears them: whether it has answered once, and
  the incurable refusals before it did. It is dead after ``Pulse.MOST`` of them with no answer;
  once it has answered it is alive for good, and a later refusal is an ordinary failed attempt.
- ``WatchedModel`` (a model) and ``WatchedAgent`` (the agent) wrap a participant and tell its pulse
  what each request came to; once it is dead they send nothing more and fail at once.
- ``Vitals`` are a run's pulses, and the attempts held back: an attempt that a participant
  failed incurably before it ever answered is recorded only once that participant answers (it
  was a passing fault), and never if the participant turns out dead. The attempt's own
  participants are told by a context variable (``NOTED``) set for each attempt (``Vitals.noting``).
  In a spread run each worker keeps vitals of its own and sends what it heard (``News``) with each
  outcome; the driver's vitals, told it, decide for the whole run.
- ``Vigil`` is a run's journal as the vitals keep it, and the one place the stop is decided: every
  player — a bench, a spread run's driver, a re-judging — records each attempt through it, asks it
  before starting one, and ends with it.
- ``DeadService`` is the stop: which participants never answered, what their service said, and
  how many attempts were held back and so never recorded. ``convy resume`` plays those.

The command words the likely fix (``cli.exits.Cures``); this module says only what happened.
"""

from __future__ import annotations

from collections.abc import Awaitable, Coroutine, Iterator, Set
from contextlib import AbstractAsyncContextManager, contextmanager
from contextvars import ContextVar
from http import HTTPStatus
from types import TracebackType
from typing import Any, ClassVar, Literal

import msgspec

from convy.agent import Agent, AgentFailure, Answer, Conversation, Message
from convy.judge import ChatJudge, Panel
from convy.model import Absent, Model, Reply, Said
from convy.problems import ConfigurationError, HttpFailure, first_error

Who = Literal["agent", "user", "judge"]

# The participants an attempt under way was refused by before they ever answered: set by the
# bench for each attempt, added to by the participants' wrappers (in the attempt's own tasks).
NOTED: ContextVar[set[Pulse] | None] = ContextVar("convy_noted", default=None)


class Refusal(msgspec.Struct, frozen=True):
    """An incurable failure of one request, as its ``HttpFailure`` said it: the status (0 for
    none), whether a connection was made, the URL (no query), the start of the body (secrets
    hidden), the model posted, the failure's own words, and whether the server spoke plain HTTP
    where TLS was asked for."""

    status: int
    connected: bool
    url: str
    said: str
    model: str
    text: str
    plain: bool = False

    @classmethod
    def of(cls, failure: HttpFailure) -> Refusal:
        return cls(
            failure.status, failure.connected, failure.url, failure.said, failure.model, str(failure), failure.plain
        )

    def failure(self) -> HttpFailure:
        """The failure again, as it was raised."""
        return HttpFailure(self.text, self.status, self.connected, self.url, self.said, self.model, self.plain)

    def unknown_model(self) -> bool:
        """Whether the service refused the model's name: a 404 or a 400 whose body names the model
        posted (OpenAI's "The model `x` does not exist", LiteLLM's "Invalid model name")."""
        return self.status in (400, 404) and bool(self.model) and self.model in self.said


class Unanswered(msgspec.Struct, frozen=True):
    """A participant that never answered: who it is (its model's name, or the agent's ``""``),
    its first refusal, and how many requests were refused."""

    who: Who
    name: str
    first: Refusal
    refused: int

    def participant(self, agent: str = "") -> str:
        """Who it is, in a few words: ``the agent shop``, ``the simulated user's model m``."""
        match self.who:
            case "agent":
                return f"the agent {agent}".rstrip()
            case "user":
                return f"the simulated user's model {self.name}"
            case "judge":
                return f"the judge's model {self.name}"

    def answered(self) -> str:
        """What it came to, and how often: ``answered 401 Unauthorized at URL (3 requests, none
        answered)`` or ``could not connect to URL (...)``."""
        return f"{self.told()} ({self.refused} request{'s' if self.refused != 1 else ''}, none answered)"

    def told(self) -> str:
        """What its first request came to: ``answered 401 Unauthorized at URL`` or ``could not
        connect to URL``."""
        first = self.first
        if not first.connected:
            return f"could not connect to {first.url}"
        if first.plain:
            return f"answered in plain HTTP, not TLS, at {first.url}"
        try:
            reason = f"{first.status} {HTTPStatus(first.status).phrase}"
        except ValueError:
            reason = str(first.status)
        return f"answered {reason} at {first.url}"


class DeadService(ConfigurationError):
    """The run stopped: a participant never answered and its service refused it in a way no retry
    can mend. ``unanswered`` names each participant that never answered (the dead one first);
    ``held`` is how many attempts they failed, which were never recorded."""

    def __init__(self, unanswered: tuple[Unanswered, ...], held: int) -> None:
        self.unanswered = unanswered
        self.held = held
        lines = [f"{one.participant()} {one.answered()}" for one in unanswered]
        super().__init__("; ".join(lines) + "; the run stopped before playing on")

    def respecified(self) -> bool:
        """Whether the fix changes what the run was specified with — a model's name, which its
        ``run.json`` keeps and ``convy resume`` holds it to — so the run can never be played out."""
        return any(one.first.unknown_model() for one in self.unanswered)


class Pulse:
    """One participant's requests as a run hears them: whether it ever answered, and each
    incurable refusal before it did. A plain class: it changes as the run goes."""

    MOST: ClassVar[int] = 3  # incurable refusals with no answer that make a participant dead

    __slots__ = ("who", "name", "answered", "refusals")

    def __init__(self, who: Who, name: str) -> None:
        self.who = who
        self.name = name
        self.answered = False
        self.refusals: list[Refusal] = []

    def heard(self) -> None:
        """It answered: alive for the rest of the run."""
        self.answered = True

    def refused(self, failure: HttpFailure) -> None:
        """A request of it failed: noted, with the attempt it failed, when no retry could mend it and
        it has not answered yet."""
        if self.answered or not failure.incurable():
            return
        self.refusals.append(Refusal.of(failure))
        self.noted()

    def noted(self) -> None:
        """The attempt under way was refused by this participant."""
        noted = NOTED.get()
        if noted is not None:
            noted.add(self)

    def dead(self) -> bool:
        return not self.answered and len(self.refusals) >= self.MOST

    def again(self) -> HttpFailure:
        """The failure a dead participant's next request comes to, without sending it: its first."""
        self.noted()
        return self.refusals[0].failure()

    def unanswered(self) -> Unanswered:
        return Unanswered(self.who, self.name, self.refusals[0], len(self.refusals))


class WatchedModel(msgspec.Struct, frozen=True):
    """The same model, telling its pulse what each request came to; once dead it sends nothing."""

    model: Model
    pulse: Pulse

    @property
    def name(self) -> str:
        return self.model.name

    def reply(self, messages: tuple[Said, ...]) -> Awaitable[Reply]:
        # Once its participant has answered, nothing it does changes its pulse (alive for the rest
        # of the run, refusals no longer noted): the model's own request, without a coroutine here.
        if self.pulse.answered:
            return self.model.reply(messages)
        return self._watched(messages)

    async def _watched(self, messages: tuple[Said, ...]) -> Reply:
        pulse: Pulse = self.pulse
        if pulse.dead():
            raise pulse.again()
        try:
            answered = await self.model.reply(messages)
        except HttpFailure as failure:
            pulse.refused(failure)
            raise
        pulse.heard()
        return answered


class WatchedAgent(msgspec.Struct, frozen=True):
    """The same agent (as a run limits it: ``TimeLimited``), telling its pulse what opening a
    conversation and each turn came to; once dead it opens nothing. An agent's failure is an
    ``AgentFailure``; the service's failure is found among its causes."""

    agent: Agent
    pulse: Pulse

    def conversation(self) -> AbstractAsyncContextManager[Any]:
        # Its conversation's turn is awaitable, not a coroutine: the pulse's own without one.
        return _WatchedConversation(self.agent, self.pulse)


class _WatchedConversation:
    """A ``WatchedAgent``'s conversation: the agent's, its failures told to the pulse. A plain
    class, entered once, as the other wrappers' conversations are."""

    __slots__ = ("_agent", "_pulse", "_manager", "_origin")
    _manager: AbstractAsyncContextManager[Conversation]
    _origin: Conversation

    def __init__(self, agent: Agent, pulse: Pulse) -> None:
        self._agent = agent
        self._pulse = pulse

    async def __aenter__(self) -> _WatchedConversation:
        if self._pulse.dead():
            failure = self._pulse.again()
            raise AgentFailure(f"{type(failure).__name__}: {failure}") from failure
        manager = self._agent.conversation()
        try:
            self._origin = await manager.__aenter__()
        except AgentFailure as failure:
            self._told(failure)
            raise
        self._manager = manager
        return self

    def turn(self, message: Message) -> Awaitable[Answer]:
        # Once the agent has answered, nothing its turns do changes its pulse (``WatchedModel.reply``).
        if self._pulse.answered:
            return self._origin.turn(message)
        return self._watched(message)

    async def _watched(self, message: Message) -> Answer:
        try:
            answer = await self._origin.turn(message)
        except AgentFailure as failure:
            self._told(failure)
            raise
        self._pulse.heard()
        return answer

    def __aexit__(
        self, kind: type[BaseException] | None, failed: BaseException | None, trace: TracebackType | None
    ) -> Coroutine[Any, Any, bool | None]:
        # The agent's own closing, awaited by the caller, without a coroutine here; what it comes
        # to is TimeLimited's, None: an error that ends the conversation goes on.
        return self._manager.__aexit__(kind, failed, trace)

    def _told(self, failure: AgentFailure) -> None:
        for cause in _causes(failure):
            match cause:
                case HttpFailure():
                    self._pulse.refused(cause)
                    return


def _causes(error: BaseException) -> Iterator[BaseException]:
    """The errors an error was raised from, nearest first, a few deep."""
    seen = error.__cause__ or error.__context__
    for _ in range(8):
        if seen is None:
            return
        yield seen
        seen = seen.__cause__ or seen.__context__


class Beat(msgspec.Struct, frozen=True):
    """What one participant's requests came to in a worker since it last told: whether it
    answered, and its incurable refusals before it did."""

    who: Who
    name: str
    answered: bool
    refusals: tuple[Refusal, ...]


class News(msgspec.Struct, frozen=True):
    """What a worker of a spread run heard of its participants since it last told (``beats``),
    and which of them refused the attempt it sends this with before they ever answered
    (``noted``, by who and name)."""

    beats: tuple[Beat, ...] = ()
    noted: tuple[tuple[Who, str], ...] = ()


class Vitals:
    """A run's pulses, one per participant (by who it is and its model's name), and the attempts
    held back until the participants that failed them incurably have answered. A plain class:
    it changes as the run goes."""

    def __init__(self) -> None:
        self._pulses: dict[tuple[Who, str], Pulse] = {}
        self._held: list[tuple[Any, frozenset[Pulse]]] = []
        self._told: dict[tuple[Who, str], tuple[bool, int]] = {}  # what a worker has told of each

    def pulse(self, who: Who, name: str = "") -> Pulse:
        """The pulse of a participant, the same each time it is asked for."""
        return self._pulses.setdefault((who, name), Pulse(who, name))

    def watched(self, part: Any, who: Literal["user", "judge"]) -> Any:
        """A model, or each chat model of a judge or a panel, watched by its pulse (``WatchedModel``); anything else
        (absent, a judge of other code) as it is."""
        match part:
            case Absent():
                return part
            case ChatJudge(model=model):
                return msgspec.structs.replace(part, model=WatchedModel(model, self.pulse(who, model.name)))
            case Panel(judges=judges):
                return msgspec.structs.replace(part, judges=tuple(self.watched(judge, who) for judge in judges))
            case _ if who == "user":
                return WatchedModel(part, self.pulse(who, part.name))
            case _:
                return part

    @contextmanager
    def noting(self) -> Iterator[set[Pulse]]:
        """The participants that refuse the attempt played within, before they ever answered."""
        noted: set[Pulse] = set()
        token = NOTED.set(noted)
        try:
            yield noted
        finally:
            NOTED.reset(token)

    def news(self, noted: set[Pulse]) -> News:
        """What this worker heard since it last told, with the attempt's ``noted`` participants."""
        beats = []
        for key, pulse in self._pulses.items():
            answered, refused = self._told.get(key, (False, 0))
            if pulse.answered == answered and len(pulse.refusals) == refused:
                continue
            beats.append(Beat(pulse.who, pulse.name, pulse.answered and not answered, tuple(pulse.refusals[refused:])))
            self._told[key] = (pulse.answered, len(pulse.refusals))
        waiting = tuple((pulse.who, pulse.name) for pulse in noted if not pulse.answered)
        return News(tuple(beats), waiting)

    def told(self, news: News) -> tuple[set[Pulse], tuple[tuple[Who, str], ...]]:
        """A worker's news heard here: the attempt's ``noted`` participants, as this run's pulses,
        and those that answered for the first time in the run (for the other workers to hear)."""
        first: list[tuple[Who, str]] = []
        for beat in news.beats:
            pulse = self.pulse(beat.who, beat.name)
            if not pulse.answered:
                pulse.refusals.extend(beat.refusals)
                if beat.answered:
                    pulse.heard()
                    first.append((beat.who, beat.name))
        return {self.pulse(who, name) for who, name in news.noted}, tuple(first)

    def answered_elsewhere(self, who: Who, name: str) -> None:
        """A participant answered in another worker of the run: alive here too, and nothing to tell."""
        pulse = self.pulse(who, name)
        pulse.heard()
        self._told[(who, name)] = (True, len(pulse.refusals))

    def kept(self, outcome: Any, noted: Set[Pulse]) -> list[Any]:
        """The attempts to record now: this one, unless a participant that refused it incurably has
        not answered yet (then it is held), and those held before whose participants have all
        answered since."""
        if not noted and not self._held:  # as most attempts: refused by no one, none held before
            return [outcome]
        waiting = frozenset(pulse for pulse in noted if not pulse.answered)
        if waiting:
            self._held.append((outcome, waiting))
            return self.released()
        return [outcome, *self.released()]

    def released(self) -> list[Any]:
        """The attempts held back whose participants have all answered since, no longer held."""
        ready: list[Any] = []
        if self._held:
            still = []
            for held in self._held:
                if all(pulse.answered for pulse in held[1]):
                    ready.append(held[0])
                else:
                    still.append(held)
            self._held = still
        return ready

    def stopped(self) -> DeadService | None:
        """The stop, once a participant is dead."""
        for pulse in self._pulses.values():  # a loop, not any() over a generator: asked twice an attempt
            if not pulse.answered and pulse.dead():  # (one that answered lives: no call to ask)
                return self._stop()
        return None

    def ended(self) -> DeadService | None:
        """At the end of the play: the stop when attempts are still held — their participants never
        answered any request, so none of them can be trusted to."""
        if self._held:
            return self._stop()
        return None

    def _stop(self) -> DeadService:
        silent = [pulse for pulse in self._pulses.values() if not pulse.answered and pulse.refusals]
        silent.sort(key=lambda pulse: not pulse.dead())  # the dead first, in the order they came
        return DeadService(tuple(pulse.unanswered() for pulse in silent), len(self._held))


class Vigil:
    """A run's journal as its participants' ``vitals`` keep it: each attempt recorded once none of
    its participants is waiting to be heard from, and the run stopped (``DeadService``) once one is
    dead. Every player records through one — a bench, a spread run's driver, a re-judging — so all
    stop alike. ``recorded`` counts what reached the journal. A plain class: it counts."""

    def __init__(self, journal: Any, vitals: Vitals | None = None) -> None:
        self.journal = journal
        self.vitals = Vitals() if vitals is None else vitals
        self.recorded = 0

    def alive(self) -> None:
        """Nothing while every participant may still answer: before an attempt starts."""
        stopped = self.vitals.stopped()
        if stopped is not None:
            raise stopped

    async def attempt(self, play: Awaitable[Any]) -> None:
        """Play one attempt, noting who refused it, and record it (or hold it back)."""
        # ``Vitals.noting``, in line: a generator's context manager made and gone through for
        # every attempt cost more than the set and the variable it holds.
        noted: set[Pulse] = set()
        token = NOTED.set(noted)
        try:
            outcome = await play
        finally:
            NOTED.reset(token)
        self.record(outcome, noted)

    def record(self, outcome: Any, noted: set[Pulse] | frozenset[Pulse] = frozenset()) -> None:
        """Record an attempt whose ``noted`` participants refused it before they ever answered — now,
        or once they answer — with those held before and released since; then stop if one is dead."""
        for ready in self.vitals.kept(outcome, noted):  # read, not kept: no copy
            self.journal.record(ready)
            self.recorded += 1
        self.alive()

    @contextmanager
    def watching(self) -> Iterator[None]:
        """Around a player's play (its task group): a stop raised in one of its tasks comes out
        alone, not in a group, and a play that ends is ``ended``."""
        try:
            yield
        except BaseExceptionGroup as error:
            dead, rest = error.split(DeadService)
            if dead is not None and rest is None:
                raise first_error(dead) from None
            raise
        self.ended()

    def ended(self) -> None:
        """At the end of the play: the attempts released since recorded, and the stop when some
        are still held."""
        for ready in self.vitals.released():
            self.journal.record(ready)
            self.recorded += 1
        stopped = self.vitals.ended()
        if stopped is not None:
            raise stopped
