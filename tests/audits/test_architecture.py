"""ARCHITECTURE.md is a map that is true (issue 28, item 6): every module, class and member it names
in code spans exists in ``src/convy`` today, every module of the package is named in it, and the
figures it gives of the code (the catch-all clauses, the plain classes whose objects change) are
the code's. The decision records and the guides (README.md, docs/) are held to the same names.
And the check can fail: a map that names a class that is gone, or leaves a module out, is refused
with what is wrong."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "convy"

# Names in code spans that are not convy's: the standard library's, pytest's, Ray's, the formats'.
OUTSIDE = frozenset(
    {
        "BaseSettings", "SecretStr", "TaskGroup", "Sequence", "Struct", "CancelledError", "SystemExit",
        "TimeoutError", "BaseException", "Exception", "OSError", "ValueError", "TypeError", "KeyError",
        "SIGINT", "SIGKILL", "SIGTERM", "TCP", "JSON", "YAML", "HTML", "CSV", "URL", "RE2", "TLS", "HTTP",
        "None", "True", "False", "Ctrl", "ESC", "OSC", "BMP", "UTF", "ID", "IDs", "AsyncIterator",
        "ModuleSpec", "Protocol", "Literal", "Any", "Path", "PurePath", "SafeLoader", "CParser", "AsyncClient",
        "BrokenProcessPool", "RayActorError", "ResizeObserver", "Convy",  # Convy: the pages' own script's namespace
        "HandClock",  # the stand-in's clock, in tests/support/standin.py
        "GatewaySettings",  # the template's, in src/convy/template/gateway_settings.py
        "Decide", "Summarize",  # the CI workflow's steps
        "Authorization", "NaN", "Null", "Float64", "Int64", "Boolean", "String",  # a header; pandas' and polars' kinds
        "ExportTraceServiceRequest", "OTLPSpanExporter", "SimpleSpanProcessor",  # OpenTelemetry's
    }
)
# Files a project holds, which the map names as a project's (the template's are under src/convy/template).
PROJECT_FILES = frozenset({"models.py"})
# Spans that name a file of another kind: the run folder's, the pages' parts, the prompts.
OTHER_FILES = re.compile(r".+\.(jsonl|json|html|css|js|md|yaml|yml|toml|lock|svg|txt|xml)")


class Defined(msgspec.Struct, frozen=True):
    """What the package defines: its modules (dotted, from ``convy``), each module's top-level
    names, and each class's members (methods, fields, class variables), by class name."""

    modules: dict[str, frozenset[str]]
    members: dict[str, frozenset[str]]
    files: frozenset[str]  # paths under src/convy, as "busy.py", "cli/run.py"


@functools.cache
def defined() -> Defined:
    modules: dict[str, frozenset[str]] = {}
    members: dict[str, set[str]] = {}
    files = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] == "template":
            continue
        files.add(relative.as_posix())
        dotted = ".".join(part for part in relative.with_suffix("").parts if part != "__init__")
        names: set[str] = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            match node:
                case ast.ClassDef(name=name, body=body):
                    names.add(name)
                    held = members.setdefault(name, set())
                    for inner in body:
                        match inner:
                            case ast.FunctionDef(name=member) | ast.AsyncFunctionDef(name=member) | ast.ClassDef(name=member):
                                held.add(member)
                            case ast.AnnAssign(target=ast.Name(id=member)):
                                held.add(member)
                            case ast.Assign(targets=targets):
                                held.update(target.id for target in targets if isinstance(target, ast.Name))
                    for inner in ast.walk(node):  # what a plain class sets on itself: self.size = ...
                        match inner:
                            case ast.Attribute(value=ast.Name(id="self"), attr=member, ctx=ast.Store()):
                                held.add(member)
                case ast.FunctionDef(name=name) | ast.AsyncFunctionDef(name=name):
                    names.add(name)
                case ast.Assign(targets=targets):
                    names.update(target.id for target in targets if isinstance(target, ast.Name))
                case ast.AnnAssign(target=ast.Name(id=name)):
                    names.add(name)
                case ast.ImportFrom(names=imported):  # a name a module hands on is found there too
                    names.update(alias.asname or alias.name for alias in imported)
        modules[dotted or "convy"] = frozenset(names)
    return Defined(modules, {name: frozenset(held) for name, held in members.items()}, frozenset(files))


