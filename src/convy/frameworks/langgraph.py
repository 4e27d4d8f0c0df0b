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

LangGraph and langchain-openai are convy's ``langgraph`` extra (docs/decisions/0014-langgraph.md),
imported only here.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import msgspec

from convy.agent import Answer, Call, Message, NoUsage, Reported, Requests, Thought, Usage
from convy.chat import Arguments, Prices
from convy.frameworks.common import counted, plain, unwrapped
from convy.paced import client as paced_client

try:
    from langchain_core import messages as said
    from langgraph.graph.state import CompiledStateGraph
except ImportError as error:  # pragma: no cover - said to whoever loads an agent file without the extra
    raise ImportError(f"convy's adapter for LangGraph needs its extra ({error.name} is not installed): pip install 'convy[langgraph]'") from None


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
        graph = self._owner.graph
        asked = said.HumanMessage(message.text)
        kept = graph.checkpointer is not None
        given = [asked] if kept else [*self._history, asked]
        config = {"configurable": {"thread_id": self._thread}} if kept else None
        state, costs = await unwrapped(graph.ainvoke({"messages": given}, config=config))
        messages = list(state["messages"])
        start = next((number for number in range(len(messages) - 1, -1, -1) if messages[number] is asked or _same(messages[number], asked)), 0)
        self._history = messages
        return _answer(messages[start + 1 :], self._owner.prices, costs)


def _same(one: Any, other: Any) -> bool:
    """Whether a message the graph gave back is the user's message of this turn (a checkpointer
    gives back copies)."""
    return isinstance(one, said.HumanMessage) and one.content == other.content and getattr(one, "id", None) in (None, getattr(other, "id", None))


def _answer(new: list[Any], prices: Prices, wire: list[Any]) -> Answer:
    """The answer of one turn, from the messages the graph added: the last AI message's text, each
    AI message's usage, the tool calls with their results: each the tool message for its id after
    the AI message that made it, before the next (a service may number its calls anew each time),
    a tool message of status error the call's error."""
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
    return Answer(text, usage, tuple(steps))
