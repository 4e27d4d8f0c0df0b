"""How often the headline's 95% interval holds the true pass rate, by a seeded simulation.

For 2–5 scenarios × 3–10 attempts each × pass rates 0.5–1 (every scenario at one rate, or
"mixed": rates spread evenly from 0.5 to 1 over the scenarios), runs are drawn and the share of
their headline intervals (``stats.Headline``) that hold the mean of the scenarios' true rates is
counted. Every cell must hold at least ``FLOOR``.

The suite plays 300 runs a cell; ``CONVY_AUDIT_SLOW=1`` plays 3,000. As a script it prints the
table: ``PYTHONPATH=src .venv/bin/python tests/audits/test_coverage.py [runs a cell]``. It reads
``Headline`` only through ``rates`` and ``tallies`` and ``interval()``, so it runs on an older
convy as well (to show what it did before).
"""

from __future__ import annotations

import os
import random
import sys

import pytest

from convy.stats import Headline, Tally

FLOOR = 0.93
SCENARIOS = (2, 3, 4, 5)
ATTEMPTS = tuple(range(3, 11))
RATES: tuple[float | str, ...] = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0, "mixed")
SEED = 20_261_204


def true_rates(rate: float | str, scenarios: int) -> list[float]:
    if rate == "mixed":
        return [0.5 + 0.5 * at / (scenarios - 1) for at in range(scenarios)]
    assert isinstance(rate, float)
    return [rate] * scenarios


def coverage(scenarios: int, attempts: int, rate: float | str, runs: int, seed: int = SEED) -> float:
    """The share of ``runs`` seeded runs whose headline interval holds the true mean rate."""
    chooser = random.Random(f"{seed}-{scenarios}-{attempts}-{rate}")
    truth = true_rates(rate, scenarios)
    target = sum(truth) / scenarios
    seen: dict[tuple[int, ...], bool] = {}  # the interval depends on the passes alone, in any order
    held = 0
    for _ in range(runs):
        passes = tuple(sorted(sum(chooser.random() < p for _ in range(attempts)) for p in truth))
        if passes not in seen:
            tallies = tuple(Tally(one, attempts) for one in passes)
            interval = Headline(tuple(one / attempts for one in passes), tallies).interval()
            assert interval is not None
            seen[passes] = interval.low - 1e-9 <= target <= interval.high + 1e-9
        held += seen[passes]
    return held / runs


def table(runs: int) -> dict[tuple[int, int, float | str], float]:
    return {
        (scenarios, attempts, rate): coverage(scenarios, attempts, rate, runs)
        for scenarios in SCENARIOS
        for attempts in ATTEMPTS
        for rate in RATES
    }


@pytest.mark.parametrize("scenarios", SCENARIOS)
def test_the_headline_interval_holds_its_95_percent_at_few_scenarios_and_attempts(scenarios: int) -> None:
    """Every cell of S scenarios × n attempts × pass rate holds the true rate ≥ 93% of the time
    (before issue 26, 15 of 15 passing gave [100%, 100%], and the worst cell held it 5.3% of the time)."""
    runs = 3_000 if os.environ.get("CONVY_AUDIT_SLOW") == "1" else 300
    low = {
        (attempts, rate): share
        for attempts in ATTEMPTS
        for rate in RATES
        if (share := coverage(scenarios, attempts, rate, runs)) < FLOOR
    }
    assert not low, f"cells under {FLOOR:.0%} at {scenarios} scenarios: {low}"


def test_the_headline_interval_is_never_of_zero_width() -> None:
    for tallies in ((Tally(3, 3),) * 5, (Tally(3, 5),) * 30, (Tally(0, 3),) * 2, (Tally(1, 1),)):
        interval = Headline(tuple(one.passed / one.judged for one in tallies), tallies).interval()
        assert interval is not None and interval.high - interval.low > 0.01


def main(runs: int) -> None:
    found = table(runs)
    shown = (0.5, 0.9, 0.99, "mixed")
    print(f"coverage of the headline's 95% interval, {runs} seeded runs a cell (true rate: the scenarios' mean)")
    print("S  n  " + "  ".join(f"{str(rate):>6}" for rate in shown))
    for scenarios in SCENARIOS:
        for attempts in ATTEMPTS:
            print(f"{scenarios}  {attempts:<2} " + "  ".join(f"{found[(scenarios, attempts, rate)]:6.1%}" for rate in shown))
    worst = min(found, key=lambda key: found[key])
    under = sum(1 for share in found.values() if share < FLOOR)
    print(f"all {len(found)} cells: lowest {found[worst]:.1%} at S={worst[0]}, n={worst[1]}, p={worst[2]}; {under} of {len(found)} under {FLOOR:.0%}")
    shares = sorted(found.values())
    print(f"median cell {shares[len(shares) // 2]:.1%}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
