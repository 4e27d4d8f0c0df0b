"""Traces sent to an OpenTelemetry collector while a run plays (issue 30).

``OtlpEndpoint`` is where, read from OpenTelemetry's standard variables
(``OTEL_EXPORTER_OTLP_ENDPOINT``, ``_HEADERS``, ``_PROTOCOL``, ``_TIMEOUT``, ``_COMPRESSION``, and
each one's ``_TRACES_``/``_LOGS_`` form, which wins for its signal), so the collector a team's agents
already report to needs nothing more.

The run itself does nothing for it: ``Shipped``, the run's journal, starts a process of its own
beside the run (``python -m convy.collector``, ``Follower``), which follows the run's
``attempts.jsonl`` as lines are flushed to it, makes each new attempt's trace there
(``traces.RunContext``) and sends the attempts that ended meanwhile in one OTLP/HTTP request for the
spans and one for the evaluation results (``Sender``). Making the traces in the run's own process,
even on a thread, took the run's interpreter from it: with instant fakes a run played three times
slower. A collector that cannot be reached, or that refuses the data, is said once and then sent
nothing more; the run goes on the same (``convy export --format otlp`` writes the traces later). A
collector that asks to wait (429, 502-504) is tried again a few times, after the whole seconds its
``Retry-After`` gives. The headers may hold a key: they are never shown, and neither is the URL's
user, password or query; the process is given them as the run was, in its environment.
"""

from __future__ import annotations

import gzip
import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

import msgspec

from convy.otlp import Signals, rejected
from convy.outcome import Outcome
from convy.plan import Journal
from convy.problems import ConfigurationError
from convy.secrets import Address, Secrets
from convy.terminal import Inert
from convy.traces import RunContext

Protocol = Literal["http/protobuf", "http/json"]

# A header's name, as HTTP writes one (a token).
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_SIGNALS = {"traces": "TRACES", "logs": "LOGS"}


class SignalEndpoint(msgspec.Struct, frozen=True, repr_omit_defaults=True):
    """Where one signal (the spans, or the log records) goes over OTLP/HTTP: its URL, the headers
    its requests carry (which may hold keys: never shown, and sent to this URL only), how they are
    encoded, how long one request may take (seconds), and whether the bodies are gzipped."""

    url: str
    headers: dict[str, str] = {}
    protocol: Protocol = "http/protobuf"
    timeout: float = 10.0
    gzip: bool = False

    def shown(self) -> str:
        return _shown(self.url)

    def __repr__(self) -> str:
        return f"SignalEndpoint({self.shown()!r}, headers=<{len(self.headers)} hidden>)"


