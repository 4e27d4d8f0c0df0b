"""The agent's own spans received (issue 30, item 4): what ``received.spans`` reads of OTLP as
OpenTelemetry's own classes and SDK write it, what the ``Receiver`` takes over HTTP and keeps of
each attempt, and the calls ``traced`` joins to the turns they were made in."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gzip
import json
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convy import Bench, Limits, Models, Plan, Rule, Scenario
from convy.agent import Answer, Call, NotReported, Reported
from convy.checks import Check
from convy.cli.receiving import Receiving
from convy.fakes import FakeAgent, MemoryJournal
from convy.judge import NoVerdict
from convy.listener import MOST_BODY, Heard, Listener, _Request
from convy.otlp import Signals, Span, _varint
from convy.outcome import Outcome
from convy.received import MOST_TEXT, AgentSpan, grouped, recorded, spans
from convy.receiver import MOST_SPANS, Received, Receiver
from convy.secrets import HIDDEN, Secrets
from convy.tracecontext import TraceIds
from convy.traced import _decoded, dialogue
from convy.transcript import Transcript, Turn

trace_pb = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
common_pb = pytest.importorskip("opentelemetry.proto.common.v1.common_pb2")

TRACE = "5b8efff798038103d269b633813fc60c"
TURN = "eee19b7ec3c1b174"


def request(*made: Any, service: str = "shop-agent") -> Any:
    """An ExportTraceServiceRequest of OpenTelemetry's own classes, holding ``made`` spans."""
    message = trace_pb.ExportTraceServiceRequest()
    resource = message.resource_spans.add()
    attribute = resource.resource.attributes.add()
    attribute.key, attribute.value.string_value = "service.name", service
    scoped = resource.scope_spans.add()
    scoped.scope.name = "shop"
    for span in made:
        scoped.spans.append(span)
    return message


def span_pb(span: str, parent: str, name: str, **attributes: Any) -> Any:
    from opentelemetry.proto.trace.v1 import trace_pb2

    made = trace_pb2.Span(
        trace_id=bytes.fromhex(TRACE),
        span_id=bytes.fromhex(span),
        parent_span_id=bytes.fromhex(parent),
        name=name,
        kind=trace_pb2.Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=1_700_000_000_000_000_000,
        end_time_unix_nano=1_700_000_000_250_000_000,
    )
    for key, value in attributes.items():
        pair = made.attributes.add()
        pair.key = key
        _set(pair.value, value)
    return made


def _set(target: Any, value: Any) -> None:
    match value:
        case bool():
            target.bool_value = value
        case int():
            target.int_value = value
        case float():
            target.double_value = value
        case str():
            target.string_value = value
        case bytes():
            target.bytes_value = value
        case dict():
            for key, item in value.items():
                pair = target.kvlist_value.values.add()
                pair.key = key
                _set(pair.value, item)
        case list():
            for item in value:
                _set(target.array_value.values.add(), item)


# An attribute of each kind OTLP has, as the classes are given it and as convy reads it back.
VALUES: dict[str, Any] = {
    "gen_ai.tool.name": "lookup_order",
    "count": -3,
    "big": 2**62,
    "ratio": 0.25,
    "ok": True,
    "tags": ["a", 1, False],
    "nested": {"inner": {"deep": "x"}},
}


def test_protobuf_from_opentelemetrys_own_classes_reads_every_kind_of_value() -> None:
    made = span_pb(
        "00f067aa0ba902b7",
        TURN,
        "execute_tool lookup_order",
        **VALUES,
        raw=b"\x00\x01",
    )
    made.status.code = 2
    made.status.message = "no such order"
    (read,) = spans(request(made).SerializeToString(), json=False)
    assert read == AgentSpan(
        TRACE,
        "00f067aa0ba902b7",
        "execute_tool lookup_order",
        1_700_000_000_000_000_000,
        1_700_000_000_250_000_000,
        TURN,
        1,
        VALUES | {"raw": "AAE="},  # bytes as base64 text
        "no such order",
        "shop-agent",
    )
    assert read.tool() == "lookup_order" and read.seconds() == 0.25


def test_json_as_opentelemetry_writes_it_reads_as_the_protobuf_does() -> None:
    """OTLP JSON: ids in hex, 64-bit numbers as text, enums as numbers or as their names."""
    made = span_pb("00f067aa0ba902b7", TURN, "execute_tool refund", **{"gen_ai.tool.name": "refund", "n": 7, "xs": [1.5, "b"]})
    body = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "shop-agent"}}]},
                "scopeSpans": [
                    {
                        "scope": {"name": "shop"},
                        "spans": [
                            {
                                "traceId": TRACE.upper(),
                                "spanId": "00f067aa0ba902b7",
                                "parentSpanId": TURN,
                                "name": "execute_tool refund",
                                "kind": "SPAN_KIND_INTERNAL",
                                "startTimeUnixNano": "1700000000000000000",
                                "endTimeUnixNano": 1700000000250000000,
                                "attributes": [
                                    {"key": "gen_ai.tool.name", "value": {"stringValue": "refund"}},
                                    {"key": "n", "value": {"intValue": "7"}},
                                    {"key": "xs", "value": {"arrayValue": {"values": [{"doubleValue": 1.5}, {"stringValue": "b"}]}}},
                                ],
                            }
                        ],
                    }
                ],
            }
        ]
    }
    assert spans(json.dumps(body).encode(), json=True) == spans(request(made).SerializeToString(), json=False)


