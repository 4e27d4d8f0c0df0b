"""Agents reached over HTTP: ``JsonAgent`` (any JSON API, described by a body template and paths into its reply) and ``ChatAgent`` (one that speaks Chat Completions)."""

from __future__ import annotations

import importlib.util
import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import msgspec

from convy.agent import AgentFailure, Answer, Call, Message, NotReported, NoUsage, Reported, Thought, Usage
from convy.chat import Arguments, Chunks, Completion, Prices
from convy.http import JsonConnection, JsonEndpoint
from convy.problems import HttpFailure, ModelFailure, Outside
from convy.slots import Slotted, nearest
from convy.tools import TOOLS
from convy.tracecontext import TRACED


class JsonPath(msgspec.Struct, frozen=True):
    """A dotted path into JSON, such as ``choices.0.message.content``; ``""`` is the whole value."""

    text: str

    def found(self, value: Any) -> Any:
        """The value at this path; a missing step is a ``KeyError`` that names it."""
        here = value
        walked: list[str] = []
        for step in [part for part in self.text.split(".") if part]:
            match here:
                case dict() if step in here:
                    here = here[step]
                case list() if step.lstrip("-").isdigit() and -len(here) <= int(step) < len(here):
                    here = here[int(step)]
                case _:
                    at = ".".join(walked) or "the reply"
                    raise KeyError(f"{self.text}: no {step!r} in {at}")
            walked.append(step)
        return here

    def optional(self, value: Any) -> Any:
        """The value at this path, or ``None`` when the path is empty or not there."""
        if not self.text:
            return None
        try:
            return self.found(value)
        except KeyError:
            return None


class TokenPaths(msgspec.Struct, frozen=True):
    """Where an agent's reply gives its tokens; an empty path is a count the agent does not give."""

    input: str = ""
    output: str = ""
    cached: str = ""
    reasoning: str = ""

    def usage(self, reply: Any) -> Usage | NoUsage:
        """The reply's usage, count by count: a count whose path is not set, or whose path finds
        no count (missing, ``null``, not a whole number), is not reported (``Usage.unreported``),
        never a count of 0, and the other is kept; with neither count there is no usage."""
        given, taken = self._count(self.input, reply), self._count(self.output, reply)
        unreported: list[Literal["input", "output"]] = []
        match given:
            case NotReported():
                unreported.append("input")
            case int():
                pass
        match taken:
            case NotReported():
                unreported.append("output")
            case int():
                pass
        if len(unreported) == 2:
            return NoUsage()
        return Usage(
            input=self._whole(given),
            output=self._whole(taken),
            cached=self._count(self.cached, reply),
            reasoning=self._count(self.reasoning, reply),
            unreported=tuple(unreported),
        )

    def _count(self, path: str, reply: Any) -> int | NotReported:
        match JsonPath(path).optional(reply):
            case bool():
                return NotReported()
            case int(count) if count >= 0:
                return count
            case _:
                return NotReported()

    def _whole(self, count: int | NotReported) -> int:
        match count:
            case int():
                return count
            case NotReported():
                return 0


# The slots of a JSON agent's body, each with what it holds: docs/protocols.md lists these.
BODY_SLOTS: dict[str, str] = {
    "text": "the user's message of this turn",
    "session": "the conversation's id: 32 hex digits, new for every attempt",
    "turn": "the turn's number, from 1",
    "history": 'every message so far, this turn\'s included, oldest first: [{"role": "user", "content": "..."}, '
    '{"role": "assistant", "content": "..."}, ...]',
    "tools_url": "the address of an MCP server (Streamable HTTP) of the scenario's tools, fresh for every attempt; "
    '"" where the scenario declares none (docs/tools.md)',
}


# Slots a body is likely to be written with, and the one each means.
_MEANT = {
    "message": "text", "input": "text", "query": "text", "prompt": "text", "content": "text", "user": "text",
    "messages": "history", "conversation": "history", "session_id": "session", "id": "session",
    "conversation_id": "session", "thread": "session",
}


