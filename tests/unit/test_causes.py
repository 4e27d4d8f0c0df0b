"""Whose an attempt that did not pass was: each kind of outcome, built by hand and read from lines
as old convy wrote them, the rules' order when several apply, and the breakdown and its shift
between two runs as the command says them."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
from support.clock import in_virtual_time
from support.standin import Drop, StandIn, Status, WrongShape

from convy.agent import Answer, Call, Message, NoUsage, Reported, TimeLimited
from convy.attempt import Attempt
from convy.bench import Bench
from convy.causes import Breakdown, Cause, Shift
from convy.fakes import FakeJudge
from convy.http import JsonEndpoint
from convy.httpagents import ChatAgent
from convy.judge import ChatJudge, Claim, Confidence, Failed, Models, NoVerdict, Verdict
from convy.junit import JUnitReport
from convy.model import OpenAiModel
from convy.outcome import Outcome
from convy.records import Limits, RunSpec
from convy.report import Summary
from convy.runs import Runs
from convy.scenario import Scenario, Stop
from convy.storage import RunJournal
from convy.tools import toolbox
from convy.transcript import Transcript, Turn, UserFault

TRUST = 0.7
HELD = Claim("The agent helps.", True, "it did", Confidence(0.9))
FAILED = Claim("The agent helps.", False, "it did not", Confidence(0.9))
UNSURE = Claim("The agent helps.", False, "maybe not", Confidence(0.5))
SPLIT = Claim("The agent helps.", True, "one each", doubt="split")
UNQUOTED = Claim("The agent helps.", True, "it did", Confidence(0.9), doubt="unquoted")
CHECK_HELD = Claim("never said /sorry/", True, "never said", by="code")
CHECK_FAILED = Claim("never said /sorry/", False, "said in turn 1", by="code")
LEAKED = UserFault("leaked", 2, "its instructions, word for word")


def outcome(result: Verdict | Failed | NoVerdict, stop: Stop = "finished", transcript: Transcript = Transcript(), **fields: Any) -> Outcome:
    return Outcome("s", 1, "2026-01-01T00:00:00.000+00:00", 1.0, transcript, stop, result, **fields)


def cause(result: Verdict | Failed | NoVerdict, stop: Stop = "finished", trust: float = TRUST, **fields: Any) -> Cause | None:
    return Attempt(outcome(result, stop, **fields), trust).cause()


@pytest.mark.parametrize(
    ("result", "stop", "expected"),
    [
        (Verdict((HELD, CHECK_HELD)), "finished", None),
        (Verdict((FAILED,)), "finished", "agent"),  # a trusted claim failed
        (Verdict((HELD, CHECK_FAILED)), "finished", "agent"),  # a check failed
        (Failed("RuntimeError: boom", "hi"), "agent_failed", "agent"),
        (Failed("no answer within 30 s"), "time_limit", "agent"),
        (NoVerdict("user", "model u gave an empty reply"), "model_failed", "user"),
        (NoVerdict("user", "model u failed: HttpFailure: 502", service=True), "model_failed", "service"),
        (NoVerdict("judge", "the judge answered without a JSON object"), "finished", "judge"),
        (NoVerdict("judge", "model j failed: HttpFailure: could not connect", service=True), "finished", "service"),
        (NoVerdict("busy", "the agent stayed busy: 429"), "agent_busy", "service"),
        (NoVerdict("busy", "model u: 429"), "model_failed", "service"),
        (Verdict((UNSURE,)), "finished", "judge"),  # below trust: not trusted
        (Verdict((SPLIT,)), "finished", "judge"),
        (Verdict((UNQUOTED,)), "finished", "judge"),
        # A check code could still decide failed: certain, whatever the models did.
        (NoVerdict("user", "model u failed", (CHECK_FAILED,)), "model_failed", "agent"),
        (NoVerdict("busy", "the agent stayed busy", (CHECK_FAILED,), service=False), "agent_busy", "agent"),
        (NoVerdict("judge", "the judge failed", (CHECK_HELD,), service=True), "finished", "service"),
    ],
)
def test_each_kind_of_outcome_has_its_cause(result: Verdict | Failed | NoVerdict, stop: Stop, expected: Cause | None) -> None:
    """A cause for every attempt that did not pass, none for one that passed."""
    assert cause(result, stop) == expected
    assert (Attempt(outcome(result, stop), TRUST).status() == "passed") == (expected is None)


def test_the_trust_a_run_is_read_with_decides_a_judges_cause() -> None:
    """A claim of 0.5 confidence that failed is the judge's below a trust of 0.7, the agent's at 0.5:
    the cause is found on read, through the trust it is read with."""
    assert cause(Verdict((UNSURE,)), trust=0.7) == "judge"
    assert cause(Verdict((UNSURE,)), trust=0.5) == "agent"


@pytest.mark.parametrize(
    ("result", "stop", "expected"),
    [
        # The user misbehaved: its dialogue is no fair test, whatever came after it ...
        (Verdict((HELD,)), "finished", "user"),  # (passed, so no cause, when its faults are counted)
        (Verdict((FAILED,)), "finished", "user"),  # a faulted dialogue counted: the judge's failure is not the agent's
        (Verdict((UNSURE,)), "finished", "user"),
        (NoVerdict("judge", "the judge failed"), "finished", "user"),
        (NoVerdict("judge", "HttpFailure", service=True), "finished", "user"),
        (NoVerdict("busy", "model j: 429"), "finished", "user"),
        # ... but the agent failing, or a check failing, stays the agent's.
        (Failed("RuntimeError: boom", "hi"), "agent_failed", "agent"),
        (Verdict((HELD, CHECK_FAILED)), "finished", "agent"),
        (NoVerdict("user", "model u failed", (CHECK_FAILED,)), "model_failed", "agent"),
    ],
)
def test_a_user_that_misbehaved_comes_after_the_agents_certain_failures(
    result: Verdict | Failed | NoVerdict, stop: Stop, expected: Cause
) -> None:
    """With the simulated user's faults recorded, the rules' order decides."""
    found = Attempt(outcome(result, stop, user_faults=(LEAKED,)), TRUST)
    # A run makes such an attempt not judged (the user's checks); kept counted (user_faults =
    # "count"), one whose claims all held passed, and has no cause: a cause is only ever given to
    # an attempt that did not pass.
    assert found.cause() == (None if found.status() == "passed" else expected)


def test_old_lines_without_the_new_fields_read_with_a_cause() -> None:
    """A line written before ``service`` and ``user_faults``: its model's failure is its model's."""
    line = (
        b'{"scenario":"s","attempt":1,"started":"2025-01-01T00:00:00.000+00:00","seconds":1.0,"transcript":{},'
        b'"stop":"model_failed","result":{"type":"no_verdict","who":"user","reason":"model u failed: HttpFailure: 502"}}'
    )
    read = msgspec.json.decode(line, type=Outcome)
    assert read.user_faults == () and isinstance(read.result, NoVerdict) and read.result.service is False
    assert Attempt(read, TRUST).cause() == "user"
    judged = line.replace(b'"who":"user"', b'"who":"judge"').replace(b"model_failed", b"finished")
    assert Attempt(msgspec.json.decode(judged, type=Outcome), TRUST).cause() == "judge"
    failed = (
        b'{"scenario":"s","attempt":1,"started":"2025-01-01T00:00:00.000+00:00","seconds":1.0,"transcript":{},'
        b'"stop":"agent_failed","result":{"type":"failed","reason":"boom"}}'
    )
    assert Attempt(msgspec.json.decode(failed, type=Outcome), TRUST).cause() == "agent"


def test_the_service_mark_is_kept_in_the_line_only_when_set() -> None:
    """``service`` is written when true and left out otherwise, so old readers' lines stay as they were."""
    assert b"service" not in msgspec.json.encode(NoVerdict("user", "x"))
    kept = msgspec.json.encode(NoVerdict("user", "x", service=True))
    assert b'"service":true' in kept
    assert msgspec.json.decode(kept, type=NoVerdict).service is True


