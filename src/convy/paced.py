"""A framework's own HTTP client, made to send as convy's HTTP layer sends.

An agent built on a framework (the OpenAI Agents SDK, pydantic-ai, LangGraph through
langchain-openai) reaches its model through the OpenAI SDK's client, which sends over httpx2.
``Paced`` is the httpx2 transport to give that client (``client``): inside an agent's turn
(``busy.TURN``) each request goes through the turn's places, paced as a request of convy's own
(its service named by its address and key, what its answer says of the limits heard, its head
written at the moment a strict limit allows), and a request the service refuses (429, 503) is sent
again on its own after the pause the service asked for, while the agent's patience lasts: the
framework sees the answer, never the refusal, and the rest of the turn is not played again.
Outside a turn it sends as the transport under it does.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import weakref
from contextvars import ContextVar
from typing import Any

import httpx2
import msgspec

from convy.agent import NoUsage, Usage
from convy.busy import TURN, Busy
from convy.chat import Completion, Prices
from convy.http import OnTheWire, RateHeaders, RetryAfter
from convy.problems import ModelFailure
from convy.quota import TOLD
from convy.secrets import Secrets

_KEYED = ("authorization", "api-key", "x-api-key")  # the headers that hold a key, as services name them
_SAID = 300  # characters of a refusal's body kept, as convy's own requests keep


class Paced(httpx2.AsyncBaseTransport):
    """An httpx2 transport that sends each request of a framework's client within the agent's
    turn under way, as ``http.JsonConnection`` sends convy's own (the module's doc)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self._given = inner
        # Without one given, a transport of its own for each event loop: a connection pool is
        # bound to the loop it was opened in, and an agent file's client, made once, is used by
        # each run of a process (a notebook's, a test suite's), each in a loop of its own.
        self._own: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx2.AsyncBaseTransport] = weakref.WeakKeyDictionary()

    @property
    def _inner(self) -> httpx2.AsyncBaseTransport:
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        own = self._own.get(loop)
        if own is None:
            own = self._own[loop] = httpx2.AsyncHTTPTransport()
        return own

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        turn = TURN.get()
        if turn is None:
            return await self._sent(request)
        await request.aread()  # its body kept, to be sent again if the service refuses it
        return await turn.resent(functools.partial(self._sent, request))

    async def _sent(self, request: httpx2.Request) -> httpx2.Response:
        told = TOLD.get()
        if told is not None:
            told.service = limited_by(request)
            if told.listened():
                request.extensions = {**request.extensions, "trace": OnTheWire(told)}
        response = await self._inner.handle_async_request(request)
        if told is not None:
            told.heard = RateHeaders(response.headers).heard()
        listening = WIRE.get()
        if listening is not None and response.status_code < 300:
            listening.append(await _usage(request, response))
        if response.status_code >= 400 and response.status_code not in (429, 503):
            return await _hidden(request, response)
        if response.status_code in (429, 503):
            await response.aread()
            await response.aclose()
            reason = response.extensions.get("reason_phrase", b"")
            said = reason.decode("ascii", "replace") if isinstance(reason, bytes) else str(reason)
            raise Busy(f"{request.method} {request.url.copy_with(query=None)}: {response.status_code} {said}".rstrip(), RetryAfter(response.headers).seconds())
        return response

    async def aclose(self) -> None:
        if self._given is not None:
            await self._given.aclose()
            return
        own = self._own.pop(asyncio.get_running_loop(), None)
        if own is not None:
            await own.aclose()


# What each request of the turn under way took, as its answer said on the wire, in the order they
# were answered, where an adapter listens (``frameworks``): read by convy's own reader of a Chat
# Completions reply (``chat.Completion``), its cost the provider's where it said one (OpenRouter's
# usage.cost, LiteLLM's header, which the frameworks drop) and its model the one the request named
# (a price table's name, not the dated one a service answers with); ``NoUsage`` for an answer that
# said none (never free); ``None`` for one not read here (a stream, or a reply of another API), for
# which the adapter keeps what its framework counted.
WIRE: ContextVar[list[Heard | None] | None] = ContextVar("convy_wire", default=None)


class Heard(msgspec.Struct, frozen=True):
    """What one answered request took, as its answer said on the wire, and the model it named."""

    model: str
    usage: Usage | NoUsage


async def _usage(request: httpx2.Request, response: httpx2.Response) -> Heard | None:
    """What one answered request took, as its answer says (``WIRE``)."""
    if response.headers.get("content-type", "").partition(";")[0].strip().lower() != "application/json":
        return None
    await response.aread()  # the reply goes by whole: read here, and read again from memory by the framework
    try:
        reply = msgspec.json.decode(response.content)
        body = msgspec.json.decode(request.content) if request.content else {}
    except msgspec.DecodeError:
        return None
    if not isinstance(reply, dict) or not request.url.path.rstrip("/").endswith("/chat/completions"):
        return None  # the Responses API's, or another's: its framework's count is kept
    model = body.get("model", "") if isinstance(body, dict) else ""
    try:
        return Heard(str(model), Completion(reply, str(model), Prices(), dict(response.headers)).read().usage)
    except ModelFailure:
        return None


async def _hidden(request: httpx2.Request, response: httpx2.Response) -> httpx2.Response:
    """A refusal's answer with the request's key, and anything shaped like a key, hidden from its
    body and cut to its start: the framework makes its error of that text, which reaches the
    attempt's record, and a service or a proxy may echo the request's headers there (convy's own
    requests hide it so, ``http.JsonConnection._said``)."""
    await response.aread()
    values = [value.strip() for name, value in request.headers.items() if name.lower() in _KEYED]
    keys = Secrets(tuple(dict.fromkeys(word for value in values for word in (value, *value.split()) if word)))
    text = keys.opening(response.content.decode("utf-8", "replace"), _SAID)
    headers = [(name, value) for name, value in response.headers.multi_items() if name.lower() not in ("content-length", "content-encoding", "transfer-encoding")]
    await response.aclose()
    return httpx2.Response(response.status_code, headers=headers, content=text.encode(), request=request, extensions=response.extensions)


def limited_by(request: httpx2.Request) -> str:
    """Whose limit ``request`` counts against, taken to be one per address and key, as
    ``http.JsonEndpoint.limited_by`` takes it: the scheme, host and port, and a digest of the
    headers that hold a key."""
    keys = sorted(value for name, value in request.headers.items() if name.lower() in _KEYED)
    digest = hashlib.sha256("\n".join(keys).encode()).hexdigest()
    return f"{request.url.scheme}://{request.url.netloc.decode('ascii')} {digest[:16]}"


def client(**given: Any) -> httpx2.AsyncClient:
    """An httpx2 client whose requests are ``Paced``: for a framework's OpenAI client
    (``AsyncOpenAI(http_client=client(), max_retries=0)``: convy sends a refused request again,
    and the SDK's own tries would not wait the pause the service asked for)."""
    return httpx2.AsyncClient(transport=Paced(), **given)
