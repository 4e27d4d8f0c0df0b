"""Where the agent sends its own spans while a run plays: OTLP/HTTP on 127.0.0.1 (issue 30, item 4).

With ``receive_traces = true`` a run listens on 127.0.0.1 (``Receiver``) and gives the address to
the agent as OpenTelemetry's ``OTEL_EXPORTER_OTLP_ENDPOINT``: an agent instrumented with an
OpenTelemetry SDK sends its spans here, and since each turn it answers carries the attempt's trace
context (``tracecontext``), its spans carry the attempt's trace id. Each attempt says when it starts
(``opened``) and, once its dialogue is over, takes what came for its trace (``taken``): it waits,
up to ``wait`` seconds, until every turn it played has a span of the agent's under it. The
agent's top span of a turn ends after the spans within it, and an SDK sends spans in the order
they end, so once it has come the turn's spans have. A run whose agent has sent nothing by the
time one attempt waited its whole time waits no more (``silent``), until a span comes.

The server speaks as much HTTP/1.1 as OpenTelemetry's exporters use: ``POST`` to ``/v1/traces``
(and ``/v1/logs`` and ``/v1/metrics``, taken and dropped, so an SDK that sends them too is not
told it failed), bodies by length or in chunks, gzip, kept-alive connections; binary Protobuf or
JSON by ``Content-Type``. What it takes is bounded: a request's head and body, the spans kept of
one attempt; spans of no attempt under way (late ones, another program's) are counted, not kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import threading
import zlib
from collections.abc import AsyncIterator, Callable, Sequence

import msgspec

from convy.received import AgentSpan, spans

LOOPBACK = "127.0.0.1"
MOST_HEAD = 64 * 1024  # bytes of a request's line and headers
MOST_BODY = 32 * 1024 * 1024  # bytes of a request's body, unzipped
MOST_SPANS = 1000  # spans kept of one attempt; the rest are counted
MOST_CONNECTIONS = 64  # connections open at once; one more is closed at once
IDLE = 60.0  # seconds a connection may take to send a whole request
RECENT = 4096  # the attempts that ended latest, whose spans that still come are counted late
TRACES, LOGS, METRICS = "/v1/traces", "/v1/logs", "/v1/metrics"
_CLOSING = 5.0  # seconds the connections open when the run ends have to close


class Received(msgspec.Struct, frozen=True):
    """What came for one attempt's trace: its spans in the order they came, how many more came
    than are kept, whether every turn it waited for had a span of the agent's under it
    (``whole``), and whether its tool calls can be read from them (``tooled``: the agent has sent
    an ``execute_tool`` span in this run, so one that called a tool says so, and none was left
    out of this attempt's)."""

    spans: tuple[AgentSpan, ...] = ()
    dropped: int = 0
    whole: bool = False
    tooled: bool = False


class _Held:
    """The spans of one attempt under way, the parents they name, whether a tool's span was left
    out, and the event loop of the attempt, told when more come."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.spans: list[AgentSpan] = []
        self.parents: set[str] = set()
        self.dropped = 0
        self.lost = False  # a tool's span was left out: the calls are not all there
        self.loop = loop
        self.came = asyncio.Event()

    def keep(self, span: AgentSpan, tool: bool) -> None:
        """Keep ``span``: up to ``MOST_SPANS``, and tools' spans up to twice that (they are what
        the attempt's checks read); past those, counted. Its parent is noted whatever the count."""
        self.parents.add(span.parent)
        if len(self.spans) < MOST_SPANS or tool and len(self.spans) < 2 * MOST_SPANS:
            self.spans.append(span)
            return
        self.dropped += 1
        self.lost = self.lost or tool

    def told(self) -> None:
        """Wake the attempt waiting for them, from the receiver's thread."""
        try:
            self.loop.call_soon_threadsafe(self.came.set)
        except RuntimeError:  # its loop has closed: nobody waits
            pass


class _Request(msgspec.Struct, frozen=True):
    """A request as it came: its method, path (without a query), headers (names in lower case) and body."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class _Refused(Exception):
    """A request answered with an error and the connection closed: its status and why."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


# The headers that frame a body: each given once.
_SINGLE = frozenset({"content-length", "transfer-encoding"})
_DIGITS = re.compile(r"[0-9]{1,12}")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,12}")

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 411: "Length Required",
            413: "Content Too Large", 415: "Unsupported Media Type", 431: "Request Header Fields Too Large",
            501: "Not Implemented"}


