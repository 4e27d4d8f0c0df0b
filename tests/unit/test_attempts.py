"""Playing attempts: how a dialogue runs and stops, what each failure leaves, and the bench's places."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
from support.clock import in_virtual_time

from convy.agent import AgentFailure, Answer, Call, Message
from convy.bench import Bench
from convy.checks import Check, Rule
from convy.fakes import FakeAgent, FakeJudge, FakeModel, MemoryJournal
from convy.judge import Claim, Failed, Graded, Models, NoVerdict, Ruling, Verdict
from convy.outcome import Outcome
from convy.pattern import Pattern
from convy.plan import Plan
from convy.prompt import STOP
from convy.records import Limits
from convy.scenario import Scenario
from convy.transcript import Transcript


def scenario(id: str = "s", **fields: Any) -> Scenario:
    fields.setdefault("judge", ("the agent helped",))
    return Scenario(id=id, **fields)


def played(bench: Bench, *scenarios: Scenario, attempts: int = 1) -> list[Outcome]:
    """The outcomes of the plan, played in virtual time (tests/support/clock.py): a time limit runs out, and
    attempts overlap, the same way on a fast or a loaded machine."""
    journal = MemoryJournal()
    in_virtual_time(lambda: bench.run(Plan(scenarios, attempts), journal))
    return sorted(journal.outcomes, key=lambda outcome: (outcome.scenario, outcome.attempt))


def heard(text: str) -> str:
    return f"heard: {text}"


def refused(message: str) -> Any:
    def broken(messages: Any) -> str:
        raise ConnectionError(message)

    return broken


# --- how a dialogue runs and stops -----------------------------------------------------------


def test_scripted_scenario_plays_the_script_then_finishes() -> None:
    """A scenario with only a script sends exactly its messages, then stops "finished" and is judged."""
    agent, judge = FakeAgent(heard), FakeJudge()
    (outcome,) = played(Bench(agent, Models(judge=judge)), scenario(script=("hello", "my order is late", "thanks")))
    assert agent.messages == ["hello", "my order is late", "thanks"]
    assert [(turn.message, turn.answer.text, turn.scripted) for turn in outcome.transcript.turns] == [
        ("hello", "heard: hello", True),
        ("my order is late", "heard: my order is late", True),
        ("thanks", "heard: thanks", True),
    ]
    assert outcome.stop == "finished"
    assert (agent.opened, agent.closed, judge.rulings) == (1, 1, 1)
    assert outcome.status(1.0) == "passed"


def test_scripted_scenario_at_its_limit_still_finishes() -> None:
    """A script exactly as long as max_turns is played whole and ends "finished", not "max_turns"."""
    (outcome,) = played(Bench(FakeAgent(heard), Models(judge=FakeJudge())), scenario(script=("a", "b"), max_turns=2))
    assert (len(outcome.transcript.turns), outcome.stop) == (2, "finished")


def test_max_turns_stops_the_simulated_user() -> None:
    """A user that never stops is cut off after max_turns messages, with stop "max_turns"."""
    agent, user = FakeAgent(heard), FakeModel(["Again, where is it?"])
    (outcome,) = played(Bench(agent, Models(user, FakeJudge())), scenario(user="You want your parcel.", max_turns=3))
    assert outcome.stop == "max_turns"
    assert len(outcome.transcript.turns) == 3
    assert agent.messages == ["Again, where is it?"] * 3
    assert len(user.requests) == 3


def test_max_turns_counts_scripted_messages_too() -> None:
    """The limit counts every user message, scripted or simulated; the bench's limit serves if the scenario has none."""
    user = FakeModel(["more"])
    bench = Bench(FakeAgent(heard), Models(user, FakeJudge()), Limits(max_turns=4))
    (outcome,) = played(bench, scenario(script=("one", "two"), user="You keep talking."))
    assert [turn.scripted for turn in outcome.transcript.turns] == [True, True, False, False]
    assert (outcome.stop, len(user.requests)) == ("max_turns", 2)


def test_scenario_max_turns_wins_over_the_bench() -> None:
    """A scenario's own max_turns replaces the bench's."""
    bench = Bench(FakeAgent(heard), Models(FakeModel(["more"]), FakeJudge()), Limits(max_turns=9))
    (outcome,) = played(bench, scenario(user="You keep talking.", max_turns=2))
    assert (len(outcome.transcript.turns), outcome.stop) == (2, "max_turns")


def test_simulated_user_speaks_after_the_script() -> None:
    """After the script the simulated user takes over, told its instructions, until it says stop."""
    user = FakeModel(["It came broken.", f"Thanks. {STOP}"])
    agent = FakeAgent(heard)
    chosen = scenario(script=("Hello",), user="Your order {{ order }} came broken.", vars={"order": "A1"})
    (outcome,) = played(Bench(agent, Models(user, FakeJudge())), chosen)
    assert [(turn.message, turn.scripted) for turn in outcome.transcript.turns] == [
        ("Hello", True),
        ("It came broken.", False),
    ]
    assert outcome.stop == "finished"
    assert agent.messages == ["Hello", "It came broken."]
    first = user.requests[0]
    assert "Your order A1 came broken." in first[0].content
    assert [(said.role, said.content) for said in first[-2:]] == [("assistant", "Hello"), ("user", "heard: Hello")]


