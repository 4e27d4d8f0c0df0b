"""What `convy compare` says of a change at few attempts (issue 26, item 2), by the real command on
a project of fakes: "same" only when the data show it, the Δ interval and the smallest detectable
change never of zero width, attempts that differ compared by rate, a re-judge compared with its
run, and a pair that is not comparable given no verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.fakeproject import MODELS, Command, FakeProject

from convy.comparison import Comparison
from convy.runs import Runs
from convy.stats import Tally

KEY = "sk-comparison-words-0123456789"
AGENT = """\
from pathlib import Path

from convy.fakes import FakeAgent

WORSE = Path(__file__).resolve().parent.parent / "worse"


def answer(text):
    return "bye" if WORSE.exists() else "hello " + text


agent = FakeAgent(answer)
"""
GREET = "script: [hi]\njudge:\n  - check: {said: hello}\n"


class Pairs:
    """A project of two scenarios and the runs played in it, by name."""

    def __init__(self, where: Path) -> None:
        self.folder = FakeProject(AGENT, MODELS, {"s0.yaml": GREET, "s1.yaml": GREET}, 3).written(where)
        self.command = Command(self.folder, KEY)
        self.named: dict[str, str] = {}

    def played(self, name: str, *arguments: str, worse: bool = False, **variables: str) -> str:
        marker = self.folder / "worse"
        if worse:
            marker.touch()
        else:
            marker.unlink(missing_ok=True)
        before = self._ids()
        done = self.command.ran(*arguments, **variables)
        assert done.returncode in (0, 1, 3), done.stdout + done.stderr
        (made,) = self._ids() - before
        self.named[name] = made
        return made

    def compare(self, base: str, candidate: str, *more: str) -> tuple[int, list[str]]:
        done = self.command.ran("compare", self.named[base], self.named[candidate], *more)
        return done.returncode, (done.stdout + done.stderr).splitlines()

    def _ids(self) -> set[str]:
        folder = self.folder / "results" / "bot"
        return {one.name for one in folder.iterdir()} if folder.exists() else set()


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> Pairs:
    made = Pairs(tmp_path_factory.mktemp("words") / "project")
    made.played("good", "run")
    made.played("bad", "run", worse=True)
    made.played("six", "run", "--attempts", "6")
    made.played("again", "rejudge", made.named["good"], "--judge-repeats", "3")
    return made


def test_three_of_three_to_none_is_undecided_per_scenario_and_said_in_one_sentence(pairs: Pairs) -> None:
    """Before: "Δ -100.0% [-100.0%, -100.0%]" and "scenarios: 0 worse, 0 better, 2 same"."""
    code, lines = pairs.compare("good", "bad")
    assert code == 0
    assert "pass rate 100.0% → 0.0%, Δ -100.0% [-100.0%, -35.1%], p = 0.005: real (worse)" in lines
    assert (
        "real (worse) across these scenarios taken together, though no single scenario is decided at 3 attempts "
        "(2 of 2 moved that way)"
    ) in lines
    assert "scenarios: 0 worse, 0 better, 2 undecided at 3 attempts (2 worse seen), 0 same (within ±10 pts)" in lines


def test_attempts_that_differ_are_compared_by_rate_with_a_detectable_change_that_is_never_zero(pairs: Pairs) -> None:
    """Before: "! not comparable: attempts per scenario differ: 3 → 6", Δ [+0.0%, +0.0%], exit 9, MDE 0.0 pts."""
    code, lines = pairs.compare("good", "six", "--fail-on-regression")
    assert code == 0, lines
    assert "pass rate 100.0% → 100.0%, Δ +0.0% [-26.5%, +45.9%], p = 1: within noise" in lines
    assert any(line.startswith("note: attempts per scenario differ: 3 → 6; every scenario is compared by its rate") for line in lines)
    assert not any("not comparable" in line for line in lines)
    runs = {one.file.spec.id: one for one in Runs(pairs.folder / "results").read()[0]}
    view = Comparison(runs[pairs.named["good"]], runs[pairs.named["six"]]).view()
    assert view.mde is not None and round(view.mde * 100, 1) == 53.0


def test_a_rejudge_is_comparable_with_its_run(pairs: Pairs) -> None:
    """Before: "! not comparable: the judging differs: …" and exit 9."""
    code, lines = pairs.compare("good", "again", "--fail-on-regression")
    assert code == 0, lines
    assert "pass rate 100.0% → 100.0%, Δ +0.0% [-39.0%, +39.0%], p = 1: within noise" in lines
    assert any(line.endswith("; that is what this re-judging compares") for line in lines)
    assert not any("not comparable" in line for line in lines)


def test_a_pair_that_is_not_comparable_gets_no_verdict_and_fails_the_gate(pairs: Pairs) -> None:
    if "apart" not in pairs.named:
        pairs.played("apart", "run", worse=True, CONVY_JUDGE_REPEATS="3")
    code, lines = pairs.compare("good", "apart", "--fail-on-regression")
    assert code == 9
    headline = next(line for line in lines if line.startswith("pass rate"))
    assert headline.endswith(": – no verdict: not comparable: the judging differs: asked 1×, majority, evidence flag → asked 3×, majority, evidence flag")
    assert "real (worse)" not in headline


def test_same_needs_an_interval_within_ten_points_and_unjudged_is_undecided() -> None:
    from convy.comparison import Changes

    same = Changes.change("s", Tally(300, 300), Tally(299, 300), 1.0, 1.0, "worse")
    assert (same.change, same.said) == ("same", "same (within ±10 pts)")
    few = Changes.change("s", Tally(3, 3), Tally(3, 3), 1.0, 1.0, "same")
    assert (few.change, few.said) == ("undecided", "undecided at 3 attempts")
    none = Changes.change("s", Tally(0, 0), Tally(3, 3), 1.0, 1.0, "same")
    assert (none.change, none.said) == ("undecided", "undecided: not judged in both runs")
    assert Changes((none, few)).counts() == "0 worse, 0 better, 2 undecided at 3 attempts (no change seen; 1 not judged in both runs), 0 same (within ±10 pts)"
