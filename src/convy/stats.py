"""The statistics of convy's reports, with the standard library only.

Attempts are clustered by scenario — two attempts of one scenario are not independent evidence —
so every interval and test here respects that (see docs/statistics.md for the formulas and the
tests for their cross-checks against scipy and statsmodels).

One run: ``Wilson`` (a proportion's interval), ``Headline`` (the mean of scenario rates with a
clustered t interval, or a scenario bootstrap when there are few scenarios), ``Consistency``
(pass^k and pass@k), ``Noise`` (within and between scenario variance, ICC, and advice).

Two runs: ``Stratified`` (the exact conditional test across scenario strata, with the
Cochran–Mantel–Haenszel χ² past a stated size), ``Paired`` (the mean of per-scenario differences
with its t interval and the exact sign-flip test), ``Fisher`` (one scenario), ``Adjusted``
(Benjamini–Hochberg), ``Detectable`` (the minimum detectable effect). Two runs that judged the
same dialogues: ``McNemar`` (the exact test of the discordant pairs, and Newcombe's interval of
the paired difference), in a block of its own at the end.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left, bisect_right
from collections import Counter
from functools import cache
from itertools import accumulate, combinations_with_replacement, repeat
from operator import add, mul
from statistics import fmean
from typing import ClassVar, Literal

import msgspec

Z95 = 1.959963984540054
TOLERANCE = 1e-7


class Interval(msgspec.Struct, frozen=True):
    """An estimate with its 95% interval."""

    estimate: float
    low: float
    high: float


class Tally(msgspec.Struct, frozen=True):
    """Held out of judged: ``passed`` of ``judged`` attempts (or claims)."""

    passed: int
    judged: int

    def __post_init__(self) -> None:
        if not 0 <= self.passed <= self.judged:
            raise ValueError("passed must be between 0 and judged")


class Wilson(msgspec.Struct, frozen=True):
    """Wilson's score interval of a proportion."""

    tally: Tally
    z: float = Z95

    def interval(self) -> Interval | None:
        n = self.tally.judged
        if n == 0:
            return None
        p = self.tally.passed / n
        z2 = self.z * self.z
        centre = (p + z2 / (2 * n)) / (1 + z2 / n)
        half = self.z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
        return Interval(p, max(0.0, centre - half), min(1.0, centre + half))


class StudentT(msgspec.Struct, frozen=True):
    """Student's t distribution with ``df`` degrees of freedom."""

    df: float

    def cdf(self, t: float) -> float:
        x = self.df / (self.df + t * t)
        tail = 0.5 * IncompleteBeta(self.df / 2, 0.5).regularized(x)
        return 1 - tail if t > 0 else tail

    def quantile(self, probability: float) -> float:
        """The t with ``cdf(t) == probability``, by bisection (the cdf is monotone)."""
        if probability == 0.5:
            return 0.0
        low, high = -1.0, 1.0
        while self.cdf(low) > probability:
            low *= 2
        while self.cdf(high) < probability:
            high *= 2
        for _ in range(200):
            middle = (low + high) / 2
            if self.cdf(middle) < probability:
                low = middle
            else:
                high = middle
            if high - low < 1e-12:
                break
        return (low + high) / 2


class IncompleteBeta(msgspec.Struct, frozen=True):
    """The regularized incomplete beta function I_x(a, b), by Lentz's continued fraction."""

    a: float
    b: float

    def regularized(self, x: float) -> float:
        if x <= 0:
            return 0.0
        if x >= 1:
            return 1.0
        a, b = self.a, self.b
        front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
        if x < (a + 1) / (a + b + 2):
            return front * self._fraction(a, b, x) / a
        return 1 - front * self._fraction(b, a, 1 - x) / b

    def _fraction(self, a: float, b: float, x: float) -> float:
        tiny = 1e-300
        c, d = 1.0, 1 - (a + b) * x / (a + 1)
        d = 1 / (d if abs(d) > tiny else tiny)
        result = d
        for m in range(1, 500):
            for numerator in (
                m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
            ):
                d = 1 + numerator * d
                d = 1 / (d if abs(d) > tiny else tiny)
                c = 1 + numerator / c
                c = c if abs(c) > tiny else tiny
                result *= c * d
            if abs(c * d - 1) < 1e-15:
                break
        return result


