"""The process that reads the agent's spans off the wire while a run plays (issue 30, items 4 and 5).

``receiver.Receiver`` binds a port on 127.0.0.1 and, while its run plays, starts this module
(``python -m convy.listener FD``) with the listening socket. Here the OTLP/HTTP requests are
answered and their spans decoded (``received.spans``), with the run's secrets hidden before a text
is cut; the run's process is handed each request's spans ready-made, by trace, each as the
attempt's record keeps it (JSON) and the tool calls among them read, so the work of reading them
never takes its interpreter from the attempts. Read in a thread of the run's process, with
instant fakes sending two spans a turn, a run played 2.4 times slower.

The server speaks as much HTTP/1.1 as OpenTelemetry's exporters use: ``POST`` to ``/v1/traces``
(and ``/v1/logs`` and ``/v1/metrics``, taken and dropped, so an SDK that sends them too is not
told it failed), bodies by length or in chunks, gzip, kept-alive connections; binary Protobuf or
JSON by ``Content-Type``. What it takes is bounded: a request's head and body, the connections
open at once, the time a request may take to come whole.

Between the two processes, frames: four bytes of length, then MessagePack. The run sends ``Told``
(the secrets to hide, each agent's added to those before), then ``Ending``; this process sends
``Heard`` (a request's spans, or why one did not read). At ``Ending`` (or its input's end) the
connections open are closed, what was heard is sent, and it ends. It is in a session of its own, so a Ctrl+C meant for
the run does not end it in the middle of a frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import re
import socket
import sys
import zlib
from collections.abc import Callable
from typing import IO

import msgspec

from convy.received import Came, grouped, spans
from convy.secrets import Secrets

MOST_HEAD = 64 * 1024  # bytes of a request's line and headers
MOST_BODY = 32 * 1024 * 1024  # bytes of a request's body, unzipped
MOST_CONNECTIONS = 64  # connections open at once; one more is closed at once
IDLE = 60.0  # seconds a connection may take to send a whole request
FRAMED = 1000  # spans in one frame to the run at most: a large request is sent in several
MOST_UNREAD = 64 * 1024 * 1024  # bytes the run has not read yet, past which spans are refused for a while
TRACES, LOGS, METRICS = "/v1/traces", "/v1/logs", "/v1/metrics"
F_SETPIPE_SZ = 1031  # fcntl's, on Linux
CLOSING = 5.0  # seconds the connections open when the run ends have to close


class Told(msgspec.Struct, frozen=True, tag="told"):
    """What the run tells this process: more secrets to hide in what it reads."""

    secrets: Secrets


class Ending(msgspec.Struct, frozen=True, tag="ending"):
    """The run has ended: close the connections, say the rest, and end. Said, not left to the
    input's end: a process the run forked may hold that pipe open long after."""


class Heard(msgspec.Struct, frozen=True, omit_defaults=True):
    """What this process tells the run: the spans of a request (some of them, for a large one),
    by trace (``received.Came``), or why a request to ``/v1/traces`` did not read (``unread``)."""

    came: tuple[Came, ...] = ()
    unread: str = ""


def framed(message: Told | Ending | Heard) -> bytes:
    body = msgspec.msgpack.encode(message)
    return len(body).to_bytes(4, "big") + body


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
            501: "Not Implemented", 503: "Service Unavailable"}


