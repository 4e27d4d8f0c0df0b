"""JSON over HTTP: the one place where httpx2 meets convy.

``JsonEndpoint`` says where and how to post (URL, headers, TLS, timeout); ``JsonConnection`` is an
open client that posts JSON and reads JSON or server-sent events back. Every error of the
transport is translated here, once:

- 429 and 503 — the service refused the request before acting on it — raise ``Busy`` with the
  wait it asked for (``Retry-After`` in seconds or as an HTTP date, or ``retry-after-ms``);
- any other status, a read timeout, a connection that could not be made or broke, or a body that
  is not JSON raise ``HttpFailure``: the service may have acted on the request, so it is never
  sent again.

Errors show the URL without its query string (which may hold a key) and never a header value.

``JsonAgent`` is an agent behind such an endpoint, described by a body template and paths into
its reply; ``ChatAgent`` is an agent that itself speaks Chat Completions.
"""

from __future__ import annotations

import email.utils
import functools
import hashlib
import math
import re
import ssl
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import msgspec

from convy.agent import AgentFailure, Answer, Call, Message, NotReported, NoUsage, Reported, Thought, Usage
from convy.busy import Busy
from convy.chat import Arguments, Completion
from convy.problems import ModelFailure
from convy.quota import TOLD, Heard, NoQuota, Quota


class HttpFailure(Exception):
    """A request failed in a way that may have reached the service: never sent again."""


class Tls(msgspec.Struct, frozen=True):
    """TLS settings: a CA bundle to trust, and a client certificate with its key."""

    ca: str = ""
    cert: str = ""
    key: str = ""

    @functools.cache  # noqa: B019 - a frozen Tls is its own key; the files are read once per Tls
    def context(self) -> ssl.SSLContext:
        """The SSL context these settings make, made once per settings (loading a CA store costs
        tens of milliseconds, and a JsonAgent opens a client per conversation); without a CA or a
        certificate, the system's trust, as httpx2 makes it."""
        if not (self.ca or self.cert):
            return httpx2.create_ssl_context(verify=True, trust_env=False)
        for name in ("ca", "cert", "key"):
            path = getattr(self, name)
            if path and not Path(path).is_file():
                raise HttpFailure(f"TLS {name} file not found: {path}")
        try:
            context = ssl.create_default_context(cafile=self.ca or None)
        except (ssl.SSLError, OSError) as error:
            raise HttpFailure(f"TLS ca file cannot be used: {self.ca}: {error}") from None
        if self.cert:
            try:
                context.load_cert_chain(self.cert, self.key or None)
            except (ssl.SSLError, OSError) as error:
                raise HttpFailure(f"TLS cert or key file cannot be used: {self.cert}: {error}") from None
        return context


class RetryAfter(msgspec.Struct, frozen=True):
    """How long a refusing service asked to wait, read from its response headers."""

    headers: Any

    def seconds(self) -> float | None:
        milliseconds = self.headers.get("retry-after-ms")
        if milliseconds:
            try:
                return max(0.0, float(milliseconds) / 1000)
            except ValueError:
                pass
        given = self.headers.get("retry-after")
        if not given:
            return None
        try:
            return max(0.0, float(given))
        except ValueError:
            pass
        try:
            moment = email.utils.parsedate_to_datetime(given)
        except (TypeError, ValueError):
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return max(0.0, (moment - datetime.now(UTC)).total_seconds())


class RateHeaders(msgspec.Struct, frozen=True):
    """What a response's headers say is left of the service's limits, as OpenAI-compatible
    services send it: ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}``, the reset as a
    duration such as "1s", "6m0s", "20ms" or "1.5"."""

    headers: Any

    def heard(self) -> Heard:
        return Heard(self._quota("requests"), self._quota("tokens"))

    def _quota(self, kind: str) -> Quota | NoQuota:
        remaining = _number(self.headers.get(f"x-ratelimit-remaining-{kind}"))
        reset = _duration(self.headers.get(f"x-ratelimit-reset-{kind}"))
        if remaining is None or reset is None:
            return NoQuota()
        return Quota(remaining, reset, _number(self.headers.get(f"x-ratelimit-limit-{kind}")) or 0.0)


