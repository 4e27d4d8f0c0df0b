"""``convy report``, ``convy compare`` and ``convy export``: the pages and tables made from run
folders.
"""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

from convy.cli.console import ScoreSaid, Shown
from convy.cli.outputs import Outputs, Uncollected
from convy.live import Paced, Tethered
from convy.problems import (
    ConfigurationError,
)
from convy.project import Project
from convy.report import Summary
from convy.runs import Read, Unread
from convy.terminal import Inert
from convy.totals import Listed


class ReportCommand(msgspec.Struct, frozen=True):
    """``convy report [RUN…]``: the reports of these runs (all, when none is named) and the index.
    ``live`` (the hidden ``--live SECONDS``) is given by ``live.LiveReport``'s child process: the
    pages of a run under way, which reload themselves about that often while it plays; ``parent``
    (``--parent PID``) is the ``convy run`` that child is tied to (``live.Tethered``), gone when
    nothing is written."""

    project: Project
    wanted: tuple[str, ...]
    outputs: Outputs = Outputs()
    live: float | None = None
    parent: int | None = None

    def run(self, shown: Shown, errors: Shown) -> int:
        if self.parent is not None and not Tethered(self.parent).held():
            return 0  # the run's player ended before this writing began: its pages are the next command's
        for path in (self.outputs.junit, self.outputs.summary):
            if path is not None and not self.wanted:
                # Every run ever kept is no one result a CI job can stand on: the runs are named.
                option = self.outputs.option(path)
                raise ConfigurationError(f"{option} writes the runs named: convy report RUN… {option} FILE")
        with Uncollected():
            return self._run(shown, errors)

    def _run(self, shown: Shown, errors: Shown) -> int:
        # Read unsaid: each report's windows read their dialogues again from the run's file.
        runs, unread = self.project.runs(self.wanted, unsaid=True)
        listed: list[Listed] = []
        summaries: list[Summary] = []
        live = None if self.live is None else Paced(self.live).view(datetime.now(UTC))
        for run in runs:
            summary = Summary(run)
            playing = live if run.status() == "running" else None
            shown.line(f"report: {self.project.reported(summary, playing).relative_to(self.project.folder)}")
            causes = summary.breakdown().text()
            if causes:
                shown.line(f"  {causes}")
            # The index lists the run with the totals its report just summed: not summed again.
            listed.append(Listed(msgspec.structs.replace(run, outcomes=()), summary.totals()))
            summaries.append(summary)
        index = self.project.indexed(None if self.wanted else (tuple(listed), unread), live, tuple(listed))
        shown.line(f"index: {index.relative_to(self.project.folder)}")
        self.outputs.written(tuple(summaries), shown)
        _unread(self.project, runs, unread, errors)
        return 0


