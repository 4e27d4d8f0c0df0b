"""Agents built on frameworks — the OpenAI Agents SDK, pydantic-ai, LangGraph (with LangChain's
``ChatOpenAI``) — played by convy through their adapters (``convy.frameworks``) against the
stand-in's Chat Completions, a real HTTP server on 127.0.0.1: the frameworks themselves, no fake of
them. Each case plays every framework: a conversation's memory, each request's usage against what
the server reported, tool calls with their results, a rate limit met inside a turn, a service busy
past the agent's patience; then what only some do (the scenario's tools in place of the agent's,
prices for a cost the service did not give, a LangGraph checkpointer)."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import msgspec
import pytest
from support.standin import StandIn, Status

from convy.agent import Asked, Call, Cost, NoUsage, Reported, Requests, Usage
from convy.bench import Bench
from convy.chat import Price, Prices
from convy.fakes import MemoryJournal
from convy.judge import Models
from convy.outcome import Outcome
from convy.plan import Plan
from convy.records import Limits
from convy.scenario import Scenario

KEY = "sk-test-never-shown"


def replied(request: dict[str, Any]) -> dict[str, Any]:
    """The model: a call of lookup_order for a message naming an order, then, with its result, the
    answer; each with a usage of its own, as a server reports it."""
    messages = request["messages"]
    if messages[-1]["role"] == "tool":
        return {"content": f"Your order: {messages[-1]['content']}", "usage": {"prompt_tokens": 40 + len(messages), "completion_tokens": 7, "cached_tokens": 16}}
    if "A-" in messages[-1]["content"]:
        return {"content": None, "tool_calls": [{"name": "lookup_order", "arguments": {"order": "A-1"}}], "usage": {"prompt_tokens": 30 + len(messages), "completion_tokens": 9}}
    return {"content": "Hello! Which order?", "usage": {"prompt_tokens": 20 + len(messages), "completion_tokens": 4, "reasoning_tokens": 2}}


def said(body: dict[str, Any]) -> Usage:
    """The usage the stand-in reported for a request it received: what ``replied`` gave it."""
    usage = replied(body)["usage"]
    return Usage(usage["prompt_tokens"], usage["completion_tokens"], cached=usage.get("cached_tokens", 0), reasoning=usage.get("reasoning_tokens", 0))


def lookup(order: str) -> dict[str, str]:
    """Look an order up by its number."""
    return {"order": order, "status": "in transit"}


def openai_agents(server: StandIn, prices: Prices) -> Any:
    import agents
    import openai

    from convy.frameworks.openai_agents import from_openai_agents

    shop = agents.Agent(name="shop", instructions="You help with orders.", tools=[agents.function_tool(lookup, name_override="lookup_order")], model="agent-model")
    return from_openai_agents(shop, openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=KEY), prices=prices)


def pydantic_ai(server: StandIn, prices: Prices) -> Any:
    import openai
    import pydantic_ai
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from convy.frameworks.pydantic_ai import from_pydantic_ai

    client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=KEY)
    shop = pydantic_ai.Agent(OpenAIChatModel("agent-model", provider=OpenAIProvider(openai_client=client)), instructions="You help with orders.")
    shop.tool_plain(name="lookup_order")(lookup)
    return from_pydantic_ai(shop, prices=prices)


def langgraph(server: StandIn, prices: Prices, kept: bool = False) -> Any:
    """A graph as LangGraph's guides build one: the model, then the tools while it calls any."""
    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    from convy.frameworks.langgraph import from_langgraph, http_client

    tool = StructuredTool.from_function(lookup, name="lookup_order")
    model = ChatOpenAI(model="agent-model", base_url=server.url + "/v1", api_key=KEY, max_retries=0, http_async_client=http_client())
    bound = model.bind_tools([tool])

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode([tool]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return from_langgraph(graph.compile(checkpointer=InMemorySaver() if kept else None), prices=prices)


def langgraph_kept(server: StandIn, prices: Prices) -> Any:
    return langgraph(server, prices, kept=True)


Made = Callable[[StandIn, Prices], Any]
NEEDS = {openai_agents: ("agents",), pydantic_ai: ("pydantic_ai",), langgraph: ("langgraph", "langchain_openai"), langgraph_kept: ("langgraph", "langchain_openai")}


def present(made: Made) -> Any:
    """``made`` as a case, skipped where its framework (an extra of convy's) is not installed."""
    missing = [name for name in NEEDS[made] if importlib.util.find_spec(name) is None]
    marks = [pytest.mark.skip(reason=f"{', '.join(missing)} not installed")] if missing else []
    return pytest.param(made, id=made.__name__.replace("_kept", "+checkpointer"), marks=marks)


EVERY = [present(made) for made in (openai_agents, pydantic_ai, langgraph, langgraph_kept)]
WITH_SCENARIO_TOOLS = [present(made) for made in (openai_agents, pydantic_ai, langgraph, langgraph_kept)]


def scenario(**fields: Any) -> Scenario:
    data = {"id": "order", "script": ["Hi", "Where is A-1?"], "judge": [{"check": {"called": "lookup_order"}}], **fields}
    return msgspec.convert(data, Scenario)


def played(made: Made, server: StandIn, chosen: Scenario, prices: Prices = Prices(), limits: Limits = Limits()) -> Outcome:
    journal = MemoryJournal()
    asyncio.run(Bench(made(server, prices), Models(), limits).run(Plan((chosen,), 1), journal))
    (outcome,) = journal.outcomes
    return outcome


@pytest.mark.parametrize("made", EVERY)
def test_a_conversation_remembers_its_turns_and_its_usage_is_the_servers(made: Made) -> None:
    with StandIn(reply=replied) as server:
        outcome = played(made, server, scenario())
        bodies = [msgspec.json.decode(request.body) for request in server.received]
    assert outcome.status(0.0) == "passed", outcome.result
    first, second = outcome.transcript.turns
    assert first.answer.text == "Hello! Which order?"
    assert second.answer.text.startswith("Your order: ")
    # The second turn's requests carry the first turn's messages: one conversation of the framework's.
    assert [message["content"] for message in bodies[1]["messages"] if message["role"] == "user"] == ["Hi", "Where is A-1?"]
    # Each request's usage as the server reported it, request by request.
    told = [said(body) for body in bodies]
    assert first.answer.usage == told[0]
    assert second.answer.usage == Requests((told[1], told[2]))
    (call,) = second.answer.steps
    assert call == Call("lookup_order", {"order": "A-1"}, Reported({"order": "A-1", "status": "in transit"}))  # type: ignore[comparison-overlap]


@pytest.mark.parametrize("made", EVERY)
def test_a_rate_limit_met_inside_a_turn_sends_that_request_again_not_the_turn(made: Made) -> None:
    """The server refuses the turn's first request once (429, Retry-After: 1): convy sends it again
    after the pause, the turn goes on, and the attempt is the agent's to pass, not a failure."""
    with StandIn(reply=replied) as server:
        server.faults(Status(429, retry_after="1", path="/v1/chat/completions"))
        outcome = played(made, server, scenario(script=["Where is A-1?"]))
        received = len(server.received)
    assert outcome.status(0.0) == "passed", outcome.result
    assert received == 3  # the refused one, sent again; then the answer after the tool's result
    assert [wait.why for wait in outcome.waits] == ["busy"]


@pytest.mark.parametrize("made", EVERY)
def test_a_service_busy_past_the_agents_patience_is_a_busy_service_not_the_agents_failure(made: Made) -> None:
    """Refused with a pause longer than the agent's patience: the attempt stops as the agent's
    service busy (not judged), not as the agent failed, though the framework's client stood between."""
    with StandIn(reply=replied) as server:
        server.faults(Status(429, retry_after="30", path="/v1/chat/completions"))
        outcome = played(made, server, scenario(script=["Where is A-1?"]), limits=Limits(agent_patience=1.0))
    assert outcome.stop == "agent_busy", outcome.result
    assert outcome.status(0.0) == "not_judged"


@pytest.mark.parametrize("made", WITH_SCENARIO_TOOLS)
def test_the_scenarios_tools_answer_in_place_of_the_agents_own_and_prices_fill_a_missing_cost(made: Made) -> None:
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
        outcome = played(made, server, chosen, prices=Prices({"agent-model": Price(Decimal("1"), Decimal("4"))}))
    assert outcome.status(0.0) == "passed", outcome.result
    (call,) = outcome.transcript.turns[0].answer.steps
    assert (call.name, call.source, call.result) == ("lookup_order", "fixture", Reported({"status": "lost"}))  # type: ignore[union-attr]
    usage = outcome.transcript.turns[0].answer.usage
    assert isinstance(usage, Requests)
    for request in usage.each:
        assert isinstance(request, Usage)
        assert request.cost == Cost((request.input * 1 + request.output * 4) / Decimal(1_000_000), "computed")


@pytest.mark.parametrize("made", EVERY)
def test_the_cost_the_provider_reported_is_kept_though_the_framework_drops_it(made: Made) -> None:
    """Each reply says what it cost (OpenRouter's usage.cost); the frameworks keep the tokens and
    drop the cost: convy reads it off the wire (``paced.COSTS``), and it wins over the prices."""

    def costed(request: dict[str, Any]) -> dict[str, Any]:
        return {**replied(request), "cost": 0.00021}

    with StandIn(reply=costed) as server:
        outcome = played(made, server, scenario(script=["Where is A-1?"]), prices=Prices({"agent-model": Price(Decimal("1"), Decimal("4"))}))
    usage = outcome.transcript.turns[0].answer.usage
    assert isinstance(usage, Requests)
    assert [request.cost for request in usage.each] == [Cost(Decimal("0.00021"), "provider")] * 2  # type: ignore[union-attr]


@pytest.mark.parametrize("made", EVERY)
def test_a_reply_that_says_no_usage_is_no_usage_never_free(made: Made) -> None:
    def silent(request: dict[str, Any]) -> dict[str, Any]:
        return {**replied(request), "usage": False}

    with StandIn(reply=silent) as server:
        outcome = played(made, server, scenario(script=["Hi"]), prices=Prices({"agent-model": Price(Decimal("1"), Decimal("4"))}))
    assert outcome.transcript.turns[0].answer.usage == NoUsage()


def again(request: dict[str, Any]) -> dict[str, Any]:
    """Two rounds of tool calls in one turn, the server numbering its calls anew in each reply
    (call_1 twice): each call's result is the one answered after it."""
    messages = request["messages"]
    rounds = sum(1 for message in messages if message["role"] == "tool")
    if rounds == 2:
        return {"content": "Both looked up."}
    order = "A-1" if rounds == 0 else "A-2"
    return {"content": None, "tool_calls": [{"name": "lookup_order", "arguments": {"order": order}, "id": "call_1"}]}


@pytest.mark.parametrize("made", [present(pydantic_ai), present(langgraph)])
def test_each_call_gets_its_own_result_when_a_server_numbers_its_calls_anew(made: Made) -> None:
    with StandIn(reply=again) as server:
        outcome = played(made, server, scenario(script=["Where are A-1 and A-2?"]))
    results = [(step.arguments["order"], step.result) for step in outcome.transcript.turns[0].answer.steps]  # type: ignore[union-attr]
    assert results == [("A-1", Reported({"order": "A-1", "status": "in transit"})), ("A-2", Reported({"order": "A-2", "status": "in transit"}))]


@pytest.mark.parametrize("made", EVERY)
def test_a_services_error_that_echoes_the_key_reaches_the_record_without_it(made: Made) -> None:
    from support.standin import Echo

    with StandIn(reply=replied) as server:
        server.faults(Echo(502, as_json=True, path="/v1/chat/completions"))
        outcome = played(made, server, scenario(script=["Hi"]))
    assert outcome.stop == "agent_failed"
    assert KEY not in msgspec.json.encode(outcome).decode()


def test_a_graphs_client_serves_each_event_loop_a_run_plays_in() -> None:
    """http_client(), made once in an agent file, is used by each run of a process (each its own loop)."""
    if importlib.util.find_spec("langgraph") is None:
        pytest.skip("langgraph not installed")
    with StandIn(reply=replied) as server:
        agent = langgraph(server, Prices())
        for _ in range(2):
            journal = MemoryJournal()
            asyncio.run(Bench(agent, Models()).run(Plan((scenario(script=["Hi"], judge=[{"check": {"said": "Hello"}}]),), 1), journal))
            assert journal.outcomes[0].status(0.0) == "passed", journal.outcomes[0].result


def test_a_pydantic_ai_agent_with_a_toolset_of_its_own_takes_the_scenarios_tools() -> None:
    if importlib.util.find_spec("pydantic_ai") is None:
        pytest.skip("pydantic_ai not installed")
    import openai
    import pydantic_ai
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.toolsets import FunctionToolset

    from convy.frameworks.pydantic_ai import from_pydantic_ai

    tools = [{"name": "lookup_order", "parameters": {"type": "object", "properties": {"order": {"type": "string"}}}, "default": {"result": {"status": "lost"}}}]
    with StandIn(reply=replied) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=KEY)
        toolset = FunctionToolset([pydantic_ai.Tool(lookup, name="lookup_order")])
        shop = pydantic_ai.Agent(OpenAIChatModel("agent-model", provider=OpenAIProvider(openai_client=client)), toolsets=[toolset])
        outcome = played(lambda _, __: from_pydantic_ai(shop), server, scenario(script=["Where is A-1?"], tools=tools, judge=[{"check": {"said": "lost"}}]))
    assert outcome.status(0.0) == "passed", outcome.result