@settings(max_examples=60)
@given(st.binary(max_size=200))
def test_any_bytes_read_as_spans_or_a_value_error(data: bytes) -> None:
    for as_json in (False, True):
        try:
            read = spans(data, as_json)
        except ValueError:
            continue
        assert all(len(span.trace) == 32 and len(span.span) == 16 for span in read)


def test_what_is_kept_of_a_span_is_bounded() -> None:
    deep: Any = "bottom"
    for _ in range(10):
        deep = {"in": deep}
    made = span_pb(
        "00f067aa0ba902b7",
        TURN,
        "n" * (MOST_TEXT * 2),
        long="x" * (MOST_TEXT * 3),
        many=list(range(500)),
        deep=deep,
        **{f"a{number}": number for number in range(300)},
    )
    (read,) = spans(request(made).SerializeToString(), json=False)
    assert len(read.name) == MOST_TEXT + 1 and len(read.attributes["long"]) == MOST_TEXT + 1
    assert len(read.attributes["many"]) == 64
    assert len(read.attributes) == 128
    assert "in" in json.dumps(read.attributes["deep"]) and json.dumps(read.attributes["deep"]).count("{") <= 5


def test_a_span_whose_ids_are_not_otlps_sizes_is_left_out() -> None:
    made = span_pb("00f067aa0ba902b7", TURN, "ok")
    short = span_pb("00f067aa0ba902b7", TURN, "short")
    short.trace_id = b"\x01\x02"
    assert [span.name for span in spans(request(made, short).SerializeToString(), json=False)] == ["ok"]
    # A request none of whose spans has ids that read (base64 in OTLP JSON, as protobuf's own JSON
    # mapping writes them) is not answered as if kept: it is said, with what OTLP asks.
    with pytest.raises(ValueError, match=r"none of its 1 span\(s\) read as a span with ids of 16 bytes \(trace\) and 8 \(span\)"):
        spans(request(short).SerializeToString(), json=False)
    as_base64 = {"traceId": base64.b64encode(bytes.fromhex(TRACE)).decode(), "spanId": base64.b64encode(b"\1" * 8).decode(), "name": "x"}
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [as_base64]}]}]}).encode()
    with pytest.raises(ValueError, match=r"with ids in hex, as OTLP JSON gives them \(not base64\)"):
        spans(body, json=True)


def test_convys_own_export_reads_back_alike_in_both_encodings() -> None:
    sent = Signals(
        {"service.name": "convy"},
        "convy",
        "1",
        (Span(TRACE, "00f067aa0ba902b7", TURN, "execute_tool x", 1, 5, 9, {"gen_ai.tool.name": "x", "k": [1, 2]}, error="boom"),),
    )
    proto, as_json = spans(sent.proto_traces(), json=False), spans(sent.json_traces(), json=True)
    assert proto == as_json
    assert proto[0].error == "boom" and proto[0].attributes == {"gen_ai.tool.name": "x", "k": [1, 2]}


# The receiver, over HTTP.


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver(wait=30.0)
    try:
        yield made
    finally:
        made.close()


def traces(url: str) -> str:
    return f"{url}/v1/traces"


async def posted(receiver: Receiver, *requests: tuple[str, bytes, dict[str, str]]) -> list[httpx2.Response]:
    async with receiver.serving(), httpx2.AsyncClient(trust_env=False) as client:
        return [await client.post(receiver.url + path, content=body, headers=headers) for path, body, headers in requests]


PROTOBUF = {"content-type": "application/x-protobuf"}


def test_the_spans_of_an_attempt_under_way_are_kept_and_others_counted(receiver: Receiver) -> None:
    ours = request(span_pb("00f067aa0ba902b7", TURN, "invoke_agent shop")).SerializeToString()
    other = request(span_pb("00f067aa0ba902b7", TURN, "x")).SerializeToString().replace(bytes.fromhex(TRACE), b"\x07" * 16)

    async def played() -> Any:
        receiver.opened(TRACE)
        answers = await posted(receiver, ("/v1/traces", ours, PROTOBUF), ("/v1/traces", other, PROTOBUF))
        return answers, await receiver.taken(TRACE, [TURN])

    answers, received = asyncio.run(played())
    assert [answer.status_code for answer in answers] == [200, 200]
    assert answers[0].headers["content-type"] == "application/x-protobuf" and answers[0].content == b""
    assert [span.name for span in recorded(received.spans)] == ["invoke_agent shop"] and received.whole
    assert receiver.unmatched == 1 and receiver.heard


def test_what_an_sdk_sends_is_answered_as_otlp_asks(receiver: Receiver) -> None:
    body = request(span_pb("00f067aa0ba902b7", TURN, "a")).SerializeToString()
    as_json = json.dumps({"resourceSpans": []}).encode()
    answers = asyncio.run(
        posted(
            receiver,
            ("/v1/traces", gzip.compress(body), PROTOBUF | {"content-encoding": "gzip"}),
            ("/v1/traces", as_json, {"content-type": "application/json"}),
            ("/v1/logs", b"", PROTOBUF),
            ("/v1/metrics", b"", PROTOBUF),
            ("/v1/traces", b"\xff\xff", PROTOBUF),
            ("/elsewhere", b"", PROTOBUF),
            ("/v1/traces", b"", PROTOBUF | {"content-encoding": "br"}),
        )
    )
    assert [answer.status_code for answer in answers] == [200, 200, 200, 200, 400, 404, 415]
    assert answers[1].json() == {} and answers[1].headers["content-type"] == "application/json"
    assert receiver.unread == 2 and "did not read as OTLP Protobuf" in receiver.problem  # and the one to /elsewhere


