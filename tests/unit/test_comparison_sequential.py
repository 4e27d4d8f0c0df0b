"""``convy compare`` of a pair one of which was played against the other until a sequential
comparison stopped it (``convy run --against BASE --attempts auto``): the comparison leads with
that anytime-valid verdict and keeps its fixed-design test for description only; a candidate
played against some other base is said not to carry its verdict over to this pair.

The runs are played by convy's bench with the fakes (``fakes.Rated`` holds a claim at a known
rate), as tests/unit/test_against.py plays them, and then with the real command on a project of
fakes."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import msgspec
import pytest
from test_against import MODELS, NAMES, SCENARIOS, against, based, bench, project
from test_exit_codes import convy, runs

from convy.comparison import Comparison
from convy.fakes import Rated
from convy.markdown import ComparisonSummary, Numbers
from convy.records import Limits, RunSpec
from convy.report import Summary
from convy.runs import Read, Runs
from convy.sequential import Decided
from convy.storage import RunJournal

WORSE = Rated({f"passes {name}": 0.5 for name in NAMES})
GOOD = Rated({f"passes {name}": 0.9 for name in NAMES})


def read(folder: Path, id: str) -> Read:
    found = Runs(folder).one(folder / "bot" / id)
    assert isinstance(found, Read)
    return found


def played_against(folder: Path) -> tuple[str, str, subprocess.CompletedProcess[str]]:
    """With the real command in the project of fakes at ``folder``: a base at 0.9, then a
    candidate at 0.5 played against it (up to 30 attempts per scenario). Their ids, and the
    candidate's command as it ended."""
    assert convy(folder, "run").returncode == 0
    (base,) = runs(folder)
    (folder / "models.py").write_text(MODELS.format(rate=0.5))
    done = convy(folder, "run", "--attempts", "auto", "--against", base, "--max-attempts", "30")
    assert done.returncode == 0, done.stderr
    (candidate,) = set(runs(folder)) - {base}
    return base, candidate, done


@pytest.fixture
def played(tmp_path: Path) -> Path:
    """A base at 0.9; a candidate at 0.5 played against it until decided; a second base at 0.9
    played apart (no --against)."""
    base = based(tmp_path, GOOD)
    spec = against("c", base)
    asyncio.run(RunJournal(tmp_path / "bot" / "c").play(spec, spec.player(bench(WORSE))))
    other = RunSpec("other", "bot", SCENARIOS, 40, Limits())
    asyncio.run(RunJournal(tmp_path / "bot" / "other").play(other, bench(GOOD)))
    return tmp_path


def test_a_candidate_played_against_this_base_leads_with_the_sequential_verdict(played: Path) -> None:
    view = Comparison(read(played, "base"), read(played, "c")).view()
    sequential = view.sequential
    assert sequential is not None and sequential.applies and sequential.played == "candidate"
    course = Summary(read(played, "c")).course()
    assert course is not None and isinstance(course.verdict, Decided)
    assert sequential.verdict == "worse" == course.verdict.direction
    assert sequential.e == course.verdict.e >= sequential.threshold == 20.0 and sequential.alpha == 0.05
    assert sequential.attempts == course.verdict.attempts == view.candidate.judged  # each judged attempt was scored
    assert sequential.said == Summary(read(played, "c")).against()  # as the candidate's report says it
    assert sequential.said.startswith("real change: worse, e = ")
    assert sequential.against == "bot/base"
    assert "this pair's verdict" in sequential.note and "α = 0.05" in sequential.note
    assert sequential.fixed.startswith("For description only, not valid for a verdict")
    # The fixed-design numbers are still there, unchanged: the same as of the pair with no rule.
    assert view.real and view.verdict == "worse" and view.p < 0.05
    # Each scenario's own anytime-valid verdict (its e-value alone, e-BH) beside the fixed one.
    own = {one.scenario: one.own for one in course.standings}  # type: ignore[union-attr]
    for change in view.scenarios:
        mine = own[change.id]
        assert mine is not None
        assert (change.sequential, change.sequential_e) == (mine.change, mine.e)
    assert sequential.counts == {name: sum(1 for one in view.scenarios if one.sequential == name) for name in ("worse", "better", "same")}
    assert sum(sequential.counts.values()) == len(NAMES)


