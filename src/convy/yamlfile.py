"""YAML as convy reads it: YAML 1.2's plain scalars and JSON's kinds of data, within bounds.

PyYAML implements YAML 1.1, where ``no``, ``off`` and ``y`` are booleans, ``012`` is octal and
``2024-01-01`` a date. A scenario's ``vars: {answer: no}`` must stay the string ``"no"``, so the
loader here resolves only ``true``/``false`` as booleans, only plain decimal numbers as numbers,
and nothing as a date.

A file is also read as data a run folder can keep (JSON): text, whole numbers that fit 64 bits,
finite numbers, true/false, nothing, lists and mappings whose keys are text, no key given twice.
Anything else — another tag (``!!set``, ``!!python/...``), a merge key (``<<``), a list as a key,
a lone surrogate — is refused with the field's path before any object is built.

A hostile file must not cost more than its size: the file is at most ``YamlFile.MAX_BYTES``,
nested at most ``StrictLoader.MAX_DEPTH`` deep (checked while composing, before anything
recursive sees it), and aliases may repeat at most ``MAX_REPEATED_VALUES`` values and
``MAX_REPEATED_CHARACTERS`` characters in all, so an alias bomb is refused while its nodes are
still shared rather than expanded.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, ClassVar

import msgspec
import yaml

from convy.files import RegularFile
from convy.problems import ConfigurationError

_TAG = "tag:yaml.org,2002:"
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")
_BOOL = re.compile(r"true|True|TRUE|false|False|FALSE")
_NULL = re.compile(r"~|null|Null|NULL|")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


try:  # libyaml reads events three times faster; composing stays in Python, where it is bounded
    from yaml._yaml import CParser as _Events  # where yaml.cyaml takes it from
except ImportError:  # pragma: no cover - PyYAML built without libyaml

    class _Events(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):  # type: ignore[no-redef]
        def __init__(self, stream: str) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)


class Refused(yaml.MarkedYAMLError):
    """Composing stopped: ``path`` (the field, or empty at the top) breaks a bound."""

    def __init__(self, path: str, problem: str, mark: Any) -> None:
        super().__init__(None, None, problem, mark)
        self.path = path if path.isprintable() else ""  # a key's control characters stay out of the line


class StrictLoader(yaml.composer.Composer, _Events, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
    """PyYAML's safe loading with YAML 1.2 scalars, composing within a depth and an alias budget.

    Like every PyYAML loader it is a parser with state, used for one document and dropped; the
    state added here is what composing has counted so far and the path it is at.
    """

    # A class attribute in PyYAML, which its stub declares on instances.
    yaml_implicit_resolvers: ClassVar[dict[str, list[tuple[str, re.Pattern[str]]]]] = {}  # type: ignore[misc]

    MAX_DEPTH: ClassVar[int] = 64
    MAX_REPEATED_VALUES: ClassVar[int] = 10_000
    MAX_REPEATED_CHARACTERS: ClassVar[int] = 100_000

    def __init__(self, stream: str) -> None:
        _Events.__init__(self, stream)
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self._paths = [""]
        self._sizes: dict[int, tuple[int, int]] = {}  # a composed node's values and characters, expanded
        self._repeated = (0, 0)

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()
        assert event is not None  # a node is composed only once its first event is read
        path = self._path(parent, index)
        if isinstance(event, yaml.AliasEvent):
            node = super().compose_node(parent, index)
            assert node is not None  # PyYAML composes a node or raises; its stub allows None
            size = self._sizes.get(id(node))
            if size is None:
                raise Refused(path, f"the alias *{event.anchor} is used inside its own anchor", event.start_mark)
            values, characters = self._repeated[0] + size[0], self._repeated[1] + size[1]
            if values > self.MAX_REPEATED_VALUES or characters > self.MAX_REPEATED_CHARACTERS:
                raise Refused(
                    path,
                    f"aliases repeat more than {self.MAX_REPEATED_VALUES:,} values or "
                    f"{self.MAX_REPEATED_CHARACTERS:,} characters; write the data out instead",
                    event.start_mark,
                )
            self._repeated = (values, characters)
            return node
        if len(self._paths) > self.MAX_DEPTH:
            outer = next((above for above in self._paths if above), "")  # the whole path would be too long
            raise Refused(outer, f"nested more than {self.MAX_DEPTH} levels deep", event.start_mark)
        self._paths.append(path)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._paths.pop()
        assert node is not None
        self._sizes[id(node)] = self._size(node)
        return node

    def _path(self, parent: yaml.Node | None, index: Any) -> str:
        # PyYAML passes a mapping value's key node as its index, a list item's number, and None
        # for a mapping's key (named here by the mapping's own path).
        above = self._paths[-1]
        match index:
            case yaml.ScalarNode(value=name):
                return f"{above}.{name}" if above else str(name)
            case int(number):
                return f"{above}[{number}]"
            case _:
                return above

    def _size(self, node: yaml.Node) -> tuple[int, int]:
        match node:
            case yaml.ScalarNode(value=text):
                return 1, len(text)
            case yaml.SequenceNode(value=items):
                sizes = [self._sizes[id(item)] for item in items]
            case yaml.MappingNode(value=pairs):
                sizes = [self._sizes[id(part)] for pair in pairs for part in pair]
            case _:
                return 1, 0
        return 1 + sum(values for values, _ in sizes), sum(characters for _, characters in sizes)


StrictLoader.add_implicit_resolver(f"{_TAG}bool", re.compile(rf"^(?:{_BOOL.pattern})$"), list("tTfF"))
StrictLoader.add_implicit_resolver(f"{_TAG}int", re.compile(rf"^{_INT.pattern}$"), list("-+0123456789"))
StrictLoader.add_implicit_resolver(f"{_TAG}float", re.compile(rf"^(?:{_FLOAT.pattern})$"), list("-+0123456789."))
StrictLoader.add_implicit_resolver(f"{_TAG}null", re.compile(rf"^(?:{_NULL.pattern})$"), ["~", "n", "N", ""])
StrictLoader.add_implicit_resolver(f"{_TAG}merge", re.compile(r"^(?:<<)$"), ["<"])


class YamlData(msgspec.Struct, frozen=True):
    """A YAML file's data, and the paths (``judge[0].check.with.seat``) of the values left out:
    ``seat:`` with nothing after it, which YAML reads as null as it reads ``seat: null``."""

    data: Any
    blanks: frozenset[str] = frozenset()


class YamlFile(msgspec.Struct, frozen=True):
    """A YAML file, shown in errors by ``shown`` (its path as the user knows it)."""

    path: Path
    shown: str

    MAX_BYTES: ClassVar[int] = 1024 * 1024
    MAX_KEY: ClassVar[int] = 200
    KINDS: ClassVar[dict[str, str]] = {
        "str": "text",
        "int": "a whole number",
        "float": "a number",
        "bool": "true or false",
        "null": "nothing",
        "seq": "a list",
        "map": "a mapping",
    }

    def data(self) -> Any:
        """The file's data; anything convy cannot read is a ``ConfigurationError`` naming the file
        and, where there is one, the field."""
        return self.read().data

    def read(self) -> YamlData:
        """The file's data, and where a value was left out (``YamlData.blanks``), as ``data``."""
        try:
            with RegularFile(self.path).opened() as stream:  # a FIFO or a device is refused, never waited on
                raw = stream.read(self.MAX_BYTES + 1)
        except OSError as error:
            raise ConfigurationError(f"{self.shown}: cannot be read: {error.strerror}") from None
        if len(raw) > self.MAX_BYTES:
            raise ConfigurationError(f"{self.shown}: larger than {self.MAX_BYTES // 1024 // 1024} MB")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            line = raw[: error.start].count(b"\n") + 1
            raise ConfigurationError(
                f"{self.shown}: line {line}: not UTF-8 text (byte 0x{raw[error.start]:02x})"
            ) from None
        try:
            loader = StrictLoader(text)
        except yaml.reader.ReaderError as error:
            raise self._unreadable(text, error) from None
        try:
            root = loader.get_single_node()
            if root is None:
                return YamlData(None)
            blanks: set[str] = set()
            self._checked(root, "", set(), blanks)
            return YamlData(loader.construct_document(root), frozenset(blanks))
        except Refused as error:
            raise self._said(error.problem_mark, error.path, str(error.problem)) from None
        except yaml.reader.ReaderError as error:
            raise self._unreadable(text, error) from None
        except yaml.MarkedYAMLError as error:
            mark = error.problem_mark or error.context_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
            lines = text.splitlines()
            written = lines[mark.line] if mark and mark.line < len(lines) else ""
            # A {{ slot }} unquoted inside a mapping or list written on one line ({...}, [...])
            # breaks YAML's own braces: the fix is the quotes, which the parser cannot say.
            hint = '; a {{ slot }} inside {...} or [...] on one line must be in quotes: "{{ code }}"' if "{{" in written else ""
            raise ConfigurationError(f"{self.shown}: {where}{error.problem or error}{hint}") from None
        except yaml.YAMLError as error:
            raise ConfigurationError(f"{self.shown}: not valid YAML: {error}") from None
        finally:
            loader.dispose()

    def _checked(self, node: yaml.Node, path: str, seen: set[int], blanks: set[str]) -> None:
        # Depth is bounded by the loader, so this recursion is too; a node reached again through
        # an alias was checked the first time.
        if id(node) in seen:
            return
        seen.add(id(node))
        kind = self._kind(node)
        match node:
            case yaml.ScalarNode(value=text) if kind in ("str", "int", "float", "bool", "null"):
                self._scalar(node, path, kind, text)
                if kind == "null" and not text:  # nothing after "key:" (or "-"), not a null written
                    blanks.add(path)
            case yaml.SequenceNode(value=items) if kind == "seq":
                for number, item in enumerate(items):
                    self._checked(item, f"{path}[{number}]", seen, blanks)
            case yaml.MappingNode(value=pairs) if kind == "map":
                keys: set[str] = set()
                for key, value in pairs:
                    name = self._key(key, path)
                    if name in keys:
                        raise self._problem(key, "", f"the key {name!r} is given twice")
                    keys.add(name)
                    self._checked(value, f"{path}.{name}" if path else name, seen, blanks)
            case yaml.SequenceNode() | yaml.MappingNode() if kind in self.KINDS:
                raise self._problem(node, path, f"the tag {self._tag(node)} does not fit {self.KINDS[self._kind_of(node)]}")
            case _:
                raise self._problem(node, path, f"the tag {self._tag(node)} is not allowed: write plain YAML")

    def _scalar(self, node: yaml.ScalarNode, path: str, kind: str, text: str) -> None:
        match kind:
            case "str" if _SURROGATE.search(text):
                raise self._problem(node, path, "holds a lone surrogate, which is not text")
            case "int" if not _INT.fullmatch(text):
                raise self._problem(node, path, "not a whole number")
            case "int" if len(text) > 20 or not -(2**63) <= int(text) < 2**63:
                raise self._problem(node, path, "a whole number too large to keep")
            case "float" if not _FLOAT.fullmatch(text):
                raise self._problem(node, path, "not a number")
            case "float" if re.search("inf|nan", text, re.IGNORECASE) or not math.isfinite(float(text)):
                raise self._problem(node, path, "not a finite number")
            case "bool" if not _BOOL.fullmatch(text):
                raise self._problem(node, path, "not true or false")
            case "null" if not _NULL.fullmatch(text):
                raise self._problem(node, path, "not null")

    def _key(self, key: yaml.Node, path: str) -> str:
        kind = self._kind(key)
        match key:
            case yaml.ScalarNode(value=text) if kind == "str":
                if not text:
                    raise self._problem(key, path, "a key is empty")
                if _SURROGATE.search(text):
                    raise self._problem(key, path, "a key holds a lone surrogate, which is not text")
                if not text.isprintable():  # a line break or a terminal's escape would reach the error's line
                    raise self._problem(key, path, "a key holds a control character or a line break")
                if len(text) > self.MAX_KEY:
                    raise self._problem(key, path, f"a key longer than {self.MAX_KEY} characters")
                return text
            case _ if kind == "merge":
                raise self._problem(key, path, "merge keys (<<) are not supported: write the fields out")
            case yaml.MappingNode(value=[(yaml.ScalarNode(value=name), yaml.ScalarNode(tag=tag))]) if tag.endswith(":null"):
                # {{ name }} unquoted: YAML reads a mapping of a mapping, the slot lost.
                raise self._problem(key, path, f'{{{{ {name} }}}} without quotes is read by YAML as a mapping, not text: write it in quotes, "{{{{ {name} }}}}"')
            case _:
                got = self.KINDS.get(kind, f"the tag {self._tag(key)}")
                raise self._problem(key, path, f"expected text as a key, got {got}")

    def _kind_of(self, node: yaml.Node) -> str:
        match node:
            case yaml.SequenceNode():
                return "seq"
            case _:
                return "map"

    def _kind(self, node: yaml.Node) -> str:
        return node.tag.removeprefix(_TAG) if node.tag.startswith(_TAG) else node.tag

    def _tag(self, node: yaml.Node) -> str:
        return f"!!{node.tag.removeprefix(_TAG)}" if node.tag.startswith(_TAG) else node.tag

    def _problem(self, node: yaml.Node, path: str, what: str) -> ConfigurationError:
        return self._said(node.start_mark, path, what)

    def _unreadable(self, text: str, error: yaml.reader.ReaderError) -> ConfigurationError:
        line = text[: error.position].count("\n") + 1
        return ConfigurationError(f"{self.shown}: line {line}: the character U+{error.character:04X} is not allowed in YAML")

    def _said(self, mark: Any, path: str, what: str) -> ConfigurationError:
        if path:
            return ConfigurationError(f"{self.shown}: {path}: {what}")
        return ConfigurationError(f"{self.shown}: line {mark.line + 1}, column {mark.column + 1}: {what}")
