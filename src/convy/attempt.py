"""One kept attempt seen through its run's trust threshold, and the honest sums of what it took.

``Attempt`` says whether an attempt passed, failed or was not judged and why, splits its time by
participant, and gives its dialogue in full for the scenario window. ``Spent`` sums the usage of
some requests — tokens by kind, cost with its source, unpriced requests counted apart, never as
free.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Generic, Literal, TypeVar, overload

import msgspec

from convy.agent import Asked, Call, Cost, NotReported, NoUsage, Reported, Requests, Thought, Unpriced, Usage, aside
from convy.causes import Cause
from convy.judge import Claim, Confidence, Failed, Grade, NoConfidence, NoGrade, NoVerdict, Verdict, Vote
from convy.outcome import Outcome
from convy.traced import timeline
from convy.transcript import Turn
from convy.views import (
    CostArray,
    CostView,
    DecisionView,
    DialogueView,
    SpanView,
    SplitView,
    StepView,
    TimeView,
    TokensArray,
    TokensView,
    TurnView,
    UserFaultView,
    VoteView,
)
from convy.waits import Wait

Found = TypeVar("Found")


class Once(msgspec.Struct, Generic[Found], frozen=True):
    """A record's value found when first read, and kept in the record's ``__dict__`` (a ``Struct``
    made with ``dict=True``), where every later read finds it: what ``functools.cached_property``
    does, without the lock Python 3.11 takes on each first read (0.7 µs against 0.25; 3.12 took it
    out), which a 10,000-attempt report took 30,000 times."""

    find: Callable[[Any], Found]

    @overload
    def __get__(self, record: None, kind: type) -> Once[Found]: ...

    @overload
    def __get__(self, record: object, kind: type) -> Found: ...

    def __get__(self, record: object, kind: type) -> Once[Found] | Found:
        if record is None:
            return self
        value = self.find(record)
        record.__dict__[self.find.__name__] = value
        return value


_NOTHING = Decimal(0)  # a Decimal is immutable: one zero serves every sum
_NO_TOKENS = TokensView()  # no request (a scripted turn's user): views are frozen, one serves all
_ENCODE = msgspec.json.Encoder().encode  # a tool call's arguments and result, as the window shows them


class Sum(msgspec.Struct, frozen=True, gc=False):
    """The usage of some requests added up in one pass: how many, tokens by kind, and cost with
    its source. Sums add (``+``), so a scenario's and a run's are made from its attempts' sums, and
    no request is walked twice; ``tokens`` and ``cost`` say it as the pages show it.

    ``amount`` is the exact sum of the priced requests' costs (``Decimal`` addition is exact, so
    the grouping does not change it); ``source`` is the source of the last priced one and
    ``mixed`` whether two of them differed."""

    requests: int = 0
    reported: int = 0
    input: int = 0
    output: int = 0
    cached: int | None = None
    reasoning: int | None = None
    amount: Decimal = _NOTHING
    source: str = ""
    mixed: bool = False
    priced: int = 0
    unpriced: int = 0
    partly: int = 0  # requests that reported some of their counts: not in ``reported``, their counts summed

    def __add__(self, other: Sum) -> Sum:
        if not other.requests:
            return self
        if not self.requests:
            return other
        return Sum(
            self.requests + other.requests,
            self.reported + other.reported,
            self.input + other.input,
            self.output + other.output,
            self.cached if other.cached is None else (self.cached or 0) + other.cached,
            self.reasoning if other.reasoning is None else (self.reasoning or 0) + other.reasoning,
            self.amount + other.amount if other.priced else self.amount,
            other.source if other.priced else self.source,
            self.mixed or other.mixed or (self.priced > 0 and other.priced > 0 and self.source != other.source),
            self.priced + other.priced,
            self.unpriced + other.unpriced,
            self.partly + other.partly,
        )

    def tokens(self) -> TokensView:
        if not self.requests:
            return _NO_TOKENS
        return TokensView(
            requests=self.requests,
            reported=self.reported,
            input=self.input,
            output=self.output,
            cached=self.cached,
            reasoning=self.reasoning,
            total=self.input + self.output if self.reported or self.partly else None,
        )

    def cost(self) -> CostView:
        if not self.priced:
            return CostView(priced=0, unpriced=self.unpriced, complete=self.unpriced == 0)
        return CostView(
            amount=str(self.amount),
            source="mixed" if self.mixed else self.source,  # type: ignore[arg-type]
            priced=self.priced,
            unpriced=self.unpriced,
            complete=self.unpriced == 0,
        )


_ONE_UNREPORTED = Sum(requests=1, unpriced=1)  # a request nobody reported: one sum serves every such turn
_NO_SUM = Sum()  # no request (a scripted turn's user)
_ONE_UNREPORTED_TOKENS = TokensArray(*msgspec.structs.astuple(_ONE_UNREPORTED.tokens()))  # the window's, one for all
_NO_TOKENS_SHOWN = TokensArray()  # a scripted turn's user, in the window
_UNPRICED_COSTS = tuple(CostArray(priced=0, unpriced=count, complete=count == 0) for count in range(3))  # a turn's, none priced


class Added(msgspec.Struct, frozen=True, gc=False):
    """Some sums added up in one pass, with no sum made between: the same as ``a + b + …``."""

    sums: list[Sum]

    def sum(self) -> Sum:
        sums = self.sums
        if len(sums) == 1:
            return sums[0]
        requests = reported = given = taken = priced = unpriced = partly = 0
        cached: int | None = None
        reasoning: int | None = None
        amount = _NOTHING
        source = ""
        mixed = False
        for one in sums:
            if not one.requests:
                continue
            requests += one.requests
            reported += one.reported
            given += one.input
            taken += one.output
            if one.cached is not None:
                cached = (cached or 0) + one.cached
            if one.reasoning is not None:
                reasoning = (reasoning or 0) + one.reasoning
            if one.priced:
                amount += one.amount
                mixed = mixed or one.mixed or (priced > 0 and source != one.source)
                source = one.source
                priced += one.priced
            else:
                mixed = mixed or one.mixed
            unpriced += one.unpriced
            partly += one.partly
        if not requests:
            return Sum()
        return Sum(requests, reported, given, taken, cached, reasoning, amount, source, mixed, priced, unpriced, partly)


class Spent(msgspec.Struct, frozen=True):
    """The usage of some requests summed honestly: tokens by kind, cost with its source, and the
    requests nobody priced counted apart."""

    usages: tuple[Usage | NoUsage, ...]

    def sum(self) -> Sum:
        # One pass, with no container made per call: a report sums every turn of every attempt.
        reported = partly = given = taken = priced = unpriced = 0
        cached: int | None = None
        reasoning: int | None = None
        amount = _NOTHING
        source = ""
        mixed = False
        for usage in self.usages:
            if type(usage) is Usage and _plain(usage):  # most: counted with no match (see ``_plain``)
                reported += 1
                given += usage.input
                taken += usage.output
                unpriced += 1
                continue
            match usage:
                case Usage():
                    whole = usage.whole()
                    reported += whole  # a request partly reported is not reported in full
                    partly += not whole
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
                    match usage.cost:
                        case Cost() as cost:
                            amount += cost.amount
                            priced += 1
                            mixed = mixed or (source != "" and cost.source != source)
                            source = cost.source
                        case Unpriced():
                            unpriced += 1
                case NoUsage():
                    unpriced += 1
        return Sum(len(self.usages), reported, given, taken, cached, reasoning, amount, source, mixed, priced, unpriced, partly)

    def tokens(self) -> TokensView:
        return self.sum().tokens()

    def cost(self) -> CostView:
        return self.sum().cost()

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


class Sizes(msgspec.Struct, frozen=True, gc=False):
    """Input plus output tokens of each reported request, by who made it (for their spread)."""

    agent: tuple[float, ...]
    user: tuple[float, ...]
    judge: tuple[float, ...]


class Accounts(msgspec.Struct, frozen=True, gc=False):
    """An attempt's requests summed: the agent's, the user model's and the judge's over the
    attempt, and each reported request's size. (Each turn's sums are not kept: the window makes
    them as it draws the turn, and kept for 60,000 turns they were 15 MB of a report's peak.)"""

    agent: Sum
    user: Sum
    judge: Sum
    sizes: Sizes