def test_the_pair_compared_the_other_way_round_reads_the_verdict_from_base_to_candidate(played: Path) -> None:
    """The run played against the other is the comparison's base: the verdict still applies (its
    null, the same rate in both, has no side), its direction seen from base to candidate."""
    forward = Comparison(read(played, "base"), read(played, "c")).view()
    view = Comparison(read(played, "c"), read(played, "base")).view()
    sequential = view.sequential
    assert sequential is not None and forward.sequential is not None
    assert sequential.applies and sequential.played == "base"
    assert sequential.verdict == "better" and sequential.e == forward.sequential.e
    assert sequential.said.startswith("real change: better, e = ") and "from base to candidate" in sequential.said
    assert "read from base to candidate" in sequential.note
    flipped = {"worse": "better", "better": "worse", "same": "same"}
    backward = {one.id: one.sequential for one in view.scenarios}
    assert backward == {one.id: flipped[one.sequential] for one in forward.scenarios if one.sequential}


def test_a_candidate_played_against_another_base_says_the_verdict_does_not_apply(played: Path) -> None:
    view = Comparison(read(played, "other"), read(played, "c")).view()
    sequential = view.sequential
    assert sequential is not None and not sequential.applies
    assert sequential.against == "bot/base"
    assert "played against bot/base, not against this base" in sequential.note
    assert "does not apply to this one" in sequential.note
    assert sequential.fixed == "" and sequential.counts == {}
    assert all(one.sequential is None and one.sequential_e is None for one in view.scenarios)
    assert view.real and view.verdict == "worse"  # the fixed-design test is this pair's verdict


def test_a_pair_of_runs_played_to_their_end_has_no_sequential_verdict(played: Path) -> None:
    view = Comparison(read(played, "base"), read(played, "other")).view()
    assert view.sequential is None
    assert all(one.sequential is None for one in view.scenarios)


def test_an_undecided_candidate_says_no_verdict_and_marks_the_fixed_test_all_the_same(tmp_path: Path) -> None:
    """No change (both at 0.9, exactly): the run ends undecided; the fixed-design numbers, of
    attempts whose number the rule chose, are still for description only."""
    base = based(tmp_path, GOOD, attempts=20)
    spec = against("c", base, most=20)
    asyncio.run(RunJournal(tmp_path / "bot" / "c").play(spec, spec.player(bench(GOOD))))
    view = Comparison(read(tmp_path, "base"), read(tmp_path, "c")).view()
    sequential = view.sequential
    assert sequential is not None and sequential.applies
    assert sequential.verdict == "undecided" and sequential.e < sequential.threshold
    assert "no verdict" in sequential.said, sequential.said
    assert sequential.fixed.startswith("For description only")


def test_the_markdown_summary_leads_with_the_sequential_verdict(played: Path) -> None:
    base, candidate, other = read(played, "base"), read(played, "c"), read(played, "other")
    view = Comparison(base, candidate).view()
    assert view.candidate.rate is not None
    rates = f"90.0% → {Numbers.pct(view.candidate.rate.estimate)}"
    text = ComparisonSummary(view, Summary(base), Summary(candidate), played / "page.html", played).markdown()
    lead = text.index(f"**Pass rate {rates}: ▼ worse — a real change (anytime-valid)**")
    fixed = text.index("Fixed-design test, **for description only** (not valid for a verdict after early stopping): ▼ worse")
    assert lead < fixed
    assert "e-value against 1/α = 20, α = 0.05" in text
    assert "| Change (fixed-design) | Anytime-valid |" in text
    apart = Comparison(other, candidate).view()
    text = ComparisonSummary(apart, Summary(other), Summary(candidate), played / "page.html", played).markdown()
    assert "> **The sequential verdict does not apply to this pair:** " in text
    assert "(anytime-valid)" not in text and f"**Pass rate {rates}: ▼ worse — a real change**" in text


