"""A project's scenario files: the folder (``Scenarios``), one file (``ScenarioFile``), a file's fields as written, looked over before conversion (``Written``), and the scenarios a run plays (``Matching``)."""

from __future__ import annotations

import difflib
import fnmatch
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import msgspec
import yaml

from convy.checks import PATTERNS, QUOTED, Rule, slashed, why_unsound
from convy.layout import Layout
from convy.passing import Share
from convy.pattern import Pattern
from convy.problems import (
    ConfigurationError,
    FieldProblem,
    Problems,
    ScenarioError,
)
from convy.scenario import Scenario
from convy.slots import Slotted
from convy.spelling import Spelling
from convy.variants import Personas
from convy.yamlfile import YamlFile


class Scenarios(msgspec.Struct, frozen=True):
    """The scenario files under a project's ``scenarios/`` folder, a scenario with a matrix as
    its variants: at most ``most_variants`` each (``Scenario.MOST_VARIANTS`` unless given), its
    personas read from ``personas`` (the project's ``personas.yaml`` unless given)."""

    folder: Path
    most_variants: int | None = None
    personas: Path | None = None

    def every(self) -> tuple[Scenario, ...]:
        """Every scenario, by id; any broken file is a ``ScenarioError`` listing all problems."""
        scenarios, problems = self.sound()
        if problems:
            raise ScenarioError(problems)
        return scenarios

    # What a scenario file's name ends with, in any case: both spellings of YAML's, read alike.
    SUFFIXES: ClassVar[tuple[str, ...]] = (".yaml", ".yml")

    def files(self) -> tuple[Path, ...]:
        """The scenario files under the folder, at any depth, in order: every file named ``.yaml``
        or ``.yml``."""
        if not self.folder.is_dir():
            return ()
        return tuple(sorted(path for path in self.folder.rglob("*") if path.suffix.lower() in self.SUFFIXES))

    def _absent(self) -> str:
        """Why there is no folder of scenarios, with a folder beside it that was likely meant."""
        name = self.folder.name
        said = f"{name}/: no such folder of scenarios (one scenario per file: {name}/<id>.yaml)"
        near = Spelling(frozenset({name.upper()}))
        beside = self.folder.parent
        meant = sorted(path.name for path in beside.iterdir() if path.is_dir() and (near.meant(path.name) or path.name.upper() == name.upper())) if beside.is_dir() else []
        return said + (f"; {meant[0]}/ is not read: rename it {name}/" if meant else "")

    def _misnamed(self) -> list[str]:
        """A line for each file meant as a scenario whose name would leave it unread: saved as text
        (``greeting.yaml.txt``) or with YAML's suffix mistyped (``greeting.ymal``, ``.yam``). Notes,
        backups (``~``) and hidden files are left alone."""
        problems: list[str] = []
        for path in sorted(self.folder.rglob("*")):
            name = path.name
            if not path.is_file() or name.startswith(".") or name.endswith("~") or path.suffix.lower() in self.SUFFIXES:
                continue
            stem, suffix = path.stem, path.suffix.lower().removeprefix(".")
            if suffix == "txt" and Path(stem).suffix.lower() in self.SUFFIXES:
                meant = stem
            elif suffix != "xml" and Spelling(frozenset({"YAML", "YML"})).meant(suffix):
                meant = f"{stem}.yaml"
            else:
                continue
            shown = f"{self.folder.name}/{path.relative_to(self.folder).as_posix()}"
            problems.append(f"{shown}: not read: a scenario file's name ends in .yaml or .yml; rename it {shown.rsplit('/', 1)[0]}/{meant}")
        return problems

    def _personas(self) -> Personas:
        """The personas given, or the project's: ``personas.yaml`` or ``personas.yml`` beside the
        folder, read alike (both there is a mistake: which one is meant?)."""
        if self.personas is not None:
            return Personas.read(self.personas, self.personas.name)
        there = [name for name in Personas.NAMES if (self.folder.parent / name).exists()]
        if len(there) > 1:
            return Personas(problems=(f"{there[0]} and {there[1]}: two files of personas; keep one of them",))
        name = there[0] if there else Personas.NAMES[0]
        return Personas.read(self.folder.parent / name, name)

    def sound(self) -> tuple[tuple[Scenario, ...], tuple[str, ...]]:
        """The scenarios of the sound files, by id, and one line for each problem of the others
        (and of the personas, when there are any)."""
        found, problems = self.located()
        return tuple(scenario for scenario, _ in found.values()), problems

    def located(self) -> tuple[dict[str, tuple[Scenario, str]], tuple[str, ...]]:
        """As ``sound``, each scenario by its id with the file it is in (``scenarios/a.yaml``)."""
        problems: list[str] = []
        found: dict[str, tuple[Scenario, str]] = {}
        if not self.folder.is_dir():
            return {}, (self._absent(),)
        personas = self._personas()
        problems.extend(personas.problems)
        problems.extend(self._misnamed())
        # A file of personas put among the scenarios first: the scenarios that name its personas follow from it.
        for path in sorted(self.files(), key=lambda path: path.stem.lower() != "personas"):
            shown = f"{self.folder.name}/{path.relative_to(self.folder).as_posix()}"
            try:
                scenario = ScenarioFile(path, shown, path.relative_to(self.folder).with_suffix("").as_posix()).scenario()
            except ScenarioError as error:
                problems.extend(error.problems)
                continue
            try:
                variants = scenario.variants(personas, self.most_variants)
            except Problems as error:
                problems.extend(f"{shown}: {line}" for line in error.lines)
                continue
            except ValueError as error:
                problems.append(f"{shown}: {error}")
                continue
            for variant in variants:
                if variant.id in found:
                    other = found[variant.id][1]
                    if Path(other).with_suffix("") == Path(shown).with_suffix(""):  # a.yaml beside a.yml
                        problems.append(f"{other} and {shown}: two files of scenario {variant.id!r}; keep one of them")
                        break
                    problems.append(f"{shown}: id: {variant.id!r} is also the id of {other}")
                    continue
                found[variant.id] = (variant, shown)
        return found, tuple(problems)


