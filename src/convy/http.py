"""JSON over HTTP: the one place where httpx2 meets convy.

``JsonEndpoint`` says where and how to post (URL, headers, TLS, timeout); ``JsonConnection`` is an
open client that posts JSON and reads JSON or server-sent events back. Every error of the
transport is translated here, once:

- 429 and 503 — the service refused the request before acting on it — raise ``Busy`` with the
  wait it asked for (``Retry-After`` in seconds or as an HTTP date, or ``retry-after-ms``; or, from
  LiteLLM's proxy, the same with its ``llm_provider-`` prefix);
- any other status, a read timeout, a connection that could not be made or broke, or a body that
  is not JSON raise ``HttpFailure``: the service may have acted on the request, so it is never
  sent again.

Errors show the URL without its query string (which may hold a key) and never a header value:
an error's text, and that of its cause, has every secret of the endpoint hidden (``Secrets``) —
its header values, its query values, the password in its URL — in full and before it is cut, as
a service that failed may echo the request.

``JsonAgent`` is an agent behind such an endpoint, described by a body template and paths into
its reply; ``ChatAgent`` is an agent that itself speaks Chat Completions.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import codecs
import functools
import hashlib
import math
import re
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from convy.busy import TURN, Busy
from convy.problems import HttpFailure, UrlProblem
from convy.quota import TOLD, Heard, Left, NoQuota, Quota, Told
from convy.secrets import Address, Secrets

# Headers whose values are never secret: hiding them would blot ordinary words.
_PLAIN_HEADERS = frozenset({"accept", "accept-encoding", "accept-language", "content-type", "user-agent"})


class Tls(msgspec.Struct, frozen=True):
    """TLS settings: a CA bundle to trust, and a client certificate with its key."""

    ca: str = ""
    cert: str = ""
    key: str = ""

    def context_for(self, url: str) -> ssl.SSLContext:
        """The SSL context of a client for ``url``: these settings' (``context``), or, where there
        are none and the URL is plain ``http://``, which never makes a TLS connection, one that
        trusts no authority (``_untrusting``): nothing loaded, and a handshake, were one ever made,
        would fail rather than pass unverified."""
        if url.startswith("http://") and not (self.ca or self.cert):
            return _untrusting()
        return self.context()

    @functools.cache  # noqa: B019 - a frozen Tls is its own key; the files are read once per Tls
    def context(self) -> ssl.SSLContext:
        """The SSL context these settings make, made once per settings (loading a CA store costs
        tens of milliseconds, and a JsonAgent opens a client per conversation); without a CA or a
        certificate, the system's trust, as httpx2 makes it."""
        import httpx2  # here, not at the top: a command that sends nothing never loads it
        if not (self.ca or self.cert):
            return httpx2.create_ssl_context(verify=True, trust_env=False)
        for name in ("ca", "cert", "key"):
            path = getattr(self, name)
            if path and not Path(path).is_file():
                raise HttpFailure(f"TLS {name} file not found: {path}")
        try:
            context = ssl.create_default_context(cafile=self.ca or None)
        except (ssl.SSLError, OSError) as error:
            raise HttpFailure(f"TLS ca file cannot be used: {self.ca}: {error}") from error
        if self.cert:
            try:
                context.load_cert_chain(self.cert, self.key or None)
            except (ssl.SSLError, OSError) as error:
                raise HttpFailure(f"TLS cert or key file cannot be used: {self.cert}: {error}") from error
        return context


