"""What the command says while a run plays and when it ends: each attempt as it is recorded, and
the run's last lines.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec

from convy.adaptive import Marks
from convy.budget import Outlay
from convy.cli.console import JudgingSaid, Passed, Printed, Unseen
from convy.cli.exits import CANCELLED, Cures, Ruled, Terminated, Worst
from convy.collector import OtlpEndpoint, Shipped, Start
from convy.live import LiveReport
from convy.outcome import Outcome
from convy.passing import PassRule
from convy.plan import Journal, Player
from convy.problems import (
    ConfigurationError,
    DialoguesLost,
    Unplayed,
    Unwritable,
    WorkersLost,
)
from convy.project import VERSION, Project
from convy.records import Complete, RunSpec, Stopped
from convy.report import Summary
from convy.runs import Read
from convy.secrets import Secrets
from convy.spent import Allowance, Stop
from convy.storage import Kept, RunInUse, RunJournal
from convy.terminal import Inert
from convy.traces import RunContext
from convy.vital import DeadService


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
    collector: OtlpEndpoint | None = None  # where each attempt's trace is sent as it is kept (issue 30)

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
            shipped = self._shipped(printed, journal)
            kept = Kept(())
            try:
                kept = asyncio.run(self._played(journal, printed if shipped is None else shipped))
            except (KeyboardInterrupt, Terminated, Unwritable, Unplayed, WorkersLost, DeadService) as error:
                stopped = error
            finally:
                if shipped is not None:
                    shipped.ending()  # the rest of the traces sent while the run's outputs are written
        try:
            return self._ended(journal, stopped, kept)
        finally:
            if shipped is not None:
                self._unshipped(shipped)

    def _unshipped(self, shipped: Shipped) -> None:
        """Wait, saying so, for the last traces to be sent once the run's outputs are written; what
        was not sent, said."""
        if not shipped.settled(1.0):  # still sending a second after the outputs: said, not waited in silence
            self.errors.line(
                f"convy: waiting up to {shipped.waited():.0f} s for the OpenTelemetry collector to take the last traces (Ctrl+C stops waiting)"
            )
        for line in shipped.closed().splitlines():
            self.errors.line(Inert(line).line())

    def _ended(
        self, journal: RunJournal, stopped: KeyboardInterrupt | Terminated | Unwritable | Unplayed | WorkersLost | DeadService | None, kept: Kept
    ) -> int:
        """How the play ended, said, its outputs written, and the command's exit code."""
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

    def _shipped(self, printed: Printed, journal: RunJournal) -> Shipped | None:
        """The journal beside which each attempt's trace is sent to the collector, when one is set
        (the attempts kept before this play are not sent again)."""
        if self.collector is None:
            return None
        kept = tuple((outcome.scenario, outcome.attempt) for outcome in self.kept.outcomes)
        start = Start(self.collector, RunContext.of(self.spec, "in_progress", VERSION), kept)
        return Shipped(printed, journal.folder, start, lambda said: self.errors.line(Inert(said).line()))

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

    async def _played(self, journal: RunJournal, printed: Journal) -> Kept:
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
