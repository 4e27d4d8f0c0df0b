"""A run's name (``convy run --name "prompt B"``): refused with the fix when it is blank, holds a
control character or is over 80 characters; kept in run.json (``spec.name``) and through a
resume; said by the terminal where the run starts and in its closing summary, in the Markdown
summary, the ``runs`` table and every page's data. The runs are real: the project's ``Echo`` agent
and a check decided by code, played by ``python -m convy`` in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from convy.page import JsonBlock


def convy(project: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {name: value for name, value in os.environ.items() if not name.startswith("CONVY_")}
    return subprocess.run(
        [sys.executable, "-m", "convy", *arguments], cwd=project, env=environment, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=300,
    )


def data(page: Path) -> dict:
    """A page's ``data`` block, read back from its HTML."""
    text = page.read_text(encoding="utf-8")
    start = text.index('<script type="application/json" id="data">') + len('<script type="application/json" id="data">')
    return json.loads(text[start : text.index("</script>", start)])


def test_a_named_run_keeps_and_shows_its_name_everywhere(echo_project: Path) -> None:
    done = convy(echo_project, "run", "--name", "prompt B", "-k", "2", "--summary", "summary.md")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith('a · "prompt B": 1 scenario × 2 attempts → results/a/'), lines
    assert any(line.startswith('a · "prompt B": 2 passed, 0 failed') for line in lines), lines
    (folder,) = (echo_project / "results" / "a").iterdir()
    spec = json.loads((folder / "run.json").read_text(encoding="utf-8"))["spec"]
    assert spec["name"] == "prompt B"
    assert f"### convy · a · run {folder.name.replace('-', chr(92) + '-')} — prompt B" in (echo_project / "summary.md").read_text(encoding="utf-8")
    assert data(folder / "report.html")["header"]["name"] == "prompt B"
    assert convy(echo_project, "report").returncode == 0
    assert [row["name"] for row in data(echo_project / "results" / "index.html")["runs"]] == ["prompt B"]
    assert convy(echo_project, "export", "--format", "jsonl").returncode == 0
    (row,) = [json.loads(line) for line in (echo_project / "results" / "export" / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert row["name"] == "prompt B" and list(row)[:3] == ["agent", "run", "name"]

    # Resumed, the run keeps its name, and says it again.
    stored = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    stored["status"]["type"] = "interrupted"
    (folder / "run.json").write_text(json.dumps(stored), encoding="utf-8")
    attempts = (folder / "attempts.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "attempts.jsonl").write_text(attempts[0], encoding="utf-8")
    again = convy(echo_project, "resume", folder.name)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith('a · "prompt B": '), again.stdout
    assert json.loads((folder / "run.json").read_text(encoding="utf-8"))["spec"]["name"] == "prompt B"

    # Re-judged, its dialogues keep their name: the new run's origin says it is a re-judge.
    rejudged = convy(echo_project, "rejudge", folder.name)
    assert rejudged.returncode == 0, rejudged.stderr
    (new,) = [one for one in (echo_project / "results" / "a").iterdir() if one.name != folder.name]
    spec = json.loads((new / "run.json").read_text(encoding="utf-8"))["spec"]
    assert (spec["name"], spec["origin"]["run"]) == ("prompt B", folder.name)


def test_a_run_with_no_name_has_none(echo_project: Path) -> None:
    done = convy(echo_project, "run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("a: 1 scenario × ")
    (folder,) = (echo_project / "results" / "a").iterdir()
    assert json.loads((folder / "run.json").read_text(encoding="utf-8"))["spec"].get("name", "") == ""
    assert data(folder / "report.html")["header"]["name"] == ""


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("", "must not be blank"),
        ("   ", "must not be blank"),
        ("prompt\x1b[31m B", "one line of printable characters"),
        ("two\nlines", "one line of printable characters"),
        ("x" * 81, "81 characters: give at most 80"),
    ],
)
def test_a_bad_name_is_refused_before_anything_is_played(echo_project: Path, name: str, said: str) -> None:
    done = convy(echo_project, "run", "--name", name)
    assert done.returncode == 2
    assert said in done.stderr and "--name" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "\x1b" not in done.stderr
    assert not (echo_project / "results").exists()


def test_a_name_is_text_on_every_page_never_markup() -> None:
    """The name goes into a page's data as JSON with every ``<`` escaped: it cannot close the tag."""
    block = JsonBlock("data", json.dumps({"name": "</script><script>alert(1)</script>"}).encode())
    assert "</script><script>" not in block.html()[: -len("</script>")]
