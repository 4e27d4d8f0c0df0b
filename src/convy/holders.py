"""Where a project's secrets are held, gathered for ``secrets.Secrets`` to hide.

- ``Environment``: the variables a project runs with (the process's and its ``.env``) whose names
  say they are secret (``*_KEY``, ``*_TOKEN``, ``*PASSWORD*``…), or that an ``Env`` reads into a
  ``SecretStr``, and the secrets of every URL among them (``secrets.Address``: its query values,
  password, and path tokens), whatever the variable's name;
- ``Holders``: the objects a project defines, its agents and models: every ``SecretStr`` in them,
  every ``OpenAiModel``'s key and base URL's secrets and every ``JsonEndpoint``'s secrets.

It stands above the modules whose objects hold secrets (``model.py``, ``http.py``, ``env.py``),
so that ``secrets.py`` stays a leaf, imported by all of them and importing none.
"""

from __future__ import annotations

import functools
import operator
import os
import re
import sys
import types
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from convy.model import OpenAiModel
from convy.secrets import Address, Secrets

# Words of a variable's name that say its value is secret: GATEWAY_KEY, GITHUB_TOKEN, DB_PASSWORD.
_SECRET_WORDS = re.compile(
    r"(KEY|KEYS|TOKEN|TOKENS|SECRET|SECRETS|PASSWORD|PASSWD|PASSPHRASE|PASS|PWD|CREDENTIALS?|AUTH|"
    r"AUTHORIZATION|COOKIE|PRIVATE|SIGNATURE|APIKEY|ACCESSKEY)"
)
# What a shell sets to the working directory and the one before: named like a password (PWD) but
# a path, which hiding would blot from every text that names a file of the project, and which
# made every attempt of a run look as if it might hold a secret.
_DIRECTORIES = frozenset({"PWD", "OLDPWD"})


class Environment(msgspec.Struct, frozen=True):
    """The variables a project runs with: the process's environment, and the project's ``.env``
    under it; those named as secrets, or read by an ``Env`` into a ``SecretStr``, are secrets, and
    so are those of each URL among them (``secrets.Address``), whatever its variable's name."""

    folder: Path

    def secrets(self) -> Secrets:
        variables = {name.upper(): value for name, value in self._dotenv().items() if value}
        variables |= {name.upper(): value for name, value in os.environ.items()}
        read = self._read_secretly()
        named = Secrets(
            tuple(value.strip() for name, value in variables.items() if name in read or self._secret_name(name))
        )
        # A URL's secrets whatever its variable is named: AGENT_URL=https://.../bot<id>:<token>/.
        addressed = (
            Address(value.strip()).secrets()
            for value in variables.values()
            if value.strip().lower().startswith(("http://", "https://"))
        )
        return functools.reduce(operator.add, addressed, named)

    def everything(self) -> Secrets:
        """Every value of the project's ``.env`` taken for a secret, with those of ``secrets``: for
        the text of a project's code that failed while loading, before it could say which of its
        settings are secret (``.env`` holds keys and settings, and is never copied anywhere)."""
        return self.secrets() + Secrets(tuple(value.strip() for value in self._dotenv().values() if value))

    def named(self, wanted: Callable[[str], bool]) -> tuple[str, ...]:
        """Where each variable whose value is ``wanted`` is set, as a user would look for it:
        ``GATEWAY_KEY in .env`` or ``GATEWAY_KEY in the environment`` (which wins over ``.env``, as
        pydantic-settings reads them). Names only: a value is never said."""
        found: list[str] = []
        dotenv = {name: value for name, value in self._dotenv().items() if value}
        for name, value in os.environ.items():
            if wanted(value.strip()):
                found.append(f"{name} in the environment")
        for name, value in dotenv.items():
            if name not in os.environ and value is not None and wanted(value.strip()):
                found.append(f"{name} in .env")
        return tuple(found)

    def keyed(self, where: str) -> bool:
        """Whether a variable, as ``named`` says where it is (``GATEWAY_KEY in .env``), is named as
        a secret is."""
        return self._secret_name(where.split(" ", 1)[0])

    def _secret_name(self, name: str) -> bool:
        if name.upper() in _DIRECTORIES:
            return False
        return any(
            _SECRET_WORDS.fullmatch(word) or word.endswith(("KEY", "TOKEN", "SECRET", "PASSWORD"))
            for word in re.split(r"[^A-Z0-9]+", name.upper())
        )

    def _dotenv(self) -> dict[str, str | None]:
        path = self.folder / ".env"
        if not path.is_file():
            return {}
        from dotenv import dotenv_values  # pydantic-settings' own reader of .env; loaded only when there is one

        try:
            return dict(dotenv_values(path))
        except (OSError, UnicodeDecodeError):
            return {}

    def _read_secretly(self) -> set[str]:
        """The variable names that a subclass of ``Env`` reads into a ``SecretStr``."""
        # The Env of the module already loaded, never an import: until the project's code loads it no
        # Env is defined, so no subclass of one reads anything (and env.py stands above this module).
        env = sys.modules.get("convy.env")
        if env is None:
            return set()
        from pydantic import SecretStr

        names: set[str] = set()
        classes: deque[type] = deque(env.Env.__subclasses__())
        while classes:
            kind = classes.popleft()
            classes.extend(kind.__subclasses__())
            prefix = str(getattr(kind, "model_config", {}).get("env_prefix", "") or "")
            for name, field in getattr(kind, "model_fields", {}).items():
                annotation = field.annotation
                if annotation is SecretStr or SecretStr in getattr(annotation, "__args__", ()):
                    for alias in (field.validation_alias, field.alias):
                        if isinstance(alias, str):
                            names.add(alias.upper())
                    names.add((prefix + name).upper())
        return names


