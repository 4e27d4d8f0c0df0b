"""Deciding claims: the checks, the verdict's status, the chat judge, Checked and the simulated user."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from convy.agent import Answer, Call, Message, NoUsage, Reported, Thought, Usage
from convy.checks import Check
from convy.fakes import FakeModel
from convy.judge import ChatJudge, Checked, Claim, Confidence, Grade, Graded, NoConfidence, NoGrade, Ruling, Verdict
from convy.model import Absent, Contained, ModelFailure, Reply
from convy.prompt import STOP, Prompt
from convy.transcript import Finished, Transcript, Turn, plain
from convy.user import SimulatedUser


def turn(message: str, answer: Answer | str) -> Turn:
    said = Answer(answer) if isinstance(answer, str) else answer
    return Turn(message, said, True, 0.0, 0.0, NoUsage(), 0.0, 0.0)


def transcript(*turns: Turn) -> Transcript:
    return Transcript(turns)


SHOP = transcript(
    turn("Hi, my parcel came broken", Answer("Sorry to hear that.", steps=(Thought("look up the order"),))),
    turn(
        "The order is A1",
        Answer(
            "Let me check.",
            steps=(Call("lookup_order", {"order": "A1"}, Reported({"status": "delivered"})),),
        ),
    ),
    turn(
        "Can I get my money back?",
        Answer("A refund is on its way.", steps=(Call("refund", {"order": "A1", "amount": 20}),)),
    ),
)


# --- checks ----------------------------------------------------------------------------------


def test_called_holds_with_the_turn() -> None:
    """`called` holds when the agent called the tool, naming the first turn it did."""
    claim = Check(called="refund").claim(SHOP)
    assert claim == Claim("called refund", True, "agent called refund in turn 3", by="code")


def test_called_fails_when_never_called() -> None:
    """`called` fails when no turn called the tool; a thought with the name does not count."""
    claim = Check(called="look up the order").claim(SHOP)
    assert (claim.held, claim.reason) == (False, "agent never called look up the order; it called lookup_order, refund")


def test_called_with_matching_arguments() -> None:
    """`called` with arguments holds when a call has those arguments, whatever others it has."""
    claim = Check(called="refund", with_={"order": "A1"}).claim(SHOP)
    assert claim.claim == "called refund with order='A1'"
    assert (claim.held, claim.reason) == (True, "agent called refund in turn 3")


def test_called_with_other_arguments_fails() -> None:
    """`called` with arguments fails when the tool was called only with other values, saying how often."""
    claim = Check(called="refund", with_={"order": "B7"}).claim(SHOP)
    assert (claim.held, claim.reason) == (False, "agent called refund 1 time(s), never with order='B7': it was given (order='A1', amount=20)")


def test_called_with_a_value_of_another_kind_says_both_kinds() -> None:
    """A ``with:`` value written as text where the agent sent a number (``row: '12'`` for 12) fails,
    and the reason shows what the agent gave and which kind each is, so the check is seen to be
    written wrong rather than the agent to have erred."""
    dialogue = transcript(turn("seat 12A", Answer("done", steps=(Call("change_seat", {"seat": "12A", "row": 12}),))))
    claim = Check(called="change_seat", with_={"row": "12"}).claim(dialogue)
    assert (claim.held, claim.reason) == (
        False,
        "agent called change_seat 1 time(s), never with row='12': it was given (seat='12A', row=12) "
        "(row came as a whole number, 12, where with: has text, '12': write it as the agent sends it)",
    )


def test_called_with_shows_the_first_calls_and_cuts_long_values() -> None:
    """Of many calls, the first three are shown, each value cut to a bound."""
    calls = tuple(Call("note", {"text": "x" * 100, "n": number}) for number in range(5))
    claim = Check(called="note", with_={"n": 9}).claim(transcript(turn("go", Answer("ok", steps=calls))))
    assert claim.reason.startswith("agent called note 5 time(s), never with n=9: it was given (text='xxxx")
    assert claim.reason.endswith(", n=2); ...")
    assert claim.reason.count("...") == 4  # three values cut, and the calls left out


def test_called_with_an_argument_the_call_lacks_fails() -> None:
    """`called` with an argument the call does not have fails."""
    claim = Check(called="lookup_order", with_={"order": "A1", "email": "a@b.c"}).claim(SHOP)
    assert claim.held is False


def test_called_with_picks_the_fitting_call() -> None:
    """Among several calls of a tool, the turn named is the first whose arguments fit."""
    dialogue = transcript(
        turn("one", Answer("a", steps=(Call("refund", {"order": "X"}),))),
        turn("two", Answer("b", steps=(Call("refund", {"order": "Y"}),))),
    )
    claim = Check(called="refund", with_={"order": "Y"}).claim(dialogue)
    assert (claim.held, claim.reason) == (True, "agent called refund in turn 2")


def test_not_called_fails_naming_the_turn() -> None:
    """`not_called` fails when the agent called the tool, naming the turn."""
    claim = Check(not_called="lookup_order").claim(SHOP)
    assert claim == Claim("never called lookup_order", False, "agent called lookup_order in turn 2", by="code")


def test_not_called_holds() -> None:
    """`not_called` holds when no turn called the tool."""
    claim = Check(not_called="delete_account").claim(SHOP)
    assert (claim.held, claim.reason) == (True, "agent never called delete_account")


def test_said_holds_naming_what_and_where() -> None:
    """`said` holds on the first answer matching the pattern, quoting the match and its turn."""
    claim = Check(said=r"refund|money back").claim(SHOP)
    assert claim == Claim("said /refund|money back/", True, "agent said 'refund' in turn 3", by="code")


def test_said_reads_only_the_agent() -> None:
    """`said` does not match what the user said, nor the agent's thoughts."""
    claim = Check(said="money back|look up").claim(SHOP)
    assert (claim.held, claim.reason) == (False, "agent never said anything matching /money back|look up/")


