"""OTLP as convy writes it (``otlp.py``), read back by OpenTelemetry's own message classes, and an
attempt's trace context as its agent is given it (``tracecontext.py``)."""

from __future__ import annotations

import asyncio
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.otlpreceiver import attributes, logs_from_json, traces_from_json

from convy.agent import Answer, TimeLimited
from convy.fakes import FakeAgent, FakeJudge
from convy.otlp import CLIENT, LogRecord, Signals, Span
from convy.scenario import Scenario
from convy.tracecontext import TraceContext, TraceIds, trace_context

proto = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
logs_proto = pytest.importorskip("opentelemetry.proto.collector.logs.v1.logs_service_pb2")

IDS = st.binary(min_size=1).map(lambda data: data.hex())
SCALARS = (
    st.text()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False)
)
VALUES = SCALARS | st.lists(SCALARS, max_size=4)
ATTRIBUTES = st.dictionaries(st.text(min_size=1), VALUES, max_size=6)


def hexes(size: int) -> st.SearchStrategy[str]:
    return st.binary(min_size=size, max_size=size).map(bytes.hex)


@st.composite
def signals(draw: st.DrawFn) -> Signals:
    trace = draw(hexes(16))
    spans = tuple(
        Span(
            trace, draw(hexes(8)), draw(st.sampled_from(["", draw(hexes(8))])), draw(st.text()), draw(st.sampled_from([1, 3])),
            draw(st.integers(0, 2**63)), draw(st.integers(0, 2**64 - 1)), draw(ATTRIBUTES), draw(st.text()),
        )
        for _ in range(draw(st.integers(0, 3)))
    )
    logs = tuple(
        LogRecord(trace, draw(hexes(8)), draw(st.text()), draw(st.integers(0, 2**64 - 1)), draw(ATTRIBUTES), draw(st.text()))
        for _ in range(draw(st.integers(0, 3)))
    )
    return Signals(draw(ATTRIBUTES), draw(st.text()), draw(st.text()), spans, logs)


def plain(value: object) -> object:
    return [plain(item) for item in value] if isinstance(value, (list, tuple)) else value


@settings(max_examples=150, deadline=None)
@given(signals())
def test_protobuf_and_json_read_back_as_the_same_messages_holding_what_was_written(made: Signals) -> None:
    binary = proto.ExportTraceServiceRequest.FromString(made.proto_traces())
    assert traces_from_json(made.json_traces()) == binary
    binary_logs = logs_proto.ExportLogsServiceRequest.FromString(made.proto_logs())
    assert logs_from_json(made.json_logs()) == binary_logs
    (resource,) = binary.resource_spans
    assert attributes(resource.resource.attributes) == {key: plain(value) for key, value in made.resource.items()}
    (scope,) = resource.scope_spans
    assert (scope.scope.name, scope.scope.version) == (made.scope, made.version)
    for read, span in zip(scope.spans, made.spans, strict=True):
        assert (read.trace_id.hex(), read.span_id.hex(), read.parent_span_id.hex()) == (span.trace, span.span, span.parent)
        assert (read.name, read.kind, read.start_time_unix_nano, read.end_time_unix_nano) == (span.name, span.kind, span.start, span.end)
        assert attributes(read.attributes) == {key: plain(value) for key, value in span.attributes.items()}
        assert (read.status.code, read.status.message) == ((2, span.error) if span.error else (0, ""))
    (logged,) = binary_logs.resource_logs
    for read, log in zip(logged.scope_logs[0].log_records, made.logs, strict=True):
        assert (read.event_name, read.time_unix_nano, read.trace_id.hex(), read.span_id.hex()) == (log.event, log.time, log.trace, log.span)
        assert attributes(read.attributes) == {key: plain(value) for key, value in log.attributes.items()}
        assert read.body.string_value == log.body


def test_a_value_json_has_no_number_for_is_written_as_protobufs_json_mapping_writes_it() -> None:
    made = Signals({"nan": math.nan, "up": math.inf, "down": -math.inf}, "convy", "1", (Span("ab" * 16, "cd" * 8, "", "x", CLIENT, 1, 2),))
    read = attributes(traces_from_json(made.json_traces()).resource_spans[0].resource.attributes)
    assert math.isnan(read["nan"]) and (read["up"], read["down"]) == (math.inf, -math.inf)


def test_ids_are_the_same_each_time_valid_and_apart() -> None:
    ids = TraceIds.new()
    assert re.fullmatch(r"[0-9a-f]{32}", ids.trace) and ids.trace != TraceIds.new().trace
    spans = [ids.root(), ids.turn(1), ids.turn(2), ids.span("judge", 1)]
    assert all(re.fullmatch(r"[0-9a-f]{16}", span) and span.strip("0") for span in spans)
    assert len(set(spans)) == len(spans)
    assert TraceIds(ids.trace).turn(2) == ids.turn(2)
    # A record kept before attempts had a trace: one made from where it is, the same each time.
    old = TraceIds.of("", "bot", "run-1", "order", 3, "2026-12-07T09:00:00.000+00:00")
    assert old == TraceIds.of("", "bot", "run-1", "order", 3, "2026-12-07T09:00:00.000+00:00") != TraceIds.of("", "bot", "run-1", "order", 4, "")
    assert re.fullmatch(r"00-[0-9a-f]{32}-[0-9a-f]{16}-01", TraceContext(ids.trace, ids.turn(1)).traceparent())


def test_a_python_agent_reads_the_trace_context_of_the_turn_it_answers() -> None:
    seen: list[TraceContext | None] = []

    def answer(text: str) -> Answer:
        seen.append(trace_context())
        return Answer("fine")

    scenario = Scenario(id="two", judge=("it answered",), script=("one", "two"))
    outcome = asyncio.run(scenario.outcome(1, TimeLimited(FakeAgent(answer)), None, FakeJudge(), 3))
    ids = TraceIds(outcome.trace)
    assert seen == [TraceContext(outcome.trace, ids.turn(1)), TraceContext(outcome.trace, ids.turn(2))]
    assert trace_context() is None  # outside a turn


def test_a_collectors_partial_success_is_read_and_no_answer_breaks_the_reading() -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTracePartialSuccess,
        ExportTraceServiceResponse,
    )

    from convy.otlp import rejected

    made = ExportTraceServiceResponse(partial_success=ExportTracePartialSuccess(rejected_spans=3, error_message="too big"))
    assert rejected(made.SerializeToString(), False) == (3, "too big")
    assert rejected(b'{"partialSuccess": {"rejectedSpans": "3", "errorMessage": "too big"}}', True) == (3, "too big")
    assert rejected(b"", False) == rejected(b"{}", True) == rejected(b"[1]", True) == (0, "")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64), st.booleans())
def test_no_answer_a_collector_gives_makes_the_reading_raise(body: bytes, json: bool) -> None:
    from convy.otlp import rejected

    count, why = rejected(body, json)
    assert isinstance(count, int) and isinstance(why, str)
