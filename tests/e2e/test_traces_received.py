"""The agent's own spans read back (issue 30, item 4): with ``receive_traces = true`` the real
``convy`` command listens on 127.0.0.1, and an agent instrumented with the OpenTelemetry SDK sends
its spans there. Its ``execute_tool`` spans become the attempt's tool calls, seen though its replies
never list them: ``called`` checks and ``said_done`` decide on them, and the run folder keeps the spans.

The agent behind HTTP is a process of its own, configured as OpenTelemetry's SDK reads its
environment (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_BSP_SCHEDULE_DELAY``, ``OTEL_SERVICE_NAME``):
its spans are batched and sent a moment after each turn, as in production, so the attempt waits
for them. One that says it cancelled a booking without cancelling it fails ``said_done``.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from support.fakeproject import Command
from support.process import environment

from convy.received import AgentSpan
from convy.tracecontext import TraceIds

pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK is a dev dependency: pip install -e '.[dev]'")

KEY = "sk-zq7xw-0123456789abcdef"

# An agent behind HTTP, instrumented with the OpenTelemetry SDK, configured from its environment
# alone. Each turn is a span under the trace context convy sent; asked to cancel, it looks the
# booking up, then runs its cancel_booking tool (each a span with the conventions' attributes)
# unless LIAR is set, and says it did either way. Its replies hold text alone: convy cannot see its calls in them.
AGENT_SERVER = """\
import json, os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.propagate import extract
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
tracer = provider.get_tracer("shop-agent")
LIAR = os.environ.get("LIAR") == "1"


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        with tracer.start_as_current_span("invoke_agent shop-agent", context=extract(dict(self.headers))):
            if "cancel" in body["message"].lower():
                with tracer.start_as_current_span("execute_tool lookup_booking") as tool:
                    tool.set_attribute("gen_ai.operation.name", "execute_tool")
                    tool.set_attribute("gen_ai.tool.name", "lookup_booking")
                    tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"booking": 7}))
                if not LIAR:
                    with tracer.start_as_current_span("execute_tool cancel_booking") as tool:
                        tool.set_attribute("gen_ai.operation.name", "execute_tool")
                        tool.set_attribute("gen_ai.tool.name", "cancel_booking")
                        tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"booking": 7}))
                        tool.set_attribute("gen_ai.tool.call.result", json.dumps({"cancelled": True}))
                reply = "Booking 7 is cancelled."
            else:
                reply = "You're welcome."
        data = json.dumps({"reply": reply}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
try:
    server.serve_forever()
finally:
    provider.shutdown()
"""

MODELS = """\
from convy import Models
from convy.fakes import FakeJudge

models = Models(judge=FakeJudge())
"""

SCENARIO = """\
script:
  - Please cancel booking 7.
  - Thanks!
judge:
  - check: {called: cancel_booking, with: {booking: 7}}
  - check: {said_done: "[Cc]ancelled", by_calling: cancel_booking}
  - check: {not_called: refund}
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def port() -> int:
    return free_port()


def started(folder: Path, port: int, liar: bool) -> Iterator[str]:
    script = folder / "agent_server.py"
    script.write_text(AGENT_SERVER, encoding="utf-8")
    variables = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_SERVICE_NAME": "shop-agent",
        "LIAR": "1" if liar else "0",
    }
    process = subprocess.Popen(
        [sys.executable, str(script)], env=environment(**variables), stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        yield f"http://127.0.0.1:{process.stdout.readline().strip()}/agent"
    finally:
        process.terminate()
        process.wait()


def project(folder: Path, url: str, settings: str) -> Command:
    (folder / "agents").mkdir(parents=True)
    (folder / "agents" / "shop.py").write_text(f'from convy import JsonAgent\n\nagent = JsonAgent("{url}")\n', encoding="utf-8")
    (folder / "models.py").write_text(MODELS, encoding="utf-8")
    (folder / "scenarios").mkdir()
    (folder / "scenarios" / "cancel.yaml").write_text(SCENARIO, encoding="utf-8")
    (folder / "pyproject.toml").write_text(f"[tool.convy]\nattempts = 2\n{settings}", encoding="utf-8")
    return Command(folder, KEY)


def attempts(folder: Path) -> list[dict]:
    (run,) = (folder / "results" / "shop").iterdir()
    return [msgspec.json.decode(line) for line in (run / "attempts.jsonl").read_bytes().splitlines()]


def checks(attempt: dict) -> list[tuple[str, bool, str]]:
    return [(claim["claim"], claim["held"], claim["reason"]) for claim in attempt["result"]["claims"]]


@pytest.mark.parametrize("liar", [False, True], ids=["honest", "liar"])
def test_an_instrumented_http_agents_tool_spans_become_checked_calls(tmp_path: Path, port: int, liar: bool) -> None:
    agent = started(tmp_path, port, liar)
    url = next(agent)
    try:
        convy = project(tmp_path, url, f"receive_traces = true\ntraces_port = {port}\n")
        ran = convy.ran("run")
    finally:
        agent.close()
    assert f"traces: the agent's own spans are received at http://127.0.0.1:{port}" in ran.stdout
    assert ran.returncode == (3 if liar else 0), ran.stdout + ran.stderr
    assert "convy: receive_traces" not in ran.stderr, ran.stderr
    for attempt in attempts(tmp_path):
        first, second = attempt["transcript"]["turns"]
        # Two turns, each with the agent's spans under it: the dialogue's calls were seen.
        assert attempt["transcript"]["traced"] is True
        assert {span["parent"] for span in attempt["spans"] if span["name"] == "invoke_agent shop-agent"} == {
            _turn(attempt, 1), _turn(attempt, 2)
        }
        assert all(span["service"] == "shop-agent" and span["trace"] == attempt["trace"] for span in attempt["spans"])
        assert "steps" not in second["answer"]
        if liar:
            assert [step["name"] for step in first["answer"]["steps"]] == ["lookup_booking"]
            assert checks(attempt) == [
                ("called cancel_booking with booking=7", False, "agent never called cancel_booking; it called lookup_booking"),
                (
                    "called cancel_booking before saying /[Cc]ancelled/",
                    False,
                    "agent said 'cancelled' in turn 1, but no call of cancel_booking that did it was seen by then",
                ),
                ("never called refund", True, "agent never called refund"),
            ]
        else:
            lookup, call = first["answer"]["steps"]
            assert (lookup["name"], lookup["traced"]) == ("lookup_booking", True)
            assert call == {
                "type": "call",
                "name": "cancel_booking",
                "arguments": {"booking": 7},
                "result": {"type": "reported", "value": {"cancelled": True}},
                "seconds": call["seconds"],
                "traced": True,
            }
            assert checks(attempt) == [
                ("called cancel_booking with booking=7", True, "agent called cancel_booking in turn 1"),
                (
                    "called cancel_booking before saying /[Cc]ancelled/",
                    True,
                    "agent called cancel_booking in turn 1, and said 'cancelled' in turn 1",
                ),
                ("never called refund", True, "agent never called refund"),
            ]


def _turn(attempt: dict, number: int) -> str:
    return TraceIds(attempt["trace"]).turn(number)


def test_where_the_spans_never_come_a_check_of_calls_only_they_show_is_not_judged_not_failed(tmp_path: Path, port: int) -> None:
    """A JsonAgent with no calls= shows its calls only in its spans: where they never reach convy
    (its exporter sends them elsewhere), its tool checks are left undecided, said why, and the run
    says so at its end; none is failed ("never called") or passed ("never called refund") for it."""
    agent = started(tmp_path, free_port(), liar=False)  # its spans go to a port where nothing listens
    url = next(agent)
    convy = project(tmp_path, url, f"receive_traces = true\ntraces_port = {port}\ntraces_wait = 0.5\n")
    try:
        ran = convy.ran("run")
    finally:
        agent.close()
    assert ran.returncode == 5, ran.stdout + ran.stderr  # nothing passed, nothing failed: nothing was tested
    # Exported, the run is a failed suite, as its command failed it (no scenario failed the pass rule).
    assert convy.ran("export", "--format", "otlp").returncode == 0
    exported = (tmp_path / "results" / "export" / "otlp-traces.jsonl").read_text(encoding="utf-8").splitlines()
    statuses = {
        attribute["value"]["stringValue"]
        for line in exported
        for resource in json.loads(line)["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
        for attribute in span.get("attributes", [])
        if attribute["key"] == "test.suite.run.status"
    }
    assert statuses == {"failure"}
    assert "shop: 0 passed, 0 failed, 2 not judged of 2 attempts" in ran.stdout, ran.stdout
    assert "so its tool checks were not judged" in ran.stderr, ran.stderr
    for attempt in attempts(tmp_path):
        assert "traced" not in attempt["transcript"]
        reason = "its tool calls are seen only in its own spans, and no span of its came for this attempt (traces_wait: 0.5 s): not every tool call could be seen"
        assert [(claim["held"], claim.get("doubt"), claim["reason"]) for claim in attempt["result"]["claims"]] == [
            (False, "unseen", reason),
            (False, "unseen", f"agent said 'cancelled' in turn 1, but {reason}"),
            (False, "unseen", reason),
        ], attempt["result"]


def test_without_receive_traces_a_check_of_calls_no_reply_shows_is_refused_with_the_fix(tmp_path: Path) -> None:
    ran = project(tmp_path, "http://127.0.0.1:9/agent", "").ran("run")
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "JsonAgent has no calls=, so its tool calls cannot be seen" in ran.stderr
    assert "set receive_traces = true where it sends OpenTelemetry spans of them" in ran.stderr


PYTHON_AGENT = """\
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from convy import Answer, trace_context
from convy.fakes import FakeAgent

# Configured as the SDK reads its environment, which convy set before loading this file.
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
tracer = provider.get_tracer("shop-agent")


def answer(text):
    here = trace_context()
    parent = set_span_in_context(NonRecordingSpan(SpanContext(
        int(here.trace_id, 16), int(here.span_id, 16), is_remote=True, trace_flags=TraceFlags(1)
    )))
    with tracer.start_as_current_span("invoke_agent shop-agent", context=parent):
        if "cancel" in text.lower():
            with tracer.start_as_current_span("execute_tool cancel_booking") as tool:
                tool.set_attribute("gen_ai.tool.name", "cancel_booking")
                tool.set_attribute("gen_ai.tool.call.arguments", '{"booking": 7}')
            return Answer("Booking 7 is cancelled.")
    return Answer("You're welcome.")


agent = FakeAgent(answer)
"""


def test_a_python_agent_finds_the_receiver_where_the_sdk_looks_for_it(tmp_path: Path) -> None:
    """No port set: convy picks one and gives it to the agent's code in the environment it loads in."""
    convy = project(tmp_path, "http://unused", "receive_traces = true\n")
    (tmp_path / "agents" / "shop.py").write_text(PYTHON_AGENT, encoding="utf-8")
    ran = convy.ran("run")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    for attempt in attempts(tmp_path):
        assert attempt["transcript"]["traced"] is True
        (call,) = attempt["transcript"]["turns"][0]["answer"]["steps"]
        assert (call["name"], call["arguments"], call["traced"]) == ("cancel_booking", {"booking": 7}, True)
        # What the record holds of a span reads back as the record convy made of it.
        spans = msgspec.convert(attempt["spans"], tuple[AgentSpan, ...])
        assert sorted(span.name for span in spans) == ["execute_tool cancel_booking", "invoke_agent shop-agent", "invoke_agent shop-agent"]


def test_an_agent_that_sends_no_spans_is_waited_for_once_and_said(tmp_path: Path) -> None:
    convy = project(tmp_path, "http://unused", "receive_traces = true\ntraces_wait = 0.2\n")
    (tmp_path / "agents" / "shop.py").write_text(
        'from convy import Answer\nfrom convy.fakes import FakeAgent\n\nagent = FakeAgent(lambda text: Answer("Booking 7 is cancelled."))\n',
        encoding="utf-8",
    )
    ran = convy.ran("run")
    assert ran.returncode == 3, ran.stdout + ran.stderr
    assert "convy: receive_traces: shop sent no span of any attempt to http://127.0.0.1:" in ran.stderr
    assert all("traced" not in attempt["transcript"] and "spans" not in attempt for attempt in attempts(tmp_path))


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        ("traces_port = 4319\n", "traces_port: goes with receive_traces = true, which is not set"),
        ("receive_traces = true\nworkers = 2\n", "receive_traces: the agent's spans are received by one process"),
        ("receive_traces = true\ntraces_wait = -1\n", "traces_wait: must be from 0 to 600 seconds"),
    ],
)
def test_a_receive_traces_setting_convy_cannot_use_exits_2_naming_it(tmp_path: Path, settings: str, said: str) -> None:
    ran = project(tmp_path, "http://unused", settings).ran("run")
    assert ran.returncode == 2 and said in ran.stderr and "Traceback" not in ran.stderr, ran.stderr


def test_a_traces_port_in_use_exits_2_with_the_fix(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ran = project(tmp_path, "http://unused", f"receive_traces = true\ntraces_port = {port}\n").ran("run")
    assert ran.returncode == 2, ran.stderr
    assert f"receive_traces: cannot listen on port {port} of 127.0.0.1" in ran.stderr and "set traces_port to a free one" in ran.stderr
