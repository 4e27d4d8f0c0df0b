"""A busy service inside an agent's turn replays nothing unseen (issue 26, item 7).

The template's LLM assistant and ``ChatAgent`` run against the stand-in, whose chat responder asks
for the ``lookup_order`` tool when the last message is the user's and answers in words after the
tool's result. A 429 on the request after the tool ran is sent again on its own: the user's message
is never sent twice, the tool never runs twice, and what convy keeps is what the server answered.
Every test is bounded by the agent's patience (a second or two): on code that replays whole turns
each replay draws another 429, and the test fails when patience runs out instead of hanging.
"""

from __future__ import annotations

import asyncio
import collections
import importlib.util
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

from support.standin import StandIn, Status, Window

import convy
from convy.agent import Answer, Call, Message, QueuedAgent, Requests, TimeLimited, Usage
from convy.busy import Busy, Patience, Places
from convy.model import OpenAiModel

TEMPLATE = Path(convy.__file__).resolve().parent / "template"  # the template of the convy under test


def assistant_module() -> ModuleType:
    """The template's agents/assistant.py, loaded with its gateway.py beside it (absent: no .env)."""
    sys.path.insert(0, str(TEMPLATE))
    writing = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        spec = importlib.util.spec_from_file_location("template_assistant", TEMPLATE / "agents" / "assistant.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.dont_write_bytecode = writing
        sys.path.remove(str(TEMPLATE))


class Shop:
    """The stand-in's chat responder: a tool call for a user's message, words after a tool's result.
    With ``refuse_after_tool`` set, the request that carries the tool's result is refused that many
    times (a 429 queued for the next request of the conversation as the tool call is answered)."""

    def __init__(self, server: StandIn, refuse_after_tool: int = 0) -> None:
        self.server = server
        self.refuse = refuse_after_tool
        self.tool_calls = 0
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Any:
        last = request["messages"][-1]
        if last["role"] == "user":
            with self.lock:
                self.tool_calls += 1
            if self.refuse:
                self.server.faults(*[Status(429, retry_after_ms=5) for _ in range(self.refuse)])
            return {"tool_calls": [{"name": "lookup_order", "arguments": '{"order": "A-1043"}'}]}
        return "Your kettle was delivered."


def user_twice(server: StandIn) -> int:
    """Requests that carried some user message more than once."""
    twice = 0
    for request in server.received:
        if request.kind != "chat" or not isinstance(request.json, dict):
            continue
        said = collections.Counter(m["content"] for m in request.json["messages"] if m.get("role") == "user")
        twice += any(times > 1 for times in said.values())
    return twice


def played(agent: Any, places: Places, *messages: str) -> list[Answer]:
    async def main() -> list[Answer]:
        async with QueuedAgent(TimeLimited(agent), places).conversation() as conversation:
            return [await conversation.turn(Message(text)) for text in messages]

    return asyncio.run(main())


def calls(answers: list[Answer]) -> int:
    return sum(1 for answer in answers for step in answer.steps if isinstance(step, Call))


def test_a_refusal_after_the_tool_ran_sends_that_request_again_not_the_turn() -> None:
    module = assistant_module()
    with StandIn() as server:
        shop = Shop(server, refuse_after_tool=1)
        server.configure(reply=shop)
        agent = module.Assistant(OpenAiModel("agent-model", server.url + "/v1"))
        answers = played(agent, Places(1, patience=Patience(2.0, 0.01)), "Where is A-1043?", "And the lamp?", "Thanks")
        refused = sum(1 for request in server.received if request.status == 429)
        answered = sum(1 for request in server.received if request.status == 200)
        assert user_twice(server) == 0, "no request carried a user's message twice"
        assert refused == 3 and answered == 6, "each refused request was sent once more, and nothing else"
        assert shop.tool_calls == calls(answers) == 3, "the tool ran once a turn, and each run is recorded"
        kept = [usage for answer in answers for usage in answer.requests()]
        assert len(kept) == answered


def test_a_request_refused_past_patience_ends_the_turn_with_what_it_spent() -> None:
    """Still refused once patience ran out: the Busy is final (the turn is not played again) and
    carries the turn's first request and its tool call."""
    module = assistant_module()
    with StandIn() as server:
        shop = Shop(server, refuse_after_tool=1000)
        server.configure(reply=shop)
        agent = module.Assistant(OpenAiModel("agent-model", server.url + "/v1"))
        try:
            played(agent, Places(1, patience=Patience(0.3, 0.01)), "Where is A-1043?")
        except Busy as busy:
            stopped = busy
        else:
            raise AssertionError("the turn should have ended busy")
        assert stopped.final
        spent = stopped.spent
        assert isinstance(spent, Answer)
        assert isinstance(spent.usage, Requests) and len(spent.usage.each) == 1
        assert isinstance(spent.usage.each[0], Usage)
        assert [step.name for step in spent.steps if isinstance(step, Call)] == ["lookup_order"]
        firsts = [r for r in server.received if r.kind == "chat" and r.json["messages"][-1]["role"] == "user"]
        assert len(firsts) == 1, "the turn's first request was sent once, never again"
        assert shop.tool_calls == 1


def test_a_storm_against_a_sliding_window_keeps_what_the_server_answered() -> None:
    """Four conversations of three turns at once against 5 requests a second: every request the server
    answered is kept by convy, every tool the server asked for is recorded, and no request carried a
    user's message twice (the counts of 429s vary with the machine; these do not)."""
    module = assistant_module()
    with StandIn(limit=Window(5, 1.0)) as server:
        shop = Shop(server)
        server.configure(reply=shop)
        agent = module.Assistant(OpenAiModel("agent-model", server.url + "/v1"))
        places = Places(4, patience=Patience(60.0, 0.05))

        async def main() -> list[list[Answer]]:
            async def one() -> list[Answer]:
                async with QueuedAgent(TimeLimited(agent), places).conversation() as conversation:
                    return [await conversation.turn(Message(f"Where is A-1043? ({turn})")) for turn in range(3)]

            return list(await asyncio.gather(*(one() for _ in range(4))))

        answers = [answer for conversation in asyncio.run(main()) for answer in conversation]
        answered = sum(1 for request in server.received if request.status == 200)
        assert user_twice(server) == 0
        assert len([usage for answer in answers for usage in answer.requests()]) == answered == 24
        assert calls(answers) == shop.tool_calls == 12


def test_a_wait_for_a_busy_service_inside_a_turn_is_not_the_agents_time() -> None:
    """A request of a turn refused with Retry-After 5 s under a turn limit of 2 s: the wait is not
    counted against the limit (virtual time: no clock is waited on), the turn is answered; an agent
    that takes 3 s of its own is still out of time."""
    from support.clock import in_virtual_time

    from convy.agent import OutOfTime
    from convy.busy import TURN

    class Slow:
        def __init__(self, refusals: int, works: float) -> None:
            self.refusals, self.works = refusals, works

        def conversation(self) -> Any:
            agent = self

            class Opened:
                async def __aenter__(self) -> Opened:
                    return self

                async def __aexit__(self, *exc: object) -> None:
                    return None

                async def turn(self, message: Message) -> Answer:
                    async def request() -> str:
                        if agent.refusals:
                            agent.refusals -= 1
                            raise Busy("429 Too Many Requests", 5.0)
                        await asyncio.sleep(agent.works)
                        return "answered"

                    turn = TURN.get()
                    assert turn is not None
                    return Answer(await turn.resent(request))

            return Opened()

    async def turn(agent: Slow) -> Answer:
        places = Places(1, patience=Patience(60.0, 0.01))
        async with QueuedAgent(TimeLimited(agent, turn=2.0), places).conversation() as conversation:
            return await conversation.turn(Message("hi"))

    assert in_virtual_time(lambda: turn(Slow(2, 0.5))).text == "answered"
    try:
        in_virtual_time(lambda: turn(Slow(1, 3.0)))
    except OutOfTime:
        pass
    else:
        raise AssertionError("3 s of the agent's own work is past its 2 s limit")


def test_a_chat_agents_refused_turn_is_sent_once_more_and_a_busy_past_patience_spent_nothing() -> None:
    from convy.httpagents import ChatAgent

    with StandIn() as server:
        agent = ChatAgent(server.url + "/v1", model="agent-model", system="Be kind.")

        async def main() -> list[Answer]:
            places = Places(1, patience=Patience(2.0, 0.01))
            async with QueuedAgent(TimeLimited(agent), places).conversation() as conversation:
                first = await conversation.turn(Message("Hello"))
                server.faults(Status(429, retry_after_ms=5))
                return [first, await conversation.turn(Message("Where is A-1043?"))]

        answers = asyncio.run(main())
        assert [request.status for request in server.received] == [200, 429, 200]
        assert user_twice(server) == 0
        assert len([usage for answer in answers for usage in answer.requests()]) == 2

        server.faults(*[Status(429, retry_after_ms=5) for _ in range(1000)])
        try:
            played(agent, Places(1, patience=Patience(0.2, 0.01)), "Hello")
        except Busy as busy:
            assert busy.final and busy.spent is None, "a refused request is not a request spent"
        else:
            raise AssertionError("the turn should have ended busy")
