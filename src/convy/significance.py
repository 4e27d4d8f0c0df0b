"""Whether two runs differ beyond chance: exact conditional tests over scenarios (``Stratified``, ``Fisher``), paired differences (``Paired``, ``McNemar``), and adjusted p-values (``Adjusted``), with the standard library only."""

from __future__ import annotations

import math
import random
from bisect import bisect_left, bisect_right
from itertools import accumulate, repeat
from operator import add, mul
from statistics import fmean
from typing import Literal

import msgspec

from convy.stats import TOLERANCE, Interval, StudentT, Tally, Wilson


class Hypergeometric(msgspec.Struct, frozen=True):
    """Passes among ``draws`` attempts drawn from ``population`` attempts of which ``successes`` passed."""

    population: int
    successes: int
    draws: int

    def support(self) -> range:
        return range(max(0, self.draws - (self.population - self.successes)), min(self.draws, self.successes) + 1)

    def probabilities(self) -> list[float]:
        """The probability of each count of the support, in order, computed in logs."""
        whole = self._log_comb(self.population, self.draws)
        return [
            math.exp(
                self._log_comb(self.successes, count)
                + self._log_comb(self.population - self.successes, self.draws - count)
                - whole
            )
            for count in self.support()
        ]

    def mean(self) -> float:
        return self.draws * self.successes / self.population

    def variance(self) -> float:
        n, k, draws = self.population, self.successes, self.draws
        if n < 2:
            return 0.0
        return draws * (k / n) * (1 - k / n) * (n - draws) / (n - 1)

    def _log_comb(self, n: int, k: int) -> float:
        return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


class Stratum(msgspec.Struct, frozen=True):
    """One scenario in both runs: passes and judged attempts in A (base) and in B (candidate)."""

    passed_a: int
    judged_a: int
    passed_b: int
    judged_b: int

    def informative(self) -> bool:
        pooled = self.passed_a + self.passed_b
        return self.judged_a > 0 and self.judged_b > 0 and 0 < pooled < self.judged_a + self.judged_b

    def law(self) -> Hypergeometric:
        """The law of B's passes when nothing changed."""
        return Hypergeometric(self.judged_a + self.judged_b, self.passed_a + self.passed_b, self.judged_b)


class Tested(msgspec.Struct, frozen=True):
    """A two-sided test's result: the p-value, the direction of the change, and how it was computed."""

    p: float
    direction: Literal["better", "worse", "same"]
    method: Literal["exact", "cmh", "mcnemar", "none"]


class Stratified(msgspec.Struct, frozen=True):
    """The exact conditional test of "no change" across scenario strata.

    With no change, B's passes in each stratum are hypergeometric; their total has the
    convolution of those laws. The two-sided p is the probability of every total no more likely
    than the one observed. Strata that all pass or all fail in both runs carry no information and
    drop out. Probabilities below ``floor`` times the largest are pruned from the convolution (they
    cannot change p at the precision reported; a total observed out there has a p too small to
    matter, and gets the χ² below); ``Fisher``, one stratum, prunes nothing. Past ``limit``
    operations the Cochran–Mantel–Haenszel χ² with continuity correction is used instead.
    """

    strata: tuple[Stratum, ...]
    limit: int = 60_000_000
    floor: float = 1e-17

    def test(self) -> Tested:
        used = [stratum for stratum in self.strata if stratum.informative()]
        if not used:
            return Tested(1.0, "same", "none")
        observed = sum(stratum.passed_b for stratum in used)
        expected = sum(stratum.law().mean() for stratum in used)
        direction: Literal["better", "worse", "same"] = (
            "better" if observed > expected + 1e-9 else "worse" if observed < expected - 1e-9 else "same"
        )
        if self._cost(used) > self.limit:
            return Tested(self._cmh(used, observed, expected), direction, "cmh")
        start, law = self._convolved(used)
        index = observed - start
        if not 0 <= index < len(law):
            return Tested(self._cmh(used, observed, expected), direction, "cmh")
        bar = law[index] * (1 + TOLERANCE)
        p = min(1.0, sum(probability for probability in law if probability <= bar))
        return Tested(p, direction, "exact")

    def _cost(self, used: list[Stratum]) -> int:
        widths = [len(stratum.law().support()) for stratum in used]
        return sum(width * total for width, total in zip(widths, accumulate(widths), strict=True))

    def _convolved(self, used: list[Stratum]) -> tuple[int, list[float]]:
        start, law = 0, [1.0]
        for stratum in used:
            one = stratum.law()
            probabilities = one.probabilities()
            combined = [0.0] * (len(law) + len(probabilities) - 1)
            width = len(law)
            for shift, weight in enumerate(probabilities):
                if weight == 0.0:
                    continue
                # One shifted, scaled copy of the law added at a time: the loops run in C.
                combined[shift : shift + width] = map(add, combined[shift : shift + width], map(mul, law, repeat(weight)))
            start += one.support().start
            floor = max(combined) * self.floor
            first = next(index for index, value in enumerate(combined) if value > floor)
            last = len(combined) - next(index for index, value in enumerate(reversed(combined)) if value > floor)
            start += first
            law = combined[first:last]
        return start, law

    def _cmh(self, used: list[Stratum], observed: int, expected: float) -> float:
        variance = sum(stratum.law().variance() for stratum in used)
        if variance == 0:
            return 1.0
        chi = max(0.0, abs(observed - expected) - 0.5) ** 2 / variance
        # 2·(1 − Φ(√χ²)), as erfc so that a small p is not lost to cancellation.
        return min(1.0, math.erfc(math.sqrt(chi / 2)))


