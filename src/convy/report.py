"""Runs summed up into the numbers the pages show.

``Summary`` makes a run's view records: every number and decision of its report, per run,
scenario, claim and attempt (docs/statistics.md); ``Index`` puts every run on one page. ``Stop``
says a budget's stop, and what a run spent of its budget, in the words the pages and the command
show.

The index needs only a few numbers of each run, its ``Totals``. ``Listing`` keeps them in the
run's folder, in ``summary.json`` beside ``attempts.jsonl``, with the size and modification time
that file had when they were summed (its ``Stamp``); while the stamp still matches, the index
reads them from there rather than reading and summing every attempt of every run again. A run
whose attempts changed (resumed, repaired, still playing) is read whole and summed anew.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from decimal import ROUND_CEILING, Decimal
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Literal

import msgspec

from convy.adaptive import Against, Course
from convy.agreement import Consensus
from convy.attempt import Attempt, Ordered, Percentiles, Sum
from convy.budget import Budget, Outlay, Which
from convy.causes import Breakdown
from convy.counted import Count, Counted
from convy.digest import AttemptDigest, Attempts, Column, Digest, Status
from convy.files import RegularFile, Replaced
from convy.judge import Confidence, Failed, NoVerdict, Verdict
from convy.labels import Agreement, RunLabels
from convy.outcome import Outcome
from convy.passing import RunVerdict
from convy.placed import Placed
from convy.problems import ConfigurationError
from convy.ranked import Ascending, InOrder, Merged
from convy.records import Complete, Stopped
from convy.runs import Read, Runs, Unread
from convy.scenario import Scenario
from convy.stats import Consistency, Headline, Noise, Tally, Wilson
from convy.storage import RunJournal
from convy.variants import Value, Variant
from convy.views import (
    AgreementView,
    AttemptRow,
    ClaimRow,
    ComparisonLink,
    CostView,
    DialogueView,
    Dimension,
    HeaderView,
    HeldView,
    IndexView,
    IntervalView,
    JudgingView,
    NoiseView,
    RunRow,
    RunView,
    ScenarioView,
    SkipGroup,
    SpendView,
    Suggestion,
    TimeView,
    TrendPoint,
    VariantDimensionView,
    VariantValueView,
)


class Dimensions(msgspec.Struct, frozen=True):
    """A run's variant values as dimensions: for each matrix key of its scenarios (``mood``), each
    value's pass rate over the variants that have it, whichever scenario they were made from. The
    rate is found as the run's is, over scenarios: the mean of those variants' rates, with
    ``Headline``'s interval (the exact one for one variant; else a bootstrap or t interval across
    variants), since a variant's attempts are not independent of each other."""

    scenarios: tuple[Scenario, ...]
    tallies: dict[str, Tally]

    def views(self) -> list[VariantDimensionView]:
        found: dict[str, dict[str, list[Tally]]] = {}
        for scenario in self.scenarios:
            match scenario.variant:
                case Variant(values=values):
                    tally = self.tallies.get(scenario.id, Tally(0, 0))
                    for key, value in values.items():
                        found.setdefault(key, {}).setdefault(Value(value).text(), []).append(tally)
                case None:
                    pass
        return [
            VariantDimensionView(key=key, values=[self._value(value, tallies) for value, tallies in values.items()])
            for key, values in found.items()
        ]

    def _value(self, value: str, tallies: list[Tally]) -> VariantValueView:
        judged = tuple(tally for tally in tallies if tally.judged)
        headline = Headline(tuple(tally.passed / tally.judged for tally in judged), judged)
        interval = headline.interval()
        return VariantValueView(
            value=value,
            variants=len(tallies),
            passed=sum(tally.passed for tally in judged),
            judged=sum(tally.judged for tally in judged),
            rate=None if interval is None else IntervalView(estimate=interval.estimate, low=interval.low, high=interval.high),
            method=headline.method(),
        )


