"""Two runs compared: did the pass rate change on these scenarios beyond attempt-to-attempt noise?

``Comparison`` makes the comparison page's view records (statistics.md, "Comparing two runs"):
the exact stratified test that decides "real" or "within noise", the paired difference with its
interval and the sign-flip test across scenarios, per-scenario Fisher tests adjusted by
Benjamini–Hochberg, the claims that flipped, the minimum detectable effect, tokens, cost and time
before and after, and what makes the two runs not comparable. Scenarios in one run only, or whose
content changed, are listed apart and left out of every test: missing is not passing.

Of two runs that decided the same dialogues (``convy rejudge``), each attempt is paired with
itself, and the verdict and the headline Δ come instead from McNemar's exact test and Newcombe's
paired interval of the attempts judged in both (``significance.McNemar``): the two sides are not
independent samples, and the test that takes them for such is far too cautious.

When one run of the pair was played against the other until a sequential comparison stopped it
(``convy run --against BASE --attempts auto``), its anytime-valid verdict is this comparison's
and leads it (``PlayedAgainst``): the fixed-design test of 1. assumes the number of attempts was
set before any was seen, and a run that stopped when its attempts looked decided breaks that, so
the test's p and verdict are kept for description only. A run played against some third run is
said too: its sequential verdict is of another pair and does not apply to this one.

Two things are decided here for the page to draw:

- the Δ interval is clamped to [−1, +1]: a difference of two pass rates cannot leave it, though
  the t interval of a few paired differences can (it once showed −104.6 points);
- tokens, cost and time per attempt are "lower", "higher" or "same" after: "same" when the ratio
  after / before is within ``TOLERANCE`` (5%) of 1, i.e. from 0.95 to 1.05 inclusive. Run-to-run
  jitter of a few percent in tokens or seconds is ordinary, and calling a 2% change "higher" would
  colour it as a regression.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from functools import cached_property
from typing import Literal
from urllib.parse import quote

import msgspec

from convy.adaptive import Against, Course, Watched
from convy.causes import Breakdown, Shift
from convy.digest import Attempts
from convy.judge import Judging
from convy.labels import Judges, RunLabels
from convy.outcome import Outcome
from convy.placed import Placed
from convy.records import Origin, RunSpec
from convy.report import Summary
from convy.runs import Read
from convy.sequential import Decided, Futile, Undecided
from convy.significance import Adjusted, Fisher, McNemar, Paired, Stratified, Stratum
from convy.stats import Detectable, Difference, Headline, Interval, Tally
from convy.views import (
    ClaimFlip,
    ComparisonView,
    DialogueView,
    IntervalView,
    JudgesView,
    Pair,
    SameDialogues,
    ScenarioChange,
    SequentialView,
    SideView,
)

ALPHA = 0.05
TOLERANCE = 0.05  # a ratio within 1 ± TOLERANCE is "same"
SAME = 0.10  # a scenario is "same" only when its difference's interval lies within ± SAME


class Comparison(msgspec.Struct, frozen=True, dict=True):
    """Run ``base`` (before) against run ``candidate`` (after).

    Each run is summed up once (its ``Summary``, made the first time it is needed): the tests,
    the sides, the claims and the pairs all read the same attempts."""

    base: Read
    candidate: Read

    @cached_property
    def _summaries(self) -> dict[str, Summary]:
        return {"base": Summary(self.base), "candidate": Summary(self.candidate)}

    def _summary(self, run: Read) -> Summary:
        return self._summaries["base" if run is self.base else "candidate"]

    def common(self) -> list[str]:
        """Scenarios in both runs with the same content, in the candidate's order; of runs that
        decided the same dialogues, every scenario in both (a change of its claims is what such a
        comparison measures)."""
        before = {scenario.id: scenario for scenario in self.base.file.spec.scenarios}
        same = bool(self.dialogues())
        return [
            scenario.id
            for scenario in self.candidate.file.spec.scenarios
            if scenario.id in before and (same or before[scenario.id] == scenario)
        ]

    def dialogues(self) -> str:
        """When the two runs decided the same recorded dialogues (``convy rejudge``), the line that
        says so; else ``""``."""
        a, b = self.base.file.spec, self.candidate.file.spec
        if b.origin == Origin(a.agent, a.id):
            who = "the candidate re-judged the base's dialogues"
        elif a.origin == Origin(b.agent, b.id):
            who = "the base re-judged the candidate's dialogues"
        elif a.origin is not None and a.origin == b.origin:
            who = f"both runs re-judged the dialogues of run {a.origin.run}"
        else:
            return ""
        changed = [f"judge {a.models.judge} → {b.models.judge}"] if a.models.judge != b.models.judge else []
        if a.fingerprints.scenarios != b.fingerprints.scenarios:
            changed.append("the scenario files differ")
        if a.trust != b.trust:
            changed.append(f"trust {a.trust:g} → {b.trust:g}")
        return (
            f"{who}" + (f" ({'; '.join(changed)})" if changed else "")
            + ": a change here is the judge's or the claims', not the agent's"
        )

    def same_dialogues(self) -> SameDialogues | None:
        """Each attempt of the same dialogues paired with itself by (scenario, attempt), and how
        many changed status, when the runs decided the same dialogues."""
        said = self.dialogues()
        if not said:
            return None
        common = set(self.common())
        before = {
            (attempt.outcome.scenario, attempt.outcome.attempt): attempt.status()
            for attempt in self._summary(self.base).attempts()
            if attempt.outcome.scenario in common
        }
        paired = worse = better = other = both = neither = 0
        for attempt in self._summary(self.candidate).attempts():
            was = before.get((attempt.outcome.scenario, attempt.outcome.attempt))
            if was is None:
                continue
            paired += 1
            match (was, attempt.status()):
                case ("passed", "failed"):
                    worse += 1
                case ("failed", "passed"):
                    better += 1
                case ("passed", "passed"):
                    both += 1
                case ("failed", "failed"):
                    neither += 1
                case (_, now) if now != was:
                    other += 1
                case _:  # not judged both times
                    pass
        return SameDialogues(said=said, paired=paired, worse=worse, better=better, other=other, both=both, neither=neither)

    def strata(self) -> list[tuple[str, Tally, Tally]]:
        before, after = self._summary(self.base).tallies(), self._summary(self.candidate).tallies()
        return [(scenario, before[scenario], after[scenario]) for scenario in self.common() if scenario in before and scenario in after]

    def banner(self) -> list[str]:
        """What differs between the runs beyond the agent: each line a reason to doubt the comparison."""
        a, b = self.base.file.spec, self.candidate.file.spec
        said: list[str] = []
        same = bool(self.dialogues())  # the same dialogues: a change of judge or claims is what is compared
        # What the simulated user was (its model, the settings that shape it, its filled prompt in
        # each scenario compared); of runs before it was kept, its model's name. Of the same
        # dialogues, the user is one and the same: nothing to say.
        changed = a.user.changes(b.user, self.common())
        if changed and not same:
            said.append(f"the simulated user changed: {'; '.join(changed)}")
        elif a.models.user != b.models.user and not same:
            said.append(f"the simulated user changed: model {a.models.user} → {b.models.user}")
        if a.models.judge != b.models.judge and not same:
            said.append(f"the judge differs: {a.models.judge} → {b.models.judge}")
        # Of the same dialogues, a change of judging is what the re-judging measures (``notes``).
        if a.judging != b.judging and not same:
            said.append(f"the judging differs: {_judging(a.judging)} → {_judging(b.judging)}")
        # Attempts per scenario that differ do not void the comparison: every test here compares
        # each scenario's rate (its passes of its own judged attempts), and ``notes`` says so.
        if a.trust != b.trust and not same:
            said.append(f"the trust threshold differs: {a.trust:g} → {b.trust:g}")
        if (a.limits.max_turns, a.limits.open_seconds, a.limits.turn_seconds, a.limits.close_seconds) != (
            b.limits.max_turns,
            b.limits.open_seconds,
            b.limits.turn_seconds,
            b.limits.close_seconds,
        ):
            said.append("the turn or time limits differ")
        # Scenario files that differ do not void the comparison: a scenario added, removed or
        # changed is left out of every test and said so (``only_base``, ``only_candidate``,
        # ``changed``), and the scenarios the two runs share unchanged are compared as they are.
        # Flagged here, a pull request that adds a scenario could never pass the CI gate.
        for run, name in ((self.base, "base"), (self.candidate, "candidate")):
            status = run.status()
            if status != "finished":
                said.append(f"the {name} run is {status}: it lacks attempts")
        return said

    def notes(self) -> list[str]:
        """What differs between the runs and is compared as it should be: each a line to say, not
        a reason to doubt the pair (those are the ``banner``'s)."""
        a, b = self.base.file.spec, self.candidate.file.spec
        said: list[str] = []
        if a.attempts != b.attempts and a.adaptive is None and b.adaptive is None:
            said.append(
                f"attempts per scenario differ: {a.attempts} → {b.attempts}; every scenario is compared by its rate "
                "(its passes of its own judged attempts), so the runs are comparable"
            )
        if a.judging != b.judging and self.dialogues():
            said.append(f"the judging differs: {_judging(a.judging)} → {_judging(b.judging)}; that is what this re-judging compares")
        return said

    def _judges(self) -> JudgesView | None:
        """Both runs' deciders against the human labels of the dialogues both decided (each run's
        labels, and its sources', as one truth): none without labels."""
        base, candidate = self.base, self.candidate
        book = RunLabels(base.folder, base.file.spec).book().merged(RunLabels(candidate.folder, candidate.file.spec).book())
        if not book.labels:
            return None
        # Labels name dialogues by their words: runs read unsaid are read again in full.
        return Judges(self._said(base), self._said(candidate), book).view()

    def _said(self, run: Read) -> Sequence[Outcome]:
        """The run's attempts with their dialogues' words: as read, or read again from their lines."""
        outcomes = run.outcomes
        match outcomes:
            case Placed():
                return tuple(outcomes.full())
            case _:
                return outcomes

    def view(self) -> ComparisonView:
        before_ids = {scenario.id: scenario for scenario in self.base.file.spec.scenarios}
        after_ids = {scenario.id: scenario for scenario in self.candidate.file.spec.scenarios}
        same = self.same_dialogues()
        strata = self.strata()
        paired_rows = [(scenario, a, b) for scenario, a, b in strata if a.judged and b.judged]
        paired = Paired(tuple(b.passed / b.judged - a.passed / a.judged for _, a, b in paired_rows))
        across = paired.sign_flip()
        if same is None:
            tested = Stratified(tuple(Stratum(a.passed, a.judged, b.passed, b.judged) for _, a, b in strata)).test()
            delta = self._delta(paired, paired_rows)
            reading = self._reading(tested.p, tested.direction, across, paired.interval())
        else:
            # The same dialogues decided twice: each attempt is its own pair, so McNemar's test of
            # the attempts judged in both, and the paired interval of their difference.
            table = McNemar(same.both, same.worse, same.better, same.neither)
            tested, delta = table.test(), table.interval()
            reading = self._paired_reading(tested.p, tested.direction, same)
        detectable = Detectable(tuple(a for _, a, _ in paired_rows), tuple(b for _, _, b in paired_rows))
        mde = detectable.effect()
        base, candidate = self._side(self.base), self._side(self.candidate)
        cost = self._ratio(self._cost(base), self._cost(candidate))
        tokens = self._ratio(self._per(base.tokens, base), self._per(candidate.tokens, candidate))
        seconds = self._ratio(self._per(base.seconds, base), self._per(candidate.seconds, candidate))
        played = self.played_against()
        changes = self._changes(strata)
        if played is not None and played.applies():
            own = played.scenarios()
            changes = [
                msgspec.structs.replace(change, sequential=own[change.id][0], sequential_e=own[change.id][1]) if change.id in own else change
                for change in changes
            ]
        flips = self._flips()
        banner = self.banner()
        if same is None and tested.p < ALPHA and not banner:
            reading = self._undecided_reading(tested.direction, changes) or reading
        counts = {name: sum(1 for change in changes if change.change == name) for name in ("worse", "better", "undecided", "same")}
        for direction in ("worse", "better"):
            counts[f"undecided_{direction}"] = sum(1 for change in changes if change.change == "undecided" and change.seen == direction)
        real = tested.p < ALPHA and not banner  # a pair that is not comparable is given no verdict
        return ComparisonView(
            base=base,
            candidate=candidate,
            banner=banner,
            only_base=sorted(set(before_ids) - set(after_ids)),
            only_candidate=sorted(set(after_ids) - set(before_ids)),
            changed=[] if same is not None else sorted(key for key in set(before_ids) & set(after_ids) if before_ids[key] != after_ids[key]),
            delta=None if delta is None else Bounded(delta.estimate, delta.low, delta.high).view(),
            p=tested.p,
            method=tested.method,
            verdict=tested.direction if real else "same",
            real=real,
            sign_flip_p=across,
            reading=reading,
            mde=mde,
            needed=self._needed(detectable, delta.estimate if delta else None, mde),
            cost_ratio=cost,
            token_ratio=tokens,
            time_ratio=seconds,
            cost_direction=Ratio(cost).direction(),
            token_direction=Ratio(tokens).direction(),
            time_direction=Ratio(seconds).direction(),
            tolerance=TOLERANCE,
            scenarios=changes,
            counts=counts,
            claims=flips,
            flipped=sum(1 for flip in flips if flip.flipped),
            pairs=self._pairs(),
            same_dialogues=same,
            judges=self._judges(),
            base_causes=self._breakdown(self.base).views(),
            candidate_causes=self._breakdown(self.candidate).views(),
            trouble=self.trouble(),
            sequential=None if played is None else played.view(),
            notes=self.notes(),
            scenarios_said=Changes(tuple(changes)).counts(),
        )

    def _delta(self, paired: Paired, rows: list[tuple[str, Tally, Tally]]) -> Interval | None:
        """The change of pass rate with an interval that holds both kinds of noise: the paired t
        interval of the scenarios' differences (their spread), and the two runs' headline
        intervals on these scenarios (each holding its attempts' own noise: ``stats.Headline``)
        combined by Newcombe's square-and-add. The smallest interval holding both: 3/3 → 0/3 on
        two scenarios is not "−100 points, [−100, −100]"."""
        spread = paired.interval()
        if spread is None:
            return None
        sides = [Headline(tuple(one.passed / one.judged for one in tallies), tallies).interval() for tallies in (
            tuple(a for _, a, _ in rows), tuple(b for _, _, b in rows))]
        before, after = sides
        if before is None or after is None:
            return spread
        difference = after.estimate - before.estimate
        low = difference - math.sqrt((after.estimate - after.low) ** 2 + (before.high - before.estimate) ** 2)
        high = difference + math.sqrt((after.high - after.estimate) ** 2 + (before.estimate - before.low) ** 2)
        return Interval(spread.estimate, min(spread.low, low), max(spread.high, high))

    def _undecided_reading(self, direction: str, changes: list[ScenarioChange]) -> str:
        """When the run-level verdict is real but no single scenario is decided that way, the one
        sentence that says both; ``""`` when some scenario is."""
        if any(change.change == direction for change in changes):
            return ""
        judged = [change for change in changes if change.difference is not None]
        moved = sum(1 for change in judged if change.seen == direction)
        return (
            f"real ({direction}) across these scenarios taken together, though no single scenario is decided "
            f"at {Changes(tuple(judged)).attempts()} ({moved} of {len(judged)} moved that way)"
        )

    def played_against(self) -> PlayedAgainst | None:
        """The run of the pair played against a base (``convy run --against``): the candidate or
        the base played against the other run of this pair first, then one played against some
        other run; ``None`` when neither was."""
        found: list[PlayedAgainst] = []
        sides: tuple[tuple[Literal["candidate", "base"], Read, Read], ...] = (
            ("candidate", self.candidate, self.base),
            ("base", self.base, self.candidate),
        )
        for played, run, other in sides:
            adaptive = run.file.spec.adaptive
            match adaptive.until if adaptive is not None else None:
                case Against() as rule:
                    course = self._summary(run).course()
                    if course is not None and course.verdict is not None:
                        found.append(PlayedAgainst(played, rule, course, run.status(), other.file.spec))
                case _:
                    pass
        applying = [one for one in found if one.applies()]
        return applying[0] if applying else found[0] if found else None

    def trouble(self) -> list[str]:
        """What a change in the attempts passed comes with: a sentence for each of the simulated
        user and the judge whose attempts not passed make most of it (``causes.Shift``), on the
        scenarios both runs hold."""
        return Shift(self._breakdown(self.base), self._breakdown(self.candidate)).sentences()

    def _breakdown(self, run: Read) -> Breakdown:
        common = set(self.common())
        return Breakdown(tuple(attempt.cause() for attempt in self._summary(run).attempts() if attempt.outcome.scenario in common))

    def _side(self, run: Read) -> SideView:
        """One run's side: its index row (the same numbers the index shows), linked from the
        comparison page, with the time its attempts took rather than the run's wall time."""
        summary = self._summary(run)
        row = summary.row(f"../{quote(run.file.spec.agent, safe='')}/{quote(run.file.spec.id, safe='')}/report.html")
        return SideView(
            **{name: getattr(row, name) for name in SideView.__struct_fields__ if name != "seconds"},
            seconds=math.fsum(attempt.outcome.seconds for attempt in summary.attempts()),
        )

    def _changes(self, strata: list[tuple[str, Tally, Tally]]) -> list[ScenarioChange]:
        tests = [Fisher(Stratum(a.passed, a.judged, b.passed, b.judged)).test() for _, a, b in strata]
        adjusted = Adjusted(tuple(test.p for test in tests)).values()
        changes = [
            Changes.change(scenario, a, b, test.p, fixed, test.direction)
            for (scenario, a, b), test, fixed in zip(strata, tests, adjusted, strict=True)
        ]
        order = {"worse": 0, "better": 1, "undecided": 2, "same": 3}
        return sorted(changes, key=lambda change: (order[change.change], change.adjusted, change.id))

    def _flips(self) -> list[ClaimFlip]:
        """Claims whose held rate changed between the runs, the largest changes first."""
        before, after = self._held(self.base), self._held(self.candidate)
        flips: list[ClaimFlip] = []
        for key in sorted(set(before) | set(after)):
            was, now = before.get(key), after.get(key)
            if was == now:
                continue
            crossed = was is not None and now is not None and (was >= 0.5) != (now >= 0.5)
            change: Literal["better", "worse", "one_run"] = (
                "one_run" if was is None or now is None else "better" if now > was else "worse"
            )
            flips.append(ClaimFlip(scenario=key[0], claim=key[1], before=was, after=now, change=change, flipped=crossed))
        return sorted(flips, key=lambda flip: (not flip.flipped, -abs((flip.after or 0) - (flip.before or 0))))

    def _held(self, run: Read) -> dict[tuple[str, str], float]:
        # The claim rows of the run's report, made without the rest of it (its whole view took
        # most of a comparison's time).
        common = set(self.common())
        summary = self._summary(run)
        rates: dict[tuple[str, str], float] = {}
        for scenario, attempts in summary.by_scenario().items():
            if scenario not in common:
                continue
            for claim in summary.claims(attempts):
                if claim.decided:
                    rates[(scenario, claim.text)] = claim.held / claim.decided
        return rates

    def _pairs(self) -> list[Pair]:
        """For each common scenario, one attempt of each run: a failing one where there is one."""
        before, after = self._summary(self.base).by_scenario(), self._summary(self.candidate).by_scenario()
        return [
            Pair(scenario=scenario, before=self._shown(before.get(scenario)), after=self._shown(after.get(scenario)))
            for scenario in self.common()
        ]

    def _shown(self, attempts: Attempts | None) -> DialogueView | None:
        """The scenario's first failing attempt, else its first, in full (a run read unsaid holds
        none: it is read again from its line)."""
        if not attempts:
            return None
        place = next((at for at, attempt in enumerate(attempts) if attempt.status() == "failed"), 0)
        return attempts.said(place).dialogue()

    def _reading(self, p: float, direction: str, across: float, delta: Interval | None) -> str:
        """What the two tests say together, in a sentence: the exact test speaks of these
        scenarios, the interval and the sign flips of scenarios like them."""
        if p >= ALPHA:
            return "within noise: a change this size is likely from attempt-to-attempt variation on these scenarios"
        spans = delta is not None and delta.low <= 0 <= delta.high
        if across < ALPHA and not spans:
            return f"real ({direction}) on these scenarios, and likely to hold for scenarios like them"
        return (
            f"real ({direction}) on these scenarios; whether it holds for new scenarios is not shown "
            "(the interval across scenarios spans zero" + ("" if spans else ", or the sign flips do not reach 0.05")
            + "): add scenarios to know"
        )

    def _paired_reading(self, p: float, direction: str, same: SameDialogues) -> str:
        """What McNemar's test says of the same dialogues decided twice."""
        if p >= ALPHA:
            return (
                f"within noise: {same.worse} attempts passed before and fail now, {same.better} the other way; "
                "a split like this comes often enough from decisions that vary between judgings"
            )
        return (
            f"real ({direction}) on these dialogues: {same.worse} attempts passed before and fail now, "
            f"{same.better} the other way, too uneven a split for chance"
        )

    def _needed(self, detectable: Detectable, delta: float | None, mde: float | None) -> str | None:
        if delta is None or mde is None or abs(delta) >= mde:
            return None
        if delta == 0:
            return "no difference was seen: no number of scenarios or attempts makes it detectable"
        scenarios = detectable.scenarios_for(abs(delta))
        attempts = detectable.attempts_for(abs(delta))
        said = f"a change of {abs(delta):.1%} needs about {scenarios} scenarios at these attempts"
        if attempts is None:
            return said + "; more attempts alone cannot get there"
        return said + f", or about {attempts} attempts per scenario with these scenarios"

    def _cost(self, side: SideView) -> float | None:
        """Cost per attempt, when every request had a price."""
        if side.cost.amount is None or not side.cost.complete:
            return None
        return self._per(float(Decimal(side.cost.amount)), side)

    def _per(self, total: float, side: SideView) -> float | None:
        return total / side.attempts if side.attempts else None

    def _ratio(self, before: float | None, after: float | None) -> float | None:
        if before is None or after is None or before == 0:
            return None
        return after / before


class PlayedAgainst(msgspec.Struct, frozen=True):
    """A run of a compared pair that was played against a base until a sequential comparison
    stopped it: which run of the pair it is (``played``), its rule (``adaptive.Against``: the base
    it was played against), its ``course`` (found from its attempts, as its report finds it) and
    ``status``, and the other run of the pair (``other``)."""

    played: Literal["candidate", "base"]
    rule: Against
    course: Course
    status: str
    other: RunSpec

    def applies(self) -> bool:
        """Whether it was played against the other run of this pair: then its verdict is this pair's."""
        return (self.rule.agent, self.rule.run) == (self.other.agent, self.other.id)

    def view(self) -> SequentialView | None:
        verdict = self.course.verdict
        if verdict is None:
            return None
        alpha = self.course.alpha()
        bar = 1 / alpha
        said = self.course.said(self.status)
        change: Literal["worse", "better", "undecided"]
        match verdict:
            case Decided(direction=direction, e=e, difference=difference, attempts=attempts):
                change = self.seen(direction)
                if self.played == "base":  # said from base to candidate, as the rest of the page is
                    said = (
                        f"real change: {change}, e = {e:.1f} ≥ {bar:g} after {attempts} judged attempts of the base run "
                        f"(Δ {-difference:+.1%} from base to candidate)"
                    )
            case Undecided(e=e, attempts=attempts) | Futile(e=e, attempts=attempts):
                change = "undecided"
        against = f"{self.rule.agent}/{self.rule.run}"
        other = "candidate" if self.played == "base" else "base"
        if self.applies():
            read = "" if self.played == "candidate" else ", read from base to candidate"
            note = (
                f"The {self.played} was played against this {other} (convy run --against) until an anytime-valid "
                f"sequential comparison stopped it: that comparison is this pair's verdict{read}. It keeps the "
                f"false-alarm rate at or under α = {alpha:g} however early the run stopped: real once its e-value "
                f"reaches 1/α = {bar:g}."
            )
            fixed = (
                "For description only, not valid for a verdict: a fixed-design test takes the number of attempts "
                f"as set before any was seen, but the {self.played} stopped when the sequential test said so, and a "
                "fixed-size test of the same attempts over-states the evidence."
            )
        else:
            note = (
                f"The {self.played} was played against {against}, not against this {other} (convy run --against): "
                f"its sequential verdict ({said}) is of that pair and does not apply to this one. The verdict here is "
                f"the fixed-design test's; the {self.played} stopped at a number of attempts its own results chose, "
                "which that test does not allow for."
            )
            fixed = ""
        return SequentialView(
            played=self.played,
            against=against,
            applies=self.applies(),
            verdict=change,
            e=e,
            threshold=bar,
            alpha=alpha,
            attempts=attempts,
            said=said,
            note=note,
            fixed=fixed,
            counts=self.counts() if self.applies() else {},
        )

    def counts(self) -> dict[str, int]:
        """The scenarios scored by each own sequential change."""
        changes = [change for change, _ in self.scenarios().values()]
        return {name: changes.count(name) for name in ("worse", "better", "same")}

    def scenarios(self) -> dict[str, tuple[Literal["worse", "better", "same"], float]]:
        """Each scenario's own verdict (its e-value alone, the change decided by e-BH over the
        scenarios: ``sequential.Watch.scenarios``), from base to candidate, by id; scenarios the
        rounds never scored are left out."""
        found: dict[str, tuple[Literal["worse", "better", "same"], float]] = {}
        for one in self.course.standings:
            if not isinstance(one, Watched) or one.own is None or not one.looked:
                continue
            own = one.own
            found[one.scenario] = (own.change if own.change == "same" else self.seen(own.change), own.e)
        return found

    def seen(self, direction: Literal["worse", "better"]) -> Literal["worse", "better"]:
        """A direction of the played run against its base, seen from base to candidate."""
        if self.played == "candidate":
            return direction
        return "better" if direction == "worse" else "worse"


class Bounded(msgspec.Struct, frozen=True):
    """A difference of two rates with its interval, clamped to [−1, +1], where such a difference lies."""

    estimate: float
    low: float
    high: float

    def view(self) -> IntervalView:
        clamp = lambda value: min(1.0, max(-1.0, value))  # noqa: E731
        return IntervalView(estimate=clamp(self.estimate), low=clamp(self.low), high=clamp(self.high))


class Ratio(msgspec.Struct, frozen=True):
    """After over before (per attempt); ``None`` when there is none."""

    value: float | None

    def direction(self) -> Literal["lower", "higher", "same"] | None:
        """``same`` within 1 ± ``TOLERANCE`` (inclusive), else ``lower`` or ``higher``."""
        if self.value is None:
            return None
        if abs(self.value - 1.0) <= TOLERANCE + 1e-12:
            return "same"
        return "lower" if self.value < 1.0 else "higher"


def _judging(judging: Judging) -> str:
    """How a run judged, in a few words: "asked 5×, majority, evidence flag"."""
    return f"asked {judging.repeats}×, {judging.panel}, evidence {judging.evidence}"


def comparable(base: Read, candidate: Read) -> bool:
    """Whether comparing the two runs is sound: nothing differs between them that the comparison
    page would put in its "not comparable" banner (``Comparison.banner``). The index draws its
    trend and offers its pair by it."""
    return not Comparison(base, candidate).banner()


class Changes(msgspec.Struct, frozen=True):
    """Scenarios' changes in words: each one's, and their counts, as every output says them."""

    changes: tuple[ScenarioChange, ...]

    @staticmethod
    def change(scenario: str, a: Tally, b: Tally, p: float, adjusted: float, direction: str) -> ScenarioChange:
        """One scenario before and after: decided by its adjusted Fisher test; else "same" only
        when Newcombe's interval of the difference lies within ± ``SAME``, "undecided" otherwise."""
        difference = Difference(a, b).interval() if a.judged and b.judged else None
        seen: Literal["worse", "better", "none"] = "none"
        if difference is not None:
            seen = "better" if difference.estimate > 1e-12 else "worse" if difference.estimate < -1e-12 else "none"
        change: Literal["worse", "better", "undecided", "same"]
        if difference is None:
            change, said = "undecided", "undecided: not judged in both runs"
        elif adjusted < ALPHA and direction in ("worse", "better"):
            change = "worse" if direction == "worse" else "better"
            said = change
        elif -SAME <= difference.low and difference.high <= SAME:
            change, said = "same", f"same (within ±{SAME * 100:.0f} pts)"
        else:
            attempts = f"{a.judged} → {b.judged}" if a.judged != b.judged else f"{a.judged}"
            change = "undecided"
            said = f"undecided at {attempts} attempts" + ("" if seen == "none" else f" ({seen} seen)")
        return ScenarioChange(
            id=scenario,
            before_passed=a.passed,
            before_judged=a.judged,
            after_passed=b.passed,
            after_judged=b.judged,
            p=p,
            adjusted=adjusted,
            change=change,
            seen=seen,
            difference=None if difference is None else IntervalView(estimate=difference.estimate, low=difference.low, high=difference.high),
            said=said,
        )

    def attempts(self) -> str:
        """The attempts these scenarios had: "3 attempts", "3 → 6 attempts", "3–5 attempts"."""
        before = sorted({change.before_judged for change in self.changes if change.before_judged})
        after = sorted({change.after_judged for change in self.changes if change.after_judged})
        if not before or not after:
            return "no attempts"
        span = lambda values: f"{values[0]}" if len(values) == 1 else f"{values[0]}–{values[-1]}"  # noqa: E731
        return f"{span(before)} attempts" if before == after else f"{span(before)} → {span(after)} attempts"

    def counts(self) -> str:
        """ "0 worse, 0 better, 2 undecided at 3 attempts (2 worse seen), 0 same (within ±10 pts)" """
        count = lambda name: sum(1 for change in self.changes if change.change == name)  # noqa: E731
        undecided = [change for change in self.changes if change.change == "undecided"]
        said = f"{count('worse')} worse, {count('better')} better, {len(undecided)} undecided"
        judged = [change for change in undecided if change.difference is not None]
        parts: list[str] = []
        if judged:
            seen = [f"{sum(1 for one in judged if one.seen == way)} {way} seen" for way in ("worse", "better")]
            said += f" at {Changes(tuple(judged)).attempts()}"
            parts.append(", ".join(one for one in seen if not one.startswith("0 ")) or "no change seen")
        if len(undecided) > len(judged):
            parts.append(f"{len(undecided) - len(judged)} not judged in both runs")
        if parts:
            said += f" ({'; '.join(parts)})"
        return said + f", {count('same')} same (within ±{SAME * 100:.0f} pts)"
