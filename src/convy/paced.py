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

import functools
import hashlib
from contextvars import ContextVar
from typing import Any

import httpx2
import msgspec

from convy.agent import Cost
from convy.busy import TURN, Busy
from convy.chat import reported
from convy.http import OnTheWire, RateHeaders, RetryAfter
from convy.quota import TOLD

_KEYED = ("authorization", "api-key", "x-api-key")  # the headers that hold a key, as services name them


class Paced(httpx2.AsyncBaseTransport):
    """An httpx2 transport that sends each request of a framework's client within the agent's
    turn under way, as ``http.JsonConnection`` sends convy's own (the module's doc)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self._inner = inner or httpx2.AsyncHTTPTransport()

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
        costs = COSTS.get()
        if costs is not None and response.status_code < 300 and _json(response):
            # What the provider said the request cost (OpenRouter's usage.cost, LiteLLM's header),
            # which the frameworks drop: read here, where the reply goes by whole.
            await response.aread()
            try:
                usage = msgspec.json.decode(response.content).get("usage") or {}
            except (msgspec.DecodeError, AttributeError):
                usage = {}
            costs.append(reported(usage.get("cost") if isinstance(usage, dict) else None, response.headers))
        if response.status_code in (429, 503):
            await response.aread()
            await response.aclose()
            reason = response.extensions.get("reason_phrase", b"")
            said = reason.decode("ascii", "replace") if isinstance(reason, bytes) else str(reason)
            raise Busy(f"{request.method} {request.url.copy_with(query=None)}: {response.status_code} {said}".rstrip(), RetryAfter(response.headers).seconds())
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def _json(response: httpx2.Response) -> bool:
    return response.headers.get("content-type", "").partition(";")[0].strip().lower() == "application/json"


# The costs the provider reported for the requests of the turn under way, in the order they were
# answered (None for one it said none of), where an adapter listens (``frameworks``): a framework
# keeps the tokens of each request but drops the cost.
COSTS: ContextVar[list[Cost | None] | None] = ContextVar("convy_costs", default=None)


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
