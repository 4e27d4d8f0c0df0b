"""Traces sent to a collector while a run plays (``collector.py``): where they go, as OpenTelemetry's
variables say, and what a slow or unreachable collector costs the run (nothing but its traces)."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from support.otlpreceiver import OtlpReceiver

from convy import Bench, Limits, Models, RunSpec
from convy.collector import OtlpEndpoint, Shipped
from convy.fakes import FakeAgent, FakeJudge, MemoryJournal
from convy.outcome import Outcome
from convy.plan import Plan
from convy.problems import ConfigurationError
from convy.scenario import Scenario
from convy.traces import RunContext

SCENARIO = Scenario(id="hello", judge=("it greeted",), script=("hi",))
SPEC = RunSpec(id="run-1", agent="bot", scenarios=(SCENARIO,), attempts=40, limits=Limits())


def outcomes(count: int) -> list[Outcome]:
    journal = MemoryJournal()
    bench = Bench(FakeAgent(lambda text: "hello"), Models(judge=FakeJudge()))
    asyncio.run(bench.run(Plan((SCENARIO,), count), journal))
    return journal.outcomes


def test_the_standard_variables_name_where_and_how() -> None:
    assert OtlpEndpoint.environ({}) is None
    assert OtlpEndpoint.environ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}) is None
    endpoint = OtlpEndpoint.environ(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "https://c.example:4318/otlp/",
            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b%3Dc, x-team = shop",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-team=support",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
            "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
        }
    )
    assert endpoint == OtlpEndpoint(
        "https://c.example:4318/otlp/v1/traces", "https://c.example:4318/otlp/v1/logs",
        {"api-key": "a b=c", "x-team": "support"}, "http/json", 2.5, True,
    )
    assert "a b=c" not in repr(endpoint)
    # A signal's own endpoint is used as it is, and wins over the base's.
    only = OtlpEndpoint.environ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/x", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"})
    assert (only.traces, only.logs, only.protocol) == ("http://t:1/x", "", "http/protobuf")


@pytest.mark.parametrize(
    ("environ", "said"),
    [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT: 'c:4318' is not an http:// or https:// URL"),
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


def test_a_collector_that_falls_behind_costs_the_run_only_the_traces_it_could_not_take() -> None:
    collector = Held()
    kept = MemoryJournal()
    said: list[str] = []
    shipped = Shipped(kept, OtlpEndpoint(f"{collector.url}/v1/traces", f"{collector.url}/v1/logs"), RunContext.of(SPEC, "in_progress", "t"), said.append)
    shipped.PENDING = 5  # type: ignore[misc]
    made = outcomes(40)
    for outcome in made:
        shipped.record(outcome)  # never waits for the collector
    assert kept.outcomes == made  # every attempt went on to the run's own journal
    collector.go.set()
    told = shipped.closed()
    collector.server.shutdown()
    assert shipped.dropped > 0 and shipped.sent + shipped.dropped == 40
    assert told == (
        f"convy: the OpenTelemetry collector at {collector.url}/v1/traces fell behind: {shipped.dropped} attempts' traces "
        "were not sent (convy export --format otlp writes them)"
    )
    assert said == []


def test_a_collector_asking_to_wait_is_tried_again_after_its_retry_after() -> None:
    made = outcomes(3)
    with OtlpReceiver() as receiver:
        receiver.answer = (503, {"retry-after": "0"})
        shipped = Shipped(MemoryJournal(), OtlpEndpoint(f"{receiver.url}/v1/traces", ""), RunContext.of(SPEC, "in_progress", "t"), print)
        for outcome in made:
            shipped.record(outcome)
        told = shipped.closed()
        asked = [path for path, _ in receiver.requests]
    # Tried four times in all on each request, then said: a collector that stays busy is given up on.
    assert told.endswith("answered 503; this run's traces are not sent (convy export --format otlp writes them)")
    assert asked == ["/v1/traces"] * 4
