"""Human labels: ``convy labels add`` keeping a labels file in a run's folder (append-only, a
broken file said by its field, a torn line skipped, a file added twice adding nothing), labels
following a re-judged run to its source, and the agreement numbers of the report and of a
comparison on a small case worked by hand.

The runs are played by convy's bench with its fakes; the command is the real ``convy``.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from pathlib import Path

import msgspec
import pytest
from statsmodels.stats.proportion import proportion_confint
from support.process import run_convy

from convy.bench import Bench
from convy.comparison import Comparison
from convy.fakes import FakeAgent, FakeJudge, FakeModel
from convy.judge import Models
from convy.kappa import CohenKappa
from convy.labels import Label, LabelledRun, LabelsFile, LabelsKept, RunLabels
from convy.model import Reply
from convy.records import ModelNames, Origin, RunSpec
from convy.report import Summary
from convy.runs import Read, Runs
from convy.scenario import Scenario
from convy.storage import RunJournal

GREETS = "The agent greets the user."
BRIEF = "The agent is brief."
SCENARIO = Scenario(id="hello", script=("Hello",), judge=(GREETS, BRIEF), max_turns=1)


class Project:
    """A project folder with runs of one scenario played into ``results/``: the agent answers each
    attempt differently (so each dialogue has its own fingerprint), the judge decides ``GREETS``
    as ``greets`` says, attempt by attempt, and ``BRIEF`` always held."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (folder / "pyproject.toml").write_text("[tool.convy]\n", encoding="utf-8")

    def played(self, run: str, greets: list[bool], origin: Origin | None = None, agent: str = "bot") -> Read:
        answers = itertools.count(1)
        user = FakeModel(lambda messages: Reply("Thanks. ###STOP###"), name="fake-user")
        bench = Bench(FakeAgent(lambda text: f"Hi there, answer {next(answers)}"), Models(user=user, judge=FakeJudge(name="fake-judge")))
        spec = RunSpec(
            id=run,
            agent=agent,
            scenarios=(SCENARIO,),
            attempts=len(greets),
            limits=bench.limits,
            models=ModelNames(user="fake-user", judge="fake-judge"),
            origin=origin,
        )
        folder = self.folder / "results" / agent / run
        asyncio.run(RunJournal(folder).play(spec, bench))
        self.decided(folder, self.read(run, agent), greets)
        return self.read(run, agent)

    def decided(self, folder: Path, read: Read, greets: list[bool]) -> None:
        """The run's attempts kept again with ``GREETS`` decided as ``greets`` says, attempt by
        attempt (the attempts end in any order, and the judge cannot tell which one it decides)."""
        lines = []
        for outcome in sorted(read.outcomes, key=lambda one: one.attempt):
            held = greets[outcome.attempt - 1]
            claims = tuple(msgspec.structs.replace(one, held=held) if one.claim == GREETS else one for one in outcome.result.claims)  # type: ignore[union-attr]
            lines.append(msgspec.json.encode(msgspec.structs.replace(outcome, result=msgspec.structs.replace(outcome.result, claims=claims))))
        (folder / "attempts.jsonl").write_bytes(b"\n".join(lines) + b"\n")

    def read(self, run: str, agent: str = "bot") -> Read:
        found = Runs(self.folder / "results").one(self.folder / "results" / agent / run)
        assert isinstance(found, Read)
        return found

    def labels(self, read: Read, marks: dict[int, bool], claim: str = GREETS, at: str = "2026-12-02T14:30:00.000Z") -> LabelsFile:
        """A labels file as the page makes it: attempt → right, for ``claim``."""
        outcomes = {outcome.attempt: outcome for outcome in read.outcomes}
        labels = []
        for attempt, right in marks.items():
            outcome = outcomes[attempt]
            held = next(one.held for one in outcome.result.claims if one.claim == claim)  # type: ignore[union-attr]
            labels.append(Label(outcome.transcript.fingerprint(), outcome.scenario, attempt, claim, held, right, at))
        return LabelsFile(1, LabelledRun(read.file.spec.agent, read.file.spec.id), tuple(labels))

    def file(self, name: str, labels: LabelsFile | bytes) -> Path:
        path = self.folder / name
        path.write_bytes(labels if isinstance(labels, bytes) else msgspec.json.encode(labels))
        return path

    def convy(self, *arguments: str) -> tuple[int, str, str]:
        done = run_convy(self.folder, *arguments, timeout=120)
        return done.returncode, done.stdout, done.stderr


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


