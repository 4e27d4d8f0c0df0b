"""Runs and comparisons as a short Markdown summary, for a pull request: what
``$GITHUB_STEP_SUMMARY`` shows on a job's page, or a comment on the pull request.

``RunSummary`` says, for each run: the pass rate with its interval, the scenarios that did not
always pass with the claims that failed in them, the attempts not judged by reason, tokens and
cost (and when the cost is incomplete), and where its report is. ``ComparisonSummary`` says
before → after, whether the change is real or within noise in the comparison page's words, the
scenarios that got worse or better, the claims that flipped, the attempts not judged on each side,
tokens and cost, and where the page is. Every number and decision is the one the pages show: taken
from ``report.Summary``'s and ``comparison.Comparison``'s view records, never computed again here;
but the attempts not judged are grouped as the run's causes count them, a model whose service failed
the request under the service (``causes.py``), so a 401 is the same cause here as in the totals.

Both are bounded: each list is cut with "and N more", each outside text to a few hundred
characters, and the whole to ``MOST`` characters — far under GitHub's caps (a step summary 1 MiB,
a comment 65,536 characters).

Outside text (scenario ids, claims, reasons, an agent's or a run's name, a path) is ``MarkdownText``:
on one line with its control characters written out (``Inert``), cut, and every ASCII punctuation
character backslash-escaped — CommonMark's one escape that every renderer honours — so it can
start no heading, list, table cell, emphasis, link or HTML element. GitHub also turns ``@name``
into a mention and ``#12`` into a reference after rendering; a zero-width space after each ``@``
and ``#`` keeps those from pinging anyone. What agents and models said was kept with the run's
secrets hidden, and is shown as kept.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import ClassVar

import msgspec

from convy.attempt import Attempt
from convy.files import Delivered
from convy.judge import Failed, NoVerdict, Verdict
from convy.passing import AbsentAgent, RunVerdict
from convy.report import Summary
from convy.terminal import Inert
from convy.views import ClaimRow, ComparisonView, CostView, IntervalView, RunView, TokensView

MOST = 60_000  # characters of a whole summary: a comment may hold 65,536

_PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_ESCAPED = {ord(character): "\\" + character for character in _PUNCTUATION}
_ESCAPED[ord("@")] = "\\@&#8203;"  # no mention
_ESCAPED[ord("#")] = "\\#&#8203;"  # no reference to an issue


class MarkdownText(msgspec.Struct, frozen=True):
    """Outside text as Markdown text that renders as itself and does nothing: one line, within
    ``most`` characters (saying how many more there were), every ASCII punctuation character escaped."""

    text: str
    most: int = 200

    def markdown(self) -> str:
        line = Inert(self.text).line()
        if len(line) > self.most:
            line = f"{line[: self.most]}… ({len(line) - self.most} more characters)"
        return line.translate(_ESCAPED)


class MarkdownId(msgspec.Struct, frozen=True):
    """A scenario's id as Markdown text (``MarkdownText``), cut in its middle rather than at its
    end: ids that share a long beginning (``refunds/a-very-long…-case-1``, ``…-case-2``) stay
    apart by what ends them."""

    text: str
    most: int = 100

    def markdown(self) -> str:
        line = Inert(self.text).line()
        if len(line) > self.most:
            tail = (self.most - 1) * 2 // 5
            line = f"{line[: self.most - 1 - tail]}…{line[len(line) - tail :]}"
        return MarkdownText(line, self.most).markdown()


class Numbers:
    """Numbers written as the pages write them (``Convy.fmt`` in ``pages/base.js``): a namespace, never
    made, of functions that hold nothing."""

    @staticmethod
    def pct(value: float | None) -> str:
        if value is None:
            return "—"
        return f"{value * 100:.{0 if value in (0, 1) else 1}f}%"

    @staticmethod
    def points(value: float | None) -> str:
        if value is None:
            return "—"
        sign = "+" if value > 0 else "−" if value < 0 else "±"
        return f"{sign}{abs(value) * 100:.1f} pts"

    @staticmethod
    def interval(rate: IntervalView | None) -> str:
        return f"95% interval {Numbers.pct(rate.low)}–{Numbers.pct(rate.high)}" if rate else "no interval"

    @staticmethod
    def p(value: float) -> str:
        return "< 0.001" if value < 0.001 else f"{value:.2g}"

    @staticmethod
    def p_is(value: float) -> str:
        """``p = 0.012``, or ``p < 0.001``."""
        return f"p {Numbers.p(value)}" if value < 0.001 else f"p = {Numbers.p(value)}"

    @staticmethod
    def count(value: int) -> str:
        return f"{value:,}" if value >= 10_000 else str(value)

    @staticmethod
    def cost(cost: CostView) -> str:
        if cost.amount is None:
            return "unpriced" if cost.unpriced else "—"
        amount = Decimal(cost.amount)
        text = (
            "0" if amount == 0 else f"{amount:.2f}" if amount >= 1 else f"{amount:.4f}" if amount >= Decimal("0.0001") else f"{float(amount):.2g}"
        )
        return ("$" if cost.complete else "≥ $") + text

    @staticmethod
    def cost_note(cost: CostView) -> str:
        if cost.amount is None and not cost.unpriced:
            return "no requests"
        if cost.complete:
            return "complete"
        if not cost.priced:  # nothing priced: no warning, the agent's service names no price
            return f"no price known for {'its request' if cost.unpriced == 1 else f'its {Numbers.count(cost.unpriced)} requests'}"
        return f"incomplete: {Numbers.count(cost.unpriced)} of {Numbers.count(cost.priced + cost.unpriced)} requests unpriced"

    @staticmethod
    def tokens(tokens: TokensView) -> str:
        if not tokens.reported:
            return "not reported" if tokens.requests else "none"
        said = f"{Numbers.count(tokens.input)} in · {Numbers.count(tokens.output)} out"
        if tokens.reported < tokens.requests:
            said += f" ({Numbers.count(tokens.reported)} of {Numbers.count(tokens.requests)} requests reported)"
        return said


# The words the pages give a code (``words`` in ``pages/base.js``).
WHY = {
    "user": "simulated user failed",
    "judge": "judge failed",
    "busy": "service stayed busy",
    "service": "service failed a model's request",
    "not_trusted": "judge not confident enough",
    "split": "the judge split",
    "unquoted": "no quote of a few of the agent's own words",
    "unseen": "the agent's tool calls could not be seen",
}
SCENARIO = {"always": "✓ always passes", "flaky": "~ flaky", "never": "✗ never passes", "not_judged": "– not judged"}
METHOD = {
    "t": "t interval across scenarios, and the attempts' own noise",
    "bootstrap": "bootstrap across scenarios, widened for few, and the attempts' own noise",
    "exact": "exact interval, one scenario",
    "none": "nothing judged",
}
STOPS = {"time_limit": "out of time", "agent_busy": "its service stayed busy", "max_turns": "too many turns", "model_failed": "a model failed"}
CHANGE = {"worse": "▼ worse", "better": "▲ better", "same": "= same", "undecided": "? undecided"}
DIRECTION = {"lower": "▼ lower", "higher": "▲ higher", "same": "= same"}


class Unjudged(msgspec.Struct, frozen=True):
    """A run's attempts not judged, by reason (the report's count), each with the first one's words."""

    summary: Summary
    view: RunView

    REASON: ClassVar[int] = 240  # characters of what was said

    def lines(self) -> list[str]:
        if not self.view.not_judged_total:
            return []
        said: dict[str, str] = {}
        counted: Counter[str] = Counter()
        for attempt in self.summary.attempts():
            if attempt.status() != "not_judged":
                continue
            why = self._why(attempt)
            counted[why] += 1
            if why not in said:
                said[why] = self._said(attempt.outcome.result, attempt.trust)
        lines = [f"**Not judged:** {Numbers.count(self.view.not_judged_total)} attempts, left out of the pass rate"]
        for why, count in sorted(counted.items(), key=lambda one: (-one[1], one[0])):
            words = MarkdownText(WHY.get(why, why)).markdown()
            first = said.get(why, "")
            lines.append(f"- {words}: {Numbers.count(count)}" + (f" — e.g. {first}" if first else ""))
        return lines

    def _why(self, attempt: Attempt) -> str:
        """Why it was not judged, as the report counts it, but a model whose service failed the
        request: the service's, as the run's causes count it (``causes.py``), not the model's."""
        match attempt.outcome.result:
            case NoVerdict(who="user" | "judge", service=True):
                return "service"
            case _:
                return attempt.why()

    def _said(self, result: Verdict | Failed | NoVerdict, trust: float) -> str:
        match result:
            case NoVerdict(reason=reason):
                return MarkdownText(reason, self.REASON).markdown()
            case Verdict(claims=claims):
                unseen = [claim for claim in claims if claim.doubt == "unseen"]
                if unseen:
                    return MarkdownText(unseen[0].reason, self.REASON).markdown()
                doubtful = [claim.claim for claim in claims if not claim.trusted(trust)]
                return f"less confident than {trust:g} on " + MarkdownText("; ".join(doubtful), self.REASON).markdown()
            case Failed(reason=reason):
                return MarkdownText(reason, self.REASON).markdown()


