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

The requests are answered, and their spans decoded, by a process of the run's own
(``listener``), started with the listening socket while the run plays (``serving``): what it
hears comes back ready-made, in frames, which a task of the run's event loop reads as they come
and keeps each span with its attempt. Spans of no attempt under way (late ones, another
program's) are counted, not kept, and what an attempt keeps is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import msgspec

from convy.listener import CLOSING, Ending, Heard, Told, framed
from convy.received import NO_SPANS, AgentSpan, Came
from convy.secrets import Secrets

LOOPBACK = "127.0.0.1"
MOST_SPANS = 1000  # spans kept of one attempt; the rest are counted
RECENT = 4096
_READ = 1 << 20  # bytes of the listener's frames read at a time, at most: a pipe's worth
_MOANED = 4096  # bytes of the listener's error output kept, the last
# The listener's start: this convy's folder searched after everything else, so the listener is
# this convy where no other is installed, and no module of the standard library is shadowed.
_STARTED = "import sys; sys.path.append(sys.argv.pop()); from convy.listener import main; raise SystemExit(main(sys.argv[1:]))"  # the attempts that ended latest, whose spans that still come are counted late


class Received(msgspec.Struct, frozen=True):
    """What came for one attempt's trace: its spans in the order they came, as its record keeps
    them (JSON), the tool calls among them (``tools``), each span's parent by its id (``links``,
    to find the turn a call was made in), how many more came than are kept, whether every turn it
    waited for had a span of the agent's under it (``whole``), and whether its tool calls can be
    read from them (``tooled``: the agent has sent an ``execute_tool`` span in this run, so one
    that called a tool says so, and none was left out of this attempt's)."""

    spans: msgspec.Raw = NO_SPANS
    tools: tuple[AgentSpan, ...] = ()
    links: dict[str, str] = {}
    dropped: int = 0
    whole: bool = False
    tooled: bool = False


class _Held:
    """The spans of one attempt under way (as JSON), the tool calls among them, the parents they
    name, whether a tool's span was left out, and what wakes the attempt when more come."""

    def __init__(self) -> None:
        self.spans: list[bytes] = []
        self.tools: list[AgentSpan] = []
        self.links: dict[str, str] = {}
        self.parents: set[str] = set()
        self.dropped = 0
        self.lost = False  # a tool's span was left out: the calls are not all there
        self.came = asyncio.Event()

    def keep(self, came: Came) -> None:
        """Keep the spans that ``came``: up to ``MOST_SPANS``, and tools' spans up to twice that
        (they are what the attempt's checks read); past those, counted. Their parents are noted
        whatever the count."""
        self.parents.update(came.parents)
        kept, links = self.spans, self.links
        if len(kept) + len(came.json) <= MOST_SPANS:  # most requests: all of them
            kept.extend(came.json)
            self.tools.extend(came.tools)
            links.update(zip(came.ids, came.parents))
            return
        tools = dict(zip(came.at, came.tools))
        for place, json in enumerate(came.json):
            tool = tools.get(place)
            if len(kept) < MOST_SPANS or tool is not None and len(kept) < 2 * MOST_SPANS:
                kept.append(json)
                links[came.ids[place]] = came.parents[place]  # every kept span's: a tool's turn is found through them
                if tool is not None:
                    self.tools.append(tool)
                continue
            if len(links) < 4 * MOST_SPANS:  # one left out may still lead from a kept tool's span to its turn
                links[came.ids[place]] = came.parents[place]
            self.dropped += 1
            self.lost = self.lost or tool is not None


class Receiver:
    """An OTLP/HTTP endpoint on 127.0.0.1 that keeps the spans of the attempts under way.

    Its socket is bound when it is made (``port`` 0: one the system picks), so its address is
    known before the agent is loaded; it answers while ``serving``, in a process of its own
    (``listener``), whose frames the run's event loop reads as they come: an agent in the run's
    own process that sends its spans as it makes them, blocking (the SDK's
    ``SimpleSpanProcessor``), is answered though it holds the loop meanwhile. ``close`` lets the
    port go.
    """

    def __init__(self, port: int = 0, wait: float = 10.0) -> None:
        self._socket = socket.create_server((LOOPBACK, port))
        self.url = f"http://{LOOPBACK}:{self._socket.getsockname()[1]}"
        self.wait = wait
        self._open: dict[str, _Held] = {}
        self._ended: dict[str, None] = {}  # the traces of the attempts that ended latest, at most RECENT, oldest first
        self._secrets = Secrets()  # hidden in what the agents send, before a text is cut
        self._telling: asyncio.StreamWriter | None = None  # the listener's input, while it serves
        self._waiting: Callable[[], None] | None = None  # told as an attempt begins to wait (``serving``)
        self.ended: int | None = None  # the listener's code, where it ended before it was told to: no attempt waits for spans
        self.listener: asyncio.subprocess.Process | None = None  # the process that answers, while it serves
        self.moaned = ""  # the last line of the listener's error output, where it wrote any
        self.begun(Secrets())

    def begun(self, secrets: Secrets, sole: bool = False) -> None:
        """An agent's runs begin: what is known of what it sends starts afresh, and ``secrets``
        are hidden in what it sends (with those of the agents before it: hiding more is safe);
        ``sole`` where its spans are the only place its tool calls are seen (a ``JsonAgent`` with
        no ``calls=``): an attempt whose spans do not show them has them unseen (``unseen``)."""
        self._secrets = self._secrets + secrets
        self.sole = sole
        if self._telling is not None:
            self._telling.write(framed(Told(self._secrets)))
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
        """Answer on this receiver's port, in a process of its own, for as long as the block runs,
        what it hears taken in as it comes; ``waiting`` is called each time an attempt begins to
        wait for spans (a bench starts another worker, as the attempt holds no place meanwhile).
        Once a listener has ended before its time (``ended``), none is started again: the port is
        closed, and no attempt waits."""
        self._waiting = waiting
        if self.ended is not None:
            try:
                yield self
            finally:
                self._waiting = None
            return
        listening = self._socket.fileno()
        # -P: the project's folder, where the run is, is not searched before the standard library
        # (a project's token.py would be imported instead of Python's); this convy is searched last.
        # Its output is read by hand, as much as the pipe holds at a time: asyncio's own reader takes
        # 256 KiB a turn of the loop, and a turn of a busy run's loop is long.
        given, said = os.pipe()
        started = False
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-P", "-c", _STARTED, str(listening), str(Path(__file__).resolve().parent.parent),
                stdin=subprocess.PIPE, stdout=said, stderr=subprocess.PIPE, pass_fds=(listening,), start_new_session=True,
            )
            started = True
        finally:
            os.close(said)  # the listener's now, not this process's
            if not started:
                os.close(given)
        assert process.stdin is not None and process.stderr is not None
        self.listener = process
        self._telling = process.stdin
        process.stdin.write(framed(Told(self._secrets)))
        hearing = asyncio.create_task(self._heard(process, given))
        moaning = asyncio.create_task(self._moaned(process.stderr))
        try:
            yield self
        finally:
            self._waiting = None
            self._telling = self.listener = None
            with contextlib.suppress(ConnectionError, RuntimeError):  # one that has ended is told nothing
                process.stdin.write(framed(Ending()))
            process.stdin.close()
            try:  # it closes its connections (at most CLOSING each step), says the rest and ends; else it is ended
                await asyncio.wait_for(asyncio.shield(hearing), 3 * CLOSING)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await hearing
            await moaning

    async def _heard(self, process: asyncio.subprocess.Process, given: int) -> None:
        """Take in what the listener says on ``given``, frame by frame, until it ends; if it ended
        before it was told to, its port is closed (an exporter is refused at once, not left to
        time out), no attempt waits for spans any more, and it is said. Its end is its exit, not
        only the pipe's: a process forked from the run as the listener started holds a copy of
        the pipe, which would never end."""
        loop = asyncio.get_running_loop()
        decoder = msgspec.msgpack.Decoder(Heard)
        room = bytearray(_READ)  # read into, again and again: no buffer of 1 MiB made for each read
        pending = bytearray()
        done: asyncio.Future[None] = loop.create_future()

        def finished() -> None:
            loop.remove_reader(given)
            if not done.done():
                done.set_result(None)

        def readable() -> bool:
            """Take what the pipe holds now; whether anything was there."""
            try:
                size = os.readv(given, [room])
            except BlockingIOError:
                return False
            except OSError:
                size = 0
            if not size:
                finished()
                return False
            pending.extend(memoryview(room)[:size])
            while len(pending) >= 4 and len(pending) - 4 >= (length := int.from_bytes(pending[:4], "big")):
                frame = bytes(pending[4 : 4 + length])
                del pending[: 4 + length]  # gone before it is handled: a failure cannot have it handled twice
                try:
                    heard = decoder.decode(frame)
                except msgspec.DecodeError:  # it says what is not a frame: nothing more of it can be read
                    with contextlib.suppress(ProcessLookupError):
                        process.kill()
                    finished()
                    return False
                if heard.unread:
                    self.unread += 1
                    self.problem = self.problem or heard.unread
                if heard.came:
                    self.kept(heard.came)
            return True

        os.set_blocking(given, False)
        loop.add_reader(given, readable)
        exited = asyncio.ensure_future(process.wait())
        try:
            await asyncio.wait((done, exited), return_when=asyncio.FIRST_COMPLETED)
            while not done.done() and readable():  # it has exited: what it wrote is all there
                pass
            finished()
        finally:
            loop.remove_reader(given)
            os.close(given)
        code = await exited
        if self._telling is not None:
            self.ended = code
            self._socket.close()
            for held in self._open.values():
                held.came.set()

    async def _moaned(self, said: asyncio.StreamReader) -> None:
        """The last line the listener wrote to its error output (the reason, where it ended early),
        with the run's secrets hidden; what came before it is not kept."""
        tail = b""
        while chunk := await said.read(65536):
            tail = (tail + chunk)[-_MOANED:]
        lines = tail.decode(errors="replace").strip().splitlines()
        self.moaned = self._secrets.hidden(lines[-1].strip())[:300] if lines else ""

    def forgotten(self, trace: str) -> None:
        """An attempt has ended: spans of its trace that come from now are counted late, not kept."""
        self._let_go(trace)

    def _let_go(self, trace: str) -> None:
        if self._open.pop(trace, None) is not None:
            self._ended[trace] = None
            if len(self._ended) > RECENT:
                del self._ended[next(iter(self._ended))]

    async def taken(self, trace: str, turns: Sequence[str]) -> Received:
        """What came for ``trace``, once each of ``turns`` (the agent's turns' span ids) has a span
        of the agent's under it, or ``wait`` seconds have gone; the attempt's spans are let go."""
        held = self._open.get(trace)
        if held is None:
            return Received()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait
        timer: asyncio.TimerHandle | None = None  # wakes the attempt at its deadline: one handle, not a timeout's scope each wait
        try:
            while not self._whole(held, turns) and not (self.silent and not self.heard) and self.ended is None:
                if loop.time() >= deadline:
                    self.silent = self.silent or not self.heard
                    break
                if timer is None:
                    timer = loop.call_at(deadline, held.came.set)
                    if self._waiting is not None:
                        self._waiting()
                held.came.clear()
                await held.came.wait()
        finally:
            if timer is not None:
                timer.cancel()
        self._let_go(trace)
        self.dropped += held.dropped
        spans = msgspec.Raw(b"[" + b",".join(held.spans) + b"]") if held.spans else NO_SPANS
        whole = self._whole(held, turns)
        return Received(spans, tuple(held.tools), held.links, held.dropped, whole, self.tooled and not held.lost)

    def unseen(self, received: Received) -> str:
        """Why the tool calls of an attempt that took ``received`` cannot be seen, where its agent's
        are seen only in its spans (``sole``); "" where they can (or are seen elsewhere too)."""
        # Every turn's spans came, but no execute_tool span yet in the run: taken as no call made (an
        # agent instrumented for its tools that called none), and said at the run's end if none ever came.
        if not self.sole or (received.whole and (received.tooled or not self.tooled)):
            return ""
        if received.spans == NO_SPANS:
            why = f"no span of its came for this attempt (traces_wait: {self.wait:g} s)"
        elif not received.whole:
            why = f"not every turn's spans came within traces_wait ({self.wait:g} s)"
        else:
            why = "some of its tool spans were left out (past what an attempt keeps)"
        return f"its tool calls are seen only in its own spans, and {why}: not every tool call could be seen"

    @staticmethod
    def _whole(held: _Held, turns: Sequence[str]) -> bool:
        return all(turn in held.parents for turn in turns)

    def kept(self, came: Sequence[Came]) -> None:
        """Spans that came, by trace: each kept with its attempt, if one under way has its trace;
        those of an attempt that ended counted late (the agent is heard all the same), another's
        unmatched."""
        for one in came:
            tool = bool(one.tools)
            held = self._open.get(one.trace)
            if held is None:
                if one.trace in self._ended:
                    self.late += len(one.ids)
                    self.heard = True
                    self.tooled = self.tooled or tool
                else:
                    self.unmatched += len(one.ids)
                continue
            self.heard = True
            self.tooled = self.tooled or tool
            held.keep(one)
            held.came.set()

    def close(self) -> None:
        self._socket.close()

    def opened(self, trace: str) -> None:
        """An attempt of trace id ``trace`` has started: its spans are kept from now."""
        self._open[trace] = _Held()
