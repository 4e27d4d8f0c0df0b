"""Variants: one scenario played across the combinations of its ``matrix:``.

A scenario's ``matrix:`` maps names to lists of values (text, numbers or true/false, as ``vars``
are). Each combination is a variant: a scenario of its own, with an id that says its values
(``refunds/upset[mood=angry,language=German]``, the way pytest names a parametrized test), its
values among its vars (so they fill the ``{{ slots }}`` of the user's instructions and of its
script), and a ``Variant`` that keeps them apart as dimensions for the report, the tables and a
comparison. Everything else in convy plays, resumes, re-judges and compares a variant as it does
any scenario, by its id.

The key ``persona`` is the one with a meaning of its own: its values are names of the project's
personas (``personas.yaml``, a list of named value sets) or ``all`` of them, and each persona's
values fill slots beside the persona's name.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

import msgspec

from convy.problems import ConfigurationError, kind_of
from convy.slots import Slotted, nearest
from convy.yamlfile import YamlFile

PERSONA = "persona"  # the matrix key whose values are the project's personas


class Value(msgspec.Struct, frozen=True):
    """A value of a var, a matrix or a persona: text, a number or true/false; ``problem`` says
    what else it is, naming ``field``."""

    value: Any

    def problem(self, field: str) -> str:
        match self.value:
            case str() if Slotted(self.value).slots():
                name = sorted(Slotted(self.value).slots())[0]
                return (
                    f"{field}: a value is not filled, so {{{{ {name} }}}} in it would be sent as written: "
                    "put the slot in the text the value goes into"
                )
            case str() | bool() | int() | float():
                return ""
            case _:
                return f"{field}: expected text, a number or true/false, got {kind_of(self.value)}"

    def text(self) -> str:
        """The value as a variant's id writes it: true/false as YAML writes them."""
        match self.value:
            case bool(flag):
                return "true" if flag else "false"
            case _:
                return str(self.value)


