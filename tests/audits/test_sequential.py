"""The comparison decided while the candidate plays (sequential.py): each block's e-value has mean
at most 1 under "no change" for every common rate (checked with scipy's binomial), the chance of
ever deciding under no change is at most α (enumerated exactly on a small case), and a smoke
simulation shows the false-alarm rate held with a look after every attempt while testing again at
each look with Fisher's test is not. The benchmark with thousands of runs is bench/sequential.py."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from scipy import special, stats

from convy.sequential import Block, Decided, Divergence, Futile, Sequential, Track, Undecided
from convy.significance import Fisher, Stratum
from convy.stats import Tally


def block_mean(p: float, base: int, candidate: int, q_a: float, q_b: float) -> float:
    """E[e] of a block under a common rate p, summed over scipy's binomial laws."""
    total = 0.0
    for x in range(base + 1):
        for y in range(candidate + 1):
            weight = stats.binom.pmf(x, base, p) * stats.binom.pmf(y, candidate, p)
            total += weight * math.exp(Block(base, x, candidate, y).log_e(q_a, q_b))
    return total


def test_a_block_has_mean_at_most_one_under_no_change() -> None:
    chooser = random.Random(7)
    for _ in range(300):
        base, candidate = chooser.randint(1, 6), chooser.randint(1, 6)
        q_a, q_b = chooser.uniform(0.005, 0.995), chooser.uniform(0.005, 0.995)
        for p in (0.0, 0.03, 0.2, 0.5, 0.77, 0.97, 1.0, chooser.random()):
            assert block_mean(p, base, candidate, q_a, q_b) <= 1 + 1e-9
        # equal to 1 where the common rate is the pooled guess: the bound is tight
        q0 = (base * q_a + candidate * q_b) / (base + candidate)
        assert block_mean(q0, base, candidate, q_a, q_b) == pytest.approx(1.0, abs=1e-9)


def test_a_block_grows_when_the_rates_differ_as_guessed() -> None:
    # E[log e] under the guessed rates is the sum of the divergences from the pooled rate: positive
    q_a, q_b, base, candidate = 0.9, 0.6, 3, 2
    q0 = (base * q_a + candidate * q_b) / (base + candidate)
    expected = sum(
        stats.binom.pmf(x, base, q_a) * stats.binom.pmf(y, candidate, q_b) * Block(base, x, candidate, y).log_e(q_a, q_b)
        for x in range(base + 1)
        for y in range(candidate + 1)
    )
    divergence = base * Divergence(q_a, q0).nats() + candidate * Divergence(q_b, q0).nats()
    assert expected == pytest.approx(divergence, rel=1e-9)
    assert expected > 0


def test_divergence_matches_scipy() -> None:
    chooser = random.Random(3)
    for _ in range(200):
        p, q = chooser.choice([0.0, 1.0, chooser.random()]), chooser.uniform(0.01, 0.99)
        assert Divergence(p, q).nats() == pytest.approx(special.rel_entr(p, q) + special.rel_entr(1 - p, 1 - q), abs=1e-12)


def test_the_base_is_spread_over_the_plan_with_one_base_attempt_in_each_block() -> None:
    for size, most in ((3, 10), (10, 10), (10, 3), (7, 50), (50, 7)):
        track = Track("s", tuple(i % 2 == 0 for i in range(size)))
        while (block := track.block(most)) > 0:
            before = track.used
            track, _, _ = track.scored(block, 0, most, 4.0, 0.5, 0.5)
            assert track.used > before  # every block has base attempts in it
        assert track.used == size or track.judged == most
        assert track.judged <= most


def exact_false_alarm(p: float, size: int, alpha: float) -> float:
    """The probability that the watch of one scenario, base and plan of ``size`` attempts, looked
    at after every attempt, is ever decided when both runs pass at rate p: every outcome
    enumerated."""
    total = 0.0
    rule = Sequential(alpha, most=size)
    for outcomes in itertools.product((False, True), repeat=2 * size):
        base, candidate = outcomes[:size], outcomes[size:]
        watch = rule.started({"s": base})
        for passed in candidate:
            watch = watch.played({"s": Tally(int(passed), 1)})
            if isinstance(watch.verdict(), Decided):
                passes = sum(outcomes)
                total += p**passes * (1 - p) ** (2 * size - passes)
                break
    return total


