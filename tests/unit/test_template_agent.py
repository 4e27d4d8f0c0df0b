"""The template project that ``convy init`` copies: its shop bot behaves, its scenarios load and play."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from convy.agent import Answer, Call, Message, Thought, Usage
from convy.bench import Bench
from convy.fakes import MemoryJournal
from convy.judge import Failed, Models, Verdict
from convy.model import Absent
from convy.plan import Plan
from convy.project import Project
from convy.scenario import Scenario
from convy.scenarios import Scenarios

TEMPLATE = Path(__file__).resolve().parents[2] / "src" / "convy" / "template"


def loaded(path: Path, name: str) -> ModuleType:
    """A module of the template, loaded by path without leaving __pycache__ in the template."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    writing = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = writing
    return module


@pytest.fixture(scope="module")
def agent() -> Any:
    return loaded(TEMPLATE / "agents" / "shop.py", "template_shop").agent


def talk(agent: Any, *messages: str) -> list[Answer]:
    async def played() -> list[Answer]:
        async with agent.conversation() as conversation:
            return [await conversation.turn(Message(text)) for text in messages]

    return asyncio.run(played())


def calls(answer: Answer, name: str) -> list[Call]:
    return [step for step in answer.steps if isinstance(step, Call) and step.name == name]


def test_it_greets(agent: Any) -> None:
    (answer,) = talk(agent, "Hello")
    assert "Hello" in answer.text
    assert "refund" in answer.text
    assert answer.steps == ()


def test_it_asks_for_the_order_number_for_a_refund(agent: Any) -> None:
    (answer,) = talk(agent, "I want a refund.")
    assert "order number" in answer.text
    assert answer.steps == ()


def test_it_asks_for_the_order_number_for_an_order_question(agent: Any) -> None:
    (answer,) = talk(agent, "Where is my parcel?")
    assert "order number" in answer.text
    assert answer.steps == ()


def test_it_looks_up_an_order(agent: Any) -> None:
    (answer,) = talk(agent, "Can you check order a-2001?")
    (lookup,) = calls(answer, "lookup_order")
    assert lookup.arguments == {"order": "A-2001"}
    assert lookup.result.value["status"] == "delivered"
    assert isinstance(lookup.seconds, float)
    assert "delivered on 12 March" in answer.text
    assert not calls(answer, "issue_refund")


def test_it_refunds_the_damaged_kettle_once_it_knows_the_order(agent: Any) -> None:
    asked, refunded, thanked = talk(agent, "Hi, my kettle arrived broken.", "It's order A-1043.", "Thanks!")
    assert "order number" in asked.text and not asked.steps
    (refund,) = calls(refunded, "issue_refund")
    assert refund.arguments["order"] == "A-1043"
    assert refund.arguments["reason"]
    assert refund.result.value["refunded"] is True
    assert any(isinstance(step, Thought) for step in refunded.steps)
    assert "$39.90" in refunded.text
    assert "welcome" in thanked.text


def test_it_remembers_the_order_in_the_conversation(agent: Any) -> None:
    _, refunded = talk(agent, "Can you check order A-1043?", "The kettle is broken, I want a refund.")
    assert calls(refunded, "issue_refund")[0].arguments["order"] == "A-1043"
    assert not calls(refunded, "lookup_order")


def test_a_new_conversation_knows_nothing(agent: Any) -> None:
    talk(agent, "Can you check order A-1043?")
    (answer,) = talk(agent, "I want a refund.")
    assert "order number" in answer.text and not answer.steps


def test_it_asks_what_is_wrong_before_refunding_an_undamaged_order(agent: Any) -> None:
    asked, refunded = talk(agent, "I want a refund for A-2001.", "The left side doesn't work.")
    assert "What is wrong" in asked.text and not calls(asked, "issue_refund")
    assert calls(refunded, "issue_refund")[0].arguments["order"] == "A-2001"


def test_it_refuses_to_refund_an_order_in_transit(agent: Any) -> None:
    (answer,) = talk(agent, "I want a refund for order A-3100.")
    assert calls(answer, "lookup_order")
    assert not calls(answer, "issue_refund")
    assert "on its way" in answer.text


def test_its_flaw_is_a_promised_delivery_date(agent: Any) -> None:
    (answer,) = talk(agent, "Where is my order A-3100? It's late.")
    assert "I guarantee it will arrive tomorrow" in answer.text


def test_it_cannot_help_with_unrelated_things(agent: Any) -> None:
    (answer,) = talk(agent, "What will the weather be like tomorrow?")
    assert "can't help" in answer.text and not answer.steps


def test_it_says_so_when_an_order_is_unknown(agent: Any) -> None:
    (answer,) = talk(agent, "Order A-9999 please")
    assert calls(answer, "lookup_order")[0].result.value == {"found": False, "order": "A-9999"}
    assert "couldn't find" in answer.text


def test_it_counts_words_as_tokens(agent: Any) -> None:
    first, second = talk(agent, "Hello there", "I want a refund.")
    assert first.usage == Usage(input=2, output=len(first.text.split()))
    assert isinstance(second.usage, Usage)
    assert second.usage.input == 2 + len(first.text.split()) + 4


def scenarios() -> tuple[Scenario, ...]:
    return Scenarios(TEMPLATE / "scenarios").every()


def test_every_template_scenario_loads() -> None:
    found = scenarios()
    assert 6 <= len(found) <= 9
    assert any("/" in scenario.id for scenario in found)
    offline = [scenario for scenario in found if not scenario.needs()]
    with_models = [scenario for scenario in found if "user" in scenario.needs()]
    assert len(offline) >= 4
    assert len(with_models) >= 2
    assert all(scenario.claims() for scenario in with_models)
    assert any(
        not isinstance(entry, str) and entry.grades for scenario in with_models for entry in scenario.judge
    )


