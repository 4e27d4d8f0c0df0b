"""OpenTelemetry's wire records for traces and logs (OTLP 1.x), and their two encodings.

``Span`` and ``LogRecord`` hold what convy sends, with their attributes as plain values; a
``Signals`` is a batch of them under one resource. ``Signals.json_traces``/``json_logs`` give
OTLP's JSON encoding (ids in hex, 64-bit integers as decimal text, field names in lowerCamelCase:
one line of the file an OpenTelemetry Collector's file exporter writes and its ``otlpjsonfile``
receiver reads); ``proto_traces``/``proto_logs`` the binary Protobuf encoding of
``ExportTraceServiceRequest`` and ``ExportLogsServiceRequest``, what OTLP/HTTP sends by default.
The Protobuf is written here, by field number, rather than through a generated module: the few
messages convy sends need no dependency, and the tests read them back with
``opentelemetry-proto``, the decoding every OpenTelemetry backend in Python shares.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Union

import msgspec

# An attribute's value: text, a number, true/false, or a list of them.
Value = Union[str, bool, int, float, Sequence["Value"]]

# Span kinds, as OTLP numbers them.
INTERNAL = 1
CLIENT = 3

# Status codes.
UNSET = 0
ERROR = 2

# The severity of an event convy records (INFO).
INFO = 9


class Span(msgspec.Struct, frozen=True):
    """One span: ids in hex (``parent`` "" for a root), times in nanoseconds since the epoch."""

    trace: str
    span: str
    parent: str
    name: str
    kind: int
    start: int
    end: int
    attributes: Mapping[str, Value] = {}
    error: str = ""  # the status's message when the span ended in an error; "" for unset

    def json(self) -> dict[str, object]:
        shown: dict[str, object] = {"traceId": self.trace, "spanId": self.span}
        if self.parent:
            shown["parentSpanId"] = self.parent
        shown |= {
            "name": self.name,
            "kind": self.kind,
            "startTimeUnixNano": str(self.start),
            "endTimeUnixNano": str(self.end),
            "attributes": _json_attributes(self.attributes),
        }
        if self.error:
            shown["status"] = {"code": ERROR, "message": self.error}
        return shown

    def proto(self) -> bytes:
        parts = [_bytes(1, bytes.fromhex(self.trace)), _bytes(2, bytes.fromhex(self.span))]
        if self.parent:
            parts.append(_bytes(4, bytes.fromhex(self.parent)))
        parts += [_text(5, self.name), _varint_field(6, self.kind), _fixed64(7, self.start), _fixed64(8, self.end)]
        parts += [_bytes(9, _key_value(key, value)) for key, value in self.attributes.items()]
        if self.error:
            parts.append(_bytes(15, _text(2, self.error) + _varint_field(3, ERROR)))
        return b"".join(parts)


class LogRecord(msgspec.Struct, frozen=True):
    """One event, as a log record of the span it belongs to (``trace``, ``span``): an event's
    name and attributes, its time in nanoseconds since the epoch, and a text body if any."""

    trace: str
    span: str
    event: str
    time: int
    attributes: Mapping[str, Value] = {}
    body: str = ""

    def json(self) -> dict[str, object]:
        shown: dict[str, object] = {
            "timeUnixNano": str(self.time),
            "observedTimeUnixNano": str(self.time),
            "severityNumber": INFO,
            "severityText": "INFO",
            "eventName": self.event,
            "attributes": _json_attributes(self.attributes),
            "traceId": self.trace,
            "spanId": self.span,
        }
        if self.body:
            shown["body"] = {"stringValue": self.body}
        return shown

    def proto(self) -> bytes:
        parts = [_fixed64(1, self.time), _varint_field(2, INFO), _text(3, "INFO")]
        if self.body:
            parts.append(_bytes(5, _any_value(self.body)))
        parts += [_bytes(6, _key_value(key, value)) for key, value in self.attributes.items()]
        parts += [
            _bytes(9, bytes.fromhex(self.trace)),
            _bytes(10, bytes.fromhex(self.span)),
            _fixed64(11, self.time),
            _text(12, self.event),
        ]
        return b"".join(parts)


class Signals(msgspec.Struct, frozen=True):
    """Spans and log records under one resource (what made them: ``service.name`` and the like)
    and one instrumentation scope (convy, and its version)."""

    resource: Mapping[str, Value]
    scope: str
    version: str
    spans: tuple[Span, ...] = ()
    logs: tuple[LogRecord, ...] = ()

    TRACES: ClassVar[str] = "resourceSpans"
    LOGS: ClassVar[str] = "resourceLogs"

    def json_traces(self) -> bytes:
        """``ExportTraceServiceRequest`` as OTLP JSON: one line of an OTLP JSON file."""
        inner = {"scope": self._json_scope(), "spans": [span.json() for span in self.spans]}
        return msgspec.json.encode({self.TRACES: [{"resource": self._json_resource(), "scopeSpans": [inner]}]})

    def json_logs(self) -> bytes:
        """``ExportLogsServiceRequest`` as OTLP JSON."""
        inner = {"scope": self._json_scope(), "logRecords": [log.json() for log in self.logs]}
        return msgspec.json.encode({self.LOGS: [{"resource": self._json_resource(), "scopeLogs": [inner]}]})

    def proto_traces(self) -> bytes:
        """``ExportTraceServiceRequest`` as binary Protobuf."""
        scoped = _bytes(1, self._proto_scope()) + b"".join(_bytes(2, span.proto()) for span in self.spans)
        return _bytes(1, _bytes(1, self._proto_resource()) + _bytes(2, scoped))

    def proto_logs(self) -> bytes:
        """``ExportLogsServiceRequest`` as binary Protobuf."""
        scoped = _bytes(1, self._proto_scope()) + b"".join(_bytes(2, log.proto()) for log in self.logs)
        return _bytes(1, _bytes(1, self._proto_resource()) + _bytes(2, scoped))

    def _json_resource(self) -> dict[str, object]:
        return {"attributes": _json_attributes(self.resource)}

    def _json_scope(self) -> dict[str, object]:
        return {"name": self.scope, "version": self.version}

    def _proto_resource(self) -> bytes:
        return b"".join(_bytes(1, _key_value(key, value)) for key, value in self.resource.items())

    def _proto_scope(self) -> bytes:
        return _text(1, self.scope) + _text(2, self.version)


def _json_attributes(attributes: Mapping[str, Value]) -> list[dict[str, object]]:
    return [{"key": key, "value": _json_value(value)} for key, value in attributes.items()]


def _json_value(value: Value) -> dict[str, object]:
    match value:
        case bool():
            return {"boolValue": value}
        case int():
            return {"intValue": str(value)}
        case float() if value != value or value in (math.inf, -math.inf):
            # Protobuf's JSON mapping writes these as text; JSON has no number for them.
            return {"doubleValue": "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")}
        case float():
            return {"doubleValue": value}
        case str():
            return {"stringValue": value}
        case _:
            return {"arrayValue": {"values": [_json_value(item) for item in value]}}


# Protobuf's wire format: each field a key (its number and wire type) and its value.
VARINT, I64, LEN, I32 = 0, 1, 2, 5


# The one-byte varints, made once: most lengths, keys and small numbers are one of them.
_SMALL = tuple(bytes((number,)) for number in range(128))


def _varint(number: int) -> bytes:
    if 0 <= number < 128:
        return _SMALL[number]
    number &= (1 << 64) - 1  # a negative int64 is written as its two's complement, in ten bytes
    out = bytearray()
    while number > 0x7F:
        out.append(number & 0x7F | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _varint_field(field: int, number: int) -> bytes:
    return _key(field, VARINT) + _varint(number)


_PACK_FIXED64 = struct.Struct("<Q").pack
_PACK_DOUBLE = struct.Struct("<d").pack
_UNPACK_DOUBLE = struct.Struct("<d").unpack


def _fixed64(field: int, number: int) -> bytes:
    return _key(field, I64) + _PACK_FIXED64(number)


def _length(size: int) -> bytes:
    return _SMALL[size] if size < 128 else _varint(size)


# The keys of the length-delimited fields, made once: every message and text is one.
_LEN_KEYS = tuple(_varint(field << 3 | LEN) for field in range(16))


def _bytes(field: int, data: bytes) -> bytes:
    return _LEN_KEYS[field] + _length(len(data)) + data


def _text(field: int, text: str) -> bytes:
    return _bytes(field, text.encode())


def _key_value(key: str, value: Value) -> bytes:
    # KeyValue: key (1) and value (2), written in line: most spans' bytes are their attributes.
    named = key.encode()
    held = _any_value(value)
    return b"\n" + _length(len(named)) + named + b"\x12" + _length(len(held)) + held


def _any_value(value: Value) -> bytes:
    # AnyValue: string (1), bool (2), int (3), double (4), array (5). The common kinds first, by
    # their exact type (true/false is an int too); anything else as the match below takes it.
    kind = type(value)
    if kind is str:
        data = value.encode()  # type: ignore[union-attr]
        return b"\n" + _length(len(data)) + data
    if kind is int:
        return b"\x18" + _varint(value)  # type: ignore[arg-type]
    match value:
        case bool():
            return b"\x10\x01" if value else b"\x10\x00"
        case int():
            return b"\x18" + _varint(value)
        case float():
            return b"!" + _PACK_DOUBLE(value)
        case str():
            return _text(1, value)
        case _:
            return _bytes(5, b"".join(_bytes(1, _any_value(item)) for item in value))


def rejected(body: bytes, json: bool) -> tuple[int, str]:
    """What a collector's answer says it did not take of what it was sent (OTLP's partial
    success: how many spans or log records, and why), from its ``Export*ServiceResponse`` as
    Protobuf or as JSON; ``(0, "")`` when it took everything, or says nothing that can be read."""
    if not body:
        return 0, ""
    if json:
        try:
            answer = msgspec.json.decode(body)
        except msgspec.DecodeError:
            return 0, ""
        partial = answer.get("partialSuccess") if isinstance(answer, dict) else None
        if not isinstance(partial, dict):
            return 0, ""
        count: Any = partial.get("rejectedSpans", partial.get("rejectedLogRecords", 0))
        message = partial.get("errorMessage", "")
        try:
            number = int(count)
        except (TypeError, ValueError):
            number = 0
        return number, message if isinstance(message, str) else ""
    try:
        for field, value in fields(body):
            if field == 1 and isinstance(value, bytes):  # partial_success
                number, message = 0, ""
                for inner, held in fields(value):
                    if inner == 1 and isinstance(held, int):
                        number = held
                    elif inner == 2 and isinstance(held, bytes):
                        message = held.decode(errors="replace")
                return number, message
    except ValueError:
        return 0, ""
    return 0, ""


def fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """The fields of a Protobuf message, each its number and its value: an int (a varint as
    unsigned, a fixed 64 or 32 bits as unsigned little-endian: ``double`` reads it back as a
    float), or the bytes of a length-delimited one; a message that does not read is a
    ``ValueError``."""
    found: list[tuple[int, int | bytes]] = []
    place, size = 0, len(data)
    while place < size:
        number, wire, place, value = field_at(data, place, size)
        if wire == LEN:
            found.append((number, data[place : place + value]))
            place += value
        else:
            found.append((number, value))
    return found


def field_at(data: bytes, place: int, size: int) -> tuple[int, int, int, int]:
    """The field that starts at ``place``: its number, its wire type, where its value starts and,
    for a length-delimited one, its length (checked to end by ``size``), else its value as
    ``fields`` reads it (and the place after it)."""
    key = data[place]
    if key < 0x80:
        place += 1
    else:
        key, place = read_varint(data, place)
    number, wire = key >> 3, key & 7
    if wire == LEN or wire == VARINT:
        if place < size and data[place] < 0x80:
            value = data[place]
            place += 1
        else:
            value, place = read_varint(data, place)
        if place > size or wire == LEN and place + value > size:  # a varint, or what it measures, past the message
            raise ValueError("a field runs past the message")
        return number, wire, place, value
    if wire == I64 or wire == I32:
        width = 8 if wire == I64 else 4
        if place + width > size:
            raise ValueError("a field runs past the message")
        return number, wire, place + width, int.from_bytes(data[place : place + width], "little")
    raise ValueError(f"wire type {wire}")


def double(bits: int) -> float:
    """A ``double`` field's value, from the 64 bits ``fields`` gives for it."""
    try:
        return float(_UNPACK_DOUBLE(_PACK_FIXED64(bits))[0])
    except struct.error:  # more than 64 bits: a varint where the double's 8 bytes belong
        raise ValueError("a double's field holds no 64 bits") from None


def read_varint(data: bytes, place: int) -> tuple[int, int]:
    """The varint at ``place`` (unsigned), and the place after it; one that runs past ``data``, or
    past 64 bits, is a ``ValueError``."""
    number, shift = 0, 0
    while True:
        if place >= len(data) or shift > 63:
            raise ValueError("a varint runs past the message")
        byte = data[place]
        place += 1
        number |= (byte & 0x7F) << shift
        if byte < 0x80:
            return number, place
        shift += 7
