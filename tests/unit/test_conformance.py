"""Conformance: what every Model and every Agent does, whatever it is.

Each suite runs over the fakes and the real HTTP implementations on the stand-in, so a fake cannot
drift from what the real thing does: ``FakeModel`` and ``OpenAiModel`` (plain and streamed) for
models; ``FakeAgent``, ``JsonAgent`` and ``ChatAgent`` for agents.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import msgspec
import pytest
from pydantic import SecretStr
from support.standin import StandIn, WrongShape

from convy.agent import Answer, Call, Cost, Message, NotReported, NoUsage, Reported, Thought, Unpriced, Usage
from convy.chat import Price, Prices
from convy.fakes import FakeAgent, FakeModel
from convy.http import HttpFailure, JsonEndpoint
from convy.httpagents import ChatAgent, JsonAgent, TokenPaths
from convy.model import OpenAiModel, Reply, Said
from convy.problems import ModelFailure

MODELS = ["fake", "openai", "openai-stream"]
HTTP_MODELS = ["openai", "openai-stream"]
AGENTS = ["fake", "json", "chat"]
HTTP_AGENTS = ["json", "chat"]

ASKED = (Said("system", "You are a shop assistant."), Said("user", "Where is my order?"))


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn() as server:
        yield server
        assert server.errors == []


def newest(messages: list[dict[str, Any]]) -> str:
    return next(message["content"] for message in reversed(messages) if message["role"] == "user")


def words(text: str) -> int:
    return len(text.split())


# --- models ----------------------------------------------------------------------------------


Responder = Callable[[list[dict[str, Any]]], dict[str, Any]]


def echoing(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The reply every model case gives: the last user message back, with its tokens."""
    said = f"You said: {newest(messages)}"
    return {"content": said, "usage": {"prompt_tokens": 10 * len(messages), "completion_tokens": words(said)}}


def model(kind: str, server: StandIn, responder: Responder = echoing, **options: Any) -> Any:
    """A model of ``kind`` that answers with ``responder``: a fake, or an OpenAiModel on the stand-in."""
    match kind:
        case "fake":

            def replied(messages: tuple[Said, ...]) -> Reply:
                out = responder([{"role": said.role, "content": said.content} for said in messages])
                usage = out.get("usage")
                counted = Usage(usage["prompt_tokens"], usage["completion_tokens"]) if usage else NoUsage()
                return Reply(out["content"], counted)

            return FakeModel(replied, name="gpt-test")
        case "openai" | "openai-stream":
            server.reply = lambda request: responder(request["messages"])
            return OpenAiModel("gpt-test", server.url + "/v1", stream=kind == "openai-stream", **options)
    raise AssertionError(kind)


def asked(model: Any, messages: tuple[Said, ...] = ASKED) -> Reply:
    return asyncio.run(model.reply(messages))


def raw(server: StandIn, stream: bool, text: str, usage: dict[str, Any]) -> None:
    """Make the next chat reply exactly this completion (or one chunk of it, streamed)."""
    if stream:
        body = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}], "usage": usage}
    else:
        body = {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}], "usage": usage}
    server.faults(WrongShape(body=body))


@pytest.mark.parametrize("kind", MODELS)
def test_a_reply_has_the_text(kind: str, server: StandIn) -> None:
    """A model's reply carries the text the model answered, under the model's name."""
    subject = model(kind, server)
    reply = asked(subject)
    assert reply.text == "You said: Where is my order?"
    assert subject.name == "gpt-test"


@pytest.mark.parametrize("kind", MODELS)
def test_usage_has_the_input_and_output_tokens(kind: str, server: StandIn) -> None:
    """A reply's usage has the input and output tokens the request took."""
    reply = asked(model(kind, server))
    assert isinstance(reply.usage, Usage)
    assert (reply.usage.input, reply.usage.output) == (20, 6)


@pytest.mark.parametrize("kind", MODELS)
def test_a_reply_survives_encoding(kind: str, server: StandIn) -> None:
    """A reply, its usage included, comes back the same from msgspec's JSON."""
    reply = asked(model(kind, server))
    assert msgspec.json.decode(msgspec.json.encode(reply), type=Reply) == reply