def spans(text: str) -> list[str]:
    """The inline code spans of a Markdown text, fenced blocks left out."""
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return re.findall(r"`([^`\n]+)`", text)


def wrong(text: str, known: Defined) -> list[str]:
    """Each code span of ``text`` that names a module, class or member the package lacks."""
    every = {name for names in known.modules.values() for name in names}
    problems = []
    for span in spans(text):
        word = span.strip().removesuffix("()")
        if re.fullmatch(r"[a-z_]+(/[a-z_]+)*\.py", word):  # a module's file
            if word not in known.files and word not in PROJECT_FILES and not (ROOT / word).exists() and not (PACKAGE / "template" / word).exists():
                problems.append(f"`{span}`: no such file in src/convy")
            continue
        if OTHER_FILES.fullmatch(word):
            continue
        word = word.removeprefix("convy.")
        if not re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*", word):
            continue  # code, a command, a value
        parts = word.split(".")
        # the longest dotted prefix that is a module: cli.run.RunCommand, busy.TURN
        for cut in range(len(parts), 0, -1):
            if ".".join(parts[:cut]) in known.modules:
                module, rest = ".".join(parts[:cut]), parts[cut:]
                break
        else:
            module, rest = None, parts
        if module is not None:
            if rest and rest[0] not in known.modules[module]:
                problems.append(f"`{span}`: {module} defines no {rest[0]}")
            elif len(rest) > 1 and rest[0] in known.members and rest[1] not in known.members[rest[0]]:
                problems.append(f"`{span}`: {rest[0]} has no {rest[1]}")
            continue
        head = parts[0]
        if not head[:1].isupper() or head in OUTSIDE or head.isupper():
            continue  # a field, a variable, a constant of the text, a word
        if head not in every:
            problems.append(f"`{span}`: no class or name {head} in src/convy")
        elif len(parts) > 1 and head in known.members and parts[1] not in known.members[head]:
            problems.append(f"`{span}`: {head} has no {parts[1]}")
    return problems


def unnamed(text: str, known: Defined) -> list[str]:
    """The package's modules the text does not name (as ``busy.py``, ``cli/run.py``)."""
    named = set(spans(text))
    return sorted(file for file in known.files if file not in named)


def test_every_name_in_the_map_exists_and_every_module_is_on_it() -> None:
    known = defined()
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert wrong(text, known) == []
    assert unnamed(text, known) == []


def test_the_decision_records_name_what_exists() -> None:
    known = defined()
    problems = []
    for record in sorted((ROOT / "docs" / "decisions").glob("0*.md")):
        problems += [f"{record.name}: {problem}" for problem in wrong(record.read_text(encoding="utf-8"), known)]
    assert problems == []


def test_the_guides_name_what_exists() -> None:
    """The README and the pages under docs/ name modules, classes and members too (``stats.Exact``,
    ``adaptive.py``): each exists."""
    known = defined()
    problems = []
    data = {"`totals.causes`: totals defines no causes"}  # a field of summary.json, not the module's
    for guide in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        said = wrong(guide.read_text(encoding="utf-8"), known)
        problems += [f"{guide.name}: {problem}" for problem in said if problem not in data]
    assert problems == []


