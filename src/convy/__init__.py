"""convy: test conversational AI agents by playing scenarios and judging what they say.

The public API is the names below and the module ``convy.fakes``; everything else may change.
A run from Python::

    import asyncio
    from pathlib import Path
    from convy import Bench, Models, Plan, RunJournal, Scenarios
    from convy.fakes import FakeJudge

    scenarios = Scenarios(Path("scenarios")).every()
    bench = Bench(my_agent, Models(judge=FakeJudge()))
    asyncio.run(bench.run(Plan(scenarios, attempts=3), RunJournal(Path("results/mine/first"))))
"""

from convy.agent import (
    Agent,
    Cost,
    Unpriced,
    AgentFailure,
    Answer,
    Call,
    Conversation,
    Message,
    NotReported,
    NoUsage,
    OutOfTime,
    QueuedAgent,
    Reported,
    Thought,
    TimeLimited,
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
    RunFile,
    RunInUse,
    RunJournal,
    RunSpec,
    Running,
    Skipped,
)
from convy.busy import Busy, Patience, Places, Wait
from convy.chat import Completion, Price, Prices
from convy.http import ChatAgent, HttpFailure, JsonAgent, JsonConnection, JsonEndpoint, TokenPaths, Tls
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
from convy.model import Absent, Contained, Model, ModelFailure, Models, OpenAiModel, PatientModel, Reply, Said, StillBusy
from convy.problems import ConfigurationError, ScenarioError
from convy.project import Project, ProjectAgent
from convy.scenario import Check, Matching, Outcome, Rule, Scenario, Scenarios

__version__ = "0.1.0"

__all__ = [
    "Absent",
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
    "Rule",
    "Ruling",
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
    "Usage",
    "Verdict",
    "Wait",
]
