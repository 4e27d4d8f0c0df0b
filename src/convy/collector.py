"""Traces sent to an OpenTelemetry collector while a run plays (issue 30).

``OtlpEndpoint`` is where, read from OpenTelemetry's standard variables
(``OTEL_EXPORTER_OTLP_ENDPOINT``, ``_HEADERS``, ``_PROTOCOL``, ``_TIMEOUT``, ``_COMPRESSION``, and
each one's ``_TRACES_``/``_LOGS_`` form, which wins for its signal), so the collector a team's agents
already report to needs nothing more. ``Shipped`` is a run's journal that, as each attempt is kept,
hands it to a thread of its own, which makes its trace (``traces.RunContext``) and sends the
attempts that ended meanwhile in one OTLP/HTTP request for the spans and one for the evaluation
results: the event loop only puts the attempt on a queue. A collector that cannot be reached, or
that refuses the data, is said once and then sent nothing more; the run goes on the same (``convy
export --format otlp`` writes the traces later). A collector that asks to wait (429, 502-504) is
tried again a few times, after the whole seconds its ``Retry-After`` gives, within the run.
The headers may hold a key: they are never shown, and neither is the URL's user, password or query.
"""

from __future__ import annotations

import gzip
import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal
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


_END = object()  # on the queue: the run has ended, send what is left and stop


class Shipped:
    """A run's journal that passes each attempt on to ``journal`` and sends its trace to
    ``endpoint`` from a thread of its own (module docstring). ``said`` is told, once, on the event
    loop's thread, why the collector is sent nothing more; ``closed`` sends what is left and waits
    for the thread, at most the endpoint's timeout for each request still to go."""

    MOST = 64  # attempts in one request
    PENDING = 4096  # attempts waiting for the thread, at most: beyond, a slow collector's are let go

    def __init__(
        self, journal: Journal, endpoint: OtlpEndpoint, context: RunContext, said: Callable[[str], None], client: Any = None
    ) -> None:
        self._journal = journal
        self._endpoint = endpoint
        self._context = context
        self._said = said
        self._client = client
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._problem = ""  # why the collector is sent nothing more: set by the thread, said by the loop's
        self._told = False
        self.sent = 0  # attempts whose trace the collector took
        self.dropped = 0  # attempts let go while the collector was behind by ``PENDING``
        self._thread = threading.Thread(target=self._sending, name="convy-otlp", daemon=True)
        self._thread.start()

    def record(self, outcome: Outcome) -> None:
        self._journal.record(outcome)
        if not self._problem:
            if self._queue.qsize() < self.PENDING:
                self._queue.put(outcome)
            else:
                self.dropped += 1
        elif not self._told:
            self._told = True
            self._said(self._problem)

    def closed(self) -> str:
        """Send what is left; what was not sent and why ("" when everything was)."""
        self._queue.put(_END)
        self._thread.join(self._endpoint.timeout * 4)
        where = self._endpoint.shown(self._endpoint.traces)
        if self._thread.is_alive():
            return f"convy: the OpenTelemetry collector at {where} did not take the last traces in time"
        if self.dropped and not self._problem:
            return f"convy: the OpenTelemetry collector at {where} fell behind: {self.dropped} attempts' traces were not sent (convy export --format otlp writes them)"
        return "" if self._told else self._problem

    def _sending(self) -> None:
        import httpx2  # here: only a run with a collector loads it in this thread

        client = self._client or httpx2.Client(timeout=httpx2.Timeout(self._endpoint.timeout), trust_env=False, headers=self._endpoint.headers)
        try:
            ending = False
            while not ending:
                first = self._queue.get()
                if first is _END:
                    return
                batch = [first]
                while len(batch) < self.MOST:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is _END:
                        ending = True
                        break
                    batch.append(item)
                if not self._problem:
                    try:
                        self._sent(client, batch)
                    except Exception as error:  # noqa: BLE001 - convy's own fault, and the run's traces only: said, never the run's end
                        self._problem = (
                            f"convy: the traces of this run could not be made ({type(error).__name__}); "
                            "they are not sent (convy export --format otlp may write them)"
                        )
        finally:
            if self._client is None:
                client.close()

    def _sent(self, client: Any, batch: list[Outcome]) -> None:
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
                problem = self._posted(client, url, data, headers)
            except httpx2.HTTPError as error:
                problem = self._endpoint.secrets().hidden(f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)
            if problem:
                self._problem = (
                    f"convy: the OpenTelemetry collector at {self._endpoint.shown(url)}: {problem}; "
                    f"this run's traces are not sent (convy export --format otlp writes them)"
                )
                return
        self.sent += len(batch)

    def _posted(self, client: Any, url: str, data: bytes, headers: dict[str, str]) -> str:
        """Post one body; "" once the collector took it, else why not. A collector that asks to
        wait is tried again up to three times, after its Retry-After (whole seconds, at most 5)."""
        for tried in range(4):
            response = client.post(url, content=data, headers=headers)
            if response.status_code < 300:
                return ""
            if response.status_code not in (429, 502, 503, 504) or tried == 3:
                return f"answered {response.status_code}"
            wait = response.headers.get("retry-after", "1").strip()
            time.sleep(min(int(wait) if wait.isdigit() else 1, 5))
        return ""
