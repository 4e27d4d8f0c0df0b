"""The fault table: what convy records when a service misbehaves, and that it never sends twice.

Each fault of the stand-in is played through a real bench against each participant: the agent
under test as a ``JsonAgent`` and as a ``ChatAgent``, and an ``OpenAiModel`` (plain and streamed)
playing the simulated user and the judge. A service that refused a request unprocessed (``Busy``:
429, 503) is asked again and the attempt goes on; any other fault may have reached the service, so
the request is never sent again: the agent's attempt is ``Failed``, a model's has ``NoVerdict``.
Every reason names the URL without its query and shows no header value. A reply that may be cut
short (an error mid-stream, no ``[DONE]``, no finish reason, not UTF-8) fails like a broken
connection; one that is whole is kept, its text exactly, its usage as far as it was reported.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest
from support.standin import (
    Drop,
    Fault,
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

from convy.agent import Usage
from convy.attempt import Attempt
from convy.bench import Bench
from convy.fakes import FakeAgent, MemoryJournal
from convy.http import HttpFailure, JsonEndpoint, RetryAfter
from convy.httpagents import ChatAgent, JsonAgent, TokenPaths
from convy.judge import ChatJudge, Failed, Models, NoVerdict, Verdict
from convy.model import OpenAiModel, Said
from convy.outcome import Outcome
from convy.plan import Plan
from convy.records import Limits
from convy.scenario import Scenario
from convy.vital import DeadService

SECRET = "secret-in-query"  # in the agent's URL query: never shown
HEADER = "hunter2-header-value"  # in a header: never shown
KEY = "sk-user-model-key"  # the user model's key: never shown
# Read timeouts. A case that means the answer to be late gives its endpoint TIMEOUT and a fault that
# outlasts it by a minute; every other endpoint has PATIENT, which an answer a loaded machine is slow
# to give (a 10 MB one included) still comes well within.
TIMEOUT = 2.0
PATIENT = 30.0


@dataclass(frozen=True)
class Case:
    """One row of the fault table: the fault, and whether the service refused it unprocessed."""

    name: str
    fault: Callable[[], Fault]
    busy: bool = False
    fine: bool = False  # a fault convy rides out without a retry (a body slow within the timeout)
    timeout: float = PATIENT  # the read timeout of the endpoint the fault is on
    agent_says: str = ""  # a piece of the agent's Failed reason
    model_says: str = ""  # a piece of the user model's NoVerdict reason (plain, not streamed)
    streamed_says: str = ""  # ... when streamed, if it differs
    service: bool = True  # a model's failure is its service's (an HttpFailure), not its answer's


BROKE = "the connection broke before the whole answer came"
LATE = f"no answer within {TIMEOUT:g} s; the service may have acted, so it is not sent again"

CASES = [
    Case("429 Retry-After: 1", lambda: Status(429, retry_after="1"), busy=True),
    Case("429 Retry-After: <HTTP date>", lambda: Status(429, retry_after=http_date(1)), busy=True),
    Case("503 retry-after-ms: 200", lambda: Status(503, retry_after_ms="200"), busy=True),
    Case("500", lambda: Status(500), agent_says="500 Internal Server Error", model_says="500 Internal Server Error"),
    Case("502", lambda: Status(502), agent_says="502 Bad Gateway", model_says="502 Bad Gateway"),
    Case("504", lambda: Status(504), agent_says="504 Gateway Timeout", model_says="504 Gateway Timeout"),
    Case("Truncated", Truncated, agent_says=f"{BROKE} (RemoteProtocolError", model_says=f"{BROKE} (RemoteProtocolError"),
    Case(
        "Invalid",
        Invalid,
        agent_says="the reply is not JSON",
        model_says="the reply is not JSON",
        streamed_says="an event is not JSON",
    ),
    Case(
        "WrongShape",
        WrongShape,
        agent_says="reply path output.text: no 'output' in the reply",
        model_says="the reply is not a chat completion",
        streamed_says="the streamed reply has no chat completion chunk",
        service=False,  # JSON that is no chat completion: what the model answered, read and refused
    ),
    Case("SlowBody within the timeout", lambda: SlowBody(0.2, pieces=2), fine=True),
    # A stream waits seconds / events before each event: 600 s keeps every gap a minute past the
    # timeout. Leaving the stand-in cancels what it still has to send.
    Case("SlowBody beyond the timeout", lambda: SlowBody(600, pieces=2), agent_says=LATE, model_says=LATE, timeout=TIMEOUT),
    Case("Stall beyond the timeout", lambda: Stall(60), agent_says=LATE, model_says=LATE, timeout=TIMEOUT),
    Case("Drop", Drop, agent_says=f"{BROKE} (RemoteProtocolError", model_says=f"{BROKE} (RemoteProtocolError"),
    Case("Drop(reset=True)", lambda: Drop(reset=True), agent_says=f"{BROKE} (ReadError", model_says=f"{BROKE} (ReadError"),
]


def scenario(**fields: Any) -> Scenario:
    return msgspec.convert({"id": "fault", "judge": [{"check": {"said": "."}}], **fields}, Scenario)


def played(bench: Bench, scenario: Scenario) -> Outcome:
    journal = MemoryJournal()
    asyncio.run(bench.run(Plan((scenario,)), journal))
    (outcome,) = journal.outcomes
    return outcome


def stopped(bench: Bench, scenario: Scenario) -> DeadService:
    """What stopped a run whose participant never answered; nothing was recorded."""
    journal = MemoryJournal()
    with pytest.raises(DeadService) as raised:
        asyncio.run(bench.run(Plan((scenario,)), journal))
    assert journal.outcomes == []
    return raised.value


def shows_nothing_secret(outcome: Outcome | DeadService) -> None:
    match outcome:
        case DeadService():
            kept = f"{outcome} {[msgspec.json.encode(one).decode() for one in outcome.unanswered]}"
        case _:
            kept = msgspec.json.encode(outcome).decode()
    for secret in (SECRET, HEADER, KEY):
        assert secret not in kept


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn(api_key=KEY) as server:
        yield server
        assert server.errors == []


@contextmanager
def unused_port() -> Iterator[int]:
    """A port bound but not listening: connecting to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


