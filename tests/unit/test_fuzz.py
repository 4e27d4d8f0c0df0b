"""Property-based fuzzing of everything convy reads from a user's files and environment.

Four targets, each through its real entry point: scenario files (``Scenarios.every``), ``[tool.convy]``
of ``pyproject.toml`` and the ``CONVY_*`` variables (``ProjectSettings.settings`` and the prompt it
names), and run folders (``Runs.read``). The property is the same for all: the entry point succeeds,
or raises the project's ``ConfigurationError`` with one line naming the file (or variable) and
what is wrong — never another exception, never more than a bounded amount of memory. Run folders
never raise at all: a line that cannot be read is skipped and counted.

Without ``--full`` each target runs a small fixed number of cases; with it, at least 1,000. Cases
are derandomized, so CI sees the same ones every time, and no case has a deadline: the machine's
speed decides nothing here.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convy import Answer, Bench, Call, Models, Reported, RunJournal, RunSpec, Scenarios, Usage
from convy.fakes import FakeAgent, FakeJudge, FakeModel
from convy.problems import ConfigurationError, ScenarioError
from convy.project import Project
from convy.runs import Runs
from convy.settings import ProjectSettings, Settings

pytestmark = pytest.mark.timeout(3600)  # the full size on a slow machine: a hang guard, not a speed test

TEMPLATE = Path(__file__).resolve().parents[2] / "src" / "convy" / "template"
SAMPLES = tuple(path.read_bytes() for path in sorted((TEMPLATE / "scenarios").rglob("*.yaml")))
PYPROJECT = (TEMPLATE / "pyproject.toml").read_bytes()
MEMORY = 64 * 1024 * 1024  # the most any one case may allocate at its peak

# Pieces a hostile author would try, spliced into valid files byte by byte.
SPLICES = [
    b"&a ", b"*a", b"&b [*a, *a, *a, *a, *a, *a, *a, *a, *a]", b"!!int ", b"!!float ", b"!!bool ", b"!!set ",
    b"!!binary ", b"!!timestamp ", b"!!python/object/apply:os.system ", b"!!str ", b"!!map ", b"!!seq ",
    b"<<: ", b"<<: *a", b"? ", b"? [a, b]\n: 1\n", b"[", b"]", b"{", b"}", b"[" * 200, b"{a: " * 100,
    b"\xff", b"\xed\xa0\x80", b"\x00", b"\x1b[2J", b'"\\ud800"', b'"\\udc80x"', b"\t", b"\r", b"\n",
    b"  ", b"- ", b": ", b"'", b'"', b"---\n", b"...\n", b"%YAML 1.1\n", b"%TAG ! tag:x,2000:\n", b"!x ",
    b".nan", b".inf", b"-.inf", b"1.0e999", b"99999999999999999999999", b"0x1F", b"012", b"~", b"null",
    b'"\\u001b[2J\\n": 1, ', b'"\\ud800"', b"a{4294967296}", b"(a+)+$", b"(" * 300, b"\\", b"\xef\xbb\xbf", b"#", b"|\n", b">-\n", b"''",
]
FIELDS = ["id", "user", "script", "judge", "vars", "max_turns", "tags", "claim", "grades", "pass", "check",
          "called", "with", "not_called", "said", "not_said"]


def size(full: bool) -> int:
    """Cases per target: at least 1,000 with --full, a fixed 60 without."""
    return 1000 if full else 60


class Cases:
    """How many cases a target ran, so a test can tell it ran as many as it promises."""

    def __init__(self) -> None:
        self.count = 0

    def ran(self) -> None:
        self.count += 1


def fuzzed(full: bool) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Hypothesis settings for one target: derandomized, no deadline, no database."""
    return settings(
        max_examples=size(full),
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


@contextmanager
def bounded() -> Iterator[None]:
    """The block must not allocate more than MEMORY at its peak."""
    tracemalloc.start()
    try:
        yield
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MEMORY, f"peak {peak:,} bytes"


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """The process environment with ``values`` set, restored afterwards."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# --- strategies -------------------------------------------------------------------------------

@st.composite
def mutated(draw: st.DrawFn, samples: tuple[bytes, ...]) -> bytes:
    """A valid file with a few byte-level changes: replaced, inserted, deleted or repeated spans."""
    data = bytearray(draw(st.sampled_from(samples)))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(data)))
        match draw(st.sampled_from(["splice", "byte", "delete", "repeat", "flip"])):
            case "splice":
                data[at:at] = draw(st.sampled_from(SPLICES))
            case "byte":
                data[at:at] = draw(st.binary(min_size=1, max_size=4))
            case "delete":
                del data[at : at + draw(st.integers(1, 20))]
            case "repeat":
                span = bytes(data[at : at + draw(st.integers(1, 40))])
                data[at:at] = span * draw(st.integers(1, 50))
            case "flip" if at < len(data):
                data[at] ^= 1 << draw(st.integers(0, 7))
            case _:
                pass
    return bytes(data)


TEXTS = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["", " ", "no", "yes", "on", "~", "<<", "{{ x }}", "\n", "a\nb", "\x1b]0;t\x07", "\ud800"]),
)


def _values() -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        TEXTS,
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(),
        st.none(),
        st.binary(max_size=8),
        st.dates(),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(st.one_of(TEXTS, st.sampled_from(FIELDS), st.integers(), st.booleans()), inner, max_size=4),
            st.sets(st.integers(), max_size=3),
            st.tuples(inner, inner),
        ),
        max_leaves=20,
    )


VALUES = _values()


ENTRY = st.one_of(
    TEXTS,
    st.fixed_dictionaries(
        {},
        optional={
            "claim": TEXTS,
            "grades": st.lists(TEXTS, max_size=4),
            "pass": TEXTS,
            "check": st.fixed_dictionaries(
                {},
                optional={name: st.one_of(TEXTS, VALUES) for name in ("called", "not_called", "said", "not_said")}
                | {"with": st.one_of(st.dictionaries(TEXTS, VALUES, max_size=3), VALUES)},
            ),
        },
    ),
    VALUES,
)
SCENARIO = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(TEXTS, VALUES),
        "user": st.one_of(TEXTS, VALUES),
        "script": st.one_of(st.lists(TEXTS, max_size=3), VALUES),
        "judge": st.one_of(st.lists(ENTRY, min_size=1, max_size=4), VALUES),
        "vars": st.one_of(st.dictionaries(TEXTS, VALUES, max_size=3), VALUES),
        "max_turns": VALUES,
        "tags": st.one_of(st.lists(TEXTS, max_size=3), VALUES),
    },
)
EXTRA = st.dictionaries(st.one_of(TEXTS, st.integers(), st.tuples(st.integers())), VALUES, max_size=2)


@st.composite
def scenario_data(draw: st.DrawFn) -> str:
    """Data shaped like a scenario — known fields with right and wrong values — dumped as YAML."""
    data = {**draw(SCENARIO), **draw(EXTRA)}
    # The full dumper writes what the safe one would refuse: tuples, sets, bytes as tags.
    flow = draw(st.sampled_from([None, True, False]))
    return yaml.dump(data, allow_unicode=draw(st.booleans()), default_flow_style=flow)


TOML_VALUES = st.recursive(
    st.one_of(
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(),
        st.booleans(),
        TEXTS,
        st.sampled_from(["1979-05-27", "07:32:00", "1979-05-27T07:32:00Z", "0x7FFFFFFFFFFFFFFFFF", "1e99999"]).map(
            lambda bare: ("bare", bare)
        ),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXTS, inner, max_size=3)),
    max_leaves=10,
)
TOML_KEYS = st.one_of(st.sampled_from(list(Settings.__struct_fields__)), TEXTS, st.sampled_from(["atempts", "trusts"]))


@st.composite
def toml_text(draw: st.DrawFn) -> bytes:
    """A pyproject.toml whose [tool.convy] has known and unknown keys with values of any kind."""

    def rendered(value: Any) -> str:
        match value:
            case bool():
                return "true" if value else "false"
            case int() | float():
                return {"inf": "inf", "-inf": "-inf", "nan": "nan"}.get(repr(value), repr(value))
            case str():
                return json.dumps(value)
            case list():
                return "[" + ", ".join(rendered(item) for item in value) + "]"
            case dict():
                return "{" + ", ".join(f"{json.dumps(key)} = {rendered(item)}" for key, item in value.items()) + "}"
            case (_, str(bare)):
                return bare
            case _:
                return str(value)

    table = draw(st.dictionaries(TOML_KEYS, TOML_VALUES, max_size=5))
    lines = [f"{json.dumps(key)} = {rendered(value)}" for key, value in table.items()]
    head = draw(st.sampled_from(["[tool.convy]\n", "[tool]\nconvy = 3\n[x]\n", "tool = 1\n[y]\n", ""]))
    return (head + "\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


def variable_values() -> st.SearchStrategy[str]:
    # What a process environment can hold: no NUL, and a lone surrogate only as an escaped byte.
    return st.one_of(
        st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30),
        st.sampled_from(["nan", "inf", "-inf", "1e999", "-1", "0", "9" * 5000, "\udcff", "3.5", " 3 ", "0x10", "1_000"]),
        st.integers(min_value=-(2**70), max_value=2**70).map(str),
        st.floats().map(repr),
    )


# --- scenario files ---------------------------------------------------------------------------


def scenario_holds(folder: Path, raw: bytes) -> None:
    """The property for one scenario file: read, or one line per problem naming the file; bounded."""
    (folder / "s.yaml").write_bytes(raw)
    with bounded():
        try:
            Scenarios(folder).every()
        except ScenarioError as error:
            assert error.problems, "a ScenarioError with no problem"
            for line in error.problems:
                assert line.startswith("scenarios/s.yaml: "), line
                assert "\n" not in line and "\r" not in line, line
                assert len(line) > len("scenarios/s.yaml: "), line


def test_fuzzed_scenario_files_from_the_schema(tmp_path: Path, full: bool) -> None:
    """Scenario-shaped data with right and wrong values of every kind is read, or refused in one line per problem naming the file."""
    folder = tmp_path / "scenarios"
    folder.mkdir()

    cases = Cases()

    @fuzzed(full)
    @given(scenario_data())
    def case(text: str) -> None:
        cases.ran()
        scenario_holds(folder, text.encode("utf-8", "surrogatepass"))

    case()
    assert cases.count >= size(full)


def test_fuzzed_scenario_files_mutated_byte_by_byte(tmp_path: Path, full: bool) -> None:
    """The template's scenario files with bytes changed, spliced, deleted and repeated are read or refused, never a crash."""
    folder = tmp_path / "scenarios"
    folder.mkdir()

    cases = Cases()

    @fuzzed(full)
    @given(mutated(SAMPLES))
    def case(raw: bytes) -> None:
        cases.ran()
        scenario_holds(folder, raw)

    case()
    assert cases.count >= size(full)


# --- settings ---------------------------------------------------------------------------------


def settings_hold(folder: Path, starts: tuple[str, ...], secret: str = "") -> None:
    """The property for the settings: read, or a ConfigurationError of one line for each problem,
    each naming the file or variable, none said twice; the prompt file they name is read, or
    refused in one line naming that file."""
    with bounded():
        try:
            read = ProjectSettings(folder).settings()
        except ConfigurationError as error:
            said = str(error)
            lines = said.split("\n")
            assert all(line.startswith(starts) for line in lines), said
            assert len(set(lines)) == len(lines), said
            assert "\r" not in said, said
            assert not secret or secret not in said, said
            return
        try:
            Project(folder).prompt(read)
        except ConfigurationError as error:
            assert str(error).startswith(f"{read.user_prompt}: "), str(error)
            assert "\n" not in str(error) and "\r" not in str(error), str(error)


def test_fuzzed_tool_convy_tables(tmp_path: Path, full: bool) -> None:
    """[tool.convy] with any keys and values gives settings or one line naming pyproject.toml."""

    cases = Cases()

    @fuzzed(full)
    @given(st.one_of(toml_text(), mutated((PYPROJECT,))))
    def case(raw: bytes) -> None:
        cases.ran()
        (tmp_path / "pyproject.toml").write_bytes(raw)
        settings_hold(tmp_path, ("pyproject.toml: ",))

    case()
    assert cases.count >= size(full)


def test_fuzzed_convy_variables(tmp_path: Path, full: bool) -> None:
    """Any CONVY_* variables, from the environment or .env, give settings or one line naming a variable, never its value."""
    names = [f"CONVY_{name.upper()}" for name in Settings.__struct_fields__ if name != "user_prompt"]

    cases = Cases()

    @fuzzed(full)
    @given(
        st.dictionaries(st.sampled_from(names), variable_values(), max_size=4),
        st.booleans(),
        st.one_of(st.none(), st.binary(max_size=40)),
    )
    def case(values: dict[str, str], canary: bool, env_file: bytes | None) -> None:
        cases.ran()
        secret = "CANARY-7f3" if canary else ""
        given_values = {name: value + secret for name, value in values.items()}
        env = tmp_path / ".env"
        if env_file is None:
            env.unlink(missing_ok=True)
        else:
            env.write_bytes(env_file)
        with environment(given_values):
            settings_hold(tmp_path, ("CONVY_", ".env: ", "cannot read ", "settings: "), secret)

    case()
    assert cases.count >= size(full)


# --- run folders ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sound_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of two scenarios, three attempts each, with calls, usage and a failed check."""
    root = tmp_path_factory.mktemp("run")
    folder = root / "scenarios"
    folder.mkdir()
    (folder / "refund.yaml").write_text(
        "user: You want a refund.\nscript: [Hi, my kettle broke.]\n"
        "judge:\n  - The agent offers a refund.\n  - check: {called: refund, with: {order: A1}}\n",
        encoding="utf-8",
    )
    (folder / "hello.yaml").write_text("script: [Hello]\njudge:\n  - check: {said: '(?i)hi'}\n", encoding="utf-8")
    agent = FakeAgent(lambda text: Answer("Refunded.", Usage(10, 3), (Call("refund", {"order": "A1"}, Reported("ok")),)))
    models = Models(user=FakeModel(["Thanks. ###STOP###"]), judge=FakeJudge())
    bench = Bench(agent, models)
    spec = RunSpec(id="20260101-000000-abcd", agent="fake", scenarios=Scenarios(folder).every(), attempts=3, limits=bench.limits)
    asyncio.run(RunJournal(root / "results" / "fake" / spec.id).play(spec, bench))
    return root / "results"


JSON_VALUES = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.floats(), TEXTS,
        st.sampled_from(["running", "finished", "interrupted", "no_usage", "verdict", "failed"]),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXTS, inner, max_size=3)),
    max_leaves=8,
)
RUN_FIELDS = ["spec", "status", "format", "id", "agent", "scenarios", "attempts", "limits", "trust", "type",
              "started", "ended", "vars", "judge", "user", "script", "max_turns", "check", "with", "said"]