def test_a_request_to_another_path_is_said_with_the_fix(receiver: Receiver) -> None:
    """An exporter given the address as OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (no /v1/traces) is
    answered 404, as a wrong URL is, and the run says so with which variable takes what."""
    (answer,) = asyncio.run(posted(receiver, ("/", b"", PROTOBUF)))
    assert answer.status_code == 404 and receiver.unread == 1
    assert receiver.problem == (
        "a request to /, not /v1/traces, was answered 404: OTEL_EXPORTER_OTLP_ENDPOINT is the address alone, "
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT the whole URL, ending in /v1/traces"
    )


def test_a_body_over_the_bound_is_refused_unread(receiver: Receiver) -> None:
    async def played() -> tuple[int, int]:
        async with receiver.serving():
            reader, writer = await asyncio.open_connection("127.0.0.1", int(receiver.url.rsplit(":", 1)[1]))
            writer.write(f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Length: {MOST_BODY + 1}\r\n\r\n".encode())
            await writer.drain()
            status = int((await reader.readline()).split()[1])
            await reader.read()  # closed by the receiver
            writer.close()
            zipped = gzip.compress(b"\0" * (MOST_BODY + 10))
            async with httpx2.AsyncClient(trust_env=False) as client:
                bomb = await client.post(traces(receiver.url), content=zipped, headers=PROTOBUF | {"content-encoding": "gzip"})
            return status, bomb.status_code

    assert asyncio.run(played()) == (413, 413)


def test_chunks_and_a_kept_alive_connection_are_read(receiver: Receiver) -> None:
    body = request(span_pb("00f067aa0ba902b7", TURN, "chunked")).SerializeToString()

    async def played() -> list[bytes]:
        receiver.opened(TRACE)
        async with receiver.serving():
            reader, writer = await asyncio.open_connection("127.0.0.1", int(receiver.url.rsplit(":", 1)[1]))
            half = len(body) // 2
            chunked = f"{half:x}\r\n".encode() + body[:half] + f"\r\n{len(body) - half:x}\r\n".encode() + body[half:] + b"\r\n0\r\n\r\n"
            heads = []
            for payload in (chunked, chunked):
                writer.write(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + payload)
                await writer.drain()
                heads.append(await reader.readuntil(b"\r\n\r\n"))
            writer.close()
            return heads

    heads = asyncio.run(played())
    assert all(head.startswith(b"HTTP/1.1 200") for head in heads)
    assert len(receiver._open[TRACE].spans) == 2


def test_an_agent_that_sends_nothing_is_waited_for_once() -> None:
    receiver = Receiver(wait=0.05)
    try:
        async def played() -> tuple[Any, Any]:
            receiver.opened("a" * 32)
            receiver.opened("b" * 32)
            async with receiver.serving():
                return await receiver.taken("a" * 32, [TURN]), await receiver.taken("b" * 32, [TURN])

        first, second = asyncio.run(played())
    finally:
        receiver.close()
    assert not first.whole and not second.whole and receiver.silent and not receiver.heard


def test_the_opentelemetry_sdks_own_exporter_is_taken(receiver: Receiver) -> None:
    """The SDK's OTLP/HTTP exporter (requests, Protobuf), in a thread of its own as an agent's
    would be, sends spans started under the turn's trace context: they are the attempt's."""
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    provider = TracerProvider(resource=Resource.create({"service.name": "shop-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=traces(receiver.url))))
    tracer = provider.get_tracer("shop")

    def agent() -> None:
        context = TraceContextTextMapPropagator().extract({"traceparent": f"00-{TRACE}-{TURN}-01"})
        with tracer.start_as_current_span("invoke_agent shop", context=context):
            with tracer.start_as_current_span("execute_tool refund") as tool:
                tool.set_attribute("gen_ai.tool.name", "refund")
                tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"order": 42}))

    async def played() -> Any:
        receiver.opened(TRACE)
        async with receiver.serving():
            await asyncio.to_thread(agent)
            return await receiver.taken(TRACE, [TURN])

    try:
        received = asyncio.run(played())
    finally:
        provider.shutdown()
    assert received.whole
    tool, top = recorded(received.spans)
    assert received.tools == (tool,) and received.links == {tool.span: top.span, top.span: TURN}
    assert (tool.tool(), tool.service, tool.parent, top.parent) == ("refund", "shop-agent", top.span, TURN)


# The calls the spans show, joined to the dialogue.


def turn(text: str, *steps: Any) -> Turn:
    return Turn("hi", Answer(text, steps=steps), True, 0.0, 0.0, Answer("").usage, 0.0, 0.0)  # type: ignore[arg-type]


def tool_span(ids: TraceIds, name: str, parent: str, start: int, arguments: Any = None, **more: Any) -> AgentSpan:
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name} | more
    if arguments is not None:
        attributes["gen_ai.tool.call.arguments"] = json.dumps(arguments)
    return AgentSpan(ids.trace, f"{start:016x}", f"execute_tool {name}", start, start + 500_000_000, parent, 1, attributes)


def shown(spans: Any) -> tuple[list[AgentSpan], dict[str, str]]:
    """What the receiver gives ``traced.dialogue`` of ``spans``: the tool calls among them, and each one's parent."""
    return [span for span in spans if span.tool()], {span.span: span.parent for span in spans}