@pytest.mark.parametrize("kind", MODELS)
def test_one_model_serves_many_concurrent_requests(kind: str, server: StandIn) -> None:
    """One model object answers many requests at once, each with its own reply, over a reused HTTP client."""
    subject = model(kind, server)

    async def rounds() -> list[list[Reply]]:
        done = []
        for round in range(5):
            questions = [(Said("user", f"question {round}-{n}"),) for n in range(8)]
            done.append(await asyncio.gather(*(subject.reply(question) for question in questions)))
        return done

    replies = asyncio.run(rounds())
    assert [[reply.text for reply in batch] for batch in replies] == [
        [f"You said: question {round}-{n}" for n in range(8)] for round in range(5)
    ]
    if kind == "fake":
        assert len(subject.requests) == 40
    else:
        assert len(server.received) == 40
        assert server.connections <= 8  # a new client per request would have opened 40


@pytest.mark.parametrize("kind", HTTP_MODELS)
def test_cached_and_reasoning_tokens_are_read_when_given(kind: str, server: StandIn) -> None:
    """Cached and reasoning tokens are read from the server's usage details."""

    def detailed(messages: list[dict[str, Any]]) -> dict[str, Any]:
        usage = {"prompt_tokens": 900, "completion_tokens": 70, "cached_tokens": 512, "reasoning_tokens": 64}
        return {"content": "Thinking done.", "usage": usage}

    reply = asked(model(kind, server, detailed))
    assert isinstance(reply.usage, Usage)
    assert (reply.usage.input, reply.usage.output, reply.usage.cached, reply.usage.reasoning) == (900, 70, 512, 64)


@pytest.mark.parametrize("kind", HTTP_MODELS)
def test_cached_and_reasoning_tokens_are_not_reported_when_not_given(kind: str, server: StandIn) -> None:
    """A server whose usage has no details leaves cached and reasoning tokens NotReported, not 0."""
    subject = model(kind, server)
    raw(server, kind == "openai-stream", "Plain.", {"prompt_tokens": 11, "completion_tokens": 1})
    reply = asked(subject)
    assert reply.text == "Plain."
    assert reply.usage == Usage(input=11, output=1, cached=NotReported(), reasoning=NotReported(), cost=Unpriced())


@pytest.mark.parametrize("kind", HTTP_MODELS)
def test_a_provider_cost_is_kept_as_the_providers(kind: str, server: StandIn) -> None:
    """A cost the provider reports (usage.cost) becomes a Decimal Cost from "provider", even beside a price table."""
    server.cost = 0.00042
    prices = Prices({"gpt-test": Price(Decimal("100"), Decimal("100"))})
    reply = asked(model(kind, server, prices=prices))
    assert isinstance(reply.usage, Usage)
    assert reply.usage.cost == Cost(Decimal("0.00042"), "provider")
    assert type(reply.usage.cost.amount) is Decimal


@pytest.mark.parametrize("kind", HTTP_MODELS)
def test_a_cost_in_litellms_header_is_the_providers(kind: str, server: StandIn) -> None:
    """The cost LiteLLM's proxy gives in x-litellm-response-cost counts as the provider's, unless the usage has its own."""

    def costed(messages: list[dict[str, Any]]) -> dict[str, Any]:
        return {**echoing(messages), "headers": {"x-litellm-response-cost": "1.35e-05"}}

    prices = Prices({"gpt-test": Price(Decimal("100"), Decimal("100"))})
    reply = asked(model(kind, server, costed, prices=prices))
    assert isinstance(reply.usage, Usage)
    if kind == "openai":
        assert reply.usage.cost == Cost(Decimal("0.0000135"), "provider")
    else:  # a streamed reply's headers come before its usage: only the usage's own cost counts
        assert reply.usage.cost.source == "computed"
    server.cost = 0.00042
    reply = asked(model(kind, server, costed, prices=prices))
    assert isinstance(reply.usage, Usage) and reply.usage.cost == Cost(Decimal("0.00042"), "provider")


