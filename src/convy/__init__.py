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
then draws it. ``tests/unit/test_examples.py`` runs this example, and those of docs/.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from convy.adaptive import Adaptive, Against, Narrow, Rounds
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
    from convy.bench import Bench
    from convy.budget import Budget, Outlay
    from convy.busy import Busy, Patience, Places
    from convy.chat import Chunks, Completion, Price, Prices
    from convy.checks import Check, Rule
    from convy.env import Env
    from convy.http import HttpFailure, JsonConnection, JsonEndpoint, JsonResponse, Tls
    from convy.httpagents import ChatAgent, JsonAgent, TokenPaths
    from convy.judge import (
        ChatJudge,
        Checked,
        Claim,
        Confidence,
        Failed,
        Grade,
        Graded,
        Judge,
        Judging,
        Models,
        NoConfidence,
        NoGrade,
        NoVerdict,
        Panel,
        PatientJudge,
        Poll,
        Ruling,
        Verdict,
        Vote,
    )
    from convy.model import (
        Absent,
        Contained,
        Model,
        ModelFailure,
        OpenAiModel,
        PatientModel,
        Reply,
        Said,
        ServiceFailure,
        StillBusy,
    )
    from convy.outcome import Outcome
    from convy.pauses import Approvals, Asking, approvals, asking
    from convy.plan import Journal, Plan, Planned
    from convy.problems import (
        ConfigurationError,
        CutReply,
        DialoguesLost,
        EmptyReply,
        Problems,
        ScenarioError,
        Unplayed,
        Unwritable,
        UrlProblem,
        WorkersLost,
    )
    from convy.project import Project, ProjectAgent
    from convy.prompt import Prompt
    from convy.records import (
        Complete,
        Fingerprints,
        Interrupted,
        Limits,
        ModelNames,
        Origin,
        RunFile,
        Running,
        RunSpec,
        Skipped,
        Stopped,
        UserShape,
    )
    from convy.scenario import Scenario
    from convy.scenarios import Matching, Scenarios
    from convy.settings import Settings
    from convy.storage import RunDamaged, RunInUse, RunJournal
    from convy.tools import Fixture, Tool, Toolbox, ToolError, toolbox
    from convy.tracecontext import TraceContext, trace_context
    from convy.transcript import Evidence, Finished, Transcript, Turn, Unchecked, UserFault
    from convy.user import SimulatedUser, UserChecks
    from convy.vital import DeadService
    from convy.waits import Wait

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
    "ChatAgent": "convy.httpagents",
    "ChatJudge": "convy.judge",
    "Check": "convy.checks",
    "Checked": "convy.judge",
    "Chunks": "convy.chat",
    "Claim": "convy.judge",
    "DeadService": "convy.vital",
    "DialoguesLost": "convy.problems",
    "CutReply": "convy.problems",
    "EmptyReply": "convy.problems",
    "Evidence": "convy.transcript",
    "Origin": "convy.records",
    "Vote": "convy.judge",
    "Budget": "convy.budget",
    "Adaptive": "convy.adaptive",
    "Against": "convy.adaptive",
    "Narrow": "convy.adaptive",
    "Rounds": "convy.adaptive",
    "Complete": "convy.records",
    "Completion": "convy.chat",
    "Confidence": "convy.judge",
    "ConfigurationError": "convy.problems",
    "Contained": "convy.model",
    "Conversation": "convy.agent",
    "Cost": "convy.agent",
    "Env": "convy.env",
    "Failed": "convy.judge",
    "Fingerprints": "convy.records",
    "Finished": "convy.transcript",
    "Grade": "convy.judge",
    "Graded": "convy.judge",
    "Judging": "convy.judge",
    "Panel": "convy.judge",
    "Poll": "convy.judge",
    "HttpFailure": "convy.problems",
    "Interrupted": "convy.records",
    "Journal": "convy.plan",
    "JsonAgent": "convy.httpagents",
    "JsonConnection": "convy.http",
    "JsonEndpoint": "convy.http",
    "JsonResponse": "convy.http",
    "Judge": "convy.judge",
    "Limits": "convy.records",
    "Matching": "convy.scenarios",
    "Message": "convy.agent",
    "Model": "convy.model",
    "ModelFailure": "convy.problems",
    "ModelNames": "convy.records",
    "Models": "convy.judge",
    "NoConfidence": "convy.judge",
    "NoGrade": "convy.judge",
    "NoUsage": "convy.agent",
    "NoVerdict": "convy.judge",
    "NotReported": "convy.agent",
    "OpenAiModel": "convy.model",
    "OutOfTime": "convy.agent",
    "Outcome": "convy.outcome",
    "Patience": "convy.busy",
    "PatientJudge": "convy.judge",
    "PatientModel": "convy.model",
    "Places": "convy.busy",
    "Plan": "convy.plan",
    "Planned": "convy.plan",
    "Price": "convy.chat",
    "Prices": "convy.chat",
    "Project": "convy.project",
    "ProjectAgent": "convy.project",
    "Prompt": "convy.prompt",
    "QueuedAgent": "convy.agent",
    "Reply": "convy.model",
    "Reported": "convy.agent",
    "Requests": "convy.agent",
    "Rule": "convy.checks",
    "Ruling": "convy.judge",
    "RunDamaged": "convy.storage",
    "RunFile": "convy.records",
    "RunInUse": "convy.storage",
    "RunJournal": "convy.storage",
    "RunSpec": "convy.records",
    "Outlay": "convy.budget",
    "Running": "convy.records",
    "Stopped": "convy.records",
    "Said": "convy.model",
    "Scenario": "convy.scenario",
    "ScenarioError": "convy.problems",
    "Scenarios": "convy.scenarios",
    "Settings": "convy.settings",
    "ServiceFailure": "convy.problems",
    "SimulatedUser": "convy.user",
    "Skipped": "convy.records",
    "StillBusy": "convy.problems",
    "Thought": "convy.agent",
    "TimeLimited": "convy.agent",
    "Tls": "convy.http",
    "TokenPaths": "convy.httpagents",
    "Tool": "convy.tools",
    "ToolError": "convy.tools",
    "Toolbox": "convy.tools",
    "toolbox": "convy.tools",
    "TraceContext": "convy.tracecontext",
    "trace_context": "convy.tracecontext",
    "approvals": "convy.pauses",
    "Approvals": "convy.pauses",
    "asking": "convy.pauses",
    "Asking": "convy.pauses",
    "Asked": "convy.agent",
    "Fixture": "convy.tools",
    "Transcript": "convy.transcript",
    "Turn": "convy.transcript",
    "Unchecked": "convy.transcript",
    "UserChecks": "convy.user",
    "UserFault": "convy.transcript",
    "UserShape": "convy.records",
    "Problems": "convy.problems",
    "Unplayed": "convy.problems",
    "Unpriced": "convy.agent",
    "Unwritable": "convy.problems",
    "UrlProblem": "convy.problems",
    "Usage": "convy.agent",
    "Verdict": "convy.judge",
    "Wait": "convy.waits",
    "WorkersLost": "convy.problems",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'convy' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__version__ = "0.6.0"

