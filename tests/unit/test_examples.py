"""The examples people copy run as written: the README's and docs' ```python blocks, and the
docstrings' ``::`` blocks that are Python.

Each example runs in a fresh project made from the template (``convy init``'s copy), as a reader who
followed the quick start would run it, with the fakes for models and no network: a gateway it
names points at a closed port on 127.0.0.1, and nothing in the examples sends a request. The docs
on tables, and the one that reads an agent's spans back, run where a run has been played and exported.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import inspect
import pkgutil
import re
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

import convy
from convy.bench import Bench
from convy.fakes import FakeJudge
from convy.judge import Models
from convy.project import Project
from convy.records import RunSpec
from convy.scenarios import Scenarios
from convy.storage import RunJournal

ROOT = Path(__file__).resolve().parents[2]
# The Markdown guides whose ```python blocks are run, and how many each holds (the README keeps none since
# its sections moved to docs/: a guide or a block left out would go unrun without a word).
EXPECTED = {
    "README.md": 0,
    "docs/agents.md": 2,
    "docs/judging.md": 1,
    "docs/python.md": 1,
    "docs/services.md": 1,
    "docs/tables.md": 4,
    "docs/tools.md": 2,
    "docs/traces.md": 2,
}
GUIDES = tuple(EXPECTED)
FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def fenced(guide: str) -> list[str]:
    """The ```python blocks of a Markdown file, in order."""
    return FENCE.findall((ROOT / guide).read_text(encoding="utf-8"))


def literal(doc: str) -> list[str]:
    """The ``::`` literal blocks of a docstring that parse as Python (a folder's listing does not)."""
    blocks = re.findall(r"::\n\n((?:(?:[ \t]+\S.*)?\n)+)", doc + "\n")
    found = []
    for block in blocks:
        code = textwrap.dedent(block)
        try:
            ast.parse(code)
        except SyntaxError:
            continue
        found.append(code)
    return found


def modules() -> list[ModuleType]:
    """convy and each of its modules."""
    names = (info.name for info in pkgutil.iter_modules(convy.__path__) if info.name != "__main__")
    return [convy, *(importlib.import_module(f"convy.{name}") for name in names)]


def own_doc(owner: object) -> str:
    """The docstring written on a module, class or function itself, not one it takes from elsewhere.

    Anything else a module holds is left out: a ``TypeVar`` made in a module names that module as its
    own, and from Python 3.12 on its ``__doc__`` is typing's, with typing's examples in it. A class
    with no docstring of its own has ``None`` here, not its base's.
    """
    if inspect.ismodule(owner) or inspect.isfunction(owner):
        return owner.__doc__ or ""
    if inspect.isclass(owner):
        doc = vars(owner).get("__doc__")
        return doc if isinstance(doc, str) else ""
    return ""


def docstrings() -> list[tuple[str, str]]:
    """Every Python ``::`` block of the docstrings of convy's modules, classes and functions."""
    found = []
    for module in modules():
        owners = [module, *(value for value in vars(module).values() if getattr(value, "__module__", None) == module.__name__)]
        for owner in owners:
            for code in literal(own_doc(owner)):
                found.append((f"{module.__name__}:{getattr(owner, '__qualname__', '')}", code))
    return found


EXAMPLES = [(f"{guide} #{number}", code) for guide in GUIDES for number, code in enumerate(fenced(guide), start=1)]
EXAMPLES += [(where, code) for where, code in docstrings()]


def test_the_examples_are_found() -> None:
    """The guides' Python examples (the five the README held, now on the pages of docs/ its sections moved to,
    and the tables' four) and the package docstring's are all collected, and no other guide holds one."""
    names = [name for name, _ in EXAMPLES]
    assert {guide: sum(name.startswith(f"{guide} #") for name in names) for guide in GUIDES} == EXPECTED
    others = [page for page in sorted((ROOT / "docs").rglob("*.md")) if page.relative_to(ROOT).as_posix() not in GUIDES]
    assert not [page.name for page in others if fenced(page.relative_to(ROOT).as_posix())]
    assert "convy:" in names


def test_every_docstring_example_is_written_in_convy() -> None:
    """Each docstring example is found, line for line, in the source of the convy module it was collected
    from: none is a library's own docstring that a convy module happens to hold (typing's, on Python 3.13)."""
    sources = {module.__name__: inspect.getsource(module) for module in modules()}
    for where, code in EXAMPLES:
        if where.startswith(GUIDES):
            continue
        source = sources[where.partition(":")[0]]
        lines = [line.strip() for line in code.splitlines() if line.strip()]
        assert all(line in source for line in lines), f"{where}: an example not written in convy's source"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh project from the template, the working directory, with a gateway that is never reached."""
    folder = tmp_path / "project"
    folder.mkdir()
    Project(folder).created()
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "USER_MODEL", "JUDGE_MODEL", "AGENT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GATEWAY_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("GATEWAY_KEY", "sk-example-never-sent")
    monkeypatch.chdir(folder)
    return folder


def played(folder: Path) -> None:
    """A run of the template's offline scenarios against its shop bot, exported as CSV and JSON Lines."""
    shop = Project(folder).agent("shop").agent
    scenarios = tuple(scenario for scenario in Scenarios(folder / "scenarios").every() if not scenario.needs())
    bench = Bench(shop, Models(judge=FakeJudge()))
    spec = RunSpec(id="first", agent="shop", scenarios=scenarios, attempts=2, limits=bench.limits)
    asyncio.run(RunJournal(folder / "results" / "shop" / "first").play(spec, bench))
    runs, unread = Project(folder).runs()
    assert len(runs) == 1 and unread == ()
    for form in ("csv", "jsonl"):
        Project(folder).exported(runs, form)


@pytest.mark.parametrize(("where", "code"), EXAMPLES, ids=[name for name, _ in EXAMPLES])
def test_the_example_runs_as_written(where: str, code: str, project: Path) -> None:
    """The example runs to its end in a fresh project, with no error."""
    if where.startswith(("docs/tables.md", "docs/traces.md #2")):
        played(project)
    exec(compile(code, where, "exec", dont_inherit=True), {"__name__": "__example__"})  # noqa: S102 - the examples are ours
