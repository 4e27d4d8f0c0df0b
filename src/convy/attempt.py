"""One kept attempt seen through its run's trust threshold, and the honest sums of what it took.

``Attempt`` says whether an attempt passed, failed or was not judged and why, splits its time by
participant, and gives its dialogue in full for the scenario window. ``Spent`` sums the usage of
some requests — tokens by kind, cost with its source, unpriced requests counted apart, never as
free; ``Spread`` is min, p50, p95 and max of some values.
"""

from __future__ import annotations

import math
from decimal import Decimal
from functools import cached_property
from typing import Literal

import msgspec

from convy.agent import Call, Cost, NotReported, NoUsage, Reported, Thought, Unpriced, Usage
from convy.busy import Wait
from convy.dialog import Claim, Confidence, Failed, Grade, NoConfidence, NoGrade, NoVerdict, Turn, Verdict
from convy.scenario import Outcome
from convy.views import (
    CostView,
    DecisionView,
    DialogueView,
    SpanView,
    SpreadView,
    StepView,
    TimeView,
    TokensView,
    TurnView,
)


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
        # One pass over the usages: a report sums tokens for every turn and attempt.
        counted = reported = given = taken = 0
        cached: int | None = None
        reasoning: int | None = None
        for usage in self.usages:
            match usage:
                case Usage():
                    counted += 1
                    reported += usage.whole()  # a request partly reported is not reported in full
                    given += usage.input  # a count not reported stands as 0
                    taken += usage.output
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
                case NoUsage():
                    pass
        return TokensView(
            requests=len(self.usages),
            reported=reported,
            input=given,
            output=taken,
            cached=cached,
            reasoning=reasoning,
            total=given + taken if counted else None,
        )

    def cost(self) -> CostView:
        # Summed as it goes, with no list or set per call: a report calls this about seven times
        # per attempt, and each container made set off the garbage collector more often.
        amount = Decimal(0)
        source = ""
        mixed = False
        priced = unpriced = 0
        for usage in self.usages:
            match usage:
                case Usage(cost=Cost() as cost):
                    amount += cost.amount
                    priced += 1
                    mixed = mixed or (source != "" and cost.source != source)
                    source = cost.source
                case Usage(cost=Unpriced()) | NoUsage():
                    unpriced += 1
        if not priced:
            return CostView(priced=0, unpriced=unpriced, complete=unpriced == 0)
        return CostView(
            amount=str(amount),
            source="mixed" if mixed else source,  # type: ignore[arg-type]
            priced=priced,
            unpriced=unpriced,
            complete=unpriced == 0,
        )

    def total(self) -> int:
        return sum(usage.input + usage.output for usage in self.reported())

    def whole(self) -> int:
        """How many of the requests reported both their counts."""
        return sum(usage.whole() for usage in self.reported())

    def reported(self) -> list[Usage]:
        """The usages somebody reported, in full or in part (``NoUsage`` left out); a count not
        reported stands in them as 0."""
        found: list[Usage] = []
        for usage in self.usages:
            match usage:
                case Usage():
                    found.append(usage)
                case NoUsage():
                    pass
        return found


class Took(msgspec.Struct, frozen=True):
    """A duration that may not have been reported, as the pages show it (``None``: not given)."""

    seconds: float | NotReported

    def value(self) -> float | None:
        match self.seconds:
            case NotReported():
                return None
            case _:
                return float(self.seconds)


class Decided(msgspec.Struct, frozen=True):
    """A decided claim as pages and tables show it: its confidence and grade, ``None`` when none."""

    claim: Claim

    def confidence(self) -> float | None:
        match self.claim.confidence:
            case Confidence(value=value):
                return value
            case NoConfidence():
                return None

    def grade(self) -> str | None:
        match self.claim.grade:
            case Grade(name=name):
                return name
            case NoGrade():
                return None


class Attempt(msgspec.Struct, frozen=True, dict=True):
    """One kept attempt seen through the run's trust threshold (its status found once, when first
    asked: a report asks for it several times)."""

    outcome: Outcome
    trust: float

    def status(self) -> Literal["passed", "failed", "not_judged"]:
        return self._status

    @cached_property
    def _status(self) -> Literal["passed", "failed", "not_judged"]:
        return self.outcome.status(self.trust)

    def why(self) -> str:
        """Why it is not judged (``user``, ``judge``, ``busy``, ``not_trusted``), failed
        (``agent`` or ``claim``, a check decided by code included when a model failed), or passed
        (``""``)."""
        match self.outcome.result:
            case NoVerdict(who=who) as none:
                return "claim" if none.status() == "failed" else who
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
            case Verdict(claims=decisions) | NoVerdict(checks=decisions):
                decided = {decision.claim: decision.held for decision in decisions if decision.trusted(self.trust)}
            case Failed():
                pass
        return ["none" if claim not in decided else "held" if decided[claim] else "failed" for claim in claims]

    def requests(self) -> tuple[Usage | NoUsage, ...]:
        """What every request of the attempt took: the agent's answers, the user model's, the judge's."""
        return self.agent_usage() + self.user_usage() + self.outcome.judge_requests

    def agent_usage(self) -> tuple[Usage | NoUsage, ...]:
        return tuple(usage for turn in self.outcome.transcript.turns for usage in turn.answer.requests())

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
                        confidence=Decided(claim).confidence(),
                        grade=Decided(claim).grade(),
                        trusted=claim.trusted(self.trust),
                    )
                    for claim in claims
                ]
            case Failed(reason=reason, message=message):
                failed_on = message or None
                decisions = [DecisionView(claim="the agent answered", by="code", held=False, reason=reason, confidence=None, grade=None, trusted=True)]
            case NoVerdict(who=who, reason=reason, checks=checks):
                # The checks code could still decide come first: one that failed is why the attempt failed.
                decisions = [
                    DecisionView(claim=claim.claim, by=claim.by, held=claim.held, reason=claim.reason, confidence=None, grade=None, trusted=True)
                    for claim in checks
                ]
                decisions.append(
                    DecisionView(claim=f"not judged ({who})", by="code", held=False, reason=reason, confidence=None, grade=None, trusted=False)
                )
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
            agent_tokens=Spent(turn.answer.requests()).tokens(),
            user_tokens=Spent(() if turn.scripted else (turn.user_usage,)).tokens(),
            cost=Spent(turn.answer.requests() + (() if turn.scripted else (turn.user_usage,))).cost(),
        )

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
