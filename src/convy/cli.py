"""The ``convy`` command. The only module that prints, and the one that picks the exit code.

The exit codes (docs/results.md's "Results and exit codes" is the same table):

    0    at least one attempt judged, every attempt judged (or those not judged within
         --max-not-judged), and the pass rule met: every scenario passed every judged attempt, or
         what fail_under accepts (per run: the mean pass rate; per scenario: its own share);
         for ``convy compare``, no real drop
    1    some attempt failed by the agent (it raised, broke off or ran out of time); also: a run
         stopped because its folder refused a write (a full disk, a file-size limit), or a spread
         run stopped because its workers kept dying (``WorkersLost``: kept, resumable), or a
         finished run's report, or the --junit or --summary file, could not be written
    2    a configuration error, or a folder convy must write refused it: nothing was sent;
         also: ``convy check`` or ``convy run --dry-run`` found problems, one line each (0: none,
         and what would run was said), and neither sends nor writes anything; also: a run stopped
         because the project's code cancelled the task it runs in (attempts ended unrecorded:
         ``Unplayed``), kept and marked interrupted; also: a run stopped because a participant
         never answered and its service refused it for good (``vital.DeadService``: the key
         refused, no such URL or model, nothing listening), with the likely fix; no other agent
         of the command is played after a run that exits 2
    3    the pass rule was not met: a scenario failed a judged attempt (with no fail_under), fell
         below its own fail_under, or the mean pass rate is below the run's fail_under
         (changed: with no --fail-under this was 0)
    4    ``convy compare --fail-on-regression``: the candidate's pass rate really dropped
         (changed: this was 3, the code of --fail-under)
    5    more attempts not judged than --max-not-judged allows, by default any one (changed: this
         was 1, the code of an agent failure)
    6    a run stopped by its budget (--max-cost, --max-tokens, --max-minutes): no attempt was
         started that would likely cross it, those under way were kept (also: a run that played
         every attempt but reached or crossed its budget doing so); ``convy resume`` with a larger
         budget plays the rest
    7    nothing was tested: no attempt was judged (every chosen scenario skipped for a missing
         model, every agent skipped as absent, every attempt not judged under --max-not-judged 1); for ``convy compare
         --fail-on-regression``, the candidate has no judged attempt; for ``convy check`` and
         ``run --dry-run``, nothing would be tested and nothing else is wrong. A run its budget stopped
         before any attempt exits 6, and says that nothing was tested; a pattern or tag that matches no
         scenario is a mistake refused with the nearest names (2), before anything is played
    8    a scenario, or an absent agent, was skipped and --fail-on-skip (fail_on_skip) fails a run for it
    9    ``convy compare --fail-on-regression``: the pair is not comparable (the runs' simulated
         users differ, or no scenario was judged in both), so no regression can be ruled out
    130  interrupted (Ctrl+C): the run is kept, and ``convy resume`` plays the rest
    143  terminated (SIGTERM): as Ctrl+C

When several apply, to one run or to the runs of a command's agents, the first in this order wins
(``Worst``): 130, 143, 2, 6, 1, 5, 7, 9, 8, 4, 3. Being stopped comes first: the rest was not
decided. Then a project convy cannot use, and a run a budget left unfinished, whose numbers are
partial. Then the agent failing, which needs no judge to see; then too few attempts judged, on
which a pass rate decides nothing; then nothing tested, and a pair that cannot be compared; then
scenarios skipped, which leave the pass rate about less than was asked; last the gates on the
pass rate, which mean something only when all else holds (a regression and the pass rule are
never met in one command).

What the command prints never holds up a run: a line the reader is not ready for waits in memory
(``Shown``), and only at the end does the command wait for its reader.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import io
import os
import re
import select
import shlex
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TextIO, TypeVar
from urllib.parse import urlsplit

import msgspec

from convy.adaptive import Adaptive, Against, Judged, Marks, Plan
from convy.agent import NoUsage, TimeLimited, Usage
from convy.attempt import Attempt, Spent, Sum
from convy.bench import Bench, Complete, Kept, Limits, Player, RunInUse, RunJournal, RunName, RunSpec, Skipped, Stopped
from convy.budget import Budget, Outlay
from convy.dialog import ChatJudge, Failed, NoVerdict, Verdict
from convy.holders import Environment, Holders
from convy.live import LiveReport, Paced, Tethered
from convy.model import Absent, Contained, ModelFailure, Models
from convy.model import Said as ModelSaid
from convy.panel import Panel
from convy.passing import AbsentAgent, PassRule, RunVerdict
from convy.problems import (
    ConfigurationError,
    DialoguesLost,
    HttpFailure,
    Outside,
    Unplayed,
    Unwritable,
    UrlProblem,
    WorkersLost,
)
from convy.project import VERSION, Blind, Project
from convy.report import Allowance, Listed, Stop, Summary
from convy.runs import Read
from convy.scenario import Check, Matching, Outcome, Rule, Scenario
from convy.secrets import Secrets
from convy.sequential import Sequential
from convy.slips import Slips
from convy.spelling import Spelling
from convy.spread import LOCAL, Crew, Spread
from convy.terminal import Inert
from convy.variants import Value, Variant
from convy.views import AgreementView, ComparisonView, JudgingView, ScoreView
from convy.vital import DeadService, Refusal, Unanswered

if TYPE_CHECKING:
    from convy.settings import Settings

T = TypeVar("T")

MARKS = {"passed": "✓", "failed": "✗", "not_judged": "?"}
# Why an attempt's task ends cancelled with no Ctrl+C, no SIGTERM and no time limit: the project's
# own code cancelled the task it runs in, which convy cannot tell from its own stop.
CANCELLED = "cancelled from within, as code that cancels its own task does (asyncio.current_task().cancel())"


class _CtrlCHeld:
    """Ctrl+C held back for a moment: a SIGINT that comes inside is noted and raised again as the
    block ends, to whatever handler was there (Python's KeyboardInterrupt, asyncio.run's, or
    ``os._exit`` once a stopped run has said how to resume). Python runs signal handlers in the main
    thread only, whichever thread the signal reached, so a mask cannot hold it back; this can. On any
    other thread, or under a handler Python did not install, nothing is held (none is raised there)."""

    def __init__(self) -> None:
        self._previous: Any = None
        self._came = False

    def __enter__(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGINT)
        if previous is None:
            return
        self._previous = previous
        signal.signal(signal.SIGINT, self._noted)

    def _noted(self, number: int, frame: Any) -> None:
        self._came = True

    def __exit__(self, *exception: object) -> None:
        if self._previous is None:
            return
        signal.signal(signal.SIGINT, self._previous)
        if self._came:
            signal.raise_signal(signal.SIGINT)


class Shown:
    """Where the command writes: a stream that a slow, stopped or closed reader cannot hold up, and
    on which no text drives the terminal: every control character is written out (``Inert``), and
    no line is longer than about ``LINE`` characters (its middle left out and counted).

    A line is written at once when the stream can take it without waiting (``select``); otherwise it
    waits in memory and goes out with a later line, or at the end (``drained``). Up to ``WAITING``
    pieces wait; past that, progress lines are left out and a line says how many. When the reader
    has gone (``| head``) the rest is dropped quietly and the run goes on.
    """

    WAITING: ClassVar[int] = 1000
    PIECE: ClassVar[int] = 4096  # at most PIPE_BUF: a pipe that selects as writable takes it whole
    LINE: ClassVar[int] = 2000  # characters of one line: a CI log stays readable
    END: ClassVar[int] = 300  # of them, kept from a longer line's end
    _write = staticmethod(os.write)  # how a piece reaches the descriptor (a test's may be interrupted)

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._waiting: deque[bytes] = deque()
        self._left_out = 0
        self.closed = False
        try:
            self._descriptor = out.fileno()
        except (AttributeError, OSError, ValueError):
            self._descriptor = -1  # no descriptor: each line is written to the stream at once

    def line(self, text: str = "") -> None:
        """A line the reader gets, however long it must wait for it."""
        self._queued(text)
        self.sent()

    def progress(self, text: str) -> None:
        """A line of progress, left out (and counted) when too many lines wait for the reader."""
        if len(self._waiting) >= self.WAITING:
            self._left_out += 1
            return
        self.line(text)

    def drained(self) -> None:
        """Wait until the reader has every line, or has gone."""
        self._queued(None)
        while self._waiting and not self.closed:
            self._piece(wait=True)

    def _queued(self, text: str | None) -> None:
        if self.closed:
            return
        if self._left_out:
            note = f"… {self._left_out} progress lines left out: the output was not read in time"
            self._left_out = 0
            self._queued(note)
        if text is None:
            return
        text = self._bounded(Inert(text).lines())
        if self._descriptor < 0:  # a stream without a descriptor (a test's StringIO) never waits
            self._out.write(text + "\n")
            self._out.flush()
            return
        data = (text + "\n").encode("utf-8", "replace")
        self._waiting.extend(data[start : start + self.PIECE] for start in range(0, len(data), self.PIECE))

    def _bounded(self, text: str) -> str:
        # Each line within LINE characters: what a line carries from outside (an agent's error, a
        # service's body) is cut where it was put in; this is the bound for whatever was not. Cut
        # in its middle: the end of a line is often what to do next (`convy resume …`).
        if len(text) <= self.LINE:
            return text
        return "\n".join(self._cut(line) for line in text.split("\n"))

    def _cut(self, line: str) -> str:
        if len(line) <= self.LINE:
            return line
        head, tail = self.LINE - self.END, self.END
        return f"{line[:head]} … ({len(line) - head - tail} characters left out) … {line[len(line) - tail :]}"

    def sent(self) -> None:
        """Write what the stream takes now, without waiting."""
        self._queued(None)
        while self._waiting and not self.closed and self._piece(wait=False):
            pass

    def _piece(self, wait: bool) -> bool:
        # Writes the first waiting piece when the stream takes it now (or, with ``wait``, once it does).
        if not select.select([], [self._descriptor], [], None if wait else 0)[1]:
            return False
        # A Ctrl+C waits while a piece is written and taken off the queue: raised in between, its
        # KeyboardInterrupt would leave a written piece queued, and the line said twice.
        with _CtrlCHeld():
            piece = self._waiting[0]
            try:
                written = self._write(self._descriptor, piece)
            except BlockingIOError:  # a descriptor someone else made non-blocking: the same as not ready
                return False
            except OSError:  # the reader has gone (a closed pipe), or the stream broke (a full disk, a hung-up terminal)
                self._gone()
                return False
            self._waiting[0] = piece[written:]
            if not self._waiting[0]:
                self._waiting.popleft()
            return True

    def _gone(self) -> None:
        # The reader has gone; the run goes on and keeps every attempt. Point the descriptor at
        # /dev/null so nothing else written there (the interpreter's last flush) fails either.
        self.closed = True
        self._waiting.clear()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._descriptor)
        os.close(devnull)


class Unseen:
    """The progress of a run that nobody watches (stderr is not a terminal): nothing is drawn."""

    def update(self, task: Any, **fields: Any) -> None:
        pass


class Printed:
    """A journal that shows each attempt kept: one line, and the progress so far (on a rich
    ``Progress``, or ``Unseen``)."""

    def __init__(
        self,
        shown: Shown,
        progress: Any,
        task: Any,
        trust: float,
        planned: Callable[[Marks], int] | None = None,
        earlier: Iterable[Outcome] = (),
    ) -> None:
        self._shown = shown
        self._progress = progress
        self._task = task
        self._trust = trust
        self.counts = {"passed": 0, "failed": 0, "not_judged": 0}
        # A run of --attempts auto: the bar's total is what the rule wants so far, found again
        # each time the bar reaches it (a round's end), so it grows round by round, from the marks
        # of the attempts kept (a byte each), not the attempts.
        self._planned = planned
        self._marks = Marks(trust, earlier if planned is not None else ())
        self._total = planned(self._marks) if planned is not None else 0

    def record(self, outcome: Outcome) -> None:
        status = outcome.status(self._trust)
        self.counts[status] += 1
        self._progress.update(
            self._task,
            advance=1,
            passed=self.counts["passed"],
            failed=self.counts["failed"],
            not_judged=self.counts["not_judged"],
        )
        if self._planned is not None:
            self._marks.add(outcome)
            if self._marks.count >= self._total:
                self._total = max(self._marks.count, self._planned(self._marks))
                self._progress.update(self._task, total=self._total)
        said = Inert(f"{outcome.scenario} #{outcome.attempt}  {Said(outcome, self._trust).text()}").line()
        self._shown.progress(f"{MARKS[status]} {said}")


class Said(msgspec.Struct, frozen=True):
    """The few words a finished attempt gets on its line: each text from outside (an agent's error,
    a judge's reason, a claim) on one line and cut to ``MOST`` characters."""

    outcome: Outcome
    trust: float

    MOST: ClassVar[int] = 300

    def text(self) -> str:
        turns = len(self.outcome.transcript.turns)
        when = f"{turns} turn{'s' if turns != 1 else ''}, {self.outcome.seconds:.1f} s"
        cut = self._cut
        match self.outcome.result:
            case Failed(reason=reason):
                return f"{when} · agent failed ({self.outcome.stop}): {cut(reason)}"
            case NoVerdict(reason=reason, checks=checks) as none:
                broken = [claim for claim in checks if not claim.held and not claim.doubt]
                failed = self._failed(none)
                if broken:
                    # A check decided by code failed: the attempt failed, whatever the model did.
                    return f"{when} · {cut(broken[0].claim)}: {cut(broken[0].reason)} (then {failed}: {cut(reason)})"
                return f"{when} · not judged, {failed}: {cut(reason)}"
            case Verdict(claims=claims):
                wrong = [claim for claim in claims if not claim.held and claim.trusted(self.trust)]
                doubtful = [claim for claim in claims if not claim.trusted(self.trust)]
                if wrong:
                    return f"{when} · {cut(wrong[0].claim)}: {cut(wrong[0].reason)}" + (
                        f" (+{len(wrong) - 1} more)" if len(wrong) > 1 else ""
                    )
                if doubtful and doubtful[0].doubt == "unseen":
                    return f"{when} · not judged: {doubtful[0].claim}: {doubtful[0].reason}"
                if doubtful:
                    why = {"split": " (the judge split)", "unquoted": " (no quote of a few of the agent's own words)"}.get(doubtful[0].doubt, "")
                    return f"{when} · not trusted{why}: {cut(doubtful[0].claim)}"
                return f"{when} · {len(claims)} claim{'s' if len(claims) != 1 else ''} held"

    def _cut(self, text: str) -> str:
        return Inert(text).short(self.MOST)

    def _failed(self, none: NoVerdict) -> str:
        """Who failed, in the words of the attempt's cause (``causes.py``): a model's service that
        failed or stayed busy is the service's, as the run's totals count it."""
        match none:
            case NoVerdict(who="busy"):
                return "a service stayed busy"
            case NoVerdict(who=who, service=True):
                return f"a service failed the {'simulated user' if who == 'user' else 'judge'}'s model"
            case NoVerdict(who=who):
                return f"{who} failed"


class Recorded(msgspec.Struct, frozen=True):
    """A run played as the command shows it: progress while it plays, a summary, the exit code.
    ``kept`` is what its folder was read to hold already (``RunJournal.kept``: a resumed run's),
    passed on to the play so it need not read the folder again."""

    project: Project
    spec: RunSpec
    bench: Player
    shown: Any
    errors: Any
    rule: PassRule | None = None  # over the spec's, given to this command (a resume's --fail-under)
    secrets: Secrets = Secrets()
    kept: Kept = Kept(())
    max_not_judged: float = 0.0
    live: LiveReport | None = None  # the report written again while the run plays
    cures: Cures | None = None  # the words of the likely fix when a participant never answers

    def played(self) -> int:
        journal = self.project.journal(self.spec)
        if journal.in_use():
            raise RunInUse(f"run {self.spec.id} is in use by another convy process")
        planned = self._planned(self.kept.outcomes)  # of --attempts auto: the first round's; the bar grows
        attempts, scenarios = self.spec.attempts, len(self.spec.scenarios)
        each = f"{attempts} attempt{'s' if attempts != 1 else ''}" if self.spec.adaptive is None else self.spec.adaptive.said(attempts)
        named = f' · "{Inert(self.spec.name).line()}"' if self.spec.name else ""
        self.shown.line(f"{self.spec.agent}{named}: {scenarios} scenario{'s' if scenarios != 1 else ''} × {each} → {self._where(journal.folder)}")
        stopped: KeyboardInterrupt | Terminated | Unwritable | Unplayed | WorkersLost | DeadService | None = None
        with self._progress(planned, len(self.kept.outcomes)) as (progress, task):
            growing = None if self.spec.adaptive is None else self._marked
            printed = Printed(self.shown, progress, task, self.spec.trust, growing, self.kept.outcomes)
            try:
                kept = asyncio.run(self._played(journal, printed))
            except (KeyboardInterrupt, Terminated, Unwritable, Unplayed, WorkersLost, DeadService) as error:
                stopped = error
        match stopped:
            case DeadService():
                return self._dead(journal, stopped)
            case KeyboardInterrupt():
                return self._stopped(journal, "interrupted", 130)
            case Terminated():
                return self._stopped(journal, "terminated", 143)
            case WorkersLost():
                # Not the project's fault, nor a reason to lose what was played: kept, and said how to go on.
                self.errors.line(f"convy: {stopped}; the run stops")
                return self._stopped(journal, "stopped", 1)
            case Unwritable(path=path, reason=reason):
                kept = journal.unsaid(self.spec)
                planned = self._planned(kept.outcomes)
                self.errors.line(
                    f"convy: {self._where(path)}: cannot be written: {reason}; run {self.spec.id} stopped and keeps "
                    f"{len(kept.outcomes)} of {planned} attempts; once there is room: convy resume {self.spec.id}"
                )
                return 1
            case DialoguesLost():
                kept = journal.unsaid(self.spec)
                planned = self._planned(kept.outcomes)
                self.errors.line(
                    f"convy: {stopped}; run {self.spec.id} stopped and keeps {len(kept.outcomes)} of {planned} attempts"
                )
                return 2
            case Unplayed():
                kept = journal.unsaid(self.spec)
                planned = self._planned(kept.outcomes)
                self.errors.line(
                    f"convy: agents/{self.spec.agent}.py or models.py: {stopped}: a task of the run was {CANCELLED}; "
                    f"run {self.spec.id} stopped and keeps {len(kept.outcomes)} of {planned} attempts; once that is "
                    f"mended: convy resume {self.spec.id}"
                )
                return 2
        summary = Summary(self._ruled(Read(journal.folder, journal.run(), kept.outcomes, kept.broken, False)))
        code = self._summed(summary)
        try:
            self._reported(summary)
        except KeyboardInterrupt:
            self.errors.line(
                f"interrupted while writing the report: run {self.spec.id} is finished and kept; "
                f"write its report with: convy report {self.spec.id}"
            )
            return 130
        except Unwritable as error:
            self.errors.line(
                f"convy: {self._where(error.path)}: cannot be written: {error.reason}; run {self.spec.id} is "
                f"finished and kept; once there is room: convy report {self.spec.id}"
            )
            return Worst((code, 1, *self._budgeted(summary))).code()
        return Worst((code, *self._budgeted(summary))).code()

    def _ruled(self, read: Read) -> Read:
        """The run as read, held to this command's pass rule when it was given one over its spec's."""
        if self.rule is None:
            return read
        spec = msgspec.structs.replace(read.file.spec, rule=self.rule)
        return msgspec.structs.replace(read, file=msgspec.structs.replace(read.file, spec=spec))

    def _budgeted(self, summary: Summary) -> tuple[int, ...]:
        """Exit 6 with the line that says which budget stopped the run, what was spent, and a
        budget that plays the rest; exit 6 too, with what was spent, for a run that played every
        attempt but reached or crossed its budget doing so; with a budget the run stayed within,
        a line saying what it spent of it."""
        outcomes = summary.run.outcomes
        match summary.run.file.status:
            case Stopped(spent=spent):
                stop = Stop(spent)
                left = self._planned(outcomes) - len(outcomes)
                rest = stop.rest(left, self.spec.limits.starting("agent"), summary.run.file.spec.budget, outcomes)
                self.shown.line(
                    f"{self.spec.agent}: run {self.spec.id} {stop.text()}; to play the rest: convy resume {self.spec.id} {rest}"
                )
                return (6,)
            case Complete(reached=Outlay() as reached):
                self.shown.line(f"{self.spec.agent}: run {self.spec.id} {Stop(reached).reached()}")
                return (6,)
            case Complete(budget=budget) if budget.set():
                self.shown.line(f"{self.spec.agent}: {Allowance(budget).text(outcomes)}")
        return ()

    async def _played(self, journal: RunJournal, printed: Printed) -> Kept:
        # SIGTERM stops the run as Ctrl+C does: the play is cancelled, and marks the run interrupted.
        # Ctrl+C cancels this task itself (asyncio.run does), SIGTERM only the play within it.
        # Read back unsaid: the summary, the exit code and the report need no dialogue's words but
        # the report's windows, which read each again from its line (``Summary.said``).
        playing = asyncio.ensure_future(journal.play(self.spec, self.bench, printed, self.secrets, self.kept, journal.unsaid))
        # Beside the play, not in it: the live report's writings end (stopped and waited for)
        # before this returns, so none can land after the report written next.
        refreshing = None if self.live is None else asyncio.ensure_future(self.live.refreshing())
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, playing.cancel)
        try:
            return await playing
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            raise Terminated() from None
        finally:
            loop.remove_signal_handler(signal.SIGTERM)
            if refreshing is not None:
                refreshing.cancel()
                await asyncio.wait((refreshing,))

    def _dead(self, journal: RunJournal, dead: DeadService) -> int:
        """A participant never answered: who, what its service said and the likely fix, then what
        became of the run — a new one that kept nothing is gone; otherwise it keeps what was played
        before (never an attempt the service refused) and ``convy resume`` plays the rest. Exit 2:
        the project cannot be run as it is."""
        said = self.cures.lines(dead) if self.cures is not None else [Inert(f"convy: {dead}").line()]
        for line in said:
            self.errors.line(self.secrets.hidden(line))
        held = (
            f"; the {dead.held} attempt{'s' if dead.held != 1 else ''} {'they' if len(dead.unanswered) > 1 else 'it'} "
            f"refused {'are' if dead.held != 1 else 'is'} not recorded"
            if dead.held
            else ""
        )
        if not (journal.folder / "run.json").exists():
            named = " (a run keeps its models' names: it could not be resumed with another)" if dead.respecified() else ""
            self.errors.line(
                f"convy: run {self.spec.id} stopped before playing on and is not kept{named}{held}; once that is mended, run again"
            )
            return 2
        if dead.respecified():  # resumed: it keeps the name the service refused, and resume holds it to it
            self.errors.line(
                f"convy: run {self.spec.id} stopped before playing on{held}; it names a model the service does not "
                "know, so no resume can finish it: once that is mended, run again"
            )
            return 2
        kept = journal.unsaid(self.spec)
        planned = self._planned(kept.outcomes)
        self.errors.line(
            f"convy: run {self.spec.id} stopped before playing on and keeps {len(kept.outcomes)} of {planned} attempts{held}; "
            f"once that is mended: convy resume {self.spec.id}"
        )
        return 2

    def _stopped(self, journal: RunJournal, how: str, code: int) -> int:
        kept = journal.unsaid(self.spec)
        planned = self._planned(kept.outcomes)
        self.errors.line(f"{how}: run {self.spec.id} keeps {len(kept.outcomes)} of {planned} attempts")
        self.errors.line(f"resume with: convy resume {self.spec.id}")
        # The run is kept and the way on was said: a second Ctrl+C ends convy at once. Raised as
        # KeyboardInterrupt it could land inside a callback Python runs for itself (a weak
        # reference's), which prints a traceback that nothing can catch.
        signal.signal(signal.SIGINT, lambda number, frame: os._exit(code))
        try:
            self._reported(Summary(self._ruled(Read(journal.folder, journal.run(), kept.outcomes, kept.broken, False))))
        except KeyboardInterrupt:
            pass  # a second Ctrl+C that came before the handler above: the report can wait
        except (Unwritable, ConfigurationError) as error:
            self.errors.line(f"report not written: {error}")
        return code

    def _planned(self, outcomes: Sequence[Outcome]) -> int:
        """The attempts the run plans, as far as those kept say (``Summary.planned``)."""
        spec = self.spec
        if spec.adaptive is None:
            return len(spec.scenarios) * spec.attempts
        return spec.adaptive.course(tuple(one.id for one in spec.scenarios), outcomes, spec.attempts, spec.trust).planned()

    def _marked(self, marks: Marks) -> int:
        """The attempts the run plans, as the marks of those kept say (``_planned``)."""
        spec = self.spec
        if spec.adaptive is None:
            return len(spec.scenarios) * spec.attempts
        return spec.adaptive.marked(tuple(one.id for one in spec.scenarios), marks, spec.attempts).planned()

    def _where(self, path: Path) -> Path:
        return path.relative_to(self.project.folder) if path.is_relative_to(self.project.folder) else path

    def _reported(self, summary: Summary) -> None:
        report = self.project.reported(summary)
        self.project.indexed()
        self.shown.line(f"report: {report.relative_to(self.project.folder)}")

    def _summed(self, summary: Summary) -> int:
        read = summary.run
        outcomes = read.outcomes  # not walked: the summary walked them once (``digest.Digest``)
        statuses = summary.statuses()
        agent_failed = summary.verdict().agent_failed
        passed, failed, unjudged = (statuses[name] for name in ("passed", "failed", "not_judged"))
        rate = summary.rate()
        rate_text = "n/a" if rate is None else f"{rate.estimate:.1%} [{rate.low:.1%}, {rate.high:.1%}]"
        skipped = len(self.spec.skipped)
        skips = f" · {skipped} scenario{'s' if skipped != 1 else ''} skipped" if skipped else ""
        named = f' · "{Inert(self.spec.name).line()}"' if self.spec.name else ""
        self.shown.line(
            f"{self.spec.agent}{named}: {passed} passed, {failed} failed, {unjudged} not judged "
            f"of {len(outcomes)} attempt{'s' if len(outcomes) != 1 else ''}{skips} · "
            f"pass rate {rate_text} (mean over scenarios)"
        )
        causes = summary.breakdown().text()
        if causes:
            self.shown.line(causes)
        for (path, held), count in sorted(summary.unseen().items()):
            where = f"held {held}, never a list, in every reply of" if held else "in no reply of"
            self.shown.line(
                f"agents/{self.spec.agent}.py: calls path {Inert(path).line()!r}: {where} {count} attempt{'s' if count != 1 else ''}, "
                "whose tool checks were not judged: set calls= to where the agent's replies list its tool calls"
            )
        grouped = summary.by_scenario()
        for scenario, why in summary.stopped().items():
            got = len(grouped.get(scenario, ()))
            self.shown.line(f"  {Inert(scenario).line()}: {got} attempt{'s' if got != 1 else ''}, {why}")
        verdict = summary.against()
        if verdict:
            self.shown.line(f"against {Inert(summary.base()).line()}: {verdict}")
        for line in Passed(self.spec.skipped).lines():
            self.shown.line(line)
        self.shown.line(f"run kept in {self._where(read.folder)}")
        for line in JudgingSaid(summary.judging()).lines():
            self.shown.line(line)
        # Compared as ratios, each rounded once: 57 of 100 is not above 0.57, as 57 > 0.57 * 100 would say.
        share = unjudged / len(outcomes) if outcomes else 0.0
        above = share > self.max_not_judged
        if unjudged:
            # Above the share, the run fails (exit 5) whatever the pass rule says of the judged
            # attempts next: said here, with the option that lets more through, so the two lines agree.
            self.shown.line(
                f"{unjudged} of {len(outcomes)} attempts not judged ({share:.1%}): "
                f"{'more than' if above else 'within'} --max-not-judged {self.max_not_judged:.1%}"
                + (f": the run fails (exit 5) whatever the pass rule says; --max-not-judged {share:.1%} would let them through" if above else "")
            )
        codes = [1] if agent_failed else []
        if above:
            codes.append(5)
        else:
            # Within the tolerance, a scenario none of whose attempts was judged still fails it
            # (exit 5), as its JUnit case and pytest item do: the tolerance is for a few attempts.
            for code, words in summary.verdict().gates():
                if code == 5:
                    self.shown.line(f"{Inert(self.spec.agent).line()}: {Inert(words).line()}")
                    codes.append(5)
        planned = summary.planned()
        partial = f" on the {len(outcomes)} attempts kept of {planned} planned" if len(outcomes) < planned else ""
        lines, gates = Ruled(summary.verdict(), self.spec.agent, self._untested(summary), partial).said()
        for line in lines:
            self.shown.line(line)
        return Worst((*codes, *gates)).code()

    def _untested(self, summary: Summary) -> str:
        """Why a run judged no attempt, in a few words."""
        outcomes = summary.run.outcomes
        if outcomes:
            return f"none of its {len(outcomes)} attempts was judged"
        stop = summary.stop()
        if stop:
            return f"no attempt was played: the run was {stop}"
        if not self.spec.scenarios and self.spec.skipped:
            return f"every chosen scenario was skipped ({len(self.spec.skipped)})"
        return "no attempt was played"

    @contextmanager
    def _progress(self, total: int, completed: int) -> Iterator[tuple[Any, Any]]:
        """The progress bar on stderr, and its task; when stderr is not a terminal, nobody would
        see one, and rich is not loaded at all."""
        if not sys.stderr.isatty():
            yield Unseen(), 0
            return
        from rich.console import Console
        from rich.markup import escape
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("✓ {task.fields[passed]}  ✗ {task.fields[failed]}  ? {task.fields[not_judged]}"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
            redirect_stdout=sys.stdout.isatty(),
            redirect_stderr=False,
        )
        with progress:
            task = progress.add_task(
                escape(Inert(self.spec.agent).line()), total=total, completed=completed, passed=0, failed=0, not_judged=0
            )
            yield progress, task


