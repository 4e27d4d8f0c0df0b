"""Benchmark of convy's statistics: the comparison's tests at 200 scenarios x 50 attempts, and a
whole comparison page's view records, each timed beside a baseline measured here, at the same time.

Cases (``--scenarios`` S, default 200, ``--attempts`` n, default 50, ``--seeds`` random suites):

- ``stratified``: ``Stratified(...).test()``, the exact stratified test over S scenarios of n
  attempts in each run (random rates, the candidate a little better). Baselines: statsmodels'
  ``StratifiedTable(...).test_null_odds(correction=True)`` (the CMH χ², what convy falls back to)
  and scipy's ``fisher_exact`` over the same S scenarios one by one.
- ``fisher``: what the per-scenario table costs: convy's ``Fisher`` over the S scenarios and
  ``Adjusted`` (BH), against scipy's ``fisher_exact`` and statsmodels' ``multipletests``.
- ``sign flip``: ``Paired(...).sign_flip()`` exact at 20 scenarios (every one of the 2^20 sign
  patterns), against numpy summing all 2^20 patterns at once (scipy's exact
  ``permutation_test(permutation_type="samples")`` gives the same p but takes about 9 s, so it is
  run once, for the p only, with ``--scipy-exact``); and at S scenarios (10,000 random sign
  patterns, what a 200-scenario comparison runs) against scipy's ``permutation_test`` with 9,999
  resamples.
- ``comparison``: ``Comparison(base, candidate).view()`` of two runs of S x n attempts built in
  memory (``Read`` records of ``Outcome``s with 3 turns and 2 ``check:`` claims each, about 1% not
  judged), against the baseline of the same run-level numbers computed with scipy and statsmodels
  from the same outcomes (tallies counted once, CMH, Fisher per scenario, BH, the t interval of
  the paired differences). Shown below it: what its parts take (``Summary(run).view()`` is the
  big one). ``--rate`` sets the base run's mean pass rate: past 0.9 the headline interval is a
  10,000-draw bootstrap, computed again each time a ``Summary`` gives its rate.

Every time is the best of ``--repeat`` runs (default 3), after one warm-up run. Ratios are
convy's time over the baseline's: read those rather than the seconds, which depend on the machine
(the header gives the load average and the convy imported).

    .venv/bin/python bench/stats.py
    .venv/bin/python bench/stats.py --rate 0.95              # the bootstrap headline
    .venv/bin/python bench/stats.py --only comparison --profile | head -60
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import platform
import pstats
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from scipy import stats
from statsmodels.stats.contingency_tables import StratifiedTable
from statsmodels.stats.multitest import multipletests

import convy
from convy.agent import Answer, Usage
from convy.comparison import Comparison
from convy.judge import Claim, NoVerdict, Verdict
from convy.outcome import Outcome
from convy.records import Complete, Limits, RunFile, RunSpec
from convy.report import Summary
from convy.runs import Read
from convy.scenario import Scenario
from convy.significance import Adjusted, Fisher, Paired, Stratified, Stratum
from convy.transcript import Transcript, Turn

CASES = ("stratified", "fisher", "sign flip", "comparison")


def best(repeat: int, work: Callable[[], Any]) -> float:
    """The best time of ``repeat`` runs of ``work``, after one run to warm up."""
    work()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def rates(rng: random.Random, scenarios: int, mean: float) -> list[float]:
    """Scenario pass rates spread around ``mean`` (a beta law), so some always pass and some never."""
    strength = 2.0
    return [rng.betavariate(mean * strength, (1 - mean) * strength) for _ in range(scenarios)]


def strata(rng: random.Random, scenarios: int, attempts: int, mean: float = 0.5, shift: float = 0.02) -> list[Stratum]:
    made = []
    for rate in rates(rng, scenarios, mean):
        after = min(1.0, max(0.0, rate + rng.uniform(-0.05, 0.05) + shift))
        made.append(
            Stratum(
                sum(rng.random() < rate for _ in range(attempts)),
                attempts,
                sum(rng.random() < after for _ in range(attempts)),
                attempts,
            )
        )
    return made


def tables(made: list[Stratum]) -> np.ndarray:
    """2 x 2 x K tables, as statsmodels wants them: rows B then A, columns passed then failed."""
    return np.array(
        [[[one.passed_b, one.judged_b - one.passed_b], [one.passed_a, one.judged_a - one.passed_a]] for one in made if one.informative()],
        dtype=float,
    ).transpose(1, 2, 0)


# --- two runs in memory --------------------------------------------------------------------------


class Suite(msgspec.Struct, frozen=True):
    scenarios: int
    attempts: int
    rate: float
    seed: int

    def specs(self) -> tuple[Scenario, ...]:
        return tuple(
            msgspec.convert(
                {
                    "id": f"shop/case-{number:04d}",
                    "script": ["Hello, I would like to order a lamp.", "Friday, please.", "Thanks."],
                    "judge": [{"check": {"said": "order"}}, {"check": {"called": "lookup"}}],
                },
                Scenario,
            )
            for number in range(self.scenarios)
        )

    def runs(self) -> tuple[Read, Read]:
        rng = random.Random(self.seed)
        specs = self.specs()
        before = rates(rng, self.scenarios, self.rate)
        after = [min(1.0, max(0.0, rate + rng.uniform(-0.05, 0.07))) for rate in before]
        return self.read("base", specs, before, rng), self.read("candidate", specs, after, rng)

    def read(self, name: str, specs: tuple[Scenario, ...], chances: list[float], rng: random.Random) -> Read:
        spec = RunSpec(id=name, agent="fake", scenarios=specs, attempts=self.attempts, limits=Limits(max_turns=3))
        outcomes = tuple(
            self.outcome(scenario.id, attempt, chance, rng)
            for scenario, chance in zip(specs, chances, strict=True)
            for attempt in range(1, self.attempts + 1)
        )
        file = RunFile(spec, Complete(started="2025-01-01T10:00:00+00:00", ended="2025-01-01T11:00:00+00:00"))
        return Read(Path("/nonexistent") / name, file, outcomes, 0, False)

    def outcome(self, scenario: str, attempt: int, chance: float, rng: random.Random) -> Outcome:
        answer = Answer("Your order for the lamp is noted.", Usage(input=120, output=14))
        turns = tuple(
            Turn(message, answer, True, 0.01 * number, 0.0, Usage(), 0.01 * number, 0.005)
            for number, message in enumerate(("Hello, I would like to order a lamp.", "Friday, please.", "Thanks."))
        )
        if rng.random() < 0.01:
            result: Any = NoVerdict("judge", "the judge model failed")
        else:
            passed = rng.random() < chance
            failing = rng.randrange(2)
            result = Verdict(
                tuple(
                    Claim(text, passed or which != failing, "checked", by="code")
                    for which, text in enumerate(("said order", "called lookup"))
                )
            )
        return Outcome(scenario, attempt, "2025-01-01T10:00:00+00:00", 0.05, Transcript(turns), "finished", result)


def baseline_comparison(base: Read, candidate: Read) -> dict[str, Any]:
    """The comparison's numbers by scipy and statsmodels: tallies counted once from the outcomes."""

    def tallies(run: Read) -> dict[str, tuple[int, int]]:
        counted: dict[str, list[int]] = {}
        for outcome in run.outcomes:
            match outcome.result:
                case Verdict(claims=claims):
                    one = counted.setdefault(outcome.scenario, [0, 0])
                    one[0] += all(claim.held for claim in claims)
                    one[1] += 1
        return {key: (passed, judged) for key, (passed, judged) in counted.items()}

    before, after = tallies(base), tallies(candidate)
    common = [key for key in after if key in before]
    made = [Stratum(*before[key], *after[key]) for key in common]
    cmh = StratifiedTable(tables(made)).test_null_odds(correction=True).pvalue
    fisher = [
        stats.fisher_exact([[one.passed_b, one.judged_b - one.passed_b], [one.passed_a, one.judged_a - one.passed_a]]).pvalue for one in made
    ]
    adjusted = multipletests(fisher, method="fdr_bh")[1]
    differences = np.array([one.passed_b / one.judged_b - one.passed_a / one.judged_a for one in made])
    half = stats.t.ppf(0.975, len(differences) - 1) * stats.sem(differences)
    return {"cmh": cmh, "adjusted": adjusted, "delta": (differences.mean() - half, differences.mean() + half)}


