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

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from convy.agent import (
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
        RunFile,
        RunInUse,
        RunJournal,
        Running,
        RunSpec,
        Skipped,
    )
    from convy.busy import Busy, Patience, Places, Wait
    from convy.chat import Completion, Price, Prices
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
    from convy.http import ChatAgent, HttpFailure, JsonAgent, JsonConnection, JsonEndpoint, Tls, TokenPaths
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
    from convy.problems import ConfigurationError, ScenarioError
    from convy.project import Project, ProjectAgent
    from convy.scenario import Check, Matching, Outcome, Rule, Scenario, Scenarios

# Each public name is imported from its module the first time it is asked for, so a command loads
# only what it uses (``convy report`` needs no HTTP client, no settings library, no progress bar).
_WHERE = {
    "Absent": "convy.model",
    "Agent": "convy.agent",
    "AgentFailure": "convy.agent",
    "Answer": "convy.agent",
    "Bench": "convy.bench",
    "Busy": "convy.busy",
    "Call": "convy.agent",
    "ChatAgent": "convy.http",
    "ChatJudge": "convy.dialog",
    "Check": "convy.scenario",
    "Checked": "convy.dialog",
    "Claim": "convy.dialog",
    "Complete": "convy.bench",
    "Completion": "convy.chat",
    "Confidence": "convy.dialog",
    "ConfigurationError": "convy.problems",
    "Contained": "convy.model",
    "Conversation": "convy.agent",
    "Cost": "convy.agent",
    "Env": "convy.env",
    "Failed": "convy.dialog",
    "Fingerprints": "convy.bench",
    "Finished": "convy.dialog",
    "Grade": "convy.dialog",
    "Graded": "convy.dialog",
    "HttpFailure": "convy.http",
    "Interrupted": "convy.bench",
    "Journal": "convy.bench",
    "JsonAgent": "convy.http",
    "JsonConnection": "convy.http",
    "JsonEndpoint": "convy.http",
    "Judge": "convy.dialog",
    "Limits": "convy.bench",
    "Matching": "convy.scenario",
    "Message": "convy.agent",
    "Model": "convy.model",
    "ModelFailure": "convy.model",
    "ModelNames": "convy.bench",
    "Models": "convy.model",
    "NoConfidence": "convy.dialog",
    "NoGrade": "convy.dialog",
    "NoUsage": "convy.agent",
    "NoVerdict": "convy.dialog",
    "NotReported": "convy.agent",
    "OpenAiModel": "convy.model",
    "OutOfTime": "convy.agent",
    "Outcome": "convy.scenario",
    "Patience": "convy.busy",
    "PatientJudge": "convy.dialog",
    "PatientModel": "convy.model",
    "Places": "convy.busy",
    "Plan": "convy.bench",
    "Planned": "convy.bench",
    "Price": "convy.chat",
    "Prices": "convy.chat",
    "Project": "convy.project",
    "ProjectAgent": "convy.project",
    "Prompt": "convy.dialog",
    "QueuedAgent": "convy.agent",
    "Reply": "convy.model",
    "Reported": "convy.agent",
    "Rule": "convy.scenario",
    "Ruling": "convy.dialog",
    "RunFile": "convy.bench",
    "RunInUse": "convy.bench",
    "RunJournal": "convy.bench",
    "RunSpec": "convy.bench",
    "Running": "convy.bench",
    "Said": "convy.model",
    "Scenario": "convy.scenario",
    "ScenarioError": "convy.problems",
    "Scenarios": "convy.scenario",
    "Settings": "convy.env",
    "SimulatedUser": "convy.dialog",
    "Skipped": "convy.bench",
    "StillBusy": "convy.model",
    "Thought": "convy.agent",
    "TimeLimited": "convy.agent",
    "Tls": "convy.http",
    "TokenPaths": "convy.http",
    "Transcript": "convy.dialog",
    "Turn": "convy.dialog",
    "Unpriced": "convy.agent",
    "Usage": "convy.agent",
    "Verdict": "convy.dialog",
    "Wait": "convy.busy",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'convy' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
