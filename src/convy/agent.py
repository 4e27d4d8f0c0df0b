"""The agent under test, as convy sees it: something that opens conversations and answers turns.

An agent is any object with ``conversation()``, an async context manager that yields a
``Conversation``; a conversation answers a ``Message`` with an ``Answer``. Everything convy learns
about a turn travels in the answer: the text, the tokens it cost (``Usage`` or ``NoUsage``, or
``Requests`` with each one's when it took several model requests) and the steps the agent took
on the way (``Thought``, ``Call`` and ``Asked``).

Wrappers add behaviour without flags: ``Accountable`` makes every error of the agent's own code
its failure, ``TimeLimited`` bounds how long an agent may take (and holds it accountable), and
``QueuedAgent`` keeps a conversation within the agent's places.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from decimal import Decimal
from types import TracebackType
from typing import Any, Literal, Protocol

import msgspec

from convy.busy import TURN, AgentTurn, Busy, Freed, Places
from convy.deadlines import LIMIT, Deadline, Deadlines
from convy.problems import Outside


class NotReported(msgspec.Struct, frozen=True, gc=False, tag="not_reported"):
    """A value the agent did not give: a tool call's result, a token count, a duration."""


class Cost(msgspec.Struct, frozen=True, gc=False, tag="cost"):
    """What a request cost, in US dollars, and where the figure comes from: reported by the
    provider with its answer, or computed from the project's price table."""

    amount: Decimal
    source: Literal["provider", "computed"]

    def __post_init__(self) -> None:
        if self.amount < 0:
            raise ValueError("a cost cannot be negative")


class Unpriced(msgspec.Struct, frozen=True, gc=False, tag="unpriced"):
    """A request whose cost nobody knows: counted as unpriced, never as free."""


class Usage(msgspec.Struct, frozen=True, gc=False, tag="usage", omit_defaults=True):
    """What one answer or one model request took: tokens by kind, and its cost.

    ``cached`` is the part of ``input`` served from a prompt cache and ``reasoning`` the part of
    ``output`` spent thinking; either is ``NotReported`` when the service does not say.

    ``unreported`` names the counts the service did not give although it gave others or the cost
    (``"prompt_tokens": null`` beside a completion count, say): such a count stands as 0 and is
    left out of any sum of its kind, what was given is kept, and the request is partly reported.
    (Written without its defaults, so a line written before this field reads back the same.)
    """

    input: int = 0
    output: int = 0
    cached: int | NotReported = NotReported()
    reasoning: int | NotReported = NotReported()
    cost: Cost | Unpriced = Unpriced()
    unreported: tuple[Literal["input", "output"], ...] = ()

    def __post_init__(self) -> None:
        if self.input < 0 or self.output < 0:
            raise ValueError("token counts cannot be negative")
        if self.unreported and any(getattr(self, kind) for kind in self.unreported):  # most report both
            raise ValueError("a count not reported stands as 0")

    def whole(self) -> bool:
        """Whether the service gave both counts."""
        return not self.unreported


class NoUsage(msgspec.Struct, frozen=True, gc=False, tag="no_usage"):
    """An answer or request whose tokens and cost nobody reported."""


class Requests(msgspec.Struct, frozen=True, gc=False, tag="requests"):
    """What one answer took when the agent made several model requests for it (a tool call and
    the answer after it, say): each request's usage in order, ``NoUsage`` for one whose tokens
    nobody reported, so a turn reported in part says so."""

    each: tuple[Usage | NoUsage, ...]


class Reported(msgspec.Struct, frozen=True, gc=False, tag="reported"):
    """A tool call's result as the agent reported it: any JSON value."""

    value: Any


class Thought(msgspec.Struct, frozen=True, gc=False, tag="thought"):
    """Something the agent thought on its way to an answer."""

    text: str