@st.composite
def attempt_lines(draw: st.DrawFn, lines: tuple[bytes, ...]) -> bytes:
    """attempts.jsonl with lines mutated, dropped, duplicated, cut, or replaced by hostile JSON."""
    hostile = [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"scenario": "\\ud800"}',
        b"null",
        b"{}",
        b'{"scenario": 1e999}',
        b"\xff\xfe",
        b"9" * 5000,
    ]
    chosen = list(lines)
    for _ in range(draw(st.integers(1, 5))):
        at = draw(st.integers(0, len(chosen) - 1))
        match draw(st.sampled_from(["mutate", "drop", "twice", "cut", "hostile", "inject"])):
            case "inject":
                try:
                    record = json.loads(chosen[at])
                except (ValueError, RecursionError):  # a line mutated before: nothing to inject into
                    record = None
                match record:
                    case dict():
                        key = draw(st.one_of(st.sampled_from(list(record) or ["scenario"]), TEXTS))
                        record[key] = draw(JSON_VALUES)
                        chosen[at] = json.dumps(record).encode()
                    case _:
                        pass
            case "mutate":
                chosen[at] = draw(mutated((chosen[at],)))
            case "drop" if len(chosen) > 1:
                del chosen[at]
            case "twice":
                chosen.insert(at, chosen[at])
            case "cut":
                chosen[at] = chosen[at][: draw(st.integers(0, len(chosen[at])))]
            case "hostile":
                chosen[at] = draw(st.sampled_from(hostile))
            case _:
                pass
    return b"\n".join(chosen) + b"\n"


