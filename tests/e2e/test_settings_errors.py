"""Broken settings — [tool.convy] in pyproject.toml, the CONVY_* variables, .env — and the one line each gives."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from convy.problems import ConfigurationError
from convy.project import Project
from convy.settings import ProjectSettings

# (case, pyproject.toml, the exact message)
PYPROJECT: list[tuple[str, bytes, str]] = [
    (
        "an unknown key near a known one",
        b"[tool.convy]\natempts = 3\n",
        "pyproject.toml: [tool.convy] atempts: unknown field; did you mean attempts?",
    ),
    (
        "an unknown key holding a line break",
        b'[tool.convy]\n"\\n\\u001b[2J" = 1\n',
        "pyproject.toml: [tool.convy] '\\n\\x1b[2J': unknown field",
    ),
    ("an empty key", b'[tool.convy]\n"" = 3\n', "pyproject.toml: [tool.convy] a field with an empty name"),
    ("a huge number", b"[tool.convy]\nattempts = 99999999999999999999999\n", "pyproject.toml: [tool.convy] attempts: must be at most 10,000"),
    ("infinite seconds", b"[tool.convy]\nturn_seconds = inf\n", "pyproject.toml: [tool.convy] turn_seconds: must be a finite number"),
    ("patience not a number", b"[tool.convy]\nagent_patience = nan\n", "pyproject.toml: [tool.convy] agent_patience: must be a finite number"),
    ("trust not a number", b"[tool.convy]\ntrust = nan\n", "pyproject.toml: [tool.convy] trust: must be between 0 and 1"),
    ("a date for a count", b"[tool.convy]\nattempts = 1979-05-27\n", "pyproject.toml: [tool.convy] attempts: must be a whole number of at least 1, or auto"),
    ("attempts a word", b'[tool.convy]\nattempts = "many"\n', "pyproject.toml: [tool.convy] attempts: must be a whole number of at least 1, or auto"),
    ("attempts a fraction", b"[tool.convy]\nattempts = 2.5\n", "pyproject.toml: [tool.convy] attempts: must be a whole number of at least 1, or auto"),
    ("attempts none", b"[tool.convy]\nattempts = 0\n", "pyproject.toml: [tool.convy] attempts: must be a whole number of at least 1, or auto"),
    ("attempts Auto", b'[tool.convy]\nattempts = "Auto"\n', "pyproject.toml: [tool.convy] attempts: must be a whole number of at least 1, or auto"),
    ("tool not a table", b"tool = 3\n", "pyproject.toml: tool: expected a mapping, got a whole number"),
    ("tool.convy not a table", b"[tool]\nconvy = 3\n", "pyproject.toml: tool.convy: expected a mapping, got a whole number"),
    ("nesting 5,000 deep", b"[tool.convy]\nattempts = " + b"[" * 5000 + b"]" * 5000 + b"\n", "pyproject.toml: nested too deeply to read"),
    ("a NUL in the prompt's name", b'[tool.convy]\nuser_prompt = "x\\u0000.md"\n', "pyproject.toml: [tool.convy] user_prompt: not a file name"),
]


@contextmanager
def variables(values: dict[str, str]) -> Iterator[None]:
    """The environment with ``values`` set, as it was afterwards."""
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


def refused(folder: Path) -> str:
    with pytest.raises(ConfigurationError) as raised:
        Project(folder).prompt(ProjectSettings(folder).settings())
    return str(raised.value)


@pytest.mark.parametrize(("case", "raw", "expected"), PYPROJECT, ids=[case for case, _, _ in PYPROJECT])
def test_broken_pyproject_gives_its_exact_message(tmp_path: Path, case: str, raw: bytes, expected: str) -> None:
    """A broken [tool.convy] is one ConfigurationError line naming pyproject.toml and the field."""
    (tmp_path / "pyproject.toml").write_bytes(raw)
    assert refused(tmp_path) == expected


def test_pyproject_not_utf8_names_the_file(tmp_path: Path) -> None:
    """A pyproject.toml with bytes that are not UTF-8 is a ConfigurationError naming the file."""
    (tmp_path / "pyproject.toml").write_bytes(b'[tool.convy]\nuser_prompt = "\xff"\n')
    assert refused(tmp_path).startswith("pyproject.toml: not valid TOML: ")


def test_pyproject_a_folder_names_the_file(tmp_path: Path) -> None:
    """A pyproject.toml that is a folder is a ConfigurationError naming the file."""
    (tmp_path / "pyproject.toml").mkdir()
    assert refused(tmp_path) == "pyproject.toml: cannot be read: Is a directory"


def test_prompt_not_utf8_names_the_file(tmp_path: Path) -> None:
    """A simulator prompt file that is not UTF-8 is a ConfigurationError naming that file."""
    (tmp_path / "pyproject.toml").write_bytes(b'[tool.convy]\nuser_prompt = "user.md"\n')
    (tmp_path / "user.md").write_bytes(b"\xff\xfe")
    assert refused(tmp_path) == "user.md: not UTF-8 text"


# (variable, value, the exact message): the value is never repeated.
VARIABLES: list[tuple[str, str, str]] = [
    ("CONVY_ATTEMPTS", "9" * 5000, "CONVY_ATTEMPTS: attempts: a whole number too large"),
    ("CONVY_ATTEMPTS", "20000", "CONVY_ATTEMPTS: attempts: must be at most 10,000"),
    ("CONVY_ATTEMPTS", "many", "CONVY_ATTEMPTS: attempts: must be a whole number of at least 1, or auto"),
    ("CONVY_ATTEMPTS", "2.5", "CONVY_ATTEMPTS: attempts: must be a whole number of at least 1, or auto"),
    ("CONVY_ATTEMPTS", "0", "CONVY_ATTEMPTS: attempts: must be a whole number of at least 1, or auto"),
    ("CONVY_TRUST", "nan", "CONVY_TRUST: trust: must be between 0 and 1"),
    ("CONVY_TURN_SECONDS", "1e999", "CONVY_TURN_SECONDS: turn_seconds: a number too large"),
    ("CONVY_TURN_SECONDS", "inf", "CONVY_TURN_SECONDS: turn_seconds: must be a finite number"),
    ("CONVY_AGENT_PLACES", "many", "CONVY_AGENT_PLACES: agent_places: expected a whole number, got text"),
    ("CONVY_AGENT_PLACES", "\udcff", "CONVY_AGENT_PLACES: agent_places: not UTF-8 text"),
]


@pytest.mark.parametrize(("name", "value", "expected"), VARIABLES, ids=[f"{n}={v[:8]!r}" for n, v, _ in VARIABLES])
def test_broken_variable_gives_its_exact_message(tmp_path: Path, name: str, value: str, expected: str) -> None:
    """A broken CONVY_* variable is one ConfigurationError line naming the variable and the field."""
    with variables({name: value}):
        assert refused(tmp_path) == expected


@pytest.mark.parametrize(
    ("where", "text", "named"),
    [
        ("pyproject.toml", '[tool.convy]\nfail_under = "90%"\n', "[tool.convy]"),
        ("pyproject.toml", '[tool.convy]\nfail_under = " 90 % "\n', "[tool.convy]"),
        (".env", "CONVY_FAIL_UNDER=90%\n", "CONVY_FAIL_UNDER"),
        (".env", "CONVY_FAIL_UNDER=0.9\n", "CONVY_FAIL_UNDER"),
    ],
)
def test_a_share_is_taken_as_a_percentage_wherever_it_is_given(tmp_path: Path, where: str, text: str, named: str) -> None:
    """``--fail-under 90%`` is taken, and so is 90% in [tool.convy] or CONVY_FAIL_UNDER: one rule for
    every place a share is given (trust and max_not_judged alike)."""
    (tmp_path / where).write_text(text, encoding="utf-8")
    sourced = ProjectSettings(tmp_path).sourced()
    assert sourced.problems == ()
    assert sourced.settings.fail_under == pytest.approx(0.9)
    assert sourced.sources["fail_under"] == named


@pytest.mark.parametrize(
    ("where", "text", "expected"),
    [
        ("pyproject.toml", '[tool.convy]\nmax_not_judged = "5 percent"\n', '[tool.convy] max_not_judged: must be a number from 0 to 1, or a percentage (0.9 or "90%")'),
        ("pyproject.toml", '[tool.convy]\ntrust = "150%"\n', "[tool.convy] trust: must be between 0 and 1"),
        (".env", "CONVY_FAIL_UNDER=ninety%\n", 'CONVY_FAIL_UNDER: fail_under: must be a number from 0 to 1, or a percentage (0.9 or "90%")'),
    ],
)
def test_a_share_that_is_no_number_says_both_ways_to_write_one(tmp_path: Path, where: str, text: str, expected: str) -> None:
    (tmp_path / where).write_text(text, encoding="utf-8")
    assert ProjectSettings(tmp_path).sourced().problems[0].removeprefix("pyproject.toml: ") == expected


def test_a_byte_order_mark_before_pyproject_is_read_past(tmp_path: Path) -> None:
    """Notepad's UTF-8 begins with a byte-order mark (and ends lines with CRLF): the file is read as meant."""
    (tmp_path / "pyproject.toml").write_bytes(b"\xef\xbb\xbf[tool.convy]\r\nattempts = 2\r\n")
    assert ProjectSettings(tmp_path).settings().attempts == 2