# Where the answer of a call the scenario's tools served came from (``Call.source``): one of the
# scenario's fixtures, the tool's default, a model playing the tool where no answer was declared
# for the call and the tool says ``simulate: true``, none declared for those arguments (an error),
# arguments that did not fit the tool's parameters (an error), a tool the scenario does not declare
# (an error); "denied", a call the person asked before it ran said no to (never run: an error);
# or "claimed", a call the agent reported of a tool the
# scenario declares that its tools never saw (no check counts it). A call only the agent reported,
# of a tool of its own, has none ("").
Source = Literal["", "fixture", "default", "simulated", "unanswered", "invalid", "unknown", "denied", "claimed"]


class Call(msgspec.Struct, frozen=True, gc=False, tag="call", omit_defaults=True):
    """A tool the agent called while answering, with what it got back and how long it took.

    ``error`` is the error the tool answered with (its ``result`` then not reported); ``source``
    is set where the scenario's own tools (``tools.Toolbox``) served the call, and says where
    their answer came from; ``approval``, where the agent asked before running it, what the
    scenario's ``approvals:`` answered; ``traced``, that an ``execute_tool`` span the agent sent
    while the run received its spans showed it (``receive_traces``)."""

    name: str
    arguments: dict[str, Any] = {}
    result: Reported | NotReported = NotReported()
    seconds: float | NotReported = NotReported()
    error: str = ""
    source: Source = ""
    # Where the agent paused to ask a person before running the tool: what the scenario's
    # approvals answered ("" where it asked nothing).
    approval: Literal["", "approved", "denied"] = ""
    # The request of the model that played the tool (``source`` "simulated"): the simulated
    # user's model, whose requests it is counted with; ``None`` where no model was asked.
    usage: Usage | NoUsage | None = None
    # Whether a span of the agent's own showed it (``traced.joined``, issue 30): seen done, not
    # only said.
    traced: bool = False


# Who answered an agent that paused to ask a person (``Asked.by``): the scenario's ``approvals:``,
# the simulated user in character, or nobody (the scenario gives no answer and has no simulated
# user: the agent is told no, and the step says so).
Answerer = Literal["scenario", "user", "nobody"]


class Asked(msgspec.Struct, frozen=True, gc=False, tag="asked", omit_defaults=True):
    """The agent paused to ask a person and went on with the answer: an approval before running
    a tool (``tool``, with the call's ``arguments``; the answer "approve" or "deny"), or a
    question with the ``options`` it offered (none: any answer).

    ``start`` is when it asked, in seconds from the attempt's start, and ``seconds`` how long the
    answer took; ``usage`` is the simulated user's request where its model was asked (``by``
    "user", or "nobody" where the model failed), counted with the user's requests; ``None``
    where no model was asked."""

    question: str
    answer: str
    by: Answerer = "scenario"
    options: tuple[str, ...] = ()
    tool: str = ""
    arguments: dict[str, Any] = {}
    start: float = 0.0
    seconds: float = 0.0
    usage: Usage | NoUsage | None = None

    def approved(self) -> bool:
        """Whether it was an approval that was given."""
        return bool(self.tool) and self.answer == "approve"


# What an agent did on its way to an answer.
Step = Thought | Call | Asked


def aside(answer: Answer) -> tuple[Usage | NoUsage, ...]:
    """The requests of the simulated user's model inside an agent's turn: playing a scenario's
    tool (``simulate: true``) or answering the agent's question, in the order of its steps."""
    found: list[Usage | NoUsage] = []
    for step in answer.steps:
        match step:
            # Only what convy's own parts kept: a call a model played, a pause the user answered
            # (a usage an agent reports on a call of its own is not the simulated user's).
            case Call(source="simulated", usage=Usage() | NoUsage() as usage) | Asked(usage=Usage() | NoUsage() as usage):
                found.append(usage)
            case _:
                pass
    return tuple(found)


class Message(msgspec.Struct, frozen=True, gc=False):
    """What the user says to the agent in one turn."""

    text: str


