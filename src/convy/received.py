"""The agent's own spans, as it sends them to convy over OTLP/HTTP (issue 30, item 4).

``AgentSpan`` is one span as an attempt's record keeps it: its ids in hex, its times in
nanoseconds since the epoch, its attributes as plain JSON values, what made it (the resource's
``service.name``) and, where it ended in an error, the status's message. ``spans`` reads them from
an ``ExportTraceServiceRequest``, in binary Protobuf (what OTLP/HTTP sends unless told otherwise)
or in OTLP JSON; a body that does not read as one is a ``ValueError``. Whatever a sender puts in
it, what is kept is bounded: a span's attributes, a text's characters, a list's items and how deep
lists and maps nest. A span whose ids are not the sizes OTLP gives them is left out.

The listener hands the run each request's spans by trace (``grouped``, ``Came``): each one as the
JSON an attempt's record keeps it in, with its id and its parent's, and the tool calls among them
read. The run reads no other span: it joins the calls, and keeps the rest as they came.

The attributes convy reads are those of the GenAI semantic conventions' ``execute_tool`` spans
(``tool``): ``gen_ai.tool.name``, ``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import msgspec

from convy.otlp import LEN, double, field_at, fields
from convy.secrets import Secrets

MOST_ATTRIBUTES = 128  # attributes kept of one span (the rest left out)
MOST_TEXT = 4000  # characters kept of one text value
MOST_ITEMS = 64  # items kept of one list or map value
DEEPEST = 4  # lists and maps within lists and maps, kept to this depth
_ERROR = 2  # the status code of a span that ended in an error
_KINDS = {"SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2, "SPAN_KIND_CLIENT": 3, "SPAN_KIND_PRODUCER": 4, "SPAN_KIND_CONSUMER": 5}
TOOL = "execute_tool"  # the GenAI conventions' operation of a tool call
# A tool call's arguments and result, JSON text read as JSON (``traced``): kept longer, so that
# what is read is whole.
LONGER = {"gen_ai.tool.call.arguments": 64 * 1024, "gen_ai.tool.call.result": 64 * 1024}


class AgentSpan(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """One span the agent sent: ids in hex (``parent`` "" for a root), times in nanoseconds since
    the epoch, ``error`` the status's message when it ended in an error ("error" when it gave none)."""

    trace: str
    span: str
    name: str
    start: int
    end: int
    parent: str = ""
    kind: int = 0
    attributes: dict[str, Any] = {}
    error: str = ""
    service: str = ""

    def seconds(self) -> float:
        """How long it took; 0 for a span that says it ended before it began."""
        return max(0, self.end - self.start) / 1e9

    def operation(self) -> str:
        """Its GenAI operation (``gen_ai.operation.name``), or the first word of its name."""
        named = self.attributes.get("gen_ai.operation.name")
        return named if isinstance(named, str) and named else self.name.partition(" ")[0]

    def tool(self) -> str:
        """The tool it called, where it is a tool call (``execute_tool``); "" where it is not."""
        named = self.attributes.get("gen_ai.operation.name")
        if named is None and not self.name.startswith(TOOL):  # most spans: read no further
            return ""
        if (named if isinstance(named, str) and named else self.name.partition(" ")[0]) != TOOL:
            return ""
        named = self.attributes.get("gen_ai.tool.name")
        if isinstance(named, str) and named:
            return named
        return self.name.split(" ", 1)[1].strip() if " " in self.name else ""


NO_SPANS = msgspec.Raw(b"[]")  # no spans, as JSON


def recorded(spans: msgspec.Raw) -> tuple[AgentSpan, ...]:
    """The spans an attempt's record keeps (``Outcome.spans``, JSON as ``Came`` brings them); none
    where they do not read as spans (a line edited by hand)."""
    try:
        return _SPANS(spans)
    except (msgspec.DecodeError, RecursionError):
        return ()