def test_each_tool_span_joins_the_turn_it_descends_from() -> None:
    ids = TraceIds.new()
    top1 = AgentSpan(ids.trace, "a" * 16, "invoke_agent shop", 0, 9, ids.turn(1))
    inner = AgentSpan(ids.trace, "b" * 16, "chain", 0, 9, top1.span)
    top2 = AgentSpan(ids.trace, "c" * 16, "invoke_agent shop", 0, 9, ids.turn(2))
    received = (
        top1,
        inner,
        tool_span(ids, "lookup", inner.span, 2, {"order": 42}, **{"gen_ai.tool.call.result": json.dumps({"status": "shipped"})}),
        tool_span(ids, "refund", top2.span, 5, {"order": 42}),
        tool_span(ids, "note", top2.span, 4),
        tool_span(ids, "stray", "f" * 16, 6),
        top2,
    )
    reported = Call("refund", {"order": 42.0})
    transcript = Transcript((turn("It shipped."), turn("Refunded.", reported)))
    turns = [ids.turn(number) for number in (1, 2, 3)]
    joined, broken = dialogue(transcript, None, *shown(received), turns, whole=True)
    first, second = (played.answer.steps for played in joined.turns)
    assert first == (Call("lookup", {"order": 42}, Reported({"status": "shipped"}), 0.5, traced=True),)
    assert second == (
        Call("refund", {"order": 42.0}, traced=True),
        Call("note", {}, NotReported(), 0.5, traced=True),
    )
    assert joined.traced and broken is None


def test_a_traced_call_of_a_declared_tool_its_tools_never_saw_is_claimed() -> None:
    ids = TraceIds.new()
    received = (tool_span(ids, "refund", ids.turn(1), 1), tool_span(ids, "mine", ids.turn(2), 2))
    transcript = Transcript((turn("Done."),))
    joined, broken = dialogue(transcript, None, *shown(received), [ids.turn(1), ids.turn(2)], whole=False, declared={"refund"})
    assert joined.turns[0].answer.steps[0].source == "claimed"  # type: ignore[union-attr]
    assert broken is not None and broken.steps == (Call("mine", {}, NotReported(), 0.5, traced=True),)
    assert not joined.traced


def said_done(transcript: Transcript) -> tuple[bool, str, str]:
    claim = Check(said_done="[Cc]ancel+ed", by_calling="cancel").claim(transcript)
    return claim.held, claim.reason, claim.doubt


def test_said_done_holds_when_the_call_came_first_and_not_when_the_words_did() -> None:
    called = Call("cancel", {"id": 1})
    assert said_done(Transcript((turn("Let me see."), turn("Cancelled.", called)))) == (
        True, "agent called cancel in turn 2, and said 'Cancelled' in turn 2", ""
    )
    assert said_done(Transcript((turn("Cancelled."), turn("Now really.", called))))[:2] == (
        False, "agent said 'Cancelled' in turn 1, but no call of cancel that did it was seen by then"
    )
    assert said_done(Transcript((turn("Hello"),))) == (True, "agent never said anything matching /[Cc]ancel+ed/", "")


def test_said_done_counts_only_calls_that_did_it() -> None:
    failed = Call("cancel", error="no such booking")
    assert said_done(Transcript((turn("Cancelled.", failed),)))[1].endswith("its call in turn 1 failed (no such booking)")
    claimed = Call("cancel", source="claimed")
    assert "only said by the agent" in said_done(Transcript((turn("Cancelled.", claimed),)))[1]
    # Spans were received for the dialogue: a call they did not show is the agent's word alone.
    reported = Transcript((turn("Cancelled.", Call("cancel")),), traced=True)
    assert said_done(reported)[0] is False and "its spans did not show it" in said_done(reported)[1]
    seen = Transcript((turn("Cancelled.", Call("cancel", traced=True)),), traced=True)
    assert said_done(seen)[0] is True


def test_said_done_where_no_call_could_be_seen_is_in_doubt_unless_spans_showed_them() -> None:
    unheld = Turn("hi", Answer("Cancelled.", unheld="calls"), True, 0.0, 0.0, Answer("").usage, 0.0, 0.0)
    held, _, doubt = said_done(Transcript((unheld,)))
    assert (held, doubt) == (False, "unseen")
    assert said_done(Transcript((unheld,), traced=True))[2] == ""
    called = Check(called="cancel").claim(Transcript((unheld,), traced=True))
    assert called.doubt == "" and called.reason == "agent never called cancel"


def test_in_a_traced_dialogue_a_call_only_reported_counts_for_no_tool_check() -> None:
    """A call the agent reported that its spans did not show is its word alone for ``called``, as for
    ``said_done``, and enough for ``not_called``; where no spans were received it counts as before."""
    reported = Transcript((turn("Refunded.", Call("refund", {"order": 7})),), traced=True)
    unshown = "agent never called refund (it reported a call of it in turn 1, which its own spans did not show)"
    assert (Check(called="refund").claim(reported).held, Check(called="refund").claim(reported).reason) == (False, unshown)
    # For not_called, the agent's own word that it called the tool is enough.
    assert (Check(not_called="refund").claim(reported).held, Check(not_called="refund").claim(reported).reason) == (
        False, "agent called refund in turn 1"
    )
    shown = Transcript((turn("Refunded.", Call("refund", {"order": 7}, traced=True)),), traced=True)
    assert Check(called="refund", with_={"order": 7}).claim(shown).held is True
    untraced = msgspec.structs.replace(reported, traced=False)
    assert Check(called="refund").claim(untraced).reason == "agent called refund in turn 1"


