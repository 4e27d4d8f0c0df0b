"""A claim decided from several votes: the judge asked again (``judge_repeats``), a panel of
judges (``Models(judge=[...])``), or both.

``Judging`` is how a run judges: how many times each judge is asked about each claim, how a
panel's votes make the decision (``majority`` or ``unanimous``), and what a decision whose quoted
evidence is not in the dialogue is worth (``flag`` or ``require``). ``Panel`` is the judges a
project's ``models.py`` names, as data. ``Poll`` is the judge a run asks when there is more than
one vote, or when evidence is required: it asks every judge ``repeats`` times, all at once (each
request within the judge's places), and makes each claim's ``Claim`` from its votes with
``decision``. With one judge asked once and evidence flagged, a run asks its judge directly, as it
always has: no ``Poll``, no votes written.

The rules (docs/statistics.md says them for readers of a report):

- *majority*: a claim holds when more than half of all its votes (every judge, every repeat) say
  it held, fails when more than half say it failed; as many for as against is a *split*: nothing is
  decided, the claim is not trusted (``Claim.doubt == "split"``), so the attempt is not judged,
  unless another claim failed with trust.
- *unanimous*: a claim holds only when every vote says it held; one vote against fails it. There
  is never a split.
- a *graded* claim: each vote's grade passes or not by the scenario's bar, and the decision is
  made from those as above; its grade is the lower median of the votes' grades under majority
  (the worse of the two middle ones for an even count, so it always agrees with the decision), and
  the worst grade under unanimous.
- the decision's reason, confidence and evidence are those of the votes that agree with it: the
  first agreeing vote's reason, the mean of their confidences (none when a vote gave none), the
  first agreeing quote that is sound evidence (``dialog.Quote``: a few whole words of one of the
  agent's messages, or the whole of a shorter one), else the first found in the dialogue, else
  the first quoted. With ``evidence = "require"`` a decision with no sound quote is not trusted
  (``Claim.doubt == "unquoted"``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import msgspec

from convy.agent import NoUsage, Usage
from convy.dialog import (
    Checked,
    Claim,
    Confidence,
    Grade,
    Graded,
    Judge,
    NoConfidence,
    NoGrade,
    Ruling,
    Transcript,
    Vote,
    first_failure,
)
from convy.model import ModelFailure


class Judging(msgspec.Struct, frozen=True, omit_defaults=True):
    """How a run judges its claims (kept in ``run.json``, so a resumed run and its report know):
    each judge asked ``repeats`` times per claim, a panel's votes combined by ``panel``, and a
    decision whose evidence is not sound — not in the dialogue, or too short, a piece of a word or
    the user's words (``dialog.Quote``) — flagged (``flag``) or not trusted (``require``)."""

    repeats: int = 1
    panel: Literal["majority", "unanimous"] = "majority"
    evidence: Literal["flag", "require"] = "flag"

    MOST_REPEATS: ClassVar[int] = 15

    def __post_init__(self) -> None:
        if not 1 <= self.repeats <= self.MOST_REPEATS:
            raise ValueError(f"judge_repeats: must be from 1 to {self.MOST_REPEATS}")

    def direct(self) -> bool:
        """Whether one judge may be asked directly, once per claim, its decision kept as it is."""
        return self.repeats == 1 and self.evidence == "flag"


class Panel(msgspec.Struct, frozen=True):
    """The judges of a panel, as ``models.py`` lists them (``Models(judge=[...])`` makes one):
    each a ``Judge``. Asked directly (outside a run) each decides once, by majority."""

    judges: tuple[Any, ...]

    @property
    def name(self) -> str:
        return ", ".join(self.names())

    def names(self) -> tuple[str, ...]:
        """Each judge's name, made distinct: the same model twice is ``name`` and ``name #2``."""
        return distinct([judge.name for judge in self.judges])

    async def ruling(self, claims: tuple[str | Graded, ...], transcript: Transcript) -> Ruling:
        return await Poll(tuple(Checked(judge) for judge in self.judges), self.names()).ruling(claims, transcript)


