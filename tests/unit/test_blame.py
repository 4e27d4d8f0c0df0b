"""Who is blamed: each participant (the agent, the user's model, the judge, the judge's model) failing
each way (raising, answering with the wrong type, answering with something unusable, staying busy
past its patience) gives its own stop and result, never another participant's; a check decided
by code that already failed makes the attempt failed whoever failed after it; and the report and
the command's line show that check.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis import strategies
from test_process import Folder, clean, planned, project

from convy.agent import AgentFailure, Answer, Call, Message
from convy.bench import Bench
from convy.busy import START, Busy
from convy.checks import Check, Rule
from convy.cli.console import AttemptWords
from convy.fakes import FakeAgent, FakeJudge, FakeModel, MemoryJournal
from convy.judge import ChatJudge, Failed, Models, NoVerdict, Ruling
from convy.model import ModelFailure, Reply
from convy.outcome import Outcome
from convy.plan import Plan
from convy.prompt import STOP
from convy.records import Limits, RunSpec
from convy.report import Summary
from convy.runs import Read
from convy.scenario import Scenario
from convy.storage import RunJournal
from convy.tables import RunRows
from convy.transcript import Transcript

PARTICIPANTS = ("agent", "user", "judge", "judge_model")
# Raising plainly, raising in the ways that escaped before (a CancelledError nobody asked for, a
# SystemExit, an exception whose text cannot be read, convy's own failure (of the agent or a model)
# with a text that cannot be read, answering wrong, staying busy.
KINDS = ("raises", "cancels", "exits", "unreadable", "own_unreadable", "wrong_type", "unusable", "busy")
FAILING = ("raises", "cancels", "exits", "unreadable", "own_unreadable", "wrong_type", "unusable")

# What each participant's failure leaves: the stop, and the result's kind (with who, for NoVerdict).
EXPECTED: dict[tuple[str, str], tuple[str, str]] = {
    **{("agent", kind): ("agent_failed", "failed") for kind in FAILING},
    ("agent", "busy"): ("agent_busy", "busy"),
    **{("user", kind): ("model_failed", "user") for kind in FAILING},
    ("user", "busy"): ("model_failed", "busy"),
    **{(judge, kind): ("finished", "judge") for judge in ("judge", "judge_model") for kind in FAILING},
    **{(judge, "busy"): ("finished", "busy") for judge in ("judge", "judge_model")},
}


KEY = "sk-canary-5f0e2a9c41d7b3e8a6c0f1d2e3b4a5c6"


class Unreadable(Exception):
    """An exception whose text cannot be read: reading it raises, with a key in the message."""

    def __str__(self) -> str:
        raise ValueError("str of me fails " + KEY)


class UnreadableFailure(ModelFailure, AgentFailure):
    """The failure convy's participants may raise themselves (an agent's, a model's), whose text
    cannot be read."""

    def __str__(self) -> str:
        raise ValueError("str of me fails " + KEY)


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
            case "cancels":
                raise asyncio.CancelledError()
            case "exits":
                raise SystemExit(3)
            case "unreadable":
                raise Unreadable()
            case "own_unreadable":
                raise UnreadableFailure("unused")
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
    if kind in ("unreadable", "own_unreadable"):
        reason = outcome.result.reason  # type: ignore[union-attr]
        assert ("Unreadable (its text could not be read)" if kind == "unreadable" else "(its text could not be read)") in reason
        assert KEY not in reason


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
    check failed, tallies it, shows it in the scenario window, names it on the command's line, and
    exports it as a row of the claims table at its place in the scenario."""

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
    line = AttemptWords(kept.outcomes[0], 1.0).text()
    assert "never called refund: agent called refund in turn 1 (then judge failed: " in line
    rows = [row for attempt in RunRows(read).attempts() for row in attempt.claims()]
    assert [(row.attempt, row.claim, row.text, row.by, row.held) for row in rows] == [
        (1, 2, "never called refund", "code", False),
        (2, 2, "never called refund", "code", False),
    ]



# --- the real command, with an agent that raises what used to escape -------------------------------