def test_the_code_names_in_its_docstrings_and_comments_what_exists() -> None:
    """A docstring or comment that names a module's member (``busy.TURN``, ``judge.Panel``) or a
    module (``user.py``) names one that exists: a move or a rename leaves no stale pointer behind."""
    known = defined()
    # Not code: a user's project file, a path in the pages' data.
    elsewhere = {"`agents/airline.py`: no such file in src/convy", "`agent.seconds.p50`: agent defines no seconds"}
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "template" in path.parts:
            continue
        quoted = " ".join(f"`{span}`" for span in re.findall(r"``([^`\n]+)``", path.read_text(encoding="utf-8")))
        for problem in wrong(quoted, known):
            if problem not in elsewhere and (re.match(r"`[a-z_]+(\.[a-z_]+)*\.[A-Za-z_]", problem) or ".py`" in problem):
                problems.append(f"{path.relative_to(PACKAGE)}: {problem}")
    assert problems == []


def test_the_catch_all_clauses_are_as_many_as_the_map_says() -> None:
    """ARCHITECTURE.md counts the clauses that catch everything (``except Exception`` and
    ``except BaseException``); the code holds that many."""
    found = 0
    for path in PACKAGE.rglob("*.py"):
        if "template" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ExceptHandler) and isinstance(node.type, ast.Name) and node.type.id in ("Exception", "BaseException"):
                found += 1
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    said = re.search(r"(\d+) clauses stand in\s+`src/convy`", text)
    assert said is not None, "ARCHITECTURE.md no longer says how many catch-all clauses there are"
    assert int(said.group(1)) == found


def test_the_check_fails_on_a_name_that_is_gone_and_a_module_left_out() -> None:
    known = defined()
    assert wrong("`bench.Nowhere` and `Places.nowhere` and `dialog.py` and `Vanished`", known) == [
        "`bench.Nowhere`: bench defines no Nowhere",
        "`Places.nowhere`: Places has no nowhere",
        "`dialog.py`: no such file in src/convy",
        "`Vanished`: no class or name Vanished in src/convy",
    ]
    assert "busy.py" in unnamed("`bench.py`", known)


def plain_classes() -> set[str]:
    """The classes of the package whose objects may change: neither a ``msgspec.Struct`` (frozen
    records) nor an exception, a Protocol, nor pydantic's settings. Found by importing each module."""
    import importlib
    import inspect
    import typing

    found = set()
    for file in defined().files:
        dotted = "convy." + file.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
        if dotted.endswith("__main__"):
            continue
        module = importlib.import_module(dotted.removesuffix(".__init__"))
        for name, value in vars(module).items():
            if not inspect.isclass(value) or value.__module__ != module.__name__:
                continue
            if issubclass(value, (msgspec.Struct, BaseException)) or getattr(value, "_is_protocol", False):
                continue
            if any(base.__module__.startswith("pydantic") for base in value.__mro__):
                continue
            if value is typing.Generic:
                continue
            found.add(name)
    return found


def test_the_objects_that_change_are_each_named_in_the_rule_that_lists_them() -> None:
    """Rule 2 lists the objects that change inside, "and no others": every plain class is named
    there, and every class it names is a plain one."""
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    rule = text[text.index("2. **Immutable records.**") : text.index("3. **Interfaces")]
    named = {span.split(".")[-1] for span in spans(rule)}
    plain = plain_classes()
    assert sorted(plain - named) == []


def test_the_map_of_layers_is_the_contract_lint_imports_keeps() -> None:
    """ARCHITECTURE.md's table of layers names, row by row from the top, the modules of each layer
    of ``pyproject.toml``'s import-linter contract."""
    contract = msgspec.toml.decode((ROOT / "pyproject.toml").read_bytes())["tool"]["importlinter"]["contracts"][0]
    declared = [sorted(name.strip().removeprefix("convy.") for name in layer.split("|")) for layer in contract["layers"]]
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    table = text[text.index("## Layers") : text.index("## The path of a run")]
    drawn = []
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 2 and cells[1].startswith("`"):
            files = re.findall(r"`([^`]+)`", cells[1])
            drawn.append(sorted(file.removesuffix(".py").removesuffix("/") for file in files))
    assert drawn == declared