@pytest.mark.parametrize("kind", HTTP_MODELS)
def test_a_cost_is_computed_exactly_from_the_price_table(kind: str, server: StandIn) -> None:
    """Without a provider cost, the cost is computed from the price table, exactly, cached input at its own price."""

    def counted(messages: list[dict[str, Any]]) -> dict[str, Any]:
        return {"content": "Priced.", "usage": {"prompt_tokens": 1234, "completion_tokens": 567, "cached_tokens": 234}}

    prices = Prices({"gpt-test": Price(input=Decimal("2.50"), output=Decimal("10"), cached=Decimal("1.25"))})
    reply = asked(model(kind, server, counted, prices=prices))
    # (1000 uncached x 2.50 + 234 cached x 1.25 + 567 output x 10) / 1,000,000 dollars
    expected = (Decimal(1000) * Decimal("2.50") + Decimal(234) * Decimal("1.25") + Decimal(567) * Decimal(10)) / Decimal(1_000_000)
    assert expected == Decimal("0.0084625")
    assert isinstance(reply.usage, Usage)
    assert reply.usage.cost == Cost(Decimal("0.0084625"), "computed")


@pytest.mark.parametrize("kind", HTTP_MODELS)
def test_a_model_missing_from_the_price_table_is_unpriced(kind: str, server: StandIn) -> None:
    """A model the price table does not list is Unpriced, never free."""
    prices = Prices({"another-model": Price(Decimal("1"), Decimal("1"))})
    reply = asked(model(kind, server, prices=prices))
    assert isinstance(reply.usage, Usage)
    assert reply.usage.cost == Unpriced()
    assert reply.usage.output > 0


@pytest.mark.parametrize("kind", HTTP_MODELS)
@pytest.mark.parametrize("key", ["sk-right-4711", SecretStr("sk-right-4711")], ids=["str", "SecretStr"])
def test_the_key_is_sent_as_a_bearer_token_and_never_shown(kind: str, key: Any, server: StandIn) -> None:
    """The key goes as "Authorization: Bearer <key>" (a wrong one is refused) and is not in the model's repr."""
    server.api_key = "sk-right-4711"
    right = model(kind, server, key=key)
    assert asked(right).text == "You said: Where is my order?"
    assert server.received[-1].headers["authorization"] == "<redacted>"  # sent, and the stand-in hid it
    assert "sk-right" not in repr(right) and "sk-right" not in str(right)
    wrong = model(kind, server, key="sk-wrong-0815")
    with pytest.raises(HttpFailure, match="401") as failure:
        asked(wrong)
    assert "sk-wrong" not in str(failure.value)
    assert [record.status for record in server.received] == [200, 401]


@pytest.mark.parametrize("kind", HTTP_MODELS)
@pytest.mark.parametrize("provider", ["compatible", "openai", "openrouter", "azure"])
def test_the_request_body_carries_the_settings_in_the_providers_fields(kind: str, provider: str, server: StandIn) -> None:
    """Model name, temperature, max tokens, effort and extra fields go in the fields the provider reads."""
    subject = model(
        kind, server, provider=provider, temperature=0.2, max_tokens=300, effort="low", extra={"seed": 7, "top_p": 0.9}
    )
    asked(subject)
    body = server.received[-1].json
    assert body["model"] == "gpt-test"
    assert body["messages"] == [{"role": said.role, "content": said.content} for said in ASKED]
    assert (body["temperature"], body["seed"], body["top_p"]) == (0.2, 7, 0.9)
    tokens = "max_completion_tokens" if provider in ("openai", "azure") else "max_tokens"
    assert body[tokens] == 300
    assert ({"max_tokens", "max_completion_tokens"} - {tokens}) & set(body) == set()
    if provider == "openrouter":
        assert body["reasoning"] == {"effort": "low"}
        assert "reasoning_effort" not in body
    else:
        assert body["reasoning_effort"] == "low"
        assert "reasoning" not in body
    if kind == "openai-stream":
        assert (body["stream"], body["stream_options"]) == (True, {"include_usage": True})
    else:
        assert "stream" not in body and "stream_options" not in body


@pytest.mark.parametrize("kind", HTTP_MODELS)
def test_a_base_url_with_a_query_keeps_it_after_the_path(kind: str, server: StandIn) -> None:
    """A query in the base URL stays the query: the path is added before it."""
    server.reply = lambda request: echoing(request["messages"])
    subject = OpenAiModel("gpt-test", server.url + "/v1?api-version=2024-10-21", stream=kind == "openai-stream")
    assert asked(subject).text == "You said: Where is my order?"
    assert (server.received[-1].path, server.received[-1].query) == ("/v1/chat/completions", "api-version=2024-10-21")