def test_the_breakdown_counts_and_shares() -> None:
    """Counts and shares among the attempts not passed; every cause present, in order."""
    breakdown = Breakdown(("agent", None, "agent", "user", None, "service", "agent", "tool"))
    assert breakdown.counts == {"agent": 3, "user": 1, "judge": 0, "service": 1, "tool": 1}
    assert (breakdown.not_passed(), breakdown.attempts) == (6, 8)
    assert breakdown.share("agent") == pytest.approx(0.5) and breakdown.share("judge") == 0
    assert [(view.cause, view.count, view.share) for view in breakdown.views()] == [
        ("agent", 3, pytest.approx(0.5)),
        ("user", 1, pytest.approx(1 / 6)),
        ("judge", 0, 0.0),
        ("service", 1, pytest.approx(1 / 6)),
        ("tool", 1, pytest.approx(1 / 6)),
    ]
    assert breakdown.text() == "6 not passed, by cause: agent 3 (50%), user 1 (17%), judge 0, service 1 (17%), tool 1 (17%)"
    assert Breakdown(("agent",)).text() == "1 not passed, by cause: agent 1 (100%), user 0, judge 0, service 0, tool 0"
    everything = Breakdown((None, None))
    assert everything.text() == "" and everything.share("agent") is None


def causes(**counts: int) -> tuple[Cause | None, ...]:
    return tuple(cause for name, count in counts.items() for cause in [None if name == "passed" else name] * count)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("base", "candidate", "said"),
    [
        # 20 attempts each: 2 → 8 not passed, 5 more of them the user's: mostly simulated-user trouble.
        (causes(passed=18, agent=2), causes(passed=12, agent=3, user=5), ["the candidate's drop is mostly simulated-user trouble"]),
        # 2 → 8 not passed, 3 more the user's: half, not more than half: nothing said.
        (causes(passed=18, agent=2), causes(passed=12, agent=5, user=3), []),
        # The judge's share: 4 more of 6.
        (causes(passed=18, judge=2), causes(passed=12, judge=6, agent=2), ["the candidate's drop is mostly judge trouble"]),
        # A rise that is mostly the user misbehaving less.
        (causes(passed=10, user=8, agent=2), causes(passed=18, agent=2), ["the candidate's rise is mostly less simulated-user trouble"]),
        # The agent's own drop: nothing to say of the user or the judge.
        (causes(passed=18, user=2), causes(passed=10, user=2, agent=8), []),
        # The same share not passed: no change to speak of.
        (causes(passed=18, user=2), causes(passed=18, agent=2), []),
        # Runs of different sizes are taken as shares: 1 of 10 → 10 of 40 not passed, 8 of 40 the user's.
        (causes(passed=9, agent=1), causes(passed=30, agent=2, user=8), ["the candidate's drop is mostly simulated-user trouble"]),
    ],
)
def test_a_shift_says_when_a_change_is_mostly_the_users_or_the_judges(
    base: tuple[Cause | None, ...], candidate: tuple[Cause | None, ...], said: list[str]
) -> None:
    sentences = Shift(Breakdown(base), Breakdown(candidate)).sentences()
    # Each sentence up to its colon, the attempts passed in brackets left out.
    assert [re.sub(r" \(attempts passed, [^)]*\)", "", sentence.split(":")[0]) for sentence in sentences] == said


