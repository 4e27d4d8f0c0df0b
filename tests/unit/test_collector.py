"""Traces sent to a collector while a run plays (``collector.py``): where they go, as OpenTelemetry's
variables say, and what a slow or unreachable collector costs the run (nothing but its traces)."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import msgspec
import pytest
from support.otlpreceiver import OtlpReceiver

from convy import Bench, Limits, Models, RunSpec
from convy.collector import OtlpEndpoint, Shipped, SignalEndpoint, Start
from convy.fakes import FakeAgent, FakeJudge, MemoryJournal
from convy.outcome import Outcome
from convy.problems import ConfigurationError
from convy.scenario import Scenario
from convy.storage import RunJournal
from convy.traces import RunContext

SCENARIO = Scenario(id="hello", judge=("it greeted",), script=("hi",))
SPEC = RunSpec(id="run-1", agent="bot", scenarios=(SCENARIO,), attempts=40, limits=Limits())


def test_the_standard_variables_name_where_and_how() -> None:
    assert OtlpEndpoint.environ({}) is None
    assert OtlpEndpoint.environ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}) is None
    endpoint = OtlpEndpoint.environ(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "https://c.example:4318/otlp/?tenant=a",
            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b%3Dc, x-team = shop",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-team=support",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
            "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
            "OTEL_EXPORTER_OTLP_LOGS_COMPRESSION": "gzip",
        }
    )
    assert endpoint == OtlpEndpoint(
        SignalEndpoint("https://c.example:4318/otlp/v1/traces?tenant=a", {"api-key": "a b=c", "x-team": "support"}, "http/json", 2.5),
        SignalEndpoint("https://c.example:4318/otlp/v1/logs?tenant=a", {"api-key": "a b=c", "x-team": "shop"}, "http/protobuf", 2.5, True),
    )
    assert "a b=c" not in repr(endpoint)
    assert endpoint.shown() == "https://c.example:4318/otlp/v1/traces and https://c.example:4318/otlp/v1/logs"
    # A signal's own endpoint is used as it is, its headers sent to it alone; one signal may go alone.
    split = OtlpEndpoint.environ(
        {
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/x", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "k=trace-key",
            "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://l:2/y", "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "k=log-key",
        }
    )
    assert split == OtlpEndpoint(SignalEndpoint("http://t:1/x", {"k": "trace-key"}), SignalEndpoint("http://l:2/y", {"k": "log-key"}))
    only = OtlpEndpoint.environ({"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://l:2/y"})
    assert only == OtlpEndpoint(None, SignalEndpoint("http://l:2/y"))
    # A password is never shown.
    assert OtlpEndpoint.environ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://u:pw%2F1@h:4318"}).shown() == "http://h:4318/v1/traces and http://h:4318/v1/logs"


@pytest.mark.parametrize(
    ("environ", "said"),
    [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT: give an http:// or https:// URL, as http://localhost:4318"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://u:sk-secret/value@h:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT: not a URL convy can send to"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://u:sk-secret#value@h:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT: not a URL convy can send to"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:99999"}, "OTEL_EXPORTER_OTLP_ENDPOINT: not a URL convy can send to"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://"}, "OTEL_EXPORTER_OTLP_ENDPOINT: the URL has no host"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318/v1/traces"}, "convy adds /v1/traces and /v1/logs; a signal's whole URL goes in OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        ({"OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL: convy sends OTLP over HTTP only"),
        ({"OTEL_EXPORTER_OTLP_HEADERS": "k=sk-secret%E2%9C%93value"}, "OTEL_EXPORTER_OTLP_HEADERS: pair 1: its value is not printable ASCII"),
        ({"OTEL_EXPORTER_OTLP_HEADERS": "k=sk-secret%0D%0Avalue"}, "OTEL_EXPORTER_OTLP_HEADERS: pair 1: its value is not printable ASCII"),
        ({"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "bad key=sk-secret"}, "OTEL_EXPORTER_OTLP_TRACES_HEADERS: pair 1: its name is not an HTTP header's name"),
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": "0.001"}, "OTEL_EXPORTER_OTLP_TIMEOUT: give milliseconds from 1 to 600000, not 0.001"),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL: convy sends OTLP over HTTP only"),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobof"}, "OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobof': give http/protobuf or http/json"),
        ({"OTEL_EXPORTER_OTLP_HEADERS": "a=1,sk-secret-value"}, "OTEL_EXPORTER_OTLP_HEADERS: pair 2 is not key=value"),
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": "0"}, "OTEL_EXPORTER_OTLP_TIMEOUT: give milliseconds from 1 to 600000, not 0"),
        ({"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, "OTEL_EXPORTER_OTLP_COMPRESSION: 'zstd': give gzip or none"),
    ],
)
def test_a_setting_convy_cannot_use_is_refused_naming_it_never_a_headers_value(environ: dict[str, str], said: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        OtlpEndpoint.environ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"} | environ)
    assert said in str(refused.value)
    assert "sk-secret" not in str(refused.value)


class Held:
    """A collector that takes each request only once ``go`` is set: one that has fallen behind."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.taken = 0
        held = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                self.rfile.read(int(self.headers["content-length"]))
                held.go.wait(60)
                held.taken += self.path == "/v1/traces"
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def played(folder: Path, endpoint: OtlpEndpoint, said: list[str], attempts: int) -> tuple[Shipped, list[Outcome]]:
    """A run of ``attempts`` attempts played into ``folder``, its traces sent beside it (closed after)."""
    spec = msgspec.structs.replace(SPEC, id=folder.name, attempts=attempts)
    kept = MemoryJournal()
    shipped = Shipped(kept, folder, Start(endpoint, RunContext.of(spec, "in_progress", "t")), said.append)
    bench = Bench(FakeAgent(lambda text: "hello"), Models(judge=FakeJudge()))
    asyncio.run(RunJournal(folder).play(spec, bench, shipped))
    return shipped, kept.outcomes


