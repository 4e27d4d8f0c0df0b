"""The run folder's appends (``storage._Unflushed``): the disk synced in a thread while the run
plays on, the attempts that end meanwhile appended together next, and every attempt passed on
in the order it ended, once its line is on the disk."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec

import convy.storage
from convy import Answer, Bench, Limits, Models, Rule, RunJournal, RunSpec, Scenario
from convy.checks import Check
from convy.fakes import MemoryJournal

HELD = 60.0  # seconds the first sync waits for the loop to go on before it gives up (never, when it works)


class _Releasing:
    """An agent whose every turn lets the loop run once; its tenth turn releases ``released``."""

    def __init__(self, released: threading.Event) -> None:
        self.released = released
        self.turns = 0

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[_Releasing]:
        yield self

    async def turn(self, message: object) -> Answer:
        await asyncio.sleep(0)
        self.turns += 1
        if self.turns == 10:  # ten turns played: while the first append's sync is held, only if the loop plays on
            self.released.set()
        return Answer("hi")


def test_the_run_plays_on_while_the_disk_syncs_and_passes_each_attempt_on_in_order(tmp_path: Path, monkeypatch: Any) -> None:
    """The first sync is held until more attempts have ended: they can only end if the event loop
    plays while the disk syncs. Each is then passed on once its line is on the disk, in the
    order of the file."""
    synced = os.fdatasync
    released = threading.Event()
    calls: list[int] = []
    released_in_time: list[bool] = []

    def held(descriptor: int) -> None:
        calls.append(descriptor)
        if len(calls) == 1:
            released_in_time.append(released.wait(HELD))
        synced(descriptor)

    monkeypatch.setattr(convy.storage.os, "fdatasync", held)
    scenario = Scenario(id="s", script=("hi",), judge=(Rule(check=Check(said="hi")),))
    spec = RunSpec("r", "bot", (scenario,), 20, Limits(agent_places=1, judge_places=1))
    journal = RunJournal(tmp_path / "bot" / "r")
    shown = MemoryJournal()
    bench = Bench(_Releasing(released), Models(), spec.limits)
    asyncio.run(journal.play(spec, bench, shown))
    assert released_in_time == [True], "the loop stood still while the disk synced"
    lines = [msgspec.json.decode(line)["attempt"] for line in (journal.folder / "attempts.jsonl").read_bytes().splitlines()]
    assert sorted(lines) == list(range(1, 21))
    assert [outcome.attempt for outcome in shown.outcomes] == lines
    assert len(calls) < 20  # the attempts that ended while the disk synced went in together