# --- the cases -----------------------------------------------------------------------------------


def row(name: str, seconds: float, baseline: str, base_seconds: float) -> str:
    return f"  {name:<44} {seconds * 1000:10.2f} ms   {baseline:<40} {base_seconds * 1000:10.2f} ms   x{seconds / base_seconds:8.2f}"


def stratified_case(options: argparse.Namespace) -> None:
    print(f"stratified exact test, {options.scenarios} scenarios x {options.attempts} attempts per run:")
    for seed in range(1, options.seeds + 1):
        made = strata(random.Random(seed), options.scenarios, options.attempts)
        tested = Stratified(tuple(made)).test()
        ours = best(options.repeat, lambda: Stratified(tuple(made)).test())
        cmh = best(options.repeat, lambda: StratifiedTable(tables(made)).test_null_odds(correction=True))
        fisher = best(
            options.repeat,
            lambda: [
                stats.fisher_exact([[one.passed_b, one.judged_b - one.passed_b], [one.passed_a, one.judged_a - one.passed_a]]) for one in made
            ],
        )
        reference = StratifiedTable(tables(made)).test_null_odds(correction=True).pvalue
        print(f" seed {seed}: {tested.method} p = {tested.p:.4g} (statsmodels CMH p = {reference:.4g}), {tested.direction}")
        print(row("convy Stratified.test()", ours, "statsmodels StratifiedTable CMH", cmh))
        print(row("convy Stratified.test()", ours, f"scipy fisher_exact x {len(made)}", fisher))