def test_not_said_fails_naming_what_and_where() -> None:
    """`not_said` fails when an answer matches, quoting the match and its turn."""
    claim = Check(not_said="refund").claim(SHOP)
    assert claim == Claim("never said /refund/", False, "agent said 'refund' in turn 3", by="code")


def test_an_empty_match_quotes_the_reply() -> None:
    """A pattern that matched nothing at all (``x*`` at the start) quotes the reply it was found in,
    not an empty text, so the failure shows what the agent said."""
    claim = Check(not_said="x*").claim(SHOP)
    assert (claim.held, claim.reason) == (False, "agent said 'Sorry to hear that.' in turn 1")
    long = transcript(turn("Hi", Answer("word " * 20)))
    assert Check(not_said="x*").claim(long).reason == f"agent said {('word ' * 8)!r}... in turn 1".replace("'...", "...'")


def test_not_said_holds() -> None:
    """`not_said` holds when no answer matches."""
    claim = Check(not_said="(?i)guarantee").claim(SHOP)
    assert (claim.held, claim.reason) == (True, "agent never said anything matching /(?i)guarantee/")


def test_checks_on_an_empty_dialogue() -> None:
    """With no turns, `called` and `said` fail and `not_called` and `not_said` hold."""
    empty = Transcript()
    assert [Check(called="x").claim(empty).held, Check(said="x").claim(empty).held] == [False, False]
    assert [Check(not_called="x").claim(empty).held, Check(not_said="x").claim(empty).held] == [True, True]


# --- Verdict.status --------------------------------------------------------------------------


def decided(held: bool, confidence: float | None = None) -> Claim:
    return Claim("c", held, "r", NoConfidence() if confidence is None else Confidence(confidence))