# --- the agent under test --------------------------------------------------------------------


def json_agent(url: str, timeout: float = PATIENT, **endpoint: Any) -> JsonAgent:
    headers = {"authorization": f"Bearer {KEY}", "x-team-secret": HEADER}
    return JsonAgent(
        JsonEndpoint(url + f"/agent?key={SECRET}", headers, timeout=timeout, **endpoint),
        reply="output.text",
        tokens=TokenPaths("usage.in", "usage.out"),
    )


def faulted_agent_turn(server: StandIn, fault: Fault) -> None:
    """The agent answers "one" and queues ``fault`` for the next request: the turn "two"."""

    def reply(request: dict[str, Any]) -> str:
        if request["message"] == "one":
            server.faults(fault)
        return f"You said: {request['message']}"

    server.agent_reply = reply


def agent_bench(server_url: str, timeout: float = PATIENT, **limits: Any) -> Bench:
    return Bench(json_agent(server_url, timeout), Models(), Limits(**{"agent_patience": 5, **limits}))


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_agent_fault(case: Case, server: StandIn) -> None:
    """A fault on the agent's second turn is retried when Busy, else fails the attempt once, naming the URL."""
    faulted_agent_turn(server, case.fault())
    outcome = played(agent_bench(server.url, case.timeout), scenario(script=["one", "two"]))
    (session,) = {record.conversation for record in server.received}
    statuses = [record.status for record in server.received if record.message == "two"]
    if case.busy or case.fine:
        assert (outcome.stop, outcome.status(1.0)) == ("finished", "passed")
        assert isinstance(outcome.result, Verdict)
        assert [turn.answer.text for turn in outcome.transcript.turns] == ["You said: one", "You said: two"]
    if case.busy:
        assert server.counts() == {(session, "one"): 1, (session, "two"): 2}
        assert statuses[0] in (429, 503) and statuses[1] == 200
        assert any(wait.who == "agent" for wait in outcome.waits)
    else:
        assert server.counts() == {(session, "one"): 1, (session, "two"): 1}
    if not (case.busy or case.fine):
        assert outcome.stop == "agent_failed"
        assert isinstance(outcome.result, Failed)
        assert outcome.result.message == "two"
        assert f"{server.url}/agent: " in outcome.result.reason
        assert case.agent_says in outcome.result.reason
        assert [turn.message for turn in outcome.transcript.turns] == ["one"]
    shows_nothing_secret(outcome)


