"""Whose an attempt that did not pass was, and the attempts of a run counted by it.

Every attempt that did not pass (failed, or not judged) has one ``Cause``, found by
``attempt.Attempt.cause`` from what its line in ``attempts.jsonl`` records and the run's trust:

- ``agent``: the agent failed or passed its time limit, a check decided by code failed, or a
  trusted claim of the judge failed;
- ``user``: the simulated user misbehaved (its checks found faults: ``Outcome.user_faults``), or
  its model failed or answered with something convy cannot use;
- ``judge``: the judge failed or answered with something convy cannot use, or its decisions are
  not trusted (below the trust threshold, votes split, evidence required and not found);
- ``service``: a service stayed busy past the participant's patience (the agent's or a model's),
  or a model's service failed the request (a connection, a timeout, an error status:
  ``NoVerdict.service``, recorded where the failure was caught);
- ``tool``: the agent failed or passed its time limit in a turn where one of the scenario's own
  tools failed on purpose: it answered a call from an answer the scenario declared (``Call.source``
  ``fixture`` or ``default``) with an error — an ``error:`` answer, or a ``delay:`` that held the
  answer until the turn was cut off (``Outcome.injected``).

When several apply, the first of these rules decides:

1. the agent failed, or a check decided by code failed: ``agent``; but ``tool`` when the agent
   failed in a turn in which the scenario's tools failed a call on purpose (the turn it broke off:
   ``Outcome.injected``). Code decided it on what the agent itself said and called, with no model
   in between, so it is certain whatever the others did; and an agent that breaks on an odd
   message is still broken. A planted failure is another matter: the scenario put it there (a tool
   down, a call that hangs) and the agent most likely broke on it — the tool's error raised on,
   the held answer outlasting the turn — so, counted as the agent's, the failures scenarios plant
   would read as the agent's own breakages. Only that turn counts: a planted failure the agent came
   through in an earlier turn says nothing of a later breakage. A check or a trusted claim that
   failed stays the agent's beside a planted failure (how the agent meets it is what such a
   scenario tests), and a call that failed by no answer the scenario declared (none fits,
   arguments that do not fit, a tool not declared, a call the agent only claimed) was planted by
   nobody.
2. the simulated user misbehaved: ``user``. Its dialogue is then no fair test of the agent, and
   whatever happened after it (a judge's failure, a service's) would not make it one.
3. a service was busy or failed a model's request: ``service``. The model never answered, so
   nothing is known of it.
4. the simulated user's model or the judge failed: ``user`` or ``judge``, whose model it was.
5. a verdict: ``agent`` when a trusted claim failed, ``judge`` when claims were left not trusted.

The cause is found when read, never written: it rests on the run's trust, which ``convy report
--trust`` may change, and a line kept before any of its facts were recorded reads with a cause
all the same (a model's failed request then counts as its model's: such lines did not say).
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Literal

import msgspec

from convy.views import CauseView

Cause = Literal["agent", "user", "judge", "service", "tool"]
CAUSES: tuple[Cause, ...] = ("agent", "user", "judge", "service", "tool")
NAMES: dict[Cause, str] = {
    "agent": "the agent",
    "user": "the simulated user",
    "judge": "the judge",
    "service": "a service",
    "tool": "a tool the scenario made fail",
}


class Breakdown(msgspec.Struct, frozen=True, dict=True):
    """Some attempts' causes (``None`` for one that passed), counted: the attempts of a run, or of
    some of its scenarios, that did not pass by cause, out of all of them."""

    causes: tuple[Cause | None, ...]

    @property
    def attempts(self) -> int:
        return len(self.causes)

    @functools.cached_property
    def counts(self) -> dict[Cause, int]:
        """Each cause's attempts, every cause present, in the order of ``CAUSES``."""
        counted = Counter(cause for cause in self.causes if cause is not None)
        return {cause: counted.get(cause, 0) for cause in CAUSES}

    def not_passed(self) -> int:
        return sum(self.counts.values())

    def share(self, cause: Cause) -> float | None:
        """The cause's share of the attempts that did not pass; ``None`` when all passed."""
        total = self.not_passed()
        return self.counts[cause] / total if total else None

    def of_all(self, cause: Cause) -> float | None:
        """The cause's share of every attempt; ``None`` when there were none."""
        return self.counts[cause] / self.attempts if self.attempts else None

    def views(self) -> list[CauseView]:
        """Each cause, in the order of ``CAUSES``, with its count and share, as the report's tile
        draws them."""
        return [CauseView(cause=cause, count=self.counts[cause], share=self.share(cause)) for cause in CAUSES]

    def text(self) -> str:
        """The breakdown in one line, as the command says it: ``7 not passed, by cause: agent 4
        (57%), user 2 (29%), judge 0, service 1 (14%), tool 0``; ``""`` when every attempt passed."""
        total = self.not_passed()
        if not total:
            return ""
        counts = self.counts
        parts = [f"{cause} {counts[cause]}" + (f" ({counts[cause] / total:.0%})" if counts[cause] else "") for cause in CAUSES]
        return f"{total} not passed, by cause: " + ", ".join(parts)


# The causes whose change a comparison speaks of: those that are not the agent's. Nor is ``tool``
# among them: the scenarios compared plant the same failures on both sides, so a change in how
# many of them broke the agent is the agent's own change.
SHIFTED: tuple[Cause, ...] = ("user", "judge")
TROUBLE: dict[Cause, str] = {
    "user": "simulated-user",
    "judge": "judge",
    "service": "service",
    "agent": "agent",
    "tool": "scenario-tool",
}


class Shift(msgspec.Struct, frozen=True):
    """Two runs' breakdowns, base and candidate: whether a change in how many attempts passed is
    mostly the simulated user's or the judge's.

    Each side is taken as shares of its own attempts (runs may differ in size). The change is the
    candidate's share of attempts not passed less the base's; a cause's change is its own share's.
    "Mostly" means the cause's change goes the same way as the whole change and is more than half
    of it: of 10 more attempts in 100 not passed, more than 5 more in 100 of that cause. Nothing is
    said when the shares of attempts not passed are equal.
    """

    base: Breakdown
    candidate: Breakdown

    def sentences(self) -> list[str]:
        """A sentence for each cause whose change makes most of the whole change, in words: "the
        candidate's drop (attempts passed, 18 of 20 → 12 of 20) is mostly simulated-user trouble: …"."""
        if not self.base.attempts or not self.candidate.attempts:
            return []
        whole = self.candidate.not_passed() / self.candidate.attempts - self.base.not_passed() / self.base.attempts
        if abs(whole) < 1e-12:
            return []
        said: list[str] = []
        passed = (
            f"attempts passed, {self.base.attempts - self.base.not_passed()} of {self.base.attempts} → "
            f"{self.candidate.attempts - self.candidate.not_passed()} of {self.candidate.attempts}"
        )
        for cause in SHIFTED:
            before, after = self.base.of_all(cause) or 0.0, self.candidate.of_all(cause) or 0.0
            change = after - before
            if change * whole > 0 and abs(change) > abs(whole) / 2:
                counts = (
                    f"not passed for {NAMES[cause]}: {self.base.counts[cause]} of {self.base.attempts} ({before:.0%})"
                    f" → {self.candidate.counts[cause]} of {self.candidate.attempts} ({after:.0%})"
                )
                if whole > 0:
                    said.append(f"the candidate's drop ({passed}) is mostly {TROUBLE[cause]} trouble: {counts}")
                else:
                    said.append(f"the candidate's rise ({passed}) is mostly less {TROUBLE[cause]} trouble: {counts}")
        return said
