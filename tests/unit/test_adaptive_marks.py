"""A run of ``--attempts auto`` decides from its attempts' marks, not the attempts (issue 27 item
6): the course found from ``Marks`` (a byte an attempt) is the course found from the outcomes
themselves, for any attempts kept, under both rules; and neither the rounds nor the progress bar
hold an attempt once it is recorded, so a run's memory does not grow by an outcome an attempt."""

from __future__ import annotations

import asyncio
import gc
import random
import weakref
from decimal import Decimal
from pathlib import Path

from test_adaptive import RATES, SCENARIOS, bench

from convy.adaptive import Adaptive, Against, Marks, Narrow
from convy.budget import Budget, Earlier
from convy.outcome import Outcome
from convy.records import Limits, RunSpec
from convy.storage import RunJournal

IDS = tuple(RATES)


class Held(Outcome, weakref=True, gc=True):
    """An outcome whose going can be seen (a weak reference to it dies with the last strong one)."""


def held(outcome: Outcome) -> Held:
    return Held(**{name: getattr(outcome, name) for name in Outcome.__struct_fields__})


def every(tmp_path: Path, most: int) -> list[Outcome]:
    """Every attempt of ``most`` per scenario, played once with the rated judge (some not judged:
    a judge confident 0.9 under a trust of 0.95)."""
    fixed = RunSpec("all", "bot", SCENARIOS, most, Limits())
    return list(asyncio.run(RunJournal(tmp_path / "bot" / "all").play(fixed, bench())).outcomes)


def statuses(outcomes: list[Outcome], trust: float) -> dict[str, dict[int, str]]:
    """The statuses by scenario and number, as the course was found before marks: from the outcomes."""
    found: dict[str, dict[int, str]] = {}
    for outcome in outcomes:
        found.setdefault(outcome.scenario, {})[outcome.attempt] = outcome.status(trust)
    return found


def test_the_course_from_marks_is_the_course_from_the_outcomes(tmp_path: Path) -> None:
    """Random samples of attempts kept (gaps, every scenario or some), under ``Narrow`` and
    ``Against``: the course found from their marks equals the course found from their statuses,
    standing for standing, what it wants next included."""
    outcomes = every(tmp_path, 40)
    draw = random.Random(27)
    rules = (
        Adaptive(5, Narrow(0.3)),
        Adaptive(3, Narrow(0.15)),
        Adaptive(1, Against("bot", "base", base={"always": "1" * 30, "half": "10" * 15, "mostly": "1110" * 8})),
    )
    checked = 0
    for _ in range(60):
        kept = [one for one in outcomes if draw.random() < draw.choice((0.3, 0.8, 1.0))]
        draw.shuffle(kept)  # the order they ended in is not the order of their numbers
        trust = draw.choice((0.0, 0.95))
        for rule in rules:
            marked = rule.marked(IDS, Marks(trust, kept), 40)
            assert marked == rule.until.course(IDS, statuses(kept, trust), rule.least, 40)
            assert marked == rule.course(IDS, kept, 40, trust)
            checked += bool(marked.wanted())
    assert checked > 20  # many samples left attempts to want: the rounds' choice was compared too


class Watching:
    """A player of known outcomes, each recorded as a fresh ``Held``, that looks at the start of
    every round whether any it recorded in earlier rounds is still held by anyone."""

    def __init__(self, outcomes: dict[tuple[str, int], Outcome]) -> None:
        self.outcomes = outcomes
        self.budget: Budget | None = Budget(cost=1000.0)
        self.recorded: list[weakref.ref[Held]] = []
        self.rounds = 0
        self.earlier: list[tuple[object, int]] = []

    def budgeted(self, budget: Budget | None) -> Watching:
        return self

    async def run(self, planned, journal, earlier=()):  # type: ignore[no-untyped-def]
        # The play's flushing task writes the last lines, in a thread, and lets them go: waited
        # for, up to a bound no machine comes near.
        for _ in range(2000):
            gc.collect()
            if all(ref() is None for ref in self.recorded):
                break
            await asyncio.sleep(0.005)
        assert [ref for ref in self.recorded if ref() is not None] == []
        self.rounds += 1
        self.earlier.append((earlier, len(self.recorded)))
        for one in planned:
            outcome = held(self.outcomes[(one.scenario.id, one.attempt)])
            self.recorded.append(weakref.ref(outcome))
            journal.record(outcome)
            del outcome
        return None


def test_the_rounds_hold_no_attempt_once_it_is_recorded(tmp_path: Path) -> None:
    """Each round's player finds every attempt of the rounds before it gone (the rounds keep each
    one's mark, not it), and is handed what the run spent so far, not the attempts: the run still
    stops where the rule says."""
    table = {(one.scenario, one.attempt): one for one in every(tmp_path, 60)}
    spec = RunSpec("r", "bot", SCENARIOS, 60, Limits(), adaptive=Adaptive(5, Narrow(0.3)))
    player = Watching(table)

    kept = asyncio.run(RunJournal(tmp_path / "bot" / "r").play(spec, spec.player(player)))  # type: ignore[arg-type]

    assert player.rounds > 2
    for spent, before in player.earlier:  # each round starts from what every attempt before it spent
        assert isinstance(spent, Earlier) and spent.kept == before and spent.cost == Decimal("0.10") * before
    assert len(player.recorded) == len(kept.outcomes)
    course = spec.adaptive.course(IDS, kept.outcomes, 60, 0.0)  # type: ignore[union-attr]
    assert course.wanted() == [] and course.planned() == len(kept.outcomes)


def test_the_spent_a_round_starts_from_is_what_the_attempts_spent(tmp_path: Path) -> None:
    """A ``Spending`` started from ``Earlier`` counts as one started from the attempts themselves."""
    outcomes = every(tmp_path, 5)
    budget = Budget(cost=100.0, tokens=10**6)
    whole = budget.spending(outcomes)
    again = budget.spending(whole.spent())
    fields = ("cost", "unpriced", "tokens", "unreported", "most_cost", "most_tokens", "longest", "kept")
    assert [getattr(again, name) for name in fields] == [getattr(whole, name) for name in fields]
    assert whole.cost == Decimal("0.10") * len(outcomes) and whole.kept == len(outcomes)
    assert again.spent() == whole.spent()


def test_the_progress_bar_holds_no_attempt_once_shown(tmp_path: Path) -> None:
    """``Printed`` finds the bar's total from the marks of the attempts shown: none is held."""
    from convy.cli.console import Printed, Shown

    outcomes = every(tmp_path, 20)
    rule = Adaptive(5, Narrow(0.3))
    totals: list[int] = []

    class Bar:
        def update(self, task: object, **fields: object) -> None:
            if "total" in fields:
                totals.append(fields["total"])  # type: ignore[arg-type]

    refs: list[weakref.ref[Held]] = []
    with open(tmp_path / "lines", "w") as out:
        printed = Printed(Shown(out), Bar(), 0, 0.0, lambda marks: rule.marked(IDS, marks, 20).planned())
        for outcome in outcomes:
            one = held(outcome)
            refs.append(weakref.ref(one))
            printed.record(one)
            del one
    gc.collect()
    assert [ref for ref in refs if ref() is not None] == []
    # the totals the bar was given when it held the attempts, found from them
    total, expected = rule.course(IDS, (), 20, 0.0).planned(), []
    for count in range(1, len(outcomes) + 1):
        if count >= total:
            total = max(count, rule.course(IDS, outcomes[:count], 20, 0.0).planned())
            expected.append(total)
    assert totals == expected and len(set(totals)) > 2
