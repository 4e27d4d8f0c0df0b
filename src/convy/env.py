"""Settings read from the environment and a project's ``.env``, with pydantic-settings.

``Env`` is the base for an agent's or a model's settings: subclass it, name the fields, and read
them with ``Env()``; secrets are ``SecretStr``. Pydantic is used here, for settings, and nowhere
else. ``Variables`` are the ``CONVY_*`` variables, which ``convy.settings`` puts over a project's
``[tool.convy]``; ``Settings`` and ``ProjectSettings`` live there, and are named here too.
"""

from __future__ import annotations

from pydantic_settings import BaseSettings, SettingsConfigDict

from convy.settings import ProjectSettings, Pyproject, Settings

__all__ = ["Env", "ProjectSettings", "Pyproject", "Settings", "Variables"]


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
    min_attempts: str | None = None
    max_attempts: str | None = None
    target_width: str | None = None
    trust: str | None = None
    max_not_judged: str | None = None
    fail_under: str | None = None
    fail_on_skip: str | None = None
    max_cost: str | None = None
    max_tokens: str | None = None
    max_minutes: str | None = None
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
    judge_repeats: str | None = None
    panel: str | None = None
    evidence: str | None = None
    user_checks: str | None = None
    user_faults: str | None = None
    workers: str | None = None
    ray: str | None = None
    live_seconds: str | None = None