class Ruled(msgspec.Struct, frozen=True):
    """What the command says of a run against its pass rule (``passing.RunVerdict``, the verdict
    JUnit, the summary, the pages and ``pytest --convy`` give too), and the codes that follow:
    7 when no attempt was judged, 3 when a scenario fails the rule, 8 when a scenario was skipped
    and the rule fails a run for it. ``why`` says why nothing was judged, when nothing was."""

    verdict: RunVerdict
    agent: str
    why: str = ""
    partial: str = ""  # for a run that kept fewer attempts than it planned: how many, said with its verdict

    MOST: ClassVar[int] = 5  # scenarios named in a line

    def said(self) -> tuple[list[str], tuple[int, ...]]:
        verdict, agent = self.verdict, Inert(self.agent).line()
        rule = verdict.rule
        lines: list[str] = []
        codes: list[int] = []
        if not verdict.tested():
            lines.append(f"{agent}: nothing was tested: {self.why or 'no attempt was judged'}")
            codes.append(7)
        failing = verdict.failing()
        mean = verdict.mean()
        if verdict.below_mean() and mean is not None and rule.fail_under is not None:
            lines.append(f"{agent}: pass rate {mean:.1%} is below fail_under {rule.fail_under:.1%}")
        if failing:
            bar = (
                "every judged attempt passes; set fail_under (per run or per scenario) to accept less"
                if rule.fail_under is None
                else f"the mean pass rate at least fail_under {rule.fail_under:.1%}"
            )
            lines.append(
                f"{agent}: {len(failing)} of {len(verdict.tallies)} scenario{'s' if len(verdict.tallies) != 1 else ''} "
                f"failed the pass rule ({bar}):"
            )
            lines += [f"  ✗ {Inert(one).line()}: {verdict.why(one)}" for one in failing[: self.MOST]]
            if len(failing) > self.MOST:
                lines.append(f"  and {len(failing) - self.MOST} more (see the report)")
            codes.append(3)
        elif verdict.tested():
            accepted = [one for one in verdict.tallies if verdict.accepted(one)]
            held = "every scenario passed every judged attempt"
            if rule.fail_under is not None and mean is not None:
                held = f"pass rate {mean:.1%}, at or above fail_under {rule.fail_under:.1%}"
            elif accepted:
                held = "every scenario at or above its fail_under"
            lines.append(f"{agent}: passed the pass rule{self.partial}: {held}")
            if accepted:
                named = ", ".join(
                    f"{Inert(one).line()} ({verdict.tallies[one].passed} of {verdict.tallies[one].judged})" for one in accepted[: self.MOST]
                )
                more = f" and {len(accepted) - self.MOST} more" if len(accepted) > self.MOST else ""
                lines.append(f"  accepted short of every attempt, as the project's fail_under allows: {named}{more}")
        if verdict.skipped and rule.fail_on_skip:
            lines.append(
                f"{agent}: {verdict.skipped} scenario{'s' if verdict.skipped != 1 else ''} skipped, and fail_on_skip "
                "(--fail-on-skip) fails a run that skipped any"
            )
            codes.append(8)
        return lines, tuple(codes)