def test_a_tool_that_raises_in_the_agents_sdk_is_the_calls_error() -> None:
    """The SDK tells the model a tool failed, not why (its default failure function): the call is
    kept with that as its error, not as a result, so the report shows it in red."""
    if importlib.util.find_spec("agents") is None:
        pytest.skip("agents not installed")
    import agents
    import openai

    from convy.frameworks.openai_agents import from_openai_agents

    def broken(order: str) -> dict[str, str]:
        """Look an order up by its number."""
        raise ValueError("database down")

    with StandIn(reply=replied) as server:
        shop = agents.Agent(name="shop", tools=[agents.function_tool(broken, name_override="lookup_order")], model="agent-model")
        agent = from_openai_agents(shop, openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=KEY))
        outcome = played(lambda _, __: agent, server, scenario(script=["Where is A-1?"]))
    (call,) = outcome.transcript.turns[0].answer.steps
    assert call.error.startswith("An error occurred while running the tool")  # type: ignore[union-attr]


def refunding(request: dict[str, Any]) -> dict[str, Any]:
    """The model: asks for issue_refund, then says what the tool answered."""
    messages = request["messages"]
    if messages[-1]["role"] == "tool":
        return {"content": f"Result: {messages[-1]['content']}"}
    return {"content": None, "tool_calls": [{"name": "issue_refund", "arguments": {"order": "A-1"}}]}


