"""A user's project, as convy finds it on disk.

    models.py          defines ``models``: the simulated user's model and the judge
    agents/<name>.py   each defines ``agent``, the agent under test
    scenarios/**.yaml  one scenario per file (.yml read alike)
    prompts/user.md    optional: the simulator prompt, replacing convy's
    pyproject.toml     [tool.convy]: attempts, trust, places, time limits
    .env               keys and settings, never copied anywhere
    results/           what convy writes: results/<agent>/<run-id>/ (with its report.html),
                       results/index.html, results/compare/*.html, results/export/

``Project`` loads these, with the project folder on ``sys.path`` so they can import each other,
and runs ``models.py`` anew for each agent so every agent gets fresh models.
"""

from __future__ import annotations

import glob
import hashlib
import importlib.util
import os
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from convy.budget import Budget
from convy.files import RegularFile, Replaced
from convy.index import Index, Listing
from convy.judge import Judge, Models, Panel
from convy.model import Absent, Model
from convy.problems import ConfigurationError, Unwritable
from convy.prompt import Prompt, default_user_prompt
from convy.providers import Made, agent_made, judge_made
from convy.records import Fingerprints, ModelNames, RunId, RunSpec, Skipped, UserShape
from convy.report import Summary
from convy.runs import Read, Runs, Unread
from convy.scenario import Scenario
from convy.scenarios import Matching, Scenarios
from convy.storage import RunDamaged, RunJournal
from convy.totals import Listed
from convy.variants import Personas
from convy.views import ComparisonView, LiveView
from convy.yamlfile import YamlFile

if TYPE_CHECKING:
    from convy.settings import Settings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from convy.settings import Settings

VERSION = "0.6.0"


class ProjectAgent(msgspec.Struct, frozen=True):
    """One of the project's agents: its name (the file's stem) and the object its file defines."""

    name: str
    agent: Any


class Blind(msgspec.Struct, frozen=True):
    """An agent whose tool calls convy cannot see: a ``JsonAgent`` given no ``calls=`` path that
    reads its replies as JsonAgent does (not by an ``answer`` of its own), in a run that does not
    receive its spans (``traced``: ``receive_traces``, where its calls are seen in them). A
    ``called`` or ``not_called`` check of its dialogues could only be decided against it."""

    agent: Any
    traced: bool = False

    def blind(self) -> bool:
        if self.traced:
            return False
        # Only an agent of convy.httpagents can be one: a run that never loaded it does not load it here.
        http: Any = sys.modules.get("convy.httpagents")
        match self.agent:
            case Absent():
                return False
        if http is None or not isinstance(self.agent, http.JsonAgent) or self.agent.calls:
            return False
        # A subclass that reads its replies (or holds its conversation) its own way may well report
        # the calls itself: only JsonAgent's own reading is known to see none without calls=.
        kind = type(self.agent)
        return kind.answer is http.JsonAgent.answer and kind.conversation is http.JsonAgent.conversation

    def refused(self, shown: str, scenarios: tuple[Scenario, ...]) -> str:
        """Why ``scenarios`` cannot be played by this agent (its file ``shown``), with the fix, or
        "" when they can: a tool check the agent's replies could never decide."""
        checked = [(scenario.id, scenario.tool_checks()) for scenario in scenarios if scenario.tool_checks()]
        if not checked or not self.blind():
            return ""
        first, checks = checked[0]
        more = f" and {len(checked) - 1} other scenario{'s' if len(checked) != 1 else ''}" if len(checked) > 1 else ""
        return (
            f"{shown}: JsonAgent has no calls=, so its tool calls cannot be seen and the check {checks[0]!r} "
            f"of scenario {first}{more} cannot be decided: set calls= to where its replies list the tool calls "
            '(calls="tool_calls"), set receive_traces = true where it sends OpenTelemetry spans of them, or leave such checks out'
        )

    def said(self, shown: str, scenarios: tuple[Scenario, ...]) -> str:
        """A note for ``--smoke``: the same, when the project's scenarios have tool checks."""
        refused = self.refused(shown, scenarios)
        return refused.replace(" cannot be decided:", " could not be decided (convy check refuses it):") if refused else ""


