"""Whose an attempt that did not pass was: each kind of outcome, built by hand and read from lines
as old convy wrote them, the rules' order when several apply, and the breakdown and its shift
between two runs as the command says them."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from support.standin import Drop, StandIn, Status, WrongShape

from convy.attempt import Attempt
from convy.bench import Bench
from convy.causes import Breakdown, Cause, Shift
from convy.http import JsonEndpoint
from convy.httpagents import ChatAgent
from convy.judge import ChatJudge, Claim, Confidence, Failed, Models, NoVerdict, Verdict
from convy.model import OpenAiModel
from convy.outcome import Outcome
from convy.records import Limits, RunSpec
from convy.report import Summary
from convy.runs import Runs
from convy.scenario import Scenario, Stop
from convy.storage import RunJournal
from convy.transcript import Transcript, UserFault

TRUST = 0.7
HELD = Claim("The agent helps.", True, "it did", Confidence(0.9))
FAILED = Claim("The agent helps.", False, "it did not", Confidence(0.9))
UNSURE = Claim("The agent helps.", False, "maybe not", Confidence(0.5))
SPLIT = Claim("The agent helps.", True, "one each", doubt="split")
UNQUOTED = Claim("The agent helps.", True, "it did", Confidence(0.9), doubt="unquoted")
CHECK_HELD = Claim("never said /sorry/", True, "never said", by="code")
CHECK_FAILED = Claim("never said /sorry/", False, "said in turn 1", by="code")
LEAKED = UserFault("leaked", 2, "its instructions, word for word")


def outcome(result: Verdict | Failed | NoVerdict, stop: Stop = "finished", **fields: Any) -> Outcome:
    return Outcome("s", 1, "2026-01-01T00:00:00.000+00:00", 1.0, Transcript(), stop, result, **fields)


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
    breakdown = Breakdown(("agent", None, "agent", "user", None, "service", "agent"))
    assert breakdown.counts == {"agent": 3, "user": 1, "judge": 0, "service": 1}
    assert (breakdown.not_passed(), breakdown.attempts) == (5, 7)
    assert breakdown.share("agent") == pytest.approx(0.6) and breakdown.share("judge") == 0
    assert [(view.cause, view.count, view.share) for view in breakdown.views()] == [
        ("agent", 3, pytest.approx(0.6)),
        ("user", 1, pytest.approx(0.2)),
        ("judge", 0, 0.0),
        ("service", 1, pytest.approx(0.2)),
    ]
    assert breakdown.text() == "5 not passed, by cause: agent 3 (60%), user 1 (20%), judge 0, service 1 (20%)"
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
    assert [(one.cause, one.count) for one in view.causes] == [("agent", 2), ("user", 1), ("judge", 1), ("service", 4)]
    assert view.not_passed == 8
    (scenario,) = view.scenarios
    assert scenario.causes == {"service": 4, "user": 1, "agent": 2, "judge": 1}  # for the filter by cause
    assert {row.attempt: row.cause for row in scenario.attempts} == {number: cause or "" for number, cause in causes.items()}
    dialogues = Summary(run).dialogues()["where"]
    assert [dialogue.cause for dialogue in dialogues] == [causes[number] or "" for number in range(1, 10)]  # the window's badge
    assert Summary(run).breakdown().text() == "8 not passed, by cause: agent 2 (25%), user 1 (12%), judge 1 (12%), service 4 (50%)"
