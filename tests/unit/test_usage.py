"""An agent's usage reaches the attempt whole: every request's tokens by kind and its cost.

The template's LLM agent (``agents/assistant.py``) makes several requests in one turn when its
model calls a tool. Played against the stand-in, whose replies carry usage chosen here, each of
those requests must reach the attempt as the server sent it — cached and reasoning tokens, the
provider's cost — and a request the server sent no usage for makes the turn partly reported,
which the turn's tokens, its cost and the tables say.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.standin import StandIn, WrongShape

from convy.agent import Cost, Message, NotReported, NoUsage, Requests, Unpriced, Usage
from convy.attempt import Attempt, Spent
from convy.bench import Bench
from convy.fakes import MemoryJournal
from convy.judge import Models
from convy.plan import Plan
from convy.project import Project
from convy.scenario import Scenario
from convy.tables import AttemptRows

TEMPLATE = Path(__file__).resolve().parents[2] / "src" / "convy" / "template"
KEY = "sk-usage-test-key"

# What the stand-in answers the assistant's three requests of a turn: a tool call, another,
# and the answer. The second reply carries no usage at all.
FIRST = {"prompt_tokens": 120, "completion_tokens": 15, "cached_tokens": 64, "reasoning_tokens": 7}
SECOND = {
    "object": "chat.completion",
    "choices": [{
        "index": 0,
        "message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_2", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order": "A-2001"}'}}
        ]},
        "finish_reason": "tool_calls",
    }],
}
THIRD = {"prompt_tokens": 180, "completion_tokens": 22, "cached_tokens": 128, "reasoning_tokens": 0}


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn(api_key=KEY) as server:
        yield server
        assert server.errors == []


def assistant(server: StandIn, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """The template's assistant, its gateway the stand-in."""
    monkeypatch.chdir(tmp_path)  # no .env here: the environment says it all
    for name, value in {"GATEWAY_URL": server.url + "/v1", "GATEWAY_KEY": KEY, "AGENT_MODEL": "agent-model"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    return Project(TEMPLATE).agent("assistant").agent


def three_requests(server: StandIn) -> None:
    """Each user message makes the model call the tool twice, then answer; the middle reply has no usage."""

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        tools = sum(1 for message in request["messages"] if message["role"] == "tool")
        asked = sum(1 for message in request["messages"] if message["role"] == "user")
        if tools == 2 * (asked - 1):  # the turn's first request: its second is answered without usage
            server.faults(WrongShape(body=SECOND))
            return {"content": None, "tool_calls": [{"name": "lookup_order", "arguments": {"order": "A-1043"}}], "usage": FIRST, "cost": 0.000042}
        return {"content": "Your kettle was delivered; the headphones too.", "usage": THIRD, "cost": 0.000058}

    server.reply = reply


def test_every_request_of_a_turn_reaches_the_answer_as_the_server_sent_it(
    server: StandIn, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A turn of three requests answers with each request's usage: cached, reasoning and cost kept, the unreported one NoUsage."""
    agent = assistant(server, monkeypatch, tmp_path)
    three_requests(server)

    async def talked() -> Any:
        async with agent.conversation() as conversation:
            return await conversation.turn(Message("Where are A-1043 and A-2001?"))

    answer = asyncio.run(talked())
    assert answer.text == "Your kettle was delivered; the headphones too."
    assert answer.usage == Requests((
        Usage(120, 15, 64, 7, Cost(Decimal("0.000042"), "provider")),
        NoUsage(),
        Usage(180, 22, 128, 0, Cost(Decimal("0.000058"), "provider")),
    ))
    assert [step.name for step in answer.steps] == ["lookup_order", "lookup_order"]
    assert len(server.received) == 3


def test_the_assistant_sends_its_models_settings(server: StandIn, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each of the assistant's requests carries the model's own settings (so OpenRouter, say, is asked for its cost), never streamed."""
    agent = assistant(server, monkeypatch, tmp_path)
    three_requests(server)

    async def talked() -> Any:
        async with agent.conversation() as conversation:
            return await conversation.turn(Message("Where is A-1043?"))

    asyncio.run(talked())
    for record in server.received:  # the gateway's model: temperature 0.2, at most 600 tokens
        assert (record.json["model"], record.json["temperature"], record.json["max_tokens"]) == ("agent-model", 0.2, 600)
        assert "stream" not in record.json and record.json["tools"][0]["function"]["name"] == "lookup_order"


def test_an_attempt_counts_every_request_and_says_when_a_turn_is_partly_reported(
    server: StandIn, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The attempt's agent tokens and cost are the sums of what the server sent, over 2 of 3 requests, and the tables show each request."""
    agent = assistant(server, monkeypatch, tmp_path)
    three_requests(server)
    scenario = msgspec.convert({"id": "usage", "script": ["Where are A-1043 and A-2001?"], "judge": [{"check": {"said": "."}}]}, Scenario)
    journal = MemoryJournal()
    asyncio.run(Bench(agent, Models()).run(Plan((scenario,)), journal))
    (outcome,) = journal.outcomes
    attempt = Attempt(outcome, 0.0)

    (turn,) = attempt.dialogue().turns
    assert (turn.agent_tokens.requests, turn.agent_tokens.reported) == (3, 2)
    assert (turn.agent_tokens.input, turn.agent_tokens.output) == (120 + 180, 15 + 22)
    assert (turn.agent_tokens.cached, turn.agent_tokens.reasoning) == (64 + 128, 7 + 0)
    assert (turn.cost.amount, turn.cost.source, turn.cost.priced, turn.cost.unpriced, turn.cost.complete) == (
        "0.000100", "provider", 2, 1, False,
    )
    assert Spent(attempt.agent_usage()).tokens().total == 120 + 15 + 180 + 22

    rows = [row for row in AttemptRows("assistant", "run", attempt).model_requests() if row.participant == "agent"]
    assert [(row.request, row.turn, row.reported, row.tokens_in, row.tokens_cached, row.cost_usd) for row in rows] == [
        (1, 1, True, 120, 64, Decimal("0.000042")),
        (2, 1, False, None, None, None),
        (3, 1, True, 180, 128, Decimal("0.000058")),
    ]
    assert all(row.seconds is None for row in rows), "no request of a turn of three has the turn's time as its own"


def test_an_answer_of_one_request_keeps_its_usage_as_before() -> None:
    """An answer whose usage is a single Usage or NoUsage counts as one request, and an old answer decodes unchanged."""
    from convy.agent import Answer

    assert Answer("a", Usage(1, 2)).requests() == (Usage(1, 2),)
    assert Answer("a").requests() == (NoUsage(),)
    old = b'{"text": "a", "usage": {"type": "usage", "input": 1, "output": 2}, "steps": []}'
    assert msgspec.json.decode(old, type=Answer).usage == Usage(1, 2, NotReported(), NotReported(), Unpriced())


def test_the_smoke_line_says_when_a_turn_is_partly_reported() -> None:
    """``--smoke`` shows an answer's tokens over the requests that reported them, and how many did when not all."""
    from convy.cli.console import Tokens

    assert Tokens((Usage(120, 15), NoUsage(), Usage(180, 22))).text() == "300 → 37 tokens (2 of 3 requests reported)"
    assert Tokens((Usage(120, 15),)).text() == "120 → 15 tokens"
    assert Tokens((NoUsage(), NoUsage())).text() == "tokens not given"


# Any JSON a server may put where the usage goes, with the field names usage has, so the fuzzing
# reaches every field and every detail.
FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "cached_tokens",
          "completion_tokens_details", "reasoning_tokens", "cost")
SCALARS = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=5)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELDS), inner, max_size=6), max_leaves=12)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(usage=JSON, stream=st.booleans())
def test_no_usage_a_server_sends_loses_the_reply(usage: Any, stream: bool) -> None:
    """Whatever the usage holds, the reply's text is kept, and a count read is a whole number of 0 or more."""
    from convy.chat import Chunks, Completion

    if stream:
        chunk = {"choices": [{"index": 0, "delta": {"content": "kept"}, "finish_reason": "stop"}], "usage": usage}
        reply = Chunks((chunk,)).completion()
    else:
        reply = {"choices": [{"index": 0, "message": {"content": "kept"}, "finish_reason": "stop"}], "usage": usage}
    read = Completion(reply, "m").read()
    assert read.text == "kept"
    match read.usage:
        case Usage(input=given, output=taken, cached=cached, reasoning=reasoning, cost=cost):
            assert given >= 0 and taken >= 0
            assert all(count >= 0 for count in (cached, reasoning) if isinstance(count, int))
            assert isinstance(cost, Unpriced) or cost.amount >= 0
            msgspec.json.decode(msgspec.json.encode(read.usage), type=Usage | NoUsage)
            # Field by field: a whole count the server sent is kept, whatever the other fields hold.
            for field, kind, kept in (("prompt_tokens", "input", given), ("completion_tokens", "output", taken)):
                sent = usage.get(field) if isinstance(usage, dict) else None
                if type(sent) is int and sent >= 0:
                    assert (kept, kind in read.usage.unreported) == (sent, False)
        case NoUsage():
            for field in ("prompt_tokens", "completion_tokens"):
                sent = usage.get(field) if isinstance(usage, dict) else None
                assert not (type(sent) is int and sent >= 0), "a whole count sent is never lost"