class MarkdownTable(msgspec.Struct, frozen=True):
    """A Markdown table of at most ``most`` rows, the rest said below it as "and N more"."""

    head: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    most: int
    what: str

    def lines(self) -> list[str]:
        if not self.rows:
            return []
        lines = ["| " + " | ".join(self.head) + " |", "|" + "|".join("---" for _ in self.head) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows[: self.most]]
        if len(self.rows) > self.most:
            lines += ["", f"and {len(self.rows) - self.most} more {self.what}"]
        return lines


class Where(msgspec.Struct, frozen=True):
    """A page's path as the summary gives it: relative to where the command was run, when it is in there."""

    here: Path

    def markdown(self, path: Path) -> str:
        shown = path.relative_to(self.here) if path.is_relative_to(self.here) else path
        return MarkdownText(str(shown), 1000).markdown()


class VerdictLine(msgspec.Struct, frozen=True):
    """A run's verdict against its pass rule (``passing.RunVerdict``), as the summary's first line."""

    verdict: RunVerdict

    def markdown(self) -> str:
        """The command's verdict first (the gate its exit code gives, ``RunVerdict.gates``), then
        the pass rule's sentence when something else decided it."""
        verdict = self.verdict
        gates = verdict.gates()
        rule = self._rule()
        if not gates:
            unjudged = (
                f" ({verdict.not_judged} of {verdict.kept} attempts not judged, within max_not_judged "
                f"{verdict.rule.max_not_judged:.0%})"
                if verdict.not_judged
                else ""
            )
            return f"**✓ Passed:** {rule}{unjudged}"
        code, words = gates[0]
        if code == 7:
            return "**– Nothing was tested:** no attempt was judged, so this run shows nothing about the agent"
        if code == 3:
            return f"**✗ Failed:** {rule}"
        # Words convy made from numbers; a dollar escaped, since GitHub reads $…$ as math.
        said = f"**✗ Not passed (exit {code}):** {words.replace('$', chr(92) + '$')}"
        more = [f"{one} (exit {at})" for at, one in gates[1:] if at not in (3, 7)]
        if more:
            said += "; also " + "; ".join(more)
        if verdict.tested():
            said += f" · the pass rule, on the attempts judged: {rule}"
        return said

    def _rule(self) -> str:
        """The pass rule's sentence."""
        verdict = self.verdict
        rule = verdict.rule
        failing = verdict.failing()
        if failing:
            bar = "every judged attempt must pass" if rule.fail_under is None else f"fail_under {rule.fail_under:.0%}"
            return f"{len(failing)} of {len(verdict.tallies)} scenarios failed the pass rule ({bar})"
        if rule.fail_under is not None:
            return f"the pass rate is at or above fail_under {rule.fail_under:.0%}"
        return "every scenario met the pass rule"


