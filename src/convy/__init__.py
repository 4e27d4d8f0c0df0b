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

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
        Stopped,
    )
    from convy.budget import Budget, Outlay
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
    from convy.env import Env
    from convy.http import (
        ChatAgent,
        HttpFailure,
        JsonAgent,
        JsonConnection,
        JsonEndpoint,
        JsonResponse,
        Tls,
        TokenPaths,
    )
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
    from convy.problems import ConfigurationError, ScenarioError, Unplayed, Unwritable
    from convy.project import Project, ProjectAgent
    from convy.scenario import Check, Matching, Outcome, Rule, Scenario, Scenarios
    from convy.settings import Settings

# Each public name is imported from its module the first time it is asked for, so a command loads
# only what it uses (``convy report`` needs no HTTP client, no settings library, no progress bar).
_WHERE = {
    "Absent": "convy.model",
    "Accountable": "convy.agent",
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
    "Chunks": "convy.chat",
    "Claim": "convy.dialog",
    "Budget": "convy.budget",
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
    "JsonResponse": "convy.http",
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
    "Requests": "convy.agent",
    "Rule": "convy.scenario",
    "Ruling": "convy.dialog",
    "RunDamaged": "convy.bench",
    "RunFile": "convy.bench",
    "RunInUse": "convy.bench",
    "RunJournal": "convy.bench",
    "RunSpec": "convy.bench",
    "Outlay": "convy.budget",
    "Running": "convy.bench",
    "Stopped": "convy.bench",
    "Said": "convy.model",
    "Scenario": "convy.scenario",
    "ScenarioError": "convy.problems",
    "Scenarios": "convy.scenario",
    "Settings": "convy.settings",
    "SimulatedUser": "convy.dialog",
    "Skipped": "convy.bench",
    "StillBusy": "convy.model",
    "Thought": "convy.agent",
    "TimeLimited": "convy.agent",
    "Tls": "convy.http",
    "TokenPaths": "convy.http",
    "Transcript": "convy.dialog",
    "Turn": "convy.dialog",
    "Unplayed": "convy.problems",
    "Unpriced": "convy.agent",
    "Unwritable": "convy.problems",
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
    "Accountable",
    "Agent",
    "AgentFailure",
    "Answer",
    "Bench",
    "Budget",
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
    "Outlay",
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
    "Stopped",
    "Thought",
    "TimeLimited",
    "Tls",
    "TokenPaths",
    "Transcript",
    "Turn",
    "Unplayed",
    "Unpriced",
    "Unwritable",
    "Usage",
    "Verdict",
    "Wait",
]
