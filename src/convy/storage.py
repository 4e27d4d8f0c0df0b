"""A run's folder on disk, kept by ``RunJournal``::

    results/<agent>/<run-id>/
        run.json        the RunSpec and the run's status, rewritten whole and atomically
        attempts.jsonl  one Outcome per line, appended the moment an attempt ends
        run.lock        held while a process plays the run

A process killed mid-write leaves at most a torn last line, which is cut off when the folder is
read again, and ``RunJournal.play`` plays only the attempts the folder lacks. While a run plays, the
lines of the attempts that ended together are appended with one write and flushed to the disk with
one ``fdatasync`` as soon as the event loop is free, and only then is any of those attempts taken as
kept — passed on to be shown, counted — so what a run has said it keeps survives a kill and a power
loss alike; ``run.json`` is flushed before it is renamed into place (decision 8). A write the file
system refuses (a full disk, a file-size limit, a read-only mount) leaves no part of a line behind
and stops the run with ``Unwritable``.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import threading
from array import array
from collections import deque
from collections.abc import Callable, Container, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

import msgspec

from convy.files import RegularFile, Replaced
from convy.outcome import Outcome
from convy.placed import Placed
from convy.plan import Journal, Lacking, Player
from convy.problems import ConfigurationError, FieldProblem, Unplayed, Unwritable, WorkersLost, first_error
from convy.records import Complete, Interrupted, RunFile, Running, RunSpec, Stopped
from convy.secrets import Secrets
from convy.vital import DeadService


class RunInUse(ConfigurationError):
    """Another process is playing this run."""


class RunDamaged(ConfigurationError):
    """A run's ``run.json`` is there but cannot be read; its attempts still can."""


class Seen(msgspec.Struct, frozen=True):
    """``attempts.jsonl`` as the system described it just before it was read: its device, inode,
    size and modification time; all 0 when there was no such file. Only a process holding
    ``run.lock`` appends to the file or cuts it, so one that is seen the same under the lock holds
    the lines read then."""

    device: int = 0
    inode: int = 0
    size: int = 0
    modified: int = 0


class Bounds(msgspec.Struct, frozen=True):
    """A run's plan as the attempts read are held to it: its scenarios' ids, and its attempts at
    most (``RunJournal.read``, ``Kept.within``)."""

    scenarios: frozenset[str]
    attempts: int

    @classmethod
    def of(cls, spec: RunSpec) -> Bounds:
        return cls(frozenset(scenario.id for scenario in spec.scenarios), spec.attempts)

    def holds(self, outcome: Outcome) -> bool:
        return outcome.scenario in self.scenarios and 1 <= outcome.attempt <= self.attempts