def test_agent_connection_refused() -> None:
    """An agent nothing listens for never answers: the run stops (``DeadService``) rather than record its
    attempt, saying "could not connect" and naming the URL without its query."""
    with unused_port() as port:
        dead = stopped(agent_bench(f"http://127.0.0.1:{port}"), scenario(script=["one", "two"]))
        (agent,) = dead.unanswered
        assert (agent.who, agent.refused, agent.first.connected, agent.first.status) == ("agent", 1, False, 0)
        assert agent.first.url == f"http://127.0.0.1:{port}/agent"
        assert agent.first.text.startswith(f"POST http://127.0.0.1:{port}/agent: could not connect")
        assert dead.held == 1
        shows_nothing_secret(dead)


def test_agent_that_stays_busy_past_its_patience_has_no_verdict(server: StandIn) -> None:
    """An agent refusing longer than its patience leaves the attempt without a verdict, the turn not sent again."""
    server.faults(Status(429, retry_after="1"), Status(429, retry_after="1"))
    outcome = played(agent_bench(server.url, agent_patience=0.5), scenario(script=["one"]))
    assert outcome.stop == "agent_busy"
    assert isinstance(outcome.result, NoVerdict) and outcome.result.who == "busy"
    assert "patience 0.5 s" in outcome.result.reason
    assert [record.status for record in server.received] == [429]
    shows_nothing_secret(outcome)


def test_a_missing_reply_path_names_the_path(server: StandIn) -> None:
    """A reply without the reply path fails that turn with a reason naming the step that is missing."""
    server.faults(WrongShape(body={"output": {"txt": "hello"}}))
    outcome = played(agent_bench(server.url), scenario(script=["one", "two"]))
    assert isinstance(outcome.result, Failed)
    assert outcome.result == Failed(f"{server.url}/agent: reply path output.text: no 'text' in output", "one")
    assert len(server.received) == 1


def test_a_refused_key_shows_no_header_value(server: StandIn) -> None:
    """A 401 for a wrong key, before the agent ever answered, stops the run; neither the key nor any other
    header value is in what it says."""
    server.api_key = "the-right-one"
    dead = stopped(agent_bench(server.url), scenario(script=["one"]))
    (agent,) = dead.unanswered
    assert (agent.first.status, agent.first.connected) == (401, True)
    assert agent.first.text.startswith(f"POST {server.url}/agent: 401 Unauthorized")
    shows_nothing_secret(dead)


# --- the simulated user's model --------------------------------------------------------------


def user_model(url: str, stream: bool, timeout: float = PATIENT) -> OpenAiModel:
    return OpenAiModel("user-model", url + "/v1", key=KEY, stream=stream, timeout=timeout)


FIRST = "[The agent is ready. Write your first message to it.]"
ANSWER = "Noted: Hello, I need help."


def faulted_user_turn(server: StandIn, fault: Fault | None) -> None:
    """The user model opens with a request, queues ``fault`` for its next request, then stops."""

    def reply(request: dict[str, Any]) -> str:
        if len(request["messages"]) > 2:
            return "###STOP###"
        if fault is not None:
            server.faults(fault)
        return "Hello, I need help."

    server.reply = reply


