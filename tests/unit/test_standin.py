"""The stand-in (tests/support/standin.py) itself, tested with the standard library client and raw sockets."""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import ssl
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support.standin import (
    TLS,
    Drop,
    HandClock,
    Invalid,
    NoDone,
    NoFinish,
    SlowBody,
    SseError,
    Stall,
    StandIn,
    Status,
    Truncated,
    WrongShape,
    http_date,
)
from support.waiting import wait_until

Reply = tuple[int, dict[str, str], bytes]


def chat_body(text: str = "hello there", **extra: Any) -> dict[str, Any]:
    return {"model": "test-model", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": text}], **extra}


def call(
    server: StandIn,
    path: str = "/v1/chat/completions",
    body: Any = None,
    *,
    method: str = "POST",
    headers: dict[str, str] | None = None,
    connection: http.client.HTTPConnection | None = None,
    timeout: float = 30.0,
) -> Reply:
    """One request with http.client; returns (status, lowercased headers, body)."""
    conn = connection or http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    sent = {"content-type": "application/json", **(headers or {})}
    try:
        conn.request(method, path, body=data, headers=sent)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        if connection is None:
            conn.close()


def events(body: bytes) -> list[str]:
    """The SSE blocks of a streamed body, comments included ("": keep-alive)."""
    return [block for block in body.decode().split("\n\n") if block]


def data_of(blocks: list[str]) -> list[str]:
    return [block[len("data: ") :] for block in blocks if block.startswith("data: ")]


def raw(server: StandIn, request: bytes, timeout: float = 30.0) -> tuple[bytes, BaseException | None]:
    """Send raw bytes, read until the server closes; returns (bytes read, the error that ended reading, if any)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        sock.sendall(request)
        got = b""
        try:
            while chunk := sock.recv(65536):
                got += chunk
        except OSError as error:
            return got, error
        return got, None


def raw_post(path: str, body: dict[str, Any], *, close: bool = True) -> bytes:
    data = json.dumps(body).encode()
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    return (head + ("Connection: close\r\n" if close else "") + "\r\n").encode() + data


@pytest.fixture
def server() -> Any:
    with StandIn() as running:
        yield running
        assert running.errors == []


# ------------------------------------------------------------------------------------------- plain answers


def test_health_and_url(server: StandIn) -> None:
    """GET /health answers {"ok": true}; the url is http on 127.0.0.1 with the port the OS chose."""
    assert server.url == f"http://127.0.0.1:{server.port}" and server.port > 0
    status, _, body = call(server, "/health", method="GET")
    assert (status, json.loads(body)) == (200, {"ok": True})


def test_completion_has_the_openai_shape(server: StandIn) -> None:
    """A chat completion in exactly the OpenAI shape, echoing the last user message, words counted as tokens."""
    status, headers, body = call(server, body=chat_body("hello there"), headers={"Authorization": "Bearer sk-secret"})
    assert status == 200 and headers["content-type"] == "application/json"
    completion = json.loads(body)
    assert set(completion) == {"id", "object", "created", "model", "choices", "usage"}
    assert completion["object"] == "chat.completion" and completion["model"] == "test-model"
    assert isinstance(completion["created"], int) and completion["id"].startswith("chatcmpl-")
    (choice,) = completion["choices"]
    assert choice["index"] == 0 and choice["finish_reason"] == "stop"
    assert choice["message"] == {"role": "assistant", "content": "You said: hello there"}
    assert completion["usage"] == {
        "prompt_tokens": 4,
        "completion_tokens": 4,
        "total_tokens": 8,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    (seen,) = server.received
    assert seen.path == "/v1/chat/completions" and seen.kind == "chat" and seen.message == "hello there"
    assert seen.headers["authorization"] == "<redacted>" and b"sk-secret" not in repr(seen).encode()
    assert seen.json == chat_body("hello there") and seen.status == 200 and seen.fault is None


def test_path_without_v1_is_accepted(server: StandIn) -> None:
    """/chat/completions (and any prefix, like /api/v1/chat/completions) is the same endpoint."""
    for path in ("/chat/completions", "/api/v1/chat/completions"):
        status, _, body = call(server, path, chat_body("x"))
        assert status == 200 and json.loads(body)["choices"][0]["message"]["content"] == "You said: x"


def test_responder_gives_tool_calls_usage_and_cost() -> None:
    """A dict responder sets content, tool calls (arguments as a JSON string), usage and usage.cost."""

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        return {
            "content": None,
            "tool_calls": [{"name": "lookup", "arguments": {"city": "Paris"}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 7, "cached_tokens": 40, "reasoning_tokens": 3},
            "cost": 0.0012,
        }

    with StandIn(reply=reply) as server:
        completion = json.loads(call(server, body=chat_body())[2])
    (choice,) = completion["choices"]
    assert choice["finish_reason"] == "tool_calls"
    (tool_call,) = choice["message"]["tool_calls"]
    assert tool_call["type"] == "function" and tool_call["id"]
    assert tool_call["function"] == {"name": "lookup", "arguments": '{"city": "Paris"}'}
    assert completion["usage"] == {
        "prompt_tokens": 100,
        "completion_tokens": 7,
        "total_tokens": 107,
        "prompt_tokens_details": {"cached_tokens": 40},
        "completion_tokens_details": {"reasoning_tokens": 3},
        "cost": 0.0012,
    }


def test_cost_knob_and_async_responder() -> None:
    """cost= adds usage.cost to every completion; an async responder is awaited; knobs change while running."""

    async def reply(request: dict[str, Any]) -> str:
        return "async " + request["model"]

    with StandIn(reply=reply, cost=0.5) as server:
        completion = json.loads(call(server, body=chat_body())[2])
        assert completion["choices"][0]["message"]["content"] == "async test-model"
        assert completion["usage"]["cost"] == 0.5
        server.cost = None
        server.reply = lambda request: "plain"
        completion = json.loads(call(server, body=chat_body())[2])
        assert "cost" not in completion["usage"] and completion["choices"][0]["message"]["content"] == "plain"


def test_responder_failure_answers_500_and_is_kept() -> None:
    """An exception in the responder answers 500 and is kept in server.errors."""

    def reply(request: dict[str, Any]) -> str:
        raise ValueError("boom")

    with StandIn(reply=reply) as server:
        status, _, body = call(server, body=chat_body())
        assert status == 500 and "boom" in json.loads(body)["error"]["message"]
        assert len(server.errors) == 1 and "ValueError: boom" in server.errors[0]


def test_bad_requests(server: StandIn) -> None:
    """Unknown path 404, wrong method 405, a body that is not JSON or lacks messages/model 400."""
    assert call(server, "/nowhere", {})[0] == 404
    assert call(server, "/v1/chat/completions", method="GET")[0] == 405
    assert call(server, "/health", {}, method="POST")[0] == 405
    assert call(server, body=b"{not json")[0] == 400
    assert call(server, body={"model": "m", "messages": []})[0] == 400
    assert call(server, body={"messages": [{"role": "user", "content": "x"}]})[0] == 400
    status, _, body = call(server, body={"model": "m"})
    assert status == 400 and json.loads(body)["error"]["type"] == "invalid_request_error"


def test_api_key_is_required_when_set() -> None:
    """With api_key, a request without the right Bearer token gets 401; the right one passes."""
    with StandIn(api_key="sk-good") as server:
        assert call(server, body=chat_body(), headers={"Authorization": "Bearer sk-bad"})[0] == 401
        assert call(server, body=chat_body())[0] == 401
        assert call(server, body=chat_body(), headers={"Authorization": "Bearer sk-good"})[0] == 200
        assert call(server, "/health", method="GET")[0] == 200
        assert [r.refused for r in server.received] == ["unauthorized", "unauthorized", None, None]


# ---------------------------------------------------------------------------------------------- streaming


def test_stream_assembles_to_the_full_text_with_usage(server: StandIn) -> None:
    """Streamed chunks carry the text in pieces, then finish_reason, then a usage chunk, then [DONE]."""
    text = "one two three four five six seven"
    status, headers, body = call(server, body=chat_body(text, stream=True, stream_options={"include_usage": True}))
    assert status == 200 and headers["content-type"] == "text/event-stream"
    assert headers["transfer-encoding"] == "chunked"
    blocks = events(body)
    assert blocks.count(": keep-alive") == 1
    datas = data_of(blocks)
    assert datas[-1] == "[DONE]"
    chunks = [json.loads(d) for d in datas[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "test-model" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    pieces = [c["choices"][0]["delta"].get("content") for c in chunks if c["choices"]]
    content_pieces = [p for p in pieces if p]
    assert len(content_pieces) >= 2 and "".join(content_pieces) == f"You said: {text}"
    with_choices = [c for c in chunks if c["choices"]]
    assert [c["choices"][0]["finish_reason"] for c in with_choices][-1] == "stop"
    assert all(c["choices"][0]["finish_reason"] is None for c in with_choices[:-1])
    usage_chunk = chunks[-1]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["prompt_tokens"] == 2 + 7 and usage_chunk["usage"]["completion_tokens"] == 2 + 7


def test_stream_without_include_usage_has_no_usage_chunk(server: StandIn) -> None:
    """Without stream_options.include_usage, no chunk has empty choices and none carries usage."""
    body = call(server, body=chat_body("hi", stream=True))[2]
    chunks = [json.loads(d) for d in data_of(events(body))[:-1]]
    assert all(c["choices"] and "usage" not in c for c in chunks)


def test_stream_tool_call_deltas_assemble() -> None:
    """Tool call deltas: id and name first, then argument pieces that join to the JSON arguments."""
    reply = {"content": "", "tool_calls": [{"id": "call_1", "name": "lookup", "arguments": {"city": "Paris", "days": 3}}]}
    with StandIn(reply=lambda request: reply) as server:
        body = call(server, body=chat_body(stream=True))[2]
    chunks = [json.loads(d) for d in data_of(events(body))[:-1]]
    deltas = [tc for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls", [])]
    assert deltas[0]["id"] == "call_1" and deltas[0]["function"]["name"] == "lookup"
    assert all(d["index"] == 0 for d in deltas)
    assert json.loads("".join(d["function"]["arguments"] for d in deltas)) == {"city": "Paris", "days": 3}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


# ------------------------------------------------------------------------------------------------- /agent


def test_agent_default_reply(server: StandIn) -> None:
    """/agent echoes body["message"] with usage in/out and the session."""
    status, _, body = call(server, "/agent", {"message": "hi agent", "session": "s1"})
    assert status == 200
    assert json.loads(body) == {"output": {"text": "You said: hi agent"}, "usage": {"in": 2, "out": 4}, "session": "s1"}
    (seen,) = server.received
    assert (seen.kind, seen.conversation, seen.message) == ("agent", "s1", "hi agent")


def test_agent_reads_the_last_history_item(server: StandIn) -> None:
    """Without "message", the newest user item of body["history"] is the message."""
    history = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "second one"}]
    body = json.loads(call(server, "/agent", {"history": history, "session": "s2"})[2])
    assert body["output"]["text"] == "You said: second one" and body["session"] == "s2"


def test_agent_responder_shapes_the_reply() -> None:
    """agent_reply returning a dict is the whole reply; returning a str fills the default shape."""
    with StandIn(agent_reply=lambda request: {"answer": request["message"].upper()}) as server:
        assert json.loads(call(server, "/agent", {"message": "hey"})[2]) == {"answer": "HEY"}
        server.agent_reply = lambda request: "fixed"
        assert json.loads(call(server, "/agent", {"message": "hey"})[2])["output"] == {"text": "fixed"}


# ------------------------------------------------------------------------------------------------- faults


@pytest.mark.parametrize("code", [429, 500, 502, 503, 504])
def test_status_fault(server: StandIn, code: int) -> None:
    """Status(code) answers that code with a JSON error once; the next request is normal again."""
    server.faults(Status(code))
    status, headers, body = call(server, body=chat_body())
    assert status == code and "error" in json.loads(body) and "retry-after" not in headers
    assert call(server, body=chat_body())[0] == 200


def test_status_fault_retry_after_headers(server: StandIn) -> None:
    """retry_after and retry_after_ms are sent as given, seconds or an HTTP date; extra headers and body too."""
    date = http_date(30)
    server.faults(
        Status(429, retry_after="2", retry_after_ms=1500),
        Status(503, retry_after=date),
        Status(500, body={"custom": True}, headers={"x-extra": "1"}),
    )
    _, headers, _ = call(server, body=chat_body())
    assert (headers["retry-after"], headers["retry-after-ms"]) == ("2", "1500")
    _, headers, _ = call(server, body=chat_body())
    assert headers["retry-after"] == date and date.endswith(" GMT")
    status, headers, body = call(server, body=chat_body())
    assert status == 500 and headers["x-extra"] == "1" and json.loads(body) == {"custom": True}


def test_faults_are_fifo_and_recorded_before_applying(server: StandIn) -> None:
    """Queued faults apply in order; every request is recorded with the fault it got."""
    server.faults(Status(500), Status(502))
    assert [call(server, body=chat_body())[0] for _ in range(3)] == [500, 502, 200]
    assert [r.fault for r in server.received] == [Status(500), Status(502), None]
    assert [r.status for r in server.received] == [500, 502, 200]
    assert server.pending == []


def test_fault_limited_to_path_or_conversation(server: StandIn) -> None:
    """A fault with path= or conversation= waits for a request that matches it."""
    server.faults(Status(503, conversation="b"), Status(500, path="/agent"))
    assert call(server, body=chat_body(), headers={"x-conversation": "a"})[0] == 200
    assert call(server, "/agent", {"message": "m", "session": "b"})[0] == 503
    assert call(server, body=chat_body(), headers={"x-conversation": "b"})[0] == 200
    assert call(server, "/agent", {"message": "m"})[0] == 500


def test_health_is_not_faulted(server: StandIn) -> None:
    """/health does not take queued faults unless one names path="/health"."""
    server.faults(Status(500), Status(503, path="/health"))
    assert call(server, "/health", method="GET")[0] == 503
    assert call(server, "/health", method="GET")[0] == 200
    assert server.pending == [Status(500)]


def test_truncated(server: StandIn) -> None:
    """Truncated: 200 with a Content-Length larger than what is sent, then the connection closes."""
    server.faults(Truncated())
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("POST", "/v1/chat/completions", json.dumps(chat_body()))
    response = conn.getresponse()
    assert response.status == 200
    with pytest.raises(http.client.IncompleteRead):
        response.read()
    conn.close()
    assert server.received[0].fault == Truncated()


def test_truncated_stream_ends_without_done(server: StandIn) -> None:
    """A truncated stream stops mid-way: no [DONE] and no final empty chunk, then the socket closes."""
    server.faults(Truncated())
    got, _ = raw(server, raw_post("/v1/chat/completions", chat_body("a b c d e f", stream=True), close=False))
    assert got.startswith(b"HTTP/1.1 200") and b"chat.completion.chunk" in got
    assert b"[DONE]" not in got and not got.endswith(b"0\r\n\r\n")


def test_invalid(server: StandIn) -> None:
    """Invalid: 200, application/json, a body that is not JSON (plain and streamed)."""
    server.faults(Invalid(), Invalid())
    status, headers, body = call(server, body=chat_body())
    assert status == 200 and headers["content-type"] == "application/json"
    with pytest.raises(ValueError):
        json.loads(body)
    datas = data_of(events(call(server, body=chat_body(stream=True))[2]))
    with pytest.raises(ValueError):
        json.loads(datas[0])
    assert call(server, body=chat_body())[0] == 200


def test_wrong_shape(server: StandIn) -> None:
    """WrongShape: 200 with JSON that is not a completion (plain and streamed), or the body given."""
    server.faults(WrongShape(), WrongShape(), WrongShape(body=[1, 2]))
    assert json.loads(call(server, body=chat_body())[2]) == {"hello": 1}
    assert data_of(events(call(server, body=chat_body(stream=True))[2])) == ['{"hello": 1}', "[DONE]"]
    assert json.loads(call(server, "/agent", {"message": "x"})[2]) == [1, 2]


def test_sse_error_breaks_off_a_stream_with_an_error(server: StandIn) -> None:
    """SseError: streamed, some chunks, then an error as a chunk (finish_reason "error") or as an "error" event, then
    [DONE]; plain, an error object as the whole 200 body."""
    server.faults(SseError(), SseError(event=True), SseError(message="gone"))
    blocks = events(call(server, body=chat_body("a b c d e f", stream=True))[2])
    broken = json.loads(data_of(blocks)[-2])
    assert broken["error"]["message"] == "upstream provider disconnected"
    assert broken["choices"][0]["finish_reason"] == "error" and data_of(blocks)[-1] == "[DONE]"
    assert any("chat.completion.chunk" in data and "error" not in data for data in data_of(blocks)[:-2])
    blocks = events(call(server, body=chat_body("a b c d e f", stream=True))[2])
    assert blocks[-2].startswith("event: error\ndata: {") and blocks[-1] == "data: [DONE]"
    status, _, body = call(server, body=chat_body())
    assert status == 200 and json.loads(body)["error"]["message"] == "gone"


def test_no_done_and_no_finish(server: StandIn) -> None:
    """NoDone: a stream whose body ends cleanly without [DONE]; NoFinish: every finish_reason null, plain and streamed."""
    server.faults(NoDone(), NoFinish(), NoFinish())
    datas = data_of(events(call(server, body=chat_body(stream=True))[2]))
    assert "[DONE]" not in datas and any('"finish_reason": "stop"' in data for data in datas)
    datas = data_of(events(call(server, body=chat_body(stream=True))[2]))
    assert datas[-1] == "[DONE]"
    assert all(choice["finish_reason"] is None for data in datas[:-1] for choice in json.loads(data)["choices"])
    assert json.loads(call(server, body=chat_body())[2])["choices"][0]["finish_reason"] is None
    assert call(server, body=chat_body())[0] == 200 and not server.pending


def test_a_responder_may_add_headers(server: StandIn) -> None:
    """A responder's "headers" go on the response, as LiteLLM's x-litellm-response-cost does."""
    server.reply = lambda request: {"content": "hi", "headers": {"x-litellm-response-cost": "1.35e-05"}}
    assert call(server, body=chat_body())[1]["x-litellm-response-cost"] == "1.35e-05"


def test_slow_body_still_delivers_everything(server: StandIn) -> None:
    """SlowBody sends the whole body (plain and streamed), just in pieces over time."""
    server.faults(SlowBody(0.1, pieces=3), SlowBody(0.1))
    completion = json.loads(call(server, body=chat_body("slow one"))[2])
    assert completion["choices"][0]["message"]["content"] == "You said: slow one"
    datas = data_of(events(call(server, body=chat_body("slow two", stream=True))[2]))
    assert datas[-1] == "[DONE]"
    text = "".join(json.loads(d)["choices"][0]["delta"].get("content") or "" for d in datas[:-1])
    assert text == "You said: slow two"


def test_slow_body_sends_headers_first(server: StandIn) -> None:
    """With SlowBody the status line and headers come before the body has fully arrived."""
    # Half a minute before the first piece: the head is all there is to read however slow the machine.
    # (test_slow_body_still_delivers_everything reads a slow body to its end.)
    server.faults(SlowBody(60.0, pieces=2))
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(raw_post("/v1/chat/completions", chat_body()))
        first = b""
        while b"\r\n\r\n" not in first and (chunk := sock.recv(65536)):
            first += chunk
    assert first.startswith(b"HTTP/1.1 200") and first.endswith(b"\r\n\r\n")
    assert b"content-length:" in first.lower() and b"chat.completion" not in first


def test_drop_closes_without_answer(server: StandIn) -> None:
    """Drop: the request is read and recorded, then the socket closes with no response."""
    server.faults(Drop())
    with pytest.raises(http.client.RemoteDisconnected):
        call(server, body=chat_body("dropped"))
    (seen,) = server.received
    assert seen.fault == Drop() and seen.status is None and seen.message == "dropped"
    assert call(server, body=chat_body())[0] == 200


def test_drop_with_reset(server: StandIn) -> None:
    """Drop(reset=True) closes with a TCP reset; plain Drop with a clean close (EOF)."""
    server.faults(Drop(), Drop(reset=True))
    got, error = raw(server, raw_post("/v1/chat/completions", chat_body(), close=False))
    assert (got, error) == (b"", None)
    got, error = raw(server, raw_post("/v1/chat/completions", chat_body(), close=False))
    assert got == b"" and isinstance(error, ConnectionResetError)


def test_stall_trips_a_read_timeout_then_answers(server: StandIn) -> None:
    """Stall: nothing is sent for the given seconds (a client read timeout fires); a patient client gets 200.

    The first stall outlasts the client's timeout by a minute, so the timeout fires however slow the
    machine; leaving the stand-in cancels it."""
    server.faults(Stall(60.0), Stall(0.05))
    with pytest.raises(TimeoutError):
        call(server, body=chat_body(), timeout=0.2)
    assert call(server, body=chat_body(), timeout=30)[0] == 200
    assert [r.fault for r in server.received] == [Stall(60.0), Stall(0.05)]


def test_faults_reject_other_values(server: StandIn) -> None:
    """faults() takes only fault values."""
    with pytest.raises(TypeError):
        server.faults(503)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------- rate limit


def test_rate_limit_refuses_beyond_the_limit_with_retry_after() -> None:
    """per_minute=3: the fourth request in the window gets 429 with Retry-After in whole seconds."""
    clock = HandClock()
    with StandIn(per_minute=3, clock=clock) as server:
        statuses = []
        for n in range(4):
            statuses.append(call(server, body=chat_body(str(n)))[:2])
            clock.move(0.25)
        assert [s for s, _ in statuses] == [200, 200, 200, 429]
        assert statuses[3][1]["retry-after"] == "60", "the first request leaves the window 60 - 0.75 s later: 60 whole seconds"
        assert server.refused == 1 and server.received[3].refused == "rate-limited"
        assert call(server, "/health", method="GET")[0] == 200  # not limited
        server.per_minute = None
        assert call(server, body=chat_body())[0] == 200


def test_rate_limit_does_not_consume_faults() -> None:
    """A refused request does not take the queued fault; the next admitted one does."""
    clock = HandClock()
    with StandIn(per_minute=1, window=0.3, clock=clock) as server:
        assert call(server, body=chat_body())[0] == 200
        server.faults(Status(502))
        status, headers, _ = call(server, body=chat_body())
        assert status == 429 and headers["retry-after"] == "1"
        assert server.pending == [Status(502)]
        clock.move(0.3)
        assert call(server, body=chat_body())[0] == 502
        assert server.pending == [] and server.received[-1].fault == Status(502)


def test_rate_limit_window_slides() -> None:
    """window scales time: per_minute=2, window=0.5 admits two in any 0.5 s; each admitted request
    leaves the window 0.5 s after it came, not all at once (the stand-in's clock moved by hand, in
    steps a float holds exactly)."""
    clock = HandClock()
    with StandIn(per_minute=2, window=0.5, clock=clock) as server:

        def status() -> int:
            return call(server, body=chat_body())[0]

        assert status() == 200  # at 0
        clock.move(0.25)
        assert [status(), status()] == [200, 429]  # at 0.25: two in the window
        clock.move(0.125)
        assert status() == 429  # at 0.375: both still in it
        clock.move(0.125)
        assert [status(), status()] == [200, 429]  # at 0.5: the first left, the one at 0.25 is still in
        clock.move(0.25)
        assert [status(), status()] == [200, 429]  # at 0.75: the one at 0.25 left
        assert server.refused == 4
        assert [r.time - 1000.0 for r in server.received] == [0, 0.25, 0.25, 0.375, 0.5, 0.5, 0.75, 0.75]


# ----------------------------------------------------------------------------------- connections, latency


def test_keep_alive_reuses_one_connection(server: StandIn) -> None:
    """Two requests on one HTTPConnection use one TCP connection (also a stream, then a plain one)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        assert call(server, body=chat_body(), connection=conn)[0] == 200
        assert call(server, body=chat_body(stream=True), connection=conn)[0] == 200
        assert call(server, "/agent", {"message": "x"}, connection=conn)[0] == 200
    finally:
        conn.close()
    assert server.connections == 1 and {r.connection for r in server.received} == {1}


def test_connection_close_is_honoured(server: StandIn) -> None:
    """Connection: close gets a 'connection: close' answer and the server closes; HTTP/1.0 closes by default."""
    got, error = raw(server, raw_post("/health", {}, close=True).replace(b"POST", b"GET", 1))
    assert error is None and b"connection: close" in got and got.endswith(b'{"ok": true}')
    got, error = raw(server, b"GET /health HTTP/1.0\r\n\r\n")
    assert error is None and got.startswith(b"HTTP/1.1 200")
    assert server.connections == 2


def test_chunked_request_body_and_expect_continue(server: StandIn) -> None:
    """A chunked request body is read whole; Expect: 100-continue gets a 100 first."""
    data = json.dumps(chat_body("chunked body")).encode()
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        b"Expect: 100-continue\r\nConnection: close\r\n\r\n"
        + b"%x\r\n%s\r\n" % (10, data[:10])
        + b"%x\r\n%s\r\n" % (len(data) - 10, data[10:])
        + b"0\r\n\r\n"
    )
    got, _ = raw(server, request)
    assert got.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200")
    assert server.received[0].message == "chunked body"