@pytest.mark.parametrize(
    ("claims", "trust", "status"),
    [
        ((decided(True, 0.9), decided(True, 0.8)), 0.8, "passed"),
        ((decided(True, 0.9), decided(False, 0.9)), 0.8, "failed"),
        ((decided(True, 0.9), decided(False, 0.5)), 0.8, "not_trusted"),
        ((decided(True, 0.5), decided(True, 0.9)), 0.8, "not_trusted"),
        ((decided(True, 0.5), decided(False, 0.9)), 0.8, "failed"),
        ((decided(False, 0.5), decided(False, 0.9)), 0.8, "failed"),
        ((decided(True), decided(True)), 1.0, "passed"),
        ((decided(True), decided(False)), 1.0, "failed"),
        ((decided(True), decided(True, 0.99)), 1.0, "not_trusted"),
        ((decided(False, 0.1),), 0.0, "failed"),
    ],
    ids=[
        "all-trusted-held",
        "trusted-failure",
        "untrusted-failure",
        "untrusted-held",
        "trusted-failure-beats-doubt",
        "any-trusted-failure",
        "no-confidence-held",
        "no-confidence-failed",
        "below-full-trust",
        "trust-zero-trusts-all",
    ],
)
def test_verdict_status(claims: tuple[Claim, ...], trust: float, status: str) -> None:
    """Failed if a trusted claim failed; passed only if every claim is trusted and held; else not trusted."""
    assert Verdict(claims).status(trust) == status


def test_confidence_out_of_range() -> None:
    """A confidence outside 0..1 cannot be made."""
    with pytest.raises(ValueError, match="between 0 and 1"):
        Confidence(1.2)


# --- ChatJudge -------------------------------------------------------------------------------

POLITE = Graded("the agent was polite", ("rude", "neutral", "warm"), "neutral")


def ruled(judge: Any, claims: tuple[str | Graded, ...], dialogue: Transcript = SHOP) -> Ruling:
    return asyncio.run(judge.ruling(claims, dialogue))


def test_chat_judge_plain_claim() -> None:
    """A plain claim takes the model's pass, reason and confidence, in one request showing the dialogue."""
    model = FakeModel(['{"reason": "it offered a refund", "pass": true, "confidence": 0.9}'])
    ruling = ruled(ChatJudge(model, "judge well"), ("the agent offered a refund",))
    assert ruling.claims == (
        Claim("the agent offered a refund", True, "it offered a refund", Confidence(0.9), NoGrade()),
    )
    (request,) = model.requests
    assert [said.role for said in request] == ["system", "user"]
    assert request[0].content == "judge well"
    assert "USER: Can I get my money back?\n\nAGENT: A refund is on its way." in request[1].content
    assert "The claim: the agent offered a refund" in request[1].content


@pytest.mark.parametrize(("grade", "held"), [("rude", False), ("neutral", True), ("warm", True)])
def test_chat_judge_graded_claim(grade: str, held: bool) -> None:
    """A graded claim holds when the model's grade is at or above the scenario's pass."""
    model = FakeModel([f'{{"reason": "tone", "grade": "{grade}", "confidence": 0.7}}'])
    (claim,) = ruled(ChatJudge(model), (POLITE,)).claims
    assert claim == Claim("the agent was polite", held, "tone", Confidence(0.7), Grade(grade))
    assert "rude, neutral, warm" in model.requests[0][1].content


def test_chat_judge_one_request_per_claim_and_usage_summed() -> None:
    """Each claim is one request, and the ruling's usage is the sum of theirs."""
    model = FakeModel(
        [
            Reply('{"reason": "a", "pass": false, "confidence": 1}', Usage(10, 2)),
            Reply('{"reason": "b", "grade": "warm", "confidence": 0.5}', Usage(7, 3)),
        ]
    )
    ruling = ruled(ChatJudge(model), ("helped", POLITE))
    assert len(model.requests) == 2
    assert [claim.held for claim in ruling.claims] == [False, True]
    assert ruling.requests == (Usage(10, 2), Usage(7, 3))


