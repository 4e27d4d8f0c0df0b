"""Runs as JUnit XML, the test results CI systems read (Jenkins, GitLab, Azure DevOps, the
GitHub actions that annotate a pull request).

``JUnitReport`` is the document: a ``<testsuite>`` per run (so per agent), a ``<testcase>`` per
scenario. Every number in it is one the run's report shows, taken from ``report.Summary`` and
``stats``: passed of judged, the scenario's Wilson interval, pass^k at the k the report's
headline gives, tokens and cost as ``attempt.Sum`` adds them.

The document keeps to the strictest of the JUnit schemas in use, Apache Ant's (the aggregated form:
``<testsuites>`` with no attributes; each suite with ``package``, ``id``, ``timestamp``,
``hostname``, ``<properties>``, ``<system-out>`` and ``<system-err>``; a case with at most one
``<failure>`` or ``<error>`` and no properties of its own), with the one thing Ant's lacks and
Jenkins' and JUnit 5's schemas have: a case's ``<skipped>`` and the suite's ``skipped`` count. So:

- A scenario is a **failure** when a claim failed in one of its attempts and the run's pass rule
  (``passing.py``) fails the scenario — one the rule accepts is a passed case, as the exit code
  says — an **error** when the
  agent failed (type ``agent_failed`` or ``time_limit``) or, failing neither, when the run's budget
  stopped it before the scenario was played in full (type ``not_played``), when attempts were not
  judged beyond the rule's ``max_not_judged`` or none of its attempts was (type ``not_judged``), or
  none was kept (type ``not_played``). Not judged is an error, not a skip: convy exits 5 for it, and
  a skipped case would look fine beside a failed command; within ``max_not_judged`` the case is
  left to its judged attempts, as the command lets them through.
- A scenario's tokens, cost and time are properties of its suite, named after it
  (``convy.scenario.<id>.tokens``): a case has no properties in that schema. Its time is also the
  case's ``time``, the seconds of its attempts added up.
- A scenario a run skipped (a model it needs is absent) is a case with ``<skipped message="why">``,
  or an ``<error>`` of type ``skipped`` when the run's rule fails a run for a skip
  (``fail_on_skip``); the suite's ``convy.skipped`` property and its ``<system-out>`` name them too.
- A run that judged no attempt has a case ``nothing tested`` with an ``<error>`` of type
  ``nothing_tested``: a suite of skipped cases, or of none, never reads as passed; a run its budget
  stopped or that reached its budget (exit 6) has a case ``budget`` with an ``<error>`` of type
  ``budget``, what was spent of what.

What agents, models and judges said comes from the run folder, where it was kept with the run's
secrets hidden; here it is cut to a bound (saying how much was left out) and then made valid XML
text (``XmlText``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar, Literal

import msgspec

from convy.attempt import Attempt, Sum
from convy.causes import NAMES
from convy.files import Delivered
from convy.judge import Claim, Failed, NoVerdict, Verdict
from convy.passing import AbsentAgent, RunVerdict
from convy.report import Summary, Sums
from convy.stats import Consistency, Tally, Wilson
from convy.terminal import Inert


class XmlText(msgspec.Struct, frozen=True):
    """Outside text as XML 1.0 may hold it, within ``most`` characters.

    It is cut first (the secrets were hidden before, when the run kept it), then every character
    XML 1.0 forbids — the C0 controls but tab, newline and carriage return, lone surrogates, U+FFFE
    and U+FFFF — is written out as an escape (``\\x1b``), with the carriage return (a reader would
    make it a newline), the C1 controls and the characters that reorder text (``Inert``'s), so a CI
    page shows what was said and it does nothing there.
    """

    text: str
    most: int = 500

    NONCHARACTERS: ClassVar[dict[int, str]] = {0xFFFE: "\\ufffe", 0xFFFF: "\\uffff"}

    def lines(self) -> str:
        return Inert(self.cut()).lines().translate(self.NONCHARACTERS)

    def line(self) -> str:
        return Inert(self.cut()).line().translate(self.NONCHARACTERS)

    def cut(self) -> str:
        """The text within the bound, not yet written out (for text that is put together first)."""
        if len(self.text) <= self.most:
            return self.text
        return f"{self.text[: self.most]}… ({len(self.text) - self.most} more characters)"


class Shortened(msgspec.Struct, frozen=True):
    """Some lines, at most ``most`` of them, the rest said as ``and N more <what>``."""

    lines: tuple[str, ...]
    most: int
    what: str

    def kept(self) -> list[str]:
        if len(self.lines) <= self.most:
            return list(self.lines)
        return [*self.lines[: self.most], f"and {len(self.lines) - self.most} more {self.what}"]


class Indented(msgspec.Struct, frozen=True):
    """An entry of a failure's text whose outside words may hold line breaks: each line after the
    first indented under it, so a reason's line never starts where convy's own lines do (a forged
    ``✓ scenario #1``)."""

    entry: str

    def text(self) -> str:
        return self.entry.replace("\n", "\n      ")


class Case(msgspec.Struct, frozen=True):
    """One scenario of a run as a ``<testcase>``: its attempts' outcome, and why it failed.

    ``k`` is the k of the run's pass^k (the report's headline: the fewest attempts any judged
    scenario has), 0 when no scenario was judged.
    """

    agent: str
    scenario: str
    attempts: Sequence[Attempt]  # walked again each time it is asked (``digest.Attempts``), none held
    tally: Tally
    k: int
    summary: Summary
    status: str
    verdict: RunVerdict

    CLAIMS: ClassVar[int] = 5  # failed claims named in a failure
    REASONS: ClassVar[int] = 3  # the reasons given under each claim (one per attempt)
    ATTEMPTS: ClassVar[int] = 5  # attempts listed for the agent's failures, or for not judged
    MESSAGE: ClassVar[int] = 300  # characters of a reason in the one-line message
    REASON: ClassVar[int] = 1000  # characters of a reason in the text

    def kind(self) -> Literal["passed", "failure", "agent", "short", "not_judged", "not_played"]:
        if not self.attempts:
            return "not_played"
        # A claim that failed fails the case only as the run's pass rule says: a scenario the
        # project accepts (its fail_under, or the run's mean) is a passed case, as the exit code says.
        if any(attempt.why() == "claim" for attempt in self.attempts) and self.verdict.fails(self.scenario):
            return "failure"
        if any(attempt.why() == "agent" for attempt in self.attempts):
            return "agent"
        if self.scenario in self.verdict.short:  # the budget stopped the run before it was played in full: exit 6
            return "short"
        # Attempts not judged within the rule's max_not_judged leave the case to its judged ones,
        # as the command lets them through; one with none judged is never a pass.
        if any(attempt.status() == "not_judged" for attempt in self.attempts) and (
            not self.tally.judged or not self.verdict.unjudged_within()
        ):
            return "not_judged"
        return "passed"

    def seconds(self) -> float:
        return sum(attempt.outcome.seconds for attempt in self.attempts)

    def pass_hat(self) -> float | None:
        """pass^k of this scenario alone, at the run's k, as the report's curve computes it."""
        if not self.k or self.tally.judged < self.k:
            return None
        return Consistency((self.tally,)).curve()[self.k - 1][1]

    def headline(self) -> str:
        """k of n passed, the interval, pass^k, and what was not judged: one line."""
        if not self.tally.judged:
            return f"none of {len(self.attempts)} attempts judged" if self.attempts else "no attempt kept"
        said = f"{self.tally.passed} of {self.tally.judged} judged attempts passed"
        interval = Wilson(self.tally).interval()
        if interval is not None:
            said += f" ({interval.estimate:.0%}, 95% interval {interval.low:.0%}–{interval.high:.0%})"
        hat = self.pass_hat()
        if hat is not None:
            said += f", pass^{self.k} {hat:.2f}"
        unjudged = sum(1 for attempt in self.attempts if attempt.status() == "not_judged")
        if unjudged:
            said += f"; {unjudged} not judged"
        return said

    def element(self) -> ET.Element:
        name, agent = XmlText(self.scenario).line(), XmlText(self.agent).line()  # a file's name may hold anything
        case = ET.Element("testcase", name=name, classname=agent, time=f"{self.seconds():.3f}")
        told = self.told()
        if told is not None:
            tag, kind, message, lines = told
            self._child(case, tag, kind, message, lines)
        return case

    def told(self) -> tuple[Literal["failure", "error"], str, str, list[str]] | None:
        """Why the scenario did not pass, or ``None`` when it did: ``failure`` (a claim failed) or
        ``error``, its type, a one-line message and the lines of its text (outside text cut, not
        yet written out). The pytest plugin fails an item with the same words."""
        match self.kind():
            case "passed":
                return None
            case "failure":
                failed = self._failed_claims()
                first = [
                    f"{claim!r} held {held} of {decided}: {XmlText(reasons[0], self.MESSAGE).cut()}"
                    for claim, held, decided, reasons in failed
                ]
                rule = self.verdict.why(self.scenario)
                message = f"{self.headline()}; {rule}; failed: {'; '.join(first[:2])}"
                if len(first) > 2:
                    message += f"; and {len(first) - 2} more claims"
                lines = [self.headline(), f"the pass rule: {rule}", "claims that failed:"]
                entries: list[str] = []
                for claim, held, decided, reasons in failed:
                    entries.append(
                        "\n".join(
                            [f"- {XmlText(claim, self.REASON).line()} (held {held} of {decided} decided)"]
                            + [Indented(f"    {reason}").text() for reason in Shortened(tuple(reasons), self.REASONS, "attempts").kept()]
                        )
                    )
                lines += Shortened(tuple(entries), self.CLAIMS, "claims").kept()
                lines += self._others("agent", "the agent failed:")
                lines += self._others("not_judged", "not judged:")
                return "failure", "claim", message, lines
            case "agent":
                broken = [attempt for attempt in self.attempts if attempt.why() == "agent"]
                stop = broken[0].outcome.stop
                message = f"{self.headline()}; the agent failed in {len(broken)}: {self._said(broken[0], self.MESSAGE)}"
                lines = [self.headline(), *self._others("agent", "the agent failed:"), *self._others("not_judged", "not judged:")]
                return "error", stop, message, lines
            case "not_judged":
                unjudged = [attempt for attempt in self.attempts if attempt.status() == "not_judged"]
                message = f"{self.headline()}: {self._said(unjudged[0], self.MESSAGE)}"
                return "error", "not_judged", message, [self.headline(), *self._others("not_judged", "not judged:")]
            case "short":
                message = (
                    f"not played in full: {self.verdict.short[self.scenario]} ({self.verdict.budget_said()}); "
                    f"{self.headline()}"
                )
                return "error", "not_played", message, [message, *self._others("not_judged", "not judged:")]
            case "not_played":
                message = f"no attempt of it was kept (the run is {self.status})"
                return "error", "not_played", message, [message]

    def accepted(self) -> str:
        """What the project's pass rule accepted of a scenario that did not pass every judged
        attempt, said in the case's output (``""`` for one that did, or that fails)."""
        if self.kind() != "passed":
            return ""
        said = [self.verdict.accepted(self.scenario)]
        unjudged = sum(1 for attempt in self.attempts if attempt.status() == "not_judged")
        if unjudged:
            said.append(
                f"{unjudged} not judged, within max_not_judged {self.verdict.rule.max_not_judged:.1%} "
                f"({self.verdict.not_judged} of {self.verdict.kept} attempts in the run)"
            )
        return "; ".join(filter(None, said))

    def _child(self, case: ET.Element, tag: str, kind: str, message: str, lines: list[str]) -> None:
        child = ET.SubElement(case, tag, type=kind, message=XmlText(message, 2000).line())
        child.text = XmlText("\n".join(lines), 100_000).lines()

    def outside(self, text: str, most: int) -> str:
        """A reason an agent, a model or a check gave, as the failure's lines hold it: cut to
        ``most`` characters, its line breaks kept (the pytest plugin's ``OnOneLine`` writes them
        out); the failure's text indents each line after the first under its entry (``Indented``),
        so no outside line starts where convy's own do. A claim, the scenario's own one-line words,
        is always written on one line."""
        return XmlText(text, most).cut()

    def _failed_claims(self) -> list[tuple[str, int, int, list[str]]]:
        """Each claim that failed in some attempt: its text, held of decided (the report's count),
        and the reason it failed in each attempt, the judge's or the check's evidence."""
        reasons: dict[str, list[str]] = {}
        for attempt in self.attempts:
            for claim in self._failing(attempt):
                reasons.setdefault(claim.claim, []).append(
                    f"#{attempt.outcome.attempt}: {self.outside(claim.reason, self.REASON)}"
                )
        rows = {row.text: row for row in self.summary.claims(self.attempts)}
        order = {text: at for at, text in enumerate(rows)}  # the report's order of the scenario's claims
        return [
            (claim, rows[claim].held if claim in rows else 0, rows[claim].decided if claim in rows else 0, said)
            for claim, said in sorted(reasons.items(), key=lambda one: order.get(one[0], len(order)))
        ]

    def _failing(self, attempt: Attempt) -> list[Claim]:
        """The claims that failed an attempt: trusted ones of a verdict, checks decided by code."""
        match attempt.outcome.result:
            case Verdict(claims=claims):
                return [claim for claim in claims if not claim.held and claim.trusted(attempt.trust)]
            case NoVerdict(checks=checks):
                return [claim for claim in checks if not claim.held]
            case Failed():
                return []

    def _others(self, which: Literal["agent", "not_judged"], title: str) -> list[str]:
        found = [
            attempt
            for attempt in self.attempts
            if (attempt.why() == "agent" if which == "agent" else attempt.status() == "not_judged")
        ]
        if not found:
            return []
        said = tuple(Indented(f"- #{attempt.outcome.attempt}: {self._said(attempt, self.REASON)}").text() for attempt in found)
        return [title, *Shortened(said, self.ATTEMPTS, "attempts").kept()]

    def _said(self, attempt: Attempt, most: int) -> str:
        """Why an attempt failed by the agent or was not judged, in the words of whoever failed."""
        match attempt.outcome.result:
            case Failed(reason=reason) if attempt.cause() == "tool":
                # the cause the run's totals count it under (causes.py): the tools that failed on purpose
                failing = ", ".join(dict.fromkeys(call.name for call in attempt.outcome.injected()))
                return f"{attempt.outcome.stop} ({NAMES['tool']}: {self.outside(failing, most)}): {self.outside(reason, most)}"
            case Failed(reason=reason):
                return f"{attempt.outcome.stop}: {self.outside(reason, most)}"
            case NoVerdict(who="busy", reason=reason):
                return f"service (stayed busy): {self.outside(reason, most)}"
            case NoVerdict(who=who, reason=reason, service=True):
                # the cause the run's totals count it under (causes.py): the service, not its model
                return f"service ({'simulated user' if who == 'user' else 'judge'}'s model): {self.outside(reason, most)}"
            case NoVerdict(who=who, reason=reason):
                return f"{who}: {self.outside(reason, most)}"
            case Verdict(claims=claims):
                unseen = [claim for claim in claims if claim.doubt == "unseen"]
                if unseen:
                    return f"not judged: {self.outside(unseen[0].reason, most)}"
                doubtful = [claim.claim for claim in claims if not claim.trusted(attempt.trust)]
                return f"not trusted (less confident than {attempt.trust:g}): {', '.join(repr(one) for one in doubtful)}"


class Suite(msgspec.Struct, frozen=True):
    """One run as a ``<testsuite>``: its agent's name, a case per scenario it planned, and the
    run's numbers as properties. ``index`` is its place in the document (the suite's ``id``)."""

    summary: Summary
    index: int

    HOST: ClassVar[str] = "localhost"  # a run folder does not keep the machine it was played on

    def cases(self) -> list[Case]:
        spec = self.summary.run.file.spec
        status = self.summary.run.status()
        tallies = self.summary.tallies()
        k = self._k()
        verdict = self.summary.verdict()
        return [
            Case(spec.agent, scenario, attempts, tallies.get(scenario, Tally(0, 0)), k, self.summary, status, verdict)
            for scenario, attempts in self.summary.by_scenario().items()
        ]

    def skipped(self) -> list[ET.Element]:
        """A case for each scenario the run skipped, ``<skipped>`` with why; an ``<error>`` of
        type ``skipped`` when the run's rule fails a run that skipped any (``fail_on_skip``), as
        the exit code does."""
        spec = self.summary.run.file.spec
        found = []
        for one in spec.skipped:
            case = ET.Element("testcase", name=XmlText(one.scenario).line(), classname=XmlText(spec.agent).line(), time="0.000")
            why = f"skipped: {'; '.join(one.reasons)}"
            if spec.rule.fail_on_skip:
                child = ET.SubElement(case, "error", type="skipped", message=XmlText(f"{why} (fail_on_skip)", 2000).line())
            else:
                child = ET.SubElement(case, "skipped", message=XmlText(why, 2000).line())
            child.text = XmlText(why, 10_000).lines()
            found.append(case)
        return found

    def untested(self) -> ET.Element | None:
        """A case that errs when the run judged no attempt (type ``nothing_tested``): a suite of
        skipped cases, or of none, would otherwise read as passed."""
        verdict = self.summary.verdict()
        if verdict.tested():
            return None
        spec = self.summary.run.file.spec
        case = ET.Element("testcase", name="nothing tested", classname=XmlText(spec.agent).line(), time="0.000")
        kept = len(self.summary.run.outcomes)
        skips = len(spec.skipped)
        why = (
            f"nothing was tested: no attempt was judged ({kept} kept of {self.summary.planned()} planned, "
            f"{skips} scenario{'s' if skips != 1 else ''} skipped)"
        )
        child = ET.SubElement(case, "error", type="nothing_tested", message=why)
        child.text = why
        return case

    def budgeted(self) -> ET.Element | None:
        """A case that errs when the run's budget stopped it or was reached (type ``budget``, with
        what was spent of what): the command exits 6 for it, so the suite is never green."""
        verdict = self.summary.verdict()
        if not verdict.budget:
            return None
        spec = self.summary.run.file.spec
        case = ET.Element("testcase", name="budget", classname=XmlText(spec.agent).line(), time="0.000")
        why = f"{verdict.budget_said()} (convy exits 6)"
        child = ET.SubElement(case, "error", type="budget", message=XmlText(why, 2000).line())
        child.text = XmlText(why, 10_000).lines()
        return case

    def _k(self) -> int:
        curve = self._curve()
        return curve[-1][0] if curve else 0

    def _curve(self) -> list[tuple[int, float, float]]:
        # As the report's view makes its consistency curve: over the scenarios judged at least once.
        judged = [tally for tally in self.summary.tallies().values() if tally.judged]
        return Consistency(tuple(judged)).curve()

    def element(self) -> ET.Element:
        run = self.summary.run
        spec = run.file.spec
        cases = self.cases()
        kinds = [case.kind() for case in cases]
        skipped = self.skipped()
        untested = self.untested()
        budgeted = self.budgeted()
        # The cases besides the scenarios played: each skipped one (an error under fail_on_skip),
        # nothing tested, and the budget stopped or reached.
        erring = (len(skipped) if spec.rule.fail_on_skip else 0) + (untested is not None) + (budgeted is not None)
        seconds = run.seconds()
        suite = ET.Element(
            "testsuite",
            name=XmlText(spec.agent).line(),
            timestamp=self._timestamp(),
            hostname=self.HOST,
            tests=str(len(cases) + len(skipped) + (untested is not None) + (budgeted is not None)),
            failures=str(kinds.count("failure")),
            errors=str(len(kinds) - kinds.count("passed") - kinds.count("failure") + erring),
            skipped=str(0 if spec.rule.fail_on_skip else len(skipped)),
            time=f"{max(seconds if seconds is not None else sum(case.seconds() for case in cases), 0.0):.3f}",
            package="convy",
            id=str(self.index),
        )
        properties = ET.SubElement(suite, "properties")
        for name, value in self.properties(cases):
            ET.SubElement(properties, "property", name=XmlText(name).line(), value=XmlText(value, 2000).line())
        for case in cases:
            suite.append(case.element())
        suite.extend(skipped)
        if untested is not None:
            suite.append(untested)
        if budgeted is not None:
            suite.append(budgeted)
        out = ET.SubElement(suite, "system-out")
        out.text = XmlText("\n".join(self._lines(cases)), 1_000_000).lines()
        err = ET.SubElement(suite, "system-err")
        err.text = XmlText(run.problem, 10_000).lines()
        return suite

    def properties(self, cases: list[Case]) -> list[tuple[str, str]]:
        """The run's numbers, then each scenario's, as the report shows them."""
        summary = self.summary
        run = summary.run
        spec = run.file.spec
        judged = [tally for tally in summary.tallies().values() if tally.judged]
        attempts = summary.attempts()
        rate = summary.rate()
        curve = self._curve()
        found = [
            ("convy.run", spec.id),
            ("convy.status", run.status()),
            ("convy.started", run.file.status.started),
            ("convy.user_model", spec.models.user),
            ("convy.judge_model", spec.models.judge),
            ("convy.trust", f"{spec.trust:g}"),
            ("convy.attempts.planned", str(summary.planned())),
            ("convy.attempts.kept", str(len(attempts))),
            ("convy.passed", str(sum(tally.passed for tally in judged))),
            ("convy.judged", str(sum(tally.judged for tally in judged))),
            ("convy.not_judged", str(sum(1 for attempt in attempts if attempt.status() == "not_judged"))),
            ("convy.failed_by_agent", str(sum(1 for attempt in attempts if attempt.why() == "agent"))),
        ]
        if rate is not None:
            found += [
                ("convy.pass_rate", f"{rate.estimate:.4f}"),
                ("convy.pass_rate.low", f"{rate.low:.4f}"),
                ("convy.pass_rate.high", f"{rate.high:.4f}"),
                ("convy.pass_rate.method", summary.headline().method()),
            ]
        if curve:
            k, hat, at = curve[-1]
            found += [("convy.pass^k.k", str(k)), ("convy.pass^k", f"{hat:.4f}"), ("convy.pass@k", f"{at:.4f}")]
        found += self._spent("convy", summary.total().every())
        times = [attempt.time() for attempt in attempts]
        found += [
            ("convy.time.run_seconds", "" if run.seconds() is None else f"{run.seconds():.3f}"),
            ("convy.time.attempts_seconds", f"{sum(time.wall for time in times):.3f}"),
            ("convy.time.agent_seconds", f"{sum(time.agent for time in times):.3f}"),
            ("convy.time.user_seconds", f"{sum(time.user for time in times):.3f}"),
            ("convy.time.judge_seconds", f"{sum(time.judge for time in times):.3f}"),
            ("convy.time.waiting_seconds", f"{sum(time.waiting for time in times):.3f}"),
        ]
        if spec.skipped:
            found.append(("convy.skipped", "; ".join(f"{one.scenario}: {', '.join(one.reasons)}" for one in spec.skipped)))
        sums = summary.sums()
        for case in cases:
            name = f"convy.scenario.{case.scenario}"
            found.append((f"{name}.result", case.headline()))
            spent = (sums.get(case.scenario) or Sums(Sum(), Sum(), Sum())).every()
            found += self._spent(name, spent)[4:7]  # tokens, cost and whether it is complete
            found.append((f"{name}.seconds", f"{case.seconds():.3f}"))
        return found

    def _spent(self, name: str, summed: Sum) -> list[tuple[str, str]]:
        """Tokens and cost of some requests: reported tokens, and the cost with whether it is complete
        (in this order: a scenario's are the total of tokens, the cost and whether it is complete)."""
        tokens = summed.tokens()
        cost = summed.cost()
        return [
            (f"{name}.requests", str(tokens.requests)),
            (f"{name}.tokens.reported_requests", str(tokens.reported)),
            (f"{name}.tokens.input", str(tokens.input)),
            (f"{name}.tokens.output", str(tokens.output)),
            (f"{name}.tokens", "not reported" if tokens.total is None else str(tokens.total)),
            (f"{name}.cost_usd", cost.amount or ("unknown" if cost.unpriced else "0")),
            (f"{name}.cost_complete", "true" if cost.complete else "false"),
            (f"{name}.cost_unpriced_requests", str(cost.unpriced)),
        ]

    def _lines(self, cases: list[Case]) -> list[str]:
        """The suite in words, a line per scenario, for CI pages that show a suite's output."""
        spec = self.summary.run.file.spec
        marks = {"passed": "✓", "failure": "✗", "agent": "✗", "short": "-", "not_judged": "?", "not_played": "-"}
        rate = self.summary.rate()
        rate_text = "n/a" if rate is None else f"{rate.estimate:.1%} [{rate.low:.1%}, {rate.high:.1%}]"
        stop = self.summary.stop()
        lines = [
            f"{spec.agent}, run {spec.id} ({stop or self.summary.run.status()}): pass rate {rate_text}; "
            f"{self.summary.verdict().verdict()}"
        ]
        lines += [f"not passed: {words} (exit {code})" for code, words in self.summary.verdict().gates() if code != 3]
        lines += [
            f"{marks[case.kind()]} {case.scenario}: {case.headline()}" + (f" ({case.accepted()})" if case.accepted() else "")
            for case in cases
        ]
        lines += [f"- {one.scenario}: skipped, {'; '.join(one.reasons)}" for one in spec.skipped]
        return lines

    def _timestamp(self) -> str:
        """When the run started, in UTC, as the schema wants it: to the second, with no zone."""
        try:
            started = datetime.fromisoformat(self.summary.run.file.status.started)
        except ValueError:
            started = datetime(1970, 1, 1, tzinfo=UTC)
        if started.tzinfo is not None:
            started = started.astimezone(UTC)
        return started.strftime("%Y-%m-%dT%H:%M:%S")


class JUnitReport(msgspec.Struct, frozen=True):
    """Some runs as one JUnit XML document: a ``<testsuite>`` per run, in the order given."""

    summaries: tuple[Summary, ...]
    absent: tuple[AbsentAgent, ...] = ()  # agents skipped as absent: a suite each, its one case skipped
    fail_on_skip: bool = False  # whether the command fails a skip: the absent agents' cases are errors then

    def xml(self) -> bytes:
        root = ET.Element("testsuites")
        for index, summary in enumerate(self.summaries):
            root.append(Suite(summary, index).element())
        for index, agent in enumerate(self.absent, start=len(self.summaries)):
            root.append(self._absent(agent, index, untested=not self.summaries and index == 0))
        ET.indent(root)
        return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"

    def written(self, path: Path) -> None:
        """Write the document to ``path`` whole (through a temporary file, as the pages are);
        a refused write is ``Unwritable``."""
        Delivered(path).written(self.xml())

    def _absent(self, agent: AbsentAgent, index: int, untested: bool) -> ET.Element:
        """An absent agent's suite: one case, ``<skipped>`` with why (an ``<error>`` of type
        ``skipped`` under fail_on_skip); with ``untested`` (no run was played at all) also the case
        ``nothing tested``, so a file of skips never reads as passed."""
        name = XmlText(agent.name).line()
        case = ET.Element("testcase", name="agent absent", classname=name, time="0.000")
        why = XmlText(agent.said(), 2000).line()
        if self.fail_on_skip:
            child = ET.SubElement(case, "error", type="skipped", message=f"{why} (fail_on_skip)")
        else:
            child = ET.SubElement(case, "skipped", message=why)
        child.text = why
        cases = [case]
        if untested:
            nothing = ET.Element("testcase", name="nothing tested", classname=name, time="0.000")
            said = "nothing was tested: every agent was skipped, no run was played"
            ET.SubElement(nothing, "error", type="nothing_tested", message=said).text = said
            cases.append(nothing)
        erring = len(cases) - 1 + self.fail_on_skip
        suite = ET.Element(
            "testsuite", name=name, timestamp=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S"), hostname=Suite.HOST,
            tests=str(len(cases)), failures="0", errors=str(erring), skipped=str(0 if self.fail_on_skip else 1),
            time="0.000", package="convy", id=str(index),
        )
        ET.SubElement(ET.SubElement(suite, "properties"), "property", name="convy.skipped", value=why)
        suite.extend(cases)
        ET.SubElement(suite, "system-out").text = why
        ET.SubElement(suite, "system-err")
        return suite