def test_checks_only_scenario_needs_no_judge() -> None:
    """A scenario whose claims are all checks is decided by code; the absent judge is never asked."""
    chosen = scenario(script=("I want a refund",), judge=(Rule(check=Check(said="refund")),))
    (outcome,) = played(Bench(FakeAgent(heard), Models()), chosen)
    assert outcome.result == Verdict((Check(said="refund").claim(outcome.transcript),))
    assert outcome.status(1.0) == "passed"


def test_judge_and_checks_keep_the_scenario_order() -> None:
    """The verdict lists judged claims and checks in the order the scenario gives them."""
    polite = Rule(claim="polite", grades=("rude", "warm"), pass_="warm")
    chosen = scenario(script=("hi",), judge=("helped", Rule(check=Check(not_said="sorry")), polite))
    judge = FakeJudge(held=lambda claim, transcript: claim == "helped")
    (outcome,) = played(Bench(FakeAgent(heard), Models(judge=judge)), chosen)
    match outcome.result:
        case Verdict(claims=claims):
            assert [(claim.claim, claim.held, claim.by) for claim in claims] == [
                ("helped", True, "judge"),
                ("never said /sorry/", True, "code"),
                ("polite", False, "judge"),
            ]
        case other:
            pytest.fail(f"expected a verdict, got {other}")
    assert outcome.status(1.0) == "failed"


# --- the agent failing -----------------------------------------------------------------------


def breaks_on(word: str, error: Exception) -> Any:
    def answer(text: str) -> str:
        if text == word:
            raise error
        return heard(text)

    return answer


def test_agent_raising_fails_the_attempt_without_the_judge() -> None:
    """An agent's exception fails the attempt: stop "agent_failed", the message recorded, the judge not asked."""
    agent, judge = FakeAgent(breaks_on("two", RuntimeError("boom"))), FakeJudge()
    (outcome,) = played(Bench(agent, Models(judge=judge)), scenario(script=("one", "two", "three")))
    assert outcome.result == Failed("RuntimeError: boom", "two")
    assert outcome.stop == "agent_failed"
    assert [turn.message for turn in outcome.transcript.turns] == ["one"]
    assert judge.rulings == 0
    assert agent.closed == 1
    assert outcome.status(0.0) == "failed"


def test_agent_failure_keeps_its_own_words() -> None:
    """An AgentFailure's text is the reason as it is, without the exception's name."""
    agent = FakeAgent(breaks_on("one", AgentFailure("the backend is down")))
    (outcome,) = played(Bench(agent, Models(judge=FakeJudge())), scenario(script=("one",)))
    assert outcome.result == Failed("the backend is down", "one")


class BrokenOpen:
    """An agent that cannot open a conversation."""

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[Any]:
        raise OSError("no connection")
        yield  # pragma: no cover


def test_agent_failing_to_open() -> None:
    """An agent that fails while opening fails the attempt with no message and no turn."""
    judge = FakeJudge()
    (outcome,) = played(Bench(BrokenOpen(), Models(judge=judge)), scenario(script=("hello",)))
    assert outcome.result == Failed("OSError: no connection", "")
    assert (outcome.stop, outcome.transcript, judge.rulings) == ("agent_failed", Transcript(), 0)


def test_a_line_leaves_out_the_times_of_parts_the_attempt_did_not_have() -> None:
    """An attempt's line in attempts.jsonl holds no time of a part it did not have, as its lines
    always have: no simulated user's ending in a scripted dialogue, no opening or closing when the
    agent never opened, no judgement when a failed attempt is re-judged (it is not judged again).
    msgspec leaves a field out only when it holds its default object itself (``omit_defaults``
    compares by identity): a ``0.0`` written in a module other than ``Outcome``'s is written out."""
    chosen = scenario(script=("hello",))
    (scripted,) = played(Bench(FakeAgent(heard), Models(judge=FakeJudge())), chosen)
    (broken,) = played(Bench(BrokenOpen(), Models(judge=FakeJudge())), chosen)
    rejudged = asyncio.run(chosen.rejudged(broken, FakeJudge()))
    fields = [set(msgspec.json.decode(msgspec.json.encode(outcome))) for outcome in (scripted, broken, rejudged)]
    assert "user_ending_seconds" not in fields[0]
    assert {"open_seconds", "close_seconds", "user_ending_seconds"}.isdisjoint(fields[1])
    assert {"open_seconds", "close_seconds", "user_ending_seconds", "judge_seconds"}.isdisjoint(fields[2])


