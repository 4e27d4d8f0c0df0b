"""Every problem of data read from a file for a record, not only the first.

msgspec stops at the first field it cannot convert; an author fixing a file wants them all at once.
``Layout`` walks the data beside the record's fields: each unknown field (with the known field it
was likely meant for, or the place where a known field belongs when it is written at the wrong
depth), each field missing, each value of the wrong kind, and each record's own checks
(``__post_init__``) once its fields are sound. Every line is said by ``FieldProblem``, in the same
words a single problem gets.
"""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

import msgspec
import msgspec.structs

from convy.problems import FieldProblem, Problems

_RECORD_SEARCH = 2  # how many levels down a misplaced field's home is looked for


class Layout(msgspec.Struct, frozen=True):
    """The record type ``shape`` (a msgspec Struct) that data read from a file is meant for."""

    shape: Any

    def problems(self, data: Any) -> tuple[str, ...]:
        """One line per problem of ``data``, ``field.path: what is wrong``; none when it converts."""
        return tuple(self._walk(data, self.shape, "", ()))

    def _walk(self, data: Any, annotation: Any, path: str, above: tuple[tuple[str, Any], ...]) -> list[str]:
        record = self._record(annotation)
        if record is not None and isinstance(data, dict):
            return self._fields(data, record, path, above)
        origin = typing.get_origin(annotation)
        arguments = typing.get_args(annotation)
        if isinstance(data, list) and (origin is list or origin is tuple and arguments[1:] == (Ellipsis,)):
            return [problem for number, item in enumerate(data) for problem in self._walk(item, arguments[0], f"{path}[{number}]", above)]
        if origin in (typing.Union, types.UnionType) and isinstance(data, dict):
            member = next((self._record(member) for member in arguments if self._record(member) is not None), None)
            if member is not None:
                return self._fields(data, member, path, above)
        return self._converted(data, annotation, path)

    def _fields(self, data: dict[Any, Any], record: Any, path: str, above: tuple[tuple[str, Any], ...]) -> list[str]:
        fields = {field.encode_name: field for field in msgspec.structs.fields(record)}
        problems = [self._unknown(key, data, record, path, above) for key in data if key not in fields]
        # A required field missing beside an unknown one close to its name is said once, as the slip.
        slips = {near for key in data if key not in fields for near in difflib.get_close_matches(str(key), list(fields), n=1, cutoff=0.6)}
        inner = ((path, record), *above)
        for name, field in fields.items():
            if name in data:
                problems.extend(self._walk(data[name], field.type, self._joined(path, name), inner))
            elif field.required and name not in slips:
                problems.append(self._said(f"Object missing required field `{name}`", path))
        whole = all(name in data for name, field in fields.items() if field.required)
        if whole and len(problems) == sum(1 for key in data if key not in fields):
            # Its fields are sound (only unknown ones beside them): the record's own checks.
            problems.extend(self._converted({key: value for key, value in data.items() if key in fields}, record, path))
        return problems

    def _converted(self, data: Any, annotation: Any, path: str) -> list[str]:
        try:
            msgspec.convert(data, annotation)
        except msgspec.ValidationError as error:
            what, at, where = str(error).rpartition(" - at `")
            if not at or not where.startswith("$") or not where.endswith("`"):  # at the root msgspec names no place
                what, where = str(error), "$`"
            match error.__cause__:
                case Problems(lines=lines):
                    said = list(lines)
                case _:
                    said = [what]
            return [self._said(line, self._joined(path, where.removeprefix("$").rstrip("`").lstrip("."))) for line in said]
        return []

    def _unknown(self, key: Any, data: dict[Any, Any], record: Any, path: str, above: tuple[tuple[str, Any], ...]) -> str:
        named = self._said(f"Object contains unknown field `{key}`", path)
        elsewhere = getattr(record, "ELSEWHERE", {}).get(key) if isinstance(key, str) else None
        if elsewhere:  # a field the record names as another place's, with where it goes
            return f"{named.partition(': unknown field')[0]}: not a field here; {elsewhere}"
        home = self._below(key, data, record, path, _RECORD_SEARCH) if isinstance(key, str) else None
        if home is None and isinstance(key, str):
            outer = next((place for place, record in above if self._has(record, key)), None)
            home = None if outer is None else f"under {outer}" if outer else "at the top of the file"
        else:
            home = None if home is None else f"under {home}"
        if home is None and "; did you mean" not in named:
            # Nothing near: the fields there are (those convy sets itself, ``UNWRITTEN``, left out).
            unwritten = getattr(record, "UNWRITTEN", ())
            names = [field.encode_name for field in msgspec.structs.fields(record) if field.encode_name not in unwritten]
            return f"{named}; the fields here are {', '.join(names)}"
        if home is None:
            return named
        shown = named.partition(": unknown field")[0]
        return f"{shown}: not a field here; it belongs {home}"

    def _below(self, key: str, data: Any, record: Any, path: str, depth: int) -> str | None:
        """Where under ``record`` (whose data is ``data``) a field named ``key`` belongs: the path of
        the nearest record that has it, an entry of a list named by its number when one entry is
        the likely home."""
        if depth == 0:
            return None
        levels: list[tuple[str, Any, Any]] = []
        for field in msgspec.structs.fields(record):
            inner = self._inner(field.type)
            if inner is None:
                continue
            place = self._joined(path, field.encode_name)
            value = data.get(field.encode_name) if isinstance(data, dict) else None
            listed = self._listed(field.type)
            if listed and isinstance(value, list):
                entries = [number for number, item in enumerate(value) if not (isinstance(item, dict) and key in item)]
                shaped = [number for number in entries if isinstance(value[number], dict)] or entries
                if self._has(inner, key):
                    return f"{place}[{shaped[0]}]" if len(shaped) == 1 else f"an entry of {place} ({place}[N].{key})"
                levels.extend((f"{place}[{number}]", inner, value[number]) for number in shaped[:1])
            elif self._has(inner, key):
                return place if not listed else f"an entry of {place}"
            else:
                levels.append((place, inner, value))
        for place, inner, value in levels:
            found = self._below(key, value, inner, place, depth - 1)
            if found is not None:
                return found
        return None

    def _has(self, record: Any, key: str) -> bool:
        return any(field.encode_name == key for field in msgspec.structs.fields(record))

    def _inner(self, annotation: Any) -> Any:
        """The record a field holds: itself, in a union, or the entries of a list."""
        record = self._record(annotation)
        if record is not None:
            return record
        for argument in typing.get_args(annotation):
            if argument is not Ellipsis:
                found = self._inner(argument)
                if found is not None:
                    return found
        return None

    def _listed(self, annotation: Any) -> bool:
        return typing.get_origin(annotation) in (tuple, list)

    def _record(self, annotation: Any) -> Any:
        return annotation if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct) else None

    def _said(self, what: str, path: str) -> str:
        return FieldProblem(f"{what} - at `$.{path}`" if path else what, self.shape).text()

    def _joined(self, path: str, name: str) -> str:
        if not name:
            return path
        if name.startswith("["):
            return f"{path}{name}"
        return f"{path}.{name}" if path else name
