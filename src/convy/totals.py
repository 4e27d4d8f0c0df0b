"""A run's totals as the index lists it (``Totals``, ``Listed``), kept in the run's ``summary.json`` with the stamp of the ``attempts.jsonl`` they sum."""

from __future__ import annotations

import msgspec

from convy.counted import Counted
from convy.runs import Read
from convy.views import (
    CostView,
    IntervalView,
    RunRow,
)


class Totals(msgspec.Struct, frozen=True):
    """What the index shows of a run's attempts: its pass rate, passed of judged, attempts kept,
    tokens and cost; and the attempts that did not pass by cause (``causes.py``: every cause,
    through the run's trust), so the run's folder says whose they were without a reader having to
    derive it (empty in a ``summary.json`` written before causes, summed anew when its stamp
    changes)."""

    rate: IntervalView | None
    passed: int
    judged: int
    attempts: int
    tokens: int
    cost: CostView
    causes: dict[str, int] = {}

    @classmethod
    def counted(cls, counted: Counted) -> Totals:
        """The totals of a run counted in one pass over its file (``counted.py``), holding none of
        its attempts: the same numbers ``Summary.totals`` sums from every attempt held."""
        judged = [tally for tally in counted.tallies().values() if tally.judged]
        interval = counted.headline().interval()
        agent, user, judge = counted.total()
        every = agent + user + judge
        return cls(
            rate=None if interval is None else IntervalView(estimate=interval.estimate, low=interval.low, high=interval.high),
            passed=sum(tally.passed for tally in judged),
            judged=sum(tally.judged for tally in judged),
            attempts=counted.kept(),
            tokens=every.input + every.output,
            cost=every.cost(),
            causes={str(cause): count for cause, count in counted.breakdown().counts.items()},
        )


class Listed(msgspec.Struct, frozen=True):
    """A run as the index lists it: the run (its attempts not needed) and its totals."""

    run: Read
    totals: Totals

    def row(self, href: str) -> RunRow:
        spec = self.run.file.spec
        totals = self.totals
        return RunRow(
            agent=spec.agent,
            run=spec.id,
            href=href,
            started=self.run.file.status.started,
            status=self.run.status(),
            rate=totals.rate,
            passed=totals.passed,
            judged=totals.judged,
            scenarios=len(spec.scenarios),
            attempts=totals.attempts,
            tokens=totals.tokens,
            cost=totals.cost,
            seconds=self.run.seconds(),
            planned=len(spec.scenarios) * spec.attempts,
            name=spec.name,
        )


class Stamp(msgspec.Struct, frozen=True):
    """What ``attempts.jsonl`` was like: its size and modification time (0 and 0: no such file)."""

    size: int
    modified: int


class Summed(msgspec.Struct, frozen=True):
    """``summary.json``: a run's totals, and the stamp of the ``attempts.jsonl`` they sum."""

    stamp: Stamp
    totals: Totals
    format: int = 1


_SUMMED = msgspec.json.Decoder(Summed)
