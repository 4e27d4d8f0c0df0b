"""The simulated user checked (issue 11): the checks code decides on every attempt with a simulated
user, the checks a model decides when asked (``user_checks``), and what a fault does to the attempt
(``user_faults``): not judged with the fault as its reason, or counted."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from support.standin import StandIn, judged

from convy import Answer, Bench, ChatJudge, Models, OpenAiModel, Plan, RunJournal, RunSpec, Scenario, Turn, Usage
from convy.fakes import BadUser, FakeAgent, FakeJudge, FakeModel, MemoryJournal, RuledModel
from convy.judge import NoVerdict, Verdict
from convy.model import Reply, Said
from convy.outcome import Outcome
from convy.problems import ConfigurationError
from convy.prompt import Prompt
from convy.settings import ProjectSettings
from convy.transcript import Transcript, Unchecked, UserFault
from convy.user import Conduct, Instructions, UserChecks, UserReview

TOLD = (
    "You are playing a person who is talking to a customer-facing AI agent, in order to test it. "
    "Who you are: Dana Moreau, whose kettle arrived broken last Tuesday from the Lyon warehouse. "
    "Ask for a refund of order A-1234 and do not accept a voucher instead."
)
MODEL_CHECKS: tuple[Any, ...] = ("role_swap", "stopped_on_question", "unsupported")


def turn(message: str, answer: str = "Noted.", scripted: bool = False) -> Turn:
    return Turn(message, Answer(answer), scripted, 0.0, 0.0, Usage(1, 1), 0.0, 0.0)


def faults(*turns: Turn, stop: Any = "finished", empty: bool = False) -> tuple[UserFault, ...]:
    return Conduct(Transcript(turns), stop, empty).faults(Instructions(TOLD))


def checks(found: tuple[UserFault, ...]) -> list[str]:
    return [fault.check for fault in found]


# --- leaked ------------------------------------------------------------------------------------


def test_twelve_words_of_the_instructions_said_are_a_leak() -> None:
    """A message that says twelve words of the filled prompt in a row leaks it, whatever the case
    and punctuation; the fault names the turn and quotes the stretch."""
    said = faults(turn("Hi."), turn("WHO you are: Dana Moreau, whose kettle arrived broken last Tuesday from the Lyon warehouse!"))
    assert checks(said) == ["leaked"]
    assert said[0].turn == 2
    assert said[0].by == "code"
    assert "who you are dana moreau whose kettle arrived broken last tuesday from the lyon warehouse" in said[0].detail
    assert said[0].said() == "the simulated user said its instructions at turn 2"


def test_a_short_phrase_of_the_instructions_is_not_a_leak() -> None:
    """Saying a few words the instructions hold (an order number, a name) is what a user does."""
    assert faults(turn("Hello, I am Dana Moreau and my kettle arrived broken last Tuesday."), turn("It is order A-1234.")) == ()


def test_eleven_short_words_are_not_a_leak_but_sixty_characters_are() -> None:
    """Under twelve words is a leak only when the stretch has 60 characters or more."""
    instructions = Instructions("one two six ten red big cat dog sun hat cup pen and the end " + "extraordinarily " * 0)
    assert instructions.leaked("one two six ten red big cat dog sun hat cup") == ""  # 11 words, 43 characters
    assert instructions.leaked("one two six ten red big cat dog sun hat cup pen") != ""  # 12 words
    long = Instructions("unquestionably extraordinary circumstances notwithstanding, irreversible consequences accumulate")
    assert long.leaked("unquestionably extraordinary circumstances notwithstanding irreversible consequences") != ""  # 6 words, 87 characters
    assert long.leaked("unquestionably extraordinary circumstances notwithstanding irreversible") == ""  # 5 words: under a run


def test_repeating_what_the_agent_said_first_is_not_a_leak() -> None:
    """A user that says back the agent's question, whose words are also in its instructions, did
    not read them out: the agent said them first."""
    question = "So whose kettle arrived broken last Tuesday from the Lyon warehouse, yours?"
    said = faults(
        turn("Hello, I need help.", answer=question),
        turn("Yes: whose kettle arrived broken last Tuesday from the Lyon warehouse. Mine, Dana Moreau."),
    )
    assert said == ()


def test_a_leak_is_found_once_for_each_message_and_the_same_past_the_messages_kept() -> None:
    """Asked again of one set of instructions, the same message leaks the same stretch (found
    once, kept), and a message past the ``KEPT`` latest is found again, as at first."""
    instructions = Instructions(TOLD)
    leaking = "WHO you are: Dana Moreau, whose kettle arrived broken last Tuesday from the Lyon warehouse!"
    first = instructions.leak(leaking)
    assert first == instructions.leaked(leaking) != ""
    assert instructions.leak(leaking) == first
    for number in range(Instructions.KEPT + 1):
        assert instructions.leak(f"message {number}") == ""
    assert instructions.leak(leaking) == first
    assert instructions.leak("Hi.") == ""


def test_a_leak_found_in_a_long_prompt_takes_one_pass() -> None:
    """The index is made once for a prompt of 100,000 words and a message is looked up word by
    word: the same stretch is found wherever it stands."""
    words = [f"w{number}" for number in range(100_000)]
    instructions = Instructions(" ".join(words))
    assert instructions.leaked("so " + " ".join(words[70_000:70_013]) + " ok") == " ".join(words[70_000:70_013])
    assert instructions.leaked(" ".join(words[70_000:70_008]) + " " + " ".join(words[10:14])) == ""  # 8 and 4 words


# --- repeated, empty, first_turn_stop, no_stop ---------------------------------------------------


def test_the_same_message_twice_in_a_row_is_repeated() -> None:
    """The same message again (whitespace and case aside) is repeated at the later turn; the same
    message later, with another between, is not."""
    assert checks(faults(turn("I want a refund."), turn("I want  a REFUND."))) == ["repeated"]
    assert faults(turn("I want a refund."), turn("Order A-1234."), turn("I want a refund.")) == ()


def test_a_script_that_says_the_same_thing_twice_is_not_the_users_doing() -> None:
    """Scripted turns are not the simulated user's."""
    assert faults(turn("Hi.", scripted=True), turn("Hi.", scripted=True), turn("A refund, please.")) == ()


