"""Every request counted (issue 26, item 8): the simulated user's request of a turn the agent then
failed, what a broken-off turn had spent, a Busy past patience with the turn's earlier requests, a
stream that broke off and a reply that could not be read — in the attempt's sums (report, tables,
summary and budgets all sum them there) and in the tables' request rows."""

from __future__ import annotations

import asyncio
from decimal import Decimal

from support.standin import Invalid, SseError, StandIn, Status, WrongShape

from convy.agent import AgentFailure, Answer, Cost, Message, NoUsage, Requests, TimeLimited, Usage
from convy.attempt import Attempt
from convy.busy import Busy
from convy.fakes import FakeAgent, FakeJudge, FakeModel
from convy.httpagents import ChatAgent
from convy.model import Reply
from convy.scenario import Scenario
from convy.tables import AttemptRows

PRICED = Usage(20, 10, cost=Cost(Decimal("0.002"), "provider"))


def user() -> FakeModel:
    return FakeModel([Reply("Hello there", PRICED), Reply("Where is my order?", Usage(30, 18, cost=Cost(Decimal("0.004"), "provider")))])


def played(agent: object) -> object:
    scenario = Scenario(id="orders/where", user="Ask where your order is.", judge=("The agent was polite.",))
    return asyncio.run(scenario.outcome(1, TimeLimited(agent), scenario.simulated(user(), _prompt()), FakeJudge(), 4))


def _prompt() -> object:
    from convy.prompt import Prompt, default_user_prompt

    return Prompt(default_user_prompt())


class Breaking:
    """An agent that answers its first turn and breaks off its second, saying what it had spent."""

    def __init__(self, raised: Exception) -> None:
        self.turns = 0
        self.raised = raised

    def conversation(self) -> object:
        agent = self

        class Opened:
            async def __aenter__(self) -> Opened:
                return self

            async def __aexit__(self, *exc: object) -> None:
                return None

            async def turn(self, message: Message) -> Answer:
                agent.turns += 1
                if agent.turns == 1:
                    return Answer("Hi! How can I help?", Usage(5, 5))
                raise agent.raised

        return Opened()


def test_the_users_request_in_a_turn_the_agent_failed_is_counted() -> None:
    def answer(text: str) -> str:
        if "order" in text:
            raise RuntimeError("the agent crashed")
        return "Hi! How can I help?"

    outcome = played(FakeAgent(answer))
    assert outcome.stop == "agent_failed"
    spent = Attempt(outcome, 0.0).user_sum()
    assert (spent.requests, spent.input + spent.output, spent.amount) == (2, 78, Decimal("0.006"))
    every = Attempt(outcome, 0.0).every_sum()
    assert (every.requests, every.input + every.output, every.amount) == (3, 78, Decimal("0.006"))
    rows = AttemptRows("agent", "run", Attempt(outcome, 0.0)).model_requests()
    assert [row.participant for row in rows].count("user") == 2


def test_a_turn_the_agent_broke_off_keeps_what_it_spent() -> None:
    spent = Answer("", Requests((Usage(40, 8, cost=Cost(Decimal("0.002"), "provider")), NoUsage())))
    outcome = played(Breaking(AgentFailure("the tool failed", spent)))
    assert outcome.stop == "agent_failed"
    assert outcome.agent_ending is not None
    agent = Attempt(outcome, 0.0).agent_sum()
    assert (agent.requests, agent.input + agent.output, agent.amount) == (3, 58, Decimal("0.002"))
    rows = AttemptRows("agent", "run", Attempt(outcome, 0.0)).model_requests()
    assert [row.turn for row in rows if row.participant == "agent"] == [1, 2, 2]


def test_a_busy_past_patience_keeps_the_turns_earlier_requests() -> None:
    spent = Answer("", Requests((Usage(40, 8),)))
    outcome = played(Breaking(Busy("429 Too Many Requests — still busy", None, spent, final=True)))
    assert outcome.stop == "agent_busy"
    agent = Attempt(outcome, 0.0).agent_sum()
    assert (agent.requests, agent.input + agent.output) == (2, 58)
    assert Attempt(outcome, 0.0).user_sum().requests == 2


def chat_failure(fault: object, stream: bool) -> AgentFailure:
    with StandIn() as server:
        server.faults(fault)  # type: ignore[arg-type]
        agent = ChatAgent(server.url + "/v1", model="agent-model", stream=stream)

        async def main() -> None:
            async with agent.conversation() as conversation:
                await conversation.turn(Message("hi"))

        try:
            asyncio.run(main())
        except AgentFailure as failure:
            return failure
        raise AssertionError("the turn should have failed")


def test_a_stream_that_broke_off_with_an_error_is_a_request_not_reported() -> None:
    failure = chat_failure(SseError(), stream=True)
    assert failure.spent is not None and failure.spent.requests() == (NoUsage(),)


def test_an_unreadable_reply_is_a_request_not_reported() -> None:
    for fault in (Invalid(), WrongShape()):
        failure = chat_failure(fault, stream=False)
        assert failure.spent is not None and failure.spent.requests() == (NoUsage(),), fault


def test_an_error_status_that_reached_the_service_is_a_request_and_no_connection_is_none() -> None:
    failure = chat_failure(Status(500), stream=False)
    assert failure.spent is not None and failure.spent.requests() == (NoUsage(),)
    agent = ChatAgent("http://127.0.0.1:9/v1", model="agent-model")

    async def main() -> None:
        async with agent.conversation() as conversation:
            await conversation.turn(Message("hi"))

    try:
        asyncio.run(main())
    except AgentFailure as unreached:
        assert unreached.spent is None