class Took(msgspec.Struct, frozen=True):
    """A duration that may not have been reported, as the pages show it (``None``: not given)."""

    seconds: float | NotReported

    def value(self) -> float | None:
        match self.seconds:
            case NotReported():
                return None
            case _:
                return float(self.seconds)


class DecidedClaim(msgspec.Struct, frozen=True):
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

    @Once
    def _status(self) -> Literal["passed", "failed", "not_judged"]:
        return self.outcome.status(self.trust)

    def why(self) -> str:
        """Why it is not judged (``user``, ``judge``, ``busy``; ``not_trusted``, ``split`` — its votes
        tied — or ``unquoted`` — evidence required and not found — after the first claim not
        trusted), failed (``agent`` or ``claim``, a check decided by code included when a model
        failed), or passed (``""``)."""
        match self.outcome.result:
            case NoVerdict(who=who) as none:
                return "claim" if none.status() == "failed" else who
            case Failed():
                return "agent"
            case Verdict():
                match self._status:  # the verdict's status, as the attempt's (not trusted: not judged)
                    case "not_judged":
                        return self._doubted()
                    case "failed":
                        return "claim"
                    case "passed":
                        return ""

    def cause(self) -> Cause | None:
        """Whose it was that the attempt did not pass (``causes.py``, which gives the rules and
        their order); ``None`` when it passed."""
        return self._cause

    @Once
    def _cause(self) -> Cause | None:
        status = self._status
        if status == "passed":
            return None
        outcome = self.outcome
        # 1. The agent failed, or a check decided by code failed: certain, whatever the others did;
        # but first, the agent failed in a turn in which the scenario's tools failed a call on
        # purpose: the scenario's planted failure, not the agent's own breakage.
        match outcome.result:
            case Failed() if outcome.injected():
                return "tool"
            case Failed():
                return "agent"
            case NoVerdict(checks=checks) if any(not claim.held and not claim.doubt for claim in checks):
                return "agent"
            case Verdict(claims=claims) if any(claim.by == "code" and not claim.held and not claim.doubt for claim in claims):
                return "agent"
            # A tool check left undecided because no reply held the agent's calls path, or because its
            # calls are seen only in its spans and those did not show them: the agent's adapter (its
            # file) or its instrumentation is wrong, or it sends no calls; neither the user's nor the judge's.
            case Verdict(claims=claims) | NoVerdict(checks=claims) if any(claim.doubt == "unseen" for claim in claims):
                return "agent"
            case _:
                pass
        # 2. The simulated user misbehaved: its dialogue is no fair test, whatever came after.
        if outcome.user_faults:
            return "user"
        match outcome.result:
            # 3. A service stayed busy, or failed a model's request: the model never answered.
            case NoVerdict(who="busy") | NoVerdict(service=True):
                return "service"
            # 4. The simulated user's model or the judge failed, by what it answered.
            case NoVerdict(who="user"):
                return "user"
            case NoVerdict():
                return "judge"
            # 5. A verdict: a trusted claim failed is the agent's; claims left not trusted, the judge's.
            case Verdict():
                return "agent" if status == "failed" else "judge"
            case Failed():
                return "agent"

    def _doubted(self) -> Literal["not_trusted", "split", "unquoted", "unseen"]:
        # Why the first claim not trusted is not: its doubt when the judging gave it one.
        match self.outcome.result:
            case Verdict(claims=claims):
                for claim in claims:
                    if not claim.trusted(self.trust) and claim.doubt:
                        return claim.doubt
        return "not_trusted"

    def requests(self) -> tuple[Usage | NoUsage, ...]:
        """What every request of the attempt took: the agent's answers, the user model's, the judge's."""
        return self._requests

    def agent_usage(self) -> tuple[Usage | NoUsage, ...]:
        return self._agent_usage

    def user_usage(self) -> tuple[Usage | NoUsage, ...]:
        """Every request of the simulated user's model: one per turn it wrote, and the one that ended it."""
        return self._user_usage

    def turn_sums(self) -> tuple[tuple[Sum, Sum], ...]:
        """Each turn's agent requests and user model request summed: ``(agent, user)``."""
        return tuple(self._turn_sum(turn) for turn in self.outcome.transcript.turns)

    def _turn_sum(self, turn: Turn) -> tuple[Sum, Sum]:
        user = _NO_SUM if turn.scripted else self._request_sum(turn.user_usage)
        if extra := aside(turn.answer):  # the user's model playing a tool or answering a question
            user = user + Spent(extra).sum()
        return self._request_sum(turn.answer.usage), user

    def agent_sum(self) -> Sum:
        return self._sums.agent

    def user_sum(self) -> Sum:
        return self._sums.user

    def judge_sum(self) -> Sum:
        return self._sums.judge

    def sizes(self) -> Sizes:
        return self._sums.sizes

    def every_sum(self) -> Sum:
        """Every request of the attempt summed: the agent's, the user model's and the judge's."""
        sums = self._sums
        return sums.agent + sums.user + sums.judge

    # Found once, when first asked: a report asks for each several times (its scenario's row, the
    # run's tiles, the index's totals, the attempt's window).

    @Once
    def _agent_usage(self) -> tuple[Usage | NoUsage, ...]:
        broken = self.outcome.agent_ending
        return tuple(usage for turn in self.outcome.transcript.turns for usage in turn.answer.requests()) + (
            () if broken is None else broken.requests()
        )

    @Once
    def _user_usage(self) -> tuple[Usage | NoUsage, ...]:
        # Each turn's: its message, and the requests the model made inside the agent's turn
        # (playing a tool, answering a question: ``agent.aside``); then the turn the agent broke off's.
        turns = self.outcome.transcript.turns
        broken = self.outcome.agent_ending
        return (
            tuple(usage for turn in turns for usage in (() if turn.scripted else (turn.user_usage,)) + aside(turn.answer))
            + (() if broken is None else aside(broken))
            + self.outcome.user_ending
        )

    @Once
    def _requests(self) -> tuple[Usage | NoUsage, ...]:
        if self.outcome.rejudged:  # its dialogue's requests are the source run's spending
            return self.outcome.judge_requests
        return self._agent_usage + self._user_usage + self.outcome.judge_requests

    @Once
    def _sums(self) -> Accounts:
        # All in one pass and one value found once.
        # Most requests are plain (both counts reported, no cached or reasoning count, no price):
        # those are counted in locals as the turns are walked, with nothing gathered; the others
        # are gathered and summed by ``Spent.sum``, and the two added, which gives the same sum
        # (a plain request is never priced, so the priced ones keep their order). A size is kept
        # of each request that reported both counts (of a turn of several requests, and of the
        # user's ending and the judge's, each one reported at all).
        # A re-judged attempt's dialogue was recorded by another run, which spent its agent's and
        # user model's requests: only its judge's are this run's (the window still shows each
        # turn's, as recorded).
        outcome = self.outcome
        agent: list[Usage | NoUsage] = []
        user: list[Usage | NoUsage] = []
        agent_sizes: list[float] = []
        user_sizes: list[float] = []
        agent_plain = agent_input = agent_output = user_plain = user_input = user_output = 0
        # What ``_plain`` says is asked inline here, with no call: two requests a turn, every attempt.
        for turn in () if outcome.rejudged else outcome.transcript.turns:
            if turn.answer.steps and (extra := aside(turn.answer)):  # the user's model inside the agent's turn
                user.extend(extra)
                user_sizes.extend(float(one.input + one.output) for one in Spent(extra).reported())
            usage = turn.answer.usage
            if (
                type(usage) is Usage
                and type(usage.cost) is Unpriced
                and type(usage.cached) is NotReported
                and type(usage.reasoning) is NotReported
                and not usage.unreported
            ):
                agent_plain += 1
                given, taken = usage.input, usage.output
                agent_input += given
                agent_output += taken
                agent_sizes.append(float(given + taken))
            else:
                match usage:
                    case Usage():
                        agent.append(usage)
                        if not usage.unreported:
                            agent_sizes.append(float(usage.input + usage.output))
                    case NoUsage():
                        agent.append(usage)
                    case Requests(each=each):
                        agent.extend(each)
                        agent_sizes.extend(float(one.input + one.output) for one in Spent(each).reported())
            if turn.scripted:
                continue
            asked = turn.user_usage
            if (
                type(asked) is Usage
                and type(asked.cost) is Unpriced
                and type(asked.cached) is NotReported
                and type(asked.reasoning) is NotReported
                and not asked.unreported
            ):
                user_plain += 1
                given, taken = asked.input, asked.output
                user_input += given
                user_output += taken
                user_sizes.append(float(given + taken))
            else:
                match asked:
                    case Usage():
                        user.append(asked)
                        if not asked.unreported:
                            user_sizes.append(float(asked.input + asked.output))
                    case NoUsage():
                        user.append(asked)
        broken = None if outcome.rejudged else outcome.agent_ending
        if broken is not None:  # the requests of the turn the agent broke off
            each = broken.requests()
            agent.extend(each)
            agent_sizes.extend(float(one.input + one.output) for one in Spent(each).reported())
            if extra := aside(broken):
                user.extend(extra)
                user_sizes.extend(float(one.input + one.output) for one in Spent(extra).reported())
        ending = () if outcome.rejudged else outcome.user_ending
        if ending:
            user.extend(ending)
            user_sizes.extend(float(one.input + one.output) for one in Spent(ending).reported())
        judge = _NO_SUM
        judge_sizes: tuple[float, ...] = ()
        if outcome.judge_requests:  # none when code decided every claim, or no judge was asked
            judged = Spent(outcome.judge_requests)
            judge = judged.sum()
            judge_sizes = tuple(float(one.input + one.output) for one in judged.reported())
        return Accounts(
            _plain_sum(agent_plain, agent_input, agent_output) + (Spent(tuple(agent)).sum() if agent else _NO_SUM),
            _plain_sum(user_plain, user_input, user_output) + (Spent(tuple(user)).sum() if user else _NO_SUM),
            judge,
            Sizes(tuple(agent_sizes), tuple(user_sizes), judge_sizes),
        )

    def _request_sum(self, usage: Usage | NoUsage | Requests) -> Sum:
        """What a turn's request (or requests) sum to."""
        match usage:
            case Usage():
                return self._one(usage)
            case NoUsage():
                return _ONE_UNREPORTED
            case Requests(each=each):
                return Spent(each).sum()

    def _one(self, usage: Usage) -> Sum:
        """One request's usage summed: what ``Spent((usage,)).sum()`` makes, with no loop (a report
        sums every turn of every attempt, two requests a turn)."""
        cached, reasoning = _details(usage)
        whole = 0 if usage.unreported else 1
        match usage.cost:
            case Cost(amount=amount, source=source):
                return Sum(1, whole, usage.input, usage.output, cached, reasoning, _NOTHING + amount, source, False, 1, 0, 1 - whole)
            case Unpriced():
                return Sum(1, whole, usage.input, usage.output, cached, reasoning, _NOTHING, "", False, 0, 1, 1 - whole)

    def waited(self, who: str) -> float:
        return math.fsum(wait.seconds for wait in self.outcome.waits if wait.who == who)

    def time(self) -> TimeView:
        return self._time

    @Once
    def _time(self) -> TimeView:
        outcome = self.outcome
        turns = outcome.transcript.turns
        waits = outcome.waits
        waiting = math.fsum(wait.seconds for wait in waits) if waits else 0.0
        agent = outcome.open_seconds + outcome.close_seconds + sum(turn.agent_seconds for turn in turns)
        user = math.fsum(turn.user_seconds for turn in turns if not turn.scripted) + outcome.user_ending_seconds
        judge = outcome.judge_seconds
        if waits:
            agent -= self.waited("agent")
            user -= self.waited("user")
            judge -= self.waited("judge")
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
                trust = self.trust
                for claim in claims:
                    # What ``DecidedClaim`` and ``Claim.trusted`` say, told by identity (as in ``_plain``):
                    # every claim of every attempt.
                    said = claim.confidence
                    confidence = said.value if type(said) is Confidence else None
                    graded = claim.grade
                    grade = graded.name if type(graded) is Grade else None
                    trusted = not claim.doubt and (confidence is None or confidence >= trust)
                    quoted = claim.evidence
                    decisions.append(
                        DecisionView(
                            claim.claim,
                            claim.by,
                            claim.held,
                            claim.reason,
                            confidence,
                            grade,
                            trusted,
                            None if quoted is None else quoted.quote,
                            None if quoted is None else quoted.found,
                            [_vote(vote) for vote in claim.votes],
                            split=_split(claim.votes),  # by name: fields after the votes may come before it
                            weak=None if quoted is None or not quoted.weak else quoted.said(),
                        )
                    )
            case Failed(reason=reason, message=message):
                failed_on = message or None
                decisions = [
                    DecisionView(claim="the agent answered", by="code", held=False, reason=reason, confidence=None, grade=None, trusted=True, markable=False)
                ]
            case NoVerdict(who=who, reason=reason, checks=checks):
                # The checks code could still decide come first: one that failed is why the attempt failed.
                decisions = [
                    DecisionView(claim=claim.claim, by=claim.by, held=claim.held, reason=claim.reason, confidence=None, grade=None, trusted=True)
                    for claim in checks
                ]
                decisions.append(
                    DecisionView(
                        claim=f"not judged ({who})", by="code", held=False, reason=reason, confidence=None, grade=None, trusted=False, markable=False
                    )
                )
        every = self.every_sum()
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
            tokens=_shown_tokens(every.tokens()),
            cost=_shown_cost(every.cost()),
            fingerprint=outcome.transcript.fingerprint(),
            cause=self.cause() or "",
            faults=[UserFaultView(fault.check, fault.turn, fault.detail, fault.by) for fault in outcome.user_faults],
            unchecked=[f"{one.check}: {one.reason}" for one in outcome.user_unchecked],
            state=None if outcome.transcript.state is None else _ENCODE(outcome.transcript.state).decode(),
        )

    def _turn(self, turn: Turn) -> TurnView:
        # A request of no price (most are) is shown from its usage with no sum made, and the
        # turn's cost is then one of a few views shared by every such turn; a priced request,
        # or several, is summed. The kinds of a usage and of a step are told by identity, as in
        # ``_plain``: this runs for every turn of every attempt, and the class patterns took
        # twice as long.
        answer = turn.answer
        said = answer.usage
        summed = False
        unpriced = 1
        if type(said) is Usage and type(said.cost) is Unpriced:
            if type(said.cached) is NotReported and type(said.reasoning) is NotReported:  # ``_tokens``, with no call
                given, taken = said.input, said.output
                agent_tokens = TokensArray(1, 0 if said.unreported else 1, given, taken, None, None, given + taken)
            else:
                agent_tokens = self._tokens(said)
        elif type(said) is NoUsage:
            agent_tokens = _ONE_UNREPORTED_TOKENS
        else:  # a priced request, or several
            agent_tokens = _shown_tokens(self._request_sum(said).tokens())
            summed = True
        if turn.scripted:
            user_tokens = _NO_TOKENS_SHOWN
        else:
            asked = turn.user_usage
            if type(asked) is NoUsage:
                user_tokens = _ONE_UNREPORTED_TOKENS
                unpriced += 1
            elif type(asked) is Usage and type(asked.cost) is Unpriced:
                if type(asked.cached) is NotReported and type(asked.reasoning) is NotReported:
                    given, taken = asked.input, asked.output
                    user_tokens = TokensArray(1, 0 if asked.unreported else 1, given, taken, None, None, given + taken)
                else:
                    user_tokens = self._tokens(asked)
                unpriced += 1
            else:  # priced
                user_tokens = _shown_tokens(self._request_sum(asked).tokens())
                summed = True
        if summed:
            agent_sum, user_sum = self._turn_sum(turn)
            cost = _shown_cost((agent_sum + user_sum).cost())
        else:
            cost = _UNPRICED_COSTS[unpriced]
        steps: list[StepView] = []
        thoughts = pauses = 0
        for step in answer.steps:
            if type(step) is Thought:
                steps.append(StepView("thought", step.text))
                thoughts += 1
            elif type(step) is Call:
                result = step.result
                shown = _ENCODE(result.value).decode() if type(result) is Reported else None
                seconds = step.seconds
                took = None if isinstance(seconds, NotReported) else float(seconds)  # what ``Took(seconds).value()`` says
                arguments = _ENCODE(step.arguments).decode()
                steps.append(StepView("call", "", step.name, arguments, shown, took, step.error, step.source, step.approval, traced=step.traced))
            elif type(step) is Asked:
                arguments = _ENCODE(step.arguments).decode() if step.tool else ""
                steps.append(
                    StepView(
                        "asked",
                        step.question,
                        step.tool,
                        arguments,
                        step.answer,
                        step.seconds,
                        "",
                        step.by,
                        "",
                        list(step.options),
                    )
                )
                pauses += 1
        if answer.steps and aside(answer):  # the user's model inside the agent's turn: summed
            agent_sum, user_sum = self._turn_sum(turn)
            user_tokens = _shown_tokens(user_sum.tokens())
            cost = _shown_cost((agent_sum + user_sum).cost())
        return TurnView(
            turn.message,
            turn.scripted,
            answer.text,
            steps,
            thoughts,
            len(steps) - thoughts - pauses,
            turn.agent_start,
            turn.agent_seconds,
            turn.user_start,
            turn.user_seconds,
            agent_tokens,
            user_tokens,
            cost,
            pauses,
        )

    def _tokens(self, usage: Usage) -> TokensArray:
        """One unpriced request's tokens as the window shows them: what ``_one(usage).tokens()``
        says (a plain request's, see ``_plain``, with no details asked for)."""
        given = usage.input
        taken = usage.output
        if type(usage.cached) is NotReported and type(usage.reasoning) is NotReported:
            return TokensArray(1, 0 if usage.unreported else 1, given, taken, None, None, given + taken)
        cached, reasoning = _details(usage)
        return TokensArray(1, 0 if usage.unreported else 1, given, taken, cached, reasoning, given + taken)

    def _spans(self) -> list[SpanView]:
        outcome = self.outcome
        spans: list[SpanView] = []  # the turns' own spans the page draws from the turns
        if outcome.judge_seconds > 0:
            spans.append(SpanView(lane="judge", start=outcome.judge_start, seconds=outcome.judge_seconds, label="judge"))
        spans.extend(self._wait(wait) for wait in outcome.waits)
        # Each pause the agent made to ask a person, on the user's lane: who answered, and what.
        broken = outcome.agent_ending
        for answer in [turn.answer for turn in outcome.transcript.turns] + ([] if broken is None else [broken]):
            for step in answer.steps:
                if type(step) is Asked:
                    said = "nobody answered" if step.by == "nobody" else f"the {step.by} answered {step.answer}"
                    spans.append(
                        SpanView(
                            lane="user",
                            start=step.start,
                            seconds=step.seconds,
                            label=f"agent paused to ask: {step.question} ({said})",
                        )
                    )
        if agent_spans := outcome.agent_spans():
            turns = outcome.transcript.turns
            spans.extend(timeline(agent_spans, outcome.started, outcome.seconds, turns[0].agent_start if turns else 0.0))
        return spans

    def _wait(self, wait: Wait) -> SpanView:
        why = {"busy": "for a busy service", "pace": "for its per-minute pace", "place": "for a free place"}[wait.why]
        return SpanView(lane="waiting", start=wait.start, seconds=wait.seconds, label=f"{wait.who} waiting {why}")