class OtlpEndpoint(msgspec.Struct, frozen=True):
    """Where a run's traces go: the spans' endpoint and the evaluation results' (either may be
    absent), as OpenTelemetry's variables name them, each signal's own variables winning over the
    shared ones (``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` over ``OTEL_EXPORTER_OTLP_HEADERS``)."""

    traces: SignalEndpoint | None
    logs: SignalEndpoint | None

    @classmethod
    def environ(cls, environ: Mapping[str, str]) -> OtlpEndpoint | None:
        """The endpoints OpenTelemetry's variables name, or None when none is set (or the SDK is
        disabled). A value convy cannot use is a ``ConfigurationError`` naming the variable, never
        quoting a URL's user, password or query, or a header's value."""
        if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return None
        base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
        if base:
            _checked("OTEL_EXPORTER_OTLP_ENDPOINT", base)
            path = urlsplit(base).path.rstrip("/")
            if path.endswith(("/v1/traces", "/v1/logs")):
                raise ConfigurationError(
                    "OTEL_EXPORTER_OTLP_ENDPOINT: give the collector's base URL (as http://localhost:4318): convy adds "
                    "/v1/traces and /v1/logs; a signal's whole URL goes in OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
                )
        found = {signal: cls._signal(environ, signal, base) for signal in _SIGNALS}
        if found["traces"] is None and found["logs"] is None:
            return None
        return cls(found["traces"], found["logs"])

    @classmethod
    def _signal(cls, environ: Mapping[str, str], signal: str, base: str) -> SignalEndpoint | None:
        own = f"OTEL_EXPORTER_OTLP_{_SIGNALS[signal]}_"
        url = environ.get(f"{own}ENDPOINT", "").strip()
        if url:
            _checked(f"{own}ENDPOINT", url)
        elif base:
            parts = urlsplit(base)
            url = urlunsplit(parts._replace(path=parts.path.rstrip("/") + f"/v1/{signal}"))
        else:
            return None
        headers = cls._headers(environ, "OTEL_EXPORTER_OTLP_HEADERS") | cls._headers(environ, f"{own}HEADERS")
        return SignalEndpoint(
            url, headers, cls._protocol(environ, own), cls._timeout(environ, own), cls._compression(environ, own)
        )

    @staticmethod
    def _protocol(environ: Mapping[str, str], own: str) -> Protocol:
        for name in (f"{own}PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
            given = environ.get(name, "").strip()
            if not given:
                continue
            match given:
                case "http/protobuf" | "http/json":
                    return given
                case "grpc":
                    raise ConfigurationError(f"{name}: convy sends OTLP over HTTP only: set it to http/protobuf (the collector's port 4318)")
                case _:
                    raise ConfigurationError(f"{name}: {Inert(given).short(40)!r}: give http/protobuf or http/json")
        return "http/protobuf"

    @staticmethod
    def _headers(environ: Mapping[str, str], name: str) -> dict[str, str]:
        """``key=value,key2=value2``, each percent-decoded, as the specification writes them. A
        malformed pair, a name that is no HTTP token or a value HTTP cannot carry (not ASCII, a
        control character) is refused naming the pair, never quoting its value, which may be a key."""
        found: dict[str, str] = {}
        for number, pair in enumerate(environ.get(name, "").split(","), start=1):
            if not pair.strip():
                continue
            key, mark, value = pair.partition("=")
            key, value = unquote(key.strip()), unquote(value.strip())
            if not mark or not key:
                raise ConfigurationError(f"{name}: pair {number} is not key=value")
            if not _TOKEN.fullmatch(key):
                raise ConfigurationError(f"{name}: pair {number}: its name is not an HTTP header's name")
            if not value.isascii() or any(ord(char) < 32 or ord(char) == 127 for char in value):
                raise ConfigurationError(f"{name}: pair {number}: its value is not printable ASCII (percent-encode it as the specification says)")
            found[key] = value
        return found

    @staticmethod
    def _timeout(environ: Mapping[str, str], own: str) -> float:
        for name in (f"{own}TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"):
            given = environ.get(name, "").strip()
            if given:
                try:
                    milliseconds = float(given)
                except ValueError:
                    raise ConfigurationError(f"{name}: {Inert(given).short(40)!r} is not a number of milliseconds") from None
                if not 1 <= milliseconds <= 600_000:
                    raise ConfigurationError(f"{name}: give milliseconds from 1 to 600000, not {Inert(given).short(40)}")
                return milliseconds / 1000
        return 10.0

    @staticmethod
    def _compression(environ: Mapping[str, str], own: str) -> bool:
        for name in (f"{own}COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"):
            given = environ.get(name, "").strip().lower()
            if given:
                if given not in ("gzip", "none"):
                    raise ConfigurationError(f"{name}: {Inert(given).short(40)!r}: give gzip or none")
                return given == "gzip"
        return False

    def signals(self) -> tuple[SignalEndpoint, ...]:
        return tuple(signal for signal in (self.traces, self.logs) if signal is not None)

    def shown(self) -> str:
        """Where the traces go, as ``convy check`` says it: each URL without its user, password or query."""
        return " and ".join(signal.shown() for signal in self.signals())

    def secrets(self) -> Secrets:
        """The headers' values and the URLs' secrets, hidden from anything said of a failure."""
        values = [value for signal in self.signals() for value in signal.headers.values() if value]
        for signal in self.signals():
            values += list(Address(signal.url).secrets().values)
        return Secrets(tuple(values))


def _checked(name: str, url: str) -> None:
    """Refuse a URL convy cannot send to, naming the variable and never quoting the URL: its user
    or password may hold a key (one with an unescaped ``/``, ``#`` or ``@`` would be misread)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ConfigurationError(f"{name}: not a URL convy can send to (its host or port does not read)") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ConfigurationError(f"{name}: give an http:// or https:// URL, as http://localhost:4318")
    if not parts.hostname:
        raise ConfigurationError(f"{name}: the URL has no host, as in http://localhost:4318")
    if "@" in parts.path + parts.query + parts.fragment or parts.fragment or (port is not None and not 0 < port < 65536):
        raise ConfigurationError(
            f"{name}: not a URL convy can send to: a user or password with /, #, ? or @ must be percent-encoded"
        )


def _shown(url: str) -> str:
    """A URL as convy shows it: scheme, host, port and path; never its user, password or query."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


class Told(msgspec.Struct, frozen=True, omit_defaults=True):
    """What the following process tells the run, a line of its output: why the collector is sent
    nothing more, or what it did not take of a request it took (each said once), or, at its end,
    how many attempts' traces the collector took."""

    problem: str = ""
    notice: str = ""
    sent: int | None = None


class Start(msgspec.Struct, frozen=True):
    """What the run gives the following process first, on its input (a pipe, never a file or its
    command line: the endpoint's headers may hold a key): where to send, what every trace says of
    the run, and the attempts kept before this play (a resume's), whose traces are not sent again."""

    endpoint: OtlpEndpoint
    context: RunContext
    kept: tuple[tuple[str, int], ...] = ()


# The follower's start: this convy's folder searched after everything else, so the follower is this
# convy where no other is installed, and no module of the standard library is shadowed.
_STARTED = "import sys; sys.path.append(sys.argv.pop()); from convy.collector import main; raise SystemExit(main(sys.argv[1:]))"


class Shipped:
    """A run's journal that passes each attempt on to ``journal`` and, beside the run, has a
    ``Follower`` process send the trace of each attempt ``folder``'s ``attempts.jsonl`` keeps from
    now on (module docstring). ``said`` is told, once, on the event loop's thread, why the collector
    is sent nothing more. The process is in a session of its own, so a Ctrl+C meant for the run
    does not end it before it has sent what the run kept. At the run's end ``ending`` lets it send
    what is left, and ``closed`` waits for it (``waited``: at most four times each signal's timeout,
    and each wait a collector asked for), after the run's own outputs are written."""

    def __init__(self, journal: Journal | None, folder: Path, start: Start, said: Callable[[str], None]) -> None:
        self._journal = journal
        self._endpoint = start.endpoint
        self._said = said
        self._told = ""  # the problem said already
        self._notice = ""  # what the collector did not take of a request it took, as the process said
        self._sayings: set[str] = set()  # what was said already, each once
        self._heard = b""
        self.sent = 0  # attempts whose trace the collector took, as the process said at its end
        # -P: the project's folder, where the run is, is not searched before the standard library
        # (a project's token.py would be imported instead of Python's); this convy is searched last.
        self._process = subprocess.Popen(
            [sys.executable, "-P", "-c", _STARTED, str(folder), str(Path(__file__).resolve().parent.parent)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        stdin, stdout = self._pipes()
        os.set_blocking(stdout.fileno(), False)
        try:
            stdin.write(msgspec.json.encode(start) + b"\n")
            stdin.flush()
        except OSError:  # it ended before it read a word (a broken install): said, the run goes on
            self._told = "convy: the process that sends this run's traces did not start; they are not sent (convy export --format otlp writes them)"
            self._said(self._told)
            self._sayings.add(self._told)

    def record(self, outcome: Outcome) -> None:
        if self._journal is not None:
            self._journal.record(outcome)
        if not self._told:
            problem = self._problem()
            for said in (self._notice, problem):
                if said and said not in self._sayings:
                    self._sayings.add(said)
                    self._said(said)
            if problem:
                self._told = problem

    def ending(self) -> None:
        """The run has ended: the process sends the rest of the file, then ends."""
        stdin, _ = self._pipes()
        try:
            stdin.close()
        except BrokenPipeError:
            pass

    def settled(self, seconds: float) -> bool:
        """Whether the process has ended, waiting at most ``seconds`` for it."""
        try:
            self._process.wait(seconds)
        except subprocess.TimeoutExpired:
            return False
        return True

    def waited(self) -> float:
        """The longest ``closed`` waits: four times each signal's timeout, and the waits asked for."""
        return sum(signal.timeout * 4 + 3 * Sender.WAIT for signal in self._endpoint.signals())

    def closed(self) -> str:
        """Wait for the process to send what is left (``ending`` first, if not yet); what was not
        sent and why ("" when everything was, or when it was said already). A Ctrl+C while it
        waits stops the waiting only."""
        self.ending()
        try:
            self._process.wait(self.waited())
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            self._process.kill()
            self._process.wait()
            return f"convy: the OpenTelemetry collector at {self._endpoint.shown()} was not sent the last traces: convy stopped waiting"
        problem = self._problem()
        unsaid = [said for said in (self._notice, problem) if said and said not in self._sayings]
        if unsaid:
            return "\n".join(unsaid)
        if problem:
            return ""
        if self._process.returncode != 0:  # it ended without a word: its own fault, said rather than lost
            return f"convy: the process that sends this run's traces ended with code {self._process.returncode}; they are not all sent (convy export --format otlp writes them)"
        return ""

    def _problem(self) -> str:
        """What the process has said so far, read without waiting: its problem, if any."""
        _, stdout = self._pipes()
        try:
            while chunk := os.read(stdout.fileno(), 65536):
                self._heard += chunk
        except BlockingIOError:
            pass
        problem = ""
        for line in self._heard.splitlines():
            try:
                told = msgspec.json.decode(line, type=Told)
            except msgspec.DecodeError:
                continue
            problem = problem or told.problem
            self._notice = self._notice or told.notice
            if told.sent is not None:
                self.sent = told.sent
        return problem

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        assert self._process.stdin is not None and self._process.stdout is not None
        return self._process.stdin, self._process.stdout


class Sender:
    """What sends the traces of some attempts to the collector: one request for their spans and
    one for their evaluation results; ``problem``, why the collector is sent nothing more."""

    WAIT = 5  # seconds, at most, before a request a collector asked to wait for is sent again

    def __init__(self, endpoint: OtlpEndpoint, context: RunContext, client: Any) -> None:
        self._endpoint = endpoint
        self._context = context
        self._client = client
        self.problem = ""
        self.notice = ""  # what the collector said it did not take of a request it took, once
        self.sent = 0

    def sent_all(self, batch: list[Outcome]) -> None:
        import httpx2

        made = [self._context.signals(outcome) for outcome in batch]
        signals = Signals(
            self._context.resource(), made[0].scope, made[0].version,
            tuple(span for one in made for span in one.spans), tuple(log for one in made for log in one.logs),
        )
        bodies: list[tuple[SignalEndpoint, bytes]] = []
        for signal, proto, json in (
            (self._endpoint.traces, signals.proto_traces, signals.json_traces),
            (self._endpoint.logs if signals.logs else None, signals.proto_logs, signals.json_logs),
        ):
            if signal is not None:
                bodies.append((signal, proto() if signal.protocol == "http/protobuf" else json()))
        for signal, body in bodies:
            try:
                problem = self._posted(signal, body)
            except httpx2.HTTPError as error:
                problem = self._endpoint.secrets().hidden(f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)
                if isinstance(error, httpx2.RemoteProtocolError):  # an HTTP request to gRPC's port, mostly
                    problem += " (is this the collector's gRPC port? convy sends OTLP over HTTP, usually port 4318)"
            if problem:
                self.problem = (
                    f"convy: the OpenTelemetry collector at {signal.shown()}: {problem}; "
                    f"this run's traces are not sent (convy export --format otlp writes them)"
                )
                return
        self.sent += len(batch)

    def _posted(self, signal: SignalEndpoint, body: bytes) -> str:
        """Post one body with its signal's own headers; "" once the collector took it, else why
        not. A collector that asks to wait is tried again up to three times, after its Retry-After
        (whole seconds, at most ``WAIT``: the run's end waits on it)."""
        headers = {
            **signal.headers,
            "content-type": "application/x-protobuf" if signal.protocol == "http/protobuf" else "application/json",
        }
        if signal.gzip:
            headers["content-encoding"] = "gzip"
            body = gzip.compress(body)
        for tried in range(4):
            response = self._client.post(signal.url, content=body, headers=headers, timeout=signal.timeout)
            if response.status_code < 300:
                count, why = rejected(response.content, signal.protocol == "http/json")
                if count and not self.notice:  # took the request, not all it held: said once, sending goes on
                    what = "spans" if signal is self._endpoint.traces else "evaluation results"
                    because = f": {self._endpoint.secrets().hidden(why)[:200]}" if why else ""
                    self.notice = f"convy: the OpenTelemetry collector at {signal.shown()} rejected {count} of the {what} it was sent{because}"
                return ""
            if response.status_code not in (429, 502, 503, 504) or tried == 3:
                return f"answered {response.status_code}"
            wait = response.headers.get("retry-after", "1").strip()
            time.sleep(min(int(wait) if wait.isdigit() else 1, self.WAIT))
        return ""


class Follower:
    """The process beside a run (``python -m convy.collector FOLDER``): it follows the folder's
    ``attempts.jsonl`` from its start, each whole line an attempt kept, and sends the trace of each
    that ``start`` did not keep before this play, in batches of at most ``MOST``; it looks at the
    file again every ``PAUSE`` seconds while its input is open, and once the run closes it, sends
    what is left and ends. A line it cannot read is passed over, as ``RunJournal.read`` does."""

    MOST = 64
    PAUSE = 0.2
    READ = 1 << 20  # bytes read from the file at once

    def __init__(self, folder: Path, start: Start, sender: Sender, given: IO[bytes], told: IO[bytes]) -> None:
        self._path = folder / "attempts.jsonl"
        self._kept = set(start.kept)
        self._sender = sender
        self._given = given
        self._told = told
        self._noticed = False

    def followed(self) -> None:
        offset, left = 0, b""
        decoder = msgspec.json.Decoder(Outcome)
        ending = False
        while True:
            if not ending:
                ready, _, _ = select.select([self._given], [], [], self.PAUSE)
                ending = bool(ready) and not os.read(self._given.fileno(), 4096)  # the run closed its end: no more lines
            batch: list[Outcome] = []
            data = self._read(offset)
            offset += len(data)
            *lines, left = (left + data).split(b"\n")
            for line in lines:
                try:
                    outcome = decoder.decode(line)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue
                if (outcome.scenario, outcome.attempt) not in self._kept:
                    batch.append(outcome)
                if len(batch) >= self.MOST:
                    self._sent(batch)
                    batch = []
            if batch:
                self._sent(batch)
            if ending and not data:
                break
        self._say(Told(sent=self._sender.sent))

    def _read(self, offset: int) -> bytes:
        try:
            with self._path.open("rb") as file:
                file.seek(offset)
                return file.read(self.READ)
        except FileNotFoundError:
            return b""

    def _sent(self, batch: list[Outcome]) -> None:
        if self._sender.problem:
            return
        try:
            self._sender.sent_all(batch)
        except Exception as error:  # noqa: BLE001 - convy's own fault, and the run's traces only: said, never the run's end
            self._sender.problem = (
                f"convy: the traces of this run could not be made ({type(error).__name__}); "
                "they are not sent (convy export --format otlp may write them)"
            )
        if self._sender.problem:
            self._say(Told(problem=self._sender.problem))
        if self._sender.notice and not self._noticed:
            self._noticed = True
            self._say(Told(notice=self._sender.notice))

    def _say(self, told: Told) -> None:
        self._told.write(msgspec.json.encode(told) + b"\n")
        self._told.flush()


def main(argv: list[str]) -> int:
    """``python -m convy.collector FOLDER``: started by ``Shipped`` only, its input the run's ``Start``."""
    import httpx2

    given, told = sys.stdin.buffer, sys.stdout.buffer
    start = msgspec.json.decode(given.readline(), type=Start)
    endpoint = start.endpoint
    with httpx2.Client(trust_env=False) as client:  # each request with its signal's headers and timeout
        Follower(Path(argv[0]), start, Sender(endpoint, start.context, client), given, told).followed()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