@functools.cache
def _untrusting() -> ssl.SSLContext:
    """The SSL context of a client for a plain ``http://`` endpoint with no TLS settings
    (``Tls.context_for``): it verifies as any client does but trusts no authority. The system's trust
    is loaded only for an endpoint that may use it: loading it took some 30 ms of the first
    conversation of every run (140-310 ms on a machine busy with a test run), the requests of the
    run waiting meanwhile (bench/busy.py --project p-free: the first request 56 ms after the run's
    start at the median of five, now 31)."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class RetryAfter(msgspec.Struct, frozen=True):
    """How long a refusing service asked to wait, read from its response headers.

    LiteLLM's proxy sends its wait only as ``llm_provider-retry-after``: it passes the headers of
    the error it refuses with (its router's own, when a deployment's ``rpm`` is used up, or the
    upstream's 429) through the step that forwards a provider's headers, which prefixes every one
    of them. So where neither plain header says a wait, the prefixed ones are read; without them a
    refusal of the proxy's was sent again at 1, 2, 4 ... s, each refused, until its minute turned.
    For its ``rpm`` it says 60, the whole minute, whatever is left of it: waited, that is later
    than the minute's turn by the part of the minute gone before the refusal, but it is refused
    no more. A plain header comes first: it is what the service answering says of itself."""

    headers: Any

    def seconds(self, now: datetime | None = None) -> float | None:
        """The seconds to wait; a date is counted from ``now``, the clock's unless a test gives one."""
        for prefix in _WAITS_FROM:
            seconds = self._said(prefix, now)
            if seconds is not None:
                return seconds
        return None

    def _said(self, prefix: str, now: datetime | None) -> float | None:
        """The wait ``{prefix}retry-after-ms`` or ``{prefix}retry-after`` says, the first readable."""
        milliseconds = self.headers.get(f"{prefix}retry-after-ms")
        if milliseconds:
            try:
                return max(0.0, float(milliseconds) / 1000)
            except ValueError:
                pass
        given = self.headers.get(f"{prefix}retry-after")
        if not given:
            return None
        try:
            return max(0.0, float(given))
        except ValueError:
            pass
        import email.utils  # here: only a Retry-After given as a date needs it

        try:
            moment = email.utils.parsedate_to_datetime(given)
        except (TypeError, ValueError):
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return max(0.0, (moment - (now or datetime.now(UTC))).total_seconds())


# Where a refusal's wait is read, in order: the service's own headers, then those LiteLLM's proxy
# forwards with its prefix (``RetryAfter``).
_WAITS_FROM = ("", "llm_provider-")


class RateHeaders(msgspec.Struct, frozen=True):
    """What a response's headers say is left of the service's limits, as OpenAI-compatible
    services send it: ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}``, the reset as a
    duration such as "1s", "6m0s", "20ms" or "1.5".

    Not the ``llm_provider-x-ratelimit-*`` that LiteLLM's proxy forwards, although its reset is
    sent only so: unprefixed, the proxy sends ``limit`` and ``remaining`` alone, which are read as
    what is left with no word of when more comes (``Left``). Those are what the upstream told the proxy of the deployment that
    answered, on the proxy's own upstream key: not the limit the caller is held to. The proxy
    refuses first at its own limits (a deployment's ``rpm``, a key's), whose count it sends
    unprefixed, in the same names; it spreads a model group over deployments, each with a limit
    of its own, so one answer's headers tell of one of them; and others share its upstream key.
    Paced by them, convy would go at one deployment's rate where the group allows more, or miss
    the proxy's own limit; and a prefixed reset read beside an unprefixed remaining would join
    two limits' words into one that is neither's. A refusal's wait, which is for the request at
    hand whoever refused it, is read with the prefix (``RetryAfter``)."""

    headers: Any

    def heard(self) -> Heard:
        return Heard(self._quota("requests"), self._quota("tokens"))

    def _quota(self, kind: str) -> Quota | Left | NoQuota:
        """What is left of one limit and when it is whole again; what is left alone where no reset
        is said, as LiteLLM's proxy says of its own limits (``Left``)."""
        remaining = _number(self.headers.get(f"x-ratelimit-remaining-{kind}"))
        if remaining is None:
            return NoQuota()
        limit = _number(self.headers.get(f"x-ratelimit-limit-{kind}")) or 0.0
        reset = _duration(self.headers.get(f"x-ratelimit-reset-{kind}"))
        if reset is None:
            return Left(remaining, limit)
        return Quota(remaining, reset, limit)


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
        if not isinstance(self.url, str):
            raise ValueError(f"url: must be text, as JsonEndpoint(\"http://...\"), not {type(self.url).__name__}")
        if not isinstance(self.headers, dict) or not all(isinstance(item, str) for pair in self.headers.items() for item in pair):
            # Never the value: a header given in the wrong place is most likely the key.
            given = "a name or value that is not text" if isinstance(self.headers, dict) else type(self.headers).__name__
            raise ValueError(f'headers: must map names to text, as {{"authorization": "Bearer ..."}}, not {given}')
        if not self.url.lower().startswith(("http://", "https://")):
            meant = f" (http://{self.shown()}?)" if "://" not in self.url else ""
            raise UrlProblem(f"url: must start with http:// or https://, not {self.shown()!r}{meant}", self.url)
        # A URL's scheme is the same in any case (RFC 3986): HTTP://host is http://host, written
        # so here, where it enters, for every later test of it (TLS, the limit's address).
        scheme, rest = self.url.split("://", 1)
        msgspec.structs.force_setattr(self, "url", f"{scheme.lower()}://{rest}")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, int | float):
            raise ValueError(f"timeout: must be a number of seconds, as timeout=30, not {type(self.timeout).__name__}")
        if not isinstance(self.tls, Tls):
            raise ValueError(f"tls: must be Tls(...), not {type(self.tls).__name__}")
        if self.timeout <= 0:
            raise ValueError("timeout: must be more than 0")

    def __repr__(self) -> str:
        return f"JsonEndpoint({self.shown()!r}, headers=<{len(self.headers)} hidden>, timeout={self.timeout:g})"

    def shown(self) -> str:
        """The URL as errors show it: without its query or a user and password, and with each token
        of its path hidden (``secrets.Address``), which may hold a key."""
        return Address(self.url).shown()

    def secrets(self) -> Secrets:
        """What this endpoint holds that is never shown: each header's value and each word of it
        (the key of ``Bearer <key>``) but a content type's and the like, and its URL's secrets
        (``secrets.Address``: each value of its query but a version's or a model's, the password,
        each token of its path, such as a bot's ``/bot<id>:<token>/``)."""
        values: list[str] = []
        for name, value in self.headers.items():
            if name.lower() not in _PLAIN_HEADERS:
                values.extend([value.strip(), *value.split(), *self._basic(value)])
        return Secrets(tuple(dict.fromkeys(value for value in values if value))) + Address(self.url).secrets()

    def _basic(self, value: str) -> list[str]:
        """The user and password of a Basic authorization header, which a service may echo decoded."""
        scheme, _, given = value.strip().partition(" ")
        if scheme.lower() != "basic":
            return []
        try:
            plain = base64.b64decode(given.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return []
        return [plain, plain.partition(":")[2]]

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
        import httpx2  # here, not at the top: a command that sends nothing never loads it
        client = httpx2.AsyncClient(
            headers=self.headers,
            verify=self.tls.context_for(self.url),
            timeout=httpx2.Timeout(self.timeout),
            limits=httpx2.Limits(max_connections=connections, max_keepalive_connections=min(connections, 64)),
            trust_env=False,
        )
        return JsonConnection(self, client, self.limited_by())


class JsonResponse(msgspec.Struct, frozen=True):
    """A service's answer: its JSON, and its headers by lower-case name."""

    value: Any
    headers: dict[str, str] = {}


class _EventStream(msgspec.Struct, frozen=True):
    """A response's body read as server-sent events: each event's type and data, its data
    stripped. The body must be UTF-8, as JSON must: a byte that is not raises
    ``UnicodeDecodeError`` rather than becoming a replacement character, as it would in a
    plain reply's JSON too. An event may be as long as a whole reply."""

    response: Any

    async def events(self) -> AsyncIterator[tuple[str, str]]:
        kind, data = "message", list[str]()
        async for line in self._lines():
            field, _, value = line.partition(":")
            if not line:
                if data:
                    yield kind, "\n".join(data).strip()
                kind, data = "message", []
            elif field == "data":
                data.append(value.removeprefix(" "))
            elif field == "event":
                kind = value.strip()
        if data:
            yield kind, "\n".join(data).strip()

    async def _lines(self) -> AsyncIterator[str]:
        """The body's lines, ended by CR, LF or CRLF (and by nothing else, unlike ``splitlines``);
        a long line is joined once, not again for every piece of it that comes."""
        decoder = codecs.getincrementaldecoder("utf-8")("strict")
        pending: list[str] = []
        after_cr = False  # the last piece ended with CR: an LF first in the next one ends nothing
        async for piece in self.response.aiter_bytes():
            text = decoder.decode(piece)
            if not text:
                continue
            if after_cr:
                text = text.removeprefix("\n")
            after_cr = text.endswith("\r")
            *ended, last = _LINE_END.split(text)
            for line in ended:
                yield "".join([*pending, line])
                pending = []
            pending.append(last)
        decoder.decode(b"", final=True)
        if "".join(pending):
            yield "".join(pending)


_LINE_END = re.compile(r"\r\n|\r|\n")


_JSON = {"content-type": "application/json"}  # the headers of every post, besides the endpoint's


class JsonConnection(msgspec.Struct, frozen=True):
    """An open connection to a JSON endpoint, and whose limit its requests count against
    (``limited_by``, the endpoint's, worked out once: it takes a digest of the headers)."""

    endpoint: JsonEndpoint
    client: Any
    limited_by: str

    async def posted(self, body: Any, path: str = "", headers: dict[str, str] | None = None) -> Any:
        """The JSON the endpoint answers ``body`` with (posted to the URL, plus ``path``)."""
        return (await self.response(body, path, headers)).value

    async def response(self, body: Any, path: str = "", headers: dict[str, str] | None = None) -> JsonResponse:
        """The endpoint's answer to ``body`` (posted to the URL, plus ``path``): its JSON and its
        headers, where some services say more (LiteLLM's proxy gives a reply's cost there).
        ``headers``: this request's own besides the endpoint's (an agent's turn: its ``traceparent``).

        Inside an agent's turn (``busy.TURN``) a request the service refuses (429, 503) is sent
        again on its own, at the agent's pace, while its patience lasts: the rest of the turn is
        never played again."""
        turn = TURN.get()
        if turn is not None:
            return await turn.resent(functools.partial(self._response, body, path, headers))
        return await self._response(body, path, headers)

    async def _response(self, body: Any, path: str, headers: dict[str, str] | None = None) -> JsonResponse:
        import httpx2  # here, not at the top: a command that sends nothing never loads it
        url = self.endpoint.at(path)
        sent = _JSON if not headers else {**headers, **_JSON}
        try:
            response = await self.client.post(url, content=msgspec.json.encode(body), headers=sent, extensions=self._traced())
            self._checked(response, path, _model(body))
            return JsonResponse(msgspec.json.decode(response.content), dict(response.headers))
        except msgspec.DecodeError as error:
            raise HttpFailure(f"POST {self._shown(path)}: the reply is not JSON: {self._hidden(str(error))}") from self._cause(error)
        except httpx2.HTTPError as error:
            raise self._failure(error, path) from self._cause(error)

    async def events(self, body: Any, path: str = "", headers: dict[str, str] | None = None) -> AsyncIterator[Any]:
        """Each server-sent event's JSON the endpoint streams for ``body``, until ``[DONE]``.

        A stream is whole only with its ``[DONE]``: one that ends without it, or that sends an
        error (an ``error`` event, or an event whose JSON holds an ``error``), is an
        ``HttpFailure``, as the reply may be cut short and the service may have acted. Inside an
        agent's turn (``busy.TURN``) the stream is read whole before its events are given, so a
        refused one is sent again on its own, as ``response`` does.
        """
        turn = TURN.get()
        if turn is not None:
            for event in await turn.resent(functools.partial(self._events_read, body, path, headers)):
                yield event
            return
        async for event in self._events(body, path, headers):
            yield event

    async def _events_read(self, body: Any, path: str, headers: dict[str, str] | None) -> list[Any]:
        return [event async for event in self._events(body, path, headers)]

    async def _events(self, body: Any, path: str, headers: dict[str, str] | None = None) -> AsyncIterator[Any]:
        import httpx2  # here, not at the top: a command that sends nothing never loads it
        url = self.endpoint.at(path)
        sent = _JSON if not headers else {**headers, **_JSON}
        try:
            async with self.client.stream(
                "POST", url, content=msgspec.json.encode(body), headers=sent, extensions=self._traced()
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                self._checked(response, path, _model(body))
                given = response.headers.get("content-type", "").partition(";")[0].strip().lower()
                if given != "text/event-stream":
                    raise HttpFailure(f"POST {self._shown(path)}: asked for a stream, the service answered {given or 'with no content type'}")
                done = False
                # Read on past "[DONE]" to the end of the body, so the connection goes back to the
                # pool instead of being closed half-read.
                async for kind, data in _EventStream(response).events():
                    if done or data == "[DONE]":
                        done = True
                    elif kind == "error":
                        raise self._broken(data, path)
                    elif data:
                        decoded = msgspec.json.decode(data)
                        match decoded:
                            case {"error": error} if error:
                                raise self._broken(msgspec.json.encode(error).decode(), path)
                        yield decoded
                if not done:
                    raise HttpFailure(f"POST {self._shown(path)}: the stream ended without [DONE]: the reply may be cut short")
        except msgspec.DecodeError as error:
            raise HttpFailure(f"POST {self._shown(path)}: an event is not JSON: {self._hidden(str(error))}") from self._cause(error)
        except UnicodeDecodeError:
            raise HttpFailure(f"POST {self._shown(path)}: the stream is not UTF-8") from None
        except httpx2.HTTPError as error:
            raise self._failure(error, path) from self._cause(error)

    def _broken(self, said: str, path: str) -> HttpFailure:
        """A stream that broke off with an error, with the start of what the service said."""
        return HttpFailure(f"POST {self._shown(path)}: the stream broke off with an error: {self.endpoint.secrets().opening(said, 300)}")

    def _traced(self) -> dict[str, Any]:
        """httpx2's extensions for a request: a trace that tells the request's ``Told`` when its
        head went on the wire, if a participant's places listen for it. The ``Told`` is given the
        service's name here, as the request starts, before anything is awaited: a participant's
        places hear from it that the participant sends over HTTP, and send it one request at a
        time until the service has answered."""
        told = TOLD.get()
        if told is None:
            return {}
        told.service = self.limited_by
        return {"trace": OnTheWire(told)} if told.listened() else {}

    def _shown(self, path: str) -> str:
        return self._hidden(JsonEndpoint(self.endpoint.at(path)).shown())

    def _hidden(self, text: str) -> str:
        """Text from the service, or about it, with this endpoint's secrets and anything shaped
        like a key hidden."""
        return self.endpoint.secrets().blotted(text)

    def _cause(self, error: Exception) -> BaseException:
        return self.endpoint.secrets().cause(error)

    def _checked(self, response: Any, path: str, model: str = "") -> None:
        told = TOLD.get()
        if told is not None:  # named already, as the request started
            told.heard = RateHeaders(response.headers).heard()
        status = response.status_code
        if status in (429, 503):
            raise Busy(
                f"POST {self._shown(path)}: {status} {self._hidden(response.reason_phrase)}",
                RetryAfter(response.headers).seconds(),
            )
        if status >= 400:
            said = self._said(response)
            raise HttpFailure(
                f"POST {self._shown(path)}: {status} {self._hidden(response.reason_phrase)}{': ' + said if said else ''}",
                status=status,
                url=self._shown(path),
                said=said,
                model=model,
            )

    def _said(self, response: Any) -> str:
        """The start of an error's body, which usually says what was wrong. A proxy may echo the
        request, so the whole body is hidden first (the endpoint's secrets, anything shaped like a
        key), and only then cut: a key across the cut leaves no part of it."""
        import httpx2  # here, not at the top: a command that sends nothing never loads it
        try:
            text = response.text.strip()
        except (httpx2.HTTPError, UnicodeDecodeError):
            return ""
        return self.endpoint.secrets().opening(text, 300).strip()

    def _failure(self, error: Exception, path: str) -> HttpFailure:
        import httpx2  # here, not at the top: a command that sends nothing never loads it
        where = f"POST {self._shown(path)}"
        match error:
            case httpx2.ConnectTimeout() | httpx2.ConnectError():
                # A TLS handshake that failed did connect: its certificate is what is wrong.
                handshaken = _handshaken(error)
                return HttpFailure(
                    f"{where}: could not connect ({self._why(error)})",
                    connected=handshaken is not None,
                    url=self._shown(path),
                    plain=handshaken is not None and handshaken.reason in _PLAIN,
                    reached=False,
                )
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
        text = self._hidden(str(error).strip())
        return f"{type(error).__name__}: {text[:200]}" if text else type(error).__name__


def _model(body: Any) -> str:
    """The ``model`` field of a body posted, or nothing: what an error naming a model is held to."""
    match body:
        case {"model": str(model)}:
            return model
        case _:
            return ""


# What OpenSSL says when the server answers a TLS handshake in plain HTTP (an https:// URL for an
# http:// server): older versions one, newer ones another.
_PLAIN = frozenset({"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "HTTP_REQUEST", "PACKET_LENGTH_TOO_LONG"})


def _handshaken(error: BaseException) -> ssl.SSLError | None:
    """The ``ssl.SSLError`` among a failed connection's causes, when it got as far as TLS."""
    seen: BaseException | None = error
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, ssl.SSLError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


class OnTheWire:
    """httpx2's trace hook for one request: waits for the moment its ``Told`` says the head may be
    written, and tells it the moment the head was written to the connection (after the connection
    was opened, when it is a new one)."""

    def __init__(self, told: Told) -> None:
        self._told = told

    async def __call__(self, event: str, info: dict[str, Any]) -> None:
        if event.endswith(".send_request_headers.started"):
            await self._told.writable()  # a strict limit's request, let go ahead, waits here for its moment
        elif event.endswith(".send_request_headers.complete"):
            self._told.wrote(asyncio.get_running_loop().time())


