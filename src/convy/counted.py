"""A run's attempts counted in one pass over its ``attempts.jsonl``, holding none of them.

``Summary`` (report.py) sums a run from every outcome held in memory: about 8 KB an attempt once
read back, so a driver that has played 10,000 attempts holds 80 MB to print its summary. The
numbers the end of a run prints and decides by — each scenario's passed, failed and not judged,
its claims held out of decided, why attempts were not judged, their stops and causes, and what
every request spent by who — need only running totals: ``Counted`` reads the file line by line,
one typed decode a line, adds each attempt to its scenario's ``Count`` and lets it go. What it
holds grows with scenarios and claims, not attempts, but for the (scenario, attempt) pairs it has
seen, which it keeps to read each attempt once as ``RunJournal.kept`` does (one small int each).

It reads the file through ``RunJournal.read``, the one reader of it, so the lines it passes over
are those ``RunJournal.kept`` leaves out and its numbers are ``Summary``'s of the same folder
(tests/unit/test_counted.py holds them equal).
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from convy.attempt import Attempt, Sum
from convy.causes import Breakdown, Cause
from convy.judge import Failed, NoVerdict, Verdict
from convy.records import RunSpec
from convy.stats import Headline, Tally
from convy.storage import Bounds, Kept, LinesLeftOut, RunJournal


class ClaimCount(msgspec.Struct, frozen=True, gc=False):
    """One claim of a scenario: held out of decided, who decides it, and where it was first met
    (attempt, then its place in that attempt's claims), which gives the claims their order."""

    by: str
    held: int
    decided: int
    first: tuple[int, int]


class Count(msgspec.Struct, frozen=True):
    """One scenario's attempts counted: statuses, why those not judged were not, stops, causes,
    claims, and what their requests spent by who."""

    kept: int = 0
    passed: int = 0
    failed: int = 0
    not_judged: int = 0
    agent_failed: int = 0
    why: dict[str, int] = {}  # of those not judged
    stops: dict[str, int] = {}
    causes: dict[Cause, int] = {}
    claims: dict[str, ClaimCount] = {}  # a verdict's claims, then checks no verdict named, by first met
    agent: Sum = Sum()
    user: Sum = Sum()
    judge: Sum = Sum()
    unseen: dict[tuple[str, str], int] = {}  # calls paths no reply held, by attempts

    def tally(self) -> Tally:
        return Tally(self.passed, self.passed + self.failed)


class _Claiming:
    """One claim's running count while the file is read."""

    __slots__ = ("by", "decided", "first", "held")

    def __init__(self, by: str, first: tuple[int, int]) -> None:
        self.by, self.first, self.held, self.decided = by, first, 0, 0

    def add(self, by: str, at: tuple[int, int], decided: bool, held: bool) -> None:
        if at < self.first:  # met earlier in the attempts' order than the file gave it
            self.by, self.first = by, at
        self.held += held
        self.decided += decided


class Counting:
    """One scenario's running totals while its attempts are walked (mutable: ``Counted`` and
    ``digest.Digest`` add each attempt to one and let it go)."""

    def __init__(self) -> None:
        self.statuses = {"passed": 0, "failed": 0, "not_judged": 0}
        self.kept = self.agent_failed = 0
        self.why: dict[str, int] = {}
        self.stops: dict[str, int] = {}
        self.causes: dict[Cause, int] = {}
        # A verdict's claims and code checks apart, as ``Summary._decided`` orders them: checks
        # no verdict named come after.
        self.claims: dict[str, _Claiming] = {}
        self.checks: dict[str, _Claiming] = {}
        self.agent = self.user = self.judge = Sum()
        self.unseen: dict[tuple[str, str], int] = {}

    def add(self, attempt: Attempt) -> None:
        outcome = attempt.outcome
        status = attempt.status()
        self.kept += 1
        self.statuses[status] += 1
        why = attempt.why()
        if status == "not_judged":
            self.why[why] = self.why.get(why, 0) + 1
        if why == "agent":
            self.agent_failed += 1
        self.stops[outcome.stop] = self.stops.get(outcome.stop, 0) + 1
        cause = attempt.cause()
        if cause is not None:
            self.causes[cause] = self.causes.get(cause, 0) + 1
        self.agent += attempt.agent_sum()
        self.user += attempt.user_sum()
        self.judge += attempt.judge_sum()
        for found in outcome.unseen():
            self.unseen[found] = self.unseen.get(found, 0) + 1
        trust = attempt.trust
        match outcome.result:
            case Verdict(claims=claims):
                for place, claim in enumerate(claims):
                    trusted = claim.trusted(trust)
                    self._claimed(
                        self.claims, claim.claim, claim.by, (outcome.attempt, place), trusted, trusted and claim.held
                    )
            case NoVerdict(checks=checks):
                for place, claim in enumerate(checks):
                    decided = not claim.doubt  # a tool check no reply could decide (``unseen``) is not one
                    self._claimed(
                        self.checks, claim.claim, claim.by, (outcome.attempt, place), decided, decided and claim.held
                    )
            case Failed():
                pass

    @staticmethod
    def _claimed(
        found: dict[str, _Claiming], text: str, by: str, at: tuple[int, int], decided: bool, held: bool
    ) -> None:
        one = found.get(text)
        if one is None:
            one = found[text] = _Claiming(by, at)
        one.add(by, at, decided, held)

    def count(self) -> Count:
        claims = {
            text: ClaimCount(one.by, one.held, one.decided, one.first)
            for text, one in sorted(self.claims.items(), key=lambda item: item[1].first)
        }
        for text, one in sorted(self.checks.items(), key=lambda item: item[1].first):
            got = claims.get(text)
            if got is None:
                claims[text] = ClaimCount(one.by, one.held, one.decided, one.first)
            else:  # counted with the verdict's claim of that text, in its place
                claims[text] = ClaimCount(got.by, got.held + one.held, got.decided + one.decided, got.first)
        return Count(
            kept=self.kept,
            passed=self.statuses["passed"],
            failed=self.statuses["failed"],
            not_judged=self.statuses["not_judged"],
            agent_failed=self.agent_failed,
            why=self.why,
            stops=self.stops,
            causes=self.causes,
            claims=claims,
            agent=self.agent,
            user=self.user,
            judge=self.judge,
            unseen=self.unseen,
        )


class Counted(msgspec.Struct, frozen=True):
    """A run's attempts counted per scenario, in the order of its spec's scenarios (one with no
    attempt kept counted empty), read once from its folder's ``attempts.jsonl``; ``lines``, the
    lines left out of them, counted as ``RunJournal.kept`` counts them (its ``outcomes`` empty)."""

    counts: dict[str, Count]
    lines: Kept = Kept(())

    @classmethod
    def of(cls, folder: Path, spec: RunSpec) -> Counted:
        """The folder's attempts of ``spec``'s plan counted; a file convy will not read (a folder, a
        FIFO, a device) is a ``ConfigurationError``, as for ``RunJournal.kept``."""
        counting = {scenario.id: Counting() for scenario in spec.scenarios}
        left = LinesLeftOut()
        for _, outcome in RunJournal(folder).read(left, spec):
            counting[outcome.scenario].add(Attempt(outcome, spec.trust))
        return cls({scenario: one.count() for scenario, one in counting.items()}, left.kept(plan=Bounds.of(spec)))

    def kept(self) -> int:
        return sum(one.kept for one in self.counts.values())

    def tallies(self) -> dict[str, Tally]:
        """Passed out of judged, per scenario, as ``Summary.tallies``."""
        return {scenario: one.tally() for scenario, one in self.counts.items()}

    def headline(self) -> Headline:
        judged = [tally for tally in self.tallies().values() if tally.judged]
        return Headline(tuple(tally.passed / tally.judged for tally in judged), tuple(judged))

    def breakdown(self) -> Breakdown:
        """The attempts that did not pass by cause, as ``Summary.breakdown`` counts them (a cause an
        attempt, in no order that matters to its counts: a few bytes an attempt, not a dialogue)."""
        causes: list[Cause | None] = []
        for one in self.counts.values():
            for cause, count in one.causes.items():
                causes.extend([cause] * count)
            causes.extend([None] * (one.kept - sum(one.causes.values())))
        return Breakdown(tuple(causes))

    def total(self) -> tuple[Sum, Sum, Sum]:
        """Every request of the run summed, by who: agent, user, judge."""
        agent = user = judge = Sum()
        for one in self.counts.values():
            agent, user, judge = agent + one.agent, user + one.user, judge + one.judge
        return agent, user, judge