def fisher_case(options: argparse.Namespace) -> None:
    made = strata(random.Random(1), options.scenarios, options.attempts)
    print(f"per-scenario Fisher + BH, {len(made)} scenarios x {options.attempts} attempts:")

    def ours() -> None:
        Adjusted(tuple(Fisher(one).test().p for one in made)).values()

    def theirs() -> None:
        p = [stats.fisher_exact([[one.passed_b, one.judged_b - one.passed_b], [one.passed_a, one.judged_a - one.passed_a]]).pvalue for one in made]
        multipletests(p, method="fdr_bh")

    print(row("convy Fisher x S + Adjusted", best(options.repeat, ours), "scipy fisher_exact x S + multipletests", best(options.repeat, theirs)))


def sign_flip_case(options: argparse.Namespace) -> None:
    rng = random.Random(7)
    print("sign-flip test across scenarios:")
    for count, exact in ((20, True), (options.scenarios, False)):
        if exact and count > 20:
            continue
        after = np.array([rng.randint(0, options.attempts) / options.attempts for _ in range(count)])
        before = np.array([rng.randint(0, options.attempts) / options.attempts for _ in range(count)])
        differences = after - before
        paired = Paired(tuple(differences.tolist()))

        def scipy_test(resamples: float) -> Any:
            return stats.permutation_test(
                (after, before),
                lambda x, y, axis: np.mean(x - y, axis=axis),
                permutation_type="samples",
                n_resamples=resamples,
                vectorized=True,
                batch=2**16,
                rng=np.random.default_rng(1),
            )

        def every_pattern() -> float:
            signs = 1 - 2 * ((np.arange(2**count)[:, None] >> np.arange(count)) & 1).astype(np.int8)
            sums = signs @ np.abs(differences)
            return float(np.mean(np.abs(sums) >= abs(differences.sum()) - 1e-12))

        if exact:
            said = f"numpy p = {every_pattern():.6g}"
            if options.scipy_exact:
                said += f", scipy p = {scipy_test(np.inf).pvalue:.6g}"
            print(f" S = {count} (exact, 2^20 patterns): convy p = {paired.sign_flip():.6g}, {said}")
            print(row(f"convy Paired.sign_flip() at S = {count}", best(options.repeat, paired.sign_flip), "numpy, all 2^20 patterns", best(options.repeat, every_pattern)))
        else:
            print(f" S = {count} (10,000 draws): convy p = {paired.sign_flip():.6g}, scipy p = {scipy_test(9_999).pvalue:.6g}")
            print(
                row(
                    f"convy Paired.sign_flip() at S = {count}",
                    best(options.repeat, paired.sign_flip),
                    "scipy permutation_test, 9,999",
                    best(options.repeat, lambda: scipy_test(9_999)),
                )
            )


