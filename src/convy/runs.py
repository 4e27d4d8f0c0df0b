"""Run folders read back: every run under ``results/``, as it is on disk.

``Runs`` reads each ``results/<agent>/<run-id>/`` with the run folder's own decoders: a torn or
unreadable line is skipped and counted, a folder that cannot be read at all is an ``Unread`` with
its reason, and nothing here raises for a bad folder. A run whose ``run.json`` says it is running
while its lock is free was killed, and is shown as interrupted.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Literal

import msgspec

from convy.bench import Complete, Interrupted, RunFile, RunJournal, Running
from convy.problems import ConfigurationError
from convy.scenario import Outcome


class Read(msgspec.Struct, frozen=True):
    """One run folder, read: its ``run.json``, its attempts, and what could not be read."""

    folder: Path
    file: RunFile
    outcomes: tuple[Outcome, ...]
    broken: int
    playing: bool

    def status(self) -> Literal["finished", "interrupted", "running"]:
        """The run's status; a run marked running whose lock is free was killed: interrupted."""
        match self.file.status:
            case Complete():
                return "finished"
            case Interrupted():
                return "interrupted"
            case Running():
                return "running" if self.playing else "interrupted"

    def ended(self) -> str | None:
        match self.file.status:
            case Complete(ended=ended) | Interrupted(ended=ended):
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
    """Every run folder under ``results/``: ``results/<agent>/<run-id>/``."""

    results: Path

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
            kept = journal.kept()
            return Read(folder, file, kept.outcomes, kept.broken, journal.in_use())
        except ConfigurationError as error:
            return Unread(folder, str(error))
        except OSError as error:
            return Unread(folder, f"{folder}: cannot be read: {error.strerror}")
