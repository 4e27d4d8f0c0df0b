"""Variables one slip away from a name that is read: ``JUDGE_MODLE`` in ``.env`` where the project reads
``JUDGE_MODEL``, ``CONVY_ATTEMPT`` in the environment where convy reads ``CONVY_ATTEMPTS``.

Nothing reads such a variable, so the setting it was meant to make is lost without a word: a run
plays with the judge absent, or three attempts instead of ten. Each is said with the name meant,
``JUDGE_MODLE in .env: unknown; did you mean JUDGE_MODEL?``. Only names are read and said here,
never a value.

``spelling.Spelling`` is the rule. A name that is not known is a slip for the known names nearest to it, when
they are at most one edit away (a letter added, dropped, changed, or two side by side swapped), or
two for a known name of eight characters or more; names are compared in capitals, as
pydantic-settings reads them. A name further from every known one is left alone: it may be read by
a tool convy does not know of.

What is known (``ProjectNames.known``): the ``CONVY_*`` variables (``settings.VARIABLES``, given); every name in
the project's ``.env.example`` (or ``.env.sample``, ``.env.template``), where a project lists what it
reads; the fields of every pydantic-settings class loaded with the project's code (its ``env_prefix``
and aliases too), as the template's ``GatewaySettings``; and the names the project's own Python files
read from ``os.environ`` or ``os.getenv`` with a literal name.

What is looked at (``Slips``): every name in ``.env``, and, of the environment, only the names that
look like convy's own (``CONVY_`` or one slip from it, as ``CONVEY_``): the rest of an environment is
other programs' business.
"""

from __future__ import annotations

import ast
import io
import os
import re
import sys
from collections import deque
from pathlib import Path
from typing import ClassVar

import msgspec

from convy.files import RegularFile
from convy.spelling import Spelling


class ProjectNames(msgspec.Struct, frozen=True):
    """The variable names a project is known to read, from its files and the code loaded so far."""

    folder: Path
    settings: tuple[str, ...]  # convy's settings that a CONVY_* variable sets (``settings.VARIABLES``)

    EXAMPLES: ClassVar[tuple[str, ...]] = (".env.example", ".env.sample", ".env.template")
    # Folders of a project that hold no code of its own, or too much of others'.
    PASSED: ClassVar[frozenset[str]] = frozenset({"results", "node_modules", "site-packages", "__pycache__"})
    MOST_FILES: ClassVar[int] = 2_000
    MOST_BYTES: ClassVar[int] = 1024 * 1024

    def convy(self) -> frozenset[str]:
        """The ``CONVY_*`` variables convy reads."""
        return frozenset(f"CONVY_{name.upper()}" for name in self.settings)

    def known(self) -> frozenset[str]:
        """Every name known to be read: convy's, the project's example ``.env``'s, its settings
        classes' and those its code reads from the environment."""
        return self.convy() | self._examples() | self._settings() | self._code()

    def _examples(self) -> frozenset[str]:
        names: set[str] = set()
        for example in self.EXAMPLES:
            names |= {name.upper() for name in DotEnvNames(self.folder / example).names()}
        return frozenset(names)

    def _settings(self) -> frozenset[str]:
        """The names every pydantic-settings class loaded so far reads: its fields under its prefix,
        and their aliases."""
        if "pydantic_settings" not in sys.modules:
            return frozenset()  # no settings class can be loaded yet
        from pydantic import AliasChoices
        from pydantic_settings import BaseSettings

        names: set[str] = set()
        classes: deque[type[BaseSettings]] = deque(BaseSettings.__subclasses__())
        while classes:
            kind = classes.popleft()
            classes.extend(kind.__subclasses__())
            prefix = str(kind.model_config.get("env_prefix", "") or "")
            for name, field in kind.model_fields.items():
                names.add((prefix + name).upper())
                for alias in (field.alias, field.validation_alias):
                    match alias:
                        case str():
                            names.add(alias.upper())
                        case AliasChoices():
                            names |= {choice.upper() for choice in alias.choices if isinstance(choice, str)}
        return frozenset(names)

    def _code(self) -> frozenset[str]:
        """The names the project's Python files read from the environment by a literal name."""
        names: set[str] = set()
        for path in self._sources():
            try:
                tree = ast.parse(RegularFile(path).data(self.MOST_BYTES))
            except (OSError, SyntaxError, ValueError, RecursionError):
                continue  # too large, not a file, not Python: said by whatever loads it, if anything does
            names |= EnvironmentReads(tree).names()
        return frozenset(name.upper() for name in names)

    def _sources(self) -> list[Path]:
        """The project's Python files, hidden folders, virtual environments and results left out."""
        found: list[Path] = []
        for folder, subfolders, files in os.walk(self.folder):
            subfolders[:] = sorted(
                name for name in subfolders
                if not name.startswith(".") and name not in self.PASSED and not (Path(folder) / name / "pyvenv.cfg").exists()
            )
            found.extend(Path(folder) / name for name in sorted(files) if name.endswith(".py"))
            if len(found) >= self.MOST_FILES:
                break
        return found[: self.MOST_FILES]


