"""convy's own settings for a project: ``[tool.convy]`` of its ``pyproject.toml``, with the
``CONVY_*`` variables over it.

The variables are read with pydantic-settings (``convy.env.variables``, decision 3), loaded only
when one of them is set, in the environment or in the project's ``.env``: a run of a project
that sets none, and whose own code uses no ``Env``, never loads pydantic.
"""

from __future__ import annotations

import importlib
import io
import logging
import math
import os
import re
import socket
from pathlib import Path
from typing import Any, ClassVar, Literal

import msgspec

from convy.adaptive import Adaptive, Narrow
from convy.budget import Budget
from convy.files import RegularFile
from convy.judge import Judging
from convy.live import LiveReport
from convy.passing import PassRule, Share
from convy.problems import ConfigurationError, FieldProblem
from convy.records import Limits, RunSpec
from convy.slips import Slips
from convy.spelling import Spelling
from convy.user import Consequence, ModelCheck, UserChecks


class Settings(Limits, frozen=True, forbid_unknown_fields=True):
    """convy's settings for a project: the run's limits (every field of ``Limits``, declared and
    bounded there alone), attempts per scenario, the trust threshold, the share of attempts that
    may go unjudged before the command exits with its own code (``max_not_judged``: a gate of the
    command, not part of the run, so it is kept in no run folder), the pass rule (``fail_under``,
    ``fail_on_skip``: ``passing.PassRule``, kept in the run's spec so every reader of the run gives
    the verdict its command gave), the run's budget (``max_cost``
    in US dollars, ``max_tokens``, ``max_minutes``; 0 is none: a command's, given again to each
    ``convy resume``, so kept in no run folder either), the file of the simulator prompt, and how
    claims are judged (``judge_repeats``, ``panel``, ``evidence``: a ``judge.Judging``, kept in the
    run's spec)."""

    attempts: int | Literal["auto"] = 3
    min_attempts: int | None = None  # unset: FIRST_ROUND, or max_attempts when that is lower (``first_round``)
    max_attempts: int = 60
    target_width: float = 0.2
    trust: float = 0.0
    max_not_judged: float = 0.0
    fail_under: float | None = None  # the least mean pass rate (passing.PassRule); unset: every attempt passes
    fail_on_skip: bool = False  # a scenario skipped fails the run
    max_cost: float = 0.0
    max_tokens: int = 0
    max_minutes: float = 0.0
    user_prompt: str = ""
    judge_repeats: int = 1
    panel: Literal["majority", "unanimous"] = "majority"
    evidence: Literal["flag", "require"] = "flag"
    user_checks: tuple[ModelCheck, ...] = ()
    user_faults: Consequence = "not_judged"
    workers: int = 0
    ray: str = ""
    live_seconds: float = 5.0
    receive_traces: bool = False  # the agent's own spans received while the run plays (issue 30)
    traces_port: int = 0  # the port they are received on, on 127.0.0.1; 0: one the system picks
    traces_wait: float = 10.0  # seconds an attempt waits for the spans of its turns

    MOST_LIVE: ClassVar[float] = 3600.0
    FIRST_ROUND: ClassVar[int] = 5  # attempts of each scenario's first round under auto, unless set
    # What a field of two kinds takes, said of a value of neither kind instead of msgspec's words
    # for the last kind it tried ("Invalid enum value ...", which repeats the value besides).
    KINDS: ClassVar[dict[str, str]] = {
        "attempts": "must be a whole number of at least 1, or auto",
        **dict.fromkeys(("trust", "max_not_judged", "fail_under"), 'must be a number from 0 to 1, or a percentage (0.9 or "90%")'),
    }

    # The largest value each number may take: those of a run's spec and limits, which a run
    # folder is held to as well.
    MOST: ClassVar[dict[str, float]] = {
        "min_attempts": RunSpec.MOST_ATTEMPTS,
        "max_attempts": RunSpec.MOST_ATTEMPTS,
        "judge_repeats": Judging.MOST_REPEATS,
        **Limits.MOST,
        **Budget.MOST,
    }

    def __post_init__(self) -> None:
        super().__post_init__()  # every number within MOST, and the limits' own bounds, named by field
        if not math.isfinite(self.trust) or not 0.0 <= self.trust <= 1.0:
            raise ValueError("trust: must be between 0 and 1")
        if not math.isfinite(self.max_not_judged) or not 0.0 <= self.max_not_judged <= 1.0:
            raise ValueError("max_not_judged: must be between 0 and 1")
        self.rule()  # fail_under within 0 and 1, said by field
        match self.attempts:
            case "auto":
                pass
            case int() as attempts if attempts > RunSpec.MOST_ATTEMPTS:
                raise ValueError(f"attempts: must be at most {RunSpec.MOST_ATTEMPTS:,}")
            case int() as attempts if attempts >= 1:
                pass
            case _:  # 0 or less, or what ``-k`` was given over the settings when it is neither
                raise ValueError(f"attempts: {self.KINDS['attempts']}")
        if self.min_attempts is not None and self.min_attempts < 1:
            raise ValueError("min_attempts: must be at least 1")
        if self.max_attempts < 1:
            raise ValueError("max_attempts: must be at least 1")
        if self.min_attempts is not None and self.min_attempts > self.max_attempts:
            raise ValueError(f"min_attempts: must be at most max_attempts ({self.max_attempts})")
        Narrow(self.target_width)  # within (0, 1), said by field
        if self.judge_repeats < 1:
            raise ValueError("judge_repeats: must be at least 1")
        for name in Budget.MOST:  # finite and within MOST already
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: must be 0 (no budget) or more")
        if not self.user_prompt.isprintable():  # a NUL, a line break, a terminal's escape
            raise ValueError("user_prompt: not a file name")
        UserChecks(self.user_checks, self.user_faults)  # a check given twice, said by field
        Spread(self.workers, self.ray)  # workers within bounds, an address that is one, said by field
        if not math.isfinite(self.live_seconds) or not 0.0 <= self.live_seconds <= self.MOST_LIVE:
            raise ValueError(f"live_seconds: must be 0 (no live report) or up to {self.MOST_LIVE:g}")
        self.receiving()

    MOST_WAIT: ClassVar[float] = 600.0

    def receiving(self) -> None:
        """The settings of the agent's spans received (``receive_traces``), each said by field
        where it is out of bounds or set without them."""
        if not 0 <= self.traces_port <= 65535:
            raise ValueError("traces_port: must be a port, from 1 to 65535 (0: one the system picks)")
        if not math.isfinite(self.traces_wait) or not 0.0 <= self.traces_wait <= self.MOST_WAIT:
            raise ValueError(f"traces_wait: must be from 0 to {self.MOST_WAIT:g} seconds")
        if not self.receive_traces:
            defaults = {field.name: field.default for field in msgspec.structs.fields(self)}
            for name in ("traces_port", "traces_wait"):
                if getattr(self, name) != defaults[name]:
                    raise ValueError(f"{name}: goes with receive_traces = true, which is not set")
        elif self.workers or self.ray:
            raise ValueError(
                "receive_traces: the agent's spans are received by one process, so it does not go with "
                "workers or ray; set workers = 0 and leave ray unset to receive them"
            )

    def live(self, project: Path, run: str) -> LiveReport | None:
        """The report of ``run`` written again every ``live_seconds`` while it plays; ``None`` when 0."""
        return LiveReport(project, run, self.live_seconds) if self.live_seconds else None

    def most_attempts(self) -> int:
        """The attempts a scenario gets, or may get at most when they are spent adaptively."""
        return self.max_attempts if self.attempts == "auto" else self.attempts

    def first_round(self) -> int:
        """Each scenario's first round under ``attempts = "auto"``: ``min_attempts`` when set,
        else ``FIRST_ROUND`` or ``max_attempts`` when that is lower (a max set alone is not refused
        for a min nobody set)."""
        return self.min_attempts if self.min_attempts is not None else min(self.FIRST_ROUND, self.max_attempts)

    def adaptive(self) -> Adaptive | None:
        """The rule that spends a run's attempts (``attempts = "auto"``), as its spec keeps it."""
        return Adaptive(self.first_round(), Narrow(self.target_width)) if self.attempts == "auto" else None

    def rule(self) -> PassRule:
        """What the project accepts of a run, as its spec keeps it (``passing.py``)."""
        return PassRule(self.fail_under, self.fail_on_skip, self.max_not_judged)

    def budget(self) -> Budget | None:
        """The run's budget, or ``None`` when none is set: a run without one counts nothing."""
        budget = Budget(self.max_cost, self.max_tokens, self.max_minutes)
        return budget if budget.set() else None

    def spread(self) -> Spread:
        """Where the run is played: this process alone, or workers on Ray (``spread.py``)."""
        return Spread(self.workers, self.ray)

    def judging(self) -> Judging:
        """How the run's claims are judged, as its spec keeps it."""
        return Judging(self.judge_repeats, self.panel, self.evidence)

    def user_checking(self) -> UserChecks:
        """How the run checks its simulated user, as its spec keeps it."""
        return UserChecks(self.user_checks, self.user_faults)

    def limits(self) -> Limits:
        """The run's limits: these settings' fields that ``Limits`` declares, as a ``Limits``."""
        return Limits(**{name: getattr(self, name) for name in Limits.__struct_fields__})