class Summary(msgspec.Struct, frozen=True, dict=True):
    """A run summed up: the view records of its report.

    Its attempts are walked once (``digest.Digest``, the first time anything is asked of them) into
    a small row each, each scenario's counts and sums, and the arrays its spreads and times are
    made from; nothing else of an attempt is held. Its tables, tiles, verdict and totals come from
    that; what wants an attempt itself (a dialogue shown, JUnit's and the summary's claims and
    errors, the judging section) walks them again (``attempts``, ``by_scenario``: a
    ``digest.Attempts`` each), one at a time, from the run as it was read: whole, or unsaid
    (``placed.Placed``: where each line begins in ``attempts.jsonl``, read again from there), so
    the end of a run and ``convy report`` hold a few hundred bytes an attempt.
    """

    run: Read

    def attempts(self) -> Sequence[Attempt]:
        """Every attempt, in the file's order, each read again as it is walked."""
        return Attempts(self._digest.rows, self.run.outcomes, self.run.file.spec.trust)

    def by_scenario(self) -> dict[str, Attempts]:
        """Each scenario's attempts by number (the spec's scenarios first, then any other by id),
        each read again as it is walked."""
        return self._grouped

    def tallies(self) -> dict[str, Tally]:
        """Passed out of judged, per scenario (not judged attempts left out)."""
        return self._tallies

    @cached_property
    def _digest(self) -> Digest:
        outcomes = self.run.outcomes
        match outcomes:
            case Placed():  # walked in full: the digest takes the numbers, and unsaid() would only cost
                return Digest.of(outcomes.full(), self.run.file.spec)
            case _:
                return Digest.of(outcomes, self.run.file.spec)

    @cached_property
    def _grouped(self) -> dict[str, Attempts]:
        trust, outcomes = self.run.file.spec.trust, self.run.outcomes
        return {scenario: Attempts(column.rows, outcomes, trust) for scenario, column in self._digest.columns.items()}

    @cached_property
    def _tallies(self) -> dict[str, Tally]:
        return {scenario: column.count.tally() for scenario, column in self._digest.columns.items()}

    def statuses(self) -> Counter[Status]:
        """How many attempts passed, failed and were not judged (each only if any was)."""
        return Counter(row.status for row in self._digest.rows)

    def times(self) -> tuple[InOrder, ...]:
        """Each attempt's times by part, in the file's order: wall, agent, user, judge, waiting,
        unaccounted (``Attempt.time``)."""
        return self._digest.times

    def unseen(self) -> Counter[tuple[str, str]]:
        """The agent's calls paths no reply held a list at (``Outcome.unseen``), each with what a
        reply held there instead, by how many attempts they left a tool check undecided in."""
        found: Counter[tuple[str, str]] = Counter()
        for column in self._digest.columns.values():
            found.update(column.count.unseen)
        return found

    def sums(self) -> dict[str, Sums]:
        """Each scenario's requests summed, by who made them."""
        return self._sums

    def total(self) -> Sums:
        """Every request of the run summed, by who made them."""
        return self._total

    @cached_property
    def _sums(self) -> dict[str, Sums]:
        return {
            scenario: Sums(column.count.agent, column.count.user, column.count.judge)
            for scenario, column in self._digest.columns.items()
        }

    @cached_property
    def _total(self) -> Sums:
        agent = user = judge = Sum()
        for one in self._sums.values():
            agent, user, judge = agent + one.agent, user + one.user, judge + one.judge
        return Sums(agent, user, judge)

    def headline(self) -> Headline:
        judged = [tally for tally in self.tallies().values() if tally.judged]
        return Headline(tuple(tally.passed / tally.judged for tally in judged), tuple(judged))

    def rate(self) -> IntervalView | None:
        return self._rate

    def verdict(self) -> RunVerdict:
        """The run against the pass rule its spec keeps (``passing.py``): the one verdict every
        output gives."""
        spec = self.run.file.spec
        bars = {scenario.id: scenario.fail_under for scenario in spec.scenarios}
        rows = self._digest.rows
        tallies = self.tallies()
        return RunVerdict(
            spec.rule,
            tallies,
            bars,
            len(spec.skipped),
            kept=len(rows),
            not_judged=sum(1 for row in rows if row.status == "not_judged"),
            agent_failed=sum(1 for row in rows if row.why == "agent"),
            budget=self.stop() or self.reached(),
            short=self.short(),
            unjudged=tuple(
                scenario
                for scenario, column in self._digest.columns.items()
                if column.rows and not tallies.get(scenario, Tally(0, 0)).judged
            ),
        )

    def short(self) -> dict[str, str]:
        """For a run its budget stopped, each scenario it cut short, with how much of it was played
        (``1 of 3 attempts``); a scenario of ``--attempts auto`` its rule had stopped first is not."""
        match self.run.file.status:
            case Stopped():
                pass
            case _:
                return {}
        spec = self.run.file.spec
        course = self.course()
        standings = {} if course is None else course.by_scenario()
        found: dict[str, str] = {}
        for scenario, attempts in self.by_scenario().items():
            kept = len(attempts)
            if course is None:
                if kept < spec.attempts:
                    found[scenario] = f"{kept} of {spec.attempts} attempts"
                continue
            standing = standings.get(scenario)
            if standing is None or not standing.stop:
                found[scenario] = f"{kept} attempt{'s' if kept != 1 else ''}, {self.stopped().get(scenario, 'budget spent')}"
        return found

    @cached_property
    def _rate(self) -> IntervalView | None:
        # Its bootstrap draws 10,000 means: found once for the view, the totals and the command.
        interval = self.headline().interval()
        return None if interval is None else IntervalView(estimate=interval.estimate, low=interval.low, high=interval.high)

    def view(self) -> RunView:
        return self._viewed(lambda rows, names, texts: list(self._rows(rows, names, texts)))

    def framed(self) -> RunView:
        """The view without its attempts tables (each scenario's ``attempts`` empty): what a page
        writes around them, each scenario's made as it is written (``table``), never all held."""
        return self._viewed(lambda rows, names, texts: [])

    def table(self, scenario: str) -> Iterator[AttemptRow]:
        """The scenario's attempts table, a row at a time: what ``view`` lists in its
        ``ScenarioView.attempts``."""
        column = self._digest.columns[scenario]
        return self._rows(column.rows, [row.text for row in self._claimed(column.count)], column.texts)

    def _viewed(self, tabled: Callable[[Sequence[AttemptDigest], list[str], tuple[str, ...]], list[AttemptRow]]) -> RunView:
        """The view, each scenario's attempts table made by ``tabled``."""
        spec = self.run.file.spec
        digest = self._digest
        rows = digest.rows
        tallies = self.tallies()
        judged = [tally for tally in tallies.values() if tally.judged]
        consistency = Consistency(tuple(judged))
        noise = Noise(tuple(judged))
        specs = {one.id: one for one in spec.scenarios}
        scenarios = [
            self._scenario(index, scenario, column, specs.get(scenario), tabled)
            for index, (scenario, column) in enumerate(digest.columns.items())
        ]
        not_judged = Counter(row.why for row in rows if row.status == "not_judged")
        total = self.total()
        columns = digest.columns.values()
        wall, agent, user, judge, waiting, unaccounted = digest.times
        return RunView(
            header=self.header(),
            rate=self.rate(),
            method=self.headline().method(),
            passed=sum(tally.passed for tally in judged),
            judged=sum(tally.judged for tally in judged),
            always=consistency.always(),
            flaky=consistency.flaky(),
            never=consistency.never(),
            not_judged=dict(not_judged),
            not_judged_total=sum(not_judged.values()),
            stops=dict(Counter(row.stop for row in rows)),
            consistency=[Dimension(k=k, pass_hat=hat, pass_at=at) for k, hat, at in consistency.curve()],
            noise=NoiseView(within=noise.within(), between=noise.between(), icc=noise.icc(), advice=noise.advice()),
            # The scenarios' columns, each ascending, merged: the run's values ascending, read once.
            agent=self._spend(
                total.agent, Merged(column.sizes for column in columns), Merged(column.seconds for column in columns)
            ),
            user=self._spend(total.user, digest.user_sizes, digest.user_seconds),
            judge=self._spend(total.judge, digest.judge_sizes, digest.judge_seconds),
            cost=total.every().cost(),
            # Summed by ``sum`` in the file's order, as the attempts' times were.
            time=TimeView(
                wall=sum(wall),
                agent=sum(agent),
                user=sum(user),
                judge=sum(judge),
                waiting=sum(waiting),
                unaccounted=sum(unaccounted),
            ),
            scenarios=scenarios,
            tags=sorted({tag for scenario in spec.scenarios for tag in scenario.tags}),
            groups=sorted({view.group for view in scenarios}),
            claims=sorted({claim.text for view in scenarios for claim in view.claims}),
            agreement=self.agreement(),
            judging=self.judging(),
            variants=Dimensions(spec.scenarios, tallies).views(),
            causes=self.breakdown().views(),
            not_passed=self.breakdown().not_passed(),
        )

    def judging(self) -> JudgingView | None:
        """The report's judging section (``agreement.Consensus``), found once; ``None``, with no
        walk of the attempts, when no judge's decision has votes or a quote to show."""
        return self._judging

    @cached_property
    def _judging(self) -> JudgingView | None:
        return Consensus(self.run.file.spec, self.by_scenario()).view() if self._digest.judging else None

    def breakdown(self) -> Breakdown:
        """The run's attempts that did not pass, by cause (``causes.py``), through its trust."""
        return Breakdown(tuple(row.cause for row in self._digest.rows))

    def agreement(self) -> AgreementView | None:
        """The run's decisions against the human labels of its dialogues (its own and its
        sources'); ``None`` when it has none, found with one failed open of ``labels.jsonl``."""
        return self._agreement

    @cached_property
    def _agreement(self) -> AgreementView | None:
        run = self.run
        book = RunLabels(run.folder, run.file.spec).book()
        # Labels name dialogues by their words: those held unsaid are read again, only when there are labels.
        outcomes = run.outcomes
        match outcomes:
            case Placed() if book.labels:
                return Agreement(tuple(outcomes.full()), book).view()
            case _:
                return Agreement(outcomes, book).view()

    def header(self) -> HeaderView:
        spec = self.run.file.spec
        verdict = self.verdict()
        return HeaderView(
            agent=spec.agent,
            run=spec.id,
            name=spec.name,
            started=self.run.file.status.started,
            ended=self.run.ended(),
            seconds=self.run.seconds(),
            status=self.run.status(),
            convy=spec.convy,
            user_model=spec.models.user,
            judge_model=spec.models.judge,
            fingerprint=spec.fingerprints.scenarios[:12],
            trust=spec.trust,
            attempts=spec.attempts,
            planned=self.planned(),
            kept=len(self._digest.rows),
            broken=self.run.broken,
            skipped=[f"{skipped.scenario}: {'; '.join(skipped.reasons)}" for skipped in spec.skipped],
            stop=self.stop(),
            budget=self.allowance(),
            reached=self.reached(),
            adaptive="" if spec.adaptive is None else spec.adaptive.said(spec.attempts),
            against=self.against(),
            against_run=self.base(),
            verdict=verdict.verdict(),
            tested=verdict.tested(),
            failing=[f"{scenario}: {verdict.why(scenario)}" for scenario in verdict.failing()],
            skip_groups=self.skip_groups(),
        )

    def skip_groups(self) -> list[SkipGroup]:
        """The scenarios the run skipped, grouped by their reasons (in the order first met): five
        scenarios lacking the same judge share one line of advice, not five."""
        groups: dict[str, list[str]] = {}
        for skipped in self.run.file.spec.skipped:
            groups.setdefault("; ".join(skipped.reasons), []).append(skipped.scenario)
        return [SkipGroup(reason=reason, scenarios=scenarios) for reason, scenarios in groups.items()]

    def planned(self) -> int:
        """The attempts the run plans: every scenario's attempts; in a run whose attempts are spent
        adaptively, those its rule wants as far as its attempts kept say (each stopped scenario's,
        each other's next checkpoint), never the rest of its most."""
        spec = self.run.file.spec
        course = self.course()
        return len(spec.scenarios) * spec.attempts if course is None else course.planned()

    def course(self) -> Course | None:
        """Where each scenario stands under the rule of a run of ``--attempts auto`` (found from its
        attempts alone, as a resumed play finds it); ``None`` for a run of a fixed number."""
        return self._course

    @cached_property
    def _course(self) -> Course | None:
        spec = self.run.file.spec
        if spec.adaptive is None:
            return None
        return spec.adaptive.course(tuple(one.id for one in spec.scenarios), self.run.outcomes, spec.attempts, spec.trust)

    def against(self) -> str:
        """For a run played against a base (``--against``), the comparison's verdict in words
        (``adaptive.Course.said``); else ``""``."""
        course = self.course()
        return "" if course is None else course.said(self.run.status())

    def base(self) -> str:
        """The base a run was played against, as agent/run; ``""`` for any other run."""
        adaptive = self.run.file.spec.adaptive
        match adaptive.until if adaptive is not None else None:
            case Against(agent=agent, run=run):
                return f"{agent}/{run}"
            case _:
                return ""

    def stopped(self) -> dict[str, str]:
        """Why each scenario of a run of ``--attempts auto`` got the attempts it got, in words, by id."""
        return self._stopped

    @cached_property
    def _stopped(self) -> dict[str, str]:
        course = self.course()
        if course is None:
            return {}
        status = self.run.status()
        return {one.scenario: one.said(status) for one in course.standings}

    def stop(self) -> str:
        """What stopped the run, when its budget did, in words; else ``""``."""
        match self.run.file.status:
            case Stopped(spent=spent):
                return Stop(spent).text()
            case _:
                return ""

    def allowance(self) -> str:
        """What a finished run spent of the budget it kept within, in words; ``""`` when it had
        none (a stopped run says its budget in ``stop``)."""
        match self.run.file.status:
            case Complete(budget=budget, reached=None) if budget.set():
                return Allowance(budget).text(self.run.outcomes)
            case _:
                return ""

    def reached(self) -> str:
        """For a finished run whose spend reached or crossed its budget, that, in words; else ``""``."""
        match self.run.file.status:
            case Complete(reached=Outlay() as reached):
                return Stop(reached).reached()
            case _:
                return ""

    def row(self, href: str) -> RunRow:
        """The run as one row of the index."""
        return Listed(self.run, self.totals()).row(href)

    def totals(self) -> Totals:
        """The few numbers of the run the index shows."""
        judged = [tally for tally in self.tallies().values() if tally.judged]
        every = self._every
        return Totals(
            rate=self.rate(),
            passed=sum(tally.passed for tally in judged),
            judged=sum(tally.judged for tally in judged),
            attempts=len(self.attempts()),
            tokens=every.input + every.output,
            cost=every.cost(),
            causes={str(cause): count for cause, count in self.breakdown().counts.items()},
        )

    @cached_property
    def _every(self) -> Sum:
        """Every request of the run summed."""
        return self._total.every()

    def dialogues(self) -> dict[str, list[DialogueView]]:
        """Every attempt in full, by scenario id, for the scenario window."""
        found: dict[str, list[DialogueView]] = {scenario: [] for scenario in self.by_scenario()}
        for scenario, attempt in self.said():
            found[scenario].append(attempt.dialogue())
        return found

    def said(self) -> Iterator[tuple[str, Attempt]]:
        """Each attempt in full with its scenario's id, in the order of ``by_scenario``, one at a
        time: those held unsaid (``placed.Placed``) read again from their lines, through one open
        file, in full."""
        columns = self._digest.columns
        trust = self.run.file.spec.trust
        outcomes = self.run.outcomes
        match outcomes:
            case Placed():
                # The rows walked twice, side by side (one walk gives the lines to read, the other
                # checks each against its line), not listed: a list held a row for every attempt.
                def rows() -> Iterator[tuple[str, AttemptDigest]]:
                    for scenario, column in columns.items():
                        for row in column.rows:
                            yield scenario, row

                for (scenario, row), outcome in zip(rows(), outcomes.full(row.index for _, row in rows()), strict=True):
                    if (outcome.scenario, outcome.attempt) != (row.scenario, row.attempt):
                        raise ConfigurationError(f"{outcomes.path}: changed while it was read: read it again")
                    yield scenario, Attempt(outcome, trust)
            case _:
                for scenario, column in columns.items():
                    for row in column.rows:
                        yield scenario, Attempt(outcomes[row.index], trust)

    def _spend(self, summed: Sum, sizes: Ascending, seconds: Ascending) -> SpendView:
        """``sizes``: input plus output tokens of each reported request; both ascending (the
        digest's ``Ranked`` are), and summed up as they come (``Ordered``)."""
        return SpendView(
            tokens=summed.tokens(),
            cost=summed.cost(),
            seconds=Ordered(seconds).view(),
            per_request=Ordered(sizes).view(),
        )

    def _group(self, scenario: str) -> str:
        # A variant's folder is its scenario's: a value may hold a "/".
        return scenario.rsplit("/", 1)[0] if "/" in scenario else ""

    def _variant(self, spec: Scenario | None) -> dict[str, Any]:
        match spec:
            case Scenario(variant=Variant(of=of, values=values)):
                return {"variant": {key: Value(value).text() for key, value in values.items()}, "variant_of": of}
            case _:
                return {}

    def _scenario(
        self,
        index: int,
        scenario: str,
        column: Column,
        spec: Scenario | None,
        tabled: Callable[[Sequence[AttemptDigest], list[str], tuple[str, ...]], list[AttemptRow]],
    ) -> ScenarioView:
        rows, count = column.rows, column.count
        claims = self._claimed(count)
        tally = count.tally()
        interval = Wilson(tally).interval()
        status: Literal["always", "flaky", "never", "not_judged"] = (
            "not_judged" if tally.judged == 0 else "always" if tally.passed == tally.judged else "never" if tally.passed == 0 else "flaky"
        )
        names = [row.text for row in claims]
        sums = self.sums().get(scenario) or Sums(Sum(), Sum(), Sum())
        agent = self._spend(sums.agent, column.sizes, column.seconds)
        # One walk of the rows (each made again from the digest's columns as it is walked) for the
        # first failing attempt, the turns and the counts of stops and causes.
        first: int | None = None
        turns: list[float] = []
        stops: Counter[str] = Counter()
        causes: Counter[str] = Counter()
        for row in rows:
            if first is None and row.status == "failed":
                first = row.attempt
            turns.append(float(row.turns))
            stops[row.stop] += 1
            if row.cause is not None:
                causes[row.cause] += 1
        return ScenarioView(
            index=index,
            id=scenario,
            group=self._group(spec.variant.of if spec and spec.variant else scenario),
            tags=list(spec.tags) if spec else [],
            **self._variant(spec),
            passed=tally.passed,
            judged=tally.judged,
            not_judged=count.not_judged,
            rate=None if interval is None else IntervalView(estimate=interval.estimate, low=interval.low, high=interval.high),
            status=status,
            claims=claims,
            claims_held=Held(sum(row.held for row in claims), sum(row.decided for row in claims)).view(),
            attempts=tabled(rows, names, column.texts),
            first=first if first is not None else rows[0].attempt if rows else None,
            turns=Percentiles(tuple(turns)).view(),
            agent=agent,
            answer_p50=agent.seconds.p50,
            cost=sums.every().cost(),
            stops=dict(stops),
            causes=dict(causes),
            adaptive=self.stopped().get(scenario, ""),
        )

    def _rows(self, rows: Sequence[AttemptDigest], names: list[str], texts: tuple[str, ...]) -> Iterator[AttemptRow]:
        """A scenario's attempts as its table shows them, one at a time. Rows that mark alike (most
        attempts of a scenario do) share one list of marks: a view is never changed, and encodes
        the same."""
        shared: dict[tuple[int, ...], list[Literal["held", "failed", "none"]]] = {}
        for row in rows:
            yield self._row(row, names, texts, shared)

    def _row(
        self, row: AttemptDigest, names: list[str], texts: tuple[str, ...], shared: dict[tuple[int, ...], list[Literal["held", "failed", "none"]]]
    ) -> AttemptRow:
        """An attempt as its scenario's table shows it: its marks in the order of the claims."""
        marks = shared.get(row.marks)
        if marks is None:
            marked = row.marked(texts)
            marks = shared[row.marks] = [marked.get(name, "none") for name in names]
        return AttemptRow(
            attempt=row.attempt,
            status=row.status,
            why=row.why,
            stop=row.stop,
            turns=row.turns,
            seconds=row.seconds,
            marks=marks,
            cause=row.cause or "",
        )

    def _claimed(self, count: Count) -> list[ClaimRow]:
        """A scenario's claim rows from its counts: what ``_decided`` makes of its attempts (the
        counts keep the claims in the order it meets them, ``counted.Counting``)."""
        rows: list[ClaimRow] = []
        for text, claim in count.claims.items():
            kept, out_of = claim.held, claim.decided
            interval = Wilson(Tally(kept, out_of)).interval()
            rows.append(
                ClaimRow(
                    text=text,
                    by=claim.by,  # type: ignore[arg-type]
                    held=kept,
                    decided=out_of,
                    holds=Held(kept, out_of).holds(),
                    rate=None if interval is None else IntervalView(estimate=interval.estimate, low=interval.low, high=interval.high),
                )
            )
        return rows

    def claims(self, attempts: Iterable[Attempt]) -> list[ClaimRow]:
        """Each claim of a scenario over these attempts: held out of decided (trusted) ones."""
        return self._decided(attempts)[0]

    def _decided(self, attempts: Iterable[Attempt]) -> tuple[list[ClaimRow], list[dict[str, Literal["held", "failed"]]]]:
        """The claim rows, and each attempt's marks (as ``Attempt.marks``: a claim it decided
        and trusted held or failed, the others "none"), in one walk of every decision."""
        order: dict[str, str] = {}
        later: dict[str, str] = {}
        held: dict[str, int] = {}
        decided: dict[str, int] = {}
        marks: list[dict[str, Literal["held", "failed"]]] = []
        for attempt in attempts:
            trust = attempt.trust
            mark: dict[str, Literal["held", "failed"]] = {}
            match attempt.outcome.result:
                case Verdict(claims=claims):
                    for claim in claims:
                        text = claim.claim
                        if text not in order:
                            order[text] = claim.by
                        # What ``claim.trusted(trust)`` says, with no call or match: every claim of every attempt.
                        confidence = claim.confidence
                        if not claim.doubt and (type(confidence) is not Confidence or confidence.value >= trust):
                            decided[text] = decided.get(text, 0) + 1
                            held[text] = held.get(text, 0) + claim.held
                            mark[text] = "held" if claim.held else "failed"
                case NoVerdict(checks=checks):
                    # Checks decided by code though a model failed count too; a verdict gives the order.
                    for claim in checks:
                        text = claim.claim
                        if text not in later:
                            later[text] = claim.by
                        if claim.doubt:  # a tool check no reply could decide (``unseen``) is not one
                            continue
                        decided[text] = decided.get(text, 0) + 1
                        held[text] = held.get(text, 0) + claim.held
                        if claim.trusted(trust):
                            mark[text] = "held" if claim.held else "failed"
                case Failed():
                    pass
            marks.append(mark)
        for text, by in later.items():
            order.setdefault(text, by)
        rows: list[ClaimRow] = []
        for text, by in order.items():
            kept, out_of = held.get(text, 0), decided.get(text, 0)
            interval = Wilson(Tally(kept, out_of)).interval()
            rows.append(
                ClaimRow(
                    text=text,
                    by=by,  # type: ignore[arg-type]
                    held=kept,
                    decided=out_of,
                    holds=Held(kept, out_of).holds(),
                    rate=None if interval is None else IntervalView(estimate=interval.estimate, low=interval.low, high=interval.high),
                )
            )
        return rows, marks


