"""``convy run`` and ``convy resume``: playing a project's agents, a run begun again, and the smoke
run that tries each participant once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import msgspec

from convy.adaptive import Adaptive, Against, BaseJudged, PlanAgainstBase
from convy.agent import TimeLimited
from convy.attempt import Attempt, Sum
from convy.bench import Bench
from convy.budget import Budget
from convy.checks import Check, Rule
from convy.cli.console import Shown, Tokens
from convy.cli.exits import CANCELLED, Cures, Worst
from convy.cli.outputs import Absence, Outputs
from convy.cli.parser import AutoAttempts, Budgeted
from convy.cli.progress import Recorded
from convy.cli.receiving import Receiving
from convy.collector import OtlpEndpoint
from convy.judge import ChatJudge, Failed, NoVerdict, Panel
from convy.loaded import Loaded
from convy.model import Absent, Contained, ModelFailure
from convy.model import Said as ModelSaid
from convy.passing import AbsentAgent, PassRule
from convy.plan import Player
from convy.problems import (
    ConfigurationError,
    HttpFailure,
)
from convy.project import Blind, Project
from convy.records import Limits, RunName, RunSpec, Skipped
from convy.runs import Read
from convy.scenario import Scenario
from convy.scenarios import Matching
from convy.secrets import Secrets
from convy.sequential import Sequential
from convy.settings import LOCAL, Spread
from convy.spread import Crew
from convy.terminal import Inert
from convy.vital import Refusal, Unanswered

if TYPE_CHECKING:
    from convy.prompt import Prompt
    from convy.settings import Settings
    from convy.storage import Kept


class AgainstRun(msgspec.Struct, frozen=True):
    """``--against BASE`` of ``convy run`` (with ``--attempts auto``): the run is played until its
    comparison with the base run ``wanted`` (an id or a unique part of one) is decided
    (``adaptive.Against``). The base must be a finished run of the same agent; only the scenarios
    it played with the same content are played, the rest are kept out and said. Its judged
    attempts are read here, in attempt-number order, and kept in the new run's spec."""

    project: Project
    wanted: str

    ALPHA: ClassVar[float] = 0.05  # convy compare's
    # A scenario's first block of base attempts is scored with no guess of the change (e = 1), and
    # the base is handed out over the plan: with one judged base attempt the whole plan is that
    # block and can never decide; with two, one block carries evidence. Three or more, or left out.
    LEAST_BASE: ClassVar[int] = 3

    def base(self) -> Read:
        try:
            read = self.project.read(self.wanted)
        except ConfigurationError as error:
            raise ConfigurationError(f"--against: {error}") from None
        spec = read.file.spec
        status = read.status()
        if read.problem and (status == "finished" or read.guessed):  # resume cannot mend a damaged run.json
            raise ConfigurationError(f"--against: run {spec.id}: {read.problem}")
        if status != "finished":
            how = "playing" if status == "running" else status
            then = "wait for it to end" if status == "running" else f"convy resume {spec.id}"  # resume refuses a run in use
            raise ConfigurationError(f"--against: run {spec.id} is {how}, not finished: a base must be played out ({then})")
        return read

    def agents(self, named: tuple[str, ...], base: Read) -> tuple[str, ...]:
        """The agent to run: the base's, which an agent named must be."""
        agent = base.file.spec.agent
        for name in named:
            if name != agent:
                raise ConfigurationError(
                    f"--against: run {base.file.spec.id} is of agent {agent}, not {name}: a base is a run of the same agent"
                )
        return (agent,)

    def spec(self, spec: RunSpec, base: Read) -> RunSpec:
        """``spec`` narrowed to the scenarios the base played with the same content, its rule the
        comparison with the base."""
        before = {scenario.id: scenario for scenario in base.file.spec.scenarios}
        name = f"{base.file.spec.agent}/{base.file.spec.id}"
        marks = BaseJudged(base.outcomes, base.file.spec.trust).marks(before)
        shared: list[Scenario] = []
        left: list[Skipped] = []
        for scenario in spec.scenarios:
            if scenario.id not in before:
                left.append(Skipped(scenario.id, (f"not in base run {name}",)))
            elif before[scenario.id] != scenario:
                left.append(Skipped(scenario.id, (f"changed since base run {name}",)))
            elif not marks[scenario.id]:
                left.append(Skipped(scenario.id, (f"no attempt judged in base run {name}",)))
            elif len(marks[scenario.id]) < self.LEAST_BASE:
                judged = len(marks[scenario.id])
                left.append(
                    Skipped(scenario.id, (f"{judged} attempt{'s' if judged != 1 else ''} judged in base run {name}, fewer than {self.LEAST_BASE}",))
                )
            else:
                shared.append(scenario)
        if not shared:
            raise ConfigurationError(
                f"--against: run {base.file.spec.id} shares no scenario with this run "
                f"({len(left)} scenario{'s' if len(left) != 1 else ''} not in it, changed since, or judged in fewer than "
                f"{self.LEAST_BASE} of its attempts)"
            )
        kept = {scenario.id: marks[scenario.id] for scenario in shared}
        rule = Adaptive(1, Against(base.file.spec.agent, base.file.spec.id, self.ALPHA, kept, Sequential.RATIO))
        return msgspec.structs.replace(spec, scenarios=tuple(shared), skipped=(*spec.skipped, *left), adaptive=rule)


