"""Runs as OpenTelemetry traces (issue 30): each attempt one trace, in the shape of the GenAI
semantic conventions (``CONVENTIONS``; still marked Development, so the version followed is named).

An attempt's root span carries the ``test.*`` attributes: the run is the suite, the scenario (a
variant's id) the case, and its result. Under it: an ``invoke_agent`` span per agent turn (with
``gen_ai.conversation.id``, its usage, and the turn's messages), an ``execute_tool`` span per tool
call inside the turn that made it, a span per pause the agent made to ask a person, and a ``chat``
span per request of the simulated user's model and of the judge. Each decided claim is one
``gen_ai.evaluation.result`` event, sent as a log record of the root span, as the conventions now
ask (span events are being retired).

The times come from the attempt's record: its start, and each part's offset from it. What the
record does not time on its own is placed as closely as it says: a turn's tool calls one after
another from the turn's start, each as long as its reported seconds; the judge's requests each
over the whole judging, which they shared. Ids are ``tracecontext.TraceIds``: the same in the
export file, in what was sent while the run played, and in the ``traceparent`` the agent was sent.
An attempt ``convy rejudge`` decided again keeps its dialogue's trace: the re-judged run adds one
span under that trace's root, its judging, and its claims' results on it.
Records are the run's as kept, so its secrets are hidden as in every other output.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import ClassVar, Literal

import msgspec

from convy.agent import Answer, Asked, Call, NoUsage, Reported, Usage
from convy.attempt import Attempt, DecidedClaim, Took
from convy.judge import Claim, Failed, Graded, NoVerdict, Verdict
from convy.otlp import CLIENT, INTERNAL, LogRecord, Signals, Span, Value
from convy.outcome import Outcome
from convy.records import ModelNames, RunSpec
from convy.report import Summary
from convy.runs import Read
from convy.scenario import Scenario
from convy.tracecontext import TraceIds
from convy.variants import Variant

# The conventions followed: the GenAI semantic conventions' first release of their own repository
# (semantic-conventions-genai v0.1.0, after semantic-conventions v1.41.0, where they were before),
# and the ``test.*`` attributes of semantic-conventions itself.
CONVENTIONS = "semantic-conventions-genai v0.1.0"
SCOPE = "convy"

_JSON = msgspec.json.Encoder()
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# A run's status as ``test.suite.run.status`` says it (a finished run: whether its command passed it).
_SUITE = {"running": "in_progress", "interrupted": "aborted", "stopped": "aborted"}


class RunContext(msgspec.Struct, frozen=True):
    """What every trace of one run says of the run: its agent, id and name, its models by name,
    its trust threshold, its scenarios (a variant's values), and the suite's status."""

    agent: str
    run: str
    name: str
    models: ModelNames
    trust: float
    scenarios: dict[str, Scenario]
    suite: str  # test.suite.run.status
    version: str  # the convy that exports
    dialogues: str = ""  # the run whose dialogues these are: a re-judged run's origin, else this one

    @classmethod
    def of(cls, spec: RunSpec, suite: str, version: str) -> RunContext:
        known = {scenario.id: scenario for scenario in spec.scenarios}
        dialogues = spec.origin.run if spec.origin is not None else spec.id
        return cls(spec.agent, spec.id, spec.name, spec.models, spec.trust, known, suite, version, dialogues)

    @classmethod
    def read(cls, run: Read, version: str, failing: bool) -> RunContext:
        """A run read from its folder: a finished run's suite status is a failure where the run
        failed (``failing``: a gate its command exits non-zero for), else a success."""
        status = run.status()
        suite = _SUITE.get(status) or ("failure" if failing else "success")
        return cls.of(run.file.spec, suite, version)

    def signals(self, outcome: Outcome) -> Signals:
        """One attempt's trace: its spans and its claims' evaluation results."""
        trace = AttemptTrace(self, Attempt(outcome, self.trust))
        return Signals(self.resource(), SCOPE, self.version, tuple(trace.spans()), tuple(trace.evaluations()))

    def resource(self) -> dict[str, Value]:
        return {"service.name": "convy", "service.version": self.version, "convy.agent": self.agent, "convy.run.id": self.run}


class AttemptTrace(msgspec.Struct, frozen=True, dict=True):
    """One attempt's spans and evaluation results, made from its record (its ids and its start
    worked out once: every span asks for them)."""

    run: RunContext
    attempt: Attempt

    def spans(self) -> Iterator[Span]:
        outcome = self.attempt.outcome
        ids = self._ids()
        root = ids.root()
        if outcome.rejudged:
            # Its dialogue's spans are the run it was re-judged from: this run adds its judging, a
            # span of its own under that dialogue's root, with its case and its judge's requests.
            decided = self._decided(ids)
            yield Span(
                ids.trace, decided, root, f"rejudge {outcome.scenario} #{outcome.attempt}", INTERNAL,
                self._at(outcome.judge_start), self._at(outcome.judge_start + outcome.judge_seconds),
                self._case() | {"convy.rejudged": True},
            )
            for number, usage in enumerate(outcome.judge_requests, start=1):
                yield self._chat(ids.span("rejudge", self.run.run, "judge", number), decided, "judge", outcome.judge_start, outcome.judge_seconds, usage)
            return
        yield Span(
            ids.trace, root, "", f"{outcome.scenario} #{outcome.attempt}", INTERNAL,
            self._at(0.0), self._at(outcome.seconds), self._case(), self._failure(),
        )
        conversation = self._conversation()
        turns = outcome.transcript.turns
        end = outcome.open_seconds
        for number, turn in enumerate(turns, start=1):
            if not turn.scripted:
                yield self._chat(ids.span("user", number), root, "user", turn.user_start, turn.user_seconds, turn.user_usage)
            yield from self._turn(ids, number, turn.answer, turn.agent_start, turn.agent_seconds, turn.message, conversation)
            end = turn.agent_start + turn.agent_seconds
        broken = outcome.agent_ending
        message = outcome.result.message if type(outcome.result) is Failed else ""
        if broken is not None or message:
            # The turn the agent broke off, after the user's request for it: to the dialogue's end.
            # A failure opening or closing the conversation is no turn: the root says it.
            begun = end + (outcome.user_ending_seconds if outcome.user_ending else 0.0)
            until = outcome.judge_start if outcome.judge_start else outcome.seconds
            yield from self._turn(
                ids, len(turns) + 1, broken or Answer(""), begun, max(until - begun, 0.0), message, conversation,
                failed=self._failure() or outcome.stop,
            )
        for number, usage in enumerate(outcome.user_ending, start=1):
            yield self._chat(ids.span("user", "ending", number), root, "user", end, outcome.user_ending_seconds, usage)
        for number, usage in enumerate(outcome.judge_requests, start=1):
            yield self._chat(ids.span("judge", number), root, "judge", outcome.judge_start, outcome.judge_seconds, usage)

    def evaluations(self) -> Iterator[LogRecord]:
        """One ``gen_ai.evaluation.result`` per decided claim, on the root span (a re-judged attempt's:
        on its judging's span), at the judging's end."""
        outcome = self.attempt.outcome
        ids = self._ids()
        moment = self._at(outcome.judge_start + outcome.judge_seconds if outcome.judge_start else outcome.seconds)
        scenario = self.run.scenarios.get(outcome.scenario)
        for number, claim in enumerate(self._claims(), start=1):
            attributes: dict[str, Value] = {
                "gen_ai.evaluation.name": claim.claim,
                "gen_ai.evaluation.score.label": self._label(claim),
            }
            score = self._score(claim, scenario)
            if score is not None:
                attributes["gen_ai.evaluation.score.value"] = score
            if claim.reason:
                attributes["gen_ai.evaluation.explanation"] = claim.reason
            attributes |= {
                "gen_ai.conversation.id": self._conversation(),
                "convy.claim.number": number,
                "convy.claim.by": claim.by,
                "convy.claim.held": claim.held,
                "convy.claim.trusted": claim.trusted(self.run.trust),
            }
            confidence = DecidedClaim(claim).confidence()
            if confidence is not None:
                attributes["convy.claim.confidence"] = float(confidence)
            if claim.evidence is not None:
                attributes["convy.claim.evidence"] = claim.evidence.quote
                attributes["convy.claim.evidence_found"] = claim.evidence.found
            if claim.votes:
                attributes["convy.claim.votes"] = len(claim.votes)
                attributes["convy.claim.votes_held"] = sum(1 for vote in claim.votes if vote.held)
            if claim.doubt:
                attributes["convy.claim.doubt"] = claim.doubt
            yield LogRecord(ids.trace, self._decided(ids), "gen_ai.evaluation.result", moment, attributes)

    def _turn(
        self, ids: TraceIds, number: int, answer: Answer, start: float, seconds: float, message: str,
        conversation: str, failed: str = "",
    ) -> Iterator[Span]:
        """An agent turn's span, and under it a span per tool call and per pause, in its steps' order."""
        models = self.run.models
        span = ids.turn(number)
        attributes: dict[str, Value] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self.run.agent,
            "gen_ai.conversation.id": conversation,
            "convy.turn": number,
        }
        if models.agent:
            attributes["gen_ai.request.model"] = models.agent
        if models.agent_provider:
            attributes["gen_ai.provider.name"] = models.agent_provider
        attributes |= _usage(answer.requests())
        if failed:
            attributes["error.type"] = self.attempt.outcome.stop
        if message:
            attributes["gen_ai.input.messages"] = _messages("user", message)
        if answer.text:
            attributes["gen_ai.output.messages"] = _messages("assistant", answer.text, "stop")
        yield Span(
            ids.trace, span, ids.root(), f"invoke_agent {self.run.agent}", CLIENT,
            self._at(start), self._at(start + seconds), attributes, failed,
        )
        cursor, end = start, start + seconds
        for step_number, step in enumerate(answer.steps, start=1):
            match step:
                case Call() as call:
                    took = Took(call.seconds).value() or 0.0
                    began, cursor = cursor, min(cursor + took, end)
                    yield self._tool(ids.span("turn", number, "step", step_number), span, call, began, cursor)
                case Asked() as asked:
                    yield self._pause(ids.span("turn", number, "step", step_number), span, asked)
                case _:
                    pass

    def _tool(self, span: str, parent: str, call: Call, start: float, end: float) -> Span:
        attributes: dict[str, Value] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.arguments": _JSON.encode(call.arguments).decode(),
        }
        match call.result:
            case Reported(value=value):
                attributes["gen_ai.tool.call.result"] = _JSON.encode(value).decode()
            case _:
                pass
        took = Took(call.seconds).value()
        if took is not None:
            attributes["convy.tool.seconds"] = took  # as the agent reported it; the span keeps within its turn
        if call.error:
            attributes["error.type"] = "tool_error"
        if call.source:
            attributes["convy.tool.source"] = call.source
        if call.approval:
            attributes["convy.tool.approval"] = call.approval
        if call.usage is not None:
            attributes |= _usage((call.usage,))
        trace = self._ids().trace
        return Span(trace, span, parent, f"execute_tool {call.name}", INTERNAL, self._at(start), self._at(end), attributes, call.error)

    def _pause(self, span: str, parent: str, asked: Asked) -> Span:
        attributes: dict[str, Value] = {
            "convy.pause.question": asked.question,
            "convy.pause.answer": asked.answer,
            "convy.pause.by": asked.by,
        }
        if asked.options:
            attributes["convy.pause.options"] = list(asked.options)
        if asked.tool:
            attributes["gen_ai.tool.name"] = asked.tool
            attributes["gen_ai.tool.call.arguments"] = _JSON.encode(asked.arguments).decode()
        if asked.usage is not None:
            attributes |= _usage((asked.usage,))
        trace = self._ids().trace
        name = f"pause {asked.tool}" if asked.tool else "pause"
        return Span(trace, span, parent, name, INTERNAL, self._at(asked.start), self._at(asked.start + asked.seconds), attributes)

    def _chat(self, span: str, parent: str, who: str, start: float, seconds: float, usage: Usage | NoUsage) -> Span:
        """A request of the simulated user's model or of the judge, as a ``chat`` span."""
        models = self.run.models
        model = models.user if who == "user" else models.judge
        attributes: dict[str, Value] = {"gen_ai.operation.name": "chat", "convy.participant": who}
        if model and model != "absent":
            attributes["gen_ai.request.model"] = model
            provider = models.providers.get(model, "")
            if provider:
                attributes["gen_ai.provider.name"] = provider
        attributes |= _usage((usage,))
        named = f"chat {model}" if model and model != "absent" else "chat"
        trace = self._ids().trace
        return Span(trace, span, parent, named, CLIENT, self._at(start), self._at(start + seconds), attributes)

    def _case(self) -> dict[str, Value]:
        """The root span's attributes: the suite, the case, and its result."""
        outcome = self.attempt.outcome
        status = self.attempt.status()
        attributes: dict[str, Value] = {
            "test.suite.name": f"{self.run.agent}/{self.run.run}",
            "test.suite.run.status": self.run.suite,
            "test.case.name": outcome.scenario,
        }
        if status != "not_judged":  # pass or fail; an attempt not judged has no result
            attributes["test.case.result.status"] = "pass" if status == "passed" else "fail"
        attributes |= {
            "gen_ai.conversation.id": self._conversation(),
            "convy.run.id": self.run.run,
            "convy.agent": self.run.agent,
            "convy.scenario": outcome.scenario,
            "convy.attempt": outcome.attempt,
            "convy.status": status,
            "convy.stop": outcome.stop,
            "convy.turns": len(outcome.transcript.turns),
        }
        if self.run.name:
            attributes["convy.run.name"] = self.run.name
        if self._failure():  # the dialogue broke off: why, in the conventions' words
            attributes["error.type"] = outcome.stop
        why, cause = self.attempt.why(), self.attempt.cause()
        if why:
            attributes["convy.why"] = why
        if cause is not None:
            attributes["convy.cause"] = cause
        match self.run.scenarios.get(outcome.scenario):
            case Scenario(variant=Variant(of=of, values=values)):
                attributes["convy.variant_of"] = of
                attributes["convy.variant"] = _JSON.encode(values).decode()
            case _:
                pass
        return attributes

    def _failure(self) -> str:
        """Why the attempt's dialogue broke off, when the agent or a model failed it; "" otherwise."""
        match self.attempt.outcome.result:
            case Failed(reason=reason):
                return reason or self.attempt.outcome.stop
            case NoVerdict(reason=reason) if self.attempt.outcome.stop != "finished":
                return reason or self.attempt.outcome.stop
            case _:
                return ""

    def _claims(self) -> tuple[Claim, ...]:
        outcome = self.attempt.outcome
        match outcome.result:
            case Verdict(claims=claims):
                return claims
            case NoVerdict(checks=checks):
                return checks
            case _:
                return ()

    def _label(self, claim: Claim) -> str:
        grade = DecidedClaim(claim).grade()
        if grade is not None:
            return grade
        return "pass" if claim.held else "fail"

    def _score(self, claim: Claim, scenario: Scenario | None) -> float | None:
        """A graded claim's grade as a score from 0 (the worst grade) to 1 (the best); none ungraded."""
        grade = DecidedClaim(claim).grade()
        if grade is None or scenario is None:
            return None
        for asked in scenario.claims():
            if isinstance(asked, Graded) and asked.claim == claim.claim and grade in asked.grades:
                return asked.grades.index(grade) / max(len(asked.grades) - 1, 1)
        return None

    def _decided(self, ids: TraceIds) -> str:
        """The span the claims' results belong to: the attempt's root, or a re-judged attempt's judging."""
        if self.attempt.outcome.rejudged:
            return ids.span("rejudge", self.run.run)
        return ids.root()

    def _conversation(self) -> str:
        outcome = self.attempt.outcome
        return f"{self.run.agent}/{self.run.dialogues or self.run.run}/{outcome.scenario}#{outcome.attempt}"

    @functools.cached_property
    def _ids_once(self) -> TraceIds:
        outcome = self.attempt.outcome
        dialogues = self.run.dialogues or self.run.run
        return TraceIds.of(outcome.trace, self.run.agent, dialogues, outcome.scenario, outcome.attempt, outcome.started)

    def _ids(self) -> TraceIds:
        return self._ids_once

    def _at(self, seconds: float) -> int:
        """Nanoseconds since the epoch of a moment ``seconds`` after the attempt's start."""
        return self._start + round(seconds * 1e9)

    @functools.cached_property
    def _start(self) -> int:
        try:
            started = datetime.fromisoformat(self.attempt.outcome.started)
        except ValueError:  # a hand-edited line: the epoch rather than no trace
            return 0
        if started.tzinfo is None:
            started = started.replace(tzinfo=UTC)
        delta = started - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def _usage(requests: tuple[Usage | NoUsage, ...]) -> dict[str, Value]:
    """The tokens of some requests as ``gen_ai.usage.*``, when every one reported them."""
    if not requests or any(type(request) is not Usage or request.unreported for request in requests):
        return {}
    spent: dict[str, Value] = {
        "gen_ai.usage.input_tokens": sum(request.input for request in requests if type(request) is Usage),
        "gen_ai.usage.output_tokens": sum(request.output for request in requests if type(request) is Usage),
    }
    return spent


def _messages(role: str, text: str, finish: str = "") -> str:
    """A message as ``gen_ai.input.messages``/``gen_ai.output.messages`` hold it (JSON text)."""
    message: dict[str, object] = {"role": role, "parts": [{"type": "text", "content": text}]}
    if finish:
        message["finish_reason"] = finish
    return _JSON.encode([message]).decode()


class RunTraces(msgspec.Struct, frozen=True):
    """Runs as OTLP JSON files (``convy export --format otlp``): each attempt's trace one line of
    ``otlp-traces.jsonl``, its evaluation results one line of ``otlp-logs.jsonl``, each attempt read
    again in full and let go as its line is written."""

    runs: tuple[Read, ...]
    version: str

    FILES: ClassVar[dict[str, str]] = {"traces": "otlp-traces.jsonl", "logs": "otlp-logs.jsonl"}

    def lines(self, kind: Literal["traces", "logs"]) -> Iterator[str]:
        for run in self.runs:
            summary = Summary(run)
            # Failed as the command fails it (any gate: the pass rule, too many not judged, nothing
            # tested, the budget...), so a backend never shows a run that exited non-zero as a success.
            context = RunContext.read(run, self.version, bool(summary.verdict().gates()))
            for _, attempt in summary.said():
                signals = context.signals(attempt.outcome)
                if kind == "traces":
                    yield signals.json_traces().decode() + "\n"
                elif signals.logs:
                    yield signals.json_logs().decode() + "\n"
