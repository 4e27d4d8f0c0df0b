"""An agent that pauses to ask a person (``pauses.py``), and a tool a model plays (``simulate:
true``, ``playing.py``): who answers, what the record keeps, what is counted, and how a failing
model ends the attempt as its own failure, never the agent's."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest
from support.clock import in_virtual_time

from convy.agent import Answer, Asked, Call, Message, Reported, TimeLimited, Usage
from convy.attempt import Attempt
from convy.fakes import FakeJudge, FakeModel
from convy.model import Reply, Said
from convy.outcome import Outcome
from convy.pauses import Asking, asking
from convy.prompt import Prompt
from convy.scenario import Scenario
from convy.tables import AttemptRows
from convy.tools import toolbox
from convy.user import SimulatedUser

REFUND = {
    "name": "issue_refund",
    "description": "Refund an order.",
    "parameters": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]},
    "answers": [{"set": {"refunds.{{ order }}": True}, "result": {"refunded": "{{ order }}"}}],
}
WEATHER = {
    "name": "weather",
    "description": "The weather in a city now.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "answers": [{"when": {"city": "Oslo"}, "result": {"sky": "snow"}}],
    "simulate": True,
}


class CarefulAgent:
    """An agent that asks before refunding (the person's answer decides), asks a question with
    options, and calls the weather tool for the city the message names last."""

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[CarefulAgent]:
        yield self

    async def turn(self, message: Message) -> Answer:
        word = message.text.rsplit(" ", 1)[-1]
        if message.text.startswith("refund"):
            if not await asking().approve("issue_refund", {"order": word}):
                return Answer("I did not refund it.")
            await toolbox().call("issue_refund", {"order": word})
            return Answer(f"Refunded {word}.")
        if message.text.startswith("seat"):
            chosen = await asking().answer("Window or aisle?", ("window", "aisle"))
            return Answer(f"You chose {chosen or 'nothing'}.")
        sky = await toolbox().call("weather", {"city": word})
        return Answer(f"In {word}: {json.dumps(sky)}")


def scenario(**fields: Any) -> Scenario:
    data = {"id": "care", "script": ["refund A1"], "tools": [REFUND, WEATHER], "judge": [{"check": {"asked_approval": "issue_refund"}}], **fields}
    return msgspec.convert(data, Scenario)


def played(scene: Scenario, user: Any = None) -> Outcome:
    return in_virtual_time(lambda: scene.outcome(1, TimeLimited(CarefulAgent()), user, FakeJudge(), 4))


@pytest.mark.parametrize(("decision", "text", "state"), [("approve", "Refunded A1.", {"refunds": {"A1": True}}), ("deny", "I did not refund it.", {})])
def test_the_scenarios_approvals_answer_and_the_pause_is_kept_and_checked(decision: str, text: str, state: dict[str, Any]) -> None:
    outcome = played(scenario(approvals={"issue_refund": decision}))
    (turn,) = outcome.transcript.turns
    assert turn.answer.text == text
    assert outcome.transcript.state == state
    pause = turn.answer.steps[0]  # first, before the call it asked about (none where denied)
    assert isinstance(pause, Asked)
    assert (pause.question, pause.answer, pause.by, pause.tool, pause.arguments) == (
        'May I run issue_refund with {"order":"A1"}?',
        decision,
        "scenario",
        "issue_refund",
        {"order": "A1"},
    )
    (claim,) = outcome.result.claims  # type: ignore[union-attr]
    assert (claim.held, claim.reason) == (True, f"agent asked before issue_refund in turn 1, and the scenario answered {decision}")
    assert f"AGENT ASKED THE USER: 'May I run issue_refund with {{\"order\":\"A1\"}}?'; the answer was '{decision}'" in outcome.transcript.text()


def test_a_tool_the_approvals_do_not_name_is_denied_and_the_record_reads_back() -> None:
    outcome = played(scenario(judge=[{"check": {"not_asked_approval": "issue_refund"}}]))
    assert outcome.transcript.turns[0].answer.text == "I did not refund it."
    claim = outcome.result.claims[0]  # type: ignore[union-attr]
    assert not claim.held  # it did ask: not_asked_approval fails
    assert msgspec.json.decode(msgspec.json.encode(outcome), type=Outcome) == outcome


def user_scenario(**fields: Any) -> Scenario:
    return scenario(user="You want order A1 refunded, and you prefer aisle seats.", approvals={"issue_refund": "user"}, **fields)


def simulated(scene: Scenario, replies: Any) -> SimulatedUser:
    return scene.simulated(FakeModel(replies), Prompt("You play a customer. {{ instructions }} Say {{ stop }} when done."))


def test_the_simulated_user_decides_in_character_and_its_request_is_counted_as_its_own() -> None:
    def replies(messages: tuple[Said, ...]) -> Reply:
        last = messages[-1].content
        if "pauses and asks you" in last:
            assert "May I run issue_refund" in last and "approve, deny" in last
            assert messages[-2] == Said("assistant", "refund A1")  # the message of the turn under way
            return Reply("Approve.", Usage(30, 2))
        if messages[-1].content.startswith("[The agent is ready"):
            return Reply("refund A1", Usage(10, 3))
        return Reply("###STOP###", Usage(12, 1))

    scene = user_scenario(script=[])
    outcome = played(scene, simulated(scene, replies))
    (turn,) = outcome.transcript.turns
    assert turn.answer.text == "Refunded A1."
    pause = turn.answer.steps[0]  # before the call it asked about
    assert (pause.answer, pause.by, pause.usage) == ("approve", "user", Usage(30, 2))  # type: ignore[union-attr]
    attempt = Attempt(outcome, 0.5)
    assert attempt.user_usage() == (Usage(10, 3), Usage(30, 2), Usage(12, 1))
    assert attempt.user_sum().tokens().input == 52
    unsaid = Attempt(outcome.unsaid(), 0.5)  # as the run's end, JUnit and the summaries read it
    assert (unsaid.user_usage(), unsaid.every_sum()) == (attempt.user_usage(), attempt.every_sum())
    rows = AttemptRows("agent", "run", attempt, scene)
    (row,) = rows.pauses()
    assert (row.turn, row.question, row.answer, row.by, row.tool, row.tokens_in, row.tokens_out) == (1, pause.question, "approve", "user", "issue_refund", 30, 2)  # type: ignore[union-attr]
    users = [row for row in rows.model_requests() if row.participant == "user"]
    assert [(row.turn, row.tokens_in) for row in users] == [(1, 10), (1, 30), (None, 12)]
    window = attempt.dialogue()
    assert (window.turns[0].asked, window.turns[0].calls, [step.kind for step in window.turns[0].steps]) == (1, 1, ["asked", "call"])
    spans = [span for span in window.spans if span.label.startswith("agent paused")]
    assert [span.lane for span in spans] == ["user"]
    assert spans[0].label.endswith("(the user answered approve)")


def test_a_question_with_options_is_answered_by_the_user_or_by_nobody() -> None:
    scene = user_scenario(script=["seat please"], judge=[{"check": {"said": "aisle"}}])
    outcome = played(scene, simulated(scene, lambda messages: Reply("Aisle, please.") if "pauses" in messages[-1].content else Reply("###STOP###")))
    assert outcome.transcript.turns[0].answer.text == "You chose aisle."
    pause = outcome.transcript.turns[0].answer.steps[0]
    assert (pause.question, pause.options, pause.answer, pause.by) == ("Window or aisle?", ("window", "aisle"), "aisle", "user")  # type: ignore[union-attr]

    scripted = played(scenario(script=["seat please"], judge=[{"check": {"said": "x"}}]))
    assert scripted.transcript.turns[0].answer.text == "You chose nothing."
    assert scripted.transcript.turns[0].answer.steps[0].by == "nobody"  # type: ignore[union-attr]


def test_an_answer_not_among_the_options_ends_the_attempt_as_the_users_models_failure() -> None:
    scene = user_scenario(script=["refund A1"])
    outcome = played(scene, simulated(scene, lambda messages: Reply("Maybe later?") if "pauses" in messages[-1].content else Reply("###STOP###")))
    assert outcome.stop == "model_failed"
    assert outcome.result.who == "user"  # type: ignore[union-attr]
    assert "not one of its options (approve, deny)" in outcome.result.reason  # type: ignore[union-attr]
    assert outcome.transcript.turns[0].answer.text == "I did not refund it."  # the agent was told no, and its turn kept
    assert Attempt(outcome, 0.5).cause() == "user"


def test_a_simulated_tool_is_played_by_the_users_model_and_marked_so() -> None:
    asked: list[tuple[Said, ...]] = []

    def replies(messages: tuple[Said, ...]) -> Reply:
        asked.append(messages)
        return Reply('```json\n{"sky": "rain", "celsius": 11}\n```', Usage(40, 9))

    scene = scenario(script=["weather in Oslo", "weather in Bergen"], state={"cities": ["Oslo", "Bergen"]}, judge=[{"check": {"called": "weather"}}])
    assert scene.needs() == ("user",)  # a scripted scenario whose tool a model plays needs the user's model
    outcome = played(scene, scene.simulated(FakeModel(replies), Prompt("{{ instructions }} {{ stop }}")))
    first, second = (turn.answer.steps[0] for turn in outcome.transcript.turns)
    assert (first.source, first.result, first.usage) == ("fixture", Reported({"sky": "snow"}), None)  # type: ignore[union-attr]
    assert (second.source, second.result, second.usage) == ("simulated", Reported({"sky": "rain", "celsius": 11}), Usage(40, 9))  # type: ignore[union-attr]
    (told,) = asked
    assert '"name": "weather"' in told[0].content and '"cities": ["Oslo", "Bergen"]' in told[0].content
    assert told[1].content == 'The agent calls weather with {"city": "Bergen"}. Its result:'
    assert Attempt(outcome, 0.5).user_usage() == Attempt(outcome.unsaid(), 0.5).user_usage() == (Usage(40, 9),)
    assert outcome.status(0.5) == "passed"


def test_a_failing_model_playing_a_tool_ends_the_attempt_as_its_failure() -> None:
    def broken(messages: tuple[Said, ...]) -> Reply:
        raise ConnectionError("refused")

    scene = scenario(script=["weather in Bergen", "weather in Oslo"], judge=[{"check": {"called": "weather"}}])
    outcome = played(scene, scene.simulated(FakeModel(broken), Prompt("{{ instructions }} {{ stop }}")))
    assert outcome.stop == "model_failed"
    assert not outcome.transcript.turns  # the agent broke off on the tool's error: its turn kept apart
    call = outcome.agent_ending.steps[0]  # type: ignore[union-attr]
    assert isinstance(call, Call) and call.source == "simulated" and call.error == "the model playing weather failed"
    assert Attempt(outcome, 0.5).cause() == "user"


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"approvals": {"issue_refund": "user"}}, "approvals.issue_refund: user: the scenario has no simulated user to decide (no user:); answer approve or deny"),
        ({"approvals": {"issue_refund": "usr"}}, "approvals.issue_refund: 'usr' is not an answer: approve, deny or user (did you mean user?)"),
        (
            {"tools": [{**WEATHER, "default": {"result": 1}}]},
            "simulate: the default answers every call no answer fits, so a model would never play the tool: give default or simulate: true, not both - at `$.tools[0]`",
        ),
    ],
)
def test_pauses_and_simulated_tools_written_wrong_are_refused(fields: dict[str, Any], said: str) -> None:
    with pytest.raises((msgspec.ValidationError, ValueError)) as refused:
        scenario(**fields)
    assert said in str(refused.value)


def test_outside_an_attempt_a_person_denies_and_answers_nothing() -> None:
    person = asking()
    assert asyncio.run(person.approve("issue_refund")) is False
    assert asyncio.run(Asking().answer("Window?", ("window",))) == ""


@pytest.mark.parametrize(("decision", "said", "seat"), [("approve", 'Done: {"seat": "14C", "passenger": "Ada"}', "14C"), ("deny", "Sorry: not run: the user declined to let change_seat run", "12A")])
def test_an_agent_over_mcp_is_asked_about_as_an_mcp_host_asks_its_user(decision: str, said: str, seat: str) -> None:
    """The seat scenario with its tools, state and an approval, played by an agent that reaches the
    tools over MCP (the official SDK's client): a call of a tool the approvals name waits for the
    answer; approved, it runs and changes the state; denied, it is not run and the agent is told so."""
    pytest.importorskip("mcp")
    from test_tools import McpAgent, seat_scenario

    scene = seat_scenario("14C", approvals={"change_seat": decision})
    outcome = asyncio.run(scene.outcome(1, TimeLimited(McpAgent()), None, FakeJudge(), 3))
    (turn,) = outcome.transcript.turns
    assert turn.answer.text == said
    pause, call = turn.answer.steps  # the pause before the call it asked about
    assert isinstance(call, Call) and isinstance(pause, Asked)
    assert (call.approval, call.source if decision == "deny" else "fixture") == ("approved" if decision == "approve" else "denied", "denied" if decision == "deny" else "fixture")
    assert (pause.tool, pause.answer, pause.by) == ("change_seat", decision, "scenario")
    assert outcome.transcript.state["bookings"]["ABC123"]["seat"] == seat  # type: ignore[index]
    assert outcome.status(0.5) == ("passed" if decision == "approve" else "failed")


@pytest.mark.parametrize(
    ("reply", "chosen"),
    [("Approve.", "approve"), ("**Deny**", "deny"), ("Approve - yes, go ahead", "approve"), ("No, do not approve that.", ""), ("Don't approve it", ""), ("Yes", "")],
)
def test_an_answer_is_the_option_it_is_or_begins_with_never_one_found_further_in(reply: str, chosen: str) -> None:
    from convy.playing import _chosen

    assert _chosen(reply, ("approve", "deny")) == chosen


def test_a_user_model_still_answering_when_the_turn_is_cut_off_is_the_models_failure_not_the_agents() -> None:
    """The agent's turn limit passes while the simulated user's model answers its question: the
    attempt ends as the model's, the pause kept with the turn the agent broke off."""

    class Slow:
        name = "slow-user"

        async def reply(self, messages: tuple[Said, ...]) -> Reply:
            if "pauses and asks you" in messages[-1].content:
                await asyncio.sleep(30)
            return Reply("###STOP###")

    scene = user_scenario(script=["refund A1"])
    user = scene.simulated(Slow(), Prompt("You play a customer. {{ instructions }} Say {{ stop }} when done."))
    outcome = in_virtual_time(lambda: scene.outcome(1, TimeLimited(CarefulAgent(), turn=5), user, FakeJudge(), 4))
    assert outcome.stop == "model_failed"
    assert "still answering the agent's question" in outcome.result.reason  # type: ignore[union-attr]
    (pause,) = outcome.agent_ending.steps  # type: ignore[union-attr]
    assert isinstance(pause, Asked) and pause.by == "nobody" and pause.usage is not None  # its request sent, unreported
    assert Attempt(outcome, 0.5).cause() == "user"


class Reporting:
    """An agent that reports, besides its call of the scenario's tool (the very step the toolbox
    kept), a call of its own tool with a usage of its own (a sub-agent's, say)."""

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[Reporting]:
        yield self

    async def turn(self, message: Message) -> Answer:
        served = await toolbox().served("weather", {"city": "Bergen"})
        return Answer("ok", steps=(served, Call("subagent", {}, Reported(1), usage=Usage(9999, 9999))))


def test_only_the_simulated_users_requests_count_as_its_own_and_a_served_call_is_kept_once() -> None:
    scene = scenario(script=["weather"], judge=[{"check": {"called": "weather"}}])
    outcome = in_virtual_time(lambda: scene.outcome(1, TimeLimited(Reporting()), scene.simulated(FakeModel([Reply("1", Usage(40, 9))]), Prompt("{{ instructions }} {{ stop }}")), FakeJudge(), 2))
    steps = outcome.transcript.turns[0].answer.steps
    assert [(step.name, step.source) for step in steps] == [("weather", "simulated"), ("subagent", "")]  # type: ignore[union-attr]
    assert Attempt(outcome, 0.5).user_usage() == (Usage(40, 9),)


def test_a_question_asked_before_the_calls_is_placed_before_the_call_it_asked_about_for_the_judge() -> None:
    outcome = played(scenario(approvals={"issue_refund": "approve"}))
    lines = outcome.transcript.text().split("\n\n")
    assert lines[1].startswith("AGENT ASKED THE USER: 'May I run issue_refund") and lines[2].startswith("AGENT CALLED TOOL issue_refund")


def test_a_check_of_an_approval_for_a_slip_of_a_tools_name_is_refused() -> None:
    with pytest.raises(ValueError) as refused:
        scenario(judge=[{"check": {"not_asked_approval": "issue_refnd"}}])
    assert "judge[0].check.not_asked_approval: issue_refnd is not a tool of the scenario or its approvals: did you mean issue_refund?" in str(refused.value)
