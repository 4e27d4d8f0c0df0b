"""A recorded run judged again: its dialogues decided anew, with no request to the agent or the
simulated user (``convy rejudge RUN``).

``Rejudge`` makes the spec of the new run: of RUN's agent, in a folder of its own, with RUN's
scenarios as the project's scenario files say them *now* (their current claims and checks), its
attempts, and ``origin`` naming the run whose dialogues it decides. ``Rejudging`` plays it: where a
``Bench`` opens a conversation, it reads the recorded attempt from the origin's ``attempts.jsonl``
(line by line, as the judge's places free up) and has the scenario decide it again
(``Scenario.rejudged``), through the judge as a played run asks it (``RunJudge``: its places, its
patience with a busy service, ``Checked``). It plays through ``RunJournal.play`` as a run does, so
``run.lock``, the appended lines, an interruption and ``convy resume`` are a run's own.

``JudgeChoice`` picks the judge: the project's, or one named with ``--judge``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Container, Iterable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from convy.budget import Budget, BudgetedJournal, Earlier, Spending
from convy.judge import ChatJudge, Judge, Judging, Models, RunJudge
from convy.model import Absent, OpenAiModel
from convy.outcome import Outcome
from convy.plan import Journal, Playlist
from convy.problems import ConfigurationError, DialoguesLost, Unplayed
from convy.project import VERSION, Project
from convy.prompt import Prompt
from convy.quota import Services
from convy.records import Complete, Fingerprints, Limits, Origin, RunId, RunSpec, Skipped
from convy.scenario import Scenario
from convy.scenarios import Matching
from convy.storage import RunDamaged, RunInUse, RunJournal
from convy.vital import Vigil

if TYPE_CHECKING:
    from convy.settings import Settings


class JudgeChoice(msgspec.Struct, frozen=True):
    """The judge a re-judged run asks, by the name given with ``--judge`` (``None``: the project's).

    A name is looked for, in this order: a key of the ``judges = {"name": judge, ...}`` mapping
    ``models.py`` may define; the name of the project's judge or of one of those judges (so
    ``convy resume`` finds again the judge a run names in its ``run.json``); else, when the
    project's judge is a ``ChatJudge`` on an ``OpenAiModel``, the same service and instructions
    with the model of that name there. Anything else is a configuration error."""

    named: str | None = None

    def judge(self, models: Models, judges: dict[str, Any]) -> Judge | Absent:
        project = models.judge
        if self.named is None:
            return project
        if self.named in judges:
            return judges[self.named]
        for one in (project, *judges.values()):
            if getattr(one, "name", None) == self.named:
                return one
        match project:
            case ChatJudge(model=OpenAiModel() as model):
                return msgspec.structs.replace(project, model=msgspec.structs.replace(model, name=self.named))
        listed = f" (models.py names {', '.join(sorted(judges))})" if judges else ""
        raise ConfigurationError(
            f"--judge {self.named}: no such judge{listed}; name one in models.py as "
            'judges = {"name": ChatJudge(...)}, or give the project a ChatJudge on an OpenAiModel, '
            "whose service is then asked for the model of that name"
        )


class Rejudge(msgspec.Struct, frozen=True):
    """A new run that decides the recorded dialogues of ``source`` again: its scenarios those of
    the source that ``matching`` chooses, as the project's scenario files say them now."""

    project: Project
    source: RunJournal
    matching: Matching = Matching()
    trust: float | None = None

    def origin(self) -> tuple[RunSpec, RunJournal]:
        """The source's spec, and the folder whose dialogues it holds: its own, or, for a run
        re-judged already, the one it was re-judged from (the dialogues are the same). Refused
        unless the source is finished, no process plays it, and the dialogues' run can be read."""
        file = self.source.run()  # a missing or damaged run.json stops here
        spec = file.spec
        if self.project.journal(spec).folder != self.source.folder:
            raise RunDamaged(
                f"{self.source.folder}/run.json: spec.agent: must be the name of the folder the run is in, "
                f"{self.source.folder.parent.name}"
            )
        if self.source.in_use():
            raise RunInUse(f"run {spec.id} is in use by another convy process: re-judge it once it has ended")
        match file.status:
            case Complete():
                pass
            case _:
                raise ConfigurationError(
                    f"cannot re-judge {spec.id}: it is not finished (some of its attempts were never played); "
                    f"convy resume {spec.id} first"
                )
        if spec.adaptive is not None:
            # TODO: a re-judged run of an adaptive one would plan the attempts its source kept, not its most.
            raise ConfigurationError(f"cannot re-judge {spec.id}: it spent its attempts adaptively, which re-judging does not follow yet")
        if spec.origin is None:
            return spec, self.source
        dialogues = RunJournal(self.project.results() / spec.origin.agent / spec.origin.run)
        SourceRun(spec.id, dialogues).checked()  # its run.json must be there and sound: the dialogues are read from its folder
        if dialogues.in_use():
            raise RunInUse(f"run {spec.origin.run}, whose dialogues {spec.id} holds, is in use by another convy process")
        return spec, dialogues

    def spec(self, judge: Judge | Absent, settings: Settings) -> RunSpec:
        """The new run: the source's agent, attempts, turn and time limits and user model; the
        judge's places, pace and patience from the ``settings``; the source's trust unless one was
        given; the fingerprints of the scenario files and ``models.py`` now, and of the source's
        agent and simulator prompt (the dialogues' own). A scenario of the source the project no
        longer has is skipped, and so is one with claims while the judge is absent."""
        source, dialogues = self.origin()
        # The source's variants, however many it played (its --max-variants is not kept).
        now = {scenario.id: scenario for scenario in self.project.scenarios(RunSpec.MOST_ATTEMPTS)}
        skipped: list[Skipped] = []
        kept: list[Scenario] = []
        for was in source.scenarios:
            if was.id not in now:
                skipped.append(Skipped(was.id, ("no longer in the project's scenarios: its dialogues are not re-judged",)))
            else:
                kept.append(now[was.id])
        chosen = self.matching.chosen(tuple(kept))
        if not chosen or self.matching.unmatched(tuple(kept)):  # each pattern and tag must choose something
            if kept:  # with the nearest ids, or the tags there are
                raise ConfigurationError(f"run {source.id}: {self.matching.missed(tuple(kept))}")
            raise ConfigurationError(f"no scenario of run {source.id} matches the --scenarios and --tag given")
        playable: list[Scenario] = []
        for scenario in chosen:
            match judge:
                case Absent(reason=reason) if scenario.claims():
                    skipped.append(Skipped(scenario.id, (f"needs a model for the judge: {reason}",)))
                case _:
                    playable.append(scenario)
        limits = settings.limits()
        fingerprints = self.project.fingerprints(source.agent, Prompt(""))
        try:
            return RunSpec(
                id=RunId(datetime.now(UTC)).text(),
                agent=source.agent,
                scenarios=tuple(playable),
                attempts=source.attempts,
                limits=msgspec.structs.replace(
                    source.limits,
                    judge_places=limits.judge_places,
                    judge_per_minute=limits.judge_per_minute,
                    judge_patience=limits.judge_patience,
                ),
                trust=source.trust if self.trust is None else self.trust,
                budget=settings.budget() or Budget(),
                models=msgspec.structs.replace(
                    self.project.names(Models(judge=judge)),
                    user=source.models.user,
                    agent=source.models.agent,
                    agent_provider=source.models.agent_provider,
                ),
                fingerprints=Fingerprints(
                    scenarios=fingerprints.scenarios,
                    agent=source.fingerprints.agent,
                    models=fingerprints.models,
                    prompt=source.fingerprints.prompt,
                ),
                skipped=tuple(skipped),
                convy=VERSION,
                name=source.name,  # a re-judge of "prompt B" is still prompt B's dialogues; its origin says re-judged
                origin=Origin(dialogues.folder.parent.name, dialogues.folder.name),
                judging=settings.judging(),
                user_checks=source.user_checks,  # no user plays: the source's, as it checked its dialogues
                user=source.user,  # the dialogues' simulated user: the source's
                rule=settings.rule(),
            )
        except ValueError as error:
            raise ConfigurationError(f"cannot re-judge {source.id}: {error}") from None

    def resumed(self, spec: RunSpec, models: Models, judges: dict[str, Any], budget: Budget | None) -> Rejudging:
        """What plays the rest of ``spec``, a re-judged run: the judge it names, found again
        (``JudgeChoice``), on the dialogues of its origin."""
        if spec.origin is None:
            raise ConfigurationError(f"run {spec.id} was played, not re-judged: convy resume plays it")
        judge = JudgeChoice(spec.models.judge).judge(models, judges)
        if judge.name != spec.models.judge:
            raise ConfigurationError(
                f"cannot resume {spec.id}: its judge was {spec.models.judge}, and models.py now gives {judge.name}"
            )
        dialogues = RunJournal(self.project.results() / spec.origin.agent / spec.origin.run)
        SourceRun(spec.id, dialogues).checked()  # the dialogues' run must still be there and sound
        if dialogues.in_use():
            raise RunInUse(f"run {spec.origin.run}, whose dialogues {spec.id} re-judges, is in use by another convy process")
        return Rejudging(dialogues, judge, spec.limits, budget, spec.judging)