class Came(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """The spans of one trace in one request, as the run takes them (``grouped``): each one's id,
    its parent's, and its JSON as an attempt's record keeps it, in the order they came; and the
    tool calls (``execute_tool``) among them, read (``tools``), with where each is in the list
    (``at``). The run joins those and counts the rest: it reads no other span."""

    trace: str
    ids: tuple[str, ...]
    parents: tuple[str, ...]
    json: tuple[bytes, ...]
    tools: tuple[AgentSpan, ...] = ()
    at: tuple[int, ...] = ()


def grouped(read: Sequence[AgentSpan]) -> list[Came]:
    """``read``, by trace, each trace's in the order they came (``Came``)."""
    encode = _ENCODE
    traces: dict[str, tuple[list[str], list[str], list[bytes], list[AgentSpan], list[int]]] = {}
    for span in read:
        held = traces.get(span.trace)
        if held is None:
            held = traces[span.trace] = ([], [], [], [], [])
        ids, parents, json, tools, at = held
        if span.tool():
            tools.append(span)
            at.append(len(ids))
        ids.append(span.span)
        parents.append(span.parent)
        json.append(encode(span))
    return [
        Came(trace, tuple(ids), tuple(parents), tuple(json), tuple(tools), tuple(at))
        for trace, (ids, parents, json, tools, at) in traces.items()
    ]


_ENCODE = msgspec.json.Encoder().encode
_SPANS = msgspec.json.Decoder(tuple[AgentSpan, ...]).decode


def spans(body: bytes, json: bool, secrets: Secrets = Secrets()) -> tuple[AgentSpan, ...]:
    """The spans of an ``ExportTraceServiceRequest`` in OTLP JSON (``json``) or binary Protobuf,
    each text in them with ``secrets`` hidden before it is cut. The spans as read are searched
    once, as JSON, for any piece of a secret (``Secrets.may_hold``): only where one may be is each
    text searched."""
    misread: list[None] = []  # a span for each left out for its ids
    try:
        read = list(_from_json(body, misread) if json else _from_proto(body, misread))
    except RecursionError:  # nested past what the decoder follows
        raise ValueError("nested too deeply") from None
    if misread and not read:  # every span left out: said, not answered as if kept
        ids = "in hex, as OTLP JSON gives them (not base64)" if json else "of 16 bytes (trace) and 8 (span)"
        raise ValueError(f"none of its {len(misread)} span(s) read as a span with ids {ids}")
    if secrets.values:
        try:
            held = secrets.may_hold(msgspec.json.encode(read))
        except (OverflowError, TypeError) as error:  # the decoder keeps to what JSON and 64 bits hold: never, but said if so
            raise ValueError(f"a value convy cannot keep ({error})") from None
        if held:
            return tuple(_bounded(span, secrets.hidden) for span in read)
    return tuple(span if _within(span) else _bounded(span, str) for span in read)


def _within(span: AgentSpan) -> bool:
    """Whether each text of ``span`` is within what is kept, so there is nothing to cut."""
    if len(span.name) > MOST_TEXT or len(span.error) > MOST_TEXT or len(span.service) > MOST_TEXT:
        return False
    for key, value in span.attributes.items():
        if type(value) is str:
            if len(value) > LONGER.get(key, MOST_TEXT):
                return False
        elif type(value) is list or type(value) is dict:
            return False  # a list or a map: its texts are cut by the walk
    return True


def _bounded(span: AgentSpan, hidden: Callable[[str], str]) -> AgentSpan:
    return msgspec.structs.replace(
        span,
        name=_cut(hidden(span.name)),
        attributes={key: _value_bounded(value, hidden, LONGER.get(key, MOST_TEXT)) for key, value in span.attributes.items()},
        error=_cut(hidden(span.error)),
        service=_cut(hidden(span.service)),
    )


def _value_bounded(value: Any, hidden: Callable[[str], str], most: int = MOST_TEXT) -> Any:
    match value:
        case str():
            return _cut(hidden(value), most)
        case list():
            return [_value_bounded(item, hidden) for item in value]
        case dict():
            return {key: _value_bounded(item, hidden) for key, item in value.items()}
        case _:
            return value


# Binary Protobuf, by field number (opentelemetry/proto/trace/v1/trace.proto and common.proto).


def _from_proto(body: bytes, misread: list[None]) -> Iterator[AgentSpan]:
    for field, resource_spans in fields(body):
        if field != 1 or not isinstance(resource_spans, bytes):
            continue
        service = ""
        scoped: list[bytes] = []
        for inner, value in fields(resource_spans):
            if inner == 1 and isinstance(value, bytes):  # the resource: its attributes
                service = _text_of(_proto_attributes(value, 1).get("service.name"))
            elif inner == 2 and isinstance(value, bytes):
                scoped.append(value)
        for scope_spans in scoped:
            for inner, value in fields(scope_spans):
                if inner == 2 and isinstance(value, bytes):
                    span = _proto_span(value, service)
                    if span is not None:
                        yield span
                    else:
                        misread.append(None)


def _proto_span(data: bytes, service: str) -> AgentSpan | None:
    # The hot path of a receiving run: one pass over the span's bytes, each field read in place
    # (what ``fields`` would give, without a list of copies), its attributes likewise.
    trace = span = parent = b""
    name, kind, start, end, error = "", 0, 0, 0, ""
    attributes: dict[str, Any] = {}
    place, size = 0, len(data)
    while place < size:
        number, wire, place, value = field_at(data, place, size)
        if wire == LEN:
            stop = place + value
            if number == 9:
                if len(attributes) < MOST_ATTRIBUTES:
                    _key_value_at(data, place, stop, attributes)
            elif number == 1:
                trace = data[place:stop]
            elif number == 2:
                span = data[place:stop]
            elif number == 4:
                parent = data[place:stop]
            elif number == 5:
                name = data[place:stop].decode(errors="replace")
            elif number == 15:
                error = _proto_status(data[place:stop])
            place = stop
        elif number == 7:
            start = value & _WORD
        elif number == 8:
            end = value & _WORD
        elif number == 6:
            kind = value & _WORD
    if len(trace) != 16 or len(span) != 8 or len(parent) not in (0, 8):
        return None
    return AgentSpan(trace.hex(), span.hex(), name, start, end, parent.hex(), kind, attributes, error, service)


def _key_value_at(data: bytes, place: int, size: int, into: dict[str, Any], depth: int = 0) -> None:
    """An attribute (a ``KeyValue`` from ``place`` to ``size``, within lists and maps ``depth``
    deep) into ``into``, read in place, a value that is one text without a copy of its message."""
    key, held = "", None
    while place < size:
        number, wire, place, value = field_at(data, place, size)
        if wire != LEN:
            continue
        stop = place + value
        if number == 1:
            key = data[place:stop].decode(errors="replace")[:MOST_TEXT]
        elif number == 2:
            # An AnyValue that is one text (its field 1, a length of one byte, filling it): read here.
            if stop - place >= 2 and data[place] == _TEXT_KEY and data[place + 1] < 0x80 and place + 2 + data[place + 1] == stop:
                held = data[place + 2 : stop].decode(errors="replace")
            else:
                held = _proto_value(data[place:stop], depth)
        place = stop
    if key:
        into[key] = held


_TEXT_KEY = 1 << 3 | LEN  # an AnyValue's string_value, length-delimited
_WORD = (1 << 64) - 1  # the most 64 bits hold


def _proto_status(data: bytes) -> str:
    message, code = "", 0
    for field, value in fields(data):
        if field == 2 and isinstance(value, bytes):
            message = value.decode(errors="replace")
        elif field == 3 and isinstance(value, int):
            code = value
    return (message or "error") if code == _ERROR else ""


def _proto_attributes(data: bytes, number: int) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for field, value in fields(data):
        if field == number and isinstance(value, bytes) and len(found) < MOST_ATTRIBUTES:
            _proto_key_value(value, found, 0)
    return found


def _proto_key_value(data: bytes, into: dict[str, Any], depth: int) -> None:
    _key_value_at(data, 0, len(data), into, depth)


def _proto_value(data: bytes, depth: int) -> Any:
    for field, value in fields(data):
        match field, value:
            case 1, bytes():
                return value.decode(errors="replace")
            case 2, int():
                return bool(value)
            case 3, int():
                value &= _WORD  # a varint past 64 bits read as Protobuf's own readers do
                return value - (1 << 64) if value >= 1 << 63 else value  # int64, as two's complement
            case 4, int():
                return double(value)
            case 5, bytes() if depth < DEEPEST:
                items = [_proto_value(item, depth + 1) for number, item in fields(value) if number == 1 and isinstance(item, bytes)]
                return items[:MOST_ITEMS]
            case 6, bytes() if depth < DEEPEST:
                mapped: dict[str, Any] = {}
                for number, item in fields(value):
                    if number == 1 and isinstance(item, bytes) and len(mapped) < MOST_ITEMS:
                        _proto_key_value(item, mapped, depth + 1)
                return mapped
            case 7, bytes():
                return base64.b64encode(value).decode()
            case _:
                pass
    return None


# OTLP JSON: Protobuf's JSON mapping, with ids in hex and the enums as numbers (or their names).


def _from_json(body: bytes, misread: list[None]) -> Iterator[AgentSpan]:
    try:
        request = msgspec.json.decode(body)
    except msgspec.DecodeError as error:
        raise ValueError(f"not JSON: {error}") from None
    for resource_spans in _listed(_field(request, "resourceSpans", "resource_spans")):
        resource = _field(resource_spans, "resource")
        service = _text_of(_json_attributes(_field(resource, "attributes")).get("service.name"))
        for scope_spans in _listed(_field(resource_spans, "scopeSpans", "scope_spans")):
            for held in _listed(_field(scope_spans, "spans")):
                span = _json_span(held, service)
                if span is not None:
                    yield span
                else:
                    misread.append(None)


def _json_span(held: Any, service: str) -> AgentSpan | None:
    if not isinstance(held, dict):
        return None
    trace, span = _hex(_field(held, "traceId", "trace_id")), _hex(_field(held, "spanId", "span_id"))
    parent = _hex(_field(held, "parentSpanId", "parent_span_id"))
    if len(trace) != 32 or len(span) != 16 or len(parent) not in (0, 16):
        return None
    kind = _field(held, "kind")
    status = _field(held, "status")
    code = _field(status, "code")
    failed = code in (_ERROR, "STATUS_CODE_ERROR")
    message = _field(status, "message")
    return AgentSpan(
        trace,
        span,
        str(_field(held, "name") or ""),
        _number(_field(held, "startTimeUnixNano", "start_time_unix_nano")),
        _number(_field(held, "endTimeUnixNano", "end_time_unix_nano")),
        parent,
        _KINDS.get(kind, 0) if isinstance(kind, str) else _number(kind),
        _json_attributes(_field(held, "attributes")),
        (message if isinstance(message, str) and message else "error") if failed else "",
        service,
    )


def _json_attributes(held: Any, depth: int = 0) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for pair in _listed(held):
        if len(found) >= (MOST_ATTRIBUTES if depth == 0 else MOST_ITEMS):
            break
        key = _field(pair, "key")
        if isinstance(key, str) and key:
            found[key[:MOST_TEXT]] = _json_value(_field(pair, "value"), depth)
    return found


def _json_value(held: Any, depth: int) -> Any:
    if not isinstance(held, dict):
        return None
    for name, value in held.items():
        match name:
            case "stringValue" | "string_value" if isinstance(value, str):
                return value
            case "boolValue" | "bool_value" if isinstance(value, bool):
                return value
            case "intValue" | "int_value":
                return _number(value)
            case "doubleValue" | "double_value" if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
            case "doubleValue" | "double_value" if value in ("NaN", "Infinity", "-Infinity"):
                return float(value.replace("Infinity", "inf"))
            case "arrayValue" | "array_value" if depth < DEEPEST:
                return [_json_value(item, depth + 1) for item in _listed(_field(value, "values"))[:MOST_ITEMS]]
            case "kvlistValue" | "kvlist_value" if depth < DEEPEST:
                return _json_attributes(_field(value, "values"), depth + 1)
            case "bytesValue" | "bytes_value" if isinstance(value, str):
                return value
            case _:
                pass
    return None


def _field(held: Any, *names: str) -> Any:
    if not isinstance(held, dict):
        return None
    for name in names:
        if name in held:
            return held[name]
    return None


def _listed(held: Any) -> list[Any]:
    return held if isinstance(held, list) else []


def _hex(held: Any) -> str:
    """An id as hex, "" where none is given, "?" where it is no hex (a span then left out)."""
    if held is None or held == "":
        return ""
    return held.lower() if isinstance(held, str) and all(char in "0123456789abcdefABCDEF" for char in held) else "?"


def _number(held: Any) -> int:
    """A number as OTLP JSON gives one (a JSON number, or its digits as text); 0 for anything else,
    or for one no 64 bits hold (signed or not), which nothing that reads convy's records could."""
    if isinstance(held, bool):
        return 0
    if isinstance(held, str) and held.lstrip("-").isdigit() and len(held) < 24:
        held = int(held)
    if isinstance(held, int) and -(1 << 63) <= held <= _WORD:
        return held
    return 0


def _text_of(held: Any) -> str:
    return held if isinstance(held, str) else ""


def _cut(text: str, most: int = MOST_TEXT) -> str:
    return text if len(text) <= most else text[:most] + "…"