class Absence(msgspec.Struct, frozen=True):
    """The agents ``convy run`` skipped as absent, and whether the run's rule fails a skip: each is a
    skip, counted on the command's last line, in JUnit and in the summary."""

    agents: tuple[AbsentAgent, ...] = ()
    fail_on_skip: bool = False

    def judged(self, code: int, played: bool, shown: Shown, errors: Shown) -> int:
        """The command's code, given the runs' ``code`` and whether any run was ``played``: 7 when
        none was (every agent skipped: nothing was tested), 8 under fail_on_skip, each said on
        stderr; else the skips counted on stdout."""
        if not self.agents:
            return code
        count = len(self.agents)
        names = ", ".join(Inert(agent.name).line() for agent in self.agents)
        skipped = f"{count} agent{'s' if count != 1 else ''} skipped (absent): {names}"
        if not played:
            errors.line(f"✗ nothing was tested: every agent was skipped — {skipped}")
            return Worst((code, 7)).code()
        if self.fail_on_skip:
            errors.line(f"✗ {skipped}, and fail_on_skip fails a run that skips any")
            return Worst((code, 8)).code()
        shown.line(f"– {skipped}")
        return code


class Outputs(msgspec.Struct, frozen=True):
    """The files a command writes for CI besides its pages, each where the user named it: the runs
    as JUnit XML (``--junit``) and as a Markdown summary (``--summary``); ``here`` is where the
    command was run, which a summary gives the pages' paths from."""

    here: Path = Path("/")
    junit: Path | None = None
    summary: Path | None = None

    def wanted(self) -> bool:
        return self.junit is not None or self.summary is not None

    def option(self, path: Path) -> str:
        """The option that named ``path``."""
        return "--junit" if path == self.junit else "--summary"

    def refused(self) -> None:
        """A ``ConfigurationError`` when a file asked for cannot be one, said before anything is
        played: a folder named (``--junit /``), a path through a file, both options one file."""
        examples = {"--junit": "junit.xml", "--summary": "summary.md"}
        for option, path in (("--junit", self.junit), ("--summary", self.summary)):
            if path is None:
                continue
            shown = path.relative_to(self.here) if path.is_relative_to(self.here) else path
            try:
                folder = path.is_dir()
            except OSError:  # a name the file system cannot take: said when the file is written
                continue
            if folder or not path.name:
                raise ConfigurationError(f"{option} {shown}: a folder; name a file in it: {option} {Path(shown, examples[option])}")
            above = next((parent for parent in path.parents if parent.exists()), None)
            if above is not None and not above.is_dir():
                raise ConfigurationError(f"{option} {shown}: {above.name} is a file, not a folder")
        if self.junit is not None and self.junit == self.summary:
            raise ConfigurationError("--junit and --summary name one file: give each its own")

    def written(self, summaries: tuple[Summary, ...], shown: Shown, absent: Absence = Absence()) -> None:
        """Write each file asked for (each module loaded only when its file is), the agents ``absent``
        counted as skips; a refused write is ``Unwritable``."""
        if self.junit is not None:
            from convy.junit import JUnitReport

            JUnitReport(summaries, absent.agents, absent.fail_on_skip).written(self.junit)
            shown.line(f"junit: {self.junit}")
        if self.summary is not None:
            from convy.markdown import RunSummary

            RunSummary(summaries, self.here, absent.agents, absent.fail_on_skip).written(self.summary)
            shown.line(f"summary: {self.summary}")

    def played(
        self, project: Project, runs: tuple[str, ...], code: int, shown: Shown, errors: Shown, absent: Absence = Absence()
    ) -> int:
        """After ``convy run`` or ``convy resume``: write each file asked for of the ``runs`` played,
        which ended with ``code``, and of the agents ``absent``; the command's code then (1 more
        when a file cannot be written)."""
        if not self.wanted() or code in (130, 143):  # asked to stop: the runs are kept, nothing more is written
            return code
        # Each run read back as it was kept (its secrets hidden), as `convy report` would read it.
        with Uncollected():
            summaries = tuple(Summary(project.read(one, unsaid=True)) for one in runs)
            try:
                self.written(summaries, shown, absent)
            except Unwritable as error:
                named = " ".join(runs) if runs else "RUN…"
                errors.line(
                    f"convy: {error.path}: cannot be written: {error.reason}; the runs are kept: "
                    f"convy report {named} {self.option(error.path)} FILE"
                )
                return Worst((code, 1)).code()
        return code

    def compared(self, view: ComparisonView, base: Read, candidate: Read, page: Path, shown: Shown) -> None:
        """Write the comparison's Markdown summary, when one was asked for."""
        if self.summary is not None:
            from convy.markdown import ComparisonSummary

            ComparisonSummary(view, Summary(base), Summary(candidate), page, self.here).written(self.summary)
            shown.line(f"summary: {self.summary}")


class InitCommand(msgspec.Struct, frozen=True):
    """``convy init [DIR]``: a new project from the template, never overwriting a file."""

    folder: Path

    def run(self, shown: Shown) -> int:
        # The template's agents and scenarios added beside a project's own would be played with
        # them at the next run: a folder that holds a project already is refused.
        held = [name for name in ("agents", "scenarios") if (self.folder / name).is_dir() and any((self.folder / name).iterdir())]
        if held:
            raise ConfigurationError(
                f"{self.folder}: a project already ({' and '.join(f'{name}/' for name in held)} hold files): convy init makes "
                "a new one, its demo agents and scenarios would join yours; give a new folder (convy init NEW), "
                "or convy init --ci github for the CI workflow alone"
            )
        self.folder.mkdir(parents=True, exist_ok=True)
        written, kept = Project(self.folder).created()
        for name in written:
            shown.line(f"+ {name}")
        for name in kept:
            shown.line(f"= {name} (exists, left as it is)")
        # The command said is one to paste: a folder with a space or a quote is quoted for the shell.
        where = "" if self.folder == Path(".") else f"cd {shlex.quote(str(self.folder))} && "
        shown.line(f"project ready in {self.folder}; next: {where}convy run")
        return 0


class Workflow(msgspec.Struct, frozen=True):
    """``convy init --ci github``: the CI workflow convy ships (``ci/github.yml``, explained in
    docs/ci.md) written into a project as ``.github/workflows/convy.yml``, never over a file that
    is there. Only the workflow: the project's own files, its agents deleted or renamed, are left
    alone."""

    folder: Path
    system: str  # "github", the one choice the parser allows

    def run(self, shown: Shown) -> int:
        from convy.files import Shipped

        name = ".github/workflows/convy.yml"
        target = self.folder / name
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "xb") as file:  # created here, or refused: never written over
                try:
                    file.write(Shipped(("ci", f"{self.system}.yml")).data())
                except OSError:
                    target.unlink()
                    raise
        except FileExistsError:
            shown.line(f"= {name} (exists, left as it is: remove it to write convy's)")
            return 0
        except OSError as error:
            raise Unwritable(target, error) from error
        shown.line(f"+ {name}")
        shown.line(
            "next: add the repository secrets GATEWAY_URL, GATEWAY_KEY, USER_MODEL, JUDGE_MODEL, AGENT_MODEL, "
            "check the default branch under on.push, and push (see convy's docs/ci.md)"
        )
        return 0


class Budgeted(msgspec.Struct, frozen=True):
    """The budget's options of ``convy run`` and ``convy resume`` (``--max-cost``, ``--max-tokens``,
    ``--max-minutes``), each over its setting when given."""

    max_cost: float | None = None
    max_tokens: int | None = None
    max_minutes: float | None = None

    OPTIONS: ClassVar[tuple[tuple[str, str, Any, str], ...]] = (
        ("max_cost", "USD", float, "stop starting attempts once the run has cost this much, in US dollars (default: max_cost, else none)"),
        ("max_tokens", "N", int, "stop starting attempts once the run has taken this many tokens (default: max_tokens, else none)"),
        ("max_minutes", "M", float, "stop starting attempts after this many minutes of this command's play (default: max_minutes, else none)"),
    )

    def over(self, settings: Settings, changes: dict[str, Any] | None = None) -> Settings:
        """``settings`` with ``changes`` and the options given over them."""
        changes = dict(changes or {})
        for name in ("max_cost", "max_tokens", "max_minutes"):
            if getattr(self, name) is not None:
                changes[name] = getattr(self, name)
        try:
            return msgspec.structs.replace(settings, **changes)
        except ValueError as error:
            field, _, problem = str(error).partition(":")
            raise ConfigurationError(f"--{field.replace('_', '-')}:{problem}") from None

    def given(self) -> dict[str, str]:
        """The options given, by the setting each is over."""
        return {name: "--" + name.replace("_", "-") for name in self.__struct_fields__ if getattr(self, name) is not None}

    def resumed(self, kept: Budget, settings: Settings) -> Budget:
        """The budget a resumed run plays within: each limit as given to ``convy resume``, else as
        the run kept it in run.json (the budget its last play was given, from wherever it came),
        else the project's setting now (``settings``, with the options over it)."""
        now = settings.budget() or Budget()
        return Budget(
            cost=self.max_cost if self.max_cost is not None else kept.cost or now.cost,
            tokens=self.max_tokens if self.max_tokens is not None else kept.tokens or now.tokens,
            minutes=self.max_minutes if self.max_minutes is not None else kept.minutes or now.minutes,
        )


class AutoAttempts(msgspec.Struct, frozen=True):
    """``--min-attempts``, ``--max-attempts`` and ``--target-width`` of ``convy run``: how a run of
    ``--attempts auto`` spends its attempts, each over its setting when given."""

    min_attempts: int | None = None
    max_attempts: int | None = None
    target_width: float | None = None

    def given(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__struct_fields__ if getattr(self, name) is not None}


class AgainstRun(msgspec.Struct, frozen=True):
    """``--against BASE`` of ``convy run`` (with ``--attempts auto``): the run is played until its
    comparison with the base run ``wanted`` (an id or a unique part of one) is decided
    (``adaptive.Against``). The base must be a finished run of the same agent; only the scenarios
    it played with the same content are played, the rest are kept out and said. Its judged
    attempts are read here, in attempt-number order, and kept in the new run's spec."""

    project: Project
    wanted: str

    ALPHA: ClassVar[float] = 0.05  # convy compare's
    # A scenario's first block of base attempts is scored with no guess of the change (e = 1), and
    # the base is handed out over the plan: with one judged base attempt the whole plan is that
    # block and can never decide; with two, one block carries evidence. Three or more, or left out.
    LEAST_BASE: ClassVar[int] = 3

    def base(self) -> Read:
        try:
            read = self.project.read(self.wanted)
        except ConfigurationError as error:
            raise ConfigurationError(f"--against: {error}") from None
        spec = read.file.spec
        status = read.status()
        if read.problem and (status == "finished" or read.guessed):  # resume cannot mend a damaged run.json
            raise ConfigurationError(f"--against: run {spec.id}: {read.problem}")
        if status != "finished":
            how = "playing" if status == "running" else status
            then = "wait for it to end" if status == "running" else f"convy resume {spec.id}"  # resume refuses a run in use
            raise ConfigurationError(f"--against: run {spec.id} is {how}, not finished: a base must be played out ({then})")
        return read

    def agents(self, named: tuple[str, ...], base: Read) -> tuple[str, ...]:
        """The agent to run: the base's, which an agent named must be."""
        agent = base.file.spec.agent
        for name in named:
            if name != agent:
                raise ConfigurationError(
                    f"--against: run {base.file.spec.id} is of agent {agent}, not {name}: a base is a run of the same agent"
                )
        return (agent,)

    def spec(self, spec: RunSpec, base: Read) -> RunSpec:
        """``spec`` narrowed to the scenarios the base played with the same content, its rule the
        comparison with the base."""
        before = {scenario.id: scenario for scenario in base.file.spec.scenarios}
        name = f"{base.file.spec.agent}/{base.file.spec.id}"
        marks = Judged(base.outcomes, base.file.spec.trust).marks(before)
        shared: list[Scenario] = []
        left: list[Skipped] = []
        for scenario in spec.scenarios:
            if scenario.id not in before:
                left.append(Skipped(scenario.id, (f"not in base run {name}",)))
            elif before[scenario.id] != scenario:
                left.append(Skipped(scenario.id, (f"changed since base run {name}",)))
            elif not marks[scenario.id]:
                left.append(Skipped(scenario.id, (f"no attempt judged in base run {name}",)))
            elif len(marks[scenario.id]) < self.LEAST_BASE:
                judged = len(marks[scenario.id])
                left.append(
                    Skipped(scenario.id, (f"{judged} attempt{'s' if judged != 1 else ''} judged in base run {name}, fewer than {self.LEAST_BASE}",))
                )
            else:
                shared.append(scenario)
        if not shared:
            raise ConfigurationError(
                f"--against: run {base.file.spec.id} shares no scenario with this run "
                f"({len(left)} scenario{'s' if len(left) != 1 else ''} not in it, changed since, or judged in fewer than "
                f"{self.LEAST_BASE} of its attempts)"
            )
        kept = {scenario.id: marks[scenario.id] for scenario in shared}
        rule = Adaptive(1, Against(base.file.spec.agent, base.file.spec.id, self.ALPHA, kept, Sequential.RATIO))
        return msgspec.structs.replace(spec, scenarios=tuple(shared), skipped=(*spec.skipped, *left), adaptive=rule)


