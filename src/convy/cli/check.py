"""``convy check`` and ``convy run --dry-run``: what a run would play, and every problem found
before anything is sent.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from convy.budget import Budget
from convy.cli.console import Passed, Shown
from convy.cli.run import AgainstPlan, AgainstRun, RunCommand
from convy.collector import OtlpEndpoint
from convy.judge import Models
from convy.loaded import Loaded
from convy.model import Absent
from convy.problems import (
    ConfigurationError,
)
from convy.records import Limits, RunSpec
from convy.runs import Read
from convy.scenario import Scenario
from convy.scenarios import Matching
from convy.secrets import Secrets
from convy.settings import VARIABLES
from convy.slips import Slips
from convy.terminal import Inert
from convy.variants import Value, Variant

if TYPE_CHECKING:
    from convy.settings import Settings

T = TypeVar("T")


class DryRun(msgspec.Struct, frozen=True):
    """``convy check`` and ``convy run --dry-run``: what a run of the command's selection would
    play, or every problem that would stop it. Each part is read by the code the run reads it with,
    which decides its problems; here they are gathered rather than stopping at the first. Nothing
    is sent, and nothing written: no run folder, no index, not even the project's ``__pycache__``."""

    command: RunCommand

    def run(self, shown: Shown, errors: Shown) -> int:
        from convy.settings import ProjectSettings  # as Project.settings: loaded by the commands that play only

        sys.dont_write_bytecode = True  # loading the project's code leaves nothing behind
        project = self.command.project
        matching = Matching(self.command.patterns, self.command.tags)
        problems: list[str] = []
        sourced = ProjectSettings(project.folder).sourced()
        problems.extend(sourced.problems)
        settings = self._gathered(problems, lambda: self.command.overridden(sourced.settings), sourced.settings)
        collector = self._gathered(problems, lambda: OtlpEndpoint.environ(os.environ), None)
        scenarios, broken = project.sound_scenarios(self.command.most_variants)
        problems.extend(broken)
        names, unnamed = (self.command.agents, ()) if self.command.agents else project.agents()
        problems.extend(unnamed)
        versus: AgainstRun | None = None
        base: Read | None = None
        if self.command.against is not None:
            nothing: tuple[AgainstRun | None, Read | None, tuple[str, ...]] = (None, None, ())
            versus, base, names = self._gathered(problems, lambda: self.command.based(settings), nothing)
        absent = Absent("models.py could not be loaded")
        models = Models(absent, absent)
        if sourced.dotenv:  # else the project's code is not run: it reads the .env that was refused
            models = self._gathered(problems, lambda: Loaded(project, "").models(), models)
        else:
            names = ()
        unloaded = models.user is absent  # models.py said its problem: what it would skip is not another
        fits = False  # whether the chosen scenarios fill the simulator prompt: only then is a run planned
        if scenarios or not broken:  # with no sound scenario, that none is chosen says nothing more
            try:
                project.playable(models, settings, scenarios, matching, project.prompt(settings))
                fits = True
            except ConfigurationError as error:
                problems.extend(str(error).splitlines())
        parts: list[Any] = [models]
        passed_over: list[str] = []
        specs: list[RunSpec] = []
        for name in names:
            try:
                agent = Loaded(project, name).agent()
                parts.append(agent)
                over = self.command.passed_over(name, agent, Secrets())
                if over is not None:
                    passed_over.append(f"- {Inert(over.said()).line()}")
                elif fits:
                    spec = project.spec(name, models, settings, scenarios, matching, agent)
                    specs.append(spec if versus is None or base is None else versus.spec(spec, base))
            except ConfigurationError as error:
                problems.extend(str(error).splitlines())
        # What a run would exit 7 for is said, and exits 7 when nothing else is wrong: a check that passes would mislead.
        untested = ""
        if names and len(passed_over) == len(names):
            untested = f"nothing would be tested: every agent is absent ({'; '.join(line[2:] for line in passed_over)})"
        elif (
            names and specs and not unloaded and not broken
            and len(specs) + len(passed_over) == len(names) and not any(spec.scenarios for spec in specs)
        ):  # a broken scenario file is a problem already, and would be tested once mended
            skipped: dict[str, dict[str, None]] = {}
            for one in (one for spec in specs for one in spec.skipped):
                skipped.setdefault(one.scenario, {}).update(dict.fromkeys(one.reasons))
            each = "; ".join(f"{scenario}: {' and '.join(reasons)}" for scenario, reasons in skipped.items())
            untested = f"nothing would be tested: every chosen scenario would be skipped ({each})"
        if untested:
            problems.append(untested)
        if sourced.dotenv:  # its CONVY_* names are said by the settings; the rest, once the code is loaded
            problems.extend(Slips(project.folder, VARIABLES).project())
        secrets = Loaded(project, "").secrets(*parts, every=False)  # no code run beyond what was checked
        if problems:
            said = tuple(dict.fromkeys(secrets.hidden(problem) for problem in problems))
            for problem in said:
                errors.line(f"convy: {problem}")
            errors.line(f"{len(said)} problem{'s' if len(said) != 1 else ''}: nothing was sent, nothing written")
            return 7 if problems == [untested] else 2
        sources = sourced.sources | {
            name: option
            for name, option, given in (
                ("attempts", "-k", self.command.attempts),
                ("trust", "--trust", self.command.trust),
                ("max_not_judged", "--max-not-judged", self.command.max_not_judged),
                ("judge_repeats", "--judge-repeats", self.command.judge_repeats),
                ("fail_under", "--fail-under", self.command.fail_under),
                ("fail_on_skip", "--fail-on-skip", self.command.fail_on_skip),
            )
            if given is not None
        } | self.command.budget.given()
        sources |= {name: "--" + name.replace("_", "-") for name in self.command.adaptive.given()}
        unread = () if self.command.agents else project.unread()  # a parked agent file stops nothing: said
        planned = self._planned(specs, passed_over, base, settings.budget())
        traced = () if collector is None else (
            f"traces: each attempt's sent to {collector.shown()} as it ends (OTLP {', '.join(dict.fromkeys(signal.protocol for signal in collector.signals()))}; docs/traces.md)",
        )
        for line in (*self._settings(settings, sources), *traced, *planned, *(f"note: {note}" for note in unread)):
            shown.line(secrets.hidden(line))
        return 0

    def _gathered(self, problems: list[str], made: Callable[[], T], instead: T) -> T:
        """What ``made`` makes; or, when it is a configuration error, ``instead``, its lines noted."""
        try:
            return made()
        except ConfigurationError as error:
            problems.extend(str(error).splitlines())
            return instead

    def _shown(self, value: Any) -> str:
        """A setting's value as ``convy check`` lists it: the prompt's file unset is convy's own, a
        list its names apart by commas (none when empty)."""
        match value:
            case "":
                return "convy's own"
            case tuple() as names:
                return ", ".join(map(str, names)) or "none"
            case None:  # fail_under unset: every scenario passes every judged attempt
                return "none"
            case _:
                return str(value)

    def _settings(self, settings: Settings, sources: dict[str, str]) -> tuple[str, ...]:
        width = max(len(name) for name in settings.__struct_fields__)
        # Its own fields first (attempts, trust, the share not judged, the prompt's file), then the run's limits.
        names = sorted(settings.__struct_fields__, key=lambda name: name in Limits.__struct_fields__)
        values = {name: getattr(settings, name) for name in names}
        values["min_attempts"] = settings.first_round()  # unset: 5, or max_attempts when lower
        shown = {name: self._shown(value) for name, value in values.items()}
        if not settings.ray:
            shown["ray"] = "none"  # no Ray: this process alone, unless workers are asked
        # 0 is no number of places or requests a minute: it is none set, which a reader of the
        # table would not guess for places (they are not held at 0, nor at 4: they grow).
        uncapped = [who for who, name in Limits.PLACES.items() if not values[name]]
        for who in uncapped:
            shown[Limits.PLACES[who]] = "0 (no cap)"
        for name in ("agent_per_minute", "user_per_minute", "judge_per_minute"):
            if not values[name]:
                shown[name] = "0 (no limit)"
        if not values["traces_port"]:
            shown["traces_port"] = "0 (any free)"  # the system picks one, which the run names
        # Where places with no cap start, as a run starts them: the same for every participant.
        grown = (f"  (no cap: places start at {settings.starting(uncapped[0])} and grow while the service keeps up)",) if uncapped else ()
        return (
            "settings in force:",
            *(f"  {name:<{width}}  {shown[name]:<12}  {sources.get(name, 'default')}" for name in values),
            *grown,
        )

    def _most(self, spec: RunSpec) -> int:
        """The most attempts ``spec`` may play: against a base, what its plan bounds them to."""
        plan = AgainstPlan(spec).plan()
        return len(spec.scenarios) * spec.attempts if plan is None else plan.attempts()

    def _each(self, spec: RunSpec) -> int:
        """The most attempts one scenario of ``spec`` may get."""
        plan = AgainstPlan(spec).plan()
        return spec.attempts if plan is None else max(plan.bounds, default=spec.attempts)

    def _planned(self, specs: list[RunSpec], passed_over: list[str], base: Read | None = None, budget: Budget | None = None) -> tuple[str, ...]:
        lines: list[str] = []
        for spec in specs:
            planned = self._most(spec)
            these = f"{len(spec.scenarios)} scenario{'s' if len(spec.scenarios) != 1 else ''}"
            most = self._each(spec)
            each = f"{most} attempt{'s' if most != 1 else ''}"
            if spec.adaptive is None:
                lines.append(f"{spec.agent}: {these} × {each} = {planned} attempt{'s' if planned != 1 else ''}")
            else:  # spent adaptively: the most is all that is known before the run
                lines.append(
                    f"{spec.agent}: {these} × up to {each}, auto = up to {planned} attempts "
                    f"({spec.adaptive.said(spec.attempts)})"
                )
            against = AgainstPlan(spec)  # what a run against a base may play and spend, as it says before playing
            lines.extend(f"  {line}" for line in (*against.lines(), *(against.spend(base, budget) if base is not None else ())))
            lines.extend(Variants(spec.scenarios).lines("  "))
            judging, judges = spec.judging, spec.models.judges()
            if judges and (len(judges) > 1 or not judging.direct()):
                asked = f"{judging.repeats} time{'s' if judging.repeats != 1 else ''}"
                who = f"its judge ({judges[0]})" if len(judges) == 1 else f"each of its {len(judges)} judges ({', '.join(judges)})"
                kept = (
                    "flagged when it is not a few of the agent's own words" if judging.evidence == "flag"
                    else "required (a few of the agent's own words): a decision without it is not trusted"
                )
                lines.append(f"  each claim asked {asked} of {who}, decided by {judging.panel}; evidence {kept}")
            lines.extend(Passed(spec.skipped).lines("  "))
        lines.extend(passed_over)
        total = sum(self._most(spec) for spec in specs)
        shapes = {(len(spec.scenarios), self._each(spec)) for spec in specs}
        auto = any(spec.adaptive is not None for spec in specs)
        upto = "up to " if auto else ""
        if len(shapes) == 1:
            (scenarios, attempts), = shapes
            lines.append(
                f"would run {len(specs)} agent{'s' if len(specs) != 1 else ''} × {scenarios} scenario{'s' if scenarios != 1 else ''} × "
                f"{upto}{attempts} attempt{'s' if attempts != 1 else ''}{', auto' if auto else ''} = {upto}{total} "
                f"attempt{'s' if total != 1 else ''}; nothing was sent, nothing written"
            )
        else:
            lines.append(f"would run {upto}{total} attempts of {len(specs)} agents; nothing was sent, nothing written")
        return tuple(lines)


class Variants(msgspec.Struct, frozen=True):
    """The variants a run plays of each scenario with a matrix, as ``convy check`` and
    ``--dry-run`` say them: how many, and over which keys."""

    scenarios: tuple[Scenario, ...]

    def lines(self, indent: str) -> tuple[str, ...]:
        made: dict[str, list[Variant]] = {}
        for scenario in self.scenarios:
            if scenario.variant is not None:
                made.setdefault(scenario.variant.of, []).append(scenario.variant)
        lines: list[str] = []
        for base, variants in made.items():
            keys: dict[str, set[str]] = {}
            for variant in variants:
                for key, value in variant.values.items():
                    keys.setdefault(key, set()).add(Value(value).text())
            said = " × ".join(f"{len(values)} {key}" for key, values in keys.items())
            lines.append(Inert(f"{indent}{base}: {len(variants)} variant{'s' if len(variants) != 1 else ''} ({said})").line())
        return tuple(lines)