@pytest.mark.parametrize(
    "answer",
    [
        Answer(text=object()),  # type: ignore[arg-type]
        Answer(text=5),  # type: ignore[arg-type]
        Answer("done", steps=(Call("refund", {"amount": complex(1, 2)}),)),
        Answer("done", steps=("a step",)),  # type: ignore[arg-type]
        42,
        None,
    ],
    ids=["text-object", "text-number", "call-argument-complex", "step-text", "number", "none"],
)
def test_malformed_answer_fails_that_attempt_only(answer: Any) -> None:
    """An answer convy cannot keep fails its attempt; the run goes on and plays the next scenario."""
    agent = FakeAgent(lambda text: answer if text == "bad" else heard(text))
    judge = FakeJudge()
    bad, good = played(Bench(agent, Models(judge=judge)), scenario("a", script=("bad",)), scenario("b", script=("ok",)))
    assert bad.stop == "agent_failed"
    match bad.result:
        case Failed(reason=reason, message=message):
            assert reason.startswith("the agent's answer cannot be kept: ")
            assert message == "bad"
        case other:
            pytest.fail(f"expected Failed, got {other}")
    assert good.status(1.0) == "passed"
    assert judge.rulings == 1


def test_set_in_call_arguments_is_kept_as_a_list() -> None:
    """A set in a call's arguments is written as a JSON list, so the attempt keeps it as a list."""
    agent = FakeAgent(lambda text: Answer("tagged", steps=(Call("tag", {"ids": {3}}),)))
    chosen = scenario(script=("tag it",), judge=(Rule(check=Check(called="tag", with_={"ids": [3]})),))
    (outcome,) = played(Bench(agent, Models()), chosen)
    (call,) = outcome.transcript.turns[0].answer.steps
    assert call == Call("tag", {"ids": [3]})
    assert outcome.status(1.0) == "passed"


class Slow:
    """An agent that opens, or answers, only after ``seconds``."""

    def __init__(self, open_seconds: float = 0.0, turn_seconds: float = 0.0) -> None:
        self.open_seconds = open_seconds
        self.turn_seconds = turn_seconds

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[Slow]:
        await asyncio.sleep(self.open_seconds)
        yield self

    async def turn(self, message: Message) -> Answer:
        await asyncio.sleep(self.turn_seconds)
        return Answer("late")


def test_turn_time_limit() -> None:
    """An agent slower than the turn limit fails the attempt with stop "time_limit", the judge not asked."""
    judge = FakeJudge()
    bench = Bench(Slow(turn_seconds=30), Models(judge=judge), Limits(turn_seconds=0.05))
    (outcome,) = played(bench, scenario(script=("hello", "again")))
    assert outcome.stop == "time_limit"
    assert outcome.result == Failed("the agent did not answer within 0.05 s", "hello")
    assert (outcome.transcript, judge.rulings) == (Transcript(), 0)
    assert outcome.status(0.0) == "failed"


def test_open_time_limit() -> None:
    """An agent slower than the open limit fails the attempt with stop "time_limit" before any message."""
    bench = Bench(Slow(open_seconds=30), Models(judge=FakeJudge()), Limits(open_seconds=0.05))
    (outcome,) = played(bench, scenario(script=("hello",)))
    assert outcome.stop == "time_limit"
    assert outcome.result == Failed("the agent did not open a conversation within 0.05 s", "")


# --- the models failing ----------------------------------------------------------------------


def test_user_model_failing_gives_no_verdict() -> None:
    """A failing user model leaves the attempt without a verdict (who="user"), the scripted turns kept."""
    judge = FakeJudge()
    bench = Bench(FakeAgent(heard), Models(FakeModel(refused("refused"), name="flaky"), judge))
    (outcome,) = played(bench, scenario(script=("hello",), user="You want a refund."))
    assert outcome.result == NoVerdict("user", "model flaky failed: ConnectionError: refused")
    assert outcome.stop == "model_failed"
    assert [turn.message for turn in outcome.transcript.turns] == ["hello"]
    assert judge.rulings == 0
    assert outcome.status(0.0) == "not_judged"


def test_user_model_empty_reply_gives_no_verdict() -> None:
    """An empty reply of the user model is the model's failure, not a message to the agent."""
    agent = FakeAgent(heard)
    (outcome,) = played(Bench(agent, Models(FakeModel([" "], name="quiet"), FakeJudge())), scenario(user="You wait."))
    assert outcome.result == NoVerdict("user", "model quiet gave an empty reply")
    assert (outcome.stop, agent.messages) == ("model_failed", [])


def test_judge_failing_gives_no_verdict() -> None:
    """A judge that fails leaves a finished dialogue without a verdict (who="judge")."""

    def broken(claim: str, transcript: Transcript) -> bool:
        raise RuntimeError("judge crashed")

    (outcome,) = played(Bench(FakeAgent(heard), Models(judge=FakeJudge(broken))), scenario(script=("hello",)))
    match outcome.result:
        case NoVerdict(who=who, reason=reason):
            assert who == "judge"
            assert "RuntimeError: judge crashed" in reason
        case other:
            pytest.fail(f"expected NoVerdict, got {other}")
    assert (outcome.stop, len(outcome.transcript.turns)) == ("finished", 1)
    assert outcome.status(0.0) == "not_judged"


def test_untrusted_verdict_is_not_judged() -> None:
    """A verdict whose claims are less confident than the trust counts as not judged."""
    (outcome,) = played(Bench(FakeAgent(heard), Models(judge=FakeJudge(confidence=0.6))), scenario(script=("hi",)))
    assert (outcome.status(0.5), outcome.status(0.7)) == ("passed", "not_judged")