class AgainstPlan(msgspec.Struct, frozen=True):
    """What a run against a base (``--against``) may play, said before it plays and by
    ``--dry-run`` (``adaptive.Plan``), with, given the base's attempts and the budget, what that
    may spend: the base's mean spend per attempt times the plan's attempts, and how many attempts
    the budget allows at it."""

    spec: RunSpec

    def plan(self) -> Plan | None:
        adaptive = self.spec.adaptive
        if adaptive is None or not isinstance(adaptive.until, Against):
            return None
        return adaptive.until.plan(tuple(scenario.id for scenario in self.spec.scenarios), self.spec.attempts)

    def lines(self) -> tuple[str, ...]:
        plan = self.plan()
        return () if plan is None else plan.lines()

    def spend(self, base: Read, budget: Budget | None) -> tuple[str, ...]:
        """The plan's likely spend at the base's spend per attempt, and what the budget allows."""
        plan = self.plan()
        if plan is None or not base.outcomes:
            return ()
        total = Sum()
        for outcome in base.outcomes:
            total = total + Attempt(outcome, 0.0).every_sum()
        count, most = len(base.outcomes), plan.attempts()
        # Each figure only when the base reported it for every request: else it is said unknown.
        tokens = (total.input + total.output) / count if total.requests and total.reported == total.requests else None
        cost = float(total.amount) / count if total.requests and total.priced == total.requests else None
        each = [part for part in (None if tokens is None else f"{tokens:,.0f} tokens", None if cost is None else f"${cost:.4f}") if part]

        def spent(attempts: int) -> str:
            return ", ".join(part for part in (None if tokens is None else f"{tokens * attempts:,.0f} tokens", None if cost is None else f"${cost * attempts:.2f}") if part)

        if not each:
            lines = ["the base's spend per attempt is not known (its requests reported no tokens or cost): the plan's spend cannot be said"]
        else:
            line = f"at the base's spend per attempt ({', '.join(each)}): up to {spent(most)} for {most} attempts"
            if plan.flipped is not None:
                line += f", {spent(plan.flipped)} for the {plan.flipped} that decide a flip"
            lines = [line]
        if budget is None or not (budget.cost or budget.tokens):
            return (*lines, "no budget on cost or tokens: nothing but the plan bounds the spend")
        allows: list[str] = []
        fits: list[int] = []
        for name, limit, per, shown in (("max_cost", budget.cost, cost, f"${budget.cost:g}"), ("max_tokens", budget.tokens, tokens, f"{budget.tokens:,}")):
            if not limit:
                continue
            if not per:
                allows.append(f"{name} {shown}: how many attempts it allows is not known (the base's spend is not)")
                continue
            fits.append(int(limit / per))
            allows.append(f"{name} {shown} allows about {fits[-1]:,} attempts at that spend")
        enough = ""
        if fits:
            enough = ": enough for the plan" if min(fits) >= most else f": fewer than the plan's {most}, the budget may stop it undecided"
        return (*lines, f"the budget: {'; '.join(allows)}{enough}")


class Spreading(msgspec.Struct, frozen=True):
    """``--workers N`` and ``--ray [ADDRESS]`` of ``run`` and ``resume``, each over its setting
    (``workers``, ``ray``): where the run is played (``spread.py``)."""

    workers: int | None = None
    address: str | None = None

    def over(self, settings: Settings) -> Spread:
        spread = settings.spread()
        if self.address == "":  # an address left empty (an unset variable): not a run in one process unasked
            raise ConfigurationError("--ray: an empty address: auto, ray://HOST:PORT, HOST:PORT, or --ray alone")
        try:
            spread = Spread(
                spread.workers if self.workers is None else self.workers,
                spread.address if self.address is None else self.address,
            )
        except ValueError as error:
            raise ConfigurationError(f"--workers/--ray: {error}") from None
        if spread.spread():
            spread.ray()  # Ray missing: said before anything is played
        return spread

    def player(self, bench: Bench, spread: Spread, project: Project, agent: str, shown: Shown) -> Player:
        """The bench itself, or a crew of workers on Ray that plays what it would."""
        if not spread.spread():
            return bench
        crew = Crew(bench, project.folder, agent, spread).connected()
        Spreaders(shown, spread).told(*crew.hands())
        return crew


class Spreaders(msgspec.Struct, frozen=True):
    """Says how many workers play a spread run, and where."""

    shown: Any
    spread: Spread

    def told(self, hands: int, nodes: int) -> None:
        where = "a Ray started for this run" if self.spread.where() == LOCAL else f"the Ray cluster at {self.spread.where()}"
        asked = self.spread.workers
        capped = f" (of {asked} asked: no more than the limits can be split among)" if asked and hands < asked else ""
        self.shown.line(
            f"  played by {hands} worker{'s' if hands != 1 else ''}{capped} on {Inert(where).line()} ({nodes} node{'s' if nodes != 1 else ''})"
        )


class RunCommand(msgspec.Struct, frozen=True):
    """``convy run``: a new run of each agent named (all, when none is)."""

    project: Project
    agents: tuple[str, ...]
    attempts: int | str | None  # as -k gave it: the settings refuse what is neither a number nor auto
    patterns: tuple[str, ...]
    tags: tuple[str, ...]
    trust: float | None
    fail_under: float | None
    outputs: Outputs = Outputs()
    max_not_judged: float | None = None
    budget: Budgeted = Budgeted()
    judge_repeats: int | None = None
    most_variants: int | None = None  # --max-variants: a scenario's variants, over Scenario.MOST_VARIANTS
    spread: Spreading = Spreading()
    adaptive: AutoAttempts = AutoAttempts()
    against: str | None = None  # --against BASE: played until the comparison with BASE is decided
    fail_on_skip: bool | None = None  # --fail-on-skip, over fail_on_skip
    name: str | None = None  # --name: what a person calls the run, kept in run.json (spec.name)

    def run(self, shown: Shown, errors: Shown) -> int:
        if self.name is not None:
            problem = RunName(self.name).problem()
            if problem is not None:
                raise ConfigurationError(f'--name "{Inert(self.name).short(90)}": {problem}')
        settings = self.overridden(self.project.settings())
        spread = self.spread.over(settings)
        versus, base, names = self.based(settings)
        # every scenario file must be sound before anything is played
        scenarios = self.project.scenarios(self.most_variants)
        for unread in () if self.agents else self.project.unread():  # every agent is played: one parked is said
            shown.line(f"note: {unread}")
        codes: list[int] = []
        played: list[str] = []
        absent: list[AbsentAgent] = []
        known = Loaded(self.project, "").known() if len(names) > 1 else None  # read once for every agent played
        for name in names:
            loaded = Loaded(self.project, name)
            agent, models = loaded.parts()
            secrets = loaded.secrets(agent, models, known=known)
            passed_over = self.passed_over(name, agent, secrets)
            if passed_over is not None:
                shown.line(f"- {Inert(passed_over.said()).line()}")
                absent.append(passed_over)
                continue
            spec = self.project.spec(name, models, settings, scenarios, Matching(self.patterns, self.tags), agent)
            if self.name is not None:
                spec = msgspec.structs.replace(spec, name=self.name)
            if versus is not None and base is not None:
                spec = versus.spec(spec, base)
                for line in AgainstPlan(spec).lines():  # before anything is spent
                    shown.line(Inert(line).line())
            spec = secrets.kept(spec)
            bench = Bench(
                agent, models, spec.limits, self.project.prompt(settings), settings.budget(), spec.judging, spec.user_checks
            )
            recorded = Recorded(
                self.project,
                spec,
                spec.player(self.spread.player(bench, spread, self.project, name, shown)),
                shown,
                errors,
                None,  # the spec keeps the pass rule, --fail-under's and --fail-on-skip's included
                secrets,
                max_not_judged=settings.max_not_judged,
                live=settings.live(self.project.folder, spec.id),
                cures=Cures(self.project.folder, name, {"agent": agent, "user": models.user, "judge": models.judge}),
            )
            codes.append(recorded.played())
            if (self.project.journal(spec).folder / "run.json").exists():  # a run stopped before keeping anything is gone
                played.append(spec.id)
            if codes[-1] in (130, 143, 2):  # stopped, or the project cannot be run as it is: no other agent plays
                break
        absence = Absence(tuple(absent), settings.fail_on_skip)
        code = absence.judged(Worst(tuple(codes)).code(), bool(played), shown, errors)
        return self.outputs.played(self.project, tuple(played), code, shown, errors, absence)

    def based(self, settings: Settings) -> tuple[AgainstRun | None, Read | None, tuple[str, ...]]:
        """With ``--against``: the base, read and checked, and the one agent to run (its); else the
        agents named, or every one."""
        if self.against is None:
            return None, None, self.agents or self.project.agent_names()
        if settings.attempts != "auto":
            raise ConfigurationError("--against: needs --attempts auto (the run stops once the comparison is decided)")
        for option in ("min_attempts", "target_width"):
            if option in self.adaptive.given():
                raise ConfigurationError(
                    f"--{option.replace('_', '-')}: not used with --against: the comparison decides when the run stops"
                )
        versus = AgainstRun(self.project, self.against)
        base = versus.base()
        return versus, base, versus.agents(self.agents, base)

    def overridden(self, settings: Settings) -> Settings:
        """The settings with ``-k``, ``--trust``, ``--max-not-judged``, ``--judge-repeats`` and the
        budget's options over them."""
        changes: dict[str, Any] = {}
        if self.attempts is not None:
            changes["attempts"] = self.attempts
        if self.judge_repeats is not None:
            changes["judge_repeats"] = self.judge_repeats
        if self.trust is not None:
            changes["trust"] = self.trust
        if self.max_not_judged is not None:
            changes["max_not_judged"] = self.max_not_judged
        if self.fail_under is not None:
            changes["fail_under"] = self.fail_under
        if self.fail_on_skip is not None:
            changes["fail_on_skip"] = self.fail_on_skip
        changes |= self.adaptive.given()
        overridden = self.budget.over(settings, changes)
        if overridden.attempts != "auto":
            for option in self.adaptive.given():  # dropped silently, it would change nothing
                raise ConfigurationError(
                    f"--{option.replace('_', '-')}: used only with --attempts auto; this run plays {overridden.attempts} attempts per scenario"
                )
        return overridden

    def passed_over(self, name: str, agent: Any, secrets: Secrets) -> AbsentAgent | None:
        """The absent agent that is not run (a skip), or ``None`` for one that is; an absent agent
        named on the command line is a ``ConfigurationError``."""
        match agent:
            case Absent(reason=reason) if self.agents:
                raise ConfigurationError(f"agents/{name}.py: the agent is absent: {secrets.hidden(reason)}")
            case Absent(reason=reason):
                return AbsentAgent(name, secrets.hidden(reason))
            case _:
                return None


class SmokeCommand(msgspec.Struct, frozen=True):
    """``convy run AGENT --smoke``: a short scripted dialogue with the agent, for real, to see
    that the connection works, and one short request to the simulated user's model and to each
    chat model of the judge. Nothing is written."""

    project: Project
    agents: tuple[str, ...]

    SCRIPT: ClassVar[tuple[str, ...]] = (
        "Hello!",
        "What can you help me with?",
        "Thank you, that is all for now.",
    )
    ASKED: ClassVar[str] = "This is a connection check. Reply with the word OK."  # each model's one request

    def run(self, shown: Shown, errors: Shown) -> int:
        limits = self.project.settings().limits()
        smoke = Scenario(id="smoke", script=self.SCRIPT, judge=(Rule(check=Check(said=r"\S")),))
        codes: list[int] = []
        names = self.agents or self.project.agent_names()
        known = Loaded(self.project, "").known() if len(names) > 1 else None  # read once for every agent checked
        for name in names:
            loaded = Loaded(self.project, name)
            agent, models = loaded.parts()
            secrets = loaded.secrets(agent, models, known=known)
            match agent:
                case Absent(reason=reason):
                    errors.line(f"✗ {name}: the agent is absent: {Inert(secrets.hidden(reason)).line()}")
                    codes.append(1)
                    continue
            limited = TimeLimited(agent, limits.open_seconds, limits.turn_seconds, limits.close_seconds)
            shown.line(f"{name}: smoke test, {len(self.SCRIPT)} scripted messages, nothing written")
            try:
                played = asyncio.run(smoke.outcome(1, limited, Absent(), Absent(), len(self.SCRIPT)))
            except asyncio.CancelledError:  # Ctrl+C comes out of asyncio.run as KeyboardInterrupt
                raise ConfigurationError(f"agents/{name}.py: the smoke test's dialogue was {CANCELLED}") from None
            outcome = secrets.kept(played)
            for number, turn in enumerate(outcome.transcript.turns, start=1):
                lines = turn.answer.text.strip().splitlines() or ["(an empty answer)"]
                said = Inert(lines[0][:100]).line()
                shown.line(f"  {number}  {turn.agent_seconds:6.2f} s  {Tokens(turn.answer.requests()).text():>16}  {said}")
            match outcome.result:
                case Failed(reason=reason) | NoVerdict(reason=reason):
                    errors.line(f"✗ {name}: {Inert(reason).line()}")
                    codes.append(1)
                case _:
                    shown.line(f"✓ {name}: connection works")
                    codes.append(0)
            unheld = {turn.answer.unheld for turn in outcome.transcript.turns}
            kinds = sorted({turn.answer.unheld_as for turn in outcome.transcript.turns} - {""})
            if outcome.transcript.turns and "" not in unheld:  # a wrong calls= would hide every tool call of a run
                paths = ", ".join(repr(Inert(path).line()) for path in sorted(unheld))
                if kinds:
                    shown.line(
                        f"  note: the calls path {paths} of agents/{name}.py held {' or '.join(kinds)}, never a list of calls: "
                        "set calls= to where its replies list them"
                    )
                else:
                    shown.line(
                        f"  note: no reply held the calls path {paths} of agents/{name}.py: if the agent calls tools, "
                        "set calls= to where its replies list them (or have it send an empty list)"
                    )
            blind = Blind(agent).said(f"agents/{name}.py", self.project.sound_scenarios()[0])
            if blind:
                shown.line(f"  note: {blind}")
        codes.extend(self._models(shown, errors))
        return Worst(tuple(codes)).code()

    def _models(self, shown: Shown, errors: Shown) -> list[int]:
        """One short request to the simulated user's model and to each chat model of the judge:
        ✓ with its time, or ✗ with what its service said and the likely fix (exit 1)."""
        loaded = Loaded(self.project, "")
        models = loaded.models()
        secrets = loaded.secrets(models)
        cures = Cures(self.project.folder, "", {"user": models.user, "judge": models.judge})
        asked: list[tuple[Literal["user", "judge"], Any]] = [("user", models.user)]
        match models.judge:
            case Panel(judges=judges):
                asked.extend(("judge", judge) for judge in judges)
            case judge:
                asked.append(("judge", judge))
        codes: list[int] = []
        for who, part in asked:
            words = "the simulated user's model" if who == "user" else "the judge's model"
            match part:
                case Absent(reason=reason):
                    shown.line(f"- {words} is absent: {Inert(secrets.hidden(reason)).line()}")
                    continue
                case ChatJudge(model=model):
                    pass
                case Panel() | ChatJudge():
                    continue
                case _ if who == "user":
                    model = part
                case _:
                    shown.line(f"- the judge {Inert(part.name).line()} has no chat model to ask: not checked")
                    continue
            said = Inert(f"{words} {model.name}").line()
            started = time.monotonic()
            try:  # Contained: any error of the model's is a ModelFailure, its service's with the HttpFailure as cause
                reply = asyncio.run(Contained(model).reply((ModelSaid("user", self.ASKED),)))
            except asyncio.CancelledError:  # Ctrl+C comes out of asyncio.run as KeyboardInterrupt
                raise ConfigurationError(f"models.py: the smoke test's request to {said} was {CANCELLED}") from None
            except ModelFailure as failure:
                cause = failure.__cause__
                match cause:
                    case HttpFailure() if cause.incurable():
                        refusal = Refusal.of(cause)
                        one = Unanswered(who, model.name, refusal, 1)
                        errors.line(secrets.hidden(Inert(f"✗ {said} {one.told()}: {cures.cure(one)}").line()))
                    case _:
                        errors.line(secrets.hidden(Inert(f"✗ {said}: {failure}").line()))
                codes.append(1)
                continue
            took = time.monotonic() - started
            first = (reply.text.strip().splitlines() or ["(an empty answer)"])[0][:60]
            shown.line(f"✓ {said}: answers ({took:.2f} s): {Inert(secrets.hidden(first)).line()}")
            codes.append(0)
        return codes


