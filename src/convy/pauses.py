"""The person an agent may pause to ask, as an attempt plays one: ``Asking``.

Agents that act for someone often stop to ask before acting: an approval before a tool runs (the
OpenAI Agents SDK's ``needs_approval``, pydantic-ai's deferred tools, a LangGraph ``interrupt``), or
a question with options. In a test nobody is there, so the scenario answers: its ``approvals:``
says, by the tool's name, ``approve``, ``deny`` or ``user`` (the simulated user decides, in
character); a tool it does not name is denied, as a person not asked says no. A question that is
not an approval is answered by the simulated user, or by nobody where the scenario has none.

An adapter (``frameworks``) or an agent's own code asks through ``asking()``: ``await
asking().approve("issue_refund", {...})`` or ``await asking().answer("Window or aisle?", ("window",
"aisle"))``. Each pause is kept as an ``Asked`` step of the turn it came in (its question, answer,
who answered, when and how long it took), for the transcript, the timeline, the tables and the
checks ``asked_approval`` and ``not_asked_approval``.

Where the simulated user's model fails to answer, the agent is told no (or an empty answer) so its
turn can end, and the failure is kept (``Asking.failure``): the attempt then ends as the model's
failure, never the agent's.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

import msgspec

from convy.agent import Asked, NoUsage, Usage
from convy.problems import ModelFailure

# A scenario's answer to an agent that asks before running a tool, by the tool's name.
Decision = Literal["approve", "deny", "user"]
DECISIONS: tuple[Decision, ...] = ("approve", "deny", "user")

# The simulated user answering a question in character: the question, its options (none: any
# answer), and the answer it gave with its request's usage. It raises what its model raised.
Answerer = Callable[[str, tuple[str, ...]], Awaitable[tuple[str, Usage | NoUsage]]]


class Approvals(msgspec.Struct, frozen=True):
    """A scenario's answers to an agent that asks before running a tool (``approvals:``): each
    tool's, and, for a tool it names not, deny (a person not asked says no)."""

    decisions: dict[str, Decision] = {}

    def decided(self, tool: str) -> Decision:
        return self.decisions.get(tool, "deny")


class Asking:
    """The person one attempt's agent may pause to ask: the scenario's ``approvals`` and, where it
    has one, its simulated user (``user``); every pause, kept as an ``Asked`` step until the turn
    it came in takes it (``taken``). Changes inside as pauses come; made anew for each attempt."""

    def __init__(
        self,
        approvals: Approvals = Approvals(),
        user: Answerer | None = None,
        origin: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.approvals = approvals
        self._user = user
        self._clock = clock
        self._origin = clock() if origin is None else origin  # the attempt's start, on ``clock``
        self.asked: list[Asked] = []
        self._taken = 0
        self.failure: ModelFailure | None = None  # the simulated user's model's, where it failed to answer

    async def approve(self, tool: str, arguments: Mapping[str, Any] | None = None) -> bool:
        """Whether the person approves running ``tool`` with ``arguments``: as the scenario's
        approvals say, or as the simulated user decides where they say ``user``."""
        return (await self.decided(tool, arguments)).approved()

    async def decided(self, tool: str, arguments: Mapping[str, Any] | None = None) -> Asked:
        """The pause that asks whether ``tool`` may run with ``arguments``, answered and kept: its
        answer ("approve" or "deny") and who gave it (for an adapter that says who denied a call)."""
        given = dict(arguments or {})
        question = f"May I run {tool} with {msgspec.json.encode(given).decode()}?"
        decision = self.approvals.decided(tool)
        if decision != "user":
            return self._kept(Asked(question, decision, "scenario", ("approve", "deny"), tool, given, self._now(), 0.0))
        return await self._asked(question, ("approve", "deny"), tool, given)

    async def answer(self, question: str, options: Sequence[str] = ()) -> str:
        """The person's answer to ``question``: one of ``options`` where it gives some. The
        simulated user answers in character; with none (a scripted scenario), nobody does, and the
        answer is ""."""
        return (await self._asked(question, tuple(options), "", {})).answer

    async def _asked(self, question: str, options: tuple[str, ...], tool: str, arguments: dict[str, Any]) -> Asked:
        start = self._now()
        unanswered = "deny" if tool else ""  # what the agent is told where nobody answers
        if self._user is None or self.failure is not None:
            return self._kept(Asked(question, unanswered, "nobody", options, tool, arguments, start, 0.0))
        try:
            said, usage = await self._user(question, options)
        except ModelFailure as error:  # the user's model's failure: kept for the attempt, the agent told no
            self.failure = error
            spent = error.requests[0] if error.requests else None
            return self._kept(Asked(question, unanswered, "nobody", options, tool, arguments, start, self._now() - start, spent))
        except asyncio.CancelledError:
            # The agent's turn was cut off (its time limit) while the simulated user's model was
            # still answering: the model's slowness, not the agent's; the pause is kept, its
            # request counted unreported.
            self.failure = ModelFailure(
                f"the simulated user's model was still answering the agent's question ({question}) when the agent's turn was cut off"
            )
            self._kept(Asked(question, unanswered, "nobody", options, tool, arguments, start, self._now() - start, NoUsage()))
            raise
        return self._kept(Asked(question, said, "user", options, tool, arguments, start, self._now() - start, usage))

    def _now(self) -> float:
        return self._clock() - self._origin

    def _kept(self, asked: Asked) -> Asked:
        self.asked.append(asked)
        return asked

    def taken(self) -> tuple[Asked, ...]:
        """The pauses since the last taken: those of the turn that just ended."""
        asked = tuple(self.asked[self._taken :])
        self._taken = len(self.asked)
        return asked


ASKING: contextvars.ContextVar[Asking | None] = contextvars.ContextVar("convy_asking", default=None)


def asking() -> Asking:
    """The person the agent of the attempt playing now may pause to ask: for an adapter
    (``frameworks``) or an agent's own code that asks before running a tool, or asks a question.
    Outside an attempt, a person who denies every tool and answers nothing (nothing is kept)."""
    found = ASKING.get()
    return found if found is not None else Asking()


def approvals() -> Approvals:
    """The scenario's answers to an agent that asks before running a tool, as ``approvals:``
    gives them (outside an attempt, or where the scenario gives none, every tool is denied). An
    adapter asks through ``asking().approve``, which also keeps the pause and lets the simulated
    user decide where the scenario says ``user``."""
    return asking().approvals