def asking_openai_agents(server: StandIn, refund: Callable[[str], dict[str, str]]) -> Any:
    """An Agents SDK agent whose issue_refund asks before it runs (needs_approval)."""
    import agents
    import openai

    from convy.frameworks.openai_agents import from_openai_agents

    shop = agents.Agent(name="shop", tools=[agents.function_tool(refund, name_override="issue_refund", needs_approval=True)], model="agent-model")
    return from_openai_agents(shop, openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=KEY))


def asking_pydantic_ai(server: StandIn, refund: Callable[[str], dict[str, str]]) -> Any:
    """A pydantic-ai agent whose issue_refund asks before it runs (requires_approval): its output
    type is the plain text, without DeferredToolRequests, as the adapter answers the pause in the run."""
    import openai
    import pydantic_ai
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from convy.frameworks.pydantic_ai import from_pydantic_ai

    client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=KEY)
    shop = pydantic_ai.Agent(OpenAIChatModel("agent-model", provider=OpenAIProvider(openai_client=client)))
    shop.tool_plain(name="issue_refund", requires_approval=True)(refund)
    return from_pydantic_ai(shop)


def asking_langgraph(server: StandIn, refund: Callable[[str], dict[str, str]]) -> Any:
    """A LangGraph agent (create_react_agent, with a checkpointer) whose issue_refund asks in its
    own body before it refunds: interrupt({"tool": ..., "args": ...}), resumed with True or False."""
    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import interrupt

    from convy.frameworks.langgraph import from_langgraph, http_client

    def issue_refund(order: str) -> Any:
        """Refund an order."""
        if not interrupt({"tool": "issue_refund", "args": {"order": order}}):
            return "The refund was not approved."
        return refund(order)

    model = ChatOpenAI(model="agent-model", base_url=server.url + "/v1", api_key=KEY, max_retries=0, http_async_client=http_client())
    return from_langgraph(react_agent(model, [StructuredTool.from_function(issue_refund)], InMemorySaver()))


