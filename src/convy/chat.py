"""The Chat Completions format, read where it enters.

``Completion`` reads a server's reply — its text, its reasoning, its tool calls and its usage —
into convy's types, with the cost the provider reported (OpenRouter's ``usage.cost``) or one
computed from the project's ``Prices``; a request with no known price is ``Unpriced``, never free.
``Chunks`` puts the server-sent chunks of a streamed reply together into one reply.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec

from convy.agent import Call, Cost, NotReported, NoUsage, Thought, Unpriced, Usage
from convy.problems import ModelFailure


class Price(msgspec.Struct, frozen=True):
    """A model's prices in US dollars per million tokens; ``cached`` input costs ``input`` when not given."""

    input: Decimal
    output: Decimal
    cached: Decimal | None = None

    def cost(self, input: int, output: int, cached: int) -> Cost:
        million = Decimal(1_000_000)
        rate = self.input if self.cached is None else self.cached
        amount = (Decimal(input - cached) * self.input + Decimal(cached) * rate + Decimal(output) * self.output) / million
        return Cost(amount, "computed")


class Prices(msgspec.Struct, frozen=True):
    """The project's price table, by model name as the server knows it."""

    table: dict[str, Price] = {}

    def cost(self, model: str, input: int, output: int, cached: int) -> Cost | Unpriced:
        price = self.table.get(model)
        if price is None:
            return Unpriced()
        return price.cost(input, output, cached)


class _Function(msgspec.Struct, frozen=True):
    name: str = ""
    arguments: str | None = None


class _ToolCall(msgspec.Struct, frozen=True):
    function: _Function = _Function()


class _Message(msgspec.Struct, frozen=True):
    content: str | None = None
    tool_calls: list[_ToolCall] | None = None
    reasoning: str | None = None
    reasoning_content: str | None = None


class _Choice(msgspec.Struct, frozen=True):
    message: _Message = _Message()
    finish_reason: str | None = None


class _PromptDetails(msgspec.Struct, frozen=True):
    cached_tokens: int | None = None


class _OutputDetails(msgspec.Struct, frozen=True):
    reasoning_tokens: int | None = None


class _Usage(msgspec.Struct, frozen=True):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _OutputDetails | None = None
    cost: float | None = None


class _Completion(msgspec.Struct, frozen=True):
    """A chat completion as the server writes it; ``None`` stands for its ``null``s."""

    choices: list[_Choice]
    usage: _Usage | None = None
    model: str | None = None


class ReplyParts(msgspec.Struct, frozen=True):
    """What a chat completion said, in convy's types: the text, the usage with its cost, and
    the thought and tool calls as an agent's steps."""

    text: str
    usage: Usage | NoUsage
    steps: tuple[Thought | Call, ...]


class Arguments(msgspec.Struct, frozen=True):
    """A tool call's arguments as a service gives them: a JSON object, as text or already
    decoded; anything else is kept under ``raw`` or ``value`` so it is never lost."""

    given: Any

    def value(self) -> dict[str, Any]:
        decoded = self.given
        match self.given:
            case str(text):
                try:
                    decoded = msgspec.json.decode(text or "{}")
                except msgspec.DecodeError:
                    return {"raw": text}
            case None:
                return {}
        match decoded:
            case dict():
                return decoded
            case _:
                return {"value": decoded}


class Completion(msgspec.Struct, frozen=True):
    """A Chat Completions reply, read into convy's types where it enters."""

    reply: Any
    model: str = ""
    prices: Prices = Prices()

    def read(self) -> ReplyParts:
        """The reply's text, usage and steps; a reply of another shape is a ``ModelFailure``."""
        try:
            completion = msgspec.convert(self.reply, _Completion)
        except msgspec.ValidationError as error:
            raise ModelFailure(f"the reply is not a chat completion: {error}") from None
        if not completion.choices:
            raise ModelFailure("the reply is a chat completion with no choices")
        message = completion.choices[0].message
        thought = message.reasoning or message.reasoning_content or ""
        steps: list[Thought | Call] = [Thought(thought)] if thought else []
        steps.extend(Call(call.function.name, Arguments(call.function.arguments).value()) for call in message.tool_calls or [])
        return ReplyParts(message.content or "", self._usage(completion), tuple(steps))

    def _usage(self, completion: _Completion) -> Usage | NoUsage:
        counted = completion.usage
        if counted is None:
            return NoUsage()
        cached = counted.prompt_tokens_details.cached_tokens if counted.prompt_tokens_details else None
        reasoning = counted.completion_tokens_details.reasoning_tokens if counted.completion_tokens_details else None
        if counted.cost is not None:
            cost: Cost | Unpriced = Cost(Decimal(str(counted.cost)), "provider")
        else:
            cost = self.prices.cost(self.model or completion.model or "", counted.prompt_tokens, counted.completion_tokens, cached or 0)
        return Usage(
            input=counted.prompt_tokens,
            output=counted.completion_tokens,
            cached=NotReported() if cached is None else cached,
            reasoning=NotReported() if reasoning is None else reasoning,
            cost=cost,
        )


class Chunks(msgspec.Struct, frozen=True):
    """Server-sent chunks of a streamed chat completion, put together into one completion."""

    events: tuple[Any, ...]

    def completion(self) -> dict[str, Any]:
        text: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        usage: Any = None
        finish: Any = None
        chunks = 0
        for event in self.events:
            match event:
                case {"choices": [{"delta": dict(delta), **choice}, *_], **rest}:
                    chunks += 1
                    text.append(delta.get("content") or "")
                    reasoning.append(delta.get("reasoning") or delta.get("reasoning_content") or "")
                    for piece in delta.get("tool_calls") or []:
                        self._joined(calls, piece)
                    finish = choice.get("finish_reason") or finish
                    usage = rest.get("usage") or usage
                case {"usage": dict(counted)}:
                    usage = counted
                case _:
                    pass
        if not chunks:
            # A stream of something else is the wrong shape, not an empty reply.
            raise ModelFailure(f"the streamed reply has no chat completion chunk among its {len(self.events)} event(s)")
        message: dict[str, Any] = {"role": "assistant", "content": "".join(text)}
        if any(reasoning):
            message["reasoning"] = "".join(reasoning)
        if calls:
            message["tool_calls"] = [calls[index] for index in sorted(calls)]
        return {"choices": [{"message": message, "finish_reason": finish}], "usage": usage}

    def _joined(self, calls: dict[int, dict[str, Any]], piece: Any) -> None:
        match piece:
            case {"index": int(index), **rest}:
                call = calls.setdefault(index, {"type": "function", "function": {"name": "", "arguments": ""}})
                if rest.get("id"):  # the call's id, which a tool's result must name when sent back
                    call["id"] = rest["id"]
                function = rest.get("function") or {}
                call["function"]["name"] += function.get("name") or ""
                call["function"]["arguments"] += function.get("arguments") or ""
            case _:
                pass