def test_env_file_not_utf8_names_the_file(tmp_path: Path) -> None:
    """A .env that is not UTF-8 is a ConfigurationError naming .env, and nothing of what it holds."""
    (tmp_path / ".env").write_bytes(b"CONVY_ATTEMPTS=\xff-SECRET\n")
    assert refused(tmp_path) == ".env: cannot be read as UTF-8 text"


def convy(folder: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``convy`` run in ``folder`` to its end, its memory bounded: a file read without bound ends
    in MemoryError, not in a machine out of memory; a file that blocks fails the test at the timeout."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))

    environment = {name: value for name, value in os.environ.items() if not name.startswith("CONVY_")}
    return subprocess.run(
        [sys.executable, "-m", "convy", *arguments],
        cwd=folder,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit,
    )


def refused_in_one_line(done: subprocess.CompletedProcess[str], expected: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [f"convy: {expected}"], done.stderr
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize("kind", ["/dev/zero", "a FIFO", "a folder"])
def test_a_prompt_that_is_not_a_regular_file_is_refused_in_one_line(echo_project: Path, kind: str) -> None:
    """user_prompt naming /dev/zero, a FIFO or a folder: `convy run` exits 2 in one line naming it, never reading without bound nor waiting, and writes nothing."""
    match kind:
        case "/dev/zero":
            name, reason = "/dev/zero", "not a regular file"
        case "a FIFO":
            name, reason = "user.md", "not a regular file"
            os.mkfifo(echo_project / name)
        case _:
            name, reason = "prompts", "Is a directory"
            (echo_project / name).mkdir()
    (echo_project / "pyproject.toml").write_text(f'[tool.convy]\nuser_prompt = "{name}"\n', encoding="utf-8")

    refused_in_one_line(convy(echo_project, "run"), f"{name}: cannot be read: {reason}")
    assert not (echo_project / "results").exists()


def test_a_prompt_larger_than_a_megabyte_is_refused(tmp_path: Path) -> None:
    """A simulator prompt over 1 MB is one ConfigurationError naming it, not read whole."""
    (tmp_path / "pyproject.toml").write_bytes(b'[tool.convy]\nuser_prompt = "user.md"\n')
    (tmp_path / "user.md").write_bytes(b"x" * (1024 * 1024 + 1))
    assert refused(tmp_path) == "user.md: cannot be read: larger than 1 MB"


def test_a_pyproject_that_is_a_fifo_is_refused_in_one_line(echo_project: Path) -> None:
    """A pyproject.toml that is a FIFO: `convy run` exits 2 in one line naming it instead of waiting for a writer."""
    os.mkfifo(echo_project / "pyproject.toml")
    refused_in_one_line(convy(echo_project, "run"), "pyproject.toml: cannot be read: not a regular file")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('GATEWAY_URL=http://x\nGATEWAY_KEY="sk-canary-1234\nCONVY_ATTEMPTS=1\n', 2),
        ("A=1\nB=2\nnot a setting\n", 3),
    ],
)
def test_an_env_file_that_cannot_be_parsed_is_one_line_naming_it_and_the_line(echo_project: Path, text: str, line: int) -> None:
    """A .env with an unclosed quote or a line that is not NAME=value: `convy run` exits 2 with one line naming .env and the line — not python-dotenv's warnings, three times, and a run without the lines it skipped — and nothing of what the file holds."""
    (echo_project / ".env").write_text(text, encoding="utf-8")

    done = convy(echo_project, "run")

    refused_in_one_line(done, f".env: line {line}: cannot be parsed (a quote left open, or a line that is not NAME=value)")
    assert "canary" not in done.stdout + done.stderr
    assert not (echo_project / "results").exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("GATEWAY_URL=http://x\nGATEWAY_KEY=sk-canary-new\nGATEWAY_KEY=sk-canary-old\n",
         ".env: line 3: GATEWAY_KEY is set again (first on line 2); the last would win: keep one"),
        ("CONVY_ATTEMPTS=2\nconvy_attempts=3\n",
         ".env: line 2: convy_attempts (read as CONVY_ATTEMPTS) is set again (first on line 1); the last would win: keep one"),
        ("GATEWAY_URL: http://x\nGATEWAY_KEY: sk-canary-1\n", ".env: line 1: GATEWAY_URL: a .env line is NAME=value: write GATEWAY_URL=..."),
    ],
)
def test_a_name_set_twice_or_written_as_yaml_in_env_is_named_never_its_value(echo_project: Path, text: str, expected: str) -> None:
    """A key pasted below the old one in .env (the last would win, silently), the same name in
    another case (read alike), or NAME: value: one line naming .env, the line and the name, exit 2."""
    (echo_project / ".env").write_text(text, encoding="utf-8")

    done = convy(echo_project, "run")

    refused_in_one_line(done, expected)
    assert "canary" not in done.stdout + done.stderr
    assert not (echo_project / "results").exists()