class BetaQuantile(msgspec.Struct, frozen=True):
    """The quantiles of the Beta(a, b) distribution, by bisection on ``IncompleteBeta``."""

    a: float
    b: float

    def at(self, probability: float) -> float:
        """Newton's steps on the cdf (its slope is the density), kept inside a bracket that
        halves whenever a step would leave it: a few steps where bisection alone took fifty."""
        if probability <= 0:
            return 0.0
        if probability >= 1:
            return 1.0
        a, b = self.a, self.b
        law = IncompleteBeta(a, b)
        scale = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
        low, high = 0.0, 1.0
        x = a / (a + b)
        for _ in range(200):
            gap = law.regularized(x) - probability
            if abs(gap) < 1e-15:
                return x
            if gap < 0:
                low = x
            else:
                high = x
            density = math.exp(scale + (a - 1) * math.log(x) + (b - 1) * math.log1p(-x))
            step = x - gap / density if density > 0 else -1.0
            x = step if low < step < high else (low + high) / 2
            if high - low < 1e-14:
                break
        return x


@cache
def _t975(df: int) -> float:
    """Student's t 97.5% point on ``df`` degrees of freedom, found once per df."""
    return StudentT(df).quantile(0.975)


class Exact(msgspec.Struct, frozen=True):
    """The exact (Clopper–Pearson) 95% interval of a proportion: ``passed`` of ``judged``.

    Its ends are Beta quantiles: the low end the 2.5% point of Beta(x, n − x + 1) (0 when x is 0),
    the high end the 97.5% point of Beta(x + 1, n − x) (1 when x is n). Counts need not be whole:
    the headline gives it an effective number of attempts (``Headline``). It never has zero width
    while n is finite, and it holds its 95% at any n, where Wilson's dips below at the edges.
    """

    passed: float
    judged: float
    confidence: float = 0.95

    def interval(self) -> Interval | None:
        x, n = self.passed, self.judged
        if n <= 0:
            return None
        tail = (1 - self.confidence) / 2
        low = 0.0 if x <= 0 else BetaQuantile(x, n - x + 1).at(tail)
        high = 1.0 if x >= n else BetaQuantile(x + 1, n - x).at(1 - tail)
        return Interval(x / n, low, high)