def user_bench(model: OpenAiModel, **limits: Any) -> Bench:
    return Bench(FakeAgent(lambda text: f"Noted: {text}"), Models(user=model), Limits(**{"user_patience": 5, **limits}))


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_user_model_fault(case: Case, stream: bool, server: StandIn) -> None:
    """A fault on the user model's second request is retried when Busy, else leaves NoVerdict(user), never resent."""
    faulted_user_turn(server, case.fault())
    outcome = played(user_bench(user_model(server.url, stream, case.timeout)), scenario(user="You need help."))
    statuses = [record.status for record in server.received if record.message == ANSWER]
    assert [turn.message for turn in outcome.transcript.turns] == ["Hello, I need help."]
    if case.busy or case.fine:
        assert (outcome.stop, outcome.status(1.0)) == ("finished", "passed")
    if case.busy:
        assert server.counts() == {("", FIRST): 1, ("", ANSWER): 2}
        assert statuses[0] in (429, 503) and statuses[1] == 200
        assert any(wait.who == "user" for wait in outcome.waits)
    else:
        assert server.counts() == {("", FIRST): 1, ("", ANSWER): 1}
    if not (case.busy or case.fine):
        assert outcome.stop == "model_failed"
        assert isinstance(outcome.result, NoVerdict) and outcome.result.who == "user"
        assert f"POST {server.url}/v1/chat/completions: " in outcome.result.reason
        assert outcome.result.reason.startswith("model user-model")
        assert (case.streamed_says if stream and case.streamed_says else case.model_says) in outcome.result.reason
        # Told apart where the failure was caught: the service's failure, or the model's answer.
        assert outcome.result.service == case.service
        assert Attempt(outcome, 1.0).cause() == ("service" if case.service else "user")
    shows_nothing_secret(outcome)


def test_user_model_connection_refused() -> None:
    """A user model nothing listens for never answers: the run stops with "could not connect", its attempt
    not recorded."""
    with unused_port() as port:
        dead = stopped(user_bench(user_model(f"http://127.0.0.1:{port}", False)), scenario(user="You need help."))
        (user,) = dead.unanswered
        assert (user.who, user.name, user.first.connected) == ("user", "user-model", False)
        assert user.first.text == (
            f"POST http://127.0.0.1:{port}/v1/chat/completions: could not connect (ConnectError: All connection attempts failed)"
        )
        shows_nothing_secret(dead)


def test_user_model_busy_past_its_patience_has_no_verdict_busy(server: StandIn) -> None:
    """A user model refusing longer than its patience leaves NoVerdict(busy); the agent is never spoken to."""
    faulted_user_turn(server, None)
    server.faults(*[Status(429, retry_after="1")] * 3)
    bench = user_bench(user_model(server.url, False), user_patience=0.5)
    outcome = played(bench, scenario(user="You need help."))
    assert outcome.stop == "model_failed"
    assert isinstance(outcome.result, NoVerdict) and outcome.result.who == "busy"
    assert "patience 0.5 s" in outcome.result.reason
    assert outcome.transcript.turns == ()
    assert [record.status for record in server.received] == [429]
    assert bench.agent.messages == []
    shows_nothing_secret(outcome)


def test_retry_after_is_read_in_each_form() -> None:
    """Retry-After in seconds or as an HTTP date, and retry-after-ms, are read as seconds; nonsense as not given."""
    assert RetryAfter({"retry-after": "1"}).seconds() == 1.0
    assert RetryAfter({"retry-after-ms": "200", "retry-after": "7"}).seconds() == 0.2
    now = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)  # the moment the date is read at, given: no clock in the test
    assert RetryAfter({"retry-after": "Sun, 01 Mar 2026 12:00:30 GMT"}).seconds(now) == 30.0
    assert RetryAfter({"retry-after": "Sun, 01 Mar 2026 11:59:30 GMT"}).seconds(now) == 0.0
    assert RetryAfter({"retry-after": http_date(-30)}).seconds() == 0.0, "a date gone by, on the clock"
    assert RetryAfter({"retry-after": "soon"}).seconds() is None
    assert RetryAfter({}).seconds() is None