def test_fuzzed_attempt_lines_are_skipped_and_counted(tmp_path: Path, sound_run: Path, full: bool) -> None:
    """A run folder whose attempts.jsonl lines are mutated is read, never a crash: no line counts twice, no attempt outside the run's plan counts, and every line that is not even a JSON object is counted broken."""
    results = tmp_path / "results"
    shutil.copytree(sound_run, results)
    (folder,) = (results / "fake").iterdir()
    lines = tuple((folder / "attempts.jsonl").read_bytes().splitlines())

    cases = Cases()

    @fuzzed(full)
    @given(attempt_lines(lines))
    def case(raw: bytes) -> None:
        cases.ran()
        (folder / "attempts.jsonl").write_bytes(raw)
        with bounded():
            runs, unread = Runs(results).read()
        assert unread == ()
        (run,) = runs
        written = sum(1 for line in raw.splitlines() if line.strip())
        assert len(run.outcomes) + run.broken <= written
        spec = run.file.spec
        planned = {(scenario.id, attempt) for scenario in spec.scenarios for attempt in range(1, spec.attempts + 1)}
        assert {(outcome.scenario, outcome.attempt) for outcome in run.outcomes} <= planned  # never "7 of 6"
        assert run.broken >= sum(1 for line in raw.splitlines() if line.strip() and not line.lstrip().startswith(b"{"))

    case()
    assert cases.count >= size(full)