class SourceRun(msgspec.Struct, frozen=True):
    """The run whose recorded dialogues the run ``run`` decides, which must be there and sound: one
    deleted or damaged since is said as the source of that run, not as a run the user named."""

    run: str
    dialogues: RunJournal

    def checked(self) -> None:
        try:
            self.dialogues.run()
        except ConfigurationError as error:
            raise ConfigurationError(
                f"run {self.run} decides the recorded dialogues of run {self.dialogues.folder.name}, which cannot be read: {error}"
            ) from None


class Rejudging(msgspec.Struct, frozen=True):
    """Plays a re-judged run (a ``plan.Player``): each planned attempt's recorded dialogue, read
    from ``dialogues`` (the origin's folder) as a worker is free for it, decided again by ``judge``
    within the judge's places of ``limits``. No agent, no simulated user: the only requests are the
    judge's, watched as a bench's are (``vital.Vigil``): a judge whose service refuses it for good
    (a wrong key, URL or model) stops the run with the fix, no attempt recorded "not judged". With a ``budget``, no attempt is taken once it is spent (the judge's requests count)."""

    dialogues: RunJournal
    judge: Judge | Absent
    limits: Limits
    budget: Budget | None = None
    judging: Judging = Judging()

    def budgeted(self, budget: Budget | None) -> Rejudging:
        return msgspec.structs.replace(self, budget=budget)

    async def run(self, planned: Playlist, journal: Journal, earlier: Iterable[Outcome] | Earlier = ()) -> Spending | None:
        """Decide every planned attempt again, each recorded in ``journal`` as it ends. An attempt
        whose dialogue the origin lacks (a line it lost) is left out, as a spent budget leaves one
        in the plan; one taken and not recorded is ``Unplayed``."""
        wanted = _Wanted(planned)
        vigil = Vigil(journal)  # a judge whose service refuses it for good stops the run, as a bench's does
        watched = vigil.vitals.watched(self.judge, "judge")
        places = self.limits.places("judge", Services())
        judge = RunJudge(watched, self.judging).within(places)
        taken = 0  # the recorded attempts the workers took
        read_through = False  # whether the source was read to its end (not stopped by a budget)

        def read() -> Iterator[Outcome]:
            nonlocal taken, read_through
            for outcome in self.dialogues.recorded(wanted):
                taken += 1
                yield outcome
            read_through = True

        queue: Iterator[Outcome] = read()
        spending: Spending | None = None
        if self.budget is not None:  # a wrapper, only with a budget: a run without one counts nothing
            spending = self.budget.spending(earlier, asyncio.get_running_loop().time)
            vigil.journal = BudgetedJournal(journal, spending)

        workers = min(len(wanted), places.size)

        async def worker(group: asyncio.TaskGroup) -> None:
            # The workers share one reader of the file: each line is read when a worker is free
            # for it (and, with a budget, once the budget lets it start), so what is held is the
            # attempts under way, not the run.
            nonlocal workers
            while True:
                vigil.alive()  # the judge is dead: no dialogue is decided again
                if spending is None:
                    outcome = next(queue, None)
                else:
                    outcome = await spending.taken(queue, _named)
                if outcome is None:
                    return
                if workers < min(len(wanted), places.size):  # the judge's places have grown (no cap)
                    workers += 1
                    group.create_task(worker(group))
                await vigil.attempt(wanted.scenario(outcome.scenario).rejudged(outcome, judge))

        with vigil.watching():  # a dead judge's stop, alone; at the end, attempts still held stop it too
            async with asyncio.TaskGroup() as group:
                for _ in range(workers):
                    group.create_task(worker(group))
        if vigil.recorded != taken:
            raise Unplayed(f"{taken - vigil.recorded} of {len(wanted)} planned attempts ended without being recorded")
        if read_through and taken < len(wanted):
            raise DialoguesLost(self._lost(wanted, taken))
        return spending

    def _lost(self, wanted: _Wanted, taken: int) -> str:
        """Which planned dialogues the source lacks: how many, and the first few by name."""
        missing = sorted(wanted.missing(self.dialogues.recorded(wanted)))
        named = ", ".join(f"{scenario} #{attempt}" for scenario, attempt in missing[:3])
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        return (
            f"{self.dialogues.folder / 'attempts.jsonl'}: {len(wanted) - taken} of the {len(wanted)} recorded dialogues "
            f"to re-judge are not there ({named}{more}): the file lost lines since its run finished"
        )


