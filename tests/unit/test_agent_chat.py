"""``ChatAgent`` takes what every other client takes (issue 26, item 9): a base URL or the whole
endpoint, a key that is never shown, ``stream=True``; and a reply's tool calls are its calls."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import SecretStr
from support.standin import StandIn

from convy.agent import Answer, Call, Message, Usage
from convy.http import JsonEndpoint
from convy.httpagents import ChatAgent

KEY = "sk-chat-agent-secret-0123456789"


def talked(agent: ChatAgent, *messages: str) -> list[Answer]:
    async def main() -> list[Answer]:
        async with agent.conversation() as conversation:
            return [await conversation.turn(Message(text)) for text in messages]

    return asyncio.run(main())


def reply(request: dict[str, Any]) -> Any:
    if request["messages"][-1]["content"] == "Where is A-1043?":
        return {"tool_calls": [{"name": "lookup_order", "arguments": '{"order": "A-1043"}'}]}
    return "Glad to help."


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("given", ["base", "base/", "whole", "endpoint"])
def test_it_takes_a_base_url_or_the_whole_endpoint_a_key_and_a_stream(given: str, stream: bool) -> None:
    with StandIn(reply=reply, api_key=KEY) as server:
        url = {
            "base": server.url + "/v1",
            "base/": server.url + "/v1/",
            "whole": server.url + "/v1/chat/completions",
            "endpoint": JsonEndpoint(server.url + "/v1"),
        }[given]
        agent = ChatAgent(url, model="agent-model", key=SecretStr(KEY), stream=stream)
        looked, thanked = talked(agent, "Where is A-1043?", "Thanks")
        assert {request.path for request in server.received} == {"/v1/chat/completions"}
        assert all(request.status == 200 for request in server.received)
        assert [request.stream for request in server.received] == [stream, stream]
    (call,) = [step for step in looked.steps if isinstance(step, Call)]
    assert (call.name, call.arguments) == ("lookup_order", {"order": "A-1043"})
    assert isinstance(thanked.usage, Usage) and thanked.text == "Glad to help."


def test_its_key_is_never_shown() -> None:
    agent = ChatAgent("http://127.0.0.1:9/v1", model="agent-model", key=KEY)
    shown = repr(agent) + str(agent) + repr(agent.endpoint)
    assert KEY not in shown
    assert KEY in agent.endpoint.secrets().values


def test_a_key_of_the_wrong_kind_is_refused_without_showing_it() -> None:
    with pytest.raises(ValueError, match="key: give the key as text or a SecretStr, not int"):
        ChatAgent("http://127.0.0.1:9/v1", model="agent-model", key=12345)