# A value that is a slot written with one brace, as Python's format writes it: ``{text}``,
# ``{ message }``. Within more text, single braces are the author's own and sent as written.
_SINGLE = re.compile(r"\{\s*(\w+)\s*\}")


class BodyTemplate(msgspec.Struct, frozen=True):
    """A JSON body template, its text values slotted as ``BODY_SLOTS`` say. A value that is one
    slot alone takes the slot's value as it is (``"{{ history }}"`` the list, ``"{{ turn }}"``
    a number); a slot within more text is written as text (the history as its JSON)."""

    body: Any

    def problem(self) -> str:
        """What is wrong with the template's slots, naming the field, or "": a slot unknown or
        written with one brace, or a body that would never carry the user's words."""
        problem = self._problem(self.body, "body")
        if problem:
            return problem
        if not {"text", "history"} & self._slots(self.body):
            return "body: no {{ text }} nor {{ history }}: the user's messages would never be sent; put {{ text }} where the agent reads a message"
        if self.serves() and importlib.util.find_spec("mcp") is None:
            return "body: {{ tools_url }} serves the scenario's tools over MCP, which needs convy's mcp extra: pip install 'convy[mcp]'"
        return ""

    def serves(self) -> bool:
        """Whether the body sends the address of the scenario's tools (``{{ tools_url }}``)."""
        return "tools_url" in self._slots(self.body)

    def _slots(self, value: Any) -> set[str]:
        match value:
            case dict():
                return {slot for item in value.values() for slot in self._slots(item)}
            case list():
                return {slot for item in value for slot in self._slots(item)}
            case str():
                return set(Slotted(value).slots())
            case _:
                return set()

    def _problem(self, value: Any, field: str) -> str:
        match value:
            case dict():
                for key, item in value.items():
                    if isinstance(key, str) and (Slotted(key).slots() or Slotted(key).stray()):
                        return f"{field}: a key is sent as written: slots fill values only, not {key!r}"
                    problem = self._problem(item, f"{field}.{key}")
                    if problem:
                        return problem
            case list():
                for number, item in enumerate(value):
                    problem = self._problem(item, f"{field}[{number}]")
                    if problem:
                        return problem
            case str():
                slotted = Slotted(value)
                stray = slotted.stray()
                if stray:
                    return f"{field}: {stray}"
                single = _SINGLE.fullmatch(value.strip())
                if single and (single.group(1) in BODY_SLOTS or single.group(1) in _MEANT):
                    meant = _MEANT.get(single.group(1), single.group(1))
                    return f"{field}: {single.group(0)} is sent as written: a slot has two braces, {{{{ {meant} }}}}"
                for name in sorted(slotted.slots() - set(BODY_SLOTS)):
                    meant = _MEANT.get(name) or nearest(name, BODY_SLOTS)
                    hint = f" (for {{{{ {meant} }}}}?)" if meant else ""
                    known = ", ".join("{{ " + slot + " }}" for slot in BODY_SLOTS)
                    return f"{field}: no slot {{{{ {name} }}}} in a JSON agent's body{hint}: its slots are {known}"
            case _:
                pass
        return ""

    def filled(self, text: str, session: str, history: list[dict[str, str]], tools_url: str = "") -> Any:
        values = {"text": text, "session": session, "turn": (len(history) + 1) // 2, "history": history, "tools_url": tools_url}
        return self._walked(self.body, values)

    def _walked(self, value: Any, values: dict[str, Any]) -> Any:
        match value:
            case dict():
                return {key: self._walked(item, values) for key, item in value.items()}
            case list():
                return [self._walked(item, values) for item in value]
            case str() if Slotted(value).alone() in values:
                return values[Slotted(value).alone()]
            case str():
                return Slotted(value).filled(values, _written)
            case _:
                return value


def _written(value: Any) -> str:
    """A slot's value written within a text: the history as its JSON."""
    match value:
        case list():
            return msgspec.json.encode(value).decode()
        case _:
            return str(value)


class _JsonConversation:
    """An open conversation with a ``JsonAgent``: its session id and what was said so far."""

    def __init__(self, agent: JsonAgent, connection: JsonConnection) -> None:
        self._agent = agent
        self._connection = connection
        self._session = uuid.uuid4().hex
        self._history: list[dict[str, str]] = []
        self._template = BodyTemplate(agent.body)
        self._serves = self._template.serves()

    async def turn(self, message: Message) -> Answer:
        history = [*self._history, {"role": "user", "content": message.text}]
        box = TOOLS.get() if self._serves else None
        url = await box.url() if box is not None else ""  # started at the attempt's first turn, kept for the rest
        body = self._template.filled(message.text, self._session, history, url)
        reply = await self._connection.posted(body, headers=_traceparent())
        answer = self._agent.answer(reply)
        self._history = [*history, {"role": "assistant", "content": answer.text}]
        return answer


def _traceparent() -> dict[str, str] | None:
    """The W3C ``traceparent`` of the turn under way, for the agent's spans to join its attempt's
    trace (issue 30); none outside a turn."""
    traced = TRACED.get()
    return None if traced is None else traced.headers()


def _endpoint(given: Any) -> JsonEndpoint:
    """An agent's endpoint as given: a URL alone (an easy slip beside ``JsonEndpoint(url)``) is
    taken as ``JsonEndpoint(url)``; anything else but an endpoint is refused."""
    match given:  # outside data: the project's agent file
        case JsonEndpoint():
            return given
        case str(url):
            return JsonEndpoint(url)
        case _:
            raise ValueError(f"endpoint: give JsonEndpoint(url) or a URL, not {type(given).__name__}")


def _argued(agent: JsonAgent) -> str:
    """What is wrong with the type of a ``JsonAgent``'s arguments, with the type expected, or "":
    outside data (the project's agent file), checked where it enters."""
    for field, example in (("reply", '"reply"'), ("thoughts", '"thoughts"'), ("calls", '"tool_calls"')):
        given = getattr(agent, field)
        if not isinstance(given, str):
            return f"{field}: must be a path as text, as {field}={example}, not {type(given).__name__}"
    match agent.tokens:
        case TokenPaths():
            pass
        case str(path):
            # JsonAgent(url, body, reply, "tool_calls"): the fourth place is tokens, not calls.
            named = msgspec.json.encode(path).decode()
            return (
                f"tokens: {named} is text, but tokens are TokenPaths(input=..., output=...) "
                f"(the fourth argument is tokens); give the path by name, as calls={named}"
            )
        case _:
            return (
                f'tokens: must be TokenPaths(input="usage.prompt_tokens", output="usage.completion_tokens"), '
                f"not {type(agent.tokens).__name__}"
            )
    for name in TokenPaths.__struct_fields__:
        path = getattr(agent.tokens, name)
        if not isinstance(path, str):
            return f"tokens.{name}: must be a path as text, not {type(path).__name__}"
    match agent.body:
        case str(text) if text.strip()[:1] in ("{", "["):
            try:
                msgspec.json.decode(text)
            except msgspec.DecodeError:
                return ""
            return "body: JSON written as text would be sent as one string: give it as a dict, body={\"message\": \"{{ text }}\"}"
    return ""


class JsonAgent(msgspec.Struct, frozen=True):
    """An agent behind a JSON endpoint, described by where things are.

    ``body`` is the request's template; ``reply`` the path of the answer's text; ``tokens`` where
    its tokens are; ``thoughts`` the path of a text or a list of texts; ``calls`` the path of a list
    of tool calls, each with ``name``, ``arguments`` and optionally ``result`` and ``seconds``.
    A conversation keeps one connection open for all its turns.
    """

    endpoint: JsonEndpoint
    body: Any = msgspec.field(default_factory=lambda: {"message": "{{ text }}", "session": "{{ session }}"})
    reply: str = "reply"
    tokens: TokenPaths = TokenPaths()
    thoughts: str = ""
    calls: str = ""

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "endpoint", _endpoint(self.endpoint))
        problem = _argued(self) or BodyTemplate(self.body).problem()
        if problem:
            raise ValueError(problem)

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[_JsonConversation]:
        async with self.endpoint.connection() as connection:
            yield _JsonConversation(self, connection)

    def answer(self, reply: Any) -> Answer:
        """The answer in an endpoint's reply; a reply of the wrong shape is an ``AgentFailure``."""
        try:
            text = JsonPath(self.reply).found(reply)
        except KeyError as error:
            raise AgentFailure(f"{self.endpoint.shown()}: reply path {error.args[0]}") from error
        match text:
            case str():
                pass
            case _:
                raise AgentFailure(f"{self.endpoint.shown()}: reply path {self.reply}: not text")
        unheld, held = self._unheld(reply)
        return Answer(text, self.tokens.usage(reply), self._thoughts(reply) + self._calls(reply), unheld, held)

    def _unheld(self, reply: Any) -> tuple[str, str]:
        # The calls path when the reply does not hold a list there (a null or an empty list is
        # held), and what it held instead, in a word: a dialogue none of whose replies held one
        # leaves its tool checks undecided.
        if not self.calls:
            return "", ""
        try:
            value = JsonPath(self.calls).found(reply)
        except KeyError:
            return self.calls, ""
        match value:
            case list() | None:
                return "", ""
            case str():
                return self.calls, "text"
            case dict():
                return self.calls, "an object"
            case bool():
                return self.calls, "true or false"
            case _:
                return self.calls, "a number"

    def _thoughts(self, reply: Any) -> tuple[Thought | Call, ...]:
        match JsonPath(self.thoughts).optional(reply):
            case str(text) if text:
                return (Thought(text),)
            case list(texts):
                found: list[Thought | Call] = []
                for text in texts:
                    match text:
                        case str() if text:
                            found.append(Thought(text))
                return tuple(found)
            case _:
                return ()

    def _calls(self, reply: Any) -> tuple[Thought | Call, ...]:
        match JsonPath(self.calls).optional(reply):
            case list(calls):
                return tuple(self._call(call) for call in calls)
            case _:
                return ()

    def _call(self, call: Any) -> Call:
        match call:
            case {"name": str(name), **rest}:
                arguments = Arguments(rest.get("arguments")).value()
                result = Reported(rest["result"]) if "result" in rest else NotReported()
                took: float | NotReported = NotReported()
                match rest.get("seconds"):
                    case bool():
                        pass
                    case int() | float() as seconds:
                        took = float(seconds)
                return Call(name, arguments, result, took)
            case _:
                raise AgentFailure(f"{self.endpoint.shown()}: calls path {self.calls}: a call without a name")