def comparison_case(options: argparse.Namespace) -> None:
    suite = Suite(options.scenarios, options.attempts, options.rate, 1)
    base, candidate = suite.runs()
    comparison = Comparison(base, candidate)
    view = comparison.view()
    reference = baseline_comparison(base, candidate)
    print(
        f"Comparison.view(), two runs of {options.scenarios} scenarios x {options.attempts} attempts in memory"
        f" (base mean rate about {options.rate:g}, headline by {Summary(base).headline().method()}):"
    )
    print(
        f" verdict {view.verdict}, {view.method} p = {view.p:.4g} (statsmodels CMH p = {reference['cmh']:.4g}),"
        f" delta {view.delta.estimate if view.delta else float('nan'):+.4f}"
        f" [{view.delta.low if view.delta else float('nan'):+.4f}, {view.delta.high if view.delta else float('nan'):+.4f}]"
        f" (scipy [{reference['delta'][0]:+.4f}, {reference['delta'][1]:+.4f}]), sign flip p = {view.sign_flip_p:.4g}"
    )
    whole = best(options.repeat, comparison.view)
    theirs = best(options.repeat, lambda: baseline_comparison(base, candidate))
    print(row("convy Comparison(...).view()", whole, "tallies + scipy/statsmodels tests", theirs))
    summary = Summary(base)
    strata_made = tuple(Stratum(a.passed, a.judged, b.passed, b.judged) for _, a, b in comparison.strata())
    differences = tuple(b.passed / b.judged - a.passed / a.judged for _, a, b in comparison.strata() if a.judged and b.judged)
    parts = [
        ("Summary(run).tallies(), one run", lambda: summary.tallies()),
        ("Summary(run).rate(), one run", lambda: summary.rate()),
        ("Summary(run).view(), one run", lambda: summary.view()),
        ("Comparison.strata() (tallies of both runs)", comparison.strata),
        ("Stratified(...).test()", lambda: Stratified(strata_made).test()),
        ("Fisher x S + Adjusted", lambda: Adjusted(tuple(Fisher(one).test().p for one in strata_made)).values()),
        ("Paired(...).sign_flip()", lambda: Paired(differences).sign_flip()),
        ("Comparison._side(base)", lambda: comparison._side(base)),
        ("Comparison._flips() (claim rows of both runs)", comparison._flips),
        ("Comparison._pairs()", comparison._pairs),
    ]
    print(" its parts (each timed alone):")
    for name, work in parts:
        print(f"  {name:<44} {best(options.repeat, work) * 1000:10.2f} ms")


def profiled(options: argparse.Namespace) -> None:
    base, candidate = Suite(options.scenarios, options.attempts, options.rate, 1).runs()
    comparison = Comparison(base, candidate)
    comparison.view()
    profile = cProfile.Profile()
    profile.enable()
    comparison.view()
    profile.disable()
    shown = io.StringIO()
    pstats.Stats(profile, stream=shown).sort_stats("cumulative").print_stats(45)
    print(shown.getvalue())


def tree() -> str:
    """The commit convy's source is at, and its changed files, when it is a git checkout."""
    source = Path(convy.__file__).parent
    try:
        commit = subprocess.run(["git", "-C", str(source), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        changed = subprocess.run(["git", "-C", str(source), "status", "--porcelain", "--", "."], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ""
    files = [line[3:] for line in changed.split("\n") if line.strip()]
    return f", commit {commit}" + (f", changed: {' '.join(files)}" if files else ", unchanged")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", type=int, default=200)
    parser.add_argument("--attempts", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=3, help="random suites for the stratified test")
    parser.add_argument("--rate", type=float, default=0.5, help="the base run's mean pass rate in the comparison")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--profile", action="store_true", help="profile one Comparison.view() instead")
    parser.add_argument("--scipy-exact", action="store_true", help="also scipy's exact permutation test at S = 20 (about 9 s)")
    options = parser.parse_args()
    if options.profile:
        profiled(options)
        return 0
    print(f"convy {convy.__version__} statistics benchmark: {options.scenarios} scenarios x {options.attempts} attempts per run")
    print(f"Python {platform.python_version()} on {platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    print(f"convy from {Path(convy.__file__).parent}{tree()}")
    print(f"best of {options.repeat} after a warm-up; ratio = convy's time / the baseline's\n")
    for case, run in (("stratified", stratified_case), ("fisher", fisher_case), ("sign flip", sign_flip_case), ("comparison", comparison_case)):
        if case in options.only:
            run(options)
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