class Receiver:
    """An OTLP/HTTP endpoint on 127.0.0.1 that keeps the spans of the attempts under way.

    Its socket is bound when it is made (``port`` 0: one the system picks), so its address is
    known before the agent is loaded; it answers while ``serving``, in a thread and event loop of
    its own: an agent in the run's own process that sends its spans as it makes them, blocking
    (the SDK's ``SimpleSpanProcessor``), is answered though it holds the run's loop meanwhile.
    ``close`` lets the port go.
    """

    def __init__(self, port: int = 0, wait: float = 10.0) -> None:
        self._socket = socket.create_server((LOOPBACK, port))
        self.url = f"http://{LOOPBACK}:{self._socket.getsockname()[1]}"
        self.wait = wait
        self._lock = threading.Lock()  # what the receiver's thread and the attempts share
        self._open: dict[str, _Held] = {}
        self._ended: dict[str, None] = {}  # the traces of the attempts that ended latest, at most RECENT, oldest first
        self._hidden: Callable[[str], str] = str  # what hides the run's secrets in a text, before it is cut
        self._waiting: Callable[[], None] | None = None  # told as an attempt begins to wait (``serving``)
        self.begun(str)

    def begun(self, hidden: Callable[[str], str]) -> None:
        """An agent's runs begin: what is known of what it sends starts afresh, and ``hidden``
        hides its run's secrets in what it sends (before a text is cut, so none is left in part)."""
        with self._lock:
            self._hidden = hidden
            self.heard = False  # a span of one of its attempts came
            self.silent = False  # an attempt waited its whole time, and nothing had come
            self.tooled = False  # an execute_tool span of its came: its spans show its tool calls
            self.late = 0  # spans of its attempts that came after their attempt ended
            self.unmatched = 0  # spans of no attempt of its: another program's
            self.dropped = 0  # spans past what an attempt keeps
            self.unread = 0  # requests that did not read as OTLP
            self.problem = ""  # the first of them, said
            self._ended.clear()

    @contextlib.asynccontextmanager
    async def serving(self, waiting: Callable[[], None] | None = None) -> AsyncIterator[Receiver]:
        """Answer on this receiver's port, in a thread of its own, for as long as the block runs;
        ``waiting`` is called, in the attempts' loop, each time an attempt begins to wait for spans
        (a bench starts another worker, as the attempt holds no place meanwhile)."""
        self._waiting = waiting
        ready = threading.Event()
        stopping: list[Callable[[], object]] = []
        thread = threading.Thread(target=asyncio.run, args=(self._served(ready, stopping),), name="convy-traces", daemon=True)
        thread.start()
        await asyncio.to_thread(ready.wait)
        try:
            yield self
        finally:
            self._waiting = None
            if stopping:
                stopping[0]()
            await asyncio.to_thread(thread.join)

    async def _served(self, ready: threading.Event, stopping: list[Callable[[], object]]) -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        writers: dict[asyncio.StreamWriter, asyncio.Task[None]] = {}

        async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            writers[writer] = task
            try:
                await self._connected(reader, writer, len(writers))
            finally:
                writers.pop(writer, None)

        try:
            server = await asyncio.start_server(connected, sock=self._socket.dup(), limit=MOST_HEAD)
        finally:
            stopping.append(lambda: loop.call_soon_threadsafe(stop.set))
            ready.set()
        await stop.wait()
        server.close()
        # Each open connection closed, and its reader then ends at its end: none is left to be
        # cancelled as the loop closes (which asyncio's streams of 3.11 report as an error).
        handling = list(writers.values())
        for writer in list(writers):
            writer.close()
        if handling:
            await asyncio.wait(handling, timeout=_CLOSING)
        await server.wait_closed()

    def close(self) -> None:
        self._socket.close()

    def opened(self, trace: str) -> None:
        """An attempt of trace id ``trace`` has started, in the running event loop: its spans are kept from now."""
        held = _Held(asyncio.get_running_loop())
        with self._lock:
            self._open[trace] = held

    def forgotten(self, trace: str) -> None:
        """An attempt has ended: spans of its trace that come from now are counted late, not kept."""
        with self._lock:
            self._let_go(trace)

    def _let_go(self, trace: str) -> None:
        if self._open.pop(trace, None) is not None:
            self._ended[trace] = None
            if len(self._ended) > RECENT:
                del self._ended[next(iter(self._ended))]

    async def taken(self, trace: str, turns: Sequence[str]) -> Received:
        """What came for ``trace``, once each of ``turns`` (the agent's turns' span ids) has a span
        of the agent's under it, or ``wait`` seconds have gone; the attempt's spans are let go."""
        with self._lock:
            held = self._open.get(trace)
        if held is None:
            return Received()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait
        told = False
        while True:
            with self._lock:
                whole = self._whole(held, turns)
                if whole or (self.silent and not self.heard):
                    break
                held.came.clear()
            left = deadline - loop.time()
            if left <= 0:
                with self._lock:
                    self.silent = self.silent or not self.heard
                break
            if not told and self._waiting is not None:
                told = True
                self._waiting()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await held.came.wait()
        with self._lock:
            self._let_go(trace)
            self.dropped += held.dropped
            whole = self._whole(held, turns)
            return Received(tuple(held.spans), held.dropped, whole, self.tooled and not held.lost)

    @staticmethod
    def _whole(held: _Held, turns: Sequence[str]) -> bool:
        return all(turn in held.parents for turn in turns)

    def kept(self, came: Sequence[AgentSpan]) -> None:
        """Spans that came: each kept with its attempt, if one under way has its trace; one of an
        attempt that ended counted late (the agent is heard all the same), another's unmatched."""
        told: dict[int, _Held] = {}
        with self._lock:
            for span in came:
                tool = bool(span.tool())
                held = self._open.get(span.trace)
                if held is None:
                    if span.trace in self._ended:
                        self.late += 1
                        self.heard = True
                        self.tooled = self.tooled or tool
                    else:
                        self.unmatched += 1
                    continue
                self.heard = True
                self.tooled = self.tooled or tool
                held.keep(span, tool)
                told[id(held)] = held
        for held in told.values():
            held.told()

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, open_now: int) -> None:
        try:
            if open_now > MOST_CONNECTIONS:
                return
            while True:
                try:
                    async with asyncio.timeout(IDLE):
                        request = await self._request(reader)
                except TimeoutError:  # nothing whole came for a minute: let the connection go
                    return
                except _Refused as refused:
                    writer.write(_answer(refused.status, b"", "text/plain", close=True))
                    await writer.drain()
                    return
                if request is None:
                    return
                closing = request.headers.get("connection", "").lower() == "close"
                writer.write(self._answered(request, closing))
                await writer.drain()
                if closing:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    def _answered(self, request: _Request, closing: bool) -> bytes:
        json = request.headers.get("content-type", "").split(";", 1)[0].strip().lower() == "application/json"
        kind = "application/json" if json else "application/x-protobuf"
        empty = b"{}" if json else b""
        if request.method != "POST":
            return _answer(405, b"", "text/plain", closing)
        match request.path:
            case "/v1/traces":
                try:
                    came = spans(request.body, json, self._hidden)
                except ValueError as error:
                    with self._lock:
                        self.unread += 1
                        self.problem = self.problem or f"a request to {TRACES} did not read as OTLP {'JSON' if json else 'Protobuf'} ({error})"
                    return _answer(400, b"", "text/plain", closing)
                self.kept(came)
                return _answer(200, empty, kind, closing)
            case "/v1/logs" | "/v1/metrics":
                return _answer(200, empty, kind, closing)
            case _:
                return _answer(404, b"", "text/plain", closing)

    async def _request(self, reader: asyncio.StreamReader) -> _Request | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as ended:
            if ended.partial.strip():
                raise _Refused(400, "a request cut short") from None
            return None  # the connection closed between requests
        except asyncio.LimitOverrunError:
            raise _Refused(431, "a request's head too large") from None
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise _Refused(400, "no HTTP request line")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                name = name.strip().lower()
                if name in headers and name in _SINGLE:  # two lengths: which one frames the body is not certain
                    raise _Refused(400, f"{name} given twice")
                headers[name] = value.strip()
        if "content-length" in headers and "transfer-encoding" in headers:
            raise _Refused(400, "a content length and a transfer encoding both")
        body = await self._body(reader, headers)
        coding = headers.get("content-encoding", "identity").lower()
        if coding == "gzip":
            body = _unzipped(body)
        elif coding not in ("identity", ""):
            raise _Refused(415, f"content encoding {coding}")
        return _Request(parts[0].upper(), parts[1].split("?", 1)[0], headers, body)

    async def _body(self, reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
        coding = headers.get("transfer-encoding")
        if coding is not None and coding.lower() != "chunked":
            raise _Refused(501, f"transfer encoding {coding}")  # read as no body, its bytes would be the next request
        if coding is not None:
            chunks: list[bytes] = []
            size = 0
            while True:
                line = (await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip()
                if not _HEX.fullmatch(line):
                    raise _Refused(400, "a chunk's size")
                length = int(line, 16)
                size += length
                if size > MOST_BODY:
                    raise _Refused(413, "a body too large")
                if length == 0:
                    while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers, then the blank line
                        pass
                    return b"".join(chunks)
                chunks.append(await reader.readexactly(length))
                await reader.readexactly(2)
        length_text = headers.get("content-length", "0")
        if not _DIGITS.fullmatch(length_text):
            raise _Refused(400, "a content length")
        length = int(length_text)
        if length > MOST_BODY:
            raise _Refused(413, "a body too large")
        return await reader.readexactly(length) if length else b""


def _unzipped(body: bytes) -> bytes:
    unzip = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = unzip.decompress(body, MOST_BODY + 1)
    except zlib.error:
        raise _Refused(400, "a gzip body that does not unzip") from None
    if len(data) > MOST_BODY or unzip.unconsumed_tail:
        raise _Refused(413, "a body too large")
    return data


def _answer(status: int, body: bytes, kind: str, close: bool) -> bytes:
    head = f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
    if close:
        head += "Connection: close\r\n"
    return head.encode() + b"\r\n" + body
