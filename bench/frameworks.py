"""A demonstration, not a benchmark: one attempt of each framework's agent, and of a scenario's tools.

Plays, against the test stand-in's Chat Completions (a real HTTP server on 127.0.0.1; its model
calls ``lookup_order`` for a message naming an order, then answers with the tool's result, and
reports a usage and a cost for each request, as OpenRouter does), one attempt of a two-turn
scenario with each adapter: the OpenAI Agents SDK's agent, pydantic-ai's, and a LangGraph graph
with LangChain's ChatOpenAI. For each it prints the transcript (each turn's words, the tool calls
with their results) and each request's tokens and cost as convy kept them, beside what the server
reported for that request.

Then the scenario's own tools (docs/tools.md): a scenario that starts booking ABC123 in seat 12A
and checks it ends in 14C, played by the Agents SDK's agent and by LangGraph's create_react_agent
(each one's own ``change_seat`` answered by the scenario's) and by an agent that reaches its tools
over MCP with the official SDK's client, each once asked for 14C (the state check passes) and once
for 9F (it fails).

Last, the pauses: an ``issue_refund`` tool that asks before it runs (the Agents SDK's
``needs_approval``, pydantic-ai's ``requires_approval``, a LangGraph ``interrupt``), the scenario's
``approvals:`` approving it, then denying it: whether the tool ran, the call's approval, and the
pause as the attempt kept it (its question, answer and who answered). And the same with the
scenario's tools and state: ``issue_refund`` sets ``refunds.A-1``, and the scenario checks it and
that the agent asked; approved, denied, and answered by the simulated user in character (a model
that says yes, its request counted), played by the Agents SDK's agent, pydantic-ai's and an agent
over MCP (the call waits for the answer as an MCP host asks its user).

    .venv/bin/python bench/frameworks.py
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "unit")]

from support.standin import StandIn  # noqa: E402
from test_frameworks import (  # noqa: E402
    KEY,
    asking_langgraph,
    asking_openai_agents,
    asking_pydantic_ai,
    langgraph,
    openai_agents,
    pydantic_ai,
    react_agent,
    refunding,
)

from convy.agent import Answer, Asked, Call, Message, Requests, Usage  # noqa: E402
from convy.bench import Bench  # noqa: E402
from convy.chat import Prices  # noqa: E402
from convy.fakes import FakeModel, MemoryJournal  # noqa: E402
from convy.judge import Models  # noqa: E402
from convy.model import Reply, Said  # noqa: E402
from convy.outcome import Outcome  # noqa: E402
from convy.plan import Plan  # noqa: E402
from convy.prompt import STOP  # noqa: E402
from convy.scenario import Scenario  # noqa: E402
from convy.tools import toolbox  # noqa: E402

COST = 0.00021  # US dollars a request, as the server reports it


def replied(request: dict[str, Any]) -> dict[str, Any]:
    """The model: calls lookup_order, then answers with its result; a usage and a cost each time."""
    messages = request["messages"]
    if messages[-1]["role"] == "tool":
        return {"content": f"Your order: {messages[-1]['content']}", "usage": {"prompt_tokens": 40 + len(messages), "completion_tokens": 7, "cached_tokens": 16}, "cost": COST}
    if "A-" in messages[-1]["content"]:
        return {"content": None, "tool_calls": [{"name": "lookup_order", "arguments": {"order": "A-1"}}], "usage": {"prompt_tokens": 30 + len(messages), "completion_tokens": 9}, "cost": COST}
    return {"content": "Hello! Which order?", "usage": {"prompt_tokens": 20 + len(messages), "completion_tokens": 4, "reasoning_tokens": 2}, "cost": COST}


def played(agent: Any, scenario: Scenario, user: Any = None) -> Outcome:
    journal = MemoryJournal()
    models = Models() if user is None else Models(user=user)
    asyncio.run(Bench(agent, models).run(Plan((scenario,), 1), journal))
    (outcome,) = journal.outcomes
    return outcome


def shown(outcome: Outcome, bodies: list[dict[str, Any]]) -> None:
    """The transcript, then each request's tokens as kept beside the server's."""
    kept: list[Usage] = []
    for number, turn in enumerate(outcome.transcript.turns, start=1):
        print(f"  turn {number}  user: {turn.message}")
        for step in turn.answer.steps:
            match step:
                case Call(name=name, arguments=arguments, result=result, error=error, source=source):
                    answered = f"error {error!r}" if error else msgspec.json.encode(getattr(result, "value", None)).decode()
                    print(f"          tool call: {name}({msgspec.json.encode(arguments).decode()}) -> {answered}" + (f"  [{source}]" if source else ""))
                case _:
                    pass
        print(f"          agent: {turn.answer.text}")
        usage = turn.answer.usage
        kept.extend(one for one in (usage.each if isinstance(usage, Requests) else (usage,)) if isinstance(one, Usage))
    print("  requests: kept by convy (in, out, cached, reasoning; cost)  |  reported by the server")
    for number, (usage, body) in enumerate(zip(kept, bodies, strict=False), start=1):
        reply = replied(body)
        said = reply["usage"]
        server = (said["prompt_tokens"], said["completion_tokens"], said.get("cached_tokens", 0), said.get("reasoning_tokens", 0), reply["cost"])
        cost = getattr(usage.cost, "amount", None)
        mine = (usage.input, usage.output, usage.cached, usage.reasoning, None if cost is None else float(cost))
        source = getattr(usage.cost, "source", "unpriced")
        print(f"    {number}: {mine} {source}  |  {server}  {'same' if mine == server else 'DIFFERENT'}")
    print(f"  {len(kept)} requests kept, {len(bodies)} received by the server; status {outcome.status(0.0)}")


class SeatOverMcp:
    """An agent that reaches its tools over MCP, with the official SDK's client."""

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[SeatOverMcp]:
        yield self

    async def turn(self, message: Message) -> Answer:
        from mcp import Client

        async with Client(await toolbox().url()) as client:
            result = await client.call_tool("change_seat", {"code": "ABC123", "seat": message.text.rsplit(" ", 1)[-1]})
        return Answer(f"Done: {result.content[0].text}")  # type: ignore[union-attr]