class Variant(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Which combination of a scenario's matrix a scenario is: the id of the scenario it was made
    from (``of``) and each matrix key's value, in the matrix's order (a persona by its name)."""

    of: str
    values: dict[str, Any]

    def label(self) -> str:
        """The values as the variant's id says them: ``mood=angry,language=German``."""
        return ",".join(f"{key}={Value(value).text()}" for key, value in self.values.items())

    def id(self) -> str:
        return f"{self.of}[{self.label()}]"


class Persona(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One of the project's personas: a name and the values it fills slots with."""

    name: str
    values: dict[str, Any]


class Personas(msgspec.Struct, frozen=True):
    """The project's personas, as ``personas.yaml`` lists them (none when there is no such file):

    .. code-block:: yaml

        - name: retiree
          age: 78
          tech: low
        - name: student
          age: 20
          tech: high

    ``problems`` are the file's, one line each, naming the file and the field."""

    people: tuple[Persona, ...] = ()
    shown: str = "personas.yaml"
    problems: tuple[str, ...] = ()
    absent: bool = False  # whether there is no such file at all

    NAMES: ClassVar[tuple[str, ...]] = ("personas.yaml", "personas.yml")  # read alike, beside scenarios/

    MOST: ClassVar[int] = 1_000

    @classmethod
    def read(cls, path: Path, shown: str = "personas.yaml") -> Personas:
        """The personas of ``path``; none when there is no file; its problems kept, not raised,
        so that every scenario's are said with them."""
        if not path.exists():
            return cls((), shown, absent=True)
        try:
            data = YamlFile(path, shown).data()
        except ConfigurationError as error:
            return cls((), shown, (str(error),))
        match data:
            case None:
                return cls((), shown)
            case list() if len(data) > cls.MOST:
                return cls((), shown, (f"{shown}: {len(data):,} personas, more than {cls.MOST:,}",))
            case list():
                pass
            case dict() if data and all(isinstance(values, dict) for values in data.values()):
                first = next(iter(data))
                return cls((), shown, (
                    f"{shown}: must be a list of personas, each a mapping with a name, not a mapping of names: "
                    f"write each as - name: {first} with its values below it",
                ))
            case _:
                return cls((), shown, (f"{shown}: must be a list of personas, each a mapping with a name",))
        people: list[Persona] = []
        problems: list[str] = []
        for number, entry in enumerate(data):
            match entry:
                case {"name": str(name), **values} if name.strip():
                    pass
                case dict():
                    slip = nearest("name", [str(key) for key in entry if key != "name"])
                    hint = f" (is {slip}: a slip for name:?)" if slip else ""
                    problems.append(f"{shown}: [{number}].name: give each persona a name (text){hint}")
                    continue
                case _:
                    problems.append(f"{shown}: [{number}]: must be a mapping with a name and values")
                    continue
            if any(person.name == name for person in people):
                problems.append(f"{shown}: [{number}].name: {name!r} is also the name of another persona")
                continue
            wrong = [Value(value).problem(f"[{number}].{key}") for key, value in values.items()]
            wrong = [problem for problem in wrong if problem]
            if PERSONA in values:
                wrong.append(f"[{number}].{PERSONA}: a persona's name is its name, not one of its values")
            if wrong:
                problems.extend(f"{shown}: {problem}" for problem in wrong)
                continue
            people.append(Persona(name, {str(key): value for key, value in values.items()}))
        return cls(tuple(people), shown, tuple(problems))

    def missing(self, name: str) -> str:
        """Why no persona is named ``name``, with the name likely meant."""
        if self.absent:
            return f"no persona {name!r}: there is no {self.shown} beside scenarios/ (a list of personas, each - name: {name} with its values)"
        names = [person.name for person in self.people]
        near = nearest(name, names)
        said = f"no persona {name!r} in {self.shown}"
        if near:
            said += f"; did you mean {near}?"
        elif names:
            said += f"; its personas are {', '.join(names[:10])}{', ...' if len(names) > 10 else ''}"
        return said + (f" ({self.shown} has problems of its own, said above)" if self.problems else "")

    def named(self, name: str) -> Persona | None:
        return next((person for person in self.people if person.name == name), None)


class Matrix(msgspec.Struct, frozen=True):
    """A scenario's ``matrix:`` as read, checked field by field: ``problem`` names the field
    at fault, or is ""."""

    keys: dict[str, Any]

    def problem(self) -> str:
        for key, values in self.keys.items():
            if key == PERSONA:
                match values:
                    case "all":
                        continue
                    case list() | tuple() if values:
                        pass
                    case _:
                        return f"matrix.{PERSONA}: give persona names, or all"
                for number, name in enumerate(values):
                    match name:
                        case str() if name.strip():
                            pass
                        case _:
                            return f"matrix.{PERSONA}[{number}]: expected a persona's name"
                if len(set(values)) < len(values):
                    return f"matrix.{PERSONA}: a persona given twice"
                continue
            match values:
                case list() | tuple() if values:
                    pass
                case list() | tuple():
                    return f"matrix.{key}: an empty list plays no variant: give at least one value"
                case _:
                    return f"matrix.{key}: expected a list of values, got {kind_of(values)}"
            seen: dict[str, int] = {}
            for number, value in enumerate(values):
                problem = Value(value).problem(f"matrix.{key}[{number}]")
                if problem:
                    return problem
                text = Value(value).text()
                bare = value.strip(" \t") if isinstance(value, str) else value
                if bare != value:
                    return (
                        f"matrix.{key}[{number}]: {value!r} has spaces round it, which would be in the variant's id "
                        f"and in every text it fills: write {bare!r}"
                    )
                if text in seen:
                    return f"matrix.{key}[{number}]: {text!r} is given already, at [{seen[text]}]"
                seen[text] = number
        return ""

    def count(self, personas: Personas) -> int:
        """How many variants the matrix makes, counted without making them."""
        return math.prod(len(self.values(key, personas)) for key in self.keys)

    def values(self, key: str, personas: Personas) -> tuple[Any, ...]:
        """The values of one key: a persona key's ``all`` is every persona's name."""
        values = self.keys[key]
        if key == PERSONA and values == "all":
            return tuple(person.name for person in personas.people)
        return tuple(values)

    def combinations(self, personas: Personas) -> tuple[dict[str, Any], ...]:
        """Every combination of the values, the first key varying slowest."""
        combinations: list[dict[str, Any]] = [{}]
        for key in self.keys:
            combinations = [{**made, key: value} for made in combinations for value in self.values(key, personas)]
        return tuple(combinations)