def test_a_name_set_twice_to_the_same_value_in_env_is_read(echo_project: Path) -> None:
    """The same line twice in .env (pasted again, or the same value in another case): nothing would
    change whichever won, so it is read; a different value is still refused."""
    (echo_project / ".env").write_text("CONVY_ATTEMPTS=2\nCONVY_TRUST=0.5\nCONVY_ATTEMPTS=2\nconvy_trust=0.5\n", encoding="utf-8")
    settings = ProjectSettings(echo_project).sourced()
    assert (settings.problems, settings.settings.attempts, settings.settings.trust) == ((), 2, 0.5)
    (echo_project / ".env").write_text("CONVY_ATTEMPTS=2\nCONVY_ATTEMPTS=2\nCONVY_ATTEMPTS=3\n", encoding="utf-8")
    assert refused(echo_project) == ".env: line 3: CONVY_ATTEMPTS is set again (first on line 1); the last would win: keep one"


def test_a_byte_order_mark_and_crlf_in_env_are_read_past(echo_project: Path) -> None:
    (echo_project / ".env").write_bytes(b"\xef\xbb\xbfCONVY_ATTEMPTS=2\r\nCONVY_TRUST=0.5\r\n")
    settings = ProjectSettings(echo_project).sourced()
    assert (settings.problems, settings.settings.attempts, settings.settings.trust) == ((), 2, 0.5)


