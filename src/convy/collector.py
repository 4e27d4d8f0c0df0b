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
import select
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, ClassVar, Literal
from urllib.parse import unquote

import msgspec

from convy.otlp import Signals
from convy.outcome import Outcome
from convy.plan import Journal
from convy.problems import ConfigurationError
from convy.secrets import Address, Secrets
from convy.traces import RunContext

Protocol = Literal["http/protobuf", "http/json"]


class OtlpEndpoint(msgspec.Struct, frozen=True, repr_omit_defaults=True):
    """Where a run's traces go over OTLP/HTTP: a URL for the spans and one for the logs, the
    headers each request carries (which may hold keys: never shown), how they are encoded, how
    long one request may take (seconds), and whether the bodies are gzipped."""

    traces: str
    logs: str
    headers: dict[str, str] = {}
    protocol: Protocol = "http/protobuf"
    timeout: float = 10.0
    gzip: bool = False

    PROTOCOLS: ClassVar[tuple[str, ...]] = ("http/protobuf", "http/json")

    @classmethod
    def environ(cls, environ: Mapping[str, str]) -> OtlpEndpoint | None:
        """The endpoint OpenTelemetry's variables name, or None when none is set (or the SDK is
        disabled). A value convy cannot use is a ``ConfigurationError`` naming the variable."""
        if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return None
        base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
        traces = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
        logs = environ.get("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "").strip()
        if not (base or traces):
            return None
        for name, url in (("OTEL_EXPORTER_OTLP_ENDPOINT", base), ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces), ("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", logs)):
            if url and not url.lower().startswith(("http://", "https://")):
                raise ConfigurationError(f"{name}: {Address(url).shown()!r} is not an http:// or https:// URL")
        joined = base.rstrip("/")
        protocol = cls._protocol(environ)
        return cls(
            traces=traces or f"{joined}/v1/traces",
            logs=logs or (f"{joined}/v1/logs" if joined else ""),
            headers=cls._headers(environ, "OTEL_EXPORTER_OTLP_HEADERS") | cls._headers(environ, "OTEL_EXPORTER_OTLP_TRACES_HEADERS"),
            protocol=protocol,
            timeout=cls._timeout(environ),
            gzip=cls._compression(environ),
        )

    @classmethod
    def _protocol(cls, environ: Mapping[str, str]) -> Protocol:
        for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
            given = environ.get(name, "").strip()
            if not given:
                continue
            match given:
                case "http/protobuf" | "http/json":
                    return given
                case "grpc":
                    raise ConfigurationError(f"{name}: convy sends OTLP over HTTP only: set it to http/protobuf (the collector's port 4318)")
                case _:
                    raise ConfigurationError(f"{name}: {given!r}: give http/protobuf or http/json")
        return "http/protobuf"

    @staticmethod
    def _headers(environ: Mapping[str, str], name: str) -> dict[str, str]:
        """``key=value,key2=value2``, each value percent-decoded, as the specification writes them.
        A malformed pair is refused without its value, which may be a key."""
        found: dict[str, str] = {}
        for number, pair in enumerate(environ.get(name, "").split(","), start=1):
            if not pair.strip():
                continue
            key, mark, value = pair.partition("=")
            if not mark or not key.strip():
                raise ConfigurationError(f"{name}: pair {number} is not key=value")
            found[unquote(key.strip())] = unquote(value.strip())
        return found

    @staticmethod
    def _timeout(environ: Mapping[str, str]) -> float:
        for name in ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"):
            given = environ.get(name, "").strip()
            if given:
                try:
                    milliseconds = float(given)
                except ValueError:
                    raise ConfigurationError(f"{name}: {given!r} is not a number of milliseconds") from None
                if not 0 < milliseconds <= 600_000:
                    raise ConfigurationError(f"{name}: give milliseconds from 1 to 600000, not {given}")
                return milliseconds / 1000
        return 10.0

    @staticmethod
    def _compression(environ: Mapping[str, str]) -> bool:
        for name in ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"):
            given = environ.get(name, "").strip().lower()
            if given:
                if given not in ("gzip", "none"):
                    raise ConfigurationError(f"{name}: {given!r}: give gzip or none")
                return given == "gzip"
        return False

    def shown(self, url: str) -> str:
        return Address(url).shown()

    def secrets(self) -> Secrets:
        """The headers' values, hidden from anything said of a failure."""
        return Secrets(tuple(value for value in self.headers.values() if value))

    def __repr__(self) -> str:
        return f"OtlpEndpoint({self.shown(self.traces)!r}, headers=<{len(self.headers)} hidden>)"


class Told(msgspec.Struct, frozen=True, omit_defaults=True):
    """What the following process tells the run, a line of its output: why the collector is sent
    nothing more (said once), or, at its end, how many attempts' traces the collector took."""

    problem: str = ""
    sent: int | None = None


class Start(msgspec.Struct, frozen=True):
    """What the run gives the following process first, on its input (a pipe, never a file or its
    command line: the endpoint's headers may hold a key): where to send, what every trace says of
    the run, and the attempts kept before this play (a resume's), whose traces are not sent again."""

    endpoint: OtlpEndpoint
    context: RunContext
    kept: tuple[tuple[str, int], ...] = ()


