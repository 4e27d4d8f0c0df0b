"""Runs as OpenTelemetry traces (issue 30), read back by OpenTelemetry's own decoding.

The real ``convy`` command plays a project of fakes (an agent that calls a tool and reports its
tokens, a simulated user on a fake model, a judge with a graded claim) while
``OTEL_EXPORTER_OTLP_ENDPOINT`` names a receiver on 127.0.0.1 (``support.otlpreceiver``), which
decodes what it is sent with ``opentelemetry-proto``'s message classes; ``convy export --format
otlp`` then writes the same traces as OTLP JSON, read by the same classes. An agent behind HTTP,
instrumented with the OpenTelemetry SDK and exporting to the same receiver, is sent each turn's
``traceparent``: its spans land in the attempt's trace, under the turn that asked.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from support.fakeproject import Command
from support.otlpreceiver import OtlpReceiver, attributes, logs_from_json, traces_from_json

KEY = "sk-traces-0123456789abcdef"
COLLECTOR_KEY = "otlp-secret-9f8e7d6c5b4a"

AGENT = """\
from convy import Answer, Call, Reported, Usage
from convy.fakes import FakeAgent


def answer(text):
    if "order" in text:
        return Answer(
            "Order 42 shipped on Monday.",
            Usage(input=120, output=30),
            steps=(Call("lookup_order", {"order": 42}, Reported({"status": "shipped"}), 0.25),),
        )
    return Answer("Anything else?", Usage(input=80, output=10))


agent = FakeAgent(answer)
"""

MODELS = """\
from convy import Models
from convy.fakes import FakeJudge, FakeModel
from convy.model import Reply
from convy.agent import Usage



def said(messages):
    # Asks one more question, then ends the dialogue: each attempt's user alike.
    if any("arrive" in message.content for message in messages):
        return Reply("Thanks. ###STOP###", Usage(input=60, output=4))
    return Reply("And when will it arrive?", Usage(input=50, output=8))


models = Models(user=FakeModel(said), judge=FakeJudge())
"""

SCENARIO = """\
user: You want to know where order 42 is.
script:
  - Where is order 42?
judge:
  - the agent says when the order shipped
  - claim: the agent is polite
    grades: [rude, curt, polite]
    pass: curt
  - check: {called: lookup_order}
"""


def project(folder: Path, agent: str = AGENT, attempts: int = 2) -> Command:
    (folder / "agents").mkdir(parents=True)
    (folder / "agents" / "bot.py").write_text(agent, encoding="utf-8")
    (folder / "models.py").write_text(MODELS, encoding="utf-8")
    (folder / "scenarios").mkdir()
    (folder / "scenarios" / "order.yaml").write_text(SCENARIO, encoding="utf-8")
    (folder / "pyproject.toml").write_text(f"[tool.convy]\nattempts = {attempts}\n", encoding="utf-8")
    return Command(folder, KEY)


def exported(folder: Path) -> tuple[list[Any], list[Any]]:
    """The spans and log records of ``convy export --format otlp``'s files, as opentelemetry-proto reads them."""
    export = folder / "results" / "export"
    spans, logs = [], []
    for line in (export / "otlp-traces.jsonl").read_text(encoding="utf-8").splitlines():
        request = traces_from_json(line)
        spans += [span for resource in request.resource_spans for scope in resource.scope_spans for span in scope.spans]
    for line in (export / "otlp-logs.jsonl").read_text(encoding="utf-8").splitlines():
        request = logs_from_json(line)
        logs += [log for resource in request.resource_logs for scope in resource.scope_logs for log in scope.log_records]
    return spans, logs


def shape(spans: list[Any]) -> list[tuple[Any, ...]]:
    """Each span as ids, parent, name, kind, times and attributes, the suite's status left out
    (in progress while the run played, its verdict once it ended)."""
    return sorted(
        (
            span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex(), span.name, span.kind,
            span.start_time_unix_nano, span.end_time_unix_nano,
            json.dumps({key: value for key, value in attributes(span.attributes).items() if key != "test.suite.run.status"}, sort_keys=True),
            span.status.code,
        )
        for span in spans
    )