def react_agent(model: Any, tools: list[Any], checkpointer: Any = None) -> Any:
    """LangGraph's prebuilt create_react_agent (deprecated for LangChain's create_agent, which is
    not installed here: the same graph of a model node and a ToolNode named "tools")."""
    import warnings

    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(model, tools, checkpointer=checkpointer)


ASKING = {asking_openai_agents: ("agents",), asking_pydantic_ai: ("pydantic_ai",), asking_langgraph: ("langgraph", "langchain_openai")}


def asking_case(made: Callable[..., Any]) -> Any:
    missing = [name for name in ASKING[made] if importlib.util.find_spec(name) is None]
    marks = [pytest.mark.skip(reason=f"{', '.join(missing)} not installed")] if missing else []
    return pytest.param(made, id=made.__name__.removeprefix("asking_"), marks=marks)


@pytest.mark.parametrize(("decision", "held"), [("approve", True), ("deny", False)])
@pytest.mark.parametrize("made", [asking_case(made) for made in ASKING])
def test_an_agent_that_asks_before_a_tool_is_answered_by_the_scenarios_approvals(made: Callable[..., Any], decision: str, held: bool) -> None:
    """A tool that asks before it runs (the SDK's needs_approval, pydantic-ai's requires_approval,
    a LangGraph interrupt): the run pauses, the scenario's approvals answer, the run goes on; the
    call records the answer, a denied one runs nothing, the pause is an Asked step of the turn, and
    the checks decide by it."""
    ran: list[str] = []

    def issue_refund(order: str) -> dict[str, str]:
        """Refund an order."""
        ran.append(order)
        return {"refunded": order}

    chosen = scenario(
        script=["Refund A-1"],
        approvals={"issue_refund": decision},
        judge=[{"check": {"asked_approval": "issue_refund"}}, {"check": {"not_asked_approval": "lookup_order"}}],
    )
    with StandIn(reply=refunding) as server:
        agent = made(server, issue_refund)
        outcome = played(lambda _, __: agent, server, chosen)
    asked, call = outcome.transcript.turns[0].answer.steps  # the pause before the call it asked about
    assert isinstance(call, Call) and isinstance(asked, Asked)
    assert call.approval == ("approved" if held else "denied")
    assert ran == (["A-1"] if held else [])
    if held:
        assert call.result == Reported({"refunded": "A-1"})
    elif made is not asking_langgraph:  # the graph's tool answered the denial itself, as its own code does
        assert call.error == "not run: the scenario's approvals deny issue_refund"
    assert (asked.question, asked.answer, asked.by, asked.options, asked.tool, asked.arguments) == (
        'May I run issue_refund with {"order":"A-1"}?',
        decision,
        "scenario",
        ("approve", "deny"),
        "issue_refund",
        {"order": "A-1"},
    )
    assert [(claim.held, claim.reason) for claim in outcome.result.claims] == [  # type: ignore[union-attr]
        (True, f"agent asked before issue_refund in turn 1, and the scenario answered {decision}"),
        (True, "agent never asked before lookup_order"),
    ]