class Shipped:
    """A run's journal that passes each attempt on to ``journal`` and, beside the run, has a
    ``Follower`` process send the trace of each attempt ``folder``'s ``attempts.jsonl`` keeps from
    now on (module docstring). ``said`` is told, once, on the event loop's thread, why the collector
    is sent nothing more; ``closed`` lets the process send what is left and waits for it, at most
    four times the endpoint's timeout."""

    def __init__(self, journal: Journal | None, folder: Path, start: Start, said: Callable[[str], None]) -> None:
        self._journal = journal
        self._endpoint = start.endpoint
        self._said = said
        self._told = ""  # the problem said already
        self._heard = b""
        self.sent = 0  # attempts whose trace the collector took, as the process said at its end
        self._process = subprocess.Popen(
            [sys.executable, "-m", "convy.collector", str(folder)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        stdin, stdout = self._pipes()
        stdin.write(msgspec.json.encode(start) + b"\n")
        stdin.flush()
        os.set_blocking(stdout.fileno(), False)

    def record(self, outcome: Outcome) -> None:
        if self._journal is not None:
            self._journal.record(outcome)
        if not self._told:
            problem = self._problem()
            if problem:
                self._told = problem
                self._said(problem)

    def closed(self) -> str:
        """Let the process send what is left and end; what was not sent and why ("" when
        everything was, or when it was said already)."""
        stdin, stdout = self._pipes()
        try:
            stdin.close()  # the run has ended: the process sends the rest of the file, then ends
        except BrokenPipeError:
            pass
        try:
            self._process.wait(self._endpoint.timeout * 4)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
            return f"convy: the OpenTelemetry collector at {self._endpoint.shown(self._endpoint.traces)} did not take the last traces in time"
        problem = self._problem(whole=True)
        return "" if problem == self._told else problem

    def _problem(self, whole: bool = False) -> str:
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
            if told.sent is not None:
                self.sent = told.sent
        return problem

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        assert self._process.stdin is not None and self._process.stdout is not None
        return self._process.stdin, self._process.stdout


class Sender:
    """What sends the traces of some attempts to the collector: one request for their spans and
    one for their evaluation results; ``problem``, why the collector is sent nothing more."""

    def __init__(self, endpoint: OtlpEndpoint, context: RunContext, client: Any) -> None:
        self._endpoint = endpoint
        self._context = context
        self._client = client
        self.problem = ""
        self.sent = 0

    def sent_all(self, batch: list[Outcome]) -> None:
        import httpx2

        made = [self._context.signals(outcome) for outcome in batch]
        signals = Signals(
            self._context.resource(), made[0].scope, made[0].version,
            tuple(span for one in made for span in one.spans), tuple(log for one in made for log in one.logs),
        )
        proto = self._endpoint.protocol == "http/protobuf"
        bodies = [(self._endpoint.traces, signals.proto_traces() if proto else signals.json_traces())]
        if signals.logs and self._endpoint.logs:
            bodies.append((self._endpoint.logs, signals.proto_logs() if proto else signals.json_logs()))
        headers = {"content-type": "application/x-protobuf" if proto else "application/json"}
        if self._endpoint.gzip:
            headers["content-encoding"] = "gzip"
        for url, body in bodies:
            data = gzip.compress(body) if self._endpoint.gzip else body
            try:
                problem = self._posted(url, data, headers)
            except httpx2.HTTPError as error:
                problem = self._endpoint.secrets().hidden(f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)
            if problem:
                self.problem = (
                    f"convy: the OpenTelemetry collector at {self._endpoint.shown(url)}: {problem}; "
                    f"this run's traces are not sent (convy export --format otlp writes them)"
                )
                return
        self.sent += len(batch)

    def _posted(self, url: str, data: bytes, headers: dict[str, str]) -> str:
        """Post one body; "" once the collector took it, else why not. A collector that asks to
        wait is tried again up to three times, after its Retry-After (whole seconds, at most 5)."""
        for tried in range(4):
            response = self._client.post(url, content=data, headers=headers)
            if response.status_code < 300:
                return ""
            if response.status_code not in (429, 502, 503, 504) or tried == 3:
                return f"answered {response.status_code}"
            wait = response.headers.get("retry-after", "1").strip()
            time.sleep(min(int(wait) if wait.isdigit() else 1, 5))
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

    def _say(self, told: Told) -> None:
        self._told.write(msgspec.json.encode(told) + b"\n")
        self._told.flush()


def main(argv: list[str]) -> int:
    """``python -m convy.collector FOLDER``: started by ``Shipped`` only, its input the run's ``Start``."""
    import httpx2

    given, told = sys.stdin.buffer, sys.stdout.buffer
    start = msgspec.json.decode(given.readline(), type=Start)
    endpoint = start.endpoint
    with httpx2.Client(timeout=httpx2.Timeout(endpoint.timeout), trust_env=False, headers=endpoint.headers) as client:
        Follower(Path(argv[0]), start, Sender(endpoint, start.context, client), given, told).followed()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
