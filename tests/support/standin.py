"""The stand-in: a real HTTP/1.1 server on 127.0.0.1 that convy's HTTP clients are tested against.

Standard library only (plus `trustme` for TLS). An asyncio server with hand-written HTTP/1.1 parsing runs
in a background thread with its own event loop, so that faults can act on the raw socket.

    with StandIn() as server:
        server.url                      # "http://127.0.0.1:PORT" ("https://..." with tls=TLS())
        server.faults(Status(429, retry_after="2"), Drop())
        ...                             # point the client at server.url
        server.received                 # every request, recorded before any fault was applied
        server.counts()                 # Counter of (conversation, newest user message) -> times

Endpoints
    POST  <anything>/chat/completions   OpenAI Chat Completions (e.g. /v1/chat/completions), with "stream"
    POST  /agent  (and /agent/...)      a JSON agent: {"message" | "history", "session"} -> {"output": ...}
    GET   /health                       200 {"ok": true}

Order of work for a request: read it -> record it in `received` -> api key check (401) -> path prefix and
model checks (404, or `unknown_model`'s status) -> rate limit (429) -> take the first queued fault that
matches -> wait `latency` -> answer (normally, or as the fault says).
/health is never rate limited, delayed or faulted, unless a fault names path="/health".

The rate limits read the stand-in's `clock` (time.monotonic unless given): a test of a window that
slides gives a `HandClock` and moves it, so the test does not depend on how fast the machine is.
"""

from __future__ import annotations

import asyncio
import asyncio.selector_events
import email.utils
import inspect
import itertools
import json
import math
import re
import socket
import ssl
import struct
import sys
import threading
import time
import traceback
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

__all__ = [
    "Bucket",
    "Changing",
    "Drop",
    "Echo",
    "Fault",
    "Invalid",
    "NoDone",
    "NoFinish",
    "Limits",
    "Received",
    "SseError",
    "SlowBody",
    "Stall",
    "StandIn",
    "Status",
    "TLS",
    "TLSFiles",
    "Truncated",
    "Window",
    "WrongShape",
    "http_date",
    "judged",
]

REDACTED = "<redacted>"

_REASONS = {
    100: "Continue", 200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
    405: "Method Not Allowed", 408: "Request Timeout", 409: "Conflict", 413: "Payload Too Large",
    422: "Unprocessable Entity", 429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
    503: "Service Unavailable", 504: "Gateway Timeout", 529: "Overloaded",
}
_ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
    429: "rate_limit_exceeded", 500: "server_error", 502: "bad_gateway", 503: "service_unavailable",
    504: "gateway_timeout", 529: "overloaded_error",
}


def http_date(seconds_from_now: float) -> str:
    """An HTTP date (for Retry-After) `seconds_from_now` seconds in the future, e.g. 'Wed, 21 Oct 2026 07:28:00 GMT'."""
    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


# --------------------------------------------------------------------------------------------------- faults


@dataclass(frozen=True)
class Fault:
    """A fault for one coming request. `path` / `conversation` (keyword only) limit which request takes it."""

    path: str | None = field(default=None, kw_only=True)
    conversation: str | None = field(default=None, kw_only=True)

    def matches(self, path: str, conversation: str) -> bool:
        """Whether a request to `path` in `conversation` may take this fault."""
        if self.path is not None and self.path != path:
            return False
        return self.conversation is None or self.conversation == conversation


@dataclass(frozen=True)
class Status(Fault):
    """Answer `code` with a JSON error body (OpenAI shape unless `body` is given).

    retry_after: value of the Retry-After header as given (seconds, or an HTTP date: see http_date()).
    retry_after_ms: value of the retry-after-ms header. headers: more headers to send.
    body: a dict/list (sent as JSON), str or bytes (sent as is).
    """

    code: int = 500
    retry_after: str | int | float | None = None
    retry_after_ms: str | int | float | None = None
    body: Any = None
    headers: dict[str, str] | None = None


@dataclass(frozen=True)
class Echo(Fault):
    """Answer `code` with a body that echoes the request, as a proxy's error page or a verbose server does:
    `pad` filler characters, then the request line (its query included), every header as it came (the
    authorization too) and the request's body. as_json=True sends it as the message of an OpenAI-shaped error
    (so JSON-escaped); `cut` (if given) cuts the body to that many characters, as a server that shortens it."""

    code: int = 400
    pad: int = 0
    as_json: bool = False
    cut: int | None = None


@dataclass(frozen=True)
class Truncated(Fault):
    """200 whose Content-Length is larger than the body sent (half of the real body), then close.

    On a streamed request: the first half of the events, then close without ending the chunked body."""


@dataclass(frozen=True)
class Invalid(Fault):
    """200 (Content-Type: application/json) with a body that is not JSON. Streamed: an event whose data is not JSON."""

    body: bytes = b'{"id": "chatcmpl-broken", "choices": [ this is not json'


@dataclass(frozen=True)
class WrongShape(Fault):
    """200 with valid JSON that is not the expected shape (default {"hello": 1}). Streamed: one such event, then [DONE]."""

    body: Any = None


@dataclass(frozen=True)
class SseError(Fault):
    """A streamed request: the first half of the events, then an error, then [DONE]. The error is an event whose
    JSON holds "error" (as OpenRouter sends it, with finish_reason "error"), or with event=True an SSE event of type
    "error". Not streamed: 200 with an OpenAI error object as the whole body."""

    event: bool = False
    message: str = "upstream provider disconnected"


@dataclass(frozen=True)
class NoDone(Fault):
    """A streamed request: every event but the closing data: [DONE]; the body ends cleanly. Not streamed: no fault."""


@dataclass(frozen=True)
class NoFinish(Fault):
    """A streamed request: every chunk's finish_reason is null (the rest as usual, [DONE] included). Not streamed:
    the choice's finish_reason is null."""


@dataclass(frozen=True)
class SlowBody(Fault):
    """Send the headers at once, then the body in `pieces` pieces, waiting seconds/pieces before each piece."""

    seconds: float = 1.0
    pieces: int = 4


@dataclass(frozen=True)
class Drop(Fault):
    """Read the request, then close the socket without any response. reset=True closes with a TCP RST."""

    reset: bool = False


@dataclass(frozen=True)
class Stall(Fault):
    """Read the request, then send nothing for `seconds` (to trip read timeouts); then answer normally."""

    seconds: float = 1.0


# ------------------------------------------------------------------------------------------------- records