# A word in one pair of braces, "{ref}" (or "{ref}}"), where a slot takes two: "{{ ref }}"; "\{ref}"
# is one written on purpose.
_BRACED = re.compile(r"(?<![{\\])\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}?(?!\})")


# A judge entry's text that starts as a check or a claim written as YAML does: "check: {said: Hi}".
_KEYED = re.compile(r"\s*(\{\s*)?(check|called|not_called|said|not_said|claim)\s*:")


class Written(msgspec.Struct, frozen=True):
    """A scenario file's fields as its author wrote them (the mapping read, before it is converted),
    looked over for the mistakes that would convert and then play wrong without a word: a check
    field left empty, a pattern that can never match or matches every reply, a ``with:`` value
    left null, a slot in the id or a tag (never filled there), a tag with spaces round it or given
    twice, a ``{ref}`` with one pair of braces where ``ref`` has a value, a check written in quotes
    as a claim. Looked for where a file is read only: a run's kept scenario reads back as kept."""

    data: dict[Any, Any]
    blanks: frozenset[str] = frozenset()  # the paths of values left out (YamlData.blanks), not a null written

    PATTERNS: ClassVar[tuple[str, ...]] = PATTERNS
    NAMES: ClassVar[tuple[str, ...]] = ("called", "not_called", "asked_approval", "not_asked_approval")
    SHOWN: ClassVar[int] = QUOTED

    def problems(self) -> Iterator[str]:
        """One line per mistake, ``field: what is wrong``, with the fix."""
        data = self.data
        yield from self._id(data.get("id"))
        yield from self._tags(data.get("tags"))
        names = {str(key) for field in ("vars", "matrix") if isinstance(data.get(field), dict) for key in data[field]}
        if isinstance(data.get("vars"), dict):
            for key, value in data["vars"].items():
                if isinstance(value, str):
                    yield from self._valued(f"vars.{key}", value, names)
        if isinstance(data.get("matrix"), dict):
            for key, values in data["matrix"].items():
                for number, value in enumerate(values if isinstance(values, list) else ()):
                    if isinstance(value, str):
                        yield from self._valued(f"matrix.{key}[{number}]", value, names)
        if isinstance(data.get("user"), str):
            yield from self._braced("user", data["user"], names)
        if isinstance(data.get("script"), list):
            for number, line in enumerate(data["script"]):
                if isinstance(line, str):
                    yield from self._braced(f"script[{number}]", line, names)
        if isinstance(data.get("judge"), list):
            for number, entry in enumerate(data["judge"]):
                yield from self._entry(f"judge[{number}]", entry, names)

    def _id(self, written: Any) -> Iterator[str]:
        if isinstance(written, str) and (Slotted(written).slots() or "{{" in written):
            yield (
                f"id: {self._cut(written)!r} has a slot, and an id is never filled: write the id itself "
                "(a matrix adds its values to each variant's id, as seat[seat=12A])"
            )

    def _tags(self, written: Any) -> Iterator[str]:
        if not isinstance(written, list):
            return
        seen: dict[str, int] = {}
        for number, tag in enumerate(written):
            if not isinstance(tag, str):
                continue
            place = f"tags[{number}]"
            if Slotted(tag).slots() or "{{" in tag:
                yield f"{place}: {self._cut(tag)!r} has a slot, and a tag is never filled: write the tag itself"
            elif not tag.strip():
                yield f"{place}: an empty tag: give it a word, or leave it out"
            elif tag != tag.strip():
                yield f"{place}: {tag!r} has spaces round it, and --tag matches a tag as written: write {tag.strip()!r}"
            elif tag.casefold() in seen:
                earlier = written[seen[tag.casefold()]]
                yield (
                    f"{place}: {tag!r} is given already, at tags[{seen[tag.casefold()]}]: leave one out"
                    if earlier == tag
                    else f"{place}: {tag!r} is tags[{seen[tag.casefold()]}] {earlier!r} in another case, and "
                    f"--tag matches a tag as written: keep one spelling"
                )
            seen.setdefault(tag.strip().casefold(), number)

    def _entry(self, place: str, entry: Any, names: set[str]) -> Iterator[str]:
        match entry:
            case str(text):
                keyed = _KEYED.match(text)
                written = text.strip()
                if keyed and keyed.group(2) in ("claim", "check"):
                    fix = f"- {written}"
                elif keyed and keyed.group(1):
                    fix = f"- check: {written}"
                else:
                    fix = f"- check: {{{written}}}"
                if keyed and self._sound(fix):
                    kind = "claim" if keyed.group(2) == "claim" else "check"
                    yield (
                        f"{place}: {self._cut(written)!r} is in quotes, so it is a claim's text the judge would be asked, "
                        f"but it reads as a {kind}: write it without the quotes, {self._cut(fix)}"
                    )
                    return
                yield from self._braced(place, text, names)
            case {"check": dict() as check}:
                yield from self._check(f"{place}.check", check, names)
            case dict():
                for field in ("claim", "pass"):
                    if isinstance(entry.get(field), str):
                        yield from self._braced(f"{place}.{field}", entry[field], names)
            case _:
                pass

    @staticmethod
    def _sound(fix: str) -> bool:
        """Whether ``fix``, a judge entry written as YAML (``- check: {said: Hi}``), reads as a sound
        entry that passes these looks too: only then is a quoted entry that reads so refused
        ("check: the agent greets the user back" is a claim's text)."""
        try:
            entry = yaml.safe_load(fix)
        except yaml.YAMLError:
            return False
        match entry:
            case [dict() as mapping]:
                try:
                    msgspec.convert(mapping, Rule)
                except (msgspec.ValidationError, ValueError):
                    return False
                return not any(Written({"judge": [mapping]}).problems())
            case _:
                return False

    def _check(self, place: str, check: dict[Any, Any], names: set[str]) -> Iterator[str]:
        for field in (*self.NAMES, *self.PATTERNS):
            value = check.get(field)
            if field not in check or not isinstance(value, str):
                continue
            if not value.strip():
                yield (
                    f"{place}.{field}: empty, and an empty pattern matches every reply: give the text to look for, or leave {field} out"
                    if field in self.PATTERNS
                    else f"{place}.{field}: empty: give the tool's name, or leave {field} out"
                )
                continue
            yield from self._braced(f"{place}.{field}", value, names)
            if field in self.PATTERNS and not Pattern(value).problem():
                yield from self._pattern(f"{place}.{field}", field, Pattern(value))
        # A value left out is a slip there, a null written a value asked for.
        for field, meant in (("with", "the agent must pass"), ("state", "the tools' state must hold")):
            if isinstance(check.get(field), dict):
                yield from self._arguments(f"{place}.{field}", check[field], names, meant)

    def _pattern(self, place: str, field: str, pattern: Pattern) -> Iterator[str]:
        unsound = why_unsound(field, pattern)
        if unsound:
            yield f"{place}: /{slashed(self._cut(pattern.text))}/ {unsound}"

    def _arguments(self, place: str, given: dict[Any, Any] | list[Any], names: set[str], meant: str = "the agent must pass") -> Iterator[str]:
        # A null written (null or ~) is a value the agent must pass, null; nothing written is a slip.
        items = given.items() if isinstance(given, dict) else enumerate(given)
        for key, value in items:
            at, shown = (f"{place}.{key}", f"{key}:") if isinstance(given, dict) else (f"{place}[{key}]", "-")
            match value:
                case None if at in self.blanks:
                    yield (
                        f"{at}: no value (YAML reads {shown} with nothing after it as null): write the value "
                        f"{meant}, in quotes when it is text ({shown} '12A'), or null for a null"
                    )
                case str():
                    yield from self._braced(at, value, names)
                case dict() | list():
                    yield from self._arguments(at, value, names, meant)
                case _:
                    pass

    def _braced(self, place: str, text: str, names: set[str]) -> Iterator[str]:
        for found in _BRACED.finditer(text):
            if found.group(1) in names:
                yield (
                    f"{place}: {found.group(0)} would stay as written, one pair of braces: "
                    f"did you mean {{{{ {found.group(1)} }}}}, or \\{{{found.group(1)}}} for the braces themselves?"
                )

    def _valued(self, place: str, text: str, names: set[str]) -> Iterator[str]:
        # A value is sent as it is, never filled: {name} there is sent with its braces, as written.
        for found in _BRACED.finditer(text):
            if found.group(1) in names:
                yield (
                    f"{place}: {found.group(0)} would be sent as written, and a value is not filled: put "
                    f"{{{{ {found.group(1)} }}}} in the text the value goes into, or, for the braces themselves, "
                    f"write the text there with \\{{{found.group(1)}}}"
                )

    def _cut(self, text: str) -> str:
        return text if len(text) <= self.SHOWN else text[: self.SHOWN] + "..."