_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s|us|µs|ns)")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def _number(text: str | None) -> float | None:
    """A header's non-negative number, or None when it is missing or not one."""
    try:
        value = float(text) if text else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) and value >= 0 else None


def _duration(text: str | None) -> float | None:
    """Seconds of a duration such as "6m0s", "20ms" or a bare "1.5"; None when unreadable."""
    if not text:
        return None
    bare = _number(text.strip())
    if bare is not None:
        return bare
    parts = _DURATION.findall(text.strip())
    if not parts or "".join(number + unit for number, unit in parts) != text.strip():
        return None
    return sum(float(number) * _UNITS[unit] for number, unit in parts)


class JsonEndpoint(msgspec.Struct, frozen=True):
    """Where JSON is posted: the URL, headers (which may hold keys: never shown), TLS, a timeout."""

    url: str
    headers: dict[str, str] = {}
    tls: Tls = Tls()
    timeout: float = 120.0

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url: must start with http:// or https://, not {self.shown()!r}")
        if self.timeout <= 0:
            raise ValueError("timeout: must be more than 0")

    def __repr__(self) -> str:
        return f"JsonEndpoint({self.shown()!r}, headers=<{len(self.headers)} hidden>, timeout={self.timeout:g})"

    def shown(self) -> str:
        """The URL as errors show it: without its query or a user and password, which may hold a key."""
        bare = self.url.split("?", 1)[0].split("#", 1)[0]
        scheme, _, rest = bare.partition("://")
        host, slash, path = rest.partition("/")
        return f"{scheme}://{host.rpartition('@')[2]}{slash}{path}"

    def limited_by(self) -> str:
        """Whose limit this endpoint's requests count against, taken to be one per address and
        key: the scheme, host and port, and a digest of the headers (which hold the key)."""
        scheme, _, rest = self.url.partition("://")
        host = rest.split("/", 1)[0].split("?", 1)[0].rpartition("@")[2]
        digest = hashlib.sha256("\n".join(sorted(self.headers.values())).encode()).hexdigest()
        return f"{scheme}://{host} {digest[:16]}"

    def at(self, path: str) -> str:
        """The URL with ``path`` added to its path, before its query."""
        if not path:
            return self.url
        base, mark, query = self.url.partition("?")
        return base.rstrip("/") + path + mark + query

    @asynccontextmanager
    async def connection(self, connections: int = 1) -> AsyncIterator[JsonConnection]:
        """An open client for this endpoint, kept for as long as the block runs."""
        opened = self.opened(connections)
        async with opened.client:
            yield opened

    def opened(self, connections: int) -> JsonConnection:
        """An open client for this endpoint with up to ``connections`` connections, for its owner
        to keep (a model keeps one for all its requests in an event loop)."""
        client = httpx2.AsyncClient(
            headers=self.headers,
            verify=self.tls.context(),
            timeout=httpx2.Timeout(self.timeout),
            limits=httpx2.Limits(max_connections=connections, max_keepalive_connections=min(connections, 64)),
            trust_env=False,
        )
        return JsonConnection(self, client)


