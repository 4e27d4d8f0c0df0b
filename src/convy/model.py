"""The models that play the simulated user and the judge.

A ``Model`` answers a list of chat messages with a ``Reply``. ``OpenAiModel`` is one on any Chat
Completions server (OpenAI, OpenRouter, vLLM, SGLang, Ollama, a LiteLLM proxy) by its base URL;
``Completion`` reads such a server's reply into convy's types where it enters, with the cost the
provider reports or one computed from the project's ``Prices``, and a request with no known price
counted as unpriced, never as free. ``Models`` is what a project's ``models.py`` defines: the
simulated user's model and the judge, either of which may be ``Absent`` with the reason, so a run
without a key still plays what needs no model.

``Contained`` turns any error of a model, or an answer that is not a ``Reply``, into
``ModelFailure``; ``PatientModel`` sends each request within the participant's places.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import urlsplit

import msgspec

from convy.agent import NoUsage, Usage
from convy.busy import Busy, Places
from convy.chat import Chunks, Completion, Prices
from convy.problems import EmptyReply, HttpFailure, ModelFailure, Outside, ServiceFailure, StillBusy, UrlProblem

if TYPE_CHECKING:  # imported where a model sends: a run of fakes never loads the HTTP layer
    from convy.http import JsonConnection


class Said(msgspec.Struct, frozen=True, gc=False):
    """One chat message sent to a model."""

    role: Literal["system", "user", "assistant"]
    content: str


class Reply(msgspec.Struct, frozen=True):
    """A model's reply: its text, the tokens the request took, and why it ended as its service
    said (``finish``: a Chat Completions ``finish_reason``, "" when not said); ``length`` (the
    token limit) and ``content_filter`` mean the text was cut, and is not whole."""

    text: str
    usage: Usage | NoUsage = NoUsage()
    finish: str = ""

    def cut(self) -> bool:
        """Whether the service cut the text short."""
        return self.finish in ("length", "content_filter")


class Model(Protocol):
    """A chat model, known in the run folder by its name."""

    @property
    def name(self) -> str: ...

    async def reply(self, messages: tuple[Said, ...]) -> Reply: ...


class Absent(msgspec.Struct, frozen=True):
    """A model the project has not configured, with what to do about it."""

    reason: str = "no model configured in models.py"
    name: str = "absent"


_REPLY = msgspec.json.Decoder(Reply)


class Contained(msgspec.Struct, frozen=True):
    """The same model, whose every error, every answer that is not a ``Reply``, and every empty
    reply, is a ``ModelFailure`` (a busy service past its patience a ``StillBusy``, a request its
    service failed — an ``HttpFailure`` — a ``ServiceFailure``). Every error
    takes in a ``SystemExit`` and a ``CancelledError`` raised while nobody cancelled the attempt
    (``Outside``); its text is read so that describing it cannot fail.

    The reply is outside data: it is encoded and decoded as a ``Reply`` where it enters, so a model
    that returns a string, or a reply whose fields have the wrong types, fails here as itself and
    never later in convy's code, where its error would be taken for someone else's.
    """

    model: Model

    @property
    def name(self) -> str:
        return self.model.name

    async def reply(self, messages: tuple[Said, ...]) -> Reply:
        try:
            answered = await self.model.reply(messages)
        except BaseException as error:
            self.failed(error)
            raise
        return self.kept(answered)

    # ``reply`` in two steps, around the model's own request, so that a caller asking for every
    # simulated turn (``user.SimulatedUser``) takes it without a coroutine of its own.

    def failed(self, error: BaseException) -> None:
        """The model's request raised ``error``: the ``ModelFailure`` it is, raised from it;
        nothing for a ``ModelFailure`` or a stop of convy itself, which go on as they are."""
        if isinstance(error, ModelFailure):
            return
        if isinstance(error, Busy):
            raise StillBusy(f"model {self.model.name}: {Outside(error).text()}") from error
        if isinstance(error, HttpFailure):
            # The service failed the request, not the model its answer: told apart by its kind,
            # here where it is caught, so an attempt it ends is the service's (``NoVerdict.service``).
            # A request that reached the service is counted, its tokens not reported.
            spent = (NoUsage(),) if getattr(error, "reached", True) else ()
            raise ServiceFailure(f"model {self.model.name} failed: {Outside(error).named()}", spent) from error
        if not Outside(error).theirs():  # a bug in the model's code (a SystemExit too) must not stop the run
            return
        raise ModelFailure(f"model {self.model.name} failed: {Outside(error).named()}") from error

    def kept(self, answered: object) -> Reply:
        """What the model answered, as a ``Reply``, or the ``ModelFailure`` it is."""
        try:
            reply = _REPLY.decode(msgspec.json.encode(answered))
        except Exception as error:  # whatever it returned, of any type, holding anything
            raise ModelFailure(
                f"model {self.model.name} answered with something that is not a reply: {Outside(error).text()}"
            ) from error
        if not reply.text.strip():
            raise EmptyReply(f"model {self.model.name} gave an empty reply", (reply.usage,))
        return reply


class PatientModel(msgspec.Struct, frozen=True):
    """The same model, sending each request within its participant's places, and again while
    its service is busy and the participant's patience lasts."""

    model: Model
    places: Places

    @property
    def name(self) -> str:
        return self.model.name

    async def reply(self, messages: tuple[Said, ...]) -> Reply:
        # The free way taken here where the places allow (``Places.freely``), without the
        # coroutine of ``Places.sent`` and the partial it sends: every request of a run whose
        # models answer in-process. A refused one, and any other, goes the way of any request.
        places = self.places
        ticket = places.freely(True)
        if ticket is None:
            return await places.sent(functools.partial(self.model.reply, messages))
        try:
            answer = await self.model.reply(messages)
        except Busy as busy:
            refused = busy
        except BaseException:
            places.freely_failed(ticket)
            raise
        else:
            places.freely_answered(ticket)
            return answer
        return await places.freely_refused(functools.partial(self.model.reply, messages), ticket, refused)