class Tokens(msgspec.Struct, frozen=True):
    """An answer's tokens in a few characters: ``in → out``, over the requests that reported
    them, and how many did when not all."""

    requests: tuple[Usage | NoUsage, ...]

    def text(self) -> str:
        reported = Spent(self.requests).reported()
        if not reported:
            return "tokens not given"
        counted = f"{sum(usage.input for usage in reported)} → {sum(usage.output for usage in reported)} tokens"
        whole = Spent(self.requests).whole()
        if whole < len(self.requests):
            return f"{counted} ({whole} of {len(self.requests)} requests reported)"
        return counted


class ResumeCommand(msgspec.Struct, frozen=True):
    """``convy resume RUN``: play the attempts a run's folder lacks, as the run was specified."""

    project: Project
    run_id: str
    fail_under: float | None
    max_not_judged: float | None = None
    budget: Budgeted = Budgeted()
    spread: Spreading = Spreading()
    outputs: Outputs = Outputs()  # --junit and --summary: the whole run, as convy run writes them
    fail_on_skip: bool | None = None
    old_scenarios: bool = False  # --old-scenarios: play the copy the run kept of scenarios edited since

    def ruled(self, spec: RunSpec) -> PassRule | None:
        """The run's pass rule with this command's --fail-under, --fail-on-skip and
        --max-not-judged over it, or ``None`` when none was given (the spec's holds)."""
        if self.fail_under is None and self.fail_on_skip is None and self.max_not_judged is None:
            return None
        rule = spec.rule
        return PassRule(
            rule.fail_under if self.fail_under is None else self.fail_under,
            rule.fail_on_skip if self.fail_on_skip is None else self.fail_on_skip,
            rule.max_not_judged if self.max_not_judged is None else self.max_not_judged,
        )

    def run(self, shown: Shown, errors: Shown) -> int:
        journal = self.project.found(self.run_id, "resume")
        settings = self.budget.over(self.project.settings())
        spread = self.spread.over(settings)
        prompt = self.project.prompt(settings)  # read once: checked against the run's, then told
        unjudged = settings.max_not_judged if self.max_not_judged is None else self.max_not_judged
        spec = self.project.resumable(journal, prompt)
        self._scenarios(spec, errors)
        self._places(spec, settings, errors)
        budget = self.budget.resumed(spec.budget, settings)
        spec = msgspec.structs.replace(spec, budget=budget)  # kept in run.json for the next resume
        # an attempts.jsonl convy will not read stops here, before anything is played; held as where
        # each line begins (read again, one at a time, each time the play walks them)
        kept = journal.unsaid(spec)
        note = kept.note()
        if note:
            errors.line(f"read {journal.folder.relative_to(self.project.folder)}: {note}")
        loaded = Loaded(self.project, spec.agent)
        if spec.origin is not None:  # a re-judged run: its judge decides the rest, the agent is never loaded
            from convy.rejudge import Rejudge

            rejudging = Rejudge(self.project, journal).resumed(spec, loaded.models(), loaded.judges(), budget if budget.set() else None)
            secrets = loaded.secrets(rejudging.judge, loaded.models())
            code = Recorded(
                self.project, spec, rejudging, shown, errors, self.ruled(spec), secrets, kept, max_not_judged=unjudged,
                live=settings.live(self.project.folder, spec.id),
                cures=Cures(self.project.folder, spec.agent, {"judge": rejudging.judge}),
            ).played()
            return self.outputs.played(self.project, (spec.id,), code, shown, errors)
        agent, models = loaded.parts()
        if (models.user.name, models.judge.name) != (spec.models.user, spec.models.judge):
            raise ConfigurationError(
                f"cannot resume {spec.id}: the models are now {models.user.name} and {models.judge.name}, "
                f"the run was started with {spec.models.user} and {spec.models.judge}"
            )
        bench = Bench(agent, models, spec.limits, prompt, budget if budget.set() else None, spec.judging, spec.user_checks)
        secrets = loaded.secrets(agent, models)
        player = spec.player(self.spread.player(bench, spread, self.project, spec.agent, shown))
        code = Recorded(
            self.project, spec, player, shown, errors, self.ruled(spec), secrets, kept, max_not_judged=unjudged,
            live=settings.live(self.project.folder, spec.id),
            cures=Cures(self.project.folder, spec.agent, {"agent": agent, "user": models.user, "judge": models.judge}),
        ).played()
        return self.outputs.played(self.project, (spec.id,), code, shown, errors)


    def _places(self, spec: RunSpec, settings: Settings, errors: Shown) -> None:
        """A run resumes with the places it started with, as caps, whatever the project's settings
        say now: said once where they differ. A run.json written before places with no cap grew
        holds 4, 8 and 8, that convy's defaults, which it played at and no more; nothing in it tells
        them from a team's own caps (its version and format are the same), so both are kept, and
        this line tells a user whose project now leaves them uncapped why they do not grow."""
        differ = [name for name in Limits.PLACES.values() if getattr(spec.limits, name) != getattr(settings, name)]
        if not differ:
            return

        def said(places: int) -> str:
            return str(places) if places else "no cap"

        kept = ", ".join(f"{name} {said(getattr(spec.limits, name))} (now {said(getattr(settings, name))})" for name in differ)
        errors.line(f"resuming {spec.id} with the places it started with: {kept}; a new run takes the settings now")

    def _scenarios(self, spec: RunSpec, errors: Shown) -> None:
        """A run resumes with the scenarios it kept: a file edited or removed since is refused with
        the two ways on, or, given --old-scenarios, said and played as the run kept it."""
        edited = self.project.edited(spec)
        if not edited:
            return
        if not self.old_scenarios:
            short = spec.id.rsplit("-", 1)[-1]
            raise ConfigurationError(
                f"cannot resume {spec.id}: {'; '.join(edited)} since the run started; "
                f"start a new run (convy run {spec.agent}), or play the copy the run kept: convy resume {short} --old-scenarios"
            )
        errors.line(f"resuming {spec.id} with the copy it kept: {'; '.join(edited)} since the run started")


class RejudgeCommand(msgspec.Struct, frozen=True):
    """``convy rejudge RUN``: a new run whose attempts are RUN's recorded dialogues decided again
    by the project's judge (or ``--judge``'s) against the scenarios' current claims; the agent and
    the simulated user are never asked (``rejudge.py``)."""

    project: Project
    run_id: str
    judge: str | None = None
    patterns: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    trust: float | None = None
    fail_under: float | None = None
    max_not_judged: float | None = None
    budget: Budgeted = Budgeted()
    judge_repeats: int | None = None
    outputs: Outputs = Outputs()  # --junit and --summary of the new run
    fail_on_skip: bool | None = None

    def run(self, shown: Shown, errors: Shown) -> int:
        from convy.rejudge import JudgeChoice, Rejudge, Rejudging

        given = {
            "judge_repeats": self.judge_repeats,
            "fail_under": self.fail_under,
            "fail_on_skip": self.fail_on_skip,
            "max_not_judged": self.max_not_judged,  # kept in the new run's rule, as convy run keeps it
        }
        changes = {name: value for name, value in given.items() if value is not None}
        settings = self.budget.over(self.project.settings(), changes)
        unjudged = settings.max_not_judged if self.max_not_judged is None else self.max_not_judged
        rejudge = Rejudge(self.project, self.project.found(self.run_id, "rejudge"), Matching(self.patterns, self.tags), self.trust)
        source, dialogues = rejudge.origin()
        loaded = Loaded(self.project, source.agent)
        models = loaded.models()
        judge = JudgeChoice(self.judge).judge(models, loaded.judges())
        secrets = loaded.secrets(judge, models)
        spec = secrets.kept(rejudge.spec(judge, settings))
        shown.line(
            f"re-judging the dialogues of run {Inert(dialogues.folder.name).line()} with {Inert(judge.name).line()}: "
            "no request to the agent or the simulated user"
        )
        bench = Rejudging(dialogues, judge, spec.limits, settings.budget(), spec.judging)
        code = Recorded(
            self.project, spec, bench, shown, errors, None, secrets, max_not_judged=unjudged,
            live=settings.live(self.project.folder, spec.id),
            # a judge that never answers: the fix, in the words of where its name was given
            cures=Cures(self.project.folder, spec.agent, {"judge": judge}, "" if self.judge is None else f"--judge {self.judge}"),
        ).played()
        return self.outputs.played(self.project, (spec.id,), code, shown, errors)


class JudgingSaid(msgspec.Struct, frozen=True):
    """What the command says of a run's judging (the report's Judging section, ``agreement.py``):
    the claims flagged — ambiguous, judges disagreeing, evidence that is no few of the agent's own words — at most
    ``MOST`` of them, and a judge from the agent's provider. Nothing for a run judged once by one
    judge that quoted nothing, or with nothing flagged."""

    view: JudgingView | None

    MOST: ClassVar[int] = 5

    def lines(self) -> list[str]:
        view = self.view
        if view is None:
            return []
        lines: list[str] = []
        flagged = [row for row in view.claims if row.ambiguous or row.disagree or row.unquoted]
        for row in flagged[: self.MOST]:
            said: list[str] = []
            if row.ambiguous:
                agreement = "" if row.agreement is None else f", self-agreement {row.agreement:.0%}"
                said.append(f"ambiguous claim, rewrite it ({row.dissents} of {row.decisions} decisions divided{agreement})")
            if row.disagree:
                said.append("the judges disagree on it")
            if row.unquoted:
                said.append(f"{row.unquoted} of {row.decisions} decisions quote no few of the agent's own words (a quote not in the dialogue, too short, a piece of a word, or the user's)")
            lines.append(f"judging: {Inert(row.scenario).line()} · {Inert(row.claim).line()}: {'; '.join(said)}")
        if len(flagged) > self.MOST:
            lines.append(f"judging: and {len(flagged) - self.MOST} more claims flagged (see the report)")
        for judge in view.alike:
            lines.append(
                f"judging: {Inert(judge).line()} is from {Inert(view.agent_provider).line()}, "
                "the provider of the agent's model: a possible bias"
            )
        return lines


class Passed(msgspec.Struct, frozen=True):
    """The scenarios a run skips, said as the command says them: one line for each reason, naming
    the scenarios it keeps out."""

    skipped: tuple[Skipped, ...]

    def lines(self, indent: str = "") -> tuple[str, ...]:
        if not self.skipped:
            return ()
        grouped: dict[str, list[str]] = {}
        for skipped in self.skipped:
            for reason in skipped.reasons:
                grouped.setdefault(reason, []).append(skipped.scenario)
        needing = all(reason.startswith("needs a model") for skipped in self.skipped for reason in skipped.reasons)
        return (
            f"{indent}skipped {len(self.skipped)} scenario(s){' that need a model' if needing else ''}:",
            *(f"{indent}  {', '.join(names)}: {reason}" for reason, names in grouped.items()),
        )


class DryRun(msgspec.Struct, frozen=True):
    """``convy check`` and ``convy run --dry-run``: what a run of the command's selection would
    play, or every problem that would stop it. Each part is read by the code the run reads it with,
    which decides its problems; here they are gathered rather than stopping at the first. Nothing
    is sent, and nothing written: no run folder, no index, not even the project's ``__pycache__``."""

    command: RunCommand

    def run(self, shown: Shown, errors: Shown) -> int:
        from convy.settings import ProjectSettings  # as Project.settings: loaded by the commands that play only

        sys.dont_write_bytecode = True  # loading the project's code leaves nothing behind
        project = self.command.project
        matching = Matching(self.command.patterns, self.command.tags)
        problems: list[str] = []
        sourced = ProjectSettings(project.folder).sourced()
        problems.extend(sourced.problems)
        settings = self._gathered(problems, lambda: self.command.overridden(sourced.settings), sourced.settings)
        scenarios, broken = project.sound_scenarios(self.command.most_variants)
        problems.extend(broken)
        names, unnamed = (self.command.agents, ()) if self.command.agents else project.agents()
        problems.extend(unnamed)
        versus: AgainstRun | None = None
        base: Read | None = None
        if self.command.against is not None:
            nothing: tuple[AgainstRun | None, Read | None, tuple[str, ...]] = (None, None, ())
            versus, base, names = self._gathered(problems, lambda: self.command.based(settings), nothing)
        absent = Absent("models.py could not be loaded")
        models = Models(absent, absent)
        if sourced.dotenv:  # else the project's code is not run: it reads the .env that was refused
            models = self._gathered(problems, lambda: Loaded(project, "").models(), models)
        else:
            names = ()
        unloaded = models.user is absent  # models.py said its problem: what it would skip is not another
        fits = False  # whether the chosen scenarios fill the simulator prompt: only then is a run planned
        if scenarios or not broken:  # with no sound scenario, that none is chosen says nothing more
            try:
                project.playable(models, settings, scenarios, matching, project.prompt(settings))
                fits = True
            except ConfigurationError as error:
                problems.extend(str(error).splitlines())
        parts: list[Any] = [models]
        passed_over: list[str] = []
        specs: list[RunSpec] = []
        for name in names:
            try:
                agent = Loaded(project, name).agent()
                parts.append(agent)
                over = self.command.passed_over(name, agent, Secrets())
                if over is not None:
                    passed_over.append(f"- {Inert(over.said()).line()}")
                elif fits:
                    spec = project.spec(name, models, settings, scenarios, matching, agent)
                    specs.append(spec if versus is None or base is None else versus.spec(spec, base))
            except ConfigurationError as error:
                problems.extend(str(error).splitlines())
        # What a run would exit 7 for is said, and exits 7 when nothing else is wrong: a check that passes would mislead.
        untested = ""
        if names and len(passed_over) == len(names):
            untested = f"nothing would be tested: every agent is absent ({'; '.join(line[2:] for line in passed_over)})"
        elif (
            names and specs and not unloaded and not broken
            and len(specs) + len(passed_over) == len(names) and not any(spec.scenarios for spec in specs)
        ):  # a broken scenario file is a problem already, and would be tested once mended
            skipped: dict[str, dict[str, None]] = {}
            for one in (one for spec in specs for one in spec.skipped):
                skipped.setdefault(one.scenario, {}).update(dict.fromkeys(one.reasons))
            each = "; ".join(f"{scenario}: {' and '.join(reasons)}" for scenario, reasons in skipped.items())
            untested = f"nothing would be tested: every chosen scenario would be skipped ({each})"
        if untested:
            problems.append(untested)
        if sourced.dotenv:  # its CONVY_* names are said by the settings; the rest, once the code is loaded
            problems.extend(Slips(project.folder).project())
        secrets = Loaded(project, "").secrets(*parts, every=False)  # no code run beyond what was checked
        if problems:
            said = tuple(dict.fromkeys(secrets.hidden(problem) for problem in problems))
            for problem in said:
                errors.line(f"convy: {problem}")
            errors.line(f"{len(said)} problem{'s' if len(said) != 1 else ''}: nothing was sent, nothing written")
            return 7 if problems == [untested] else 2
        sources = sourced.sources | {
            name: option
            for name, option, given in (
                ("attempts", "-k", self.command.attempts),
                ("trust", "--trust", self.command.trust),
                ("max_not_judged", "--max-not-judged", self.command.max_not_judged),
                ("judge_repeats", "--judge-repeats", self.command.judge_repeats),
                ("fail_under", "--fail-under", self.command.fail_under),
                ("fail_on_skip", "--fail-on-skip", self.command.fail_on_skip),
            )
            if given is not None
        } | self.command.budget.given()
        sources |= {name: "--" + name.replace("_", "-") for name in self.command.adaptive.given()}
        unread = () if self.command.agents else project.unread()  # a parked agent file stops nothing: said
        planned = self._planned(specs, passed_over, base, settings.budget())
        for line in (*self._settings(settings, sources), *planned, *(f"note: {note}" for note in unread)):
            shown.line(secrets.hidden(line))
        return 0

    def _gathered(self, problems: list[str], made: Callable[[], T], instead: T) -> T:
        """What ``made`` makes; or, when it is a configuration error, ``instead``, its lines noted."""
        try:
            return made()
        except ConfigurationError as error:
            problems.extend(str(error).splitlines())
            return instead

    def _shown(self, value: Any) -> str:
        """A setting's value as ``convy check`` lists it: the prompt's file unset is convy's own, a
        list its names apart by commas (none when empty)."""
        match value:
            case "":
                return "convy's own"
            case tuple() as names:
                return ", ".join(map(str, names)) or "none"
            case None:  # fail_under unset: every scenario passes every judged attempt
                return "none"
            case _:
                return str(value)

    def _settings(self, settings: Settings, sources: dict[str, str]) -> tuple[str, ...]:
        width = max(len(name) for name in settings.__struct_fields__)
        # Its own fields first (attempts, trust, the share not judged, the prompt's file), then the run's limits.
        names = sorted(settings.__struct_fields__, key=lambda name: name in Limits.__struct_fields__)
        values = {name: getattr(settings, name) for name in names}
        values["min_attempts"] = settings.first_round()  # unset: 5, or max_attempts when lower
        shown = {name: self._shown(value) for name, value in values.items()}
        if not settings.ray:
            shown["ray"] = "none"  # no Ray: this process alone, unless workers are asked
        # 0 is no number of places or requests a minute: it is none set, which a reader of the
        # table would not guess for places (they are not held at 0, nor at 4: they grow).
        uncapped = [who for who, name in Limits.PLACES.items() if not values[name]]
        for who in uncapped:
            shown[Limits.PLACES[who]] = "0 (no cap)"
        for name in ("agent_per_minute", "user_per_minute", "judge_per_minute"):
            if not values[name]:
                shown[name] = "0 (no limit)"
        # Where places with no cap start, as a run starts them: the same for every participant.
        grown = (f"  (no cap: places start at {settings.starting(uncapped[0])} and grow while the service keeps up)",) if uncapped else ()
        return (
            "settings in force:",
            *(f"  {name:<{width}}  {shown[name]:<12}  {sources.get(name, 'default')}" for name in values),
            *grown,
        )

    def _most(self, spec: RunSpec) -> int:
        """The most attempts ``spec`` may play: against a base, what its plan bounds them to."""
        plan = AgainstPlan(spec).plan()
        return len(spec.scenarios) * spec.attempts if plan is None else plan.attempts()

    def _each(self, spec: RunSpec) -> int:
        """The most attempts one scenario of ``spec`` may get."""
        plan = AgainstPlan(spec).plan()
        return spec.attempts if plan is None else max(plan.bounds, default=spec.attempts)

    def _planned(self, specs: list[RunSpec], passed_over: list[str], base: Read | None = None, budget: Budget | None = None) -> tuple[str, ...]:
        lines: list[str] = []
        for spec in specs:
            planned = self._most(spec)
            these = f"{len(spec.scenarios)} scenario{'s' if len(spec.scenarios) != 1 else ''}"
            most = self._each(spec)
            each = f"{most} attempt{'s' if most != 1 else ''}"
            if spec.adaptive is None:
                lines.append(f"{spec.agent}: {these} × {each} = {planned} attempt{'s' if planned != 1 else ''}")
            else:  # spent adaptively: the most is all that is known before the run
                lines.append(
                    f"{spec.agent}: {these} × up to {each}, auto = up to {planned} attempts "
                    f"({spec.adaptive.said(spec.attempts)})"
                )
            against = AgainstPlan(spec)  # what a run against a base may play and spend, as it says before playing
            lines.extend(f"  {line}" for line in (*against.lines(), *(against.spend(base, budget) if base is not None else ())))
            lines.extend(Variants(spec.scenarios).lines("  "))
            judging, judges = spec.judging, spec.models.judges()
            if judges and (len(judges) > 1 or not judging.direct()):
                asked = f"{judging.repeats} time{'s' if judging.repeats != 1 else ''}"
                who = f"its judge ({judges[0]})" if len(judges) == 1 else f"each of its {len(judges)} judges ({', '.join(judges)})"
                kept = (
                    "flagged when it is not a few of the agent's own words" if judging.evidence == "flag"
                    else "required (a few of the agent's own words): a decision without it is not trusted"
                )
                lines.append(f"  each claim asked {asked} of {who}, decided by {judging.panel}; evidence {kept}")
            lines.extend(Passed(spec.skipped).lines("  "))
        lines.extend(passed_over)
        total = sum(self._most(spec) for spec in specs)
        shapes = {(len(spec.scenarios), self._each(spec)) for spec in specs}
        auto = any(spec.adaptive is not None for spec in specs)
        upto = "up to " if auto else ""
        if len(shapes) == 1:
            (scenarios, attempts), = shapes
            lines.append(
                f"would run {len(specs)} agent{'s' if len(specs) != 1 else ''} × {scenarios} scenario{'s' if scenarios != 1 else ''} × "
                f"{upto}{attempts} attempt{'s' if attempts != 1 else ''}{', auto' if auto else ''} = {upto}{total} "
                f"attempt{'s' if total != 1 else ''}; nothing was sent, nothing written"
            )
        else:
            lines.append(f"would run {upto}{total} attempts of {len(specs)} agents; nothing was sent, nothing written")
        return tuple(lines)