def test_the_template_models_are_absent_with_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no gateway set, the template's models are absent and say which settings to fill in."""
    for name in ("GATEWAY_URL", "GATEWAY_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY", "USER_MODEL", "JUDGE_MODEL", "AGENT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no .env here
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    models = Project(TEMPLATE).models()
    assert isinstance(models, Models)
    for model in (models.user, models.judge):
        assert isinstance(model, Absent) and ".env" in model.reason


def gateways(monkeypatch: pytest.MonkeyPatch, folder: Path, **variables: str) -> tuple[Any, Any]:
    """The template's ``Gateway`` and ``GatewaySettings`` classes, copied into ``folder`` (a
    project's, whose .env they read) with only these of the gateway's variables set, and the
    current folder another one, as under pytest started from elsewhere."""
    for name in ("gateway.py", "gateway_settings.py"):
        (folder / name).write_text((TEMPLATE / name).read_text(encoding="utf-8"), encoding="utf-8")
    settings = loaded(folder / "gateway_settings.py", "template_gateway_settings")
    for name in settings.GatewaySettings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    elsewhere = folder / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / ".env").write_text("GATEWAY_URL=http://elsewhere.invalid/v1\nJUDGE_MODEL=wrong\n", encoding="utf-8")
    monkeypatch.chdir(elsewhere)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.syspath_prepend(str(folder))  # gateway.py imports gateway_settings as the project does
    monkeypatch.delitem(sys.modules, "gateway_settings", raising=False)
    return loaded(folder / "gateway.py", "template_gateway").Gateway, settings.GatewaySettings


def test_the_gateway_names_every_setting_it_reads_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gateway.py decides that nothing is set from the names of GatewaySettings' fields: all of them."""
    gateway, settings = gateways(monkeypatch, tmp_path)
    assert loaded(TEMPLATE / "gateway.py", "template_gateway").SETTINGS == set(settings.model_fields)


def test_with_nothing_set_the_gateway_says_what_its_settings_would(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No .env and no setting: nothing is read, and each part is absent with the reason reading would give."""
    monkeypatch.setenv("USERNAME", "dana")  # a variable that only starts like one of the settings
    gateway, settings = gateways(monkeypatch, tmp_path)
    unread = gateway()
    assert unread.settings is None
    for part in ("user", "judge", "agent"):
        absent = unread.model(part)
        assert isinstance(absent, Absent) and f"{part.upper()}_MODEL in .env" in absent.reason
        assert absent == settings().model(part)


@pytest.mark.parametrize(
    "given",
    [{"GATEWAY_URL": ""}, {"gateway_url": "http://127.0.0.1:9/v1"}, {"Judge_Model": "j"}, {"OPENAI_API_KEY": "sk-x"}],
    ids=["empty", "lower-case", "mixed-case", "openai-key"],
)
def test_any_setting_in_the_environment_is_read(
    given: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One setting, in any case and even empty, and the settings are read, as pydantic-settings reads them."""
    gateway, settings = gateways(monkeypatch, tmp_path, **given)
    read = gateway()
    assert read.settings is not None
    for part in ("user", "judge", "agent"):
        assert read.model(part) == settings().model(part)


def test_a_dotenv_is_read_and_a_bad_setting_in_it_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gateway, settings = gateways(monkeypatch, tmp_path)
    (tmp_path / ".env").write_text("JUDGE_EFFORT=extreme\n", encoding="utf-8")
    pydantic = pytest.importorskip("pydantic")
    with pytest.raises(pydantic.ValidationError, match="judge_effort"):
        gateway()
    (tmp_path / ".env").write_text("GATEWAY_URL=http://127.0.0.1:9/v1\nJUDGE_MODEL=j\n", encoding="utf-8")
    judge = gateway().model("judge")
    assert (judge.name, judge.base_url) == ("j", "http://127.0.0.1:9/v1")


def test_the_offline_scenarios_pass_and_fail_against_the_bot(agent: Any) -> None:
    offline = tuple(scenario for scenario in scenarios() if not scenario.needs())
    journal = MemoryJournal()
    asyncio.run(Bench(agent, Models()).run(Plan(offline, 1), journal))
    assert len(journal.outcomes) == len(offline)
    assert not [outcome for outcome in journal.outcomes if isinstance(outcome.result, Failed)]
    assert all(isinstance(outcome.result, Verdict) for outcome in journal.outcomes)
    status = {outcome.scenario: outcome.status(0.0) for outcome in journal.outcomes}
    assert status == {
        "refunds/damaged": "passed",
        "refunds/no-order-number": "passed",
        "off-topic": "passed",
        "refunds/in-transit": "failed",
        "orders/late": "failed",
        "refunds/refunded-before": "failed",
    }
    for outcome in journal.outcomes:
        failing = [claim for claim in outcome.result.claims if not claim.held]
        if outcome.scenario in ("refunds/in-transit", "orders/late"):
            assert [claim.claim for claim in failing] == [outcome.result.claims[-1].claim]
            assert "guarantee" in failing[0].reason
        if outcome.scenario == "refunds/refunded-before":  # the shop's books, set by the scenario, show the second payout
            assert [(claim.claim, claim.reason) for claim in failing] == [
                ("state payouts is {}", 'the tools\' state has payouts = {"A-1043":39.9}')
            ]
            assert [(step.name, step.source) for step in outcome.transcript.turns[0].answer.steps if isinstance(step, Call)] == [
                ("lookup_order", "fixture"),
                ("issue_refund", "fixture"),
            ]