class AgainstPlan(msgspec.Struct, frozen=True):
    """What a run against a base (``--against``) may play, said before it plays and by
    ``--dry-run`` (``adaptive.PlanAgainstBase``), with, given the base's attempts and the budget, what that
    may spend: the base's mean spend per attempt times the plan's attempts, and how many attempts
    the budget allows at it."""

    spec: RunSpec

    def plan(self) -> PlanAgainstBase | None:
        adaptive = self.spec.adaptive
        if adaptive is None or not isinstance(adaptive.until, Against):
            return None
        return adaptive.until.plan(tuple(scenario.id for scenario in self.spec.scenarios), self.spec.attempts)

    def lines(self) -> tuple[str, ...]:
        plan = self.plan()
        return () if plan is None else plan.lines()

    def spend(self, base: Read, budget: Budget | None) -> tuple[str, ...]:
        """The plan's likely spend at the base's spend per attempt, and what the budget allows."""
        plan = self.plan()
        if plan is None or not base.outcomes:
            return ()
        total = Sum()
        for outcome in base.outcomes:
            total = total + Attempt(outcome, 0.0).every_sum()
        count, most = len(base.outcomes), plan.attempts()
        # Each figure only when the base reported it for every request: else it is said unknown.
        tokens = (total.input + total.output) / count if total.requests and total.reported == total.requests else None
        cost = float(total.amount) / count if total.requests and total.priced == total.requests else None
        each = [part for part in (None if tokens is None else f"{tokens:,.0f} tokens", None if cost is None else f"${cost:.4f}") if part]

        def spent(attempts: int) -> str:
            return ", ".join(part for part in (None if tokens is None else f"{tokens * attempts:,.0f} tokens", None if cost is None else f"${cost * attempts:.2f}") if part)

        if not each:
            lines = ["the base's spend per attempt is not known (its requests reported no tokens or cost): the plan's spend cannot be said"]
        else:
            line = f"at the base's spend per attempt ({', '.join(each)}): up to {spent(most)} for {most} attempts"
            if plan.flipped is not None:
                line += f", {spent(plan.flipped)} for the {plan.flipped} that decide a flip"
            lines = [line]
        if budget is None or not (budget.cost or budget.tokens):
            return (*lines, "no budget on cost or tokens: nothing but the plan bounds the spend")
        allows: list[str] = []
        fits: list[int] = []
        for name, limit, per, shown in (("max_cost", budget.cost, cost, f"${budget.cost:g}"), ("max_tokens", budget.tokens, tokens, f"{budget.tokens:,}")):
            if not limit:
                continue
            if not per:
                allows.append(f"{name} {shown}: how many attempts it allows is not known (the base's spend is not)")
                continue
            fits.append(int(limit / per))
            allows.append(f"{name} {shown} allows about {fits[-1]:,} attempts at that spend")
        enough = ""
        if fits:
            enough = ": enough for the plan" if min(fits) >= most else f": fewer than the plan's {most}, the budget may stop it undecided"
        return (*lines, f"the budget: {'; '.join(allows)}{enough}")


