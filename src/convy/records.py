"""A run's records: what it plays and with what (``RunSpec``, its ``Limits``, the names and
fingerprints it started with), its id and name, and its status (``run.json``).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Iterable
from datetime import datetime
from typing import Any, ClassVar

import msgspec

from convy.adaptive import Adaptive, Rounds
from convy.budget import Budget, Outlay
from convy.busy import START, Patience, Places
from convy.judge import Judging
from convy.passing import PassRule
from convy.plan import Plan, Player
from convy.quota import Services
from convy.scenario import Scenario
from convy.user import UserChecks
from convy.waits import Who


class Limits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How much each participant does at once and per minute (0: no limit), how long it waits for
    a busy service (``*_patience``, seconds per request), how long a dialogue may go, and the
    agent's time limits in seconds. Places with no cap (0) start at ``busy.START`` and grow while
    the service keeps up (``busy.Places``); a number is a cap a team sets to protect a service."""

    agent_places: int = 0
    user_places: int = 0
    judge_places: int = 0
    agent_per_minute: int = 0
    user_per_minute: int = 0
    judge_per_minute: int = 0
    agent_patience: float = 300.0
    user_patience: float = 300.0
    judge_patience: float = 300.0
    max_turns: int = 10
    open_seconds: float = 60.0
    turn_seconds: float = 120.0
    close_seconds: float = 60.0

    # Each participant's cap of places, by who it is: the one list of those fields, for every
    # reader that goes through them (``starting`` reads one by its participant's name too).
    PLACES: ClassVar[dict[Who, str]] = {"agent": "agent_places", "user": "user_places", "judge": "judge_places"}
    # Every cap a spread run splits among its workers (``shared``, ``settings.Spread.hands``):
    # the places and the per-minute caps, 0 for none.
    CAPS: ClassVar[tuple[str, ...]] = (*PLACES.values(), "agent_per_minute", "user_per_minute", "judge_per_minute")

    # The largest value each may take: beyond them a run would never end or would not fit in
    # memory, and a number that is not finite would not read back from run.json.
    MOST: ClassVar[dict[str, float]] = {
        "max_turns": 1_000,
        "agent_places": 100_000,
        "user_places": 100_000,
        "judge_places": 100_000,
        "agent_per_minute": 1_000_000,
        "user_per_minute": 1_000_000,
        "judge_per_minute": 1_000_000,
        "agent_patience": 1_000_000.0,
        "user_patience": 1_000_000.0,
        "judge_patience": 1_000_000.0,
        "open_seconds": 1_000_000.0,
        "turn_seconds": 1_000_000.0,
        "close_seconds": 1_000_000.0,
    }

    def __post_init__(self) -> None:
        for name, most in self.MOST.items():
            value = getattr(self, name)
            if value is None:  # a setting left unset (``Settings.min_attempts``)
                continue
            if value != value or value in (math.inf, -math.inf):  # compared, never made a float: an int may not fit one
                raise ValueError(f"{name}: must be a finite number")
            if value > most:
                raise ValueError(f"{name}: must be at most {most:,.0f}")
        if self.max_turns < 1:
            raise ValueError("max_turns: must be at least 1")
        for name in self.PLACES.values():
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: must be 0 (no cap: places grow) or more")
        for name in ("agent_per_minute", "user_per_minute", "judge_per_minute"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: must be 0 (no limit) or more")
        for name in ("agent_patience", "user_patience", "judge_patience"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: must be 0 or more")
        for name in ("open_seconds", "turn_seconds", "close_seconds"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}: must be more than 0")

    def shared(self, number: int, of: int) -> Limits:
        """The share of these limits that worker ``number`` (from 0) of ``of`` keeps in a spread
        run: every participant's places and per-minute cap split in whole parts that add up to
        the run's (the first workers keeping one more of what does not split evenly); a cap of 0,
        no cap, stays none. The run's hands are never more than the smallest of them."""
        parts = {}
        for name in self.CAPS:
            whole = getattr(self, name)
            parts[name] = whole // of + (1 if number < whole % of else 0)
        return msgspec.structs.replace(self, **parts)

    def starting(self, who: Who) -> int:
        """How many places ``who`` has as the run starts: its cap, or ``START`` with none (they grow
        from there). What a stopped run's budget is reckoned with (``spent.Stop.more``), and what
        a spread run hands each worker before the worker says how its places grew."""
        return getattr(self, f"{who}_places") or START

    def places(self, who: Who, services: Services | None = None) -> Places:
        """New places for one participant of a run, made in the event loop that will use them;
        participants given the same ``services`` share what they learn of a service they share."""
        return Places(
            getattr(self, f"{who}_places"),
            who,
            getattr(self, f"{who}_per_minute"),
            Patience(getattr(self, f"{who}_patience")),
            services,
        )


class Fingerprints(msgspec.Struct, frozen=True):
    """SHA-256 of what a run started with: the scenario files, the agent's file, models.py, and
    the simulator prompt's text."""

    scenarios: str = ""
    agent: str = ""
    models: str = ""
    prompt: str = ""


class UserShape(msgspec.Struct, frozen=True, omit_defaults=True):
    """What the simulated user of a run was (issue 11): its model's name, the settings of that
    model that shape what it says (those it exposes of ``temperature``, ``top_p``, ``seed``,
    ``max_tokens``, ``effort`` and the ``extra`` fields of its requests — never its key or its
    URL), and the SHA-256 of each scenario's simulator prompt as filled for it (the prompt's text
    with the scenario's instructions and vars: what the model is told), by scenario id.

    ``known`` is false in a run.json written before it was kept, and in a run with no simulated
    user at all: a comparison then has nothing of it to compare. A re-judged run keeps its source's
    (its dialogues are the source's)."""

    known: bool = False
    model: str = ""
    settings: dict[str, Any] = {}
    prompts: dict[str, str] = {}

    def changes(self, other: UserShape, scenarios: Iterable[str]) -> list[str]:
        """What differs from this user to ``other``, in words ("model a → b", "temperature 0.2 →
        0.7", "its filled prompt in 2 of 5 scenarios"), the prompts looked at in ``scenarios``
        only; nothing when either is not known."""
        if not (self.known and other.known):
            return []
        said: list[str] = []
        if self.model != other.model:
            said.append(f"model {self.model or 'none'} → {other.model or 'none'}")
        for name in sorted(set(self.settings) | set(other.settings)):
            before, after = self.settings.get(name), other.settings.get(name)
            if before != after:
                said.append(f"{name} {self._said(before)} → {self._said(after)}")
        looked = [scenario for scenario in scenarios if scenario in self.prompts and scenario in other.prompts]
        differ = sum(1 for scenario in looked if self.prompts[scenario] != other.prompts[scenario])
        if differ:
            said.append(f"its filled prompt in {differ} of {len(looked)} scenarios compared")
        return said

    def _said(self, value: Any) -> str:
        # A setting's value as a comparison says it: JSON, or "unset".
        return "unset" if value is None else msgspec.json.encode(value).decode()


class ModelNames(msgspec.Struct, frozen=True, omit_defaults=True):
    """The models of a run, by name only: an object would carry its keys.

    ``judge`` is the judge's name, a panel's names joined with ", " (as a run.json before panels
    has it); ``panel`` the panel's judges one by one (empty for one judge). ``agent`` is the model
    the agent runs on, when it says (``ChatAgent.model``, or a ``model`` attribute of the project's
    agent: "" when it does not), ``agent_provider`` its provider, and ``providers`` each judge's
    whose provider is known (``providers.Made``): for the report to name a judge that may favour
    the agent's own provider."""

    user: str = "absent"
    judge: str = "absent"
    panel: tuple[str, ...] = ()
    agent: str = ""
    agent_provider: str = ""
    providers: dict[str, str] = {}

    def alike(self) -> tuple[str, ...]:
        """The judges from the same provider as the agent's model: possibly biased towards it."""
        if not self.agent_provider:
            return ()
        return tuple(judge for judge in self.judges() if self.providers.get(judge) == self.agent_provider)

    def judges(self) -> tuple[str, ...]:
        """The run's judges one by one: a panel's, or the one judge (none when it was absent)."""
        if self.panel:
            return self.panel
        return () if self.judge == "absent" else (self.judge,)


class Skipped(msgspec.Struct, frozen=True):
    """A scenario the run did not play, and why: one reason per model it needs and lacks."""

    scenario: str
    reasons: tuple[str, ...]


class FolderName(msgspec.Struct, frozen=True):
    """A field naming one folder of ``results/<agent>/<run>``: one plain, printable name of at most
    ``LONGEST`` characters, never a path (``ValueError`` naming the field otherwise)."""

    field: str
    name: str

    LONGEST: ClassVar[int] = 200

    def check(self) -> None:
        name = self.name
        if name in ("", ".", "..") or "/" in name or "\\" in name or not name.isprintable():
            raise ValueError(f"{self.field}: not a folder's name")
        if len(name) > self.LONGEST:
            raise ValueError(f"{self.field}: longer than {self.LONGEST} characters")


class RunName(msgspec.Struct, frozen=True):
    """A run's name as a person gave it (``convy run --name "prompt B"``): one printable line of
    at most ``LONGEST`` characters with something in it, or none at all (``""``). Checked where it
    enters (the command line) and where it is read back (run.json, which anyone may have edited):
    a name is shown on pages and in terminals, so it must never carry a control character."""

    text: str

    LONGEST: ClassVar[int] = 80

    def problem(self) -> str | None:
        """What is wrong with the name, in words that say the fix; None for a sound one."""
        if not self.text.strip():
            return "must not be blank: give a few words, e.g. --name \"prompt B\""
        if not self.text.isprintable():
            return "must be one line of printable characters (no tabs, newlines or control characters)"
        if len(self.text) > self.LONGEST:
            return f"{len(self.text)} characters: give at most {self.LONGEST}"
        return None


class Origin(msgspec.Struct, frozen=True):
    """The run whose recorded dialogues a re-judged run decides again (``convy rejudge``): its
    agent and id, so its folder is ``results/<agent>/<run>``."""

    agent: str
    run: str

    def __post_init__(self) -> None:
        # Read from run.json, which anyone may have written: results/<agent>/<run> must never lead
        # out of results/ (an absolute path joined to it would replace it).
        FolderName("agent", self.agent).check()
        FolderName("run", self.run).check()


class RunSpec(msgspec.Struct, frozen=True):
    """What a run plays: enough to play the rest of it later, and to tell two runs apart."""

    id: str
    agent: str
    scenarios: tuple[Scenario, ...]
    attempts: int
    limits: Limits
    trust: float = 0.0
    models: ModelNames = ModelNames()
    fingerprints: Fingerprints = Fingerprints()
    skipped: tuple[Skipped, ...] = ()
    convy: str = ""
    budget: Budget = Budget()  # what it may spend, as its last play was given it (``convy resume`` keeps it); Budget(): none
    origin: Origin | None = None  # a re-judged run's source; None for a run that was played
    judging: Judging = Judging()  # how its claims are judged (a run.json before it: once, by one judge)
    user: UserShape = UserShape()  # what its simulated user was (a run.json before it: not known)
    user_checks: UserChecks = UserChecks()  # how its simulated user is checked (before it: by code, faults not judged)
    adaptive: Adaptive | None = None  # the rule that spends its attempts, ``attempts`` then the most (None: all played)
    rule: PassRule = PassRule()  # what the project accepts of it (a run.json before it: every attempt passes)
    name: str = ""  # what a person called it (``convy run --name``); "" for none (a run.json before names)

    MOST_ATTEMPTS: ClassVar[int] = 10_000
    LONGEST_NAME: ClassVar[int] = FolderName.LONGEST

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts: must be at least 1")
        if self.attempts > self.MOST_ATTEMPTS:
            raise ValueError(f"attempts: must be at most {self.MOST_ATTEMPTS:,}")
        if not 0.0 <= self.trust <= 1.0:
            raise ValueError("trust: must be between 0 and 1")
        # The run's folder is results/<agent>/<id>: each must be one plain name, never a path.
        FolderName("id", self.id).check()
        FolderName("agent", self.agent).check()
        if self.name:
            problem = RunName(self.name).problem()
            if problem is not None:
                raise ValueError(f"name: {problem}")
        if self.adaptive is not None and self.adaptive.least > self.attempts:
            raise ValueError("min_attempts: must be at most max_attempts")

    def planned(self) -> Plan:
        return Plan(self.scenarios, self.attempts)

    def player(self, player: Player) -> Player:
        """What plays this run: ``player``, or, for a run whose attempts are spent adaptively,
        ``adaptive.Rounds`` around it."""
        if self.adaptive is None:
            return player
        return Rounds(player, self.adaptive, tuple(scenario.id for scenario in self.scenarios), self.attempts, self.trust)


class RunId(msgspec.Struct, frozen=True):
    """A new run's id: when it started, and a few random letters so two runs never share one."""

    moment: datetime

    def text(self) -> str:
        return f"{self.moment.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


class Running(msgspec.Struct, frozen=True, tag="running"):
    """A run being played, or whose process died without a word (its lock is then free)."""

    started: str


class Complete(msgspec.Struct, frozen=True, tag="finished", omit_defaults=True):
    """A run whose every planned attempt is kept; ``budget``, the budget its last play was given,
    when one was set (left out of run.json when none was: an older convy, which does not know the
    field, reads such a run as finished); ``reached``, what was spent when the play reached or
    crossed that budget with its last attempts (those under way, or the first, whose spend was not
    known before it ended), else ``None``."""

    started: str
    ended: str
    budget: Budget = Budget()
    reached: Outlay | None = None


class Interrupted(msgspec.Struct, frozen=True, tag="interrupted"):
    """A run stopped before its end, by Ctrl+C or an error; ``convy resume`` plays the rest."""

    started: str
    ended: str


class Stopped(msgspec.Struct, frozen=True, tag="stopped"):
    """A run its budget stopped: no attempt was started once what it would likely spend no longer
    fitted, those under way were kept; ``spent`` says which budget and what was spent. ``convy resume`` with a larger budget
    plays the rest. (Added after the first three: decision 5 says what an older convy makes of it.)"""

    started: str
    ended: str
    spent: Outlay


class RunFile(msgspec.Struct, frozen=True):
    """``run.json``: the run's spec and status."""

    spec: RunSpec
    status: Running | Complete | Interrupted | Stopped
    format: int = 1