class Kept(msgspec.Struct, frozen=True):
    """What a run's ``attempts.jsonl`` holds: the attempts read, and the lines left out — those
    that could not be read, those that repeat an attempt read before, those that are not an attempt
    of the run's plan (``foreign``: a scenario it does not play, an attempt past its number), and a
    last line cut short by a process stopped while writing it (``torn``, played again on resume);
    ``seen``, the file as it was when they were read (``Kept(())``: a run with no such file yet);
    ``plan``, the plan they were held to as they were read (``None``: none), so that holding them
    to that plan again (``within``) need not walk them (for a ``Placed``, read the file again)."""

    outcomes: Sequence[Outcome]  # a tuple, or for ``RunJournal.unsaid`` a ``Placed``: where each line begins
    unreadable: int = 0
    repeated: int = 0
    foreign: int = 0
    torn: int = 0
    seen: Seen = Seen()
    plan: Bounds | None = None

    @property
    def broken(self) -> int:
        """Every line left out."""
        return self.unreadable + self.repeated + self.foreign + self.torn

    def within(self, spec: RunSpec) -> Kept:
        """These attempts, without those the run's plan does not hold (counted ``foreign``):
        themselves, unwalked, when they were read held to that very plan."""
        plan = Bounds.of(spec)
        if plan == self.plan:
            return self
        outcomes = self.outcomes
        kept = [at for at, one in enumerate(outcomes) if plan.holds(one)]
        match outcomes:
            case Placed():
                planned: Sequence[Outcome] = outcomes.chosen(kept)
            case _:
                planned = tuple(outcomes[at] for at in kept)
        return msgspec.structs.replace(self, outcomes=planned, foreign=self.foreign + len(outcomes) - len(planned), plan=plan)

    def note(self) -> str:
        """The lines left out, in words, for the terminal; empty when none was but a torn last line."""
        said = [
            f"{count} {what}"
            for count, what in (
                (self.unreadable, "could not be read"),
                (self.repeated, "repeated an attempt read before"),
                (self.foreign, "held an attempt the run did not plan"),
            )
            if count
        ]
        if not said:
            return ""
        total = self.unreadable + self.repeated + self.foreign
        return f"{total} line{'s' if total != 1 else ''} of attempts.jsonl skipped: {', '.join(said)}"

    def __repr__(self) -> str:
        # Short: asyncio formats the repr of a finished task's result (and so of every attempt
        # here) when asyncio.run restores its SIGINT handler, 0.5 s for 10,000 attempts.
        return f"Kept({len(self.outcomes)} outcomes, {self.broken} broken)"


_RUN = msgspec.json.Decoder(RunFile)


_OUTCOME = msgspec.json.Decoder(Outcome)


class LinesLeftOut:
    """The lines of ``attempts.jsonl`` left out while ``RunJournal.read`` reads it, by why
    (``Kept``'s counts): a plain class, counted into as the file is read."""

    def __init__(self) -> None:
        self.unreadable = self.repeated = self.foreign = self.torn = 0

    def kept(self, outcomes: Sequence[Outcome] = (), seen: Seen = Seen(), plan: Bounds | None = None) -> Kept:
        return Kept(outcomes, self.unreadable, self.repeated, self.foreign, self.torn, seen, plan)


_ENCODER = msgspec.json.Encoder()