class Spreading(msgspec.Struct, frozen=True):
    """``--workers N`` and ``--ray [ADDRESS]`` of ``run`` and ``resume``, each over its setting
    (``workers``, ``ray``): where the run is played (``spread.py``)."""

    workers: int | None = None
    address: str | None = None

    def over(self, settings: Settings) -> Spread:
        spread = settings.spread()
        if self.address == "":  # an address left empty (an unset variable): not a run in one process unasked
            raise ConfigurationError("--ray: an empty address: auto, ray://HOST:PORT, HOST:PORT, or --ray alone")
        try:
            spread = Spread(
                spread.workers if self.workers is None else self.workers,
                spread.address if self.address is None else self.address,
            )
        except ValueError as error:
            raise ConfigurationError(f"--workers/--ray: {error}") from None
        if spread.spread():
            spread.ray()  # Ray missing: said before anything is played
        return spread

    def player(self, bench: Bench, spread: Spread, project: Project, agent: str, shown: Shown) -> Player:
        """The bench itself, or a crew of workers on Ray that plays what it would."""
        if not spread.spread():
            return bench
        crew = Crew(bench, project.folder, agent, spread).connected()
        Spreaders(shown, spread).told(*crew.hands())
        return crew


class Spreaders(msgspec.Struct, frozen=True):
    """Says how many workers play a spread run, and where."""

    shown: Any
    spread: Spread

    def told(self, hands: int, nodes: int) -> None:
        where = "a Ray started for this run" if self.spread.where() == LOCAL else f"the Ray cluster at {self.spread.where()}"
        asked = self.spread.workers
        capped = f" (of {asked} asked: no more than the limits can be split among)" if asked and hands < asked else ""
        self.shown.line(
            f"  played by {hands} worker{'s' if hands != 1 else ''}{capped} on {Inert(where).line()} ({nodes} node{'s' if nodes != 1 else ''})"
        )


