"""The Chat Completions format, read where it enters.

``Completion`` reads a server's reply — its text, its reasoning, its tool calls and its usage —
into convy's types, with the cost the provider reported (OpenRouter's ``usage.cost``) or one
computed from the project's ``Prices``; a request with no known price is ``Unpriced``, never free.
``Chunks`` puts the server-sent chunks of a streamed reply together into one reply.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Literal

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
    name: str | None = None
    arguments: Any = None


class _ToolCall(msgspec.Struct, frozen=True):
    function: _Function = _Function()


class _Message(msgspec.Struct, frozen=True):
    content: Any = None
    refusal: Any = None
    tool_calls: list[_ToolCall] | None = None
    reasoning: str | None = None
    reasoning_content: str | None = None


class _Choice(msgspec.Struct, frozen=True):
    message: _Message = _Message()
    finish_reason: str | None = None


class _Completion(msgspec.Struct, frozen=True):
    """A chat completion as the server writes it; ``None`` stands for its ``null``s. Its usage is
    read field by field, so one bad field loses only itself, never the reply."""

    choices: list[_Choice]
    usage: Any = None
    model: str | None = None


class _Count(msgspec.Struct, frozen=True):
    """A token count as a service gives it: a whole number of 0 or more, or else not reported."""

    given: Any

    def value(self) -> int | NotReported:
        match self.given:
            case bool():
                return NotReported()
            case int(count) if count >= 0:
                return count
            case float(count) if count >= 0 and count.is_integer():
                return int(count)
            case _:
                return NotReported()


class _Content(msgspec.Struct, frozen=True):
    """A message's content as a server gives it: text, ``null``, or a list of parts whose text
    parts (``{"type": "text", "text": ...}``) are the text, in order."""

    given: Any

    def text(self) -> str:
        match self.given:
            case None:
                return ""
            case str(text):
                return text
            case list(parts):
                return "".join(self._part(part) for part in parts)
            case _:
                raise ModelFailure(f"the message's content is {type(self.given).__name__}, neither text nor a list of parts")

    def _part(self, part: Any) -> str:
        match part:
            case str(text):
                return text
            case {"type": "text", "text": str(text)}:
                return text
            case _:
                return ""


class ReplyParts(msgspec.Struct, frozen=True):
    """What a chat completion said, in convy's types: the text, the usage with its cost, the
    thought and tool calls as an agent's steps, and why it ended (its ``finish_reason``: "" when
    the service did not say; ``length`` and ``content_filter`` mean the text was cut)."""

    text: str
    usage: Usage | NoUsage
    steps: tuple[Thought | Call, ...]
    finish: str = ""


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
    """A Chat Completions reply, read into convy's types where it enters; ``headers`` are its
    response's, where LiteLLM's proxy gives the cost of a reply that is not streamed."""

    reply: Any
    model: str = ""
    prices: Prices = Prices()
    headers: dict[str, str] = {}

    def read(self) -> ReplyParts:
        """The reply's text, usage and steps; a reply of another shape, or an error in place of
        a reply, is a ``ModelFailure``. Usage is optional: a field missing or wrong is not reported."""
        match self.reply:
            case {"error": error} if error:
                raise ModelFailure("the reply is an error object, not a chat completion")
        try:
            completion = msgspec.convert(self.reply, _Completion)
        except msgspec.ValidationError as error:
            raise ModelFailure(f"the reply is not a chat completion: {error}") from None
        if not completion.choices:
            raise ModelFailure("the reply is a chat completion with no choices")
        choice = completion.choices[0]
        if choice.finish_reason == "error":
            raise ModelFailure('the reply ended in an error (finish_reason "error"): it may be cut short')
        message = choice.message
        thought = message.reasoning or message.reasoning_content or ""
        steps: list[Thought | Call] = [Thought(thought)] if thought else []
        steps.extend(
            Call(call.function.name or "", Arguments(call.function.arguments).value()) for call in message.tool_calls or []
        )
        text = _Content(message.content).text() or _Content(message.refusal).text()
        return ReplyParts(text, self._usage(completion), tuple(steps), choice.finish_reason or "")

    def _usage(self, completion: _Completion) -> Usage | NoUsage:
        """The usage as reported, field by field: a count that is missing or wrong is not
        reported, and the rest is kept (``Usage.unreported``); with neither count nor a cost
        reported, there is no usage. Only a request with both counts can be priced from the
        table; the provider's own cost is kept whatever else is missing."""
        match completion.usage:
            case dict(counted):
                pass
            case _:
                return NoUsage()
        given = _Count(counted.get("prompt_tokens")).value()
        taken = _Count(counted.get("completion_tokens")).value()
        cached = _Count(self._detail(counted, "prompt_tokens_details", "cached_tokens")).value()
        reasoning = _Count(self._detail(counted, "completion_tokens_details", "reasoning_tokens")).value()
        cost = self._reported(counted.get("cost"))
        match given, taken, cost:
            case int(), int(), None:
                return Usage(given, taken, cached, reasoning, self._priced(completion, given, taken, cached))
            case int(), int(), Cost():
                return Usage(given, taken, cached, reasoning, cost)
            case NotReported(), NotReported(), None:
                return NoUsage()
        unreported: list[Literal["input", "output"]] = []
        match given:
            case NotReported():
                unreported.append("input")
                given = 0
            case int():
                pass
        match taken:
            case NotReported():
                unreported.append("output")
                taken = 0
            case int():
                pass
        return Usage(given, taken, cached, reasoning, cost or Unpriced(), tuple(unreported))

    def _reported(self, in_usage: Any) -> Cost | None:
        return reported(in_usage, self.headers)

    def _detail(self, counted: dict[str, Any], details: str, name: str) -> Any:
        match counted.get(details):
            case dict(found):
                return found.get(name)
            case _:
                return None

    def _priced(self, completion: _Completion, given: int, taken: int, cached: int | NotReported) -> Cost | Unpriced:
        match cached:
            case int():
                served = min(cached, given)
            case NotReported():
                served = 0
        return self.prices.cost(self.model or completion.model or "", given, taken, served)


class Chunks(msgspec.Struct, frozen=True):
    """Server-sent chunks of a streamed chat completion, put together into one completion.

    The stream is whole when it ended with ``[DONE]`` (``JsonConnection.events`` holds it to
    that): a last chunk whose ``finish_reason`` is ``null`` is taken as the end all the same, as
    OpenAI's own client takes it (some servers never send one). A finish reason ``"error"`` means
    the reply may be cut short, and it is a ``ModelFailure``; ``length`` and ``content_filter`` are
    kept as the finish, for whoever reads the reply to decide.
    """

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
                    text.append(_Content(delta.get("content")).text())
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
        if finish == "error":
            raise ModelFailure('the streamed reply ended in an error (finish_reason "error"): it may be cut short')
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
                function: Any = rest.get("function") or {}
                call["function"]["name"] += function.get("name") or ""
                call["function"]["arguments"] += function.get("arguments") or ""
            case _:
                pass


def reported(in_usage: Any, headers: Mapping[str, str]) -> Cost | None:
    """The cost the provider reported for a reply: in its usage (``in_usage``: OpenRouter's, a
    streamed reply of LiteLLM's proxy) or in the ``x-litellm-response-cost`` header; ``None`` when
    neither says."""
    given = in_usage
    if in_usage is None:
        header = headers.get("x-litellm-response-cost", "")
        try:
            given = float(header)
        except ValueError:
            return None
    match given:
        case bool():
            return None
        case int() | float() as amount if math.isfinite(amount) and amount >= 0:
            return Cost(Decimal(str(amount)), "provider")
        case _:
            return None
