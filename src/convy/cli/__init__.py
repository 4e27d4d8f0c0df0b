"""The ``convy`` command: this package alone prints and picks the exit code, and ``main`` runs a command.

The exit codes (docs/results.md's "Results and exit codes" is the same table):

    0    at least one attempt judged, every attempt judged (or those not judged within
         --max-not-judged), and the pass rule met: every scenario passed every judged attempt, or
         what fail_under accepts (per run: the mean pass rate; per scenario: its own share);
         for ``convy compare``, no real drop
    1    some attempt failed by the agent (it raised, broke off or ran out of time); also: a run
         stopped because its folder refused a write (a full disk, a file-size limit), or a spread
         run stopped because its workers kept dying (``WorkersLost``: kept, resumable), or a
         finished run's report, or the --junit or --summary file, could not be written
    2    a configuration error, or a folder convy must write refused it: nothing was sent;
         also: ``convy check`` or ``convy run --dry-run`` found problems, one line each (0: none,
         and what would run was said), and neither sends nor writes anything; also: a run stopped
         because the project's code cancelled the task it runs in (attempts ended unrecorded:
         ``Unplayed``), kept and marked interrupted; also: a run stopped because a participant
         never answered and its service refused it for good (``vital.DeadService``: the key
         refused, no such URL or model, nothing listening), with the likely fix; no other agent
         of the command is played after a run that exits 2
    3    the pass rule was not met: a scenario failed a judged attempt (with no fail_under), fell
         below its own fail_under, or the mean pass rate is below the run's fail_under
         (changed: with no --fail-under this was 0)
    4    ``convy compare --fail-on-regression``: the candidate's pass rate really dropped
         (changed: this was 3, the code of --fail-under)
    5    more attempts not judged than --max-not-judged allows, by default any one (changed: this
         was 1, the code of an agent failure)
    6    a run stopped by its budget (--max-cost, --max-tokens, --max-minutes): no attempt was
         started that would likely cross it, those under way were kept (also: a run that played
         every attempt but reached or crossed its budget doing so); ``convy resume`` with a larger
         budget plays the rest
    7    nothing was tested: no attempt was judged (every chosen scenario skipped for a missing
         model, every agent skipped as absent, every attempt not judged under --max-not-judged 1); for ``convy compare
         --fail-on-regression``, the candidate has no judged attempt; for ``convy check`` and
         ``run --dry-run``, nothing would be tested and nothing else is wrong. A run its budget stopped
         before any attempt exits 6, and says that nothing was tested; a pattern or tag that matches no
         scenario is a mistake refused with the nearest names (2), before anything is played
    8    a scenario, or an absent agent, was skipped and --fail-on-skip (fail_on_skip) fails a run for it
    9    ``convy compare --fail-on-regression``: the pair is not comparable (the runs' simulated
         users differ, or no scenario was judged in both), so no regression can be ruled out
    130  interrupted (Ctrl+C): the run is kept, and ``convy resume`` plays the rest
    143  terminated (SIGTERM): as Ctrl+C

When several apply, to one run or to the runs of a command's agents, the first in this order wins
(``Worst``): 130, 143, 2, 6, 1, 5, 7, 9, 8, 4, 3. Being stopped comes first: the rest was not
decided. Then a project convy cannot use, and a run a budget left unfinished, whose numbers are
partial. Then the agent failing, which needs no judge to see; then too few attempts judged, on
which a pass rate decides nothing; then nothing tested, and a pair that cannot be compared; then
scenarios skipped, which leave the pass rate about less than was asked; last the gates on the
pass rate, which mean something only when all else holds (a regression and the pass rule are
never met in one command).

What the command prints never holds up a run: a line the reader is not ready for waits in memory
(``Shown``), and only at the end does the command wait for its reader.
"""

from __future__ import annotations