def test_a_run_sent_to_a_collector_is_the_trace_tree_the_export_writes(tmp_path: Path) -> None:
    convy = project(tmp_path)
    with OtlpReceiver() as receiver:
        ran = convy.ran("run", OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, OTEL_EXPORTER_OTLP_HEADERS=f"authorization=Bearer%20{COLLECTOR_KEY}")
        assert ran.returncode == 0, ran.stdout + ran.stderr
        live_spans, live_logs = receiver.spans(), receiver.logs()
        sent = receiver.requests
    assert {path for path, _ in sent} == {"/v1/traces", "/v1/logs"}
    assert {headers["authorization"] for _, headers in sent} == {f"Bearer {COLLECTOR_KEY}"}
    assert {headers["content-type"] for _, headers in sent} == {"application/x-protobuf"}
    exporting = convy.ran("export", "--format", "otlp")
    assert exporting.returncode == 0, exporting.stderr
    assert "traces: results/export/otlp-traces.jsonl" in exporting.stdout
    spans, logs = exported(tmp_path)

    # What was sent while the run played is what the export writes: the same ids, tree and attributes.
    assert shape(live_spans) == shape(spans)
    assert len(live_logs) == len(logs) == 2 * 3  # two attempts, three claims each (two judged, one check)

    traces = {span.trace_id for span in spans}
    assert len(traces) == 2  # one trace per attempt
    for trace in traces:
        tree = [span for span in spans if span.trace_id == trace]
        by_id = {span.span_id: span for span in tree}
        (root,) = [span for span in tree if not span.parent_span_id]
        case = attributes(root.attributes)
        assert case["test.suite.name"].startswith("bot/")
        assert case["test.suite.run.status"] == "success"
        assert case["test.case.name"] == "order"
        assert case["test.case.result.status"] == "pass"
        assert case["convy.attempt"] in (1, 2)
        turns = sorted((span for span in tree if span.name == "invoke_agent bot"), key=lambda span: span.start_time_unix_nano)
        assert [attributes(span.attributes)["convy.turn"] for span in turns] == [1, 2]
        for turn in turns:
            said = attributes(turn.attributes)
            assert turn.parent_span_id == root.span_id
            assert said["gen_ai.operation.name"] == "invoke_agent"
            assert said["gen_ai.conversation.id"] == case["gen_ai.conversation.id"]
            assert root.start_time_unix_nano <= turn.start_time_unix_nano <= turn.end_time_unix_nano <= root.end_time_unix_nano
        assert attributes(turns[0].attributes)["gen_ai.usage.input_tokens"] == 120
        assert json.loads(attributes(turns[0].attributes)["gen_ai.output.messages"])[0]["parts"][0]["content"] == "Order 42 shipped on Monday."
        (tool,) = [span for span in tree if span.name == "execute_tool lookup_order"]
        assert by_id[tool.parent_span_id] is turns[0]
        called = attributes(tool.attributes)
        assert json.loads(called["gen_ai.tool.call.arguments"]) == {"order": 42}
        assert json.loads(called["gen_ai.tool.call.result"]) == {"status": "shipped"}
        # As long as the agent reported, within its turn (this agent answers at once, so its turn is shorter).
        assert called["convy.tool.seconds"] == 0.25
        assert turns[0].start_time_unix_nano == tool.start_time_unix_nano <= tool.end_time_unix_nano == turns[0].end_time_unix_nano
        users = [attributes(span.attributes) for span in tree if attributes(span.attributes).get("convy.participant") == "user"]
        assert [said["gen_ai.usage.output_tokens"] for said in users] == [8, 4]  # its message of turn 2, then the one that ended it

        results = {attributes(log.attributes)["gen_ai.evaluation.name"]: attributes(log.attributes) for log in logs if log.trace_id == trace}
        assert all(log.event_name == "gen_ai.evaluation.result" and log.span_id == root.span_id for log in logs if log.trace_id == trace)
        shipped = results["the agent says when the order shipped"]
        assert shipped["gen_ai.evaluation.score.label"] == "pass"
        assert shipped["gen_ai.evaluation.explanation"] == "decided by FakeJudge"
        assert "gen_ai.evaluation.score.value" not in shipped  # not graded
        polite = results["the agent is polite"]
        assert (polite["gen_ai.evaluation.score.label"], polite["gen_ai.evaluation.score.value"]) == ("polite", 1.0)
        assert results[next(name for name in results if "lookup_order" in name)]["convy.claim.by"] == "code"

    # The collector's key went to the collector only.
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert COLLECTOR_KEY not in path.read_text(encoding="utf-8", errors="replace"), path
    assert COLLECTOR_KEY not in ran.stdout + ran.stderr


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_collector_that_cannot_be_reached_is_said_once_and_the_run_goes_on(tmp_path: Path) -> None:
    convy = project(tmp_path, attempts=4)
    url = f"http://user:{COLLECTOR_KEY}@127.0.0.1:{closed_port()}"
    ran = convy.ran("run", OTEL_EXPORTER_OTLP_ENDPOINT=url, OTEL_EXPORTER_OTLP_HEADERS=f"x-key={COLLECTOR_KEY}")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    # Said once, not per attempt. Whether convy also says it is waiting for the last traces depends
    # on how soon the process sending them has given up, so that line is allowed, not counted.
    said = [line for line in ran.stderr.splitlines() if "OpenTelemetry collector" in line and "waiting up to" not in line]
    assert len(said) == 1, ran.stderr
    assert "127.0.0.1" in ran.stderr and "this run's traces are not sent" in ran.stderr
    assert COLLECTOR_KEY not in ran.stdout + ran.stderr
    (attempts,) = (tmp_path / "results" / "bot").glob("*/attempts.jsonl")
    assert len(attempts.read_text(encoding="utf-8").splitlines()) == 4  # every attempt played and kept