def test_the_command_says_the_sequential_verdict_first_and_where_it_does_not_apply(tmp_path: Path) -> None:
    """The real command: a base, a worse candidate played against it, and a second base played
    apart. ``convy compare`` of the first pair leads with the anytime-valid verdict; of the second
    it says the verdict does not apply; the Markdown summary and the page's data say the same."""
    folder = project(tmp_path)
    base, candidate, done = played_against(folder)
    verdict = next(line for line in done.stdout.splitlines() if line.startswith(f"against bot/{base}: "))
    said = verdict.removeprefix(f"against bot/{base}: ")
    assert said.startswith("real change: worse")
    (folder / "models.py").write_text(MODELS.format(rate=0.9))
    assert convy(folder, "run").returncode == 0
    (other,) = set(runs(folder)) - {base, candidate}

    compared = convy(folder, "compare", base, candidate, "--summary", "pair.md")
    assert compared.returncode == 0, compared.stderr
    lines = compared.stdout.splitlines()
    assert lines[0] == f"anytime-valid (the candidate was played against this base): {said}"
    assert lines[1].startswith("fixed-design test, for description only (not valid for a verdict after early stopping): pass rate ")
    assert lines[1].endswith(": real (worse)")
    assert any(line.startswith("scenarios, anytime-valid (each alone, e-BH): ") for line in lines)
    assert "(anytime-valid)" in (folder / "pair.md").read_text()
    page = (folder / "results" / "compare" / f"{base}--{candidate}.html").read_text()
    assert '"applies":true' in page

    apart = convy(folder, "compare", other, candidate, "--summary", "apart.md")
    assert apart.returncode == 0, apart.stderr
    lines = apart.stdout.splitlines()
    assert lines[0] == f"note: the candidate was played against bot/{base}, not this base: its sequential verdict does not apply to this pair"
    assert lines[1].startswith("pass rate ") and "anytime-valid" not in apart.stdout
    assert "does not apply to this pair" in (folder / "apart.md").read_text()

    gate = convy(folder, "compare", base, candidate, "--fail-on-regression")
    assert gate.returncode == 4, gate.stdout + gate.stderr  # the anytime-valid verdict says worse

    plain = convy(folder, "compare", base, other)
    assert plain.returncode == 0 and plain.stdout.startswith("pass rate ") and "sequential" not in plain.stdout


def test_fail_on_regression_goes_by_the_sequential_verdict_when_it_is_this_pairs(played: Path) -> None:
    """``--fail-on-regression``: the anytime-valid verdict decides for a pair it applies to, even
    where the fixed-design test (not valid after early stopping) says otherwise; for any other pair
    the fixed-design test does."""
    view = Comparison(read(played, "base"), read(played, "c")).view()
    sequential = view.sequential
    assert sequential is not None and sequential.applies and sequential.verdict == "worse"
    assert view.real and view.verdict == "worse" and view.regressed()
    undecided = msgspec.structs.replace(view, sequential=msgspec.structs.replace(sequential, verdict="undecided"))
    assert not undecided.regressed()  # the fixed test alone says worse: not a regression
    better = msgspec.structs.replace(view, sequential=msgspec.structs.replace(sequential, verdict="better"))
    assert not better.regressed()
    apart = msgspec.structs.replace(view, sequential=msgspec.structs.replace(sequential, applies=False))
    assert apart.regressed()  # another pair's verdict: the fixed-design test decides
    noise = msgspec.structs.replace(view, real=False, sequential=msgspec.structs.replace(sequential, applies=False))
    assert not noise.regressed()


def test_a_hostile_base_name_kept_in_run_json_does_nothing_on_the_terminal(tmp_path: Path) -> None:
    """The base a run names in its rule is read from its run.json: a name carrying a terminal
    escape is written out by the command, never sent to the terminal."""
    folder = project(tmp_path)
    assert convy(folder, "run").returncode == 0
    (base,) = runs(folder)
    (folder / "models.py").write_text(MODELS.format(rate=0.5))
    assert convy(folder, "run", "--attempts", "auto", "--against", base, "--max-attempts", "30").returncode == 0
    (candidate,) = set(runs(folder)) - {base}
    path = folder / "results" / "bot" / candidate / "run.json"
    saved = json.loads(path.read_text())
    saved["spec"]["adaptive"]["until"]["run"] = "x\x1b]0;owned\x07\x1b[31m"
    path.write_text(json.dumps(saved))
    done = convy(folder, "compare", base, candidate)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert done.stdout.startswith("note: the candidate was played against bot/x")
    assert "does not apply to this pair" in done.stdout.splitlines()[0]