# The settings a CONVY_* variable sets: every one but the prompt's file. Declared here once: the
# variables read (``env.variables``) and the slips looked for (``slips``) are made from it.
VARIABLES: tuple[str, ...] = tuple(name for name in Settings.__struct_fields__ if name != "user_prompt")


class _Tool(msgspec.Struct, frozen=True):
    convy: dict[str, Any] = {}


class Pyproject(msgspec.Struct, frozen=True):
    """The part of a project's ``pyproject.toml`` convy reads: ``[tool.convy]``."""

    tool: _Tool = _Tool()


class DotEnv(msgspec.Struct, frozen=True):
    """A project's ``.env``, checked before pydantic-settings reads it: python-dotenv only logs a
    line it cannot parse, three times over (once per reader), and goes on without that setting."""

    path: Path

    MAX_BYTES: ClassVar[int] = 1024 * 1024

    def checked(self) -> None:
        """Nothing when the file is absent or can be read whole; else a ``ConfigurationError``
        naming ``.env`` and the line, never what the line holds."""
        try:
            raw = RegularFile(self.path).data(self.MAX_BYTES)
        except FileNotFoundError:
            return
        except OSError as error:
            raise ConfigurationError(f".env: cannot be read: {error.strerror}") from None
        from dotenv.parser import parse_stream  # pydantic-settings' own reader; loaded only for a .env

        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigurationError(".env: cannot be read as UTF-8 text") from None
        seen: dict[str, tuple[str, int, str | None]] = {}  # each name set, in capitals, as first written, its line and value
        for binding in parse_stream(io.StringIO(text.removeprefix("\ufeff"))):
            if binding.error:
                # Said once here: python-dotenv would log it again each time the file is read
                # (the secrets are looked for in it while this error is shown).
                logging.getLogger("dotenv.main").setLevel(logging.ERROR)
                colon = re.match(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*:", binding.original.string)
                if colon:  # YAML's way: the name is said, never the value
                    raise ConfigurationError(
                        f".env: line {binding.original.line}: {colon[1]}: a .env line is NAME=value: write {colon[1]}=..."
                    )
                raise ConfigurationError(
                    f".env: line {binding.original.line}: cannot be parsed (a quote left open, or a line "
                    "that is not NAME=value)"
                )
            if binding.key is None:
                continue
            first = seen.setdefault(binding.key.upper(), (binding.key, binding.original.line, binding.value))
            # Read in any case, the last one set wins: which was meant? The same value again changes nothing.
            if first[1] != binding.original.line and first[2] != binding.value:
                again = binding.key if binding.key == first[0] else f"{binding.key} (read as {first[0]})"
                raise ConfigurationError(
                    f".env: line {binding.original.line}: {again} is set again (first on line {first[1]}); "
                    "the last would win: keep one"
                )


class Sourced(msgspec.Struct, frozen=True):
    """A project's settings as read: those in force (each field refused left at its default),
    where each one given came from (``[tool.convy]`` or its ``CONVY_*`` variable), and every
    problem met on the way, each naming its file or variable and the field. ``dotenv`` is whether
    the project's ``.env``, when there is one, can be read: the project's own code reads it too
    (and would wait for ever on a FIFO)."""

    settings: Settings
    sources: dict[str, str]
    problems: tuple[str, ...]
    dotenv: bool = True


class ProjectSettings(msgspec.Struct, frozen=True):
    """A project's settings: its ``pyproject.toml``, then the environment over it.

    Every fault is a ``ConfigurationError`` naming the file or the variable and the field, never
    the value read; ``sourced`` gathers them all, each said once.
    """

    folder: Path

    MAX_BYTES: ClassVar[int] = 1024 * 1024

    def settings(self) -> Settings:
        """The settings in force; a ``ConfigurationError`` with one line per problem when any is wrong."""
        sourced = self.sourced()
        if sourced.problems:
            raise ConfigurationError("\n".join(sourced.problems))
        return sourced.settings

    def sourced(self) -> Sourced:
        """The settings read from every source, with every problem of each, none stopping the others."""
        problems: list[str] = []
        try:
            table = dict(self._table())  # a copy: the fields refused are taken out of it
        except ConfigurationError as error:
            problems.append(str(error))
            table = {}
        table = self._rates(table)
        for said in self._refused(table, table, strict=True):  # [tool.convy] alone, strictly typed
            problems.append(f"pyproject.toml: [tool.convy] {said}")
        dotenv: Path | None = self.folder / ".env"
        try:
            DotEnv(self.folder / ".env").checked()
        except ConfigurationError as error:
            problems.append(str(error))
            dotenv = None  # not read again: the variables are read from the environment alone
        try:
            given = self._variables(dotenv)
        except ConfigurationError as error:
            problems.append(str(error))
            given = {}
        # A CONVY_* name one slip from convy's own is read by nothing: refused with the name meant.
        problems.extend(Slips(self.folder, VARIABLES, dotenv is not None).convy())
        for name, value in list(given.items()):
            if re.search("[\ud800-\udfff]", value):  # bytes that were not UTF-8, as Python keeps them
                problems.append(f"CONVY_{name.upper()}: {name}: not UTF-8 text")
                del given[name]
        listed: dict[str, Any] = self._rates(given)
        if "user_checks" in given:  # a list in a variable: names apart by commas (or spaces)
            listed["user_checks"] = [name for name in re.split(r"[,\s]+", given["user_checks"]) if name]
        variables = set(given)
        for said in self._refused({**table, **listed}, listed, strict=False):
            path, _, what = said.partition(": ")
            field = self._field(path)
            if field in variables:
                problems.append(f"CONVY_{field.upper()}: {field}: {what}")
            else:
                problems.append(f"settings: {said} (CONVY_* variables or [tool.convy])")
        sources = {name: "[tool.convy]" for name in table} | {name: f"CONVY_{name.upper()}" for name in listed}
        settings = msgspec.convert({**table, **listed}, Settings, strict=False)
        return Sourced(settings, sources, tuple(dict.fromkeys(problems)), dotenv is not None)

    # The shares the command line takes as 0.9 or 90% (``cli.parser.Fraction``): a file or a variable takes both alike.
    RATES: ClassVar[tuple[str, ...]] = ("trust", "max_not_judged", "fail_under")  # as Settings.KINDS says them

    def _rates(self, values: dict[str, Any]) -> dict[str, Any]:
        """``values`` with each share written as a percentage (``"90%"``) as the number it is
        (0.9); any other text is left for ``Settings`` to refuse, naming the field."""
        return {name: Share(value).number() if name in self.RATES else value for name, value in values.items()}

    def _refused(self, values: dict[str, Any], given: dict[str, Any], strict: bool) -> list[str]:
        """What ``Settings`` refuses of ``values``, one problem after another: each field refused is
        taken out of ``given`` (and of ``values``) and the rest tried again, so ``values`` ends
        sound. A problem that names no field given leaves every field of ``given`` out."""
        refused: list[str] = []
        while True:
            try:
                msgspec.convert(values, Settings, strict=strict)
                return refused
            except msgspec.ValidationError as error:
                said = self._said(str(error))
            refused.append(said)
            field = self._field(said.partition(": ")[0])
            for name in [field] if field in given else list(given):
                del given[name]
                values.pop(name, None)

    def _said(self, message: str) -> str:
        """msgspec's message as one line naming the field; a value of neither kind of a field of
        two kinds is told what the field takes (``Settings.KINDS``)."""
        what, at, where = message.rpartition(" - at `$.")
        field = where.removesuffix("`")
        if at and field in Settings.KINDS and what.startswith(("Invalid enum value", "Expected `")):
            return f"{field}: {Settings.KINDS[field]}"
        return FieldProblem(message, Settings).text()

    def _field(self, path: str) -> str:
        """The setting a problem's path names: ``user_checks`` of ``user_checks[1]``."""
        return re.split(r"[.\[]", path, maxsplit=1)[0]

    def _variables(self, dotenv: Path | None) -> dict[str, str]:
        """The ``CONVY_*`` variables set, by field name, in the environment and ``dotenv``."""
        if not self._named(dotenv):
            return {}
        import pydantic

        from convy.env import variables as read

        try:
            variables = read(VARIABLES)(_env_file=dotenv)  # type: ignore[call-arg]
        except pydantic.ValidationError as error:
            fields = ", ".join("CONVY_" + str(problem["loc"][0]).upper() for problem in error.errors())
            raise ConfigurationError(f"cannot read {fields}") from None
        except (OSError, ValueError):  # the .env file: not a file, or not UTF-8 text
            raise ConfigurationError(".env: cannot be read as UTF-8 text") from None
        return {name: value for name, value in variables.model_dump().items() if value is not None}

    def _named(self, path: Path | None) -> bool:
        """Whether a ``CONVY_*`` variable may be set, in the environment or in the ``.env`` at
        ``path`` (names in any case, as pydantic-settings reads them): without one, the variables
        say nothing."""
        if any(name.upper().startswith("CONVY_") for name in os.environ):
            return True
        if path is None or not path.exists():
            return False
        from dotenv import dotenv_values  # pydantic-settings' own reader of .env

        try:
            return any(name.upper().startswith("CONVY_") for name in dotenv_values(path, encoding="utf-8"))
        except (OSError, ValueError):  # read as the variables read it, which says what is wrong
            return True

    def _misplaced(self, document: Any) -> None:
        """A ``ConfigurationError`` for a table meant as ``[tool.convy]`` under another name, which
        nothing reads: ``[tool.convey]``, ``[tool.Convy]``, or ``[convy]`` at the top."""
        if not isinstance(document, dict):
            return
        tool = document.get("tool")
        near = Spelling(frozenset({"CONVY"}))
        for name in tool if isinstance(tool, dict) else {}:
            if name != "convy" and (name.upper() == "CONVY" or near.meant(name)):
                raise ConfigurationError(f"pyproject.toml: [tool.{name}]: not read; did you mean [tool.convy]?")
        for name, value in document.items():
            if name.upper() == "CONVY" or near.meant(name):
                raise ConfigurationError(f"pyproject.toml: [{name}]: not read; convy's settings go under [tool.convy]")
            if name != "tool" and isinstance(value, dict) and "convy" in value:
                raise ConfigurationError(f"pyproject.toml: [{name}.convy]: not read; did you mean [tool.convy]?")

    def _table(self) -> dict[str, Any]:
        path = self.folder / "pyproject.toml"
        try:
            raw = RegularFile(path).data(self.MAX_BYTES)
        except FileNotFoundError:
            return {}
        except OSError as error:
            raise ConfigurationError(f"pyproject.toml: cannot be read: {error.strerror}") from None
        try:
            # A byte-order mark, which editors on Windows write first, is no part of TOML: read past it.
            document = msgspec.toml.decode(raw.removeprefix(b"\xef\xbb\xbf"))  # parsed once: converted, and looked over for a misnamed table
            table = msgspec.convert(document, Pyproject).tool.convy
            self._misplaced(document)
            return table
        except msgspec.ValidationError as error:
            raise ConfigurationError(f"pyproject.toml: {FieldProblem(str(error), Pyproject).text()}") from None
        except msgspec.DecodeError as error:
            raise ConfigurationError(f"pyproject.toml: not valid TOML: {error}") from None
        except RecursionError:
            raise ConfigurationError("pyproject.toml: nested too deeply to read") from None


LOCAL = "local"  # the address of a Ray the run starts on this machine for itself


class RayMissing(ConfigurationError):
    """A spread run was asked for where Ray is not installed."""

    def __init__(self) -> None:
        super().__init__(
            "playing a run on several processes needs Ray, an optional extra: pip install 'convy[ray]'"
        )


class Spread(msgspec.Struct, frozen=True):
    """Where a run is played: by ``workers`` processes on Ray at ``address`` — ``LOCAL`` for a Ray
    the run starts on this machine, ``auto`` for the cluster this machine is a node of, or the
    address of one (``ray://host:10001``, ``host:6379``). No workers and no address: this
    process alone, without Ray. With an address and no number, as many workers as the cluster
    has CPUs."""

    workers: int = 0
    address: str = ""

    MOST: ClassVar[int] = 1_000
    PATIENCE: ClassVar[float] = 10.0  # seconds a cluster's address may take to answer

    def __post_init__(self) -> None:
        if not 0 <= self.workers <= self.MOST:
            raise ValueError(f"workers: must be from 0 to {self.MOST}")
        if not self.address.isprintable() or len(self.address) > 1_000:
            raise ValueError("ray: not an address")
        if self.address and self.address not in (LOCAL, "auto") and self._socket() is None:
            raise ValueError("ray: not an address: auto, ray://HOST:10001 or HOST:6379")

    def _socket(self) -> tuple[str, int] | None:
        """The host and port of an address given as one (``ray://HOST:PORT`` or ``HOST:PORT``)."""
        host, colon, port = self.address.removeprefix("ray://").rpartition(":")
        if not colon or not host.strip("[]") or not port.isdigit() or not 0 < int(port) < 65_536 or "/" in host:
            return None
        return host.strip("[]"), int(port)

    def spread(self) -> bool:
        return self.workers > 0 or bool(self.address)

    def where(self) -> str:
        """The address Ray is reached at: ``LOCAL`` when none was given."""
        return self.address or LOCAL

    def hands(self, limits: Limits, cpus: int) -> int:
        """How many hands play: as many as asked (or as the cluster's ``cpus``), but no more than
        every limit can be split among, each keeping at least one of each place and of each
        per-minute cap it has."""
        wanted = self.workers or max(1, cpus)
        caps = [cap for cap in (getattr(limits, name) for name in Limits.CAPS) if cap]  # 0: no cap, nothing to split
        return max(1, min([wanted, *caps]))

    def reachable(self) -> None:
        """Nothing when the address is a cluster's that answers (a Ray client's ``ray://HOST:PORT``
        or a node's ``HOST:PORT``), or one Ray finds itself (``auto``); a ``ConfigurationError`` at
        once for a host and port nothing listens on, which Ray would otherwise try for minutes."""
        where = self.where()
        found = self._socket()
        if where in (LOCAL, "auto") or found is None:
            return
        host, port = found
        try:
            socket.create_connection((host, port), timeout=self.PATIENCE).close()
        except OSError as error:
            raise ConfigurationError(f"--ray {where}: no Ray cluster answers there: {error.strerror or error}") from None

    def ray(self) -> Any:
        """The ``ray`` module; ``RayMissing`` where it is not installed."""
        try:
            return importlib.import_module("ray")
        except ImportError:
            raise RayMissing() from None