@st.composite
def injected(draw: st.DrawFn, sound: bytes) -> bytes:
    """run.json with a field somewhere in it set to a value of any kind, or a key no record has."""
    data = json.loads(sound)
    places = [data, data["spec"], data["status"], data["spec"]["limits"], data["spec"]["scenarios"][0]]
    for _ in range(draw(st.integers(1, 3))):
        place = draw(st.sampled_from(places))
        key = draw(st.one_of(st.sampled_from(RUN_FIELDS), TEXTS))
        place[key] = draw(JSON_VALUES)
    return json.dumps(data).encode()


def test_fuzzed_run_json_gives_a_reason(tmp_path: Path, sound_run: Path, full: bool) -> None:
    """A run folder whose run.json is mutated is read or set aside with a one-line reason naming run.json, never a crash."""
    results = tmp_path / "results"
    shutil.copytree(sound_run, results)
    (folder,) = (results / "fake").iterdir()
    sound = (folder / "run.json").read_bytes()

    cases = Cases()

    @fuzzed(full)
    @given(st.one_of(mutated((sound,)), mutated((msgspec.json.encode(msgspec.json.decode(sound)),)), injected(sound)))
    def case(raw: bytes) -> None:
        cases.ran()
        (folder / "run.json").write_bytes(raw)
        with bounded():
            runs, unread = Runs(results).read()
        assert len(runs) + len(unread) == 1
        for one in unread:
            assert "run.json" in one.reason, one.reason
            assert one.reason.isprintable(), one.reason

    case()
    assert cases.count >= size(full)