class ScenarioFile(msgspec.Struct, frozen=True):
    """One scenario file; ``default_id`` is its path under ``scenarios/`` without ``.yaml`` (or ``.yml``)."""

    path: Path
    shown: str
    default_id: str

    def scenario(self) -> Scenario:
        try:
            read = YamlFile(self.path, self.shown).read()
        except ConfigurationError as error:
            raise ScenarioError((str(error),)) from None
        data = read.data
        match data:
            case dict():
                pass
            case None:
                raise ScenarioError((f"{self.shown}: empty: a scenario needs at least a judge and a user or a script",))
            case list() if self.path.stem.lower() == "personas":
                folder = self.shown.split("/", 1)[0]
                raise ScenarioError((
                    f"{self.shown}: read as a scenario, since it is in {folder}/: personas are read from "
                    f"personas.yaml beside {folder}/; move it there",
                ))
            case _:
                raise ScenarioError((f"{self.shown}: must be a mapping of fields (id, user, script, judge, ...)",))
        # Two fields convy sets itself, never read from a file: said, then left out of the rest.
        own = {
            "variant": "convy sets it on each variant of a matrix; write matrix:",
            "filled": "convy sets it once the slots are filled; leave it out",
        }
        problems = [f"{self.shown}: {field}: {said}" for field, said in own.items() if field in data]
        written = {"id": self.default_id, **{key: value for key, value in data.items() if key not in own}}
        if "fail_under" in written:  # "90%" is 0.9, as in [tool.convy], .env and on the command line
            written["fail_under"] = Share(written["fail_under"]).number()
        # Other text is told how to write a share, as a number out of range is.
        shares = {"fail_under: expected a number, got text": 'fail_under: expected a number, got text (0.8 or "80%")'}
        problems.extend(f"{self.shown}: {self._quoted(shares.get(line, line), data)}" for line in Layout(Scenario).problems(written))
        problems.extend(f"{self.shown}: {line}" for line in Written(data, read.blanks).problems())
        problems = list(dict.fromkeys(problems))
        if problems:
            raise ScenarioError(tuple(problems))
        try:
            scenario = msgspec.convert(written, Scenario)
        except msgspec.ValidationError as error:  # what Layout did not foresee is still said, in one line
            raise ScenarioError((f"{self.shown}: {FieldProblem(str(error), Scenario).text()}",)) from None
        try:  # the run folder keeps it as JSON: what would not read back the same is refused now
            kept = _SCENARIO.decode(msgspec.json.encode(scenario))
        except (TypeError, ValueError, msgspec.MsgspecError) as error:
            raise ScenarioError((f"{self.shown}: cannot be kept in a run folder: {error}",)) from None
        if kept != scenario:
            raise ScenarioError((f"{self.shown}: cannot be kept in a run folder as it is written",))
        return scenario


    @staticmethod
    def _quoted(line: str, data: dict[str, Any]) -> str:
        """``line`` with the fix for a tag YAML read as a number (``tags: [2024]``): quote it."""
        found = re.fullmatch(r"tags\[(\d+)\]: expected text, got (?:a whole number|a number)", line)
        tags = data.get("tags")
        if found is None or not isinstance(tags, list) or int(found[1]) >= len(tags):
            return line
        return f"{line}: write it in quotes, '{tags[int(found[1])]}'"


