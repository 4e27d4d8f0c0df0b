"""Tools a scenario declares and answers for (``tools.py``): what each call gets, the state they
change, the calls kept in the attempt's record, and the checks of that state."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
from support.clock import in_virtual_time

from convy.agent import Answer, Call, Message, NotReported, Reported, TimeLimited
from convy.fakes import FakeJudge
from convy.outcome import Outcome
from convy.problems import ScenarioError
from convy.scenario import Scenario
from convy.scenarios import ScenarioFile
from convy.tools import Tool, Toolbox, ToolError, joined, toolbox

SEAT_TOOLS: list[dict[str, Any]] = [
    {
        "name": "change_seat",
        "description": "Move a booking to another seat.",
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "seat": {"type": "string"}},
            "required": ["code", "seat"],
        },
        "answers": [
            {"when": {"seat": "1A"}, "error": "seat {{ seat }} is taken", "delay": 2.0},
            {"when": {"code": "ABC123"}, "set": {"bookings.{{ code }}.seat": "{{ seat }}"}, "read": "bookings.{{ code }}"},
        ],
        "default": {"error": "no booking {{ code }}"},
    },
    {
        "name": "get_booking",
        "description": "A booking by its code.",
        "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
        "answers": [{"read": "bookings.{{ code }}"}],
    },
    {
        "name": "count",
        "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "answers": [{"when": {"n": 2}, "result": {"twice": "{{ n }}", "said": "n={{ n }}"}}],
    },
]
STATE = {"bookings": {"ABC123": {"seat": "12A", "passenger": "Ada"}}}


def tools() -> tuple[Tool, ...]:
    return msgspec.convert(SEAT_TOOLS, tuple[Tool, ...])


def box() -> Toolbox:
    return Toolbox(tools(), STATE)


def test_a_fixture_answers_the_call_whose_arguments_hold_its_when_and_changes_the_state() -> None:
    kit = box()
    seat = asyncio.run(kit.call("change_seat", {"code": "ABC123", "seat": "14C"}))
    assert seat == {"seat": "14C", "passenger": "Ada"}  # read after set: the state as the call left it
    assert kit.state == {"bookings": {"ABC123": {"seat": "14C", "passenger": "Ada"}}}
    assert STATE["bookings"]["ABC123"]["seat"] == "12A"  # the scenario's own state is never changed
    assert [(call.name, call.source, call.error) for call in kit.calls] == [("change_seat", "fixture", "")]


def test_a_value_that_is_one_slot_alone_keeps_the_arguments_type() -> None:
    assert asyncio.run(box().call("count", {"n": 2})) == {"twice": 2, "said": "n=2"}
    assert asyncio.run(box().call("count", {"n": 2.0})) == {"twice": 2.0, "said": "n=2.0"}  # 2.0 fits when: 2, as JSON


def test_the_default_answers_what_no_fixture_fits_and_errors_are_raised_and_kept() -> None:
    kit = box()
    with pytest.raises(ToolError, match="no booking XYZ"):
        asyncio.run(kit.call("change_seat", {"code": "XYZ", "seat": "2B"}))
    with pytest.raises(ToolError, match="nothing at bookings.XYZ"):
        asyncio.run(kit.call("get_booking", {"code": "XYZ"}))
    with pytest.raises(ToolError, match="declares no answer of count"):
        asyncio.run(kit.call("count", {"n": 3}))
    assert [(call.source, call.error) for call in kit.calls] == [
        ("default", "no booking XYZ"),
        ("fixture", "nothing at bookings.XYZ"),
        ("unanswered", "the scenario declares no answer of count for these arguments"),
    ]
    assert all(call.result == NotReported() for call in kit.calls)


@pytest.mark.parametrize(
    ("name", "arguments", "source", "said"),
    [
        ("change_seat", {"code": "ABC123"}, "invalid", "change_seat requires seat"),
        ("change_seat", {"code": "ABC123", "seat": 14}, "invalid", "seat must be string, got a whole number"),
        ("change_seat", {"code": "ABC123", "seat": "1B", "row": 1}, "invalid", "takes no argument row"),
        ("count", {"n": True}, "invalid", "n must be integer, got true or false"),
        ("chnage_seat", {}, "unknown", "declares no tool chnage_seat: did you mean change_seat?"),
    ],
)
def test_a_call_that_does_not_fit_is_an_error_that_says_why(name: str, arguments: dict[str, Any], source: str, said: str) -> None:
    kit = box()
    with pytest.raises(ToolError, match=said):
        asyncio.run(kit.call(name, arguments))
    assert kit.calls[0].source == source
    assert kit.state == STATE  # nothing changed


def test_a_delay_holds_the_answer_back_on_the_loops_clock() -> None:
    kit = box()

    async def timed() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(ToolError):
            await kit.call("change_seat", {"code": "ABC123", "seat": "1A"})
        return loop.time() - start

    assert in_virtual_time(timed) == pytest.approx(2.0)


def test_served_calls_take_the_place_of_the_same_calls_the_agent_reported() -> None:
    reported = Call("get_booking", {"code": "ABC123"}, NotReported())
    other = Call("get_booking", {"code": "ZZZ"})
    answer = Answer("done", steps=(reported, other))
    served = (
        Call("get_booking", {"code": "ABC123"}, Reported({"seat": "12A"}), source="fixture"),
        Call("count", {"n": 2}, Reported({}), source="fixture"),
    )
    steps = joined(answer, served, {tool.name: tool for tool in tools()}).steps
    # One call, not two; the other the agent reported of a declared tool, which its tools never saw,
    # kept but marked; the served one no report matched, after.
    assert steps == (served[0], msgspec.structs.replace(other, source="claimed"), served[1])


def test_toolbox_outside_an_attempt_says_so() -> None:
    with pytest.raises(LookupError, match="no scenario tools here"):
        toolbox()


class SeatAgent:
    """An agent whose code calls the scenario's tools: it moves booking ABC123 to the seat the
    message names, and reports nothing of its calls (only the tools saw them)."""

    def __init__(self, report: bool = False) -> None:
        self.report = report

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[SeatAgent]:
        yield self

    async def turn(self, message: Message) -> Answer:
        seat = message.text.rsplit(" ", 1)[-1]
        try:
            booking = await toolbox().call("change_seat", {"code": "ABC123", "seat": seat})
        except ToolError as error:
            return Answer(f"Sorry: {error}")
        steps = (Call("change_seat", {"code": "ABC123", "seat": seat}),) if self.report else ()
        return Answer(f"You are now in {booking['seat']}.", steps=steps)


def seat_scenario(seat: str, **fields: Any) -> Scenario:
    data = {
        "id": "seat",
        "script": [f"move me to {seat}"],
        "state": STATE,
        "tools": SEAT_TOOLS,
        "judge": [
            {"check": {"state": {"bookings.ABC123.seat": "14C"}}},
            {"check": {"called": "change_seat", "with": {"seat": "14C"}}},
        ],
        **fields,
    }
    return msgspec.convert(data, Scenario)


def played(scenario: Scenario, agent: Any) -> Outcome:
    return in_virtual_time(lambda: scenario.outcome(1, TimeLimited(agent), None, FakeJudge(), 3))


@pytest.mark.parametrize("report", [False, True])
def test_the_state_check_and_the_calls_the_tools_saw_decide_an_attempt(report: bool) -> None:
    passed = played(seat_scenario("14C"), SeatAgent(report))
    assert passed.status(0.5) == "passed"
    assert [(claim.held, claim.reason) for claim in passed.result.claims] == [  # type: ignore[union-attr]
        (True, 'the tools\' state has bookings.ABC123.seat = "14C"'),
        (True, "agent called change_seat in turn 1"),
    ]
    (call,) = passed.transcript.turns[0].answer.steps  # one call, whether the agent reported it or not
    assert (call.name, call.source, call.result) == ("change_seat", "fixture", Reported({"seat": "14C", "passenger": "Ada"}))  # type: ignore[union-attr]
    assert passed.transcript.state == {"bookings": {"ABC123": {"seat": "14C", "passenger": "Ada"}}}

    failed = played(seat_scenario("9F"), SeatAgent(report))
    assert failed.status(0.5) == "failed"
    assert failed.result.claims[0].reason == 'the tools\' state has bookings.ABC123.seat = "9F"'  # type: ignore[union-attr]

    refused = played(seat_scenario("1A"), SeatAgent(report))  # the fixture's error: the seat stays
    assert refused.transcript.turns[0].answer.text == "Sorry: seat 1A is taken"
    (call,) = refused.transcript.turns[0].answer.steps
    assert (call.error, call.source) == ("seat 1A is taken", "fixture")  # type: ignore[union-attr]
    assert refused.result.claims[0].reason == 'the tools\' state has bookings.ABC123.seat = "12A"'  # type: ignore[union-attr]


def test_each_attempt_starts_from_the_scenarios_state() -> None:
    scenario = seat_scenario("14C")
    first, second = played(scenario, SeatAgent()), played(scenario, SeatAgent())
    assert first.transcript.state == second.transcript.state
    assert scenario.state == STATE


def test_the_record_reads_back_with_the_calls_their_source_and_the_state() -> None:
    outcome = played(seat_scenario("1A"), SeatAgent())
    line = msgspec.json.encode(outcome)
    assert b'"source":"fixture"' in line and b'"error":"seat 1A is taken"' in line
    assert msgspec.json.decode(line, type=Outcome) == outcome


def test_a_scenario_without_tools_keeps_no_state_and_its_record_is_as_before() -> None:
    scenario = Scenario(id="plain", script=("hello",), judge=({"check": {"said": "hello"}},))  # type: ignore[arg-type]
    outcome = played(msgspec.convert(msgspec.to_builtins(scenario), Scenario), EchoAgent())
    assert outcome.transcript.state is None
    assert b"state" not in msgspec.json.encode(outcome.transcript)


class EchoAgent:
    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[EchoAgent]:
        yield self

    async def turn(self, message: Message) -> Answer:
        return Answer(message.text)


def written(tmp_path: Path, text: str) -> list[str]:
    """The problems of a scenario file holding ``text``, as ``convy check`` says them."""
    path = tmp_path / "seat.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioError) as raised:
        ScenarioFile(path, "scenarios/seat.yaml", "seat").scenario()
    return list(raised.value.problems)


HEAD = """script: [move me]
state: {bookings: {ABC123: {seat: 12A}}}
tools:
  - name: change_seat
    parameters: {type: object, properties: {code: {type: string}, seat: {type: string}}, required: [code, seat]}
    default: {result: ok}
