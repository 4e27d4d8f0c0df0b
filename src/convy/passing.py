"""What a run must show to pass: the one rule the exit code, JUnit, ``pytest --convy``, the
Markdown summary and the pages all consult (issue 24: one verdict everywhere).

``PassRule`` is what the project accepts, kept in the run's spec so that every later reader of
the run gives the verdict its command gave. ``RunVerdict`` is one run measured against it.

The rule:

- A run that judged no attempt tested nothing: it never passes (``RunVerdict.tested``).
- With no ``fail_under`` anywhere, every scenario must pass every judged attempt, as a test suite
  fails with one failed test.
- A scenario's own ``fail_under`` (its YAML) is the share of its judged attempts it must pass.
- The run's ``fail_under`` (``--fail-under``, ``[tool.convy] fail_under``, ``CONVY_FAIL_UNDER``)
  is a bar for the mean pass rate over scenarios: a scenario with no bar of its own is then
  accepted whatever it scored while the mean holds; when the mean falls below, every scenario
  under that bar fails (there is always one: a mean below a bar has a term below it).

So a scenario fails exactly when the run fails on the pass rate, and a JUnit case, a pytest item
and the exit code never disagree. Not judged attempts and the agent's failures are gates of their
own (``cli``), never part of a scenario's pass rate.
"""

from __future__ import annotations

import math

import msgspec

from convy.stats import Tally


class PassRule(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """What a project accepts of a run: ``fail_under``, the least mean pass rate over scenarios
    (``None``: every scenario must pass every judged attempt, unless it sets a bar of its own),
    and ``fail_on_skip``, whether a scenario the run skipped fails it."""

    fail_under: float | None = None
    fail_on_skip: bool = False

    def __post_init__(self) -> None:
        if self.fail_under is not None and (not math.isfinite(self.fail_under) or not 0.0 <= self.fail_under <= 1.0):
            raise ValueError("fail_under: must be between 0 and 1 (0.8 for 80%)")

    def bar(self, own: float | None) -> float | None:
        """The share of its judged attempts a scenario must pass alone: its ``own`` bar; else
        every one, unless the run has a ``fail_under`` (``None``: the mean decides)."""
        if own is not None:
            return own
        return 1.0 if self.fail_under is None else None

    def said(self, own: float | None) -> str:
        """The bar a scenario is held to, in words."""
        bar = self.bar(own)
        if bar is None:
            return f"the run's pass rate at least fail_under {self.fail_under:.0%}"
        if own is not None:
            return f"its fail_under {own:.0%}"
        return "every judged attempt passes"


class RunVerdict(msgspec.Struct, frozen=True):
    """A run against its ``PassRule``: each scenario's tally (``tallies``: every scenario the run
    planned, one not judged at all as ``Tally(0, 0)``), each one's own bar (``bars``, from its
    YAML), and how many scenarios the run skipped."""

    rule: PassRule
    tallies: dict[str, Tally]
    bars: dict[str, float | None]
    skipped: int = 0

    def judged(self) -> int:
        return sum(tally.judged for tally in self.tallies.values())

    def tested(self) -> bool:
        """Whether at least one attempt was judged: a run that judged none tested nothing."""
        return self.judged() > 0

    def mean(self) -> float | None:
        """The run's pass rate: the mean over the judged scenarios of each one's share passed."""
        rates = [tally.passed / tally.judged for tally in self.tallies.values() if tally.judged]
        return sum(rates) / len(rates) if rates else None

    def below_mean(self) -> bool:
        """Whether the run's ``fail_under`` is set and its pass rate is under it."""
        mean = self.mean()
        return self.rule.fail_under is not None and mean is not None and self._under(mean, self.rule.fail_under)

    def fails(self, scenario: str) -> bool:
        """Whether ``scenario`` fails the rule (a scenario with no judged attempt never does: it is
        not judged, a gate of its own)."""
        tally = self.tallies.get(scenario, Tally(0, 0))
        if not tally.judged:
            return False
        rate = tally.passed / tally.judged
        bar = self.rule.bar(self.bars.get(scenario))
        if bar is not None and self._under(rate, bar):
            return True
        fail_under = self.rule.fail_under
        return fail_under is not None and self.below_mean() and self._under(rate, fail_under)

    def failing(self) -> tuple[str, ...]:
        return tuple(scenario for scenario in self.tallies if self.fails(scenario))

    def why(self, scenario: str) -> str:
        """Why ``scenario`` fails, in a few words (``""`` when it does not)."""
        if not self.fails(scenario):
            return ""
        tally = self.tallies[scenario]
        own = self.bars.get(scenario)
        bar = self.rule.bar(own)
        rate = tally.passed / tally.judged
        if bar is not None and own is None:
            return f"{tally.passed} of {tally.judged} passed, where every judged attempt must pass"
        if bar is not None and self._under(rate, bar):
            return f"{tally.passed} of {tally.judged} passed ({rate:.0%}), below its fail_under {bar:.0%}"
        mean = self.mean()
        assert mean is not None and self.rule.fail_under is not None  # below_mean held
        return (
            f"{tally.passed} of {tally.judged} passed ({rate:.0%}), and the run's pass rate {mean:.1%} "
            f"is below fail_under {self.rule.fail_under:.1%}"
        )

    def accepted(self, scenario: str) -> str:
        """For a scenario that passed short of every judged attempt and does not fail: what the
        project said it accepts (``""`` for a scenario that passed every one)."""
        tally = self.tallies.get(scenario, Tally(0, 0))
        if not tally.judged or tally.passed == tally.judged or self.fails(scenario):
            return ""
        return f"{tally.passed} of {tally.judged} passed, accepted by {self.rule.said(self.bars.get(scenario))}"

    def held(self) -> bool:
        """Whether the run passes on its pass rate: tested, and no scenario failing."""
        return self.tested() and not self.failing()

    def verdict(self) -> str:
        """The run's verdict in a few words, as every output says it."""
        if not self.tested():
            return "nothing was tested"
        failing = self.failing()
        if failing:
            return f"{len(failing)} scenario{'s' if len(failing) != 1 else ''} failed the pass rule"
        return "passed the pass rule"

    def _under(self, rate: float, bar: float) -> bool:
        # Compared once rounded, so 57 of 100 is not under 0.57 by a float's last digit.
        return round(rate, 12) < round(bar, 12)


class AbsentAgent(msgspec.Struct, frozen=True):
    """An agent a command skipped because it is absent (its file said what is missing, ``reason``,
    its secrets hidden): a skip of its own, counted wherever a run's skipped scenarios are, and the
    only thing to count when every agent was absent (nothing was tested)."""

    name: str
    reason: str

    def said(self) -> str:
        return f"skipped agent {self.name}: {self.reason}"
