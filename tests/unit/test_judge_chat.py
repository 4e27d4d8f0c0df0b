"""A ChatJudge asks about every claim at once, keeps the claims' order, and on a failure raises
the first one in that order with the usage of every request answered."""

from __future__ import annotations

import asyncio

import pytest
from test_judge import SHOP as SAID

from convy.agent import Usage
from convy.judge import ChatJudge, Claim, Confidence, NoGrade
from convy.model import ModelFailure, Reply, Said


class Gathering:
    """A model that answers only once ``wanted`` requests are in flight together, each after
    ``later[claim]`` more turns of the event loop, and counts the most it saw at once."""

    def __init__(self, wanted: int, replies: dict[str, Reply | Exception], later: dict[str, int]) -> None:
        self.wanted = wanted
        self.replies = replies
        self.later = later
        self.flying = 0
        self.peak = 0
        self.arrived = asyncio.Event()

    @property
    def name(self) -> str:
        return "gathering"

    async def reply(self, messages: tuple[Said, ...]) -> Reply:
        claim = messages[1].content.split("The claim: ", 1)[1].split("\n", 1)[0]
        self.flying += 1
        self.peak = max(self.peak, self.flying)
        if self.flying >= self.wanted:
            self.arrived.set()
        await self.arrived.wait()  # a judge asking one claim at a time never gets past here
        for _ in range(self.later.get(claim, 0)):
            await asyncio.sleep(0)
        self.flying -= 1
        given = self.replies[claim]
        match given:
            case Exception():
                raise given
            case _:
                return given


def decided(text: str, held: bool, tokens: int) -> Reply:
    return Reply(f'{{"reason": "{text}", "pass": {str(held).lower()}, "confidence": 0.5}}', Usage(tokens, 1))


def test_every_claim_is_asked_at_once_and_decided_in_order() -> None:
    """Three claims are in flight together, and the decisions come back in the claims' order
    though the last claim is answered first."""
    model = Gathering(3, {"a": decided("a", True, 10), "b": decided("b", False, 20), "c": decided("c", True, 30)}, {"a": 5, "b": 2})
    ruling = asyncio.run(asyncio.wait_for(ChatJudge(model).ruling(("a", "b", "c"), SAID), 30))
    assert model.peak == 3
    assert ruling.claims == tuple(Claim(text, held, text, Confidence(0.5), NoGrade()) for text, held in (("a", True), ("b", False), ("c", True)))
    assert ruling.requests == (Usage(10, 1), Usage(20, 1), Usage(30, 1))


def test_the_first_failing_claim_is_raised_with_every_answered_request() -> None:
    """When two claims fail, the first in the claims' order is raised, carrying the usage of the
    answered requests and of the failures."""
    replies: dict[str, Reply | Exception] = {
        "a": decided("a", True, 10),
        "b": Reply("no JSON here", Usage(20, 1)),
        "c": ModelFailure("the judge's model failed", (Usage(30, 1),)),
    }
    model = Gathering(3, replies, {"c": 0, "b": 4})
    with pytest.raises(ModelFailure, match="without a JSON object") as raised:
        asyncio.run(asyncio.wait_for(ChatJudge(model).ruling(("a", "b", "c"), SAID), 30))
    assert raised.value.requests == (Usage(10, 1), Usage(20, 1), Usage(30, 1))


def test_another_error_of_a_claims_model_is_a_model_failure_not_a_group() -> None:
    """Another error of a claim's model comes out as the judge's ModelFailure naming it, not inside an ExceptionGroup."""
    model = Gathering(2, {"a": decided("a", True, 10), "b": RuntimeError("broken pipe")}, {})
    with pytest.raises(ModelFailure, match="RuntimeError: broken pipe"):
        asyncio.run(asyncio.wait_for(ChatJudge(model).ruling(("a", "b"), SAID), 30))