class Answer(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """The agent's answer to one message: its text, its tokens and the steps it took.

    ``usage`` is what the answer took as one request, or ``Requests`` when it took several.
    ``unheld`` is the path where the agent's adapter looks for its tool calls (a ``JsonAgent``'s
    ``calls``) when this reply did not hold a list there: its calls, if any, could not be seen.
    ``unheld_as`` is what the reply held there instead, in a word ("text", "an object", "a
    number", "true or false"), or "" when it held nothing.
    """

    text: str
    usage: Usage | NoUsage | Requests = NoUsage()
    steps: tuple[Step, ...] = ()
    unheld: str = ""
    unheld_as: str = ""

    def unsaid(self) -> Answer:
        """This answer without its words: its text and steps left out, its usage and where its
        calls were not held (``unheld``) kept (``outcome.Outcome.unsaid``); a step that holds a
        request of the simulated user's model (``aside``) is kept as that request alone, without
        its words, so that what the attempt spent reads the same unsaid as whole."""
        steps: list[Step] = []
        for step in self.steps:
            match step:
                case Call(source="simulated", usage=Usage() | NoUsage() as usage):
                    steps.append(Call("", source="simulated", usage=usage))
                case Asked(by=by, usage=Usage() | NoUsage() as usage):
                    steps.append(Asked("", "", by, usage=usage))
                case _:
                    pass
        return Answer("", self.usage, tuple(steps), self.unheld, self.unheld_as)

    def requests(self) -> tuple[Usage | NoUsage, ...]:
        """The usage of each request the answer took: its one, or each of several."""
        match self.usage:
            case Requests(each=each):
                return each
            case Usage() | NoUsage():
                return (self.usage,)


class AgentFailure(Exception):
    """The agent could not take part: it raised, gave an answer convy cannot read, or broke off.

    The attempt ends as failed without asking the judge, so a broken agent cannot pass on what it
    said before it broke. ``spent`` is what the turn it broke off had spent, when the agent knows
    (an ``Answer`` whose text is unused: its requests and steps): the attempt keeps it
    (``Outcome.agent_ending``), so a failed turn's requests, tokens and tool calls still count.
    """

    def __init__(self, message: str = "", spent: Answer | None = None) -> None:
        super().__init__(message)
        self.spent = spent


class OutOfTime(AgentFailure):
    """The agent took longer than its time limit to open, answer or close."""


class Conversation(Protocol):
    """One open conversation with the agent."""

    async def turn(self, message: Message) -> Answer: ...


class Agent(Protocol):
    """The agent under test: anything that opens conversations."""

    def conversation(self) -> AbstractAsyncContextManager[Conversation]: ...


class _Answering:
    """Accountable's conversation: the agent's opened on entering and closed on leaving, each of
    its turns answering for the agent's own code, its answers converted where they enter.

    A plain class, entered once: it holds the agent's context manager and conversation between
    the opening and the closing (an ``asynccontextmanager`` cost five times as much to go through).
    """

    __slots__ = ("_agent", "_manager", "_origin")
    _manager: AbstractAsyncContextManager[Conversation]  # both set once the agent's is open
    _origin: Conversation

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    async def __aenter__(self) -> _Answering:
        try:
            manager = self._agent.conversation()
            self._origin = await manager.__aenter__()
        except BaseException as error:
            _failed(error)
            raise
        self._manager = manager
        return self

    async def turn(self, message: Message) -> Answer:
        try:
            answer = await self._origin.turn(message)
        except BaseException as error:
            _failed(error)
            raise
        return _kept(answer)

    async def __aexit__(
        self, kind: type[BaseException] | None, failed: BaseException | None, trace: TracebackType | None
    ) -> None:
        """Close the agent's conversation (``_closed``)."""
        await _closed(self._manager, kind, failed, trace)


async def _closed(
    manager: AbstractAsyncContextManager[Conversation],
    kind: type[BaseException] | None,
    failed: BaseException | None,
    trace: TracebackType | None,
) -> None:
    """Close an agent's conversation (``_Answering``'s, ``_Limited``'s). When the conversation is
    already ending on an error, that error goes on, whatever the closing raises (but a
    cancellation)."""
    try:
        await manager.__aexit__(kind, failed, trace)
    except (AgentFailure, Busy):
        if failed is None:
            raise
    except BaseException as error:  # the agent's code is not ours: any error of it is its failure
        if not Outside(error).theirs():
            raise
        if failed is None:
            raise AgentFailure(Outside(error).named()) from error


def _failed(error: BaseException) -> None:
    """An error raised by the agent's code as it opens a conversation or answers a turn: its
    ``AgentFailure`` raised from it, for the agent's code is not ours and any error of it is its
    failure; nothing for an ``AgentFailure`` or a ``Busy`` (they go on as they are) or a stop of
    convy itself, for the caller to raise as it is."""
    if isinstance(error, (AgentFailure, Busy)) or not Outside(error).theirs():
        return
    raise AgentFailure(Outside(error).named()) from error


def _kept(answer: object) -> Answer:
    """The agent's turn's ``answer`` as convy keeps it, or the ``AgentFailure`` it is."""
    if not isinstance(answer, Answer):  # the agent's code returned something else: say what and the fix
        kind = type(answer).__name__
        given = "text" if isinstance(answer, str) else "None" if answer is None else f"a{'n' if kind[:1] in 'aeiou' else ''} {kind}"
        raise AgentFailure(
            f"the agent's answer cannot be kept: turn() returned {given}, not an Answer: "
            "return Answer(text) (from convy import Answer), with its usage and steps when known"
        )
    try:
        # Encoded and decoded as the run folder will keep it, so a malformed answer (of any
        # type, holding anything, even a cycle) fails its turn here rather than the run later.
        return _ANSWER.decode(msgspec.json.encode(answer))
    except Exception as error:
        raise AgentFailure(f"the agent's answer cannot be kept: {Outside(error).text()}") from error


_ANSWER = msgspec.json.Decoder(Answer)


class Accountable(msgspec.Struct, frozen=True):
    """The same agent, answering for its own code and nothing else.

    Any error raised while the agent opens a conversation, answers a turn or closes it is an
    ``AgentFailure`` (an ``AgentFailure`` as it is; ``Busy`` as it is, to be sent again), and so
    is an answer convy cannot keep. "Any" takes in a ``SystemExit`` and a ``CancelledError`` the
    agent raised of its own accord; only a stop of convy itself (Ctrl+C, a real cancellation of
    the attempt's task: the run stopping, a time limit) goes on as it is (``Outside``). Only the
    agent's own calls are inside: an error of convy's code between them goes on as it is, to be
    seen, never recorded as the agent's failure.
    """

    agent: Agent

    def conversation(self) -> AbstractAsyncContextManager[Conversation]:
        return _Answering(self.agent)


class _Limited:
    """TimeLimited's conversation: Accountable's (``_Answering``'s steps, in line: it holds the
    agent's context manager and conversation itself), opened, answering each turn and closed
    within the limits. A plain class, entered once, as ``_Answering``."""

    __slots__ = ("_limits", "_manager", "_origin", "_scope")
    _manager: AbstractAsyncContextManager[Conversation]  # both set once the agent's is open
    _origin: Conversation

    def __init__(self, limits: TimeLimited) -> None:
        self._limits = limits
        # The opening's limit, begun again for each turn (``Deadline.again``): one limit made for
        # the opening and the turns.
        self._scope: Deadline | None = None

    async def __aenter__(self) -> _Limited:
        scope = self._scope = self._limits.deadlines.here(self._limits.open)
        try:
            with scope:
                # ``_Answering.__aenter__``, in line: one coroutine less on every attempt.
                try:
                    manager = self._limits.agent.conversation()
                    self._origin = await manager.__aenter__()
                except BaseException as error:
                    _failed(error)
                    raise
                self._manager = manager
        except TimeoutError as error:
            if not scope.expired():
                raise
            raise OutOfTime(f"the agent did not open a conversation within {self._limits.open:g} s") from error
        return self

    async def turn(self, message: Message) -> Answer:
        last = self._scope
        seconds = self._limits.turn
        scope = self._scope = self._limits.deadlines.here(seconds) if last is None else last.again(seconds)
        token = LIMIT.set(scope)  # a wait for a busy service inside the turn is not the agent's time
        try:
            with scope:
                # ``_Answering.turn``, in line: one coroutine less on the way to every turn.
                try:
                    answer = await self._origin.turn(message)
                except BaseException as error:
                    _failed(error)
                    raise
                return _kept(answer)
        except TimeoutError as error:
            if not scope.expired():
                raise  # the agent's own timeout: its failure, not convy's time limit
            raise OutOfTime(f"the agent did not answer within {self._limits.turn:g} s") from error
        finally:
            LIMIT.reset(token)

    async def __aexit__(
        self, kind: type[BaseException] | None, failed: BaseException | None, trace: TracebackType | None
    ) -> None:
        """Close the agent's conversation within the limit. When the conversation is already
        ending on an error (Ctrl+C's cancellation included), that error goes on, whatever the
        closing does."""
        # A limit of its own, not the turns' begun again: a task a turn left behind holds the
        # turns' limit (``LIMIT``) as it waits for a busy service, and would hold the closing's.
        scope = self._limits.deadlines.here(self._limits.close)
        try:
            with scope:
                await _closed(self._manager, kind, failed, trace)
        except TimeoutError as error:
            if failed is not None:
                return
            if not scope.expired():
                raise
            raise OutOfTime(f"the agent did not close its conversation within {self._limits.close:g} s") from error


class TimeLimited(msgspec.Struct, frozen=True):
    """The same agent, with time limits in seconds on opening a conversation, each turn and closing.

    The agent inside is made ``Accountable``: this is where an agent enters a run (the bench and
    ``--smoke`` both wrap it so), and the time limits then tell the agent's own ``TimeoutError``,
    already its failure, from convy's limit.
    """

    agent: Agent
    open: float = 60.0
    turn: float = 120.0
    close: float = 60.0
    deadlines: Deadlines = msgspec.field(default_factory=Deadlines)  # the limits under way, one timer per length

    def __post_init__(self) -> None:
        if min(self.open, self.turn, self.close) <= 0:
            raise ValueError("time limits must be positive")

    def conversation(self) -> AbstractAsyncContextManager[Conversation]:
        return _Limited(self)


def joined(tries: Iterable[Answer], answer: Answer | None = None) -> Answer | None:
    """The answer of a turn that took several tries: the text of ``answer`` (the try answered)
    with the requests and steps of every try, earlier ones first; ``None`` when there is nothing."""
    every = [*tries, *(() if answer is None else (answer,))]
    if not every:
        return None
    if len(every) == 1:
        return every[0]
    last = every[-1]
    requests = tuple(usage for one in every for usage in one.requests())
    steps = tuple(step for one in every for step in one.steps)
    return msgspec.structs.replace(last, usage=Requests(requests), steps=steps)


class _Final(Exception):
    """A ``Busy`` that must not make the turn play again, carried past ``Places.retried``."""

    def __init__(self, busy: Busy) -> None:
        super().__init__(str(busy))
        self.busy = busy


async def turned(places: Places, turn: Callable[[Message], Awaitable[Answer]], message: Message) -> Answer:
    """One turn of an agent within its places: ``turn(message)``, tried as often as need be.

    While it runs, each request the agent sends through convy's HTTP layer is sent again on its
    own while its service is busy (``busy.TURN``), so nothing the agent has done is done again.
    A ``Busy`` raised past that (``final``: its patience ran out) ends the turn. A ``Busy`` of the
    agent's own code, which convy could not send again by itself, plays the whole turn again; the
    answer then holds what every try spent (their requests and tool calls, ``joined``), and so
    does the ``Busy`` that ends a turn (``Busy.spent``).

    The first try takes the free way where its places allow (``Places.freely``: nothing paces the
    agent's service, nothing waits, its turns' requests are not paced one by one), awaited here
    rather than in ``Places.retried``: two coroutines less (``Places._tried`` and the try's) on the
    way to every turn of a run whose agent answers in-process. Any other way, and every try after a
    refusal, goes through ``Places.retried`` (``_retried``)."""
    # A turn whose requests are paced one by one (``inward``) takes no slot of the pace itself; one
    # begun before that was known is paced as a request, and its requests are not paced again.
    inward = places.inward
    under_way = places.turns[inward]
    ticket = None if inward else places.freely(False)
    if ticket is None:
        return await _retried(places, turn, message, under_way, None)
    token = TURN.set(under_way)
    try:
        answer = await turn(message)
    except Busy as busy:
        refused = busy
    except BaseException:
        places.freely_failed(ticket)
        raise
    else:
        places.freely_answered(ticket)
        return answer
    finally:
        TURN.reset(token)
    return await _retried(places, turn, message, under_way, (ticket, refused))


async def _retried(
    places: Places,
    turn: Callable[[Message], Awaitable[Answer]],
    message: Message,
    under_way: AgentTurn,
    refused: tuple[Freed, Busy] | None,
) -> Answer:
    """``turned``'s tries through ``Places.retried``: all of them, or (``refused``) those after a
    first try on the free way that was refused, with its ticket and its ``Busy``."""
    tries: list[Answer] = []

    async def one() -> Answer:
        token = TURN.set(under_way)
        try:
            return await turn(message)
        except Busy as busy:
            _tried_spent(busy, tries)
            raise
        finally:
            TURN.reset(token)

    try:
        if refused is None:
            answer = await places.retried(one, not under_way.paced)  # paced unless inward
        else:
            ticket, busy = refused
            try:
                _tried_spent(busy, tries)
            except _Final:
                places.freely_failed(ticket)
                raise
            answer = await places.freely_refused(one, ticket, busy)
    except _Final as final:
        raise Busy(str(final.busy), final.busy.retry_after, joined(tries), final=True) from final.busy
    except Busy as busy:
        raise Busy(str(busy), busy.retry_after, joined(tries), final=True) from busy
    if not tries:  # answered at the first try, as most turns are: ``joined`` would hand it back
        return answer
    return joined(tries, answer) or answer


def _tried_spent(busy: Busy, tries: list[Answer]) -> None:
    """A try of a turn refused with ``busy``: what it spent kept in ``tries``; ``_Final`` when the
    refusal must not make the turn play again."""
    match busy.spent:
        case Answer() as spent:
            tries.append(spent)
        case _:
            pass
    if busy.final:
        raise _Final(busy) from busy


class _Retried(msgspec.Struct, frozen=True):
    """A conversation within its agent's places: each turn ``turned``."""

    origin: Conversation
    places: Places

    def turn(self, message: Message) -> Coroutine[Any, Any, Answer]:
        return turned(self.places, self.origin.turn, message)


class QueuedAgent(msgspec.Struct, frozen=True):
    """The same agent, holding one of its places for as long as a conversation is open.

    Opening a conversation that the agent's service refused unprocessed (``Busy``) is tried again
    while its patience lasts; each turn is ``turned``: the requests the agent sends through convy's
    HTTP layer are resent one by one, never the turn (only a ``Busy`` of the agent's own code plays
    a turn again); nothing else is ever resent. The agent's ``per_minute`` counts turns, or the
    requests of a turn where they go through convy's HTTP layer: opening waits for a pause the
    service asked for, but takes no slot of the minute.
    """

    agent: Agent
    places: Places

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[Conversation]:
        async with self.places.one(), AsyncExitStack() as stack:
            opened = await self.places.retried(
                lambda: stack.enter_async_context(self.agent.conversation()), paced=False
            )
            yield _Retried(opened, self.places)


def spent_of(given: Any) -> Answer | None:
    """What a failed turn had spent as the agent's failure carries it: an ``Answer`` (its requests
    and steps), checked where it enters as the agent's answers are; anything else is nothing."""
    match given:
        case Answer():
            try:
                return _SPENT.decode(msgspec.json.encode(given))
            except Exception:  # noqa: BLE001 - the agent's own object, holding anything
                return None
        case _:
            return None


_SPENT = msgspec.json.Decoder(Answer)