def test_a_stop_before_anything_was_said_is_a_first_turn_stop() -> None:
    """Done at turn 1 with nothing said: first_turn_stop; done after a script is a stop like any."""
    assert faults() == (UserFault("first_turn_stop", 1, "it said it was done before it said anything"),)
    assert faults(turn("Hi.", scripted=True)) == ()


def test_running_out_of_turns_without_a_stop_is_no_stop() -> None:
    """The turns ran out while the simulated user spoke: no_stop, one past the last turn; a
    script that fills every turn leaves the user nothing to stop."""
    assert faults(turn("a"), turn("b"), stop="max_turns") == (
        UserFault("no_stop", 3, "2 turns and it never said it was done"),
    )
    assert faults(turn("a", scripted=True), turn("b", scripted=True), stop="max_turns") == ()


def test_an_empty_reply_is_the_users_empty_fault() -> None:
    """An empty reply stays the model's failure and is the user's empty fault, at the turn it
    would have opened."""
    assert faults(turn("a"), stop="model_failed", empty=True) == (UserFault("empty", 2, "its model gave an empty reply"),)


# --- in a run: not judged, or counted ------------------------------------------------------------


def scenario(**fields: Any) -> Scenario:
    given: dict[str, Any] = {"id": "refund", "user": "You want a refund for your broken kettle.", "judge": ["The agent helped."]}
    return msgspec.convert({**given, **fields}, Scenario)


def played(model: Any, judge: Any = None, checks: UserChecks = UserChecks(), fields: dict[str, Any] | None = None) -> Outcome:
    journal = MemoryJournal()
    agent = FakeAgent(lambda text: "I can help with that. What is your order number?")
    models = Models(model, FakeJudge() if judge is None else judge)
    asyncio.run(Bench(agent, models, user_checks=checks).run(Plan((scenario(**(fields or {})),), 1), journal))
    (outcome,) = journal.outcomes
    return outcome