class Headline(msgspec.Struct, frozen=True):
    """A run's pass rate: the mean of its scenarios' rates, with an interval that holds both of
    the two kinds of noise in it.

    - Between scenarios (``between``): with 30 scenarios or more and a mean away from 0 and 1, a t
      interval on S−1 degrees of freedom around the clustered standard error; otherwise a
      bootstrap over scenarios (10,000 draws, a fixed seed), its percentiles widened for few
      scenarios as Hesterberg's expanded percentile does (``expanded``).
    - Within scenarios (``within``): the exact interval of the attempts' own noise, on the
      effective number of attempts S² / Σ(1/nᵢ) (the count whose binomial variance is that of the
      mean of the scenarios' rates) at the mean rate.

    The interval is the smallest one holding both: the spread between scenarios can be nil (every
    scenario passed every attempt) while a handful of attempts leaves much room, and the reverse.
    It is never of zero width. One scenario alone gets its exact interval.
    """

    rates: tuple[float, ...]
    tallies: tuple[Tally, ...] = ()
    draws: int = 10_000
    seed: int = 20_241_129

    def method(self) -> Literal["t", "bootstrap", "exact", "none"]:
        """How the spread between scenarios is found ("exact": one scenario, its attempts' exact
        interval alone); every interval besides holds the attempts' own noise (``within``)."""
        count = len(self.rates)
        if count == 0:
            return "none"
        if count == 1:
            return "exact"
        mean = fmean(self.rates)
        if count < 30 or mean < 0.1 or mean > 0.9:
            return "bootstrap"
        return "t"

    def interval(self) -> Interval | None:
        between = self.between()
        within = self.within()
        if between is None:
            return within
        if within is None:
            return between
        return Interval(between.estimate, min(between.low, within.low), max(between.high, within.high))

    def between(self) -> Interval | None:
        """The interval from the spread between scenarios alone; none for fewer than two."""
        match self.method():
            case "none" | "exact":
                return None
            case "t":
                return self.t_interval()
            case "bootstrap":
                return self.expanded()

    def within(self) -> Interval | None:
        """The exact interval of the attempts' own noise, on the effective number of attempts."""
        judged = [tally for tally in self.tallies if tally.judged]
        if not judged or not self.rates:
            return None
        attempts = len(judged) ** 2 / math.fsum(1 / tally.judged for tally in judged)
        mean = fmean(self.rates)
        found = Exact(mean * attempts, attempts).interval()
        return None if found is None else Interval(mean, found.low, found.high)

    def standard_error(self) -> float:
        count = len(self.rates)
        if count < 2:
            return 0.0
        mean = fmean(self.rates)
        return math.sqrt(sum((rate - mean) ** 2 for rate in self.rates) / (count * (count - 1)))

    def t_interval(self) -> Interval:
        mean = fmean(self.rates)
        half = StudentT(len(self.rates) - 1).quantile(0.975) * self.standard_error()
        return Interval(mean, max(0.0, mean - half), min(1.0, mean + half))

    def bootstrap(self) -> Interval:
        """The plain percentile bootstrap (2.5% and 97.5% of the resampled means)."""
        return self._percentiles(0.025)

    def expanded(self) -> Interval:
        """Hesterberg's expanded percentile bootstrap: the percentile interval at α′/2 =
        Φ(−√(S/(S−1)) · t₀.₉₇₅,S−1) in place of 2.5%, which makes up for the plain percentile
        interval's narrowness (a factor √((S−1)/S), and z for t) with few scenarios. With 2–4
        scenarios it reaches the smallest and largest means drawn."""
        count = len(self.rates)
        scale = math.sqrt(count / (count - 1)) * _t975(count - 1)
        tail = 0.5 * math.erfc(scale / math.sqrt(2))
        if count <= self.ENUMERATED:
            return self._enumerated(tail)
        return self._percentiles(tail)

    ENUMERATED: ClassVar[int] = 8

    def _enumerated(self, tail: float) -> Interval:
        """The percentiles of the bootstrap's means found exactly, not drawn: every multiset of S
        picks of the S rates, weighted by its multinomial chance (S ≤ 8: at most 6,435 of them)."""
        count = len(self.rates)
        whole = math.factorial(count)
        means: list[tuple[float, float]] = []
        for picked in combinations_with_replacement(range(count), count):
            weight = whole
            for times in Counter(picked).values():
                weight //= math.factorial(times)
            means.append((math.fsum(self.rates[at] for at in picked) / count, weight / count**count))
        means.sort()
        # Tied means are one value: a quantile is taken over values, with their chances summed.
        values: list[float] = []
        chances: list[float] = []
        for mean, chance in means:
            if values and mean - values[-1] < 1e-12:
                chances[-1] += chance
            else:
                values.append(mean)
                chances.append(chance)
        cumulative = list(accumulate(chances))
        low = values[min(bisect_left(cumulative, tail * (1 - 1e-9)), len(values) - 1)]
        high = values[min(bisect_left(cumulative, (1 - tail) * (1 - 1e-12)), len(values) - 1)]
        return Interval(fmean(self.rates), low, high)

    def _percentiles(self, tail: float) -> Interval:
        mean = fmean(self.rates)
        chooser = random.Random(self.seed)
        count = len(self.rates)
        # One draw of count * draws picks takes the same numbers from the generator as a draw of
        # count picks, draws times over, with one call instead of 10,000; and fmean is fsum / n.
        # zip of one iterator count times over gives each draw's count picks in turn. Dividing by
        # count keeps the order of the sums, so the sorted means are the sorted sums divided: only
        # the two sums the percentiles take are divided.
        picks = chooser.choices(self.rates, k=count * self.draws)
        sums = sorted(map(math.fsum, zip(*[iter(picks)] * count)))
        low, high = sums[int(tail * (self.draws - 1))], sums[int(math.ceil((1 - tail) * (self.draws - 1)))]
        return Interval(mean, low / count, high / count)