class Fisher(msgspec.Struct, frozen=True):
    """Fisher's exact test of one scenario, before and after: two-sided."""

    stratum: Stratum

    def test(self) -> Tested:
        return Stratified((self.stratum,), floor=0.0).test()


class Adjusted(msgspec.Struct, frozen=True):
    """Benjamini–Hochberg adjusted p-values, in the order given."""

    p: tuple[float, ...]

    def values(self) -> tuple[float, ...]:
        count = len(self.p)
        if count == 0:
            return ()
        order = sorted(range(count), key=lambda index: self.p[index])
        adjusted = [0.0] * count
        running = 1.0
        for rank in range(count, 0, -1):
            index = order[rank - 1]
            running = min(running, self.p[index] * count / rank)
            adjusted[index] = min(1.0, running)
        return tuple(adjusted)


class Paired(msgspec.Struct, frozen=True):
    """Per-scenario differences of pass rate, B − A: their mean, t interval and sign-flip test."""

    differences: tuple[float, ...]
    draws: int = 10_000
    seed: int = 20_241_129

    def interval(self) -> Interval | None:
        count = len(self.differences)
        if count == 0:
            return None
        mean = fmean(self.differences)
        if count < 2:
            return Interval(mean, mean, mean)
        error = math.sqrt(sum((one - mean) ** 2 for one in self.differences) / (count * (count - 1)))
        half = StudentT(count - 1).quantile(0.975) * error
        return Interval(mean, mean - half, mean + half)

    def sign_flip(self) -> float:
        """The two-sided p of the mean difference under random signs: exact up to 20 scenarios."""
        values = [abs(one) for one in self.differences]
        count = len(values)
        if count == 0:
            return 1.0
        observed = abs(sum(self.differences)) - 1e-12
        if count <= 20:
            return self._enumerated(values, observed)
        chooser = random.Random(self.seed)
        hits = sum(
            1
            for _ in range(self.draws)
            if abs(sum(value if chooser.random() < 0.5 else -value for value in values)) >= observed
        )
        return (hits + 1) / (self.draws + 1)

    def _enumerated(self, values: list[float], observed: float) -> float:
        # Every sign pattern, in two halves: each half's signed sums, then for each sum x of the
        # first half the sums y of the second with |x + y| >= observed, found by bisection. Every
        # sum is made afresh from at most 10 values, so rounding cannot pile up as it would in one
        # running total over the 2^S patterns (it broke ties between patterns of equal sums).
        if observed <= 0:
            return 1.0
        middle = len(values) // 2
        second = sorted(self._sums(values[middle:]))
        hits = sum(
            len(second) - bisect_left(second, observed - x) + bisect_right(second, -observed - x)
            for x in self._sums(values[:middle])
        )
        return hits / 2 ** len(values)

    def _sums(self, values: list[float]) -> list[float]:
        """The signed sums of ``values`` under every sign pattern."""
        sums = [0.0]
        for value in values:
            sums = [total + value for total in sums] + [total - value for total in sums]
        return sums


