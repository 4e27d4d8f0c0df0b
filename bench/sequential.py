"""Benchmark of the comparison decided while the candidate plays (``convy.sequential``): simulated
runs, seeded, against the fixed design that convy's compare runs today.

Each simulated run: S scenarios, each with a true base pass rate drawn from [0.6, 0.95]; the base
run played ``base`` attempts of each; the candidate's true rates are the base's plus the effect
(cut to [0, 1]). The candidate plays round after round (every scenario with attempts left gets
its next block, ``Watch.asks``), with a look after every round, until the watch is ``Decided`` or
``Futile``, or every scenario played its plan of ``--most`` attempts.

Printed per row (effect x scenarios x base size):

- alarm / power: the share of runs decided (in the right direction for an effect; at effect 0,
  the false-alarm rate, with its Wilson 95% interval and whether its upper end stays under α);
- naive: at effect 0, the false-alarm rate of testing again after every round with the fixed
  design's test (``significance.Stratified`` at 0.05) over the whole plan (half as many runs): what the
  sequential rule protects against;
- mean / median: the candidate's attempts per scenario used;
- fixed power @most: the fixed design's power (the exact stratified test, simulated on the same
  kind of runs) with every scenario played ``--most`` times; fixed power @mean: the same at the
  sequential rule's mean attempts;
- fixed n: the attempts per scenario the fixed design needs for the sequential rule's power (the
  normal approximation of the stratified test on the true rates; "never" when the base alone is
  too noisy for that power), and saved = 1 − mean / fixed n (negative: the sequential rule spends
  more for its power).

    .venv/bin/python bench/sequential.py            # about a minute on 2 cores
    .venv/bin/python bench/sequential.py --full     # 4000 runs a row, more sizes
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from multiprocessing import Pool
from pathlib import Path
from statistics import NormalDist

import convy
from convy.sequential import Decided, Futile, Sequential
from convy.significance import Stratified, Stratum
from convy.stats import Tally, Wilson

ALPHA = 0.05


class Case:
    """One row: an effect, a number of scenarios, a base size, a plan, a number of runs, a seed."""

    def __init__(self, effect: float, scenarios: int, base: int, most: int, runs: int, seed: int, null: bool) -> None:
        self.effect, self.scenarios, self.base, self.most, self.runs, self.seed, self.null = (
            effect,
            scenarios,
            base,
            most,
            runs,
            seed,
            null,
        )

    def draw(self, chooser: random.Random) -> tuple[list[float], list[float], dict[str, tuple[bool, ...]]]:
        rates = [chooser.uniform(0.6, 0.95) for _ in range(self.scenarios)]
        after = [min(1.0, max(0.0, rate + self.effect)) for rate in rates]
        base = {f"s{index}": tuple(chooser.random() < rate for _ in range(self.base)) for index, rate in enumerate(rates)}
        return rates, after, base

    def sequential(self, chooser: random.Random) -> tuple[bool, int]:
        """(decided the right way, the candidate's attempts used), a look after every round."""
        _, after, base = self.draw(chooser)
        watch = Sequential(ALPHA, most=self.most).started(base)
        while asks := watch.asks():
            watch = watch.played({ask.scenario: self.played(chooser, after, ask.scenario, ask.attempts) for ask in asks})
            verdict = watch.verdict()
            if isinstance(verdict, Decided):
                return self.effect == 0 or (verdict.direction == "worse") == (self.effect < 0), watch.attempts()
            if isinstance(verdict, Futile):
                break
        return False, watch.attempts()

    def naive(self, chooser: random.Random) -> bool:
        """The fixed design's test (exact, stratified, at α) again after every round of the same
        rounds, to the end of the plan: whether it ever says "real"."""
        _, after, base = self.draw(chooser)
        watch = Sequential(ALPHA, most=self.most).started(base)
        totals = {scenario: Tally(0, 0) for scenario in base}
        while asks := watch.asks():
            tallies = {ask.scenario: self.played(chooser, after, ask.scenario, ask.attempts) for ask in asks}
            watch = watch.played(tallies)
            for scenario, tally in tallies.items():
                totals[scenario] = Tally(totals[scenario].passed + tally.passed, totals[scenario].judged + tally.judged)
            strata = tuple(Stratum(sum(base[s]), len(base[s]), tally.passed, tally.judged) for s, tally in totals.items())
            if Stratified(strata).test().p < ALPHA:
                return True
        return False

    def played(self, chooser: random.Random, after: list[float], scenario: str, attempts: int) -> Tally:
        rate = after[int(scenario[1:])]
        return Tally(sum(chooser.random() < rate for _ in range(attempts)), attempts)

    def fixed(self, chooser: random.Random, attempts: int) -> bool:
        """The fixed design: every scenario played ``attempts`` times, the exact stratified test."""
        _, after, base = self.draw(chooser)
        strata = []
        for index, outcomes in enumerate(base.values()):
            passed = sum(chooser.random() < after[index] for _ in range(attempts))
            strata.append(Stratum(sum(outcomes), len(outcomes), passed, attempts))
        tested = Stratified(tuple(strata)).test()
        return tested.p < ALPHA and (self.effect == 0 or (tested.direction == "worse") == (self.effect < 0))

    def needed(self, power: float) -> float | None:
        """The fixed design's attempts per scenario for ``power`` (normal approximation, the rates
        averaged over the draw of scenarios): None when no number reaches it."""
        if self.effect == 0 or power <= ALPHA:
            return None
        chooser = random.Random(self.seed + 1)
        draws = [chooser.uniform(0.6, 0.95) for _ in range(2000)]
        before = statistics.fmean(rate * (1 - rate) for rate in draws)
        after = statistics.fmean(min(1, max(0, r + self.effect)) * (1 - min(1, max(0, r + self.effect))) for r in draws)
        shift = statistics.fmean(min(1, max(0, r + self.effect)) - r for r in draws)
        z = NormalDist().inv_cdf(1 - ALPHA / 2) + NormalDist().inv_cdf(min(power, 0.999))
        # Var of the mean difference over S scenarios: (before/base + after/n) / S
        room = (shift / z) ** 2 * self.scenarios - before / self.base
        if room <= 0:
            return None
        return after / room


class Row:
    """One row's figures."""

    def __init__(self, case: Case, results: list[tuple[bool, int]], naive: list[bool], fixed_most: float, fixed_mean: float) -> None:
        self.case = case
        decided = sum(1 for one in results if one[0])
        self.rate = decided / len(results)
        interval = Wilson(Tally(decided, len(results))).interval()
        self.low, self.high = (interval.low, interval.high) if interval else (0.0, 0.0)
        self.naive = sum(naive) / len(naive) if naive else None
        attempts = [one[1] / case.scenarios for one in results]
        self.mean, self.median = statistics.fmean(attempts), statistics.median(attempts)
        self.fixed_most, self.fixed_mean = fixed_most, fixed_mean
        self.needed = case.needed(self.rate)

    def line(self) -> str:
        effect = self.case.effect
        naive = "" if self.naive is None else f"{self.naive:.3f}"
        held = (" ≤α" if self.high <= ALPHA else " ?") if effect == 0 else "  "
        if self.needed is not None:
            fixed_n, saved = f"{self.needed:.1f}", f"{1 - self.mean / self.needed:+.0%}"
        else:
            fixed_n, saved = ("" if effect == 0 else "never" if self.rate > ALPHA else "—"), ""
        return (
            f"{effect * 100:>+6.0f}p {self.case.scenarios:>3} {self.case.base:>4} | {self.rate:>8.3f}{held} "
            f"[{self.low:.3f}, {self.high:.3f}] {naive:>6} | {self.mean:>5.1f} {self.median:>6.1f} | "
            f"{self.fixed_most:>10.3f} {self.fixed_mean:>10.3f} | {fixed_n:>7} {saved:>6}"
        )


def play(case: Case) -> Row:
    chooser = random.Random(case.seed)
    results = [case.sequential(chooser) for _ in range(case.runs)]
    naive = [case.naive(chooser) for _ in range(case.runs // 2)] if case.null else []
    mean = statistics.fmean(one[1] / case.scenarios for one in results)
    fixed_most = sum(case.fixed(chooser, case.most) for _ in range(case.runs)) / case.runs
    fixed_mean = sum(case.fixed(chooser, max(1, round(mean))) for _ in range(case.runs)) / case.runs
    return Row(case, results, naive, fixed_most, fixed_mean)


def header() -> str:
    root = Path(convy.__file__).resolve().parents[2]
    commit = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%h %s"], capture_output=True, text=True).stdout.strip()
    changed = subprocess.run(["git", "-C", str(root), "status", "--short"], capture_output=True, text=True).stdout.split()
    return (
        f"python {platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; "
        f"convy at {root} ({commit[:60]}{'; changed: ' + ' '.join(changed[1::2]) if changed else ''})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="4000 runs a row and a larger base")
    parser.add_argument("--runs", type=int, help="runs a row (default 400, --full 4000)")
    parser.add_argument("--most", type=int, default=50, help="the candidate's plan: attempts per scenario at most")
    parser.add_argument("--seed", type=int, default=20_250_113)
    parser.add_argument("--workers", type=int, default=2)
    arguments = parser.parse_args()
    runs = arguments.runs or (4000 if arguments.full else 400)
    bases = (20, 50, 100) if arguments.full else (20, 50)
    effects = (0.0, -0.05, -0.10, -0.20)
    cases = [
        Case(effect, scenarios, base, arguments.most, runs, arguments.seed + 1000 * index, null=effect == 0)
        for index, (effect, scenarios, base) in enumerate(
            (effect, scenarios, base) for scenarios in (1, 5, 20) for base in bases for effect in effects
        )
    ]
    print(header())
    print(f"{runs} runs a row, α = {ALPHA}, plan {arguments.most} attempts per scenario, base rates drawn in [0.6, 0.95]")
    start = time.perf_counter()
    with Pool(arguments.workers) as pool:
        rows = pool.map(play, cases)
    print(
        f"{'effect':>7} {'S':>3} {'base':>4} | {'alarm/power':>11} {'95% interval':>15} {'naive':>6} | "
        f"{'mean':>5} {'median':>6} | {'fixed@most':>10} {'fixed@mean':>10} | {'fixed n':>7} {'saved':>6}"
    )
    for row in rows:
        print(row.line())
    print(f"{time.perf_counter() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