class JsonConnection(msgspec.Struct, frozen=True):
    """An open connection to a JSON endpoint."""

    endpoint: JsonEndpoint
    client: Any

    async def posted(self, body: Any, path: str = "") -> Any:
        """The JSON the endpoint answers ``body`` with (posted to the URL, plus ``path``)."""
        url = self.endpoint.at(path)
        try:
            response = await self.client.post(url, content=msgspec.json.encode(body), headers=self._json())
            self._checked(response, path)
            return msgspec.json.decode(response.content)
        except msgspec.DecodeError as error:
            raise HttpFailure(f"POST {self._shown(path)}: the reply is not JSON: {error}") from None
        except httpx2.HTTPError as error:
            raise self._failure(error, path) from None

    async def events(self, body: Any, path: str = "") -> AsyncIterator[Any]:
        """Each server-sent event's JSON the endpoint streams for ``body``, until ``[DONE]``."""
        url = self.endpoint.at(path)
        try:
            async with self.client.stream("POST", url, content=msgspec.json.encode(body), headers=self._json()) as response:
                if response.status_code >= 400:
                    await response.aread()
                self._checked(response, path)
                done = False
                # Read on past "[DONE]" to the end of the body, so the connection goes back to the
                # pool instead of being closed half-read.
                async for event in httpx2.EventSource(response).__aiter__():
                    if done or event.data.strip() == "[DONE]":
                        done = True
                    elif event.data.strip():
                        yield msgspec.json.decode(event.data)
        except msgspec.DecodeError as error:
            raise HttpFailure(f"POST {self._shown(path)}: an event is not JSON: {error}") from None
        except httpx2.HTTPError as error:
            raise self._failure(error, path) from None

    def _json(self) -> dict[str, str]:
        return {"content-type": "application/json"}

    def _shown(self, path: str) -> str:
        return JsonEndpoint(self.endpoint.at(path)).shown()

    def _checked(self, response: Any, path: str) -> None:
        told = TOLD.get()
        if told is not None:
            told.heard = RateHeaders(response.headers).heard()
            told.service = self.endpoint.limited_by()
        status = response.status_code
        if status in (429, 503):
            raise Busy(f"POST {self._shown(path)}: {status} {response.reason_phrase}", RetryAfter(response.headers).seconds())
        if status >= 400:
            raise HttpFailure(f"POST {self._shown(path)}: {status} {response.reason_phrase}{self._said(response)}")

    def _said(self, response: Any) -> str:
        """The start of an error's body, which usually says what was wrong; a proxy may echo the
        request, so the endpoint's own header values and anything shaped like a key are blotted."""
        try:
            text = response.text.strip()[:300]
        except (httpx2.HTTPError, UnicodeDecodeError):
            return ""
        for value in self.endpoint.headers.values():
            for part in [value, *value.split()]:
                if len(part) >= 8:
                    text = text.replace(part, "<hidden>")
        text = re.sub(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+", r"\1 <hidden>", text)
        text = re.sub(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{8,}", "<hidden>", text)
        return f": {text}" if text else ""

    def _failure(self, error: Exception, path: str) -> HttpFailure:
        where = f"POST {self._shown(path)}"
        match error:
            case httpx2.ConnectTimeout() | httpx2.ConnectError():
                return HttpFailure(f"{where}: could not connect ({self._why(error)})")
            case httpx2.ReadTimeout():
                return HttpFailure(
                    f"{where}: no answer within {self.endpoint.timeout:g} s; the service may have acted, so it is not sent again"
                )
            case httpx2.RemoteProtocolError() | httpx2.ReadError() | httpx2.WriteError():
                tls = (
                    "; over TLS, a server that requires a client certificate breaks off like this when it gets none it trusts"
                    if self.endpoint.url.startswith("https://")
                    else ""
                )
                return HttpFailure(f"{where}: the connection broke before the whole answer came ({self._why(error)}){tls}")
            case _:
                return HttpFailure(f"{where}: {type(error).__name__}")

    def _why(self, error: Exception) -> str:
        # The text of a failed connection or read comes from the OS or the TLS library (such as
        # "certificate verify failed"), never from the request: it holds no header value.
        text = str(error).strip()
        return f"{type(error).__name__}: {text[:200]}" if text else type(error).__name__


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
        given, taken = self._count(self.input, reply), self._count(self.output, reply)
        match given, taken:
            case NotReported(), NotReported():
                return NoUsage()
        return Usage(
            input=self._whole(given),
            output=self._whole(taken),
            cached=self._count(self.cached, reply),
            reasoning=self._count(self.reasoning, reply),
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


class BodyTemplate(msgspec.Struct, frozen=True):
    """A JSON body template: ``"{{ text }}"``, ``"{{ session }}"`` and ``"{{ history }}"`` are
    replaced by the user's message, the conversation's id and its messages so far."""

    body: Any

    def filled(self, text: str, session: str, history: list[dict[str, str]]) -> Any:
        return self._walked(self.body, text, session, history)

    def _walked(self, value: Any, text: str, session: str, history: list[dict[str, str]]) -> Any:
        match value:
            case dict():
                return {key: self._walked(item, text, session, history) for key, item in value.items()}
            case list():
                return [self._walked(item, text, session, history) for item in value]
            case str() if value.replace(" ", "") == "{{history}}":
                return history
            case str():
                return value.replace("{{ text }}", text).replace("{{text}}", text).replace(
                    "{{ session }}", session
                ).replace("{{session}}", session)
            case _:
                return value


class _JsonConversation:
    """An open conversation with a ``JsonAgent``: its session id and what was said so far."""

    def __init__(self, agent: JsonAgent, connection: JsonConnection) -> None:
        self._agent = agent
        self._connection = connection
        self._session = uuid.uuid4().hex
        self._history: list[dict[str, str]] = []

    async def turn(self, message: Message) -> Answer:
        history = [*self._history, {"role": "user", "content": message.text}]
        body = BodyTemplate(self._agent.body).filled(message.text, self._session, history)
        reply = await self._connection.posted(body)
        answer = self._agent.answer(reply)
        self._history = [*history, {"role": "assistant", "content": answer.text}]
        return answer


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

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[_JsonConversation]:
        async with self.endpoint.connection() as connection:
            yield _JsonConversation(self, connection)

    def answer(self, reply: Any) -> Answer:
        """The answer in an endpoint's reply; a reply of the wrong shape is an ``AgentFailure``."""
        try:
            text = JsonPath(self.reply).found(reply)
        except KeyError as error:
            raise AgentFailure(f"{self.endpoint.shown()}: reply path {error.args[0]}") from None
        match text:
            case str():
                pass
            case _:
                raise AgentFailure(f"{self.endpoint.shown()}: reply path {self.reply}: not text")
        return Answer(text, self.tokens.usage(reply), self._thoughts(reply) + self._calls(reply))

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
    """An open conversation with a ``ChatAgent``: the messages sent so far."""

    def __init__(self, agent: ChatAgent, connection: JsonConnection) -> None:
        self._agent = agent
        self._connection = connection
        self._messages: list[dict[str, Any]] = (
            [{"role": "system", "content": agent.system}] if agent.system else []
        )

    async def turn(self, message: Message) -> Answer:
        messages = [*self._messages, {"role": "user", "content": message.text}]
        reply = await self._connection.posted({"model": self._agent.model, "messages": messages, **self._agent.extra})
        answer = self._agent.answer(reply)
        self._messages = [*messages, {"role": "assistant", "content": answer.text}]
        return answer


class ChatAgent(msgspec.Struct, frozen=True):
    """An agent that itself speaks Chat Completions: the whole history is sent each turn, and the
    tool calls it reports (``tool_calls``) become the answer's steps."""

    endpoint: JsonEndpoint
    model: str
    system: str = ""
    extra: dict[str, Any] = {}

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[_ChatConversation]:
        async with self.endpoint.connection() as connection:
            yield _ChatConversation(self, connection)

    def answer(self, reply: Any) -> Answer:
        try:
            read = Completion(reply).read()
            return Answer(read.text, read.usage, read.steps)
        except ModelFailure as failure:
            raise AgentFailure(f"{self.endpoint.shown()}: {failure}") from None