# --- replies in the Chat Completions shape: the chat agent, the user model and the judge ------
#
# Each row is a reply a Chat Completions server may really send. It is played against a
# ``ChatAgent`` (the agent under test, not streamed), the simulated user's model and the judge's
# model (``OpenAiModel``, plain and streamed). A reply that is whole is kept — its text exactly,
# its usage as far as reported — and one that may be cut short fails that request, never sent again.

BIG = "word " * 2_000_000  # a 10 MB answer


def completion(stream: bool, content: Any, usage: Any) -> dict[str, Any]:
    """One whole completion (plain) or one chunk holding all of it (streamed), exactly as given."""
    if stream:
        return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": "stop"}], "usage": usage}
    return {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}], "usage": usage}


@dataclass(frozen=True)
class Reading:
    """One row of the table of replies: the fault, and what must come of it, plain and streamed.

    ``fails`` / ``streamed_fails`` is a piece of the failure's reason, "" when the reply is kept;
    ``text`` is the kept reply's text, ``None`` for the usual one.
    """

    name: str
    fault: Callable[[bool, str], Fault | None]
    fails: str = ""
    streamed_fails: str = ""
    text: str | None = None
    reported: bool = True
    partly: bool = False

    def fits(self, usage: Any) -> bool:
        """Whether a kept reply's usage is reported as the row says: in full, in part (the
        completion tokens kept beside a null prompt count), or not at all."""
        match usage:
            case Usage(unreported=("input",), output=7):
                return self.partly
            case Usage(unreported=()):
                return self.reported and not self.partly
            case _:
                return not self.reported


NULL_USAGE = {"prompt_tokens": None, "completion_tokens": 7, "prompt_tokens_details": None}
PARTS = [{"type": "text", "text": "In two "}, {"type": "image_url", "image_url": {"url": "x"}}, {"type": "text", "text": "parts."}]

READINGS = [
    Reading("an error in place of a reply", lambda stream, text: SseError(), fails="the reply is an error object",
            streamed_fails="the stream broke off with an error: {"),
    Reading("an SSE error event", lambda stream, text: SseError(event=True), fails="the reply is an error object",
            streamed_fails="the stream broke off with an error: {"),
    Reading("a stream without [DONE]", lambda stream, text: NoDone(), streamed_fails="the stream ended without [DONE]"),
    # Ended by [DONE], its finish_reason null throughout: whole, as OpenAI's client takes it (issue 26).
    Reading("no finish reason", lambda stream, text: NoFinish()),
    # A null count is that count not reported: the completion tokens beside it are kept.
    Reading("null usage fields", lambda stream, text: WrongShape(body=completion(stream, text, NULL_USAGE)), partly=True),
    Reading("usage of the wrong type", lambda stream, text: WrongShape(body=completion(stream, text, "lots")), reported=False),
    Reading("content as a list of parts", lambda stream, text: WrongShape(body=completion(stream, PARTS, {"prompt_tokens": 3, "completion_tokens": 3})),
            text="In two parts."),
    Reading("a 10 MB answer", lambda stream, text: WrongShape(body=completion(stream, BIG, {"prompt_tokens": 3, "completion_tokens": 2_000_000})),
            text=BIG),
    Reading("invalid UTF-8", lambda stream, text: Invalid(body=b'{"choices": [{"message": {"content": "caf\xe9"}, "delta": {"content": "caf\xe9"}, "finish_reason": "stop"}]}'),
            fails="the reply is not JSON", streamed_fails="not UTF-8"),
]


def chat_agent(url: str, timeout: float = PATIENT) -> ChatAgent:
    return ChatAgent(JsonEndpoint(url + "/v1/chat/completions", {"authorization": f"Bearer {KEY}"}, timeout=timeout), model="agent-model")


