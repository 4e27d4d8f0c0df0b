"""An agent built with pydantic-ai, as convy plays it: ``from_pydantic_ai``.

In a project's ``agents/shop.py``::

    from pydantic_ai import Agent
    from convy.frameworks.pydantic_ai import from_pydantic_ai

    shop = Agent("openai:gpt-4.1-mini", instructions="...")

    @shop.tool_plain
    def lookup_order(order: str) -> dict: ...

    agent = from_pydantic_ai(shop)

Each conversation convy opens is one of pydantic-ai's: each turn's ``Agent.run`` is given the
messages of the turns before (``message_history``), and a conversation starts with none. Where the
agent's model is an OpenAI one (Chat Completions or Responses, any OpenAI-compatible server), its
requests go through its own OpenAI client made to send as convy's (``paced.Paced``: paced with the
agent's places, a request refused for a rate limit sent again on its own after the pause the
service asked for, the turn never played again); a model of another provider is run as it is. The
answer holds each request's usage as the service reported it (input, output, cache-read and
reasoning tokens; priced from ``prices`` where given, flagged as computed), each tool call paired
with its result or the error pydantic-ai told the model, and the model's thinking as thoughts.
Where the scenario declares tools (docs/tools.md), a tool of the agent with the same name is
answered by the scenario's instead.

pydantic-ai is convy's ``pydantic-ai`` extra (docs/decisions/0013-pydantic-ai.md), imported only here.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec

from convy.agent import Answer, Call, Message, NoUsage, Reported, Requests, Thought, Usage
from convy.chat import Arguments, Prices
from convy.frameworks.common import counted, plain, unwrapped
from convy.paced import client as paced_client
from convy.tools import TOOLS, ToolError

try:
    import pydantic_ai
    from pydantic_ai import messages as said
    from pydantic_ai.models import infer_model
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.toolsets import FunctionToolset
except ImportError as error:  # pragma: no cover - said to whoever loads an agent file without the extra
    raise ImportError(f"convy's adapter for pydantic-ai needs its extra ({error.name} is not installed): pip install 'convy[pydantic-ai]'") from None


def from_pydantic_ai(agent: Any, *, prices: Prices = Prices()) -> PydanticAIAgent:
    """``agent`` (a ``pydantic_ai.Agent``) as convy plays it; ``prices`` prices the tokens of a
    request whose service reports no cost."""
    if not isinstance(agent, pydantic_ai.Agent):
        raise TypeError(f"from_pydantic_ai: give a pydantic_ai.Agent, not {type(agent).__name__}")
    return PydanticAIAgent(agent, prices)


class PydanticAIAgent:
    """A pydantic-ai agent and the prices of its tokens: convy's ``Agent``."""

    def __init__(self, agent: Any, prices: Prices) -> None:
        self.agent = agent
        self.prices = prices

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[_Conversation]:
        async with paced_client() as http:
            yield _Conversation(self, _paced(self.agent.model, http))


def _paced(model: Any, http: Any) -> Any:
    """``model`` with its requests sent through ``http`` where it is an OpenAI one; as it is else."""
    if model is None:
        return None
    made = infer_model(model)
    match made:
        case OpenAIChatModel() | OpenAIResponsesModel():
            client = made.client.with_options(http_client=http, max_retries=0)
            return type(made)(made.model_name, provider=OpenAIProvider(openai_client=client), profile=made.profile, settings=made.settings)
        case _:
            return made


class _Conversation:
    """One conversation: pydantic-ai's messages of its turns so far."""

    def __init__(self, owner: PydanticAIAgent, model: Any) -> None:
        self._owner = owner
        self._model = model
        self._history: list[Any] = []

    async def turn(self, message: Message) -> Answer:
        agent = self._owner.agent
        with _scenario_tools(agent):
            result, costs = await unwrapped(agent.run(message.text, message_history=self._history, model=self._model))
        self._history = result.all_messages()
        return _answer(result, self._owner.prices, costs)