"""


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (HEAD + "    answers: [{when: {sead: 1A}, result: ok}]\njudge: [{check: {called: change_seat}}]\n",
         "scenarios/seat.yaml: tools[0].answers[0].when.sead: not an argument of change_seat: did you mean seat?"),
        (HEAD + "    answers: [{result: 'now {{ seet }}'}]\njudge: [{check: {called: change_seat}}]\n",
         "scenarios/seat.yaml: tools[0].answers[0].result: {{ seet }}: not an argument of change_seat: did you mean seat?"),
        (HEAD + "    answers: [{result: ok, error: no}]\njudge: [{check: {called: change_seat}}]\n",
         "scenarios/seat.yaml: tools[0].answers[0].error: give one of result, read and error, not result and error"),
        (HEAD + "    answers: [{set: {bookngs.ABC123.seat: 1A}}]\njudge: [{check: {called: change_seat}}]\n",
         "scenarios/seat.yaml: tools[0].answers[0].set.bookngs.ABC123.seat: bookngs is not in state: did you mean bookings?"),
        (HEAD + "judge: [{check: {state: {bokings.ABC123.seat: 14C}}}]\n",
         "scenarios/seat.yaml: judge[0].check.state.bokings.ABC123.seat: bokings is in no state the tools start with or set: did you mean bookings?"),
        (HEAD + "judge: [{check: {called: change_set}}]\n",
         "scenarios/seat.yaml: judge[0].check.called: change_set is not a tool of the scenario: did you mean change_seat?"),
        (HEAD + "  - name: change_seat\n    default: {result: ok}\njudge: [{check: {called: change_seat}}]\n",
         "scenarios/seat.yaml: tools[1].name: change_seat is declared twice (tools[0] too)"),
        ("script: [hi]\nstate: {a: 1}\njudge: [{check: {state: {a: 2}}}]\n",
         "scenarios/seat.yaml: state: no tool reads or changes it: declare the scenario's tools under tools:"),
        ("script: [hi]\njudge: [{check: {state: {a: 2}}}]\n",
         "scenarios/seat.yaml: judge[0].check.state: the scenario declares no tools, so there is no state to check: declare them under tools:"),
        ("script: [hi]\ntools: [{name: 'change seat'}]\njudge: [hi]\n",
         "scenarios/seat.yaml: tools[0].name: 'change seat': a tool's name is 1 to 64 letters, digits, _ or -"),
        ("script: [hi]\ntools: [{name: t, parameters: {properties: {n: {type: int}}}}]\njudge: [hi]\n",
         "scenarios/seat.yaml: tools[0].parameters.properties.n.type: 'int' is not a JSON schema type: did you mean integer?"),
        ("script: [hi]\ntools: [{name: t, default: {when: {a: 1}, result: 1}}]\njudge: [hi]\n",
         "scenarios/seat.yaml: tools[0].default.when: the default answers every call no answer fits: leave when out"),
        ("script: [hi]\ntools: [{name: t, answers: [{delay: -1}]}]\njudge: [hi]\n",
         "scenarios/seat.yaml: tools[0].answers[0].delay: -1 s: give 0 to 600 seconds"),
        (HEAD + "judge:\n  - check:\n      state: {bookings.ABC123.seat: }\n",
         "scenarios/seat.yaml: judge[0].check.state.bookings.ABC123.seat: no value (YAML reads bookings.ABC123.seat: with nothing after it as null): write the value the tools' state must hold, in quotes when it is text (bookings.ABC123.seat: '12A'), or null for a null"),
        ("script: [hi]\ntools: [{name: t, answers: [{reslt: 1}]}]\njudge: [hi]\n",
         "scenarios/seat.yaml: tools[0].answers[0].reslt: unknown field; did you mean result?"),
        # answers that could never be given, and {{ slots }} YAML would not read as text
        (HEAD + "approvals: {change_seat: aprove}\njudge: [{check: {asked_approval: change_seat}}]\n",
         "scenarios/seat.yaml: approvals.change_seat: 'aprove' is not an answer: approve, deny or user (did you mean approve?)"),
        (HEAD + "approvals: {change_set: approve}\njudge: [{check: {asked_approval: change_seat}}]\n",
         "scenarios/seat.yaml: approvals.change_set: not a tool of the scenario: did you mean change_seat?"),
        (HEAD.replace("    default: {result: ok}\n", "") + "    answers: [{when: {seat: 14}, result: ok}]\njudge: [{check: {called: change_seat}}]\n",
         "scenarios/seat.yaml: tools[0].answers[0].when.seat: 14 can never fit a call: seat must be string, got a whole number"),
        ("script: [hi]\ntools: [{name: t, parameters: {properties: {k: {type: string, enum: A}}}, default: {result: 1}}]\njudge: [hi]\n",
         "scenarios/seat.yaml: tools[0].parameters.properties.k.enum: expected a list of the values it may take, got text: enum: [A]"),
        ("script: [hi]\ntools: [{name: t, parameters: {properties: {k: {type: string, enum: [A, B]}}}, answers: [{when: {k: C}, result: 1}]}]\njudge: [hi]\n",
         "scenarios/seat.yaml: tools[0].answers[0].when.k: 'C' can never fit a call: k must be one of 'A', 'B', got 'C'"),
        ("script: [hi]\ntools:\n  - name: t\n    parameters: {properties: {k: {type: string}}}\n    answers:\n      - result: {{ k }}\njudge: [hi]\n",
         'scenarios/seat.yaml: tools[0].answers[0].result: {{ k }} without quotes is read by YAML as a mapping, not text: write it in quotes, "{{ k }}"'),
        ("script: [hi]\ntools:\n  - name: t\n    parameters: {properties: {code: {type: string}}}\n    answers:\n      - set: {bookings.{{ code }}.seat: 1}\njudge: [hi]\n",
         "scenarios/seat.yaml: line 6, column 24: did not find expected ',' or '}'; a {{ slot }} inside {...} or [...] on one line must be in quotes: \"{{ code }}\""),
        ("script: [hi]\ntools: [{name: t, answers: []}]\njudge: [hi]\n",
         "scenarios/seat.yaml: tools[0].answers: none, and no default: every call would be an error; give its answers, default: {error: ...} for a tool that always fails, or simulate: true for a model to play it"),
    ],
)
def test_a_scenarios_tools_written_wrong_are_refused_naming_the_field_and_the_fix(tmp_path: Path, text: str, said: str) -> None:
    problems = written(tmp_path, text)
    assert said in problems, problems


class McpAgent:
    """An agent that reaches the scenario's tools as an MCP client does, with the official SDK's
    client: it lists them, then calls change_seat with the seat the message names."""

    def __init__(self) -> None:
        self.listed: list[list[str]] = []
        self.urls: list[str] = []

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[McpAgent]:
        yield self

    async def turn(self, message: Message) -> Answer:
        from mcp import Client

        url = await toolbox().url()
        self.urls.append(url)
        async with Client(url) as client:
            self.listed.append([tool.name for tool in (await client.list_tools()).tools])
            seat = message.text.rsplit(" ", 1)[-1]
            result = await client.call_tool("change_seat", {"code": "ABC123", "seat": seat})
        said = result.content[0].text  # type: ignore[union-attr]
        return Answer(f"Sorry: {said}" if result.is_error else f"Done: {said}")


def test_an_agent_reaches_the_tools_over_mcp_from_a_server_fresh_for_each_attempt() -> None:
    pytest.importorskip("mcp")
    agent = McpAgent()
    scenario = seat_scenario("14C", script=["move me to 14C", "no, to 1A"])

    async def both() -> tuple[Outcome, Outcome]:
        first = await scenario.outcome(1, TimeLimited(agent), None, FakeJudge(), 3)
        second = await scenario.outcome(2, TimeLimited(agent), None, FakeJudge(), 3)
        return first, second

    first, second = asyncio.run(both())
    assert agent.listed[0] == ["change_seat", "get_booking", "count"]
    assert agent.urls[0] == agent.urls[1] != agent.urls[2]  # one server an attempt, kept for its turns
    assert all(url.startswith("http://127.0.0.1:") and url.endswith("/mcp") for url in agent.urls)
    turns = first.transcript.turns
    assert turns[0].answer.text == 'Done: {"seat": "14C", "passenger": "Ada"}'
    assert turns[1].answer.text == "Sorry: seat 1A is taken"
    assert [(step.source, step.error) for turn in turns for step in turn.answer.steps] == [("fixture", ""), ("fixture", "seat 1A is taken")]  # type: ignore[union-attr]
    assert first.status(0.5) == second.status(0.5) == "passed"
    with pytest.raises(OSError):  # the attempt's end stopped its server
        socket.create_connection(("127.0.0.1", int(agent.urls[0].rsplit(":", 1)[1].split("/")[0])), timeout=5)


def test_a_json_agent_over_http_gets_the_tools_address_in_its_body_and_calls_them_over_mcp() -> None:
    """A JSON agent on 127.0.0.1 (a Starlette app run by uvicorn) whose body template sends it
    ``{{ tools_url }}``: it calls change_seat there with the official SDK's client and says the result,
    reporting no call; the tools' record and state decide the checks."""
    pytest.importorskip("mcp")
    import uvicorn
    from mcp import Client
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from convy.http import JsonEndpoint
    from convy.httpagents import JsonAgent

    bodies: list[dict[str, Any]] = []

    async def answered(request: Request) -> JSONResponse:
        body = await request.json()
        bodies.append(body)
        async with Client(body["tools"]) as client:
            result = await client.call_tool("change_seat", {"code": "ABC123", "seat": body["message"].rsplit(" ", 1)[-1]})
        return JSONResponse({"reply": result.content[0].text})  # type: ignore[union-attr]

    async def played() -> Outcome:
        listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        listening.bind(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(Starlette(routes=[Route("/agent", answered, methods=["POST"])]), log_config=None))
        config = server.config
        config.load()
        server.lifespan = config.lifespan_class(config)
        await server.startup(sockets=[listening])
        try:
            port = listening.getsockname()[1]
            agent = JsonAgent(JsonEndpoint(f"http://127.0.0.1:{port}/agent"), body={"message": "{{ text }}", "tools": "{{ tools_url }}"})
            return await seat_scenario("14C").outcome(1, TimeLimited(agent), None, FakeJudge(), 3)
        finally:
            await server.shutdown(sockets=[listening])

    outcome = asyncio.run(played())
    assert outcome.status(0.5) == "passed", outcome.result
    assert bodies[0]["tools"].startswith("http://127.0.0.1:")
    (call,) = outcome.transcript.turns[0].answer.steps
    assert (call.name, call.source) == ("change_seat", "fixture")  # type: ignore[union-attr]


