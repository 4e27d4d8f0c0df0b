"""The command line: one parser, the options that run, resume and rejudge share declared once, and
the arguments as a record.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from convy.budget import Budget
from convy.problems import (
    ConfigurationError,
)
from convy.project import VERSION, Project
from convy.scenario import Scenario
from convy.settings import LOCAL
from convy.spelling import Spelling

if TYPE_CHECKING:
    from convy.settings import Settings


class Budgeted(msgspec.Struct, frozen=True):
    """The budget's options of ``convy run`` and ``convy resume`` (``--max-cost``, ``--max-tokens``,
    ``--max-minutes``), each over its setting when given."""

    max_cost: float | None = None
    max_tokens: int | None = None
    max_minutes: float | None = None

    OPTIONS: ClassVar[tuple[tuple[str, str, Any, str], ...]] = (
        ("max_cost", "USD", float, "stop starting attempts once the run has cost this much, in US dollars (default: max_cost, else none)"),
        ("max_tokens", "N", int, "stop starting attempts once the run has taken this many tokens (default: max_tokens, else none)"),
        ("max_minutes", "M", float, "stop starting attempts after this many minutes of this command's play (default: max_minutes, else none)"),
    )

    def over(self, settings: Settings, changes: dict[str, Any] | None = None) -> Settings:
        """``settings`` with ``changes`` and the options given over them."""
        changes = dict(changes or {})
        for name in ("max_cost", "max_tokens", "max_minutes"):
            if getattr(self, name) is not None:
                changes[name] = getattr(self, name)
        try:
            return msgspec.structs.replace(settings, **changes)
        except ValueError as error:
            field, _, problem = str(error).partition(":")
            raise ConfigurationError(f"--{field.replace('_', '-')}:{problem}") from None

    def given(self) -> dict[str, str]:
        """The options given, by the setting each is over."""
        return {name: "--" + name.replace("_", "-") for name in self.__struct_fields__ if getattr(self, name) is not None}

    def resumed(self, kept: Budget, settings: Settings) -> Budget:
        """The budget a resumed run plays within: each limit as given to ``convy resume``, else as
        the run kept it in run.json (the budget its last play was given, from wherever it came),
        else the project's setting now (``settings``, with the options over it)."""
        now = settings.budget() or Budget()
        return Budget(
            cost=self.max_cost if self.max_cost is not None else kept.cost or now.cost,
            tokens=self.max_tokens if self.max_tokens is not None else kept.tokens or now.tokens,
            minutes=self.max_minutes if self.max_minutes is not None else kept.minutes or now.minutes,
        )


class AutoAttempts(msgspec.Struct, frozen=True):
    """``--min-attempts``, ``--max-attempts`` and ``--target-width`` of ``convy run``: how a run of
    ``--attempts auto`` spends its attempts, each over its setting when given."""

    min_attempts: int | None = None
    max_attempts: int | None = None
    target_width: float | None = None

    def given(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__struct_fields__ if getattr(self, name) is not None}


class Fraction(msgspec.Struct, frozen=True):
    """A rate given on the command line: ``0.8`` or ``80%``."""

    text: str

    def value(self) -> float:
        text = self.text.strip()
        try:
            number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{self.text!r} is not a number from 0 to 1 (or a percentage)") from None
        if not 0.0 <= number <= 1.0:
            raise argparse.ArgumentTypeError(f"{self.text!r} is not between 0 and 1 (or 0% and 100%)")
        return number


class AttemptsGiven(msgspec.Struct, frozen=True):
    """Attempts per scenario given on the command line: a whole number, or ``auto`` (spent
    adaptively, ``adaptive.py``). Any other text is kept as it is, for the settings to refuse as
    they refuse 0: ``--attempts: must be a whole number of at least 1, or auto``, in one line."""

    text: str

    def value(self) -> int | str:
        text = self.text.strip()
        try:
            return int(text)
        except ValueError:
            return text