class HandClock:
    """A clock that moves only when told: StandIn(clock=HandClock()), then clock.move(seconds)."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def move(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Received:
    """One request as the stand-in read it.

    headers: lowercased names; the value of `authorization` is replaced by "<redacted>"; repeated headers are
    joined with ", ". json: the parsed body, or None. connection: id of the TCP connection (1, 2, ...).
    conversation: x-conversation header, else body session / session_id / user / metadata.conversation, else "".
    message: text of the newest user message (chat: last role=user message; agent: "message" or last history item).
    kind: "chat", "agent", "health" or "other". time: the stand-in's clock when the request's first bytes were read
    off the socket (as a real edge stamps it); the rate limits count it then.
    Filled in while answering: fault (the Fault applied, or None), refused ("unauthorized" / "rate-limited" / None),
    status (status code sent, None if nothing was sent), client_cert (client certificate identity under mTLS).
    """

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any
    connection: int
    conversation: str
    message: str | None
    kind: str
    time: float
    query: str = ""
    client_cert: str | None = None
    fault: Fault | None = None
    refused: str | None = None
    status: int | None = None
    limit_headers: dict[str, str] | None = None

    @property
    def stream(self) -> bool:
        """Whether the request asked for a streamed answer."""
        return isinstance(self.json, dict) and self.json.get("stream") is True


# ----------------------------------------------------------------------------------------------------- TLS


@dataclass(frozen=True)
class TLSFiles:
    """PEM files written by TLS.write(): ca (bundle to trust), cert + key (client certificate), cert_and_key (both)."""

    ca: Path
    cert: Path
    key: Path
    cert_and_key: Path


class TLS:
    """A test CA (trustme) with a server certificate for 127.0.0.1 / localhost and a client certificate.

    client_cert_required=True: the server requires a client certificate issued by the same CA.
    A second TLS() has a different CA: use it to play an untrusted server or client.
    """

    def __init__(self, *, client_cert_required: bool = False, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")):
        import trustme

        self.client_cert_required = client_cert_required
        self.ca = trustme.CA()
        self.server_cert = self.ca.issue_cert(*hosts)
        self.client_identity = "client@convy.test"
        self.client_cert = self.ca.issue_cert(self.client_identity)
        self._server_context: ssl.SSLContext | None = None

    def server_context(self) -> ssl.SSLContext:
        """The server side context (made once)."""
        if self._server_context is None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.server_cert.configure_cert(ctx)
            if self.client_cert_required:
                ctx.verify_mode = ssl.CERT_REQUIRED
                self.ca.configure_trust(ctx)
            ctx.set_alpn_protocols(["http/1.1"])
            self._server_context = ctx
        return self._server_context

    def client_context(self, *, with_cert: bool = True) -> ssl.SSLContext:
        """A standard library client context trusting this CA, presenting the client certificate if with_cert."""
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        self.ca.configure_trust(ctx)
        if with_cert:
            self.client_cert.configure_cert(ctx)
        return ctx

    def write(self, folder: str | Path) -> TLSFiles:
        """Write ca.pem, client.pem (certificate chain), client.key and client-with-key.pem into `folder`."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        files = TLSFiles(
            ca=folder / "ca.pem",
            cert=folder / "client.pem",
            key=folder / "client.key",
            cert_and_key=folder / "client-with-key.pem",
        )
        self.ca.cert_pem.write_to_path(str(files.ca))
        files.cert.write_bytes(b"".join(blob.bytes() for blob in self.client_cert.cert_chain_pems))
        self.client_cert.private_key_pem.write_to_path(str(files.key))
        self.client_cert.private_key_and_cert_chain_pem.write_to_path(str(files.cert_and_key))
        return files


# ------------------------------------------------------------------------------------------------- helpers


class _BadRequest(Exception):
    pass


@dataclass
class _Request:
    method: str
    target: str
    version: str
    headers: dict[str, str]
    body: bytes
    arrived: float = 0.0  # the clock when its first bytes were read off the socket


class _Reader(asyncio.StreamReader):
    """A connection's reader that notes when the first bytes of the next request arrived: the
    moment a real edge (nginx, a provider's gateway) counts a request against a limit. That is
    the kernel's stamp of their arrival when the connection's transport has one (``_Stamped``),
    else the stand-in's clock as they are read. The moment the whole request has been parsed is
    later by whatever the stand-in's event loop had to do first; the moment its loop reads them,
    later by however long this process, sharing the machine with the client, waited for a CPU. On
    a loaded machine either is milliseconds, which an edge on a machine of its own does not add,
    and a strict limit stamped then refuses requests that came in time."""

    def __init__(self, clock: Callable[[], float], limit: int) -> None:
        super().__init__(limit=limit)
        self._clock = clock
        self._arrived: float | None = None
        self._stamp: float | None = None

    def stamped(self, moment: float) -> None:
        """The bytes fed next arrived at ``moment``."""
        self._stamp = moment

    def feed_data(self, data: bytes) -> None:
        if data and self._arrived is None:
            self._arrived = self._clock() if self._stamp is None else self._stamp
        self._stamp = None
        super().feed_data(data)

    def taken(self) -> float:
        """When the request just read arrived; the next one's bytes are stamped afresh."""
        arrived = self._clock() if self._arrived is None else self._arrived
        self._arrived = None
        return arrived


@dataclass
class _Answer:
    """A prepared answer: a plain body, or (events not None) a list of SSE events sent with chunked encoding."""

    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    events: list[bytes] | None = None


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