def test_a_json_agent_without_the_tools_slot_starts_no_server_and_a_scenario_without_tools_sends_it_empty() -> None:
    from convy.httpagents import BodyTemplate

    assert BodyTemplate({"message": "{{ text }}", "tools": "{{ tools_url }}"}).filled("hi", "s", [], "") == {"message": "hi", "tools": ""}
    assert not BodyTemplate({"message": "{{ text }}"}).serves()
    assert BodyTemplate({"message": "{{ text }}", "mcp": {"url": "{{ tools_url }}"}}).serves()


def test_a_judge_reads_the_calls_the_tools_served_and_only_those() -> None:
    """What a judge is given (``Transcript.said``, then ``text``): the served calls, with what they
    answered, before the agent's words of their turn; thoughts and calls only the agent reported stay out."""
    outcome = played(seat_scenario("1A", script=["move me to 1A", "then 14C"]), SeatAgent())
    reported = Call("get_booking", {"code": "ABC123"}, Reported({"seat": "12A"}))
    turns = list(outcome.transcript.turns)
    turns[1] = msgspec.structs.replace(turns[1], answer=msgspec.structs.replace(turns[1].answer, steps=(reported, *turns[1].answer.steps)))
    read = msgspec.structs.replace(outcome.transcript, turns=tuple(turns)).said().text()
    assert read == (
        "USER: move me to 1A\n\n"
        'AGENT CALLED TOOL change_seat with {"code":"ABC123","seat":"1A"}: it answered with the error \'seat 1A is taken\'\n\n'
        "AGENT: Sorry: seat 1A is taken\n\n"
        "USER: then 14C\n\n"
        'AGENT CALLED TOOL change_seat with {"code":"ABC123","seat":"14C"}: it answered {"seat":"14C","passenger":"Ada"}\n\n'
        "AGENT: You are now in 14C."
    )