class Holders(msgspec.Struct, frozen=True):
    """Objects a project defines, such as its agents and its models, that may hold secrets: every
    ``SecretStr`` found in them, every ``OpenAiModel``'s key and base URL's secrets, every
    ``JsonEndpoint``'s secrets, and those of every URL kept as text (``secrets.Address``).

    The objects are walked through their fields, items and attributes, a few levels deep and up
    to a bounded number of objects, so a large client the agent holds costs little."""

    objects: tuple[Any, ...]
    depth: int = 6
    most: int = 20_000

    def secrets(self) -> Secrets:
        secret_str, secret_bytes = self._pydantic()
        # Before convy.http is loaded no object can be a JsonEndpoint (a run of fakes never loads it).
        http = sys.modules.get("convy.http")
        endpoint: type[Any] = http.JsonEndpoint if http is not None else _Unmade

        found: list[str] = []
        seen: set[int] = set()
        waiting: deque[tuple[Any, int]] = deque((one, 0) for one in self.objects)
        while waiting and len(seen) < self.most:
            here, level = waiting.popleft()
            if isinstance(here, str) and here[:8].lower().startswith(("http://", "https://")):
                found.extend(Address(here).secrets().values)  # a URL an agent of its own keeps as text
                continue
            if id(here) in seen or isinstance(here, (str, bytes, int, float, bool, type(None), type, Path)):
                continue
            seen.add(id(here))
            match here:
                case secret_str():
                    found.append(here.get_secret_value())
                    continue
                case secret_bytes():
                    found.append(here.get_secret_value().decode("utf-8", "replace"))
                    continue
                case endpoint():
                    found.extend(here.secrets().values)
                    continue
                case OpenAiModel(key=key, base_url=url):
                    found.extend(Address(url).secrets().values)
                    match key:
                        case str():
                            found.append(key)
            if level >= self.depth:
                continue
            waiting.extend((child, level + 1) for child in self._children(here))
        return Secrets(tuple(dict.fromkeys(found)))

    def _pydantic(self) -> tuple[type[Any], type[Any]]:
        """pydantic's ``SecretStr`` and ``SecretBytes``; before pydantic is loaded no object can be
        one, and a class nothing is an instance of stands in for both, so it is not loaded here."""
        if "pydantic" not in sys.modules:
            return _Unmade, _Unmade
        from pydantic import SecretBytes, SecretStr

        return SecretStr, SecretBytes

    def _children(self, here: Any) -> list[Any]:
        match here:
            case msgspec.Struct():
                return [getattr(here, name, None) for name in here.__struct_fields__]
            case dict():
                return list(here.values())
            case list() | tuple() | set() | frozenset():
                return list(here)
        attributes = getattr(here, "__dict__", None)
        if isinstance(attributes, dict) and not isinstance(here, (types.ModuleType, types.FunctionType)):
            return list(attributes.values())
        return []


class _Unmade:
    """A class of which no object is ever made: what ``Holders`` looks for in place of pydantic's
    secrets while pydantic is not loaded, and of ``JsonEndpoint`` while ``convy.http`` is not."""
