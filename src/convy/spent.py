"""What a run spent of its budget, in words: a budget's stop (``Stop``), what a run that kept within its budget spent of it (``Allowance``), and the amounts and times they name."""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import ROUND_CEILING, Decimal

import msgspec

from convy.budget import Budget, Outlay, Which
from convy.outcome import Outcome


class Stop(msgspec.Struct, frozen=True):
    """A budget's stop in words: which budget, what was spent of what it allowed, the most one
    attempt spent of it, and what could not be counted (requests unpriced for the cost, requests
    that reported no tokens for the tokens)."""

    spent: Outlay

    def text(self) -> str:
        """The stop of a run its budget left unfinished."""
        return "stopped by budget: " + self.amounts()

    def reached(self) -> str:
        """A run that played every attempt and reached or crossed its budget doing so."""
        return "reached its budget: " + self.amounts() + "; every planned attempt was played"

    def amounts(self) -> str:
        spent = self.spent
        most = spent.most
        match spent.budget:
            case "cost":
                said = f"{Dollars(spent.cost).text()} of {Dollars(spent.allowed).text()} (cost)"
                each = f", ${most:.2f} the most one attempt cost" if most else ""
            case "tokens":
                said = f"{spent.tokens:,} of {spent.allowed:,.0f} tokens (tokens)"
                each = f", {most:,.0f} the most one attempt took" if most else ""
            case "minutes":
                said = f"{Duration(spent.minutes).text()} of {Duration(spent.allowed).text()} (minutes)"
                each = f", {Duration(most).text()} the longest one attempt took" if most else ""
        return said + each + self.uncounted()

    def more(self, left: int, places: int = 1) -> str:
        """The option that lets the run play its ``left`` attempts (at least one more), when each
        spends no more than the most one has so far: what was spent and that much again for each,
        and a tenth more, rounded up (cost to the cent, tokens and minutes to two significant
        figures), so the run ends within it rather than on it. Minutes count a play alone: as many
        rounds of ``places`` attempts at once as the rest takes (the agent's places as the run
        starts, ``Limits.starting``: places with no cap may grow from there), each the longest one
        took, and a tenth more. With no attempt's spend to go by, twice the budget."""
        spent = self.spent
        left = max(left, 1)
        if not spent.most:
            allowed = max(spent.allowed, float(Decimal(spent.cost)), float(spent.tokens), spent.minutes) * 2
            amount = f"{allowed:.2f}" if spent.budget == "cost" else f"{allowed:g}"
            return f"--max-{spent.budget} {amount}"
        tenth = Decimal("1.1")
        match spent.budget:
            case "cost":
                needed = (Decimal(spent.cost) + Decimal(repr(spent.most)) * left) * tenth
                amount = f"{needed.quantize(Decimal('0.01'), rounding=ROUND_CEILING)}"
            case "tokens":
                tokens = Upward((spent.tokens + math.ceil(spent.most) * left) * tenth).figures()
                amount = f"{tokens.to_integral_value(rounding=ROUND_CEILING):f}"
            case "minutes":
                rounds = -(-left // max(places, 1))
                amount = f"{Upward(rounds * Decimal(repr(spent.most)) * tenth).figures():f}"
        return f"--max-{spent.budget} {amount}"

    def rest(self, left: int, places: int, budget: Budget, outcomes: Iterable[Outcome]) -> str:
        """The options that let the run play its ``left`` attempts: the budget that stopped it
        raised (``more``), and each other limit of ``budget`` that the rest would cross raised too,
        by the most one of ``outcomes`` (the attempts kept) spent of it; a limit the rest fits in
        is left out, as the resume keeps it from run.json."""
        spending = budget.spending(outcomes)
        spent = self.spent
        options = []
        others: tuple[tuple[Which, float, float], ...] = (
            ("cost", budget.cost, float(spending.most_cost)),
            ("tokens", float(budget.tokens), float(spending.most_tokens)),
            ("minutes", budget.minutes, spending.longest / 60.0),
        )
        for which, allowed, most in others:
            if which == spent.budget:
                options.append(self.more(left, places))
            elif allowed and most:
                other = Stop(Outlay(which, allowed, str(spending.cost), tokens=spending.tokens, most=most))
                option = other.more(left, places)
                if Decimal(option.split()[1]) > Decimal(repr(allowed)):
                    options.append(option)
        return " ".join(options)

    def uncounted(self) -> str:
        """What the budget that stopped the run could not count, or ``""``."""
        spent = self.spent
        if spent.budget == "cost" and spent.unpriced:
            many = "s" if spent.unpriced != 1 else ""
            return f"; {spent.unpriced} request{many} unpriced: the cost could not be checked in full"
        if spent.budget == "tokens" and spent.unreported:
            many = "s" if spent.unreported != 1 else ""
            return f"; {spent.unreported} request{many} not reported: their tokens are not counted"
        return ""


class Dollars(msgspec.Struct, frozen=True):
    """An amount in US dollars as a budget's line says it: to the cent, or every figure when it is
    below a cent and not nothing (a budget of 1e-9 is never said as $0.00)."""

    amount: float | Decimal | str

    def text(self) -> str:
        value = Decimal(str(self.amount))
        if value == 0 or abs(value) >= Decimal("0.01"):
            return f"${value:.2f}"
        return f"${value.normalize():f}"


class Upward(msgspec.Struct, frozen=True):
    """An amount a hint names, rounded up to two significant figures: 3300 stays 3300, 686.4 is 690,
    0.0733 is 0.074."""

    amount: Decimal

    def figures(self) -> Decimal:
        amount = self.amount
        if amount <= 0:
            return Decimal(0)
        step = Decimal(1).scaleb(amount.adjusted() - 1)
        return ((amount / step).to_integral_value(rounding=ROUND_CEILING) * step).normalize()


class Duration(msgspec.Struct, frozen=True):
    """A time a budget message says, given in minutes: under a minute in seconds (``3 s``,
    ``0.4 s``), else in minutes (``2.5 minutes``), so a small budget never reads as 0.0."""

    minutes: float

    def text(self) -> str:
        seconds = self.minutes * 60.0
        if not math.isfinite(seconds):
            return "? s"
        if seconds < 9.95:
            return f"{seconds:.1f}".removesuffix(".0") + " s"
        if seconds < 59.5:
            return f"{seconds:.0f} s"
        said = f"{self.minutes:.1f}".removesuffix(".0")
        return said + (" minute" if said == "1" else " minutes")


class Allowance(msgspec.Struct, frozen=True):
    """What a run its budget did not stop spent of it, in words (cost and tokens: the whole run's).
    A run that reached its budget all the same says so with ``Stop.reached``."""

    budget: Budget

    def text(self, outcomes: Iterable[Outcome]) -> str:
        budget = self.budget
        spending = budget.spending(outcomes)
        cost, tokens = str(spending.cost), spending.tokens
        said = []
        if budget.cost:
            uncounted = Stop(Outlay("cost", budget.cost, cost, spending.unpriced)).uncounted()
            said.append(f"{Dollars(spending.cost).text()} of {Dollars(budget.cost).text()} (cost){uncounted}")
        if budget.tokens:
            uncounted = Stop(Outlay("tokens", budget.tokens, cost, 0, tokens, spending.unreported)).uncounted()
            said.append(f"{tokens:,} of {budget.tokens:,} tokens (tokens){uncounted}")
        if budget.minutes:
            said.append(f"within {Duration(budget.minutes).text()} (minutes)")
        return "budget: spent " + ", ".join(said)
