"""The errors convy raises, and what each means for a run.

    Exception
    ├── AgentFailure (agent.py)       the agent failed: that attempt is Failed, the judge is not asked
    │   └── OutOfTime                 ... by passing a time limit: stop reason "time_limit"
    ├── Busy (busy.py)                a service refused a request unprocessed: sent again
    │                                 while the participant's patience lasts, then raised on
    ├── HttpFailure (http.py)         a request failed after it may have reached the service:
    │                                 never sent again; the agent's attempt fails, a model fails
    ├── ModelFailure (here)           the simulated user's or the judge's model failed:
    │   │                             that attempt has NoVerdict and stays out of the pass rate
    │   └── StillBusy                 ... because its service stayed busy past its patience
    ├── ConfigurationError (here)     the project cannot be run as it is: nothing is sent,
    │   ├── ScenarioError             the command says why and exits with code 2
    │   └── RunInUse (bench.py)       another process is playing that run
    └── Unwritable (here)             the file system refused a write convy needs (a full
                                      disk, a file-size limit, a read-only mount): the run
                                      stops, marked interrupted, and what it kept stays readable

A failure of one attempt never stops the run; a configuration error stops it before any request.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class ModelFailure(Exception):
    """The simulated user's or the judge's model failed, or said something convy cannot use.

    The attempt gets no verdict and stays out of the pass rate: it says nothing about the agent.
    ``requests`` holds the usage of the requests that were answered before it failed (an answer
    convy could not use still took its tokens), so the run's totals stay honest.
    """

    def __init__(self, message: str, requests: tuple[Any, ...] = ()) -> None:
        super().__init__(message)
        self.requests = requests


class StillBusy(ModelFailure):
    """The model's service stayed busy for longer than the participant's patience."""


class ConfigurationError(Exception):
    """The project, a file of it or the command's arguments cannot be used as they are.

    Its text is meant for the person who can fix it: it names the file and the field, never a value
    read from settings.
    """


class ScenarioError(ConfigurationError):
    """One or more scenario files are broken; the text has one line per problem."""

    def __init__(self, problems: tuple[str, ...]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class Unwritable(Exception):
    """The file system refused to write ``path``: the disk is full, a file-size limit was reached,
    or the folder is read-only. The text names the file and gives the system's reason."""

    def __init__(self, path: Path, error: OSError) -> None:
        self.path = path
        self.reason = error.strerror or str(error)
        super().__init__(f"{path}: cannot be written: {self.reason}")
