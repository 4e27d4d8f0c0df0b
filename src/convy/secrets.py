"""Secrets: the keys, header values and query values a run knows of, and the texts they are hidden from.

A service may echo a request in its error (a proxy's error page repeats the headers, a 404 the
path with its query), and an agent's own exception may hold its key. ``Secrets`` hides each known
secret wherever convy keeps or shows text from outside: in full, as written and as an echo may
have encoded it (percent-encoded, JSON-escaped, hexadecimal, base64 among other bytes), and any eight characters of one too, so a text
cut later, or a service that cut its own echo, shows no prefix or suffix of a key. Text is
hidden before it is cut, never after.

Where the secrets come from:

- ``JsonEndpoint.secrets()`` (http.py): its header values, the values of its URL's query, the
  password in its URL; every error of that endpoint is hidden with them;
- ``Environment``: the variables a project runs with (the process's and its ``.env``) whose names
  say they are secret (``*_KEY``, ``*_TOKEN``, ``*PASSWORD*``…), or that an ``Env`` reads into a
  ``SecretStr``;
- ``Holders``: the objects a project defines, its agent and models: every ``SecretStr`` in them,
  every ``OpenAiModel``'s key and every ``JsonEndpoint``'s secrets.

A value shorter than eight characters is not taken for a secret: hiding it would blot ordinary
words, and it is too short to be a key.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import sys
import types
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, quote_plus

import msgspec

HIDDEN = "<hidden>"
PIECE = 8  # the shortest secret, and the length of a piece of one that is hidden as well
# Pieces no secret is made of, whatever value holds them: a URL given where a key goes (the two
# swapped in .env) would otherwise have "https://" hidden from every message that says it.
_SAID = frozenset({"https://"})

T = TypeVar("T")

# Words of a variable's name that say its value is secret: GATEWAY_KEY, GITHUB_TOKEN, DB_PASSWORD.
_SECRET_WORDS = re.compile(
    r"(KEY|KEYS|TOKEN|TOKENS|SECRET|SECRETS|PASSWORD|PASSWD|PASSPHRASE|PASS|PWD|CREDENTIALS?|AUTH|"
    r"AUTHORIZATION|COOKIE|PRIVATE|SIGNATURE|APIKEY|ACCESSKEY)"
)
# What a shell sets to the working directory and the one before: named like a password (PWD) but
# a path, which hiding would blot from every text that names a file of the project, and which
# made every attempt of a run look as if it might hold a secret.
_DIRECTORIES = frozenset({"PWD", "OLDPWD"})
# Anything shaped like a credential in a service's error, known to convy or not.
_SHAPES = (
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+"), r"\1 " + HIDDEN),
    (re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{8,}"), HIDDEN),
)


class Concealed(Exception):
    """An error whose text held a secret, in its place as a cause: the same type's name and the
    same trace, with the secret hidden from its text."""


class Secrets(msgspec.Struct, frozen=True):
    """The secrets a run knows of. Its ``repr`` shows how many, never one."""

    values: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"Secrets(<{len(self.values)} hidden>)"

    def __add__(self, other: Secrets) -> Secrets:
        return Secrets(tuple(dict.fromkeys(self.values + other.values)))

    def hidden(self, text: str) -> str:
        """``text`` with every known secret hidden: in full, in each of its encodings, and every
        piece of eight characters of one."""
        forms = self._forms()
        if not forms or not text:
            return text
        for form in forms:
            if form in text:
                text = text.replace(form, HIDDEN)
        return self._pieces_hidden(text)

    def blotted(self, text: str) -> str:
        """``text`` hidden as ``hidden`` does, and anything shaped like a key or a credential too,
        for the error text of a service, which may echo keys convy does not know."""
        text = self.hidden(text)
        for shape, replacement in _SHAPES:
            text = shape.sub(replacement, text)
        return text

    def opening(self, text: str, length: int) -> str:
        """At most the first ``length`` characters of a service's text once blotted, reading only
        what can reach them: a window a little longer, blotted, without its last characters, where
        a secret the window cut through may have left fewer than eight."""
        window = length + 1024 + max((len(form) for form in self._forms()), default=0)
        if len(text) <= window:
            return self.blotted(text)[:length]
        return self.blotted(text[:window])[: -(PIECE - 1)][:length]

    def kept(self, value: T) -> T:
        """``value`` (a record, such as an attempt) with every secret hidden from each text in it,
        its keys included; the record itself when no secret is known."""
        if not self._forms():
            return value
        encoded = msgspec.json.encode(value)
        if not self.may_hold(encoded):
            return value
        plain = msgspec.json.decode(encoded)
        return msgspec.json.decode(msgspec.json.encode(self._walked(plain)), type=type(value))

    def cause(self, error: BaseException) -> BaseException:
        """What may stand as the cause of an error convy raises: ``error`` itself when neither its
        text nor its causes' hold a secret, else a ``Concealed`` with the same trace and the text
        hidden, its own cause likewise."""
        return self._cause(error, 0)

    def _cause(self, error: BaseException, depth: int) -> BaseException:
        text = str(error)
        deeper = error.__cause__ if error.__cause__ is not None else (
            None if error.__suppress_context__ else error.__context__
        )
        safe = self._cause(deeper, depth + 1) if deeper is not None and depth < 16 else None
        if self.hidden(text) == text and safe is deeper:
            return error
        stand_in = Concealed(f"{type(error).__name__}: {self.hidden(text)}").with_traceback(error.__traceback__)
        stand_in.__cause__ = safe
        stand_in.__suppress_context__ = True
        return stand_in

    def _walked(self, value: Any) -> Any:
        match value:
            case str():
                return self.hidden(value)
            case list():
                return [self._walked(item) for item in value]
            case dict():
                return {self.hidden(key): self._walked(item) for key, item in value.items()}
            case _:
                return value

    @functools.cache  # noqa: B019 - a frozen Secrets is its own key: its forms are made once
    def _forms(self) -> tuple[str, ...]:
        """Each secret as written and as an echo may encode it, the longest first."""
        forms: set[str] = set()
        for value in self.values:
            if len(value) < PIECE:
                continue
            encoded = {quote(value, safe=""), quote(value), quote_plus(value)}
            encoded |= {re.sub(r"%[0-9A-F]{2}", lambda found: found.group(0).lower(), one) for one in encoded}
            escaped = {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
            escaped |= {one.replace("/", "\\/") for one in escaped}
            forms |= {value, *encoded, *escaped, *self._binary(value)}
        return tuple(sorted(forms, key=lambda form: (-len(form), form)))

    def _binary(self, value: str) -> set[str]:
        """``value`` as a service may echo its bytes: in hexadecimal, and in base64 (standard and
        URL-safe) wherever it stands among other bytes (HTTP Basic's ``user:key``): at each of the
        three places a base64 group can start, the characters made of the secret's bits alone."""
        raw = value.encode("utf-8")
        forms = {raw.hex(), raw.hex().upper()}
        for shift in range(3):
            bits = 8 * (shift + len(raw))
            for encode in (base64.b64encode, base64.urlsafe_b64encode):
                encoded = encode(b"\0" * shift + raw).decode("ascii")
                # Character i holds bits 6i to 6i+6: the first ones hold bits of the bytes before
                # the secret, the last may hold bits of those after it.
                forms.add(encoded[-(-8 * shift // 6) : bits // 6])
        return {form for form in forms if len(form) >= PIECE}

    @functools.cache  # noqa: B019 - as _forms
    def _quarters(self) -> tuple[bytes, ...]:
        """The fours each form of a secret is made of, from its start (its last four too), in UTF-8."""
        found = {form[start : start + 4] for form in self._forms() for start in range(0, len(form) - 3, 4)}
        found |= {form[-4:] for form in self._forms()}
        return tuple(sorted(quarter.encode("utf-8") for quarter in found))

    def may_hold(self, data: bytes) -> bool:
        """Whether ``data``, UTF-8 text such as a record's JSON, may hold a piece of a secret: any
        eight characters of a form cover one of the fours it is made of, so a text that holds none
        of them holds no piece (and UTF-8 bytes hold a text's bytes only where they hold the text).
        A quick test for a whole record, a search per four, before the walk through its texts."""
        return any(quarter in data for quarter in self._quarters())

    @functools.cache  # noqa: B019 - as _forms
    def _pieces(self) -> tuple[str, ...]:
        """Every eight characters of every form of a secret, each once."""
        found = {form[start : start + PIECE] for form in self._forms() for start in range(len(form) - PIECE + 1)}
        return tuple(sorted(found - {HIDDEN} - _SAID))

    def _pieces_hidden(self, text: str) -> str:
        spans: list[tuple[int, int]] = []
        for piece in self._pieces():
            found = text.find(piece)
            while found != -1:
                spans.append((found, found + PIECE))
                found = text.find(piece, found + 1)
        if not spans:
            return text
        merged: list[list[int]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        parts: list[str] = []
        at = 0
        for start, end in merged:
            parts.append(text[at:start])
            parts.append(HIDDEN)
            at = end
        parts.append(text[at:])
        return "".join(parts)


class Environment(msgspec.Struct, frozen=True):
    """The variables a project runs with: the process's environment, and the project's ``.env``
    under it; those named as secrets, or read by an ``Env`` into a ``SecretStr``, are secrets."""

    folder: Path

    def secrets(self) -> Secrets:
        variables = {name.upper(): value for name, value in self._dotenv().items() if value}
        variables |= {name.upper(): value for name, value in os.environ.items()}
        read = self._read_secretly()
        return Secrets(
            tuple(value.strip() for name, value in variables.items() if name in read or self._secret_name(name))
        )

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
        if "convy.env" not in sys.modules:
            return set()  # no Env is defined yet, so no subclass of one reads anything
        from pydantic import SecretStr

        from convy.env import Env

        names: set[str] = set()
        classes: deque[type] = deque(Env.__subclasses__())
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
    """Objects a project defines, such as its agent and its models, that may hold secrets: every
    ``SecretStr`` found in them, and every ``OpenAiModel``'s key and ``JsonEndpoint``'s secrets.

    The objects are walked through their fields, items and attributes, a few levels deep and up
    to a bounded number of objects, so a large client the agent holds costs little."""

    objects: tuple[Any, ...]
    depth: int = 6
    most: int = 20_000

    def secrets(self) -> Secrets:
        secret_str, secret_bytes = self._pydantic()
        from convy.model import OpenAiModel

        # Before convy.http is loaded no object can be a JsonEndpoint (a run of fakes never loads it).
        http = sys.modules.get("convy.http")
        endpoint: type[Any] = http.JsonEndpoint if http is not None else _Unmade

        found: list[str] = []
        seen: set[int] = set()
        waiting: deque[tuple[Any, int]] = deque((one, 0) for one in self.objects)
        while waiting and len(seen) < self.most:
            here, level = waiting.popleft()
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
                    from convy.http import JsonEndpoint

                    found.extend(JsonEndpoint(url).secrets().values)
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
