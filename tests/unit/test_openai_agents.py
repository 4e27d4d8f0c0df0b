"""The OpenAI Agents SDK's own agents, played by convy through ``from_openai_agents`` against the
stand-in's Chat Completions (a real HTTP server on 127.0.0.1): a conversation's memory, each
request's usage against what the server reported, tool calls with their results, a rate limit met
inside a turn, and the scenario's own tools in place of the agent's."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest
from support.standin import StandIn, Status

from convy.agent import Call, Reported, Requests, Usage
from convy.bench import Bench
from convy.fakes import MemoryJournal
from convy.judge import Models
from convy.outcome import Outcome
from convy.plan import Plan
from convy.scenario import Scenario

agents = pytest.importorskip("agents")
openai = pytest.importorskip("openai")

from convy.frameworks.openai_agents import from_openai_agents  # noqa: E402 - after the skip: it imports the SDK


@agents.function_tool
def lookup_order(order: str) -> dict[str, str]:
    """Look an order up by its number."""
    return {"order": order, "status": "in transit"}


def shop() -> Any:
    return agents.Agent(name="shop", instructions="You help with orders.", tools=[lookup_order], model="agent-model")


def replied(request: dict[str, Any]) -> dict[str, Any]:
    """The model: a call of lookup_order for a message naming an order, then, with its result, the
    answer; each with a usage of its own, as a server reports it."""
    messages = request["messages"]
    if messages[-1]["role"] == "tool":
        return {"content": f"Your order: {messages[-1]['content']}", "usage": {"prompt_tokens": 40 + len(messages), "completion_tokens": 7, "cached_tokens": 16}}
    if "A-" in messages[-1]["content"]:
        return {"content": None, "tool_calls": [{"name": "lookup_order", "arguments": {"order": "A-1"}}], "usage": {"prompt_tokens": 30 + len(messages), "completion_tokens": 9}}
    return {"content": "Hello! Which order?", "usage": {"prompt_tokens": 20 + len(messages), "completion_tokens": 4, "reasoning_tokens": 2}}


def scenario(**fields: Any) -> Scenario:
    data = {"id": "order", "script": ["Hi", "Where is A-1?"], "judge": [{"check": {"called": "lookup_order"}}], **fields}
    return msgspec.convert(data, Scenario)


def played(server: StandIn, chosen: Scenario) -> Outcome:
    client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="sk-test-never-shown")
    journal = MemoryJournal()
    asyncio.run(Bench(from_openai_agents(shop(), client), Models()).run(Plan((chosen,), 1), journal))
    (outcome,) = journal.outcomes
    return outcome


def test_a_conversation_of_the_sdk_remembers_its_turns_and_its_usage_is_the_servers() -> None:
    with StandIn(reply=replied) as server:
        outcome = played(server, scenario())
        bodies = [msgspec.json.decode(request.body) for request in server.received]
    assert outcome.status(0.0) == "passed", outcome.result
    first, second = outcome.transcript.turns
    assert first.answer.text == "Hello! Which order?"
    assert second.answer.text.startswith("Your order: ")
    # The second turn's requests carry the first turn's messages: one conversation of the SDK's.
    assert [message["content"] for message in bodies[1]["messages"] if message["role"] == "user"] == ["Hi", "Where is A-1?"]
    # Each request's usage as the server reported it, request by request.
    assert first.answer.usage == Usage(22, 4, cached=0, reasoning=2)
    assert second.answer.usage == Requests((Usage(34, 9, cached=0, reasoning=0), Usage(46, 7, cached=16, reasoning=0)))
    assert len(bodies) == 3
    (call,) = second.answer.steps
    assert call == Call("lookup_order", {"order": "A-1"}, Reported({"order": "A-1", "status": "in transit"}))  # type: ignore[comparison-overlap]


def test_a_rate_limit_met_inside_a_turn_sends_that_request_again_not_the_turn() -> None:
    """The server refuses the turn's first request once (429, Retry-After: 1): convy sends it again
    after the pause, the turn goes on, and the attempt is the agent's to pass, not a failure."""
    with StandIn(reply=replied) as server:
        server.faults(Status(429, retry_after="1", path="/v1/chat/completions"))
        outcome = played(server, scenario(script=["Where is A-1?"]))
        received = len(server.received)
    assert outcome.status(0.0) == "passed", outcome.result
    assert received == 3  # the refused one, sent again; then the answer after the tool's result
    assert [wait.why for wait in outcome.waits] == ["busy"]
    assert isinstance(outcome.transcript.turns[0].answer.usage, Requests)


def test_the_scenarios_tools_answer_in_place_of_the_agents_own() -> None:
    tools = [
        {
            "name": "lookup_order",
            "parameters": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]},
            "answers": [{"when": {"order": "A-1"}, "read": "orders.A-1", "set": {"looked": True}}],
        }
    ]
    chosen = scenario(
        script=["Where is A-1?"],
        tools=tools,
        state={"orders": {"A-1": {"status": "lost"}}},
        judge=[{"check": {"state": {"looked": True}}}, {"check": {"said": "lost"}}],
    )
    with StandIn(reply=replied) as server:
        outcome = played(server, chosen)
    assert outcome.status(0.0) == "passed", outcome.result
    (call,) = outcome.transcript.turns[0].answer.steps
    assert (call.name, call.source, call.result) == ("lookup_order", "fixture", Reported({"status": "lost"}))  # type: ignore[union-attr]


def test_a_service_busy_past_the_agents_patience_is_a_busy_service_not_the_agents_failure() -> None:
    """Refused with a pause longer than the agent's patience: the attempt stops as the agent's
    service busy (not judged), not as the agent failed, though the SDK's client stood between."""
    from convy.records import Limits

    with StandIn(reply=replied) as server:
        server.faults(Status(429, retry_after="30", path="/v1/chat/completions"))
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="sk-test-never-shown")
        journal = MemoryJournal()
        bench = Bench(from_openai_agents(shop(), client), Models(), Limits(agent_patience=1.0))
        asyncio.run(bench.run(Plan((scenario(script=["Where is A-1?"]),), 1), journal))
    (outcome,) = journal.outcomes
    assert outcome.stop == "agent_busy", outcome.result
    assert outcome.status(0.0) == "not_judged"


def test_tokens_the_service_did_not_price_are_priced_from_the_projects_table_and_flagged_so() -> None:
    from decimal import Decimal

    from convy.agent import Cost
    from convy.chat import Price, Prices

    with StandIn(reply=replied) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="sk-test-never-shown")
        journal = MemoryJournal()
        priced = from_openai_agents(shop(), client, prices=Prices({"agent-model": Price(Decimal("1"), Decimal("4"))}))
        asyncio.run(Bench(priced, Models()).run(Plan((scenario(script=["Hi"]),), 1), journal))
    (outcome,) = journal.outcomes
    assert outcome.transcript.turns[0].answer.usage == Usage(22, 4, cached=0, reasoning=2, cost=Cost(Decimal("0.000038"), "computed"))