class RunCommand(msgspec.Struct, frozen=True):
    """``convy run``: a new run of each agent named (all, when none is)."""

    project: Project
    agents: tuple[str, ...]
    attempts: int | str | None  # as -k gave it: the settings refuse what is neither a number nor auto
    patterns: tuple[str, ...]
    tags: tuple[str, ...]
    trust: float | None
    fail_under: float | None
    outputs: Outputs = Outputs()
    max_not_judged: float | None = None
    budget: Budgeted = Budgeted()
    judge_repeats: int | None = None
    most_variants: int | None = None  # --max-variants: a scenario's variants, over Scenario.MOST_VARIANTS
    spread: Spreading = Spreading()
    adaptive: AutoAttempts = AutoAttempts()
    against: str | None = None  # --against BASE: played until the comparison with BASE is decided
    fail_on_skip: bool | None = None  # --fail-on-skip, over fail_on_skip
    name: str | None = None  # --name: what a person calls the run, kept in run.json (spec.name)

    def run(self, shown: Shown, errors: Shown) -> int:
        if self.name is not None:
            problem = RunName(self.name).problem()
            if problem is not None:
                raise ConfigurationError(f'--name "{Inert(self.name).short(90)}": {problem}')
        settings = self.overridden(self.project.settings())
        collector = OtlpEndpoint.environ(os.environ)  # where traces go (issue 30): a bad setting stops the run here
        spread = self.spread.over(settings)
        versus, base, names = self.based(settings)
        # every scenario file must be sound before anything is played
        scenarios = self.project.scenarios(self.most_variants)
        for unread in () if self.agents else self.project.unread():  # every agent is played: one parked is said
            shown.line(f"note: {unread}")
        receiving = Receiving.of(settings, spread)  # its port bound before any agent is loaded
        codes: list[int] = []
        played: list[str] = []
        absent: list[AbsentAgent] = []
        with receiving.given() if receiving is not None else contextlib.nullcontext():
            if receiving is not None:
                shown.line(receiving.told())
            known = Loaded(self.project, "").known() if len(names) > 1 else None  # read once for every agent played
            for name in names:
                loaded = Loaded(self.project, name)
                agent, models = loaded.parts()
                secrets = loaded.secrets(agent, models, known=known)
                passed_over = self.passed_over(name, agent, secrets)
                if passed_over is not None:
                    shown.line(f"- {Inert(passed_over.said()).line()}")
                    absent.append(passed_over)
                    continue
                spec = self.project.spec(name, models, settings, scenarios, Matching(self.patterns, self.tags), agent)
                if self.name is not None:
                    spec = msgspec.structs.replace(spec, name=self.name)
                if versus is not None and base is not None:
                    spec = versus.spec(spec, base)
                    for line in AgainstPlan(spec).lines():  # before anything is spent
                        shown.line(Inert(line).line())
                spec = secrets.kept(spec)
                if receiving is not None:
                    receiving.receiver.begun(secrets, Blind(agent).blind())  # what this agent sends, learnt afresh
                bench = Bench(
                    agent,
                    models,
                    spec.limits,
                    self.project.prompt(settings),
                    settings.budget(),
                    spec.judging,
                    spec.user_checks,
                    None if receiving is None else receiving.receiver,
                )
                recorded = Recorded(
                    self.project,
                    spec,
                    spec.player(self.spread.player(bench, spread, self.project, name, shown)),
                    shown,
                    errors,
                    None,  # the spec keeps the pass rule, --fail-under's and --fail-on-skip's included
                    secrets,
                    max_not_judged=settings.max_not_judged,
                    live=settings.live(self.project.folder, spec.id),
                    cures=Cures(self.project.folder, name, {"agent": agent, "user": models.user, "judge": models.judge}),
                    collector=collector,
                )
                codes.append(recorded.played())
                for line in receiving.said(name) if receiving is not None else ():
                    errors.line(line)
                if (self.project.journal(spec).folder / "run.json").exists():  # a run stopped before keeping anything is gone
                    played.append(spec.id)
                if codes[-1] in (130, 143, 2):  # stopped, or the project cannot be run as it is: no other agent plays
                    break
        absence = Absence(tuple(absent), settings.fail_on_skip)
        code = absence.judged(Worst(tuple(codes)).code(), bool(played), shown, errors)
        return self.outputs.played(self.project, tuple(played), code, shown, errors, absence)

    def based(self, settings: Settings) -> tuple[AgainstRun | None, Read | None, tuple[str, ...]]:
        """With ``--against``: the base, read and checked, and the one agent to run (its); else the
        agents named, or every one."""
        if self.against is None:
            return None, None, self.agents or self.project.agent_names()
        if settings.attempts != "auto":
            raise ConfigurationError("--against: needs --attempts auto (the run stops once the comparison is decided)")
        for option in ("min_attempts", "target_width"):
            if option in self.adaptive.given():
                raise ConfigurationError(
                    f"--{option.replace('_', '-')}: not used with --against: the comparison decides when the run stops"
                )
        versus = AgainstRun(self.project, self.against)
        base = versus.base()
        return versus, base, versus.agents(self.agents, base)

    def overridden(self, settings: Settings) -> Settings:
        """The settings with ``-k``, ``--trust``, ``--max-not-judged``, ``--judge-repeats`` and the
        budget's options over them."""
        changes: dict[str, Any] = {}
        if self.attempts is not None:
            changes["attempts"] = self.attempts
        if self.judge_repeats is not None:
            changes["judge_repeats"] = self.judge_repeats
        if self.trust is not None:
            changes["trust"] = self.trust
        if self.max_not_judged is not None:
            changes["max_not_judged"] = self.max_not_judged
        if self.fail_under is not None:
            changes["fail_under"] = self.fail_under
        if self.fail_on_skip is not None:
            changes["fail_on_skip"] = self.fail_on_skip
        changes |= self.adaptive.given()
        overridden = self.budget.over(settings, changes)
        if overridden.attempts != "auto":
            for option in self.adaptive.given():  # dropped silently, it would change nothing
                raise ConfigurationError(
                    f"--{option.replace('_', '-')}: used only with --attempts auto; this run plays {overridden.attempts} attempts per scenario"
                )
        return overridden

    def passed_over(self, name: str, agent: Any, secrets: Secrets) -> AbsentAgent | None:
        """The absent agent that is not run (a skip), or ``None`` for one that is; an absent agent
        named on the command line is a ``ConfigurationError``."""
        match agent:
            case Absent(reason=reason) if self.agents:
                raise ConfigurationError(f"agents/{name}.py: the agent is absent: {secrets.hidden(reason)}")
            case Absent(reason=reason):
                return AbsentAgent(name, secrets.hidden(reason))
            case _:
                return None


