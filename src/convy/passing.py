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


class Share(msgspec.Struct, frozen=True):
    """A share as a person writes it: a number (0.9) or a percentage (``"90%"``), one rule for
    every place that takes one (``[tool.convy]``, ``.env``, a scenario's ``fail_under``; the
    command line's ``cli.parser.Fraction`` reads its text alike)."""

    given: object

    def number(self) -> object:
        """The percentage as the number it is (``"90%"``: 0.9); anything else as it was given, for
        the field's own check to refuse, naming it."""
        text = self.given
        if isinstance(text, str) and text.strip().endswith("%"):
            try:
                number = float(text.strip()[:-1].strip()) / 100
            except ValueError:
                return text
            if math.isfinite(number):
                return number
        return text


class PassRule(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """What a project accepts of a run: ``fail_under``, the least mean pass rate over scenarios
    (``None``: every scenario must pass every judged attempt, unless it sets a bar of its own),
    ``fail_on_skip``, whether a scenario the run skipped fails it, and ``max_not_judged``, the
    share of the attempts kept that may go unjudged (``--max-not-judged``; beyond it, exit 5)."""

    fail_under: float | None = None
    fail_on_skip: bool = False
    max_not_judged: float = 0.0

    def __post_init__(self) -> None:
        if self.fail_under is not None and (not math.isfinite(self.fail_under) or not 0.0 <= self.fail_under <= 1.0):
            raise ValueError("fail_under: must be between 0 and 1 (0.8 for 80%)")
        if not math.isfinite(self.max_not_judged) or not 0.0 <= self.max_not_judged <= 1.0:
            raise ValueError("max_not_judged: must be between 0 and 1")

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
    YAML), and how many scenarios the run skipped; and what the command's other gates look at:
    the attempts kept, those not judged, those the agent failed, what the run's budget did
    (``budget``: the stop's or the reach's words, ``""`` when it did neither) and, for a run its
    budget stopped, each scenario it cut short with how much of it was played (``short``)."""

    rule: PassRule
    tallies: dict[str, Tally]
    bars: dict[str, float | None]
    skipped: int = 0
    kept: int = 0
    not_judged: int = 0
    agent_failed: int = 0
    budget: str = ""
    short: dict[str, str] = msgspec.field(default_factory=dict)
    unjudged: tuple[str, ...] = ()  # scenarios with attempts kept, none of them judged

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

    def unjudged_within(self) -> bool:
        """Whether the attempts not judged are within the rule's ``max_not_judged`` share of those
        kept (compared as ratios, each rounded once, as ``convy run`` compares them)."""
        if not self.not_judged:
            return True
        return self.kept > 0 and self.not_judged / self.kept <= self.rule.max_not_judged

    def budget_said(self) -> str:
        """What the run's budget did, as a sentence's subject and verb (``""`` when nothing)."""
        if not self.budget:
            return ""
        return f"the run {'was ' if self.budget.startswith('stopped') else ''}{self.budget}"

    def gates(self) -> tuple[tuple[int, str], ...]:
        """Each gate the run does not pass, as the command's exit code orders them (6, 1, 5, 7, 8,
        3; ``cli.exits.Worst``), with its words: empty when the run passes, exit 0."""
        found: list[tuple[int, str]] = []
        if self.budget:
            found.append((6, self.budget_said()))
        if self.agent_failed:
            found.append((1, f"the agent failed in {self.agent_failed} attempt{'s' if self.agent_failed != 1 else ''}"))
        if not self.unjudged_within():
            share = self.not_judged / self.kept if self.kept else 1.0
            found.append(
                (5, f"{self.not_judged} of {self.kept} attempts not judged ({share:.1%}): more than max_not_judged "
                 f"{self.rule.max_not_judged:.1%}")
            )
        elif self.unjudged and self.tested():
            # max_not_judged tolerates a few attempts, never a whole scenario left untested.
            named = ", ".join(self.unjudged[:5]) + (f" and {len(self.unjudged) - 5} more" if len(self.unjudged) > 5 else "")
            found.append((5, f"no attempt judged of {len(self.unjudged)} scenario{'s' if len(self.unjudged) != 1 else ''}: {named}"))
        if not self.tested():
            found.append((7, "nothing was tested: no attempt was judged"))
        if self.skipped and self.rule.fail_on_skip:
            found.append(
                (8, f"{self.skipped} scenario{'s' if self.skipped != 1 else ''} skipped, and fail_on_skip fails a run that skipped any")
            )
        failing = self.failing()
        if failing:
            found.append((3, f"{len(failing)} of {len(self.tallies)} scenario{'s' if len(self.tallies) != 1 else ''} failed the pass rule"))
        return tuple(found)

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