class _ChatConversation:
    """An open conversation with a ``ChatAgent``: the messages of its answered turns. A turn's
    message and reply join them only once the turn is answered, so a turn played again never
    sends the user's message twice."""

    def __init__(self, agent: ChatAgent, connection: JsonConnection) -> None:
        self._agent = agent
        self._connection = connection
        self._messages: list[dict[str, Any]] = (
            [{"role": "system", "content": agent.system}] if agent.system else []
        )

    async def turn(self, message: Message) -> Answer:
        messages = [*self._messages, {"role": "user", "content": message.text}]
        body = self._agent.body(messages)
        try:
            if self._agent.stream:
                events = [event async for event in self._connection.events(body, headers=_traceparent())]
                reply, headers = Chunks(tuple(events)).completion(), {}
            else:
                response = await self._connection.response(body, headers=_traceparent())
                reply, headers = response.value, response.headers
        except HttpFailure as failure:
            # A request the service took, whose reply broke off or could not be read, still
            # counts: one request, its tokens not reported.
            raise AgentFailure(Outside(failure).named(), Answer("", NoUsage()) if failure.reached else None) from failure
        except ModelFailure as failure:
            raise AgentFailure(f"{self._agent.endpoint.shown()}: {failure}", Answer("", NoUsage())) from failure
        answer = self._agent.answer(reply, headers)
        self._messages = [*messages, {"role": "assistant", "content": answer.text}]
        return answer