# --- many attempts at once -------------------------------------------------------------------


class Counting:
    """An agent that numbers its conversations and counts how many are open at once."""

    def __init__(self) -> None:
        self.opened = 0
        self.open = 0
        self.peak = 0
        self.closed: set[int] = set()

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[Numbered]:
        self.opened += 1
        number = self.opened
        self.open += 1
        self.peak = max(self.peak, self.open)
        try:
            yield Numbered(number)
        finally:
            self.open -= 1
            self.closed.add(number)


class Numbered:
    """A conversation that says its number in every answer."""

    def __init__(self, number: int) -> None:
        self.number = number

    async def turn(self, message: Message) -> Answer:
        await asyncio.sleep(0.01)
        return Answer(f"conversation {self.number}: {message.text}")


class Watching:
    """A judge that notes, for the conversation it judges, whether the agent had closed it."""

    name = "watching"

    def __init__(self, agent: Counting) -> None:
        self.agent = agent
        self.seen: dict[int, bool] = {}

    async def ruling(self, claims: tuple[str | Graded, ...], transcript: Transcript) -> Ruling:
        number = int(transcript.turns[0].answer.text.split(":")[0].removeprefix("conversation "))
        self.seen[number] = number in self.agent.closed
        return await FakeJudge().ruling(claims, transcript)


@pytest.mark.parametrize("places", [1, 2, 3])
def test_open_conversations_stay_within_agent_places(places: int) -> None:
    """However many attempts, no more conversations are open at once than the agent has places, and that many are."""
    agent = Counting()
    bench = Bench(agent, Models(judge=Watching(agent)), Limits(agent_places=places, judge_places=4))
    scenarios = [scenario(f"s{number}", script=("hello", "bye")) for number in range(4)]
    outcomes = played(bench, *scenarios, attempts=3)
    assert len(outcomes) == 12
    assert agent.peak == places
    assert agent.open == 0


def test_judge_asked_only_after_the_conversation_closed() -> None:
    """Every attempt's judge is asked once its conversation with the agent has closed."""
    agent = Counting()
    judge = Watching(agent)
    outcomes = played(
        Bench(agent, Models(judge=judge), Limits(agent_places=2, judge_places=2)),
        *[scenario(f"s{number}", script=("hello",)) for number in range(3)],
        attempts=2,
    )
    assert sorted(judge.seen) == list(range(1, 7))
    assert all(judge.seen.values())
    assert all(outcome.status(1.0) == "passed" for outcome in outcomes)


def test_broken_attempts_do_not_stop_the_others() -> None:
    """An agent failing in one scenario leaves every other planned attempt played and recorded."""
    agent = FakeAgent(breaks_on("explode", ValueError("kaboom")))
    bench = Bench(agent, Models(judge=FakeJudge()), Limits(agent_places=2))
    outcomes = played(
        bench,
        scenario("a", script=("hello",)),
        scenario("b", script=("hi", "explode")),
        scenario("c", script=("good day",)),
        attempts=2,
    )
    assert [(outcome.scenario, outcome.attempt, outcome.status(1.0)) for outcome in outcomes] == [
        ("a", 1, "passed"),
        ("a", 2, "passed"),
        ("b", 1, "failed"),
        ("b", 2, "failed"),
        ("c", 1, "passed"),
        ("c", 2, "passed"),
    ]
    assert (agent.opened, agent.closed) == (6, 6)


def test_the_agents_own_timeout_is_its_failure_not_convys_time_limit() -> None:
    """A TimeoutError raised by the agent's own code fails the attempt as agent_failed, not time_limit."""
    from contextlib import asynccontextmanager

    class Impatient:
        @asynccontextmanager
        async def conversation(self):  # type: ignore[no-untyped-def]
            yield self

        async def turn(self, message: Message) -> Answer:
            async with asyncio.timeout(0.001):
                await asyncio.sleep(1)
            return Answer("never")

    journal = MemoryJournal()
    scenario = msgspec.convert({"id": "s", "script": ["hello"], "judge": [{"check": {"said": "."}}]}, Scenario)
    asyncio.run(Bench(Impatient(), Models(), Limits(turn_seconds=30)).run(Plan((scenario,), 1), journal))
    (outcome,) = journal.outcomes
    assert outcome.stop == "agent_failed"
    assert isinstance(outcome.result, Failed)


def test_a_judge_answer_convy_cannot_use_still_counts_its_tokens() -> None:
    """When the judge's second claim gets an unusable answer, the attempt is not judged and both
    requests' usage is kept: the one decided before, and the unusable one."""
    from convy.agent import Usage
    from convy.judge import ChatJudge
    from convy.model import Reply

    replies = [
        Reply('{"reason": "yes", "pass": true, "confidence": 0.9}', Usage(100, 10)),
        Reply("I think it was fine.", Usage(120, 7)),
    ]
    judge = ChatJudge(FakeModel(replies, "judge-model"))
    scenario = msgspec.convert({"id": "s", "script": ["hello"], "judge": ["one", "two"]}, Scenario)
    journal = MemoryJournal()
    asyncio.run(Bench(FakeAgent(lambda text: "hi"), Models(judge=judge)).run(Plan((scenario,), 1), journal))
    (outcome,) = journal.outcomes
    assert isinstance(outcome.result, NoVerdict) and outcome.result.who == "judge"
    assert outcome.judge_requests == (Usage(100, 10), Usage(120, 7))