def test_labels_added_are_kept_once_and_counted(project: Project) -> None:
    run = project.played("r1", [True, True, False, True])
    path = project.file("labels.json", project.labels(run, {1: True, 2: False, 3: True}))
    code, out, err = project.convy("labels", "add", "r1", "labels.json")
    assert code == 0, err
    assert "labels: 3 added, 0 kept already" in out
    assert "results/bot/r1/labels.jsonl keeps 3" in out
    assert "decisions against people: 2/3 agree" in out
    kept = (run.folder / "labels.jsonl").read_bytes()
    assert kept.count(b"\n") == 3
    code, out, err = project.convy("labels", "add", "r1", str(path))  # the same file again: nothing new
    assert code == 0 and "labels: 0 added, 3 kept already" in out and "keeps 3" in out
    assert (run.folder / "labels.jsonl").read_bytes() == kept
    # A mind changed later: one more line, and the later label wins.
    later = project.file("later.json", project.labels(run, {2: True}, at="2026-12-02T15:00:00+00:00"))
    code, out, _ = project.convy("labels", "add", "r1", str(later))
    assert "labels: 1 added" in out and "3/3 agree" in out
    assert len(LabelsKept(run.folder).read().labels) == 3


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (b'{"version": 1, "run": {"agent": "bot", "id": "r1"}, "labels": [{"fingerprint": "00ff00ff00ff00ff", '
         b'"scenario": "hello", "attempt": 1, "claim": "c", "held": "yes", "right": true, "at": "2026-12-02T14:30:00Z"}]}',
         "labels[0].held: expected true or false"),
        (b'{"version": 2, "run": {"agent": "bot", "id": "r1"}, "labels": []}', "version"),
        (b'{"version": 1, "run": {"agent": "bot", "id": "r1"}, "labels": [{"fingerprint": "00ff00ff00ff00ff", '
         b'"scenario": "hello", "attempt": 1, "claim": "c", "held": true, "right": true, "at": "yesterday"}]}',
         "at: not a time"),
        (b'{"version": 1, "run": {"agent": "bot", "id": "r1"}, "label": []}', "label"),
        (b"not json", "not a labels file"),
    ],
)
def test_a_broken_labels_file_is_refused_naming_the_file_and_field(project: Project, text: bytes, said: str) -> None:
    run = project.played("r1", [True])
    project.file("broken.json", text)
    code, out, err = project.convy("labels", "add", "r1", "broken.json")
    assert code == 2
    assert "Traceback" not in err
    assert "broken.json" in err and said in err
    assert not (run.folder / "labels.jsonl").exists()


def test_an_oversize_file_and_a_fifo_are_refused(project: Project) -> None:
    project.played("r1", [True])
    with (project.folder / "huge.json").open("wb") as file:
        file.truncate(16 * 1024 * 1024 + 1)
    code, _, err = project.convy("labels", "add", "r1", "huge.json")
    assert code == 2 and "huge.json: cannot be read: larger than 16 MB" in err
    os.mkfifo(project.folder / "pipe.json")
    code, _, err = project.convy("labels", "add", "r1", "pipe.json")  # never waits on the pipe
    assert code == 2 and "pipe.json: cannot be read: not a regular file" in err