def _shown_tokens(tokens: TokensView) -> TokensArray:
    """Tokens as the window writes them: the same fields, as an array."""
    return TokensArray(*msgspec.structs.astuple(tokens))


def _shown_cost(cost: CostView) -> CostArray:
    """A cost as the window writes it: the same fields, as an array."""
    return CostArray(*msgspec.structs.astuple(cost))


def _details(usage: Usage) -> tuple[int | None, int | None]:
    """A request's cached and reasoning tokens, None for a count its service did not report."""
    cached: int | None = None
    reasoning: int | None = None
    match usage.cached:
        case int(count):
            cached = count
        case NotReported():
            pass
    match usage.reasoning:
        case int(count):
            reasoning = count
        case NotReported():
            pass
    return cached, reasoning


def _plain(usage: Usage) -> bool:
    """Whether a request reported both counts and nothing else: no cached or reasoning count, no
    price (most do). Its parts' types are asked for by identity rather than matched: a report asks
    this of every request, and the class patterns took twice as long."""
    return (
        type(usage.cost) is Unpriced
        and type(usage.cached) is NotReported
        and type(usage.reasoning) is NotReported
        and not usage.unreported
    )


def _plain_sum(count: int, given: int, taken: int) -> Sum:
    """What ``Spent.sum`` makes of ``count`` plain requests (see ``_plain``) that took these tokens."""
    if not count:
        return _NO_SUM
    return Sum(count, count, given, taken, None, None, _NOTHING, "", False, 0, count, 0)


def _vote(vote: Vote) -> VoteView:
    """One of a claim's decisions, as the window shows it."""
    said, graded, quoted = vote.confidence, vote.grade, vote.evidence
    return VoteView(
        vote.judge,
        vote.held,
        vote.reason,
        said.value if type(said) is Confidence else None,
        graded.name if type(graded) is Grade else None,
        None if quoted is None else quoted.quote,
        None if quoted is None else quoted.found,
        None if quoted is None or not quoted.weak else quoted.said(),
    )


def _split(votes: tuple[Vote, ...]) -> list[SplitView]:
    """How ``votes`` fell, as the window says it ("3 of 5 held"): all of them, then each judge's in
    the order they first voted when there were several judges; nothing for a single decision."""
    if not votes:
        return []
    judges: dict[str, list[bool]] = {}
    for vote in votes:
        judges.setdefault(vote.judge, []).append(vote.held)
    split = [SplitView("", sum(vote.held for vote in votes), len(votes))]
    if len(judges) > 1:
        split.extend(SplitView(judge, sum(held), len(held)) for judge, held in judges.items())
    return split
