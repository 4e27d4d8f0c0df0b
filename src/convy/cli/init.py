"""``convy init``: a new project from the template, and the CI workflow that runs it."""

from __future__ import annotations

import shlex
from pathlib import Path

import msgspec

from convy.cli.console import Shown
from convy.problems import (
    ConfigurationError,
    Unwritable,
)
from convy.project import Project


class InitCommand(msgspec.Struct, frozen=True):
    """``convy init [DIR]``: a new project from the template, never overwriting a file."""

    folder: Path

    def run(self, shown: Shown) -> int:
        # The template's agents and scenarios added beside a project's own would be played with
        # them at the next run: a folder that holds a project already is refused.
        held = [name for name in ("agents", "scenarios") if (self.folder / name).is_dir() and any((self.folder / name).iterdir())]
        if held:
            raise ConfigurationError(
                f"{self.folder}: a project already ({' and '.join(f'{name}/' for name in held)} hold files): convy init makes "
                "a new one, its demo agents and scenarios would join yours; give a new folder (convy init NEW), "
                "or convy init --ci github for the CI workflow alone"
            )
        self.folder.mkdir(parents=True, exist_ok=True)
        written, kept = Project(self.folder).created()
        for name in written:
            shown.line(f"+ {name}")
        for name in kept:
            shown.line(f"= {name} (exists, left as it is)")
        # The command said is one to paste: a folder with a space or a quote is quoted for the shell.
        where = "" if self.folder == Path(".") else f"cd {shlex.quote(str(self.folder))} && "
        shown.line(f"project ready in {self.folder}; next: {where}convy run")
        return 0


class Workflow(msgspec.Struct, frozen=True):
    """``convy init --ci github``: the CI workflow convy ships (``ci/github.yml``, explained in
    docs/ci.md) written into a project as ``.github/workflows/convy.yml``, never over a file that
    is there. Only the workflow: the project's own files, its agents deleted or renamed, are left
    alone."""

    folder: Path
    system: str  # "github", the one choice the parser allows

    def run(self, shown: Shown) -> int:
        from convy.files import Shipped

        name = ".github/workflows/convy.yml"
        target = self.folder / name
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "xb") as file:  # created here, or refused: never written over
                try:
                    file.write(Shipped(("ci", f"{self.system}.yml")).data())
                except OSError:
                    target.unlink()
                    raise
        except FileExistsError:
            shown.line(f"= {name} (exists, left as it is: remove it to write convy's)")
            return 0
        except OSError as error:
            raise Unwritable(target, error) from error
        shown.line(f"+ {name}")
        shown.line(
            "next: add the repository secrets GATEWAY_URL, GATEWAY_KEY, USER_MODEL, JUDGE_MODEL, AGENT_MODEL, "
            "check the default branch under on.push, and push (see convy's docs/ci.md)"
        )
        return 0
