"""Who is blamed: each participant (the agent, the user's model, the judge, the judge's model) failing
each way (raising, answering with the wrong type, answering with something unusable, staying busy
past its patience) gives its own stop and result, never another participant's; a check decided
by code that already failed makes the attempt failed whoever failed after it; and the report and
the command's line show that check.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from convy.agent import Answer, Call
from convy.bench import Bench, Limits, Plan, RunJournal, RunSpec
from convy.busy import Busy
from convy.cli import Said
from convy.dialog import STOP, ChatJudge, Failed, NoVerdict, Ruling, Transcript
from convy.fakes import FakeAgent, FakeJudge, FakeModel, MemoryJournal
from convy.model import Models, Reply
from convy.report import Summary
from convy.runs import Read
from convy.scenario import Check, Outcome, Rule, Scenario

PARTICIPANTS = ("agent", "user", "judge", "judge_model")
KINDS = ("raises", "wrong_type", "unusable", "busy")

# What each participant's failure leaves: the stop, and the result's kind (with who, for NoVerdict).
EXPECTED: dict[tuple[str, str], tuple[str, str]] = {
    **{("agent", kind): ("agent_failed", "failed") for kind in ("raises", "wrong_type", "unusable")},
    ("agent", "busy"): ("agent_busy", "busy"),
    **{("user", kind): ("model_failed", "user") for kind in ("raises", "wrong_type", "unusable")},
    ("user", "busy"): ("model_failed", "busy"),
    **{(judge, kind): ("finished", "judge") for judge in ("judge", "judge_model") for kind in ("raises", "wrong_type", "unusable")},
    **{(judge, "busy"): ("finished", "busy") for judge in ("judge", "judge_model")},
}


class Returning:
    """A model or a judge that gives back whatever ``answer`` returns, of whatever type, or raises."""

    name = "odd"

    def __init__(self, answer: Callable[[], Any]) -> None:
        self.answer = answer

    async def reply(self, messages: Any) -> Any:
        return self.answer()

    async def ruling(self, claims: Any, transcript: Transcript) -> Any:
        return self.answer()


def failing(kind: str, unusable: Any, wrong: Any = "a bare string") -> Callable[[], Any]:
    """What a participant does when it fails ``kind``-wise: ``wrong`` is its answer of the wrong
    type, ``unusable`` its answer of the right type that convy cannot use."""

    def answer() -> Any:
        match kind:
            case "raises":
                raise RuntimeError("it broke")
            case "wrong_type":
                return wrong
            case "unusable":
                return unusable
            case _:
                raise Busy("429", 3600.0)

    return answer


def played(participant: str, kind: str, forbidden: bool) -> tuple[Outcome, FakeAgent]:
    """One attempt: a scripted message, then the simulated user, then the judge; the agent calls
    the forbidden tool in its first answer when ``forbidden``, and ``participant`` fails ``kind``-wise."""

    def answer(text: str) -> Any:
        if text == "refund me":
            return Answer("Sorry, refunded.", steps=(Call("refund", {"order": "A1"}),) if forbidden else ())
        if participant == "agent":
            return failing(kind, Answer("x", steps=(Call("refund", {"amount": complex(1, 2)}),)), wrong=42)()
        return "You are welcome."

    agent = FakeAgent(answer)
    user: Any = FakeModel(["And then?", f"Thanks. {STOP}"], "user-model")
    judge: Any = FakeJudge()
    match participant:
        case "user":
            user = Returning(failing(kind, Reply("   ")))
        case "judge":
            judge = Returning(failing(kind, Ruling(())))
        case "judge_model":
            judge = ChatJudge(Returning(failing(kind, Reply("I think it was polite."))))
        case _:
            pass
    chosen = Scenario(
        id="refund",
        script=("refund me",),
        user="You want a refund.",
        judge=("the agent was polite", Rule(check=Check(not_called="refund"))),
        max_turns=3,
    )
    patience = Limits(agent_patience=0, user_patience=0, judge_patience=0)
    journal = MemoryJournal()
    asyncio.run(Bench(agent, Models(user, judge), patience).run(Plan((chosen,)), journal))
    (outcome,) = journal.outcomes
    return outcome, agent


def kind_of(outcome: Outcome) -> str:
    match outcome.result:
        case Failed():
            return "failed"
        case NoVerdict(who=who):
            return who
        case _:
            return "verdict"


@pytest.mark.parametrize("forbidden", [False, True], ids=["checks-held", "check-failed"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("participant", PARTICIPANTS)
def test_each_failure_is_blamed_on_its_own_participant(participant: str, kind: str, forbidden: bool) -> None:
    """Each participant's failure gives its own stop and result; an already failed check makes the attempt failed."""
    outcome, agent = played(participant, kind, forbidden)
    assert (outcome.stop, kind_of(outcome)) == EXPECTED[(participant, kind)]
    if forbidden or participant == "agent" and kind != "busy":
        assert outcome.status(1.0) == "failed"
    else:
        assert outcome.status(1.0) == "not_judged"
    assert len(agent.messages) == len(set(agent.messages)), "no message is sent to the agent twice"
    assert (agent.opened, agent.closed) == (1, 1)


@pytest.mark.parametrize("participant", ["user", "judge", "judge_model"])
def test_a_model_failure_shows_the_check_that_failed(participant: str) -> None:
    """When a model fails after a check failed, the outcome holds that check, decided by code, with its reason."""
    outcome, _ = played(participant, "raises", forbidden=True)
    match outcome.result:
        case NoVerdict(checks=checks):
            assert [(claim.claim, claim.held, claim.reason, claim.by) for claim in checks] == [
                ("never called refund", False, "agent called refund in turn 1", "code")
            ]
        case other:
            pytest.fail(f"expected NoVerdict, got {other}")


def test_the_report_and_the_line_show_the_check_that_failed(tmp_path: Path) -> None:
    """A run whose judge failed after a check failed counts the attempt failed "by a claim", marks the
    check failed, tallies it, shows it in the scenario window, and names it on the command's line."""

    def broken(claim: str, transcript: Transcript) -> bool:
        raise RuntimeError("judge crashed")

    chosen = Scenario(
        id="refund", script=("refund me",), judge=("the agent was polite", Rule(check=Check(not_called="refund")))
    )
    bench = Bench(FakeAgent(lambda text: Answer("Refunded.", steps=(Call("refund"),))), Models(judge=FakeJudge(broken)))
    spec = RunSpec(id="one", agent="fake", scenarios=(chosen,), attempts=2, limits=bench.limits)
    journal = RunJournal(tmp_path / "results" / "fake" / "one")
    kept = asyncio.run(journal.play(spec, bench))
    read = Read(journal.folder, journal.run(), kept.outcomes, kept.broken, False)
    view = Summary(read).view()
    (scenario,) = view.scenarios
    assert (view.passed, view.judged, view.not_judged_total) == (0, 2, 0)
    assert [(attempt.status, attempt.why) for attempt in scenario.attempts] == [("failed", "claim")] * 2
    assert [attempt.marks for attempt in scenario.attempts] == [["failed"]] * 2
    assert [(claim.text, claim.held, claim.decided) for claim in scenario.claims] == [("never called refund", 0, 2)]
    window = Summary(read).dialogues()["refund"][0]
    assert [(decision.claim, decision.held) for decision in window.decisions] == [
        ("never called refund", False),
        ("not judged (judge)", False),
    ]
    line = Said(kept.outcomes[0], 1.0).text()
    assert "never called refund: agent called refund in turn 1 (then judge failed: " in line

