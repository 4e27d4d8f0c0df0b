"""``ranked``: floats held in bounded memory, read back in order or ascending, as the whole would be."""

from __future__ import annotations

import math
import random
import tempfile

import pytest

from convy import ranked
from convy.percentiles import Ordered, Percentiles
from convy.ranked import InOrder, Merged, Ranked, Spill


@pytest.fixture
def small_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    # runs of 7 values, read back 3 at a time: the file is used from the eighth value on
    monkeypatch.setattr(ranked, "_HELD", 7)
    monkeypatch.setattr(ranked, "_BLOCK", 3)


def _values(count: int, seed: int) -> list[float]:
    chosen = random.Random(seed)
    # repeated values, both zeros and large and small magnitudes: order and sums are put to the test
    pool = [0.0, -0.0, 1e-300, 3.5, 3.5, 1e16, -2.25]
    return [chosen.choice(pool) if chosen.random() < 0.3 else chosen.uniform(-1e6, 1e6) for _ in range(count)]


@pytest.mark.parametrize("count", [0, 1, 6, 7, 8, 50, 701])
def test_ranked_gives_what_sorted_gives(small_runs: None, count: int) -> None:
    values = _values(count, count)
    kept = Ranked(Spill())
    for value in values[: count // 2]:
        kept.append(value)
    kept.extend(values[count // 2 :])
    assert len(kept) == count
    back = list(kept)
    assert back == sorted(values)
    # the same objects' signs too: -0.0 and 0.0 compare equal, their order is sorted's (stable)
    assert [math.copysign(1, value) for value in back] == [math.copysign(1, value) for value in sorted(values)]
    assert Ordered(kept).view() == Percentiles(values).view()


@pytest.mark.parametrize("count", [0, 1, 7, 8, 701])
def test_in_order_gives_the_values_as_added_and_sums_as_they_did(small_runs: None, count: int) -> None:
    values = _values(count, 100 + count)
    kept = InOrder(Spill())
    for value in values:
        kept.append(value)
    assert list(kept) == values
    assert sum(kept) == sum(values)
    assert math.fsum(kept) == math.fsum(values)


def test_many_share_one_file_and_merge_as_one(small_runs: None) -> None:
    spill = Spill()
    parts = [Ranked(spill) for _ in range(3)]
    everything: list[float] = []
    for at, value in enumerate(_values(300, 7)):
        parts[at % 3].append(value)  # interleaved: each part's runs lie between the others'
        everything.append(value)
        assert spill.held < 7  # what the three hold between them, the rest on the file
    assert [list(part) for part in parts] == [sorted(everything[at::3]) for at in range(3)]
    merged = Merged(parts)
    assert len(merged) == 300
    assert list(merged) == sorted(everything)
    assert Ordered(merged).view() == Percentiles(everything).view()


def test_what_is_added_while_reading_is_not_read(small_runs: None) -> None:
    kept = InOrder(Spill())
    kept.extend([1.0, 2.0, 3.0])
    reading = iter(kept)
    kept.append(4.0)
    assert list(reading) == [1.0, 2.0, 3.0]


def test_read_again_after_more_is_added_and_written(small_runs: None) -> None:
    """A ``Ranked`` read, added to, its values written to the file, and read again gives every
    value ascending each time (a read sorts what it holds, once)."""
    kept = Ranked(Spill())
    everything = [5.0, 1.0, 3.0]
    kept.extend(everything)
    assert list(kept) == [1.0, 3.0, 5.0]
    kept.extend([4.0, 0.0, 8.0, 2.0])  # seven held: all written to the file
    everything += [4.0, 0.0, 8.0, 2.0]
    kept.extend([9.0, -1.0, 4.5])  # as many held, unsorted, as when it was last read
    everything += [9.0, -1.0, 4.5]
    assert list(kept) == sorted(everything)
    for value in (7.0, 6.0, 0.5):
        kept.append(value)
        everything.append(value)
        assert list(kept) == sorted(everything)


def test_no_room_for_the_file_holds_the_values_and_the_figures_stay_right(small_runs: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A temporary folder that refuses the file (full, or not allowed) leaves the values held:
    the order and the spread are the same, only the memory is not bounded."""

    def refused(*arguments: object, **named: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", refused)
    spill = Spill()
    kept, ordered = Ranked(spill), InOrder(spill)
    values = _values(100, 9)
    for value in values:
        kept.append(value)
        ordered.append(value)
    assert list(kept) == sorted(values) and list(ordered) == values
    assert Ordered(kept).view() == Percentiles(values).view()


def test_a_merge_of_many_runs_reads_a_bounded_block_of_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs of one merge (a ``Ranked``'s, or every run of a ``Merged``'s parts) are read
    ``_MERGED`` values between them at a time, at least ``_LEAST`` each: a run shorter than
    ``_BLOCK`` was read whole, so a merge of many held every value it merged at once. The values
    come back as ``sorted`` of them all gives them."""
    monkeypatch.setattr(ranked, "_HELD", 40)
    monkeypatch.setattr(ranked, "_BLOCK", 30)
    monkeypatch.setattr(ranked, "_MERGED", 60)
    monkeypatch.setattr(ranked, "_LEAST", 2)
    asked: list[int] = []
    read = Spill.read

    def counted(self: Spill, start: int, count: int, most: int | None = None) -> object:
        asked.append(ranked._BLOCK if most is None else most)
        return read(self, start, count, most)

    monkeypatch.setattr(Spill, "read", counted)
    spill = Spill()
    parts = [Ranked(spill) for _ in range(3)]
    values = _values(900, 5)
    for at, value in enumerate(values):
        parts[at % 3].append(value)
    runs = sum(part.runs() for part in parts)
    assert runs == 3 * (900 // 40)
    assert list(Merged(parts)) == sorted(values)
    assert len(asked) == runs and set(asked) == {2}  # 60 over 66 runs: the least, 2 each
    asked.clear()
    assert list(parts[0]) == sorted(values[0::3])
    assert len(asked) == parts[0].runs() and set(asked) == {60 // parts[0].runs()}
