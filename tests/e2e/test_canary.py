"""The canary-key sweep: recognisable keys driven through every error path of the real ``convy`` command.

Three canaries, each reaching convy by another road: the gateway's key in ``.env`` (GATEWAY_KEY, which the
models and the assistant agent send), the key of a JSON agent written into its file (its URL's query and two
headers: only the agent object holds it), and a key an ``Env`` reads into a ``SecretStr`` under a name that
does not say it is secret (SHOP_ACCESS), which an agent puts into its own exception. Two stand-ins serve them;
their ``Echo`` faults send error bodies that repeat the request, with the key at every offset around the cut
at 300 characters, as text and JSON-escaped, and cut short by the server itself. Then stdout and stderr of
every command, every file under ``results/`` (the pages' gzipped chunks inflated) and the exports (tables and traces) are
scanned for each canary and for every piece of eight characters of one.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import os
import re
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.process import run_convy
from support.standin import Echo, Stall, StandIn, Status

DEADLINE = 300.0  # seconds a command may take before the test gives up: far more than any needs
GATEWAY_KEY = "sk-canary-" + secrets.token_hex(16)
AGENT_KEY = "sk-canary-" + secrets.token_hex(16)
ACCESS = "ca-" + secrets.token_hex(12)
CANARIES = (GATEWAY_KEY, AGENT_KEY, ACCESS)
REQUEST_LINE = len("POST /agent?key=")  # where the key starts in an echo of the agent's request

ECHO_AGENT = """
from convy import JsonAgent, JsonEndpoint, TokenPaths

KEY = "{key}"
agent = JsonAgent(
    JsonEndpoint("{url}/agent?key=" + KEY + "&v=1", {{"authorization": "Bearer " + KEY, "x-api-key": KEY}}),
    reply="output.text",
    tokens=TokenPaths(input="usage.in", output="usage.out"),
)
"""

RAISING_AGENT = """
from contextlib import asynccontextmanager

from pydantic import SecretStr

from convy import Env


class Shop(Env):
    shop_access: SecretStr


class Conversation:
    def __init__(self, access: str) -> None:
        self._access = access

    async def turn(self, message):
        raise PermissionError(f"the shop refused access {{self._access!r}} for {{message.text!r}}")


class Raising:
    def __init__(self) -> None:
        self._access = Shop().shop_access.get_secret_value()

    @asynccontextmanager
    async def conversation(self):
        yield Conversation(self._access)


agent = Raising()
"""

BROKEN_AGENT = """
from pathlib import Path

raise RuntimeError("cannot start with these settings: " + Path(".env").read_text())
"""

VALIDATED_AGENT = """
from pydantic import field_validator

from convy import Env


class Checked(Env):
    gateway_key: str

    @field_validator("gateway_key")
    @classmethod
    def refused(cls, value: str) -> str:
        raise ValueError(f"not a key we know: {{value}}")


settings = Checked()
agent = None
"""

SCRIPTED = "script:\n  - Hello, is my key fine?\njudge:\n  - check: {said: '.'}\n"
SIMULATED = "user: You ask about your order A-2001.\nmax_turns: 2\njudge:\n  - check: {said: '.'}\n"
JUDGED = "script:\n  - Hello!\njudge:\n  - The agent greets the user.\n"


class Project:
    """A project made by ``convy init`` with the canaries in place, and every output of ``convy`` kept."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.said: list[str] = []

    def ran(self, *arguments: str) -> subprocess.CompletedProcess[str]:
        kept = {name: value for name, value in os.environ.items() if not name.startswith(("CONVY_", "GATEWAY_"))}
        done = run_convy(self.folder, *arguments, env={**kept, "COLUMNS": "200"}, timeout=DEADLINE)
        self.said.append(f"$ convy {' '.join(arguments)}\n{done.stdout}{done.stderr}")
        assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
        return done

    def kept(self) -> dict[str, str]:
        """Every file under results/ as text, each packed chunk of a page inflated into a text of its own."""
        texts: dict[str, str] = {}
        for path in sorted((self.folder / "results").rglob("*")):
            if not path.is_file():
                continue
            name = str(path.relative_to(self.folder))
            text = path.read_bytes().decode("utf-8", "replace")
            texts[name] = text
            if path.suffix == ".html":
                for number, packed in enumerate(re.findall(r'"([A-Za-z0-9+/]{40,}={0,2})"', text)):
                    try:
                        texts[f"{name} chunk {number}"] = gzip.decompress(base64.b64decode(packed)).decode("utf-8")
                    except (binascii.Error, OSError, EOFError):
                        continue
        return texts


