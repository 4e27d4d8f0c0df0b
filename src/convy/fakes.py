"""Small working stand-ins for convy's interfaces, for tests and offline runs.

Each is a real object that does the simplest thing right, not a mock: ``FakeAgent`` answers with
a function of the user's text, ``Echo`` says back what it heard, ``FakeModel`` replays replies,
``FakeJudge`` decides each claim with a function, ``FickleModel`` is a judge's model that decides
one kind of claim by a coin, ``BadUser`` is a simulated user's model that misbehaves as it is told
to and ``RuledModel`` a judge's model that finds it out, ``MemoryJournal`` keeps outcomes in a list. They count what they did
in public fields, so a test can ask.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from convy.agent import Answer, Message
from convy.judge import Claim, Confidence, Grade, Graded, Ruling
from convy.model import Reply, Said
from convy.outcome import Outcome
from convy.transcript import Quote, Transcript


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
        evidence = Quote(self._quote).evidence(transcript) if self._quote else None
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


class Rated:
    """What a ``FakeJudge`` decides, given as its ``held`` (``FakeJudge(Rated({"claim": 0.5}))``):
    a claim whose text is a key of ``rates`` holds at that rate, spread evenly over the times it
    is asked — of its first n rulings, ⌊n · rate⌋ held — so a scenario judged on it has a known
    pass rate, which any n of its first attempts show; any other claim holds. ``asked`` counts
    each claim's rulings."""

    def __init__(self, rates: dict[str, float]) -> None:
        self.rates = dict(rates)
        self.asked: dict[str, int] = {}

    def __call__(self, claim: str, transcript: Transcript) -> bool:
        rate = self.rates.get(claim)
        if rate is None:
            return True
        asked = self.asked.get(claim, 0) + 1
        self.asked[claim] = asked
        return math.floor(asked * rate + 1e-9) > math.floor((asked - 1) * rate + 1e-9)


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


class BadUser:
    """A simulated user's model that misbehaves as it is told to, each way on its own, so that a
    run against it shows the simulated user's checks firing offline.

    ``leaks``: its first message reads out the first ``words`` words of its instructions (the
    simulator prompt it was told). ``repeats``: its second message is its first again. ``swaps``:
    its second message is the agent's line, not a customer's. ``invents``: its second message
    gives an order number and a sum its instructions do not hold. ``empty``: its second reply is
    empty.
    ``stops_at_once``: it says it is done before it says anything. ``never_stops``: it goes on
    until the turns run out; otherwise it says it is done after its ``stops_after``-th message
    (after its first, it leaves the agent's answer to it unanswered, as a user that stops on a
    question does). It says nothing else. ``requests`` counts the requests it answered."""

    def __init__(
        self,
        *,
        leaks: bool = False,
        repeats: bool = False,
        swaps: bool = False,
        invents: bool = False,
        empty: bool = False,
        stops_at_once: bool = False,
        never_stops: bool = False,
        stops_after: int = 3,
        words: int = 16,
        name: str = "bad-user",
    ) -> None:
        self.leaks = leaks
        self.repeats = repeats
        self.swaps = swaps
        self.invents = invents
        self.empty = empty
        self.stops_at_once = stops_at_once
        self.never_stops = never_stops
        self.stops_after = stops_after
        self.words = words
        self._name = name
        self.requests = 0

    @property
    def name(self) -> str:
        return self._name

    async def reply(self, messages: tuple[Said, ...]) -> Reply:
        self.requests += 1
        turn = sum(1 for said in messages if said.role == "assistant") + 1
        stop = "###STOP###"
        if turn > self.stops_after and not self.never_stops:
            return Reply(stop)
        if turn == 1:
            if self.stops_at_once:
                return Reply(stop)
            if self.leaks:
                return Reply(" ".join(messages[0].content.split()[: self.words]))
            return Reply("Hello, I would like some help with my order, please.")
        if turn == 2:
            if self.empty:
                return Reply("")
            if self.repeats:
                return Reply(next(said.content for said in messages if said.role == "assistant"))
            if self.swaps:
                return Reply("Thank you for contacting support! As your agent, I have issued the refund. Anything else?")
            if self.invents:
                return Reply("It is order 98765, and I paid 4999 dollars for it.")
            return Reply("It is order 1234; it arrived broken.")
        return Reply(f"I am still waiting for an answer (message {turn}).")  # a new message each turn


class RuledModel:
    """A judge's model (give it to a ``ChatJudge``) that holds every claim it is asked, and decides
    the simulated user's checks by plain rules, as a real judge's model would answer them, in
    JSON with a turn and a quote: a USER line with "As your agent" or "How can I help" spoke as
    the agent; a dialogue ended after a question is a stop on a question (it is asked only then);
    a USER line with a number of three digits or more that its instructions do not hold says what
    they do not support.
    ``requests`` counts the requests it answered."""

    def __init__(self, name: str = "ruled-judge") -> None:
        self._name = name
        self.requests = 0

    @property
    def name(self) -> str:
        return self._name

    async def reply(self, messages: tuple[Said, ...]) -> Reply:
        self.requests += 1
        asked = messages[-1].content
        if "You check a simulated user" not in messages[0].content:
            return Reply(json.dumps({"evidence": "", "reason": "held", "pass": True, "confidence": 0.9}))
        found: dict[str, object] = {"fault": False, "turn": 0, "quote": "", "reason": "nothing found"}
        dialogue = asked.partition("The dialogue:")[2]
        told = asked.partition("The instructions USER was given:")[2].partition("The dialogue:")[0]
        turn = 0
        for line in dialogue.splitlines():
            if line.startswith("Turn "):
                turn = int(line.split()[1])
            if not line.startswith("USER: "):
                continue
            said = line[len("USER: ") :]
            if "Did USER, at any turn, speak as the agent" in asked and ("As your agent" in said or "How can I help" in said):
                found = {"fault": True, "turn": turn, "quote": said, "reason": "USER spoke as the support agent"}
                break
            if "neither give nor support" in asked:
                numbers = [word.strip(".,;:!?()") for word in said.split() if sum(ch.isdigit() for ch in word) >= 3]
                unsupported = [number for number in numbers if number and number not in told]
                if unsupported:
                    found = {"fault": True, "turn": turn, "quote": said, "reason": f"{unsupported[0]} is not in its instructions"}
                    break
        if "left it unanswered" in asked:
            found = {"fault": True, "turn": turn, "quote": "", "reason": "the agent had just asked a question"}
        return Reply(json.dumps(found))


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


__all__ = ["BadUser", "Echo", "FakeAgent", "FakeJudge", "FakeModel", "FickleModel", "MemoryJournal", "Rated", "RuledModel"]

