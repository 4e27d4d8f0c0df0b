"""A run's budget: how much it may spend before no new attempt starts.

``Budget`` is what was allowed (cost in US dollars, tokens, minutes; 0 is no limit on that one).
``Spending`` is what a play has spent against it, counted from each attempt as it is kept — its
requests summed as the report sums them (``Attempt.every_sum``: the agent's, the user model's and
the judge's) — and what a bench asks before a worker starts a new attempt: it lets one start only
when what the attempt would likely spend (the most one has spent so far) still fits, counting the
attempts under way, so a budget is a cap, crossed by at most one attempt's spend. A run with no
budget makes no ``Spending`` at all: its bench takes attempts from its plan as before, and counts
nothing.

Cost and tokens count the whole run: the attempts kept before this play (a resumed run's) as well
as this play's, so ``convy resume`` with the same budget stops at once and a larger one plays on.
Minutes count this play only, from when its ``Spending`` was made.

What was not reported is never taken for nothing: a request with no token counts is counted apart
(``unreported``), the tokens budget then holding the run to what was reported; a request nobody
priced is counted apart too (``unpriced``), and the cost budget to what was priced. The words that
say so are made by ``spent.Stop``; ``run.json`` keeps what was spent as an ``Outlay``.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from typing import ClassVar, Literal, TypeVar

import msgspec

from convy.attempt import Attempt
from convy.outcome import Outcome

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

    def spending(self, earlier: Iterable[Outcome] | Earlier = (), clock: Callable[[], float] = time.monotonic) -> Spending:
        """What a play spends against this budget, starting from the attempts kept before it (or
        what they spent, as a ``Spending`` counted it)."""
        return Spending(self, earlier, clock)


class Earlier(msgspec.Struct, frozen=True):
    """What the attempts kept before a play spent, as ``Spending`` counts them (``Spending.spent``):
    a play of a run's rounds (``adaptive.Rounds``) starts each round from it rather than from every
    attempt kept, so the run holds none of them. ``longest`` is the longest attempt, as its own
    play measured it."""

    cost: Decimal = Decimal(0)
    unpriced: int = 0
    tokens: int = 0
    unreported: int = 0
    most_cost: Decimal = Decimal(0)
    most_tokens: int = 0
    kept: int = 0
    longest: float = 0.0


class Outlay(msgspec.Struct, frozen=True):
    """What a run had spent when a budget stopped it or was reached, as ``run.json`` keeps it:
    which budget and what it allowed, the cost of the priced requests (a decimal, as text) and the
    requests not priced, the tokens reported and the requests that reported none, this play's
    minutes, and the most one attempt spent of that budget (dollars, tokens or minutes: what the
    next attempt was feared to spend; 0 in a run.json written before it)."""

    budget: Which
    allowed: float
    cost: str = "0"
    unpriced: int = 0
    tokens: int = 0
    unreported: int = 0
    minutes: float = 0.0
    most: float = 0.0


class Spending:
    """What a play has spent against its ``Budget``: added to as each attempt is kept (``record``),
    asked before a worker starts a new attempt (``taken``). A plain class: it changes as the run
    plays.

    An attempt starts only when what it would likely spend still fits what is left of the budget:
    for cost and tokens, the most one attempt has spent so far, counted for it and for each
    attempt under way; for minutes, the longest one attempt has taken so far, against the minutes
    left. Until an attempt's cost and tokens are known (none kept yet), attempts start one at a
    time. So a run crosses its budget by at most what one attempt spends beyond the most seen
    before it, and never by a crowd of attempts started together."""

    __slots__ = (
        "budget", "cost", "unpriced", "tokens", "unreported", "most_cost", "most_tokens", "longest", "kept",
        "_seconds", "_clock", "_started", "_reached", "_refused", "_under_way", "_ended",
    )

    def __init__(self, budget: Budget, earlier: Iterable[Outcome] | Earlier, clock: Callable[[], float]) -> None:
        self.budget = budget
        self.cost = Decimal(0)
        self.unpriced = 0
        self.tokens = 0
        self.unreported = 0
        self.most_cost = Decimal(0)  # the most one kept attempt cost
        self.most_tokens = 0  # the most tokens one kept attempt took
        self.longest = 0.0  # the longest one attempt took, in seconds
        self.kept = 0  # attempts counted, earlier ones included
        self._seconds = 0.0  # the longest attempt counted, as its own play measured it
        self._clock = clock
        self._started = clock()
        self._reached: Which | None = None
        self._refused: Which | None = None
        self._under_way: dict[tuple[str, int], float] = {}  # each attempt started and not kept, by when it started
        self._ended: asyncio.Event | None = None  # made in the loop by the first worker that waits
        match earlier:
            case Earlier():
                self.cost, self.unpriced, self.tokens, self.unreported = earlier.cost, earlier.unpriced, earlier.tokens, earlier.unreported
                self.most_cost, self.most_tokens, self.kept = earlier.most_cost, earlier.most_tokens, earlier.kept
                self.longest = self._seconds = earlier.longest
            case _:
                for outcome in earlier:
                    self.record(outcome)
                    self.longest = max(self.longest, outcome.seconds)  # as its own play measured it

    def record(self, outcome: Outcome) -> None:
        """Count a kept attempt's requests, every side's, and how long it took since it started."""
        spent = Attempt(outcome, 0.0).every_sum()
        self.cost += spent.amount
        self.unpriced += spent.unpriced
        tokens = spent.input + spent.output
        self.tokens += tokens
        self.unreported += spent.requests - spent.reported - spent.partly
        self.most_cost = max(self.most_cost, spent.amount)
        self.most_tokens = max(self.most_tokens, tokens)
        self.kept += 1
        self._seconds = max(self._seconds, outcome.seconds)
        started = self._under_way.pop((outcome.scenario, outcome.attempt), None)
        if started is not None:
            self.longest = max(self.longest, self._clock() - started)
        if self._ended is not None:
            self._ended.set()

    def minutes(self) -> float:
        return (self._clock() - self._started) / 60.0

    def spent(self) -> Earlier:
        """What every attempt counted here spent, for a later play to start from as it would
        from those attempts themselves (``Budget.spending``)."""
        return Earlier(
            self.cost, self.unpriced, self.tokens, self.unreported, self.most_cost, self.most_tokens, self.kept, self._seconds
        )

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

    def stopped(self) -> Which | None:
        """The budget that kept an attempt from starting, if one did."""
        return self._refused

    def following(self, part: Spending) -> Spending:
        """This spending, stopped as ``part`` (what one round of the play counted) was stopped,
        with the longest attempt it saw; itself."""
        self._refused = self._refused or part.stopped()
        self.longest = max(self.longest, part.longest)
        return self

    def _admission(self) -> Which | Literal["start", "wait"]:
        """Whether one more attempt may start now, must wait for one under way to end, or is
        refused by a budget (which)."""
        reached = self.reached()
        if reached is not None:
            return reached
        budget = self.budget
        under_way = len(self._under_way)
        waits = False
        counted: tuple[tuple[Which, Decimal, Decimal, Decimal], ...] = (
            ("cost", self.cost, self.most_cost, Decimal(repr(budget.cost))),
            ("tokens", Decimal(self.tokens), Decimal(self.most_tokens), Decimal(budget.tokens)),
        )
        for which, spent, most, allowed in counted:
            if not allowed:
                continue
            if not self.kept:  # what one attempt spends is not known yet: one at a time
                waits = waits or under_way > 0
            elif spent + most * (under_way + 1) > allowed:
                if not under_way:  # nothing under way can end cheaper than feared: no more fits
                    return which
                waits = True  # one under way may end cheaper than feared: look again then
        if budget.minutes and self.longest and self.minutes() + self.longest / 60.0 > budget.minutes:
            return "minutes"  # an attempt started now would likely end after the minutes allowed
        return "wait" if waits else "start"

    async def taken(self, queue: Iterator[T], key: Callable[[T], tuple[str, int]]) -> T | None:
        """The next attempt of ``queue``, once the budget lets it start (``key`` names it: its
        scenario and number); ``None`` when ``queue`` is done, or when a budget lets no more start
        (the attempt then stays in ``queue``)."""
        while True:
            admission = self._admission()
            match admission:
                case "start":
                    one = next(queue, None)
                    if one is not None:
                        self._under_way[key(one)] = self._clock()
                    return one
                case "wait":
                    if self._ended is None:
                        self._ended = asyncio.Event()
                    self._ended.clear()
                    await self._ended.wait()
                case _:
                    if self._refused is None:
                        self._refused = admission
                    return None

    def outlay(self) -> Outlay | None:
        """What was spent, when a budget was reached or kept an attempt from starting."""
        which = self.reached() or self._refused
        if which is None:
            return None
        allowed = {"cost": self.budget.cost, "tokens": float(self.budget.tokens), "minutes": self.budget.minutes}[which]
        most = {"cost": float(self.most_cost), "tokens": float(self.most_tokens), "minutes": self.longest / 60.0}[which]
        minutes = self.minutes()
        return Outlay(
            which, allowed, str(self.cost), self.unpriced, self.tokens, self.unreported,
            minutes if math.isfinite(minutes) else 0.0, most,
        )


class BudgetedJournal(msgspec.Struct, frozen=True):
    """A journal whose every attempt is counted against a budget before it goes on."""

    journal: object
    spending: Spending

    def record(self, outcome: Outcome) -> None:
        self.spending.record(outcome)
        self.journal.record(outcome)  # type: ignore[attr-defined]