def test_an_env_file_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    """A .env that is a FIFO is a ConfigurationError naming .env, not a wait or a file silently passed over."""
    os.mkfifo(tmp_path / ".env")
    assert refused(tmp_path) == ".env: cannot be read: not a regular file"


# (where attempts is given, what names it): each place says what attempts takes in the same words.
ATTEMPTS_GIVEN = [("option", "--attempts"), ("variable", "CONVY_ATTEMPTS"), ("pyproject", "pyproject.toml: [tool.convy]")]


@pytest.mark.parametrize(("where", "named"), ATTEMPTS_GIVEN, ids=[where for where, _ in ATTEMPTS_GIVEN])
@pytest.mark.parametrize("value", ["many", "2.5", "0"])
def test_attempts_neither_a_whole_number_nor_auto_is_one_plain_line_naming_where(
    echo_project: Path, where: str, named: str, value: str
) -> None:
    """``attempts`` given a word, a fraction or 0 on the command line, in its variable or in
    [tool.convy]: `convy run` exits 2 with one line naming the option, the variable or the file and
    saying what attempts takes, not msgspec's or argparse's words (nor the value), and plays nothing."""
    arguments, environment = ["run"], {name: value for name, value in os.environ.items() if not name.startswith("CONVY_")}
    match where:
        case "option":
            arguments += ["--attempts", value]
        case "variable":
            environment["CONVY_ATTEMPTS"] = value
        case "pyproject":
            (echo_project / "pyproject.toml").write_text(f"[tool.convy]\nattempts = {value if value != 'many' else repr(value)}\n")

    done = subprocess.run(
        [sys.executable, "-m", "convy", *arguments], cwd=echo_project, env=environment,
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )

    said = f"{named} attempts" if where == "pyproject" else f"{named}: attempts" if where == "variable" else named
    refused_in_one_line(done, f"{said}: must be a whole number of at least 1, or auto")
    assert not (echo_project / "results").exists()


def test_settings_are_the_limits_and_a_few_more_each_with_its_variable() -> None:
    """Each limit is declared once, in Limits, with its default and bounds; Settings adds attempts,
    trust, the share not judged, the pass rule, the budget, the prompt's file and how claims are judged, and every
    setting but the prompt's file has its CONVY_* variable."""
    from convy.env import variables
    from convy.records import Limits
    from convy.settings import VARIABLES, Settings

    assert Settings.__struct_fields__ == (*Limits.__struct_fields__, "attempts", "min_attempts", "max_attempts", "target_width", "trust", "max_not_judged", "fail_under", "fail_on_skip", "max_cost", "max_tokens", "max_minutes", "user_prompt", "judge_repeats", "panel", "evidence", "user_checks", "user_faults", "workers", "ray", "live_seconds", "receive_traces", "traces_port", "traces_wait")
    assert Settings().limits() == Limits()
    assert set(variables(VARIABLES).model_fields) == set(Settings.__struct_fields__) - {"user_prompt"}
    with pytest.raises(ValueError, match="^turn_seconds: must be more than 0$"):
        Settings(turn_seconds=0)
    with pytest.raises(ValueError, match="^attempts: must be at most 10,000$"):
        Settings(attempts=10_001)
