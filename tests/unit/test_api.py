"""The public API: convy.__all__ and convy.fakes, and a run made from Python."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import convy
import convy.fakes
from convy import Answer, Bench, Call, Models, Plan, Reported, RunJournal, RunSpec, Scenarios, Usage
from convy.fakes import FakeAgent, FakeJudge, FakeModel, MemoryJournal


def test_all_is_sorted_and_every_name_exists() -> None:
    """convy.__all__ is sorted, has no duplicates, and every name in it can be imported."""
    assert list(convy.__all__) == sorted(set(convy.__all__))
    for name in convy.__all__:
        assert hasattr(convy, name), name


def test_all_lists_every_public_class_of_the_interface_modules() -> None:
    """Every public class defined in the modules the API is drawn from is exported (or is internal by name)."""
    modules = ("agent", "bench", "records", "storage", "plan", "checks", "outcome", "scenarios", "busy", "quota", "chat", "transcript", "prompt", "user", "judge", "http", "httpagents", "model", "problems", "scenario", "project", "waits")
    internal = {"Spoken", "Kept", "Bounds", "Left", "LinesLeftOut", "AgentTurn", "Seen", "RunId", "ScenarioFile", "Written", "FieldProblem", "Stop", "Waits", "Chunks", "ReplyParts", "Arguments", "JsonPath", "BodyTemplate", "RetryAfter", "OnTheWire", "Provider", "Quota", "NoQuota", "Heard", "Told", "Seat", "RateHeaders", "Service", "Services", "Meter", "Pace", "Ration", "Send", "Outside", "RunJudge", "Player", "Playlist", "Lacking", "Judged", "FolderName", "Stage", "Blind", "RunName", "Quote", "Loaded", "UrlGiven", "Instructions", "Conduct", "Noted", "Quoted", "Reviewed", "UserReview"}
    missing = []
    for module_name in modules:
        module = getattr(__import__(f"convy.{module_name}"), module_name)
        for name, value in vars(module).items():
            if name.startswith("_") or not inspect.isclass(value) or value.__module__ != module.__name__:
                continue
            if name not in convy.__all__ and name not in internal:
                missing.append(f"{module_name}.{name}")
    assert missing == []


def test_fakes_module_exports_its_fakes() -> None:
    """convy.fakes names exactly its nine fakes."""
    assert convy.fakes.__all__ == [
        "BadUser",
        "Echo",
        "FakeAgent",
        "FakeJudge",
        "FakeModel",
        "FickleModel",
        "MemoryJournal",
        "Rated",
        "RuledModel",
    ]


def test_a_run_made_from_python(tmp_path: Path) -> None:
    """A run made from Python plays every attempt, keeps it in the run folder and marks the run finished."""
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "refund.yaml").write_text(
        "user: You are {{ name }} and want a refund.\n"
        "vars: {name: Dana}\n"
        "script: [Hi, my kettle broke.]\n"
        "judge:\n"
        "  - The agent offers a refund.\n"
        "  - check: {called: refund}\n",
        encoding="utf-8",
    )
    agent = FakeAgent(lambda text: Answer("Refunded.", Usage(10, 3), (Call("refund", {}, Reported("ok")),)))
    models = Models(user=FakeModel(["Thanks. ###STOP###"]), judge=FakeJudge())
    scenarios = Scenarios(folder).every()
    bench = Bench(agent, models)
    spec = RunSpec(id="first", agent="fake", scenarios=scenarios, attempts=3, limits=bench.limits)
    journal = RunJournal(tmp_path / "results" / "fake" / "first")
    kept = asyncio.run(journal.play(spec, bench))
    assert sorted((outcome.scenario, outcome.attempt) for outcome in kept.outcomes) == [
        ("refund", 1),
        ("refund", 2),
        ("refund", 3),
    ]
    assert all(outcome.status(0.0) == "passed" for outcome in kept.outcomes)
    assert journal.run().status.__struct_config__.tag == "finished"
    memory = MemoryJournal()
    asyncio.run(bench.run(Plan(scenarios, 2), memory))
    assert len(memory.outcomes) == 2