class Variants(msgspec.Struct, frozen=True):
    """The variants a run plays of each scenario with a matrix, as ``convy check`` and
    ``--dry-run`` say them: how many, and over which keys."""

    scenarios: tuple[Scenario, ...]

    def lines(self, indent: str) -> tuple[str, ...]:
        made: dict[str, list[Variant]] = {}
        for scenario in self.scenarios:
            if scenario.variant is not None:
                made.setdefault(scenario.variant.of, []).append(scenario.variant)
        lines: list[str] = []
        for base, variants in made.items():
            keys: dict[str, set[str]] = {}
            for variant in variants:
                for key, value in variant.values.items():
                    keys.setdefault(key, set()).add(Value(value).text())
            said = " × ".join(f"{len(values)} {key}" for key, values in keys.items())
            lines.append(Inert(f"{indent}{base}: {len(variants)} variant{'s' if len(variants) != 1 else ''} ({said})").line())
        return tuple(lines)


class Uncollected:
    """The collector off while a command reads runs and writes pages or tables: with no event
    loop, what it makes holds no cycle and is freed as it goes, and the collector walked the young
    records of a 10,000-attempt report 80 times for nothing (0.1-0.2 s of its 3)."""

    def __enter__(self) -> None:
        gc.disable()

    def __exit__(self, *raised: object) -> None:
        gc.enable()


class ReportCommand(msgspec.Struct, frozen=True):
    """``convy report [RUN…]``: the reports of these runs (all, when none is named) and the index.
    ``live`` (the hidden ``--live SECONDS``) is given by ``live.LiveReport``'s child process: the
    pages of a run under way, which reload themselves about that often while it plays; ``parent``
    (``--parent PID``) is the ``convy run`` that child is tied to (``live.Tethered``), gone when
    nothing is written."""

    project: Project
    wanted: tuple[str, ...]
    outputs: Outputs = Outputs()
    live: float | None = None
    parent: int | None = None

    def run(self, shown: Shown, errors: Shown) -> int:
        if self.parent is not None and not Tethered(self.parent).held():
            return 0  # the run's player ended before this writing began: its pages are the next command's
        for path in (self.outputs.junit, self.outputs.summary):
            if path is not None and not self.wanted:
                # Every run ever kept is no one result a CI job can stand on: the runs are named.
                option = self.outputs.option(path)
                raise ConfigurationError(f"{option} writes the runs named: convy report RUN… {option} FILE")
        with Uncollected():
            return self._run(shown, errors)

    def _run(self, shown: Shown, errors: Shown) -> int:
        # Read unsaid: each report's windows read their dialogues again from the run's file.
        runs, unread = self.project.runs(self.wanted, unsaid=True)
        listed: list[Listed] = []
        summaries: list[Summary] = []
        live = None if self.live is None else Paced(self.live).view(datetime.now(UTC))
        for run in runs:
            summary = Summary(run)
            playing = live if run.status() == "running" else None
            shown.line(f"report: {self.project.reported(summary, playing).relative_to(self.project.folder)}")
            causes = summary.breakdown().text()
            if causes:
                shown.line(f"  {causes}")
            # The index lists the run with the totals its report just summed: not summed again.
            listed.append(Listed(msgspec.structs.replace(run, outcomes=()), summary.totals()))
            summaries.append(summary)
        index = self.project.indexed(None if self.wanted else (tuple(listed), unread), live, tuple(listed))
        shown.line(f"index: {index.relative_to(self.project.folder)}")
        self.outputs.written(tuple(summaries), shown)
        for one in unread:
            errors.line(f"skipped {one.folder.relative_to(self.project.folder)}: {one.reason}")
        for run in runs:
            if run.problem:
                errors.line(f"read {run.folder.relative_to(self.project.folder)}: {run.problem}")
        return 0


class CompareCommand(msgspec.Struct, frozen=True):
    """``convy compare BASE CANDIDATE``: is the change of pass rate real, or within noise?"""

    project: Project
    base: str
    candidate: str
    fail_on_regression: bool
    outputs: Outputs = Outputs()

    def run(self, shown: Shown, errors: Shown) -> int:
        with Uncollected():
            return self._run(shown, errors)

    def _run(self, shown: Shown, errors: Shown) -> int:
        # Read unsaid: each run's attempts are walked from its file, none held (``placed.Placed``).
        base, candidate = self.project.read(self.base, unsaid=True), self.project.read(self.candidate, unsaid=True)
        if base.folder == candidate.folder:
            raise ConfigurationError(
                f"{self.base!r} and {self.candidate!r} are the same run, {base.folder.parent.name}/{base.folder.name}: "
                "compare it with another run (convy compare BASE CANDIDATE)"
            )
        path, view = self.project.compared(base, candidate)
        self.project.indexed()
        for line in view.banner:
            errors.line(f"! not comparable: {line}")
        for line in view.notes:
            shown.line(f"note: {Inert(line).line()}")
        same = view.same_dialogues
        if same is not None:
            shown.line(f"same dialogues: {Inert(same.said).line()}")
            shown.line(
                f"attempts paired by (scenario, attempt): {same.paired}; {same.worse} passed before and fail now, "
                f"{same.better} failed before and pass now, {same.other} changed to or from not judged"
            )
        before = "n/a" if view.base.rate is None else f"{view.base.rate.estimate:.1%}"
        after = "n/a" if view.candidate.rate is None else f"{view.candidate.rate.estimate:.1%}"
        change = "n/a"
        if view.delta is not None:
            change = f"{view.delta.estimate:+.1%} [{view.delta.low:+.1%}, {view.delta.high:+.1%}]"
        # With nothing tested in the candidate, or a pair that cannot be compared, there is no verdict to give.
        unverdicted = Inert(view.unverdicted()).line()
        verdict = f"– no verdict: {unverdicted}" if unverdicted else (f"real ({view.verdict})" if view.real else "within noise")
        tested = f"paired (McNemar, exact): p = {view.p:.3g}" if view.method == "mcnemar" else f"p = {view.p:.3g}"
        headline = f"pass rate {before} → {after}, Δ {change}, {tested}: {verdict}"
        scenarios = view.scenarios_said
        sequential = view.sequential
        if sequential is not None and sequential.applies:
            # The run stopped when the sequential test said so: its verdict leads, and the
            # fixed-design test, whose attempts that run chose by looking at them, only describes.
            own = sequential.counts
            shown.line(f"anytime-valid (the {sequential.played} was played against this {sequential.other()}): {sequential.said}")
            shown.line(f"fixed-design test, for description only (not valid for a verdict after early stopping): {headline}")
            shown.line(f"fixed-design: {view.reading}")
            shown.line(
                f"scenarios, anytime-valid (each alone, e-BH): {own['worse']} worse, {own['better']} better, {own['same']} same; "
                f"fixed-design: {scenarios}"
            )
        else:
            if sequential is not None:
                shown.line(
                    f"note: the {sequential.played} was played against {Inert(sequential.against).line()}, not this "
                    f"{sequential.other()}: its sequential verdict does not apply to this pair"
                )
            shown.line(headline)
            if not view.unverdicted():  # else the headline said why there is no reading
                shown.line(view.reading)
            shown.line(f"scenarios: {scenarios}")
        for sentence in view.trouble:
            shown.line(sentence)
        if view.only_base or view.only_candidate or view.changed:
            shown.line(
                f"left out: {len(view.only_base)} only in base, {len(view.only_candidate)} only in candidate, "
                f"{len(view.changed)} changed"
            )
        if view.needed:
            shown.line(f"note: {view.needed}")
        if view.judges is not None:
            judges = view.judges
            base_id, candidate_id = Inert(view.base.run).line(), Inert(view.candidate.run).line()
            shown.line(f"judges against people ({judges.overall.base.labelled} labelled decisions on the same dialogues):")
            for row in [judges.overall, *judges.claims]:
                what = "every claim" if not row.claim else f"{Inert(row.scenario).line()} · {Inert(row.claim).line()}"
                shown.line(f"  {what}: {base_id}: {ScoreSaid(row.base).text()}; {candidate_id}: {ScoreSaid(row.candidate).text()}")
        shown.line(f"page: {path.relative_to(self.project.folder)}")
        self.outputs.compared(view, base, candidate, path, shown)
        if not self.fail_on_regression:
            return 0
        # The gate passes only a candidate that was tested, against a base it can be compared with.
        if not view.candidate.judged:
            errors.line(
                f"convy: nothing was tested: the candidate run {Inert(view.candidate.run).line()} has no judged attempt, "
                "so --fail-on-regression cannot pass it"
            )
            return 7
        if view.banner or view.delta is None:
            why = "; ".join(view.banner) or "no scenario was judged in both runs"
            errors.line(f"convy: not comparable ({Inert(why).line()}), so --fail-on-regression cannot rule out a regression")
            return 9
        return 4 if view.regressed() else 0


class LabelsCommand(msgspec.Struct, frozen=True):
    """``convy labels add RUN FILE`` keeps a labels file the report's page downloaded in the run's
    folder (``labels.jsonl``); ``convy labels show RUN`` says how the run's decisions agree with
    the labels it has (its own and its sources'). Neither takes the run's lock: see ``labels.py``."""

    project: Project
    wanted: str
    file: Path | None = None

    def run(self, shown: Shown, errors: Shown) -> int:
        from convy.labels import LabelsDownload, LabelsKept

        journal = self.project.found(self.wanted)
        where = journal.folder.relative_to(self.project.folder)
        if self.file is not None:
            labels = LabelsDownload(self.file).read()
            added = LabelsKept(journal.folder).added(labels)
            shown.line(
                f"labels: {added.added} added, {added.known} kept already; {where / LabelsKept.NAME} keeps {added.kept}"
            )
            made = labels.run
            if (made.agent, made.id) != (journal.folder.parent.name, journal.folder.name):
                errors.line(
                    f"note: {Inert(self.file.name).line()} was made on run {Inert(made.agent).line()}/{Inert(made.id).line()}; "
                    "labels follow their dialogues, so they count wherever these dialogues are"
                )
        read = self.project.read(journal.folder.name)
        if read.problem:  # a damaged run.json: its own labels still count, a source it names cannot
            errors.line(f"read {where}: {read.problem}")
        agreement = Summary(read).agreement()
        if agreement is None:
            shown.line(f"{where}: no labels")
            return 0
        for line in LabelsSaid(agreement).lines():
            shown.line(line)
        return 0


class LabelsSaid(msgspec.Struct, frozen=True):
    """A run's agreement with its labels, as the command says it: overall, then claim by claim."""

    agreement: AgreementView

    def lines(self) -> list[str]:
        view = self.agreement
        # A label is of a claim in a dialogue: attempts whose dialogues were said the same way share it.
        lines = [
            f"labels of {view.labels} claims in distinct dialogues known, "
            f"{view.unmatched} of dialogues or claims not in this run"
        ]
        if view.broken:
            lines.append(f"{view.broken} lines of labels.jsonl could not be read and are left out")
        lines.append("decisions against people: " + ScoreSaid(view.overall.score).text())
        for row in view.claims:
            lines.append(f"  {Inert(row.scenario).line()} · {Inert(row.claim).line()}: {ScoreSaid(row.score).text()}")
        return lines