def test_a_shifts_sentence_gives_the_counts() -> None:
    (sentence,) = Shift(Breakdown(causes(passed=18, agent=2)), Breakdown(causes(passed=12, agent=3, user=5))).sentences()
    assert sentence == (
        "the candidate's drop (attempts passed, 18 of 20 → 12 of 20) is mostly simulated-user trouble: "
        "not passed for the simulated user: 0 of 20 (0%) → 5 of 20 (25%)"
    )


def test_a_run_with_service_faults_injected_over_http_has_each_cause(tmp_path: Path) -> None:
    """A run on three stand-ins (the agent's, the user model's, the judge's), each given faults:
    the agent's own 500 and dropped connection are the agent's; the user model's 502 and dropped
    connection, the judge's 500 and its 429 past patience are the service's; a reply that is no chat
    completion is the user's or the judge's, whose model gave it. Read back from the run folder."""

    def user(request: dict[str, Any]) -> str:
        said = sum(1 for message in request["messages"] if message["role"] == "assistant")
        return "Where is my order?" if said < 1 else "###STOP###"

    verdict = json.dumps({"reason": "it answered", "pass": True, "confidence": 0.9})
    scenario = Scenario(id="where", user="You want your order.", judge=("The agent answers.",))
    limits = Limits(agent_places=1, user_places=1, judge_places=1, judge_patience=0.5)
    spec = RunSpec(id="faulted", agent="shop", scenarios=(scenario,), attempts=9, limits=limits, trust=0.5)
    with StandIn(reply=lambda request: "It ships tomorrow.") as agent, StandIn(reply=user) as users, StandIn(reply=lambda request: verdict) as judge:
        users.faults(Status(502), Drop(), WrongShape())
        agent.faults(Status(500), Drop())
        judge.faults(Status(500), Status(429, retry_after="1"), WrongShape())
        bench = Bench(
            ChatAgent(JsonEndpoint(agent.url + "/v1/chat/completions"), "agent-model"),
            Models(user=OpenAiModel("user-model", users.url + "/v1"), judge=ChatJudge(OpenAiModel("judge-model", judge.url + "/v1"))),
            limits,
        )
        asyncio.run(RunJournal(tmp_path / "shop" / "faulted").play(spec, bench))
    (run,), _ = Runs(tmp_path).read()
    causes = {attempt.outcome.attempt: attempt.cause() for attempt in Summary(run).attempts()}
    # One worker plays the attempts in order, and each stand-in hands its faults out in order.
    assert causes == {1: "service", 2: "service", 3: "user", 4: "agent", 5: "agent", 6: "service", 7: "service", 8: "judge", 9: None}
    view = Summary(run).view()
    assert [(one.cause, one.count) for one in view.causes] == [("agent", 2), ("user", 1), ("judge", 1), ("service", 4), ("tool", 0)]
    assert view.not_passed == 8
    (scenario,) = view.scenarios
    assert scenario.causes == {"service": 4, "user": 1, "agent": 2, "judge": 1}  # for the filter by cause
    assert {row.attempt: row.cause for row in scenario.attempts} == {number: cause or "" for number, cause in causes.items()}
    dialogues = Summary(run).dialogues()["where"]
    assert [dialogue.cause for dialogue in dialogues] == [causes[number] or "" for number in range(1, 10)]  # the window's badge
    assert Summary(run).breakdown().text() == "8 not passed, by cause: agent 2 (25%), user 1 (12%), judge 1 (12%), service 4 (50%), tool 0"