def test_a_pydantic_ai_question_deferred_to_the_person_is_answered_by_nobody_without_a_simulated_user() -> None:
    """A tool that defers its call as a question (CallDeferred(kind="question")): the person is
    asked in the run, and a scripted scenario has none to answer: "" is the tool's result, and the
    pause an Asked step answered by nobody."""
    if importlib.util.find_spec("pydantic_ai") is None:
        pytest.skip("pydantic_ai not installed")
    import openai
    import pydantic_ai
    from pydantic_ai.exceptions import CallDeferred
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from convy.frameworks.pydantic_ai import from_pydantic_ai

    def asking(request: dict[str, Any]) -> dict[str, Any]:
        messages = request["messages"]
        if messages[-1]["role"] == "tool":
            return {"content": f"Seat: {messages[-1]['content']!r}"}
        return {"content": None, "tool_calls": [{"name": "ask_user", "arguments": {"question": "Window or aisle?", "options": ["window", "aisle"]}}]}

    def ask_user(question: str, options: list[str]) -> str:
        """Ask the user a question."""
        raise CallDeferred(kind="question")

    with StandIn(reply=asking) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=KEY)
        shop = pydantic_ai.Agent(OpenAIChatModel("agent-model", provider=OpenAIProvider(openai_client=client)))
        shop.tool_plain(ask_user)
        outcome = played(lambda _, __: from_pydantic_ai(shop), server, scenario(script=["Book me a seat"], judge=[{"check": {"said": "Seat"}}]))
    assert outcome.status(0.0) == "passed", outcome.result
    call, asked = outcome.transcript.turns[0].answer.steps  # a question: after the steps (its place among the calls is not known)
    assert isinstance(call, Call) and isinstance(asked, Asked)
    assert (call.name, call.result, call.approval) == ("ask_user", Reported(""), "")
    assert (asked.question, asked.answer, asked.by, asked.options, asked.tool) == ("Window or aisle?", "", "nobody", ("window", "aisle"), "")