def partly_reported(server: StandIn) -> None:
    """Each user message makes the model call the tool, then answer; the answer's usage has
    ``prompt_tokens`` null beside its completion tokens and the provider's cost."""

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        if not any(message["role"] == "tool" for message in request["messages"]):
            server.faults(WrongShape(body={
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "Delivered."}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": None, "completion_tokens": 7, "cost": 0.25},
            }))
            return {"content": None, "tool_calls": [{"name": "lookup_order", "arguments": {"order": "A-1043"}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5}, "cost": 0.5}
        return {"content": "unused"}

    server.reply = reply


def test_a_null_count_loses_only_itself_the_others_and_the_cost_are_kept(
    server: StandIn, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A request whose ``prompt_tokens`` is null keeps its completion tokens and the provider's
    cost, marked partly reported: the turn's output and cost are what the server sent (12, 0.75),
    and it says 1 of 2 requests reported, the tables leaving only that input out."""
    agent = assistant(server, monkeypatch, tmp_path)
    partly_reported(server)
    scenario = msgspec.convert({"id": "usage", "script": ["Where is A-1043?"], "judge": [{"check": {"said": "."}}]}, Scenario)
    journal = MemoryJournal()
    asyncio.run(Bench(agent, Models()).run(Plan((scenario,)), journal))
    (outcome,) = journal.outcomes
    (turn,) = outcome.transcript.turns
    assert turn.answer.usage == Requests((
        Usage(10, 5, 0, 0, Cost(Decimal("0.5"), "provider")),
        Usage(0, 7, NotReported(), NotReported(), Cost(Decimal("0.25"), "provider"), unreported=("input",)),
    ))
    shown = Attempt(outcome, 0.0).dialogue().turns[0]
    assert (shown.agent_tokens.requests, shown.agent_tokens.reported) == (2, 1)
    assert (shown.agent_tokens.input, shown.agent_tokens.output) == (10, 5 + 7)
    assert (shown.cost.amount, shown.cost.priced, shown.cost.unpriced) == ("0.75", 2, 0)
    rows = [row for row in AttemptRows("assistant", "run", Attempt(outcome, 0.0)).model_requests() if row.participant == "agent"]
    assert [(row.request, row.reported, row.tokens_in, row.tokens_out, row.cost_usd) for row in rows] == [
        (1, True, 10, 5, Decimal("0.5")),
        (2, True, None, 7, Decimal("0.25")),
    ]
    from convy.cli.console import Tokens

    assert Tokens(turn.answer.requests()).text() == "10 → 12 tokens (1 of 2 requests reported)"


@pytest.mark.parametrize(
    ("usage", "read"),
    [
        ({"prompt_tokens": 3, "completion_tokens": None}, Usage(3, 0, unreported=("output",))),
        ({"prompt_tokens": None, "completion_tokens": None, "cost": 0.1}, Usage(cost=Cost(Decimal("0.1"), "provider"), unreported=("input", "output"))),
        ({"prompt_tokens": None, "completion_tokens": None}, NoUsage()),
        ({"prompt_tokens": "x", "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 2}}, Usage(0, 4, 2, unreported=("input",))),
    ],
)
def test_each_count_is_reported_or_not_on_its_own(usage: dict[str, Any], read: Usage | NoUsage) -> None:
    """A count missing or wrong is not reported, and only it; with neither count nor a cost there is no usage.
    A request missing a count is never priced from the table: its price would be too low."""
    from convy.chat import Completion, Price, Prices

    reply = {"choices": [{"message": {"content": "kept"}, "finish_reason": "stop"}], "usage": usage}
    prices = Prices({"m": Price(Decimal(1), Decimal(1))})
    assert Completion(reply, "m", prices).read().usage == read
    assert msgspec.json.decode(msgspec.json.encode(read), type=Usage | NoUsage) == read