# A tool the scenario made fail (issue 29): its tools' calls, as the turn the agent broke off keeps them.
REFUSED = Call("change_seat", {"seat": "1A"}, error="seat 1A is taken", source="fixture")
HELD_BACK = Call("change_seat", {"seat": "1A"}, error="cut off: the call's answer was held 2 s", source="fixture")
ANSWERED = Call("change_seat", {"seat": "14C"}, Reported({"seat": "14C"}), source="fixture")
CRASH = Failed("ToolError: seat 1A is taken", "move me to 1A")


def turn(*steps: Call) -> Turn:
    return Turn("move me", Answer("Done.", steps=steps), True, 0.0, 0.0, NoUsage(), 0.0, 1.0)


@pytest.mark.parametrize(
    ("steps", "stop", "expected"),
    [
        ((REFUSED,), "agent_failed", "tool"),  # an error: answer, and the agent raised in that turn
        ((msgspec.structs.replace(REFUSED, source="default"),), "agent_failed", "tool"),  # the default's error
        ((HELD_BACK,), "time_limit", "tool"),  # a delay: held the answer past the turn's time limit
        ((ANSWERED, REFUSED), "agent_failed", "tool"),  # one call of the turn failed on purpose is enough
        ((ANSWERED,), "agent_failed", "agent"),  # the tool answered: the agent broke by itself
        ((), "agent_failed", "agent"),
        # Calls that failed by no answer the scenario declared: nobody planted those.
        ((msgspec.structs.replace(REFUSED, source="unanswered"),), "agent_failed", "agent"),
        ((msgspec.structs.replace(REFUSED, source="invalid"),), "agent_failed", "agent"),
        ((msgspec.structs.replace(REFUSED, source="unknown"),), "agent_failed", "agent"),
        ((msgspec.structs.replace(REFUSED, source="claimed"),), "agent_failed", "agent"),
        ((msgspec.structs.replace(REFUSED, source=""),), "agent_failed", "agent"),  # the agent's own tool
    ],
)
def test_an_agent_that_failed_in_a_turn_a_scenarios_tool_failed_on_purpose_is_the_tools(
    steps: tuple[Call, ...], stop: Stop, expected: Cause
) -> None:
    """The turn the agent broke off holds a call the scenario's tools failed on purpose (an answer
    it declared, with an error): the planted failure is the cause, not the agent; read unsaid, the
    same (the calls the cause rests on are kept)."""
    found = outcome(CRASH, stop, agent_ending=Answer("", steps=steps))
    assert Attempt(found, TRUST).cause() == expected
    assert Attempt(found.unsaid(), TRUST).cause() == expected
    assert Attempt(msgspec.json.decode(msgspec.json.encode(found), type=Outcome), TRUST).cause() == expected


def test_a_planted_failure_the_agent_came_through_in_an_earlier_turn_leaves_a_later_failure_the_agents() -> None:
    """Turn 1's tool failed on purpose and the agent answered; it broke in turn 2, whose calls the
    tools answered: only the turn it broke off counts."""
    earlier = Transcript((turn(REFUSED),))
    assert cause(CRASH, "agent_failed", transcript=earlier, agent_ending=Answer("", steps=(ANSWERED,))) == "agent"
    assert cause(CRASH, "agent_failed", transcript=earlier) == "agent"  # and when the broken-off turn said nothing


