"""A run's budget: how much it may spend before no new attempt starts.

``Budget`` is what was allowed (cost in US dollars, tokens, minutes; 0 is no limit on that one).
``Spending`` is what a play has spent against it, counted from each attempt as it is kept — its
requests summed as the report sums them (``Attempt.every_sum``: the agent's, the user model's and
the judge's) — and what a bench asks before a worker takes a new attempt. A run with no budget
makes no ``Spending`` at all: its bench takes attempts from its plan as before, and counts nothing.

Cost and tokens count the whole run: the attempts kept before this play (a resumed run's) as well
as this play's, so ``convy resume`` with the same budget stops at once and a larger one plays on.
Minutes count this play only, from when its ``Spending`` was made.

What was not reported is never taken for nothing: a request with no token counts is counted apart
(``unreported``), the tokens budget then holding the run to what was reported; a request nobody
priced is counted apart too (``unpriced``), and the cost budget to what was priced. The words that
say so are made by ``report.Stop``; ``run.json`` keeps what was spent as an ``Outlay``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from typing import ClassVar, Literal, TypeVar

import msgspec

from convy.attempt import Attempt
from convy.scenario import Outcome

T = TypeVar("T")

Which = Literal["cost", "tokens", "minutes"]


class Budget(msgspec.Struct, frozen=True):
    """What a run may spend: ``cost`` in US dollars, ``tokens`` (input and output, every side),
    ``minutes`` of this command's play; 0 is no limit."""

    cost: float = 0.0
    tokens: int = 0
    minutes: float = 0.0

    MOST: ClassVar[dict[str, float]] = {"max_cost": 1_000_000_000.0, "max_tokens": 10**15, "max_minutes": 10_000_000.0}

    def set(self) -> bool:
        """Whether any limit is set."""
        return bool(self.cost or self.tokens or self.minutes)

    def spending(self, earlier: Iterable[Outcome] = (), clock: Callable[[], float] = time.monotonic) -> Spending:
        """What a play spends against this budget, starting from the attempts kept before it."""
        return Spending(self, earlier, clock)


class Outlay(msgspec.Struct, frozen=True):
    """What a run had spent when a budget stopped it, as ``run.json`` keeps it: which budget
    stopped it and what it allowed, the cost of the priced requests (a decimal, as text) and the
    requests not priced, the tokens reported and the requests that reported none, and this play's
    minutes."""

    budget: Which
    allowed: float
    cost: str = "0"
    unpriced: int = 0
    tokens: int = 0
    unreported: int = 0
    minutes: float = 0.0


class Spending:
    """What a play has spent against its ``Budget``: added to as each attempt is kept (``record``),
    asked before a worker takes a new attempt (``taking``). A plain class: it changes as the run
    plays."""

    __slots__ = ("budget", "cost", "unpriced", "tokens", "unreported", "_clock", "_started", "_reached")

    def __init__(self, budget: Budget, earlier: Iterable[Outcome], clock: Callable[[], float]) -> None:
        self.budget = budget
        self.cost = Decimal(0)
        self.unpriced = 0
        self.tokens = 0
        self.unreported = 0
        self._clock = clock
        self._started = clock()
        self._reached: Which | None = None
        for outcome in earlier:
            self.record(outcome)

    def record(self, outcome: Outcome) -> None:
        """Count a kept attempt's requests, every side's."""
        spent = Attempt(outcome, 0.0).every_sum()
        self.cost += spent.amount
        self.unpriced += spent.unpriced
        self.tokens += spent.input + spent.output
        self.unreported += spent.requests - spent.reported - spent.partly

    def minutes(self) -> float:
        return (self._clock() - self._started) / 60.0

    def reached(self) -> Which | None:
        """The budget that is spent, if one is (once one is, it stays so for this play)."""
        if self._reached is None:
            budget = self.budget
            if budget.cost and self.cost >= Decimal(repr(budget.cost)):
                self._reached = "cost"
            elif budget.tokens and self.tokens >= budget.tokens:
                self._reached = "tokens"
            elif budget.minutes and self.minutes() >= budget.minutes:
                self._reached = "minutes"
        return self._reached

    def taking(self, queue: Iterator[T]) -> Iterator[T]:
        """The attempts of ``queue``, each handed out only while no budget is spent; one not
        handed out stays in ``queue``."""
        while self.reached() is None:
            try:
                yield next(queue)
            except StopIteration:
                return

    def outlay(self) -> Outlay | None:
        """What was spent, when a budget stopped the play."""
        which = self.reached()
        if which is None:
            return None
        allowed = {"cost": self.budget.cost, "tokens": float(self.budget.tokens), "minutes": self.budget.minutes}[which]
        minutes = self.minutes()
        return Outlay(which, allowed, str(self.cost), self.unpriced, self.tokens, self.unreported, minutes if math.isfinite(minutes) else 0.0)


class Counted(msgspec.Struct, frozen=True):
    """A journal whose every attempt is counted against a budget before it goes on."""

    journal: object
    spending: Spending

    def record(self, outcome: Outcome) -> None:
        self.spending.record(outcome)
        self.journal.record(outcome)  # type: ignore[attr-defined]
