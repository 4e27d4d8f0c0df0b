"""An LLM support agent on the gateway: a system prompt, one tool, and the model deciding.

It is the kind of agent convy is for: a model that talks to the user and calls a tool
(``lookup_order``; the scenario's own, where it declares one) on the way. Each turn sends the whole conversation to the gateway; when the
model asks for the tool, the agent runs it and sends the result back, up to three times, and the
answer reports every call as a step, so checks such as ``{called: lookup_order}`` can see it, and
every request's usage (``Requests``), so the run's tokens and cost are what the gateway reported.
A turn's messages join the conversation only once the turn is answered; a request the gateway
refuses (429, 503) is sent again by convy on its own, never the whole turn, and a turn that breaks
off says what it had spent, so no request, token or tool call goes uncounted.

Set GATEWAY_URL, GATEWAY_KEY and AGENT_MODEL in .env to run it (see gateway.py); until then it is
absent and ``convy run`` skips it. Its requests follow the gateway's settings as the models' do:
the reasoning effort (AGENT_EFFORT), streaming and the provider.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from gateway import Gateway

from convy import (
    Absent,
    AgentFailure,
    Answer,
    Busy,
    Call,
    Chunks,
    Completion,
    HttpFailure,
    JsonEndpoint,
    Message,
    NoUsage,
    OpenAiModel,
    Reported,
    Requests,
    ToolError,
    Usage,
    toolbox,
)

SYSTEM = """You are the support assistant of Example Shop. You help with orders and refunds only.
Ask for the order number (a letter, a dash and four digits) before you look anything up.
Use the lookup_order tool to find an order; never guess its status, and never promise a delivery
date. Be brief and polite."""

ORDERS = {
    "A-1043": {"item": "kettle", "status": "delivered", "damaged": True},
    "A-2001": {"item": "headphones", "status": "delivered", "damaged": False},
    "A-3100": {"item": "lamp", "status": "in transit", "damaged": False},
}

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Find an order by its number and return its item and status.",
            "parameters": {
                "type": "object",
                "properties": {"order": {"type": "string", "description": "e.g. A-1043"}},
                "required": ["order"],
            },
        },
    }
]


class AssistantConversation:
    """One conversation: the messages of its answered turns."""

    def __init__(self, model: OpenAiModel, connection: Any) -> None:
        self._model = model
        self._connection = connection
        self._messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]

    async def turn(self, message: Message) -> Answer:
        # The turn's messages join the conversation only once it is answered: a turn played
        # again never sends the user's message twice.
        messages = [*self._messages, {"role": "user", "content": message.text}]
        steps: list[Call] = []
        spent: list[Usage | NoUsage] = []
        try:
            for _ in range(3):
                # The model's own body carries the gateway's settings (effort, streaming, provider),
                # and the fields its provider reads, such as OpenRouter's usage with its cost.
                body = {**self._model.body(()), "messages": messages, "tools": TOOLS}
                try:
                    reply, headers = await self._asked(body)
                    read = Completion(reply, self._model.name, self._model.prices, headers).read()
                except Busy:
                    raise  # refused before the service acted on it: not a request spent
                except Exception:
                    spent.append(NoUsage())  # it reached the service, its reply unread: counted
                    raise
                spent.append(read.usage)  # every request's tokens and cost, reported or not
                calls = reply["choices"][0]["message"].get("tool_calls") or []
                messages.append({"role": "assistant", "content": read.text, **({"tool_calls": calls} if calls else {})})
                if not calls:
                    self._messages = messages
                    return Answer(read.text, Requests(tuple(spent)), tuple(steps))
                for call in calls:
                    started = time.monotonic()
                    arguments = json.loads(call["function"].get("arguments") or "{}")
                    result = await _looked_up(arguments)
                    steps.append(Call("lookup_order", arguments, Reported(result), time.monotonic() - started))
                    messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": json.dumps(result)})
        except Busy as busy:
            # Still refused after convy sent the request again while the agent's patience lasted:
            # the attempt ends, keeping what this turn had spent.
            raise busy.spending(Answer("", Requests(tuple(spent)), tuple(steps))) from None
        except Exception as error:
            unreached = isinstance(error, HttpFailure) and not error.reached
            if unreached and spent:
                spent.pop()  # the request never reached the service
            raise AgentFailure(f"{type(error).__name__}: {error}", Answer("", Requests(tuple(spent)), tuple(steps))) from error
        self._messages = messages
        return Answer("Sorry, I could not finish looking that up.", Requests(tuple(spent)), tuple(steps))

    async def _asked(self, body: dict[str, Any]) -> tuple[Any, dict[str, str]]:
        """The model's reply to ``body`` with its response's headers (LiteLLM's proxy gives a
        cost there), put together from its events when it is streamed."""
        if not self._model.stream:
            response = await self._connection.response(body, "/chat/completions")
            return response.value, response.headers
        events = [event async for event in self._connection.events(body, "/chat/completions")]
        return Chunks(tuple(events)).completion(), {}


class Assistant:
    """The agent: one connection to the gateway per conversation."""

    def __init__(self, model: OpenAiModel) -> None:
        self._model = model

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[AssistantConversation]:
        # A server that needs no key (Ollama, vLLM on your machine) gets no Authorization header.
        key = self._model.key
        headers = {"authorization": f"Bearer {key.get_secret_value()}"} if key else {}
        endpoint = JsonEndpoint(self._model.base_url.rstrip("/"), headers, timeout=self._model.timeout)
        async with endpoint.connection() as connection:
            yield AssistantConversation(self._model, connection)


model = Gateway().model("agent")
match model:
    case OpenAiModel():
        agent: Assistant | Absent = Assistant(model)
    case _:
        agent = model


async def _looked_up(arguments: dict[str, Any]) -> Any:
    """The tool's result: the scenario's own lookup_order where it declares one (its books, which
    it checks afterwards: docs/tools.md), else the table above."""
    try:
        scenario = toolbox()
    except LookupError:
        scenario = None
    if scenario is not None and "lookup_order" in scenario.tools:
        try:
            return await scenario.call("lookup_order", arguments)
        except ToolError as error:
            return {"error": str(error)}
    return ORDERS.get(str(arguments.get("order", "")).upper(), {"error": "no such order"})
