"""An agent built with the OpenAI Agents SDK, as convy plays it: ``from_openai_agents``.

In a project's ``agents/shop.py``::

    from agents import Agent
    from openai import AsyncOpenAI
    from convy.frameworks.openai_agents import from_openai_agents

    shop = Agent(name="shop", instructions="...", tools=[lookup_order], model="gpt-4.1-mini")
    agent = from_openai_agents(shop, AsyncOpenAI())

Each conversation convy opens is one of the SDK's: its turns carry the items of the turns before
(``RunResult.to_input_list``), and a conversation starts with none. Each turn is one
``Runner.run``, whose model requests go through the SDK's OpenAI client made to send as convy's
own (``paced.Paced``: paced with the agent's places, a request refused for a rate limit sent again
on its own after the pause the service asked for, the turn never played again). The answer holds
each request's usage as the service reported it (input, output, cached and reasoning tokens; a cost
from ``prices`` where one is given for the model, flagged as computed), each tool call paired with
its result (``call_id``), and the model's reasoning summaries as thoughts. Where the scenario
declares tools (``tools:``, docs/tools.md), a tool of the agent with the same name is answered by
the scenario's instead, and its calls are kept as the scenario's tools saw them. A tool with
``needs_approval`` pauses the run: the person of the attempt is asked (``asking().approve``: the
scenario's ``approvals:``, or the simulated user where they say ``user``; the pause kept as an
``Asked`` step), and the run goes on from where it paused; the call records the answer
(``approval``), a denied one with the error that it was not run.

The SDK is convy's ``openai-agents`` extra (docs/decisions/0012-openai-agents.md), imported only here.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from convy.agent import Answer, Call, Message, NotReported, NoUsage, Reported, Requests, Thought, Usage
from convy.chat import Arguments, Prices
from convy.frameworks.common import Approval, approval, counted, plain, unwrapped
from convy.paced import client as paced_client
from convy.tools import TOOLS, ToolError

try:
    import agents as sdk
    import openai
except ImportError as error:  # pragma: no cover - said to whoever loads an agent file without the extra
    raise ImportError(f"convy's adapter for the OpenAI Agents SDK needs its extra ({error.name} is not installed): pip install 'convy[openai-agents]'") from None

# The SDK logs a failed model request ("Error getting response") on its logger, which with no
# handler Python's last resort writes to stderr: convy never prints, and the failure is the
# attempt's, recorded. A team that configures logging still gets it, through the root logger.
if not any(isinstance(handler, logging.NullHandler) for handler in logging.getLogger("openai.agents").handlers):
    logging.getLogger("openai.agents").addHandler(logging.NullHandler())


# What the SDK tells the model of a tool that raised (its default failure function): the call's error.
_FAILED = "An error occurred while running the tool"


def from_openai_agents(
    agent: Any, client: Any = None, *, responses: bool = False, prices: Prices = Prices(), max_turns: int = 10
) -> OpenAIAgentsAgent:
    """``agent`` (an ``agents.Agent``) as convy plays it, its model reached through ``client`` (an
    ``openai.AsyncOpenAI``; the SDK's default, from ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``, where
    none is given) over the Chat Completions API, or the Responses API with ``responses``;
    ``prices`` prices the tokens of a request whose service reports no cost; ``max_turns`` is the
    SDK's own bound on one ``Runner.run``."""
    if not isinstance(agent, sdk.Agent):
        raise TypeError(f"from_openai_agents: give an agents.Agent, not {type(agent).__name__}")
    return OpenAIAgentsAgent(agent, client, responses, prices, max_turns)


class OpenAIAgentsAgent:
    """An Agents SDK agent, the client its model is reached through, and how: convy's ``Agent``."""

    def __init__(self, agent: Any, client: Any, responses: bool, prices: Prices, max_turns: int) -> None:
        self.agent = agent
        self.client = client
        self.responses = responses
        self.prices = prices
        self.max_turns = max_turns

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[_Conversation]:
        http = paced_client()
        given = self.client if self.client is not None else openai.AsyncOpenAI()
        async with http:
            paced = given.with_options(http_client=http, max_retries=0)
            provider = sdk.OpenAIProvider(openai_client=paced, use_responses=self.responses)
            yield _Conversation(self, sdk.RunConfig(model_provider=provider, tracing_disabled=True))


