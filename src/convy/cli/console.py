"""What the command prints, and how: lines held in memory until the reader is ready for them
(``Shown``), and the few words each thing is said in.
"""

from __future__ import annotations

import os
import select
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, TextIO

import msgspec

from convy.adaptive import Marks
from convy.agent import NoUsage, Usage
from convy.attempt import Spent
from convy.judge import Failed, NoVerdict, Verdict
from convy.outcome import Outcome
from convy.records import Skipped
from convy.terminal import Inert
from convy.views import AgreementView, JudgingView, ScoreView

MARKS = {"passed": "✓", "failed": "✗", "not_judged": "?"}


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
        said = Inert(f"{outcome.scenario} #{outcome.attempt}  {AttemptWords(outcome, self._trust).text()}").line()
        self._shown.progress(f"{MARKS[status]} {said}")


class AttemptWords(msgspec.Struct, frozen=True):
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