def reviewed_graph(server: StandIn, refund: Callable[[str], dict[str, str]], convention: str, told: list[Any]) -> Any:
    """A graph that asks before it runs a tool the model called, as a node between the model and
    its ToolNode, in the shape of ``convention``: LangChain's HumanInTheLoopMiddleware ("middleware":
    an HITLRequest, resumed with its decisions; a rejection a tool message of status error, back to
    the model, as the middleware does) or the agent inbox's HumanInterrupt ("inbox": a list of
    requests, resumed with a list of responses). What the graph was told is kept in ``told``."""
    from langchain_core.messages import ToolMessage
    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition
    from langgraph.types import Command, interrupt

    from convy.frameworks.langgraph import from_langgraph, http_client

    tool = StructuredTool.from_function(refund, name="issue_refund", description="Refund an order.")
    bound = ChatOpenAI(model="agent-model", base_url=server.url + "/v1", api_key=KEY, max_retries=0, http_async_client=http_client()).bind_tools([tool])

    async def model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    def review(state: MessagesState) -> Command[Any]:
        (call,) = state["messages"][-1].tool_calls  # type: ignore[attr-defined]
        if convention == "middleware":
            answer = interrupt(
                {
                    "action_requests": [{"name": call["name"], "args": call["args"], "description": "Refunds need a person's approval."}],
                    "review_configs": [{"action_name": call["name"], "allowed_decisions": ["approve", "reject"]}],
                }
            )
            (decision,) = answer["decisions"]
            approved, why = decision["type"] == "approve", decision.get("message", "")
        else:
            config = {"allow_ignore": True, "allow_respond": True, "allow_edit": False, "allow_accept": True}
            (answer,) = interrupt([{"action_request": {"action": call["name"], "args": call["args"]}, "config": config, "description": "Refund?"}])
            approved, why = answer["type"] == "accept", "ignored"
        told.append(answer)
        if approved:
            return Command(goto="tools")
        return Command(goto="model", update={"messages": [ToolMessage(why, tool_call_id=call["id"], name=call["name"], status="error")]})

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node("review", review)
    graph.add_node("tools", ToolNode([tool]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition, {"tools": "review", "__end__": "__end__"})
    graph.add_edge("tools", "model")
    return from_langgraph(graph.compile(checkpointer=InMemorySaver()))


LANGGRAPH = pytest.mark.skipif(importlib.util.find_spec("langgraph") is None or importlib.util.find_spec("langchain_openai") is None, reason="langgraph not installed")


@LANGGRAPH
@pytest.mark.parametrize(("decision", "held"), [("approve", True), ("deny", False)])
@pytest.mark.parametrize("convention", ["middleware", "inbox"])
def test_a_graph_that_asks_in_a_convention_of_langchains_is_answered_in_it(convention: str, decision: str, held: bool) -> None:
    ran: list[str] = []
    told: list[Any] = []

    def issue_refund(order: str) -> dict[str, str]:
        ran.append(order)
        return {"refunded": order}

    chosen = scenario(script=["Refund A-1"], approvals={"issue_refund": decision}, judge=[{"check": {"asked_approval": "issue_refund"}}])
    with StandIn(reply=refunding) as server:
        agent = reviewed_graph(server, issue_refund, convention, told)
        outcome = played(lambda _, __: agent, server, chosen)
    assert outcome.status(0.0) == "passed", outcome.result
    asked, call = outcome.transcript.turns[0].answer.steps  # the pause before the call it asked about
    assert isinstance(call, Call) and isinstance(asked, Asked)
    assert (asked.tool, asked.arguments, asked.answer) == ("issue_refund", {"order": "A-1"}, decision)
    assert ran == (["A-1"] if held else [])
    assert call.approval == ("approved" if held else "denied")
    if held:
        assert call.result == Reported({"refunded": "A-1"})
        assert told == ([{"decisions": [{"type": "approve"}]}] if convention == "middleware" else [{"type": "accept", "args": None}])
    else:
        assert call.error == "not run: the scenario's approvals deny issue_refund"
        denied = {"decisions": [{"type": "reject", "message": "The person denied running issue_refund."}]}
        assert told == ([denied] if convention == "middleware" else [{"type": "ignore", "args": None}])


def questioning_graph(kept: bool) -> Any:
    """A graph whose one node asks the person which seat, and says what it was told."""
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.types import interrupt

    from convy.frameworks.langgraph import from_langgraph

    def ask(state: MessagesState) -> dict[str, Any]:
        seat = interrupt({"question": "Window or aisle?", "options": ["window", "aisle"]})
        return {"messages": [AIMessage(f"Seat: {seat!r}")]}

    graph = StateGraph(MessagesState)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    return from_langgraph(graph.compile(checkpointer=InMemorySaver() if kept else None))


@LANGGRAPH
def test_a_graphs_question_is_answered_by_nobody_without_a_simulated_user() -> None:
    """interrupt() with a question: a scripted scenario has no simulated user to answer, so the
    graph is told "" and the pause is an Asked step answered by nobody."""
    outcome = played(lambda _, __: questioning_graph(kept=True), None, scenario(script=["Book me a seat"], judge=[{"check": {"said": "Seat"}}]))  # type: ignore[arg-type]
    assert outcome.status(0.0) == "passed", outcome.result
    answer = outcome.transcript.turns[0].answer
    assert answer.text == "Seat: ''"
    (asked,) = answer.steps
    assert isinstance(asked, Asked)
    assert (asked.question, asked.answer, asked.by, asked.options, asked.tool) == ("Window or aisle?", "", "nobody", ("window", "aisle"), "")


@LANGGRAPH
def test_a_graph_that_asks_without_a_checkpointer_fails_saying_it_needs_one() -> None:
    outcome = played(lambda _, __: questioning_graph(kept=False), None, scenario(script=["Book me a seat"], judge=[{"check": {"said": "Seat"}}]))  # type: ignore[arg-type]
    assert outcome.stop == "agent_failed"
    assert "no checkpointer" in outcome.result.reason  # type: ignore[union-attr]


@LANGGRAPH
def test_the_scenarios_tools_answer_in_place_of_a_react_agents_own_and_its_graph_is_left_as_it_was() -> None:
    """create_react_agent's ToolNode "tools": its lookup_order is answered by the scenario's for the
    attempt (the state changes, the graph's own tool never runs; an error the scenario's tool answers
    is the tool message's error, as the model is told), and the user's graph keeps its own tool."""
    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI

    from convy.frameworks.langgraph import from_langgraph, http_client

    ran: list[str] = []

    def own(order: str) -> dict[str, str]:
        """Look an order up by its number."""
        ran.append(order)
        return {"order": order, "status": "in transit"}

    parameters = {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}
    tools = [{"name": "lookup_order", "parameters": parameters, "answers": [{"when": {"order": "A-1"}, "read": "orders.A-1", "set": {"looked": True}}], "default": {"error": "no such order"}}]
    state = {"orders": {"A-1": {"status": "lost"}}}

    def looking(order: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
        def reply(request: dict[str, Any]) -> dict[str, Any]:
            messages = request["messages"]
            if messages[-1]["role"] == "tool":
                return {"content": f"Your order: {messages[-1]['content']}"}
            return {"content": None, "tool_calls": [{"name": "lookup_order", "arguments": {"order": order}}]}

        return reply

    for order, judge in (("A-1", [{"check": {"state": {"looked": True}}}, {"check": {"said": "lost"}}]), ("A-9", [{"check": {"said": "no such order"}}])):
        with StandIn(reply=looking(order)) as server:
            model = ChatOpenAI(model="agent-model", base_url=server.url + "/v1", api_key=KEY, max_retries=0, http_async_client=http_client())
            graph = react_agent(model, [StructuredTool.from_function(own, name="lookup_order")])
            outcome = played(lambda _, __: from_langgraph(graph), server, scenario(script=[f"Where is {order}?"], tools=tools, state=state, judge=judge))
            told = msgspec.json.decode(server.received[-1].body)["messages"][-1]
        assert outcome.status(0.0) == "passed", outcome.result
        (call,) = outcome.transcript.turns[0].answer.steps
        assert isinstance(call, Call)
        if order == "A-1":
            assert (call.source, call.result) == ("fixture", Reported({"status": "lost"}))
        else:
            assert call.error == "no such order" and told["content"] == "no such order"
        assert graph.nodes["tools"].bound.tools_by_name["lookup_order"].func is own
    assert ran == []


@LANGGRAPH
def test_the_scenarios_tools_answer_in_a_subgraph_added_as_a_node() -> None:
    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph

    from convy.frameworks.langgraph import from_langgraph, http_client

    tools = [{"name": "lookup_order", "parameters": {"type": "object", "properties": {"order": {"type": "string"}}}, "default": {"result": {"status": "lost"}}}]
    with StandIn(reply=replied) as server:
        model = ChatOpenAI(model="agent-model", base_url=server.url + "/v1", api_key=KEY, max_retries=0, http_async_client=http_client())
        outer = StateGraph(MessagesState)
        outer.add_node("agent", react_agent(model, [StructuredTool.from_function(lookup, name="lookup_order")]))
        outer.add_edge(START, "agent")
        agent = from_langgraph(outer.compile(checkpointer=InMemorySaver()))
        outcome = played(lambda _, __: agent, server, scenario(script=["Where is A-1?"], tools=tools, judge=[{"check": {"said": "lost"}}]))
    assert outcome.status(0.0) == "passed", outcome.result


def test_a_pydantic_ai_run_that_ends_waiting_for_an_external_call_is_the_agents_failure() -> None:
    if importlib.util.find_spec("pydantic_ai") is None:
        pytest.skip("pydantic_ai not installed")
    import openai
    import pydantic_ai
    from pydantic_ai.exceptions import CallDeferred
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.tools import DeferredToolRequests

    from convy.frameworks.pydantic_ai import from_pydantic_ai

    def lookup_order(order: str) -> dict[str, str]:
        """Look an order up by its number, in the shop's back office."""
        raise CallDeferred()

    with StandIn(reply=replied) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=KEY)
        shop = pydantic_ai.Agent(OpenAIChatModel("agent-model", provider=OpenAIProvider(openai_client=client)), output_type=[str, DeferredToolRequests])
        shop.tool_plain(lookup_order)
        outcome = played(lambda _, __: from_pydantic_ai(shop), server, scenario(script=["Where is A-1?"]))
    assert outcome.stop == "agent_failed"
    assert "waiting for lookup_order to be run outside the agent" in outcome.result.reason  # type: ignore[union-attr]


@LANGGRAPH
def test_a_graph_that_never_stops_asking_is_the_agents_failure() -> None:
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.types import interrupt

    from convy.frameworks.langgraph import PAUSES, from_langgraph

    def ask(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(str(interrupt("Are you sure?")))]}

    graph = StateGraph(MessagesState)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", "ask")
    agent = from_langgraph(graph.compile(checkpointer=InMemorySaver()))
    outcome = played(lambda _, __: agent, None, scenario(script=["Go"]))  # type: ignore[arg-type]
    assert outcome.stop == "agent_failed"
    assert f"more than {PAUSES} times" in outcome.result.reason  # type: ignore[union-attr]
    assert len(outcome.agent_ending.steps) == PAUSES  # type: ignore[union-attr]