def distinct(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` with a repeated one numbered from its second (``name #2``)."""
    seen: dict[str, int] = {}
    made: list[str] = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        made.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return tuple(made)


class Poll(msgspec.Struct, frozen=True):
    """Every judge asked about every claim ``judging.repeats`` times, all at once, each claim
    decided from its votes (``decision``). ``judges`` are ``Checked`` (and patient in a run), so
    each vote has the claim's shape; ``names`` are theirs as the votes keep them.

    Every vote must be given: when a request fails, the ruling fails (the first failure in order,
    carrying the usage of every request answered), as one judge's does."""

    judges: tuple[Judge, ...]
    names: tuple[str, ...]
    judging: Judging = Judging()

    @property
    def name(self) -> str:
        return ", ".join(self.names)

    async def ruling(self, claims: tuple[str | Graded, ...], transcript: Transcript) -> Ruling:
        async def asked(judge: Judge) -> Ruling | Exception:
            try:
                return await judge.ruling(claims, transcript)
            except Exception as error:  # kept as a value: the other votes finish and count
                return error

        asks = [(name, judge) for judge, name in zip(self.judges, self.names, strict=True) for _ in range(self.judging.repeats)]
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(asked(judge)) for _, judge in asks]
        every: list[Usage | NoUsage] = []
        rulings: list[tuple[str, Ruling]] = []
        errors: list[Exception] = []
        for (name, _), task in zip(asks, tasks, strict=True):
            match task.result():
                case Ruling() as ruling:
                    rulings.append((name, ruling))
                    every.extend(ruling.requests)
                case ModelFailure() as failure:
                    errors.append(failure)
                    every.extend(failure.requests)
                case Exception() as error:
                    errors.append(error)
        first_failure(errors, every)
        decided = [
            decision(claim, [_vote(name, ruling.claims[index]) for name, ruling in rulings], self.judging)
            for index, claim in enumerate(claims)
        ]
        return Ruling(tuple(decided), tuple(every))


def _vote(judge: str, claim: Claim) -> Vote:
    return Vote(judge, claim.held, claim.reason, claim.confidence, claim.grade, claim.evidence)


def decision(asked: str | Graded, votes: Sequence[Vote], judging: Judging = Judging()) -> Claim:
    """The claim decided from its ``votes`` by the rules of ``judging`` (this module's docstring).
    One vote is kept as the decision itself, with no votes."""
    if not votes:
        raise ValueError("a decision needs at least one vote")
    count = len(votes)
    held = sum(1 for vote in votes if vote.held)
    split = False
    match judging.panel:
        case "majority":
            split = 2 * held == count
            passed = 2 * held > count
        case "unanimous":
            passed = held == count
    agreeing = list(votes) if split else [vote for vote in votes if vote.held == passed]
    grade: Grade | NoGrade = NoGrade()
    match asked:
        case Graded(claim=text, grades=grades):
            ranks = sorted(grades.index(vote.grade.name) for vote in votes if type(vote.grade) is Grade)
            if ranks:
                rank = ranks[(len(ranks) - 1) // 2] if judging.panel == "majority" else ranks[0]
                grade = Grade(grades[rank])
        case str(text):
            pass
    confidences = [vote.confidence.value for vote in agreeing if type(vote.confidence) is Confidence]
    confidence: Confidence | NoConfidence = NoConfidence()
    if len(confidences) == len(agreeing):
        confidence = Confidence(min(1.0, max(0.0, sum(confidences) / len(confidences))))
    quoted = [vote.evidence for vote in agreeing if vote.evidence is not None]
    # The first sound quote, else the first found (flagged weak), else the first quoted.
    evidence = next((one for one in quoted if one.sound()), next((one for one in quoted if one.found), quoted[0] if quoted else None))
    doubt: Literal["", "split", "unquoted"] = ""
    if split:
        doubt = "split"
        judges = len({vote.judge for vote in votes})
        who = "the judge" if judges == 1 else "the judges"
        reason = f"{who} split: {held} of {count} votes said it held, {count - held} that it did not"
    else:
        reason = agreeing[0].reason
        if judging.evidence == "require" and (evidence is None or not evidence.sound()):
            doubt = "unquoted"
    return Claim(
        text,
        passed and not split,
        reason,
        confidence,
        grade,
        evidence=evidence,
        votes=tuple(votes) if count > 1 else (),
        doubt=doubt,
    )
