"""Every run on one page (``Index``), and every run as the index lists it, from each run's ``summary.json`` while it still sums its file (``Listing``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import msgspec

from convy.counted import Counted
from convy.files import RegularFile, Replaced
from convy.problems import ConfigurationError
from convy.report import Summary
from convy.runs import Read, Runs, Unread
from convy.storage import RunJournal
from convy.totals import _SUMMED, Listed, Stamp, Summed, Totals
from convy.views import (
    ComparisonLink,
    IndexView,
    RunRow,
    Suggestion,
    TrendPoint,
)


class Index(msgspec.Struct, frozen=True):
    """Every run on one page: a row each, a pass-rate trend per agent, and the comparisons made.

    ``comparisons`` are the comparison pages' names (``<base>--<candidate>``); hrefs are relative
    to ``results/``, where the index is written. ``comparable`` says whether a comparison of two
    runs (base, candidate) would be sound: ``comparison.comparable``, given by the caller (this
    module is below the comparison's); ``None`` takes every pair of finished runs of an agent as
    comparable. The trend joins a run to the one before it only when both finished and they are
    comparable, and the pair the index offers to compare is a comparable one.
    """

    runs: tuple[Read | Listed, ...]
    unread: tuple[Unread, ...] = ()
    comparisons: tuple[str, ...] = ()
    comparable: Callable[[Read, Read], bool] | None = None

    def view(self) -> IndexView:
        read = {(self._read(run).file.spec.agent, self._read(run).file.spec.id): self._read(run) for run in self.runs}
        rows = [self._row(run) for run in self.runs]
        rows.sort(key=lambda row: row.started, reverse=True)
        trends: dict[str, list[TrendPoint]] = {}
        before: dict[str, RunRow] = {}
        for row in sorted(rows, key=lambda row: row.started):
            last = before.get(row.agent)
            joined = last is not None and self._alike(read[(last.agent, last.run)], read[(row.agent, row.run)])
            trends.setdefault(row.agent, []).append(
                TrendPoint(
                    run=row.run,
                    started=row.started,
                    rate=None if row.rate is None else row.rate.estimate,
                    name=row.name,
                    finished=row.status == "finished",
                    joined=joined,
                )
            )
            before[row.agent] = row
        links = []
        for name in self.comparisons:
            base, _, candidate = name.partition("--")
            links.append(ComparisonLink(base=base, candidate=candidate, href=f"compare/{name}.html"))
        return IndexView(
            runs=rows,
            trends=trends,
            comparisons=links,
            skipped=[f"{unread.folder.name}: {unread.reason}" for unread in self.unread],
            agents=sorted(trends),
            suggested=self.suggested(rows, read),
        )

    def _read(self, run: Read | Listed) -> Read:
        match run:
            case Listed(run=read):
                return read
            case Read():
                return run

    def _alike(self, base: Read, candidate: Read) -> bool:
        """Whether two runs of an agent may be compared: both finished, and sound to compare."""
        if base.status() != "finished" or candidate.status() != "finished":
            return False
        return True if self.comparable is None else self.comparable(base, candidate)

    def _row(self, run: Read | Listed) -> RunRow:
        match run:
            case Listed(run=read):
                return run.row(f"{read.file.spec.agent}/{read.file.spec.id}/report.html")
            case Read():
                return Summary(run).row(f"{run.file.spec.agent}/{run.file.spec.id}/report.html")

    def suggested(self, rows: list[RunRow], read: dict[tuple[str, str], Read] | None = None) -> Suggestion | None:
        """The pair the index offers to compare (``rows`` newest first): the newest run that has an
        earlier comparable one of the same agent (``_alike``), against the latest of those; with
        no comparable pair, none (the page then leaves the choice to the reader)."""
        for at, later in enumerate(rows):
            for earlier in rows[at + 1 :]:
                if earlier.agent != later.agent:
                    continue
                if read is None or self._alike(read[(earlier.agent, earlier.run)], read[(later.agent, later.run)]):
                    return Suggestion(base=earlier.run, candidate=later.run)
        return None


class Listing(msgspec.Struct, frozen=True):
    """Every run under ``results/`` as the index lists it, from each run's ``summary.json`` while
    it matches the run's attempts, else from the run read whole (and its summary written anew)."""

    results: Path

    MOST_BYTES: ClassVar[int] = 16 * 1024 * 1024  # a larger summary.json is summed again, not read

    def every(self, known: tuple[Listed, ...] = ()) -> tuple[tuple[Listed, ...], tuple[Unread, ...]]:
        """The runs, oldest first, and the folders that could not be read; those ``known`` (just
        summed by the caller) as they are given, their folders not read again."""
        listed: list[Listed] = []
        unread: list[Unread] = []
        given = {one.run.folder: one for one in known}
        for folder in Runs(self.results).folders():
            found = given[folder] if folder in given else self.one(folder)
            match found:
                case Listed():
                    listed.append(found)
                case Unread():
                    unread.append(found)
        listed.sort(key=lambda one: (one.run.file.status.started, one.run.file.spec.id))
        return tuple(listed), tuple(unread)

    def one(self, folder: Path) -> Listed | Unread:
        journal = RunJournal(folder)
        try:
            stamp = self.stamp(folder)  # before anything is read: a later append makes it stale
            file = journal.run()
            fresh = self._fresh(folder, stamp)
        except ConfigurationError as error:
            return Unread(folder, str(error))
        except OSError as error:
            return Unread(folder, f"{folder}: cannot be read: {error.strerror}")
        playing = journal.in_use()
        match fresh:
            case (totals,):
                return Listed(Read(folder, file, (), 0, playing), totals)
            case _:
                pass
        # Counted in one pass over its attempts, none of them held (a run of 10,000 held whole to
        # sum its totals took 80 MB); a file convy will not read is said as ``Runs`` says it.
        try:
            counted = Counted.of(folder, file.spec)
        except ConfigurationError as error:
            match Runs(self.results).one(folder):
                case Unread() as unread:
                    return unread
                case _:
                    return Unread(folder, str(error))
        totals = Totals.counted(counted)
        if not playing:
            self._written(folder, Summed(stamp, totals))
        return Listed(Read(folder, file, (), counted.lines.broken, playing, counted.lines.note()), totals)

    @staticmethod
    def kept(summary: Summary) -> None:
        """Keep the totals of a run just summed in its ``summary.json``."""
        folder = summary.run.folder
        Listing._written(folder, Summed(Listing.stamp(folder), summary.totals()))

    @staticmethod
    def stamp(folder: Path) -> Stamp:
        try:
            found = os.stat(folder / "attempts.jsonl")
        except FileNotFoundError:
            return Stamp(0, 0)
        return Stamp(found.st_size, found.st_mtime_ns)

    def _fresh(self, folder: Path, stamp: Stamp) -> tuple[Totals, ...]:
        """The totals ``summary.json`` keeps, if they sum the attempts as they are now; none when
        it is missing, torn, of another format or stale."""
        try:
            summed = _SUMMED.decode(RegularFile(folder / "summary.json").data(self.MOST_BYTES))
        except (OSError, msgspec.MsgspecError):  # missing, a FIFO or folder in its place, too big, torn
            return ()
        return (summed.totals,) if summed.format == 1 and summed.stamp == stamp else ()

    @staticmethod
    def _written(folder: Path, summed: Summed) -> None:
        try:
            Replaced(folder / "summary.json").written((msgspec.json.encode(summed),))
        except OSError:
            pass  # a folder that cannot be written to is summed again next time