class _Wanted(Container[tuple[str, int]]):
    """The attempts a re-judge plays, by (scenario, attempt), as each recorded line is asked
    whether it is one: per scenario, its ``Scenario`` and a byte an attempt number (a dict of
    every planned attempt was about 100 bytes each). A plain class: nothing in it changes once
    made."""

    __slots__ = ("_scenarios", "_marks", "_count")

    def __init__(self, planned: Playlist) -> None:
        self._scenarios: dict[str, Scenario] = {}
        self._marks: dict[str, bytearray] = {}
        self._count = 0
        for one in planned:
            name = one.scenario.id
            marks = self._marks.get(name)
            if marks is None:
                self._scenarios[name] = one.scenario
                marks = self._marks[name] = bytearray()
            if one.attempt >= len(marks):
                marks.extend(bytes(max(one.attempt + 1, 2 * len(marks)) - len(marks)))
            self._count += not marks[one.attempt]
            marks[one.attempt] = 1

    def __contains__(self, key: object) -> bool:
        match key:
            case (str(name), int(number)):
                marks = self._marks.get(name)
                return marks is not None and 0 < number < len(marks) and marks[number] == 1
        return False

    def __len__(self) -> int:
        return self._count

    def scenario(self, name: str) -> Scenario:
        return self._scenarios[name]

    def missing(self, found: Iterable[Outcome]) -> Iterator[tuple[str, int]]:
        """The attempts wanted that none of ``found`` is."""
        left = {name: bytearray(marks) for name, marks in self._marks.items()}
        for outcome in found:
            marks = left.get(outcome.scenario)
            if marks is not None and 0 < outcome.attempt < len(marks):
                marks[outcome.attempt] = 0
        for name, marks in left.items():
            for number, mark in enumerate(marks):
                if mark:
                    yield (name, number)


def _named(outcome: Outcome) -> tuple[str, int]:
    return (outcome.scenario, outcome.attempt)