def test_chat_judge_reads_json_amid_text() -> None:
    """Text around the JSON object is ignored."""
    model = FakeModel(['Here is my decision:\n```json\n{"reason": "ok", "pass": false, "confidence": 0.3}\n```\nDone.'])
    (claim,) = ruled(ChatJudge(model), ("helped",)).claims
    assert (claim.held, claim.reason, claim.confidence) == (False, "ok", Confidence(0.3))


@pytest.mark.parametrize(
    ("claim", "reply", "words"),
    [
        ("helped", "The agent helped, so it passes.", "without a JSON object"),
        ("helped", '{"reason": "x", "pass": "yes", "confidence": 0.5}', "wrong shape"),
        ("helped", '{"reason": "x", "confidence": 0.5}', "wrong shape"),
        ("helped", '{"reason": "x", "pass": true, "confidence": 1.5}', "wrong shape"),
        ("helped", '{"reason": "x", "pass": true, "confidence": -0.1}', "wrong shape"),
        ("helped", '{"reason": "x", "pass": true, "confidence": 0.5', "without a JSON object"),
        ("helped", "{" * 1_000_000, "without a JSON object"),  # quadratic for a regex: minutes, not a failure
        ("helped", "}{", "without a JSON object"),
        (POLITE, '{"reason": "x", "grade": "excellent", "confidence": 0.5}', "'excellent', not one of"),
        (POLITE, '{"reason": "x", "grade": "warm", "confidence": 2}', "wrong shape"),
        (POLITE, '{"reason": "x", "pass": true, "confidence": 0.5}', "wrong shape"),
    ],
    ids=[
        "no-json",
        "pass-not-bool",
        "pass-missing",
        "confidence-above-1",
        "confidence-below-0",
        "unclosed-json",
        "a-million-braces",
        "closed-before-opened",
        "wrong-grade",
        "graded-confidence-above-1",
        "pass-for-graded",
    ],
)
def test_chat_judge_unusable_reply(claim: str | Graded, reply: str, words: str) -> None:
    """A reply the judge cannot use is a ModelFailure, never another error."""
    with pytest.raises(ModelFailure, match=words):
        ruled(ChatJudge(FakeModel([reply])), (claim,))


# --- Checked ---------------------------------------------------------------------------------


class Scripted:
    """A judge that returns a given ruling (or raises a given error) and keeps what it was shown."""

    name = "scripted"

    def __init__(self, ruling: Any = None, error: Exception | None = None) -> None:
        self._ruling = ruling
        self._error = error
        self.shown: list[Transcript] = []

    async def ruling(self, claims: tuple[str | Graded, ...], transcript: Transcript) -> Any:
        self.shown.append(transcript)
        if self._error is not None:
            raise self._error
        return self._ruling


def test_checked_passes_a_fitting_ruling() -> None:
    """A ruling that fits the claims comes through unchanged."""
    ruling = Ruling(
        (
            Claim("helped", True, "yes", Confidence(0.8)),
            Claim(POLITE.claim, False, "curt", Confidence(0.6), Grade("rude")),
        ),
        (Usage(3, 1), Usage(2, 1)),
    )
    assert ruled(Checked(Scripted(ruling)), ("helped", POLITE)) == ruling


def test_checked_shows_only_what_was_said() -> None:
    """The judge gets the same turns without thoughts and tool calls."""
    judge = Scripted(Ruling((Claim("helped", True, "yes"),)))
    ruled(Checked(judge), ("helped",))
    (shown,) = judge.shown
    assert [(one.message, one.answer.text) for one in shown.turns] == [
        (one.message, one.answer.text) for one in SHOP.turns
    ]
    assert all(one.answer.steps == () for one in shown.turns)
    assert any(one.answer.steps for one in SHOP.turns)


