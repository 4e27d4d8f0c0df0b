"""Runs as tables for a notebook: nine tables, each a ``Table`` of flat rows.

``Tables`` is a consumer of runs read back (``Runs.read``), like the report: it gives one table per
kind of thing a run holds — ``runs``, ``scenarios``, ``attempts``, ``turns``, ``claims``, ``votes``,
``tool_calls`` and ``model_requests`` — each a ``Table`` with its columns in a fixed order and its
rows as records, CSV or JSON Lines (docs/tables.md describes every column; the row types and ``Table`` are in rows.py).

Rows are not domain objects but data for outside: a value nobody gave, or one that does not apply
to the row, is ``None`` — an empty field in CSV, ``null`` in JSON Lines, a missing value in pandas
and polars. A cost is kept exact as a ``Decimal`` in the row and written as its exact digits, a
number in both files; a notebook reads it as a float.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from decimal import Decimal
from functools import cached_property
from typing import Any, ClassVar, Literal, get_args

import msgspec

from convy.agent import Asked, Call, Cost, NotReported, NoUsage, Reported, Step, Thought, Unpriced, Usage, aside
from convy.attempt import Attempt, DecidedClaim, Took
from convy.judge import Claim, Failed, NoVerdict, Verdict
from convy.report import Summary
from convy.rows import (
    EXACT_JSON,
    AttemptsRow,
    ClaimsRow,
    Lines,
    ModelRequestsRow,
    PausesRow,
    Row,
    RunsRow,
    ScenariosRow,
    Table,
    TableName,
    ToolCallsRow,
    TurnsRow,
    VotesRow,
)
from convy.runs import Read
from convy.scenario import Scenario
from convy.stats import Consistency, Tally, Wilson
from convy.transcript import Turn
from convy.variants import Variant


class UsageTotals(msgspec.Struct, frozen=True):
    """What a row says of some requests' usage, added up request by request (``Usages.totals``),
    so that a row of many attempts adds each attempt's and holds none of their requests: tokens over
    the requests that reported them (``None`` when none did), the priced requests' exact cost and
    their sources."""

    requests: int = 0
    reported: int = 0  # of them with a usage somebody reported, in full or in part
    tokens_in: int | None = None
    tokens_out: int | None = None
    tokens_cached: int | None = None
    tokens_reasoning: int | None = None
    priced: int = 0
    amount: Decimal = Decimal(0)
    sources: frozenset[Literal["provider", "computed"]] = frozenset()

    def __add__(self, other: UsageTotals) -> UsageTotals:
        return UsageTotals(
            self.requests + other.requests,
            self.reported + other.reported,
            _added(self.tokens_in, other.tokens_in),
            _added(self.tokens_out, other.tokens_out),
            _added(self.tokens_cached, other.tokens_cached),
            _added(self.tokens_reasoning, other.tokens_reasoning),
            self.priced + other.priced,
            self.amount + other.amount,
            self.sources | other.sources,
        )

    def cost(self) -> Decimal | None:
        """The priced requests' cost in US dollars, exact, with at least one decimal place so the
        column reads as a float even when the amount is whole."""
        if not self.priced:
            return None
        amount = self.amount
        return amount if amount.as_tuple().exponent < 0 else amount.quantize(Decimal("0.0"))  # type: ignore[operator]

    def source(self) -> Literal["provider", "computed", "mixed"] | None:
        match sorted(self.sources):
            case []:
                return None
            case ["provider"]:
                return "provider"
            case ["computed"]:
                return "computed"
            case _:
                return "mixed"

    def unpriced(self) -> int:
        return self.requests - self.priced


def _added(one: int | None, other: int | None) -> int | None:
    if one is None:
        return other
    return one if other is None else one + other


class Usages(msgspec.Struct, frozen=True):
    """The usage of some requests as a row says it (``UsageTotals``)."""

    usages: tuple[Usage | NoUsage, ...]

    def totals(self) -> UsageTotals:
        tokens_in: int | None = None
        tokens_out: int | None = None
        cached: int | None = None
        reasoning: int | None = None
        priced = reported = 0
        amount = Decimal(0)
        sources: set[Literal["provider", "computed"]] = set()
        for usage in self.usages:
            match usage:
                case Usage():
                    reported += 1
                    if "input" not in usage.unreported:
                        tokens_in = (tokens_in or 0) + usage.input
                    if "output" not in usage.unreported:
                        tokens_out = (tokens_out or 0) + usage.output
                    match usage.cached:
                        case int(count):
                            cached = (cached or 0) + count
                        case NotReported():
                            pass
                    match usage.reasoning:
                        case int(count):
                            reasoning = (reasoning or 0) + count
                        case NotReported():
                            pass
                    match usage.cost:
                        case Cost(amount=spent, source=source):
                            priced += 1
                            amount += spent
                            sources.add(source)
                        case Unpriced():
                            pass
                case NoUsage():
                    pass
        return UsageTotals(len(self.usages), reported, tokens_in, tokens_out, cached, reasoning, priced, amount, frozenset(sources))


class VariantColumns(msgspec.Struct, frozen=True):
    """A scenario's variant as the scenarios' and attempts' tables carry it: the scenario it was
    made from, and its values as one JSON object (a run's matrices differ in their keys, and a
    table's columns are fixed; docs/tables.md shows them made a column per key in pandas)."""

    scenario: Scenario | None

    def columns(self) -> dict[str, str | None]:
        match self.scenario:
            case Scenario(variant=Variant(of=of, values=values)):
                return {"variant_of": of, "variant": EXACT_JSON.encode(values).decode()}
            case _:
                return {"variant_of": None, "variant": None}


class AttemptRows(msgspec.Struct, frozen=True):
    """The rows one attempt gives the tables of attempts, turns, claims, tool calls and requests.

    ``scenario``, the attempt's scenario as the run holds it, places the checks of an attempt
    left without a verdict in its ``judge:`` list."""

    agent: str
    run: str
    attempt: Attempt
    scenario: Scenario | None = None

    def every_usage(self) -> tuple[Usage | NoUsage, ...]:
        return self.attempt.requests()

    def calls(self) -> int:
        return len(self.tool_calls())

    def row(self) -> AttemptsRow:
        outcome = self.attempt.outcome
        time = self.attempt.time()
        agent = Usages(self.attempt.agent_usage()).totals()
        user = Usages(self.attempt.user_usage()).totals()
        judge = Usages(outcome.judge_requests).totals()
        every = Usages(self.every_usage()).totals()
        claims: int | None = None
        held: int | None = None
        failure: str | None = None
        failed_on: str | None = None
        match outcome.result:
            case Verdict(claims=decided):
                claims = len(decided)
                held = sum(1 for claim in decided if claim.held)
            case Failed(reason=reason, message=message):
                failure = reason
                failed_on = message or None
            case NoVerdict(reason=reason):
                failure = reason
        return AttemptsRow(
            agent=self.agent,
            run=self.run,
            scenario=outcome.scenario,
            attempt=outcome.attempt,
            started=outcome.started,
            seconds=outcome.seconds,
            status=self.attempt.status(),
            why=self.attempt.why() or None,  # type: ignore[arg-type]
            cause=self.attempt.cause(),
            stop=outcome.stop,
            turns=len(outcome.transcript.turns),
            claims=claims,
            claims_held=held,
            failure=failure,
            failed_on=failed_on,
            agent_seconds=float(time.agent),
            user_seconds=float(time.user),
            judge_seconds=float(time.judge),
            waiting_seconds=float(time.waiting),
            agent_tokens_in=agent.tokens_in,
            agent_tokens_out=agent.tokens_out,
            agent_cost_usd=agent.cost(),
            user_tokens_in=user.tokens_in,
            user_tokens_out=user.tokens_out,
            user_cost_usd=user.cost(),
            judge_tokens_in=judge.tokens_in,
            judge_tokens_out=judge.tokens_out,
            judge_cost_usd=judge.cost(),
            requests=every.requests,
            tokens_in=every.tokens_in,
            tokens_out=every.tokens_out,
            cost_usd=every.cost(),
            unpriced_requests=every.unpriced(),
            tool_calls=self.calls(),
            **VariantColumns(self.scenario).columns(),
        )

    def turns(self) -> tuple[TurnsRow, ...]:
        rows: list[TurnsRow] = []
        for number, turn in enumerate(self.attempt.outcome.transcript.turns, start=1):
            agent = Usages(turn.answer.requests()).totals()
            user = Usages(self._user_usage(turn)).totals()
            kinds = [self._kind(step) for step in turn.answer.steps]
            rows.append(
                TurnsRow(
                    **self._keys(),
                    turn=number,
                    user_text=turn.message,
                    scripted=turn.scripted,
                    agent_text=turn.answer.text,
                    user_start=turn.user_start,
                    user_seconds=turn.user_seconds,
                    agent_start=turn.agent_start,
                    agent_seconds=turn.agent_seconds,
                    agent_tokens_in=agent.tokens_in,
                    agent_tokens_out=agent.tokens_out,
                    agent_tokens_cached=agent.tokens_cached,
                    agent_tokens_reasoning=agent.tokens_reasoning,
                    agent_cost_usd=agent.cost(),
                    user_tokens_in=user.tokens_in,
                    user_tokens_out=user.tokens_out,
                    user_cost_usd=user.cost(),
                    thoughts=kinds.count("thought"),
                    tool_calls=kinds.count("call"),
                )
            )
        return tuple(rows)

    def claims(self) -> tuple[ClaimsRow, ...]:
        """The decided claims of a verdict; of an attempt left without one, the checks code
        still decided; an attempt the agent failed has none."""
        match self.attempt.outcome.result, self.scenario:
            case Verdict(claims=decided), _:
                return tuple(self._claim(number, claim) for number, claim in enumerate(decided, start=1))
            case NoVerdict(checks=checks), Scenario() as scenario:
                return tuple(self._claim(number, claim) for number, claim in scenario.placed(checks))
            case _:
                return ()

    def votes(self) -> tuple[VotesRow, ...]:
        """Every vote of the decided claims that were made from several (repeats, a panel)."""
        rows: list[VotesRow] = []
        match self.attempt.outcome.result:
            case Verdict(claims=decided):
                for number, claim in enumerate(decided, start=1):
                    for place, vote in enumerate(claim.votes, start=1):
                        said = DecidedClaim(Claim(claim.claim, vote.held, vote.reason, vote.confidence, vote.grade))
                        quoted = vote.evidence
                        rows.append(
                            VotesRow(
                                **self._keys(),
                                claim=number,
                                vote=place,
                                judge=vote.judge,
                                held=vote.held,
                                reason=vote.reason,
                                confidence=said.confidence(),
                                grade=said.grade(),
                                evidence=None if quoted is None else quoted.quote,
                                evidence_found=quoted is not None and quoted.found,
                            )
                        )
            case _:
                pass
        return tuple(rows)

    def tool_calls(self) -> tuple[ToolCallsRow, ...]:
        rows: list[ToolCallsRow] = []
        outcome = self.attempt.outcome
        # The tool calls of each turn, and of the turn the agent broke off (when it said them).
        answers = [turn.answer for turn in outcome.transcript.turns]
        answers.extend(() if outcome.agent_ending is None else (outcome.agent_ending,))
        for number, answer in enumerate(answers, start=1):
            calls = 0
            for step_number, step in enumerate(answer.steps, start=1):
                match step:
                    case Call(name=name, arguments=arguments, result=result, seconds=seconds, error=error, source=source, approval=approval):
                        calls += 1
                        rows.append(
                            ToolCallsRow(
                                **self._keys(),
                                turn=number,
                                call=calls,
                                step=step_number,
                                name=name,
                                arguments=EXACT_JSON.encode(arguments).decode(),
                                result_reported=self._reported(result),
                                result=self._result(result),
                                seconds=Took(seconds).value(),
                                error=error or None,
                                source=source or None,
                                approval=approval or None,
                            )
                        )
                    case Thought():
                        pass
        return tuple(rows)

    def pauses(self) -> tuple[PausesRow, ...]:
        """Each pause the agent made to ask a person, turn by turn (the turn it broke off last)."""
        rows: list[PausesRow] = []
        outcome = self.attempt.outcome
        answers = [turn.answer for turn in outcome.transcript.turns]
        if outcome.agent_ending is not None:
            answers.append(outcome.agent_ending)
        pauses = 0
        for number, answer in enumerate(answers, start=1):
            for step_number, step in enumerate(answer.steps, start=1):
                if type(step) is not Asked:
                    continue
                pauses += 1
                spent = step.usage
                rows.append(
                    PausesRow(
                        **self._keys(),
                        turn=number,
                        pause=pauses,
                        step=step_number,
                        question=step.question,
                        options=EXACT_JSON.encode(list(step.options)).decode() if step.options else None,
                        tool=step.tool or None,
                        arguments=EXACT_JSON.encode(step.arguments).decode() if step.tool else None,
                        answer=step.answer or None,
                        by=step.by,
                        start=step.start,
                        seconds=step.seconds,
                        tokens_in=spent.input if type(spent) is Usage and not spent.unreported else None,
                        tokens_out=spent.output if type(spent) is Usage and not spent.unreported else None,
                    )
                )
        return tuple(rows)

    def model_requests(self) -> tuple[ModelRequestsRow, ...]:
        """Every request that took tokens: the agent's of each turn (one, or each of several), the simulated user's
        request of each turn it spoke and the one that ended the dialogue, and the judge's requests."""
        rows: list[ModelRequestsRow] = []
        turns = self.attempt.outcome.transcript.turns
        asked = [(number, turn, usage) for number, turn in enumerate(turns, start=1) for usage in turn.answer.requests()]
        for request, (number, turn, usage) in enumerate(asked, start=1):
            # A turn of several requests has its time as a whole, none of them its own.
            seconds = turn.agent_seconds if len(turn.answer.requests()) == 1 else None
            rows.append(self._request("agent", request, number, seconds, usage))
        broken = self.attempt.outcome.agent_ending
        if broken is not None:  # the turn the agent broke off, which no turn of the transcript holds
            for request, usage in enumerate(broken.requests(), start=len(asked) + 1):
                rows.append(self._request("agent", request, len(turns) + 1, None, usage))
        # The simulated user's: its message of each turn it spoke, and what its model did inside
        # the agent's turn (played a tool, answered a question: ``agent.aside``), turn by turn.
        asides = [turn.answer for turn in turns] + ([] if broken is None else [broken])
        request = 0
        for number, answer in enumerate(asides, start=1):
            spoke = turns[number - 1] if number <= len(turns) else None
            if spoke is not None and not spoke.scripted:
                request += 1
                rows.append(self._request("user", request, number, spoke.user_seconds, spoke.user_usage))
            for usage in aside(answer) if answer.steps else ():
                request += 1
                rows.append(self._request("user", request, number, None, usage))
        # The simulated user's last request, that ended the dialogue, belongs to no turn.
        for usage in self.attempt.outcome.user_ending:
            request += 1
            rows.append(self._request("user", request, None, self.attempt.outcome.user_ending_seconds, usage))
        for request, usage in enumerate(self.attempt.outcome.judge_requests, start=1):
            rows.append(self._request("judge", request, None, None, usage))
        return tuple(rows)

    def _keys(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "run": self.run,
            "scenario": self.attempt.outcome.scenario,
            "attempt": self.attempt.outcome.attempt,
        }

    def _user_usage(self, turn: Turn) -> tuple[Usage | NoUsage, ...]:
        """The simulated user's requests of a turn: its message (where it wrote it), and what its
        model did inside the agent's turn (answered a question, played a tool: ``agent.aside``)."""
        return (() if turn.scripted else (turn.user_usage,)) + (aside(turn.answer) if turn.answer.steps else ())

    def _kind(self, step: Step) -> Literal["thought", "call", "asked"]:
        match step:
            case Thought():
                return "thought"
            case Call():
                return "call"
            case Asked():
                return "asked"

    def _claim(self, number: int, claim: Claim) -> ClaimsRow:
        return ClaimsRow(
            **self._keys(),
            claim=number,
            text=claim.claim,
            by=claim.by,
            held=claim.held,
            trusted=claim.trusted(self.attempt.trust),
            reason=claim.reason,
            confidence=DecidedClaim(claim).confidence(),
            grade=DecidedClaim(claim).grade(),
            evidence=None if claim.evidence is None else claim.evidence.quote,
            evidence_found=claim.evidence is not None and claim.evidence.found,
            votes=len(claim.votes),
            votes_held=sum(1 for vote in claim.votes if vote.held),
            doubt=claim.doubt or None,
        )

    def _reported(self, result: Reported | NotReported) -> bool:
        match result:
            case Reported():
                return True
            case NotReported():
                return False

    def _result(self, result: Reported | NotReported) -> str | None:
        match result:
            case Reported(value=value):
                return EXACT_JSON.encode(value).decode()
            case NotReported():
                return None

    def _request(
        self,
        participant: Literal["agent", "user", "judge"],
        request: int,
        turn: int | None,
        seconds: float | None,
        usage: Usage | NoUsage,
    ) -> ModelRequestsRow:
        spent = Usages((usage,)).totals()
        source: Literal["provider", "computed"] | None = None
        match usage:
            case Usage(cost=Cost(source=given)):
                source = given
            case Usage(cost=Unpriced()) | NoUsage():
                pass
        return ModelRequestsRow(
            **self._keys(),
            participant=participant,
            request=request,
            turn=turn,
            seconds=seconds,
            reported=bool(spent.reported),
            tokens_in=spent.tokens_in,
            tokens_out=spent.tokens_out,
            tokens_cached=spent.tokens_cached,
            tokens_reasoning=spent.tokens_reasoning,
            cost_usd=spent.cost(),
            cost_source=source,
            priced=source is not None,
        )


class RunRows(msgspec.Struct, frozen=True, dict=True):
    """The rows one run gives each table. Its attempts are walked one at a time, in full, as the
    run holds them (read whole, or read again from their lines: ``placed.Placed``), never all held."""

    run: Read

    @cached_property
    def _summary(self) -> Summary:
        return Summary(self.run)

    def attempts(self) -> Iterator[AttemptRows]:
        """Each attempt's rows, in the scenarios' order and then by number, one at a time."""
        spec = self.run.file.spec
        known = {scenario.id: scenario for scenario in spec.scenarios}
        for scenario, attempt in self._summary.said():
            yield AttemptRows(spec.agent, spec.id, attempt, known.get(scenario))

    def row(self) -> RunsRow:
        summary = self._summary
        header = summary.header()
        statuses = summary.statuses()
        tallies = tuple(summary.tallies().values())
        consistency = Consistency(tuple(tally for tally in tallies if tally.judged))
        headline = summary.headline()
        interval = headline.interval()
        # One walk of the attempts for their requests (each attempt's read again, added and let go) and turns.
        every = UsageTotals()
        turns = 0
        for attempts in summary.by_scenario().values():
            for attempt in attempts:
                every += Usages(attempt.requests()).totals()
                turns += len(attempt.outcome.transcript.turns)
        wall, agent, user, judge, waiting, _ = summary.times()
        method = headline.method()
        return RunsRow(
            agent=header.agent,
            run=header.run,
            name=header.name or None,
            started=header.started,
            ended=header.ended,
            seconds=header.seconds,
            status=header.status,
            convy_version=header.convy or None,
            user_model=header.user_model,
            judge_model=header.judge_model,
            scenarios_fingerprint=self.run.file.spec.fingerprints.scenarios or None,
            trust=header.trust,
            attempts_per_scenario=header.attempts,
            scenarios=len(self.run.file.spec.scenarios),
            skipped=len(self.run.file.spec.skipped),
            planned=header.planned,
            attempts=header.kept,
            broken=header.broken,
            passed=statuses["passed"],
            failed=statuses["failed"],
            not_judged=statuses["not_judged"],
            pass_rate=None if interval is None else interval.estimate,
            pass_rate_low=None if interval is None else interval.low,
            pass_rate_high=None if interval is None else interval.high,
            pass_rate_method=None if method == "none" else method,
            scenarios_always=consistency.always(),
            scenarios_flaky=consistency.flaky(),
            scenarios_never=consistency.never(),
            scenarios_not_judged=sum(1 for tally in tallies if not tally.judged),
            turns=turns,
            requests=every.requests,
            tokens_in=every.tokens_in,
            tokens_out=every.tokens_out,
            tokens_cached=every.tokens_cached,
            tokens_reasoning=every.tokens_reasoning,
            cost_usd=every.cost(),
            cost_source=every.source(),
            priced_requests=every.priced,
            unpriced_requests=every.unpriced(),
            attempt_seconds=math.fsum(wall),
            agent_seconds=math.fsum(agent),
            user_seconds=math.fsum(user),
            judge_seconds=math.fsum(judge),
            waiting_seconds=math.fsum(waiting),
        )

    def _group(self, scenario: str) -> str | None:
        # A variant's folder is its scenario's: a value may hold a "/".
        return scenario.rsplit("/", 1)[0] if "/" in scenario else None

    def scenarios(self) -> tuple[ScenariosRow, ...]:
        spec = self.run.file.spec
        known = {scenario.id: scenario for scenario in spec.scenarios}
        rows: list[ScenariosRow] = []
        for scenario, attempts in self._summary.by_scenario().items():
            statuses = [attempt.status() for attempt in attempts]
            tally = Tally(statuses.count("passed"), statuses.count("passed") + statuses.count("failed"))
            interval = Wilson(tally).interval()
            every = sum((Usages(AttemptRows(spec.agent, spec.id, one).every_usage()).totals() for one in attempts), UsageTotals())
            found = known.get(scenario)
            rows.append(
                ScenariosRow(
                    agent=spec.agent,
                    run=spec.id,
                    scenario=scenario,
                    group=self._group(found.variant.of if found and found.variant else scenario),
                    tags=(",".join(found.tags) or None) if found else None,
                    **VariantColumns(found).columns(),
                    claims=len(found.judge) if found else None,
                    attempts=len(attempts),
                    passed=tally.passed,
                    failed=tally.judged - tally.passed,
                    not_judged=statuses.count("not_judged"),
                    judged=tally.judged,
                    pass_rate=None if interval is None else interval.estimate,
                    pass_rate_low=None if interval is None else interval.low,
                    pass_rate_high=None if interval is None else interval.high,
                    status=(
                        "not_judged"
                        if tally.judged == 0
                        else "always"
                        if tally.passed == tally.judged
                        else "never"
                        if tally.passed == 0
                        else "flaky"
                    ),
                    turns=sum(len(attempt.outcome.transcript.turns) for attempt in attempts),
                    seconds=math.fsum(attempt.outcome.seconds for attempt in attempts),
                    tokens_in=every.tokens_in,
                    tokens_out=every.tokens_out,
                    cost_usd=every.cost(),
                    unpriced_requests=every.unpriced(),
                )
            )
        return tuple(rows)


class Tables(msgspec.Struct, frozen=True, dict=True):
    """Some runs as nine tables, in the order ``every`` gives them; rows follow the runs' order,
    then the scenarios' order in each run, attempts, turns and steps. ``lines`` gives a table's
    file as its rows are made, one attempt at a time: what ``convy export`` writes."""

    runs: tuple[Read, ...]

    COLUMNS: ClassVar[dict[TableName, tuple[str, ...]]] = {
        "runs": RunsRow.__struct_fields__,
        "scenarios": ScenariosRow.__struct_fields__,
        "attempts": AttemptsRow.__struct_fields__,
        "turns": TurnsRow.__struct_fields__,
        "claims": ClaimsRow.__struct_fields__,
        "votes": VotesRow.__struct_fields__,
        "tool_calls": ToolCallsRow.__struct_fields__,
        "pauses": PausesRow.__struct_fields__,
        "model_requests": ModelRequestsRow.__struct_fields__,
    }

    def every(self) -> tuple[Table, ...]:
        return tuple(self.named(name) for name in get_args(TableName))

    def named(self, name: TableName) -> Table:
        """One table by its name, its rows held."""
        return Table(name, self.COLUMNS[name], tuple(self.rows(name)))

    def lines(self, name: TableName, form: Literal["csv", "jsonl"]) -> Iterator[str]:
        """One table's file, line by line as its rows are made (``rows.Lines``)."""
        lines = Lines(name, self.COLUMNS[name])
        return lines.csv(self.rows(name)) if form == "csv" else lines.jsonl(self.rows(name))

    @cached_property
    def _played(self) -> tuple[RunRows, ...]:
        return tuple(RunRows(run) for run in self.runs)

    def rows(self, name: TableName) -> Iterator[Row]:
        """One table's rows, one at a time."""
        played = self._played
        if name == "runs":
            yield from (run.row() for run in played)
            return
        if name == "scenarios":
            yield from (row for run in played for row in run.scenarios())
            return
        for run in played:
            for one in run.attempts():
                match name:
                    case "attempts":
                        yield one.row()
                    case "turns":
                        yield from one.turns()
                    case "claims":
                        yield from one.claims()
                    case "votes":
                        yield from one.votes()
                    case "tool_calls":
                        yield from one.tool_calls()
                    case "pauses":
                        yield from one.pauses()
                    case "model_requests":
                        yield from one.model_requests()
