"""``page.Where`` refuses keys walked again that are not the keys packed: its check is a CRC-32
of the keys one after another, with nothing between them, and the count of the keys left over
after the last chunk. Keys cut differently (the same bytes in other keys) or a key of no bytes
taken away give the same CRC-32 and walk to the same end, so the index is written wrong with no
``ValueError``: the page would look a key up that is not there, or find one that was not packed."""

from __future__ import annotations

import pytest

from convy.page import Packed


@pytest.mark.parametrize(
    ("packed", "walked"),
    [
        (["a#1", "b#2"], ["a#1b#2"]),  # two keys walked again as one: the same bytes
        (["ab", "c"], ["a", "bc"]),  # the same bytes cut elsewhere
        (["a", ""], ["a"]),  # a key of no bytes left out
    ],
)
def test_keys_walked_again_that_are_not_the_keys_packed_are_refused(packed: list[str], walked: list[str]) -> None:
    values = [(key, number) for number, key in enumerate(packed)]
    index = list(Packed(values, keys=lambda: iter(walked)).blocks("v"))[-1]
    with pytest.raises(ValueError, match="not the keys packed"):
        list(index.pieces())