def test_an_empty_message_of_the_simulated_user_still_counts_its_tokens() -> None:
    """A simulated user's reply that is empty fails the attempt's dialogue but keeps its usage."""
    from convy.agent import Usage
    from convy.model import Reply

    scenario = msgspec.convert({"id": "s", "user": "You are Dana.", "judge": [{"check": {"said": "."}}]}, Scenario)
    journal = MemoryJournal()
    user = FakeModel([Reply("   ", Usage(50, 0))], "user-model")
    asyncio.run(Bench(FakeAgent(lambda text: "hi"), Models(user=user)).run(Plan((scenario,), 1), journal))
    (outcome,) = journal.outcomes
    assert outcome.stop == "model_failed"
    assert outcome.user_ending == (Usage(50, 0),)


# --- checks decided by code count whatever the models do ---------------------------------------


def refunding(text: str) -> Answer:
    return Answer("Sorry, refunded.", steps=(Call("refund", {"order": "A1"}),))


def crashing_judge(claim: str, transcript: Transcript) -> bool:
    raise RuntimeError("judge crashed")


FORBIDDEN = Rule(check=Check(not_called="refund"))


def test_a_failed_check_fails_the_attempt_when_the_judge_fails() -> None:
    """A check that failed makes the attempt failed though the judge then failed, and the outcome names that check."""
    chosen = scenario(script=("refund me",), judge=("the agent was polite", FORBIDDEN))
    (outcome,) = played(Bench(FakeAgent(refunding), Models(judge=FakeJudge(crashing_judge))), chosen)
    assert outcome.status(1.0) == "failed"
    assert outcome.stop == "finished"
    match outcome.result:
        case NoVerdict(who="judge", checks=checks):
            assert checks == (Claim("never called refund", False, "agent called refund in turn 1", by="code"),)
        case other:
            pytest.fail(f"expected the judge's NoVerdict with its checks, got {other}")


def test_checks_that_held_leave_the_attempt_not_judged_when_the_judge_fails() -> None:
    """When the judge fails and every check held, the attempt is not judged, its checks kept in the outcome."""
    chosen = scenario(script=("hello",), judge=("the agent was polite", Rule(check=Check(said="heard"))))
    (outcome,) = played(Bench(FakeAgent(heard), Models(judge=FakeJudge(crashing_judge))), chosen)
    assert outcome.status(1.0) == "not_judged"
    match outcome.result:
        case NoVerdict(who="judge", checks=(Claim(held=True, by="code"),)):
            pass
        case other:
            pytest.fail(f"expected the judge's NoVerdict with one held check, got {other}")


def test_a_failed_check_fails_the_attempt_when_the_user_model_fails() -> None:
    """When the user's model fails mid-dialogue, a check already broken fails the attempt; one not yet met is undecided."""
    chosen = scenario(
        script=("refund me",),
        user="You want more.",
        judge=(
            FORBIDDEN,
            Rule(check=Check(called="lookup_order")),
            Rule(check=Check(said="Sorry")),
            Rule(check=Check(not_said="goodbye")),
        ),
    )
    bench = Bench(FakeAgent(refunding), Models(FakeModel(refused("refused"), name="flaky"), FakeJudge()))
    (outcome,) = played(bench, chosen)
    assert (outcome.stop, outcome.status(1.0)) == ("model_failed", "failed")
    match outcome.result:
        case NoVerdict(who="user", checks=checks):
            assert [(claim.claim, claim.held) for claim in checks] == [
                ("never called refund", False),
                ("said /Sorry/", True),
            ]
        case other:
            pytest.fail(f"expected the user's NoVerdict with its checks, got {other}")


def test_a_check_not_yet_met_is_not_failed_when_the_dialogue_is_cut_short() -> None:
    """A called/said check that has not held when the user's model fails leaves the attempt not judged, not failed."""
    chosen = scenario(script=("hello",), user="You want more.", judge=(Rule(check=Check(called="refund")),))
    bench = Bench(FakeAgent(heard), Models(FakeModel(refused("refused"), name="flaky"), FakeJudge()))
    (outcome,) = played(bench, chosen)
    assert outcome.status(1.0) == "not_judged"
    assert outcome.result == NoVerdict("user", "model flaky failed: ConnectionError: refused")


def test_a_failed_check_fails_the_attempt_when_the_agent_stays_busy() -> None:
    """A check already broken before the agent's service stayed busy fails the attempt."""
    from convy.busy import Busy

    def answer(text: str) -> Answer:
        if text == "again":
            raise Busy("429", 3600.0)
        return refunding(text)

    chosen = scenario(script=("refund me", "again"), judge=(FORBIDDEN,))
    (outcome,) = played(Bench(FakeAgent(answer), Models(), Limits(agent_patience=0)), chosen)
    assert (outcome.stop, outcome.status(1.0)) == ("agent_busy", "failed")


