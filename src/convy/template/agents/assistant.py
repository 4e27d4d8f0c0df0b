"""An LLM support agent on the gateway: a system prompt, one tool, and the model deciding.

It is the kind of agent convy is for: a model that talks to the user and calls a tool
(``lookup_order``) on the way. Each turn sends the whole conversation to the gateway; when the
model asks for the tool, the agent runs it and sends the result back, up to three times, and the
answer reports every call as a step, so checks such as ``{called: lookup_order}`` can see it, and
every request's usage (``Requests``), so the run's tokens and cost are what the gateway reported.

Set GATEWAY_URL, GATEWAY_KEY and AGENT_MODEL in .env to run it; until then it is absent and
``convy run`` skips it.
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
    Answer,
    Call,
    Completion,
    JsonEndpoint,
    Message,
    NoUsage,
    OpenAiModel,
    Reported,
    Requests,
    Usage,
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
    """One conversation: the messages sent to the model so far."""

    def __init__(self, model: OpenAiModel, connection: Any) -> None:
        self._model = model
        self._connection = connection
        self._messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]

    async def turn(self, message: Message) -> Answer:
        self._messages.append({"role": "user", "content": message.text})
        steps: list[Call] = []
        spent: list[Usage | NoUsage] = []
        for _ in range(3):
            # The model's own settings (temperature, max tokens, the fields its provider reads,
            # such as OpenRouter's usage with its cost), for a whole reply: no streaming here.
            settings = {key: value for key, value in self._model.body(()).items() if key not in ("stream", "stream_options")}
            body = {**settings, "messages": self._messages, "tools": TOOLS}
            reply = await self._connection.response(body, "/chat/completions")
            read = Completion(reply.value, self._model.name, self._model.prices, reply.headers).read()
            spent.append(read.usage)  # every request's tokens and cost, reported or not
            calls = reply.value["choices"][0]["message"].get("tool_calls") or []
            self._messages.append({"role": "assistant", "content": read.text, **({"tool_calls": calls} if calls else {})})
            if not calls:
                return Answer(read.text, Requests(tuple(spent)), tuple(steps))
            for call in calls:
                started = time.monotonic()
                arguments = json.loads(call["function"].get("arguments") or "{}")
                result = ORDERS.get(str(arguments.get("order", "")).upper(), {"error": "no such order"})
                steps.append(Call("lookup_order", arguments, Reported(result), time.monotonic() - started))
                self._messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": json.dumps(result)})
        return Answer("Sorry, I could not finish looking that up.", Requests(tuple(spent)), tuple(steps))


class Assistant:
    """The agent: one connection to the gateway per conversation."""

    def __init__(self, model: OpenAiModel) -> None:
        self._model = model

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[AssistantConversation]:
        endpoint = JsonEndpoint(
            self._model.base_url.rstrip("/"),
            {"authorization": f"Bearer {self._model.key.get_secret_value()}"},
            timeout=self._model.timeout,
        )
        async with endpoint.connection() as connection:
            yield AssistantConversation(self._model, connection)


gateway = Gateway()
model = gateway.model(gateway.agent_model, "AGENT_MODEL")
match model:
    case OpenAiModel():
        agent: Assistant | Absent = Assistant(model)
    case _:
        agent = model
