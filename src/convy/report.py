"""Runs read back, and summed up into the numbers the pages show.

``Runs`` reads every run folder under ``results/`` with the run folder's own decoder: a torn or
unreadable line is skipped and counted, a folder that cannot be read at all is listed with its
reason, and nothing here raises for a bad folder. ``Summary`` makes a run's view records: every
number and decision of its report, per run, scenario, claim and attempt (statistics.md).
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Literal

import msgspec

from convy.agent import Call, Cost, NotReported, NoUsage, Reported, Thought, Unpriced, Usage
from convy.bench import Complete, Interrupted, RunFile, RunJournal, Running
from convy.busy import Wait
from convy.dialog import Confidence, Failed, Grade, NoConfidence, NoGrade, NoVerdict, Turn, Verdict
from convy.problems import ConfigurationError
from convy.scenario import Outcome, Scenario
from convy.stats import Consistency, Headline, Noise, Tally, Wilson
from convy.views import (
    AttemptRow,
    ClaimRow,
    ComparisonLink,
    HeldView,
    IndexView,
    Suggestion,
    TrendPoint,
    CostView,
    DecisionView,
    DialogueView,
    Dimension,
    HeaderView,
    IntervalView,
    NoiseView,
    RunRow,
    RunView,
    ScenarioView,
    SpanView,
    SpendView,
    SpreadView,
    StepView,
    TimeView,
    TokensView,
    TurnView,
)


class Read(msgspec.Struct, frozen=True):
    """One run folder, read: its ``run.json``, its attempts, and what could not be read."""

    folder: Path
    file: RunFile
    outcomes: tuple[Outcome, ...]
    broken: int
    playing: bool

    def status(self) -> Literal["finished", "interrupted", "running"]:
        """The run's status; a run marked running whose lock is free was killed: interrupted."""
        match self.file.status:
            case Complete():
                return "finished"
            case Interrupted():
                return "interrupted"
            case Running():
                return "running" if self.playing else "interrupted"

    def ended(self) -> str | None:
        match self.file.status:
            case Complete(ended=ended) | Interrupted(ended=ended):
                return ended
            case Running():
                return None


class Unread(msgspec.Struct, frozen=True):
    """A folder under ``results/`` that could not be read as a run, and why."""

    folder: Path
    reason: str


class Runs(msgspec.Struct, frozen=True):
    """Every run folder under ``results/``: ``results/<agent>/<run-id>/``."""

    results: Path

    def read(self) -> tuple[tuple[Read, ...], tuple[Unread, ...]]:
        """The runs that could be read, oldest first, and the folders that could not."""
        runs: list[Read] = []
        unread: list[Unread] = []
        if not self.results.is_dir():
            return (), ()
        for agent in sorted(path for path in self.results.iterdir() if path.is_dir() and path.name != "compare" and path.name != "export"):
            for folder in sorted(path for path in agent.iterdir() if path.is_dir()):
                found = self.one(folder)
                match found:
                    case Read():
                        runs.append(found)
                    case Unread():
                        unread.append(found)
        runs.sort(key=lambda run: (run.file.status.started, run.file.spec.id))
        return tuple(runs), tuple(unread)

    def one(self, folder: Path) -> Read | Unread:
        journal = RunJournal(folder)
        try:
            file = journal.run()
            kept = journal.kept()
            return Read(folder, file, kept.outcomes, kept.broken, journal.in_use())
        except ConfigurationError as error:
            return Unread(folder, str(error))
        except OSError as error:
            return Unread(folder, f"{folder}: cannot be read: {error.strerror}")


