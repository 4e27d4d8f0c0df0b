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
answered by the scenario's instead (asking before it runs where the agent's asked).

A deferred tool call pauses the run where it is, and convy answers it in the run (pydantic-ai's
``HandleDeferredToolCalls``, given to each run: the agent needs no ``DeferredToolRequests`` in its
output types, keeps its output validators, and the turn is one run whose requests are all counted):
a tool with ``requires_approval``, or one that raised ``ApprovalRequired``, is asked of the person
of the attempt (``asking().approve``: the scenario's ``approvals:``, or the simulated user where
they say ``user``), approved or denied (``ToolDenied``, its default message to the model); a call
deferred as a question (``CallDeferred(kind="question")``) is answered by the person
(``asking().answer``: its ``question`` argument, its ``options``), the answer its result. Each
pause is kept as an ``Asked`` step, and a call asked about records the answer (``approval``), a
denied one with the error that it was not run. A call deferred to be run outside the agent (an
external tool) is the agent's application's to run: a run that ends waiting for one is the
agent's failure, saying so.

pydantic-ai is convy's ``pydantic-ai`` extra (docs/decisions/0013-pydantic-ai.md), imported only here.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec

from convy.agent import AgentFailure, Answer, Call, Message, NoUsage, Reported, Requests, Thought, Usage
from convy.chat import Arguments, Prices
from convy.frameworks.common import Approval, approval, counted, plain, unwrapped
from convy.paced import client as paced_client
from convy.pauses import asking
from convy.tools import TOOLS, ToolError

try:
    import pydantic_ai
    from pydantic_ai import messages as said
    from pydantic_ai.capabilities import HandleDeferredToolCalls
    from pydantic_ai.models import infer_model
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolDenied
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
        paused = _Paused()
        with _scenario_tools(agent):
            run = agent.run(message.text, message_history=self._history, model=self._model, capabilities=[HandleDeferredToolCalls(paused.answered)])
            result, costs = await unwrapped(run)
        answer = _answer(result, self._owner.prices, costs, paused.approvals)
        if isinstance(result.output, DeferredToolRequests):
            # Calls to be run outside the agent (external tools, CallDeferred): its application
            # runs them, convy cannot; the turn ends without an answer to give the user.
            waiting = ", ".join(call.tool_name for call in result.output.calls) or "calls"
            raise AgentFailure(f"the run ended waiting for {waiting} to be run outside the agent (pydantic-ai's DeferredToolRequests): convy answers approvals and questions, not calls the agent's application runs", answer)
        self._history = result.all_messages()
        return answer


class _Paused:
    """The person who answers a run's deferred tool calls as the run pauses for them (pydantic-ai's
    ``HandleDeferredToolCalls``, in the run: the run goes on from where it paused, its requests
    all in one result): each approval (a tool with ``requires_approval``, or one that raised
    ``ApprovalRequired``) asked of the person (``asking``), and each question (a call deferred with
    ``CallDeferred(kind="question")``) answered by them; a call to be run outside the agent is left
    to the agent's own handlers, or its ``DeferredToolRequests`` output. Keeps each approval, in
    the order asked, for the calls of the answer."""

    def __init__(self) -> None:
        self.approvals: list[tuple[str, str, Approval]] = []  # (tool call id, tool, answer)

    async def answered(self, context: Any, requests: DeferredToolRequests) -> DeferredToolResults | None:
        approvals: dict[str, bool | ToolDenied] = {}
        for call in requests.approvals:
            arguments = requests.validated_args.get(call.tool_call_id) or Arguments(call.args).value()
            answer = await approval(call.tool_name, arguments)
            self.approvals.append((call.tool_call_id, call.tool_name, answer))
            approvals[call.tool_call_id] = True if answer.given else ToolDenied()
        answers: dict[str, Any] = {}
        for call in requests.calls:
            if requests.kind(call.tool_call_id) == "question":
                question, options = _question(Arguments(call.args).value())
                answers[call.tool_call_id] = await asking().answer(question, options)
        if not approvals and not answers:
            return None  # none of the person's to answer
        return requests.build_results(approvals=approvals, calls=answers)


def _question(arguments: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """A question a tool call asks, and the options it offers: its ``question`` argument (the
    call's arguments as JSON where it has none) and its ``options`` (each text, or an option's
    ``label``)."""
    question = arguments.get("question")
    text = question if isinstance(question, str) else json.dumps(plain(arguments))
    given = arguments.get("options")
    options = tuple(str(one.get("label", one)) if isinstance(one, dict) else str(one) for one in given) if isinstance(given, list) else ()
    return text, options


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
    shadowed = {tool.name: tool for toolset in agent.toolsets if isinstance(toolset, FunctionToolset) for tool in toolset.tools.values()}
    declared = []
    for name, tool in box.tools.items():
        made = pydantic_ai.Tool.from_schema(_invoked(name), name, tool.description or None, tool.function()["function"]["parameters"])
        # It asks before the scenario's as before its own (``requires_approval``); a tool of the
        # agent's that raises ``ApprovalRequired`` in its body asks no more, its body not run.
        made.requires_approval = bool(getattr(shadowed.get(name), "requires_approval", False))
        declared.append(made)
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


def _answer(result: Any, prices: Prices, wire: list[Any], approvals: list[tuple[str, str, Approval]]) -> Answer:
    """The answer of one run: its text, each request's usage, its steps. A call's result is the
    one returned for its id after the response that made it, before the next (a service may
    number its calls anew in each response); a return pydantic-ai marks as not a success (a
    ModelRetry, a tool that failed) and a retry prompt (arguments that did not validate) are the
    call's error. A call the run paused to ask about records the answer (``approvals``, taken in
    the order asked by its id and tool); a denied one, the error that it was not run."""
    usages: list[Usage] = []
    steps: list[Thought | Call] = []
    pending: dict[str, int] = {}  # the calls of the latest response, by id: their place in steps
    waiting = list(approvals)
    denied: dict[int, str] = {}  # the denied calls' places in steps: the error each is kept with
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
                            found = next((one for one in waiting if one[:2] == (identity, name)), None)
                            if found is not None:
                                waiting.remove(found)
                                if not found[2].given:
                                    denied[len(steps)] = found[2].error
                            steps.append(Call(name, Arguments(part.args).value(), approval=found[2].mark if found is not None else ""))
                        case _:
                            pass
            case said.ModelRequest(parts=asked):
                for answer in asked:
                    match answer:
                        case said.ToolReturnPart(tool_call_id=identity, content=content) if identity in pending:
                            at = pending.pop(identity)
                            failed = getattr(answer, "outcome", "success") not in ("success", None)
                            answered = {"error": denied.get(at, str(content))} if failed else {"result": Reported(plain(content))}
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