def test_a_torn_last_line_is_skipped_and_ended_before_the_next(project: Project) -> None:
    run = project.played("r1", [True, False])
    first = project.labels(run, {1: True})
    project.file("first.json", first)
    assert project.convy("labels", "add", "r1", "first.json")[0] == 0
    kept = run.folder / "labels.jsonl"
    whole = kept.read_bytes()
    with kept.open("ab") as file:  # a crash half way through the next line
        file.write(whole[: len(whole) // 2])
    book = LabelsKept(run.folder).read()
    assert len(book.labels) == 1 and book.broken == 1
    project.file("second.json", project.labels(run, {2: False}))
    code, out, _ = project.convy("labels", "add", "r1", "second.json")
    assert code == 0 and "labels: 1 added" in out
    book = LabelsKept(run.folder).read()
    assert len(book.labels) == 2 and book.broken == 1  # the torn line stays one unreadable line


def test_labels_follow_a_rejudged_run_to_its_source(project: Project) -> None:
    source = project.played("source", [True, True, False])
    project.file("labels.json", project.labels(source, {1: True, 2: False, 3: True}))
    assert project.convy("labels", "add", "source", "labels.json")[0] == 0
    # A re-judged run of the same dialogues: its own folder has no labels.jsonl.
    (project.folder / "results" / "bot" / "again").mkdir(parents=True)
    spec = msgspec.structs.replace(source.file.spec, id="again", origin=Origin("bot", "source"))
    again = project.folder / "results" / "bot" / "again"
    (again / "run.json").write_bytes(msgspec.json.encode(msgspec.structs.replace(source.file, spec=spec)))
    (again / "attempts.jsonl").write_bytes((source.folder / "attempts.jsonl").read_bytes())
    read = project.read("again")
    book = RunLabels(read.folder, read.file.spec).book()
    assert len(book.labels) == 3
    agreement = Summary(read).agreement()
    assert agreement is not None and agreement.overall.score.labelled == 3
    # A source that names the run back: the chain ends, each folder read once.
    looped = msgspec.structs.replace(source.file.spec, origin=Origin("bot", "again"))
    (source.folder / "run.json").write_bytes(msgspec.json.encode(msgspec.structs.replace(source.file, spec=looped)))
    assert len(RunLabels(read.folder, read.file.spec).book().labels) == 3
    # A source named by a path cannot be: nothing is followed out of results/ (test_audit_rejudge_labels).
    with pytest.raises(ValueError, match="agent: not a folder's name"):
        Origin("..", "elsewhere")


def test_the_reports_agreement_on_a_case_worked_by_hand(project: Project) -> None:
    # The judge said GREETS held, held, failed, held; people: attempt 1 right (truth held),
    # 2 wrong (failed), 3 right (failed), 4 unlabelled. Pairs (judge, people): (✓✓) (✓✗) (✗✗).
    run = project.played("r1", [True, True, False, True])
    assert Summary(run).agreement() is None and Summary(run).view().agreement is None  # no labels: none
    LabelsKept(run.folder).added(project.labels(run, {1: True, 2: False, 3: True}))
    view = Summary(project.read("r1")).view().agreement
    assert view is not None
    assert view.labels == 3 and view.unmatched == 0
    # Read back unsaid, as the end of ``convy run`` reads it: the dialogues the labels name are read again.
    kept = RunJournal(run.folder).unsaid(run.file.spec)
    assert Summary(msgspec.structs.replace(run, outcomes=kept.outcomes)).view().agreement == view
    score = view.overall.score
    assert (score.labelled, score.agree) == (3, 2)
    low, high = proportion_confint(2, 3, method="wilson")
    assert score.accuracy is not None
    assert score.accuracy.estimate == pytest.approx(2 / 3)
    assert (score.accuracy.low, score.accuracy.high) == (pytest.approx(low), pytest.approx(high))
    # p_o = 2/3; judge (not held, held) = (1/3, 2/3), people (2/3, 1/3): p_e = 4/9, κ = (2/9)/(5/9),
    # but at 3 labels κ says nothing (issue 26): not given, and said so.
    assert CohenKappa.of([(True, True), (True, False), (False, False)]).kappa() == pytest.approx(0.4)
    assert score.kappa is None
    assert score.reading == "κ says nothing at 3 labels (fewer than 10): read the accuracy"
    assert [(row.scenario, row.claim, row.score.labelled) for row in view.claims] == [("hello", GREETS, 3)]
    assert [(one.attempt, one.decided, one.truth) for one in view.disagreements] == [(2, True, False)]
    # Only BRIEF labelled, always held and always right: κ undefined, said in words, not NaN.
    brief = project.labels(project.read("r1"), {1: True, 2: True}, claim=BRIEF)
    LabelsKept(run.folder).added(brief)
    rows = {row.claim: row.score for row in Summary(project.read("r1")).view().agreement.claims}  # type: ignore[union-attr]
    assert rows[BRIEF].kappa is None and "undefined" in rows[BRIEF].reading
    assert msgspec.json.encode(rows[BRIEF]).find(b"NaN") < 0


def test_two_judges_compared_on_the_same_labels(project: Project) -> None:
    source = project.played("source", [True, True, False, True])
    LabelsKept(source.folder).added(project.labels(source, {1: True, 2: False, 3: True, 4: True}))
    results = project.folder / "results" / "bot"
    for name, greets in (("judge-a", [True, True, False, True]), ("judge-b", [True, False, False, True])):
        # Re-judged runs of the source's dialogues, with the GREETS decisions changed.
        folder = results / name
        folder.mkdir()
        spec = msgspec.structs.replace(source.file.spec, id=name, origin=Origin("bot", "source"))
        (folder / "run.json").write_bytes(msgspec.json.encode(msgspec.structs.replace(source.file, spec=spec)))
        project.decided(folder, source, greets)
    view = Comparison(project.read("judge-a"), project.read("judge-b")).view().judges
    assert view is not None and view.labels == 4  # one labelled claim in each of four dialogues
    assert [row.claim for row in view.claims] == [GREETS]
    overall = view.overall
    assert (overall.base.labelled, overall.base.agree) == (4, 3)  # judge a wrong on attempt 2 only
    assert (overall.candidate.labelled, overall.candidate.agree) == (4, 4)
    code, out, err = project.convy("compare", "judge-a", "judge-b")
    assert code == 0, err
    assert "judges against people (4 labelled decisions on the same dialogues):" in out
    assert "judge-a: 3/4 agree" in out and "judge-b: 4/4 agree" in out


def test_labels_show_and_a_run_that_is_not_there(project: Project) -> None:
    run = project.played("r1", [True, False])
    code, out, _ = project.convy("labels", "show", "r1")
    assert code == 0 and out == "results/bot/r1: no labels\n"
    LabelsKept(run.folder).added(project.labels(run, {1: True, 2: True}))
    code, out, _ = project.convy("labels", "show", "r1")
    assert code == 0 and "labels of 2 claims in distinct dialogues known, 0 of dialogues or claims not in this run" in out
    assert f"  hello · {GREETS}: 2/2 agree, accuracy 100%" in out
    code, _, err = project.convy("labels", "add", "nowhere", "labels.json")
    assert code == 2 and "no run matches 'nowhere'" in err


def test_what_stands_in_for_a_decision_cannot_be_labelled(project: Project) -> None:
    """A failed agent's "the agent answered" and a "not judged" line are no decider's: not markable."""
    from convy.agent import AgentFailure
    from convy.attempt import Attempt

    def broken(text: str) -> str:
        raise AgentFailure("down")

    user = FakeModel(lambda messages: Reply("Thanks. ###STOP###"), name="fake-user")
    bench = Bench(FakeAgent(broken), Models(user=user, judge=FakeJudge()))
    spec = RunSpec(id="failed", agent="bot", scenarios=(SCENARIO,), attempts=1, limits=bench.limits)
    asyncio.run(RunJournal(project.folder / "results" / "bot" / "failed").play(spec, bench))
    read = project.read("failed")
    decisions = Attempt(read.outcomes[0], 0.0).dialogue().decisions
    assert [one.markable for one in decisions] == [False]
    played = Attempt(project.played("r1", [True]).outcomes[0], 0.0).dialogue().decisions
    assert [one.markable for one in played] == [True, True]