class Spread(msgspec.Struct, frozen=True):
    """Some values summed up: min, p50, p95, max (percentiles by linear interpolation)."""

    values: tuple[float, ...]

    def view(self) -> SpreadView:
        ordered = sorted(self.values)
        if not ordered:
            return SpreadView()
        return SpreadView(
            count=len(ordered), min=ordered[0], p50=self._at(ordered, 0.5), p95=self._at(ordered, 0.95), max=ordered[-1]
        )

    def _at(self, ordered: list[float], share: float) -> float:
        position = share * (len(ordered) - 1)
        low = math.floor(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


class Spent(msgspec.Struct, frozen=True):
    """The usage of some requests summed honestly: tokens by kind, cost with its source, and the
    requests nobody priced counted apart."""

    usages: tuple[Usage | NoUsage, ...]

    def tokens(self) -> TokensView:
        reported = self.reported()
        cached = [count for usage in reported for count in Counted(usage.cached).found()]
        reasoning = [count for usage in reported for count in Counted(usage.reasoning).found()]
        given = sum(usage.input for usage in reported)
        taken = sum(usage.output for usage in reported)
        return TokensView(
            requests=len(self.usages),
            reported=len(reported),
            input=given,
            output=taken,
            cached=sum(cached) if cached else None,
            reasoning=sum(reasoning) if reasoning else None,
            total=given + taken if reported else None,
        )

    def cost(self) -> CostView:
        amounts: list[Decimal] = []
        sources: set[str] = set()
        unpriced = 0
        for usage in self.usages:
            match usage:
                case Usage(cost=Cost(amount=amount, source=source)):
                    amounts.append(amount)
                    sources.add(source)
                case Usage(cost=Unpriced()) | NoUsage():
                    unpriced += 1
        if not amounts:
            return CostView(priced=0, unpriced=unpriced, complete=unpriced == 0)
        source: Literal["provider", "computed", "mixed"] = "mixed" if len(sources) > 1 else sources.pop()  # type: ignore[assignment]
        return CostView(
            amount=str(sum(amounts, Decimal(0))), source=source, priced=len(amounts), unpriced=unpriced, complete=unpriced == 0
        )

    def total(self) -> int:
        return sum(usage.input + usage.output for usage in self.reported())

    def reported(self) -> list[Usage]:
        """The usages somebody reported (``NoUsage`` left out)."""
        found: list[Usage] = []
        for usage in self.usages:
            match usage:
                case Usage():
                    found.append(usage)
                case NoUsage():
                    pass
        return found


class Counted(msgspec.Struct, frozen=True):
    """A token count that may not have been reported."""

    count: int | NotReported

    def found(self) -> tuple[int, ...]:
        match self.count:
            case int():
                return (self.count,)
            case NotReported():
                return ()


class Took(msgspec.Struct, frozen=True):
    """A duration that may not have been reported, as the pages show it (``None``: not given)."""

    seconds: float | NotReported

    def value(self) -> float | None:
        match self.seconds:
            case NotReported():
                return None
            case _:
                return float(self.seconds)


class Attempt(msgspec.Struct, frozen=True):
    """One kept attempt seen through the run's trust threshold."""

    outcome: Outcome
    trust: float

    def status(self) -> Literal["passed", "failed", "not_judged"]:
        return self.outcome.status(self.trust)

    def why(self) -> str:
        """Why it is not judged (``user``, ``judge``, ``busy``, ``not_trusted``), failed
        (``agent`` or ``claim``), or passed (``""``)."""
        match self.outcome.result:
            case NoVerdict(who=who):
                return who
            case Failed():
                return "agent"
            case Verdict() as verdict:
                match verdict.status(self.trust):
                    case "not_trusted":
                        return "not_trusted"
                    case "failed":
                        return "claim"
                    case "passed":
                        return ""

    def marks(self, claims: list[str]) -> list[Literal["held", "failed", "none"]]:
        decided: dict[str, bool] = {}
        match self.outcome.result:
            case Verdict(claims=decisions):
                decided = {decision.claim: decision.held for decision in decisions if decision.trusted(self.trust)}
            case _:
                pass
        return ["none" if claim not in decided else "held" if decided[claim] else "failed" for claim in claims]

    def requests(self) -> tuple[Usage | NoUsage, ...]:
        """What every request of the attempt took: the agent's answers, the user model's, the judge's."""
        return self.agent_usage() + self.user_usage() + self.outcome.judge_requests

    def agent_usage(self) -> tuple[Usage | NoUsage, ...]:
        return tuple(turn.answer.usage for turn in self.outcome.transcript.turns)

    def user_usage(self) -> tuple[Usage | NoUsage, ...]:
        """Every request of the simulated user's model: one per turn it wrote, and the one that ended it."""
        return tuple(turn.user_usage for turn in self.outcome.transcript.turns if not turn.scripted) + self.outcome.user_ending

    def waited(self, who: str) -> float:
        return math.fsum(wait.seconds for wait in self.outcome.waits if wait.who == who)

    def time(self) -> TimeView:
        outcome = self.outcome
        turns = outcome.transcript.turns
        waiting = math.fsum(wait.seconds for wait in outcome.waits)
        agent = outcome.open_seconds + outcome.close_seconds + sum(turn.agent_seconds for turn in turns) - self.waited("agent")
        user = math.fsum(turn.user_seconds for turn in turns if not turn.scripted) + outcome.user_ending_seconds - self.waited("user")
        judge = outcome.judge_seconds - self.waited("judge")
        return TimeView(
            wall=outcome.seconds,
            agent=agent,
            user=user,
            judge=judge,
            waiting=waiting,
            unaccounted=outcome.seconds - agent - user - judge - waiting,
        )

    def dialogue(self) -> DialogueView:
        """The attempt in full, for the scenario window."""
        outcome = self.outcome
        turns = [self._turn(turn) for turn in outcome.transcript.turns]
        decisions: list[DecisionView] = []
        failed_on: str | None = None
        match outcome.result:
            case Verdict(claims=claims):
                decisions = [
                    DecisionView(
                        claim=claim.claim,
                        by=claim.by,
                        held=claim.held,
                        reason=claim.reason,
                        confidence=self._confidence(claim.confidence),
                        grade=self._grade(claim.grade),
                        trusted=claim.trusted(self.trust),
                    )
                    for claim in claims
                ]
            case Failed(reason=reason, message=message):
                failed_on = message or None
                decisions = [DecisionView(claim="the agent answered", by="code", held=False, reason=reason, confidence=None, grade=None, trusted=True)]
            case NoVerdict(who=who, reason=reason):
                decisions = [DecisionView(claim=f"not judged ({who})", by="code", held=False, reason=reason, confidence=None, grade=None, trusted=False)]
        usages = self.requests()
        return DialogueView(
            scenario=outcome.scenario,
            attempt=outcome.attempt,
            status=self.status(),
            why=self.why(),
            stop=outcome.stop,
            started=outcome.started,
            seconds=outcome.seconds,
            turns=turns,
            failed_on=failed_on,
            decisions=decisions,
            spans=self._spans(),
            tokens=Spent(usages).tokens(),
            cost=Spent(usages).cost(),
        )

    def _turn(self, turn: Turn) -> TurnView:
        steps = [self._step(step) for step in turn.answer.steps]
        thoughts = sum(1 for step in steps if step.kind == "thought")
        return TurnView(
            user=turn.message,
            scripted=turn.scripted,
            agent=turn.answer.text,
            steps=steps,
            thoughts=thoughts,
            calls=len(steps) - thoughts,
            agent_start=turn.agent_start,
            agent_seconds=turn.agent_seconds,
            user_start=turn.user_start,
            user_seconds=turn.user_seconds,
            agent_tokens=Spent((turn.answer.usage,)).tokens(),
            user_tokens=Spent(() if turn.scripted else (turn.user_usage,)).tokens(),
            cost=Spent((turn.answer.usage,) + (() if turn.scripted else (turn.user_usage,))).cost(),
        )

    def _confidence(self, confidence: Confidence | NoConfidence) -> float | None:
        match confidence:
            case Confidence(value=value):
                return value
            case NoConfidence():
                return None

    def _grade(self, grade: Grade | NoGrade) -> str | None:
        match grade:
            case Grade(name=name):
                return name
            case NoGrade():
                return None

    def _step(self, step: Thought | Call) -> StepView:
        match step:
            case Thought(text=text):
                return StepView(kind="thought", text=text)
            case Call(name=name, arguments=arguments, result=result, seconds=seconds):
                shown: str | None = None
                match result:
                    case Reported(value=value):
                        shown = msgspec.json.encode(value).decode()
                return StepView(
                    kind="call",
                    name=name,
                    arguments=msgspec.json.encode(arguments).decode(),
                    result=shown,
                    seconds=Took(seconds).value(),
                )

    def _spans(self) -> list[SpanView]:
        outcome = self.outcome
        spans: list[SpanView] = []
        for number, turn in enumerate(outcome.transcript.turns, start=1):
            if not turn.scripted:
                spans.append(SpanView(lane="user", start=turn.user_start, seconds=turn.user_seconds, label=f"user model, turn {number}"))
            spans.append(SpanView(lane="agent", start=turn.agent_start, seconds=turn.agent_seconds, label=f"agent, turn {number}"))
        if outcome.judge_seconds > 0:
            spans.append(SpanView(lane="judge", start=outcome.judge_start, seconds=outcome.judge_seconds, label="judge"))
        spans.extend(self._wait(wait) for wait in outcome.waits)
        return spans

    def _wait(self, wait: Wait) -> SpanView:
        why = {"busy": "for a busy service", "pace": "for its per-minute pace", "place": "for a free place"}[wait.why]
        return SpanView(lane="waiting", start=wait.start, seconds=wait.seconds, label=f"{wait.who} waiting {why}")


class Summary(msgspec.Struct, frozen=True):
    """A run summed up: the view records of its report."""

    run: Read

    def attempts(self) -> tuple[Attempt, ...]:
        return tuple(Attempt(outcome, self.run.file.spec.trust) for outcome in self.run.outcomes)

    def by_scenario(self) -> dict[str, list[Attempt]]:
        grouped: dict[str, list[Attempt]] = {scenario.id: [] for scenario in self.run.file.spec.scenarios}
        for attempt in sorted(self.attempts(), key=lambda one: (one.outcome.scenario, one.outcome.attempt)):
            grouped.setdefault(attempt.outcome.scenario, []).append(attempt)
        return grouped

    def tallies(self) -> dict[str, Tally]:
        """Passed out of judged, per scenario (not judged attempts left out)."""
        tallies: dict[str, Tally] = {}
        for scenario, attempts in self.by_scenario().items():
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
            stops=dict(Counter(attempt.outcome.stop for attempt in attempts)),
            consistency=[Dimension(k=k, pass_hat=consistency.pass_hat(k), pass_at=consistency.pass_at(k)) for k in consistency.ks()],
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