def leaks(text: str) -> list[str]:
    """Each canary, or piece of eight characters of one, found in ``text`` (JSON escapes read too)."""
    found: list[str] = []
    for canary in CANARIES:
        for start in range(len(canary) - 7):
            piece = canary[start : start + 8]
            if piece in text or piece in text.replace("\\u002d", "-").replace("\\/", "/"):
                found.append(piece)
    return found


@pytest.fixture
def gateway() -> Iterator[StandIn]:
    """The gateway of the project's models and of its assistant agent, which wants the gateway's canary."""
    with StandIn(api_key=GATEWAY_KEY) as server:
        yield server


@pytest.fixture
def service() -> Iterator[StandIn]:
    """The JSON agent's own service, which wants the agent's canary."""
    with StandIn(api_key=AGENT_KEY) as server:
        yield server


@pytest.fixture
def project(tmp_path: Path, gateway: StandIn, service: StandIn) -> Project:
    folder = tmp_path / "project"
    folder.mkdir()
    made = Project(folder)
    assert made.ran("init").returncode == 0
    (folder / ".env").write_text(
        f"GATEWAY_URL={gateway.url}/v1\nGATEWAY_KEY={GATEWAY_KEY}\nUSER_MODEL=user-model\n"
        f"JUDGE_MODEL=judge-model\nAGENT_MODEL=agent-model\nSHOP_ACCESS={ACCESS}\n"
    )
    agents = folder / "agents"
    (agents / "echo.py").write_text(ECHO_AGENT.format(key=AGENT_KEY, url=service.url))
    (agents / "raising.py").write_text(RAISING_AGENT.format())
    (folder / "scenarios" / "canary").mkdir()
    for name, text in (("scripted", SCRIPTED), ("simulated", SIMULATED), ("judged", JUDGED)):
        (folder / "scenarios" / "canary" / f"{name}.yaml").write_text(text)
    return made


def echoes(code: int, pads: range, **given: object) -> list[Echo]:
    return [Echo(code, pad, **given) for pad in pads]  # type: ignore[arg-type]