Provider = Literal["openai", "openrouter", "azure", "compatible"]


class _Clients:
    """One HTTP client per event loop for a model: reused across its requests, and closed when
    the loop ends.

    The closing rides on asyncio's own shutdown: each client is held open by an async generator
    paused at its ``yield``, and ``asyncio.run`` closes every unfinished async generator before it
    closes the loop, which runs the generator's ``finally``.
    """

    def __init__(self) -> None:
        self.by_loop: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self.owners: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()  # the model each was last handed to
        self._keepers: weakref.WeakKeyDictionary[Any, list[Any]] = weakref.WeakKeyDictionary()

    async def kept(self, loop: Any, connection: JsonConnection) -> JsonConnection:
        """``connection`` as this loop's client, to be closed when the loop shuts down."""
        keeper = self._held(connection)
        await keeper.__anext__()
        self._keepers.setdefault(loop, []).append(keeper)
        self.by_loop[loop] = connection
        return connection

    async def _held(self, connection: JsonConnection) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await connection.client.aclose()


class OpenAiModel(msgspec.Struct, frozen=True):
    """A model on a Chat Completions server, known by ``name`` on that server.

    ``key`` is the API key, best given as pydantic's ``SecretStr`` from an ``Env``; it goes into
    the request's header and nowhere else. ``effort`` is the reasoning effort, sent in the field
    each provider reads (``reasoning.effort`` on OpenRouter, ``reasoning_effort`` elsewhere).
    ``extra`` fields are added to every request's body. With ``stream`` the reply comes as
    server-sent events and is put together, usage included.

    The base URL's scheme is read in any case (``HTTP://`` is ``http://``). Azure OpenAI
    (``*.openai.azure.com``, ``*.cognitiveservices.azure.com``) takes the key in an ``api-key``
    header and the limit as ``max_completion_tokens``, as OpenAI does; its base URL is the
    resource's ``/openai/v1`` (or a deployment's ``/openai/deployments/<name>``), and the bare
    resource is refused with that fix.
    """

    name: str
    base_url: str
    key: Any = None
    temperature: float | None = None
    max_tokens: int | None = None
    effort: Literal["none", "minimal", "low", "medium", "high"] | None = None
    extra: dict[str, Any] = {}
    stream: bool = False
    prices: Prices = Prices()
    timeout: float = 120.0
    provider: Provider | None = None
    clients: _Clients = msgspec.field(default_factory=_Clients)

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise ValueError("name: the model's name on the server is needed")
        if not self.base_url.lower().startswith(("http://", "https://")):
            raise UrlProblem("base_url: must start with http:// or https://", self.base_url)
        # A URL's scheme is the same in any case (RFC 3986): HTTP://host is http://host, written
        # so here, where it enters, for every later test of it.
        scheme, rest = self.base_url.split("://", 1)
        msgspec.structs.force_setattr(self, "base_url", f"{scheme.lower()}://{rest}")
        if self.kind() == "azure" and urlsplit(self.base_url).path.rstrip("/").lower() in ("", "/openai"):
            resource = f"https://{urlsplit(self.base_url).hostname}"
            raise UrlProblem(
                "base_url: an Azure OpenAI resource's API starts at /openai/v1: "
                f"give {resource}/openai/v1 (or a deployment's /openai/deployments/<name>?api-version=...)",
                self.base_url,
            )
        if self.base_url.split("?", 1)[0].rstrip("/").endswith("/chat/completions"):
            raise UrlProblem(
                "base_url: give the base URL ending in /v1 (or wherever the service's API starts); "
                "convy adds /chat/completions",
                self.base_url,
            )

    def __repr__(self) -> str:
        return f"OpenAiModel({self.name!r}, {self.base_url.split('?', 1)[0]!r}, key=<hidden>)"

    def kind(self) -> Provider:
        """The provider, as given or as the base URL tells."""
        if self.provider is not None:
            return self.provider
        # The host, which urlsplit gives in lower case: HTTPS://OpenRouter.AI/api/v1 is OpenRouter.
        host = urlsplit(self.base_url).hostname or ""
        if host == "openrouter.ai" or host.endswith(".openrouter.ai"):
            return "openrouter"
        if host == "api.openai.com":
            return "openai"
        if host.endswith((".openai.azure.com", ".cognitiveservices.azure.com")):
            return "azure"
        return "compatible"

    def body(self, messages: tuple[Said, ...]) -> dict[str, Any]:
        """The request's body for these messages."""
        body: dict[str, Any] = {"model": self.name, "messages": [{"role": said.role, "content": said.content} for said in messages]}
        kind = self.kind()
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            # OpenAI's and Azure's reasoning models refuse max_tokens; both take max_completion_tokens.
            body["max_completion_tokens" if kind in ("openai", "azure") else "max_tokens"] = self.max_tokens
        if self.effort is not None:
            match kind:
                case "openrouter":
                    body["reasoning"] = {"enabled": False} if self.effort == "none" else {"effort": self.effort}
                case _:
                    body["reasoning_effort"] = self.effort
        if kind == "openrouter":
            body["usage"] = {"include": True}
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return {**body, **self.extra}

    async def reply(self, messages: tuple[Said, ...]) -> Reply:
        connection = await self._connection()
        try:
            if self.stream:
                events = [event async for event in connection.events(self.body(messages), "/chat/completions")]
                read = Completion(Chunks(tuple(events)).completion(), self.name, self.prices).read()
            else:
                answer = await connection.response(self.body(messages), "/chat/completions")
                read = Completion(answer.value, self.name, self.prices, answer.headers).read()
            return Reply(read.text, read.usage, read.finish)
        except ModelFailure as failure:
            # A reply of the wrong shape names the model and where it came from.
            from convy.http import JsonEndpoint

            shown = JsonEndpoint(connection.endpoint.at("/chat/completions")).shown()
            # A reply that came but could not be read still took a request: counted, not reported.
            raise ModelFailure(f"model {self.name}: POST {shown}: {failure}", (*failure.requests, NoUsage())) from None

    async def _connection(self) -> JsonConnection:
        """This model's open client in the running event loop, made on its first request there.

        The client is kept with the URL and key it was made for, so a copy of this model with
        another URL or key (``msgspec.structs.replace``) never borrows it.
        """
        loop = asyncio.get_running_loop()
        found = self.clients.by_loop.get(loop)
        if found is not None and self.clients.owners.get(loop) is self:
            return found  # this very model had it last: its URL and key are the same (it is frozen)
        from convy.http import JsonEndpoint

        header = "api-key" if self.kind() == "azure" else "authorization"
        headers = {header: self._secret() if header == "api-key" else f"Bearer {self._secret()}"} if self.key else {}
        endpoint = JsonEndpoint(self.base_url.rstrip("/"), headers, timeout=self.timeout)
        if found is None or found.endpoint != endpoint:
            found = await self.clients.kept(loop, endpoint.opened(256))
        self.clients.owners[loop] = self
        return found

    def _secret(self) -> str:
        match self.key:
            case str(text):
                return text
            case _:
                return self.key.get_secret_value()
