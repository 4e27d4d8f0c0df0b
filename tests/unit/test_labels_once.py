"""Human labels count once (issue 26, item 4). Attempts that said the same words share a label (it
is of the dialogue), but the label is one pair, not a copy per attempt; and a dialogue's
fingerprint holds its tool calls (name, arguments in any key order, result), so a label of a
``called`` check is of the dialogue that made the call, not of every dialogue that read alike.

Six attempts; the agent says one of two texts, and calls ``lookup`` in two of them. Four labels:
the judge's claim on each text (one found wrong), a second claim on one, and the ``called`` check
on a dialogue that called it. Read back as the report and ``convy labels show`` read them."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import msgspec
import pytest
from statsmodels.stats.proportion import proportion_confint
from support.process import run_convy

from convy.agent import Answer, Call, NoUsage, Reported
from convy.bench import Bench
from convy.checks import Check, Rule
from convy.fakes import FakeAgent, FakeJudge
from convy.judge import Claim, Models, Verdict
from convy.labels import Book, KeptLabel, Label, LabelledDecisions, LabelledRun, LabelsFile, LabelsKept
from convy.outcome import Outcome
from convy.records import ModelNames, RunSpec
from convy.report import Summary
from convy.runs import Read, Runs
from convy.scenario import Scenario
from convy.storage import RunJournal
from convy.transcript import Transcript, Turn

GREETS = "The agent greets the user."
BRIEF = "The agent is brief."
CALLED = "called lookup"
SCENARIO = Scenario(id="hello", script=("Hello",), judge=(GREETS, BRIEF, Rule(check=Check(called="lookup"))), max_turns=1)


def answered(count: itertools.count) -> Answer:  # type: ignore[type-arg]
    n = next(count)
    calls = (Call("lookup", {"order": n, "kind": "refund"}, Reported({"found": n})),) if n % 3 == 0 else ()
    return Answer(f"Hi there {n % 2}", steps=calls)


def played(folder: Path) -> Read:
    count = itertools.count(1)
    bench = Bench(FakeAgent(lambda text: answered(count)), Models(judge=FakeJudge(lambda claim, said: not (claim == BRIEF and said.turns[0].answer.text.endswith("1")), name="fake-judge")))
    spec = RunSpec(id="r1", agent="bot", scenarios=(SCENARIO,), attempts=6, limits=bench.limits, models=ModelNames(judge="fake-judge"))
    asyncio.run(RunJournal(folder / "results" / "bot" / "r1").play(spec, bench))
    read = Runs(folder / "results").one(folder / "results" / "bot" / "r1")
    assert isinstance(read, Read)
    return read


def labelled(read: Read) -> LabelsFile:
    """Four labels, as the page makes them: GREETS on each text (right on one, wrong on the
    other), BRIEF on the second (the judge said it failed: right), and the ``called`` check on a dialogue that called (right)."""
    outcomes = sorted(read.outcomes, key=lambda one: one.attempt)
    first = next(one for one in outcomes if one.transcript.turns[0].answer.text.endswith("0"))
    second = next(one for one in outcomes if one.transcript.turns[0].answer.text.endswith("1"))
    caller = next(one for one in outcomes if one.transcript.called() and one.transcript.turns[0].answer.text.endswith("0"))
    at = "2026-12-02T14:30:00.000Z"
    labels = [
        Label(first.transcript.fingerprint(), "hello", first.attempt, GREETS, True, True, at),
        Label(second.transcript.fingerprint(), "hello", second.attempt, GREETS, True, False, at),
        Label(second.transcript.fingerprint(), "hello", second.attempt, BRIEF, False, True, at),
        Label(caller.transcript.fingerprint(), "hello", caller.attempt, CALLED, True, True, at),
    ]
    return LabelsFile(1, LabelledRun("bot", "r1"), tuple(labels))


def test_each_label_counts_once_and_a_called_label_stays_with_its_dialogue(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.convy]\n", encoding="utf-8")
    read = played(tmp_path)
    LabelsKept(read.folder).added(labelled(read))
    view = Summary(Runs(tmp_path / "results").one(read.folder)).view().agreement  # type: ignore[arg-type]
    assert view is not None and view.labels == 4 and view.unmatched == 0
    score = view.overall.score
    assert (score.labelled, score.agree) == (4, 3)
    low, high = proportion_confint(3, 4, method="wilson")
    assert score.accuracy is not None and (score.accuracy.low, score.accuracy.high) == (pytest.approx(low), pytest.approx(high))
    assert score.kappa is None and score.reading == "κ says nothing at 4 labels (fewer than 10): read the accuracy"
    rows = {row.claim: row.score for row in view.claims}
    assert (rows[CALLED].labelled, rows[CALLED].agree) == (1, 1)
    assert (rows[GREETS].labelled, rows[GREETS].agree) == (2, 1)
    assert len(view.disagreements) == 1  # the one label found wrong, once

    done = run_convy(tmp_path, "labels", "show", "r1")
    assert done.returncode == 0, done.stderr
    assert "decisions against people: 3/4 agree, accuracy 75% [30%, 95%]: κ says nothing at 4 labels" in done.stdout
    assert f"  hello · {CALLED}: 1/1 agree" in done.stdout


def test_the_labelled_attempts_decision_is_the_one_counted() -> None:
    # Two attempts of one dialogue, decided differently (a judge's noise): the label made on
    # attempt 2 is paired with attempt 2's decision, though attempt 1 comes first.
    transcript = Transcript((Turn("hi", Answer("hello"), True, 0.0, 0.0, NoUsage(), 0.0, 0.0),))
    outcomes = tuple(
        Outcome("s", number, "2026-12-02T14:00:00Z", 1.0, transcript, "finished", Verdict((Claim(GREETS, held, "r"),)))
        for number, held in ((1, True), (2, False))
    )
    label = KeptLabel(transcript.fingerprint(), "s", 2, GREETS, False, True, "2026-12-02T14:30:00.000Z", "bot", "r1")
    found = LabelledDecisions(outcomes, Book({label.key(): label})).decisions()
    assert [(one.attempt, one.decided) for one in found.values()] == [(2, False)]
    # an old label (said alone) of a dialogue with a tool call matches the attempt it names, no other
    called = Transcript((Turn("hi", Answer("hello", steps=(Call("lookup"),)), True, 0.0, 0.0, NoUsage(), 0.0, 0.0),))
    both = tuple(msgspec.structs.replace(one, transcript=called) for one in outcomes)
    old = KeptLabel(called.said_fingerprint(), "s", 1, GREETS, True, True, "2026-12-02T14:30:00.000Z", "bot", "r1")
    found = LabelledDecisions(both, Book({old.key(): old})).decisions()
    assert [(one.attempt, one.decided) for one in found.values()] == [(1, True)]


def test_the_fingerprint_holds_tool_calls_in_any_key_order_and_leaves_a_dialogue_without_calls_as_it_was() -> None:
    def said(*steps: Call) -> Transcript:
        return Transcript((Turn("hi", Answer("ok", steps=steps), True, 0.0, 0.0, NoUsage(), 0.0, 0.0),))

    plain = said()
    assert plain.fingerprint() == plain.said_fingerprint()  # labels made before still match
    one = said(Call("lookup", {"a": 1, "b": 2}, Reported(3)))
    assert one.fingerprint() == said(Call("lookup", {"b": 2, "a": 1}, Reported(3))).fingerprint()
    others = [said(Call("lookup", {"a": 1, "b": 3}, Reported(3))), said(Call("lookup", {"a": 1, "b": 2}, Reported(4))), said(Call("find", {"a": 1, "b": 2}, Reported(3))), plain]
    assert len({one.fingerprint(), *(other.fingerprint() for other in others)}) == 5