def test_where_the_spans_are_the_only_sight_of_the_calls_and_did_not_show_them_the_checks_are_unseen() -> None:
    receiver = Receiver(wait=2.0)
    try:
        receiver.begun(Secrets(), sole=True)
        assert receiver.unseen(Received(whole=True, tooled=True)) == ""
        nothing = receiver.unseen(Received())
        assert nothing == (
            "its tool calls are seen only in its own spans, and no span of its came for this attempt (traces_wait: 2 s): "
            "not every tool call could be seen"
        )
        part = receiver.unseen(Received(spans=msgspec.Raw(b'[{"span":"a"}]'), whole=False, tooled=True))
        assert "not every turn's spans came within traces_wait (2 s)" in part
        # Every turn's spans, and no execute_tool span yet in the run: taken as no call made.
        assert receiver.unseen(Received(spans=msgspec.Raw(b'[{"span":"a"}]'), whole=True, tooled=False)) == ""
        lost = Received(spans=msgspec.Raw(b'[{"span":"a"}]'), whole=True, tooled=False)
        receiver.tooled = True  # another attempt's tool span came, but one of this one's was left out
        assert "some of its tool spans were left out" in receiver.unseen(lost)
        receiver.begun(Secrets())  # an agent that reports its calls too: they are seen as it said them
        assert receiver.unseen(Received()) == ""
    finally:
        receiver.close()
    dialogue_of = Transcript((turn("Cancelled."),), unseen=nothing)
    for check in (Check(called="cancel"), Check(not_called="refund"), Check(said_done="Cancelled", by_calling="cancel")):
        claim = check.claim(dialogue_of)
        assert (claim.held, claim.doubt) == (False, "unseen") and nothing in claim.reason, claim
    # A call the spans that came did show still decides: not every call was seen, but that one was.
    partly = Transcript((turn("Refunded.", Call("refund", {"order": 7}, traced=True)),), unseen=part)
    assert (Check(not_called="refund").claim(partly).held, Check(not_called="refund").claim(partly).doubt) == (False, "")
    assert (Check(called="refund").claim(partly).held, Check(called="refund").claim(partly).doubt) == (True, "")
    assert Check(called="cancel").claim(partly).doubt == "unseen"


def test_a_span_that_shows_a_reported_call_wins_on_its_error_and_one_without_arguments_matches_by_name() -> None:
    ids = TraceIds.new()
    failed = tool_span(ids, "cancel", ids.turn(1), 1, {"id": "B1"})
    failed = AgentSpan(failed.trace, failed.span, failed.name, failed.start, failed.end, failed.parent, 1, failed.attributes, "PermissionDenied")
    bare = tool_span(ids, "lookup", ids.turn(1), 2)  # the conventions make the arguments optional
    reported = (Call("cancel", {"id": "B1"}, Reported("ok")), Call("lookup", {"id": "B1"}))
    joined, _ = dialogue(Transcript((turn("Cancelled.", *reported),)), None, *shown((failed, bare)), [ids.turn(1), ids.turn(2)], whole=True)
    assert joined.turns[0].answer.steps == (
        Call("cancel", {"id": "B1"}, Reported("ok"), error="PermissionDenied", traced=True),
        Call("lookup", {"id": "B1"}, traced=True),
    )
    assert said_done(joined)[0] is False  # the span said the cancel failed


def test_arguments_cut_short_match_by_name_and_are_not_a_second_call() -> None:
    ids = TraceIds.new()
    long = {"note": "x" * 70_000}
    span = tool_span(ids, "save", ids.turn(1), 1, long)
    (kept,) = spans(request_of(span), json=False)
    joined, _ = dialogue(Transcript((turn("Saved.", Call("save", long)),)), None, *shown((kept,)), [ids.turn(1)], whole=True)
    assert [step.name for step in joined.turns[0].answer.steps] == ["save"]  # type: ignore[union-attr]


def request_of(span: AgentSpan) -> bytes:
    return Signals({}, "shop", "1", (Span(span.trace, span.span, span.parent, span.name, 1, span.start, span.end, span.attributes),)).proto_traces()


def test_secrets_are_hidden_before_a_text_is_cut() -> None:
    key = "sk-Zq7Xk9RtYvB2"
    text = "a" * (MOST_TEXT - 6) + key
    body = request_of(AgentSpan(TRACE, "00f067aa0ba902b7", "x", 1, 2, TURN, 1, {"said": text, "long": "b" * (MOST_TEXT + 5)}))
    (span,) = spans(body, False, Secrets((key,)))
    assert "Zq7" not in span.attributes["said"] and span.attributes["said"].startswith("a" * (MOST_TEXT - 6) + HIDDEN[:4])
    assert span.attributes["long"] == "b" * MOST_TEXT + "…"
    (plain,) = spans(body, False, Secrets(("sk-NotInTheBody1",)))  # no piece of it in the body: cut all the same
    assert plain.attributes["said"].endswith("…") and plain.attributes["long"] == "b" * MOST_TEXT + "…"