class Binomial(msgspec.Struct, frozen=True):
    """The Binomial(n, p) law: ``above(k)`` is P(X ≥ k), the one-sided exact test's p of seeing k
    or more events where p each is expected (as scipy's ``binomtest(k, n, p, "greater")``)."""

    n: int
    p: float

    def above(self, k: int) -> float:
        if k <= 0:
            return 1.0
        if k > self.n:
            return 0.0
        if self.p <= 0:
            return 0.0
        if self.p >= 1:
            return 1.0
        # P(X ≥ k) = I_p(k, n − k + 1), the regularized incomplete beta.
        return IncompleteBeta(k, self.n - k + 1).regularized(self.p)


class Difference(msgspec.Struct, frozen=True):
    """The difference of two independent proportions, after − before, with Newcombe's (1998,
    method 10) square-and-add interval from the two Wilson intervals (statsmodels'
    ``confint_proportions_2indep(..., method="newcomb")``). Unlike the Wald interval it is not of
    zero width at 3/3 against 0/3: it says how large a change so few attempts leave open."""

    before: Tally
    after: Tally

    def interval(self) -> Interval | None:
        first, second = Wilson(self.before).interval(), Wilson(self.after).interval()
        if first is None or second is None:
            return None
        p1, p2 = first.estimate, second.estimate
        difference = p2 - p1
        below = math.sqrt((p2 - second.low) ** 2 + (first.high - p1) ** 2)
        above = math.sqrt((second.high - p2) ** 2 + (p1 - first.low) ** 2)
        return Interval(difference, max(-1.0, difference - below), min(1.0, difference + above))


class Consistency(msgspec.Struct, frozen=True):
    """How reliably scenarios pass: pass^k, pass@k, and the always/flaky/never counts."""

    tallies: tuple[Tally, ...]

    def ks(self) -> range:
        judged = [tally.judged for tally in self.tallies if tally.judged]
        return range(1, min(judged) + 1) if judged else range(0)

    def pass_hat(self, k: int) -> float:
        """pass^k: the chance that k attempts in a row all pass, averaged over scenarios."""
        counted = [tally for tally in self.tallies if tally.judged >= k]
        return fmean(math.comb(tally.passed, k) / math.comb(tally.judged, k) for tally in counted)

    def pass_at(self, k: int) -> float:
        """pass@k: the chance that at least one of k attempts passes, averaged over scenarios."""
        counted = [tally for tally in self.tallies if tally.judged >= k]
        return fmean(1 - math.comb(tally.judged - tally.passed, k) / math.comb(tally.judged, k) for tally in counted)

    def curve(self) -> list[tuple[int, float, float]]:
        """``(k, pass^k, pass@k)`` for every k of ``ks()``: ``pass_hat`` and ``pass_at`` to within
        rounding. Each ratio of binomial coefficients is a product of k fractions, made from the
        one for k − 1: C(p, k) / C(n, k) = C(p, k − 1) / C(n, k − 1) · (p − k + 1) / (n − k + 1).
        In floats: the exact integers of every k up to 1,000 grew to hundreds of digits, and
        dividing them took a third of a second of a report; k products each rounded add up to
        about k · 2⁻⁵³ relative, far below what a page shows."""
        found: list[tuple[int, float, float]] = []
        judged = [tally for tally in self.tallies if tally.judged]
        hats = [1.0] * len(judged)  # C(passed, k) / C(judged, k)
        misses = [1.0] * len(judged)  # C(judged - passed, k) / C(judged, k)
        for k in self.ks():
            for at, tally in enumerate(judged):  # every judged tally has k attempts or more (ks)
                whole = tally.judged - k + 1
                hats[at] *= max(tally.passed - k + 1, 0) / whole
                misses[at] *= max(tally.judged - tally.passed - k + 1, 0) / whole
            found.append((k, fmean(hats), fmean([1 - miss for miss in misses])))
        return found

    def always(self) -> int:
        return sum(1 for tally in self.tallies if tally.judged and tally.passed == tally.judged)

    def never(self) -> int:
        return sum(1 for tally in self.tallies if tally.judged and tally.passed == 0)

    def flaky(self) -> int:
        return sum(1 for tally in self.tallies if 0 < tally.passed < tally.judged)