# --- what an outside review found (issue 29's first review) ------------------------------------

NOTED = [
    {
        "name": "note",
        "parameters": {"type": "object", "properties": {"code": {"type": "string"}, "note": {"type": "string"}}},
        "answers": [{"result": "noted: {{ note }}"}],
        "default": {"result": "nothing to note"},
    },
    {
        "name": "put",
        "parameters": {"type": "object", "properties": {"key": {"type": "string"}}},
        "answers": [{"set": {"lst.{{ key }}": "x"}, "result": "done"}],
    },
    {
        "name": "slow",
        "answers": [{"delay": 5, "result": "late"}],
    },
]


def test_an_answer_that_names_an_argument_the_call_left_out_does_not_answer_it() -> None:
    kit = Toolbox(msgspec.convert(NOTED, tuple[Tool, ...]), {"lst": [5, 6], "name": "plain"})
    assert asyncio.run(kit.call("note", {"code": "X"})) == "nothing to note"  # the next answer, not a crash
    assert asyncio.run(kit.call("note", {"note": "hi"})) == "noted: hi"


def test_a_set_that_would_lose_a_value_or_miss_a_list_is_an_error_and_changes_nothing() -> None:
    kit = Toolbox(msgspec.convert(NOTED, tuple[Tool, ...]), {"lst": [5, 6], "name": "plain"})
    with pytest.raises(ToolError, match="lst is a list of 2, and '5' is not one of its indexes"):
        asyncio.run(kit.call("put", {"key": "5"}))
    assert asyncio.run(kit.call("put", {"key": "1"})) == "done"
    assert kit.state == {"lst": [5, "x"], "name": "plain"}


