"""A run's attempts held as where their lines begin in ``attempts.jsonl``, read again each time
they are walked.

``RunJournal.unsaid`` reads the file once and keeps of each attempt it keeps only its line's byte
offset (eight bytes, in an ``array``): ``Placed`` is then a sequence of the attempts that reads
each line again as it is asked for, one at a time through one open file, so whoever walks them —
the end of a run summing them, the report drawing each dialogue, JUnit, the Markdown summary —
holds one attempt at a time, not every one. Walking them again costs a decode a line (about
25 µs); holding them cost about 8 KB each.

Each walk yields the attempt as ``Outcome.unsaid`` keeps it (no words of its dialogue), or in
full (``full``) where its dialogue is shown. The file is only ever appended to or cut of a torn
last line by a process holding ``run.lock``, so a line read once reads the same again; one that
does not (the file replaced meanwhile) is a ``ConfigurationError`` saying so.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from pathlib import Path
from typing import overload

import msgspec

from convy.files import RegularFile
from convy.outcome import Outcome
from convy.problems import ConfigurationError

_OUTCOME = msgspec.json.Decoder(Outcome)


class Placed(Sequence[Outcome]):
    """The attempts whose lines begin at ``at`` in ``path``, in that order (a plain class: a
    ``Sequence`` the standard library's way, which a frozen record cannot be; nothing in it
    changes once it is made). ``longest`` bounds a line read, as ``RunJournal`` reads them."""

    __slots__ = ("_at", "_longest", "_path")

    def __init__(self, path: Path, at: array[int], longest: int) -> None:
        self._path, self._at, self._longest = path, at, longest

    @property
    def path(self) -> Path:
        return self._path

    def __len__(self) -> int:
        return len(self._at)

    @overload
    def __getitem__(self, index: int) -> Outcome: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Outcome]: ...

    def __getitem__(self, index: int | slice) -> Outcome | Sequence[Outcome]:
        if isinstance(index, slice):
            return Placed(self._path, self._at[index], self._longest)
        return next(iter(self.lines((self._at[index],)))).unsaid()

    def __iter__(self) -> Iterator[Outcome]:
        for outcome in self.lines(self._at):
            yield outcome.unsaid()

    def __repr__(self) -> str:
        # Short, as ``Kept``'s: asyncio may format a finished task's result.
        return f"Placed({len(self._at)} attempts of {self._path})"

    def chosen(self, indices: Iterable[int]) -> Placed:
        """The attempts at ``indices`` (their places here), in that order, as a ``Placed`` of their own."""
        at = self._at
        return Placed(self._path, array("q", (at[index] for index in indices)), self._longest)

    def full(self, indices: Iterable[int] | None = None) -> Iterator[Outcome]:
        """The attempts at ``indices`` (their places in this sequence; all, in order, when none
        are given), in full: their dialogues' words too."""
        at = self._at
        return self.lines(at if indices is None else (at[index] for index in indices))

    def lines(self, offsets: Iterable[int]) -> Iterator[Outcome]:
        """The attempts whose lines begin at ``offsets``, in full, in that order (none, with the
        file not opened, for none: a run that kept no attempt may have no file)."""
        offsets = iter(offsets)
        first = next(offsets, None)
        if first is None:
            return
        try:
            for line in RegularFile(self._path).at(chain((first,), offsets), self._longest):
                try:
                    yield _OUTCOME.decode(line)
                except (msgspec.MsgspecError, RecursionError):
                    raise ConfigurationError(f"{self._path}: changed while it was read: read it again") from None
        except OSError as error:
            raise ConfigurationError(f"{self._path}: cannot be read: {error.strerror}") from None
