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
import pytest

import convy.storage
from convy import Answer, Bench, Limits, Models, Rule, RunJournal, RunSpec, Scenario
from convy.checks import Check
from convy.fakes import MemoryJournal
from convy.judge import NoVerdict
from convy.outcome import Outcome
from convy.records import Interrupted
from convy.transcript import Transcript
from convy.vital import DeadService

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


class _Stopping:
    """A player whose one attempt ends, and which stops the run (a participant refused for good)
    once that attempt's line is syncing in the thread."""

    budget = None

    def __init__(self, syncing: threading.Event) -> None:
        self.syncing = syncing

    async def run(self, planned: Any, journal: Any, earlier: Any = ()) -> None:
        one = next(iter(planned))
        journal.record(Outcome(one.scenario.id, one.attempt, "2026-01-01T00:00:00.000+00:00", 0.1, Transcript(), "finished", NoVerdict("user", "x")))
        for _ in range(100_000):  # until the flushing task's thread is in the sync (the loop turns meanwhile)
            if self.syncing.is_set():
                break
            await asyncio.sleep(0.001)
        raise DeadService((), 0)


def test_a_stop_while_the_disk_syncs_waits_for_it_and_passes_its_attempts_on(tmp_path: Path, monkeypatch: Any) -> None:
    """The run stops while the thread syncs an attempt's line: the stop waits for that sync (held
    until the stop asks for what is left), passes the attempt on, and a new run that kept an
    attempt keeps its folder."""
    synced = os.fdatasync
    syncing, released = threading.Event(), threading.Event()

    def held(descriptor: int) -> None:
        syncing.set()
        released.wait(HELD)
        synced(descriptor)

    flushed = convy.storage._Unflushed.flushed

    def stopped(self: Any) -> None:
        released.set()  # the thread is still in its sync as the stop's append begins
        flushed(self)

    monkeypatch.setattr(convy.storage.os, "fdatasync", held)
    monkeypatch.setattr(convy.storage._Unflushed, "flushed", stopped)
    scenario = Scenario(id="s", script=("hi",), judge=(Rule(check=Check(said="hi")),))
    spec = RunSpec("r", "bot", (scenario,), 2, Limits(agent_places=1, judge_places=1))
    journal = RunJournal(tmp_path / "bot" / "r")
    shown = MemoryJournal()
    with pytest.raises(DeadService):
        asyncio.run(journal.play(spec, _Stopping(syncing), shown))  # type: ignore[arg-type]
    assert [outcome.attempt for outcome in shown.outcomes] == [1]
    assert (journal.folder / "attempts.jsonl").read_bytes().count(b"\n") == 1
    assert isinstance(journal.run().status, Interrupted)