@pytest.mark.parametrize(
    ("head", "body", "status"),
    [
        ("Transfer-Encoding: chunked", b"-1\r\n\r\n", 400),
        ("Content-Length: \u00b2", b"", 400),
        ("Transfer-Encoding: gzip, chunked", b"0\r\n\r\n", 501),
        ("Content-Length: 0\r\nTransfer-Encoding: chunked", b"0\r\n\r\n", 400),
        ("Content-Length: 0\r\nContent-Length: 5", b"", 400),
    ],
    ids=["negative chunk", "not ascii digits", "other transfer encoding", "both framings", "two lengths"],
)
def test_a_request_whose_body_cannot_be_framed_for_certain_is_refused(receiver: Receiver, head: str, body: bytes, status: int) -> None:
    async def played() -> bytes:
        async with receiver.serving():
            reader, writer = await asyncio.open_connection("127.0.0.1", int(receiver.url.rsplit(":", 1)[1]))
            writer.write(f"POST /v1/traces HTTP/1.1\r\nHost: x\r\n{head}\r\n\r\n".encode() + body)
            await writer.drain()
            answer = await reader.read()  # the receiver closes the connection after the refusal
            writer.close()
            return answer

    assert asyncio.run(played()).startswith(f"HTTP/1.1 {status} ".encode())


def test_bodies_that_break_a_decoder_are_a_400_said_once() -> None:
    from opentelemetry.proto.common.v1 import common_pb2

    made = span_pb("00f067aa0ba902b7", TURN, "x")
    wide = made.attributes.add()
    wide.key = "d"
    # field 4 (a double) sent as a varint of more than 64 bits
    wide.value.MergeFromString(b"\x20" + b"\xff" * 9 + b"\x03")
    assert common_pb2  # the classes wrote it; convy's reader must refuse it, not crash
    deep = b"[" * 100_000 + b"]" * 100_000
    for body, json_ in ((request(made).SerializeToString(), False), (deep, True)):
        with pytest.raises(ValueError):
            spans(body, json_)


def test_spans_that_come_after_their_attempt_ended_count_as_heard_and_late(receiver: Receiver) -> None:
    body = request(span_pb("00f067aa0ba902b7", TURN, "execute_tool x", **{"gen_ai.tool.name": "x"})).SerializeToString()

    async def played() -> Any:
        receiver.opened(TRACE)
        receiver.forgotten(TRACE)  # ended before its spans came
        await posted(receiver, ("/v1/traces", body, PROTOBUF))
        receiver.opened("c" * 32)
        return await receiver.taken("c" * 32, [TURN])

    receiver.wait = 0.05
    received = asyncio.run(played())
    assert (receiver.late, receiver.unmatched, receiver.heard, receiver.tooled) == (1, 0, True, True)
    assert not receiver.silent and received.tooled and not received.whole
    receiver.begun(Secrets())  # the next agent's run: learnt afresh
    assert (receiver.late, receiver.heard, receiver.tooled) == (0, False, False)


def test_the_secrets_of_each_agent_reach_the_listener_and_are_hidden_in_what_it_reads(receiver: Receiver) -> None:
    first, second = "sk-Qw8Er7Ty6Ui5Op4", "sk-Zx1Cv2Bn3Mm4Lk5"
    said = f"keys {first} and {second}"
    body = request(span_pb("00f067aa0ba902b7", TURN, "invoke_agent shop", said=said)).SerializeToString()

    async def played() -> Any:
        receiver.begun(Secrets((first,)))
        async with receiver.serving():
            receiver.begun(Secrets((second,)))  # told while it serves: with the first, not instead of it
            receiver.opened(TRACE)
            async with httpx2.AsyncClient(trust_env=False) as client:
                answer = await client.post(traces(receiver.url), content=body, headers=PROTOBUF)
            return answer, await receiver.taken(TRACE, [TURN])

    answer, received = asyncio.run(played())
    assert answer.status_code == 200 and received.whole
    (span,) = recorded(received.spans)
    assert span.attributes["said"] == f"keys {HIDDEN} and {HIDDEN}"


def test_a_listener_that_ends_early_stops_every_wait_and_is_said(receiver: Receiver) -> None:
    async def played() -> Any:
        async with receiver.serving():
            receiver.opened(TRACE)
            assert receiver.listener is not None
            receiver.listener.kill()
            return await receiver.taken(TRACE, [TURN])  # waits for no span: none can come

    received = asyncio.run(played())
    assert not received.whole and receiver.ended == -9
    assert any("ended (code -9)" in line for line in Receiving(receiver).said("shop"))
    # Nothing answers on its port any more: an exporter is refused at once, not left to time out.
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", int(receiver.url.rsplit(":", 1)[1])), timeout=5).close()

    async def again() -> Any:  # the next agent's run, or an adaptive run's next round: no listener, no wait
        async with receiver.serving():
            receiver.opened(TRACE)
            assert receiver.listener is None
            return await receiver.taken(TRACE, [TURN])

    assert not asyncio.run(again()).whole and receiver.ended == -9


def test_spans_the_run_has_not_read_past_the_bound_are_answered_try_again_later() -> None:
    """A run that reads what the listener heard more slowly than the agent sends: past
    ``MOST_UNREAD`` bytes waiting, spans are answered 503 (an exporter tries them again later),
    and nothing more is held."""
    heard: list[bytes] = []
    body = request(span_pb("00f067aa0ba902b7", TURN, "x")).SerializeToString()
    busy = Listener(heard.append, lambda: True)._answered(_Request("POST", "/v1/traces", {}, body), False)
    free = Listener(heard.append, lambda: False)._answered(_Request("POST", "/v1/traces", {}, body), False)
    assert busy.startswith(b"HTTP/1.1 503 ") and free.startswith(b"HTTP/1.1 200 ")
    assert [sum(len(came.ids) for came in msgspec.msgpack.decode(frame[4:], type=Heard).came) for frame in heard] == [1]