class ScoreSaid(msgspec.Struct, frozen=True):
    """A decider's score against people on one line: accuracy [Wilson], κ [interval], in words."""

    score: ScoreView

    def text(self) -> str:
        score = self.score
        if not score.labelled:
            return "none labelled"
        accuracy = score.accuracy
        said = f"{score.agree}/{score.labelled} agree"
        if accuracy is not None:
            said += f", accuracy {accuracy.estimate:.0%} [{accuracy.low:.0%}, {accuracy.high:.0%}]"
        kappa = score.kappa
        if kappa is not None:
            said += f", κ {kappa.estimate:.2f} [{kappa.low:.2f}, {kappa.high:.2f}]"
        return f"{said}: {score.reading}"


class ExportCommand(msgspec.Struct, frozen=True):
    """``convy export [RUN…]``: the runs' tables for pandas, polars or a spreadsheet."""

    project: Project
    wanted: tuple[str, ...]
    form: str

    def run(self, shown: Shown, errors: Shown) -> int:
        # Read unsaid: each run's attempts are read again from its file as each table is written.
        runs, unread = self.project.runs(self.wanted, unsaid=True)
        for path in self.project.exported(runs, self.form):
            shown.line(f"table: {path.relative_to(self.project.folder)}")
        for one in unread:
            errors.line(f"skipped {one.folder.relative_to(self.project.folder)}: {one.reason}")
        for run in runs:
            if run.problem:
                errors.line(f"read {run.folder.relative_to(self.project.folder)}: {run.problem}")
        return 0


class Loaded(msgspec.Struct, frozen=True):
    """An agent of the project and the models made for it; any error loading them is a configuration error."""

    project: Project
    name: str

    def parts(self) -> tuple[Any, Any]:
        with self._loading(f"agents/{self.name}.py or models.py"):
            return self.project.agent(self.name).agent, self.project.models()

    def agent(self) -> Any:
        """The agent alone, its file's error named as its own."""
        with self._loading(f"agents/{self.name}.py"):
            return self.project.agent(self.name).agent

    def models(self) -> Models:
        """The models alone, whatever the agent."""
        with self._loading("models.py"):
            return self.project.models()

    def judges(self) -> dict[str, Any]:
        """The judges ``models.py`` names for ``convy rejudge --judge``."""
        with self._loading("models.py"):
            return self.project.judges()

    @contextmanager
    def _loading(self, what: str) -> Iterator[None]:
        try:
            yield
        except ConfigurationError:
            raise
        except Exception as error:  # the project's own code failed while loading
            # Its settings (an Env, pydantic's, which the project's code loaded): pydantic's message
            # may repeat a value, a key say, so only the fields and what is wrong with them are told.
            pydantic = sys.modules.get("pydantic")
            if pydantic is not None and isinstance(error, pydantic.ValidationError):
                problems = "; ".join(
                    f"{'.'.join(str(part) for part in problem['loc']) or 'settings'}: {problem['msg']}"
                    for problem in error.errors(include_url=False, include_input=False)
                )
                raise ConfigurationError(
                    f"loading {what} failed: {error.title}: {self.secrets().hidden(problems)}"
                ) from None
            if isinstance(error, UrlProblem):  # the variable it came from named, the value shown only when no key
                raise ConfigurationError(f"loading {what} failed: {UrlGiven(self.project.folder, error).said()}") from None
            said = Environment(self.project.folder).everything().hidden(Outside(error).named())
            top = (error.name or "").split(".")[0] if isinstance(error, ModuleNotFoundError) else ""
            if top and (self.project.folder / "agents" / f"{top}.py").is_file():  # agents/ is not on the import path
                said += f"; agents/{top}.py is imported from the project's folder: from agents.{top} import ..."
            raise ConfigurationError(f"loading {what} failed: {said}") from None

    def secrets(self, *parts: Any, every: bool = True, known: Secrets | None = None) -> Secrets:
        """Every secret the project knows, for every run a command writes: its environment's, those
        ``parts`` hold (the loaded agent, models, judge), and those of every agent of the project,
        played or not, and of the judges ``models.py`` names for ``--judge`` — an agent may echo
        another's key, and a re-judge plays none. The agent of this name is loaded for them only
        when no agent is among ``parts``. A command that plays several agents gives the project's
        ``known`` secrets, read once (``known()``), rather than have each agent's run load every
        other agent again. Without ``every``, only the environment's and the parts' (``convy
        check``, which writes no run, and runs none of the project's code it was not asked to, nor
        any when ``.env`` cannot be read)."""
        held = Holders(parts).secrets()
        if every:
            held = held + (known if known is not None else Holders(self._known(parts)).secrets())
        return Environment(self.project.folder).secrets() + held

    def known(self) -> Secrets:
        """The secrets every agent of the project and ``models.py``'s judges hold, each loaded once."""
        return Holders(self._known(())).secrets()

    def _known(self, parts: tuple[Any, ...]) -> tuple[Any, ...]:
        """The project's agents, each loaded anew for the secrets it holds, but the one of this
        name when ``parts`` holds it, and ``models.py``'s judges; one that cannot be loaded holds
        nothing known (its file's own error is said where it is played)."""
        played = any(callable(getattr(part, "conversation", None)) for part in parts)
        found: list[Any] = []
        try:
            found.extend(self.project.judges().values())
        except Exception:  # the project's code, whatever it raises: said where the judges are used
            pass
        for name in self.project.agents()[0]:
            if played and name == self.name:
                continue
            try:
                found.append(self.project.agent(name).agent)
            except Exception:  # the project's code, whatever it raises: its secrets are unknown
                continue
        return tuple(found)


class UrlGiven(msgspec.Struct, frozen=True):
    """A URL the project's code gave that cannot be one (``problems.UrlProblem``), said with the
    variable of ``.env`` or the environment that holds it. Its value is shown only when it reads
    as an address and no variable named as a secret holds it; a value that reads as a key (the
    URL and the key swapped) is never shown, and the variable holding a URL instead is named."""

    folder: Path
    problem: UrlProblem

    # A host (a name with a dot and a top-level domain, localhost, an IPv4 or IPv6 address), then a
    # port and a path: what a URL without its scheme looks like, and a key does not.
    ADDRESS: ClassVar[re.Pattern[str]] = re.compile(
        r"(localhost|[a-z0-9-]{1,63}(\.[a-z0-9-]{1,63})*\.[a-z]{2,24}|\d{1,3}(\.\d{1,3}){3}|\[[0-9a-f:]+\])(:\d{1,5})?(/\S*)?",
        re.IGNORECASE,
    )

    def said(self) -> str:
        value = self.problem.value.strip()
        environment = Environment(self.folder)
        held = environment.named(lambda given: given == value) if value else ()
        words = str(self.problem)
        if value and "://" not in value:  # no scheme: an address without one, or no address at all
            if self.ADDRESS.fullmatch(value) and environment.secrets().hidden(value) == value:
                shown = Inert(value).line()
                words += "" if ", not " in words else f", not {shown!r} (http://{shown}?)"
            else:
                words = f"{words.split(', not ', 1)[0]}; what it was given is no address (a key?)"
                urls = environment.named(lambda given: given.lower().startswith(("http://", "https://")))
                swapped = [where for where in urls if environment.keyed(where)]
                if held and swapped:
                    words += f" and {swapped[0]} holds a URL: are the two swapped?"
        elif value.split("?", 1)[0].rstrip("/").endswith("/chat/completions") and environment.secrets().hidden(value) == value:
            base = value.split("?", 1)[0].rstrip("/").removesuffix("/chat/completions")
            words += f" (is it {Inert(base).line()}?)"
        return f"{held[0]}: {words}" if held else f"ValueError: {words}"  # as the project's code raised it


class Cures(msgspec.Struct, frozen=True):
    """What most likely mends each participant that never answered (``vital.DeadService``), in the
    project's words: the variable that holds its key, its URL or its model's name — found by its
    value in ``.env`` and the environment, and named, never shown — else the file that gives it.
    ``parts`` are the participants as the project made them, by who they are: what holds the keys."""

    folder: Path
    agent: str
    parts: dict[str, Any] = {}
    judge_named: str = ""  # where the judge's model was named, when not in the project (``--judge NAME``)

    def lines(self, dead: DeadService) -> list[str]:
        """One line per participant: who, what its service answered, and the likely fix."""
        return [
            Inert(f"convy: {one.participant(self.agent)} {one.answered()}: {self.cure(one)}").line()
            for one in dead.unanswered
        ]

    def cure(self, one: Unanswered) -> str:
        first = one.first
        given = f"agents/{self.agent}.py" if one.who == "agent" else "models.py"
        base = first.url.removesuffix("/chat/completions")
        if not first.connected:
            if one.who == "agent":
                return f"is the agent's server running at {base}?{self._set(self._url(base), given)}"
            return f"is the server at {base} running, and is that its address?{self._set(self._url(base), given)}"
        if first.plain:
            plain = "http://" + base.removeprefix("https://")
            return f"the server there speaks plain HTTP: is its URL {plain}?{self._set(self._url(base), given)}"
        model = first.model
        if first.unknown_model():
            if one.who == "judge" and self.judge_named:
                return f"is the model name right ({Inert(self.judge_named).line()})?"
            named = self.environment.named(lambda value: value == model)
            return f"is the model name right ({named[0] if named else f'{Inert(model).line()!r}, in {given}'})?"
        unversioned = re.search(r"/v\d+(/|$)", urlsplit(base).path) is None
        match first.status:
            case 401 | 403:
                keys = self._key(one.who)
                held = f"check {keys[0]}" if keys else f"check the key {given} gives it"
                return f"the key was refused: {held}"
            case 404 if first.url.endswith("/chat/completions") and unversioned:
                return f"the URL has no /v1: is it {base}/v1?{self._set(self._url(base), given)}"
            case 405 | 501 if one.who == "agent":
                return (
                    "something answers there, but not the agent's endpoint (it takes no POST: a static file server?): "
                    f"is the agent's server running, and is the URL right?{self._set(self._url(base), given)}"
                )
            case 405 | 501:
                return (
                    "something answers there, but not a Chat Completions service (it takes no POST): is that the "
                    f"service's base URL?{self._set(self._url(base), given)}"
                )
            case _:
                return f"is the URL right?{self._set(self._url(base), given)}"

    @property
    def environment(self) -> Environment:
        return Environment(self.folder)

    def _set(self, names: tuple[str, ...], given: str) -> str:
        return f" ({names[0]})" if names else f" (given in {given})"

    def _url(self, base: str) -> tuple[str, ...]:
        """The variables whose value is the start of ``base``, the longest first."""

        def start(value: str) -> bool:
            bare = value.rstrip("/")
            return bare.startswith(("http://", "https://")) and (base == bare or base.startswith(bare + "/"))

        return self.environment.named(start)

    def _key(self, who: str) -> tuple[str, ...]:
        """The variables whose value is a secret the participant holds (its key)."""
        held = set(Holders((self.parts.get(who),)).secrets().values)
        return self.environment.named(lambda value: len(value) >= 8 and value in held)


class Terminated(Exception):
    """SIGTERM stopped the run: it stops as on Ctrl+C, with its own exit code."""


class Worst(msgspec.Struct, frozen=True):
    """The exit code of several runs, or of a run and what came after it: the first of ``ORDER``
    among theirs (the module's docstring says why this order); a code it does not list would
    still fail the command."""

    codes: tuple[int, ...]

    ORDER: ClassVar[tuple[int, ...]] = (130, 143, 2, 6, 1, 5, 7, 9, 8, 4, 3)

    def code(self) -> int:
        for code in self.ORDER:
            if code in self.codes:
                return code
        return max(self.codes, default=0)


class Fraction(msgspec.Struct, frozen=True):
    """A rate given on the command line: ``0.8`` or ``80%``."""

    text: str

    def value(self) -> float:
        text = self.text.strip()
        try:
            number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{self.text!r} is not a number from 0 to 1 (or a percentage)") from None
        if not 0.0 <= number <= 1.0:
            raise argparse.ArgumentTypeError(f"{self.text!r} is not between 0 and 1 (or 0% and 100%)")
        return number


class Count(msgspec.Struct, frozen=True):
    """Attempts per scenario given on the command line: a whole number, or ``auto`` (spent
    adaptively, ``adaptive.py``). Any other text is kept as it is, for the settings to refuse as
    they refuse 0: ``--attempts: must be a whole number of at least 1, or auto``, in one line."""

    text: str

    def value(self) -> int | str:
        text = self.text.strip()
        try:
            return int(text)
        except ValueError:
            return text


class Help(argparse.HelpFormatter):
    """The layout of ``--help``, as wide as the terminal. argparse finds the width with shutil
    unless it is given one, and makes a formatter for every argument added: importing shutil (and
    the compression modules it loads) took about a third of building the parser, on every command.
    The width is found here as shutil finds it: COLUMNS, else stdout's terminal, else 80."""

    def __init__(self, prog: str) -> None:
        try:
            columns = int(os.environ.get("COLUMNS", ""))
        except ValueError:
            columns = 0
        if columns <= 0:
            try:
                columns = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 0
            except (ValueError, OSError):  # not a terminal, or closed
                columns = 0
        super().__init__(prog, width=(columns or 80) - 2)


class Parser(argparse.ArgumentParser):
    """An argument parser whose help is laid out by ``Help``: the commands' parsers too. An option
    it does not know is said by the command's parser with the option meant (``--fail-on-regresion``:
    did you mean --fail-on-regression?) or the commands that take it."""

    def __init__(self, **options: Any) -> None:
        super().__init__(formatter_class=Help, **options)

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = self.parse_known_args(args, namespace)
        if not extras:
            return parsed
        commands = next((action for action in self._actions if isinstance(action, argparse._SubParsersAction)), None)
        command = getattr(parsed, "command", None)
        parser = commands.choices.get(command, self) if commands is not None and command else self
        own = [name for action in parser._actions for name in action.option_strings if name.startswith("--")]
        said: list[str] = []
        unknown: list[str] = []
        for extra in extras:
            option = extra.split("=", 1)[0]
            near = Spelling(frozenset(name.upper() for name in own)).meant(option) if option.startswith("--") else ()
            others = sorted(
                name
                for name, other in (commands.choices.items() if commands is not None else ())
                if other is not parser and any(option in action.option_strings for action in other._actions)
            )
            if near:
                said.append(f"{option}: no such option; did you mean {near[0].lower()}?")
            elif others and command and option.startswith("-"):
                said.append(f"{option} is an option of convy {' and convy '.join(others)}, not of convy {command}")
            else:
                unknown.append(extra)
        parser.error("; ".join([*said, *([f"unrecognized arguments: {' '.join(unknown)}"] if unknown else [])]))