def _scenario_tools(agent: Any) -> Any:
    """``agent`` overridden, for one run, with each tool that has the name of one the scenario
    declares answered by the scenario's, and the scenario's others added; as it is where the
    scenario declares none. The agent's own tools and those of its function toolsets lose the
    shadowed ones; another toolset (an MCP server's) is kept whole."""
    box = TOOLS.get()
    if box is None:
        return agent.override()
    own, *others = agent.toolsets  # its own function tools first, as pydantic-ai lists them
    kept = [tool for tool in getattr(own, "tools", {}).values() if tool.name not in box.tools]
    toolsets = [
        FunctionToolset([tool for tool in toolset.tools.values() if tool.name not in box.tools])
        if isinstance(toolset, FunctionToolset) and any(name in box.tools for name in toolset.tools)
        else toolset
        for toolset in others
    ]
    declared = [
        pydantic_ai.Tool.from_schema(_invoked(name), name, tool.description or None, tool.function()["function"]["parameters"])
        for name, tool in box.tools.items()
    ]
    return agent.override(tools=[*kept, *declared], toolsets=toolsets)


def _invoked(name: str) -> Any:
    async def invoke(**arguments: Any) -> Any:
        box = TOOLS.get()
        assert box is not None  # set for the whole attempt
        try:
            return await box.call(name, arguments)
        except ToolError as error:
            return f"error: {error}"

    return invoke


def _answer(result: Any, prices: Prices, wire: list[Any]) -> Answer:
    """The answer of one run: its text, each request's usage, its steps. A call's result is the
    one returned for its id after the response that made it, before the next (a service may
    number its calls anew in each response); a return pydantic-ai marks as not a success (a
    ModelRetry, a tool that failed) and a retry prompt (arguments that did not validate) are the
    call's error."""
    usages: list[Usage] = []
    steps: list[Thought | Call] = []
    pending: dict[str, int] = {}  # the calls of the latest response, by id: their place in steps
    for message in result.new_messages():
        match message:
            case said.ModelResponse(usage=usage, model_name=model):
                cached = int(usage.cache_read_tokens or 0)
                reasoning = int((usage.details or {}).get("reasoning_tokens", 0) or 0)
                cost = prices.cost(model or "", int(usage.input_tokens or 0), int(usage.output_tokens or 0), cached)
                usages.append(Usage(input=int(usage.input_tokens or 0), output=int(usage.output_tokens or 0), cached=cached, reasoning=reasoning, cost=cost))
                pending = {}
                for part in message.parts:
                    match part:
                        case said.ThinkingPart(content=text) if text:
                            steps.append(Thought(text))
                        case said.ToolCallPart(tool_name=name, tool_call_id=identity):
                            pending[identity] = len(steps)
                            steps.append(Call(name, Arguments(part.args).value()))
                        case _:
                            pass
            case said.ModelRequest(parts=asked):
                for answer in asked:
                    match answer:
                        case said.ToolReturnPart(tool_call_id=identity, content=content) if identity in pending:
                            at = pending.pop(identity)
                            failed = getattr(answer, "outcome", "success") not in ("success", None)
                            answered = {"error": str(content)} if failed else {"result": Reported(plain(content))}
                            steps[at] = msgspec.structs.replace(steps[at], **answered)
                        case said.RetryPromptPart(tool_call_id=identity, content=content) if identity in pending:
                            at = pending.pop(identity)
                            steps[at] = msgspec.structs.replace(steps[at], error=content if isinstance(content, str) else json.dumps(plain(content)))
                        case _:
                            pass
            case _:
                pass
    output = result.output
    text = output if isinstance(output, str) else json.dumps(plain(output))
    every = counted(usages, wire, prices)  # as the wire said, where it was read there
    usage_of: Usage | NoUsage | Requests = NoUsage() if not every else every[0] if len(every) == 1 else Requests(tuple(every))
    return Answer(text, usage_of, tuple(steps))