ESCAPING_AGENT = f'''\
"""An agent that answers every message but those naming a way to fail, which it fails that way."""

import asyncio
from contextlib import asynccontextmanager

from convy.agent import Answer


class Unreadable(Exception):
    def __str__(self):
        raise ValueError("str of me fails {KEY}")


FAILS = {{"cancels": asyncio.CancelledError, "exits": lambda: SystemExit(3), "unreadable": Unreadable}}


class Conversation:
    async def turn(self, message):
        for word, error in FAILS.items():
            if word in message.text:
                raise error()
        return Answer(f"you said: {{message.text}}")


class Escaping:
    @asynccontextmanager
    async def conversation(self):
        yield Conversation()


agent = Escaping()
'''


@pytest.mark.parametrize(
    ("word", "said"),
    [
        ("cancels", "agent failed (agent_failed): CancelledError"),
        ("exits", "agent failed (agent_failed): SystemExit: 3"),
        ("unreadable", "agent failed (agent_failed): Unreadable (its text could not be read)"),
    ],
)
def test_an_agent_raising_what_used_to_escape_fails_its_attempts_and_the_run_keeps_all(
    tmp_path: Path, word: str, said: str
) -> None:
    """An agent raising CancelledError of its own accord, SystemExit, or an exception whose text
    cannot be read fails the attempts it raises in: every planned attempt is kept, the run is
    finished, the exit code is 1, there is no traceback and the key in the text is never shown."""
    with project(tmp_path) as made:
        (made.folder / "agents" / "escaping.py").write_text(ESCAPING_AGENT)
        (made.folder / "scenarios" / "s2.yaml").write_text(f"script:\n  - {word}\njudge:\n  - check:\n      said: x\n")
        ran = made.ran("run", "escaping")
        assert ran.returncode == 1, ran.stdout + ran.stderr
        clean(ran.stderr)
        assert KEY not in ran.stdout + ran.stderr
        lines = [line for line in ran.stdout.splitlines() if line.startswith("✗ s2 #")]
        assert [line.split("· ", 1)[1] for line in lines] == [said] * 2
        assert "escaping: 8 passed, 2 failed, 0 not judged of 10 attempts" in ran.stdout
        folder = made.run()
        assert folder.pairs() == planned(5, 2)
        assert folder.status() == "finished"
        assert KEY.encode() not in folder.data()


def test_an_agent_file_raising_an_unreadable_exception_as_it_loads_exits_2_without_its_text(tmp_path: Path) -> None:
    """Loading the project's Python is outside code too: an exception whose text cannot be read
    is named by its type, exit 2, with no traceback and no key."""
    with project(tmp_path) as made:
        (made.folder / "agents" / "broken.py").write_text(
            f"class Unreadable(Exception):\n    def __str__(self):\n        raise ValueError('{KEY}')\n\nraise Unreadable()\n"
        )
        ran = made.ran("run", "broken")
        assert (ran.returncode, ran.stderr) == (
            2,
            "convy: loading agents/broken.py or models.py failed: Unreadable (its text could not be read)\n",
        )
        assert KEY not in ran.stdout


def test_attempts_that_vanish_from_the_bench_stop_the_run_marked_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However an attempt's task comes to end cancelled without the run being stopped, the bench
    does not end as if it had played it: the run stops, marked interrupted, never finished."""
    from convy.problems import Unplayed

    played = Scenario.outcome

    async def vanishing(self: Scenario, *arguments: Any) -> Outcome:
        if self.id == "gone":
            raise asyncio.CancelledError()  # past Accountable: what a bug of convy's could do
        return await played(self, *arguments)

    monkeypatch.setattr(Scenario, "outcome", vanishing)
    chosen = (scripted_only("hello"), Scenario(id="gone", script=("hi",), judge=(Rule(check=Check(said=".")),)))
    bench = Bench(FakeAgent(lambda text: "hi"), Models())
    spec = RunSpec(id="one", agent="fake", scenarios=chosen, attempts=2, limits=bench.limits)
    journal = RunJournal(tmp_path / "results" / "fake" / "one")
    with pytest.raises(Unplayed, match="^2 of 4 planned attempts ended without being recorded$"):  # out of play's task group
        asyncio.run(journal.play(spec, bench))
    assert sorted((outcome.scenario, outcome.attempt) for outcome in journal.kept().outcomes) == [("s", 1), ("s", 2)]
    assert journal.run().status.__struct_config__.tag == "interrupted"


def test_a_real_cancellation_during_the_agents_turn_stops_the_bench_and_blames_no_one() -> None:
    """When the bench's own task is cancelled (Ctrl+C, SIGTERM) while the agent answers, the
    cancellation goes on: nothing is recorded, least of all as the agent's failure."""

    class Waiting:
        def __init__(self) -> None:
            self.answering = asyncio.Event()

        @asynccontextmanager
        async def conversation(self) -> AsyncIterator[Waiting]:
            yield self

        async def turn(self, message: Message) -> Answer:
            self.answering.set()
            await asyncio.Event().wait()  # until cancelled
            return Answer("never")

    async def cancelled() -> MemoryJournal:
        agent, journal = Waiting(), MemoryJournal()
        playing = asyncio.create_task(Bench(agent, Models()).run(Plan((scripted_only("hello"),)), journal))
        await agent.answering.wait()
        playing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await playing
        return journal

    assert asyncio.run(cancelled()).outcomes == []