# --- through the command ----------------------------------------------------------------------


def convy(folder: Path, *arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "convy", *arguments],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def files(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def refused(done: subprocess.CompletedProcess[str], start: str) -> None:
    """Exit 2 and one line on stderr that starts with ``start``; no traceback."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"convy: {start}"), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_command_refuses_a_fuzzed_scenario_file(echo_project: Path) -> None:
    """`convy run` on a scenario file the fuzzer breaks (an alias bomb spliced into a template file) exits 2 with one line, writing nothing."""
    raw = SAMPLES[0] + b"\nvars:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n" + b"".join(
        f"  b{level}: &b{level} [{', '.join(['*a' if level == 0 else f'*b{level - 1}'] * 10)}]\n".encode()
        for level in range(6)
    )
    (echo_project / "scenarios" / "bomb.yaml").write_bytes(raw)
    done = convy(echo_project, "run")
    refused(done, "scenarios/bomb.yaml: vars.b")
    assert not (echo_project / "results").exists()


def test_command_refuses_a_fuzzed_tool_convy(echo_project: Path) -> None:
    """`convy run` with [tool.convy] holding an unknown key and a number past its bound exits 2 with one line, writing nothing."""
    (echo_project / "pyproject.toml").write_text("[tool.convy]\natempts = 3\n", encoding="utf-8")
    refused(convy(echo_project, "run"), "pyproject.toml: [tool.convy] atempts: unknown field; did you mean attempts?")
    (echo_project / "pyproject.toml").write_text("[tool.convy]\nturn_seconds = inf\n", encoding="utf-8")
    refused(convy(echo_project, "run"), "pyproject.toml: [tool.convy] turn_seconds: must be a finite number")
    assert not (echo_project / "results").exists()


def test_command_refuses_a_fuzzed_variable(echo_project: Path) -> None:
    """`convy run` with CONVY_ATTEMPTS far past its bound exits 2 with one line naming it, never its value, writing nothing."""
    done = convy(echo_project, "run", env={"CONVY_ATTEMPTS": "99999999999999999999999"})
    refused(done, "CONVY_ATTEMPTS: attempts: ")
    assert "99999" not in done.stderr
    assert not (echo_project / "results").exists()


def test_command_reads_around_a_fuzzed_run_json(echo_project: Path) -> None:
    """`convy report` of a run whose run.json is nested past any decoder's depth reads its attempts alone and says run.json is damaged, with no traceback."""
    assert convy(echo_project, "run").returncode == 0
    (folder,) = (echo_project / "results" / "a").iterdir()
    (folder / "run.json").write_bytes(b'{"spec": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    done = convy(echo_project, "report", folder.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "run.json is damaged; its 3 attempts are read from attempts.jsonl alone" in done.stderr + done.stdout
    resumed = convy(echo_project, "resume", folder.name)
    refused(resumed, f"{folder}/run.json: spec: expected a mapping, got a list; ")


def test_command_reads_fuzzed_attempt_lines(echo_project: Path) -> None:
    """`convy report` of a run with hostile attempts.jsonl lines skips them, with no traceback, and its page counts both."""
    assert convy(echo_project, "run").returncode == 0
    (folder,) = (echo_project / "results" / "a").iterdir()
    with (folder / "attempts.jsonl").open("ab") as stream:
        stream.write(b"[" * 100_000 + b"]" * 100_000 + b"\n\xff\xfe\n")
    done = convy(echo_project, "report", folder.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert re.search(r'"broken":\s*2\b', page)