def chat_faulted(server: StandIn, reading: Reading, stream: bool, text: str) -> None:
    """The stand-in answers ``text``, the first request with the row's fault, if it has one for it."""
    server.reply = lambda request: text
    fault = reading.fault(stream, text)
    if fault is not None:
        server.faults(fault)


def newest(request: dict[str, Any]) -> str:
    return next(message["content"] for message in reversed(request["messages"]) if message["role"] == "user")


def kept_text(reading: Reading, usual: str) -> str:
    return usual if reading.text is None else reading.text


@pytest.mark.parametrize("reading", READINGS, ids=[reading.name for reading in READINGS])
def test_a_chat_agents_reply(reading: Reading, server: StandIn) -> None:
    """A ChatAgent keeps a whole reply on its second turn, text and usage as reported, and fails on one cut short, never resending."""

    def reply(request: dict[str, Any]) -> str:
        if newest(request) == "one":
            fault = reading.fault(False, "Fine.")
            if fault is not None:
                server.faults(fault)
        return "Fine."

    server.reply = reply
    outcome = played(Bench(chat_agent(server.url), Models(), Limits()), scenario(script=["one", "two"]))
    assert server.counts() == {("", "one"): 1, ("", "two"): 1}
    if reading.fails:
        assert outcome.stop == "agent_failed"
        assert isinstance(outcome.result, Failed) and outcome.result.message == "two"
        assert reading.fails in outcome.result.reason
        assert [turn.message for turn in outcome.transcript.turns] == ["one"]
    else:
        assert (outcome.stop, outcome.status(1.0)) == ("finished", "passed")
        (_, two) = outcome.transcript.turns
        assert two.answer.text == kept_text(reading, "Fine.")
        assert reading.fits(two.answer.usage)
    shows_nothing_secret(outcome)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("reading", READINGS, ids=[reading.name for reading in READINGS])
def test_a_user_models_reply(reading: Reading, stream: bool, server: StandIn) -> None:
    """The user model's first reply is kept when whole, its usage as reported, and leaves NoVerdict(user) when cut short, never resent."""
    said = kept_text(reading, "Hello, I need help.")
    chat_faulted(server, reading, stream, "Hello, I need help.")
    agent = FakeAgent(lambda text: "Noted.")
    outcome = played(Bench(agent, Models(user=user_model(server.url, stream)), Limits(max_turns=1)), scenario(user="You need help."))
    first = [record for record in server.received if len(record.json["messages"]) == 2]
    assert len(first) == 1
    failed = reading.streamed_fails if stream else reading.fails
    if failed:
        assert outcome.stop == "model_failed"
        assert isinstance(outcome.result, NoVerdict) and outcome.result.who == "user"
        assert failed in outcome.result.reason
        assert outcome.transcript.turns == () and agent.messages == []
    else:
        (turn,) = outcome.transcript.turns
        assert turn.message == said.strip()
        assert reading.fits(turn.user_usage)
        assert agent.messages == [said.strip()]
    shows_nothing_secret(outcome)


# A judge's reply is one JSON decision: the rows of other text are the agent's and the user's.
JUDGED = [reading for reading in READINGS if reading.text is None]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("reading", JUDGED, ids=[reading.name for reading in JUDGED])
def test_a_judges_reply(reading: Reading, stream: bool, server: StandIn) -> None:
    """The judge's reply is kept when whole and read as its decision, and leaves NoVerdict(judge) when cut short, never resent."""
    decision = '{"reason": "it answered", "pass": true, "confidence": 0.9}'
    chat_faulted(server, reading, stream, decision)
    judge = ChatJudge(OpenAiModel("judge-model", server.url + "/v1", key=KEY, stream=stream, timeout=PATIENT))
    outcome = played(Bench(FakeAgent(lambda text: "Noted."), Models(judge=judge), Limits()), scenario(script=["one"], judge=["It answered."]))
    assert len(server.received) == 1
    failed = reading.streamed_fails if stream else reading.fails
    if failed:
        assert outcome.stop == "finished"
        assert isinstance(outcome.result, NoVerdict) and outcome.result.who == "judge"
        assert failed in outcome.result.reason
    else:
        assert isinstance(outcome.result, Verdict)
        assert [claim.held for claim in outcome.result.claims] == [True]
        assert reading.fits(outcome.judge_requests[0])
    shows_nothing_secret(outcome)