def _chat_endpoint(given: Any, key: Any) -> JsonEndpoint:
    """A ``ChatAgent``'s endpoint: a URL, or a ``JsonEndpoint``, whose path ending in
    ``/chat/completions`` is the whole endpoint and is otherwise a base URL (as every other
    client's, ``/chat/completions`` added); with ``key``, its authorization header."""
    endpoint = _endpoint(given)
    if not endpoint.url.split("?", 1)[0].split("#", 1)[0].rstrip("/").endswith("/chat/completions"):
        endpoint = msgspec.structs.replace(endpoint, url=endpoint.at("/chat/completions"))
    if key is not None:
        match key:
            case str(text):
                secret = text
            case _ if callable(getattr(key, "get_secret_value", None)):
                secret = key.get_secret_value()
            case _:
                raise ValueError(f"key: give the key as text or a SecretStr, not {type(key).__name__}")
        if not isinstance(secret, str):
            raise ValueError("key: its secret value must be text")
        if secret:
            endpoint = msgspec.structs.replace(endpoint, headers={**endpoint.headers, "authorization": f"Bearer {secret}"})
    return endpoint


class ChatAgent(msgspec.Struct, frozen=True, repr_omit_defaults=True):
    """An agent that itself speaks Chat Completions: the whole history is sent each turn, and the
    tool calls it reports (``tool_calls``) become the answer's calls, so ``called`` checks can be
    decided.

    ``endpoint`` is a URL or a ``JsonEndpoint``: its base URL, as every other client takes it
    (``http://host/v1``; ``/chat/completions`` is added), or the whole endpoint (ending in
    ``/chat/completions``). ``key`` (text, or pydantic's ``SecretStr`` from an ``Env``) goes into
    the authorization header and nowhere else: it is hidden as every header's value is. With
    ``stream`` the reply comes as server-sent events and is put together, usage included;
    ``prices`` prices the tokens a service reports without a cost.
    """

    endpoint: JsonEndpoint
    model: str
    system: str = ""
    extra: dict[str, Any] = {}
    key: Any = None
    stream: bool = False
    prices: Prices = Prices()

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError("model: the model's name on the server is needed, as model=\"gpt-4o-mini\"")
        if self.key is None or isinstance(self.key, str) and self.key == _HIDDEN:  # made already
            msgspec.structs.force_setattr(self, "endpoint", _chat_endpoint(self.endpoint, None))
            return
        msgspec.structs.force_setattr(self, "endpoint", _chat_endpoint(self.endpoint, self.key))
        msgspec.structs.force_setattr(self, "key", _HIDDEN)

    def __repr__(self) -> str:
        return f"ChatAgent({self.endpoint!r}, model={self.model!r})"

    def body(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The request's body for these messages."""
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return {**body, **self.extra}

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[_ChatConversation]:
        async with self.endpoint.connection() as connection:
            yield _ChatConversation(self, connection)

    def answer(self, reply: Any, headers: dict[str, str] | None = None) -> Answer:
        try:
            read = Completion(reply, self.model, self.prices, headers or {}).read()
            return Answer(read.text, read.usage, read.steps)
        except ModelFailure as failure:
            # A reply that came but cannot be read still took a request.
            raise AgentFailure(f"{self.endpoint.shown()}: {failure}", Answer("", NoUsage())) from failure


# What a ChatAgent keeps in place of its key once the key is in its endpoint's header.
_HIDDEN = "<hidden>"