def test_a_call_cut_off_while_its_answer_is_held_is_kept() -> None:
    kit = Toolbox(msgspec.convert(NOTED, tuple[Tool, ...]), {})

    async def cut() -> None:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(1):
                await kit.call("slow")

    in_virtual_time(cut)
    assert [(call.name, call.error) for call in kit.calls] == [("slow", "cut off: the call's answer was held 5 s")]


def test_a_call_the_agent_only_claims_counts_for_no_check() -> None:
    """The agent reports a call of a tool the scenario declares that the tools never saw: called
    fails and not_called holds; a call of a tool of its own counts as before."""

    class Claiming(EchoAgent):
        async def turn(self, message: Message) -> Answer:
            return Answer("done", steps=(Call("change_seat", {"code": "ABC123", "seat": "14C"}), Call("own_tool", {})))

    chosen = seat_scenario("14C", judge=[{"check": {"called": "change_seat"}}, {"check": {"not_called": "change_seat"}}, {"check": {"called": "own_tool"}}])
    outcome = played(chosen, Claiming())
    assert [(claim.held, claim.reason) for claim in outcome.result.claims] == [  # type: ignore[union-attr]
        (False, "agent never called change_seat; it called own_tool"),
        (True, "agent never called change_seat"),
        (True, "agent called own_tool in turn 1"),
    ]
    assert [step.source for step in outcome.transcript.turns[0].answer.steps] == ["claimed", ""]  # type: ignore[union-attr]