class RunJournal(msgspec.Struct, frozen=True):
    """A run's folder: it keeps each attempt as it ends, and the run's status."""

    folder: Path

    def record(self, outcome: Outcome) -> None:
        """Append the attempt as one line and flush it to the disk; a refused write leaves nothing."""
        _, refused = self._appended(_ENCODER.encode(outcome) + b"\n")
        if refused is not None:
            raise refused

    def _appended(self, data: bytes) -> tuple[int, Unwritable | None]:
        """Append ``data``, whole lines, and flush it to the disk: how many of its bytes are kept,
        and the refusal of a write the file system refused. The file always ends with a whole line."""
        path = self.folder / "attempts.jsonl"
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as error:
            return 0, Unwritable(path, error)
        written = 0
        try:
            size = os.fstat(descriptor).st_size
            try:
                view = memoryview(data)
                while written < len(data):
                    written += os.write(descriptor, view[written:])
                os.fdatasync(descriptor)
            except OSError as error:
                # The disk filled up part way through: the whole lines that went in stay, flushed,
                # and the rest is taken out again, so a later append starts clean. After a failed
                # flush nothing of these lines is trusted to be on the disk: all of them go.
                whole = data.rfind(b"\n", 0, written) + 1 if written < len(data) else 0
                try:
                    os.ftruncate(descriptor, size + whole)
                    if whole:
                        os.fdatasync(descriptor)
                except OSError:
                    whole = 0
                    with suppress(OSError):
                        os.ftruncate(descriptor, size)
                if size == 0 and whole:
                    self._synced_folder()
                return whole, Unwritable(path, error)
        finally:
            os.close(descriptor)
        if size == 0:
            self._synced_folder()
        return len(data), None

    MAX_RUN_BYTES: ClassVar[int] = 16 * 1024 * 1024
    MAX_LINE_BYTES: ClassVar[int] = 64 * 1024 * 1024

    def run(self) -> RunFile:
        """The run's ``run.json``; a missing one is a ``ConfigurationError``, one that cannot be
        read, or whose id is not its folder's name, ``RunDamaged``."""
        path = self.folder / "run.json"
        try:
            run = _RUN.decode(RegularFile(path).data(self.MAX_RUN_BYTES))
        except FileNotFoundError:
            raise ConfigurationError(f"{self.folder}: not a run folder (no run.json)") from None
        except OSError as error:
            raise self._damaged(f"cannot be read: {error.strerror}") from None
        except msgspec.ValidationError as error:
            raise self._damaged(FieldProblem(str(error), RunFile).text()) from None
        except (msgspec.MsgspecError, RecursionError) as error:
            raise self._damaged(f"cannot be read: {error}") from None
        if run.format > 1:
            raise ConfigurationError(f"{path}: written by a newer convy (format {run.format}); upgrade convy")
        if run.spec.id != self.folder.name:
            raise self._damaged(f"spec.id: must be the name of the run's folder, {self.folder.name}")
        return run

    def _damaged(self, said: str) -> RunDamaged:
        return RunDamaged(
            f"{self.folder}/run.json: {said}; its attempts can still be read by convy report and convy "
            "export; restore run.json from a copy to resume the run"
        )

    def read(self, left: LinesLeftOut, spec: RunSpec | None = None) -> Iterator[tuple[int, Outcome]]:
        """The attempts the file keeps, each once (its first line), one at a time with where its
        line begins: the one reader of ``attempts.jsonl`` (``kept``, ``unsaid``, ``recorded`` and
        ``counted.Counted`` all read through it), so all keep and leave out the same lines. A
        blank line is passed over; a last line cut short, one that cannot be read, one of no run's
        attempt, a repeat, and then one ``spec``'s plan does not hold, are left out and counted in
        ``left``. A file convy will not read (a folder, a FIFO, a device) is a
        ``ConfigurationError``."""
        path = self.folder / "attempts.jsonl"
        planned = None if spec is None else {scenario.id for scenario in spec.scenarios}
        most = RunSpec.MOST_ATTEMPTS if spec is None else spec.attempts
        # Each scenario's attempts read, a bit each by number (not the attempt, nor a set's int): a
        # file naming many scenarios each at a high attempt (hand-made, or damaged) holds at most
        # 1.25 KB a name (a byte each held 10 KB: 224 MB for 20,000 names at attempt 10,000).
        seen: dict[str, bytearray] = {}
        try:
            for offset, line in RegularFile(path).placed(self.MAX_LINE_BYTES):
                if line is not None and not line.strip():
                    continue
                if line is not None and not line.endswith(b"\n"):  # the last, cut short
                    left.torn += 1
                    continue
                try:
                    outcome = _OUTCOME.decode(line) if line is not None else None
                except (msgspec.MsgspecError, RecursionError):  # torn, or nested deeper than msgspec reads
                    outcome = None
                if outcome is None:
                    left.unreadable += 1
                    continue
                if not 1 <= outcome.attempt <= RunSpec.MOST_ATTEMPTS:  # no run's attempt, whatever its plan
                    left.foreign += 1
                    continue
                done = seen.get(outcome.scenario)
                if done is None:
                    done = seen[outcome.scenario] = bytearray()
                at, bit = outcome.attempt >> 3, 1 << (outcome.attempt & 7)
                if at >= len(done):
                    done.extend(bytes(max(at + 1, 2 * len(done)) - len(done)))
                elif done[at] & bit:
                    left.repeated += 1
                    continue
                done[at] |= bit
                if planned is not None and (outcome.scenario not in planned or outcome.attempt > most):
                    left.foreign += 1
                    continue
                yield offset, outcome
        except FileNotFoundError:
            return
        except OSError as error:
            raise ConfigurationError(f"{path}: cannot be read: {error.strerror}") from None

    def kept(self, spec: RunSpec | None = None) -> Kept:
        """The attempts kept so far, each once, of the run's plan (``spec``, or else the one its
        ``run.json`` holds, when it can be read); the lines left out are counted. A file convy will
        not read (a folder, a FIFO, a device) is a ``ConfigurationError``."""
        return self._gathered(spec, lambda read: tuple([outcome for _, outcome in read]))

    def unsaid(self, spec: RunSpec | None = None) -> Kept:
        """What ``kept`` gives, each attempt held only as where its line begins (``Placed``: eight
        bytes an attempt), read again from there, one at a time, each time they are walked —
        unsaid (``Outcome.unsaid``), or in full where a dialogue is shown: what the end of a run
        and ``convy report`` sum and report from, holding no attempt."""
        path = self.folder / "attempts.jsonl"
        return self._gathered(spec, lambda read: Placed(path, array("q", (offset for offset, _ in read)), self.MAX_LINE_BYTES))

    def _gathered(self, spec: RunSpec | None, made: Callable[[Iterator[tuple[int, Outcome]]], Sequence[Outcome]]) -> Kept:
        """What ``made`` makes of one walk of ``read`` (``kept``'s attempts, ``unsaid``'s places),
        with the lines it left out and the file as it was seen before."""
        seen = self._seen()
        left = LinesLeftOut()
        plan = self._plan(spec)
        outcomes = made(self.read(left, plan))
        return left.kept(outcomes, seen, None if plan is None else Bounds.of(plan))

    def _plan(self, spec: RunSpec | None) -> RunSpec | None:
        """``spec``, or the one ``run.json`` holds; none when it cannot be read (no plan to hold
        the attempts to)."""
        if spec is not None:
            return spec
        try:
            return self.run().spec
        except ConfigurationError:  # no run.json, or a damaged one
            return None

    def recorded(self, wanted: Container[tuple[str, int]]) -> Iterator[Outcome]:
        """The attempts kept here whose (scenario, attempt) is ``wanted``, each once (its first
        line, as ``kept`` reads it), read line by line as they are asked for: a re-judged run
        streams its source's dialogues rather than holding them all. A line that cannot be read, or
        cut short, is passed over; a file convy will not read is a ``ConfigurationError``."""
        for _, outcome in self.read(LinesLeftOut()):
            if (outcome.scenario, outcome.attempt) in wanted:
                yield outcome

    async def play(
        self,
        spec: RunSpec,
        bench: Player,
        journal: Journal | None = None,
        secrets: Secrets = Secrets(),
        earlier: Kept = Kept(()),
        back: Callable[[RunSpec], Kept] | None = None,
    ) -> Kept:
        """Play the attempts of ``spec`` this folder lacks, holding the folder while it plays; what
        the folder keeps once it has played, read back from it (by ``back``: ``kept``, or
        ``unsaid`` for a caller that sums and reports the run and reads its dialogues again only
        to show them). ``earlier`` is what a caller has read of the folder already (``kept``): it
        is taken as it is while the file is seen the same under the lock, and the file read again
        only when it is not.

        While it plays, this process holds no attempt it plays: each is written and passed on to
        ``journal``, and only counted, so that its memory stays the same however many attempts a
        run plays (a run of 10,000 held 80 MB of them). What the folder keeps is read back from
        ``attempts.jsonl`` at the end, line by line, in one pass: about 25 us an attempt.

        Each attempt is kept here with every one of ``secrets`` hidden from its texts, and once it
        is on the disk goes on to ``journal`` (one that shows it, say), as the folder keeps it.
        The run is marked finished when every attempt is played (with what was spent, when that
        reached its budget), stopped when the bench's budget let no more attempts start (its
        attempts under way kept), and interrupted when anything,
        Ctrl+C included, stops it; that error is raised on, and a write the folder refused as
        ``Unwritable``, attempts that ended unrecorded as ``Unplayed``, each out of its group. A folder that cannot be written before anything is played is a
        ``ConfigurationError``: nothing was sent.
        """
        try:  # a spec that cannot be kept fails before its folder exists, leaving nothing behind
            _ENCODER.encode(spec)
        except (TypeError, ValueError) as error:
            raise ConfigurationError(f"run {spec.id} cannot be kept: {error}") from None
        if spec.id != self.folder.name:  # read back, run.json must name its own folder
            raise ConfigurationError(f"run {spec.id} cannot be kept in {self.folder}: a run's folder is named by its id")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigurationError(f"{Unwritable(self.folder, error)}; nothing was played") from None
        fresh = not (self.folder / "run.json").exists()
        with self._held():
            try:
                self._repaired()
                # A file cut by the repair, or added to by another process since the caller read
                # it, is read again; else what was read holds, and the lines are read once. A file
                # read with a torn last line is read again too: a process that cut it and wrote as
                # many bytes in one tick of the clock would leave its size and time as they were.
                same = not earlier.torn and earlier.seen == self._seen()
                earlier = earlier.within(spec) if same else self.unsaid(spec)
                started = self._started()
                self._written(RunFile(spec, Running(started)))
            except Unwritable as error:
                if fresh:  # a new run that could not start leaves no folder behind
                    with suppress(OSError):
                        (self.folder / "run.lock").unlink()
                        self.folder.rmdir()
                raise ConfigurationError(f"{error}; nothing was played") from None
            missing = Lacking(spec.planned(), earlier.outcomes)
            unflushed = _Unflushed(self, journal, secrets)
            try:
                async with asyncio.TaskGroup() as group:
                    group.create_task(unflushed.flushing())
                    spending = await bench.run(missing, unflushed, earlier.outcomes)
                    unflushed.ended()
                unflushed.flushed()
                unflushed.closed()
            except BaseException as error:
                try:
                    with suppress(Unwritable):  # the attempts that ended before the stop are kept too
                        unflushed.flushed()
                finally:
                    unflushed.closed()
                self._marked(RunFile(spec, Interrupted(started, self._now())))
                match error:
                    case BaseExceptionGroup():
                        # each its own line, not a group's trace: a full disk, attempts lost, a
                        # worker of a spread run that could not load the project
                        said, _ = error.split((Unwritable, Unplayed, ConfigurationError, WorkersLost))
                        if said is not None:
                            first = first_error(said)
                            match first:
                                case DeadService() if fresh and (not unflushed.kept or first.respecified()):
                                    # A new run that kept nothing, or one that names a model the
                                    # service does not know (resume holds a run to its models), is
                                    # no run of the project: it leaves nothing behind.
                                    self._removed()
                            raise first from None
                raise
            # Stopped: a budget kept an attempt from starting, and attempts were left. Finished with
            # ``reached``: every attempt was played, and the spend reached the budget all the same.
            outlay = None if spending is None else spending.outlay()
            if outlay is not None and spending is not None and spending.stopped() and unflushed.kept < len(missing):
                self._written(RunFile(spec, Stopped(started, self._now(), outlay)))
            elif bench.budget is not None and bench.budget.set():
                reached = outlay if spending is not None and spending.reached() else None
                self._written(RunFile(spec, Complete(started, self._now(), bench.budget, reached)))
            else:
                self._written(RunFile(spec, Complete(started, self._now())))
            if not unflushed.kept:  # nothing appended: the file holds what was read at the start
                return msgspec.structs.replace(earlier, seen=self._seen())
            return (back or self.kept)(spec)

    def _removed(self) -> None:
        """This run's folder gone, with the files a play writes: a new run stopped before it kept
        an attempt (a participant that never answered) joins no history."""
        for name in ("attempts.jsonl", "run.json", "run.lock"):
            with suppress(FileNotFoundError):
                (self.folder / name).unlink()
        with suppress(OSError):
            self.folder.rmdir()
            self.folder.parent.rmdir()  # the agent's folder too, when this was its only run

    @contextmanager
    def _held(self) -> Iterator[None]:
        path = self.folder / "run.lock"
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise ConfigurationError(f"{Unwritable(path, error)}; nothing was played") from None
        try:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise RunInUse(f"run {self.folder.name} is in use by another convy process") from None
            yield
        finally:
            os.close(descriptor)

    def in_use(self) -> bool:
        """Whether a process is playing this run now. Asking writes nothing: a folder without a
        lock file has never been played by a process that is still running; opening it never
        waits (a FIFO put in its place would)."""
        try:
            descriptor = os.open(self.folder / "run.lock", os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return False
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        finally:
            os.close(descriptor)
        return False

    def _seen(self) -> Seen:
        path = self.folder / "attempts.jsonl"
        try:
            found = os.stat(path)
        except FileNotFoundError:
            return Seen()
        except OSError as error:
            raise ConfigurationError(f"{path}: cannot be read: {error.strerror}") from None
        return Seen(found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns)

    def _repaired(self) -> None:
        # A process killed mid-append leaves a last line without its newline: cut it off, so the
        # next line starts clean and that attempt is played again. Only the file's end is read.
        path = self.folder / "attempts.jsonl"
        try:
            with RegularFile(path).opened() as stream:
                end = stream.seek(0, os.SEEK_END)
                cut = end
                while cut > 0:
                    start = max(0, cut - RegularFile.CHUNK)
                    stream.seek(start)
                    chunk = stream.read(cut - start)
                    if cut == end and chunk.endswith(b"\n"):
                        return
                    found = chunk.rfind(b"\n")
                    if found >= 0:
                        cut = start + found + 1
                        break
                    cut = start
        except FileNotFoundError:
            return
        except OSError as error:
            raise ConfigurationError(f"{path}: cannot be read: {error.strerror}") from None
        if cut == end:
            return
        try:
            os.truncate(path, cut)
        except OSError as error:
            raise Unwritable(path, error) from error

    def _written(self, run: RunFile) -> None:
        # Flushed before the rename and the folder after it: after a power loss run.json is the
        # old one or the new one, never an empty file.
        path = self.folder / "run.json"
        try:
            Replaced(path).synced(msgspec.json.format(_ENCODER.encode(run), indent=2) + b"\n")
        except OSError as error:
            raise Unwritable(path, error) from error
        self._synced_folder()

    def _marked(self, run: RunFile) -> None:
        # Marking a run interrupted may meet the full disk that stopped it. run.json then still
        # says running, and with its lock free once this process ends, readers take the run as
        # interrupted all the same.
        with suppress(Unwritable):
            self._written(run)

    def _synced_folder(self) -> None:
        # A new or renamed file is on the disk only once its folder is.
        try:
            descriptor = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return
        try:
            with suppress(OSError):
                os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def _started(self) -> str:
        # A resumed run keeps the moment it first started.
        if (self.folder / "run.json").exists():
            return self.run().status.started
        return self._now()

    def _now(self) -> str:
        return datetime.now(UTC).isoformat(timespec="milliseconds")


class _Unflushed:
    """The attempts of a run that have ended and are not yet on the disk.

    Each is encoded once, as its line, with the run's secrets hidden. The lines of the attempts
    that ended since the last append are appended with one write and flushed with one
    ``fdatasync``, in a thread of the run's own, so the event loop plays on meanwhile
    (``flushing``, a task beside the bench's); what ends while the disk syncs goes in the next
    append, together. Only once its line is on the disk is an attempt taken as kept: added to
    ``kept``, and passed on to the journal that shows it, in the order the attempts ended. A run
    whose attempts never wait (instant fakes) appends every ``MOST`` lines where it is, so the lines
    it has not kept stay few. An append where the loop is (``flushed``: too many lines, the end of
    the play, or its stop) first waits for the one under way in the thread, whose attempts it
    passes on too: a stop never leaves an append behind it, nor the lines in another order. A
    refused write is raised in the task that passes its attempts on, which stops the run, once
    every attempt on the disk is passed on. ``kept`` counts the attempts kept: the outcomes
    themselves are let go once passed on. ``closed`` lets the thread go.
    """

    MOST = 256

    def __init__(self, folder: RunJournal, journal: Journal | None, secrets: Secrets) -> None:
        self._folder = folder
        self._journal = journal
        self._secrets = secrets
        self._lines: list[bytes] = []
        self._outcomes: list[Outcome] = []
        self._waiting = asyncio.Event()
        self._ended = False
        # One thread, the run's own: its appends go one at a time, in the order they were given,
        # and none waits behind another program's work in the loop's shared threads.
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="convy-append")
        self._under_way: threading.Event | None = None  # set once the thread's latest append is done
        # Each append's attempts and refusal, in the order appended, until the loop passes them on (``_passed``).
        self._on_disk: deque[tuple[list[Outcome], Unwritable | None]] = deque()
        self.kept = 0

    def record(self, outcome: Outcome) -> None:
        line = _ENCODER.encode(outcome)
        if self._secrets.may_hold(line):
            outcome = self._secrets.kept(outcome)
            line = _ENCODER.encode(outcome)
        self._lines.append(line)
        self._outcomes.append(outcome)
        if len(self._lines) >= self.MOST:
            self.flushed()
        else:
            self._waiting.set()

    async def flushing(self) -> None:
        """Append what has ended, in the thread, each time the loop comes round to it and no append
        is under way, until the play has ended; the attempts appended are then passed on."""
        while not self._ended:
            await self._waiting.wait()
            self._waiting.clear()
            await self._appended_apart()
            self._passed()

    async def _appended_apart(self) -> None:
        # Apart from ``flushing``: what it appends is not held by its loop while it waits for more.
        taken = self._taken()
        if taken is None:
            return
        done = threading.Event()

        def append() -> None:
            try:
                self._append(*taken)
            finally:
                done.set()

        appending = asyncio.get_running_loop().run_in_executor(self._thread, append)
        self._under_way = done
        # Shielded: a stop cancels the wait, never the append, which ``flushed`` then waits for.
        await asyncio.shield(appending)

    def ended(self) -> None:
        self._ended = True
        self._waiting.set()

    def flushed(self) -> None:
        """Once the thread's append under way is done, append and flush the lines not yet on the
        disk, here, and pass on the attempts kept."""
        if self._under_way is not None:
            self._under_way.wait()  # file work alone, in a thread of the run's own: it ends
        taken = self._taken()
        if taken is not None:
            self._append(*taken)
        self._passed()

    def closed(self) -> None:
        """Let the thread go, once its append is done."""
        self._thread.shutdown(wait=True)

    def _taken(self) -> tuple[bytes, list[Outcome]] | None:
        if not self._lines:
            return None
        lines, outcomes = self._lines, self._outcomes
        self._lines, self._outcomes = [], []
        return b"\n".join(lines) + b"\n", outcomes

    def _append(self, data: bytes, outcomes: list[Outcome]) -> None:
        whole, refused = self._folder._appended(data)
        self._on_disk.append((outcomes if refused is None else outcomes[: data.count(b"\n", 0, whole)], refused))

    def _passed(self) -> None:
        """Pass on the attempts whose lines are on the disk, in the order they were appended; the
        first refused write is raised once every one of them is passed on."""
        first: Unwritable | None = None
        while self._on_disk:
            kept, refused = self._on_disk.popleft()
            self.kept += len(kept)
            if self._journal is not None:
                for outcome in kept:
                    self._journal.record(outcome)
            first = first or refused
        if first is not None:
            raise first
