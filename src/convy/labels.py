"""Human labels: people marking a run's decisions right or wrong, kept in the run's folder, and a
decider measured against them.

A person marks decisions in a report's scenario window; the page keeps the marks in the browser
and downloads them as a labels file (a page opened from disk cannot write one), a JSON document:

    {"version": 1,
     "run": {"agent": "shop", "id": "20261202-141200-ab12"},
     "labels": [{"fingerprint": "<Transcript.fingerprint()>", "scenario": "refund/late",
                 "attempt": 2, "claim": "The agent offers a refund", "held": true,
                 "right": false, "at": "2026-12-02T14:30:00.000Z"}]}

``run`` is the run whose page it was made on; each label names the dialogue (its fingerprint,
which is the same whoever judged it), the scenario and attempt it was seen in, the claim, the
decision shown (``held``), whether the person found it right, and when. The human truth of a
claim in a dialogue is the decision shown when marked right, its opposite when marked wrong.

``convy labels add RUN FILE`` (``LabelsAdded``) appends the file's labels to ``labels.jsonl`` in
the run's folder, one line each, flushed to the disk (decision 8), never rewriting what is there;
a line torn by a crash is ended first, so it stays one unreadable line, skipped when read. A label
already kept, the same in every field, is not added again, so adding a file twice adds nothing.
The labels of one dialogue's claim may differ (a person changed their mind, or marked the same
dialogue in another run): the latest by its time ``at`` wins, and of two at the same time the one
kept last.

A run's labels (``RunLabels``) are its own and, for a re-judged run, those of the run it was
derived from (``RunSpec.origin``), and of that run's source in turn: labels follow the dialogue,
so a re-judged run is measured against the labels of the run it decided again. ``Agreement``
measures a run's decisions against them, ``Judges`` two runs' on the same ones.

``convy labels add`` takes no lock on the run: ``labels.jsonl`` is a file no play writes, so
labelling a run while it still plays is safe, and two adds at once are kept apart by an ``flock``
on ``labels.jsonl`` itself (each appends its lines whole, having read what the other kept).
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import ClassVar, Literal

import msgspec

from convy.files import RegularFile
from convy.judge import Failed, NoVerdict, Verdict
from convy.kappa import CohenKappa
from convy.outcome import Outcome
from convy.problems import ConfigurationError, FieldProblem, Unwritable
from convy.records import FolderName, RunSpec
from convy.stats import Interval, Tally, Wilson
from convy.storage import RunJournal
from convy.views import AgreementRow, AgreementView, Disagreement, IntervalView, JudgesRow, JudgesView, ScoreView

_FINGERPRINT = re.compile(r"[0-9a-f]{16,64}")

Key = tuple[str, str]  # (a dialogue's fingerprint, a claim's text)


class LabelledRun(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The run whose page a labels file was made on: names of folders, as the run's own (kept on
    every line of ``labels.jsonl``, so one too long would make every line too long to read back)."""

    agent: str
    id: str

    def __post_init__(self) -> None:
        FolderName("agent", self.agent).check()
        FolderName("id", self.id).check()


