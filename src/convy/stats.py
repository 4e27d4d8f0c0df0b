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
from bisect import bisect_left
from collections import Counter
from functools import cache
from itertools import accumulate, combinations_with_replacement
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


# --- Agreement between judges (issue 10: repeated and panel judging) -----------------------------
# Kept apart from the rest, and from Cohen's κ (judge against people), so the two merge cleanly.


# --- McNemar (two runs that judged the same dialogues: convy rejudge) ---------------------------
# Kept in a block of its own. Of the same dialogues decided twice the attempts are paired, and the
# test of two independent samples above (``Stratified``) ignores that: it is far too cautious when
# most decisions agree (statistics.md, "The same dialogues judged twice").


