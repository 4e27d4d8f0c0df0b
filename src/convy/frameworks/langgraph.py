"""An agent built with LangGraph, as convy plays it: ``from_langgraph``.

In a project's ``agents/shop.py``::

    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI
    from convy.frameworks.langgraph import from_langgraph, http_client

    model = ChatOpenAI(model="gpt-4.1-mini", http_async_client=http_client(), max_retries=0)
    agent = from_langgraph(create_agent(model, [lookup_order]))

The graph is one whose state holds ``messages`` (LangGraph's ``MessagesState``, as its prebuilt
agents' does). Each conversation convy opens is one of the graph's: with a checkpointer, a thread of
its own (``thread_id``), each turn sending the user's message alone; without one, each turn's
``ainvoke`` given the messages of the turns before. The answer holds each model request's usage as
the model reported it (``usage_metadata``: input, output, cache-read and reasoning tokens; priced
from ``prices`` where given, flagged as computed) and each tool call paired with its result (an
error where the tool failed). A model whose OpenAI client sends through ``http_client()`` (LangChain's
``ChatOpenAI``, ``http_async_client=``) has its requests paced as convy's own and a request refused
for a rate limit sent again on its own after the pause (``paced.Paced``), never the agent's failure.

**Pauses.** A node that calls LangGraph's ``interrupt(value)`` pauses the run to ask a person; the
graph needs a checkpointer to go on from the pause (without one, the turn is the agent's failure,
saying so). convy answers each pause through ``asking`` (kept as an ``Asked`` step of the turn)
and resumes the run (``Command(resume={interrupt id: answer})``), until it pauses no more (at most
``PAUSES`` times a turn: more is the agent's failure). What the pause's value asks decides how:

- LangChain's ``HumanInTheLoopMiddleware`` (``{"action_requests": [{"name", "args"}, ...], ...}``):
  each action is an approval of the tool ``name``, answered ``{"decisions": [{"type": "approve"} |
  {"type": "reject", "message": ...}, ...]}``, one per action, in order.
- The agent inbox's ``HumanInterrupt`` (``{"action_request": {"action", "args"}, "config", ...}``,
  or a list of them): an approval of the tool ``action``, answered ``{"type": "accept"}``, or
  ``{"type": "ignore"}`` where denied (``{"type": "response", "args": ...}`` where its config
  allows no ignoring); a list answered with a list.
- A dict that names a tool, ``{"tool": name, "args": {...}}`` (or ``"arguments"``): an approval,
  answered ``True`` or ``False``.
- Anything else is a question, answered with the person's text: the value itself where it is
  text, else its ``question`` (or ``message``, ``description``, ``prompt``, ``text``), else the
  value as JSON; its options the value's ``options`` (or ``choices``: texts, or options with a
  ``label``) or the ``enum`` of the interrupt's ``response_schema``; a ``response_schema`` of
  ``{"type": "boolean"}`` asks yes or no and resumes with ``True`` or ``False``.

A tool call the run paused to ask about records the answer (``approval``, matched by its tool and
arguments); a denied one that the graph answered with an error, or not at all, is kept with the
error that it was not run.

**The scenario's tools.** Where the scenario declares tools (docs/tools.md), each tool of the
graph's ``ToolNode`` nodes (LangGraph's prebuilt, as ``create_react_agent``'s "tools" node and
LangChain's ``create_agent``'s are; in a subgraph added as a node too) that has the name of one the
scenario declares is answered by the scenario's instead, for the turn: the turn runs a copy of the
graph (``Pregel.copy``, the same checkpointer) whose tool nodes are new ``ToolNode``s with the same
options, the user's graph never changed, so conversations played at once do not meet. A call the
scenario's tool answers with an error is the tool message's error. The model's tools are bound in
the graph's own code: it still sees the graph's tool (its description and schema), and the
scenario's other tools are not added; a tool called from a node's own code, not through a
``ToolNode``, is not replaced, nor is an approval the graph's tool asked in its own body.

LangGraph and langchain-openai are convy's ``langgraph`` extra (docs/decisions/0014-langgraph.md),
imported only here.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import msgspec

from convy.agent import AgentFailure, Answer, Call, Message, NotReported, NoUsage, Reported, Requests, Thought, Usage
from convy.chat import Arguments, Prices
from convy.frameworks.common import Approval, approval, counted, plain, unwrapped
from convy.paced import client as paced_client
from convy.pauses import asking
from convy.tools import TOOLS, Toolbox, ToolError, same

try:
    from langchain_core import messages as said
    from langchain_core.tools import StructuredTool, ToolException
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.prebuilt import ToolNode
    from langgraph.types import Command
except ImportError as error:  # pragma: no cover - said to whoever loads an agent file without the extra
    raise ImportError(f"convy's adapter for LangGraph needs its extra ({error.name} is not installed): pip install 'convy[langgraph]'") from None

# The pauses answered in one turn before the turn is the agent's failure: a graph that asks again
# whatever it is told would otherwise never end its turn.
PAUSES = 10


def http_client() -> httpx2.AsyncClient:
    """An httpx2 client for a LangChain model's OpenAI client (``ChatOpenAI(http_async_client=...)``,
    with ``max_retries=0``): its requests inside an agent's turn are sent as convy's own are."""
    return paced_client()


def from_langgraph(graph: Any, *, prices: Prices = Prices()) -> LangGraphAgent:
    """``graph`` (a compiled LangGraph graph whose state holds ``messages``) as convy plays it;
    ``prices`` prices the tokens of a request whose model reports no cost."""
    if not isinstance(graph, CompiledStateGraph):
        raise TypeError(f"from_langgraph: give a compiled LangGraph graph (.compile()), not {type(graph).__name__}")
    return LangGraphAgent(graph, prices)


class LangGraphAgent:
    """A compiled LangGraph graph and the prices of its tokens: convy's ``Agent``."""

    def __init__(self, graph: Any, prices: Prices) -> None:
        self.graph = graph
        self.prices = prices

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[_Conversation]:
        yield _Conversation(self)