@pytest.mark.parametrize("kind", HTTP_MODELS)
def test_a_reply_of_the_wrong_shape_is_a_model_failure_naming_the_model(kind: str, server: StandIn) -> None:
    """A reply that is not a chat completion is a ModelFailure naming the model and the URL, not an empty reply."""
    subject = model(kind, server)
    server.faults(WrongShape())
    with pytest.raises(ModelFailure) as failure:
        asked(subject)
    assert str(failure.value).startswith(f"model gpt-test: POST {server.url}/v1/chat/completions: ")
    wrong = "the streamed reply has no chat completion chunk" if kind == "openai-stream" else "not a chat completion"
    assert wrong in str(failure.value)


# --- agents ----------------------------------------------------------------------------------


def answered(message: str) -> Answer:
    """What every agent case answers to ``message``: text, tokens, a thought and a tool call."""
    text = f"You said: {message}"
    steps = (Thought(f"Looking up {message}"), Call("lookup", {"q": message}))
    return Answer(text, Usage(10 * words(message), words(text)), steps)


def json_reply(request: dict[str, Any]) -> dict[str, Any]:
    expected = answered(request["message"])
    return {
        "output": {
            "text": expected.text,
            "thoughts": [expected.steps[0].text],
            "calls": [{"name": "lookup", "arguments": {"q": request["message"]}, "result": {"found": True}, "seconds": 0.25}],
        },
        "usage": {"in": expected.usage.input, "out": expected.usage.output},
    }


def chat_reply(request: dict[str, Any]) -> dict[str, Any]:
    message = newest(request["messages"])
    expected = answered(message)
    return {
        "content": expected.text,
        "reasoning": expected.steps[0].text,
        "tool_calls": [{"name": "lookup", "arguments": {"q": message}}],
        "usage": {"prompt_tokens": expected.usage.input, "completion_tokens": expected.usage.output},
    }


def agent(kind: str, server: StandIn) -> Any:
    """An agent of ``kind`` that answers as ``answered`` says: a fake, or an HTTP agent on the stand-in."""
    match kind:
        case "fake":
            return FakeAgent(answered)
        case "json":
            server.agent_reply = json_reply
            return JsonAgent(
                JsonEndpoint(server.url + "/agent"),
                body={"message": "{{ text }}", "session": "{{ session }}", "history": "{{ history }}"},
                reply="output.text",
                tokens=TokenPaths("usage.in", "usage.out"),
                thoughts="output.thoughts",
                calls="output.calls",
            )
        case "chat":
            server.reply = chat_reply
            return ChatAgent(JsonEndpoint(server.url + "/v1/chat/completions"), model="agent-model", system="Be kind.")
    raise AssertionError(kind)


def talked(subject: Any, *conversations: tuple[str, ...]) -> list[list[Answer]]:
    """The answers of each conversation, the conversations open at once, their turns taken in step."""

    async def one(messages: tuple[str, ...]) -> list[Answer]:
        async with subject.conversation() as conversation:
            answers = []
            for text in messages:
                answers.append(await conversation.turn(Message(text)))
                await asyncio.sleep(0)  # let the other conversations take their turn
            return answers

    async def all() -> list[list[Answer]]:
        return list(await asyncio.gather(*(one(messages) for messages in conversations)))

    return asyncio.run(all())


def histories(kind: str, server: StandIn) -> list[list[dict[str, Any]]]:
    """What each request the stand-in received carried as the conversation so far."""
    match kind:
        case "json":
            return [record.json["history"] for record in server.received]
        case "chat":
            return [record.json["messages"] for record in server.received]
    raise AssertionError(kind)


TURNS = ("Hi there", "Where is order A-1043?", "Thanks a lot")


@pytest.mark.parametrize("kind", AGENTS)
def test_a_conversation_answers_several_turns(kind: str, server: StandIn) -> None:
    """A conversation opens and answers each turn with the text, the tokens and the steps the agent took."""
    (answers,) = talked(agent(kind, server), TURNS)
    assert [answer.text for answer in answers] == [f"You said: {text}" for text in TURNS]
    for text, answer in zip(TURNS, answers):
        assert isinstance(answer.usage, Usage)
        assert (answer.usage.input, answer.usage.output) == (10 * words(text), words(answer.text))
        assert answer.steps[0] == Thought(f"Looking up {text}")
        assert isinstance(answer.steps[1], Call)
        assert (answer.steps[1].name, answer.steps[1].arguments) == ("lookup", {"q": text})