@pytest.mark.parametrize(
    ("behaviour", "check", "reason"),
    [
        ({"leaks": True}, "leaked", "the simulated user said its instructions at turn 1"),
        ({"repeats": True}, "repeated", "the simulated user repeated itself at turn 2"),
        ({"stops_at_once": True}, "first_turn_stop", "the simulated user stopped before it said anything"),
        ({"empty": True}, "empty", "model bad-user gave an empty reply"),
    ],
)
def test_a_misbehaving_user_leaves_the_attempt_not_judged_and_the_judge_unasked(
    behaviour: dict[str, bool], check: str, reason: str
) -> None:
    """Each code check fires on the fake bad user; the attempt is not judged, with the fault as its
    reason (the model's failure for an empty reply), and the judge is not asked. (no_stop is kept
    but judged: test_audit_issue11.)"""
    judge = FakeJudge()
    outcome = played(BadUser(**behaviour), judge)
    assert checks(outcome.user_faults) == [check]
    assert outcome.result == NoVerdict("user", reason)
    assert outcome.status(0.0) == "not_judged"
    assert judge.rulings == 0


def test_a_good_user_has_no_faults_and_is_judged() -> None:
    judge = FakeJudge()
    outcome = played(BadUser(), judge)
    assert outcome.user_faults == ()
    assert outcome.status(0.0) == "passed"
    assert judge.rulings == 1


def test_a_check_that_failed_by_code_still_fails_an_attempt_whose_user_misbehaved() -> None:
    """NoVerdict.checks' rule holds: a check more turns could not change, failed, fails the attempt."""
    outcome = played(BadUser(repeats=True), fields={"judge": ["The agent helped.", {"check": {"not_said": "order number"}}]})
    assert checks(outcome.user_faults) == ["repeated"]
    match outcome.result:
        case NoVerdict(who="user", checks=(decided,)):
            assert not decided.held
        case other:
            pytest.fail(f"expected the user's NoVerdict with the check, got {other}")
    assert outcome.status(0.0) == "failed"


def test_user_faults_count_keeps_the_attempt_judged_with_its_faults() -> None:
    """With user_faults = "count" the fault is kept and the attempt judged as any other."""
    judge = FakeJudge()
    outcome = played(BadUser(repeats=True), judge, UserChecks(faults="count"))
    assert checks(outcome.user_faults) == ["repeated"]
    assert isinstance(outcome.result, Verdict)
    assert judge.rulings == 1


def test_a_fully_scripted_dialogue_is_not_checked() -> None:
    """No simulated user, no checks: a script that repeats itself is no fault, nor is its end."""
    outcome = played(FakeModel(["unused"]), fields={"script": ["Hi.", "Hi."], "user": ""})
    assert outcome.user_faults == ()
    assert isinstance(outcome.result, Verdict)


# --- model-decided checks ------------------------------------------------------------------------


def test_the_model_checks_fire_on_the_judges_model_and_count_as_its_requests() -> None:
    """role_swap, unsupported and stopped_on_question, asked of the judge's chat model, one request
    each, each fault with the turn and a quote; their requests are the judge's."""
    ruled = RuledModel()
    outcome = played(BadUser(swaps=True), ChatJudge(ruled), UserChecks(MODEL_CHECKS))
    assert checks(outcome.user_faults) == ["role_swap", "stopped_on_question"]
    swap = outcome.user_faults[0]
    assert (swap.turn, swap.by) == (2, "model")
    assert "As your agent" in swap.detail
    assert outcome.result == NoVerdict(
        "user",
        "the simulated user spoke as the agent at turn 2; the simulated user stopped while the agent was asking it something",
    )
    assert ruled.requests == 3  # the three checks, and no claim: not judged
    assert len(outcome.judge_requests) == 3
    invented = played(BadUser(invents=True), ChatJudge(RuledModel()), UserChecks(("unsupported",)))
    assert [(fault.check, fault.turn) for fault in invented.user_faults] == [("unsupported", 2)]


def test_a_stop_after_an_answer_that_asks_nothing_is_not_sent_to_the_model() -> None:
    """stopped_on_question is asked only when the agent's last answer held a question mark."""
    ruled = RuledModel()
    journal = MemoryJournal()
    bench = Bench(FakeAgent(lambda text: "Done."), Models(BadUser(), ChatJudge(ruled)), user_checks=UserChecks(("stopped_on_question",)))
    asyncio.run(bench.run(Plan((scenario(),), 1), journal))
    assert journal.outcomes[0].user_faults == ()
    assert ruled.requests == 1  # the claim only