class Listener:
    """The server of one play: the requests on ``server_socket`` answered, each one's spans or
    its failure to read passed to ``heard`` as a frame, with the secrets ``Told`` so far hidden. While the run
    is ``busy`` (more than ``MOST_UNREAD`` bytes it has not read), spans are answered 503, which an
    OTLP exporter takes as "try again later"."""

    def __init__(self, heard: Callable[[bytes], None], busy: Callable[[], bool] = lambda: False) -> None:
        self._heard = heard
        self._busy = busy
        self.secrets = Secrets()

    async def listened(self, server_socket: socket.socket, told: asyncio.StreamReader) -> None:
        """Answer on ``server_socket`` until ``told`` says it is ``Ending`` (or ends), taking each
        ``Told`` it brings; then close the connections open and end."""
        writers: dict[asyncio.StreamWriter, asyncio.Task[None]] = {}

        async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            writers[writer] = task
            try:
                await self._connected(reader, writer, len(writers))
            finally:
                writers.pop(writer, None)

        server = await asyncio.start_server(connected, sock=server_socket, limit=MOST_HEAD)
        decoder = msgspec.msgpack.Decoder(Told | Ending)
        while True:
            try:
                length = int.from_bytes(await told.readexactly(4), "big")
                message = decoder.decode(await told.readexactly(length))
            except (asyncio.IncompleteReadError, msgspec.DecodeError):
                break
            match message:
                case Told(secrets=secrets):
                    self.secrets = self.secrets + secrets
                case Ending():
                    break
        server.close()
        # Each open connection closed, and its reader then ends at its end: none is left to be
        # cancelled as the loop closes (which asyncio's streams of 3.11 report as an error).
        handling = list(writers.values())
        for writer in list(writers):
            writer.close()
        if handling:
            await asyncio.wait(handling, timeout=CLOSING)
        with contextlib.suppress(TimeoutError):  # from 3.12 it waits for every connection: one that never reads holds it
            await asyncio.wait_for(server.wait_closed(), CLOSING)

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, open_now: int) -> None:
        try:
            if open_now > MOST_CONNECTIONS:
                return
            while True:
                try:
                    async with asyncio.timeout(IDLE):
                        request = await _request(reader)
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
            case "/v1/traces" if self._busy():
                return _answer(503, b"", "text/plain", closing)
            case "/v1/traces":
                try:
                    came = spans(request.body, json, self.secrets)
                except ValueError as error:
                    self._heard(framed(Heard(unread=f"a request to {TRACES} did not read as OTLP {'JSON' if json else 'Protobuf'} ({error})")))
                    return _answer(400, b"", "text/plain", closing)
                try:
                    said = [framed(Heard(tuple(grouped(came[first : first + FRAMED])))) for first in range(0, len(came), FRAMED)]
                except (OverflowError, TypeError, ValueError) as error:  # a value MessagePack cannot carry: the decoder's bounds missed it
                    said = [framed(Heard(unread=f"a request to {TRACES} held a value convy cannot keep ({error})"))]
                    status = 400
                else:
                    status = 200
                for frame in said:
                    self._heard(frame)
                return _answer(status, empty if status == 200 else b"", kind if status == 200 else "text/plain", closing)
            case "/v1/logs" | "/v1/metrics":
                return _answer(200, empty, kind, closing)
            case _:  # said, as an exporter given a wrong URL would otherwise send to it unheard all run
                path = self.secrets.hidden(request.path)  # a token in a wrong exporter URL is not said
                shown = path if len(path) <= 80 else path[:80] + "..."
                self._heard(framed(Heard(unread=(
                    f"a request to {shown}, not {TRACES}, was answered 404: OTEL_EXPORTER_OTLP_ENDPOINT is the address "
                    f"alone, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT the whole URL, ending in {TRACES}"
                ))))
                return _answer(404, b"", "text/plain", closing)


async def _request(reader: asyncio.StreamReader) -> _Request | None:
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
    body = await _body(reader, headers)
    coding = headers.get("content-encoding", "identity").lower()
    if coding == "gzip":
        body = _unzipped(body)
    elif coding not in ("identity", ""):
        raise _Refused(415, f"content encoding {coding}")
    return _Request(parts[0].upper(), parts[1].split("?", 1)[0], headers, body)


async def _body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
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


class _Telling(asyncio.Protocol):
    """The run's end of the pipe this process tells it through: closed once all it was given is sent."""

    def __init__(self) -> None:
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


async def _main(server_socket: socket.socket, given: IO[bytes], telling: IO[bytes]) -> None:
    loop = asyncio.get_running_loop()
    told = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(told), given)
    # Written without waiting: a run whose loop an agent holds (one that exports as each span
    # ends, blocking) is still answered. What the run has not read yet is bounded (``busy``).
    transport, said = await loop.connect_write_pipe(_Telling, telling)
    listener = Listener(transport.write, lambda: transport.get_write_buffer_size() > MOST_UNREAD)
    await listener.listened(server_socket, told)
    transport.close()  # once what is written is sent
    await said.closed


def main(argv: list[str]) -> int:
    """``python -m convy.listener FD``: started by ``receiver.Receiver`` only, ``FD`` its listening socket."""
    server_socket = socket.socket(fileno=int(argv[0]))
    with contextlib.suppress(OSError):  # Linux: what waits for the run to read it, in a pipe of 1 MiB, not 64 KiB
        fcntl.fcntl(sys.stdout.fileno(), F_SETPIPE_SZ, 1 << 20)
    try:
        asyncio.run(_main(server_socket, sys.stdin.buffer, sys.stdout.buffer))
    except BrokenPipeError:  # the run is gone: nobody to tell
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
