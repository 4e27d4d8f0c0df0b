"""YAML as convy reads it: YAML 1.2's plain scalars and no key given twice.

PyYAML implements YAML 1.1, where ``no``, ``off`` and ``y`` are booleans, ``012`` is octal and
``2024-01-01`` a date. A scenario's ``vars: {answer: no}`` must stay the string ``"no"``, so the
loader here resolves only ``true``/``false`` as booleans, only plain decimal numbers as numbers,
and nothing as a date; and it rejects a mapping that names one key twice instead of keeping the
last silently.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
import yaml

from convy.problems import ConfigurationError


class StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2 scalars and duplicate keys rejected."""

    yaml_implicit_resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$"), list("-+0123456789")
)
StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+0123456789."),
)
StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]
)
StrictLoader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"])


class YamlFile(msgspec.Struct, frozen=True):
    """A YAML file, shown in errors by ``shown`` (its path as the user knows it)."""

    path: Path
    shown: str

    def data(self) -> Any:
        """The file's data; unreadable text or broken YAML is a ``ConfigurationError`` naming the file."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigurationError(f"{self.shown}: cannot be read: {error}") from error
        try:
            return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - StrictLoader is a SafeLoader
        except yaml.MarkedYAMLError as error:
            mark = error.problem_mark or error.context_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
            raise ConfigurationError(f"{self.shown}: {where}{error.problem or error}") from error
        except yaml.YAMLError as error:
            raise ConfigurationError(f"{self.shown}: not valid YAML: {error}") from error
