"""The real ``convy`` command against a real OpenAI-compatible server: the stand-in as the gateway.

Each test makes a project with ``convy init`` in ``tmp_path`` and, where it needs the gateway,
writes a ``.env`` pointing GATEWAY_URL at the stand-in, which plays three models by reading each
request: the simulated user, the judge and the model behind ``agents/assistant.py``. The key in
``.env`` must reach the stand-in and nothing else: every output of every ``convy`` started here is
checked for it, and so is every file under ``results/``. Nothing here measures time; the one wait
polls with a generous deadline and fails only when it passes.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from support.process import run_convy, start_convy
from support.standin import REDACTED, StandIn
from support.waiting import wait_until

from convy.agent import Call, Usage
from convy.cli.run import SmokeCommand
from convy.judge import Confidence, Grade, NoVerdict, Verdict
from convy.outcome import Outcome

DEADLINE = 300.0  # seconds a wait may take before the test gives up: a hang guard, far more than any run needs under load
KEY = "sk-test-SECRET-123"
SCENARIOS = {
    "off-topic",
    "orders/impatient",
    "orders/late",
    "orders/status",
    "refunds/damaged",
    "refunds/in-transit",
    "refunds/no-order-number",
    "refunds/refunded-before",
    "refunds/upset-customer",
}
GATEWAY = ("GATEWAY_URL", "GATEWAY_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY", "USER_MODEL", "JUDGE_MODEL", "AGENT_MODEL")


class Roles:
    """The stand-in's responder: the simulated user, the judge or the assistant's model, by the request.

    While ``held`` is set, the user's and the judge's requests wait (the agent's do not).
    """

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self.held = threading.Event()

    async def __call__(self, request: dict[str, Any]) -> str | dict[str, Any]:
        messages = request["messages"]
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        if messages[-1]["content"] == SmokeCommand.ASKED:  # --smoke's one request to each model
            self.seen[f"smoke {request['model']}"] += 1
            return "OK"
        if "tools" in request:
            role = "agent"
        elif "You are playing a person" in system:
            role = "user"
        elif "impartial judge" in system:
            role = "judge"
        else:
            raise AssertionError(f"a request in no known role: {system[:80]!r}")
        assert request["model"] == f"{role}-model", f"the {role} asked {request['model']}"
        self.seen[role] += 1
        while role != "agent" and self.held.is_set():
            await asyncio.sleep(0.01)
        match role:
            case "agent":
                return self._agent(messages)
            case "user":
                return self._user(messages)
            case _:
                return self._judge(messages[-1]["content"])

    def _user(self, messages: list[dict[str, Any]]) -> str:
        # The simulated user's own earlier messages come back to it as "assistant" messages.
        said = sum(1 for message in messages if message["role"] == "assistant")
        return ("Hi, my order A-3100 has a problem.", "What can you do about it?")[said] if said < 2 else "###STOP###"

    def _judge(self, asked: str) -> str:
        graded = re.search(r"^The grades, worst first: (.+)$", asked, re.MULTILINE)
        if graded:
            best = graded.group(1).split(", ")[-1]
            return json.dumps({"reason": "the stand-in judge liked it", "grade": best, "confidence": 0.9})
        return json.dumps({"reason": "the stand-in judge agrees", "pass": True, "confidence": 0.9})

    def _agent(self, messages: list[dict[str, Any]]) -> str | dict[str, Any]:
        last = messages[-1]
        if last["role"] == "tool":
            return f"I looked it up: {last['content']}"
        found = re.search(r"[A-Z]-\d{4}", last.get("content") or "")
        return {"content": None, "tool_calls": [{"name": "lookup_order", "arguments": {"order": found.group(0) if found else "A-1043"}}]}


class Made(msgspec.Struct, frozen=True):
    """A project made by ``convy init``, and how to run ``convy`` in it."""

    folder: Path
    processes: list[subprocess.Popen] = msgspec.field(default_factory=list)

    def gateway(self, url: str, user_model: str = "user-model") -> None:
        """A ``.env`` pointing the gateway at ``url`` with the test's key and model names."""
        (self.folder / ".env").write_text(
            f"GATEWAY_URL={url}\nGATEWAY_KEY={KEY}\nUSER_MODEL={user_model}\n"
            "JUDGE_MODEL=judge-model\nAGENT_MODEL=agent-model\n"
        )

    def environment(self, extra: dict[str, str]) -> dict[str, str]:
        # Neither the user's CONVY_* settings nor a gateway of their own may reach the project.
        kept = {
            name: value for name, value in os.environ.items() if not name.startswith("CONVY_") and name not in GATEWAY
        }
        return {**kept, **extra}

    def ran(self, *arguments: str, **extra: str) -> subprocess.CompletedProcess[str]:
        """``convy`` run to its end; its output never shows the key, nor a traceback."""
        done = run_convy(self.folder, *arguments, env=self.environment(extra), timeout=DEADLINE)
        said = done.stdout + done.stderr
        assert KEY not in said, f"convy {' '.join(arguments)} showed the key"
        assert "Traceback" not in said, said
        return done

    def started(self, *arguments: str) -> subprocess.Popen:
        """``convy`` started, its output kept in files checked by ``shown``."""
        with (self.folder / "started.out").open("wb") as out, (self.folder / "started.err").open("wb") as err:
            process = start_convy(self.folder, *arguments, env=self.environment({}), stdout=out, stderr=err)
        self.processes.append(process)
        return process

    def shown(self) -> str:
        """What the started ``convy`` wrote, both streams."""
        return (self.folder / "started.out").read_text() + (self.folder / "started.err").read_text()

    def runs(self) -> dict[str, Path]:
        """The run folder of each agent, by the agent's name (one run each)."""
        found = sorted((self.folder / "results").glob("*/*/run.json"))
        assert len({path.parent.parent.name for path in found}) == len(found), found
        return {path.parent.parent.name: path.parent for path in found}

    def unwritten(self) -> int:
        """Every file under results/ is free of the key; how many files were read."""
        files = [path for path in (self.folder / "results").rglob("*") if path.is_file()]
        for path in files:
            assert KEY.encode() not in path.read_bytes(), f"{path.relative_to(self.folder)} holds the key"
        return len(files)


def data(folder: Path) -> bytes:
    """The bytes of a run's attempts.jsonl, none when it has none yet."""
    try:
        return (folder / "attempts.jsonl").read_bytes()
    except FileNotFoundError:
        return b""


def outcomes(folder: Path) -> list[Outcome]:
    """Every attempt kept in a run folder: its lines that end with a newline. A process killed while
    writing leaves a torn last line, which convy cuts off and plays again (``storage``); a test
    that kills one mid-run reads what convy would keep, not the torn piece."""
    kept = data(folder)
    return [msgspec.json.decode(line, type=Outcome) for line in kept[: kept.rfind(b"\n") + 1].splitlines()]


def spec(folder: Path) -> dict[str, Any]:
    """The run's spec as run.json keeps it."""
    return json.loads((folder / "run.json").read_text())["spec"]


@pytest.fixture
def made(tmp_path: Path) -> Iterator[Made]:
    """A project from ``convy init``, with no .env yet."""
    folder = tmp_path / "project"
    folder.mkdir()
    made = Made(folder)
    init = made.ran("init")
    assert init.returncode == 0, init.stderr
    yield made
    for process in made.processes:  # a failed test leaves no convy behind
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.fixture
def roles() -> Roles:
    return Roles()


@pytest.fixture
def standin(roles: Roles) -> Iterator[StandIn]:
    """The gateway: the stand-in answering as ``roles`` says, to requests bearing the key only."""
    with StandIn(reply=roles, api_key=KEY) as server:
        yield server
        assert server.errors == []


def accepted(standin: StandIn, since: int = 0) -> None:
    """Every request reached the stand-in with the key (shown redacted, and not refused); those from ``since``
    on were answered 200 (earlier ones may have lost their client)."""
    assert standin.received[since:]
    for number, request in enumerate(standin.received):
        assert request.headers["authorization"] == REDACTED
        assert request.refused is None, (request.path, request.refused)
        assert number < since or request.status == 200, (request.path, request.status)


# --- a whole run on the gateway ---------------------------------------------------------------


def test_a_run_on_the_gateway_plays_every_scenario_of_both_agents_and_exits_0(
    made: Made, standin: StandIn, roles: Roles
) -> None:
    """With the gateway set, ``convy run`` plays all 9 scenarios for shop and assistant, judged and simulated, and
    exits 0: claims fail, but no attempt was failed by the agent or left unjudged, and there is no --fail-under."""
    made.gateway(standin.url + "/v1")

    ran = made.ran("run", "-k", "2")

    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "skipped" not in ran.stdout
    assert "✗" in ran.stdout, "some claims fail, and still the exit code is 0"
    assert {role for role in roles.seen} == {"user", "judge", "agent"}
    runs = made.runs()
    assert set(runs) == {"assistant", "shop"}
    for agent, folder in runs.items():
        assert {scenario["id"] for scenario in spec(folder)["scenarios"]} == SCENARIOS
        assert spec(folder)["skipped"] == []
        assert spec(folder)["models"] == {"user": "user-model", "judge": "judge-model"}
        kept = outcomes(folder)
        assert Counter((outcome.scenario, outcome.attempt) for outcome in kept) == Counter(
            (scenario, attempt) for scenario in SCENARIOS for attempt in (1, 2)
        )
        assert all(isinstance(outcome.result, Verdict) for outcome in kept), agent
        judged = [claim for outcome in kept for claim in outcome.result.claims if claim.by == "judge"]
        assert judged and all(claim.confidence == Confidence(0.9) and claim.held for claim in judged)
        grades = {claim.claim: claim.grade for claim in judged if isinstance(claim.grade, Grade)}
        assert grades == {
            "How clear was the agent about where the order is now?": Grade("clear"),
            "How polite was the agent?": Grade("polite"),
            "How well did the agent acknowledge the user's frustration?": Grade("acknowledged it warmly"),
        }
        assert all(isinstance(usage, Usage) for outcome in kept for usage in outcome.judge_requests)
        simulated = [turn for outcome in kept for turn in outcome.transcript.turns if not turn.scripted]
        assert {turn.message for turn in simulated} == {"Hi, my order A-3100 has a problem.", "What can you do about it?"}
        assert all(isinstance(turn.user_usage, Usage) and turn.user_usage.input > 0 for turn in simulated)
        assert {
            outcome.scenario: len(outcome.transcript.turns)
            for outcome in kept
            if outcome.scenario in ("orders/impatient", "refunds/upset-customer")
        } == {"orders/impatient": 2, "refunds/upset-customer": 2}, "the user stopped after two turns"
    assistant = outcomes(runs["assistant"])
    calls = [step for outcome in assistant for turn in outcome.transcript.turns for step in turn.answer.steps]
    assert calls and all(isinstance(step, Call) and step.name == "lookup_order" for step in calls)
    assert all(
        isinstance(usage, Usage) for outcome in assistant for turn in outcome.transcript.turns for usage in turn.answer.requests()
    )
    accepted(standin)
    assert made.unwritten() >= 4


# --- the smoke check --------------------------------------------------------------------------


def test_smoke_on_the_gateway_shows_each_answer_and_asks_each_model_once(made: Made, standin: StandIn, roles: Roles) -> None:
    """``convy run assistant --smoke`` shows each answer's time, tokens and first line, says the connection works,
    asks the simulated user's and the judge's model one short question each and says each answers, exits 0, and
    writes no results/."""
    made.gateway(standin.url + "/v1")

    ran = made.ran("run", "assistant", "--smoke")

    assert ran.returncode == 0, ran.stdout + ran.stderr
    answers = [line for line in ran.stdout.splitlines() if re.match(r"\s+\d\s", line)]
    assert len(answers) == 3, ran.stdout
    for number, line in enumerate(answers, start=1):
        assert re.fullmatch(rf"\s+{number}\s+\d+\.\d\d s\s+\d+ → \d+ tokens\s+I looked it up: .+", line), line
    assert "✓ assistant: connection works" in ran.stdout
    assert re.search(r"^✓ the simulated user's model user-model: answers \(\d+\.\d\d s\): OK$", ran.stdout, re.MULTILINE)
    assert re.search(r"^✓ the judge's model judge-model: answers \(\d+\.\d\d s\): OK$", ran.stdout, re.MULTILINE)
    assert ran.stderr == ""
    assert not (made.folder / "results").exists()
    assert roles.seen == Counter({"agent": 6, "smoke user-model": 1, "smoke judge-model": 1}), "three turns, each a tool call and an answer"
    assert [request.json["model"] for request in standin.received if "tools" not in request.json] == ["user-model", "judge-model"]
    accepted(standin)


@pytest.mark.parametrize("where", ["a stopped stand-in", "a closed port"])
def test_smoke_against_a_gateway_that_is_not_there_exits_1_saying_why(made: Made, where: str) -> None:
    """With nothing listening at GATEWAY_URL, ``--smoke`` says it could not connect and exits 1, no traceback."""
    if where == "a stopped stand-in":
        with StandIn(api_key=KEY) as gone:
            url = gone.url + "/v1"
    else:
        url = "http://127.0.0.1:1/v1"
    made.gateway(url)

    ran = made.ran("run", "assistant", "--smoke")

    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert re.search(r"^✗ assistant: .*could not connect", ran.stderr, re.MULTILINE), ran.stderr
    assert "connection works" not in ran.stdout
    assert not (made.folder / "results").exists()


def test_without_a_gateway_the_assistant_is_absent_for_smoke_run_and_named_run(made: Made) -> None:
    """With no .env, ``--smoke`` of the assistant says it is absent (exit 1), naming it exits 2, and a plain run
    skips it with the reason and plays shop."""
    smoke = made.ran("run", "assistant", "--smoke")
    assert smoke.returncode == 1, smoke.stdout + smoke.stderr
    assert "✗ assistant: the agent is absent: set GATEWAY_URL, GATEWAY_KEY and AGENT_MODEL" in smoke.stderr

    named = made.ran("run", "assistant")
    assert named.returncode == 2, named.stdout + named.stderr
    assert named.stderr.startswith("convy: agents/assistant.py: the agent is absent: set GATEWAY_URL")
    assert not (made.folder / "results").exists()

    plain = made.ran("run", "-k", "1")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "- skipped agent assistant: set GATEWAY_URL, GATEWAY_KEY and AGENT_MODEL in .env" in plain.stdout
    assert "shop: 6 scenarios × 1 attempt" in plain.stdout
    assert set(made.runs()) == {"shop"}


# --- settings errors --------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["environment", ".env"])
def test_a_bad_convy_setting_names_the_field_never_its_value(made: Made, standin: StandIn, where: str) -> None:
    """CONVY_AGENT_PLACES=notanumber-SECRETVALUE exits 2 naming agent_places, without the value, sending nothing."""
    made.gateway(standin.url + "/v1")
    extra = {"CONVY_AGENT_PLACES": "notanumber-SECRETVALUE"} if where == "environment" else {}
    if where == ".env":
        with (made.folder / ".env").open("a") as env:
            env.write("CONVY_AGENT_PLACES=notanumber-SECRETVALUE\n")

    ran = made.ran("run", **extra)

    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "agent_places" in ran.stderr
    assert "SECRETVALUE" not in ran.stdout + ran.stderr
    assert standin.received == []
    assert not (made.folder / "results").exists()


SETTINGS = '''

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from convy import Env


class Billing(Env):
    billing_key: SecretStr
    billing_retries: int = 1


class Plain(BaseSettings):  # pydantic's own, which repeats a bad value in its message
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    billing_key: SecretStr
    billing_retries: int = 1


billing = {settings}()
'''


@pytest.mark.parametrize(
    ("settings", "given", "named"),
    [
        ("Billing", "", "billing_key: Field required"),
        ("Billing", "BILLING_KEY=sk-live-BILLING-456\nBILLING_RETRIES=sk-live-RETRIES-789\n", "billing_retries: Input"),
        ("Plain", "BILLING_KEY=sk-live-BILLING-456\nBILLING_RETRIES=sk-live-RETRIES-789\n", "billing_retries: Input"),
        ("Plain", "BILLING_RETRIES=sk-live-RETRIES-789\n", "billing_key: Field required"),
    ],
)
def test_a_bad_setting_of_the_project_names_the_field_never_its_value(
    made: Made, standin: StandIn, settings: str, given: str, named: str
) -> None:
    """Settings in models.py that cannot be read (a key missing, a bad int) exit 2 naming the field, showing no value."""
    made.gateway(standin.url + "/v1")
    with (made.folder / ".env").open("a") as env:
        env.write(given)
    with (made.folder / "models.py").open("a") as models:
        models.write(SETTINGS.format(settings=settings))

    for arguments in (("run",), ("run", "assistant", "--smoke")):
        ran = made.ran(*arguments)
        said = ran.stdout + ran.stderr
        assert ran.returncode == 2, said
        assert f"convy: loading agents/assistant.py or models.py failed: {settings}: {named}" in ran.stderr
        for value in ("sk-live-BILLING-456", "sk-live-RETRIES-789", "input_value"):
            assert value not in said, f"{arguments}: {said}"
    assert standin.received == []
    assert not (made.folder / "results").exists()


# --- resume -----------------------------------------------------------------------------------


def test_resume_refuses_when_the_user_model_changed_since_the_run(made: Made, standin: StandIn, roles: Roles) -> None:
    """A run killed part way is not resumed once USER_MODEL changed (exit 2, both names said, nothing played);
    with the old name back it resumes to the end, and neither writes the key."""
    made.gateway(standin.url + "/v1")
    roles.held.set()  # the user's and judge's requests wait: the run cannot end before it is killed
    process = made.started("run", "shop", "-k", "1")
    asked = wait_until(lambda: made.runs() and (roles.seen["user"] or roles.seen["judge"]), "the run to ask a model", process=process)
    assert asked, made.shown()
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=DEADLINE) == -signal.SIGKILL
    roles.held.clear()
    assert KEY not in made.shown()
    folder = made.runs()["shop"]
    kept = data(folder)
    asked = len(standin.received)

    made.gateway(standin.url + "/v1", user_model="another-user-model")
    refused = made.ran("resume", folder.name)

    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert (
        f"convy: cannot resume {folder.name}: the models are now another-user-model and judge-model, "
        "the run was started with user-model and judge-model"
    ) in refused.stderr
    assert refused.stdout == ""
    assert len(standin.received) == asked, "a refused resume sends nothing"
    assert data(folder) == kept

    made.gateway(standin.url + "/v1")
    resumed = made.ran("resume", folder.name)

    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert {outcome.scenario for outcome in outcomes(folder)} == SCENARIOS
    assert not [outcome for outcome in outcomes(folder) if isinstance(outcome.result, NoVerdict)]
    accepted(standin, since=asked)
    assert made.unwritten() >= 3