class _Conversation:
    """One conversation: its thread, or the messages of its turns so far where the graph keeps none."""

    def __init__(self, owner: LangGraphAgent) -> None:
        self._owner = owner
        self._thread = uuid.uuid4().hex
        self._history: list[Any] = []

    async def turn(self, message: Message) -> Answer:
        graph = _with_scenario_tools(self._owner.graph)
        asked = said.HumanMessage(message.text)
        kept = graph.checkpointer is not None
        given = [asked] if kept else [*self._history, asked]
        config = {"configurable": {"thread_id": self._thread}} if kept else None
        state, costs = await unwrapped(graph.ainvoke({"messages": given}, config=config))
        # The graph paused to ask a person (``interrupt``): answered, and the run resumed from the
        # pause, until it asks no more.
        decided: list[_Decided] = []
        pauses = 0
        while interrupts := _interrupts(state):
            if not kept or pauses == PAUSES:
                why = (
                    "the graph paused to ask (LangGraph's interrupt) but has no checkpointer to go on from the pause: compile it with one, graph.compile(checkpointer=InMemorySaver())"
                    if not kept
                    else f"the graph paused to ask more than {PAUSES} times in one turn"
                )
                raise AgentFailure(why, _answer(_new(state, asked), self._owner.prices, costs, decided))
            pauses += 1
            resume = {pause.id: await _resumed(pause, decided) for pause in interrupts}
            state, more = await unwrapped(graph.ainvoke(Command(resume=resume), config=config))
            costs = [*costs, *more]
        self._history = list(state["messages"])
        return _answer(_new(state, asked), self._owner.prices, costs, decided)


def _interrupts(state: Any) -> list[Any]:
    """The pauses a run of the graph ended on (``__interrupt__`` in what it gave back)."""
    found = state.get("__interrupt__") if isinstance(state, Mapping) else None
    return list(found or ())


def _new(state: Any, asked: Any) -> list[Any]:
    """The messages the graph added in this turn: those after the user's message."""
    messages = list(state["messages"])
    start = next((number for number in range(len(messages) - 1, -1, -1) if messages[number] is asked or _same(messages[number], asked)), 0)
    return messages[start + 1 :]


class _Decided(msgspec.Struct, frozen=True):
    """A tool the graph paused to ask about, with what it asked to run it with, and the answer."""

    tool: str
    arguments: dict[str, Any]
    approval: Approval


# What a graph is told of a tool the person denied, where its convention carries a message.
_DENIED = "The person denied running {tool}."