class RunSummary(msgspec.Struct, frozen=True):
    """Runs as one Markdown summary, a section per run in the order given; ``here`` is where the
    command was run, which the report's path is given from. Every run has its section: when they
    do not fit in ``MOST`` characters as they are, each lists fewer scenarios, then each is cut to
    its share of the room (``SectionsFitted``)."""

    summaries: tuple[Summary, ...]
    here: Path
    absent: tuple[AbsentAgent, ...] = ()  # agents skipped as absent, listed after the runs
    fail_on_skip: bool = False  # whether the command fails a skip (then it says so)

    SCENARIOS: ClassVar[tuple[int, ...]] = (15, 5, 1)  # scenarios that did not always pass, listed: fewer when runs are many
    CLAIMS: ClassVar[int] = 3  # failed claims named for each
    ID: ClassVar[int] = 100  # characters of a scenario's id
    CLAIM: ClassVar[int] = 120  # characters of a claim
    ERROR: ClassVar[int] = 200  # characters of an agent's error

    def markdown(self) -> str:
        if not self.summaries:  # every agent skipped: a file saying so, not an empty one
            return "### convy\n\n**– Nothing was tested:** no run was played\n" + self._absent()
        return self._runs() + self._absent()

    def _absent(self) -> str:
        """The agents skipped as absent, each with why; empty when none was."""
        if not self.absent:
            return ""
        count = len(self.absent)
        fails = " — this fails the run (fail_on_skip)" if self.fail_on_skip else ""
        lines = [f"\n**{count} agent{'s' if count != 1 else ''} skipped** (absent){fails}:", ""]
        lines += [
            f"- {MarkdownText(agent.name, self.ID).markdown()}: {MarkdownText(agent.reason, self.ERROR).markdown()}"
            for agent in self.absent
        ]
        return "\n".join(lines) + "\n"

    def _runs(self) -> str:
        names = tuple(f"{summary.run.file.spec.agent}/{summary.run.file.spec.id}" for summary in self.summaries)
        for most in self.SCENARIOS:
            sections = tuple(self._section(summary, most) for summary in self.summaries)
            if SectionsFitted(sections, "runs", names).fits():
                break
        return SectionsFitted(sections, "runs", names).markdown()

    def written(self, path: Path) -> None:
        Delivered(path).written(self.markdown().encode())

    def _section(self, summary: Summary, most: int) -> str:
        view = summary.view()
        head = view.header
        named = f" — {MarkdownText(head.name).markdown()}" if head.name else ""
        lines = [f"### convy · {MarkdownText(head.agent).markdown()} · run {MarkdownText(head.run).markdown()}{named}", ""]
        if head.stop:  # words convy made from numbers; a dollar escaped, since GitHub reads $…$ as math
            stop = head.stop.replace("$", "\\$")
            lines += [f"> **This run was {stop}:** {head.kept} of {head.planned} planned attempts were kept.", ""]
        elif head.reached:  # every attempt played, the budget reached or crossed all the same: exit 6
            reached = head.reached.replace("$", "\\$")
            lines += [f"> **This run {reached}.**", ""]
        elif head.status != "finished":
            lines += [f"> **This run is {head.status}:** {head.kept} of {head.planned} planned attempts were kept.", ""]
        verdict = summary.verdict()
        lines += [VerdictLine(verdict).markdown(), ""]
        rate = f"**Pass rate {Numbers.pct(view.rate.estimate)}**" if view.rate else "**Pass rate —**"
        lines.append(
            f"{rate} ({Numbers.interval(view.rate)}, {METHOD.get(view.method, view.method)}) · "
            f"{Numbers.count(view.passed)} passed of {Numbers.count(view.judged)} judged · "
            f"{len(view.scenarios)} scenario{'s' if len(view.scenarios) != 1 else ''}: {view.always} always pass, {view.flaky} flaky, {view.never} never pass"
        )
        unplayed = sum(1 for scenario in view.scenarios if not scenario.attempts)
        if unplayed:
            lines[-1] += f", {unplayed} {self._unplayed(head.status)}"
        if view.consistency:
            last = view.consistency[-1]
            lines[-1] += f" · pass^{last.k} {Numbers.pct(last.pass_hat)}"
        lines.append("")
        crashes = Crashes(summary, self.ERROR).said()
        failing = [scenario for scenario in view.scenarios if scenario.status != "always"]
        rows = tuple(
            (
                MarkdownId(scenario.id, self.ID).markdown(),
                f"{scenario.passed} of {scenario.judged}" + (f" ({scenario.not_judged} not judged)" if scenario.not_judged else ""),
                (SCENARIO[scenario.status] if scenario.attempts else "– " + self._unplayed(head.status))
                + (" · accepted by fail_under" if verdict.accepted(scenario.id) else ""),
                "; ".join(filter(None, (crashes.get(scenario.id, ""), self._failed(scenario.claims)))) or "—",
            )
            for scenario in failing
        )
        table = MarkdownTable(("Scenario", "Passed", "Result", "What failed"), rows, most, "scenarios").lines()
        if table:
            lines += [*table, ""]
        unjudged = Unjudged(summary, view).lines()
        if unjudged:
            lines += [*unjudged, ""]
        every = summary.total().every()
        lines.append(
            f"**Tokens:** {Numbers.tokens(every.tokens())} (agent {Numbers.tokens(view.agent.tokens)}) · "
            f"**Cost:** {Numbers.cost(view.cost)} ({Numbers.cost_note(view.cost)})"
        )
        if head.skipped:
            failed = ", which fails the run (fail_on_skip)" if verdict.rule.fail_on_skip else ""
            lines += ["", f"**Skipped:** {len(head.skipped)} {'scenarios, a model they need' if len(head.skipped) != 1 else 'scenario, a model it needs'} is absent (the report names them){failed}"]
        lines += ["", f"Report: {Where(self.here).markdown(summary.run.folder / 'report.html')}"]
        return "\n".join(lines) + "\n"

    def _unplayed(self, status: str) -> str:
        """What a scenario with no attempt kept is: not judged is something else (attempts kept, no verdict)."""
        return "not played yet" if status == "running" else "not played"

    def _failed(self, claims: list[ClaimRow]) -> str:
        failed = [claim for claim in claims if claim.held < claim.decided]
        named = [f"{MarkdownText(claim.text, self.CLAIM).markdown()} ({claim.held} of {claim.decided} held)" for claim in failed]
        if len(named) > self.CLAIMS:
            named = [*named[: self.CLAIMS], f"and {len(named) - self.CLAIMS} more"]
        return "; ".join(named)


