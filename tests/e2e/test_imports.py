"""A command loads only what it uses: ``convy run`` of a project whose agent and models need no
network reads no HTTP layer, no settings library and no terminal library. What each costs to
import is measured in bench/whole.py (the demo case); here, only which modules are loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Run as `convy run` is, in this process; then the names of every module it loaded are written
# to the file named in argv[1], whatever the exit code.
RUN = """
import json, runpy, sys
out = sys.argv.pop(1)
sys.argv = ["convy", *sys.argv[1:]]
try:
    runpy.run_module("convy", run_name="__main__", alter_sys=True)
except SystemExit as stop:
    code = stop.code
else:
    code = 0
with open(out, "w", encoding="utf-8") as file:
    json.dump({"code": code, "modules": sorted(sys.modules)}, file)
"""

# Loaded only by what sends requests (httpx2, convy.http), reads .env or CONVY_* variables
# (pydantic, pydantic-settings, python-dotenv), draws progress on a terminal (rich), or copies
# the template (importlib.resources).
UNUSED = (
    "httpx2",
    "convy.http",
    "pydantic",
    "pydantic_core",
    "pydantic_settings",
    "dotenv",
    "rich",
    "importlib.resources",
)


GATEWAY_SETTINGS = {
    "gateway_url", "gateway_key", "openai_base_url", "openai_api_key", "gateway_stream", "gateway_provider",
    "user_model", "judge_model", "agent_model", "user_effort", "judge_effort", "agent_effort",
}


def loaded(project: Path, *command: str) -> tuple[int, set[str]]:
    out = project / "modules.json"
    # No CONVY_* variable, and none of the template gateway's settings (any case, as it reads them).
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("CONVY_") and name.lower() not in GATEWAY_SETTINGS
    }
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(out), "-C", str(project), *command],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )
    assert out.exists(), done.stderr
    said = json.loads(out.read_text(encoding="utf-8"))
    return said["code"], set(said["modules"])


def demo(tmp_path: Path) -> Path:
    """The project ``convy init`` makes, as ``make demo`` plays it: no .env, so no gateway."""
    project = tmp_path / "demo"
    subprocess.run([sys.executable, "-m", "convy", "init", str(project)], check=True, capture_output=True, timeout=120)
    return project


def fakes_only(tmp_path: Path) -> Path:
    """The template project with its offline shop bot alone: no LLM agent, no gateway, no .env."""
    project = demo(tmp_path)
    (project / "agents" / "assistant.py").unlink()
    (project / "gateway.py").unlink()
    (project / "gateway_settings.py").unlink()
    (project / "models.py").write_text("from convy import Models\n\nmodels = Models()\n", encoding="utf-8")
    return project


def test_convy_run_of_a_project_of_fakes_loads_no_http_settings_or_terminal_library(tmp_path: Path) -> None:
    project = fakes_only(tmp_path)
    code, modules = loaded(project, "run")
    assert code in (0, 1)  # the shop bot fails a scenario on purpose
    assert list((project / "results" / "shop").glob("*/report.html")), "the run wrote no report"
    assert (
        sorted(name for name in modules for unused in UNUSED if name == unused or name.startswith(unused + ".")) == []
    )


def test_convy_report_of_that_run_loads_none_of_them_either(tmp_path: Path) -> None:
    project = fakes_only(tmp_path)
    loaded(project, "run")
    code, modules = loaded(project, "report")
    assert code == 0
    assert (
        sorted(name for name in modules for unused in UNUSED if name == unused or name.startswith(unused + ".")) == []
    )


def test_a_project_with_a_dotenv_still_loads_what_reads_it(tmp_path: Path) -> None:
    """The other side: with a .env, python-dotenv is loaded, for the secrets it may hold."""
    project = fakes_only(tmp_path)
    (project / ".env").write_text("SHOP_TOKEN=abcdefgh12345678\n", encoding="utf-8")
    code, modules = loaded(project, "run")
    assert code in (0, 1)
    assert "dotenv" in modules


def unused(modules: set[str]) -> list[str]:
    return sorted(name for name in modules for unused in UNUSED if name == unused or name.startswith(unused + "."))


def test_convy_run_of_the_demo_project_loads_none_of_them(tmp_path: Path) -> None:
    """The demo as made: its assistant and models are absent, since no gateway is set, and saying
    so loads neither the HTTP layer nor the settings library that would read one."""
    project = demo(tmp_path)
    code, modules = loaded(project, "run")
    assert code in (0, 1)
    assert list((project / "results" / "shop").glob("*/report.html")), "the run wrote no report"
    # convy.http itself is loaded, as agents/assistant.py names JsonEndpoint; httpx2 is not.
    assert unused(modules - {"convy.http"}) == []
    assert "shutil" not in modules  # argparse's way to the terminal's width (cli.Help finds it itself)


@pytest.mark.parametrize("columns", [50, 100])
def test_the_help_is_as_wide_as_columns_says(columns: int, tmp_path: Path) -> None:
    """Without shutil, --help still wraps at the width shutil would find (COLUMNS here)."""
    done = subprocess.run(
        [sys.executable, "-m", "convy", "run", "--help"],
        capture_output=True, text=True, env={**os.environ, "COLUMNS": str(columns)}, timeout=120,
    )
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= columns - 2
    assert max(len(line) for line in lines) > columns - 20  # wrapped near that width, not at a narrower one


def test_the_demo_project_with_a_dotenv_reads_its_gateway(tmp_path: Path) -> None:
    """The other side: a .env, even with no server in it, is read by the gateway's settings."""
    project = demo(tmp_path)
    (project / ".env").write_text("USER_MODEL=user-model\n", encoding="utf-8")
    code, modules = loaded(project, "run")
    assert code in (0, 1)
    assert {"pydantic_settings", "dotenv"} <= modules


def test_an_agent_file_rewritten_in_the_same_second_to_the_same_size_plays_its_new_code(tmp_path: Path) -> None:
    """Python takes a module's bytecode cache as current when the source's size and change time
    (in whole seconds) match it: convy compiles the project's own files from their source, so an
    agent edited by a script within the second of the last run plays as edited, and the project
    gets no ``__pycache__``. The run writes bytecode as it may on any machine."""
    from support.fakeproject import FakeProject
    from support.process import environment, run_convy

    agent = "from convy.fakes import FakeAgent\n\nagent = FakeAgent(lambda text: '{word}')\n"
    folder = FakeProject(agent.format(word="older"), "from convy import Models\nfrom convy.fakes import FakeJudge\n\nmodels = Models(judge=FakeJudge())\n",
                         {"hello.yaml": "script: [hi]\njudge:\n  - check: {said: newer}\n"}, 1).written(tmp_path)
    env = environment(without=("PYTHONDONTWRITEBYTECODE",))
    path = folder / "agents" / "bot.py"
    moment = path.stat().st_mtime_ns
    assert run_convy(folder, "run", env=env).returncode == 3  # said "older"
    path.write_text(agent.format(word="newer"), encoding="utf-8")  # as long as before
    os.utime(path, ns=(moment, moment))  # and as new: to Python's cache, the same file
    second = run_convy(folder, "run", env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert not list(folder.glob("**/__pycache__"))
