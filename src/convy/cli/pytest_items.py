"""A convy project's scenarios as pytest items, played as ``convy run`` plays them.

Loaded by ``pytest_plugin`` only when pytest is given ``--convy``. The tree it adds to the
session, beside whatever else pytest collects::

    convy                       ProjectScenarios: a configuration error of the project is its collection error
    convy::shop                 AgentScenarios: one agent of agents/, loaded with its models
    convy::shop::refunds/late   ScenarioItem: one scenario, for that agent

``-k`` selects on these names (and the scenario's tags); ``-m`` on the tags, each registered as a
marker. An item whose scenario needs a model that is absent, or whose agent is absent, is skipped
with the reason ``convy run`` gives; under ``fail_on_skip`` it fails saying so, as ``convy run``
exits 8.

Nothing is played while collecting. At the first item that runs, ``ScenarioTests`` plays every
selected item's attempts: one run per agent, in one ``asyncio.run`` for the session, through the
code ``convy run`` plays with (``Project.spec``, ``Bench`` with the settings' budget,
``RunSpec.player`` for the rounds of ``attempts = "auto"``, ``RunJournal.play``, then
``Project.reported`` and ``Project.indexed``), so the run folder, its report.html and the index are
the ones ``convy run`` writes. The project's code is loaded and played in the project's folder, as
``convy run`` runs it, wherever pytest was started. Each item then passes or fails from the
attempts its run kept, saying what ``junit.Case`` says of the scenario (outside text kept on its
line), with the report's path; a scenario the budget cut short fails saying so.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import Coroutine, Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import msgspec
import pytest

from convy.bench import Bench
from convy.cli.console import Passed, Printed, Shown, Unseen
from convy.cli.exits import Cures
from convy.cli.parser import Budgeted
from convy.cli.run import RunCommand
from convy.collector import OtlpEndpoint, Shipped, Start
from convy.holders import Environment
from convy.judge import Models
from convy.junit import Case, Suite, XmlText
from convy.loaded import Loaded
from convy.model import Absent
from convy.plan import Player
from convy.problems import ConfigurationError, Unplayed, Unwritable
from convy.project import VERSION, Project
from convy.records import RunSpec
from convy.records import Stopped as BudgetStopped
from convy.report import Summary
from convy.runs import Read
from convy.scenario import Scenario
from convy.scenarios import Matching, Scenarios
from convy.secrets import Secrets
from convy.spent import Stop
from convy.storage import RunInUse
from convy.terminal import Inert
from convy.traces import RunContext
from convy.vital import DeadService

T = TypeVar("T")


class Asked(msgspec.Struct, frozen=True):
    """What the session asked of convy, from its options."""

    project: Path
    agents: tuple[str, ...]
    attempts: int | str | None  # as --convy-attempts gave it: the settings refuse what is neither a number nor auto
    trust: float | None
    budget: Budgeted


class Prepared(msgspec.Struct, frozen=True):
    """One agent of the project as collecting loaded it: the agent and its models (loaded anew, as
    ``convy run`` loads them for each agent), the secrets they hold, and why it is not played
    (``absent``: ``convy run``'s line for an absent agent), or ""."""

    name: str
    agent: Any
    models: Models
    secrets: Secrets
    absent: str


class KeptRun(msgspec.Struct, frozen=True):
    """An agent's run of the session, as it was kept: the summary its report was made from, the
    report's path, and each scenario as the JUnit file has it (``Case``), by id."""

    summary: Summary
    report: Path
    cases: dict[str, Case]


class UnkeptRun(msgspec.Struct, frozen=True):
    """An agent's run that could not be played or kept, and the line that says why."""

    said: str


class OnOneLine(Case, frozen=True):
    """A scenario as ``junit.Case`` tells it, each reason an agent or a model gave kept on its line:
    its line breaks written out (``\\n``), as the terminal writes them, so a reason cannot print a
    line that looks like convy's or pytest's own (a forged ``✓ scenario #1``)."""

    def outside(self, text: str, most: int) -> str:
        return Inert(super().outside(text, most)).line()


class ScenarioFailed(Exception):
    """A scenario that did not pass; its text says why, for the developer who reads it."""


class ScenarioTests:
    """The plugin object ``--convy`` registers: it adds the project's scenarios to the collection,
    plays the selected ones once for the session, and decides each item from what was kept.

    It holds the session's state, each part filled once: the project's agents as collected
    (``prepared``) and, from the first item on (``begun``), the runs as they start (``started``)
    and as they were kept (``played``), an agent's at its end, so a Ctrl+C leaves those before.
    """

    MARKERS: ClassVar[str] = "markers"
    # Marks pytest (and pytest-timeout) give a meaning to: a scenario tagged so is not marked so,
    # though -k still finds the tag.
    MEANINGFUL: ClassVar[frozenset[str]] = frozenset(
        {"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings", "timeout"}
    )

    # An option of `convy run` a problem names, at a line's start, and pytest's of the same meaning is --convy-<it>.
    OPTIONS: ClassVar[re.Pattern[str]] = re.compile(r"^--(attempts|trust|max-cost|max-tokens|max-minutes):", re.MULTILINE)

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.asked = Asked(
            project=Path(config.invocation_params.dir) / (config.getoption("convy_project") or config.rootpath),
            agents=tuple(config.getoption("convy_agent")),
            attempts=config.getoption("convy_attempts"),
            trust=config.getoption("convy_trust"),
            budget=Budgeted(
                config.getoption("convy_max_cost"), config.getoption("convy_max_tokens"), config.getoption("convy_max_minutes")
            ),
        )
        self.project = Project(self.asked.project)
        self.prepared: dict[str, Prepared] = {}
        self.reached: tuple[str, ...] = ()  # the agents whose run reached its budget, failing a session that passed
        self.begun = False
        self.started: dict[str, RunSpec] = {}
        self.played: dict[str, KeptRun | UnkeptRun] = {}
        self.nothing = False  # set at the session's end when its scenarios were chosen and none judged
        self.fail_on_skip = False  # the project's fail_on_skip, read at collection: a skipped item fails then

    def configured(self) -> None:
        """Refuse pytest-xdist, register the scenarios' tags as markers, and take part in the session."""
        workers = self.config.getoption("numprocesses", None) or self.config.getoption("dist", "no") != "no"
        if workers or hasattr(self.config, "workerinput"):
            raise pytest.UsageError(
                "--convy plays the scenarios as one run per agent, in one process: run it without "
                "pytest-xdist's -n/--dist (or with -p no:xdist)"
            )
        known = {line.split(":")[0].split("(")[0].strip() for line in self.config.getini(self.MARKERS)}
        scenarios, _ = self.project.sound_scenarios()  # a broken file is a collection error, later
        for tag in sorted({tag for scenario in scenarios for tag in scenario.tags}):
            if self.markable(tag) and tag not in known:
                self.config.addinivalue_line(self.MARKERS, f"{tag}: convy scenarios tagged {tag}")
        self.config.stash[TESTS] = self
        self.config.pluginmanager.register(self, "convy-scenarios")

    def markable(self, tag: str) -> bool:
        """Whether a tag can be a marker: a name ``-m`` reads and the markers setting keeps whole,
        and none pytest gives a meaning to."""
        return (
            tag.replace("-", "_").replace(".", "_").isidentifier()
            and not tag.startswith("_")
            and tag not in self.MEANINGFUL
        )

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(
        self, collector: pytest.Collector
    ) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
        """The session's collection, with the project's scenarios after what it found."""
        report = yield
        match collector:
            case pytest.Session() if report.passed:
                tree = ProjectScenarios.from_parent(collector, name="convy", nodeid="convy", path=self.project.folder)
                report.result.append(tree)
        return report

    def collected(self, parent: ProjectScenarios) -> list[AgentScenarios]:
        """An ``AgentScenarios`` for each agent: every problem of the project raised as one
        ``ConfigurationError``, as ``convy run`` would say it before sending anything. The
        project's code is loaded in the project's folder, as ``convy run`` loads it (``inside``)."""
        with self.inside():
            return self._collected(parent)

    @contextmanager
    def inside(self) -> Iterator[None]:
        """The project's folder as the current one while its code loads and plays, and the folder
        pytest was in again after: ``convy run`` runs a project in its folder, so the project's
        ``.env`` and relative paths (an ``Env``'s, the template's gateway) are read from there,
        wherever pytest was started. A folder that cannot be entered is a ``ConfigurationError``."""
        back = os.getcwd()
        try:
            os.chdir(self.project.folder)
        except OSError as error:
            raise ConfigurationError(f"{self.where(self.project.folder)}: {error.strerror}") from None
        try:
            yield
        finally:
            os.chdir(back)

    def _collected(self, parent: ProjectScenarios) -> list[AgentScenarios]:
        command = self.command()
        try:
            settings = command.overridden(self.project.settings())
        except ConfigurationError as error:  # said of `convy run`'s options: these are pytest's
            raise ConfigurationError(self.OPTIONS.sub(r"--convy-\1:", str(error))) from None
        if settings.receive_traces:  # its agents are loaded here, before a receiver could be given them
            raise ConfigurationError(
                "receive_traces: pytest --convy does not receive the agent's spans; play the scenarios with "
                "convy run to receive them, or set receive_traces = false"
            )
        self.fail_on_skip = settings.fail_on_skip
        scenarios = self.project.scenarios()
        prompt = self.project.prompt(settings)
        nodes: list[AgentScenarios] = []
        for name in self.asked.agents or self.project.agent_names():
            loaded = Loaded(self.project, name)
            agent, models = loaded.parts()
            secrets = loaded.secrets(agent, models)
            # As `convy run` passes over an absent agent (one named in --convy-agent is an error).
            over = command.passed_over(name, agent, secrets)
            absent = over.said() if over is not None else ""
            skipped: dict[str, str] = {}
            match agent:
                case Absent(reason=reason):
                    skipped = {scenario.id: f"the agent {name} is absent: {reason}" for scenario in scenarios}
                case _:  # the checks `convy run` makes before a request: each scenario fills the prompt
                    _, passed = self.project.playable(models, settings, scenarios, Matching(), prompt)
                    skipped = {one.scenario: f"for agent {name}, " + "; ".join(one.reasons) for one in passed}
            self.prepared[name] = Prepared(name, agent, models, secrets, absent)
            node = AgentScenarios.from_parent(parent, name=Inert(name).line())  # a file's name may hold anything
            node.agent = name
            node.chosen = tuple((scenario, secrets.hidden(skipped.get(scenario.id, ""))) for scenario in scenarios)
            nodes.append(node)
        return nodes

    def command(self) -> RunCommand:
        """``convy run`` as the session's options would give it."""
        return RunCommand(
            self.project, self.asked.agents, self.asked.attempts, (), (), self.asked.trust, None, budget=self.asked.budget
        )

    def decided(self, item: ScenarioItem) -> None:
        """Pass, or fail ``item`` saying why, from what its agent's run kept (played first, when
        no item has been decided yet)."""
        if not self.begun:
            self.begun = True  # once, even if the play stops: a stopped play is not played again
            self.watched(item.session)
        match self.played.get(item.agent):
            case UnkeptRun(said=said):
                raise ScenarioFailed(said)
            case KeptRun() as played:
                self.cut_short(played, item.scenario.id)
                case = played.cases.get(item.scenario.id)
                told = case.told() if case is not None else None
                if case is not None and told is not None:
                    _, _, _, lines = told
                    text = XmlText("\n".join(lines), 100_000).lines()
                    raise ScenarioFailed(f"{text}\nreport: {self.where(played.report)}")
            case None:
                raise ScenarioFailed(f"{Inert(item.agent).line()}: no run of this agent was played")

    def cut_short(self, played: KeptRun, scenario: str) -> None:
        """Fail a scenario whose attempts the budget cut short, saying so as ``convy run`` says the
        stop, with what was kept of it and how to play the rest: a run the budget stopped is never
        green (``convy run`` exits 6), and what was kept of the scenario is not what was asked."""
        match played.summary.run.file.status:
            case BudgetStopped(spent=spent):
                stop = Stop(spent)
            case _:
                return
        spec = played.summary.run.file.spec
        kept = len(played.summary.by_scenario().get(scenario, ()))
        course = played.summary.course()
        if course is None:
            if kept >= spec.attempts:
                return
            short = f"{kept} of its {spec.attempts} attempts played"
        else:
            standing = course.by_scenario().get(scenario)
            if standing is not None and standing.stop:
                return  # its rule had stopped it before the budget did
            short = f"{kept} attempt{'s' if kept != 1 else ''} played, {played.summary.stopped().get(scenario, 'budget spent')}"
        raise ScenarioFailed(
            f"run {spec.id} {stop.text()}: {short}\n"
            f"to play the rest: {self.resumed(played.summary, stop)}\nreport: {self.where(played.report)}"
        )

    def watched(self, session: pytest.Session) -> None:
        """The session's plays; under ``-v``, each attempt's line shown as it ends, as ``convy run``
        shows it (through ``cli.console.Shown``, which a slow reader cannot hold up), pytest's capture
        suspended meanwhile so that the lines reach the terminal."""
        if self.config.getoption("verbose") < 1:
            with self.inside():
                self.ran(self.plays(session, None))
            return
        capture = self.config.pluginmanager.getplugin("capturemanager")
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        with capture.global_and_fixture_disabled() if capture is not None else nullcontext():
            if reporter is not None:
                reporter.ensure_newline()  # after the item's name, which -v wrote before it ran
                reporter.flush()
            shown = Shown(sys.stdout)
            with self.inside():
                self.ran(self.plays(session, shown))
            shown.drained()  # not when stopped: Ctrl+C does not wait for the reader

    def ran(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """The coroutine run to its end in an event loop of its own, as ``convy run`` runs a play
        (Ctrl+C cancels it, and the run is kept, marked interrupted). When this thread runs a loop
        already (a plugin runs the session inside one), ``asyncio.run`` cannot nest: it runs in a
        thread of its own, this one waiting for it, and Ctrl+C here cancels it there."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coroutine)
        hosts: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = []

        async def hosted() -> T:
            task = asyncio.current_task()
            if task is not None:
                hosts.append((asyncio.get_running_loop(), task))
            return await coroutine

        with ThreadPoolExecutor(1, thread_name_prefix="convy") as pool:
            done = pool.submit(asyncio.run, hosted())
            try:
                return done.result()
            except KeyboardInterrupt:
                for loop, task in hosts:
                    loop.call_soon_threadsafe(task.cancel)
                with suppress(asyncio.CancelledError):
                    done.result()
                raise

    async def plays(self, session: pytest.Session, shown: Shown | None) -> None:
        """A run for each agent with a selected item, one after another as ``convy run`` plays
        them; each kept and reported as soon as it ends, its attempts shown on ``shown`` if given."""
        chosen: dict[str, list[Scenario]] = {}
        for item in session.items:
            match item:
                case ScenarioItem() if not self.prepared[item.agent].absent:
                    chosen.setdefault(item.agent, []).append(item.scenario)
        settings = self.command().overridden(self.project.settings())
        prompt = self.project.prompt(settings)
        for name, scenarios in chosen.items():
            prepared = self.prepared[name]
            try:
                spec = prepared.secrets.kept(
                    self.project.spec(name, prepared.models, settings, tuple(scenarios), Matching(), prepared.agent)
                )
                if not spec.scenarios:  # every one skipped for a model: nothing to play, no run
                    continue
                # As `convy run` makes it: the budget in force, and, for `attempts = "auto"`, the
                # rounds of its rule around the bench (`RunSpec.player`).
                bench = Bench(
                    prepared.agent, prepared.models, spec.limits, prompt, settings.budget(), spec.judging, spec.user_checks
                )
                self.started[name] = spec
                printed = None
                if shown is not None:
                    where = self.where(self.project.journal(spec).folder)
                    attempts, count = spec.attempts, len(spec.scenarios)
                    each = f"{attempts} attempt{'s' if attempts != 1 else ''}" if spec.adaptive is None else spec.adaptive.said(attempts)
                    shown.line(f"{Inert(name).line()}: {count} scenario{'s' if count != 1 else ''} × {each} → {where}")
                    printed = Printed(shown, Unseen(), 0, spec.trust)
                self.played[name] = await self.play(spec, spec.player(bench), prepared.secrets, printed)
            except DeadService as error:  # a participant never answered: who, what it said, the likely fix
                parts = {"agent": prepared.agent, "user": prepared.models.user, "judge": prepared.models.judge}
                said = [prepared.secrets.hidden(line) for line in Cures(self.project.folder, name, parts).lines(error)]
                self.played[name] = UnkeptRun("\n".join(said))
            except (ConfigurationError, Unwritable, Unplayed) as error:
                said = prepared.secrets.hidden(f"convy: {error}").splitlines()
                self.played[name] = UnkeptRun("\n".join(Inert(line).line() for line in said))

    async def play(self, spec: RunSpec, bench: Player, secrets: Secrets, printed: Printed | None) -> KeptRun:
        journal = self.project.journal(spec)
        if journal.in_use():
            raise RunInUse(f"run {spec.id} is in use by another convy process")
        # Each attempt's trace sent beside the run, as `convy run` sends it (issue 30), when
        # OpenTelemetry's variables name a collector; what goes wrong with it said on the terminal.
        collector = OtlpEndpoint.environ(os.environ)

        def said(line: str) -> None:
            print(line, file=sys.stderr)

        shipped = None
        if collector is not None:
            start = Start(collector, RunContext.of(spec, "in_progress", VERSION))
            shipped = Shipped(printed, journal.folder, start, lambda line: said(Inert(line).line()))
        # Read back unsaid, as ``convy run`` reads it: the session holds each run's summary to its
        # end, and only the report's windows need the dialogues' words (read again from the file).
        try:
            kept = await journal.play(spec, bench, printed if shipped is None else shipped, secrets, back=journal.unsaid)
        finally:
            for line in ("" if shipped is None else shipped.closed()).splitlines():
                said(Inert(line).line())
        summary = Summary(Read(journal.folder, journal.run(), kept.outcomes, kept.broken, False))
        report = self.project.reported(summary)
        self.project.indexed()
        cases = (OnOneLine(*msgspec.structs.astuple(case)) for case in Suite(summary, 0).cases())
        return KeptRun(summary, report, {case.scenario: case for case in cases})

    def where(self, path: Path) -> Path:
        """A path as the developer will find it: from where pytest was started, when it is under it."""
        here = Path(self.config.invocation_params.dir)
        return path.relative_to(here) if path.is_relative_to(here) else path

    def untested(self, session: pytest.Session) -> bool:
        """Whether scenarios were selected and no run judged an attempt of them: nothing was tested."""
        chosen = False
        for item in session.items:
            match item:
                case ScenarioItem():
                    chosen = True
        judged = False
        for played in self.played.values():
            match played:
                case KeptRun(summary=summary):
                    judged = judged or summary.verdict().tested()
                case UnkeptRun():
                    pass
        return chosen and not judged

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """A session whose scenarios were all skipped, or never judged, tested nothing: it ends with
        pytest's own code for that (5), never as a success (issue 24)."""
        if exitstatus == pytest.ExitCode.OK and self.untested(session):
            self.nothing = True
            session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The runs played, each as ``convy run`` sums it up, with the scenarios it skipped and its report."""
        if not self.started and not self.nothing and not any(prepared.absent for prepared in self.prepared.values()):
            return
        terminalreporter.write_sep("-", "convy")
        for name, spec in self.started.items():
            if name not in self.played:  # stopped (Ctrl+C): the run is kept, marked interrupted
                terminalreporter.write_line(
                    f"{Inert(name).line()}: run {spec.id} was stopped; play the rest with: convy resume {spec.id}"
                )
        for name, played in self.played.items():
            match played:
                case KeptRun(summary=summary, report=report):
                    for line in self.summed(name, summary):
                        terminalreporter.write_line(line)
                    terminalreporter.write_line(f"  report: {self.where(report)}")
                    if name in self.reached:
                        terminalreporter.write_line(
                            f"convy: the session fails: the run of {Inert(name).line()} reached its budget (convy run exits 6)"
                        )
                case UnkeptRun(said=said):
                    for line in said.splitlines():  # each line written out already
                        terminalreporter.write_line(f"{Inert(name).line()}: {line}")
        for prepared in self.prepared.values():
            if prepared.absent:
                terminalreporter.write_line(Inert(prepared.secrets.hidden(prepared.absent)).line())
        if self.nothing:
            terminalreporter.write_line("convy: nothing was tested: no attempt of a scenario was judged (exit 5)")

    def summed(self, name: str, summary: Summary) -> list[str]:
        spec = summary.run.file.spec
        statuses = [attempt.status() for attempt in summary.attempts()]
        rate = summary.rate()
        rate_text = "n/a" if rate is None else f"{rate.estimate:.1%} [{rate.low:.1%}, {rate.high:.1%}]"
        return [
            f"{Inert(name).line()}: run {spec.id}: {statuses.count('passed')} passed, {statuses.count('failed')} failed, "
            f"{statuses.count('not_judged')} not judged of {len(statuses)} attempt{'s' if len(statuses) != 1 else ''} · pass rate {rate_text}",
            *self.rounds(summary),
            *(Inert(line).line() for line in Passed(spec.skipped).lines("  ")),
            *self.budgeted(name, summary),
        ]

    def rounds(self, summary: Summary) -> list[str]:
        """For a run of ``attempts = "auto"``, each scenario's attempts and why its rule stopped
        there, as ``convy run`` says them."""
        grouped = summary.by_scenario()
        said = []
        for scenario, why in summary.stopped().items():
            got = len(grouped.get(scenario, ()))
            said.append(f"  {Inert(scenario).line()}: {got} attempt{'s' if got != 1 else ''}, {why}")
        return said

    def budgeted(self, name: str, summary: Summary) -> list[str]:
        """``convy run``'s line on the budget: which one stopped the run, what was spent, and how to
        go on; that a run played every attempt but reached its budget doing so; or, when the run kept
        within one, what it spent of it."""
        spec = summary.run.file.spec
        match summary.run.file.status:
            case BudgetStopped(spent=spent):
                stop = Stop(spent)
                return [f"{Inert(name).line()}: run {spec.id} {stop.text()}; to play the rest: {self.resumed(summary, stop)}"]
        reached = summary.reached()
        if reached:
            return [f"{Inert(name).line()}: run {spec.id} {reached}"]
        allowance = summary.allowance()
        return [f"  {allowance}"] if allowance else []

    @pytest.hookimpl(specname="pytest_sessionfinish")
    def pytest_budget_reached(self, session: pytest.Session, exitstatus: int) -> None:
        """A session whose runs all passed, but one of which reached its budget though it played
        every attempt, fails (1), as ``convy run`` exits 6 for it: a budget reached is never green.
        (A run the budget stopped early fails the items it cut short already.) pytest's
        ``pytest_sessionfinish`` under a name of its own, so that another rule may have one too."""
        if exitstatus != pytest.ExitCode.OK:
            return
        reached = [name for name, played in self.played.items() if isinstance(played, KeptRun) and played.summary.reached()]
        if reached:
            self.reached = tuple(reached)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def resumed(self, summary: Summary, stop: Stop) -> str:
        """The command that plays the rest of a run its budget stopped, with a budget that lets it,
        as ``convy run`` says it."""
        spec = summary.run.file.spec
        left = summary.planned() - len(summary.run.outcomes)
        return f"convy resume {spec.id} {stop.rest(left, spec.limits.starting('agent'), spec.budget, summary.run.outcomes)}"


TESTS = pytest.StashKey[ScenarioTests]()


class ProjectScenarios(pytest.Collector):
    """The project's scenarios: an ``AgentScenarios`` for each agent played. A configuration error
    (a broken scenario file, ``models.py`` or an agent that raises, settings refused) is this
    node's collection error, said as ``convy`` says it, one line for each problem."""

    def collect(self) -> list[AgentScenarios]:
        return self.config.stash[TESTS].collected(self)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        match excinfo.value:
            case ConfigurationError() as error:  # as `convy` says it: every secret of the project hidden
                said = Environment(self.config.stash[TESTS].project.folder).secrets().hidden(str(error))
                return "\n".join(f"convy: {Inert(line).line()}" for line in said.splitlines())
            case _:
                return super().repr_failure(excinfo)


class AgentScenarios(pytest.Collector):
    """One agent's scenarios: an item for each, skipped with the reason when the agent, or a model
    the scenario needs, is absent."""

    agent: str = ""
    chosen: tuple[tuple[Scenario, str], ...] = ()

    def collect(self) -> list[ScenarioItem]:
        tests = self.config.stash[TESTS]
        items: list[ScenarioItem] = []
        for scenario, skipped in self.chosen:
            folder = tests.project.folder / "scenarios"
            files = [folder / f"{scenario.id}{suffix}" for suffix in Scenarios.SUFFIXES]
            name = Inert(scenario.id).line()
            # The id given whole, as pytest reads one back: a variant's values (``[mood=angry]``)
            # are then its parameters, as --lf reads them from the cache, so it finds it again.
            item = ScenarioItem.from_parent(
                self,
                name=name,
                nodeid=f"{self.nodeid}::{name}",
                path=next((file for file in files if file.is_file()), folder),
            )
            item.scenario = scenario
            item.agent = self.agent
            for tag in scenario.tags:
                item.extra_keyword_matches.add(tag)
                if tests.markable(tag):
                    item.add_marker(tag)
            if skipped and tests.fail_on_skip:  # as `convy run` exits 8: the item fails, saying why it was skipped
                item.refused = f"skipped, and fail_on_skip fails a run that skips any: {Inert(skipped).line()}"
            elif skipped:
                item.add_marker(pytest.mark.skip(reason=Inert(skipped).line()))
            items.append(item)
        return items


class ScenarioItem(pytest.Item):
    """One scenario of one agent: passed when every attempt of it the run kept passed."""

    scenario: Scenario
    agent: str
    refused: str = ""  # why a skipped scenario fails under fail_on_skip; "" for one that is played

    def runtest(self) -> None:
        if self.refused:
            raise ScenarioFailed(self.refused)
        self.config.stash[TESTS].decided(self)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        match excinfo.value:
            case ScenarioFailed() as failed:
                return str(failed)
            case _:
                return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        # A line, 0 (the file's first): pytest says where a skipped item is by its file and line.
        return self.path, 0, f"{Inert(self.agent).line()}::{self.name}"