class Project(msgspec.Struct, frozen=True):
    """The project in ``folder``."""

    folder: Path

    MAX_PROMPT_BYTES: ClassVar[int] = 1024 * 1024
    MAX_CODE_BYTES: ClassVar[int] = 16 * 1024 * 1024

    def settings(self) -> Settings:
        from convy.settings import ProjectSettings  # loaded by the commands that play only

        return ProjectSettings(self.folder).settings()

    def scenarios(self, most_variants: int | None = None) -> tuple[Scenario, ...]:
        """Every scenario, a matrix's as its variants (at most ``most_variants`` each, or
        ``Scenario.MOST_VARIANTS``)."""
        return Scenarios(self.folder / "scenarios", self._most(most_variants)).every()

    def sound_scenarios(self, most_variants: int | None = None) -> tuple[tuple[Scenario, ...], tuple[str, ...]]:
        """The scenarios of the sound files, and a line for each problem of the others."""
        return Scenarios(self.folder / "scenarios", self._most(most_variants)).sound()

    def _most(self, most_variants: int | None) -> int | None:
        if most_variants is not None and not 1 <= most_variants <= RunSpec.MOST_ATTEMPTS:
            raise ConfigurationError(f"--max-variants: must be between 1 and {RunSpec.MOST_ATTEMPTS:,}")
        return most_variants

    def above(self) -> Path | None:
        """The project this folder lies inside, when it is not one itself (it has no ``agents/``,
        ``scenarios/`` or ``models.py``) and a folder above it is: a command started in
        ``scenarios/`` would otherwise say the project has no agents and no scenarios."""
        marks = ("agents", "scenarios", "models.py")
        if any((self.folder / mark).exists() for mark in marks):
            return None
        for parent in self.folder.parents:
            if (parent / "agents").is_dir() and ((parent / "scenarios").is_dir() or (parent / "models.py").is_file()):
                return parent
        return None

    def agent_names(self) -> tuple[str, ...]:
        """The agents in ``agents/``, by name, in order; a ``ConfigurationError`` with a line for
        each that cannot be run, or when there is none."""
        names, problems = self.agents()
        if problems:
            raise ConfigurationError("\n".join(problems))
        return names

    def agents(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The agents in ``agents/`` that can be run, by name, in order, and a problem for each
        that cannot (or one when there is none)."""
        found = self._found()
        misnamed = [
            f"agents/{path.name}: not read: an agent file's name ends in .py; rename it agents/{stem}.py"
            for path, stem in self._misnamed()
            if stem not in found
        ]
        if not found:  # a misnamed file is then why nothing would be played: a problem
            folders = [
                f"agents/{path.parent.name}/: a folder, not an agent file: an agent is agents/{path.parent.name}.py (which may import from the folder)"
                for path in sorted((self.folder / "agents").glob("*/__init__.py"))
            ]
            return (), (*misnamed, *folders, "agents/: no agent files (agents/<name>.py, each defining `agent`)")
        reserved = [name for name in found if name in ("compare", "export")]
        return tuple(name for name in found if name not in reserved), tuple(
            f"agents/{name}.py: results/{name}/ is where convy keeps its {name} files; rename the agent" for name in reserved
        )

    def unread(self) -> tuple[str, ...]:
        """A note for each file of ``agents/`` meant as an agent but named so that it is not read
        (``legacy.py.txt``), when other agents are played: parked there, it stops nothing, as a
        ``.py.bak`` does not, but is said with the rename that would play it. With no agent file,
        or named on the command line, it is a problem instead (``agents``, ``agents_called``)."""
        found = self._found()
        if not found:
            return ()
        return tuple(
            f"agents/{path.name} is not read: an agent file's name ends in .py; rename it agents/{stem}.py to play it"
            for path, stem in self._misnamed()
            if stem not in found
        )

    def _found(self) -> list[str]:
        """The names of the agent files in ``agents/``, in order."""
        return sorted(path.stem for path in (self.folder / "agents").glob("*.py") if not path.stem.startswith("_"))

    def _misnamed(self) -> list[tuple[Path, str]]:
        """The files of ``agents/`` meant as agents whose names leave them unread, each with the
        name meant: saved as text (``airline.py.txt``), as ``.pyw``, or ``.PY``. Backups
        (``.bak``, ``~``, ``.orig``) and hidden files are left alone."""
        folder = self.folder / "agents"
        meant: list[tuple[Path, str]] = []
        for path in sorted(folder.glob("*")) if folder.is_dir() else []:
            name = path.name
            if not path.is_file() or name.startswith((".", "_")) or path.suffix == ".py":
                continue
            if path.suffix.lower() in (".py", ".pyw"):
                meant.append((path, path.stem))
            elif path.suffix.lower() == ".txt" and Path(path.stem).suffix.lower() == ".py":
                meant.append((path, Path(path.stem).stem))
        return meant

    @staticmethod
    def _plain(name: str) -> str:
        """An agent's name with case, - and _ left out: two names alike so are one meant for the other."""
        return name.lower().replace("-", "").replace("_", "")

    def _beside(self, name: str) -> str:
        """What ``agents/`` holds under ``name`` that is not an agent file, said with the fix: a
        file saved under another name (``airline.py.txt``, ``airline.py.bak``, ``airline.pyw``)
        or a folder; "" when there is none."""
        folder = self.folder / "agents"
        if (folder / name).is_dir():
            return f"agents/{name}/ is a folder: an agent is one file, agents/{name}.py (which may import from the folder)"
        others = sorted(path.name for path in folder.glob(f"{glob.escape(name)}.*") if path.is_file()) if folder.is_dir() else []
        if others:
            return f"agents/{others[0]} is there but is not an agent file: rename it agents/{name}.py"
        return ""

    def agents_called(self, given: list[str], here: Path) -> tuple[str, ...]:
        """The agents named on the command line, each by its name or by its file's path from
        ``here`` (what tab completion gives: ``agents/airline.py``); a ``.py`` path that is not a
        file of ``agents/`` is a ``ConfigurationError`` that says how to name it."""
        names: list[str] = []
        agents = (self.folder / "agents").resolve()
        folder = self.folder / "scenarios"
        scenarios = {path.relative_to(folder).with_suffix("").as_posix() for path in Scenarios(folder).files()}
        for text in given:
            if not text.endswith(".py") and "/" not in text:
                names.append(text)
                continue
            path = (here / text).resolve()
            if path.parent == agents and path.suffix == ".py":  # one that is not there is said as by name
                names.append(path.stem)
                continue
            if Path(text).suffix.lower() in Scenarios.SUFFIXES or text.removeprefix("./").removeprefix("scenarios/") in scenarios:
                raise ConfigurationError(f"{text}: a scenario, not an agent; choose it with --scenarios {text}")
            stem = Path(text).stem if text.endswith(".py") else Path(text).name
            raise ConfigurationError(
                f"{text}: not a file of agents/; give the agent's name (convy run {stem}) or its file's path (agents/{stem}.py)"
            )
        # Every name is checked before any is played: a slip in the second must not cost the first's run.
        for name in names:
            if (self.folder / "agents" / f"{name}.py").is_file():
                continue
            if name in scenarios:
                raise ConfigurationError(f"{name}: a scenario, not an agent; choose it with --scenarios {name}")
            self.agent(name)  # the project's words for an agent that is not there
        return tuple(names)

    def agent(self, name: str) -> ProjectAgent:
        """The agent ``agents/<name>.py`` defines, loaded anew."""
        path = self.folder / "agents" / f"{name}.py"
        if not path.is_file():
            beside = self._beside(name)
            found = self.agents()[0]
            same = [other for other in found if self._plain(other) == self._plain(name)]  # Airline, air_line for air-line
            if same and not beside:
                raise ConfigurationError(f"agents/{name}.py: no such agent; did you mean {same[0]} (agents/{same[0]}.py)?")
            there = ", ".join(found)
            raise ConfigurationError(
                f"agents/{name}.py: no such agent; "
                + (beside + (f"; the project has {there}" if there else "") if beside else f"the project has {there or 'no agent'}")
            )
        module = self._loaded(path, f"agents.{name}")
        if not hasattr(module, "agent"):
            helpers = not any(
                callable(getattr(value, "conversation", None)) and not isinstance(value, type) for value in vars(module).values()
            )
            raise ConfigurationError(
                f"agents/{name}.py: defines no `agent`"
                + (
                    f"; a file of helpers for the agents is named with a _ first (agents/_{name}.py, imported as "
                    f"agents._{name}), which convy does not load as an agent"
                    if helpers
                    else ""
                )
            )
        problem = self._unlike_agent(module.agent)
        if problem:
            raise ConfigurationError(f"agents/{name}.py: `agent` is {problem}")
        return ProjectAgent(name, module.agent)

    @staticmethod
    def _unlike_agent(agent: Any) -> str:
        """What ``agent`` is instead of an agent, said with the fix, or "" when it opens
        conversations (or is ``Absent``): outside code, checked where it enters, so a class or a URL
        is refused before a run blames every attempt on the agent."""
        match agent:
            case Absent():
                return ""
            case type():
                return f"the class {agent.__name__}, not an agent: make one, agent = {agent.__name__}(...)"
            case str():
                return 'text, not an agent: an agent over HTTP is agent = JsonAgent("http://...", body=..., reply=...)'
        if callable(getattr(agent, "conversation", None)):
            return ""
        kind = "a function" if callable(agent) else f"a {type(agent).__name__}"
        return f"{kind}, not an agent: an agent has a conversation() method (docs/agents.md: The agent interface)"

    def models(self) -> Models:
        """The models ``models.py`` defines, made anew: absent both when there is no such file."""
        path = self.folder / "models.py"
        if not path.is_file():
            return Models(Absent("the project has no models.py"), Absent("the project has no models.py"))
        module = self._loaded(path, "models")
        models = getattr(module, "models", None)
        if not isinstance(models, Models):  # outside data, checked where it enters
            raise ConfigurationError("models.py: must define `models = Models(user=..., judge=...)`")
        return models

    def judges(self) -> dict[str, Any]:
        """The judges ``models.py`` names in ``judges = {"name": judge, ...}`` for ``convy rejudge
        --judge NAME``, made anew: none when it defines no such mapping."""
        path = self.folder / "models.py"
        if not path.is_file():
            return {}
        judges = getattr(self._loaded(path, "models"), "judges", {})
        if not isinstance(judges, dict) or not all(isinstance(name, str) for name in judges):  # outside data
            raise ConfigurationError('models.py: `judges` must map names to judges: judges = {"name": ChatJudge(...), ...}')
        return dict(judges)

    def prompt(self, settings: Settings) -> Prompt:
        """The simulator prompt: the project's own file, or convy's."""
        if not settings.user_prompt:
            return Prompt(default_user_prompt())
        path = self.folder / settings.user_prompt
        try:
            return Prompt(RegularFile(path).data(self.MAX_PROMPT_BYTES).decode("utf-8"))
        except FileNotFoundError:
            prompts = sorted(  # any file there, .txt as well as .md: the one meant may be named otherwise
                path.relative_to(self.folder).as_posix() for path in self.folder.glob("prompts/*") if path.is_file()
            )
            there = f"; the prompts there are {', '.join(prompts)}" if prompts else ""
            raise ConfigurationError(f"{settings.user_prompt}: no such file (the user_prompt setting names it){there}") from None
        except OSError as error:
            raise ConfigurationError(f"{settings.user_prompt}: cannot be read: {error.strerror}") from None
        except UnicodeDecodeError:
            raise ConfigurationError(f"{settings.user_prompt}: not UTF-8 text") from None

    def spec(
        self,
        agent: str,
        models: Models,
        settings: Settings,
        scenarios: tuple[Scenario, ...],
        matching: Matching = Matching(),
        played: Any = None,
    ) -> RunSpec:
        """A new run of ``agent``: of the project's ``scenarios`` (as ``scenarios()`` read them, once
        for every agent of a command), the matching ones it can play with these models, the rest
        skipped. ``played`` is the agent object itself, when known: the model it says it runs on
        is kept beside the judges' (``ModelNames.agent``)."""
        prompt = self.prompt(settings)
        playable, skipped = self.playable(models, settings, scenarios, matching, prompt)
        blind = Blind(played, settings.receive_traces).refused(f"agents/{agent}.py", playable)
        if blind:
            raise ConfigurationError(blind)
        try:
            return RunSpec(
                id=RunId(datetime.now(UTC)).text(),
                agent=agent,
                scenarios=tuple(playable),
                attempts=settings.most_attempts(),
                limits=settings.limits(),
                budget=settings.budget() or Budget(),
                trust=settings.trust,
                models=self.names(models, played),
                fingerprints=self.fingerprints(agent, prompt),
                skipped=tuple(skipped),
                convy=VERSION,
                judging=settings.judging(),
                user_checks=settings.user_checking(),
                user=self.user(models.user, prompt, tuple(playable)),
                adaptive=settings.adaptive(),
                rule=settings.rule(),
            )
        except ValueError as error:  # an agent's file named so that it cannot name a folder
            shown = agent if agent.isprintable() else repr(agent)
            raise ConfigurationError(f"agents/{shown}.py: {error}") from None

    def playable(
        self, models: Models, settings: Settings, scenarios: tuple[Scenario, ...], matching: Matching, prompt: Prompt
    ) -> tuple[tuple[Scenario, ...], tuple[Skipped, ...]]:
        """Of ``scenarios``, those ``matching`` chooses that these models can play, and those they
        cannot, with why. Every chosen scenario must fill the simulator ``prompt``, even one skipped
        now: it would fail the first run with both models."""
        chosen = matching.chosen(scenarios)
        if not chosen or matching.unmatched(scenarios):  # each pattern and tag must choose something
            raise ConfigurationError(matching.missed(scenarios))
        self.bounded(settings, chosen)
        self.scripted(settings, chosen)
        self.fitting(prompt, settings, chosen)
        playable: list[Scenario] = []
        skipped: list[Skipped] = []
        for scenario in chosen:
            missing = [
                f"needs a model for the {'simulated user' if need == 'user' else 'judge'}: {reason}"
                for need, reason in (("user", self._absence(models.user)), ("judge", self._absence(models.judge)))
                if need in scenario.needs() and reason
            ]
            if missing:
                skipped.append(Skipped(scenario.id, tuple(missing)))
                continue
            playable.append(scenario)
        return tuple(playable), tuple(skipped)

    def bounded(self, settings: Settings, scenarios: tuple[Scenario, ...]) -> None:
        """Check that no scenario plays more than a run's bound of attempts (``RunSpec.MOST_ATTEMPTS``)
        over its variants: each variant is played ``attempts`` times."""
        variants: dict[str, int] = {}
        for scenario in scenarios:
            if scenario.variant is not None:
                variants[scenario.variant.of] = variants.get(scenario.variant.of, 0) + 1
        problems = [
            f"scenario {base}: matrix: {count:,} variants × {settings.most_attempts():,} attempts = "
            f"{count * settings.most_attempts():,} attempts, more than {RunSpec.MOST_ATTEMPTS:,}"
            for base, count in variants.items()
            if count * settings.most_attempts() > RunSpec.MOST_ATTEMPTS
        ]
        if problems:
            raise ConfigurationError("\n".join(problems))

    def scripted(self, settings: Settings, scenarios: tuple[Scenario, ...]) -> None:
        """Check that the run's ``max_turns`` leaves room for every script of a scenario that sets
        none of its own: a dialogue stops at ``max_turns``, and a script longer would be cut short
        with no word (a scenario's own ``max_turns`` below its script is refused as it is read).
        convy's default cuts no script of a scenario with no ``user:``: that dialogue is exactly
        its script (``Scenario.play``), so only a ``max_turns`` the user set is held against it."""
        from convy.settings import ProjectSettings  # loaded by the commands that play only

        long = [
            scenario for scenario in scenarios if scenario.max_turns is None and len(scenario.script) > settings.max_turns
        ]
        if not long:
            return
        source = ProjectSettings(self.folder).sourced().sources.get("max_turns", "")
        unset = next(field.default for field in msgspec.structs.fields(settings) if field.name == "max_turns")
        default = not source and settings.max_turns == unset
        problems: dict[str, str] = {}
        for scenario in long:
            if default and not scenario.user.strip():
                continue
            base = scenario.variant.of if scenario.variant is not None else scenario.id
            problems[base] = (
                f"{self._scenario_file(base)}: script: {len(scenario.script)} messages, more than the run's max_turns "
                f"({settings.max_turns}, {self._max_turns_source(source, default)}), which would cut it after "
                f"{settings.max_turns}: give the scenario max_turns: {len(scenario.script)} or more, or raise the run's"
            )
        if problems:
            raise ConfigurationError("\n".join(problems.values()))

    def _scenario_file(self, base: str) -> str:
        """The file of the scenario ``base`` (an id that is its path, as it is unless ``id:`` says
        otherwise), as a line names it; the scenario by its id when no file has that path."""
        folder = self.folder / "scenarios"
        there = next((path for path in (folder / f"{base}{suffix}" for suffix in Scenarios.SUFFIXES) if path.is_file()), None)
        return there.relative_to(self.folder).as_posix() if there is not None else f"scenario {base}"

    def _max_turns_source(self, source: str, default: bool) -> str:
        # Where the run's max_turns came from, as the settings know it: a CONVY_ variable set in
        # the environment wins over the project's .env, as pydantic-settings reads them.
        if default:
            return "convy's default"
        if not source:
            return "as the run's settings give it"
        if source.startswith("CONVY_"):
            where = "the environment" if any(name.upper() == source for name in os.environ) else ".env"
            return f"from {source} in {where}"
        return f"from {source} in pyproject.toml"

    def fitting(self, prompt: Prompt, settings: Settings, scenarios: tuple[Scenario, ...]) -> None:
        """Check that every scenario with a simulated user fills every slot of the simulator
        prompt, and within its size, before any request: a slot left empty, or a prompt that would
        be too large, is a configuration error, with a line for each scenario. So is a prompt that
        would never tell the simulated user its scenario or how to end (``Prompt.unfit``)."""
        shown = settings.user_prompt or "the simulator prompt"
        problems: list[str] = []
        if any(scenario.user.strip() for scenario in scenarios):  # a prompt no scenario is told by may be anything
            problems.extend(f"{shown}: {problem}" for problem in prompt.unfit())
        for scenario in scenarios:
            if scenario.user.strip():
                try:
                    scenario.told(prompt)
                except ValueError as error:
                    problems.append(f"{shown}: {error} for scenario {scenario.id}")
        if problems:
            raise ConfigurationError("\n".join(problems))

    def fingerprints(self, agent: str, prompt: Prompt) -> Fingerprints:
        """SHA-256 of the scenario files, the agent's file, ``models.py`` and the simulator
        prompt (``prompt``, read from the settings now), as they are now."""
        scenarios = hashlib.sha256()
        # personas.yaml (or .yml) fills the variants' slots as the files do: a part of the scenarios, when there is one.
        personas = [self.folder / name for name in Personas.NAMES if (self.folder / name).exists()]
        for path in [*Scenarios(self.folder / "scenarios").files(), *personas]:
            shown = path.relative_to(self.folder).as_posix()
            try:
                data = RegularFile(path).data(YamlFile.MAX_BYTES)
            except OSError as error:
                raise ConfigurationError(f"{shown}: cannot be read: {error.strerror}") from None
            scenarios.update(shown.encode() + b"\0" + data + b"\0")
        return Fingerprints(
            scenarios=scenarios.hexdigest(),
            agent=self._digest(self.folder / "agents" / f"{agent}.py"),
            models=self._digest(self.folder / "models.py"),
            prompt=hashlib.sha256(prompt.text.encode()).hexdigest(),
        )

    # The settings of a model that shape what it says, read when it exposes them (``OpenAiModel``
    # does): never its key, its URL or its headers.
    SHAPING: ClassVar[tuple[str, ...]] = ("temperature", "top_p", "seed", "max_tokens", "effort", "extra")

    def user(self, model: Model | Absent, prompt: Prompt, scenarios: tuple[Scenario, ...]) -> UserShape:
        """What the simulated user of a run of ``scenarios`` is: ``model``'s name and the settings
        it exposes that shape its answers, and each scenario's simulator ``prompt`` as filled for
        it, fingerprinted; not known when no scenario has a simulated user or its model is absent."""
        speaking = [scenario for scenario in scenarios if scenario.user.strip()]
        match model:
            case Absent():
                return UserShape()
            case _:
                pass
        if not speaking:
            return UserShape()
        settings: dict[str, Any] = {}
        for name in self.SHAPING:
            value = getattr(model, name, None)
            if value is None or value == {}:
                continue
            try:  # kept only as plain JSON: a setting of another kind says nothing a comparison can use
                settings[name] = msgspec.json.decode(msgspec.json.encode(value))
            except (TypeError, msgspec.EncodeError):
                continue
        prompts = {scenario.id: hashlib.sha256(scenario.told(prompt).encode()).hexdigest() for scenario in speaking}
        return UserShape(known=True, model=self._named(model), settings=settings, prompts=prompts)

    def results(self) -> Path:
        return self.folder / "results"

    def journal(self, spec: RunSpec) -> RunJournal:
        return RunJournal(self.results() / spec.agent / spec.id)

    def found(self, wanted: str, command: str = "") -> RunJournal:
        """The run whose id is ``wanted``, or the only one whose id contains it. For ``convy
        resume`` (``command``), a part that several runs share names the one among them that is
        not finished, when only one is not: the others have nothing left to play."""
        kept = [path.parent for path in self.results().glob("*/*/run.json")]
        folders, given = kept, wanted
        # A run's folder as tab completion gives it (results/bot/<id>/, or bot/<id>) names it too.
        parts = [part for part in wanted.removeprefix("./").split("/") if part]
        if parts[:1] == ["results"]:
            parts = parts[1:]
        if len(parts) == 2:
            agent, wanted = parts
            folders = [folder for folder in kept if folder.parent.name == agent]
        exact = [folder for folder in folders if folder.name == wanted]
        if exact:
            return RunJournal(exact[0])
        near = [folder for folder in folders if wanted in folder.name]
        if not near:
            latest = sorted(kept, key=lambda folder: folder.name, reverse=True)[:3]
            there = "; the newest: " + ", ".join(f"{folder.name} ({folder.parent.name})" for folder in latest)
            raise ConfigurationError(f"no run matches {given!r} in results/" + (there if kept else ": no run is kept there yet"))
        if len(near) == 1:
            return RunJournal(near[0])
        read = {folder: Runs(self.results()).one(folder) for folder in near}
        # Newest first, by when each started (two runs may start within the second their ids give).
        near.sort(key=lambda folder: (self._started(read[folder]), folder.name), reverse=True)
        states = {folder: self._state(read[folder]) for folder in near}
        if command == "resume":
            open_ = [folder for folder in near if states[folder] != "finished"]
            if len(open_) == 1:
                return RunJournal(open_[0])
        names = ", ".join(f"{folder.name} ({folder.parent.name}, {states[folder]})" for folder in near[:5])
        more = f" and {len(near) - 5} more" if len(near) > 5 else ""
        newest = near[0].name
        raise ConfigurationError(
            f"{given!r} matches {len(near)} runs, newest first: {names}{more}; "
            f"give more of the id (its last part is enough: {f'convy {command} ' if command else ''}{newest.rsplit('-', 1)[-1]})"
        )

    @staticmethod
    def _state(found: Read | Unread) -> str:
        # A run's status in a word (finished, interrupted, running, stopped), for a list to choose from.
        match found:
            case Read() as read:
                return read.status()
            case Unread():
                return "unreadable"

    @staticmethod
    def _started(found: Read | Unread) -> str:
        match found:
            case Read(file=file):
                return file.status.started
            case Unread():
                return ""

    def resumable(self, journal: RunJournal, prompt: Prompt) -> RunSpec:
        """The spec of a run to resume with the simulator ``prompt`` the settings give now; refused
        when its agent's file, ``models.py`` or that prompt changed since, or when its ``run.json``
        names another agent than the folder it is in."""
        spec = journal.run().spec
        if self.journal(spec).folder != journal.folder:  # it would be played there, not here
            raise RunDamaged(
                f"{journal.folder}/run.json: spec.agent: must be the name of the folder the run is in, "
                f"{journal.folder.parent.name}; restore run.json from a copy to resume the run"
            )
        now = self.fingerprints(spec.agent, prompt)
        if spec.origin is not None:  # a re-judged run asks its judge only: the agent and the prompt are its source's
            if now.models != spec.fingerprints.models:
                raise ConfigurationError(
                    f"cannot resume {spec.id}: models.py changed since the run started; re-judge anew"
                )
            return spec
        if now.agent != spec.fingerprints.agent:
            raise ConfigurationError(
                f"cannot resume {spec.id}: agents/{spec.agent}.py changed since the run started; start a new run"
            )
        if now.models != spec.fingerprints.models:
            raise ConfigurationError(
                f"cannot resume {spec.id}: models.py changed since the run started; start a new run"
            )
        if spec.fingerprints.prompt and now.prompt != spec.fingerprints.prompt:
            raise ConfigurationError(
                f"cannot resume {spec.id}: the simulator prompt changed since the run started; start a new run"
            )
        return spec

    def edited(self, spec: RunSpec) -> tuple[str, ...]:
        """What changed since ``spec``'s run started in the scenarios it plays, a line each
        (``scenarios/seat.yaml changed (scenario seat)``): none when the scenario files are as
        they were, or when only files the run does not play changed. A resume plays the copy the
        run kept, so a change must be said before it does."""
        if self.fingerprints(spec.agent, Prompt("")).scenarios == spec.fingerprints.scenarios:
            return ()
        folder = self.folder / "scenarios"
        # Each scenario is found by its id, in whichever file holds it now: a file renamed with
        # its id and content kept plays the same scenario, and is no change.
        found, _ = Scenarios(folder, RunSpec.MOST_ATTEMPTS).located()
        lines: dict[str, list[str]] = {}
        for kept in spec.scenarios:
            base = kept.variant.of if kept.variant is not None else kept.id
            files = [folder / f"{base}{suffix}" for suffix in Scenarios.SUFFIXES]
            there = next((path for path in files if path.is_file()), None)
            shown = f"scenarios/{base}.yaml" if there is None else there.relative_to(self.folder).as_posix()
            now, shown = found.get(kept.id, (None, shown))
            if now == kept:
                continue
            if now is None and there is None:
                lines.setdefault(f"{shown} was removed", []).append(kept.id)
            else:
                persona = kept.variant is not None and "persona" in kept.variant.values  # filled from personas.yaml too
                lines.setdefault(f"{shown}{' or its persona' if persona else ''} changed", []).append(kept.id)
        return tuple(f"{said} (scenario{'s' if len(ids) > 1 else ''} {', '.join(ids)})" for said, ids in lines.items())

    def runs(self, wanted: tuple[str, ...] = (), unsaid: bool = False) -> tuple[tuple[Read, ...], tuple[Unread, ...]]:
        """The runs named (by id or a unique part), or every run and the folders that could not be
        read; ``unsaid``, each read back unsaid (``Runs.unsaid``)."""
        if wanted:
            return tuple(self.read(name, unsaid) for name in wanted), ()
        return Runs(self.results(), unsaid).read()

    def read(self, wanted: str, unsaid: bool = False) -> Read:
        """A run by its id or a unique part of it; one that cannot be read is a configuration error.
        ``unsaid``: its attempts read back unsaid (``Runs.unsaid``), for its summary and report alone."""
        found = Runs(self.results(), unsaid).one(self.found(wanted).folder)
        match found:
            case Read():
                return found
            case Unread(reason=reason):
                raise ConfigurationError(reason)

    def reported(self, summary: Summary, live: LiveView | None = None) -> Path:
        """Write the run's report next to its folder's files; ``live``, the report of a run under
        way that is written again while it plays (``live.LiveReport``)."""
        from convy.page import ReportPage

        path = summary.run.folder / "report.html"
        self._written(path, ReportPage(summary, live).parts())
        if summary.run.status() != "running":
            Listing.kept(summary)  # what the index will want of it, summed already
        return path

    def indexed(
        self,
        every: tuple[tuple[Read | Listed, ...], tuple[Unread, ...]] | None = None,
        live: LiveView | None = None,
        known: tuple[Listed, ...] = (),
    ) -> Path:
        """Write ``results/index.html``: every run (``every``, when the caller has read them all
        already; else each from its ``summary.json``, see ``Listing``, those ``known`` as they are
        given), and the comparisons made so far; ``live``, while a run plays (``live.LiveReport``)."""
        from convy.comparison import comparable
        from convy.page import IndexPage

        runs, unread = every if every is not None else Listing(self.results()).every(known)
        names = tuple(sorted(path.stem for path in (self.results() / "compare").glob("*--*.html")))
        path = self.results() / "index.html"
        self._written(path, (IndexPage(Index(runs, unread, names, comparable).view(), live).html(),))
        return path

    def compared(self, base: Read, candidate: Read) -> tuple[Path, ComparisonView]:
        """Write ``results/compare/<base>--<candidate>.html`` and return its view."""
        from convy.comparison import Comparison
        from convy.page import ComparisonPage

        view = Comparison(base, candidate).view()
        path = self.results() / "compare" / f"{base.file.spec.id}--{candidate.file.spec.id}.html"
        self._written(path, (ComparisonPage(view).html(),))
        return path, view

    def exported(self, runs: tuple[Read, ...], form: str) -> tuple[Path, ...]:
        """Write the runs' tables to ``results/export/<table>.<csv|jsonl>``; with ``otlp``, their
        traces to ``results/export/otlp-traces.jsonl`` and ``otlp-logs.jsonl`` instead."""
        from convy.tables import Tables

        folder = self.results() / "export"
        written: list[Path] = []
        if form == "otlp":
            from convy.traces import RunTraces

            traces = RunTraces(runs, VERSION)
            for kind, name in traces.FILES.items():
                self._written(folder / name, traces.lines(kind))  # type: ignore[arg-type]
                written.append(folder / name)
            return tuple(written)
        tables = Tables(runs)
        for name in tables.COLUMNS:  # every table, in TableName's order
            path = folder / f"{name}.{form}"
            # Written line by line as each attempt's rows are made: no table is held whole.
            self._written(path, tables.lines(name, "csv" if form == "csv" else "jsonl"))
            written.append(path)
        return tuple(written)

    def _written(self, path: Path, parts: Iterable[str]) -> None:
        """Write the text in ``parts`` to ``path`` whole, through a temporary file, each part as
        it is made (a report's pieces are made while it is written)."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            Replaced(path).written(part.encode() for part in parts)
        except OSError as error:  # a full disk, a file-size limit, a read-only folder
            raise Unwritable(path, error) from error

    def created(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Copy the template project here: the files written, and those left as they were."""
        import shutil  # here, as importlib.resources: only convy init copies files out of the package
        from importlib import resources

        template = resources.files("convy").joinpath("template")
        written: list[str] = []
        kept: list[str] = []
        with resources.as_file(template) as source:
            for path in sorted(source.rglob("*")):
                if path.is_dir() or "__pycache__" in path.parts:
                    continue
                relative = path.relative_to(source)
                target = self.folder / relative
                if target.exists():
                    kept.append(relative.as_posix())
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
                written.append(relative.as_posix())
        return tuple(written), tuple(kept)

    def _absence(self, model: Model | Absent) -> str:
        match model:
            case Absent(reason=reason):
                return reason
            case _:
                return ""

    def _named(self, model: Model | Judge | Absent) -> str:
        return model.name

    def names(self, models: Models, played: Any = None) -> ModelNames:
        """The run's models by name, a panel's judges one by one, the agent's model when it says,
        and each one's provider when its name or URL tells it (``providers.Made``)."""
        judge = models.judge
        match judge:
            case Panel(judges=judges):
                panel = judge.names()
                made = {name: judge_made(one) for name, one in zip(panel, judges, strict=True)}
            case Absent():
                panel, made = (), {}
            case _:
                panel, made = (), {judge.name: judge_made(judge)}
        agent = agent_made(played) if played is not None else Made()
        providers = {name: known for name, one in made.items() if (known := one.provider())}
        return ModelNames(self._named(models.user), self._named(judge), panel, agent.name, agent.provider(), providers)

    def _digest(self, path: Path) -> str:
        try:
            return hashlib.sha256(RegularFile(path).data(self.MAX_CODE_BYTES)).hexdigest()
        except FileNotFoundError:
            return ""
        except OSError as error:
            raise ConfigurationError(f"{path.relative_to(self.folder)}: cannot be read: {error.strerror}") from None

    def _loaded(self, path: Path, name: str) -> Any:
        folder = str(self.folder.resolve())
        if folder not in sys.path:
            sys.path.insert(0, folder)
        unique = f"convy_project_{hashlib.sha256(folder.encode()).hexdigest()[:8]}.{name}"
        spec = importlib.util.spec_from_file_location(unique, path)
        if spec is None or spec.loader is None:
            raise ConfigurationError(f"{path.relative_to(self.folder)}: cannot be loaded as Python")
        module = importlib.util.module_from_spec(spec)
        # Compiled from its source each time, never from a bytecode cache: Python takes a cache as
        # current when the source's size and its change time in whole seconds match, so a file
        # rewritten within the second it was last loaded, to the same size (a rate changed in
        # models.py by a script), would play its old code. Nothing is written into the project.
        try:
            source = path.read_bytes()
        except OSError as error:
            raise ConfigurationError(f"{path.relative_to(self.folder)}: cannot be read: {error.strerror}") from None
        exec(compile(source, str(path), "exec", dont_inherit=True), module.__dict__)  # noqa: S102 - the project's own code, which convy runs
        return module