def test_a_failing_check_model_leaves_that_check_undecided_never_the_run() -> None:
    """A check whose model failed or answered in the wrong shape is not decided, and says why; the
    others are, and the attempt is judged."""

    def answer(messages: tuple[Said, ...]) -> Reply:
        asked = messages[-1].content
        if "speak as the agent" in asked:
            raise RuntimeError("the checker broke")
        if "neither give nor support" in asked:
            return Reply("no JSON here")
        return Reply(json.dumps({"evidence": "", "reason": "ok", "pass": True, "confidence": 0.9}))

    outcome = played(BadUser(), ChatJudge(FakeModel(answer)), UserChecks(("role_swap", "unsupported")))
    assert outcome.user_faults == ()
    assert [(one.check, one.reason.split(":")[0]) for one in outcome.user_unchecked] == [
        ("role_swap", "model fake failed"),
        ("unsupported", "the model fake answered the check unsupported in the wrong shape"),
    ]
    assert outcome.status(0.0) == "passed"


def test_a_judge_without_a_chat_model_leaves_the_model_checks_undecided() -> None:
    outcome = played(BadUser(), FakeJudge(name="mine"), UserChecks(("role_swap",)))
    assert outcome.user_unchecked == (Unchecked("role_swap", "the judge mine has no chat model to ask"),)
    assert outcome.status(0.0) == "passed"


def test_a_model_naming_a_turn_the_dialogue_lacks_leaves_the_check_undecided() -> None:
    review = UserReview(UserChecks(("role_swap",)), FakeModel([json.dumps({"fault": True, "turn": 9, "quote": "x"})]))
    reviewed = asyncio.run(review.reviewed(Transcript((turn("a"),)), "finished", TOLD))
    assert reviewed.faults == ()
    assert reviewed.unchecked[0].reason == "the model fake named turn 9 of a dialogue of 1"


# --- over HTTP, against the stand-in ------------------------------------------------------------


def test_a_user_model_over_http_that_leaks_and_repeats_is_found_out(tmp_path: Path) -> None:
    """A real Chat Completions server plays the user (leaking its prompt, then repeating itself)
    and the judge (deciding the claim and the role_swap check): the run folder keeps the faults,
    and the attempts are not judged."""

    def user(request: dict[str, Any]) -> str:
        messages = request["messages"]
        said = [message["content"] for message in messages if message["role"] == "assistant"]
        if not said:
            return " ".join(messages[0]["content"].split()[:20])  # its instructions, read out
        return said[-1]  # and then the same again

    def judge(request: dict[str, Any]) -> str:
        if "You check a simulated user" in request["messages"][0]["content"]:
            return json.dumps({"fault": True, "turn": 1, "quote": "You are playing", "reason": "it said the agent's part"})
        return judged(request)

    with StandIn(reply=user) as users, StandIn(reply=judge) as judges:
        models = Models(OpenAiModel("user-model", users.url + "/v1"), ChatJudge(OpenAiModel("judge-model", judges.url + "/v1")))
        checked = UserChecks(("role_swap",), "count")
        bench = Bench(FakeAgent(lambda text: "How can I help?"), models, user_checks=checked)
        spec = RunSpec(id="r", agent="a", scenarios=(scenario(max_turns=3),), attempts=2, limits=bench.limits, user_checks=checked)
        journal = RunJournal(tmp_path / "a" / "r")
        asyncio.run(journal.play(spec, bench))
        kept = journal.kept().outcomes
    assert len(kept) == 2
    for outcome in kept:
        assert checks(outcome.user_faults) == ["leaked", "role_swap", "repeated", "no_stop"]
        assert isinstance(outcome.result, Verdict)  # counted: judged all the same
    assert RunJournal(tmp_path / "a" / "r").run().spec.user_checks == checked


# --- settings and old records -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('user_checks = ["role_swap", "bogus"]', "pyproject.toml: [tool.convy] user_checks[1]: "),
        ('user_checks = "role_swap"', "pyproject.toml: [tool.convy] user_checks: expected a list, got text"),
        ('user_checks = ["role_swap", "role_swap"]', "pyproject.toml: [tool.convy] user_checks: 'role_swap' given twice"),
        ('user_faults = "sometimes"', "pyproject.toml: [tool.convy] user_faults: "),
    ],
)
def test_bad_user_check_settings_name_the_file_and_the_field(tmp_path: Path, table: str, expected: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.convy]\n{table}\n", encoding="utf-8")
    with pytest.raises(ConfigurationError) as raised:
        ProjectSettings(tmp_path).settings()
    assert str(raised.value).startswith(expected), str(raised.value)