@pytest.mark.parametrize(
    ("judge", "words"),
    [
        (Scripted(error=RuntimeError("socket closed")), "failed: RuntimeError: socket closed"),
        (Scripted(error=KeyError("pass")), "failed: KeyError"),
        (Scripted(None), "failed: ValidationError"),
        (Scripted({"claims": "all good"}), "failed: ValidationError"),
    ],
    ids=["runtime-error", "key-error", "returns-none", "returns-wrong-shape"],
)
def test_checked_turns_a_judge_error_into_model_failure(judge: Scripted, words: str) -> None:
    """Any error of the judge, or an answer that is no ruling, is a ModelFailure naming it."""
    with pytest.raises(ModelFailure, match=words):
        ruled(Checked(judge), ("helped",))


def test_checked_absent_judge_is_a_model_failure_with_its_reason() -> None:
    """An absent judge asked to decide fails as a ModelFailure that gives the reason it is absent."""
    with pytest.raises(ModelFailure, match="the judge is absent: no key"):
        ruled(Checked(Absent("no key")), ("helped",))


def test_checked_lets_model_failure_through() -> None:
    """A ModelFailure from the judge comes through as it was."""
    failure = ModelFailure("rate limited")
    with pytest.raises(ModelFailure) as raised:
        ruled(Checked(Scripted(error=failure)), ("helped",))
    assert raised.value is failure


@pytest.mark.parametrize(
    ("claims", "words"),
    [
        ((), "decided 0 claims of 2"),
        ((Claim("helped", True, "r"),), "decided 1 claims of 2"),
        (
            (
                Claim("helped", True, "r"),
                Claim(POLITE.claim, True, "r", grade=Grade("rude")),
                Claim("extra", True, "r"),
            ),
            "decided 3 claims of 2",
        ),
        ((Claim("helped", True, "r"), Claim(POLITE.claim, True, "r", grade=Grade("superb"))), "'superb', not one of"),
        ((Claim("helped", True, "r"), Claim(POLITE.claim, True, "r", grade=Grade("rude"))), "does not match"),
        ((Claim("helped", True, "r"), Claim(POLITE.claim, False, "r", grade=Grade("warm"))), "does not match"),
        ((Claim("helped", True, "r"), Claim(POLITE.claim, True, "r")), "no grade for the graded claim"),
        (
            (Claim("helped", True, "r", grade=Grade("rude")), Claim(POLITE.claim, True, "r", grade=Grade("warm"))),
            "a grade for the plain claim",
        ),
        (
            (Claim("other", True, "r"), Claim(POLITE.claim, True, "r", grade=Grade("warm"))),
            "answered 'other' for the claim 'helped'",
        ),
    ],
    ids=[
        "none",
        "too-few",
        "too-many",
        "unknown-grade",
        "held-below-pass",
        "failed-above-pass",
        "graded-without-grade",
        "plain-with-grade",
        "other-claim",
    ],
)
def test_checked_refuses_a_ruling_that_does_not_fit(claims: tuple[Claim, ...], words: str) -> None:
    """A ruling with the wrong number of claims, or a claim unlike the one asked, is a ModelFailure."""
    with pytest.raises(ModelFailure, match=words):
        ruled(Checked(Scripted(Ruling(claims))), ("helped", POLITE))


def test_plain_text_has_each_run_of_whitespace_of_any_kind_one_space_trimmed_and_its_marks_plain() -> None:
    """Tabs, newlines, non-breaking and other Unicode spaces count as whitespace as a regular
    expression's ``\\s`` does: each run one space, none at the ends; curly quotes made plain."""
    assert plain("  Said\t\tit\n\u00a0 \u2003twice\u3000 ") == "Said it twice"
    assert plain("\u201cIt\u2019s  `here`\u201d\r\n") == "\"It's 'here'\""
    assert plain(" \x1c\x85 ") == ""
    assert plain("one") == "one"


# --- SimulatedUser ---------------------------------------------------------------------------


def spoken(model: Any, dialogue: Transcript = Transcript()) -> Any:
    return asyncio.run(SimulatedUser(model, "You are a customer.").spoken(dialogue))