SEAT = {
    "id": "seat",
    "state": {"bookings": {"ABC123": {"seat": "12A"}}},
    "tools": [
        {
            "name": "change_seat",
            "description": "Move a booking to another seat.",
            "parameters": {"type": "object", "properties": {"code": {"type": "string"}, "seat": {"type": "string"}}, "required": ["code", "seat"]},
            "answers": [{"when": {"code": "ABC123"}, "set": {"bookings.{{ code }}.seat": "{{ seat }}"}, "read": "bookings.{{ code }}"}],
            "default": {"error": "no booking {{ code }}"},
        }
    ],
    "judge": [{"check": {"state": {"bookings.ABC123.seat": "14C"}}}, {"check": {"called": "change_seat"}}],
}


def seat_replied(request: dict[str, Any]) -> dict[str, Any]:
    """The model of the seat scenario: calls change_seat with the seat the message ends with."""
    messages = request["messages"]
    if messages[-1]["role"] == "tool":
        return {"content": f"Moved: {messages[-1]['content']}"}
    seat = messages[-1]["content"].rsplit(" ", 1)[-1]
    return {"content": None, "tool_calls": [{"name": "change_seat", "arguments": {"code": "ABC123", "seat": seat}}]}


def seat_graph(server: StandIn) -> Any:
    """LangGraph's create_react_agent with a change_seat of its own, which the scenario's answers."""
    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI

    from convy.frameworks.langgraph import from_langgraph, http_client

    def change_seat(code: str, seat: str) -> str:
        """Move a booking to another seat."""
        return "the graph's own change_seat ran"

    model = ChatOpenAI(model="agent-model", base_url=server.url + "/v1", api_key=KEY, max_retries=0, http_async_client=http_client())
    return from_langgraph(react_agent(model, [StructuredTool.from_function(change_seat)]))


def pauses() -> None:
    print("\nThe pauses: issue_refund asks before it runs; the scenario approves it, then denies it.")
    for decision in ("approve", "deny"):
        chosen = msgspec.convert({"id": "refund", "script": ["Refund A-1"], "approvals": {"issue_refund": decision}, "judge": [{"check": {"asked_approval": "issue_refund"}}]}, Scenario)
        for name, made in (("OpenAI Agents SDK", asking_openai_agents), ("pydantic-ai", asking_pydantic_ai), ("LangGraph", asking_langgraph)):
            ran: list[str] = []

            def issue_refund(order: str) -> dict[str, str]:
                """Refund an order."""
                ran.append(order)
                return {"refunded": order}

            with StandIn(reply=refunding) as server:
                outcome = played(made(server, issue_refund), chosen)
            calls = [step for step in outcome.transcript.turns[0].answer.steps if isinstance(step, Call)]
            asked = [step for step in outcome.transcript.turns[0].answer.steps if isinstance(step, Asked)]
            answered = "; ".join(f"{call.name} {call.approval}: {call.error or msgspec.json.encode(getattr(call.result, 'value', None)).decode()}" for call in calls)
            paused = "; ".join(f"{one.question!r} answered {one.answer!r} by {one.by}" for one in asked)
            print(f"  {name}, {decision}: the tool {'ran' if ran else 'did not run'}; {answered}; asked {paused}; {outcome.status(0.0)}")