def test_a_frameworks_own_spans_join_the_turn_that_asked() -> None:
    """A pydantic-ai agent instrumented with OpenTelemetry (its own spans, to a provider of the
    test's) plays its turns under each turn's trace context (issue 30): its spans are in the
    attempt's trace, their root under the turn's span."""
    import pydantic_ai
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from convy.frameworks.pydantic_ai import from_pydantic_ai
    from convy.tracecontext import TraceIds

    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))

    def made(server: StandIn, prices: Prices) -> Any:
        import openai
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=KEY)
        model = OpenAIChatModel("agent-model", provider=OpenAIProvider(openai_client=client))
        shop = pydantic_ai.Agent(model, instructions="You help with orders.")
        shop.instrument = pydantic_ai.InstrumentationSettings(tracer_provider=provider)
        shop.tool_plain(name="lookup_order")(lookup)
        return from_pydantic_ai(shop, prices=prices)

    with StandIn(reply=replied) as server:
        outcome = played(made, server, scenario())
    ids = TraceIds(outcome.trace)
    spans = exported.get_finished_spans()
    assert spans and {span.context.trace_id for span in spans} == {int(outcome.trace, 16)}
    outermost = [span for span in spans if span.parent is not None and span.parent.span_id in (int(ids.turn(1), 16), int(ids.turn(2), 16))]
    assert {format(span.parent.span_id, "016x") for span in outermost} == {ids.turn(1), ids.turn(2)}
