"""Runs summed up into the numbers the pages show.

``Summary`` makes a run's view records: every number and decision of its report, per run,
scenario, claim and attempt (docs/statistics.md); ``Index`` puts every run on one page.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from functools import cached_property
from typing import Literal

import msgspec

from convy.agent import NoUsage, Usage
from convy.attempt import Attempt, Spent, Spread
from convy.dialog import Verdict
from convy.runs import Read, Unread
from convy.scenario import Scenario
from convy.stats import Consistency, Headline, Noise, Tally, Wilson
from convy.views import (
    AttemptRow,
    ClaimRow,
    ComparisonLink,
    DialogueView,
    Dimension,
    HeaderView,
    HeldView,
    IndexView,
    IntervalView,
    NoiseView,
    RunRow,
    RunView,
    ScenarioView,
    SpendView,
    Suggestion,
    TimeView,
    TrendPoint,
)


class Summary(msgspec.Struct, frozen=True, dict=True):
    """A run summed up: the view records of its report.

    Its attempts, their grouping by scenario and the scenarios' tallies are derived once, the
    first time they are asked for, and kept: a report asks for each of them many times.
    """

    run: Read

    def attempts(self) -> tuple[Attempt, ...]:
        return self._attempts

    def by_scenario(self) -> dict[str, list[Attempt]]:
        return self._grouped

    def tallies(self) -> dict[str, Tally]:
        """Passed out of judged, per scenario (not judged attempts left out)."""
        return self._tallies

    @cached_property
    def _attempts(self) -> tuple[Attempt, ...]:
        return tuple(Attempt(outcome, self.run.file.spec.trust) for outcome in self.run.outcomes)

    @cached_property
    def _grouped(self) -> dict[str, list[Attempt]]:
        grouped: dict[str, list[Attempt]] = {scenario.id: [] for scenario in self.run.file.spec.scenarios}
        for attempt in sorted(self._attempts, key=lambda one: (one.outcome.scenario, one.outcome.attempt)):
            grouped.setdefault(attempt.outcome.scenario, []).append(attempt)
        return grouped

    @cached_property
    def _tallies(self) -> dict[str, Tally]:
        tallies: dict[str, Tally] = {}
        for scenario, attempts in self._grouped.items():
            statuses = [attempt.status() for attempt in attempts]
            tallies[scenario] = Tally(statuses.count("passed"), statuses.count("passed") + statuses.count("failed"))
        return tallies

    def headline(self) -> Headline:
        judged = [tally for tally in self.tallies().values() if tally.judged]
        return Headline(tuple(tally.passed / tally.judged for tally in judged), tuple(judged))

    def rate(self) -> IntervalView | None:
        interval = self.headline().interval()
        return None if interval is None else IntervalView(estimate=interval.estimate, low=interval.low, high=interval.high)

    def view(self) -> RunView:
        spec = self.run.file.spec
        attempts = self.attempts()
        tallies = self.tallies()
        judged = [tally for tally in tallies.values() if tally.judged]
        consistency = Consistency(tuple(judged))
        noise = Noise(tuple(judged))
        specs = {one.id: one for one in spec.scenarios}
        scenarios = [
            self._scenario(index, scenario, found, specs.get(scenario)) for index, (scenario, found) in enumerate(self.by_scenario().items())
        ]
        not_judged = Counter(attempt.why() for attempt in attempts if attempt.status() == "not_judged")
        every_usage = tuple(usage for attempt in attempts for usage in attempt.requests())
        times = [attempt.time() for attempt in attempts]
        headline = self.headline()
        interval = headline.interval()
        return RunView(
            header=self.header(),
            rate=None if interval is None else IntervalView(estimate=interval.estimate, low=interval.low, high=interval.high),
            method=headline.method(),
            passed=sum(tally.passed for tally in judged),
            judged=sum(tally.judged for tally in judged),
            always=consistency.always(),
            flaky=consistency.flaky(),
            never=consistency.never(),
            not_judged=dict(not_judged),
            not_judged_total=sum(not_judged.values()),
            stops=dict(Counter(attempt.outcome.stop for attempt in attempts)),
            consistency=[Dimension(k=k, pass_hat=hat, pass_at=at) for k, hat, at in consistency.curve()],
            noise=NoiseView(within=noise.within(), between=noise.between(), icc=noise.icc(), advice=noise.advice()),
            agent=self._spend(
                tuple(usage for attempt in attempts for usage in attempt.agent_usage()),
                [turn.agent_seconds for attempt in attempts for turn in attempt.outcome.transcript.turns],
            ),
            user=self._spend(
                tuple(usage for attempt in attempts for usage in attempt.user_usage()),
                [turn.user_seconds for attempt in attempts for turn in attempt.outcome.transcript.turns if not turn.scripted],
            ),
            judge=self._spend(
                tuple(usage for attempt in attempts for usage in attempt.outcome.judge_requests),
                [attempt.outcome.judge_seconds for attempt in attempts if attempt.outcome.judge_requests],
            ),
            cost=Spent(every_usage).cost(),
            time=TimeView(
                wall=sum(time.wall for time in times),
                agent=sum(time.agent for time in times),
                user=sum(time.user for time in times),
                judge=sum(time.judge for time in times),
                waiting=sum(time.waiting for time in times),
                unaccounted=sum(time.unaccounted for time in times),
            ),
            scenarios=scenarios,
            tags=sorted({tag for scenario in spec.scenarios for tag in scenario.tags}),
            groups=sorted({view.group for view in scenarios}),
            claims=sorted({claim.text for view in scenarios for claim in view.claims}),
        )

    def header(self) -> HeaderView:
        spec = self.run.file.spec
        return HeaderView(
            agent=spec.agent,
            run=spec.id,
            started=self.run.file.status.started,
            ended=self.run.ended(),
            seconds=self._duration(),
            status=self.run.status(),
            convy=spec.convy,
            user_model=spec.models.user,
            judge_model=spec.models.judge,
            fingerprint=spec.fingerprints.scenarios[:12],
            trust=spec.trust,
            attempts=spec.attempts,
            planned=len(spec.scenarios) * spec.attempts,
            kept=len(self.run.outcomes),
            broken=self.run.broken,
            skipped=[f"{skipped.scenario}: {'; '.join(skipped.reasons)}" for skipped in spec.skipped],
        )

    def row(self, href: str) -> RunRow:
        """The run as one row of the index."""
        header = self.header()
        attempts = self.attempts()
        usages = tuple(usage for attempt in attempts for usage in attempt.requests())
        judged = [tally for tally in self.tallies().values() if tally.judged]
        return RunRow(
            agent=header.agent,
            run=header.run,
            href=href,
            started=header.started,
            status=header.status,
            rate=self.rate(),
            passed=sum(tally.passed for tally in judged),
            judged=sum(tally.judged for tally in judged),
            scenarios=len(self.run.file.spec.scenarios),
            attempts=len(attempts),
            tokens=Spent(usages).total(),
            cost=Spent(usages).cost(),
            seconds=header.seconds,
        )

    def dialogues(self) -> dict[str, list[DialogueView]]:
        """Every attempt in full, by scenario id, for the scenario window."""
        return {scenario: [attempt.dialogue() for attempt in found] for scenario, found in self.by_scenario().items()}

    def _duration(self) -> float | None:
        ended = self.run.ended()
        if ended is None:
            return None
        try:
            return (datetime.fromisoformat(ended) - datetime.fromisoformat(self.run.file.status.started)).total_seconds()
        except ValueError:
            return None

    def _spend(self, usages: tuple[Usage | NoUsage, ...], seconds: list[float]) -> SpendView:
        return SpendView(
            tokens=Spent(usages).tokens(),
            cost=Spent(usages).cost(),
            seconds=Spread(tuple(seconds)).view(),
            per_request=Spread(tuple(float(usage.input + usage.output) for usage in Spent(usages).reported())).view(),
        )

    def _scenario(self, index: int, scenario: str, attempts: list[Attempt], spec: Scenario | None) -> ScenarioView:
        claims = self.claims(attempts)
        statuses = [attempt.status() for attempt in attempts]
        tally = Tally(statuses.count("passed"), statuses.count("passed") + statuses.count("failed"))
        interval = Wilson(tally).interval()
        status: Literal["always", "flaky", "never", "not_judged"] = (
            "not_judged" if tally.judged == 0 else "always" if tally.passed == tally.judged else "never" if tally.passed == 0 else "flaky"
        )
        names = [row.text for row in claims]
        agent_usage = tuple(usage for attempt in attempts for usage in attempt.agent_usage())
        every_usage = tuple(usage for attempt in attempts for usage in attempt.requests())
        agent = self._spend(agent_usage, [turn.agent_seconds for attempt in attempts for turn in attempt.outcome.transcript.turns])
        failing = [attempt for attempt in attempts if attempt.status() == "failed"]
        return ScenarioView(
            index=index,
            id=scenario,
            group=scenario.rsplit("/", 1)[0] if "/" in scenario else "",
            tags=list(spec.tags) if spec else [],
            passed=tally.passed,
            judged=tally.judged,
            not_judged=statuses.count("not_judged"),
            rate=None if interval is None else IntervalView(estimate=interval.estimate, low=interval.low, high=interval.high),
            status=status,
            claims=claims,
            claims_held=Held(sum(row.held for row in claims), sum(row.decided for row in claims)).view(),
            attempts=[
                AttemptRow(
                    attempt=attempt.outcome.attempt,
                    status=attempt.status(),
                    why=attempt.why(),
                    stop=attempt.outcome.stop,
                    turns=len(attempt.outcome.transcript.turns),
                    seconds=attempt.outcome.seconds,
                    marks=attempt.marks(names),
                )
                for attempt in attempts
            ],
            first=(failing or attempts)[0].outcome.attempt if attempts else None,
            turns=Spread(tuple(float(len(attempt.outcome.transcript.turns)) for attempt in attempts)).view(),
            agent=agent,
            answer_p50=agent.seconds.p50,
            cost=Spent(every_usage).cost(),
            stops=dict(Counter(attempt.outcome.stop for attempt in attempts)),
        )

    def claims(self, attempts: list[Attempt]) -> list[ClaimRow]:
        """Each claim of a scenario over these attempts: held out of decided (trusted) ones."""
        order: dict[str, str] = {}
        held: Counter[str] = Counter()
        decided: Counter[str] = Counter()
        for attempt in attempts:
            match attempt.outcome.result:
                case Verdict(claims=claims):
                    for claim in claims:
                        order.setdefault(claim.claim, claim.by)
                        if claim.trusted(attempt.trust):
                            decided[claim.claim] += 1
                            held[claim.claim] += claim.held
                case _:
                    pass
        rows: list[ClaimRow] = []
        for text, by in order.items():
            interval = Wilson(Tally(held[text], decided[text])).interval()
            rows.append(
                ClaimRow(
                    text=text,
                    by=by,  # type: ignore[arg-type]
                    held=held[text],
                    decided=decided[text],
                    holds=Held(held[text], decided[text]).holds(),
                    rate=None if interval is None else IntervalView(estimate=interval.estimate, low=interval.low, high=interval.high),
                )
            )
        return rows


class Held(msgspec.Struct, frozen=True):
    """Claims held out of claims decided."""

    held: int
    decided: int

    def holds(self) -> Literal["always", "sometimes", "never", "undecided"]:
        if self.decided == 0:
            return "undecided"
        return "always" if self.held == self.decided else "never" if self.held == 0 else "sometimes"

    def view(self) -> HeldView:
        return HeldView(
            held=self.held,
            decided=self.decided,
            share=self.held / self.decided if self.decided else None,
            holds=self.holds(),
        )


class Index(msgspec.Struct, frozen=True):
    """Every run on one page: a row each, a pass-rate trend per agent, and the comparisons made.

    ``comparisons`` are the comparison pages' names (``<base>--<candidate>``); hrefs are relative
    to ``results/``, where the index is written.
    """

    runs: tuple[Read, ...]
    unread: tuple[Unread, ...] = ()
    comparisons: tuple[str, ...] = ()

    def view(self) -> IndexView:
        rows = [
            Summary(run).row(f"{run.file.spec.agent}/{run.file.spec.id}/report.html") for run in self.runs
        ]
        rows.sort(key=lambda row: row.started, reverse=True)
        trends: dict[str, list[TrendPoint]] = {}
        for row in sorted(rows, key=lambda row: row.started):
            trends.setdefault(row.agent, []).append(
                TrendPoint(run=row.run, started=row.started, rate=None if row.rate is None else row.rate.estimate)
            )
        links = []
        for name in self.comparisons:
            base, _, candidate = name.partition("--")
            links.append(ComparisonLink(base=base, candidate=candidate, href=f"compare/{name}.html"))
        return IndexView(
            runs=rows,
            trends=trends,
            comparisons=links,
            skipped=[f"{unread.folder.name}: {unread.reason}" for unread in self.unread],
            agents=sorted(trends),
            suggested=self.suggested(rows),
        )

    def suggested(self, rows: list[RunRow]) -> Suggestion | None:
        """The pair the index offers to compare (``rows`` newest first): the newest run that has an
        earlier one of the same agent, against the latest of those; with no such pair, the newest
        run against the oldest."""
        if not rows:
            return None
        for at, later in enumerate(rows):
            for earlier in rows[at + 1 :]:
                if earlier.agent == later.agent:
                    return Suggestion(base=earlier.run, candidate=later.run)
        return Suggestion(base=rows[-1].run, candidate=rows[0].run)