def test_simulated_user_speaks() -> None:
    """The model's reply, stripped, is the user's message, with the request's usage."""
    said = spoken(FakeModel([Reply("  Where is my parcel?\n", Usage(5, 4))]))
    assert said.move == Message("Where is my parcel?")
    assert said.usage == Usage(5, 4)


def test_simulated_user_sends_each_dialogue_its_own_messages_whatever_it_was_asked_before() -> None:
    """Asked about dialogues that go on from one another, then about one that does not (another
    attempt's, or a shorter one), the user's model is sent each dialogue's messages, whole."""
    model = FakeModel(["Go on."])
    user = SimulatedUser(model, "You are a customer.")
    first, second, other = turn("Hi", "Hello"), turn("A lamp", "Noted"), turn("Hi", "Hey there")
    for turns in ((), (first,), (first, second), (other,), (first, second), (first,), (other, second)):
        asyncio.run(user.spoken(Transcript(turns)))
    opening = model.requests[0]
    said = [[(one.role, one.content) for one in request[len(opening) :]] for request in model.requests]
    assert said == [
        [],
        [("assistant", "Hi"), ("user", "Hello")],
        [("assistant", "Hi"), ("user", "Hello"), ("assistant", "A lamp"), ("user", "Noted")],
        [("assistant", "Hi"), ("user", "Hey there")],
        [("assistant", "Hi"), ("user", "Hello"), ("assistant", "A lamp"), ("user", "Noted")],
        [("assistant", "Hi"), ("user", "Hello")],
        [("assistant", "Hi"), ("user", "Hey there"), ("assistant", "A lamp"), ("user", "Noted")],
    ]
    assert all(request[: len(opening)] == opening for request in model.requests)


def test_simulated_user_stop_is_finished() -> None:
    """A reply containing the stop mark ends the dialogue, whatever is around it."""
    said = spoken(FakeModel([f"Thanks, that is all. {STOP}"]))
    assert said.move == Finished()


@pytest.mark.parametrize("reply", ["", "   \n"])
def test_simulated_user_empty_message(reply: str) -> None:
    """An empty reply is a ModelFailure, not a message sent to the agent."""
    with pytest.raises(ModelFailure, match="empty"):
        spoken(FakeModel([reply]))


def test_simulated_user_empty_message_through_contained() -> None:
    """Through Contained, an empty reply is a ModelFailure naming the model."""
    with pytest.raises(ModelFailure, match="model quiet gave an empty reply"):
        spoken(Contained(FakeModel([""], name="quiet")))


def test_simulated_user_model_error_through_contained() -> None:
    """Through Contained, any error of the model is a ModelFailure naming the model and the error."""

    def broken(messages: Any) -> str:
        raise ConnectionError("refused")

    with pytest.raises(ModelFailure, match="model flaky failed: ConnectionError: refused"):
        spoken(Contained(FakeModel(broken, name="flaky")))


def test_simulated_user_roles_turned_round() -> None:
    """The model sees its own earlier messages as "assistant" and the agent's answers as "user"."""
    model = FakeModel(["And when?"])
    dialogue = transcript(turn("Hi", "Hello, how can I help?"), turn("My parcel is late", ""))
    spoken(model, dialogue)
    (request,) = model.requests
    assert [(said.role, said.content) for said in request] == [
        ("system", "You are a customer."),
        ("user", "[The agent is ready. Write your first message to it.]"),
        ("assistant", "Hi"),
        ("user", "Hello, how can I help?"),
        ("assistant", "My parcel is late"),
        ("user", "[the agent said nothing]"),
    ]


# --- Prompt ----------------------------------------------------------------------------------


def test_prompt_filled() -> None:
    """Every slot, spaced or not, takes its value as text; values for no slot are ignored."""
    prompt = Prompt("Order {{ order }} of {{name}}, {{  order  }}.")
    assert prompt.filled({"order": 12, "name": "Ann", "unused": True}) == "Order 12 of Ann, 12."