# --- the transport's faults, for the chat agent and the judge too ----------------------------


def faulted_second_turn(server: StandIn, fault: Fault) -> None:
    """The chat agent's model answers "Fine." and queues ``fault`` for the next request: the turn "two"."""

    def reply(request: dict[str, Any]) -> str:
        if newest(request) == "one":
            server.faults(fault)
        return "Fine."

    server.reply = reply


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_chat_agent_fault(case: Case, server: StandIn) -> None:
    """A fault on a ChatAgent's second turn is retried when Busy, else fails the attempt once, naming the URL."""
    faulted_second_turn(server, case.fault())
    outcome = played(Bench(chat_agent(server.url, case.timeout), Models(), Limits(agent_patience=5)), scenario(script=["one", "two"]))
    statuses = [record.status for record in server.received if record.message == "two"]
    if case.busy or case.fine:
        assert (outcome.stop, outcome.status(1.0)) == ("finished", "passed")
        assert [turn.answer.text for turn in outcome.transcript.turns] == ["Fine.", "Fine."]
    if case.busy:
        assert server.counts() == {("", "one"): 1, ("", "two"): 2}
        assert statuses[0] in (429, 503) and statuses[1] == 200
    else:
        assert server.counts() == {("", "one"): 1, ("", "two"): 1}
    if not (case.busy or case.fine):
        assert outcome.stop == "agent_failed"
        assert isinstance(outcome.result, Failed) and outcome.result.message == "two"
        assert f"{server.url}/v1/chat/completions: " in outcome.result.reason
        assert case.model_says in outcome.result.reason
        assert [turn.message for turn in outcome.transcript.turns] == ["one"]
        assert Attempt(outcome, 1.0).cause() == "agent"  # the agent's own service is the agent's
    shows_nothing_secret(outcome)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_judge_fault(case: Case, stream: bool, server: StandIn) -> None:
    """A fault on the judge model's request is retried when Busy, else leaves NoVerdict(judge), the claim never asked twice."""
    server.reply = lambda request: '{"reason": "it answered", "pass": true, "confidence": 0.9}'
    server.faults(case.fault())
    judge = ChatJudge(OpenAiModel("judge-model", server.url + "/v1", key=KEY, stream=stream, timeout=case.timeout))
    agent = FakeAgent(lambda text: "Noted.")
    bench = Bench(agent, Models(judge=judge), Limits(judge_patience=5))
    outcome = played(bench, scenario(script=["one"], judge=["It answered."]))
    assert agent.messages == ["one"]
    assert outcome.stop == "finished"
    if case.busy or case.fine:
        assert isinstance(outcome.result, Verdict) and [claim.held for claim in outcome.result.claims] == [True]
    if case.busy:
        assert [record.status for record in server.received][1] == 200 and len(server.received) == 2
        assert any(wait.who == "judge" for wait in outcome.waits)
    else:
        assert len(server.received) == 1
    if not (case.busy or case.fine):
        assert isinstance(outcome.result, NoVerdict) and outcome.result.who == "judge"
        assert f"POST {server.url}/v1/chat/completions: " in outcome.result.reason
        assert (case.streamed_says if stream and case.streamed_says else case.model_says) in outcome.result.reason
        assert outcome.result.service == case.service
        assert Attempt(outcome, 1.0).cause() == ("service" if case.service else "judge")
    shows_nothing_secret(outcome)


# A JSON agent's reply is its own shape: the rows that are not about Chat Completions.
JSON_READINGS = {
    "null usage fields": ({"output": {"text": "Fine."}, "usage": {"in": None, "out": 7}}, "", "Fine."),
    "a 10 MB answer": ({"output": {"text": BIG}, "usage": {"in": 3, "out": 2_000_000}}, "", BIG),
    "an answer that is not text": ({"output": {"text": [{"type": "text", "text": "Fine."}]}}, "reply path output.text: not text", ""),
}