@pytest.mark.parametrize("status", [404, 400, 401])
def test_a_collector_that_refuses_is_said_once_with_its_answer(tmp_path: Path, status: int) -> None:
    convy = project(tmp_path, attempts=3)
    with OtlpReceiver() as receiver:
        receiver.answer = (status, {})
        ran = convy.ran("run", OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url)
        asked = len(receiver.requests)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stderr.count(f"answered {status}") == 1, ran.stderr
    assert asked <= 2  # a refusal is not sent again and again: at most one request in flight before it was heard


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_EXPORTER_OTLP_PROTOCOL: convy sends OTLP over HTTP only"),
        ("OTEL_EXPORTER_OTLP_HEADERS", f"{COLLECTOR_KEY}", "OTEL_EXPORTER_OTLP_HEADERS: pair 1 is not key=value"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon", "OTEL_EXPORTER_OTLP_TIMEOUT: 'soon' is not a number of milliseconds"),
    ],
)
def test_a_collector_setting_convy_cannot_use_exits_2_naming_it(tmp_path: Path, variable: str, value: str, said: str) -> None:
    convy = project(tmp_path)
    ran = convy.ran("run", OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4318", **{variable: value})
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert said in ran.stderr
    assert "Traceback" not in ran.stderr and COLLECTOR_KEY not in ran.stderr
    assert not list(tmp_path.glob("results/bot/*/attempts.jsonl"))


def test_json_to_a_collector_decodes_as_the_protobuf_does(tmp_path: Path) -> None:
    convy = project(tmp_path, attempts=1)
    with OtlpReceiver() as receiver:
        ran = convy.ran("run", OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL="http/json", OTEL_EXPORTER_OTLP_COMPRESSION="gzip")
        assert ran.returncode == 0, ran.stderr
        spans = receiver.spans()
        sent = receiver.requests
    assert {headers["content-type"] for _, headers in sent} == {"application/json"}
    assert {headers["content-encoding"] for _, headers in sent} == {"gzip"}
    assert convy.ran("export", "--format", "otlp").returncode == 0
    assert shape(spans) == shape(exported(tmp_path)[0])


# An agent behind HTTP instrumented with the OpenTelemetry SDK: it takes each request's trace context
# from its headers (the SDK's own propagator), and starts a span for its turn and one for its tool
# under it, exported by the SDK's own OTLP/HTTP exporter.
class InstrumentedAgent:
    def __init__(self, collector: str) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor

        self.provider = TracerProvider(resource=Resource.create({"service.name": "shop-agent"}))
        self.provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{collector}/v1/traces")))
        tracer = self.provider.get_tracer("shop-agent")
        self.headers: list[dict[str, str]] = []
        agent = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                from opentelemetry.propagate import extract

                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                agent.headers.append({name.lower(): value for name, value in self.headers.items()})
                with tracer.start_as_current_span("invoke_agent shop-agent", context=extract(dict(self.headers))):
                    with tracer.start_as_current_span("execute_tool lookup_order") as tool:
                        tool.set_attribute("gen_ai.tool.name", "lookup_order")
                data = json.dumps({"reply": f"Order 42 shipped on Monday ({body['message']})."}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/agent"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.provider.shutdown()


def test_an_instrumented_http_agents_spans_join_the_turn_that_asked(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK is a dev dependency: pip install -e '.[dev]'")
    with OtlpReceiver() as receiver:
        agent = InstrumentedAgent(receiver.url)
        try:
            convy = project(tmp_path, f'from convy import JsonAgent\n\nagent = JsonAgent("{agent.url}")\n', attempts=2)
            (tmp_path / "scenarios" / "order.yaml").write_text(
                "script:\n  - Where is order 42?\n  - Thanks\njudge:\n  - the agent says when the order shipped\n", encoding="utf-8"
            )
            ran = convy.ran("run", OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url)
            assert ran.returncode == 0, ran.stdout + ran.stderr
        finally:
            agent.close()
        spans = receiver.spans()
    parents = [headers["traceparent"] for headers in agent.headers]
    assert len(parents) == 4  # two attempts of two turns, each sent its own
    ours = {span.span_id: span for span in spans if span.name.startswith("invoke_agent bot")}
    theirs = [span for span in spans if span.name == "invoke_agent shop-agent"]
    assert len(theirs) == 4
    for span in theirs:
        turn = ours[span.parent_span_id]  # the agent's turn span is a child of convy's turn span
        assert span.trace_id == turn.trace_id
        assert f"00-{turn.trace_id.hex()}-{turn.span_id.hex()}-01" in parents
    tools = [span for span in spans if span.name == "execute_tool lookup_order"]
    assert {span.parent_span_id for span in tools} == {span.span_id for span in theirs}


def test_a_rejudged_run_adds_its_judging_to_the_dialogues_trace(tmp_path: Path) -> None:
    convy = project(tmp_path, attempts=1)
    assert convy.ran("run").returncode == 0
    (first,) = (tmp_path / "results" / "bot").iterdir()
    with OtlpReceiver() as receiver:
        again = convy.ran("rejudge", first.name, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url)
        assert again.returncode == 0, again.stdout + again.stderr
        sent, results = receiver.spans(), receiver.logs()
    assert convy.ran("export", "--format", "otlp", first.name).returncode == 0
    dialogue, _ = exported(tmp_path)
    (root,) = [span for span in dialogue if not span.parent_span_id]
    # The re-judged run sends no second copy of the dialogue: one span of its judging, under its root.
    (judging,) = [span for span in sent if span.name == "rejudge order #1"]
    assert (judging.trace_id, judging.parent_span_id) == (root.trace_id, root.span_id)
    assert attributes(judging.attributes)["convy.rejudged"] is True
    assert attributes(judging.attributes)["gen_ai.conversation.id"] == attributes(root.attributes)["gen_ai.conversation.id"]
    assert not [span for span in sent if span.name.startswith("invoke_agent")]
    assert len(results) == 3 and {log.span_id for log in results} == {judging.span_id}


def test_check_says_where_the_traces_go_and_refuses_what_a_run_would(tmp_path: Path) -> None:
    convy = project(tmp_path)
    said = convy.ran("check", OTEL_EXPORTER_OTLP_ENDPOINT=f"http://user:{COLLECTOR_KEY}@127.0.0.1:4318")
    assert said.returncode == 0, said.stderr
    assert "traces: each attempt's sent to http://127.0.0.1:4318/v1/traces and http://127.0.0.1:4318/v1/logs as it ends (OTLP http/protobuf" in said.stdout
    assert COLLECTOR_KEY not in said.stdout + said.stderr
    refused = convy.ran("check", OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4318", OTEL_EXPORTER_OTLP_PROTOCOL="grpc")
    assert refused.returncode == 2
    assert "convy: OTEL_EXPORTER_OTLP_PROTOCOL: convy sends OTLP over HTTP only" in refused.stderr
    assert "traces:" not in convy.ran("check").stdout  # none set: nothing said


CLOSING = """\
from contextlib import asynccontextmanager

from convy import Answer


class Conversation:
    async def turn(self, message):
        return Answer("Order 42 shipped on Monday.")


class Agent:
    @asynccontextmanager
    async def conversation(self):
        yield Conversation()
        raise RuntimeError("could not close the session")


agent = Agent()
"""


def test_a_conversation_that_fails_to_close_is_no_extra_turn_but_the_roots_error(tmp_path: Path) -> None:
    convy = project(tmp_path, CLOSING, attempts=1)
    (tmp_path / "scenarios" / "order.yaml").write_text("script:\n  - Where is order 42?\njudge:\n  - it answered\n", encoding="utf-8")
    assert convy.ran("run").returncode == 1
    assert convy.ran("export", "--format", "otlp").returncode == 0
    spans, _ = exported(tmp_path)
    assert [span.name for span in spans if span.name.startswith("invoke_agent")] == ["invoke_agent bot"]
    (root,) = [span for span in spans if not span.parent_span_id]
    assert root.status.code == 2 and "could not close the session" in root.status.message
    assert attributes(root.attributes)["error.type"] == "agent_failed"


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
def test_a_collector_that_takes_a_request_but_rejects_some_of_it_is_said_once(tmp_path: Path, protocol: str) -> None:
    convy = project(tmp_path, attempts=3)
    with OtlpReceiver() as receiver:
        receiver.partial = (2, "span too large")
        ran = convy.ran("run", OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL=protocol)
        taken = len(receiver.spans())
    assert ran.returncode == 0, ran.stdout + ran.stderr
    said = [line for line in ran.stderr.splitlines() if "rejected" in line]
    assert said == [f"convy: the OpenTelemetry collector at {receiver.url}/v1/traces rejected 2 of the spans it was sent: span too large"]
    assert taken > 0  # the rest was sent on