def test_the_variables_give_the_checks_apart_by_commas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVY_USER_CHECKS", "role_swap, unsupported")
    monkeypatch.setenv("CONVY_USER_FAULTS", "count")
    settings = ProjectSettings(tmp_path).settings()
    assert settings.user_checking() == UserChecks(("role_swap", "unsupported"), "count")
    monkeypatch.setenv("CONVY_USER_CHECKS", "role_swap,bogus")
    with pytest.raises(ConfigurationError, match="^CONVY_USER_CHECKS: user_checks"):
        ProjectSettings(tmp_path).settings()


def test_old_attempt_lines_and_run_files_read_with_no_faults() -> None:
    """A line kept before the checks (no user_faults) reads back with none; a spec before them,
    with the checks by code and faults not judged."""
    old = Outcome("s", 1, "2026-01-01T00:00:00.000+00:00", 1.0, Transcript((turn("a"),)), "finished", Verdict(()))
    line = msgspec.json.encode(old)
    assert b"user_faults" not in line
    assert msgspec.json.decode(line, type=Outcome).user_faults == ()
    spec = msgspec.json.decode(
        msgspec.json.encode(RunSpec(id="r", agent="a", scenarios=(scenario(),), attempts=1, limits=Bench(FakeAgent(str), Models()).limits)),
        type=RunSpec,
    )
    assert spec.user_checks == UserChecks()


def test_a_rejudged_attempt_whose_user_misbehaved_stays_not_judged() -> None:
    """convy rejudge decides the dialogues again, but not one left unjudged for its user's fault."""
    outcome = played(BadUser(repeats=True))
    judge = FakeJudge()
    again = asyncio.run(scenario().rejudged(outcome, judge))
    assert again.result == outcome.result
    assert again.user_faults == outcome.user_faults
    assert judge.rulings == 0


def test_a_secret_in_what_the_user_leaked_is_hidden_in_the_run_folder(tmp_path: Path) -> None:
    """A fault's detail is kept as every text is: the run's secrets hidden, whole (a quote is cut
    at a space, never inside one)."""
    from convy.secrets import Secrets

    canary = "sk-canary-0123456789abcdef"
    # In the prompt's own words: the scenario's instructions are the user's to say (issue 11's audit).
    told = "You want a refund."
    prompt = Prompt(f"Your account key is {canary} and you never give it to anyone at all, ever.\n{{{{ instructions }}}}\nSay {{{{ stop }}}} when you are done.")
    bench = Bench(FakeAgent(lambda text: "Hello."), Models(BadUser(leaks=True, words=18), FakeJudge()), prompt=prompt)
    spec = RunSpec(id="r", agent="a", scenarios=(scenario(user=told),), attempts=1, limits=bench.limits)
    journal = RunJournal(tmp_path / "a" / "r")
    asyncio.run(journal.play(spec, bench, secrets=Secrets((canary,))))
    (outcome,) = journal.kept().outcomes
    assert outcome.user_faults[0].check == "leaked"
    assert "your account key is" in outcome.user_faults[0].detail
    line = (tmp_path / "a" / "r" / "attempts.jsonl").read_text()
    # The leak check reads words, so it quotes "sk canary 0123456789abcdef": every eight characters
    # of a secret are hidden too.
    assert canary not in line and "01234567" not in line and "89abcdef" not in line
    assert "your account key is" in line


def test_the_bad_user_demo_shows_every_check_firing() -> None:
    """bench/bad_user.py plays its project with the real command: each check fires once, on its
    own scenario, and the well-behaved user's attempt is judged."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve().parents[2] / "bench" / "bad_user.py")],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "(exit 5)" in done.stdout  # every misbehaving user's attempt not judged, past --max-not-judged 0
    faults = [line.split()[0] for line in done.stdout.splitlines() if line.startswith("    ")]
    assert sorted(faults) == sorted(
        ["empty", "leaked", "no_stop", "repeated", "first_turn_stop", "unsupported", "stopped_on_question", "role_swap"]
    )
    assert "  behaves        stop finished     verdict" in done.stdout