class EnvironmentReads(msgspec.Struct, frozen=True):
    """The literal names a module reads from the environment: ``os.environ["X"]``, ``os.environ.get("X")``
    (``pop``, ``setdefault``), ``"X" in os.environ`` and ``os.getenv("X")``."""

    tree: ast.AST

    def names(self) -> set[str]:
        names: set[str] = set()
        for node in ast.walk(self.tree):
            match node:
                case ast.Subscript(value=value, slice=ast.Constant(value=str() as name)) if self._environ(value):
                    names.add(name)
                case ast.Call(func=ast.Attribute(value=value, attr="get" | "pop" | "setdefault"), args=[ast.Constant(value=str() as name), *_]) if self._environ(value):
                    names.add(name)
                case ast.Call(func=ast.Name(id="getenv") | ast.Attribute(attr="getenv"), args=[ast.Constant(value=str() as name), *_]):
                    names.add(name)
                case ast.Compare(left=ast.Constant(value=str() as name), ops=[ast.In() | ast.NotIn()], comparators=[value]) if self._environ(value):
                    names.add(name)
        return names

    def _environ(self, node: ast.expr) -> bool:
        match node:
            case ast.Name(id="environ") | ast.Attribute(attr="environ"):
                return True
        return False


class DotEnvNames(msgspec.Struct, frozen=True):
    """The names a ``.env``-shaped file sets, read as pydantic-settings reads them (values left unread
    here); none when the file is absent or cannot be read (said elsewhere: ``settings.DotEnv``)."""

    path: Path

    NAME: ClassVar[re.Pattern[str]] = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
    MAX_BYTES: ClassVar[int] = 1024 * 1024

    def names(self) -> tuple[str, ...]:
        """The names of the lines that parse, in order; a line that does not is passed over unsaid
        (python-dotenv's reader would log it)."""
        try:
            text = RegularFile(self.path).data(self.MAX_BYTES).decode("utf-8")
        except (OSError, ValueError):  # absent, not a regular file, too large, not UTF-8
            return ()
        from dotenv.parser import parse_stream  # pydantic-settings' own reader of .env; loaded only for a file

        keys = (binding.key for binding in parse_stream(io.StringIO(text)) if not binding.error)
        return tuple(key for key in keys if key is not None and self.NAME.fullmatch(key))


class Slips(msgspec.Struct, frozen=True):
    """The variables of a project's ``.env`` and of the environment that are slips for a known name,
    each said once as a problem line. ``dotenv`` is whether the ``.env`` may be read: not when it
    was refused (a line that cannot be parsed, a file that is not one).
    """

    folder: Path
    settings: tuple[str, ...]  # convy's settings that a CONVY_* variable sets (``settings.VARIABLES``)
    dotenv: bool = True

    PREFIX: ClassVar[str] = "CONVY"
    WHERE_ENV: ClassVar[str] = "the environment"

    def convy(self) -> tuple[str, ...]:
        """Slips for convy's own variables: names that look like ``CONVY_*``, in ``.env`` and in the
        environment. Cheap when there are none: convy's names are read only when one is there."""
        given = [(name, where) for name, where in self._given() if self._convy_like(name)]
        if not given:
            return ()
        spelling = Spelling(ProjectNames(self.folder, self.settings).convy())
        return self._said(spelling, given)

    def project(self) -> tuple[str, ...]:
        """Slips in ``.env`` for a name the project or convy reads, past those ``convy`` says: call it
        once the project's code is loaded, so its settings classes are known."""
        given = [(name, where) for name, where in self._given() if not self._convy_like(name) and where == ".env"]
        if not given:
            return ()
        return self._said(Spelling(ProjectNames(self.folder, self.settings).known()), given)

    def _said(self, spelling: Spelling, given: list[tuple[str, str]]) -> tuple[str, ...]:
        said = (spelling.said(name, where) for name, where in given)
        return tuple(dict.fromkeys(line for line in said if line is not None))

    def _given(self) -> list[tuple[str, str]]:
        """Each name set in ``.env`` and each set in the environment that looks like convy's, with where."""
        from_file = [(name, ".env") for name in DotEnvNames(self.folder / ".env").names()] if self.dotenv else []
        from_environment = [
            (name, self.WHERE_ENV) for name in sorted(os.environ) if DotEnvNames.NAME.fullmatch(name) and self._convy_like(name)
        ]
        return from_file + from_environment

    def _convy_like(self, name: str) -> bool:
        """Whether ``name`` starts with ``CONVY_``, or one slip from it (``CONVEY_``, ``CNOVY_``)."""
        head, underscore, _ = name.upper().partition("_")
        return bool(underscore) and Spelling.distance(head, self.PREFIX, 1) <= 1