# --- Accountable: the agent's own code, and nothing else ----------------------------------------


class Closing:
    """An agent whose conversation answers ``answer`` and raises ``error`` when it closes."""

    def __init__(self, error: Exception, answer: Any = Answer("fine")) -> None:
        self.error = error
        self.answer = answer
        self.closed = 0

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[Closing]:
        try:
            yield self
        finally:
            self.closed += 1
            raise self.error

    async def turn(self, message: Message) -> Any:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def scripted_only(*script: str) -> Scenario:
    return Scenario(id="s", script=script, judge=(Rule(check=Check(said=".")),))


def one(agent: Any, chosen: Scenario) -> Outcome:
    journal = MemoryJournal()
    asyncio.run(Bench(agent, Models()).run(Plan((chosen,)), journal))
    (outcome,) = journal.outcomes
    return outcome


def test_an_agent_failing_to_close_fails_the_attempt() -> None:
    """An error the agent raises while closing its conversation is its failure, with the dialogue kept."""
    agent = Closing(OSError("socket gone"))
    outcome = one(agent, scripted_only("hello"))
    assert (outcome.stop, outcome.result) == ("agent_failed", Failed("OSError: socket gone", ""))
    assert len(outcome.transcript.turns) == 1
    assert agent.closed == 1


def test_an_agent_failing_in_a_turn_keeps_that_failure_when_closing_fails_too() -> None:
    """When a turn failed, an error of the closing that follows does not hide the turn's failure."""
    agent = Closing(OSError("socket gone"), answer=ValueError("bad turn"))
    outcome = one(agent, scripted_only("hello"))
    assert (outcome.stop, outcome.result) == ("agent_failed", Failed("ValueError: bad turn", "hello"))
    assert agent.closed == 1


def test_an_answer_holding_a_cycle_fails_its_attempt_not_the_run() -> None:
    """An answer that cannot be encoded at all (it holds itself) is the agent's failure, and the run goes on."""
    looped: list[Any] = []
    looped.append(looped)
    agent = FakeAgent(lambda text: Answer("x", steps=(Call("refund", {"items": looped}),)) if text == "bad" else "ok")
    journal = MemoryJournal()
    asyncio.run(Bench(agent, Models()).run(Plan((scripted_only("bad"), Scenario(id="t", script=("ok",), judge=(Rule(check=Check(said=".")),)))), journal))
    bad, good = sorted(journal.outcomes, key=lambda outcome: outcome.scenario)
    assert bad.stop == "agent_failed"
    match bad.result:
        case Failed(reason=reason):
            assert reason.startswith("the agent's answer cannot be kept: ")
        case other:
            pytest.fail(f"expected Failed, got {other}")
    assert good.status(1.0) == "passed"


def test_a_bug_of_convys_wrappers_between_agent_calls_is_not_the_agents() -> None:
    """Accountable blames only what the agent's own calls raise: an error in the block it guards goes on as it is."""
    from convy.agent import Accountable

    async def played() -> None:
        async with Accountable(FakeAgent(lambda text: "hi")).conversation() as conversation:
            await conversation.turn(Message("hello"))
            raise KeyError("a bug in convy")

    with pytest.raises(KeyError, match="a bug in convy"):
        asyncio.run(played())