async def _resumed(pause: Any, decided: list[_Decided]) -> Any:
    """The answer to one pause, as the convention its value follows expects it (the module's
    docstring lists them); each approval asked kept in ``decided``."""
    value = getattr(pause, "value", None)
    match value:
        case {"action_requests": list() as actions}:  # LangChain's HumanInTheLoopMiddleware
            decisions: list[dict[str, Any]] = []
            for action in actions:
                tool = str(action.get("name", "")) if isinstance(action, Mapping) else ""
                answer = await _approved(tool, action.get("args") if isinstance(action, Mapping) else None, decided)
                decisions.append({"type": "approve"} if answer.given else {"type": "reject", "message": _DENIED.format(tool=tool)})
            return {"decisions": decisions}
        case {"action_request": {"action": str()}} if isinstance(value, Mapping):  # the agent inbox's HumanInterrupt
            return await _inbox(value, decided)
        case [{"action_request": {"action": str()}}, *_] if all(_is_inbox(one) for one in value):
            return [await _inbox(one, decided) for one in value]
        case {"tool": str() as tool} if isinstance(value, Mapping):
            answer = await _approved(tool, value.get("args", value.get("arguments")), decided)
            return answer.given
        case _:
            question, options, yes_or_no = _question(value, getattr(pause, "response_schema", None))
            said_back = await asking().answer(question, options)
            return said_back == "yes" if yes_or_no else said_back


def _is_inbox(value: Any) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("action_request"), Mapping) and isinstance(value["action_request"].get("action"), str)


async def _inbox(request: Mapping[str, Any], decided: list[_Decided]) -> dict[str, Any]:
    action = request["action_request"]
    tool = action["action"]
    answer = await _approved(tool, action.get("args"), decided)
    if answer.given:
        return {"type": "accept", "args": None}
    config = request.get("config")
    if isinstance(config, Mapping) and not config.get("allow_ignore", True) and config.get("allow_respond", False):
        return {"type": "response", "args": _DENIED.format(tool=tool)}
    return {"type": "ignore", "args": None}


async def _approved(tool: str, arguments: Any, decided: list[_Decided]) -> Approval:
    given = dict(arguments) if isinstance(arguments, Mapping) else {}
    answer = await approval(tool, given)
    decided.append(_Decided(tool, given, answer))
    return answer


_ASKING = ("question", "message", "description", "prompt", "text")  # where a pause's value holds its question


def _question(value: Any, schema: Any) -> tuple[str, tuple[str, ...], bool]:
    """The question a pause asks, the options it offers, and whether it asks yes or no (its
    ``response_schema`` a boolean's: answered ``True`` or ``False``)."""
    if isinstance(value, str):
        text = value
    else:
        held = next((value[key] for key in _ASKING if isinstance(value, Mapping) and isinstance(value.get(key), str)), None)
        text = held if held is not None else json.dumps(plain(value))
    given = next((value[key] for key in ("options", "choices") if isinstance(value, Mapping) and isinstance(value.get(key), list)), None)
    options: tuple[str, ...] = tuple(str(one.get("label", one)) if isinstance(one, Mapping) else str(one) for one in given) if given is not None else ()
    if isinstance(schema, Mapping):
        if schema.get("type") == "boolean":
            return text, ("yes", "no"), True
        if not options and isinstance(schema.get("enum"), list):
            options = tuple(str(one) for one in schema["enum"])
    return text, options, False


def _with_scenario_tools(graph: Any) -> Any:
    """``graph`` with each tool of its ``ToolNode`` nodes (a subgraph's too) that has the name of
    one the scenario declares answered by the scenario's: a copy, the graph given as it is where
    the scenario declares none or the graph has no such tool."""
    box = TOOLS.get()
    if box is None:
        return graph
    return _replaced(graph, box)


def _replaced(graph: Any, box: Toolbox) -> Any:
    nodes = dict(graph.nodes)
    changed = False
    for name, node in graph.nodes.items():
        bound = node.bound
        if isinstance(bound, ToolNode) and any(tool in box.tools for tool in bound.tools_by_name):
            nodes[name] = node.copy({"bound": _tool_node(bound, box)})
            changed = True
        elif isinstance(bound, CompiledStateGraph):  # a subgraph added as a node
            inner = _replaced(bound, box)
            if inner is not bound:
                nodes[name] = node.copy({"bound": inner, "subgraphs": [inner]})
                changed = True
    return graph.copy({"nodes": nodes}) if changed else graph


def _tool_node(node: Any, box: Toolbox) -> Any:
    """A ``ToolNode`` as ``node``, with the same options, whose tools of the scenario's names are the
    scenario's. (A ``ToolNode`` keeps its tools and options in attributes of its own; a copy of it
    would still run the tools of the original, whose bound methods it holds, so it is made anew.)"""
    tools = [_scenario_tool(name, box, tool) if name in box.tools else tool for name, tool in node.tools_by_name.items()]
    return ToolNode(
        tools,
        name=node.name or "tools",
        tags=node.tags,
        handle_tool_errors=node._handle_tool_errors,
        messages_key=node._messages_key,
        wrap_tool_call=node._wrap_tool_call,
        awrap_tool_call=node._awrap_tool_call,
    )


