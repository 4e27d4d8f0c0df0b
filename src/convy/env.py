"""Settings read from the environment and a project's ``.env``.

``Env`` is the base for an agent's or a model's settings: subclass it, name the fields, and read
them with ``Env()``; secrets are ``SecretStr``. Pydantic is used here, for settings, and nowhere
else. ``Settings`` holds convy's own limits (``[tool.convy]`` of ``pyproject.toml`` with the
``CONVY_*`` variables over it), read as ``Pyproject`` and ``Variables``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pydantic
from pydantic_settings import BaseSettings, SettingsConfigDict

from convy.bench import Limits
from convy.problems import ConfigurationError


class Env(BaseSettings):
    """Settings from the environment and ``.env``, an error naming the field, never its value."""

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", hide_input_in_errors=True
    )


class Variables(Env):
    """The ``CONVY_*`` variables, each over the same field of ``[tool.convy]``."""

    model_config = SettingsConfigDict(
        env_prefix="CONVY_", env_file=".env", env_file_encoding="utf-8", extra="ignore", hide_input_in_errors=True
    )

    attempts: str | None = None
    trust: str | None = None
    max_turns: str | None = None
    agent_places: str | None = None
    user_places: str | None = None
    judge_places: str | None = None
    agent_per_minute: str | None = None
    user_per_minute: str | None = None
    judge_per_minute: str | None = None
    agent_patience: str | None = None
    user_patience: str | None = None
    judge_patience: str | None = None
    open_seconds: str | None = None
    turn_seconds: str | None = None
    close_seconds: str | None = None


class Settings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """convy's settings for a project: attempts per scenario, the trust threshold, and the limits."""

    attempts: int = 3
    trust: float = 0.0
    max_turns: int = 10
    agent_places: int = 4
    user_places: int = 8
    judge_places: int = 8
    agent_per_minute: int = 0
    user_per_minute: int = 0
    judge_per_minute: int = 0
    agent_patience: float = 300.0
    user_patience: float = 300.0
    judge_patience: float = 300.0
    open_seconds: float = 60.0
    turn_seconds: float = 120.0
    close_seconds: float = 60.0
    user_prompt: str = ""

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts: must be at least 1")
        if not 0.0 <= self.trust <= 1.0:
            raise ValueError("trust: must be between 0 and 1")
        self.limits()  # the limits' own checks, named by field

    def limits(self) -> Limits:
        """The run's limits: every field of these settings that ``Limits`` has."""
        return Limits(**{name: getattr(self, name) for name in Limits.__struct_fields__})


class _Tool(msgspec.Struct, frozen=True):
    convy: dict[str, Any] = {}


class Pyproject(msgspec.Struct, frozen=True):
    """The part of a project's ``pyproject.toml`` convy reads: ``[tool.convy]``."""

    tool: _Tool = _Tool()


class ProjectSettings(msgspec.Struct, frozen=True):
    """A project's settings: its ``pyproject.toml``, then the environment over it."""

    folder: Path

    def settings(self) -> Settings:
        path = self.folder / "pyproject.toml"
        table: dict[str, Any] = {}
        if path.exists():
            try:
                table = msgspec.toml.decode(path.read_bytes(), type=Pyproject).tool.convy
            except msgspec.MsgspecError as error:
                raise ConfigurationError(f"pyproject.toml: {error}") from None
        try:
            msgspec.convert(table, Settings)
        except msgspec.ValidationError as error:
            raise ConfigurationError(f"pyproject.toml: [tool.convy] {self._said(error)}") from None
        try:
            variables = Variables(_env_file=self.folder / ".env")  # type: ignore[call-arg]
        except pydantic.ValidationError as error:
            fields = ", ".join("CONVY_" + str(problem["loc"][0]).upper() for problem in error.errors())
            raise ConfigurationError(f"cannot read {fields}") from None
        given = {name: value for name, value in variables.model_dump().items() if value is not None}
        try:
            return msgspec.convert({**table, **given}, Settings, strict=False)
        except msgspec.ValidationError as error:
            raise ConfigurationError(f"settings: {self._said(error)} (CONVY_* variables or [tool.convy])") from None

    def _said(self, error: msgspec.ValidationError) -> str:
        # msgspec names the field; the value read is never repeated here.
        from convy.scenario import FieldProblem

        return FieldProblem(str(error)).text()