def test_a_bug_in_convys_loop_stops_the_run_marked_interrupted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error of convy's own loop is not recorded as an attempt at all: the run stops with it, marked interrupted."""
    from convy.user import SimulatedUser

    async def broken(self: Any, transcript: Transcript) -> Any:
        raise RuntimeError("a bug in convy")

    monkeypatch.setattr(SimulatedUser, "spoken", broken)
    chosen = Scenario(id="s", user="You want a refund.", judge=(Rule(check=Check(said=".")),))
    bench = Bench(FakeAgent(lambda text: "hi"), Models(user=FakeModel(["hello"])))
    spec = RunSpec(id="one", agent="fake", scenarios=(chosen,), attempts=1, limits=bench.limits)
    journal = RunJournal(tmp_path / "results" / "fake" / "one")
    with pytest.raises(ExceptionGroup) as raised:
        asyncio.run(journal.play(spec, bench))
    assert raised.group_contains(RuntimeError, match="a bug in convy")
    assert journal.kept().outcomes == ()
    assert journal.run().status.__struct_config__.tag == "interrupted"


# --- a settled check never changes with more turns ------------------------------------------------

TOOLS = ("refund", "lookup")
WORDS = ("sorry", "refund", "bye", "")


def dialogue_turn(text: str, called: tuple[str, ...]) -> Any:
    from convy.agent import NoUsage
    from convy.transcript import Turn

    return Turn("u", Answer(text, steps=tuple(Call(name) for name in called)), True, 0.0, 0.0, NoUsage(), 0.0, 0.0)


@hypothesis.settings(max_examples=300, derandomize=True, deadline=None)
@hypothesis.given(
    turns=strategies.lists(
        strategies.tuples(
            strategies.lists(strategies.sampled_from(WORDS), max_size=3).map(" ".join),
            strategies.lists(strategies.sampled_from(TOOLS), max_size=2).map(tuple),
        ),
        max_size=5,
    ),
    cut=strategies.integers(min_value=0, max_value=5),
    kind=strategies.sampled_from(("called", "not_called", "said", "not_said")),
    target=strategies.sampled_from(TOOLS + WORDS[:3]),
)
def test_a_settled_check_is_decided_as_on_every_longer_dialogue(
    turns: list[tuple[str, tuple[str, ...]]], cut: int, kind: str, target: str
) -> None:
    """A check settled on a dialogue cut short has the decision it has on the whole dialogue, whatever came after."""
    check = Check(**{kind: target})
    whole = Transcript(tuple(dialogue_turn(text, called) for text, called in turns))
    short = Transcript(whole.turns[:cut])
    for claim in check.settled(short):
        assert check.claim(whole).held == claim.held
    if not check.settled(short):
        # Unsettled means not yet decided either way: a called/said check not yet held, a
        # not_called/not_said one not yet broken.
        assert check.claim(short).held == bool(check.not_called or check.not_said)


CANCELLING = """
import asyncio
from contextlib import asynccontextmanager


class Cancelling:
    async def turn(self, message):
        asyncio.current_task().cancel()  # the agent's own code cancels the task it runs in
        await asyncio.sleep(0)
        return "hi"


class Agent:
    @asynccontextmanager
    async def conversation(self):
        yield Cancelling()


agent = Agent()
"""


def test_an_agent_that_cancels_its_own_task_stops_the_run_in_one_line_naming_its_file(tmp_path: Path) -> None:
    """Code of the project's that cancels the task it runs in ends attempts unrecorded: the run
    stops, marked interrupted, with one line naming the agent's file and how to resume, exit 2;
    the smoke test says the same of its dialogue. No traceback either way."""
    with project(tmp_path) as made:
        (made.folder / "agents" / "cancels.py").write_text(CANCELLING)
        ran = made.ran("run", "cancels")
        folder = Folder(next((made.folder / "results" / "cancels").iterdir()))
        assert ran.returncode == 2, ran.stderr
        started = 2 * START  # an attempt under way for each of the agent's and the judge's first places
        assert ran.stderr == (
            f"convy: agents/cancels.py or models.py: {started} of 10 planned attempts ended without being recorded: a task "
            "of the run was cancelled from within, as code that cancels its own task does "
            f"(asyncio.current_task().cancel()); run {folder.path.name} stopped and keeps 0 of 10 attempts; once "
            f"that is mended: convy resume {folder.path.name}\n"
        )
        assert folder.status() == "interrupted"
        smoke = made.ran("run", "cancels", "--smoke")
        assert (smoke.returncode, smoke.stderr) == (
            2,
            "convy: agents/cancels.py: the smoke test's dialogue was cancelled from within, as code that cancels "
            "its own task does (asyncio.current_task().cancel())\n",
        )
