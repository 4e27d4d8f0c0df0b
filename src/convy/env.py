"""Settings read from the environment and a project's ``.env``, with pydantic-settings.

``Env`` is the base for an agent's or a model's settings: subclass it, name the fields, and read
them with ``Env()``; secrets are ``SecretStr``. Pydantic is used here, for settings, and nowhere
else. ``variables`` makes the model of the ``CONVY_*`` variables from the names of convy's
settings (``settings.VARIABLES``), which ``convy.settings`` puts over a project's ``[tool.convy]``.
"""

from __future__ import annotations

import functools
from typing import Any

import pydantic
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Env", "variables"]


class Env(BaseSettings):
    """Settings from the environment and ``.env``, an error naming the field, never its value."""

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", hide_input_in_errors=True
    )


class _Convy(Env):
    """Where convy's own variables are read: ``CONVY_*`` in the environment and ``.env``."""

    model_config = SettingsConfigDict(
        env_prefix="CONVY_", env_file=".env", env_file_encoding="utf-8", extra="ignore", hide_input_in_errors=True
    )


@functools.cache
def variables(names: tuple[str, ...]) -> type[Env]:
    """The ``CONVY_*`` variables of ``names``, each read as text (``settings`` converts it as it
    converts ``[tool.convy]``) and none required: the names are declared once, as convy's settings."""
    fields: dict[str, Any] = {name: (str | None, None) for name in names}
    made: type[Env] = pydantic.create_model("Variables", __base__=_Convy, **fields)
    return made