def test_prompt_missing_slot_names_it() -> None:
    """A slot with no value is a ValueError naming every missing slot."""
    with pytest.raises(ValueError, match=r"^no value for \{\{ name \}\}, \{\{ order \}\}$"):
        Prompt("{{ order }} for {{ name }} on {{ day }}").filled({"day": "Monday"})


# --- failures carry their usage as made ---------------------------------------------------------


def test_a_model_failures_usage_is_given_when_made_and_never_changes() -> None:
    """A ModelFailure's requests cannot be reassigned; ``after`` makes a new failure of the same kind, earlier usage first."""
    from convy.model import StillBusy

    failure = StillBusy("busy", (Usage(2, 1),))
    with pytest.raises(AttributeError):
        failure.requests = ()  # type: ignore[misc]
    later = failure.after((Usage(5, 5),))
    assert (type(later), str(later), later.requests) == (StillBusy, "busy", (Usage(5, 5), Usage(2, 1)))
    assert failure.requests == (Usage(2, 1),)


def test_checked_refusing_a_ruling_keeps_its_usage() -> None:
    """A ruling that does not fit its claims is a ModelFailure that still carries the ruling's usage."""
    with pytest.raises(ModelFailure) as raised:
        ruled(Checked(Scripted(Ruling((), (Usage(3, 1), Usage(4, 2))))), ("helped",))
    assert raised.value.requests == (Usage(3, 1), Usage(4, 2))


def test_chat_judge_busy_on_a_later_claim_keeps_the_usage_before_it() -> None:
    """A judge model whose service stays busy on the second claim is StillBusy carrying the first claim's usage."""
    from convy.busy import Busy
    from convy.model import StillBusy

    def answer(messages: Any) -> Reply:
        if "The claim: second" in messages[1].content:
            raise Busy("429")
        return Reply('{"reason": "a", "pass": true, "confidence": 1}', Usage(10, 2))

    with pytest.raises(StillBusy) as raised:
        ruled(ChatJudge(FakeModel(answer)), ("first", "second"))
    assert raised.value.requests == (Usage(10, 2),)


class Returning:
    """A model whose reply is whatever it was given, a ``Reply`` or not."""

    name = "odd"

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    async def reply(self, messages: Any) -> Any:
        return self.answer


@pytest.mark.parametrize(
    "answer",
    ["a bare string", None, {"text": 5}, Reply("hi", usage="lots")],  # type: ignore[arg-type]
    ids=["str", "none", "text-number", "usage-text"],
)
def test_contained_turns_an_answer_that_is_no_reply_into_model_failure(answer: Any) -> None:
    """A model returning something that is not a Reply is a ModelFailure naming the model, never another error."""
    with pytest.raises(ModelFailure, match="^model odd answered with something that is not a reply: "):
        asyncio.run(Contained(Returning(answer)).reply(()))


def test_a_simulated_user_contains_its_model_however_it_was_given() -> None:
    """A SimulatedUser whose model was not wrapped still fails as a ModelFailure when the model raises or returns no reply."""
    with pytest.raises(ModelFailure, match="^model odd answered with something that is not a reply: "):
        spoken(Returning("a bare string"))

    def broken(messages: Any) -> str:
        raise KeyError("choices")

    with pytest.raises(ModelFailure, match="^model flaky failed: KeyError"):
        spoken(FakeModel(broken, name="flaky"))


def test_checks_decided_without_a_verdict_are_placed_in_the_judge_list() -> None:
    """Each check a NoVerdict kept gets its place among the scenario's judge entries, twins told apart by order."""
    from convy.checks import Rule
    from convy.scenario import Scenario

    twice = Rule(check=Check(not_called="refund"))
    scenario = Scenario(id="s", script=("hi",), judge=("polite", twice, Rule(check=Check(said="hi")), twice))
    first, second = Check(not_called="refund").claim(SHOP), Check(not_called="refund").claim(SHOP)
    assert scenario.placed((first, second)) == ((2, first), (4, second))
    said = Check(said="hi").claim(SHOP)
    assert scenario.placed((said,)) == ((3, said),)
