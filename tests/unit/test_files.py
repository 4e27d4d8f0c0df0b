"""files.RegularFile.data: the whole file up to a limit, read a piece at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from convy.files import RegularFile, Unreadable


class _Small(RegularFile):
    PIECE = 3  # pieces far smaller than the files, so the limit falls inside one and between two


@pytest.mark.parametrize("size", [0, 1, 2, 3, 5, 6, 7, 9, 10])
def test_a_file_up_to_the_limit_is_read_whole_and_one_byte_over_is_refused(tmp_path: Path, size: int) -> None:
    path = tmp_path / "f"
    body = bytes(range(65, 65 + size))
    path.write_bytes(body)
    for most in range(0, 12):
        if size <= most:
            assert _Small(path).data(most) == body
            assert RegularFile(path).data(most) == body
        else:
            for kind in (_Small, RegularFile):
                with pytest.raises(Unreadable, match="larger than"):
                    kind(path).data(most)