@pytest.mark.parametrize(
    "result",
    [
        Verdict((HELD, CHECK_FAILED)),  # a check decided by code failed
        Verdict((FAILED,)),  # a trusted claim failed: say, of how the agent met the tool's error
        NoVerdict("judge", "the judge failed", (CHECK_FAILED,)),
    ],
)
def test_a_check_or_a_claim_that_failed_beside_a_planted_failure_stays_the_agents(result: Verdict | NoVerdict) -> None:
    """How the agent met a failure the scenario planted is what such a scenario tests: a check or
    a trusted claim that failed is the agent's, whichever turn the tool failed in."""
    assert cause(result, transcript=Transcript((turn(REFUSED),)), agent_ending=Answer("", steps=(REFUSED,))) == "agent"


class Careless:
    """An agent that calls the scenario's tool and lets its error go: a ``ToolError`` raised on."""

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[Careless]:
        yield self

    async def turn(self, message: Message) -> Answer:
        await toolbox().call("change_seat", {"seat": message.text.rsplit(" ", 1)[-1]})
        return Answer("Done.")


def seats(*script: str) -> Scenario:
    tool = {
        "name": "change_seat",
        "parameters": {"type": "object", "properties": {"seat": {"type": "string"}}, "required": ["seat"]},
        "answers": [
            {"when": {"seat": "1A"}, "error": "seat {{ seat }} is taken"},
            {"when": {"seat": "2B"}, "result": "ok", "delay": 5},
        ],
        "default": {"result": "ok"},
    }
    return msgspec.convert({"id": "seat", "script": list(script), "tools": [tool], "judge": ["The agent moves the seat."]}, Scenario)


def test_a_run_whose_tool_errs_on_purpose_and_whose_agent_lets_the_error_go_is_the_tools() -> None:
    """End to end: the scenario's fixture answers with an error, the agent lets the ``ToolError``
    escape and fails: the cause is the tool; a delay past the turn's time limit likewise; a later
    failure after a planted one the agent came through, and one on a call no answer declared, are
    the agent's."""

    def played(scenario: Scenario, turn_limit: float = 120.0) -> Outcome:
        agent = TimeLimited(Careless(), turn=turn_limit)
        return in_virtual_time(lambda: scenario.outcome(1, agent, None, FakeJudge(), 3))

    refused = played(seats("move me to 1A"))
    assert (refused.stop, refused.agent_ending is not None) == ("agent_failed", True)
    assert Attempt(refused, TRUST).cause() == "tool"
    held = played(seats("move me to 2B"), turn_limit=1.0)
    assert held.stop == "time_limit" and Attempt(held, TRUST).cause() == "tool"
    # Turn 1 moves the seat; turn 2's planted error breaks the agent: still that turn's, the tool's.
    assert Attempt(played(seats("move me to 3C", "move me to 1A")), TRUST).cause() == "tool"
    undeclared = msgspec.convert(
        {
            "id": "seat",
            "script": ["move me to 1A"],
            "tools": [
                {
                    "name": "change_seat",
                    "parameters": {"type": "object", "properties": {"seat": {"type": "string"}}},
                    "answers": [{"when": {"seat": "9F"}, "result": "ok"}],
                }
            ],
            "judge": ["The agent moves the seat."],
        },
        Scenario,
    )
    unanswered = played(undeclared)  # no answer fits 1A: an error nobody planted
    assert unanswered.stop == "agent_failed" and Attempt(unanswered, TRUST).cause() == "agent"


def test_a_run_read_unsaid_counts_the_tools_cause_and_junit_names_the_tool(tmp_path: Path) -> None:
    """The run's folder read back unsaid (as the end of a run and ``convy report`` read it): the
    broken-off turn keeps the calls the cause rests on, so the breakdown and JUnit say the tool."""
    bench = Bench(Careless(), Models(judge=FakeJudge()))
    spec = RunSpec(id="careless", agent="careless", scenarios=(seats("move me to 1A"),), attempts=2, limits=bench.limits)
    asyncio.run(RunJournal(tmp_path / "careless" / "careless").play(spec, bench))
    (run,), _ = Runs(tmp_path, unsaid=True).read()
    summary = Summary(run)
    assert [attempt.cause() for attempt in summary.attempts()] == ["tool", "tool"]
    assert summary.breakdown().text() == "2 not passed, by cause: agent 0, user 0, judge 0, service 0, tool 2 (100%)"
    said = JUnitReport((summary,)).xml().decode()
    assert "agent_failed (a tool the scenario made fail: change_seat): " in said and "seat 1A is taken" in said
