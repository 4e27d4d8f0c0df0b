"""Run folders read back: every run under ``results/``, as it is on disk.

``Runs`` reads each ``results/<agent>/<run-id>/`` with the run folder's own decoders: a torn or
unreadable line is skipped and counted, a folder that cannot be read at all is an ``Unread`` with
its reason, and nothing here raises for a bad folder. A run whose ``run.json`` says it is running
while its lock is free was killed, and is shown as interrupted. A run whose ``run.json`` is damaged
is still read from its attempts alone (``Guessed``), with a ``problem`` that says so and how to
recover. Reading writes nothing, not even a lock file.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Literal

import msgspec

from convy.judge import Verdict
from convy.outcome import Outcome
from convy.problems import ConfigurationError
from convy.records import Complete, Interrupted, Limits, RunFile, Running, RunSpec, Stopped
from convy.scenario import Scenario
from convy.storage import RunDamaged, RunJournal


class Read(msgspec.Struct, frozen=True):
    """One run folder, read: its ``run.json``, its attempts, and what could not be read."""

    folder: Path
    file: RunFile
    # Read whole, a tuple; read unsaid (``RunJournal.unsaid``), a ``Placed``: where each line
    # begins in attempts.jsonl, each attempt read again from there as it is walked.
    outcomes: Sequence[Outcome]
    broken: int
    playing: bool
    problem: str = ""
    guessed: bool = False  # run.json is damaged: ``file`` is what the folder and attempts tell

    def status(self) -> Literal["finished", "interrupted", "running", "stopped"]:
        """The run's status; a run marked running whose lock is free was killed: interrupted."""
        match self.file.status:
            case Complete():
                return "finished"
            case Interrupted():
                return "interrupted"
            case Stopped():
                return "stopped"
            case Running():
                return "running" if self.playing else "interrupted"

    def ended(self) -> str | None:
        match self.file.status:
            case Complete(ended=ended) | Interrupted(ended=ended) | Stopped(ended=ended):
                return ended
            case Running():
                return None

    def seconds(self) -> float | None:
        """From its start to its end; ``None`` while it has not ended."""
        ended = self.ended()
        if ended is None:
            return None
        try:
            return (datetime.fromisoformat(ended) - datetime.fromisoformat(self.file.status.started)).total_seconds()
        except ValueError:
            return None


class Unread(msgspec.Struct, frozen=True):
    """A folder under ``results/`` that could not be read as a run, and why."""

    folder: Path
    reason: str


class Runs(msgspec.Struct, frozen=True):
    """Every run folder under ``results/``: ``results/<agent>/<run-id>/``; ``unsaid``, each run's
    attempts read back unsaid: held as where their lines begin (``placed.Placed``), read
    again from there as they are walked, for a command that sums and reports them."""

    results: Path
    unsaid: bool = False

    def read(self) -> tuple[tuple[Read, ...], tuple[Unread, ...]]:
        """The runs that could be read, oldest first, and the folders that could not."""
        runs: list[Read] = []
        unread: list[Unread] = []
        for folder in self.folders():
            found = self.one(folder)
            match found:
                case Read():
                    runs.append(found)
                case Unread():
                    unread.append(found)
        runs.sort(key=lambda run: (run.file.status.started, run.file.spec.id))
        return tuple(runs), tuple(unread)

    def folders(self) -> Iterator[Path]:
        """Every folder that should be a run: ``results/<agent>/<run-id>/``, in order."""
        if not self.results.is_dir():
            return
        for agent in sorted(path for path in self.results.iterdir() if path.is_dir() and path.name != "compare" and path.name != "export"):
            yield from sorted(path for path in agent.iterdir() if path.is_dir())

    def one(self, folder: Path) -> Read | Unread:
        journal = RunJournal(folder)
        try:
            file = journal.run()
        except RunDamaged as error:
            damaged: RunDamaged | None = error
        except ConfigurationError as error:
            return Unread(folder, _printable(str(error)))
        else:
            damaged = None
        try:
            spec = file.spec if damaged is None else None
            kept = journal.unsaid(spec) if self.unsaid else journal.kept(spec)
        except ConfigurationError as error:
            return Unread(folder, _printable(str(error)))
        if damaged is None:
            return Read(folder, file, kept.outcomes, kept.broken, journal.in_use(), kept.note())
        if not kept.outcomes:
            return Unread(folder, _printable(str(damaged)))
        try:
            told = Guessed(folder, kept.outcomes).file()
        except ValueError as error:  # the folder's own names cannot be a run's
            return Unread(folder, _printable(f"{damaged}; {error}"))
        problem = (
            f"run.json is damaged; its {len(kept.outcomes)} attempts are read from attempts.jsonl "
            "alone (planned scenarios and settings unknown); restore run.json from a copy to resume it"
        )
        return Read(
            folder, told, kept.outcomes, kept.broken, False, "; ".join(filter(None, (problem, kept.note()))), guessed=True
        )


class Guessed(msgspec.Struct, frozen=True):
    """What a run's ``run.json`` said, as far as its folder and attempts tell: the agent and id from
    the folder's path, the scenarios played with the claims they were judged on, the most attempts
    played, and the time of the first and last attempt. Used only when ``run.json`` is damaged."""

    folder: Path
    outcomes: Sequence[Outcome]

    def file(self) -> RunFile:
        claims: dict[str, tuple[str, ...]] = {}
        for outcome in self.outcomes:
            match outcome.result:
                case Verdict(claims=decided) if decided:
                    claims.setdefault(outcome.scenario, tuple(claim.claim for claim in decided))
                case _:
                    claims.setdefault(outcome.scenario, ())
        unknown = "unknown: run.json is damaged"
        scenarios = tuple(Scenario(id=name, judge=said or (unknown,), script=(unknown,)) for name, said in claims.items())
        spec = RunSpec(
            id=self.folder.name,
            agent=self.folder.parent.name,
            scenarios=scenarios,
            attempts=max(outcome.attempt for outcome in self.outcomes),
            limits=Limits(),
        )
        moments = sorted(outcome.started for outcome in self.outcomes)
        return RunFile(spec, Interrupted(moments[0], moments[-1]))


def _printable(reason: str) -> str:
    """A reason on one printable line: it may quote a name read from the folder's files."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in reason)