def test_an_older_not_judged_line_reads_with_no_checks() -> None:
    """An attempt kept before checks were recorded with a NoVerdict reads back with no checks and stays not judged."""
    line = (
        b'{"scenario":"s","attempt":1,"started":"2026-01-01T00:00:00.000+00:00","seconds":1.0,'
        b'"transcript":{"turns":[]},"stop":"model_failed",'
        b'"result":{"type":"no_verdict","who":"user","reason":"model flaky failed"}}'
    )
    outcome = msgspec.json.decode(line, type=Outcome)
    assert outcome.result == NoVerdict("user", "model flaky failed", ())
    assert outcome.status(0.0) == "not_judged"


# --- each participant answers for its own errors ---------------------------------------------


class Wrong:
    """A model that answers with something that is not a ``Reply``."""

    name = "wrong"

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    async def reply(self, messages: Any) -> Any:
        return self.answer


@pytest.mark.parametrize("answer", ["a bare string", None, {"text": 5}], ids=["str", "none", "text-number"])
def test_a_user_model_returning_no_reply_is_the_users_failure(answer: Any) -> None:
    """A user model that returns something that is not a reply leaves the attempt without a verdict (who="user")."""
    agent = FakeAgent(heard)
    (outcome,) = played(Bench(agent, Models(Wrong(answer), FakeJudge())), scenario(user="You want a refund."))
    assert outcome.stop == "model_failed"
    match outcome.result:
        case NoVerdict(who="user", reason=reason):
            assert reason.startswith("model wrong answered with something that is not a reply: ")
        case other:
            pytest.fail(f"expected the user's NoVerdict, got {other}")
    assert agent.messages == []


def test_a_bug_in_convys_own_loop_is_not_the_agents_failure() -> None:
    """An error of convy's own code during a dialogue propagates, instead of being recorded as the agent's failure."""
    from convy.agent import TimeLimited

    class Buggy:
        async def spoken(self, transcript: Transcript) -> Any:
            raise RuntimeError("a bug in convy")

    chosen = scenario(user="You want a refund.")
    with pytest.raises(RuntimeError, match="a bug in convy"):
        asyncio.run(chosen.outcome(1, TimeLimited(FakeAgent(heard)), Buggy(), FakeJudge(), 3))


def test_an_agent_raising_a_model_failure_is_the_agents_failure() -> None:
    """A ModelFailure raised by the agent's own code (an agent built on a model) fails the attempt as the agent's."""
    from convy.model import ModelFailure

    agent = FakeAgent(breaks_on("hello", ModelFailure("the agent's own model broke")))
    (outcome,) = played(Bench(agent, Models(FakeModel(["more"]), FakeJudge())), scenario(script=("hello",), user="u"))
    assert outcome.stop == "agent_failed"
    assert outcome.result == Failed("ModelFailure: the agent's own model broke", "hello")


def test_a_chat_judges_model_returning_no_reply_keeps_the_usage_before_it() -> None:
    """A judge model that returns a bare string on the second claim is the judge's failure, the first claim's usage kept."""
    from convy.agent import Usage
    from convy.judge import ChatJudge
    from convy.model import Reply

    answers = iter([Reply('{"reason": "yes", "pass": true, "confidence": 0.9}', Usage(100, 10)), "not a reply"])

    class Flaky:
        name = "flaky-judge"

        async def reply(self, messages: Any) -> Any:
            return next(answers)

    chosen = scenario(script=("hello",), judge=("one", "two"))
    (outcome,) = played(Bench(FakeAgent(heard), Models(judge=ChatJudge(Flaky()))), chosen)
    assert outcome.stop == "finished"
    match outcome.result:
        case NoVerdict(who="judge"):
            pass
        case other:
            pytest.fail(f"expected the judge's NoVerdict, got {other}")
    assert outcome.judge_requests == (Usage(100, 10),)


# --- checks against hostile answers ------------------------------------------------------------

# An answer of about 100 KB built so that Python's backtracking ``re`` would take time exponential
# in it for each pattern below: a long run of a's, of x's and of digits, each followed by what
# makes the match fail at the end.
HOSTILE = "a" * 40_000 + "!" + "x" * 30_000 + "1" * 30_000 + "b"
# (pattern, whether the answer holds a match)
# (None of them matches an empty reply: such a pattern is refused where the scenario is read.)
CATASTROPHIC = [(r"(a+)+$", False), (r"(a|a)*[a-z]$", True), (r"(x+x+)+y", False), (r"(\d*)*\d*b$", True)]


