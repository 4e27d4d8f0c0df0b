"""bench/bare_floor.py's last line: what it says of a client refused at most once."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bare_floor.py"


def test_the_line_of_a_client_refused_at_most_once_gives_such_a_client(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The last line says "a client refused at most once: 1.181x (floor + 1 s) at best", but the
    figure is ``best[1]``: the best worst ratio to the floor plus one second of every client, one
    refused twice included (the client it names above is refused twice at 300, 1,200 and 3,000 a
    minute). Played with a family of two, one planning no climb after its first refusal (refused
    at most once) and one planning a climb (refused twice), the line must give the first's figure."""
    spec = importlib.util.spec_from_file_location("bare_floor", BENCH)
    assert spec is not None and spec.loader is not None
    bare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bare)
    once, twice = bare.Client(0.1, 2.0), bare.Client(0.1, 2.0, 2.0, 1.05)
    monkeypatch.setattr(bare, "clients", lambda opening, waiting: iter((once, twice)))
    monkeypatch.setattr(sys, "argv", ["bare_floor.py"])
    bare.main()
    said = capsys.readouterr().out.splitlines()[-1]
    rates = [5.0 * 10 ** (index / 120) for index in range(121)] + [5.0, 20.0, 50.0]
    games = [bare.played(once, rate, 10.0, 0.1, 5.0) for rate in rates]
    assert max(game.refused for game in games) <= 1
    assert max(bare.played(twice, rate, 10.0, 0.1, 5.0).refused for rate in rates) == 2
    worst = max(game.wall / (game.floor + 1) for game in games)
    assert said == f"a client refused at most once: {worst:.3f}x (floor + 1 s) at best"