def test_the_listener_ends_when_told_though_a_fork_of_the_run_holds_its_input_open(receiver: Receiver) -> None:
    """A process forked from the run (an agent's process pool) holds a copy of the listener's
    input: the run's end is said to it, not left to the input's end, which would never come."""

    async def played() -> Any:
        async with receiver.serving():
            listener = receiver.listener
            assert listener is not None and listener.stdin is not None
            held = os.dup(listener.stdin.get_extra_info("pipe").fileno())  # as a fork's copy would
        os.close(held)
        return listener.returncode

    assert asyncio.run(played()) == 0


def test_a_project_module_named_as_one_of_pythons_does_not_break_the_listener(
    receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs start in the project's folder: a ``token.py`` there is not imported in place of Python's."""
    (tmp_path / "token.py").write_text("raise SystemExit('the project\\'s token.py was imported')\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    body = request(span_pb("00f067aa0ba902b7", TURN, "invoke_agent shop")).SerializeToString()

    async def played() -> Any:
        async with receiver.serving():
            receiver.opened(TRACE)
            async with httpx2.AsyncClient(trust_env=False) as client:
                await client.post(traces(receiver.url), content=body, headers=PROTOBUF)
            return await receiver.taken(TRACE, [TURN])

    assert asyncio.run(played()).whole and receiver.ended is None


def ld(field: int, payload: bytes) -> bytes:
    """A length-delimited Protobuf field, written by hand where a sender's bytes are not what its classes write."""
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def test_numbers_past_64_bits_are_kept_as_protobufs_readers_keep_them_and_the_request_answered() -> None:
    huge = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": TRACE, "spanId": "00f067aa0ba902b7", "name": "x", "startTimeUnixNano": "99999999999999999999", "endTimeUnixNano": "2",
         "kind": 1 << 70, "attributes": [{"key": "n", "value": {"intValue": str(1 << 70)}}]}]}]}]}).encode()
    wide = ld(1, bytes.fromhex(TRACE)) + ld(2, bytes(8)) + ld(5, b"x") + _varint(7 << 3) + b"\xff" * 9 + b"\x7f"  # a start of 70 bits
    (from_json,) = spans(huge, True)
    (from_proto,) = spans(ld(1, ld(2, ld(2, wide))), False)
    assert (from_json.start, from_json.kind, from_json.attributes) == (0, 0, {"n": 0})
    assert from_proto.start == (1 << 64) - 1
    heard: list[bytes] = []
    for body, kind in ((huge, "application/json"), (ld(1, ld(2, ld(2, wide))), "application/x-protobuf")):
        answered = Listener(heard.append)._answered(_Request("POST", "/v1/traces", {"content-type": kind}, body), False)
        assert answered.startswith(b"HTTP/1.1 200 ")
    assert [sum(len(came.ids) for came in msgspec.msgpack.decode(frame[4:], type=Heard).came) for frame in heard] == [1, 1]


def test_a_field_of_an_attribute_that_runs_past_the_attribute_is_a_value_error() -> None:
    attribute = ld(1, b"k") + bytes([2 << 3 | 0])  # a varint's key inside the attribute, its value outside it
    span = ld(1, bytes(16)) + ld(2, bytes(8)) + ld(9, attribute) + ld(5, b"name")
    with pytest.raises(ValueError):
        spans(ld(1, ld(2, ld(2, span))), False)


def test_a_secret_in_a_bytes_value_is_hidden_though_the_body_holds_no_piece_of_it() -> None:
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    from opentelemetry.proto.trace.v1 import trace_pb2

    key = "wJalrXUtnFEMIK7MDENGbPxRfiCYQwZxKpLm12Ab"  # of base64's letters, as some services' keys are
    made = trace_service_pb2.ExportTraceServiceRequest()
    span = trace_pb2.Span(trace_id=bytes.fromhex(TRACE), span_id=bytes(8), name="x", start_time_unix_nano=1, end_time_unix_nano=2)
    pair = span.attributes.add()
    pair.key, pair.value.bytes_value = "signing", base64.b64decode(key)
    made.resource_spans.add().scope_spans.add().spans.append(span)
    body = made.SerializeToString()
    assert not Secrets((key,)).may_hold(body)  # the body holds its bytes, not its letters
    (read,) = spans(body, False, Secrets((key,)))
    assert read.attributes["signing"] == HIDDEN


def test_tool_arguments_nested_past_what_a_reader_follows_are_kept_as_text() -> None:
    deep = "[" * 5000 + "]" * 5000
    assert _decoded(deep) == (deep, False)


def test_a_fork_of_the_run_as_the_listener_starts_does_not_hold_the_run_at_its_end(receiver: Receiver) -> None:
    """A process forked while the listener starts (a process pool's worker) holds a copy of the
    pipe the listener writes to, so that pipe never ends: the run goes by the listener's exit."""
    forked: list[int] = []

    def fork() -> None:
        pid = os.fork()
        if pid == 0:  # the pool's worker: holds every file the run held, until told to end
            signal.sigwait({signal.SIGTERM})
            os._exit(0)
        forked.append(pid)

    async def played() -> Any:
        asyncio.get_running_loop().call_soon(fork)  # at the first turn of the loop within the listener's start
        async with receiver.serving():
            listener = receiver.listener
        return listener

    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # the fork waits for it, not killed by it
    try:
        listener = asyncio.run(asyncio.wait_for(played(), 60))
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        for pid in forked:
            os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)
    assert forked and listener is not None and listener.returncode == 0 and receiver.ended is None


