"""What the simulated user was, kept in run.json, and what ``convy compare`` says of it and of the
causes of attempts not passed: the real ``convy`` command on a project of fakes whose simulated
user's model, settings, prompt and failures are set by files the tests write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.fakeproject import Command, FakeProject

SECRET = "sk-user-shape-canary-4d1e9b"

AGENT = '''\
from convy.fakes import FakeAgent

agent = FakeAgent(lambda text: "Noted: " + text)
'''

# The simulated user: a model of the project's own that exposes a temperature and holds a key.
# user.json sets its name, its temperature and how many of its conversations fail (its model
# raises at once); judge.txt how many of the judge's rulings fail.
MODELS = '''\
import json
import os
from pathlib import Path

from convy.fakes import FakeJudge
from convy.model import Reply
from convy.judge import Models

shape = json.loads(Path("user.json").read_text()) if Path("user.json").exists() else {}
failing = {"user": shape.get("failing", 0), "judge": int(Path("judge.txt").read_text()) if Path("judge.txt").exists() else 0}


class Tempered:
    def __init__(self, name, temperature):
        self.name = name
        self.temperature = temperature
        self.key = os.environ["BOT_API_KEY"]

    async def reply(self, messages):
        if failing["user"] > 0:
            failing["user"] -= 1
            raise ValueError("the user model broke down")
        return Reply("Thanks. ###STOP###")


def held(claim, transcript):
    if failing["judge"] > 0:
        failing["judge"] -= 1
        raise ValueError("the judge broke down")
    return True


models = Models(user=Tempered(shape.get("name", "user-model"), shape.get("temperature", 0.2)), judge=FakeJudge(held))
'''

TALKS = "user: You want to know the opening hours.\nscript: [hi]\njudge:\n  - The bot answers.\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return FakeProject(AGENT, MODELS, {"a.yaml": TALKS, "b.yaml": TALKS.replace("opening hours", "prices")}, 10).written(tmp_path / "project")


def ran(project: Path, *arguments: str) -> tuple[int, str, str]:
    done = Command(project, SECRET).ran(*arguments)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def played(project: Path, **shape: object) -> str:
    """A run with the simulated user ``shape`` gives; its id."""
    (project / "user.json").write_text(json.dumps(shape), encoding="utf-8")
    before = set((project / "results" / "bot").glob("*")) if (project / "results" / "bot").exists() else set()
    code, out, err = ran(project, "run")
    assert code in (0, 5), out + err
    (folder,) = set((project / "results" / "bot").glob("*")) - before
    return folder.name


def spec(project: Path, run: str) -> dict[str, object]:
    return json.loads((project / "results" / "bot" / run / "run.json").read_text())["spec"]


def test_run_json_keeps_what_the_simulated_user_was_and_never_its_key(project: Path) -> None:
    """Its model's name, the settings it exposes, and each scenario's filled prompt fingerprinted."""
    run = played(project, temperature=0.3)
    user = spec(project, run)["user"]
    assert user["known"] is True and user["model"] == "user-model" and user["settings"] == {"temperature": 0.3}
    assert sorted(user["prompts"]) == ["a", "b"] and all(len(value) == 64 for value in user["prompts"].values())
    assert user["prompts"]["a"] != user["prompts"]["b"]  # each scenario's own instructions filled in
    assert SECRET not in (project / "results" / "bot" / run / "run.json").read_text()


def test_compare_says_the_simulated_user_changed_with_what_differed(project: Path) -> None:
    """A temperature, a model and a simulator prompt changed each make the runs not comparable as
    they stand, saying what differed; the same user says nothing of it."""
    base = played(project, temperature=0.2)
    same = played(project, temperature=0.2)
    _, _, err = ran(project, "compare", base, same)
    assert "simulated user" not in err
    warmer = played(project, temperature=0.7, name="other-user")
    _, _, err = ran(project, "compare", base, warmer)
    assert "! not comparable: the simulated user changed: model user-model → other-user; temperature 0.2 → 0.7\n" in err
    (project / "user.md").write_text("Play this person: {{ instructions }} Say {{ stop }} when done.", encoding="utf-8")
    with (project / "pyproject.toml").open("a", encoding="utf-8") as settings:
        settings.write('user_prompt = "user.md"\n')
    prompted = played(project, temperature=0.2)
    _, _, err = ran(project, "compare", base, prompted)
    assert "! not comparable: the simulated user changed: its filled prompt in 2 of 2 scenarios compared\n" in err


def test_an_old_run_json_without_the_user_still_reads_and_compares_by_the_models_name(project: Path) -> None:
    """A run.json written before the user was kept reads, reports and compares; only its model's
    name can then be told apart."""
    base, candidate = played(project), played(project, temperature=0.9)
    path = project / "results" / "bot" / base / "run.json"
    data = json.loads(path.read_text())
    del data["spec"]["user"]
    path.write_text(json.dumps(data))
    code, _, err = ran(project, "compare", base, candidate)
    assert code == 0 and "simulated user" not in err
    assert ran(project, "report", base)[0] == 0


def test_a_run_and_its_rejudged_run_keep_one_simulated_user(project: Path) -> None:
    """A re-judged run keeps its source's user, so comparing the two never says it changed, even
    when models.py now gives the user another temperature."""
    source = played(project, temperature=0.2)
    (project / "user.json").write_text(json.dumps({"temperature": 0.8}), encoding="utf-8")
    code, out, err = ran(project, "rejudge", source)
    assert code == 0, out + err
    rejudged = max((project / "results" / "bot").glob("*/run.json"), key=lambda path: path.stat().st_mtime_ns).parent.name
    assert spec(project, rejudged)["user"] == spec(project, source)["user"]
    code, out, err = ran(project, "compare", source, rejudged)
    assert code == 0 and "simulated user" not in err and "not comparable" not in err


def test_compare_says_a_drop_is_mostly_the_simulated_users_or_the_judges(project: Path, tmp_path: Path) -> None:
    """A candidate whose user model fails 8 of 20 attempts drops mostly by simulated-user trouble;
    one whose judge fails them, by judge trouble: in the command's output and the Markdown summary."""
    base = played(project)
    troubled = played(project, failing=8)
    code, out, _ = ran(project, "compare", base, troubled, "--summary", str(tmp_path / "compare.md"))
    assert code == 0
    said = (
        "the candidate's drop (attempts passed, 20 of 20 → 12 of 20) is mostly simulated-user trouble: "
        "not passed for the simulated user: 0 of 20 (0%) → 8 of 20 (40%)"
    )
    assert said in out
    markdown = (tmp_path / "compare.md").read_text(encoding="utf-8")
    assert "**the candidate\\'s drop \\(attempts passed\\, 20 of 20 → 12 of 20\\) is mostly simulated\\-user trouble\\:" in markdown
    (project / "judge.txt").write_text("5", encoding="utf-8")
    judged = played(project)
    (project / "judge.txt").write_text("0", encoding="utf-8")
    _, out, _ = ran(project, "compare", base, judged)
    assert "is mostly judge trouble: not passed for the judge: 0 of 20 (0%) → 5 of 20 (25%)" in out
    assert "simulated-user trouble" not in out
    _, out, _ = ran(project, "compare", troubled, base)
    assert "the candidate's rise (attempts passed, 12 of 20 → 20 of 20) is mostly less simulated-user trouble" in out
