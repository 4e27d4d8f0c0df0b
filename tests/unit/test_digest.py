"""``digest._Table`` holds a run's rows as columns of small numbers (``_Codes``, as narrow as the
numbers so far allow) and gives each row back as it was added, however wide its columns grew.
What the digest gives of whole runs is held to the attempts themselves in test_storage_unsaid."""

from __future__ import annotations

from typing import get_args

from convy.causes import Cause
from convy.digest import AttemptDigest, Status, _Codes, _Table


def test_codes_are_a_byte_each_until_a_number_outgrows_them() -> None:
    codes = _Codes()
    for number in range(256):
        codes.append(number)
    assert codes.values.typecode == "B" and codes.values.itemsize == 1
    codes.append(256)
    assert codes.values.typecode == "H"
    codes.append(65_535)
    assert codes.values.typecode == "H"
    codes.append(65_536)
    codes.append(2**32 - 1)
    assert codes.values.typecode == "I"
    assert list(codes.values) == [*range(257), 65_535, 65_536, 2**32 - 1]


def test_a_table_gives_back_each_row_it_was_given_through_every_width() -> None:
    """Rows whose combinations (scenario, status, why, cause, stop, marks) outgrow a byte and then
    two, and whose numbers outgrow two bytes, come back equal, each at its place."""
    statuses: tuple[Status, ...] = get_args(Status)
    causes: tuple[Cause | None, ...] = (None, *get_args(Cause))
    rows = [
        AttemptDigest(
            at,
            f"s{at % 70_000}",
            at * 7 + 1,
            statuses[at % 3],
            ("", "agent", "user")[at % 3],
            causes[at % 5],
            ("done", "turns")[at % 2],
            at % 300,
            at / 3,
            tuple(range(at % 4)),
        )
        for at in range(70_100)
    ]
    table = _Table()
    widths = set()
    for row in rows:
        table.add(row)
        widths.add(table.kinds[1].values.typecode)
    assert widths == {"B", "H", "I"} and table.attempts.values.typecode == "I" and table.turns.values.typecode == "H"
    assert len(table) == len(rows)
    assert [table.row(at) for at in range(len(table))] == rows
