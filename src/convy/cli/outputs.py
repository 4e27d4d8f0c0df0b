"""The files a command writes for CI besides its pages (JUnit, the Markdown summary), and the
agents a run skipped as absent.
"""

from __future__ import annotations

import gc
from pathlib import Path

import msgspec

from convy.cli.console import Shown
from convy.cli.exits import Worst
from convy.passing import AbsentAgent
from convy.problems import (
    ConfigurationError,
    Unwritable,
)
from convy.project import Project
from convy.report import Summary
from convy.runs import Read
from convy.terminal import Inert
from convy.views import ComparisonView


class Absence(msgspec.Struct, frozen=True):
    """The agents ``convy run`` skipped as absent, and whether the run's rule fails a skip: each is a
    skip, counted on the command's last line, in JUnit and in the summary."""

    agents: tuple[AbsentAgent, ...] = ()
    fail_on_skip: bool = False

    def judged(self, code: int, played: bool, shown: Shown, errors: Shown) -> int:
        """The command's code, given the runs' ``code`` and whether any run was ``played``: 7 when
        none was (every agent skipped: nothing was tested), 8 under fail_on_skip, each said on
        stderr; else the skips counted on stdout."""
        if not self.agents:
            return code
        count = len(self.agents)
        names = ", ".join(Inert(agent.name).line() for agent in self.agents)
        skipped = f"{count} agent{'s' if count != 1 else ''} skipped (absent): {names}"
        if not played:
            errors.line(f"✗ nothing was tested: every agent was skipped — {skipped}")
            return Worst((code, 7)).code()
        if self.fail_on_skip:
            errors.line(f"✗ {skipped}, and fail_on_skip fails a run that skips any")
            return Worst((code, 8)).code()
        shown.line(f"– {skipped}")
        return code


class Outputs(msgspec.Struct, frozen=True):
    """The files a command writes for CI besides its pages, each where the user named it: the runs
    as JUnit XML (``--junit``) and as a Markdown summary (``--summary``); ``here`` is where the
    command was run, which a summary gives the pages' paths from."""

    here: Path = Path("/")
    junit: Path | None = None
    summary: Path | None = None

    def wanted(self) -> bool:
        return self.junit is not None or self.summary is not None

    def option(self, path: Path) -> str:
        """The option that named ``path``."""
        return "--junit" if path == self.junit else "--summary"

    def refused(self) -> None:
        """A ``ConfigurationError`` when a file asked for cannot be one, said before anything is
        played: a folder named (``--junit /``), a path through a file, both options one file."""
        examples = {"--junit": "junit.xml", "--summary": "summary.md"}
        for option, path in (("--junit", self.junit), ("--summary", self.summary)):
            if path is None:
                continue
            shown = path.relative_to(self.here) if path.is_relative_to(self.here) else path
            try:
                folder = path.is_dir()
            except OSError:  # a name the file system cannot take: said when the file is written
                continue
            if folder or not path.name:
                raise ConfigurationError(f"{option} {shown}: a folder; name a file in it: {option} {Path(shown, examples[option])}")
            above = next((parent for parent in path.parents if parent.exists()), None)
            if above is not None and not above.is_dir():
                raise ConfigurationError(f"{option} {shown}: {above.name} is a file, not a folder")
        if self.junit is not None and self.junit == self.summary:
            raise ConfigurationError("--junit and --summary name one file: give each its own")

    def written(self, summaries: tuple[Summary, ...], shown: Shown, absent: Absence = Absence()) -> None:
        """Write each file asked for (each module loaded only when its file is), the agents ``absent``
        counted as skips; a refused write is ``Unwritable``."""
        if self.junit is not None:
            from convy.junit import JUnitReport

            JUnitReport(summaries, absent.agents, absent.fail_on_skip).written(self.junit)
            shown.line(f"junit: {self.junit}")
        if self.summary is not None:
            from convy.markdown import RunSummary

            RunSummary(summaries, self.here, absent.agents, absent.fail_on_skip).written(self.summary)
            shown.line(f"summary: {self.summary}")

    def played(
        self, project: Project, runs: tuple[str, ...], code: int, shown: Shown, errors: Shown, absent: Absence = Absence()
    ) -> int:
        """After ``convy run`` or ``convy resume``: write each file asked for of the ``runs`` played,
        which ended with ``code``, and of the agents ``absent``; the command's code then (1 more
        when a file cannot be written)."""
        if not self.wanted() or code in (130, 143):  # asked to stop: the runs are kept, nothing more is written
            return code
        # Each run read back as it was kept (its secrets hidden), as `convy report` would read it.
        with Uncollected():
            summaries = tuple(Summary(project.read(one, unsaid=True)) for one in runs)
            try:
                self.written(summaries, shown, absent)
            except Unwritable as error:
                named = " ".join(runs) if runs else "RUN…"
                errors.line(
                    f"convy: {error.path}: cannot be written: {error.reason}; the runs are kept: "
                    f"convy report {named} {self.option(error.path)} FILE"
                )
                return Worst((code, 1)).code()
        return code

    def compared(self, view: ComparisonView, base: Read, candidate: Read, page: Path, shown: Shown) -> None:
        """Write the comparison's Markdown summary, when one was asked for."""
        if self.summary is not None:
            from convy.markdown import ComparisonSummary

            ComparisonSummary(view, Summary(base), Summary(candidate), page, self.here).written(self.summary)
            shown.line(f"summary: {self.summary}")


class Uncollected:
    """The collector off while a command reads runs and writes pages or tables: with no event
    loop, what it makes holds no cycle and is freed as it goes, and the collector walked the young
    records of a 10,000-attempt report 80 times for nothing (0.1-0.2 s of its 3)."""

    def __enter__(self) -> None:
        gc.disable()

    def __exit__(self, *raised: object) -> None:
        gc.enable()