class Arguments(msgspec.Struct, frozen=True):
    """The command line, parsed."""

    def parser(self) -> argparse.ArgumentParser:
        rate = lambda text: Fraction(text).value()  # noqa: E731
        parser = Parser(prog="convy", description="Test conversational AI agents with scenarios.")
        parser.add_argument("--version", action="version", version=f"convy {VERSION}")
        parser.add_argument("-C", "--project", type=Path, default=Path("."), help="the project folder (default: here)")
        commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
        init = commands.add_parser("init", help="create a project from the template")
        init.add_argument("folder", nargs="?", type=Path, default=Path("."))
        init.add_argument(
            "--ci", choices=("github",), help="only write the CI workflow for this system into the project (see docs/ci.md)"
        )
        run = commands.add_parser("run", help="play the scenarios against agents")
        run.add_argument("agents", nargs="*", help="agents to run (default: every file in agents/)")
        run.add_argument(
            "-k",
            "--attempts",
            type=lambda text: Count(text).value(),
            metavar="N|auto",
            help="attempts per scenario, or auto: --min-attempts each, then more where the pass rate is still uncertain",
        )
        run.add_argument("--min-attempts", type=int, metavar="N", help="with --attempts auto: each scenario's first round (default: min_attempts, else 5)")
        run.add_argument("--max-attempts", type=int, metavar="N", help="with --attempts auto: the most a scenario gets (default: max_attempts, else 60)")
        run.add_argument(
            "--target-width",
            type=float,
            metavar="W",
            help="with --attempts auto: a scenario stops once its 95%% interval is at most W wide (default: target_width, else 0.2)",
        )
        run.add_argument(
            "--against",
            metavar="BASE_RUN",
            help="with --attempts auto: play until the comparison with this finished run of the same agent is decided "
            "(an id or a unique part; --max-attempts is the most per scenario)",
        )
        run.add_argument("--name", metavar="TEXT", help='what to call the run (e.g. "prompt B"): shown on its pages, in summaries and tables')
        run.add_argument("--scenarios", nargs="+", action="extend", default=[], metavar="GLOB", help="scenario ids or paths to play")
        run.add_argument("--tag", nargs="+", action="extend", default=[], metavar="TAG", help="play scenarios with any of these tags")
        run.add_argument("--trust", type=rate, help="decisions less confident than this are not trusted")
        run.add_argument(
            "--judge-repeats",
            type=int,
            metavar="K",
            help="ask each judge about each claim K times (1-15) and decide by majority (default: judge_repeats, else 1)",
        )
        run.add_argument("--fail-under", type=rate, help="accept a mean pass rate at or above this (default: fail_under, else every scenario passes every judged attempt; exit 3 when not met)")
        run.add_argument("--fail-on-skip", action="store_true", default=None, help="exit 8 when a scenario was skipped (default: fail_on_skip)")
        run.add_argument(
            "--max-not-judged", type=rate, metavar="SHARE", help="exit 5 when more attempts than this share are not judged (default: max_not_judged, else 0)"
        )
        self._variants(run)
        self._budget(run)
        self._spread(run)
        run.add_argument("--junit", type=Path, metavar="FILE", help="also write the runs as JUnit XML, for CI")
        run.add_argument("--summary", type=Path, metavar="FILE", help="also write a Markdown summary, for a pull request")
        only = run.add_mutually_exclusive_group()
        only.add_argument(
            "--smoke", action="store_true", help="only check the connection: a short scripted dialogue, no model, no run"
        )
        only.add_argument(
            "--dry-run", action="store_true", help="say what would run, or every problem that stops it; nothing sent or written"
        )
        check = commands.add_parser("check", help="load the whole project: every problem at once, or what would run (exit 2, 7 when nothing would be tested, or 0)")
        self._variants(check)
        report = commands.add_parser("report", help="rebuild the reports of runs and the index")
        report.add_argument("runs", nargs="*", help="run ids or unique parts (default: every run)")
        report.add_argument(
            "--junit", type=Path, metavar="FILE", help="also write the runs named as JUnit XML, a suite per run"
        )
        report.add_argument("--summary", type=Path, metavar="FILE", help="also write the runs named as a Markdown summary")
        report.add_argument("--live", type=float, metavar="SECONDS", help=argparse.SUPPRESS)  # live.LiveReport's child
        report.add_argument("--parent", type=int, metavar="PID", help=argparse.SUPPRESS)  # the convy run it is tied to
        compare = commands.add_parser("compare", help="compare two runs: real change or noise?")
        compare.add_argument("base", help="the run before (id or a unique part)")
        compare.add_argument("candidate", help="the run after (id or a unique part)")
        compare.add_argument("--fail-on-regression", action="store_true", help="exit 4 when the pass rate really dropped (by the anytime-valid verdict for a run played against its base); 7 when the candidate has no judged attempt; 9 when the runs are not comparable")
        compare.add_argument("--summary", type=Path, metavar="FILE", help="also write the comparison as a Markdown summary")
        export = commands.add_parser("export", help="write the runs' tables to results/export/")
        export.add_argument("runs", nargs="*", help="run ids or unique parts (default: every run)")
        export.add_argument("--format", choices=("csv", "jsonl"), default="csv")
        labels = commands.add_parser("labels", help="keep people's labels of a run's decisions, and see how the judge agrees")
        labelled = labels.add_subparsers(dest="labels", required=True, parser_class=Parser)
        add = labelled.add_parser("add", help="keep a labels file the report's window downloaded in the run's folder")
        add.add_argument("run", help="the run's id, or a unique part of it")
        add.add_argument("file", type=Path, help="the labels file (convy-labels-….json)")
        show = labelled.add_parser("show", help="how the run's decisions agree with its labels")
        show.add_argument("run", help="the run's id, or a unique part of it")
        resume = commands.add_parser("resume", help="play what an interrupted run lacks")
        resume.add_argument("run", help="the run's id, or a unique part of it")
        resume.add_argument("--fail-under", type=rate, help="accept a mean pass rate at or above this (default: the run's own rule; exit 3 when not met)")
        resume.add_argument("--fail-on-skip", action="store_true", default=None, help="exit 8 when a scenario was skipped (default: the run's own rule)")
        resume.add_argument(
            "--max-not-judged", type=rate, metavar="SHARE", help="exit 5 when more attempts than this share are not judged (default: max_not_judged, else 0)"
        )
        resume.add_argument(
            "--old-scenarios", action="store_true", help="play the copy the run kept of a scenario edited or removed since it started (refused without)"
        )
        self._budget(resume)
        self._spread(resume)
        self._outputs(resume, "the whole run")
        rejudge = commands.add_parser("rejudge", help="decide a run's recorded dialogues again: no request to the agent or user")
        rejudge.add_argument("run", help="the run's id, or a unique part of it")
        rejudge.add_argument("--judge", metavar="NAME", help="the judge: a name in models.py's judges, or a model on the judge's service")
        rejudge.add_argument("--scenarios", nargs="+", action="extend", default=[], metavar="GLOB", help="scenario ids or paths to re-judge")
        rejudge.add_argument("--tag", nargs="+", action="extend", default=[], metavar="TAG", help="re-judge scenarios with any of these tags")
        rejudge.add_argument("--trust", type=rate, help="decisions less confident than this are not trusted (default: the run's)")
        rejudge.add_argument(
            "--judge-repeats",
            type=int,
            metavar="K",
            help="ask each judge about each claim K times (1-15) and decide by majority (default: judge_repeats, else 1)",
        )
        rejudge.add_argument("--fail-under", type=rate, help="accept a mean pass rate at or above this (default: fail_under, else every scenario passes every judged attempt; exit 3 when not met)")
        rejudge.add_argument("--fail-on-skip", action="store_true", default=None, help="exit 8 when a scenario was skipped (default: fail_on_skip)")
        rejudge.add_argument(
            "--max-not-judged", type=rate, metavar="SHARE", help="exit 5 when more attempts than this share are not judged (default: max_not_judged, else 0)"
        )
        self._budget(rejudge)
        self._outputs(rejudge, "the new run")
        # -C after the command (convy check -C proj) means what it means before it: each command
        # takes it too, leaving the folder given before the command when it is not given again.
        for command in commands.choices.values():
            command.add_argument("-C", "--project", type=Path, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        return parser

    def _variants(self, command: argparse.ArgumentParser) -> None:
        command.add_argument(
            "--max-variants",
            type=int,
            metavar="N",
            help=f"play a scenario's matrix of up to N variants (default: {Scenario.MOST_VARIANTS})",
        )

    def _spread(self, command: argparse.ArgumentParser) -> None:
        command.add_argument(
            "--workers", type=int, metavar="N", help="play the run in N worker processes, on Ray (default: workers, else this process alone)"
        )
        command.add_argument(
            "--ray",
            nargs="?",
            const=LOCAL,
            metavar="ADDRESS",
            help="play the run on a Ray cluster: auto, ray://HOST:PORT, HOST:PORT, or none to start one here (default: ray)",
        )

    def _outputs(self, command: argparse.ArgumentParser, what: str) -> None:
        # --junit and --summary of a command that plays a run other than convy run's (resume, rejudge)
        command.add_argument("--junit", type=Path, metavar="FILE", help=f"also write {what} as JUnit XML, for CI")
        command.add_argument("--summary", type=Path, metavar="FILE", help=f"also write {what} as a Markdown summary, for a pull request")

    def _budget(self, command: argparse.ArgumentParser) -> None:
        # The budget's options, declared once in Budgeted for run and resume (exit 6 when one stops the run).
        for name, metavar, kind, said in Budgeted.OPTIONS:
            command.add_argument("--" + name.replace("_", "-"), type=kind, metavar=metavar, help=said)


class Whereabouts(msgspec.Struct, frozen=True):
    """Where a command was started, against the project it is meant for: a command started in a
    folder of a project (``scenarios/``, ``results/bot/<id>/``) is told the project above."""

    project: Project
    command: str
    made: Path | None  # the folder ``convy init`` would make, or None

    def above(self) -> Path | None:
        """The project the command was started inside of, when it should be run there."""
        match self.command:
            case "init":
                # A project made in scenarios/ (convy init demo there, or convy init) would be read by the project around it.
                if self.made is None:
                    return None
                made = self.made.resolve()
                return Project(made.parent).above() or (Project(made).above() if made.is_dir() else None)
            case "report" | "compare" | "export" | "labels":
                # These read results/ alone: a folder holding one (runs copied from CI) is theirs.
                return None if (self.project.folder / "results").is_dir() else self.project.above()
            case _:
                return self.project.above()


def main(argv: list[str] | None = None) -> int:
    """Run the convy command; returns (and, from the console script, exits with) its code."""
    # The command owns its process, so it sets the collector for the work it does: what was loaded
    # to start is never garbage, and the records of attempts and pages cannot form cycles
    # (gc=False), so the collector need not walk them on every 700 allocations. A run's event loop
    # makes most of the garbage, tasks and futures freed as it goes: collected a tenth as often,
    # it cost 0.12 s of a 2.0 s run of 3,000 fake attempts (bench/harness.py) against 0.44 s.
    # With 10,000 conversations at once, each of them holds its coroutines, futures and context
    # for the second its agent takes: what a young collection walks is mostly alive, and walking
    # it every 10,000 allocations took 2.0-2.3 CPU-s of an 11 s play; every 100,000, 0.7-0.8 s
    # (bench/whole.py's many case). Only cycles wait for it: the rest is freed as it goes.
    gc.freeze()
    gc.set_threshold(100_000, 10, 10)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(encoding="utf-8", errors="replace")
    shown = Shown(sys.stdout)
    errors = Shown(sys.stderr)
    parsed = Arguments().parser().parse_args(argv)
    project = Project(parsed.project.resolve())
    # A file named on the command line is where the user is, not in the project convy moves to.
    here = Path.cwd()
    named = {name: getattr(parsed, name, None) for name in ("junit", "summary")}
    outputs = Outputs(here, **{name: None if path is None else here / path for name, path in named.items()})
    if parsed.command != "init":
        try:
            os.chdir(project.folder)  # a project's .env and relative paths are read from its folder
        except OSError as error:
            errors.line(f"convy: {parsed.project}: {error.strerror}")
            return 2
    started = time.monotonic()
    code = 0
    try:
        try:
            outputs.refused()
            inside = Whereabouts(project, parsed.command, parsed.project / parsed.folder if parsed.command == "init" and parsed.ci is None else None).above()
            if inside is not None:  # started in a folder of the project, scenarios/ say: said with the way there
                there = shlex.quote(os.path.relpath(inside, here))
                words = list(sys.argv[1:] if argv is None else argv)
                while words and words[0] in ("-C", "--project"):  # the folder given, said anew as the project's
                    del words[:2]
                given = shlex.join(word for word in words if not word.startswith(("-C", "--project=")))
                raise ConfigurationError(
                    f"{project.folder.relative_to(inside).as_posix()}/ is a folder of the project in {there}, not a project: "
                    f"cd {there} && convy {given}, or convy -C {there} {given}"
                )
            match parsed.command:
                case "init" if parsed.ci is not None:
                    code = Workflow(parsed.project / parsed.folder, parsed.ci).run(shown)
                case "init":
                    code = InitCommand(parsed.project / parsed.folder).run(shown)
                case "check":
                    checked = RunCommand(project, (), None, (), (), None, None, most_variants=parsed.max_variants)
                    code = DryRun(checked).run(shown, errors)
                case "run" if parsed.smoke:
                    code = SmokeCommand(project, project.agents_called(parsed.agents, here)).run(shown, errors)
                case "run":
                    command = RunCommand(
                        project,
                        project.agents_called(parsed.agents, here),
                        parsed.attempts,
                        tuple(parsed.scenarios),
                        tuple(parsed.tag),
                        parsed.trust,
                        parsed.fail_under,
                        outputs,
                        parsed.max_not_judged,
                        Budgeted(parsed.max_cost, parsed.max_tokens, parsed.max_minutes),
                        parsed.judge_repeats,
                        parsed.max_variants,
                        Spreading(parsed.workers, parsed.ray),
                        AutoAttempts(parsed.min_attempts, parsed.max_attempts, parsed.target_width),
                        parsed.against,
                        fail_on_skip=parsed.fail_on_skip,
                        name=parsed.name,
                    )
                    code = (DryRun(command) if parsed.dry_run else command).run(shown, errors)
                case "report":
                    code = ReportCommand(project, tuple(parsed.runs), outputs, parsed.live, parsed.parent).run(shown, errors)
                case "compare":
                    code = CompareCommand(project, parsed.base, parsed.candidate, parsed.fail_on_regression, outputs).run(shown, errors)
                case "labels":
                    # The file is where the user is, not in the project convy moved to.
                    file = here / parsed.file if parsed.labels == "add" else None
                    code = LabelsCommand(project, parsed.run, file).run(shown, errors)
                case "export":
                    code = ExportCommand(project, tuple(parsed.runs), parsed.format).run(shown, errors)
                case "rejudge":
                    code = RejudgeCommand(
                        project,
                        parsed.run,
                        parsed.judge,
                        tuple(parsed.scenarios),
                        tuple(parsed.tag),
                        parsed.trust,
                        parsed.fail_under,
                        parsed.max_not_judged,
                        Budgeted(parsed.max_cost, parsed.max_tokens, parsed.max_minutes),
                        parsed.judge_repeats,
                        outputs,
                        fail_on_skip=parsed.fail_on_skip,
                    ).run(shown, errors)
                case "resume":
                    code = ResumeCommand(
                        project,
                        parsed.run,
                        parsed.fail_under,
                        parsed.max_not_judged,
                        Budgeted(parsed.max_cost, parsed.max_tokens, parsed.max_minutes),
                        Spreading(parsed.workers, parsed.ray),
                        outputs,
                        fail_on_skip=parsed.fail_on_skip,
                        old_scenarios=parsed.old_scenarios,
                    ).run(shown, errors)
        except ConfigurationError as error:  # one line for each problem it holds
            for line in Environment(project.folder).secrets().hidden(str(error)).splitlines():
                errors.line(f"convy: {line}")
            code = 2
        except Unwritable as error:
            where = error.path.relative_to(project.folder) if error.path.is_relative_to(project.folder) else error.path
            errors.line(f"convy: {where}: cannot be written: {error.reason}")
            code = 2
        except KeyboardInterrupt:
            errors.line(f"interrupted after {time.monotonic() - started:.0f} s")
            code = 130
        if code in (130, 143):  # asked to stop: what a reader cannot take now is left out
            errors.sent()
            shown.sent()
        else:  # the end: wait for the readers, as any command does
            errors.drained()
            shown.drained()
    except KeyboardInterrupt:  # Ctrl+C while waiting for a reader who is not reading
        return 130 if code == 0 else code
    return code