class SmokeCommand(msgspec.Struct, frozen=True):
    """``convy run AGENT --smoke``: a short scripted dialogue with the agent, for real, to see
    that the connection works, and one short request to the simulated user's model and to each
    chat model of the judge. Nothing is written."""

    project: Project
    agents: tuple[str, ...]

    SCRIPT: ClassVar[tuple[str, ...]] = (
        "Hello!",
        "What can you help me with?",
        "Thank you, that is all for now.",
    )
    ASKED: ClassVar[str] = "This is a connection check. Reply with the word OK."  # each model's one request

    def run(self, shown: Shown, errors: Shown) -> int:
        limits = self.project.settings().limits()
        smoke = Scenario(id="smoke", script=self.SCRIPT, judge=(Rule(check=Check(said=r"\S")),))
        codes: list[int] = []
        names = self.agents or self.project.agent_names()
        known = Loaded(self.project, "").known() if len(names) > 1 else None  # read once for every agent checked
        for name in names:
            loaded = Loaded(self.project, name)
            agent, models = loaded.parts()
            secrets = loaded.secrets(agent, models, known=known)
            match agent:
                case Absent(reason=reason):
                    errors.line(f"✗ {name}: the agent is absent: {Inert(secrets.hidden(reason)).line()}")
                    codes.append(1)
                    continue
            limited = TimeLimited(agent, limits.open_seconds, limits.turn_seconds, limits.close_seconds)
            shown.line(f"{name}: smoke test, {len(self.SCRIPT)} scripted messages, nothing written")
            try:
                played = asyncio.run(smoke.outcome(1, limited, Absent(), Absent(), len(self.SCRIPT)))
            except asyncio.CancelledError:  # Ctrl+C comes out of asyncio.run as KeyboardInterrupt
                raise ConfigurationError(f"agents/{name}.py: the smoke test's dialogue was {CANCELLED}") from None
            outcome = secrets.kept(played)
            for number, turn in enumerate(outcome.transcript.turns, start=1):
                lines = turn.answer.text.strip().splitlines() or ["(an empty answer)"]
                said = Inert(lines[0][:100]).line()
                shown.line(f"  {number}  {turn.agent_seconds:6.2f} s  {Tokens(turn.answer.requests()).text():>16}  {said}")
            match outcome.result:
                case Failed(reason=reason) | NoVerdict(reason=reason):
                    errors.line(f"✗ {name}: {Inert(reason).line()}")
                    codes.append(1)
                case _:
                    shown.line(f"✓ {name}: connection works")
                    codes.append(0)
            unheld = {turn.answer.unheld for turn in outcome.transcript.turns}
            kinds = sorted({turn.answer.unheld_as for turn in outcome.transcript.turns} - {""})
            if outcome.transcript.turns and "" not in unheld:  # a wrong calls= would hide every tool call of a run
                paths = ", ".join(repr(Inert(path).line()) for path in sorted(unheld))
                if kinds:
                    shown.line(
                        f"  note: the calls path {paths} of agents/{name}.py held {' or '.join(kinds)}, never a list of calls: "
                        "set calls= to where its replies list them"
                    )
                else:
                    shown.line(
                        f"  note: no reply held the calls path {paths} of agents/{name}.py: if the agent calls tools, "
                        "set calls= to where its replies list them (or have it send an empty list)"
                    )
            blind = Blind(agent, self.project.settings().receive_traces).said(f"agents/{name}.py", self.project.sound_scenarios()[0])
            if blind:
                shown.line(f"  note: {blind}")
        codes.extend(self._models(shown, errors))
        return Worst(tuple(codes)).code()

    def _models(self, shown: Shown, errors: Shown) -> list[int]:
        """One short request to the simulated user's model and to each chat model of the judge:
        ✓ with its time, or ✗ with what its service said and the likely fix (exit 1)."""
        loaded = Loaded(self.project, "")
        models = loaded.models()
        secrets = loaded.secrets(models)
        cures = Cures(self.project.folder, "", {"user": models.user, "judge": models.judge})
        asked: list[tuple[Literal["user", "judge"], Any]] = [("user", models.user)]
        match models.judge:
            case Panel(judges=judges):
                asked.extend(("judge", judge) for judge in judges)
            case judge:
                asked.append(("judge", judge))
        codes: list[int] = []
        for who, part in asked:
            words = "the simulated user's model" if who == "user" else "the judge's model"
            match part:
                case Absent(reason=reason):
                    shown.line(f"- {words} is absent: {Inert(secrets.hidden(reason)).line()}")
                    continue
                case ChatJudge(model=model):
                    pass
                case Panel() | ChatJudge():
                    continue
                case _ if who == "user":
                    model = part
                case _:
                    shown.line(f"- the judge {Inert(part.name).line()} has no chat model to ask: not checked")
                    continue
            said = Inert(f"{words} {model.name}").line()
            started = time.monotonic()
            try:  # Contained: any error of the model's is a ModelFailure, its service's with the HttpFailure as cause
                reply = asyncio.run(Contained(model).reply((ModelSaid("user", self.ASKED),)))
            except asyncio.CancelledError:  # Ctrl+C comes out of asyncio.run as KeyboardInterrupt
                raise ConfigurationError(f"models.py: the smoke test's request to {said} was {CANCELLED}") from None
            except ModelFailure as failure:
                cause = failure.__cause__
                match cause:
                    case HttpFailure() if cause.incurable():
                        refusal = Refusal.of(cause)
                        one = Unanswered(who, model.name, refusal, 1)
                        errors.line(secrets.hidden(Inert(f"✗ {said} {one.told()}: {cures.cure(one)}").line()))
                    case _:
                        errors.line(secrets.hidden(Inert(f"✗ {said}: {failure}").line()))
                codes.append(1)
                continue
            took = time.monotonic() - started
            first = (reply.text.strip().splitlines() or ["(an empty answer)"])[0][:60]
            shown.line(f"✓ {said}: answers ({took:.2f} s): {Inert(secrets.hidden(first)).line()}")
            codes.append(0)
        return codes


