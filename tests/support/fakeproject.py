"""A project on disk made of the fakes, and the real ``convy`` command run on it, as the tests of
the CI outputs (JUnit, the Markdown summary, the pytest plugin) each need them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import msgspec

from support.process import environment, run_convy

# A judge that holds every claim but one whose text says "unjudgeable", on which it fails.
MODELS = '''\
from convy.fakes import FakeJudge
from convy import Models


def held(claim, transcript):
    if "unjudgeable" in claim:
        raise ValueError("the judge broke down")
    return True


models = Models(judge=FakeJudge(held))
'''


class FakeProject(msgspec.Struct, frozen=True):
    """An agent, a models.py and scenario files, by their text, and the attempts of each."""

    agent: str
    models: str
    scenarios: dict[str, str]
    attempts: int

    def written(self, folder: Path) -> Path:
        """The project written into ``folder`` (made if need be); ``folder`` itself."""
        (folder / "agents").mkdir(parents=True, exist_ok=True)
        (folder / "agents" / "bot.py").write_text(self.agent, encoding="utf-8")
        (folder / "models.py").write_text(self.models, encoding="utf-8")
        (folder / "scenarios").mkdir(exist_ok=True)
        for name, text in self.scenarios.items():
            (folder / "scenarios" / name).write_text(text, encoding="utf-8")
        (folder / "pyproject.toml").write_text(f"[tool.convy]\nattempts = {self.attempts}\n", encoding="utf-8")
        return folder


# The run folders of every `convy run`, `resume` and `rejudge` of the session that exited 0 through
# `Command`, each as (folder, what was asked): tests/conftest.py checks at the session's end that
# each one judged an attempt and met its project's pass rule (issue 24: a green is a tested one).
GREEN: list[tuple[Path, str]] = []
PLAYING = ("run", "resume", "rejudge")


class Greens(msgspec.Struct, frozen=True):
    """Runs whose command exited 0, each as (its folder, what was asked): ``wrong`` names those that
    judged no attempt or did not meet their project's pass rule, read back as `convy report` reads them."""

    runs: tuple[tuple[Path, str], ...]

    def wrong(self) -> list[str]:
        from convy.project import Project
        from convy.report import Summary

        found = []
        for folder, asked in self.runs:
            if not (folder / "run.json").exists():  # removed by its test since
                continue
            verdict = Summary(Project(folder.parents[2]).read(folder.name)).verdict()
            if not verdict.held():
                found.append(f"convy {asked} exited 0, but {folder}: {verdict.verdict()}")
        return found


def kept(where: Path) -> dict[Path, int]:
    """The run folders under ``where`` (a project, or the folder above one) with their run.json's change time."""
    return {path.parent: path.stat().st_mtime_ns for path in where.glob("**/results/*/*/run.json")}


class Command(msgspec.Struct, frozen=True):
    """The ``convy`` command of this venv, run from ``where`` with ``BOT_API_KEY`` set to ``key``
    and no ``CONVY_*`` variable of the caller's."""

    where: Path
    key: str

    def ran(self, *arguments: str, **variables: str) -> subprocess.CompletedProcess[str]:
        """The command run with these arguments and ``CONVY_*`` ``variables``; a run it played that exited 0 is noted in ``GREEN``."""
        playing = any(word in PLAYING for word in arguments) and not {"--dry-run", "--smoke", "--help"} & set(arguments)
        before = kept(self.where) if playing else {}
        done = run_convy(self.where, *arguments, env=environment(BOT_API_KEY=self.key, **variables))
        if playing and done.returncode == 0:
            asked = " ".join(arguments)
            GREEN.extend((folder, asked) for folder, when in kept(self.where).items() if before.get(folder) != when)
        return done