class Noise(msgspec.Struct, frozen=True):
    """Where a run's uncertainty comes from: attempts within scenarios, or the scenarios chosen."""

    tallies: tuple[Tally, ...]

    def _judged(self) -> list[Tally]:
        return [tally for tally in self.tallies if tally.judged >= 2]

    def within(self) -> float | None:
        judged = self._judged()
        if not judged:
            return None
        return fmean(
            (tally.passed / tally.judged) * (1 - tally.passed / tally.judged) * tally.judged / (tally.judged - 1)
            for tally in judged
        )

    def between(self) -> float | None:
        judged = self._judged()
        within = self.within()
        if len(judged) < 2 or within is None:
            return None
        rates = [tally.passed / tally.judged for tally in judged]
        mean = fmean(rates)
        variance = sum((rate - mean) ** 2 for rate in rates) / (len(rates) - 1)
        attempts = fmean(tally.judged for tally in judged)
        return max(0.0, variance - within / attempts)

    def icc(self) -> float | None:
        within, between = self.within(), self.between()
        if within is None or between is None or within + between == 0:
            return None
        return between / (between + within)

    def advice(self) -> Literal["more scenarios", "more attempts", "either"] | None:
        """Which would narrow the interval more: the larger share of the variance of the mean."""
        within, between = self.within(), self.between()
        if within is None or between is None:
            return None
        attempts = fmean(tally.judged for tally in self._judged())
        if between > within / attempts * 1.1:
            return "more scenarios"
        if within / attempts > between * 1.1:
            return "more attempts"
        return "either"


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


class Detectable(msgspec.Struct, frozen=True):
    """The minimum detectable effect of a comparison (α = 0.05, power 0.8), and what would reach Δ.

    MDE = 2.80·√((ω² + σ²_A/k_A + σ²_B/k_B)/S), with ω² the variance of the true per-scenario
    difference (estimated from the observed differences less their sampling noise). Each σ² is
    p̃(1 − p̃) at the rule of succession's rate p̃ = (passed + 1)/(judged + 2), not at the rate
    seen: 3 of 3 does not show a scenario that cannot fail, and at p̂(1 − p̂) it made the smallest
    detectable change of 3/3 against 6/6 "0.0 points".
    """

    a: tuple[Tally, ...]
    b: tuple[Tally, ...]

    def _parts(self) -> tuple[float, float, float, int] | None:
        pairs = [(one, two) for one, two in zip(self.a, self.b, strict=True) if one.judged and two.judged]
        if not pairs:
            return None
        noise_a = fmean(_succession(one) for one, _ in pairs)
        noise_b = fmean(_succession(two) for _, two in pairs)
        attempts_a = fmean(one.judged for one, _ in pairs)
        attempts_b = fmean(two.judged for _, two in pairs)
        differences = [two.passed / two.judged - one.passed / one.judged for one, two in pairs]
        sampling = noise_a / attempts_a + noise_b / attempts_b
        spread = 0.0
        if len(differences) > 1:
            mean = fmean(differences)
            spread = max(0.0, sum((one - mean) ** 2 for one in differences) / (len(differences) - 1) - sampling)
        return spread, noise_a / attempts_a, noise_b / attempts_b, len(pairs)

    def effect(self) -> float | None:
        parts = self._parts()
        if parts is None:
            return None
        spread, from_a, from_b, scenarios = parts
        return 2.80 * math.sqrt((spread + from_a + from_b) / scenarios)

    def scenarios_for(self, delta: float) -> int | None:
        """Scenarios needed (at these attempts) for a difference of ``delta`` to be detectable."""
        parts = self._parts()
        if parts is None or delta == 0:
            return None
        spread, from_a, from_b, _ = parts
        return math.ceil(2.80**2 * (spread + from_a + from_b) / delta**2)

    def attempts_for(self, delta: float) -> int | None:
        """Attempts per scenario in each run needed (with these scenarios), or ``None`` when more
        attempts alone cannot get there (the scenarios' own spread is too large)."""
        parts = self._parts()
        if parts is None or delta == 0:
            return None
        spread, from_a, from_b, scenarios = parts
        room = delta**2 * scenarios / 2.80**2 - spread
        if room <= 0:
            return None
        pairs = [(one, two) for one, two in zip(self.a, self.b, strict=True) if one.judged and two.judged]
        noise = fmean(_succession(one) + _succession(two) for one, two in pairs)
        return max(1, math.ceil(noise / room))