class Help(argparse.HelpFormatter):
    """The layout of ``--help``, as wide as the terminal. argparse finds the width with shutil
    unless it is given one, and makes a formatter for every argument added: importing shutil (and
    the compression modules it loads) took about a third of building the parser, on every command.
    The width is found here as shutil finds it: COLUMNS, else stdout's terminal, else 80."""

    def __init__(self, prog: str) -> None:
        try:
            columns = int(os.environ.get("COLUMNS", ""))
        except ValueError:
            columns = 0
        if columns <= 0:
            try:
                columns = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 0
            except (ValueError, OSError):  # not a terminal, or closed
                columns = 0
        super().__init__(prog, width=(columns or 80) - 2)


class Parser(argparse.ArgumentParser):
    """An argument parser whose help is laid out by ``Help``: the commands' parsers too. An option
    it does not know is said by the command's parser with the option meant (``--fail-on-regresion``:
    did you mean --fail-on-regression?) or the commands that take it."""

    def __init__(self, **options: Any) -> None:
        super().__init__(formatter_class=Help, **options)

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = self.parse_known_args(args, namespace)
        if not extras:
            return parsed
        commands = next((action for action in self._actions if isinstance(action, argparse._SubParsersAction)), None)
        command = getattr(parsed, "command", None)
        parser = commands.choices.get(command, self) if commands is not None and command else self
        own = [name for action in parser._actions for name in action.option_strings if name.startswith("--")]
        said: list[str] = []
        unknown: list[str] = []
        for extra in extras:
            option = extra.split("=", 1)[0]
            near = Spelling(frozenset(name.upper() for name in own)).meant(option) if option.startswith("--") else ()
            others = sorted(
                name
                for name, other in (commands.choices.items() if commands is not None else ())
                if other is not parser and any(option in action.option_strings for action in other._actions)
            )
            if near:
                said.append(f"{option}: no such option; did you mean {near[0].lower()}?")
            elif others and command and option.startswith("-"):
                said.append(f"{option} is an option of convy {' and convy '.join(others)}, not of convy {command}")
            else:
                unknown.append(extra)
        parser.error("; ".join([*said, *([f"unrecognized arguments: {' '.join(unknown)}"] if unknown else [])]))


def _rate(text: str) -> float:
    return Fraction(text).value()


class _Defaults(msgspec.Struct, frozen=True):
    """Where a command's rules come from when their options are not given, as its help says."""

    fail_under: str
    fail_on_skip: str


_SETTINGS_RULES = _Defaults("fail_under, else every scenario passes every judged attempt", "fail_on_skip")  # run, rejudge
_RUNS_RULES = _Defaults("the run's own rule", "the run's own rule")  # resume: the rules its run was played to