class Crashes(msgspec.Struct, frozen=True):
    """The attempts the agent failed (it raised, broke off, ran out of time), by scenario: how many,
    and the first one's error as it was kept (its secrets hidden), on one line within ``most``
    characters."""

    summary: Summary
    most: int

    def said(self) -> dict[str, str]:
        counts: dict[str, int] = {}
        first: dict[str, str] = {}
        for attempt in self.summary.attempts():
            match attempt.outcome.result:
                case Failed(reason=reason):
                    scenario = attempt.outcome.scenario
                    counts[scenario] = counts.get(scenario, 0) + 1
                    stop = attempt.outcome.stop
                    first.setdefault(scenario, reason if stop in ("agent_failed", "finished") else f"{STOPS.get(stop, stop)}: {reason}")
        return {
            scenario: f"the agent failed in {count} ({MarkdownText(first[scenario], self.most).markdown()})"
            for scenario, count in counts.items()
        }


class ComparisonSummary(msgspec.Struct, frozen=True):
    """Two runs compared, as a Markdown summary: the comparison page's view (``view``), the runs'
    summaries for what was not judged, and the page (``page``), given from ``here``."""

    view: ComparisonView
    base: Summary
    candidate: Summary
    page: Path
    here: Path

    SCENARIOS: ClassVar[int] = 15  # worse and better scenarios listed
    FLIPS: ClassVar[int] = 15  # claims that flipped, listed
    ID: ClassVar[int] = 100
    CLAIM: ClassVar[int] = 120

    def markdown(self) -> str:
        return SectionsFitted((self._section(),), "comparisons").markdown()

    def written(self, path: Path) -> None:
        Delivered(path).written(self.markdown().encode())

    def _section(self) -> str:
        view = self.view
        base, candidate = view.base, view.candidate
        lines = [
            f"### convy · compare {MarkdownText(base.run).markdown()} → {MarkdownText(candidate.run).markdown()}",
            "",
            *(
                [f"{MarkdownText(base.name or base.run).markdown()} → {MarkdownText(candidate.name or candidate.run).markdown()}", ""]
                if base.name or candidate.name
                else []
            ),
            f"{MarkdownText(base.agent).markdown()} → {MarkdownText(candidate.agent).markdown()}",
            "",
        ]
        if view.banner:
            lines += ["> **⚠ These runs are not comparable as they stand**", ">"]
            lines += [f"> - {MarkdownText(line, 300).markdown()}" for line in view.banner[:10]]
            lines.append("")
        lines += [f"> note: {MarkdownText(line, 300).markdown()}" for line in view.notes[:10]]
        if view.notes:
            lines.append("")
        if view.same_dialogues is not None:
            same = view.same_dialogues
            lines += [
                f"> **The same dialogues, judged again:** {MarkdownText(same.said, 300).markdown()}",
                f"> attempts paired: {same.paired}; {same.worse} passed before and fail now, {same.better} failed "
                f"before and pass now, {same.other} changed to or from not judged",
                "",
            ]
        before = Numbers.pct(base.rate.estimate) if base.rate else "—"
        after = Numbers.pct(candidate.rate.estimate) if candidate.rate else "—"
        unverdicted = view.unverdicted()  # nothing tested in the candidate, or not comparable: no verdict
        verdict = (
            f"– no verdict, {MarkdownText(unverdicted, 600).markdown()}"
            if unverdicted
            else f"{CHANGE[view.verdict]} — a real change" if view.real else "~ within noise — not a real change"
        )
        delta = (
            f"Δ {Numbers.points(view.delta.estimate)}, 95% CI {Numbers.points(view.delta.low)} to {Numbers.points(view.delta.high)}"
            if view.delta
            else "Δ —, no interval"
        )
        tested = (
            f"paired (McNemar, exact): {Numbers.p_is(view.p)}"
            if view.method == "mcnemar"
            else f"{Numbers.p_is(view.p)} ({MarkdownText(view.method).markdown()})"
        )
        sequential = view.sequential
        if sequential is not None and sequential.applies:
            # The run stopped when the sequential test said so: its verdict leads, and the
            # fixed-design numbers are shown for description only.
            lead = (
                f"{CHANGE[sequential.verdict]} — a real change" if sequential.verdict != "undecided" else "~ no verdict — not shown to be a real change"
            )
            lines += [
                f"**Pass rate {before} → {after}: {lead} (anytime-valid)**",
                "",
                f"{MarkdownText(sequential.said, 300).markdown()} · e-value against 1/α = {sequential.threshold:g}, α = {sequential.alpha:g}",
                "",
                f"> {MarkdownText(sequential.note, 500).markdown()}",
                "",
                f"Fixed-design test, **for description only** (not valid for a verdict after early stopping): {verdict}; "
                f"{delta} · {tested} · sign-flip {Numbers.p_is(view.sign_flip_p)}",
                "",
                MarkdownText(view.reading, 500).markdown(),
                "",
            ]
        else:
            if sequential is not None:
                lines += [f"> **The sequential verdict does not apply to this pair:** {MarkdownText(sequential.note, 600).markdown()}", ""]
            lines += [
                f"**Pass rate {before} → {after}: {verdict}**",
                "",
                f"{delta} · {tested} · sign-flip {Numbers.p_is(view.sign_flip_p)}",
                "",
                *([] if unverdicted else [MarkdownText(view.reading, 500).markdown(), ""]),
            ]
        lines += [
            f"before {Numbers.interval(base.rate)} · {base.passed}/{base.judged} · "
            f"after {Numbers.interval(candidate.rate)} · {candidate.passed}/{candidate.judged}",
            "",
            self._scenarios(),
            "",
        ]
        for sentence in view.trouble:
            lines += [f"**{MarkdownText(sentence, 300).markdown()}**", ""]
        if view.needed:
            lines += [MarkdownText(view.needed, 300).markdown(), ""]
        applies = view.sequential is not None and view.sequential.applies
        moved = tuple(
            (
                MarkdownId(change.id, self.ID).markdown(),
                f"{change.before_passed}/{change.before_judged}",
                f"{change.after_passed}/{change.after_judged}",
                Numbers.p(change.adjusted),
                f"? {MarkdownText(change.said).markdown()}" if change.change == "undecided" else CHANGE[change.change],
                *((CHANGE[change.sequential] if change.sequential else "—",) if applies else ()),
            )
            for change in view.scenarios
            # A scenario undecided with no change seen says nothing a row would add.
            if change.change in ("worse", "better") or (change.change == "undecided" and change.seen != "none")
            or change.sequential not in (None, "same")
        )
        header = ("Scenario", "Before", "After", "adjusted p", "Change (fixed-design)", "Anytime-valid") if applies else (
            "Scenario", "Before", "After", "adjusted p", "Change"
        )
        table = MarkdownTable(header, moved, self.SCENARIOS, "scenarios").lines()
        if table:
            lines += [*table, ""]
        flips = tuple(
            (
                MarkdownId(flip.scenario, self.ID).markdown(),
                MarkdownText(flip.claim, self.CLAIM).markdown(),
                Numbers.pct(flip.before),
                Numbers.pct(flip.after),
                CHANGE[flip.change] + (", flipped" if flip.flipped else ""),
            )
            for flip in view.claims
            if flip.flipped
        )
        if flips:
            lines += [f"**Claims that flipped:** {view.flipped} crossed half their attempts", ""]
            lines += [*MarkdownTable(("Scenario", "Claim", "Held before", "Held after", "Change"), flips, self.FLIPS, "claims").lines(), ""]
        apart = [
            ("only in the base run", view.only_base),
            ("only in the candidate run", view.only_candidate),
            ("changed between the runs", view.changed),
        ]
        for label, ids in apart:
            if ids:
                named = ", ".join(MarkdownId(one, self.ID).markdown() for one in ids[:10])
                more = f" and {len(ids) - 10} more" if len(ids) > 10 else ""
                lines += [f"Left out of every test, {label}: {named}{more}", ""]
        for name, summary in (("base", self.base), ("candidate", self.candidate)):
            # The run's view is made only for a run with attempts not judged: for two runs of
            # 10,000 attempts each, making both took half again the whole command's CPU time.
            if all(attempt.status() != "not_judged" for attempt in summary.attempts()):
                continue
            unjudged = Unjudged(summary, summary.view()).lines()
            if unjudged:
                unjudged[0] = unjudged[0].replace("**Not judged:**", f"**Not judged in the {name} run:**", 1)
                lines += [*unjudged, ""]
        tokens = f"{Numbers.count(base.tokens)} → {Numbers.count(candidate.tokens)}"
        lines.append(
            f"**Tokens:** {tokens} ({self._ratio(view.token_ratio, view.token_direction)}) · "
            f"**Cost:** {Numbers.cost(base.cost)} → {Numbers.cost(candidate.cost)} ({self._ratio(view.cost_ratio, view.cost_direction)}"
            + ("" if base.cost.complete and candidate.cost.complete else "; incomplete: some requests unpriced")
            + ")"
        )
        lines += ["", f"Page: {Where(self.here).markdown(self.page)}"]
        return "\n".join(lines) + "\n"

    def _scenarios(self) -> str:
        fixed = self.view.scenarios_said
        sequential = self.view.sequential
        if sequential is None or not sequential.applies:
            return f"**Scenarios:** {fixed}"
        own = sequential.counts
        return (
            f"**Scenarios, anytime-valid** (each alone, e-BH): {own['worse']} worse, {own['better']} better, {own['same']} same · "
            f"fixed-design, for description only: {fixed}"
        )

    def _ratio(self, value: float | None, direction: str | None) -> str:
        if value is None or direction is None:
            return "no ratio per attempt"
        return f"{DIRECTION[direction]} ×{value:.2f} per attempt"