_SCENARIO = msgspec.json.Decoder(Scenario)


class Matching(msgspec.Struct, frozen=True):
    """The scenarios a run plays: those whose id or path fits a pattern, and that carry a tag."""

    patterns: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    def chosen(self, scenarios: tuple[Scenario, ...]) -> tuple[Scenario, ...]:
        return tuple(scenario for scenario in scenarios if self._fits(scenario))

    def unmatched(self, scenarios: tuple[Scenario, ...]) -> bool:
        """Whether some pattern or tag given matches none of ``scenarios``: a mistake even when the
        others choose some (a mistyped second ``--scenarios`` is not dropped in silence); ``missed``
        says which."""
        tags = {tag for scenario in scenarios for tag in scenario.tags}
        return any(not Matching((pattern,)).chosen(scenarios) for pattern in self.patterns) or any(
            tag not in tags for tag in self.tags
        )

    def missed(self, scenarios: tuple[Scenario, ...], folder: str = "scenarios/") -> str:
        """Why none of ``scenarios`` is chosen, said with what is near: for a pattern that fits
        none, the nearest ids; for a tag no scenario has, the tags there are."""
        if not scenarios:
            return f"no scenario files in {folder} (one scenario per file: {folder}<id>.yaml)"
        ids = sorted({name for scenario in scenarios for name in (scenario.id, scenario.variant.of if scenario.variant else scenario.id)})
        reasons: list[str] = []
        for pattern in self.patterns:
            if not Matching((pattern,)).chosen(scenarios):
                asked = pattern.removeprefix("./").removeprefix(folder)
                for suffix in Scenarios.SUFFIXES:
                    asked = asked.removesuffix(suffix)
                parts = [part.strip() for part in pattern.split(",") if part.strip()]
                if len(parts) > 1 and all(Matching((part,)).chosen(scenarios) for part in parts):
                    reasons.append(f"--scenarios {pattern}: no such scenario; give each apart, with spaces: --scenarios {' '.join(parts)}")
                    continue
                near = difflib.get_close_matches(asked, ids, n=3, cutoff=0.5)
                reasons.append(
                    f"--scenarios {pattern}: no such scenario; "
                    + (f"nearest: {', '.join(near)}" if near else f"the ids are {', '.join(ids[:10])}{', ...' if len(ids) > 10 else ''}")
                )
        tags = sorted({tag for scenario in scenarios for tag in scenario.tags})
        for tag in self.tags:
            parts = [part.strip() for part in tag.split(",") if part.strip()]
            if tag not in tags and len(parts) > 1 and all(part in tags for part in parts):
                reasons.append(f"--tag {tag}: no scenario has it; give each apart, with spaces: --tag {' '.join(parts)}")
            elif tag not in tags and (cased := [known for known in tags if known.casefold() == tag.strip().casefold()]):
                reasons.append(f"--tag {tag}: no scenario has it; a tag is matched as written: --tag {cased[0]}")
            elif tag not in tags:
                reasons.append(f"--tag {tag}: no scenario has it; " + (f"the tags are {', '.join(tags)}" if tags else "no scenario has a tag"))
        if reasons:
            return "no scenario matches: " + "; ".join(reasons)
        return f"no scenario matches both --scenarios {' '.join(self.patterns)} and --tag {' '.join(self.tags)}"

    @staticmethod
    def _within(base: str, pattern: str) -> bool:
        # A folder of scenarios (orders, orders/, scenarios/orders) chooses every scenario in it.
        folder = pattern.removeprefix("./").removeprefix("scenarios/").rstrip("/")
        return bool(folder) and fnmatch.fnmatchcase(base, f"{folder}/*")

    def _fits(self, scenario: Scenario) -> bool:
        # A variant is chosen by its own id (given exactly: ``[`` starts a set in a glob) or by
        # what chooses the scenario it was made from, its id or its file.
        base = scenario.variant.of if scenario.variant is not None else scenario.id
        names = (scenario.id, base, *(f"{folder}{base}{suffix}" for folder in ("scenarios/", "") for suffix in Scenarios.SUFFIXES))
        by_pattern = not self.patterns or any(
            pattern == scenario.id
            or fnmatch.fnmatchcase(name, pattern.removeprefix("./"))
            or self._within(base, pattern)
            for pattern in self.patterns
            for name in names
        )
        by_tag = not self.tags or any(tag in scenario.tags for tag in self.tags)
        return by_pattern and by_tag