def command_line() -> argparse.ArgumentParser:
    """The command line's parser: every command and its options."""
    parser = Parser(prog="convy", description="Test conversational AI agents with scenarios.")
    parser.add_argument("--version", action="version", version=f"convy {VERSION}")
    parser.add_argument("-C", "--project", type=Path, default=Path("."), help="the project folder (default: here)")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    init = commands.add_parser("init", help="create a project from the template")
    init.add_argument("folder", nargs="?", type=Path, default=Path("."))
    init.add_argument(
        "--ci", choices=("github",), help="only write the CI workflow for this system into the project (see docs/ci.md)"
    )
    run = commands.add_parser("run", help="play the scenarios against agents")
    run.add_argument("agents", nargs="*", help="agents to run (default: every file in agents/)")
    run.add_argument(
        "-k",
        "--attempts",
        type=lambda text: AttemptsGiven(text).value(),
        metavar="N|auto",
        help="attempts per scenario, or auto: --min-attempts each, then more where the pass rate is still uncertain",
    )
    run.add_argument("--min-attempts", type=int, metavar="N", help="with --attempts auto: each scenario's first round (default: min_attempts, else 5)")
    run.add_argument("--max-attempts", type=int, metavar="N", help="with --attempts auto: the most a scenario gets (default: max_attempts, else 60)")
    run.add_argument(
        "--target-width",
        type=float,
        metavar="W",
        help="with --attempts auto: a scenario stops once its 95%% interval is at most W wide (default: target_width, else 0.2)",
    )
    run.add_argument(
        "--against",
        metavar="BASE_RUN",
        help="with --attempts auto: play until the comparison with this finished run of the same agent is decided "
        "(an id or a unique part; --max-attempts is the most per scenario)",
    )
    run.add_argument("--name", metavar="TEXT", help='what to call the run (e.g. "prompt B"): shown on its pages, in summaries and tables')
    _chosen(run, "play")
    _judging(run, "")
    _rules(run, _SETTINGS_RULES)
    _variants(run)
    _budget(run)
    _spread(run)
    _outputs(run, "the runs")
    only = run.add_mutually_exclusive_group()
    only.add_argument(
        "--smoke", action="store_true", help="only check the connection: a short scripted dialogue, no model, no run"
    )
    only.add_argument(
        "--dry-run", action="store_true", help="say what would run, or every problem that stops it; nothing sent or written"
    )
    check = commands.add_parser("check", help="load the whole project: every problem at once, or what would run (exit 2, 7 when nothing would be tested, or 0)")
    _variants(check)
    report = commands.add_parser("report", help="rebuild the reports of runs and the index")
    report.add_argument("runs", nargs="*", help="run ids or unique parts (default: every run)")
    report.add_argument(
        "--junit", type=Path, metavar="FILE", help="also write the runs named as JUnit XML, a suite per run"
    )
    report.add_argument("--summary", type=Path, metavar="FILE", help="also write the runs named as a Markdown summary")
    report.add_argument("--live", type=float, metavar="SECONDS", help=argparse.SUPPRESS)  # live.LiveReport's child
    report.add_argument("--parent", type=int, metavar="PID", help=argparse.SUPPRESS)  # the convy run it is tied to
    compare = commands.add_parser("compare", help="compare two runs: real change or noise?")
    compare.add_argument("base", help="the run before (id or a unique part)")
    compare.add_argument("candidate", help="the run after (id or a unique part)")
    compare.add_argument("--fail-on-regression", action="store_true", help="exit 4 when the pass rate really dropped (by the anytime-valid verdict for a run played against its base); 7 when the candidate has no judged attempt; 9 when the runs are not comparable")
    compare.add_argument("--summary", type=Path, metavar="FILE", help="also write the comparison as a Markdown summary")
    export = commands.add_parser("export", help="write the runs' tables (or, with --format otlp, their OpenTelemetry traces) to results/export/")
    export.add_argument("runs", nargs="*", help="run ids or unique parts (default: every run)")
    export.add_argument("--format", choices=("csv", "jsonl", "otlp"), default="csv", help="csv or jsonl: the tables; otlp: each attempt's trace as OTLP JSON (otlp-traces.jsonl, otlp-logs.jsonl)")
    labels = commands.add_parser("labels", help="keep people's labels of a run's decisions, and see how the judge agrees")
    labelled = labels.add_subparsers(dest="labels", required=True, parser_class=Parser)
    add = labelled.add_parser("add", help="keep a labels file the report's window downloaded in the run's folder")
    add.add_argument("run", help="the run's id, or a unique part of it")
    add.add_argument("file", type=Path, help="the labels file (convy-labels-….json)")
    show = labelled.add_parser("show", help="how the run's decisions agree with its labels")
    show.add_argument("run", help="the run's id, or a unique part of it")
    resume = commands.add_parser("resume", help="play what an interrupted run lacks")
    resume.add_argument("run", help="the run's id, or a unique part of it")
    _rules(resume, _RUNS_RULES)
    resume.add_argument(
        "--old-scenarios", action="store_true", help="play the copy the run kept of a scenario edited or removed since it started (refused without)"
    )
    _budget(resume)
    _spread(resume)
    _outputs(resume, "the whole run")
    rejudge = commands.add_parser("rejudge", help="decide a run's recorded dialogues again: no request to the agent or user")
    rejudge.add_argument("run", help="the run's id, or a unique part of it")
    rejudge.add_argument("--judge", metavar="NAME", help="the judge: a name in models.py's judges, or a model on the judge's service")
    _chosen(rejudge, "re-judge")
    _judging(rejudge, " (default: the run's)")
    _rules(rejudge, _SETTINGS_RULES)
    _budget(rejudge)
    _outputs(rejudge, "the new run")
    # -C after the command (convy check -C proj) means what it means before it: each command
    # takes it too, leaving the folder given before the command when it is not given again.
    for command in commands.choices.values():
        command.add_argument("-C", "--project", type=Path, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return parser


# The options run, resume and rejudge share, each declared here once; what a command says
# differently (the verb, where a default comes from) is given by the command.
def _chosen(command: argparse.ArgumentParser, verb: str) -> None:
    # which scenarios run and rejudge play: ``verb`` is what the command does with them
    command.add_argument("--scenarios", nargs="+", action="extend", default=[], metavar="GLOB", help=f"scenario ids or paths to {verb}")
    command.add_argument("--tag", nargs="+", action="extend", default=[], metavar="TAG", help=f"{verb} scenarios with any of these tags")


def _judging(command: argparse.ArgumentParser, trusted: str) -> None:
    # how run and rejudge decide: ``trusted`` says where --trust's default comes from, if anywhere
    command.add_argument("--trust", type=_rate, help=f"decisions less confident than this are not trusted{trusted}")
    command.add_argument(
        "--judge-repeats",
        type=int,
        metavar="K",
        help="ask each judge about each claim K times (1-15) and decide by majority (default: judge_repeats, else 1)",
    )


def _rules(command: argparse.ArgumentParser, defaults: _Defaults) -> None:
    # what the run, resumed or re-judged, is held to; ``defaults`` says where each rule comes from when not given
    command.add_argument("--fail-under", type=_rate, help=f"accept a mean pass rate at or above this (default: {defaults.fail_under}; exit 3 when not met)")
    command.add_argument("--fail-on-skip", action="store_true", default=None, help=f"exit 8 when a scenario was skipped (default: {defaults.fail_on_skip})")
    command.add_argument(
        "--max-not-judged", type=_rate, metavar="SHARE", help="exit 5 when more attempts than this share are not judged (default: max_not_judged, else 0)"
    )


def _variants(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--max-variants",
        type=int,
        metavar="N",
        help=f"play a scenario's matrix of up to N variants (default: {Scenario.MOST_VARIANTS})",
    )


def _spread(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--workers", type=int, metavar="N", help="play the run in N worker processes, on Ray (default: workers, else this process alone)"
    )
    command.add_argument(
        "--ray",
        nargs="?",
        const=LOCAL,
        metavar="ADDRESS",
        help="play the run on a Ray cluster: auto, ray://HOST:PORT, HOST:PORT, or none to start one here (default: ray)",
    )


def _outputs(command: argparse.ArgumentParser, what: str) -> None:
    # --junit and --summary of a command that plays runs (run, resume, rejudge): ``what`` it writes
    command.add_argument("--junit", type=Path, metavar="FILE", help=f"also write {what} as JUnit XML, for CI")
    command.add_argument("--summary", type=Path, metavar="FILE", help=f"also write {what} as a Markdown summary, for a pull request")


def _budget(command: argparse.ArgumentParser) -> None:
    # The budget's options, declared once in Budgeted for run and resume (exit 6 when one stops the run).
    for name, metavar, kind, said in Budgeted.OPTIONS:
        command.add_argument("--" + name.replace("_", "-"), type=kind, metavar=metavar, help=said)


class Whereabouts(msgspec.Struct, frozen=True):
    """Where a command was started, against the project it is meant for: a command started in a
    folder of a project (``scenarios/``, ``results/bot/<id>/``) is told the project above."""

    project: Project
    command: str
    made: Path | None  # the folder ``convy init`` would make, or None

    def above(self) -> Path | None:
        """The project the command was started inside of, when it should be run there."""
        match self.command:
            case "init":
                # A project made in scenarios/ (convy init demo there, or convy init) would be read by the project around it.
                if self.made is None:
                    return None
                made = self.made.resolve()
                return Project(made.parent).above() or (Project(made).above() if made.is_dir() else None)
            case "report" | "compare" | "export" | "labels":
                # These read results/ alone: a folder holding one (runs copied from CI) is theirs.
                return None if (self.project.folder / "results").is_dir() else self.project.above()
            case _:
                return self.project.above()
