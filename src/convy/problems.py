"""The errors convy raises, and what each means for a run.

    Exception
    ├── AgentFailure (agent.py)       the agent failed: that attempt is Failed, the judge is not asked
    │   └── OutOfTime                 ... by passing a time limit: stop reason "time_limit"
    ├── ModelFailure (model.py)       the simulated user's or the judge's model failed:
    │                                 that attempt has NoVerdict and stays out of the pass rate
    └── ConfigurationError (here)     the project cannot be run as it is: nothing is sent,
        ├── ScenarioError             the command says why and exits with code 2
        └── RunInUse (bench.py)       another process is playing that run

A failure of one attempt never stops the run; a configuration error stops it before any request.
"""

from __future__ import annotations


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