@pytest.mark.timeout(300)  # a hang guard: with a backtracking matcher this never ends
def test_catastrophic_patterns_decide_against_a_hostile_answer(tmp_path: Path) -> None:
    """`convy run` decides said/not_said checks whose patterns backtrack catastrophically in Python's re, against a ~100 KB hostile answer, each as its text says."""
    project = tmp_path / "project"
    (project / "agents").mkdir(parents=True)
    (project / "agents" / "hostile.py").write_text(
        f"from convy.fakes import FakeAgent\n\nagent = FakeAgent(lambda text: {HOSTILE!r})\n", encoding="utf-8"
    )
    (project / "scenarios").mkdir()
    checks = [f"  - check: {{{field}: '{pattern}'}}\n" for pattern, _ in CATASTROPHIC for field in ("said", "not_said")]
    (project / "scenarios" / "hostile.yaml").write_text("script: [hello]\njudge:\n" + "".join(checks), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "convy", "run", "-k", "1", "--fail-under", "100%"],
        cwd=project, capture_output=True, text=True, timeout=240,
    )
    # Half the checks fail, by design: the run ends, judged, below the pass rate asked for.
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    (attempts,) = (project / "results" / "hostile").glob("*/attempts.jsonl")
    (outcome,) = [msgspec.json.decode(line, type=Outcome) for line in attempts.read_bytes().splitlines()]
    assert [turn.answer.text for turn in outcome.transcript.turns] == [HOSTILE]
    match outcome.result:
        case Verdict(claims=claims):
            decided = [(claim.claim, claim.held) for claim in claims]
        case other:
            pytest.fail(f"expected a verdict, got {other}")
    expected = []
    for pattern, matches in CATASTROPHIC:
        expected += [(f"said /{pattern}/", matches), (f"never said /{pattern}/", not matches)]
    assert decided == expected


def decided(answer: str, *checks: Check) -> list[tuple[str, bool, str]]:
    """Each check decided on a one-turn dialogue whose answer is ``answer``: its claim, held, reason."""
    chosen = scenario(script=("hello",), judge=tuple(Rule(check=check) for check in checks))
    (outcome,) = played(Bench(FakeAgent(lambda text: answer), Models()), chosen)
    match outcome.result:
        case Verdict(claims=claims):
            return [(claim.claim, claim.held, claim.reason) for claim in claims]
        case other:
            pytest.fail(f"expected a verdict, got {other}")


def test_the_docs_patterns_decide_as_written() -> None:
    """The patterns of docs/scenarios.md and of the template's scenarios, (?i) among them, hold and fail on the text they are about."""
    answer = "Sorry, your kettle is on its way back. A REFUND of $42 follows; I can't help with the rest."
    assert decided(
        answer,
        Check(said="(?i)refund"),
        Check(not_said="(?i)guarantee"),
        Check(said=r"(?i)refund of \$\d"),
        Check(said="(?i)can(no|')t help"),
        Check(said="(?i)on its way|in transit"),
        Check(not_said="(?i)guarantee|promise|will arrive (today|tomorrow)"),
        Check(said="(?i)order number"),
    ) == [
        ("said /(?i)refund/", True, "agent said 'REFUND' in turn 1"),
        ("never said /(?i)guarantee/", True, "agent never said anything matching /(?i)guarantee/"),
        ("said /(?i)refund of \\$\\d/", True, "agent said 'REFUND of $4' in turn 1"),
        ("said /(?i)can(no|')t help/", True, "agent said \"can't help\" in turn 1"),
        ("said /(?i)on its way|in transit/", True, "agent said 'on its way' in turn 1"),
        (
            "never said /(?i)guarantee|promise|will arrive (today|tomorrow)/",
            True,
            "agent never said anything matching /(?i)guarantee|promise|will arrive (today|tomorrow)/",
        ),
        ("said /(?i)order number/", False, "agent never said anything matching /(?i)order number/"),
    ]


def test_a_dollar_is_the_very_end_of_the_answer() -> None:
    """RE2's $ is the end of the text, not also the place before a final newline as in Python's re; (?m)$ is any line's end."""
    checks = (Check(said="refund$"), Check(said=r"refund\n?$"), Check(said="(?m)refund$"))
    assert [held for _, held, _ in decided("refund\n", *checks)] == [False, True, True]


def test_a_lone_surrogate_in_the_text_is_stepped_over() -> None:
    """A transcript may hold a lone surrogate (a run refuses such an answer before its checks, a caller of
    Check.claim may not): the pattern is matched around it, not an error."""
    assert Pattern("é r.*").found("caf\ud800é refund") == "é refund"
    assert Pattern("x").found("\ud800") is None


@pytest.mark.parametrize("text", ["order", "Order", "2 lamps", " lamp ", "a"])
@pytest.mark.parametrize(
    "said", ["Your order for 2 lamps", "ORDER", "caf\ud800\u00e9 order", "", "x\norder\n", "the lamp is 2 lamps away"]
)
def test_a_pattern_of_letters_digits_and_spaces_is_found_as_re2_finds_it(text: str, said: str) -> None:
    """Such a pattern is looked for without RE2 (``pattern._LITERAL``): what it finds is what RE2
    finds, in any text, a lone surrogate in it or not."""
    pattern = Pattern(text)
    match = pattern._compiled().search(said.encode("utf-8", "surrogatepass"))
    assert pattern.found(said) == (None if match is None else match.group(0).decode("utf-8", "replace"))


def test_a_search_past_re2s_memory_writes_nothing_to_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    """A pattern whose automaton outgrows RE2's memory on a 1 MB answer is still decided, and RE2 logs nothing to the process's stderr."""
    import random

    answer = "".join(random.Random(7).choices("ab", k=1_000_000))
    checks = (Check(not_said="(a|b)*a(a|b){18}c"), Check(said="b(a|b){18}$"))
    assert [held for _, held, _ in decided(answer, *checks)] == [True, True]
    assert capfd.readouterr().err == ""