def test_garbage_request_gets_400(server: StandIn) -> None:
    """A request line that is not HTTP gets 400 and a close."""
    got, _ = raw(server, b"HELLO\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 400")


def test_latency_lets_requests_overlap() -> None:
    """With latency, concurrent requests are handled at the same time (peak_in_flight): each of three
    is answered only once all three have come, so the three are in flight at once on any machine."""

    async def together(request: dict[str, Any]) -> str:
        ends = time.monotonic() + 30  # a deadline only a stand-in that handles one at a time reaches
        while len(server.received) < 3:
            if time.monotonic() > ends:
                raise TimeoutError("the three requests were not in flight together")
            await asyncio.sleep(0.01)
        return "together"

    with StandIn(latency=0.3, reply=together) as server:
        results: list[int] = []
        threads = [threading.Thread(target=lambda: results.append(call(server, body=chat_body())[0])) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert results == [200, 200, 200] and server.peak_in_flight == 3
        server.latency = 0.0
        assert server.latency == 0.0


def test_counts_per_conversation(server: StandIn) -> None:
    """counts() keys on (conversation, newest user message): header first, then session/session_id/user/metadata."""
    call(server, body=chat_body("hi"), headers={"x-conversation": "a"})
    call(server, body=chat_body("hi"), headers={"x-conversation": "a"})
    call(server, body=chat_body("hi", session="b"))
    call(server, body=chat_body("hi", session_id="c"))
    call(server, body=chat_body("hi", user="d"))
    call(server, body=chat_body("hi", metadata={"conversation": "e"}))
    call(server, body=chat_body("hi", user="ignored"), headers={"x-conversation": "f"})
    call(server, "/agent", {"message": "yo", "session": "g"})
    call(server, body=chat_body("again"))
    call(server, "/health", method="GET")
    assert server.counts() == {
        ("a", "hi"): 2, ("b", "hi"): 1, ("c", "hi"): 1, ("d", "hi"): 1, ("e", "hi"): 1, ("f", "hi"): 1,
        ("g", "yo"): 1, ("", "again"): 1,
    }
    server.reset()
    assert server.received == [] and server.counts() == {}


def test_stop_is_clean_even_with_a_stalled_request() -> None:
    """Leaving the with block ends the thread (cancelling a stall) and the port no longer accepts."""
    server = StandIn()
    with server:
        server.faults(Stall(30))
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        sock.sendall(raw_post("/v1/chat/completions", chat_body(), close=False))
        wait_until(lambda: len(server.received) == 1, "the stalled request to reach the stand-in")
    assert not server.running
    assert sock.recv(100) == b""
    sock.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", server.port), timeout=5)


# ---------------------------------------------------------------------------------------------------- TLS


def https(server: StandIn, context: ssl.SSLContext, path: str = "/v1/chat/completions") -> int:
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=30)
    try:
        conn.request("POST", path, json.dumps(chat_body()))
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_tls_with_the_test_ca() -> None:
    """tls=TLS(): https url; a client trusting the CA talks; one trusting another CA refuses the server."""
    tls = TLS()
    with StandIn(tls=tls) as server:
        assert server.url.startswith("https://127.0.0.1:")
        assert https(server, tls.client_context(with_cert=False)) == 200
        with pytest.raises(ssl.SSLCertVerificationError):
            https(server, TLS().client_context(with_cert=False))
        assert server.received[0].client_cert is None


def test_tls_client_certificate_required(tmp_path: Path) -> None:
    """client_cert_required: a client with the CA's client certificate passes; one without is refused."""
    tls = TLS(client_cert_required=True)
    files = tls.write(tmp_path / "certs")
    assert all(p.is_file() for p in (files.ca, files.cert, files.key, files.cert_and_key))
    context = ssl.create_default_context(cafile=str(files.ca))
    context.load_cert_chain(str(files.cert), str(files.key))
    with StandIn(tls=tls) as server:
        assert https(server, context) == 200
        assert server.received[0].client_cert == "client@convy.test"
        bare = ssl.create_default_context(cafile=str(files.ca))
        with pytest.raises((OSError, http.client.HTTPException)):
            https(server, bare)
        wait_until(lambda: len(server.tls_errors) == 1, "the refused handshake among the stand-in's TLS errors")
        assert len(server.received) == 1 and server.connections == 2