def test_a_with_value_is_compared_as_json_reads_it() -> None:
    class Flagging(EchoAgent):
        async def turn(self, message: Message) -> Answer:
            return Answer("done", steps=(Call("own", {"flag": True, "n": 2.0}),))

    chosen = msgspec.convert(
        {"id": "f", "script": ["go"], "judge": [{"check": {"called": "own", "with": {"flag": 1}}}, {"check": {"called": "own", "with": {"n": 2}}}]}, Scenario
    )
    outcome = played(chosen, Flagging())
    assert [claim.held for claim in outcome.result.claims] == [False, True]  # type: ignore[union-attr]


def test_a_check_of_a_tool_the_scenario_serves_needs_no_report_of_the_agents_calls() -> None:
    """A JSON agent without calls= is refused a called check only where the agent's own report would
    decide it: not for a tool the scenario declares, whose calls its tools see."""
    assert seat_scenario("14C").tool_checks() == ()
    own = seat_scenario("14C", judge=[{"check": {"called": "own_tool"}}])
    assert own.tool_checks() == ("called own_tool",)


def test_the_scenario_window_shows_the_tools_state_at_the_end() -> None:
    from convy.attempt import Attempt

    outcome = played(seat_scenario("14C"), SeatAgent())
    assert msgspec.json.decode(Attempt(outcome, 0.5).dialogue().state or "") == {"bookings": {"ABC123": {"seat": "14C", "passenger": "Ada"}}}
    plain = played(msgspec.convert({"id": "p", "script": ["hi"], "judge": [{"check": {"said": "hi"}}]}, Scenario), EchoAgent())
    assert Attempt(plain, 0.5).dialogue().state is None