def _succession(tally: Tally) -> float:
    """p̃(1 − p̃) at the rule of succession's rate (passed + 1)/(judged + 2): a variance of one
    attempt that a few attempts all alike do not make 0."""
    rate = (tally.passed + 1) / (tally.judged + 2)
    return rate * (1 - rate)


# --- Cohen's κ (judge against people: human labels, labels.py) --------------------------------
# Kept in a block of its own: Fleiss' κ (a panel of judges) is another helper's, beside it.


class CohenKappa(msgspec.Struct, frozen=True):
    """Cohen's κ of two raters over the same items, from their table of counts: ``table[i][j]``
    items the first rater put in category ``i`` and the second in ``j`` (square, any number of
    categories; for labels, the judge by rows and the people by columns, not held / held).

    κ = (p_o − p_e) / (1 − p_e), p_o the share of items they agree on, p_e the share two raters
    with these marginals would agree on by chance. Undefined (``None``) with no items, or when
    p_e = 1: both raters put every item in one and the same category, so there was nothing chance
    could get wrong, and no number says how well they agree beyond it. Its standard error is the
    large-sample one of Fleiss, Cohen and Everitt (1969), as statsmodels' ``cohens_kappa`` gives
    it, and the interval κ ± 1.96·SE (cut to [−1, 1]).
    """

    table: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        size = len(self.table)
        if any(len(row) != size for row in self.table):
            raise ValueError("a kappa table must be square")
        if any(count < 0 for row in self.table for count in row):
            raise ValueError("a kappa table holds counts, none negative")

    @classmethod
    def of(cls, pairs: list[tuple[bool, bool]]) -> CohenKappa:
        """The table of pairs of yes/no decisions (first rater, second rater): index 0 no, 1 yes."""
        table = [[0, 0], [0, 0]]
        for first, second in pairs:
            table[first][second] += 1
        return cls((tuple(table[0]), tuple(table[1])))

    def _parts(self) -> tuple[int, float, float, list[float], list[float]] | None:
        n = sum(sum(row) for row in self.table)
        if n == 0:
            return None
        size = len(self.table)
        rows = [sum(self.table[i]) / n for i in range(size)]
        columns = [sum(self.table[i][j] for i in range(size)) / n for j in range(size)]
        observed = sum(self.table[i][i] for i in range(size)) / n
        chance = sum(rows[i] * columns[i] for i in range(size))
        if chance >= 1 - 1e-12:
            return None
        return n, observed, chance, rows, columns

    def kappa(self) -> float | None:
        parts = self._parts()
        if parts is None:
            return None
        _, observed, chance, _, _ = parts
        return (observed - chance) / (1 - chance)

    def error(self) -> float | None:
        """The standard error of κ (not under the null): Fleiss, Cohen and Everitt's."""
        parts = self._parts()
        if parts is None:
            return None
        n, observed, chance, rows, columns = parts
        kappa = (observed - chance) / (1 - chance)
        size = len(self.table)
        same = sum(self.table[i][i] / n * (1 - (rows[i] + columns[i]) * (1 - kappa)) ** 2 for i in range(size))
        other = (1 - kappa) ** 2 * sum(
            self.table[i][j] / n * (columns[i] + rows[j]) ** 2 for i in range(size) for j in range(size) if i != j
        )
        variance = (same + other - (kappa - chance * (1 - kappa)) ** 2) / (1 - chance) ** 2 / n
        return math.sqrt(max(0.0, variance))

    def one_sided(self) -> bool:
        """Whether a rater put every item in one category (when both put every item in the same
        one, κ is undefined instead). κ is then 0 whatever the other did, and its standard error
        0: a number that says nothing of how well they agree (with people who found every claim
        held, a judge right 29 times in 30 has κ 0)."""
        size = len(self.table)
        rows = sum(1 for i in range(size) if any(self.table[i]))
        columns = sum(1 for j in range(size) if any(self.table[i][j] for i in range(size)))
        return rows == 1 or columns == 1

    def interval(self) -> Interval | None:
        """κ ± 1.96·SE, cut to [−1, 1]; none when κ is undefined or ``one_sided`` (an interval of
        width 0 there would read as certainty)."""
        kappa, error = self.kappa(), self.error()
        if kappa is None or error is None or self.one_sided():
            return None
        return Interval(kappa, max(-1.0, kappa - Z95 * error), min(1.0, kappa + Z95 * error))

    def reading(self) -> str:
        """κ in words, on Landis and Koch's scale (1977), or why there is none."""
        kappa = self.kappa()
        if kappa is None:
            if not any(any(row) for row in self.table):
                return "nothing to compare"
            return "κ undefined: both gave one answer to every item, so chance alone would agree as often"
        if self.one_sided():
            return "κ says nothing here: one side gave one answer to every item, which makes κ 0 however often they agree; read the accuracy"
        if kappa < -1e-12:
            return "less agreement than chance"
        if kappa < 1e-12:
            return "no agreement beyond chance"
        for bound, said in ((0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
            if kappa <= bound:
                return f"{said} agreement beyond chance"
        return "almost perfect agreement beyond chance"


# --- Agreement between judges (issue 10: repeated and panel judging) -----------------------------
# Kept apart from the rest, and from Cohen's κ (judge against people), so the two merge cleanly.


class FleissKappa(msgspec.Struct, frozen=True):
    """Fleiss' κ: how much more a fixed number of raters agree on each subject than they would by
    chance, given how often each category is used overall.

    ``counts[i][j]`` is how many raters put subject ``i`` in category ``j``; every subject has the
    same number of ratings (at least two), and every row the same number of categories. In convy
    a subject is one decision of a claim (an attempt's), a rater one judge of the panel, and the
    categories held and not held. κ is 1 for perfect agreement, 0 for agreement at chance, below 0
    for less. It is undefined (``None``) when there is no subject, fewer than two raters, or every
    rating is in one category: chance agreement is then 1 and κ is 0/0 (statsmodels says nan).
    """

    counts: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        if self.counts:
            raters, width = sum(self.counts[0]), len(self.counts[0])
            for row in self.counts:
                if len(row) != width or sum(row) != raters or min(row) < 0:
                    raise ValueError("every subject must have the same number of ratings, none negative, in the same categories")

    def raters(self) -> int:
        return sum(self.counts[0]) if self.counts else 0

    def observed(self) -> float | None:
        """P̄: the mean, over subjects, of the share of pairs of raters that agree on it."""
        raters = self.raters()
        if raters < 2:
            return None
        pairs = raters * (raters - 1)
        return fmean([(sum(count * count for count in row) - raters) / pairs for row in self.counts])

    def expected(self) -> float | None:
        """P̄e: the agreement expected by chance, from each category's share of every rating."""
        raters = self.raters()
        if raters < 2:
            return None
        total = raters * len(self.counts)
        return math.fsum((sum(column) / total) ** 2 for column in zip(*self.counts, strict=True))

    def kappa(self) -> float | None:
        """(P̄ − P̄e) / (1 − P̄e), or ``None`` when undefined (see the class)."""
        observed, expected = self.observed(), self.expected()
        if observed is None or expected is None or expected >= 1.0 - 1e-12:
            return None
        return (observed - expected) / (1.0 - expected)

    @staticmethod
    def reading(kappa: float | None) -> str:
        """κ in words, after Landis and Koch (1977): a convention, not a test."""
        if kappa is None:
            return "undefined: every judge gave the same decision every time"
        for bound, words in ((0.0, "poor"), (0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
            if kappa <= bound:
                return f"{words} agreement"
        return "almost perfect agreement"


# --- McNemar (two runs that judged the same dialogues: convy rejudge) ---------------------------
# Kept in a block of its own. Of the same dialogues decided twice the attempts are paired, and the
# test of two independent samples above (``Stratified``) ignores that: it is far too cautious when
# most decisions agree (statistics.md, "The same dialogues judged twice").


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