def test_no_canary_reaches_any_output_file_page_or_export(project: Project, gateway: StandIn, service: StandIn) -> None:
    """Whatever error path a key takes — an echoed error body at any offset around the cut, an echoed query, an
    agent's exception, a model's error, --smoke, a settings error — no canary nor any eight characters of one
    is printed or written: not on stdout or stderr, in attempts.jsonl, run.json, the pages or the exports."""
    # The JSON agent: echoed bodies putting its key across the cut at 300 characters, at every offset.
    straddling = range(300 - REQUEST_LINE - len(AGENT_KEY), 300 - REQUEST_LINE + 2)
    faults = (
        echoes(400, straddling)
        + echoes(401, range(0, 300, 37))
        + echoes(500, straddling, as_json=True)
        + echoes(502, range(0, 40, 8), cut=REQUEST_LINE + 20)
        + [Status(500, body=f"bad query key={AGENT_KEY}&v=1"), Status(400, body={"error": {"echo": AGENT_KEY}})]
    )
    # The agent answers first (a Stall of no time is an ordinary answer): an agent that never answered
    # would stop the run at its third 401 (vital.py), before the sweep is through.
    faults = [Stall(0), *faults]
    service.faults(*faults)
    ran = project.ran("run", "echo", "--scenarios", "canary/scripted", "-k", str(len(faults)))
    assert ran.returncode == 1
    assert service.pending == [] and len(service.received) == len(faults)
    assert "<hidden>" in ran.stdout

    # The models: the simulated user's and the judge's requests answered by echoes of the gateway's key, once
    # each model has answered (a model that never answered would stop the run at its third 401).
    heard: set[str] = set()

    def first_answers(request: dict[str, Any]) -> str:
        heard.add(request["model"])
        if heard == {"user-model", "judge-model"} and not gateway.pending and len(heard) < 3:
            heard.add("faulted")
            gateway.faults(*echoes(401, range(0, 300, 30), path="/v1/chat/completions"))
            gateway.faults(*echoes(400, range(230, 300, 7), as_json=True, path="/v1/chat/completions"))
        return "Fine."

    gateway.reply = first_answers
    ran = project.ran("run", "shop", "--scenarios", "canary/simulated", "canary/judged", "-k", "20")
    assert ran.returncode == 5  # the models failed, so the attempts were not judged
    assert "faulted" in heard and gateway.pending == []
    gateway.reply = None

    # The assistant agent on the gateway, failing in a run and in --smoke; the raising agent; the JSON agent's
    # --smoke.
    gateway.faults(*echoes(500, range(250, 300, 10), path="/v1/chat/completions"))
    project.ran("run", "assistant", "--scenarios", "canary/scripted", "-k", "5")
    gateway.faults(Echo(401, 280, path="/v1/chat/completions"))
    assert project.ran("run", "assistant", "--smoke").returncode == 1
    assert project.ran("run", "raising", "--scenarios", "canary/scripted", "-k", "2").returncode == 1
    assert project.ran("run", "raising", "--smoke").returncode == 1
    service.faults(Echo(400, 270))
    assert project.ran("run", "echo", "--smoke").returncode == 1

    # Settings errors: an agent that fails while loading, and an Env whose validator repeats the value.
    (project.folder / "agents" / "broken.py").write_text(BROKEN_AGENT)
    assert project.ran("run", "broken").returncode == 2
    (project.folder / "agents" / "broken.py").unlink()
    (project.folder / "agents" / "validated.py").write_text(VALIDATED_AGENT.format())
    assert project.ran("run", "validated").returncode == 2
    assert project.ran("run", "validated", "--smoke").returncode == 2
    (project.folder / "agents" / "validated.py").unlink()

    service.faults(Stall(0), Echo(403, 290), Echo(403, 10, as_json=True))
    assert project.ran("run", "echo", "--scenarios", "canary/scripted", "-k", "3").returncode == 1
    echo_runs = sorted(path.name for path in (project.folder / "results" / "echo").iterdir())
    assert project.ran("compare", *echo_runs).returncode == 0
    assert project.ran("report").returncode == 0
    assert project.ran("export", "--format", "csv").returncode == 0
    assert project.ran("export", "--format", "jsonl").returncode == 0
    assert project.ran("export", "--format", "otlp").returncode == 0  # the traces, the dialogues' words in them

    # The keys did reach the services: the sweep tested something.
    assert all(request.query == f"key={AGENT_KEY}&v=1" for request in service.received)
    assert all(request.refused is None for request in service.received + gateway.received)
    kept = project.kept()
    assert any(name.endswith("attempts.jsonl") for name in kept)
    assert any(" chunk " in name for name in kept), "the pages' dialogues were inflated and scanned"
    assert any(name.startswith("results/compare/") for name in kept)
    assert any(name.endswith(".csv") for name in kept) and any(name.endswith(".jsonl") and "export" in name for name in kept)
    assert any(name.endswith("otlp-traces.jsonl") for name in kept) and any(name.endswith("otlp-logs.jsonl") for name in kept)
    every = "\n".join(project.said)
    assert "<hidden>" in "".join(kept.values())
    for name, text in {"the commands' output": every, **kept}.items():
        shown = "\n".join(line for line in text.splitlines() if leaks(line))
        assert not leaks(text), f"{name} shows {leaks(text)[:3]} in:\n{shown[:3000]}"


def test_the_sweep_finds_a_canary_where_one_is(project: Project) -> None:
    """The scan itself sees a canary in a file and in a page's gzipped chunk, and a piece of one cut short."""
    folder = project.folder / "results" / "probe"
    folder.mkdir(parents=True)
    packed = base64.b64encode(gzip.compress(json.dumps({"said": "x" + AGENT_KEY[5:20]}).encode())).decode()
    (folder / "report.html").write_text(f'<script type="application/json" id="d-0">"{packed}"</script>')
    kept = project.kept()
    assert leaks(kept["results/probe/report.html chunk 0"])
    assert not leaks(kept["results/probe/report.html"])