def test_the_run_never_waits_for_the_collector_which_is_sent_every_attempt_at_its_end(tmp_path: Path) -> None:
    collector = Held()
    said: list[str] = []
    try:
        endpoint = OtlpEndpoint(SignalEndpoint(f"{collector.url}/v1/traces"), SignalEndpoint(f"{collector.url}/v1/logs"))
        shipped, kept = played(tmp_path / "run-1", endpoint, said, 40)
        assert len(kept) == 40 and collector.taken == 0  # played whole while the collector took nothing
        collector.go.set()
        assert shipped.closed() == ""
    finally:
        collector.go.set()
        collector.server.shutdown()
    assert shipped.sent == 40 and collector.taken >= 1 and said == []


def test_a_collector_asking_to_wait_is_tried_again_after_its_retry_after(tmp_path: Path) -> None:
    said: list[str] = []
    with OtlpReceiver() as receiver:
        receiver.answer = (503, {"retry-after": "0"})
        shipped, _ = played(tmp_path / "run-2", OtlpEndpoint(SignalEndpoint(f"{receiver.url}/v1/traces"), None), said, 3)
        told = shipped.closed()
        asked = [path for path, _ in receiver.requests]
    # Tried four times in all, then said once: a collector that stays busy is given up on.
    assert (said + [told])[0].endswith("answered 503; this run's traces are not sent (convy export --format otlp writes them)")
    assert asked == ["/v1/traces"] * 4
    assert shipped.sent == 0


def test_a_project_module_named_as_one_of_pythons_does_not_break_the_follower(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs start in the project's folder: a ``token.py`` there is not imported in place of Python's
    by the process that sends the traces."""
    (tmp_path / "token.py").write_text("raise SystemExit('the project\\'s token.py was imported')\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    said: list[str] = []
    with OtlpReceiver() as receiver:
        shipped, _ = played(tmp_path / "run-p", OtlpEndpoint(SignalEndpoint(f"{receiver.url}/v1/traces"), None), said, 3)
        assert shipped.closed() == ""
    assert shipped.sent == 3 and said == []