def test_the_chance_of_ever_deciding_under_no_change_is_at_most_alpha_exactly() -> None:
    # a loose alpha so that five attempts can decide at all; every path of 10 outcomes counted
    alpha = 0.5
    chances = [exact_false_alarm(p, 5, alpha) for p in (0.1, 0.3, 0.5, 0.7, 0.9)]
    assert max(chances) <= alpha
    assert min(chances) > 0  # not held by never deciding
    # and it can decide: against a real change, some paths do
    rule = Sequential(alpha, most=5)
    watch = rule.started({"s": (True,) * 5})
    for _ in range(5):
        watch = watch.played({"s": Tally(0, 1)})
    assert isinstance(watch.verdict(), Decided)


def naive_alarm(base: tuple[bool, ...], candidate: list[bool]) -> bool:
    """Fisher's exact test at the fixed-design level, again after every attempt."""
    passed_a = sum(base)
    passed_b = 0
    for count, passed in enumerate(candidate, start=1):
        passed_b += passed
        if count >= 5 and Fisher(Stratum(passed_a, len(base), passed_b, count)).test().p < 0.05:
            return True
    return False


def test_smoke_false_alarms_stay_at_alpha_with_a_look_after_every_attempt() -> None:
    alpha, runs, size = 0.05, 300, 60
    chooser = random.Random(20_250_113)
    alarms = naive = 0
    for run in range(runs):
        p = (0.5, 0.8, 0.95)[run % 3]
        base = tuple(chooser.random() < p for _ in range(size))
        candidate = [chooser.random() < p for _ in range(size)]
        watch = Sequential(alpha, most=size).started({"s": base})
        for passed in candidate:
            watch = watch.played({"s": Tally(int(passed), 1)})
            if isinstance(watch.verdict(), Decided):
                alarms += 1
                break
        naive += naive_alarm(base, candidate)
    # above this count, a true rate of alpha would have shown it less than once in 10,000 tries
    bound = stats.binom.isf(1e-4, runs, alpha)
    assert alarms <= bound
    # the smoke test can see inflation: looking again at each attempt with a fixed-sample test does
    assert naive > bound


def test_a_clear_regression_is_decided_early_and_the_right_way() -> None:
    chooser = random.Random(5)
    base = {f"s{i}": tuple(chooser.random() < 0.9 for _ in range(20)) for i in range(5)}
    watch = Sequential(0.05, most=40).started(base)
    verdict: Decided | Undecided | Futile = watch.verdict()
    while isinstance(verdict, Undecided):
        asks = watch.asks()
        watch = watch.played({ask.scenario: Tally(sum(chooser.random() < 0.5 for _ in range(ask.attempts)), ask.attempts) for ask in asks})
        verdict = watch.verdict()
    assert isinstance(verdict, Decided)
    assert verdict.direction == "worse"
    assert verdict.attempts < 5 * 40
    assert verdict.difference < 0
    # each scenario's own verdict needs more: played to the end of the plan, e-BH finds them
    while asks := watch.asks():
        watch = watch.played({ask.scenario: Tally(sum(chooser.random() < 0.5 for _ in range(ask.attempts)), ask.attempts) for ask in asks})
    assert any(one.change == "worse" for one in watch.scenarios())
    assert not any(one.change == "better" for one in watch.scenarios())


def test_nothing_left_is_futile_and_an_unknown_scenario_is_refused() -> None:
    watch = Sequential(0.05, most=2).started({"s": (True, True)})
    spent = watch.verdict(left=0)
    assert isinstance(spent, Futile) and spent.reason == "budget spent"
    watch = watch.played({"s": Tally(2, 2)})
    assert watch.asks() == ()
    verdict = watch.verdict()
    assert isinstance(verdict, Futile) and verdict.reason == "every scenario played its plan"
    with pytest.raises(ValueError, match="not in the base"):
        watch.played({"other": Tally(1, 1)})


def test_asks_put_the_least_known_scenarios_first_and_skip_finished_ones() -> None:
    watch = Sequential(0.05, most=10).started({"a": (True,) * 10, "b": (True, False) * 5, "c": (False,) * 10})
    watch = watch.played({"a": Tally(1, 1), "b": Tally(3, 3), "c": Tally(0, 1)})
    asks = watch.asks()
    assert [ask.scenario for ask in asks][-1] == "b"  # more attempts played: one more narrows it least
    assert [ask.gain for ask in asks] == sorted((ask.gain for ask in asks), reverse=True)
    assert len(watch.asks(most=1)) == 1
    assert all(ask.attempts == 1 for ask in asks)


def test_rule_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        Sequential(alpha=0.0)
    with pytest.raises(ValueError):
        Sequential(most=0)