class RefundOverMcp:
    """An agent that reaches its tools over MCP (the official SDK's client) and refunds the order
    the message names: whoever it reaches through decides whether the call runs."""

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[RefundOverMcp]:
        yield self

    async def turn(self, message: Message) -> Answer:
        from mcp import Client

        async with Client(await toolbox().url()) as client:
            result = await client.call_tool("issue_refund", {"order": message.text.rsplit(" ", 1)[-1]})
        return Answer(f"{'Sorry' if result.is_error else 'Done'}: {result.content[0].text}")  # type: ignore[union-attr]


REFUND = {
    "id": "refund",
    "user": "You want order A-1 refunded; say yes when you are asked.",
    "script": ["Refund A-1"],
    "max_turns": 1,
    "state": {"refunds": {}},
    "tools": [
        {
            "name": "issue_refund",
            "description": "Refund an order.",
            "parameters": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]},
            "answers": [{"set": {"refunds.{{ order }}": True}, "result": {"refunded": "{{ order }}"}}],
        }
    ],
    "judge": [{"check": {"state": {"refunds.A-1": True}}}, {"check": {"asked_approval": "issue_refund"}}],
}


def in_character(messages: tuple[Said, ...]) -> Reply:
    """The simulated user's model: asked by the agent whether to refund, it says yes, in its words."""
    if "pauses and asks you" in messages[-1].content:
        return Reply("Approve - yes, please refund it.", Usage(60, 8))
    return Reply(STOP)


def approved_state() -> None:
    print("\nA scenario with tools, state and an approval: issue_refund sets refunds.A-1; the check asks for it, and that the agent asked.")
    for decision in ("approve", "deny", "user"):
        chosen = msgspec.convert({**REFUND, "approvals": {"issue_refund": decision}}, Scenario)
        for name, made in (("OpenAI Agents SDK", asking_openai_agents), ("pydantic-ai", asking_pydantic_ai), ("an agent over MCP", None)):
            with StandIn(reply=refunding) as server:
                agent = RefundOverMcp() if made is None else made(server, lambda order: {"refunded": "by the agent's own tool"})
                outcome = played(agent, chosen, FakeModel(in_character, "user-model"))
            steps = outcome.transcript.turns[0].answer.steps
            (asked,) = [step for step in steps if isinstance(step, Asked)]
            (call,) = [step for step in steps if isinstance(step, Call)]
            claims = getattr(outcome.result, "claims", ())
            print(
                f"  {name}, {decision}: asked {asked.question!r}, {asked.by} answered {asked.answer!r}"
                + (f" ({asked.usage.input} in, {asked.usage.output} out)" if isinstance(asked.usage, Usage) else "")
                + f"; {call.name} {call.approval} [{call.source}]; state {msgspec.json.encode(outcome.transcript.state).decode()}; "
                f"{outcome.status(0.0)}: {claims[0].reason if claims else outcome.result}"
            )


def main() -> None:
    scenario = msgspec.convert({"id": "order", "script": ["Hi", "Where is A-1?"], "judge": [{"check": {"called": "lookup_order"}}]}, Scenario)
    for name, made in (("OpenAI Agents SDK", openai_agents), ("pydantic-ai", pydantic_ai), ("LangGraph + ChatOpenAI", langgraph)):
        with StandIn(reply=replied) as server:
            outcome = played(made(server, Prices()), scenario)
            bodies = [msgspec.json.decode(request.body) for request in server.received]
        print(f"\n{name}:")
        shown(outcome, bodies)
    print("\nThe scenario's tools: booking ABC123 starts in 12A; the check asks for 14C.")
    for seat in ("14C", "9F"):
        asked = msgspec.convert({**SEAT, "script": [f"move me to {seat}"]}, Scenario)
        with StandIn(reply=seat_replied) as server:
            agents = (("OpenAI Agents SDK agent", openai_agents(server, Prices())), ("LangGraph's create_react_agent", seat_graph(server)), ("an agent over MCP", SeatOverMcp()))
            for name, agent in agents:
                outcome = played(agent, asked)
                (call,) = outcome.transcript.turns[0].answer.steps
                claims = getattr(outcome.result, "claims", ())
                print(f"  {name}, asked for {seat}: {call.name}({msgspec.json.encode(call.arguments).decode()}) [{call.source}]"  # type: ignore[union-attr]
                      f" -> state {msgspec.json.encode(outcome.transcript.state).decode()}; {outcome.status(0.0)}: {claims[0].reason}")
    pauses()
    approved_state()


if __name__ == "__main__":
    main()