def _scenario_tool(name: str, box: Toolbox, own: Any) -> Any:
    """The scenario's tool ``name`` as a LangChain tool: its calls served by the scenario's tools
    (``box``), an error they answer a ``ToolException`` (the tool message's error)."""
    declared = box.tools[name]

    async def invoke(**arguments: Any) -> Any:
        try:
            return await box.call(name, arguments)
        except ToolError as error:
            raise ToolException(str(error)) from None

    return StructuredTool.from_function(
        coroutine=invoke,
        name=name,
        description=declared.description or getattr(own, "description", "") or name,
        args_schema=declared.function()["function"]["parameters"],
        handle_tool_error=True,
    )


def _same(one: Any, other: Any) -> bool:
    """Whether a message the graph gave back is the user's message of this turn (a checkpointer
    gives back copies)."""
    return isinstance(one, said.HumanMessage) and one.content == other.content and getattr(one, "id", None) in (None, getattr(other, "id", None))


def _answer(new: list[Any], prices: Prices, wire: list[Any], decided: list[_Decided]) -> Answer:
    """The answer of one turn, from the messages the graph added: the last AI message's text, each
    AI message's usage, the tool calls with their results: each the tool message for its id after
    the AI message that made it, before the next (a service may number its calls anew each time),
    a tool message of status error the call's error; each call the graph paused to ask about
    with the answer (``decided``)."""
    usages: list[Usage] = []
    steps: list[Thought | Call] = []
    pending: dict[str, int] = {}  # the calls of the latest AI message, by id: their place in steps
    text = ""
    for message in new:
        if isinstance(message, said.ToolMessage):
            at = pending.pop(message.tool_call_id, None)
            if at is None:
                continue
            content = message.content
            value: Any = content
            if isinstance(content, str):
                try:
                    value = json.loads(content)
                except ValueError:
                    value = content
            answered = {"error": str(content)} if message.status == "error" else {"result": Reported(plain(value))}
            steps[at] = msgspec.structs.replace(steps[at], **answered)
            continue
        if not isinstance(message, said.AIMessage):
            continue
        metadata: dict[str, Any] = dict(message.usage_metadata or {})
        cached = int((metadata.get("input_token_details") or {}).get("cache_read", 0) or 0)
        reasoning = int((metadata.get("output_token_details") or {}).get("reasoning", 0) or 0)
        tokens_in, tokens_out = int(metadata.get("input_tokens", 0) or 0), int(metadata.get("output_tokens", 0) or 0)
        model = str((message.response_metadata or {}).get("model_name", ""))
        usages.append(Usage(tokens_in, tokens_out, cached=cached, reasoning=reasoning, cost=prices.cost(model, tokens_in, tokens_out, cached)))
        pending = {}
        for call in message.tool_calls:
            pending[call.get("id") or ""] = len(steps)
            steps.append(Call(call["name"], Arguments(call.get("args")).value()))
        text = str(message.text)  # the text parts of its content (a str of LangChain's own class: made plain)
    every = counted(usages, wire, prices)  # as the wire said, where it was read there
    usage: Usage | NoUsage | Requests = NoUsage() if not every else every[0] if len(every) == 1 else Requests(tuple(every))
    return Answer(text, usage, _marked(steps, decided))


def _marked(steps: list[Thought | Call], decided: list[_Decided]) -> tuple[Thought | Call, ...]:
    """``steps`` with each call the graph paused to ask about marked with the answer: in the order
    asked, the first call not yet marked of the same tool with the same arguments, else of the same
    tool (a pause may show the call's arguments otherwise). A denied call the graph answered with
    an error (a rejection), or not at all, is kept with the error that it was not run; one it gave
    a result is kept with it, as the graph's own code answered the denial."""
    marked = list(steps)
    for one in decided:
        calls = [number for number, step in enumerate(marked) if isinstance(step, Call) and not step.approval and step.name == one.tool]
        place = next((number for number in calls if same(marked[number].arguments, one.arguments)), calls[0] if calls else None)  # type: ignore[union-attr]
        if place is None:
            continue
        call = marked[place]
        assert isinstance(call, Call)
        if not one.approval.given and (call.error or isinstance(call.result, NotReported)):
            marked[place] = msgspec.structs.replace(call, approval=one.approval.mark, error=one.approval.error)
        else:
            marked[place] = msgspec.structs.replace(call, approval=one.approval.mark)
    return tuple(marked)