def _text_of(content: Any) -> str:
    """Text of a message content: a string, or a list of parts ({"type": "text", "text": ...}) joined by newlines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return "\n".join(texts)
    if isinstance(content, dict):
        for key in ("content", "text"):
            if key in content:
                return _text_of(content[key])
    return str(content)


def _words(text: str) -> int:
    return len(text.split())


def _conversation(headers: dict[str, str], data: Any) -> str:
    if "x-conversation" in headers:
        return headers["x-conversation"]
    if isinstance(data, dict):
        for key in ("session", "session_id", "user"):
            if data.get(key) is not None:
                return str(data[key])
        metadata = data.get("metadata")
        if isinstance(metadata, dict) and metadata.get("conversation") is not None:
            return str(metadata["conversation"])
    return ""


def _kind(method: str, path: str) -> str:
    if path == "/health":
        return "health"
    if path.endswith("/chat/completions"):
        return "chat"
    if path == "/agent" or path.startswith("/agent/"):
        return "agent"
    return "other"


def _newest_user_message(kind: str, data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    if kind == "chat":
        messages = data.get("messages")
        if isinstance(messages, list):
            for message in reversed(messages):
                if isinstance(message, dict) and message.get("role") == "user":
                    return _text_of(message.get("content"))
        return None
    if kind == "agent":
        if data.get("message") is not None:
            return _text_of(data["message"])
        history = data.get("history")
        if isinstance(history, list) and history:
            for item in reversed(history):
                if not isinstance(item, dict) or item.get("role") in (None, "user"):
                    return _text_of(item)
            return _text_of(history[-1])
    return None


def _error_body(code: int, message: str) -> bytes:
    kind = _ERROR_TYPES.get(code, "error")
    return _dumps({"error": {"message": message, "type": kind, "param": None, "code": kind}})


def _pieces(text: str, count: int = 3) -> list[str]:
    """Split text into up to `count` pieces at word boundaries; the pieces join back to the text."""
    tokens = re.findall(r"\s*\S+\s*", text) or ([text] if text else [])
    if not tokens:
        return []
    size = max(1, math.ceil(len(tokens) / count))
    return ["".join(tokens[i : i + size]) for i in range(0, len(tokens), size)]


def _sse(value: Any) -> bytes:
    data = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f"data: {data}\n\n".encode()


def _default_reply(request: dict[str, Any]) -> str:
    return f"You said: {_newest_user_message('chat', request) or ''}"


def judged(request: dict[str, Any], held: bool = True, quote: str | None = None) -> str:
    """A judge's reply to a Chat Completions request that asks about one claim, as convy's
    ChatJudge asks (the dialogue, then "The claim: ..."): held or not, with the confidence, and as
    evidence ``quote`` or else the agent's first answer, copied from the dialogue as sent.
    ``StandIn(reply=judged)`` makes the stand-in a judge."""
    asked = _newest_user_message("chat", request) or ""
    if quote is None:
        quote = next((line[len("AGENT: ") :] for line in asked.splitlines() if line.startswith("AGENT: ")), "")
    grades = next((line.split(": ", 1)[1] for line in asked.splitlines() if line.startswith("The grades, worst first: ")), "")
    decision: dict[str, Any] = {"evidence": quote, "reason": "read from the dialogue", "confidence": 0.9}
    if grades:
        names = [grade.strip() for grade in grades.split(",")]
        decision["grade"] = names[-1] if held else names[0]
    else:
        decision["pass"] = held
    return json.dumps(decision)


# ---------------------------------------------------------------------------------------- rate limits
# The shapes of limit a provider may have, for StandIn(limit=...). Each admits a request or says how
# long it should have waited, and says what is left in OpenAI's headers (x-ratelimit-*) when `headers`.


def _reset(seconds: float) -> str:
    """A reset time as OpenAI-compatible services write it: "20ms", "1s", "6m0s"."""
    if seconds < 1:
        return f"{math.ceil(seconds * 1000)}ms"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:.3g}s" if minutes else f"{rest:.3g}s"


@dataclass
class Bucket:
    """A token bucket: `rate` units a second, at most `burst` saved up (burst 1: strictly one every
    1/rate seconds). `unit` "requests" counts requests; "tokens" counts a request's tokens (its body's
    bytes / 4, at least 1). Refused: 429 with Retry-After in whole seconds, at least 1, rounded up."""

    rate: float
    burst: float = 1.0
    unit: str = "requests"
    headers: bool = True
    level: float | None = None
    moment: float = 0.0

    def admit(self, now: float, cost: float) -> tuple[int | None, dict[str, str]]:
        level = self.burst if self.level is None else min(self.burst, self.level + (now - self.moment) * self.rate)
        self.moment = now
        cost = min(cost, self.burst) if self.unit == "tokens" else 1.0
        admitted = level >= cost
        self.level = level - cost if admitted else level
        wait = None if admitted else max(1, math.ceil((cost - level) / self.rate))
        return wait, self._said() if self.headers else {}

    def _said(self) -> dict[str, str]:
        level = max(0.0, self.level or 0.0)
        return {
            f"x-ratelimit-limit-{self.unit}": f"{self.burst:g}",
            f"x-ratelimit-remaining-{self.unit}": str(math.floor(level)),
            f"x-ratelimit-reset-{self.unit}": _reset((self.burst - level) / self.rate),
        }


@dataclass
class Window:
    """At most `count` requests in any sliding `seconds`; refused: 429 with Retry-After in whole seconds."""

    count: int
    seconds: float = 60.0
    headers: bool = True
    admitted: deque[float] = field(default_factory=deque)

    def admit(self, now: float, cost: float) -> tuple[int | None, dict[str, str]]:
        while self.admitted and self.admitted[0] <= now - self.seconds:
            self.admitted.popleft()
        wait = None
        if len(self.admitted) < self.count:
            self.admitted.append(now)
        else:
            wait = max(1, math.ceil(self.admitted[0] + self.seconds - now))
        if not self.headers:
            return wait, {}
        whole = self.admitted[-1] + self.seconds - now if self.admitted else 0.0
        return wait, {
            "x-ratelimit-limit-requests": str(self.count),
            "x-ratelimit-remaining-requests": str(self.count - len(self.admitted)),
            "x-ratelimit-reset-requests": _reset(max(0.0, whole)),
        }


@dataclass
class Drained:
    """``limit`` (a ``Bucket``) as a neighbour on the same key left it: ``units`` more than it holds
    spent just before the first request, so that request is refused whatever its client knows."""

    limit: Bucket
    units: float
    begun: bool = False

    def admit(self, now: float, cost: float) -> tuple[int | None, dict[str, str]]:
        if not self.begun:
            self.begun = True
            self.limit.level, self.limit.moment = -self.units, now
        return self.limit.admit(now, cost)


@dataclass
class Changing:
    """`first` until `after` seconds from the first request, then `then` (a limit changed mid-run)."""

    first: Any
    then: Any
    after: float
    start: float | None = None

    def admit(self, now: float, cost: float) -> tuple[int | None, dict[str, str]]:
        self.start = now if self.start is None else self.start
        return (self.first if now - self.start < self.after else self.then).admit(now, cost)


@dataclass
class Limits:
    """Several limits at once (a request limit and a token limit): admitted only if all admit it. A
    refused request still counts against those that admitted it, as at real providers."""

    each: tuple[Any, ...]

    def admit(self, now: float, cost: float) -> tuple[int | None, dict[str, str]]:
        waits, headers = [], {}
        for limit in self.each:
            wait, said = limit.admit(now, cost)
            headers |= said
            if wait is not None:
                waits.append(wait)
        return (max(waits) if waits else None), headers


# ---------------------------------------------------------------------------------------------- the server

# Linux's SO_TIMESTAMPNS (the socket module does not name it): the kernel's time of arrival of the bytes read.
_SO_TIMESTAMPNS: int | None = 35 if sys.platform == "linux" else None


class _Stamped(asyncio.selector_events._SelectorSocketTransport):  # type: ignore[name-defined,misc]
    """A connection that reads with the kernel's stamp of when the bytes arrived (SO_TIMESTAMPNS),
    turned into time.monotonic's clock, and hands it to its protocol before the bytes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stamps = False
        if _SO_TIMESTAMPNS is not None:
            try:
                self._sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
                self._stamps = True
            except OSError:
                pass

    def _read_ready__data_received(self) -> None:
        if not self._stamps or not isinstance(self._protocol, _Arrivals):
            return super()._read_ready__data_received()
        if self._conn_lost:
            return None
        try:
            data, ancillary, _, _ = self._sock.recvmsg(self.max_size, 64)
        except (BlockingIOError, InterruptedError):
            return None
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:  # noqa: BLE001 - as asyncio's own transport does
            self._fatal_error(exc, "Fatal read error on socket transport")
            return None
        if not data:
            self._read_ready__on_eof()
            return None
        for level, kind, raw in ancillary:
            if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(raw) >= 16:
                seconds, nanoseconds = struct.unpack("qq", raw[:16])
                self._protocol.stamped(seconds + nanoseconds / 1e9 - (time.time() - time.monotonic()))
        try:
            self._protocol.data_received(data)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:  # noqa: BLE001 - as asyncio's own transport does
            self._fatal_error(exc, "Fatal error: protocol.data_received() call failed.")
        return None


