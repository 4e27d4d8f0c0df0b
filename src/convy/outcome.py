"""One attempt as it ended (``Outcome``, a line of ``attempts.jsonl``), and its judging's result (``Judged``)."""

from __future__ import annotations

from typing import Literal

import msgspec

from convy.agent import Answer, Call, NoUsage, Thought, Usage
from convy.judge import Failed, NoVerdict, Verdict
from convy.received import NO_SPANS, AgentSpan, recorded
from convy.transcript import Stop, Transcript, Unchecked, UserFault
from convy.waits import Wait

# The time of a part an attempt did not have (no opening, no ending by the user, no judgement),
# each ``Outcome`` field's default and what ``scenario.py`` gives for it: msgspec leaves a field out
# of the line only when it holds the default object itself (``omit_defaults`` compares by identity),
# and an equal 0.0 written in another module is another object, written out on every line.
UNTIMED: float = 0.0


class Judged(msgspec.Struct, frozen=True, gc=False):
    """A dialogue's result as its judge and the checks decided it, and what the judge's requests
    took (those of a judgement that failed included)."""

    result: Verdict | Failed | NoVerdict
    requests: tuple[Usage | NoUsage, ...] = ()


class Outcome(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """One attempt as it ended: the dialogue, why it stopped, its result, and the judge's part.

    Times are seconds; ``judge_start`` counts from the attempt's start like a turn's times, and
    so does each of ``waits``, the stretches spent waiting for a busy service or a pace.
    ``user_ending`` is the simulated user's last request, the one that ended the dialogue — by
    saying it was done, by failing after it was answered, or by speaking in a turn the agent then
    did not answer (no turn holds it) — with its time in ``user_ending_seconds``; ``agent_ending``
    what the agent's broken-off turn had spent, when its failure said (``AgentFailure.spent``,
    ``Busy.spent``): its requests and tool calls; ``judge_requests`` holds the judge's requests, those of a judgement
    that failed included, and those of the simulated user's model-decided checks before them.
    ``user_faults`` are what the simulated user's checks found (``user.py``), the earliest first,
    and ``user_unchecked`` the model-decided checks asked that were not decided; a line kept before
    them reads back with none. ``rejudged`` marks an attempt ``convy rejudge`` decided again: its
    dialogue, and what the agent's and the user model's requests took, were recorded by the run it
    was re-judged from and are that run's spending, not this one's (``Attempt`` counts only its
    judge's requests). ``trace`` is the id of the attempt's trace (``tracecontext.TraceIds``): its
    turns were sent to the agent under it, and its exported spans carry it.
    """

    scenario: str
    attempt: int
    started: str
    seconds: float
    transcript: Transcript
    stop: Stop
    result: Verdict | Failed | NoVerdict
    open_seconds: float = UNTIMED
    close_seconds: float = UNTIMED
    judge_start: float = UNTIMED
    judge_seconds: float = UNTIMED
    judge_requests: tuple[Usage | NoUsage, ...] = ()
    waits: tuple[Wait, ...] = ()
    user_ending: tuple[Usage | NoUsage, ...] = ()
    user_ending_seconds: float = UNTIMED
    rejudged: bool = False
    user_faults: tuple[UserFault, ...] = ()  # what the simulated user's checks found (issue 11)
    user_unchecked: tuple[Unchecked, ...] = ()  # the model-decided checks asked that were not decided, and why
    agent_ending: Answer | None = None  # what the turn the agent broke off had spent, when it said (issue 26)
    trace: str = ""  # its trace's id, 32 hex digits (issue 30; a line kept before it: "", ``tracecontext.TraceIds.of``)
    # The agent's own spans of its trace, as it sent them while the run received them
    # (``receive_traces``, ``receiver.Receiver``), and how many more came than were kept: kept as
    # the JSON of a list of ``AgentSpan`` the record holds, read only where they are shown
    # (``agent_spans``). JSON only: an attempt with spans is never sent as MessagePack (a spread
    # run receives none).
    spans: msgspec.Raw = NO_SPANS
    spans_dropped: int = 0

    def __post_init__(self) -> None:
        # Read from a line, the spans would hold the whole line: they keep a copy of their own.
        if len(self.spans) > 2:
            msgspec.structs.force_setattr(self, "spans", self.spans.copy())

    def agent_spans(self) -> tuple[AgentSpan, ...]:
        """The agent's own spans it kept (``spans``), read; none where they do not read as spans."""
        return recorded(self.spans) if len(self.spans) > 2 else ()

    def status(self, trust: float) -> Literal["passed", "failed", "not_judged"]:
        """Passed, failed, or not judged (no verdict, or a verdict with claims not trusted).

        An attempt without a verdict is failed still when a check decided by code failed."""
        match self.result:
            case Verdict() as verdict:
                match verdict.status(trust):
                    case "passed":
                        return "passed"
                    case "failed":
                        return "failed"
                    case "not_trusted":
                        return "not_judged"
            case Failed():
                return "failed"
            case NoVerdict() as none:
                return none.status()

    def unsaid(self) -> Outcome:
        """This attempt without the words of its dialogue: each turn's message, and the text and
        steps (thoughts, tool calls) of each answer of the agent, its broken-off turn's too, left
        out, but the calls of that turn its tools failed on purpose (``injected``), which its cause
        rests on; its numbers, usage, times, stop and result (every claim and reason) kept. A run read
        unsaid (``placed.Placed``) walks its attempts so, one at a time, where the words are not
        needed (JUnit, the Markdown summary, the judging section); a dialogue is read again in full
        only to be shown or matched to its labels."""
        replace = msgspec.structs.replace
        ending = self.agent_ending
        # The broken-off turn keeps the calls its tools failed on purpose, by name, source and
        # error alone: the attempt's cause rests on them (``causes.py``), and must be the same read
        # unsaid as read whole.
        kept = tuple([Call(call.name, error=call.error, source=call.source) for call in self.injected()])
        return replace(
            self,
            transcript=Transcript(
                tuple([replace(turn, message="", answer=turn.answer.unsaid()) for turn in self.transcript.turns])
            ),
            agent_ending=None if ending is None else replace(unsaid := ending.unsaid(), steps=kept + unsaid.steps),
            spans=NO_SPANS,
        )

    def injected(self) -> tuple[Call, ...]:
        """The calls of the turn the agent broke off (``agent_ending``) that the scenario's own
        tools failed on purpose: answered from an answer the scenario declared (``source``
        ``fixture`` or ``default``) with an error — an ``error:`` answer (or a ``read:`` with
        nothing at its path, a ``set:`` that cannot be made), or a ``delay:`` cut off while it held
        the answer back. A call no declared answer fitted (``unanswered``), whose
        arguments did not fit (``invalid``), of a tool not declared (``unknown``), that the agent
        only claimed (``claimed``) or that the scenario's tools never served (``""``) failed by no
        one's plan, and is not among them; nor is any call of a turn the agent finished."""
        ending = self.agent_ending
        if ending is None:
            return ()
        found: list[Call] = []
        for step in ending.steps:
            match step:
                case Call(error=error, source="fixture" | "default") if error:
                    found.append(step)
                case Call() | Thought():
                    pass
        return tuple(found)

    def unseen(self) -> tuple[tuple[str, str], ...]:
        """The agent's calls paths that no reply of this dialogue held a list at, each with what
        a reply held there instead ("" for nothing), when a tool check was left undecided for it
        (``Claim.doubt == "unseen"``); none otherwise."""
        match self.result:
            case Verdict(claims=claims) | NoVerdict(checks=claims) if any(claim.doubt == "unseen" for claim in claims):
                turns = self.transcript.turns
                return tuple(sorted({(turn.answer.unheld, turn.answer.unheld_as) for turn in turns if turn.answer.unheld}))
            case _:
                return ()