__all__ = [
    "Absent",
    "Accountable",
    "Adaptive",
    "Against",
    "Agent",
    "AgentFailure",
    "Answer",
    "Approvals",
    "Asked",
    "Asking",
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
    "CutReply",
    "DeadService",
    "DialoguesLost",
    "EmptyReply",
    "Env",
    "Evidence",
    "Failed",
    "Fingerprints",
    "Finished",
    "Fixture",
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
    "Judging",
    "Limits",
    "Matching",
    "Message",
    "Model",
    "ModelFailure",
    "ModelNames",
    "Models",
    "Narrow",
    "NoConfidence",
    "NoGrade",
    "NoUsage",
    "NoVerdict",
    "NotReported",
    "OpenAiModel",
    "Origin",
    "OutOfTime",
    "Outcome",
    "Outlay",
    "Panel",
    "Patience",
    "PatientJudge",
    "PatientModel",
    "Places",
    "Plan",
    "Planned",
    "Poll",
    "Price",
    "Prices",
    "Problems",
    "Project",
    "ProjectAgent",
    "Prompt",
    "QueuedAgent",
    "Reply",
    "Reported",
    "Requests",
    "Rounds",
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
    "ServiceFailure",
    "Settings",
    "SimulatedUser",
    "Skipped",
    "StillBusy",
    "Stopped",
    "Thought",
    "TimeLimited",
    "Tls",
    "TokenPaths",
    "Tool",
    "ToolError",
    "Toolbox",
    "TraceContext",
    "Transcript",
    "Turn",
    "Unchecked",
    "Unplayed",
    "Unpriced",
    "Unwritable",
    "UrlProblem",
    "Usage",
    "UserChecks",
    "UserFault",
    "UserShape",
    "Verdict",
    "Vote",
    "Wait",
    "WorkersLost",
    "approvals",
    "asking",
    "toolbox",
    "trace_context",
]