class McNemar(msgspec.Struct, frozen=True):
    """The same attempts decided twice, before and after: ``both`` passed both times, ``worse``
    passed before and failed after, ``better`` failed before and passed after, ``neither`` failed
    both times. Only attempts judged in both belong here.

    With nothing changed, each discordant attempt is as likely to have gone one way as the other,
    so ``better`` is Binomial(worse + better, ½): the exact two-sided p is twice the smaller tail,
    at most 1 (McNemar's exact test, as statsmodels' ``mcnemar(table, exact=True)``). The mid-p
    takes half the probability of the observed count instead of all of it: less conservative, and
    not what decides (the exact p does). The difference of pass shares, after − before, is
    (better − worse) / n, with Newcombe's (1998, method 10) square-and-add interval from the two
    shares' Wilson intervals and their correlation.
    """

    both: int
    worse: int
    better: int
    neither: int

    def __post_init__(self) -> None:
        if min(self.both, self.worse, self.better, self.neither) < 0:
            raise ValueError("a paired table holds counts, none negative")

    def discordant(self) -> int:
        return self.worse + self.better

    def judged(self) -> int:
        return self.both + self.worse + self.better + self.neither

    def _tail(self) -> tuple[float, float]:
        """P(X ≤ k) and P(X = k) for X ~ Binomial(worse + better, ½), k the smaller count; in logs,
        so that thousands of discordant attempts neither overflow nor lose the tail."""
        n, k = self.discordant(), min(self.worse, self.better)
        half = n * math.log(0.5)
        terms = [math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + half) for i in range(k + 1)]
        return math.fsum(terms), terms[-1]

    def p(self) -> float:
        """The exact two-sided p (1 with no discordant attempt: nothing changed)."""
        if self.discordant() == 0:
            return 1.0
        tail, _ = self._tail()
        return min(1.0, 2 * tail)

    def mid_p(self) -> float:
        """The mid-p: the exact p less the probability of the count observed."""
        if self.discordant() == 0:
            return 1.0
        tail, point = self._tail()
        return min(1.0, 2 * tail - point)

    def test(self) -> Tested:
        direction: Literal["better", "worse", "same"] = (
            "better" if self.better > self.worse else "worse" if self.worse > self.better else "same"
        )
        return Tested(self.p(), direction, "mcnemar" if self.discordant() else "none")

    def interval(self) -> Interval | None:
        """The paired difference after − before with Newcombe's interval; none with no attempt."""
        n = self.judged()
        if n == 0:
            return None
        before, after = self.both + self.worse, self.both + self.better
        p1, p2 = before / n, after / n
        first, second = Wilson(Tally(before, n)).interval(), Wilson(Tally(after, n)).interval()
        assert first is not None and second is not None  # n > 0
        l1, u1, l2, u2 = first.low, first.high, second.low, second.high
        # ψ, the correlation of the two shares, with Newcombe's continuity correction (0 while the
        # cross product is within n/2 above 0), and 0 when a margin is empty.
        margins = before * (n - before) * after * (n - after)
        cross = self.both * self.neither - self.worse * self.better
        psi = 0.0
        if margins:
            psi = (cross - n / 2 if cross > n / 2 else cross if cross < 0 else 0.0) / math.sqrt(margins)
        difference = p2 - p1
        below = math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * psi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2))
        above = math.sqrt(max(0.0, (u2 - p2) ** 2 - 2 * psi * (u2 - p2) * (p1 - l1) + (p1 - l1) ** 2))
        return Interval(difference, max(-1.0, difference - below), min(1.0, difference + above))