class _StampingLoop(asyncio.SelectorEventLoop):
    """The stand-in's event loop on the real clock: its connections are ``_Stamped``."""

    def _make_socket_transport(self, sock: Any, protocol: Any, waiter: Any = None, *, extra: Any = None, server: Any = None) -> Any:
        return _Stamped(self, sock, protocol, waiter, extra, server)


class _Arrivals(asyncio.StreamReaderProtocol):
    """asyncio's stream protocol, passing a kernel's stamp of arrival on to its ``_Reader``."""

    def __init__(self, reader: _Reader, connected: Any) -> None:
        super().__init__(reader, connected)
        self._reader = reader

    def stamped(self, moment: float) -> None:
        self._reader.stamped(moment)



class StandIn:
    """A real HTTP/1.1 server on 127.0.0.1 (port chosen by the OS), in a background thread. See the module doc.

    reply(request_json) -> str | dict: the chat responder. A dict may give "content" (str or None),
        "tool_calls" (list of {"name", "arguments": dict | str, "id"?} or OpenAI-shaped tool calls),
        "usage" ({"prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens", ...}; False: none), "cost",
        "finish_reason", "reasoning" (text, sent as message.reasoning), "headers" (more response headers, as
        LiteLLM's x-litellm-response-cost). Default: "You said: <last user message>".
        It may also be an async function. An exception in it answers 500 and is kept in `errors`.
    agent_reply(request_json) -> dict | list | str: the /agent responder; a dict/list is the whole JSON reply,
        a str is the text put into the default shape.
    latency: seconds each request waits before it is answered (not /health, not refused ones).
    per_minute / window: at most `per_minute` requests admitted in any sliding `window` seconds; beyond, 429.
    limit: a rate limit of another shape (Bucket, Window, Changing, Limits), with OpenAI's x-ratelimit-*
        headers on every chat and agent response; it replaces per_minute / window.
    cost: if not None, sent as usage.cost (as OpenRouter does) unless the responder gives its own.
    api_key: if set, chat and agent requests need "Authorization: Bearer <api_key>", else 401.
    prefix: if set (e.g. "/v1"), chat and agent requests whose path does not start with it get 404, as a
        real gateway answers a URL that lacks its /v1 (the stand-in answers any .../chat/completions otherwise).
    models: if set, a chat request for a model not in it gets `unknown_model` (404 with OpenAI's "The model
        `x` does not exist", or 400 with LiteLLM's "Invalid model name passed in model=x").
    tls: a TLS() config; the url is then https.
    clock: what the rate limits (and Received.time) read as now; time.monotonic unless a test gives a HandClock.
    All of reply, agent_reply, latency, per_minute, window, cost and api_key may be changed while running.
    """

    def __init__(
        self,
        *,
        reply: Callable[[dict[str, Any]], Any] | None = None,
        agent_reply: Callable[[dict[str, Any]], Any] | None = None,
        latency: float = 0.0,
        per_minute: int | None = None,
        window: float = 60.0,
        limit: Any = None,
        cost: float | None = None,
        api_key: str | None = None,
        prefix: str = "",
        models: frozenset[str] | None = None,
        unknown_model: int = 404,
        tls: TLS | None = None,
        host: str = "127.0.0.1",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self._lock = threading.RLock()
        self._reply = reply
        self._agent_reply = agent_reply
        self._latency = latency
        self._per_minute = per_minute
        self._window = window
        self._limit = limit
        self._tokens_admitted = 0
        self._cost = cost
        self._api_key = api_key
        self._prefix = prefix
        self._models = models
        self._unknown_model = unknown_model
        self.tls = tls
        self.host = host
        self.port: int = 0
        self._faults: deque[Fault] = deque()
        self._received: list[Received] = []
        self._admitted: deque[float] = deque()
        self._refused = 0
        self._connections = 0
        self._in_flight = 0
        self._peak_in_flight = 0
        self._errors: list[str] = []
        self._tls_errors: list[str] = []
        # Told whenever a handshake fails, for a test that waits for the server to have seen it.
        self._changed = threading.Condition(self._lock)
        self._ids = itertools.count(1)
        self._completion_ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._start_error: BaseException | None = None

    # ----------------------------------------------------------------------------------------- lifecycle

    def __enter__(self) -> StandIn:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> StandIn:
        """Start the server thread and wait until it listens."""
        if self._thread is not None:
            raise RuntimeError("the stand-in is already started")
        if self.tls is not None:
            self.tls.server_context()  # made here, so that a bad config fails in the caller's thread
        ready = threading.Event()
        # On the real clock, requests are stamped as the kernel received them; a hand clock stamps them itself.
        self._loop = _StampingLoop() if self._clock is time.monotonic else asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="standin", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the stand-in did not start")
        if self._start_error is not None:
            raise RuntimeError("the stand-in did not start") from self._start_error
        return self

    def stop(self) -> None:
        """Close the listener and every open connection (cancelling stalls and latencies), then end the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(10)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)

    def _run(self, ready: threading.Event) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        loop.set_exception_handler(self._loop_exception)
        try:
            self._server = loop.run_until_complete(loop.create_server(self._protocol, self.host, 0, reuse_address=True))
            self.port = self._server.sockets[0].getsockname()[1]
        except BaseException as error:  # noqa: BLE001 - handed to the starting thread
            self._start_error = error
            ready.set()
            loop.close()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._server.wait_closed()

    def _loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exception = context.get("exception")
        with self._lock:
            self._errors.append(f"{context.get('message')}: {exception!r}" if exception else str(context.get("message")))

    # --------------------------------------------------------------------------------------- public state

    @property
    def running(self) -> bool:
        """Whether the server thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def url(self) -> str:
        """Base url, e.g. "http://127.0.0.1:54321" (https with tls). Add /v1 for an OpenAI base_url."""
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    def faults(self, *faults: Fault) -> None:
        """Queue faults (FIFO). Each coming request takes the first queued fault that matches it."""
        for fault in faults:
            if not isinstance(fault, Fault):
                raise TypeError(f"not a fault: {fault!r}")
        with self._lock:
            self._faults.extend(faults)

    @property
    def pending(self) -> list[Fault]:
        """Faults queued and not yet taken."""
        with self._lock:
            return list(self._faults)

    @property
    def received(self) -> list[Received]:
        """Every request read so far (a copy of the list), in order."""
        with self._lock:
            return list(self._received)

    def counts(self) -> Counter[tuple[str, str | None]]:
        """(conversation key, text of the newest user message) -> times received, over chat and agent requests
        (refused and faulted ones included: it counts what reached the server)."""
        with self._lock:
            return Counter((r.conversation, r.message) for r in self._received if r.kind in ("chat", "agent"))

    @property
    def connections(self) -> int:
        """TCP connections accepted so far (TLS handshake failures included)."""
        with self._lock:
            return self._connections

    @property
    def tokens_admitted(self) -> int:
        """Tokens (body bytes / 4) of the requests a `limit` admitted."""
        with self._lock:
            return self._tokens_admitted

    @property
    def refused(self) -> int:
        """Requests answered 429 by the rate limit (not by a Status fault)."""
        with self._lock:
            return self._refused

    @property
    def peak_in_flight(self) -> int:
        """Most requests being handled at the same time."""
        with self._lock:
            return self._peak_in_flight

    @property
    def errors(self) -> list[str]:
        """Responder exceptions and unexpected server errors (tracebacks). Should stay empty in a good test."""
        with self._lock:
            return list(self._errors)

    @property
    def tls_errors(self) -> list[str]:
        """Failed TLS handshakes (e.g. a client without a certificate when one is required)."""
        with self._lock:
            return list(self._tls_errors)

    def tls_errors_seen(self, count: int = 1, timeout: float = 30.0) -> list[str]:
        """The failed TLS handshakes once there are at least ``count``. The client can see the connection
        broken before the server's thread has written the failure down, so a test waits for it here."""
        with self._changed:
            if not self._changed.wait_for(lambda: len(self._tls_errors) >= count, timeout):
                raise AssertionError(f"the server saw {len(self._tls_errors)} failed TLS handshakes in {timeout} s, not {count}")
            return list(self._tls_errors)

    def reset(self) -> None:
        """Forget received requests, queued faults, the rate window, refused and errors (not connections)."""
        with self._lock:
            self._received.clear()
            self._faults.clear()
            self._admitted.clear()
            self._refused = 0
            self._errors.clear()
            self._tls_errors.clear()

    def configure(self, **knobs: Any) -> None:
        """Change several knobs at once: reply, agent_reply, latency, per_minute, window, cost, api_key."""
        allowed = {"reply", "agent_reply", "latency", "per_minute", "window", "limit", "cost", "api_key", "prefix", "models"}
        unknown = set(knobs) - allowed
        if unknown:
            raise TypeError(f"unknown knobs: {sorted(unknown)}")
        with self._lock:
            for name, value in knobs.items():
                setattr(self, f"_{name}", value)

    def _knob(name: str, doc: str) -> property:  # noqa: N805 - a property factory used in the class body
        def get(self: StandIn) -> Any:
            with self._lock:
                return getattr(self, f"_{name}")

        def set_(self: StandIn, value: Any) -> None:
            with self._lock:
                setattr(self, f"_{name}", value)

        return property(get, set_, doc=doc)

    reply = _knob("reply", "The chat responder (None: the default echo).")
    agent_reply = _knob("agent_reply", "The /agent responder (None: the default echo).")
    latency = _knob("latency", "Seconds each request waits before being answered.")
    per_minute = _knob("per_minute", "Requests admitted per window (None: no limit).")
    window = _knob("window", "Length in seconds of the rate limit's sliding window.")
    limit = _knob("limit", "A rate limit of another shape (Bucket, Window, Changing, Limits), or None.")
    cost = _knob("cost", "usage.cost to report (None: not reported).")
    api_key = _knob("api_key", "Bearer token required on chat and agent requests (None: none required).")
    del _knob

    # ------------------------------------------------------------------------------------- connections

    def _protocol(self) -> asyncio.StreamReaderProtocol:
        """A new connection's protocol: asyncio.start_server's, with a reader that stamps arrivals."""
        return _Arrivals(_Reader(self._clock, 1 << 20), self._serve)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        with self._lock:
            self._connections += 1
            connection = self._connections
        client_cert: str | None = None
        try:
            if self.tls is not None:
                try:
                    await writer.start_tls(self.tls.server_context(), ssl_handshake_timeout=5.0)
                except (ssl.SSLError, OSError, asyncio.TimeoutError, asyncio.IncompleteReadError) as error:
                    with self._changed:
                        self._tls_errors.append(repr(error))
                        self._changed.notify_all()
                    return
                client_cert = _identity(writer.get_extra_info("peercert"))
            while True:
                try:
                    request = await _read_request(reader, writer)
                except _BadRequest as error:
                    await self._write(writer, None, 400, _error_body(400, str(error)), keep=False)
                    return
                if request is None:
                    return
                if isinstance(reader, _Reader):
                    request.arrived = reader.taken()
                if not await self._handle(request, writer, connection, client_cert):
                    return
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError, TimeoutError):
            pass
        except Exception:  # noqa: BLE001 - kept for the test to see
            with self._lock:
                self._errors.append(traceback.format_exc())
        finally:
            self._tasks.discard(task)
            if not writer.transport.is_closing():
                writer.close()

    async def _handle(self, request: _Request, writer: asyncio.StreamWriter, connection: int, client_cert: str | None) -> bool:
        """Answer one request; return whether the connection stays open."""
        path, _, query = request.target.partition("?")
        headers = request.headers
        connection_header = headers.get("connection", "").lower()
        if request.version == "HTTP/1.0":
            keep = "keep-alive" in connection_header
        else:
            keep = "close" not in connection_header
        try:
            data = json.loads(request.body) if request.body else None
        except (ValueError, UnicodeDecodeError):
            data = None
        kind = _kind(request.method, path)
        arrived = request.arrived if request.arrived else self._clock()
        shown = {name: (REDACTED if name == "authorization" else value) for name, value in headers.items()}
        record = Received(
            method=request.method,
            path=path,
            query=query,
            headers=shown,
            body=request.body,
            json=data,
            connection=connection,
            conversation=_conversation(headers, data),
            message=_newest_user_message(kind, data),
            kind=kind,
            time=arrived,
            client_cert=client_cert,
        )
        with self._lock:
            self._received.append(record)
            self._in_flight += 1
            self._peak_in_flight = max(self._peak_in_flight, self._in_flight)
        try:
            return await self._answer(request, record, writer, keep)
        finally:
            with self._lock:
                self._in_flight -= 1

    async def _answer(self, request: _Request, record: Received, writer: asyncio.StreamWriter, keep: bool) -> bool:
        guarded = record.kind in ("chat", "agent")
        with self._lock:
            api_key, latency = self._api_key, self._latency
        if guarded and api_key is not None and request.headers.get("authorization") != f"Bearer {api_key}":
            record.refused = "unauthorized"
            return await self._write(writer, record, 401, _error_body(401, "Incorrect API key provided."), keep=keep)
        with self._lock:
            prefix, models, unknown = self._prefix, self._models, self._unknown_model
        if guarded and prefix and not record.path.startswith(prefix.rstrip("/") + "/"):
            return await self._write(writer, record, 404, _error_body(404, f"no such path: {record.path}"), keep=keep)
        asked = record.json.get("model") if isinstance(record.json, dict) else None
        if record.kind == "chat" and models is not None and isinstance(asked, str) and asked not in models:
            said = (
                f"The model `{asked}` does not exist or you do not have access to it."
                if unknown == 404
                else f"Invalid model name passed in model={asked}. Call `/v1/models` to view available models for your key."
            )
            return await self._write(writer, record, unknown, _error_body(unknown, said), keep=keep)
        if record.kind != "health":
            retry_after = self._admit(record)
            if retry_after is not None:
                record.refused = "rate-limited"
                with self._lock:
                    limit = self._per_minute
                extra = {
                    "retry-after": str(retry_after),
                    "x-ratelimit-limit-requests": str(limit),
                    "x-ratelimit-remaining-requests": "0",
                }
                if record.limit_headers is not None:
                    extra = {"retry-after": str(retry_after), **record.limit_headers}
                body = _error_body(429, "Rate limit reached for requests (stand-in).")
                return await self._write(writer, record, 429, body, headers=extra, keep=keep)
        fault = self._take_fault(record)
        record.fault = fault
        if record.kind != "health" and latency > 0:
            await asyncio.sleep(latency)

        if isinstance(fault, Status):
            return await self._write_status(writer, record, fault, keep)
        if isinstance(fault, Echo):
            heard = "\n".join(
                [f"{request.method} {request.target} {request.version}"]
                + [f"{name}: {value}" for name, value in request.headers.items()]
                + ["", request.body.decode("utf-8", "replace")]
            )
            text = ("." * fault.pad + heard)[: fault.cut]
            body = _error_body(fault.code, text) if fault.as_json else text.encode()
            return await self._write(writer, record, fault.code, body, keep=keep,
                                     content_type="application/json" if fault.as_json else "text/plain")
        if isinstance(fault, Drop):
            _drop(writer, fault.reset)
            return False
        if isinstance(fault, Invalid):
            if record.stream:
                events = [b": keep-alive\n\n", b"data: " + fault.body + b"\n\n", b"data: [DONE]\n\n"]
                return await self._write_events(writer, record, _Answer(200, events=events), keep)
            return await self._write(writer, record, 200, fault.body, keep=keep)
        if isinstance(fault, WrongShape):
            shape = {"hello": 1} if fault.body is None else fault.body
            if record.stream:
                events = [_sse(shape), b"data: [DONE]\n\n"]
                return await self._write_events(writer, record, _Answer(200, events=events), keep)
            return await self._write(writer, record, 200, _dumps(shape), keep=keep)
        if isinstance(fault, Stall):
            await asyncio.sleep(fault.seconds)

        answer = await self._normal(request, record)
        if isinstance(fault, (SseError, NoDone, NoFinish)) and answer.status == 200:
            answer = _spoiled(answer, fault)
        if answer.events is not None:
            if isinstance(fault, Truncated):
                events = answer.events[: max(1, len(answer.events) // 2)]
                await self._write_events(writer, record, _Answer(200, events=events), keep, finish=False)
                _drop(writer, reset=False)
                return False
            slow = fault if isinstance(fault, SlowBody) else None
            return await self._write_events(writer, record, answer, keep, slow=slow)
        if isinstance(fault, Truncated):
            half = answer.body[: len(answer.body) // 2]
            await self._write(writer, record, answer.status, half, headers=answer.headers, keep=False,
                              length=len(answer.body), content_type=answer.content_type)
            _drop(writer, reset=False)
            return False
        slow = fault if isinstance(fault, SlowBody) else None
        return await self._write(writer, record, answer.status, answer.body, headers=answer.headers, keep=keep,
                                 content_type=answer.content_type, slow=slow)

    def _admit(self, record: Received) -> int | None:
        """Admit a request under the rate limit (None), or return the whole seconds to wait (>= 1)."""
        now = record.time  # when it arrived, as a real edge counts it
        with self._lock:
            if self._limit is not None:
                cost = max(1, len(record.body) // 4)
                wait, record.limit_headers = self._limit.admit(now, cost)
                if wait is None:
                    self._tokens_admitted += cost
                else:
                    self._refused += 1
                return wait
            limit, window = self._per_minute, self._window
            if limit is None:
                return None
            while self._admitted and self._admitted[0] <= now - window:
                self._admitted.popleft()
            if len(self._admitted) < limit:
                self._admitted.append(now)
                return None
            self._refused += 1
            wait = self._admitted[0] + window - now if self._admitted else window
            return max(1, math.ceil(wait))

    def _take_fault(self, record: Received) -> Fault | None:
        with self._lock:
            for index, fault in enumerate(self._faults):
                if record.kind == "health" and fault.path != "/health":
                    continue
                if fault.matches(record.path, record.conversation):
                    del self._faults[index]
                    return fault
        return None

    # ----------------------------------------------------------------------------------------- answers

    async def _normal(self, request: _Request, record: Received) -> _Answer:
        """The answer the stand-in gives when nothing goes wrong."""
        if record.kind == "health":
            if request.method not in ("GET", "HEAD"):
                return _Answer(405, _error_body(405, "use GET"), headers={"allow": "GET, HEAD"})
            return _Answer(200, _dumps({"ok": True}))
        if record.kind == "other":
            return _Answer(404, _error_body(404, f"no such path: {record.path}"))
        if request.method != "POST":
            return _Answer(405, _error_body(405, "use POST"), headers={"allow": "POST"})
        data = record.json
        if not isinstance(data, dict):
            return _Answer(400, _error_body(400, "the body must be a JSON object"))
        try:
            if record.kind == "chat":
                return await self._chat(data)
            return await self._agent(data)
        except Exception:  # noqa: BLE001 - a responder failed: the test should see it
            text = traceback.format_exc()
            with self._lock:
                self._errors.append(text)
            return _Answer(500, _error_body(500, f"the responder failed: {text.strip().splitlines()[-1]}"))

    async def _call(self, responder: Callable[[dict[str, Any]], Any], data: dict[str, Any]) -> Any:
        out = responder(data)
        if inspect.isawaitable(out):
            out = await out
        return out

    async def _chat(self, data: dict[str, Any]) -> _Answer:
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            return _Answer(400, _error_body(400, "'messages' must be a non-empty list"))
        if not isinstance(data.get("model"), str):
            return _Answer(400, _error_body(400, "you must provide a model parameter"))
        with self._lock:
            responder, cost = self._reply or _default_reply, self._cost
        out = await self._call(responder, data)
        if isinstance(out, str):
            out = {"content": out}
        if not isinstance(out, dict):
            raise TypeError(f"the chat responder must return str or dict, not {type(out).__name__}")

        content = out.get("content", "")
        tool_calls = [_tool_call(call, n) for n, call in enumerate(out.get("tool_calls") or [])]
        finish_reason = out.get("finish_reason") or ("tool_calls" if tool_calls else "stop")
        prompt_words = sum(_words(_text_of(m.get("content"))) for m in messages if isinstance(m, dict))
        completion_words = _words(content or "") + sum(_words(c["function"]["arguments"]) for c in tool_calls)
        # "usage": False sends none (usage: null), as some servers answer
        usage = None if out.get("usage") is False else _usage(out.get("usage") or {}, prompt_words, completion_words)
        cost = out.get("cost", cost)
        if cost is not None and usage is not None:
            usage["cost"] = cost

        message: dict[str, Any] = {"role": "assistant", "content": content}
        if out.get("reasoning") is not None:
            message["reasoning"] = out["reasoning"]
        if tool_calls:
            message["tool_calls"] = tool_calls
        ident = f"chatcmpl-standin{next(self._completion_ids)}"
        created = int(time.time())
        model = data["model"]
        if data.get("stream") is not True:
            completion = {
                "id": ident,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
                "usage": usage,
            }
            return _Answer(200, _dumps(completion), headers=dict(out.get("headers") or {}))

        options = data.get("stream_options")
        include_usage = isinstance(options, dict) and options.get("include_usage") is True

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            value: dict[str, Any] = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            }
            if include_usage:
                value["usage"] = None
            return _sse(value)

        events = [b": keep-alive\n\n", chunk({"role": "assistant", "content": ""})]
        if out.get("reasoning"):
            events += [chunk({"reasoning": piece}) for piece in _pieces(str(out["reasoning"]), 2)]
        events += [chunk({"content": piece}) for piece in _pieces(content or "")]
        for index, call in enumerate(tool_calls):
            head = {"index": index, "id": call["id"], "type": "function",
                    "function": {"name": call["function"]["name"], "arguments": ""}}
            events.append(chunk({"tool_calls": [head]}))
            for piece in _pieces(call["function"]["arguments"], 2):
                events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
        events.append(chunk({}, finish_reason))
        if include_usage:
            events.append(_sse({"id": ident, "object": "chat.completion.chunk", "created": created,
                                "model": model, "choices": [], "usage": usage}))
        events.append(b"data: [DONE]\n\n")
        return _Answer(200, events=events, content_type="text/event-stream", headers=dict(out.get("headers") or {}))

    async def _agent(self, data: dict[str, Any]) -> _Answer:
        with self._lock:
            responder = self._agent_reply
        message = _newest_user_message("agent", data) or ""
        text = f"You said: {message}"
        if responder is not None:
            out = await self._call(responder, data)
            if not isinstance(out, str):
                return _Answer(200, _dumps(out))
            text = out
        history = data.get("history") if isinstance(data.get("history"), list) else []
        words_in = sum(_words(_text_of(item)) for item in history)
        if data.get("message") is not None:
            words_in += _words(message)
        reply = {"output": {"text": text}, "usage": {"in": words_in, "out": _words(text)}, "session": data.get("session")}
        return _Answer(200, _dumps(reply))

    # ------------------------------------------------------------------------------------------ writing

    async def _write_status(self, writer: asyncio.StreamWriter, record: Received, fault: Status, keep: bool) -> bool:
        extra = dict(fault.headers or {})
        if fault.retry_after is not None:
            extra["retry-after"] = str(fault.retry_after)
        if fault.retry_after_ms is not None:
            extra["retry-after-ms"] = str(fault.retry_after_ms)
        if fault.body is None:
            body = _error_body(fault.code, f"stand-in fault: status {fault.code}")
        elif isinstance(fault.body, bytes):
            body = fault.body
        elif isinstance(fault.body, str):
            body = fault.body.encode()
        else:
            body = _dumps(fault.body)
        return await self._write(writer, record, fault.code, body, headers=extra, keep=keep)

    async def _write(
        self,
        writer: asyncio.StreamWriter,
        record: Received | None,
        status: int,
        body: bytes,
        *,
        headers: dict[str, str] | None = None,
        keep: bool,
        content_type: str = "application/json",
        length: int | None = None,
        slow: SlowBody | None = None,
    ) -> bool:
        if record is not None and record.limit_headers and status != 429:
            headers = {**record.limit_headers, **(headers or {})}
        head = _head(status, content_type, headers, keep, length=len(body) if length is None else length)
        if record is not None:
            record.status = status
        if record is not None and record.method == "HEAD":
            body = b""
        if slow is None:
            writer.write(head + body)
            await writer.drain()
            return keep
        writer.write(head)
        await writer.drain()
        pieces = max(1, slow.pieces)
        size = math.ceil(len(body) / pieces) if body else 0
        for n in range(pieces):
            await asyncio.sleep(slow.seconds / pieces)
            piece = body[n * size : (n + 1) * size]
            if piece:
                writer.write(piece)
                await writer.drain()
        return keep

    async def _write_events(
        self,
        writer: asyncio.StreamWriter,
        record: Received,
        answer: _Answer,
        keep: bool,
        *,
        finish: bool = True,
        slow: SlowBody | None = None,
    ) -> bool:
        """Send SSE events with chunked transfer encoding, one HTTP chunk per event."""
        extra = {"cache-control": "no-cache", "transfer-encoding": "chunked", **(record.limit_headers or {}), **answer.headers}
        writer.write(_head(answer.status, "text/event-stream", extra, keep, length=None))
        record.status = answer.status
        await writer.drain()
        events = answer.events or []
        for event in events:
            if slow is not None:
                await asyncio.sleep(slow.seconds / max(1, len(events)))
            writer.write(b"%x\r\n%s\r\n" % (len(event), event))
            await writer.drain()
        if finish:
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        return keep


def _spoiled(answer: _Answer, fault: Fault) -> _Answer:
    """A normal 200 answer changed as an SseError, NoDone or NoFinish fault says."""
    if isinstance(fault, SseError):
        error = {"message": fault.message, "type": "server_error", "code": 502}
        if answer.events is None:
            return _Answer(200, _dumps({"error": error}))
        kept = answer.events[: max(2, len(answer.events) // 2)]
        if fault.event:
            broken = b"event: error\ndata: " + _dumps({"error": error}) + b"\n\n"
        else:
            broken = _sse({"object": "chat.completion.chunk", "error": error,
                           "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]})
        return _Answer(200, events=[*kept, broken, b"data: [DONE]\n\n"], content_type="text/event-stream")
    if isinstance(fault, NoDone):
        if answer.events is None:
            return answer
        return _Answer(200, events=[event for event in answer.events if event != b"data: [DONE]\n\n"],
                       content_type="text/event-stream")
    if answer.events is None:
        completion = json.loads(answer.body)
        for choice in completion.get("choices") or []:
            choice["finish_reason"] = None
        return _Answer(200, _dumps(completion))
    events = []
    for event in answer.events:
        if event.startswith(b"data: {"):
            chunk = json.loads(event[len(b"data: "):])
            for choice in chunk.get("choices") or []:
                choice["finish_reason"] = None
            event = _sse(chunk)
        events.append(event)
    return _Answer(200, events=events, content_type="text/event-stream")


def _head(status: int, content_type: str, headers: dict[str, str] | None, keep: bool, *, length: int | None) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}", "server: convy-stand-in",
             f"content-type: {content_type}"]
    if length is not None:
        lines.append(f"content-length: {length}")
    lines.append(f"connection: {'keep-alive' if keep else 'close'}")
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _drop(writer: asyncio.StreamWriter, reset: bool) -> None:
    if reset:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
        writer.transport.abort()
    else:
        writer.close()


def _identity(peercert: Any) -> str | None:
    if not peercert:
        return None
    for _kind_name, value in peercert.get("subjectAltName", ()):
        return str(value)
    for rdn in peercert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None


def _tool_call(call: Any, n: int) -> dict[str, Any]:
    """A tool call in OpenAI shape, from {"name", "arguments", "id"?} or from an OpenAI-shaped one."""
    if not isinstance(call, dict):
        raise TypeError(f"a tool call must be a dict, not {type(call).__name__}")
    function = call.get("function") if isinstance(call.get("function"), dict) else call
    arguments = function.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"id": call.get("id") or f"call_standin{n + 1}", "type": "function",
            "function": {"name": function["name"], "arguments": arguments}}


def _usage(given: dict[str, Any], prompt_words: int, completion_words: int) -> dict[str, Any]:
    prompt = int(given.get("prompt_tokens", prompt_words))
    completion = int(given.get("completion_tokens", completion_words))
    cached = given.get("cached_tokens", (given.get("prompt_tokens_details") or {}).get("cached_tokens", 0))
    reasoning = given.get("reasoning_tokens", (given.get("completion_tokens_details") or {}).get("reasoning_tokens", 0))
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": int(given.get("total_tokens", prompt + completion)),
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }
    if "cost" in given:
        usage["cost"] = given["cost"]
    return usage


async def _read_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> _Request | None:
    """Read one HTTP/1.1 request; None at a clean end of the connection."""
    line = await reader.readline()
    while line in (b"\r\n", b"\n"):
        line = await reader.readline()
    if not line:
        return None
    if not line.endswith(b"\n"):
        raise asyncio.IncompleteReadError(line, None)
    parts = line.decode("latin-1").rstrip("\r\n").split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _BadRequest(f"bad request line: {line[:100]!r}")
    method, target, version = parts
    headers: dict[str, str] = {}
    while True:
        raw = await reader.readline()
        if not raw.endswith(b"\n"):
            raise asyncio.IncompleteReadError(raw, None)
        if raw in (b"\r\n", b"\n"):
            break
        name, colon, value = raw.decode("latin-1").partition(":")
        if not colon or not name.strip():
            raise _BadRequest(f"bad header line: {raw[:100]!r}")
        name, value = name.strip().lower(), value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    if headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = bytearray()
        while True:
            size_line = await reader.readline()
            try:
                size = int(size_line.split(b";")[0].strip(), 16)
            except ValueError:
                raise _BadRequest(f"bad chunk size: {size_line[:40]!r}") from None
            if size == 0:
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                break
            body += await reader.readexactly(size)
            await reader.readexactly(2)
        return _Request(method, target, version, headers, bytes(body))
    length = headers.get("content-length")
    if length is None:
        return _Request(method, target, version, headers, b"")
    try:
        size = int(length)
    except ValueError:
        raise _BadRequest(f"bad content-length: {length!r}") from None
    return _Request(method, target, version, headers, await reader.readexactly(size))