import gc
import io
import os
import shlex
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    """Run the convy command; returns (and, from the console script, exits with) its code."""
    # The commands are imported here, not with the package: pytest imports this package in every
    # session of an environment where convy is installed, to load its plugin (``pytest_plugin``),
    # which must cost a session without --convy nothing of the command's (some 0.1 s).
    from convy.cli.check import DryRun
    from convy.cli.console import Shown
    from convy.cli.init import InitCommand, Workflow
    from convy.cli.labels import LabelsCommand
    from convy.cli.outputs import Outputs
    from convy.cli.parser import AutoAttempts, Budgeted, Whereabouts, command_line
    from convy.cli.rejudge import RejudgeCommand
    from convy.cli.reports import CompareCommand, ExportCommand, ReportCommand
    from convy.cli.run import ResumeCommand, RunCommand, SmokeCommand, Spreading
    from convy.holders import Environment
    from convy.problems import ConfigurationError, Unwritable
    from convy.project import Project

    # The command owns its process, so it sets the collector for the work it does: what was loaded
    # to start is never garbage, and the records of attempts and pages cannot form cycles
    # (gc=False), so the collector need not walk them on every 700 allocations. A run's event loop
    # makes most of the garbage, tasks and futures freed as it goes: collected a tenth as often,
    # it cost 0.12 s of a 2.0 s run of 3,000 fake attempts (bench/harness.py) against 0.44 s.
    # With 10,000 conversations at once, each of them holds its coroutines, futures and context
    # for the second its agent takes: what a young collection walks is mostly alive, and walking
    # it every 10,000 allocations took 2.0-2.3 CPU-s of an 11 s play; every 100,000, 0.7-0.8 s
    # (bench/whole.py's many case). Only cycles wait for it: the rest is freed as it goes.
    gc.freeze()
    gc.set_threshold(100_000, 10, 10)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(encoding="utf-8", errors="replace")
    shown = Shown(sys.stdout)
    errors = Shown(sys.stderr)
    parsed = command_line().parse_args(argv)
    project = Project(parsed.project.resolve())
    # A file named on the command line is where the user is, not in the project convy moves to.
    here = Path.cwd()
    named = {name: getattr(parsed, name, None) for name in ("junit", "summary")}
    outputs = Outputs(here, **{name: None if path is None else here / path for name, path in named.items()})
    if parsed.command != "init":
        try:
            os.chdir(project.folder)  # a project's .env and relative paths are read from its folder
        except OSError as error:
            errors.line(f"convy: {parsed.project}: {error.strerror}")
            return 2
    started = time.monotonic()
    code = 0
    try:
        try:
            outputs.refused()
            inside = Whereabouts(project, parsed.command, parsed.project / parsed.folder if parsed.command == "init" and parsed.ci is None else None).above()
            if inside is not None:  # started in a folder of the project, scenarios/ say: said with the way there
                there = shlex.quote(os.path.relpath(inside, here))
                words = list(sys.argv[1:] if argv is None else argv)
                while words and words[0] in ("-C", "--project"):  # the folder given, said anew as the project's
                    del words[:2]
                given = shlex.join(word for word in words if not word.startswith(("-C", "--project=")))
                raise ConfigurationError(
                    f"{project.folder.relative_to(inside).as_posix()}/ is a folder of the project in {there}, not a project: "
                    f"cd {there} && convy {given}, or convy -C {there} {given}"
                )
            match parsed.command:
                case "init" if parsed.ci is not None:
                    code = Workflow(parsed.project / parsed.folder, parsed.ci).run(shown)
                case "init":
                    code = InitCommand(parsed.project / parsed.folder).run(shown)
                case "check":
                    checked = RunCommand(project, (), None, (), (), None, None, most_variants=parsed.max_variants)
                    code = DryRun(checked).run(shown, errors)
                case "run" if parsed.smoke:
                    code = SmokeCommand(project, project.agents_called(parsed.agents, here)).run(shown, errors)
                case "run":
                    command = RunCommand(
                        project,
                        project.agents_called(parsed.agents, here),
                        parsed.attempts,
                        tuple(parsed.scenarios),
                        tuple(parsed.tag),
                        parsed.trust,
                        parsed.fail_under,
                        outputs,
                        parsed.max_not_judged,
                        Budgeted(parsed.max_cost, parsed.max_tokens, parsed.max_minutes),
                        parsed.judge_repeats,
                        parsed.max_variants,
                        Spreading(parsed.workers, parsed.ray),
                        AutoAttempts(parsed.min_attempts, parsed.max_attempts, parsed.target_width),
                        parsed.against,
                        fail_on_skip=parsed.fail_on_skip,
                        name=parsed.name,
                    )
                    code = (DryRun(command) if parsed.dry_run else command).run(shown, errors)
                case "report":
                    code = ReportCommand(project, tuple(parsed.runs), outputs, parsed.live, parsed.parent).run(shown, errors)
                case "compare":
                    code = CompareCommand(project, parsed.base, parsed.candidate, parsed.fail_on_regression, outputs).run(shown, errors)
                case "labels":
                    # The file is where the user is, not in the project convy moved to.
                    file = here / parsed.file if parsed.labels == "add" else None
                    code = LabelsCommand(project, parsed.run, file).run(shown, errors)
                case "export":
                    code = ExportCommand(project, tuple(parsed.runs), parsed.format).run(shown, errors)
                case "rejudge":
                    code = RejudgeCommand(
                        project,
                        parsed.run,
                        parsed.judge,
                        tuple(parsed.scenarios),
                        tuple(parsed.tag),
                        parsed.trust,
                        parsed.fail_under,
                        parsed.max_not_judged,
                        Budgeted(parsed.max_cost, parsed.max_tokens, parsed.max_minutes),
                        parsed.judge_repeats,
                        outputs,
                        fail_on_skip=parsed.fail_on_skip,
                    ).run(shown, errors)
                case "resume":
                    code = ResumeCommand(
                        project,
                        parsed.run,
                        parsed.fail_under,
                        parsed.max_not_judged,
                        Budgeted(parsed.max_cost, parsed.max_tokens, parsed.max_minutes),
                        Spreading(parsed.workers, parsed.ray),
                        outputs,
                        fail_on_skip=parsed.fail_on_skip,
                        old_scenarios=parsed.old_scenarios,
                    ).run(shown, errors)
        except ConfigurationError as error:  # one line for each problem it holds
            for line in Environment(project.folder).secrets().hidden(str(error)).splitlines():
                errors.line(f"convy: {line}")
            code = 2
        except Unwritable as error:
            where = error.path.relative_to(project.folder) if error.path.is_relative_to(project.folder) else error.path
            errors.line(f"convy: {where}: cannot be written: {error.reason}")
            code = 2
        except KeyboardInterrupt:
            errors.line(f"interrupted after {time.monotonic() - started:.0f} s")
            code = 130
        if code in (130, 143):  # asked to stop: what a reader cannot take now is left out
            errors.sent()
            shown.sent()
        else:  # the end: wait for the readers, as any command does
            errors.drained()
            shown.drained()
    except KeyboardInterrupt:  # Ctrl+C while waiting for a reader who is not reading
        return 130 if code == 0 else code
    return code
