"""convy: test conversational AI agents by playing scenarios and judging what they say.

The public API is the names below and the module ``convy.fakes``; everything else may change.
A run from Python::

    import asyncio
    from pathlib import Path
    from convy import Bench, Models, RunJournal, RunSpec, Scenarios
    from convy.fakes import Echo, FakeJudge

    agent = Echo()  # your agent here
    scenarios = Scenarios(Path("scenarios")).every()
    bench = Bench(agent, Models(judge=FakeJudge()))
    spec = RunSpec(id="first", agent="mine", scenarios=scenarios, attempts=3, limits=bench.limits)
    kept = asyncio.run(RunJournal(Path("results/mine/first")).play(spec, bench))
    print(sum(outcome.status(0.0) == "passed" for outcome in kept.outcomes), "passed")

``RunJournal.play`` makes the run's folder and keeps each attempt there as it ends; ``convy report``
then draws it. ``tests/test_examples.py`` runs this example, and those of the README.
"""

from convy.agent import (
    Accountable,
    Agent,
    AgentFailure,
    Answer,
    Call,
    Conversation,
    Cost,
    Message,
    NotReported,
    NoUsage,
    OutOfTime,
    QueuedAgent,
    Reported,
    Requests,
    Thought,
    TimeLimited,
    Unpriced,
    Usage,
)
from convy.bench import (
    Bench,
    Complete,
    Fingerprints,
    Interrupted,
    Journal,
    Limits,
    ModelNames,
    Plan,
    Planned,
    RunDamaged,
    RunFile,
    RunInUse,
    RunJournal,
    Running,
    RunSpec,
    Skipped,
)
from convy.busy import Busy, Patience, Places, Wait
from convy.chat import Chunks, Completion, Price, Prices
from convy.dialog import (
    ChatJudge,
    Checked,
    Claim,
    Confidence,
    Failed,
    Finished,
    Grade,
    Graded,
    Judge,
    NoConfidence,
    NoGrade,
    NoVerdict,
    PatientJudge,
    Prompt,
    Ruling,
    SimulatedUser,
    Transcript,
    Turn,
    Verdict,
)
from convy.env import Env, Settings
from convy.http import ChatAgent, HttpFailure, JsonAgent, JsonConnection, JsonEndpoint, JsonResponse, Tls, TokenPaths
from convy.model import (
    Absent,
    Contained,
    Model,
    ModelFailure,
    Models,
    OpenAiModel,
    PatientModel,
    Reply,
    Said,
    StillBusy,
)
from convy.problems import ConfigurationError, ScenarioError, Unwritable
from convy.project import Project, ProjectAgent
from convy.scenario import Check, Matching, Outcome, Rule, Scenario, Scenarios

__version__ = "0.1.0"

__all__ = [
    "Absent",
    "Accountable",
    "Agent",
    "AgentFailure",
    "Answer",
    "Bench",
    "Busy",
    "Call",
    "ChatAgent",
    "ChatJudge",
    "Check",
    "Checked",
    "Chunks",
    "Claim",
    "Complete",
    "Completion",
    "Confidence",
    "ConfigurationError",
    "Contained",
    "Conversation",
    "Cost",
    "Env",
    "Failed",
    "Fingerprints",
    "Finished",
    "Grade",
    "Graded",
    "HttpFailure",
    "Interrupted",
    "Journal",
    "JsonAgent",
    "JsonConnection",
    "JsonEndpoint",
    "JsonResponse",
    "Judge",
    "Limits",
    "Matching",
    "Message",
    "Model",
    "ModelFailure",
    "ModelNames",
    "Models",
    "NoConfidence",
    "NoGrade",
    "NoUsage",
    "NoVerdict",
    "NotReported",
    "OpenAiModel",
    "OutOfTime",
    "Outcome",
    "Patience",
    "PatientJudge",
    "PatientModel",
    "Places",
    "Plan",
    "Planned",
    "Price",
    "Prices",
    "Project",
    "ProjectAgent",
    "Prompt",
    "QueuedAgent",
    "Reply",
    "Reported",
    "Requests",
    "Rule",
    "Ruling",
    "RunDamaged",
    "RunFile",
    "RunInUse",
    "RunJournal",
    "RunSpec",
    "Running",
    "Said",
    "Scenario",
    "ScenarioError",
    "Scenarios",
    "Settings",
    "SimulatedUser",
    "Skipped",
    "StillBusy",
    "Thought",
    "TimeLimited",
    "Tls",
    "TokenPaths",
    "Transcript",
    "Turn",
    "Unpriced",
    "Unwritable",
    "Usage",
    "Verdict",
    "Wait",
]