# A line of attempts.jsonl as convy wrote it before fields at their defaults were left out (made
# by the code of 96c076a): every field written, a call's unreported result and time, a claim's
# judge and grade, a wait's reason.
WHOLE_LINE = (
    b'{"scenario":"refunds/lamp","attempt":1,"started":"2026-01-05T10:00:00.000+00:00","seconds":1.5,"transcript":'
    b'{"turns":[{"message":"Hello, my lamp is broken.","answer":{"text":"Sorry to hear that. Which order?","usage":'
    b'{"type":"usage","input":120,"output":14},"steps":[{"type":"thought","text":"look it up"},{"type":"call","name":'
    b'"lookup_order","arguments":{"item":"lamp"},"result":{"type":"not_reported"},"seconds":{"type":"not_reported"}}]},'
    b'"scripted":true,"user_start":0.001,"user_seconds":0.0,"user_usage":{"type":"no_usage"},"agent_start":0.001,'
    b'"agent_seconds":0.25},{"message":"Order A-1234.","answer":{"text":"Refund sent.","usage":{"type":"no_usage"},'
    b'"steps":[]},"scripted":false,"user_start":0.26,"user_seconds":0.5,"user_usage":{"type":"usage","input":300,'
    b'"output":9},"agent_start":0.76,"agent_seconds":0.1}]},"stop":"finished","result":{"type":"verdict","claims":'
    b'[{"claim":"The agent was polite.","held":true,"reason":"it was","confidence":{"type":"confidence","value":0.9},'
    b'"grade":{"type":"no_grade"},"by":"judge"},{"claim":"called lookup_order","held":true,"reason":"agent called '
    b'lookup_order in turn 1","confidence":{"type":"no_confidence"},"grade":{"type":"no_grade"},"by":"code"}]},'
    b'"open_seconds":0.0,"close_seconds":0.0,"judge_start":0.0,"judge_seconds":0.0,"judge_requests":[{"type":"usage",'
    b'"input":500,"output":20}],"waits":[{"who":"agent","start":0.2,"seconds":0.05,"why":"busy"}],"user_ending":[],'
    b'"user_ending_seconds":0.0}'
)


def test_a_run_written_with_every_field_reads_as_one_written_without_its_defaults(tmp_path: Path) -> None:
    """An attempt is written without the fields at their defaults, and a run written before,
    with all of them, still reads back the same attempts."""
    from convy.agent import NoUsage, Thought, Usage
    from convy.judge import Confidence
    from convy.records import RunSpec
    from convy.storage import RunJournal
    from convy.transcript import Turn
    from convy.waits import Wait

    scenario = Scenario(id="refunds/lamp", script=("Hello, my lamp is broken.", "Order A-1234."), judge=("The agent was polite.",))
    spec = RunSpec(id="old", agent="shop", scenarios=(scenario,), attempts=2, limits=Limits())
    steps = (Thought("look it up"), Call("lookup_order", {"item": "lamp"}))
    made = Outcome(
        "refunds/lamp",
        1,
        "2026-01-05T10:00:00.000+00:00",
        1.5,
        Transcript(
            (
                Turn("Hello, my lamp is broken.", Answer("Sorry to hear that. Which order?", Usage(120, 14), steps), True, 0.001, 0.0, NoUsage(), 0.001, 0.25),
                Turn("Order A-1234.", Answer("Refund sent."), False, 0.26, 0.5, Usage(300, 9), 0.76, 0.1),
            )
        ),
        "finished",
        Verdict(
            (
                Claim("The agent was polite.", True, "it was", Confidence(0.9)),
                Claim("called lookup_order", True, "agent called lookup_order in turn 1", by="code"),
            )
        ),
        judge_requests=(Usage(500, 20),),
        waits=(Wait("agent", 0.2, 0.05),),
    )
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    (old / "attempts.jsonl").write_bytes(WHOLE_LINE + b"\n")
    RunJournal(new).record(made)
    line = (new / "attempts.jsonl").read_bytes()

    assert RunJournal(old).kept(spec).outcomes == (made,)
    assert RunJournal(new).kept(spec).outcomes == (made,)
    assert len(line) < 0.8 * len(WHOLE_LINE)
    for default in (b"not_reported", b"no_grade", b'"by":"judge"', b'"why":"busy"', b"user_ending\"", b'"steps":[]'):
        assert default not in line
    assert b'"by":"code"' in line and b"no_usage" in line and b'"value":0.9' in line  # what is not a default stays


def test_an_attempt_start_is_written_as_datetime_writes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # The second's text is kept between attempts: each moment, in a new second or the same one,
    # reads as isoformat writes it to the millisecond.
    import time
    from datetime import UTC, datetime

    from convy.waits import _Starts

    starts = _Starts()
    for moment in (1_764_652_799.9996, 1_764_652_800.0, 1_764_652_800.5004, 1_764_652_801.25, 86_400.001):
        monkeypatch.setattr(time, "time", lambda moment=moment: moment)
        assert starts.now() == datetime.fromtimestamp(moment, UTC).isoformat(timespec="milliseconds")
