"""Floats kept for their order: added one at a time, read back as added or ascending, in bounded memory.

A run's report gives the spread (min, median, 95th percentile, max) of every request's size and
every turn's time, exactly: the values at those ranks; and sums each attempt's times in the file's
order. Held in memory, that is 8 bytes a value, about 300 bytes an attempt of six turns, however
the rest of the run is streamed. The ``InOrder`` and ``Ranked`` of one ``Spill`` hold at most
``_HELD`` values between them: when they reach it, each writes what it holds, as one run (sorted,
for a ``Ranked``), to a temporary file they share. Read back, an ``InOrder``'s runs are chained and a
``Ranked``'s merged (``heapq.merge``; a ``Merged``'s runs all in one merge), each run read a
block at a time, then what it still holds: an ``InOrder``'s run ``_BLOCK`` values at a time, and
the runs of a merge ``_MERGED`` values between them (at least ``_LEAST`` each). A run of a few
thousand attempts never writes anything, and one of a million holds about ``_MERGED`` values of
what it reads, however many runs the file has.
"""

from __future__ import annotations

import heapq
import itertools
from array import array
from collections.abc import Iterable, Iterator
from typing import IO, Protocol

_HELD = 1 << 17  # values a spill's InOrder and Ranked hold between them before they write them: 1 MiB
_BLOCK = 1 << 12  # values read at a time from one run on the file: 32 KiB
# Values read at a time from all the runs merged in one reading, between them: 512 KiB. Read
# ``_BLOCK`` at a time each, the runs of a merge held more the more runs there were, one more a
# scenario every few thousand attempts: merging the agent's answer times of a run of 100,000
# attempts (42 runs) held 1.3 MiB of blocks, and a run of a million would hold ten times that.
# Each run of a merge is read this many values over how many runs it has at a time.
_MERGED = 1 << 16
_LEAST = 1 << 6  # values read at a time from one run, at the least, however many are merged


class Spill:
    """The temporary file the runs of some ``InOrder`` and ``Ranked`` go to, opened when the first
    run is written (most runs never write one) and gone with this. One that cannot be made or
    written to (no room in the temporary folder, none allowed) is not tried again: the values are
    then held, as they were before there was a file, and the figures stay right."""

    __slots__ = ("_file", "_end", "_kept", "_unwritable", "held")

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._end = 0
        self._kept: list[InOrder] = []
        self._unwritable = False
        self.held = 0  # values its InOrder and Ranked hold between them

    def keeps(self, kept: InOrder) -> None:
        self._kept.append(kept)

    def full(self) -> None:
        """Each of its values held written as a run: they reached ``_HELD``."""
        self.held = 0
        if self._unwritable:
            return
        try:
            for kept in self._kept:
                kept.flushed()
        except OSError:
            self._unwritable = True

    def written(self, values: array[float]) -> tuple[int, int]:
        """Write ``values`` at the file's end: where they start, in bytes, and how many. A write
        that fails leaves the end where it was, for the next to write over."""
        if self._file is None:
            import tempfile  # only for a run this large: it loads shutil and random, which a run does without

            self._file = tempfile.TemporaryFile(prefix="convy-ranked-")
        start = self._end
        self._file.seek(start)
        values.tofile(self._file)
        self._end = start + len(values) * values.itemsize
        return start, len(values)

    def read(self, start: int, count: int, most: int | None = None) -> Iterator[float]:
        """The ``count`` values written at ``start``, read ``most`` (``_BLOCK``) at a time."""
        assert self._file is not None
        file = self._file
        most = _BLOCK if most is None else most
        at, left = start, count
        while left:
            block = array("d")
            file.seek(at)
            block.fromfile(file, min(left, most))
            at += len(block) * block.itemsize
            left -= len(block)
            yield from block


class InOrder:
    """Floats read back (``iter``) in the order they were added, ``len`` of them; those held,
    with the others of its ``spill``, at most ``_HELD``, the rest on the spill's file. Read while
    values are still being added, it gives those added so far."""

    __slots__ = ("_spill", "_held", "_runs", "_count")

    def __init__(self, spill: Spill) -> None:
        self._spill = spill
        self._held = array("d")
        self._runs: list[tuple[int, int]] = []
        self._count = 0
        spill.keeps(self)

    def append(self, value: float) -> None:
        self._held.append(value)
        self._count += 1
        spill = self._spill
        spill.held += 1
        if spill.held >= _HELD:
            spill.full()

    def extend(self, values: Iterable[float]) -> None:
        held = self._held
        before = len(held)
        held.extend(values)
        self._count += len(held) - before
        spill = self._spill
        spill.held += len(held) - before
        if spill.held >= _HELD:
            spill.full()

    def flushed(self) -> None:
        """What it holds written to the spill's file as one run."""
        if self._held:
            self._runs.append(self._spill.written(self._ordered(self._held)))
            self._held = array("d")

    def _ordered(self, values: array[float]) -> array[float]:
        return values

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[float]:
        held = array("d", self._held)  # as it is now: more may be added while this is read
        if not self._runs:
            return iter(held)
        return itertools.chain(*(self._spill.read(start, count) for start, count in self._runs), held)


class Ranked(InOrder):
    """Floats read back ascending (``iter``), each run sorted as it goes to the file and the runs
    merged as they are read. Equal values come back in the order they were added (each run is
    sorted stably, and ``heapq.merge`` takes equal values in the order of its runs), so the values
    come back as ``sorted`` of them all would give them."""

    __slots__ = ("_ascending",)

    def __init__(self, spill: Spill) -> None:
        super().__init__(spill)
        self._ascending = 0  # how many of those held are sorted (all, once it is read and not added to)

    def flushed(self) -> None:
        super().flushed()
        self._ascending = 0

    def _ordered(self, values: array[float]) -> array[float]:
        return array("d", sorted(values))

    def __iter__(self) -> Iterator[float]:
        runs = self.ascending(len(self._runs))
        # Nothing on the file (every run of a few thousand attempts): what it holds, as it is, not
        # each value through a merge of one.
        return runs[0] if len(runs) == 1 else heapq.merge(*runs)

    def ascending(self, merged: int) -> list[Iterator[float]]:
        """Its runs, each ascending, to merge with ``merged`` runs in all (its own among them):
        each read from the file a block at a time, the blocks of all of them ``_MERGED`` values
        between them; then what it holds, sorted."""
        # Sorted where it is held, once for every reading that adds nothing between: sorting the
        # sorted start again, stably, with what came after, is sorting the whole once.
        if self._ascending != len(self._held):
            self._held = array("d", sorted(self._held))
            self._ascending = len(self._held)
        held = array("d", self._held)  # as it is now: more may be added while this is read
        most = min(_BLOCK, max(_LEAST, _MERGED // max(merged, 1)))
        return [*(self._spill.read(start, count, most) for start, count in self._runs), iter(held)]

    def runs(self) -> int:
        """How many runs it has on the file."""
        return len(self._runs)


class Merged:
    """Some ``Ranked`` read as one: their values ascending, as many as they hold together."""

    __slots__ = ("_parts",)

    def __init__(self, parts: Iterable[Ranked]) -> None:
        self._parts = tuple(parts)

    def __len__(self) -> int:
        return sum(len(part) for part in self._parts)

    def __iter__(self) -> Iterator[float]:
        merged = sum(part.runs() for part in self._parts)
        return heapq.merge(*(run for part in self._parts for run in part.ascending(merged)))


class Ascending(Protocol):
    """Values read ascending, and how many: a ``Ranked``, a ``Merged``, a sorted array."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[float]: ...