class _Conversation:
    """One conversation: the SDK's items of its turns so far."""

    def __init__(self, owner: OpenAIAgentsAgent, config: Any) -> None:
        self._owner = owner
        self._config = config
        self._items: list[Any] = []

    async def turn(self, message: Message) -> Answer:
        owner = self._owner
        agent = _with_scenario_tools(owner.agent)
        items = [*self._items, {"role": "user", "content": message.text}]
        result, wire = await unwrapped(sdk.Runner.run(agent, items, run_config=self._config, max_turns=owner.max_turns))
        # The agent paused to ask before running a tool (needs_approval): the person answers (the
        # scenario's approvals, or the simulated user where they say so), and the run goes on from
        # where it paused, until it asks no more.
        asked: dict[str, Approval] = {}
        while result.interruptions:
            state = result.to_state()
            for item in result.interruptions:
                name = getattr(item.raw_item, "name", "") or ""
                answer = await approval(name, Arguments(getattr(item.raw_item, "arguments", None)).value())
                asked[_call_id(item.raw_item)] = answer
                (state.approve if answer.given else state.reject)(item)
            result, more = await unwrapped(sdk.Runner.run(agent, state, run_config=self._config, max_turns=owner.max_turns))
            wire = [*wire, *more]
        self._items = result.to_input_list()
        return _answer(result, owner.prices, wire, asked)


def _with_scenario_tools(agent: Any) -> Any:
    """``agent`` with each tool that has the name of one the scenario declares answered by the
    scenario's, and the scenario's others added; as it is where the scenario declares none."""
    box = TOOLS.get()
    if box is None:
        return agent
    own = {getattr(tool, "name", ""): tool for tool in agent.tools}
    tools = [tool for name, tool in own.items() if name not in box.tools]
    for name, declared in box.tools.items():
        tools.append(
            sdk.FunctionTool(
                name=name,
                description=declared.description or getattr(own.get(name), "description", ""),
                params_json_schema=declared.function()["function"]["parameters"],
                on_invoke_tool=_invoked(name),
                strict_json_schema=False,
                needs_approval=getattr(own.get(name), "needs_approval", False),  # it asks before the scenario's as before its own
            )
        )
    return agent.clone(tools=tools)


def _invoked(name: str) -> Any:
    async def invoke(context: Any, arguments: str) -> str:
        box = TOOLS.get()
        assert box is not None  # set for the whole attempt
        try:
            value = await box.call(name, json.loads(arguments or "{}"))
        except ToolError as error:
            return f"error: {error}"
        return value if isinstance(value, str) else json.dumps(value)

    return invoke


def _answer(result: Any, prices: Prices, wire: list[Any], asked: dict[str, Approval]) -> Answer:
    """The answer of one ``Runner.run``: its text, each request's usage, its steps."""
    usages: list[Usage] = []
    for response in result.raw_responses:
        said = response.usage
        cached = int(getattr(said.input_tokens_details, "cached_tokens", 0) or 0)
        reasoning = int(getattr(said.output_tokens_details, "reasoning_tokens", 0) or 0)
        tokens_in, tokens_out = int(said.input_tokens or 0), int(said.output_tokens or 0)
        cost = prices.cost(_model(response), tokens_in, tokens_out, cached)
        usages.append(Usage(input=tokens_in, output=tokens_out, cached=cached, reasoning=reasoning, cost=cost))
    steps: list[Thought | Call] = []
    results = {_call_id(item.raw_item): item.output for item in result.new_items if isinstance(item, sdk.ToolCallOutputItem)}
    for item in result.new_items:
        match item:
            case sdk.ReasoningItem(raw_item=raw):
                text = " ".join(part.text for part in getattr(raw, "summary", []) or [] if getattr(part, "text", ""))
                if text:
                    steps.append(Thought(text))
            case sdk.ToolCallItem(raw_item=raw):
                name = getattr(raw, "name", "") or ""
                arguments = Arguments(getattr(raw, "arguments", None)).value()
                identity = _call_id(raw)
                output = results.get(identity, NotReported())
                answered = asked.get(identity)
                mark = answered.mark if answered is not None else ""
                if answered is not None and not answered.given:
                    steps.append(Call(name, arguments, error=answered.error, approval=mark))
                elif isinstance(output, str) and output.startswith(_FAILED):  # the SDK's word for a tool that raised
                    steps.append(Call(name, arguments, error=output, approval=mark))
                else:
                    steps.append(Call(name, arguments, NotReported() if isinstance(output, NotReported) else Reported(plain(output)), approval=mark))
            case _:
                pass
    text = result.final_output if isinstance(result.final_output, str) else json.dumps(plain(result.final_output))
    every = counted(usages, wire, prices)  # as the wire said, where it was read there
    usage: Usage | NoUsage | Requests = NoUsage() if not every else every[0] if len(every) == 1 else Requests(tuple(every))
    return Answer(text, usage, tuple(steps))


def _model(response: Any) -> str:
    """The model a response came from, where the SDK kept it."""
    for item in getattr(response, "output", []) or []:
        data = getattr(item, "provider_data", None) or {}
        if isinstance(data, dict) and isinstance(data.get("model"), str):
            return str(data["model"])
    return ""


def _call_id(raw: Any) -> str:
    match raw:
        case dict():
            return str(raw.get("call_id", ""))
        case _:
            return str(getattr(raw, "call_id", ""))
