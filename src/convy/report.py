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

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cached_property
from typing import Any, Literal

import msgspec

from convy.adaptive import Against, Course
from convy.agreement import Consensus
from convy.attempt import Attempt, Sum
from convy.budget import Outlay
from convy.causes import Breakdown
from convy.counted import Count
from convy.digest import AttemptDigest, Attempts, Column, Digest, Status
from convy.judge import Confidence, Failed, NoVerdict, Verdict
from convy.labels import Agreement, RunLabels
from convy.passing import RunVerdict
from convy.percentiles import Ordered, Percentiles
from convy.placed import Placed
from convy.problems import ConfigurationError
from convy.ranked import Ascending, InOrder, Merged
from convy.records import Complete, Stopped
from convy.runs import Read
from convy.scenario import Scenario
from convy.spent import Allowance, Stop
from convy.stats import Consistency, Headline, Noise, Tally, Wilson
from convy.totals import Listed, Totals
from convy.variants import Value, Variant
from convy.views import (
    AgreementView,
    AttemptRow,
    ClaimRow,
    DialogueView,
    Dimension,
    HeaderView,
    HeldView,
    IntervalView,
    JudgingView,
    NoiseView,
    RunRow,
    RunView,
    ScenarioView,
    SkipGroup,
    SpendView,
    TimeView,
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
    the end of a run and ``convy report`` hold about 25 bytes an attempt (measured in bench/README.md).
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
        return self._verdict

    @cached_property
    def _verdict(self) -> RunVerdict:
        # Found once: the end of a run asks for it four times (the command's lines and exit code,
        # the page's header), and each walked every attempt's row twice.
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
        breakdown = self.breakdown()  # one walk of the rows for its two figures
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
            causes=breakdown.views(),
            not_passed=breakdown.not_passed(),
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

    def order(self) -> Iterator[tuple[str, int]]:
        """Each attempt's scenario id and number, in the order ``said`` gives the attempts, from
        their rows alone (no line read): what a report's index of dialogues is written from."""
        for scenario, column in self._digest.columns.items():
            for row in column.rows:
                yield scenario, row.attempt

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