class SectionsFitted(msgspec.Struct, frozen=True):
    """Sections joined within ``MOST`` characters. When they do not fit whole, the room is shared:
    a section smaller than its share is kept whole, and each larger one cut after its last whole
    line that fits its share, saying how many lines were left out. Only when not even each
    section's first line fits are sections left out, each named (``names``) as far as room allows."""

    sections: tuple[str, ...]
    what: str
    names: tuple[str, ...] = ()  # a name for each section, said when it is left out

    ROOM: ClassVar[int] = MOST - 200
    NOTE: ClassVar[int] = 80  # what the note under a cut section takes
    LEFT: ClassVar[int] = 2000  # what the note naming the sections left out may take
    NAMED: ClassVar[int] = 10  # sections left out named in it

    def fits(self) -> bool:
        return sum(len(section) + 1 for section in self.sections) <= self.ROOM

    def markdown(self) -> str:
        if self.fits():
            return "\n".join(self.sections)
        heads = [section.split("\n", 1)[0] + "\n" for section in self.sections]
        kept = len(self.sections)
        while kept and sum(len(head) + self.NOTE for head in heads[:kept]) > self.ROOM - self.LEFT:
            kept -= 1
        shares = self._shares(kept)
        cut = [self._cut(section, share) for section, share in zip(self.sections[:kept], shares, strict=True)]
        if kept < len(self.sections):
            left = self.names[kept:] if self.names else ()
            named = ", ".join(MarkdownText(name, 60).markdown() for name in left[: self.NAMED])
            more = f" and {len(left) - self.NAMED} more" if len(left) > self.NAMED else ""
            cut.append(
                f"and {len(self.sections) - kept} more {self.what}, left out to keep this short"
                + (f": {named}{more}" if named else "")
                + "\n"
            )
        return "\n".join(cut)

    def _shares(self, kept: int) -> list[int]:
        """The room of each of the first ``kept`` sections: an even share, a smaller section's
        unused part shared among the larger ones."""
        sizes = [len(section) + 1 for section in self.sections[:kept]]
        shares = [0] * kept
        room = self.ROOM - (0 if kept == len(self.sections) else self.LEFT)
        left = list(range(kept))
        while left:
            even = room // len(left)
            small = [index for index in left if sizes[index] <= even]
            if not small:
                for index in left:
                    shares[index] = even
                break
            for index in small:
                shares[index] = sizes[index]
                room -= sizes[index]
            left = [index for index in left if index not in small]
        return shares

    def _cut(self, section: str, share: int) -> str:
        if len(section) + 1 <= share:
            return section
        lines = section.split("\n")
        whole: list[str] = []
        size = 0
        for line in lines:
            if whole and size + len(line) + 1 > share - self.NOTE:
                break
            whole.append(line)  # the first line (the heading) always: the room holds every one kept
            size += len(line) + 1
        return "\n".join(whole) + f"\n\nand {len(lines) - len(whole)} more lines, left out to keep this short\n"
