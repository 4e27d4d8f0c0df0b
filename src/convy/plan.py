"""What a run plays: its attempts in order (``Plan``), those its folder still lacks (``Lacking``),
and the two sides that meet over them: what plays attempts (``Player``) and what keeps each one
as it ends (``Journal``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

import msgspec

from convy.budget import Budget, Earlier, Spending
from convy.outcome import Outcome
from convy.scenario import Scenario


class Journal(Protocol):
    """Receives each attempt the moment it ends."""

    def record(self, outcome: Outcome) -> None: ...


class Planned(msgspec.Struct, frozen=True):
    """One attempt a run plays: a scenario and the attempt's number, from 1."""

    scenario: Scenario
    attempt: int

    def key(self) -> tuple[str, int]:
        """Its scenario's id and its number, as its outcome names it."""
        return (self.scenario.id, self.attempt)


class Plan(msgspec.Struct, frozen=True):
    """Every scenario, played ``attempts`` times: the attempts of a run, in order."""

    scenarios: tuple[Scenario, ...]
    attempts: int = 1

    def __iter__(self) -> Iterator[Planned]:
        for scenario in self.scenarios:
            for attempt in range(1, self.attempts + 1):
                yield Planned(scenario, attempt)

    def __len__(self) -> int:
        return len(self.scenarios) * self.attempts


class Playlist(Protocol):
    """Attempts a ``Player`` plays: how many, and each in turn (a ``Plan``, ``Lacking``, a tuple
    of ``Planned``), walked as often as the player needs."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Planned]: ...


class Lacking:
    """The attempts of a ``Plan`` its run's folder lacks, in the plan's order: made one at a time
    as they are walked, never held (a tuple of them was about 60 bytes an attempt); of those kept,
    a byte an attempt of the plan, for a run resumed. A plain class: nothing in it changes once made."""

    __slots__ = ("_plan", "_kept", "_count")

    def __init__(self, plan: Plan, kept: Iterable[Outcome]) -> None:
        self._plan = plan
        self._kept: dict[str, bytearray] = {}
        wanted = {scenario.id for scenario in plan.scenarios}
        found = 0
        for outcome in kept:
            if outcome.scenario in wanted and 1 <= outcome.attempt <= plan.attempts:
                marks = self._kept.setdefault(outcome.scenario, bytearray(plan.attempts + 1))
                found += not marks[outcome.attempt]
                marks[outcome.attempt] = 1
        self._count = len(plan) - found

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Planned]:
        nothing = bytes(self._plan.attempts + 1)
        for scenario in self._plan.scenarios:
            marks = self._kept.get(scenario.id, nothing)
            for attempt in range(1, self._plan.attempts + 1):
                if not marks[attempt]:
                    yield Planned(scenario, attempt)


class Player(Protocol):
    """What plays the attempts of a run that its folder lacks: a ``Bench``, a ``spread.Crew``, a
    ``rejudge.Rejudging`` that decides recorded dialogues again, or ``adaptive.Rounds`` around one
    of them, which plays only the attempts its rule wants."""

    @property
    def budget(self) -> Budget | None: ...

    def budgeted(self, budget: Budget | None) -> Player:
        """The same player with another budget (``adaptive.Rounds`` gives each round what is left)."""
        ...

    async def run(
        self, planned: Playlist, journal: Journal, earlier: Iterable[Outcome] | Earlier = ()
    ) -> Spending | None: ...