class Sums(msgspec.Struct, frozen=True, gc=False):
    """Some attempts' requests summed, by who made them."""

    agent: Sum
    user: Sum
    judge: Sum

    def every(self) -> Sum:
        return self.agent + self.user + self.judge


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
    to ``results/``, where the index is written. ``comparable`` says whether a comparison of two
    runs (base, candidate) would be sound: ``comparison.comparable``, given by the caller (this
    module is below the comparison's); ``None`` takes every pair of finished runs of an agent as
    comparable. The trend joins a run to the one before it only when both finished and they are
    comparable, and the pair the index offers to compare is a comparable one.
    """

    runs: tuple[Read | Listed, ...]
    unread: tuple[Unread, ...] = ()
    comparisons: tuple[str, ...] = ()
    comparable: Callable[[Read, Read], bool] | None = None

    def view(self) -> IndexView:
        read = {(self._read(run).file.spec.agent, self._read(run).file.spec.id): self._read(run) for run in self.runs}
        rows = [self._row(run) for run in self.runs]
        rows.sort(key=lambda row: row.started, reverse=True)
        trends: dict[str, list[TrendPoint]] = {}
        before: dict[str, RunRow] = {}
        for row in sorted(rows, key=lambda row: row.started):
            last = before.get(row.agent)
            joined = last is not None and self._alike(read[(last.agent, last.run)], read[(row.agent, row.run)])
            trends.setdefault(row.agent, []).append(
                TrendPoint(
                    run=row.run,
                    started=row.started,
                    rate=None if row.rate is None else row.rate.estimate,
                    name=row.name,
                    finished=row.status == "finished",
                    joined=joined,
                )
            )
            before[row.agent] = row
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
            suggested=self.suggested(rows, read),
        )

    def _read(self, run: Read | Listed) -> Read:
        match run:
            case Listed(run=read):
                return read
            case Read():
                return run

    def _alike(self, base: Read, candidate: Read) -> bool:
        """Whether two runs of an agent may be compared: both finished, and sound to compare."""
        if base.status() != "finished" or candidate.status() != "finished":
            return False
        return True if self.comparable is None else self.comparable(base, candidate)

    def _row(self, run: Read | Listed) -> RunRow:
        match run:
            case Listed(run=read):
                return run.row(f"{read.file.spec.agent}/{read.file.spec.id}/report.html")
            case Read():
                return Summary(run).row(f"{run.file.spec.agent}/{run.file.spec.id}/report.html")

    def suggested(self, rows: list[RunRow], read: dict[tuple[str, str], Read] | None = None) -> Suggestion | None:
        """The pair the index offers to compare (``rows`` newest first): the newest run that has an
        earlier comparable one of the same agent (``_alike``), against the latest of those; with
        no comparable pair, none (the page then leaves the choice to the reader)."""
        for at, later in enumerate(rows):
            for earlier in rows[at + 1 :]:
                if earlier.agent != later.agent:
                    continue
                if read is None or self._alike(read[(earlier.agent, earlier.run)], read[(later.agent, later.run)]):
                    return Suggestion(base=earlier.run, candidate=later.run)
        return None


class Stop(msgspec.Struct, frozen=True):
    """A budget's stop in words: which budget, what was spent of what it allowed, the most one
    attempt spent of it, and what could not be counted (requests unpriced for the cost, requests
    that reported no tokens for the tokens)."""

    spent: Outlay

    def text(self) -> str:
        """The stop of a run its budget left unfinished."""
        return "stopped by budget: " + self.amounts()

    def reached(self) -> str:
        """A run that played every attempt and reached or crossed its budget doing so."""
        return "reached its budget: " + self.amounts() + "; every planned attempt was played"

    def amounts(self) -> str:
        spent = self.spent
        most = spent.most
        match spent.budget:
            case "cost":
                said = f"{Dollars(spent.cost).text()} of {Dollars(spent.allowed).text()} (cost)"
                each = f", ${most:.2f} the most one attempt cost" if most else ""
            case "tokens":
                said = f"{spent.tokens:,} of {spent.allowed:,.0f} tokens (tokens)"
                each = f", {most:,.0f} the most one attempt took" if most else ""
            case "minutes":
                said = f"{Duration(spent.minutes).text()} of {Duration(spent.allowed).text()} (minutes)"
                each = f", {Duration(most).text()} the longest one attempt took" if most else ""
        return said + each + self.uncounted()

    def more(self, left: int, places: int = 1) -> str:
        """The option that lets the run play its ``left`` attempts (at least one more), when each
        spends no more than the most one has so far: what was spent and that much again for each,
        and a tenth more, rounded up (cost to the cent, tokens and minutes to two significant
        figures), so the run ends within it rather than on it. Minutes count a play alone: as many
        rounds of ``places`` attempts at once as the rest takes (the agent's places as the run
        starts, ``Limits.starting``: places with no cap may grow from there), each the longest one
        took, and a tenth more. With no attempt's spend to go by, twice the budget."""
        spent = self.spent
        left = max(left, 1)
        if not spent.most:
            allowed = max(spent.allowed, float(Decimal(spent.cost)), float(spent.tokens), spent.minutes) * 2
            amount = f"{allowed:.2f}" if spent.budget == "cost" else f"{allowed:g}"
            return f"--max-{spent.budget} {amount}"
        tenth = Decimal("1.1")
        match spent.budget:
            case "cost":
                needed = (Decimal(spent.cost) + Decimal(repr(spent.most)) * left) * tenth
                amount = f"{needed.quantize(Decimal('0.01'), rounding=ROUND_CEILING)}"
            case "tokens":
                tokens = Upward((spent.tokens + math.ceil(spent.most) * left) * tenth).figures()
                amount = f"{tokens.to_integral_value(rounding=ROUND_CEILING):f}"
            case "minutes":
                rounds = -(-left // max(places, 1))
                amount = f"{Upward(rounds * Decimal(repr(spent.most)) * tenth).figures():f}"
        return f"--max-{spent.budget} {amount}"

    def rest(self, left: int, places: int, budget: Budget, outcomes: Iterable[Outcome]) -> str:
        """The options that let the run play its ``left`` attempts: the budget that stopped it
        raised (``more``), and each other limit of ``budget`` that the rest would cross raised too,
        by the most one of ``outcomes`` (the attempts kept) spent of it; a limit the rest fits in
        is left out, as the resume keeps it from run.json."""
        spending = budget.spending(outcomes)
        spent = self.spent
        options = []
        others: tuple[tuple[Which, float, float], ...] = (
            ("cost", budget.cost, float(spending.most_cost)),
            ("tokens", float(budget.tokens), float(spending.most_tokens)),
            ("minutes", budget.minutes, spending.longest / 60.0),
        )
        for which, allowed, most in others:
            if which == spent.budget:
                options.append(self.more(left, places))
            elif allowed and most:
                other = Stop(Outlay(which, allowed, str(spending.cost), tokens=spending.tokens, most=most))
                option = other.more(left, places)
                if Decimal(option.split()[1]) > Decimal(repr(allowed)):
                    options.append(option)
        return " ".join(options)

    def uncounted(self) -> str:
        """What the budget that stopped the run could not count, or ``""``."""
        spent = self.spent
        if spent.budget == "cost" and spent.unpriced:
            many = "s" if spent.unpriced != 1 else ""
            return f"; {spent.unpriced} request{many} unpriced: the cost could not be checked in full"
        if spent.budget == "tokens" and spent.unreported:
            many = "s" if spent.unreported != 1 else ""
            return f"; {spent.unreported} request{many} not reported: their tokens are not counted"
        return ""


class Dollars(msgspec.Struct, frozen=True):
    """An amount in US dollars as a budget's line says it: to the cent, or every figure when it is
    below a cent and not nothing (a budget of 1e-9 is never said as $0.00)."""

    amount: float | Decimal | str

    def text(self) -> str:
        value = Decimal(str(self.amount))
        if value == 0 or abs(value) >= Decimal("0.01"):
            return f"${value:.2f}"
        return f"${value.normalize():f}"


class Upward(msgspec.Struct, frozen=True):
    """An amount a hint names, rounded up to two significant figures: 3300 stays 3300, 686.4 is 690,
    0.0733 is 0.074."""

    amount: Decimal

    def figures(self) -> Decimal:
        amount = self.amount
        if amount <= 0:
            return Decimal(0)
        step = Decimal(1).scaleb(amount.adjusted() - 1)
        return ((amount / step).to_integral_value(rounding=ROUND_CEILING) * step).normalize()


class Duration(msgspec.Struct, frozen=True):
    """A time a budget message says, given in minutes: under a minute in seconds (``3 s``,
    ``0.4 s``), else in minutes (``2.5 minutes``), so a small budget never reads as 0.0."""

    minutes: float

    def text(self) -> str:
        seconds = self.minutes * 60.0
        if not math.isfinite(seconds):
            return "? s"
        if seconds < 9.95:
            return f"{seconds:.1f}".removesuffix(".0") + " s"
        if seconds < 59.5:
            return f"{seconds:.0f} s"
        said = f"{self.minutes:.1f}".removesuffix(".0")
        return said + (" minute" if said == "1" else " minutes")


class Allowance(msgspec.Struct, frozen=True):
    """What a run its budget did not stop spent of it, in words (cost and tokens: the whole run's).
    A run that reached its budget all the same says so with ``Stop.reached``."""

    budget: Budget

    def text(self, outcomes: Iterable[Outcome]) -> str:
        budget = self.budget
        spending = budget.spending(outcomes)
        cost, tokens = str(spending.cost), spending.tokens
        said = []
        if budget.cost:
            uncounted = Stop(Outlay("cost", budget.cost, cost, spending.unpriced)).uncounted()
            said.append(f"{Dollars(spending.cost).text()} of {Dollars(budget.cost).text()} (cost){uncounted}")
        if budget.tokens:
            uncounted = Stop(Outlay("tokens", budget.tokens, cost, 0, tokens, spending.unreported)).uncounted()
            said.append(f"{tokens:,} of {budget.tokens:,} tokens (tokens){uncounted}")
        if budget.minutes:
            said.append(f"within {Duration(budget.minutes).text()} (minutes)")
        return "budget: spent " + ", ".join(said)


class Totals(msgspec.Struct, frozen=True):
    """What the index shows of a run's attempts: its pass rate, passed of judged, attempts kept,
    tokens and cost; and the attempts that did not pass by cause (``causes.py``: every cause,
    through the run's trust), so the run's folder says whose they were without a reader having to
    derive it (empty in a ``summary.json`` written before causes, summed anew when its stamp
    changes)."""

    rate: IntervalView | None
    passed: int
    judged: int
    attempts: int
    tokens: int
    cost: CostView
    causes: dict[str, int] = {}

    @classmethod
    def counted(cls, counted: Counted) -> Totals:
        """The totals of a run counted in one pass over its file (``counted.py``), holding none of
        its attempts: the same numbers ``Summary.totals`` sums from every attempt held."""
        judged = [tally for tally in counted.tallies().values() if tally.judged]
        interval = counted.headline().interval()
        agent, user, judge = counted.total()
        every = agent + user + judge
        return cls(
            rate=None if interval is None else IntervalView(estimate=interval.estimate, low=interval.low, high=interval.high),
            passed=sum(tally.passed for tally in judged),
            judged=sum(tally.judged for tally in judged),
            attempts=counted.kept(),
            tokens=every.input + every.output,
            cost=every.cost(),
            causes={str(cause): count for cause, count in counted.breakdown().counts.items()},
        )


class Listed(msgspec.Struct, frozen=True):
    """A run as the index lists it: the run (its attempts not needed) and its totals."""

    run: Read
    totals: Totals

    def row(self, href: str) -> RunRow:
        spec = self.run.file.spec
        totals = self.totals
        return RunRow(
            agent=spec.agent,
            run=spec.id,
            href=href,
            started=self.run.file.status.started,
            status=self.run.status(),
            rate=totals.rate,
            passed=totals.passed,
            judged=totals.judged,
            scenarios=len(spec.scenarios),
            attempts=totals.attempts,
            tokens=totals.tokens,
            cost=totals.cost,
            seconds=self.run.seconds(),
            planned=len(spec.scenarios) * spec.attempts,
            name=spec.name,
        )


class Stamp(msgspec.Struct, frozen=True):
    """What ``attempts.jsonl`` was like: its size and modification time (0 and 0: no such file)."""

    size: int
    modified: int


class Summed(msgspec.Struct, frozen=True):
    """``summary.json``: a run's totals, and the stamp of the ``attempts.jsonl`` they sum."""

    stamp: Stamp
    totals: Totals
    format: int = 1


_SUMMED = msgspec.json.Decoder(Summed)


class Listing(msgspec.Struct, frozen=True):
    """Every run under ``results/`` as the index lists it, from each run's ``summary.json`` while
    it matches the run's attempts, else from the run read whole (and its summary written anew)."""

    results: Path

    MOST_BYTES: ClassVar[int] = 16 * 1024 * 1024  # a larger summary.json is summed again, not read

    def every(self, known: tuple[Listed, ...] = ()) -> tuple[tuple[Listed, ...], tuple[Unread, ...]]:
        """The runs, oldest first, and the folders that could not be read; those ``known`` (just
        summed by the caller) as they are given, their folders not read again."""
        listed: list[Listed] = []
        unread: list[Unread] = []
        given = {one.run.folder: one for one in known}
        for folder in Runs(self.results).folders():
            found = given[folder] if folder in given else self.one(folder)
            match found:
                case Listed():
                    listed.append(found)
                case Unread():
                    unread.append(found)
        listed.sort(key=lambda one: (one.run.file.status.started, one.run.file.spec.id))
        return tuple(listed), tuple(unread)

    def one(self, folder: Path) -> Listed | Unread:
        journal = RunJournal(folder)
        try:
            stamp = self.stamp(folder)  # before anything is read: a later append makes it stale
            file = journal.run()
            fresh = self._fresh(folder, stamp)
        except ConfigurationError as error:
            return Unread(folder, str(error))
        except OSError as error:
            return Unread(folder, f"{folder}: cannot be read: {error.strerror}")
        playing = journal.in_use()
        match fresh:
            case (totals,):
                return Listed(Read(folder, file, (), 0, playing), totals)
            case _:
                pass
        # Counted in one pass over its attempts, none of them held (a run of 10,000 held whole to
        # sum its totals took 80 MB); a file convy will not read is said as ``Runs`` says it.
        try:
            counted = Counted.of(folder, file.spec)
        except ConfigurationError as error:
            match Runs(self.results).one(folder):
                case Unread() as unread:
                    return unread
                case _:
                    return Unread(folder, str(error))
        totals = Totals.counted(counted)
        if not playing:
            self._written(folder, Summed(stamp, totals))
        return Listed(Read(folder, file, (), counted.lines.broken, playing, counted.lines.note()), totals)

    @staticmethod
    def kept(summary: Summary) -> None:
        """Keep the totals of a run just summed in its ``summary.json``."""
        folder = summary.run.folder
        Listing._written(folder, Summed(Listing.stamp(folder), summary.totals()))

    @staticmethod
    def stamp(folder: Path) -> Stamp:
        try:
            found = os.stat(folder / "attempts.jsonl")
        except FileNotFoundError:
            return Stamp(0, 0)
        return Stamp(found.st_size, found.st_mtime_ns)

    def _fresh(self, folder: Path, stamp: Stamp) -> tuple[Totals, ...]:
        """The totals ``summary.json`` keeps, if they sum the attempts as they are now; none when
        it is missing, torn, of another format or stale."""
        try:
            summed = _SUMMED.decode(RegularFile(folder / "summary.json").data(self.MOST_BYTES))
        except (OSError, msgspec.MsgspecError):  # missing, a FIFO or folder in its place, too big, torn
            return ()
        return (summed.totals,) if summed.format == 1 and summed.stamp == stamp else ()

    @staticmethod
    def _written(folder: Path, summed: Summed) -> None:
        try:
            Replaced(folder / "summary.json").written((msgspec.json.encode(summed),))
        except OSError:
            pass  # a folder that cannot be written to is summed again next time