class CompareCommand(msgspec.Struct, frozen=True):
    """``convy compare BASE CANDIDATE``: is the change of pass rate real, or within noise?"""

    project: Project
    base: str
    candidate: str
    fail_on_regression: bool
    outputs: Outputs = Outputs()

    def run(self, shown: Shown, errors: Shown) -> int:
        with Uncollected():
            return self._run(shown, errors)

    def _run(self, shown: Shown, errors: Shown) -> int:
        # Read unsaid: each run's attempts are walked from its file, none held (``placed.Placed``).
        base, candidate = self.project.read(self.base, unsaid=True), self.project.read(self.candidate, unsaid=True)
        if base.folder == candidate.folder:
            raise ConfigurationError(
                f"{self.base!r} and {self.candidate!r} are the same run, {base.folder.parent.name}/{base.folder.name}: "
                "compare it with another run (convy compare BASE CANDIDATE)"
            )
        path, view = self.project.compared(base, candidate)
        self.project.indexed()
        for line in view.banner:
            errors.line(f"! not comparable: {line}")
        for line in view.notes:
            shown.line(f"note: {Inert(line).line()}")
        same = view.same_dialogues
        if same is not None:
            shown.line(f"same dialogues: {Inert(same.said).line()}")
            shown.line(
                f"attempts paired by (scenario, attempt): {same.paired}; {same.worse} passed before and fail now, "
                f"{same.better} failed before and pass now, {same.other} changed to or from not judged"
            )
        before = "n/a" if view.base.rate is None else f"{view.base.rate.estimate:.1%}"
        after = "n/a" if view.candidate.rate is None else f"{view.candidate.rate.estimate:.1%}"
        change = "n/a"
        if view.delta is not None:
            change = f"{view.delta.estimate:+.1%} [{view.delta.low:+.1%}, {view.delta.high:+.1%}]"
        # With nothing tested in the candidate, or a pair that cannot be compared, there is no verdict to give.
        unverdicted = Inert(view.unverdicted()).line()
        verdict = f"– no verdict: {unverdicted}" if unverdicted else (f"real ({view.verdict})" if view.real else "within noise")
        tested = f"paired (McNemar, exact): p = {view.p:.3g}" if view.method == "mcnemar" else f"p = {view.p:.3g}"
        headline = f"pass rate {before} → {after}, Δ {change}, {tested}: {verdict}"
        scenarios = view.scenarios_said
        sequential = view.sequential
        if sequential is not None and sequential.applies:
            # The run stopped when the sequential test said so: its verdict leads, and the
            # fixed-design test, whose attempts that run chose by looking at them, only describes.
            own = sequential.counts
            shown.line(f"anytime-valid (the {sequential.played} was played against this {sequential.other()}): {sequential.said}")
            shown.line(f"fixed-design test, for description only (not valid for a verdict after early stopping): {headline}")
            shown.line(f"fixed-design: {view.reading}")
            shown.line(
                f"scenarios, anytime-valid (each alone, e-BH): {own['worse']} worse, {own['better']} better, {own['same']} same; "
                f"fixed-design: {scenarios}"
            )
        else:
            if sequential is not None:
                shown.line(
                    f"note: the {sequential.played} was played against {Inert(sequential.against).line()}, not this "
                    f"{sequential.other()}: its sequential verdict does not apply to this pair"
                )
            shown.line(headline)
            if not view.unverdicted():  # else the headline said why there is no reading
                shown.line(view.reading)
            shown.line(f"scenarios: {scenarios}")
        for sentence in view.trouble:
            shown.line(sentence)
        if view.only_base or view.only_candidate or view.changed:
            shown.line(
                f"left out: {len(view.only_base)} only in base, {len(view.only_candidate)} only in candidate, "
                f"{len(view.changed)} changed"
            )
        if view.needed:
            shown.line(f"note: {view.needed}")
        if view.judges is not None:
            judges = view.judges
            base_id, candidate_id = Inert(view.base.run).line(), Inert(view.candidate.run).line()
            shown.line(f"judges against people ({judges.overall.base.labelled} labelled decisions on the same dialogues):")
            for row in [judges.overall, *judges.claims]:
                what = "every claim" if not row.claim else f"{Inert(row.scenario).line()} · {Inert(row.claim).line()}"
                shown.line(f"  {what}: {base_id}: {ScoreSaid(row.base).text()}; {candidate_id}: {ScoreSaid(row.candidate).text()}")
        shown.line(f"page: {path.relative_to(self.project.folder)}")
        self.outputs.compared(view, base, candidate, path, shown)
        if not self.fail_on_regression:
            return 0
        # The gate passes only a candidate that was tested, against a base it can be compared with.
        if not view.candidate.judged:
            errors.line(
                f"convy: nothing was tested: the candidate run {Inert(view.candidate.run).line()} has no judged attempt, "
                "so --fail-on-regression cannot pass it"
            )
            return 7
        if view.banner or view.delta is None:
            why = "; ".join(view.banner) or "no scenario was judged in both runs"
            errors.line(f"convy: not comparable ({Inert(why).line()}), so --fail-on-regression cannot rule out a regression")
            return 9
        return 4 if view.regressed() else 0


class ExportCommand(msgspec.Struct, frozen=True):
    """``convy export [RUN…]``: the runs' tables for pandas, polars or a spreadsheet."""

    project: Project
    wanted: tuple[str, ...]
    form: str

    def run(self, shown: Shown, errors: Shown) -> int:
        # Read unsaid: each run's attempts are read again from its file as each table is written.
        runs, unread = self.project.runs(self.wanted, unsaid=True)
        said = "traces" if self.form == "otlp" else "table"
        for path in self.project.exported(runs, self.form):
            shown.line(f"{said}: {path.relative_to(self.project.folder)}")
        _unread(self.project, runs, unread, errors)
        return 0


def _unread(project: Project, runs: tuple[Read, ...], unread: tuple[Unread, ...], errors: Shown) -> None:
    """What could not be read of a project's runs, said on the errors' stream: the folders skipped
    whole, and the runs read with a problem (lines left out)."""
    for one in unread:
        errors.line(f"skipped {one.folder.relative_to(project.folder)}: {one.reason}")
    for run in runs:
        if run.problem:
            errors.line(f"read {run.folder.relative_to(project.folder)}: {run.problem}")
