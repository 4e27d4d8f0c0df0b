"""Small working stand-ins for convy's interfaces, for tests and offline runs.

Each is a real object that does the simplest thing right, not a mock: ``FakeAgent`` answers with
a function of the user's text, ``Echo`` says back what it heard, ``FakeModel`` replays replies,
``FakeJudge`` decides each claim with a function, ``FickleModel`` is a judge's model that decides
one kind of claim by a coin, ``MemoryJournal`` keeps outcomes in a list. They count what they did
in public fields, so a test can ask.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from convy.agent import Answer, Message
from convy.dialog import Claim, Confidence, Evidence, Grade, Graded, Ruling, Transcript
from convy.model import Reply, Said
from convy.scenario import Outcome


class _FakeConversation:
    def __init__(self, agent: FakeAgent) -> None:
        self._agent = agent

    async def turn(self, message: Message) -> Answer:
        self._agent.messages.append(message.text)
        answered = self._agent.answer(message.text)
        match answered:
            case str(text):
                return Answer(text)
            case _:
                return answered


class FakeAgent:
    """An agent that answers every message with ``answer(text)``: an ``Answer`` or just its text.

    ``opened`` and ``closed`` count conversations, ``messages`` holds every text it received.
    """

    def __init__(self, answer: Callable[[str], Answer | str]) -> None:
        self.answer = answer
        self.opened = 0
        self.closed = 0
        self.messages: list[str] = []

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[_FakeConversation]:
        self.opened += 1
        try:
            yield _FakeConversation(self)
        finally:
            self.closed += 1


class Echo:
    """An agent that answers with the very text it was sent; ``messages`` holds what it got."""

    def __init__(self) -> None:
        self._agent = FakeAgent(lambda text: text)
        self.messages = self._agent.messages

    def conversation(self) -> AbstractAsyncContextManager[_FakeConversation]:
        return self._agent.conversation()


class FakeModel:
    """A model that replays ``replies`` in order, or answers with ``replies(messages)``.

    Once a list of replies runs out the last one is repeated. ``requests`` holds every list of
    messages it was sent.
    """

    def __init__(
        self,
        replies: list[str | Reply] | tuple[str | Reply, ...] | Callable[[tuple[Said, ...]], str | Reply],
        name: str = "fake",
    ) -> None:
        self._replies = replies
        self._name = name
        self.requests: list[tuple[Said, ...]] = []

    @property
    def name(self) -> str:
        return self._name

    async def reply(self, messages: tuple[Said, ...]) -> Reply:
        self.requests.append(messages)
        match self._replies:
            case list() | tuple() as replies:
                if not replies:
                    raise ValueError("FakeModel was given no replies")
                given = replies[min(len(self.requests), len(replies)) - 1]
            case _:
                given = self._replies(messages)
        match given:
            case str(text):
                return Reply(text)
            case _:
                return given


class FakeJudge:
    """A judge that decides each claim with ``held(claim, transcript)`` (by default: it held).

    A graded claim gets its best grade when it held and its worst when not. With ``quote``, each
    decision quotes it as its evidence, found or not in the dialogue as a real judge's would be.
    ``rulings`` counts the times it was asked.
    """

    def __init__(
        self,
        held: Callable[[str, Transcript], bool] = lambda claim, transcript: True,
        confidence: float = 1.0,
        name: str = "fake-judge",
        quote: str = "",
    ) -> None:
        self._held = held
        self._confidence = confidence
        self._name = name
        self._quote = quote
        self.rulings = 0

    @property
    def name(self) -> str:
        return self._name

    async def ruling(self, claims: tuple[str | Graded, ...], transcript: Transcript) -> Ruling:
        self.rulings += 1
        evidence = Evidence(self._quote, transcript.quotes(self._quote)) if self._quote else None
        decided: list[Claim] = []
        for claim in claims:
            match claim:
                case str(text):
                    held = self._held(text, transcript)
                    decided.append(Claim(text, held, "decided by FakeJudge", Confidence(self._confidence), evidence=evidence))
                case Graded(claim=text, grades=grades, pass_=bar):
                    held = self._held(text, transcript)
                    grade = grades[-1] if held else grades[0]
                    decided.append(
                        Claim(
                            text,
                            grades.index(grade) >= grades.index(bar),
                            "decided by FakeJudge",
                            Confidence(self._confidence),
                            Grade(grade),
                            evidence=evidence,
                        )
                    )
        return Ruling(tuple(decided))


class FickleModel:
    """A judge's model (give it to a ``ChatJudge``) that answers a claim as a real one would, in
    JSON with a reason, a confidence and evidence, but cannot make up its mind on one kind of
    claim: a claim that holds ``word`` is decided by a coin (``random.Random(seed)``), every other
    one held, with the same answer every time. Its evidence is the agent's first words, quoted
    exactly; a graded claim gets its best grade (or, for ``word``, a grade by the coin).

    It shows, offline, what ``judge_repeats`` is for: asked five times, the judge agrees with
    itself on every claim but those with ``word``, which the report flags as ambiguous.
    ``requests`` counts the requests it answered."""

    def __init__(self, word: str = "politely", seed: int = 0, name: str = "fickle-judge") -> None:
        self.word = word
        self._coin = random.Random(seed)
        self._name = name
        self.requests = 0

    @property
    def name(self) -> str:
        return self._name

    async def reply(self, messages: tuple[Said, ...]) -> Reply:
        self.requests += 1
        asked = messages[-1].content
        claim = _line(asked, "The claim: ")
        grades = [grade.strip() for grade in _line(asked, "The grades, worst first: ").split(",") if grade.strip()]
        quote = _line(asked, "AGENT: ")[:60].strip()
        fickle = self.word in claim
        held = self._coin.random() < 0.5 if fickle else True
        said: dict[str, object] = {
            "evidence": quote,
            "reason": f"decided by a coin: {'heads' if held else 'tails'}" if fickle else "the agent did it",
            "confidence": 0.6 if fickle else 0.95,
        }
        if grades:
            said["grade"] = grades[-1] if held else grades[0]
        else:
            said["pass"] = held
        return Reply(json.dumps(said))


def _line(text: str, start: str) -> str:
    """What follows ``start`` on the first line that begins with it, or ""."""
    for line in text.splitlines():
        if line.startswith(start):
            return line[len(start) :]
    return ""


class MemoryJournal:
    """A journal that keeps every outcome in ``outcomes``, in the order they ended."""

    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []

    def record(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)


__all__ = ["Echo", "FakeAgent", "FakeJudge", "FakeModel", "FickleModel", "MemoryJournal"]

