"""An OTLP/HTTP receiver on 127.0.0.1 for the tests of convy's traces: what a collector is to them.

It decodes what it is sent with ``opentelemetry-proto``, the OpenTelemetry project's own message
classes (binary Protobuf, or OTLP JSON through protobuf's JSON parser with the two differences OTLP
JSON makes: ids in hex rather than base64, enum values as numbers), so a test asserts on what
OpenTelemetry's decoding reads, not on convy's own idea of the format.

    with OtlpReceiver() as receiver:
        receiver.url                     # "http://127.0.0.1:PORT", OTEL_EXPORTER_OTLP_ENDPOINT
        receiver.answer = (503, {"retry-after": "1"})   # answer every request so (None: 200)
        receiver.partial = (2, "too big")                # or 200, saying that many were rejected
        receiver.spans()                 # every span received, decoded
        receiver.logs()                  # every log record received, decoded
        receiver.requests                # (path, headers) of each request
"""

from __future__ import annotations

import base64
import gzip
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsPartialSuccess,
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def hex_ids_as_base64(value: Any) -> Any:
    """OTLP JSON with its ids (traceId, spanId, parentSpanId) in base64, as protobuf's JSON parser
    reads bytes: the one way OTLP JSON departs from protobuf's JSON mapping that matters here."""
    match value:
        case dict():
            return {
                key: base64.b64encode(bytes.fromhex(item)).decode() if key in ("traceId", "spanId", "parentSpanId") and item else hex_ids_as_base64(item)
                for key, item in value.items()
            }
        case list():
            return [hex_ids_as_base64(item) for item in value]
        case _:
            return value


def traces_from_json(line: str | bytes) -> ExportTraceServiceRequest:
    """One line of OTLP JSON traces, read by opentelemetry-proto's message class."""
    return json_format.ParseDict(hex_ids_as_base64(json.loads(line)), ExportTraceServiceRequest())


def logs_from_json(line: str | bytes) -> ExportLogsServiceRequest:
    return json_format.ParseDict(hex_ids_as_base64(json.loads(line)), ExportLogsServiceRequest())


def attributes(items: Any) -> dict[str, Any]:
    """Decoded ``KeyValue``s as a dict of plain values."""
    found: dict[str, Any] = {}
    for item in items:
        kind = item.value.WhichOneof("value")
        value = getattr(item.value, kind)
        if kind == "array_value":
            value = [getattr(one, one.WhichOneof("value")) for one in value.values]
        found[item.key] = value
    return found


class OtlpReceiver:
    """A thread serving OTLP/HTTP: POST /v1/traces and /v1/logs, Protobuf or JSON, gzipped or not."""

    def __init__(self) -> None:
        self.traces: list[ExportTraceServiceRequest] = []
        self.logged: list[ExportLogsServiceRequest] = []
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.answer: tuple[int, dict[str, str]] | None = None
        self.partial: tuple[int, str] | None = None  # answer 200 saying this many were rejected, and why
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {name.lower(): value for name, value in self.headers.items()}
                with receiver._lock:
                    receiver.requests.append((self.path, headers))
                    answer = receiver.answer
                if answer is not None:
                    self.send_response(answer[0])
                    for name, value in answer[1].items():
                        self.send_header(name, value)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                if headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                json_body = headers.get("content-type", "").startswith("application/json")
                with receiver._lock:
                    if self.path == "/v1/traces":
                        receiver.traces.append(traces_from_json(body) if json_body else ExportTraceServiceRequest.FromString(body))
                    elif self.path == "/v1/logs":
                        receiver.logged.append(logs_from_json(body) if json_body else ExportLogsServiceRequest.FromString(body))
                    else:
                        self.send_response(404)
                        self.send_header("content-length", "0")
                        self.end_headers()
                        return
                answered = b""
                if receiver.partial is not None:  # OTLP's partial success, as the collector encodes it
                    count, why = receiver.partial
                    if self.path == "/v1/traces":
                        made: Any = ExportTraceServiceResponse(partial_success=ExportTracePartialSuccess(rejected_spans=count, error_message=why))
                    else:
                        made = ExportLogsServiceResponse(partial_success=ExportLogsPartialSuccess(rejected_log_records=count, error_message=why))
                    answered = json_format.MessageToJson(made).encode() if json_body else made.SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/json" if json_body else "application/x-protobuf")
                self.send_header("content-length", str(len(answered)))
                self.end_headers()
                self.wfile.write(answered)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def spans(self) -> list[Any]:
        with self._lock:
            return [span for request in self.traces for resource in request.resource_spans for scope in resource.scope_spans for span in scope.spans]

    def logs(self) -> list[Any]:
        with self._lock:
            return [log for request in self.logged for resource in request.resource_logs for scope in resource.scope_logs for log in scope.log_records]