class ResumeCommand(msgspec.Struct, frozen=True):
    """``convy resume RUN``: play the attempts a run's folder lacks, as the run was specified."""

    project: Project
    run_id: str
    fail_under: float | None
    max_not_judged: float | None = None
    budget: Budgeted = Budgeted()
    spread: Spreading = Spreading()
    outputs: Outputs = Outputs()  # --junit and --summary: the whole run, as convy run writes them
    fail_on_skip: bool | None = None
    old_scenarios: bool = False  # --old-scenarios: play the copy the run kept of scenarios edited since

    def ruled(self, spec: RunSpec) -> PassRule | None:
        """The run's pass rule with this command's --fail-under, --fail-on-skip and
        --max-not-judged over it, or ``None`` when none was given (the spec's holds)."""
        if self.fail_under is None and self.fail_on_skip is None and self.max_not_judged is None:
            return None
        rule = spec.rule
        return PassRule(
            rule.fail_under if self.fail_under is None else self.fail_under,
            rule.fail_on_skip if self.fail_on_skip is None else self.fail_on_skip,
            rule.max_not_judged if self.max_not_judged is None else self.max_not_judged,
        )

    def run(self, shown: Shown, errors: Shown) -> int:
        collector = OtlpEndpoint.environ(os.environ)  # where traces go (issue 30): a bad setting stops here
        journal = self.project.found(self.run_id, "resume")
        settings = self.budget.over(self.project.settings())
        spread = self.spread.over(settings)
        prompt = self.project.prompt(settings)  # read once: checked against the run's, then told
        unjudged = settings.max_not_judged if self.max_not_judged is None else self.max_not_judged
        spec = self.project.resumable(journal, prompt)
        self._scenarios(spec, errors)
        self._places(spec, settings, errors)
        budget = self.budget.resumed(spec.budget, settings)
        spec = msgspec.structs.replace(spec, budget=budget)  # kept in run.json for the next resume
        # an attempts.jsonl convy will not read stops here, before anything is played; held as where
        # each line begins (read again, one at a time, each time the play walks them)
        kept = journal.unsaid(spec)
        note = kept.note()
        if note:
            errors.line(f"read {journal.folder.relative_to(self.project.folder)}: {note}")
        loaded = Loaded(self.project, spec.agent)
        if spec.origin is not None:  # a re-judged run: its judge decides the rest, the agent is never loaded
            from convy.rejudge import Rejudge

            rejudging = Rejudge(self.project, journal).resumed(spec, loaded.models(), loaded.judges(), budget if budget.set() else None)
            secrets = loaded.secrets(rejudging.judge, loaded.models())
            code = Recorded(
                self.project, spec, rejudging, shown, errors, self.ruled(spec), secrets, kept, max_not_judged=unjudged,
                live=settings.live(self.project.folder, spec.id),
                cures=Cures(self.project.folder, spec.agent, {"judge": rejudging.judge}),
                collector=collector,
            ).played()
            return self.outputs.played(self.project, (spec.id,), code, shown, errors)
        receiving = Receiving.of(settings, spread)  # its port bound before the agent is loaded
        with receiving.given() if receiving is not None else contextlib.nullcontext():
            if receiving is not None:
                shown.line(receiving.told())
            code = self._resumed(spec, settings, spread, prompt, budget, kept, unjudged, loaded, collector, receiving, shown, errors)
        for line in receiving.said(spec.agent) if receiving is not None else ():
            errors.line(line)
        return self.outputs.played(self.project, (spec.id,), code, shown, errors)

    def _resumed(
        self,
        spec: RunSpec,
        settings: Settings,
        spread: Spread,
        prompt: Prompt,
        budget: Budget,
        kept: Kept,
        unjudged: float,
        loaded: Loaded,
        collector: OtlpEndpoint | None,
        receiving: Receiving | None,
        shown: Shown,
        errors: Shown,
    ) -> int:
        agent, models = loaded.parts()
        if (models.user.name, models.judge.name) != (spec.models.user, spec.models.judge):
            raise ConfigurationError(
                f"cannot resume {spec.id}: the models are now {models.user.name} and {models.judge.name}, "
                f"the run was started with {spec.models.user} and {spec.models.judge}"
            )
        receiver = None if receiving is None else receiving.receiver
        bench = Bench(agent, models, spec.limits, prompt, budget if budget.set() else None, spec.judging, spec.user_checks, receiver)
        secrets = loaded.secrets(agent, models)
        if receiver is not None:
            receiver.begun(secrets, Blind(agent).blind())
        player = spec.player(self.spread.player(bench, spread, self.project, spec.agent, shown))
        return Recorded(
            self.project, spec, player, shown, errors, self.ruled(spec), secrets, kept, max_not_judged=unjudged,
            live=settings.live(self.project.folder, spec.id),
            cures=Cures(self.project.folder, spec.agent, {"agent": agent, "user": models.user, "judge": models.judge}),
            collector=collector,
        ).played()


    def _places(self, spec: RunSpec, settings: Settings, errors: Shown) -> None:
        """A run resumes with the places it started with, as caps, whatever the project's settings
        say now: said once where they differ. A run.json written before places with no cap grew
        holds 4, 8 and 8, that convy's defaults, which it played at and no more; nothing in it tells
        them from a team's own caps (its version and format are the same), so both are kept, and
        this line tells a user whose project now leaves them uncapped why they do not grow."""
        differ = [name for name in Limits.PLACES.values() if getattr(spec.limits, name) != getattr(settings, name)]
        if not differ:
            return

        def said(places: int) -> str:
            return str(places) if places else "no cap"

        kept = ", ".join(f"{name} {said(getattr(spec.limits, name))} (now {said(getattr(settings, name))})" for name in differ)
        errors.line(f"resuming {spec.id} with the places it started with: {kept}; a new run takes the settings now")

    def _scenarios(self, spec: RunSpec, errors: Shown) -> None:
        """A run resumes with the scenarios it kept: a file edited or removed since is refused with
        the two ways on, or, given --old-scenarios, said and played as the run kept it."""
        edited = self.project.edited(spec)
        if not edited:
            return
        if not self.old_scenarios:
            short = spec.id.rsplit("-", 1)[-1]
            raise ConfigurationError(
                f"cannot resume {spec.id}: {'; '.join(edited)} since the run started; "
                f"start a new run (convy run {spec.agent}), or play the copy the run kept: convy resume {short} --old-scenarios"
            )
        errors.line(f"resuming {spec.id} with the copy it kept: {'; '.join(edited)} since the run started")
