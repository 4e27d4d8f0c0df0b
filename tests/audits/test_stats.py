"""convy.stats checked against scipy and statsmodels (or a brute-force reference) on random inputs.

Every test draws its cases from a seeded ``random.Random``, so a failure can be replayed, and
prints its number of cases and the largest discrepancy seen (``pytest -rP`` shows them). The
formulas are those of docs/statistics.md (shared/guides/statistics.md).
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from scipy import special, stats
from statsmodels.stats.contingency_tables import StratifiedTable
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from convy.kappa import CohenKappa
from convy.significance import Adjusted, Fisher, Hypergeometric, Paired, Stratified, Stratum
from convy.stats import (
    Binomial,
    Consistency,
    Detectable,
    Difference,
    Exact,
    Headline,
    IncompleteBeta,
    Interval,
    Noise,
    StudentT,
    Tally,
    Wilson,
)


def said(name: str, cases: int, worst: float) -> None:
    print(f"{name}: {cases} random cases, largest discrepancy {worst:.3g}")


def relative(got: float, want: float) -> float:
    return abs(got - want) / abs(want) if want else abs(got)


def tally(rng: random.Random, most: int = 50, least: int = 1) -> Tally:
    """A random tally, often at the edges (none passed, all passed)."""
    judged = rng.randint(least, most)
    passed = rng.choice((0, judged, rng.randint(0, judged), rng.randint(0, judged)))
    return Tally(passed, judged)


def run(rng: random.Random, scenarios: int, attempts: int, rate: float, spread: float = 0.3) -> list[Tally]:
    """Tallies of ``scenarios`` scenarios of ``attempts`` attempts, each at a rate near ``rate``."""
    tallies = []
    for _ in range(scenarios):
        own = min(1.0, max(0.0, rate + rng.uniform(-spread, spread)))
        tallies.append(Tally(sum(rng.random() < own for _ in range(attempts)), attempts))
    return tallies


# --- one run -------------------------------------------------------------------------------------


def test_wilson_matches_statsmodels() -> None:
    rng = random.Random(101)
    worst, cases = 0.0, 500
    for case in range(cases):
        one = tally(rng, most=1000)
        alpha = 0.05 if case % 2 else rng.uniform(0.001, 0.3)
        z = stats.norm.ppf(1 - alpha / 2)
        interval = Wilson(one) if alpha == 0.05 else Wilson(one, z)
        got = interval.interval()
        assert got is not None
        low, high = proportion_confint(one.passed, one.judged, alpha=alpha, method="wilson")
        assert got.estimate == one.passed / one.judged
        worst = max(worst, abs(got.low - low), abs(got.high - high))
    assert Wilson(Tally(0, 0)).interval() is None
    said("Wilson", cases, worst)
    assert worst < 1e-12


def test_student_t_matches_scipy_for_every_df_from_1_to_200() -> None:
    rng = random.Random(102)
    worst_quantile = worst_cdf = 0.0
    cases = 0
    for df in range(1, 201):
        t = StudentT(df)
        for probability in (0.975, rng.uniform(0.001, 0.999), rng.uniform(1e-6, 1e-3)):
            worst_quantile = max(worst_quantile, relative(t.quantile(probability), stats.t.ppf(probability, df)))
            cases += 1
        for point in (rng.uniform(-4, 4), rng.uniform(-60, 60), 0.0):
            worst_cdf = max(worst_cdf, abs(t.cdf(point) - stats.t.cdf(point, df)))
            cases += 1
    said("StudentT.quantile (relative)", cases // 2, worst_quantile)
    said("StudentT.cdf", cases // 2, worst_cdf)
    assert worst_quantile < 1e-9
    assert worst_cdf < 1e-12
    assert StudentT(7).quantile(0.5) == 0.0


def test_incomplete_beta_matches_scipy() -> None:
    rng = random.Random(103)
    worst = worst_relative = 0.0
    cases = 500
    for case in range(cases):
        a = math.exp(rng.uniform(math.log(0.05), math.log(2000)))
        b = math.exp(rng.uniform(math.log(0.05), math.log(2000)))
        x = rng.random() if case % 4 else rng.choice((rng.uniform(0, 1e-3), rng.uniform(1 - 1e-3, 1)))
        got, want = IncompleteBeta(a, b).regularized(x), special.betainc(a, b, x)
        worst = max(worst, abs(got - want))
        if want > 1e-250:
            worst_relative = max(worst_relative, relative(got, want))
    assert IncompleteBeta(2, 3).regularized(0.0) == 0.0
    assert IncompleteBeta(2, 3).regularized(1.0) == 1.0
    said("IncompleteBeta (absolute)", cases, worst)
    said("IncompleteBeta (relative, values > 1e-250)", cases, worst_relative)
    assert worst < 1e-12
    assert worst_relative < 1e-9


def test_headline_t_interval_matches_scipy() -> None:
    rng = random.Random(104)
    worst, cases = 0.0, 200
    for _ in range(cases):
        scenarios, attempts = rng.randint(30, 300), rng.randint(1, 40)
        low, high = sorted((rng.randint(0, attempts), rng.randint(0, attempts)))
        tallies = [Tally(rng.randint(low, high), attempts) for _ in range(scenarios)]
        rates = np.array([one.passed / one.judged for one in tallies])
        headline = Headline(tuple(rates.tolist()), tuple(tallies))
        if not 0.1 <= statistics.fmean(rates.tolist()) <= 0.9:
            assert headline.method() == "bootstrap"
            continue
        assert headline.method() == "t"
        got = headline.between()
        assert got is not None and got == headline.t_interval()
        error = rates.std(ddof=1) / math.sqrt(scenarios)  # √(Σ(p̂ᵢ − p̄)² / (S(S−1)))
        half = stats.t.ppf(0.975, scenarios - 1) * error
        mean = rates.mean()
        worst = max(
            worst,
            abs(headline.standard_error() - error),
            abs(got.estimate - mean),
            abs(got.low - max(0.0, mean - half)),
            abs(got.high - min(1.0, mean + half)),
        )
    said("Headline t interval", cases, worst)
    assert worst < 1e-12


def test_headline_method_follows_the_rule() -> None:
    """t from 30 scenarios on, the mean within [0.1, 0.9]; bootstrap otherwise; Wilson for one."""
    rng = random.Random(105)
    cases = 500
    for _ in range(cases):
        rates = tuple(rng.choice((0.0, 1.0, rng.random())) for _ in range(rng.randint(2, 60)))
        mean = statistics.fmean(rates)
        wanted = "t" if len(rates) >= 30 and 0.1 <= mean <= 0.9 else "bootstrap"
        assert Headline(rates).method() == wanted
    one = Tally(7, 9)
    assert Headline((7 / 9,), (one,)).interval() == Exact(7, 9).interval()
    assert Headline(()).interval() is None
    said("Headline.method", cases, 0.0)


def test_headline_bootstrap_replayed_with_numpy() -> None:
    """The same draws (the seed's chooser picks scenario indexes), the means and percentiles by numpy."""
    rng = random.Random(106)
    worst, cases = 0.0, 6
    for _ in range(cases):
        scenarios = rng.randint(2, 29)
        rates = tuple(one.passed / one.judged for one in run(rng, scenarios, rng.randint(1, 20), rng.random()))
        headline = Headline(rates)
        got = headline.bootstrap()
        chooser = random.Random(headline.seed)
        picks = np.array([chooser.choices(range(scenarios), k=scenarios) for _ in range(headline.draws)])
        means = np.asarray(rates)[picks].mean(axis=1)
        low = np.quantile(means, 0.025, method="lower")
        high = np.quantile(means, 0.975, method="higher")
        worst = max(worst, abs(got.low - low), abs(got.high - high), abs(got.estimate - np.mean(rates)))
    said("Headline bootstrap vs numpy replay", cases, worst)
    assert worst < 1e-12


def test_headline_bootstrap_is_sane_and_near_scipy() -> None:
    rng = random.Random(107)
    worst, cases = 1.0, 8
    for case in range(cases):
        scenarios = rng.randint(8, 29)
        rates = tuple(one.passed / one.judged for one in run(rng, scenarios, 10, rng.uniform(0.2, 0.8)))
        if len(set(rates)) == 1:
            continue
        got = Headline(rates).bootstrap()
        if case == 0:
            assert got == Headline(tuple(rates)).bootstrap()  # the seed is fixed: the same interval every time
        assert got.low <= got.estimate <= got.high
        reference = stats.bootstrap(
            (np.asarray(rates),), np.mean, n_resamples=10_000, method="percentile", rng=np.random.default_rng(1)
        ).confidence_interval
        ratio = (got.high - got.low) / (reference.high - reference.low)
        worst = max(worst, ratio, 1 / ratio)
        assert abs(got.low - reference.low) < 0.25 * (reference.high - reference.low)
        assert abs(got.high - reference.high) < 0.25 * (reference.high - reference.low)
        # Four times the scenarios, the same spread: the interval about halves.
        wider = Headline(rates * 4, draws=2_000).bootstrap()
        assert wider.high - wider.low < 0.7 * (got.high - got.low)
    said("Headline bootstrap width vs scipy.stats.bootstrap (ratio)", cases, worst)
    assert worst < 1.15


def test_consistency_matches_the_comb_formulas() -> None:
    rng = random.Random(108)
    worst, cases = 0.0, 300
    for _ in range(cases):
        tallies = [tally(rng, most=20) for _ in range(rng.randint(1, 30))]
        tallies += [Tally(0, 0)] * rng.randint(0, 2)  # not judged at all: left out
        consistency = Consistency(tuple(tallies))
        judged = [one for one in tallies if one.judged]
        ks = list(consistency.ks())
        assert ks == list(range(1, min(one.judged for one in judged) + 1))
        for k in ks:
            hat = np.mean([special.comb(one.passed, k, exact=True) / special.comb(one.judged, k, exact=True) for one in judged])
            at = np.mean(
                [1 - special.comb(one.judged - one.passed, k, exact=True) / special.comb(one.judged, k, exact=True) for one in judged]
            )
            worst = max(worst, abs(consistency.pass_hat(k) - hat), abs(consistency.pass_at(k) - at))
        assert consistency.always() == sum(one.passed == one.judged for one in judged)
        assert consistency.never() == sum(one.passed == 0 for one in judged)
        assert consistency.flaky() == sum(0 < one.passed < one.judged for one in judged)
        assert consistency.always() + consistency.never() + consistency.flaky() == len(judged)
        assert consistency.pass_hat(1) == pytest.approx(consistency.pass_at(1))
    assert list(Consistency((Tally(0, 0),)).ks()) == []
    said("Consistency pass^k / pass@k", cases, worst)
    assert worst < 1e-12


def test_the_consistency_curve_matches_scipy_comb_up_to_a_thousand_attempts() -> None:
    """The curve's float products against scipy's exact binomial coefficients, at every k up to
    1,000 attempts a scenario (where the exact integers have hundreds of digits)."""
    rng = random.Random(110)
    worst, cases = 0.0, 0
    for judged_most in (1000, 700, 250):
        tallies = [Tally(0, judged_most), Tally(judged_most, judged_most)]
        tallies += [Tally(rng.randint(0, judged), judged) for judged in (rng.randint(judged_most, judged_most + 40) for _ in range(4))]
        tallies += [Tally(int(judged_most * 0.97), judged_most), Tally(3, judged_most + 5)]
        curve = Consistency(tuple(tallies)).curve()
        assert [k for k, _, _ in curve] == list(range(1, judged_most + 1))
        for k, hat, at in curve[:: 7] + curve[-3:]:
            whole = [special.comb(one.judged, k, exact=True) for one in tallies]
            want_hat = statistics.fmean(special.comb(one.passed, k, exact=True) / w for one, w in zip(tallies, whole, strict=True))
            want_at = statistics.fmean(
                1 - special.comb(one.judged - one.passed, k, exact=True) / w for one, w in zip(tallies, whole, strict=True)
            )
            worst = max(worst, abs(hat - want_hat), abs(at - want_at))
            cases += 1
    said("Consistency curve (floats) vs scipy exact comb, k <= 1000", cases, worst)
    assert worst < 1e-12


def test_noise_matches_numpy() -> None:
    rng = random.Random(109)
    worst, cases = 0.0, 300
    for _ in range(cases):
        tallies = [tally(rng, most=30) for _ in range(rng.randint(1, 40))]
        noise = Noise(tuple(tallies))
        kept = [one for one in tallies if one.judged >= 2]
        if not kept:
            assert noise.within() is None and noise.between() is None and noise.icc() is None
            continue
        rates = np.array([one.passed / one.judged for one in kept])
        attempts = np.array([one.judged for one in kept], dtype=float)
        within = np.mean(rates * (1 - rates) * attempts / (attempts - 1))
        got_within = noise.within()
        assert got_within is not None
        worst = max(worst, abs(got_within - within))
        if len(kept) < 2:
            assert noise.between() is None
            continue
        between = max(0.0, rates.var(ddof=1) - within / attempts.mean())
        got_between = noise.between()
        assert got_between is not None
        worst = max(worst, abs(got_between - between))
        if between + within == 0:
            assert noise.icc() is None
        else:
            icc = noise.icc()
            assert icc is not None
            worst = max(worst, abs(icc - between / (between + within)))
        share = within / attempts.mean()
        wanted = "more scenarios" if between > share * 1.1 else "more attempts" if share > between * 1.1 else "either"
        assert noise.advice() == wanted
    said("Noise within / between / ICC", cases, worst)
    assert worst < 1e-12


# --- two runs ------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # scipy's kurtosis at tiny populations
def test_hypergeometric_matches_scipy() -> None:
    rng = random.Random(110)
    worst, cases = 0.0, 500
    for _ in range(cases):
        population = rng.randint(1, 1000)
        successes = rng.randint(0, population)
        draws = rng.randint(0, population)
        law = Hypergeometric(population, successes, draws)
        support = np.arange(law.support().start, law.support().stop)
        low, high = stats.hypergeom.support(population, successes, draws)
        assert (support[0], support[-1]) == (low, high)
        want = stats.hypergeom.pmf(support, population, successes, draws)
        got = np.array(law.probabilities())
        shown = want > 1e-250
        worst = max(worst, float(np.max(np.abs(got[shown] - want[shown]) / want[shown])))
        assert abs(sum(law.probabilities()) - 1) < 1e-9
        assert law.mean() == pytest.approx(stats.hypergeom.mean(population, successes, draws), rel=1e-12, abs=1e-12)
        assert law.variance() == pytest.approx(stats.hypergeom.var(population, successes, draws), rel=1e-9, abs=1e-12)
    said("Hypergeometric pmf (relative)", cases, worst)
    assert worst < 1e-9


def test_fisher_matches_scipy_fisher_exact() -> None:
    rng = random.Random(111)
    worst, cases = 0.0, 500
    for case in range(cases):
        one, two = tally(rng, most=100 if case % 10 else 400), tally(rng, most=100 if case % 10 else 400)
        tested = Fisher(Stratum(one.passed, one.judged, two.passed, two.judged)).test()
        want = stats.fisher_exact([[two.passed, two.judged - two.passed], [one.passed, one.judged - one.passed]]).pvalue
        if not Stratum(one.passed, one.judged, two.passed, two.judged).informative():
            assert (tested.p, tested.method, tested.direction) == (1.0, "none", "same")
            assert want == pytest.approx(1.0)
            continue
        assert tested.method == "exact"
        worst = max(worst, relative(tested.p, want))
        a, b = one.passed / one.judged, two.passed / two.judged
        assert tested.direction == ("better" if b > a else "worse" if b < a else "same")
    said("Fisher (relative)", cases, worst)
    assert worst < 1e-6


def convolved(strata: list[Stratum]) -> tuple[float, int, np.ndarray]:
    """The exact test by brute force: scipy's pmf of each stratum, convolved by numpy, and the rule."""
    used = [one for one in strata if one.informative()]
    law, start = np.array([1.0]), 0
    for one in used:
        population, successes, draws = one.judged_a + one.judged_b, one.passed_a + one.passed_b, one.judged_b
        low, high = stats.hypergeom.support(population, successes, draws)
        law = np.convolve(law, stats.hypergeom.pmf(np.arange(low, high + 1), population, successes, draws))
        start += int(low)
    observed = sum(one.passed_b for one in used) - start
    p = min(1.0, float(law[law <= law[observed] * (1 + 1e-7)].sum())) if used else 1.0
    return p, observed, law


def stratum(rng: random.Random, most: int, change: float) -> Stratum:
    judged_a, judged_b = rng.randint(1, most), rng.randint(1, most)
    rate = rng.choice((0.0, 1.0, rng.random(), rng.random()))
    after = min(1.0, max(0.0, rate + rng.uniform(-change, change)))
    passed_a = sum(rng.random() < rate for _ in range(judged_a))
    return Stratum(passed_a, judged_a, sum(rng.random() < after for _ in range(judged_b)), judged_b)


def test_stratified_matches_brute_force_on_small_strata() -> None:
    rng = random.Random(112)
    worst, cases = 0.0, 400
    for _ in range(cases):
        strata = [stratum(rng, 20, 0.4) for _ in range(rng.randint(1, 8))]
        tested = Stratified(tuple(strata)).test()
        want, _, _ = convolved(strata)
        if not any(one.informative() for one in strata):
            assert (tested.p, tested.method) == (1.0, "none")
            continue
        assert tested.method in ("exact", "cmh")
        if tested.method == "cmh":  # the observed total was pruned from the law: p is negligible
            assert tested.p < 1e-12 and want < 1e-15
            continue
        # Pruning below 1e-17 of the largest probability may move p by about that much.
        worst = max(worst, relative(tested.p, want) if want > 1e-12 else 0.0)
        assert abs(tested.p - want) < 1e-13 + 1e-6 * want
    said("Stratified exact vs brute force (relative, p > 1e-12)", cases, worst)
    assert worst < 1e-6


def test_stratified_at_200_scenarios_matches_brute_force_and_statsmodels_cmh() -> None:
    rng = random.Random(113)
    worst_exact = worst_cmh = 0.0
    cases = 6
    for _ in range(cases):
        strata = [stratum(rng, 50, 0.1) for _ in range(200)]
        tested = Stratified(tuple(strata)).test()
        assert tested.method == "exact"
        want, _, _ = convolved(strata)
        worst_exact = max(worst_exact, relative(tested.p, want))
        tables = np.array(
            [[[one.passed_b, one.judged_b - one.passed_b], [one.passed_a, one.judged_a - one.passed_a]] for one in strata if one.informative()],
            dtype=float,
        ).transpose(1, 2, 0)
        cmh = StratifiedTable(tables).test_null_odds(correction=True).pvalue
        if cmh > 1e-6:  # far out, a normal approximation is no guide to the exact p
            worst_cmh = max(worst_cmh, relative(tested.p, cmh))
    said("Stratified exact at 200 x <=50 vs brute force (relative)", cases, worst_exact)
    said("Stratified exact at 200 x <=50 vs statsmodels CMH (relative)", cases, worst_cmh)
    assert worst_exact < 1e-6
    assert worst_cmh < 0.1


def test_stratified_cmh_fallback_matches_statsmodels() -> None:
    """With a tiny ``limit`` the χ² is used: statsmodels' CMH statistic with continuity correction."""
    rng = random.Random(114)
    worst, cases = 0.0, 300
    for _ in range(cases):
        strata = [stratum(rng, 40, 0.3) for _ in range(rng.randint(1, 40))]
        used = [one for one in strata if one.informative() and one.judged_a + one.judged_b >= 2]
        tested = Stratified(tuple(strata), limit=0).test()
        if not used:
            assert tested.method == "none"
            continue
        assert tested.method == "cmh"
        tables = np.array(
            [[[one.passed_b, one.judged_b - one.passed_b], [one.passed_a, one.judged_a - one.passed_a]] for one in used], dtype=float
        ).transpose(1, 2, 0)
        expected = sum(one.judged_b * (one.passed_a + one.passed_b) / (one.judged_a + one.judged_b) for one in used)
        if abs(sum(one.passed_b for one in used) - expected) < 0.5:
            # statsmodels squares |O − E| − ½ even when it is negative; the correction stops at 0.
            assert tested.p == 1.0
            continue
        statistic = StratifiedTable(tables).test_null_odds(correction=True).statistic
        worst = max(worst, relative(tested.p, stats.chi2.sf(statistic, 1)))
    said("Stratified CMH fallback vs statsmodels (relative)", cases, worst)
    assert worst < 1e-9


def test_stratified_uses_the_chi_square_past_the_limit_only() -> None:
    strata = tuple(Stratum(25 + shift, 50, 25, 50) for shift in (-2, -1, 0, 1, 2) * 6)
    assert Stratified(strata).test().method == "exact"
    assert Stratified(strata, limit=10).test().method == "cmh"
    assert Stratified(strata).test().p == pytest.approx(convolved(list(strata))[0], rel=1e-9)
    # Observed far out in the tail: the exact law prunes it, and the χ² gives a tiny p.
    extreme = tuple(Stratum(0, 50, 50, 50) for _ in range(3))
    tested = Stratified(extreme).test()
    assert tested.direction == "better" and tested.p < 1e-20
    want, _, _ = convolved(list(extreme))
    assert want < 1e-80


def test_adjusted_matches_statsmodels_bh() -> None:
    rng = random.Random(115)
    worst, cases = 0.0, 300
    for _ in range(cases):
        count = rng.randint(1, 60)
        p = [rng.choice((rng.random(), rng.random() ** 4, 1.0, 0.0, 0.05)) for _ in range(count)]
        got = Adjusted(tuple(p)).values()
        want = multipletests(p, method="fdr_bh")[1]
        worst = max(worst, float(np.max(np.abs(np.array(got) - want))))
    assert Adjusted(()).values() == ()
    said("Adjusted (BH)", cases, worst)
    assert worst < 1e-12


def test_paired_interval_matches_scipy() -> None:
    rng = random.Random(116)
    worst, cases = 0.0, 150
    for _ in range(cases):
        count = rng.randint(2, 200)
        differences = np.array([rng.randint(0, 20) / 20 - rng.randint(0, 20) / 20 for _ in range(count)])
        got = Paired(tuple(differences.tolist())).interval()
        assert got is not None
        half = stats.t.ppf(0.975, count - 1) * stats.sem(differences)
        mean = differences.mean()
        worst = max(worst, abs(got.estimate - mean), abs(got.low - (mean - half)), abs(got.high - (mean + half)))
    assert Paired(()).interval() is None
    assert Paired((0.25,)).interval() == Interval(0.25, 0.25, 0.25)
    said("Paired t interval", cases, worst)
    assert worst < 1e-12


def flips(differences: list[Fraction]) -> float:
    """The sign-flip p by brute force over every sign pattern, in exact (integer) arithmetic."""
    common = math.lcm(*(one.denominator for one in differences))
    values = [abs(int(one * common)) for one in differences]
    observed = abs(sum(int(one * common) for one in differences))
    hits = sum(1 for signs in itertools.product((1, -1), repeat=len(values)) if abs(sum(map(int.__mul__, signs, values))) >= observed)
    return hits / 2 ** len(values)


def flips_counted(numerators: list[int]) -> float:
    """The exact sign-flip p for differences k/n with one n, by counting integer sums (any S)."""
    sums = Counter({0: 1})
    for value in numerators:
        grown: Counter[int] = Counter()
        for total, ways in sums.items():
            grown[total + value] += ways
            grown[total - value] += ways
        sums = grown
    observed = abs(sum(numerators))
    return sum(ways for total, ways in sums.items() if abs(total) >= observed) / 2 ** len(numerators)


def differences(rng: random.Random, count: int, attempts: tuple[int, ...]) -> list[Fraction]:
    """Per-scenario differences of pass rates, with the given numbers of attempts (ties abound)."""
    chosen = []
    for _ in range(count):
        one, two = rng.choice(attempts), rng.choice(attempts)
        chosen.append(Fraction(rng.randint(0, two), two) - Fraction(rng.randint(0, one), one))
    return chosen


def test_sign_flip_matches_brute_force_up_to_10_scenarios() -> None:
    rng = random.Random(117)
    worst, cases = 0.0, 300
    for _ in range(cases):
        exact = differences(rng, rng.randint(1, 10), (2, 3, 5, 7, 10, 20, 50))
        got = Paired(tuple(float(one) for one in exact)).sign_flip()
        worst = max(worst, abs(got - flips(exact)))
    assert Paired(()).sign_flip() == 1.0
    assert Paired((0.0, 0.0)).sign_flip() == 1.0
    said("sign flip, S <= 10, vs brute force", cases, worst)
    assert worst < 1e-12


def test_sign_flip_matches_scipy_permutation_test_up_to_12_scenarios() -> None:
    """Rates with attempts a power of two (sums exact in floats), and continuous values (no ties)."""
    rng = random.Random(118)
    worst, cases = 0.0, 60
    for case in range(cases):
        count = rng.randint(2, 12)
        if case % 2:
            after = np.array([rng.randint(0, 16) / 16 for _ in range(count)])
            before = np.array([rng.randint(0, 16) / 16 for _ in range(count)])
        else:
            after = np.array([rng.random() for _ in range(count)])
            before = np.array([rng.random() for _ in range(count)])
        want = stats.permutation_test(
            (after, before), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples", n_resamples=np.inf, vectorized=True
        ).pvalue
        got = Paired(tuple((after - before).tolist())).sign_flip()
        worst = max(worst, abs(got - min(1.0, want)))
    said("sign flip, S <= 12, vs scipy.stats.permutation_test", cases, worst)
    assert worst < 1e-12


def test_sign_flip_counts_ties_right_at_20_scenarios() -> None:
    """Many sign patterns tie with the observed sum: each must count, whatever the rounding."""
    rng = random.Random(119)
    worst, cases = 0.0, 40
    for _ in range(cases):
        attempts = rng.choice((3, 5, 7, 10, 20, 50))
        numerators = [rng.randint(-attempts, attempts) for _ in range(rng.randint(15, 20))]
        got = Paired(tuple(one / attempts for one in numerators)).sign_flip()
        worst = max(worst, abs(got - flips_counted(numerators)))
    said("sign flip, S 15..20, ties, vs exact counting", cases, worst)
    assert worst < 1e-12


def test_sign_flip_sampled_past_20_scenarios_is_near_the_exact_p() -> None:
    rng = random.Random(120)
    worst, cases = 0.0, 8
    for _ in range(cases):
        attempts = rng.choice((10, 20, 50))
        shift = rng.randint(0, 3)
        numerators = [rng.randint(-attempts // 2, attempts // 2) + shift for _ in range(rng.randint(21, 30))]
        paired = Paired(tuple(one / attempts for one in numerators))
        got = paired.sign_flip()
        assert got == paired.sign_flip()  # a fixed seed
        worst = max(worst, abs(got - flips_counted(numerators)))
    said("sign flip, S 21..30, 10,000 draws, vs exact counting", cases, worst)
    assert worst < 0.02  # four standard errors of 10,000 draws at p = 0.5


def test_detectable_matches_its_formula() -> None:
    rng = random.Random(121)
    worst, cases = 0.0, 300
    for _ in range(cases):
        count = rng.randint(1, 60)
        a = [tally(rng, most=40) for _ in range(count)]
        b = [tally(rng, most=40) for _ in range(count)]
        if rng.random() < 0.2:
            a[0] = Tally(0, 0)  # a scenario not judged in one run: left out
        detectable = Detectable(tuple(a), tuple(b))
        pairs = [(one, two) for one, two in zip(a, b) if one.judged and two.judged]
        if not pairs:
            assert detectable.effect() is None
            continue
        pa = np.array([one.passed / one.judged for one, _ in pairs])
        pb = np.array([two.passed / two.judged for _, two in pairs])
        ka = np.mean([one.judged for one, _ in pairs])
        kb = np.mean([two.judged for _, two in pairs])
        # Each attempt's variance at the rule of succession's rate (passed + 1) / (judged + 2).
        sa = np.array([(one.passed + 1) / (one.judged + 2) for one, _ in pairs])
        sb = np.array([(two.passed + 1) / (two.judged + 2) for _, two in pairs])
        from_a, from_b = np.mean(sa * (1 - sa)) / ka, np.mean(sb * (1 - sb)) / kb
        spread = max(0.0, np.var(pb - pa, ddof=1) - from_a - from_b) if len(pairs) > 1 else 0.0
        variance = spread + from_a + from_b
        effect = detectable.effect()
        assert effect is not None
        worst = max(worst, abs(effect - 2.80 * math.sqrt(variance / len(pairs))))
        delta = rng.uniform(0.01, 0.5)
        scenarios = detectable.scenarios_for(delta)
        assert scenarios == math.ceil(2.80**2 * variance / delta**2 - 1e-9) or scenarios == math.ceil(2.80**2 * variance / delta**2)
        room = delta**2 * len(pairs) / 2.80**2 - spread
        attempts = detectable.attempts_for(delta)
        if room <= 0:
            assert attempts is None
        else:
            noise = np.mean(sa * (1 - sa) + sb * (1 - sb))
            assert attempts == max(1, math.ceil(noise / room)) or abs(noise / room - round(noise / room)) < 1e-9
    said("Detectable (MDE)", cases, worst)
    assert worst < 1e-12
    # Never 0 (issue 26): 3/3, 3/3 against 6/6, 6/6 was "0.0 pts".
    few = Detectable((Tally(3, 3),) * 2, (Tally(6, 6),) * 2).effect()
    assert few is not None and round(few * 100, 1) == 53.0


# --- Cohen's κ (human labels) --------------------------------------------------------------------


def kappa_pairs(rng: random.Random, categories: int) -> list[tuple[int, int]]:
    """Random ratings of two raters who agree more or less often, sometimes from one category."""
    count = rng.randint(2, 120)
    agreeing = rng.random()
    used = rng.choice((categories, categories, 1 if categories > 1 else categories))
    pairs = []
    for _ in range(count):
        first = rng.randrange(used)
        second = first if rng.random() < agreeing else rng.randrange(categories)
        pairs.append((first, second))
    return pairs


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # statsmodels' NaN where κ is undefined
def test_cohen_kappa_matches_statsmodels_and_scikit_learn(full: bool) -> None:
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import cohens_kappa

    rng = random.Random(131)
    worst, cases, undefined = 0.0, 0, 0
    for _ in range(600 if full else 200):  # the full size with --full
        categories = rng.choice((2, 2, 3, 4))
        pairs = kappa_pairs(rng, categories)
        table = [[0] * categories for _ in range(categories)]
        for first, second in pairs:
            table[first][second] += 1
        kappa = CohenKappa(tuple(tuple(row) for row in table))
        observed = np.array(table, float)
        chance = float((observed.sum(1) / observed.sum()) @ (observed.sum(0) / observed.sum()))
        if chance >= 1 - 1e-12:  # both raters used one and the same category: κ is 0/0
            assert kappa.kappa() is None and kappa.interval() is None and "undefined" in kappa.reading()
            undefined += 1
            continue
        got = kappa.kappa()
        interval = kappa.interval()
        assert got is not None
        # One rater with one category: κ is 0 (statsmodels agrees) and its SE 0, so no interval is
        # given and the reading says κ says nothing.
        one_sided = (observed.sum(1) > 0).sum() == 1 or (observed.sum(0) > 0).sum() == 1
        assert kappa.one_sided() == bool(one_sided)
        if one_sided:
            assert interval is None and "says nothing" in kappa.reading() and abs(got) < 1e-12
        else:
            assert interval is not None
        reference = cohens_kappa(observed)
        learned = cohen_kappa_score([one for one, _ in pairs], [two for _, two in pairs], labels=list(range(categories)))
        worst = max(worst, abs(got - reference.kappa), abs(got - learned))
        error = kappa.error()
        assert error is not None
        if reference.var_kappa < 0:  # 0 but for rounding (perfect agreement): statsmodels takes its root, NaN
            assert reference.var_kappa > -1e-12 and error < 1e-6
            continue
        # The error is a square root: a variance of 0 computed as 1e-18 is an error of 1e-9.
        assert error == pytest.approx(reference.std_kappa, abs=1e-7)
        if interval is None:
            continue
        assert interval.low == pytest.approx(max(-1.0, reference.kappa_low), abs=1e-7)
        assert interval.high == pytest.approx(min(1.0, reference.kappa_upp), abs=1e-7)
        cases += 1
    said(f"Cohen's kappa (and {undefined} undefined)", cases, worst)
    assert cases > (350 if full else 100) and undefined > 0
    assert worst < 1e-9


def test_cohen_kappa_of_yes_no_pairs_and_its_edges() -> None:
    # Judge by rows, people by columns: 8 agree held, 1 agree not held, 1 judge held a failure.
    kappa = CohenKappa.of([(True, True)] * 8 + [(False, False)] + [(True, False)])
    assert kappa.table == ((1, 0), (1, 8))
    # p_o = 0.9; rows (not held, held) (0.1, 0.9), columns (0.2, 0.8): p_e = 0.74, κ = 0.16 / 0.26
    assert kappa.kappa() == pytest.approx((0.9 - (0.1 * 0.2 + 0.9 * 0.8)) / (1 - (0.1 * 0.2 + 0.9 * 0.8)))
    assert kappa.reading() == "substantial agreement beyond chance"  # 0.615
    assert CohenKappa.of([]).kappa() is None and CohenKappa.of([]).reading() == "nothing to compare"
    assert CohenKappa.of([(True, True)] * 5).kappa() is None  # one category for both: undefined, not NaN
    assert CohenKappa.of([(True, False), (False, True)]).reading() == "less agreement than chance"
    with pytest.raises(ValueError):
        CohenKappa(((1, 2),))


# --- Agreement between judges: Fleiss' κ against statsmodels ---------------------------------------


def test_fleiss_kappa_matches_statsmodels_on_random_tables() -> None:
    """Fleiss' κ of random tables (2 to 6 raters, 2 to 4 categories, 1 to 60 subjects, often nearly
    unanimous) equals statsmodels' fleiss_kappa; an undefined κ is where statsmodels says nan."""
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    from convy.kappa import FleissKappa

    rng = random.Random(10)
    worst, cases, undefined = 0.0, 0, 0
    for _ in range(2_000):
        raters, categories, subjects = rng.randint(2, 6), rng.randint(2, 4), rng.randint(1, 60)
        lean = rng.random()
        ratings = np.array(
            [[0 if rng.random() < lean else rng.randrange(categories) for _ in range(raters)] for _ in range(subjects)]
        )
        table, _ = aggregate_raters(ratings, n_cat=categories)
        with np.errstate(invalid="ignore", divide="ignore"):
            want = float(fleiss_kappa(table, method="fleiss"))
        got = FleissKappa(tuple(tuple(int(count) for count in row) for row in table)).kappa()
        cases += 1
        if got is None:
            undefined += 1
            assert math.isnan(want), (table, want)
            continue
        assert not math.isnan(want)
        worst = max(worst, abs(got - want))
        assert got == pytest.approx(want, abs=1e-9)
    assert undefined > 0  # the edge was reached
    said("FleissKappa", cases, worst)


def test_fleiss_kappa_edges() -> None:
    """All raters agreeing on both categories gives 1; all in one category is undefined; one rater,
    no subject, and rows of unequal size are refused or undefined, as documented."""
    from convy.kappa import FleissKappa

    assert FleissKappa(((3, 0), (0, 3), (3, 0))).kappa() == pytest.approx(1.0)
    assert FleissKappa(((3, 0), (3, 0))).kappa() is None
    assert FleissKappa(((1, 0), (0, 1))).kappa() is None
    assert FleissKappa(()).kappa() is None
    # Perfect disagreement between two raters on two categories: κ = -1.
    assert FleissKappa(((1, 1), (1, 1))).kappa() == pytest.approx(-1.0)
    with pytest.raises(ValueError):
        FleissKappa(((2, 0), (1, 0)))
    assert FleissKappa.reading(None).startswith("undefined")
    assert FleissKappa.reading(0.9) == "almost perfect agreement"
    assert FleissKappa.reading(0.5) == "moderate agreement"
    assert FleissKappa.reading(-0.1) == "poor agreement"


# --- McNemar (the same dialogues judged twice) -------------------------------------------------


def newcombe_paired(both: int, worse: int, better: int, neither: int) -> tuple[float, float, float]:
    """Newcombe's (1998) method 10 for after − before, written from the paper with statsmodels'
    Wilson intervals: the reference the stdlib version is held to."""
    n = both + worse + better + neither
    before, after = both + worse, both + better
    p1, p2 = before / n, after / n
    l1, u1 = proportion_confint(before, n, alpha=0.05, method="wilson")
    l2, u2 = proportion_confint(after, n, alpha=0.05, method="wilson")
    product = before * (n - before) * after * (n - after)
    a = both * neither - worse * better
    psi = 0.0 if product == 0 else (a - n / 2) / np.sqrt(product) if a > n / 2 else 0.0 if a >= 0 else a / np.sqrt(product)
    # Newcombe's D = p1 − p2 and its limits, then turned round to p2 − p1.
    low = (p1 - p2) - np.sqrt((p1 - l1) ** 2 - 2 * psi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    high = (p1 - p2) + np.sqrt((p2 - l2) ** 2 - 2 * psi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2)
    return p2 - p1, -high, -low


def test_mcnemar_exact_p_matches_statsmodels_and_its_mid_p_scipy_on_random_tables(full: bool) -> None:
    """On 800 random paired tables (3,000 with --full) — small ones, lopsided ones, none discordant, and thousands of
    discordant attempts — the exact two-sided p equals statsmodels' ``mcnemar(exact=True)`` and the
    mid-p equals scipy's binomial computed by hand; the direction follows the larger discordant count."""
    from statsmodels.stats.contingency_tables import mcnemar

    from convy.significance import McNemar

    chooser = random.Random(7)
    worst = 0.0
    cases = 0
    for case in range(3_000 if full else 800):
        top = chooser.choice((3, 12, 60, 400, 5_000))
        both, worse, better, neither = (chooser.randint(0, top) for _ in range(4))
        if case % 10 == 0:
            better = chooser.randint(0, 2)  # lopsided: far in the tail
        if case % 37 == 0:
            worse = better = 0
        test = McNemar(both, worse, better, neither)
        want = mcnemar([[both, worse], [better, neither]], exact=True).pvalue
        got = test.p()
        assert got == pytest.approx(want, rel=1e-9, abs=1e-300), (both, worse, better, neither)
        worst = max(worst, abs(got - want) / max(want, 1e-300))
        n, k = worse + better, min(worse, better)
        mid = 1.0 if n == 0 else min(1.0, 2 * stats.binom.cdf(k, n, 0.5) - stats.binom.pmf(k, n, 0.5))
        assert test.mid_p() == pytest.approx(mid, rel=1e-9, abs=1e-300)
        assert test.mid_p() <= got
        tested = test.test()
        assert tested.p == got
        assert tested.direction == ("better" if better > worse else "worse" if worse > better else "same")
        assert tested.method == ("none" if n == 0 else "mcnemar")
        cases += 1
    said("McNemar exact p (relative)", cases, worst)


def test_mcnemar_paired_interval_matches_newcombe_on_random_tables() -> None:
    """On 3,000 random paired tables the interval of after − before equals Newcombe's method 10 as
    written from the paper on statsmodels' Wilson intervals (every branch of ψ reached), holds its
    estimate, stays within [−1, 1], and turns round exactly when before and after swap."""
    from convy.significance import McNemar

    chooser = random.Random(11)
    worst = 0.0
    branches: Counter[str] = Counter()
    for case in range(3_000):
        top = chooser.choice((2, 8, 40, 300))
        both, worse, better, neither = (chooser.randint(0, top) for _ in range(4))
        if case % 5 == 0:
            worse, better = chooser.randint(0, 2), chooser.randint(0, 2)  # mostly agreeing: ψ large
        if both + worse + better + neither == 0:
            assert McNemar(0, 0, 0, 0).interval() is None
            continue
        n = both + worse + better + neither
        a = both * neither - worse * better
        branches["corrected" if a > n / 2 else "zero" if a >= 0 else "negative"] += 1
        got = McNemar(both, worse, better, neither).interval()
        assert got is not None
        estimate, low, high = newcombe_paired(both, worse, better, neither)
        assert got.estimate == pytest.approx((better - worse) / n, abs=1e-12)
        assert (got.estimate, got.low, got.high) == pytest.approx((estimate, max(-1.0, low), min(1.0, high)), abs=1e-9)
        worst = max(worst, abs(got.low - max(-1.0, low)), abs(got.high - min(1.0, high)))
        assert -1.0 <= got.low <= got.estimate <= got.high <= 1.0
        swapped = McNemar(both, better, worse, neither).interval()
        assert swapped is not None
        assert (swapped.low, swapped.high) == pytest.approx((-got.high, -got.low), abs=1e-12)
    assert min(branches.values()) > 50 and len(branches) == 3, branches
    said("McNemar Newcombe interval", sum(branches.values()), worst)


def test_mcnemar_edges() -> None:
    """No discordant attempt: p 1, direction same, an interval around 0 that still has width; all
    16 paired attempts passing before and 4 failing after: p = 2·(½)⁴ = 0.125; negative counts refused."""
    from convy.significance import McNemar

    none = McNemar(10, 0, 0, 6)
    assert (none.p(), none.mid_p(), none.test().direction) == (1.0, 1.0, "same")
    flat = none.interval()
    assert flat is not None and flat.estimate == 0.0 and flat.low < 0 < flat.high
    four = McNemar(12, 4, 0, 0)
    assert four.p() == pytest.approx(0.125)
    assert four.mid_p() == pytest.approx(0.125 - 1 / 16)
    assert four.test().direction == "worse"
    interval = four.interval()
    assert interval is not None and interval.estimate == pytest.approx(-0.25) and interval.high < 0
    with pytest.raises(ValueError):
        McNemar(1, -1, 0, 0)


# --- issue 26: the headline interval, "same" and "ambiguous" -------------------------------------


def test_exact_matches_scipy_beta_and_statsmodels_clopper_pearson() -> None:
    """Clopper–Pearson: whole counts against statsmodels' ``proportion_confint(method="beta")``,
    and counts that are not whole (the headline's effective attempts) against scipy's Beta."""
    rng = random.Random(2601)
    worst, cases = 0.0, 400
    for _ in range(cases):
        judged = rng.randint(1, 400)
        passed = rng.choice((0, judged, rng.randint(0, judged)))
        got = Exact(passed, judged).interval()
        assert got is not None
        low, high = proportion_confint(passed, judged, alpha=0.05, method="beta")
        low, high = (0.0 if math.isnan(low) else low), (1.0 if math.isnan(high) else high)
        worst = max(worst, abs(got.low - low), abs(got.high - high))
        n = rng.uniform(1.5, 300.0)
        x = rng.choice((0.0, n, rng.uniform(0, n)))
        got = Exact(x, n).interval()
        assert got is not None
        want_low = 0.0 if x == 0 else stats.beta.ppf(0.025, x, n - x + 1)
        want_high = 1.0 if x == n else stats.beta.ppf(0.975, x + 1, n - x)
        worst = max(worst, abs(got.low - want_low), abs(got.high - want_high))
    said("Exact vs statsmodels beta / scipy beta", cases, worst)
    assert worst < 1e-9


def test_difference_matches_statsmodels_newcombe() -> None:
    from statsmodels.stats.proportion import confint_proportions_2indep

    rng = random.Random(2602)
    worst, cases = 0.0, 400
    for _ in range(cases):
        before, after = tally(rng, 60), tally(rng, 60)
        got = Difference(before, after).interval()
        assert got is not None
        low, high = confint_proportions_2indep(after.passed, after.judged, before.passed, before.judged, method="newcomb")
        worst = max(worst, abs(got.estimate - (after.passed / after.judged - before.passed / before.judged)), abs(got.low - max(-1.0, low)), abs(got.high - min(1.0, high)))
    said("Difference vs statsmodels newcomb", cases, worst)
    assert worst < 1e-9
    three = Difference(Tally(3, 3), Tally(0, 3)).interval()
    assert three is not None and three.low == -1.0 and three.high > -0.3  # 3/3 to 0/3 leaves a change of only 21 points open


def test_binomial_tail_matches_scipy() -> None:
    rng = random.Random(2603)
    worst, cases = 0.0, 400
    for _ in range(cases):
        n = rng.randint(1, 500)
        k = rng.randint(0, n + 1)
        p = rng.choice((0.05, 0.5, rng.random()))
        got = Binomial(n, p).above(k)
        want = 1.0 if k <= 0 else stats.binom.sf(k - 1, n, p)
        worst = max(worst, abs(got - want))
    said("Binomial.above vs scipy binom.sf", cases, worst)
    assert worst < 1e-10


def test_the_expanded_bootstrap_is_found_exactly_for_few_scenarios() -> None:
    """Hesterberg's expanded percentile: with 2–4 scenarios it reaches the smallest and largest
    mean, and the enumerated percentiles are those 200,000 draws give."""
    few = Headline((0.2, 0.5, 0.9)).expanded()
    assert (round(few.low, 12), round(few.high, 12)) == (0.2, 0.9)
    rates = (0.1, 0.3, 0.5, 0.7, 0.9)
    plain = Headline(rates)._enumerated(0.025)
    drawn = Headline(rates, draws=200_000)._percentiles(0.025)
    assert abs(plain.low - drawn.low) < 1e-9 and abs(plain.high - drawn.high) < 1e-9
    assert Headline(rates).expanded().low < plain.low


def test_the_headline_holds_the_attempts_noise_and_is_never_zero_wide() -> None:
    """Before issue 26, 15 of 15 passed printed [100.0%, 100.0%] and 30 scenarios at 3 of 5 [60.0%, 60.0%]."""
    five = Headline((1.0,) * 5, (Tally(3, 3),) * 5).interval()
    assert five is not None and (round(five.low, 3), five.high) == (0.782, 1.0)
    thirty = Headline((0.6,) * 30, (Tally(3, 5),) * 30).interval()
    assert thirty is not None and (round(thirty.low, 3), round(thirty.high, 3)) == (0.517, 0.679)