class _Gated(Receiver):
    """A receiver whose attempts each wait, holding no place, until the test lets them go: no
    listener, no spans."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.waited = 0
        self.most_tasks = 0

    @contextlib.asynccontextmanager
    async def serving(self, waiting: Any = None) -> Any:
        self._waiting = waiting
        yield self

    async def taken(self, trace: str, turns: Any) -> Any:
        assert self._waiting is not None
        self._waiting()
        self.waited += 1
        if self.waited % 5 == 0:  # every fifth lets the ones before it go, so waits end all along
            self.gate.set()
            self.gate = asyncio.Event()
        else:
            await self.gate.wait()
        self.most_tasks = max(self.most_tasks, len(asyncio.all_tasks()))
        return Received()


def test_a_worker_whose_attempt_waited_for_spans_ends_with_it() -> None:
    """An attempt that waits for its agent's spans hands its place to a worker more; once it ends,
    its own worker ends too: however many attempts waited, the workers stay about as many as the
    places (they grew by one a wait, and stayed)."""
    receiver = _Gated()
    scenario = Scenario(id="s", script=("hi",), judge=(Rule(check=Check(said="hi")),))
    bench = Bench(FakeAgent(lambda text: Answer("hi")), Models(), Limits(agent_places=2, judge_places=1), receiver=receiver)
    journal = MemoryJournal()
    try:
        asyncio.run(bench.run(Plan((scenario,), 60), journal))
    finally:
        receiver.close()
    assert len(journal.outcomes) == 60 and receiver.waited == 60
    assert receiver.most_tasks <= 12, receiver.most_tasks


def test_what_one_attempt_keeps_is_bounded_and_tools_spans_are_kept_longer() -> None:
    """Past ``MOST_SPANS`` an attempt's spans are counted, not kept, but for tools' spans, kept up
    to twice that (its checks read them); one past that is lost, and its calls then cannot be
    read from the spans. Each span kept is its JSON as it came, read back alike."""
    ids = TraceIds.new()
    plain = [AgentSpan(ids.trace, f"{number:016x}", "step", number, number + 1, ids.turn(1)) for number in range(1, MOST_SPANS + 6)]
    tools = [tool_span(ids, "lookup", ids.turn(1), number) for number in range(10_000, 10_000 + MOST_SPANS + 1)]
    receiver = Receiver()
    try:
        async def played() -> Received:
            receiver.opened(ids.trace)
            receiver.kept(grouped(plain[:10]))  # the first request: all kept
            receiver.kept(grouped(plain[10:] + tools))
            return await receiver.taken(ids.trace, [ids.turn(1)])

        received = asyncio.run(played())
    finally:
        receiver.close()
    kept = recorded(received.spans)
    assert kept[:MOST_SPANS] == tuple(plain[:MOST_SPANS])
    assert kept[MOST_SPANS:] == tuple(tools[:MOST_SPANS])
    assert received.tools == tuple(tools[:MOST_SPANS])
    assert received.dropped == 5 + 1 and receiver.dropped == 6
    assert received.whole and not received.tooled  # a tool's span was lost: its calls are not all there


def test_spans_a_record_holds_that_do_not_read_as_spans_show_none() -> None:
    """A line edited by hand whose spans are not spans is read all the same; its spans read as none."""
    made = msgspec.json.decode(msgspec.json.encode(Outcome("s", 1, "2026-01-01T00:00:00+00:00", 0.0, Transcript(), "finished", NoVerdict("user", "x"))))
    line = msgspec.json.encode(made | {"spans": [{"trace": 5}]})
    outcome = msgspec.json.decode(line, type=Outcome)
    assert outcome.agent_spans() == ()
    assert msgspec.json.decode(msgspec.json.encode(outcome))["spans"] == [{"trace": 5}]  # kept as it was


def test_a_tool_called_within_a_tool_is_found_under_its_turn_past_every_bound() -> None:
    """Past what an attempt keeps of other spans, a tool's span kept under another tool's span
    (an agent used as a tool) still leads to its turn: every kept span's parent is known."""
    ids = TraceIds.new()
    chats = [AgentSpan(ids.trace, f"{number:016x}", "chat", number, number + 1, ids.turn(1)) for number in range(1, 4 * MOST_SPANS + 2)]
    outer = tool_span(ids, "ask_helper", ids.turn(1), 10**9)
    inner = tool_span(ids, "refund", outer.span, 10**9 + 1)
    receiver = Receiver()
    try:
        async def played() -> Received:
            receiver.opened(ids.trace)
            for first in range(0, len(chats), 1000):
                receiver.kept(grouped(chats[first : first + 1000]))
            receiver.kept(grouped([outer, inner]))
            return await receiver.taken(ids.trace, [ids.turn(1)])

        received = asyncio.run(played())
    finally:
        receiver.close()
    assert received.tooled and received.tools == (outer, inner)
    joined, _ = dialogue(Transcript((turn("Done."),)), None, received.tools, received.links, [ids.turn(1)], whole=True)
    assert [step.name for step in joined.turns[0].answer.steps] == ["ask_helper", "refund"]  # type: ignore[union-attr]
