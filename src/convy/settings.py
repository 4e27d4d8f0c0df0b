"""convy's own settings for a project: ``[tool.convy]`` of its ``pyproject.toml``, with the
``CONVY_*`` variables over it.

The variables are read with pydantic-settings (``convy.env.Variables``, decision 3), loaded only
when one of them is set, in the environment or in the project's ``.env``: a run of a project
that sets none, and whose own code uses no ``Env``, never loads pydantic.
"""

from __future__ import annotations

import io
import logging
import math
import os
import re
from pathlib import Path
from typing import Any, ClassVar

import msgspec

from convy.bench import Limits, RunSpec
from convy.files import RegularFile
from convy.problems import ConfigurationError, FieldProblem


class Settings(Limits, frozen=True, forbid_unknown_fields=True):
    """convy's settings for a project: the run's limits (every field of ``Limits``, declared and
    bounded there alone), attempts per scenario, the trust threshold, and the file of the
    simulator prompt."""

    attempts: int = 3
    trust: float = 0.0
    user_prompt: str = ""

    # The largest value each number may take: those of a run's spec and limits, which a run
    # folder is held to as well.
    MOST: ClassVar[dict[str, float]] = {"attempts": RunSpec.MOST_ATTEMPTS, **Limits.MOST}

    def __post_init__(self) -> None:
        super().__post_init__()  # every number within MOST, and the limits' own bounds, named by field
        if not math.isfinite(self.trust) or not 0.0 <= self.trust <= 1.0:
            raise ValueError("trust: must be between 0 and 1")
        if self.attempts < 1:
            raise ValueError("attempts: must be at least 1")
        if not self.user_prompt.isprintable():  # a NUL, a line break, a terminal's escape
            raise ValueError("user_prompt: not a file name")

    def limits(self) -> Limits:
        """The run's limits: these settings' fields that ``Limits`` declares, as a ``Limits``."""
        return Limits(**{name: getattr(self, name) for name in Limits.__struct_fields__})


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
        for binding in parse_stream(io.StringIO(text)):
            if binding.error:
                # Said once here: python-dotenv would log it again each time the file is read
                # (the secrets are looked for in it while this error is shown).
                logging.getLogger("dotenv.main").setLevel(logging.ERROR)
                raise ConfigurationError(
                    f".env: line {binding.original.line}: cannot be parsed (a quote left open, or a line "
                    "that is not NAME=value)"
                )


class ProjectSettings(msgspec.Struct, frozen=True):
    """A project's settings: its ``pyproject.toml``, then the environment over it.

    Every fault is a ``ConfigurationError`` naming the file or the variable and the field, never
    the value read.
    """

    folder: Path

    MAX_BYTES: ClassVar[int] = 1024 * 1024

    def settings(self) -> Settings:
        table = self._table()
        try:
            msgspec.convert(table, Settings)
        except msgspec.ValidationError as error:
            raise ConfigurationError(f"pyproject.toml: [tool.convy] {FieldProblem(str(error), Settings).text()}") from None
        DotEnv(self.folder / ".env").checked()
        given = self._variables()
        for name, value in given.items():
            if re.search("[\ud800-\udfff]", value):  # bytes that were not UTF-8, as Python keeps them
                raise ConfigurationError(f"CONVY_{name.upper()}: {name}: not UTF-8 text")
        try:
            return msgspec.convert({**table, **given}, Settings, strict=False)
        except msgspec.ValidationError as error:
            said = FieldProblem(str(error), Settings).text()
            field, _, what = said.partition(": ")
            if field in given:
                raise ConfigurationError(f"CONVY_{field.upper()}: {field}: {what}") from None
            raise ConfigurationError(f"settings: {said} (CONVY_* variables or [tool.convy])") from None

    def _variables(self) -> dict[str, str]:
        """The ``CONVY_*`` variables set, by field name."""
        if not self._named():
            return {}
        import pydantic

        from convy.env import Variables

        try:
            variables = Variables(_env_file=self.folder / ".env")  # type: ignore[call-arg]
        except pydantic.ValidationError as error:
            fields = ", ".join("CONVY_" + str(problem["loc"][0]).upper() for problem in error.errors())
            raise ConfigurationError(f"cannot read {fields}") from None
        except (OSError, ValueError):  # the .env file: not a file, or not UTF-8 text
            raise ConfigurationError(".env: cannot be read as UTF-8 text") from None
        return {name: value for name, value in variables.model_dump().items() if value is not None}

    def _named(self) -> bool:
        """Whether a ``CONVY_*`` variable may be set, in the environment or in ``.env`` (names in
        any case, as pydantic-settings reads them): without one, the variables say nothing."""
        if any(name.upper().startswith("CONVY_") for name in os.environ):
            return True
        path = self.folder / ".env"
        if not path.exists():
            return False
        from dotenv import dotenv_values  # pydantic-settings' own reader of .env

        try:
            return any(name.upper().startswith("CONVY_") for name in dotenv_values(path, encoding="utf-8"))
        except (OSError, ValueError):  # read as the variables read it, which says what is wrong
            return True

    def _table(self) -> dict[str, Any]:
        path = self.folder / "pyproject.toml"
        try:
            raw = RegularFile(path).data(self.MAX_BYTES)
        except FileNotFoundError:
            return {}
        except OSError as error:
            raise ConfigurationError(f"pyproject.toml: cannot be read: {error.strerror}") from None
        try:
            return msgspec.toml.decode(raw, type=Pyproject).tool.convy
        except msgspec.ValidationError as error:
            raise ConfigurationError(f"pyproject.toml: {FieldProblem(str(error), Pyproject).text()}") from None
        except msgspec.DecodeError as error:
            raise ConfigurationError(f"pyproject.toml: not valid TOML: {error}") from None
        except RecursionError:
            raise ConfigurationError("pyproject.toml: nested too deeply to read") from None