class Label(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One decision a person marked: the dialogue, where it was seen, the claim, the decision shown
    (``held``), whether it was right, and when (ISO 8601, as the browser's clock said)."""

    fingerprint: str
    scenario: str
    attempt: int
    claim: str
    held: bool
    right: bool
    at: str

    LONGEST: ClassVar[int] = 10_000

    def __post_init__(self) -> None:
        if not _FINGERPRINT.fullmatch(self.fingerprint):
            raise ValueError("fingerprint: not a dialogue's fingerprint (hex digits)")
        if not 1 <= self.attempt <= RunSpec.MOST_ATTEMPTS:
            raise ValueError(f"attempt: must be between 1 and {RunSpec.MOST_ATTEMPTS:,}")
        for field, text in (("scenario", self.scenario), ("claim", self.claim)):
            if not text:
                raise ValueError(f"{field}: must not be empty")
            if len(text) > self.LONGEST:
                raise ValueError(f"{field}: longer than {self.LONGEST:,} characters")
        try:
            moment = datetime.fromisoformat(self.at)
        except ValueError:
            raise ValueError("at: not a time (ISO 8601, as 2026-12-02T14:30:00.000Z)") from None
        if moment.tzinfo is None:
            raise ValueError("at: a time needs its offset from UTC (Z, or +01:00)")

    def key(self) -> Key:
        return (self.fingerprint, self.claim)

    def truth(self) -> bool:
        """Whether the claim held, as the person saw it: the decision shown if right, else not it."""
        return self.held if self.right else not self.held

    def moment(self) -> datetime:
        return datetime.fromisoformat(self.at)


class LabelsFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A labels file as the page downloads it (the module's docstring shows one)."""

    version: Literal[1]
    run: LabelledRun
    labels: tuple[Label, ...]

    MOST: ClassVar[int] = 100_000

    def __post_init__(self) -> None:
        if len(self.labels) > self.MOST:
            raise ValueError(f"labels: more than {self.MOST:,}")


class KeptLabel(Label, frozen=True, forbid_unknown_fields=True):
    """A label as ``labels.jsonl`` keeps it, one a line: the file's label with the run it was made on."""

    agent: str
    run: str


class LabelsDownload(msgspec.Struct, frozen=True):
    """A labels file named on the command line, read whole within a bound and decoded strictly;
    anything wrong is a ``ConfigurationError`` naming the file and the field."""

    path: Path

    MOST_BYTES: ClassVar[int] = 16 * 1024 * 1024

    def read(self) -> LabelsFile:
        try:
            data = RegularFile(self.path).data(self.MOST_BYTES)
        except OSError as error:
            raise ConfigurationError(f"{self.path}: cannot be read: {error.strerror or error}") from None
        try:
            return msgspec.json.decode(data, type=LabelsFile)
        except msgspec.ValidationError as error:
            raise ConfigurationError(f"{self.path}: {FieldProblem(str(error), LabelsFile).text()}") from None
        except (msgspec.DecodeError, RecursionError) as error:
            raise ConfigurationError(f"{self.path}: not a labels file (JSON): {error}") from None


class Book(msgspec.Struct, frozen=True):
    """Labels by dialogue and claim, the latest of each; ``broken``: lines that could not be read."""

    labels: dict[Key, KeptLabel]
    broken: int = 0

    def merged(self, other: Book) -> Book:
        """Both books' labels, the latest of each key (this book's on a tie)."""
        labels = dict(other.labels)
        for key, label in self.labels.items():
            found = labels.get(key)
            if found is None or label.moment() >= found.moment():
                labels[key] = label
        return Book(labels, self.broken + other.broken)


_KEPT = msgspec.json.Decoder(KeptLabel)
_ENCODER = msgspec.json.Encoder()


class LabelsAdded(msgspec.Struct, frozen=True):
    """What ``convy labels add`` did: the labels it appended, those kept already, all it keeps now."""

    added: int
    known: int
    kept: int


class LabelsKept(msgspec.Struct, frozen=True):
    """A run folder's ``labels.jsonl``: appended to, never rewritten."""

    folder: Path

    NAME: ClassVar[str] = "labels.jsonl"
    LONGEST_LINE: ClassVar[int] = 256 * 1024

    def path(self) -> Path:
        return self.folder / self.NAME

    def read(self) -> Book:
        """Every label kept, the latest of each dialogue's claim; a torn last line, or any line that
        cannot be read, is skipped and counted. No file: no labels (one failed open, no more)."""
        return Book(*self._lines()[:2])

    def _lines(self) -> tuple[dict[Key, KeptLabel], int, set[KeptLabel]]:
        labels: dict[Key, KeptLabel] = {}
        every: set[KeptLabel] = set()
        broken = 0
        try:
            for line in RegularFile(self.path()).lines(self.LONGEST_LINE):
                if line is not None and not line.strip():
                    continue
                if line is None or not line.endswith(b"\n"):  # too long, or the last one cut short
                    broken += 1
                    continue
                try:
                    label = _KEPT.decode(line)
                except (msgspec.MsgspecError, RecursionError):
                    broken += 1
                    continue
                every.add(label)
                found = labels.get(label.key())
                if found is None or label.moment() >= found.moment():
                    labels[label.key()] = label
        except FileNotFoundError:
            pass
        except OSError as error:
            raise ConfigurationError(f"{self.path()}: cannot be read: {error.strerror or error}") from None
        return labels, broken, every

    def added(self, file: LabelsFile) -> LabelsAdded:
        """Append the file's labels not kept already, flushed to the disk, under an ``flock`` of the
        file so two adds at once neither interleave nor both add the same label."""
        path = self.path()
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        except OSError as error:
            raise Unwritable(path, error) from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            size = os.fstat(descriptor).st_size
            _, _, every = self._lines()
            new = [KeptLabel(**msgspec.structs.asdict(label), agent=file.run.agent, run=file.run.id) for label in file.labels]
            fresh = list(dict.fromkeys(label for label in new if label not in every))
            data = b"".join(_ENCODER.encode(label) + b"\n" for label in fresh)
            # A line a crash cut short is ended, so it stays one line that cannot be read, not the
            # start of the next.
            if data and size and os.pread(descriptor, 1, size - 1) != b"\n":
                data = b"\n" + data
            self._appended(descriptor, data, size)
        except OSError as error:
            raise Unwritable(path, error) from None
        finally:
            os.close(descriptor)
        if size == 0 and data:
            self._synced_folder()
        return LabelsAdded(len(fresh), len(set(new)) - len(fresh), len(every) + len(fresh))

    def _appended(self, descriptor: int, data: bytes, size: int) -> None:
        """Write ``data`` at the end and flush it; a refused write is cut off again, so the file
        still ends with a whole line."""
        written = 0
        view = memoryview(data)
        try:
            while written < len(data):
                written += os.write(descriptor, view[written:])
            if data:
                os.fdatasync(descriptor)
        except OSError:
            try:
                os.ftruncate(descriptor, size)
            except OSError:
                pass
            raise

    def _synced_folder(self) -> None:
        """The new file's name flushed to the disk with its folder (decision 8)."""
        try:
            folder = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return
        try:
            os.fsync(folder)
        except OSError:
            pass
        finally:
            os.close(folder)


class RunLabels(msgspec.Struct, frozen=True):
    """A run's labels: its own, and those of the run it was re-judged from (``spec.origin``), and
    of that one's source, and so on, at most ``DEEPEST`` runs back; a run met twice ends the
    chain, as does a source that is gone or cannot be read (its labels are then not counted)."""

    folder: Path
    spec: RunSpec

    DEEPEST: ClassVar[int] = 16

    def book(self) -> Book:
        book = LabelsKept(self.folder).read()
        results = self.folder.parent.parent
        seen = {self.folder.resolve()}
        origin = self.spec.origin
        for _ in range(self.DEEPEST):  # an Origin is a plain name of a folder: none leads out of results/
            if origin is None:
                break
            folder = results / origin.agent / origin.run
            if folder.resolve() in seen:
                break
            seen.add(folder.resolve())
            book = book.merged(LabelsKept(folder).read())
            try:
                origin = RunJournal(folder).run().spec.origin
            except ConfigurationError:  # gone, or damaged: the chain ends here
                break
        return book


class Decision(msgspec.Struct, frozen=True, gc=False):
    """One decision of a claim in a dialogue a person labelled, and the label's truth."""

    scenario: str
    attempt: int
    claim: str
    by: str
    decided: bool
    truth: bool


class LabelledDecisions(msgspec.Struct, frozen=True):
    """The decisions of some attempts that people labelled: every decision of a claim made by a
    judge or by code (a failed agent and a dialogue not judged decide none).

    A label counts once. Several attempts may hold the same dialogue (an agent that answers alike
    every time): the label is of the dialogue, so it is paired with one decision, that of the
    attempt it was made on when that attempt is here and holds it, else the first such attempt by
    scenario and number — never copied to each (which counted 3 labels as 24 pairs). A label made
    before tool calls were part of a dialogue's fingerprint (``Transcript.said_fingerprint``) still
    matches, on the attempt it names only."""

    outcomes: Sequence[Outcome]
    book: Book

    def decisions(self) -> dict[Key, Decision]:
        found: dict[Key, Decision] = {}
        labels = self.book.labels
        if not labels:
            return found
        claims = {claim for _, claim in labels}
        for outcome in sorted(self.outcomes, key=lambda one: (one.scenario, one.attempt)):
            match outcome.result:
                case Verdict(claims=decided) | NoVerdict(checks=decided):
                    pass
                case Failed():
                    continue
            if not any(claim.claim in claims for claim in decided):
                continue  # no fingerprint taken of a dialogue none of whose claims is labelled
            fingerprints = [outcome.transcript.fingerprint()]
            if outcome.transcript.called():
                fingerprints.append(outcome.transcript.said_fingerprint())
            for claim in decided:
                for index, fingerprint in enumerate(fingerprints):
                    label = labels.get((fingerprint, claim.claim))
                    if label is None:
                        continue
                    own = (label.scenario, label.attempt) == (outcome.scenario, outcome.attempt)
                    if index and not own:
                        continue  # an old label of a dialogue with tool calls: its own attempt alone
                    if label.key() in found and not own:
                        continue
                    found[label.key()] = Decision(outcome.scenario, outcome.attempt, claim.claim, claim.by, claim.held, label.truth())
        return found


class Score(msgspec.Struct, frozen=True):
    """Decisions against people's truth: accuracy with its Wilson interval, and Cohen's κ."""

    pairs: tuple[tuple[bool, bool], ...]  # (decided, truth)

    # Below this many labels κ is not given: its large-sample interval does not hold, and one label
    # more or less swings it from "fair" to "less than chance" (4 labels, 3 agreeing, can give κ 0).
    FEWEST: ClassVar[int] = 10

    def view(self) -> ScoreView:
        agree = sum(decided == truth for decided, truth in self.pairs)
        accuracy = Wilson(Tally(agree, len(self.pairs))).interval()
        kappa = CohenKappa.of(list(self.pairs))
        interval = kappa.interval()
        reading = kappa.reading() + self._unsure(interval)
        if interval is not None and len(self.pairs) < self.FEWEST:  # undefined or one-sided: said as such
            interval = None
            reading = f"κ says nothing at {len(self.pairs)} label{'s' if len(self.pairs) != 1 else ''} (fewer than {self.FEWEST}): read the accuracy"
        return ScoreView(
            labelled=len(self.pairs),
            agree=agree,
            accuracy=None if accuracy is None else IntervalView(estimate=accuracy.estimate, low=accuracy.low, high=accuracy.high),
            kappa=None if interval is None else IntervalView(estimate=interval.estimate, low=interval.low, high=interval.high),
            reading=reading,
        )

    def _unsure(self, interval: Interval | None) -> str:
        """Said after κ's words when its interval holds 0: too few labels to tell it from chance."""
        if interval is None or not interval.low <= 0 <= interval.high or interval.estimate == 0:
            return ""
        return " (its interval holds 0: too few labels to tell it from chance)"


class Agreement(msgspec.Struct, frozen=True):
    """A run's decisions against its human labels, per claim of each scenario and overall, with the
    decisions people found wrong; ``None`` when the run has no labels."""

    outcomes: Sequence[Outcome]
    book: Book

    MOST_SHOWN: ClassVar[int] = 500

    def view(self) -> AgreementView | None:
        if not self.book.labels and not self.book.broken:
            return None
        decided = LabelledDecisions(self.outcomes, self.book).decisions()
        every = sorted(decided.values(), key=lambda one: (one.scenario, one.attempt))
        rows: dict[tuple[str, str], list[Decision]] = {}
        for one in every:
            rows.setdefault((one.scenario, one.claim), []).append(one)
        wrong = [Disagreement(**msgspec.structs.asdict(one)) for one in every if one.decided != one.truth]
        return AgreementView(
            labels=len(self.book.labels),
            unmatched=len(self.book.labels) - len(decided),
            broken=self.book.broken,
            overall=AgreementRow(scenario="", claim="", by="", score=Score(tuple((one.decided, one.truth) for one in every)).view()),
            claims=[
                AgreementRow(scenario=scenario, claim=claim, by=ones[0].by, score=Score(tuple((one.decided, one.truth) for one in ones)).view())
                for (scenario, claim), ones in rows.items()
            ],
            disagreements=wrong[: self.MOST_SHOWN],
            more=max(0, len(wrong) - self.MOST_SHOWN),
        )


class Judges(msgspec.Struct, frozen=True):
    """Two runs' decisions against one human truth (both runs' labels, the latest of each), on the
    labelled dialogue claims both decided: two judges compared on the same ground truth. ``None``
    when they share none."""

    base: Sequence[Outcome]
    candidate: Sequence[Outcome]
    book: Book

    def view(self) -> JudgesView | None:
        if not self.book.labels:
            return None
        first = LabelledDecisions(self.base, self.book).decisions()
        second = LabelledDecisions(self.candidate, self.book).decisions()
        shared = [key for key in first if key in second]
        if not shared:
            return None
        rows: dict[tuple[str, str], tuple[list[Decision], list[Decision]]] = {}
        for key in shared:
            row = rows.setdefault((first[key].scenario, key[1]), ([], []))
            row[0].append(first[key])
            row[1].append(second[key])
        every = ([first[key] for key in shared], [second[key] for key in shared])
        return JudgesView(
            labels=len(shared),
            overall=self._row("", "", every),
            claims=[self._row(scenario, claim, both) for (scenario, claim), both in sorted(rows.items())],
        )

    def _row(self, scenario: str, claim: str, both: tuple[Iterable[Decision], Iterable[Decision]]) -> JudgesRow:
        base, candidate = (Score(tuple((one.decided, one.truth) for one in side)).view() for side in both)
        return JudgesRow(scenario=scenario, claim=claim, base=base, candidate=candidate)