@pytest.mark.parametrize("kind", AGENTS)
def test_every_answer_survives_encoding_as_answer(kind: str, server: StandIn) -> None:
    """Every answer comes back the same from msgspec's JSON as an Answer."""
    (answers,) = talked(agent(kind, server), TURNS)
    for answer in answers:
        assert msgspec.json.decode(msgspec.json.encode(answer), type=Answer) == answer


def test_a_json_agent_reads_a_calls_result_and_duration(server: StandIn) -> None:
    """A JsonAgent's call keeps the result and the seconds its reply gives."""
    ((answer,),) = talked(agent("json", server), ("Order A-1?",))
    assert answer.steps[1] == Call("lookup", {"q": "Order A-1?"}, Reported({"found": True}), 0.25)


@pytest.mark.parametrize("kind", HTTP_AGENTS)
def test_a_conversation_keeps_one_connection_for_all_its_turns(kind: str, server: StandIn) -> None:
    """Each conversation sends all its turns over one connection of its own, even with others open."""
    conversations = [tuple(f"c{n} turn {turn}" for turn in range(3)) for n in range(3)]
    answers = talked(agent(kind, server), *conversations)
    assert [[answer.text for answer in batch] for batch in answers] == [
        [f"You said: {text}" for text in messages] for messages in conversations
    ]
    used = {
        n: {record.connection for record in server.received if record.message.startswith(f"c{n} ")} for n in range(3)
    }
    assert all(len(connections) == 1 for connections in used.values())
    assert len(set.union(*used.values())) == 3
    assert server.connections == 3


def test_two_json_conversations_have_different_session_ids(server: StandIn) -> None:
    """Each conversation of a JsonAgent has its own session id, the same in all its turns."""
    talked(agent("json", server), ("a1", "a2"), ("b1", "b2"))
    sessions = {record.message: record.json["session"] for record in server.received}
    assert sessions["a1"] == sessions["a2"] and sessions["b1"] == sessions["b2"]
    assert sessions["a1"] != sessions["b1"]
    assert all(len(session) >= 16 for session in sessions.values())


@pytest.mark.parametrize("kind", HTTP_AGENTS)
def test_the_history_is_sent_each_turn(kind: str, server: StandIn) -> None:
    """Each turn sends the whole conversation so far: every user message and every answer, in order."""
    talked(agent(kind, server), TURNS)
    system = [{"role": "system", "content": "Be kind."}] if kind == "chat" else []
    expected = []
    so_far: list[dict[str, Any]] = []
    for text in TURNS:
        so_far = [*so_far, {"role": "user", "content": text}]
        expected.append(system + so_far)
        so_far = [*so_far, {"role": "assistant", "content": f"You said: {text}"}]
    assert histories(kind, server) == expected


@pytest.mark.parametrize("kind", HTTP_AGENTS)
def test_two_conversations_do_not_share_their_history(kind: str, server: StandIn) -> None:
    """Two conversations open at once each send only what was said in them."""
    talked(agent(kind, server), ("a1", "a2"), ("b1", "b2"))
    for record, history in zip(server.received, histories(kind, server)):
        mine = record.message[0]
        said = [message["content"] for message in history if message["role"] == "user"]
        assert said and all(text.startswith(mine) for text in said)


def test_a_copy_of_a_model_with_another_url_and_key_uses_its_own_client() -> None:
    """msgspec.structs.replace on an OpenAiModel never sends the copy's requests to the old URL or with the old key."""
    with StandIn(api_key="first-key") as first, StandIn(api_key="second-key") as second:
        model = OpenAiModel("m", first.url + "/v1", "first-key")
        copy = msgspec.structs.replace(model, base_url=second.url + "/v1", key="second-key")

        async def both() -> tuple[str, str]:
            said = (Said("user", "hello"),)
            return (await model.reply(said)).text, (await copy.reply(said)).text

        assert asyncio.run(both()) == ("You said: hello", "You said: hello")
        assert len(first.received) == 1 and len(second.received) == 1


def test_a_models_client_is_closed_when_its_event_loop_ends() -> None:
    """The HTTP client an OpenAiModel opened in an asyncio.run is closed when that run ends."""
    with StandIn() as server:
        model = OpenAiModel("m", server.url + "/v1")

        async def asked() -> Any:
            await model.reply((Said("user", "hello"),))
            return next(iter(model.clients.by_loop.values())).client

        client = asyncio.run(asked())
        assert client.is_closed
