"""How far a run's judging can be trusted, claim by claim: what the report's "Judging" section
shows (docs/statistics.md, "Judging the judge").

For each claim a judge decides in a scenario, over the attempts with a verdict:

- *evidence*: how many decisions quoted words found in the dialogue, quoted words that are not
  there (flagged: the judge may have invented them), or quoted nothing;
- *self-agreement* (with ``judge_repeats`` above 1): for each decision and each judge, the share
  of that judge's votes that agree with its own majority (a tie counts ½), averaged over judges
  and then over decisions; 1 means the judge always said the same;
- *splits*: decisions whose votes tied, so nothing was decided; *dissents*: decisions whose
  votes were not all the same;
- *inter-judge agreement* (a panel): Fleiss' κ with the judges as raters and the decisions as
  subjects, each judge's rating its own majority over its repeats (a decision where a judge tied
  with itself is left out), categories held and not held; and the raw share of agreeing pairs.

A claim is *ambiguous* ("rewrite it") when the judge was asked more than once, its
self-agreement is below ``AMBIGUOUS`` (0.9), and its judges wavered more than a judge
``CONSISTENT`` (95%) consistent would: the votes against their own judge's majority, over every
decision of the claim, are too many for Binomial(votes, 5%) by the one-sided exact test at 5%
(``stats.Binomial``). A rate, not one tie: a single 2–2 split in 30 decisions is what a judge 95%
consistent gives a third of the time, and flags nothing. A panel *disagrees* on a claim
when the share of agreeing judge pairs is below ``DISAGREE`` (0.8): κ itself is not used for the
flag, since it swings on a claim that nearly always holds (the "κ paradox").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from statistics import fmean
from typing import ClassVar, Literal

import msgspec

from convy.attempt import Attempt
from convy.judge import Claim, Verdict
from convy.kappa import FleissKappa
from convy.records import RunSpec
from convy.stats import Binomial
from convy.views import ClaimJudgingView, DecisionLink, JudgingView


class _Claimed:
    """What one claim of one scenario gathered over its attempts."""

    __slots__ = ("decisions", "quoted", "unquoted", "silent", "agreements", "splits", "dissents", "ratings", "left_out", "split", "unfound", "votes", "wavered")

    def __init__(self) -> None:
        self.decisions = 0
        self.quoted = 0
        self.unquoted = 0
        self.silent = 0
        self.agreements: list[float] = []
        self.splits = 0
        self.dissents = 0
        self.ratings: list[tuple[int, int]] = []  # per decision: judges saying held, judges saying not
        self.left_out = 0
        self.split: list[DecisionLink] = []
        self.unfound: list[DecisionLink] = []
        self.votes = 0  # votes of a judge asked more than once
        self.wavered = 0  # of those, the votes against that judge's own majority in the decision


class Consensus(msgspec.Struct, frozen=True):
    """A run's judging seen claim by claim, from its spec and its attempts by scenario."""

    spec: RunSpec
    attempts: Mapping[str, Sequence[Attempt]]

    AMBIGUOUS: ClassVar[float] = 0.9
    CONSISTENT: ClassVar[float] = 0.95
    ODDS: ClassVar[float] = 0.05  # the one-sided test's level for "wavered more than that"
    DISAGREE: ClassVar[float] = 0.8
    LISTED: ClassVar[int] = 50  # decisions listed per claim and kind, the rest counted

    def view(self) -> JudgingView | None:
        """The report's judging section; ``None`` for a run with neither votes nor quoted
        evidence (a judge that quotes nothing, asked once: there is nothing to show)."""
        gathered: dict[tuple[str, str], _Claimed] = {}
        seen = False
        for scenario, attempts in self.attempts.items():
            for attempt in attempts:
                match attempt.outcome.result:
                    case Verdict(claims=claims):
                        for claim in claims:
                            if claim.by != "judge":
                                continue
                            one = gathered.get((scenario, claim.claim))
                            if one is None:
                                one = gathered[(scenario, claim.claim)] = _Claimed()
                            seen = self._add(one, claim, attempt.outcome.attempt) or seen
                    case _:
                        pass
        if not seen:
            return None
        judging, names = self.spec.judging, self.spec.models
        judges = names.judges()
        rows: list[ClaimJudgingView] = []
        subjects: list[tuple[int, int]] = []
        for (scenario, text), one in gathered.items():
            subjects.extend(one.ratings)
            rows.append(self._row(scenario, text, one, len(judges)))
        kappa = FleissKappa(tuple(subjects)).kappa() if len(judges) > 1 and subjects else None
        agreements = [row.agreement for row in rows if row.agreement is not None]
        return JudgingView(
            repeats=judging.repeats,
            panel=judging.panel,
            evidence=judging.evidence,
            judges=list(judges),
            providers=dict(names.providers),
            agent_model=names.agent,
            agent_provider=names.agent_provider,
            alike=list(names.alike()),
            kappa=kappa,
            kappa_reading=FleissKappa.reading(kappa) if len(judges) > 1 and subjects else "",
            kappa_subjects=len(subjects),
            agreement=fmean(agreements) if agreements else None,
            ambiguous=sum(row.ambiguous for row in rows),
            disagree=sum(row.disagree for row in rows),
            unquoted=sum(row.unquoted for row in rows),
            decisions=sum(row.decisions for row in rows),
            claims=rows,
        )

    def _add(self, one: _Claimed, claim: Claim, attempt: int) -> bool:
        """Count one decision; whether it had anything to show (votes or a quote)."""
        one.decisions += 1
        quoted = claim.evidence
        if quoted is None:
            one.silent += 1
        elif quoted.sound():
            one.quoted += 1
        else:
            one.unquoted += 1
            if len(one.unfound) < self.LISTED:
                one.unfound.append(DecisionLink(attempt, 0, 0, _outcome(claim), False))
        if not claim.votes:
            return quoted is not None
        by_judge: dict[str, list[bool]] = {}
        for vote in claim.votes:
            by_judge.setdefault(vote.judge, []).append(vote.held)
        held = sum(vote.held for vote in claim.votes)
        if self.spec.judging.repeats > 1:
            one.agreements.append(fmean([max(sum(said), len(said) - sum(said)) / len(said) for said in by_judge.values()]))
            for said in by_judge.values():
                one.votes += len(said)
                one.wavered += min(sum(said), len(said) - sum(said))
        if claim.doubt == "split":
            one.splits += 1
        if 0 < held < len(claim.votes):
            one.dissents += 1
            if len(one.split) < self.LISTED:
                one.split.append(DecisionLink(attempt, held, len(claim.votes), _outcome(claim), None if quoted is None else quoted.found))
        if len(by_judge) > 1:
            majorities = [_majority(said) for said in by_judge.values()]
            if None in majorities:
                one.left_out += 1
            else:
                yes = sum(1 for said in majorities if said)
                one.ratings.append((yes, len(majorities) - yes))
        return True

    def _row(self, scenario: str, text: str, one: _Claimed, judges: int) -> ClaimJudgingView:
        agreement = fmean(one.agreements) if one.agreements else None
        kappa = FleissKappa(tuple(one.ratings)) if judges > 1 and one.ratings else None
        between = None if kappa is None else kappa.observed()
        return ClaimJudgingView(
            scenario=scenario,
            claim=text,
            decisions=one.decisions,
            quoted=one.quoted,
            unquoted=one.unquoted,
            silent=one.silent,
            agreement=agreement,
            splits=one.splits,
            dissents=one.dissents,
            between=between,
            kappa=None if kappa is None else kappa.kappa(),
            left_out=one.left_out,
            ambiguous=self._ambiguous(agreement, one),
            disagree=between is not None and between < self.DISAGREE,
            split=one.split,
            unfound=one.unfound,
        )


    def _ambiguous(self, agreement: float | None, one: _Claimed) -> bool:
        """Self-agreement under ``AMBIGUOUS`` and more wavering than a judge ``CONSISTENT``
        consistent shows by chance (p < 5%, one-sided)."""
        if agreement is None or agreement >= self.AMBIGUOUS:
            return False
        return Binomial(one.votes, 1 - self.CONSISTENT).above(one.wavered) < self.ODDS


def _majority(said: Iterable[bool]) -> bool | None:
    votes = list(said)
    held = sum(votes)
    return None if 2 * held == len(votes) else 2 * held > len(votes)


def _outcome(claim: Claim) -> Literal["held", "failed", "split"]:
    return "split" if claim.doubt == "split" else "held" if claim.held else "failed"
