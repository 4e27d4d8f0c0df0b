"""A project's agent and models as a command loads them (``Loaded``), any error of the project's code a configuration error shown without values, and a URL the project's code gave that cannot be one (``UrlGiven``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from convy.judge import Models
from convy.problems import ConfigurationError

if TYPE_CHECKING:
    pass
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from convy.holders import Environment, Holders
from convy.problems import (
    Outside,
    UrlProblem,
)
from convy.project import Project
from convy.secrets import Secrets
from convy.terminal import Inert

if TYPE_CHECKING:
    pass


class Loaded(msgspec.Struct, frozen=True):
    """An agent of the project and the models made for it; any error loading them is a configuration error."""

    project: Project
    name: str

    def parts(self) -> tuple[Any, Any]:
        with self._loading(f"agents/{self.name}.py or models.py"):
            return self.project.agent(self.name).agent, self.project.models()

    def agent(self) -> Any:
        """The agent alone, its file's error named as its own."""
        with self._loading(f"agents/{self.name}.py"):
            return self.project.agent(self.name).agent

    def models(self) -> Models:
        """The models alone, whatever the agent."""
        with self._loading("models.py"):
            return self.project.models()

    def judges(self) -> dict[str, Any]:
        """The judges ``models.py`` names for ``convy rejudge --judge``."""
        with self._loading("models.py"):
            return self.project.judges()

    @contextmanager
    def _loading(self, what: str) -> Iterator[None]:
        try:
            yield
        except ConfigurationError:
            raise
        except Exception as error:  # the project's own code failed while loading
            # Its settings (an Env, pydantic's, which the project's code loaded): pydantic's message
            # may repeat a value, a key say, so only the fields and what is wrong with them are told.
            pydantic = sys.modules.get("pydantic")
            if pydantic is not None and isinstance(error, pydantic.ValidationError):
                problems = "; ".join(
                    f"{'.'.join(str(part) for part in problem['loc']) or 'settings'}: {problem['msg']}"
                    for problem in error.errors(include_url=False, include_input=False)
                )
                raise ConfigurationError(
                    f"loading {what} failed: {error.title}: {self.secrets().hidden(problems)}"
                ) from None
            if isinstance(error, UrlProblem):  # the variable it came from named, the value shown only when no key
                raise ConfigurationError(f"loading {what} failed: {UrlGiven(self.project.folder, error).said()}") from None
            said = Environment(self.project.folder).everything().hidden(Outside(error).named())
            top = (error.name or "").split(".")[0] if isinstance(error, ModuleNotFoundError) else ""
            if top and (self.project.folder / "agents" / f"{top}.py").is_file():  # agents/ is not on the import path
                said += f"; agents/{top}.py is imported from the project's folder: from agents.{top} import ..."
            raise ConfigurationError(f"loading {what} failed: {said}") from None

    def secrets(self, *parts: Any, every: bool = True, known: Secrets | None = None) -> Secrets:
        """Every secret the project knows, for every run a command writes: its environment's, those
        ``parts`` hold (the loaded agent, models, judge), and those of every agent of the project,
        played or not, and of the judges ``models.py`` names for ``--judge`` — an agent may echo
        another's key, and a re-judge plays none. The agent of this name is loaded for them only
        when no agent is among ``parts``. A command that plays several agents gives the project's
        ``known`` secrets, read once (``known()``), rather than have each agent's run load every
        other agent again. Without ``every``, only the environment's and the parts' (``convy
        check``, which writes no run, and runs none of the project's code it was not asked to, nor
        any when ``.env`` cannot be read)."""
        held = Holders(parts).secrets()
        if every:
            held = held + (known if known is not None else Holders(self._known(parts)).secrets())
        return Environment(self.project.folder).secrets() + held

    def known(self) -> Secrets:
        """The secrets every agent of the project and ``models.py``'s judges hold, each loaded once."""
        return Holders(self._known(())).secrets()

    def _known(self, parts: tuple[Any, ...]) -> tuple[Any, ...]:
        """The project's agents, each loaded anew for the secrets it holds, but the one of this
        name when ``parts`` holds it, and ``models.py``'s judges; one that cannot be loaded holds
        nothing known (its file's own error is said where it is played)."""
        played = any(callable(getattr(part, "conversation", None)) for part in parts)
        found: list[Any] = []
        try:
            found.extend(self.project.judges().values())
        except Exception:  # the project's code, whatever it raises: said where the judges are used
            pass
        for name in self.project.agents()[0]:
            if played and name == self.name:
                continue
            try:
                found.append(self.project.agent(name).agent)
            except Exception:  # the project's code, whatever it raises: its secrets are unknown
                continue
        return tuple(found)


class UrlGiven(msgspec.Struct, frozen=True):
    """A URL the project's code gave that cannot be one (``problems.UrlProblem``), said with the
    variable of ``.env`` or the environment that holds it. Its value is shown only when it reads
    as an address and no variable named as a secret holds it; a value that reads as a key (the
    URL and the key swapped) is never shown, and the variable holding a URL instead is named."""

    folder: Path
    problem: UrlProblem

    # A host (a name with a dot and a top-level domain, localhost, an IPv4 or IPv6 address), then a
    # port and a path: what a URL without its scheme looks like, and a key does not.
    ADDRESS: ClassVar[re.Pattern[str]] = re.compile(
        r"(localhost|[a-z0-9-]{1,63}(\.[a-z0-9-]{1,63})*\.[a-z]{2,24}|\d{1,3}(\.\d{1,3}){3}|\[[0-9a-f:]+\])(:\d{1,5})?(/\S*)?",
        re.IGNORECASE,
    )

    def said(self) -> str:
        value = self.problem.value.strip()
        environment = Environment(self.folder)
        held = environment.named(lambda given: given == value) if value else ()
        words = str(self.problem)
        if value and "://" not in value:  # no scheme: an address without one, or no address at all
            if self.ADDRESS.fullmatch(value) and environment.secrets().hidden(value) == value:
                shown = Inert(value).line()
                words += "" if ", not " in words else f", not {shown!r} (http://{shown}?)"
            else:
                words = f"{words.split(', not ', 1)[0]}; what it was given is no address (a key?)"
                urls = environment.named(lambda given: given.lower().startswith(("http://", "https://")))
                swapped = [where for where in urls if environment.keyed(where)]
                if held and swapped:
                    words += f" and {swapped[0]} holds a URL: are the two swapped?"
        elif value.split("?", 1)[0].rstrip("/").endswith("/chat/completions") and environment.secrets().hidden(value) == value:
            base = value.split("?", 1)[0].rstrip("/").removesuffix("/chat/completions")
            words += f" (is it {Inert(base).line()}?)"
        return f"{held[0]}: {words}" if held else f"ValueError: {words}"  # as the project's code raised it