@pytest.mark.parametrize("name", list(JSON_READINGS))
def test_a_json_agents_reply(name: str, server: StandIn) -> None:
    """A JsonAgent keeps a whole reply on its second turn, usage as far as given, and fails on one it cannot read, never resending."""
    body, fails, text = JSON_READINGS[name]
    faulted_agent_turn(server, WrongShape(body=body))
    outcome = played(Bench(json_agent(server.url), Models(), Limits()), scenario(script=["one", "two"]))
    (session,) = {record.conversation for record in server.received}
    assert server.counts() == {(session, "one"): 1, (session, "two"): 1}
    if fails:
        assert outcome.stop == "agent_failed"
        assert isinstance(outcome.result, Failed) and fails in outcome.result.reason
    else:
        (_, two) = outcome.transcript.turns
        assert two.answer.text == text
        # A null count is that count not reported; the other is kept.
        assert two.answer.usage == (Usage(0, 7, unreported=("input",)) if name == "null usage fields" else Usage(3, 2_000_000))


def test_a_json_agents_reply_that_is_not_utf8_fails_once(server: StandIn) -> None:
    """A JsonAgent's reply with a byte that is not UTF-8 fails the attempt as not JSON, never resent."""
    faulted_agent_turn(server, Invalid(body=b'{"output": {"text": "caf\xe9"}}'))
    outcome = played(agent_bench(server.url), scenario(script=["one", "two"]))
    assert outcome.stop == "agent_failed"
    assert isinstance(outcome.result, Failed) and "the reply is not JSON: Invalid UTF-8" in outcome.result.reason
    (session,) = {record.conversation for record in server.received}
    assert server.counts() == {(session, "one"): 1, (session, "two"): 1}


# --- server-sent events as the wire may cut them ---------------------------------------------


class Pieces:
    """A response body that arrives in exactly these pieces, as a network may cut it."""

    def __init__(self, *pieces: bytes) -> None:
        self.pieces = pieces

    async def aiter_bytes(self) -> Any:
        for piece in self.pieces:
            yield piece


def read_events(*pieces: bytes) -> list[tuple[str, str]]:
    from convy.http import _EventStream

    async def read() -> list[tuple[str, str]]:
        return [event async for event in _EventStream(Pieces(*pieces)).events()]

    return asyncio.run(read())


def test_events_end_lines_at_cr_lf_and_crlf_only_wherever_the_pieces_are_cut() -> None:
    """Lines end at CR, LF or CRLF even when a CRLF or a UTF-8 character is cut between pieces, and at nothing else."""
    body = 'data: {"a": "caf\u00e9 \u2028 line"}\r\n\r\nevent: error\rdata: {"b": 1}\r\rdata: [DONE]\n\n'.encode()
    expected = [("message", '{"a": "caf\u00e9 \u2028 line"}'), ("error", '{"b": 1}'), ("message", "[DONE]")]
    assert read_events(body) == expected
    for cut in range(1, len(body)):
        assert read_events(body[:cut], body[cut:]) == expected, cut
    assert read_events(*[body[n : n + 1] for n in range(len(body))]) == expected


def test_a_stream_answered_as_plain_json_says_so(server: StandIn) -> None:
    """A service that answers a request for a stream with plain JSON fails the request saying what it answered."""
    server.faults(Status(200, body={"choices": []}))  # a 200 of application/json, in place of the stream
    with pytest.raises(HttpFailure, match="asked for a stream, the service answered application/json"):
        asyncio.run(user_model(server.url, True).reply((Said("user", "hello"),)))


def test_events_that_are_not_utf8_are_refused() -> None:
    """A byte that is not UTF-8 is an error, never a replacement character."""
    with pytest.raises(UnicodeDecodeError):
        read_events(b'data: {"a": "caf\xe9"}\n\n')
