"""The template's gateway as a user sets it up: the real ``convy`` command against the stand-in.

Each test makes a project with ``convy init`` and sets the gateway as a user would — in ``.env``,
or with the OpenAI SDK's variables in the environment — and the stand-in, which records every
request with its headers, says what reached it. No variable of the machine's own environment that
names a gateway reaches the project.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.process import run_convy
from support.standin import REDACTED, StandIn
from test_services_cli import DEADLINE, KEY, Roles

from convy import OpenAiModel, Said

SETTINGS = (
    "GATEWAY_URL", "GATEWAY_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY", "USER_MODEL", "JUDGE_MODEL", "AGENT_MODEL",
    "USER_EFFORT", "JUDGE_EFFORT", "AGENT_EFFORT", "GATEWAY_STREAM", "GATEWAY_PROVIDER",
)
MODELS = "USER_MODEL=user-model\nJUDGE_MODEL=judge-model\nAGENT_MODEL=agent-model\n"


class Folder:
    """A project made by ``convy init``, where ``convy`` runs with only the variables a test gives."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def env(self, text: str) -> None:
        (self.path / ".env").write_text(text, encoding="utf-8")

    def ran(self, *arguments: str, **variables: str) -> subprocess.CompletedProcess[str]:
        """``convy`` run to its end; what it shows holds neither the key nor a traceback."""
        kept = {name: value for name, value in os.environ.items() if not name.startswith("CONVY_") and name not in SETTINGS}
        done = run_convy(self.path, *arguments, env={**kept, **variables}, timeout=DEADLINE)
        said = done.stdout + done.stderr
        assert KEY not in said and "Traceback" not in said, said
        return done


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    made = Folder(tmp_path / "project")
    made.path.mkdir()
    assert made.ran("init").returncode == 0
    return made


@pytest.fixture
def roles() -> Roles:
    return Roles()


@pytest.fixture
def keyed(roles: Roles) -> Iterator[StandIn]:
    """A gateway that answers only requests that bear the test's key."""
    with StandIn(reply=roles, api_key=KEY) as server:
        yield server
        assert server.errors == []


@pytest.fixture
def local(roles: Roles) -> Iterator[StandIn]:
    """A server on this machine that asks for no key, as Ollama, vLLM and llama.cpp do by default."""
    with StandIn(reply=roles) as server:
        yield server
        assert server.errors == []


def test_the_openai_sdk_variables_alone_are_the_gateway(folder: Folder, keyed: StandIn, roles: Roles) -> None:
    """With no GATEWAY_URL or GATEWAY_KEY, OPENAI_BASE_URL and OPENAI_API_KEY from the environment make the
    gateway of all three models: a whole run is played, judged and simulated, every request with the key."""
    folder.env(MODELS)

    ran = folder.ran("run", "-k", "1", OPENAI_BASE_URL=keyed.url + "/v1", OPENAI_API_KEY=KEY)

    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "skipped" not in ran.stdout
    assert set(roles.seen) == {"agent", "user", "judge"}
    assert keyed.received
    for request in keyed.received:
        assert request.headers["authorization"] == REDACTED and request.status == 200, (request.path, request.refused)


def test_gateway_settings_come_before_the_openai_sdk_variables(folder: Folder, keyed: StandIn, local: StandIn) -> None:
    """GATEWAY_URL and GATEWAY_KEY in .env win over OPENAI_BASE_URL and OPENAI_API_KEY in the environment."""
    folder.env(f"GATEWAY_URL={keyed.url}/v1\nGATEWAY_KEY={KEY}\n{MODELS}")

    ran = folder.ran("run", "assistant", "--smoke", OPENAI_BASE_URL=local.url + "/v1", OPENAI_API_KEY="sk-other-0000")

    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert keyed.received and local.received == []


def test_the_openai_key_never_goes_to_another_gateway(folder: Folder, local: StandIn) -> None:
    """OPENAI_API_KEY is sent only to OPENAI_BASE_URL (or OpenAI's server): a GATEWAY_URL elsewhere with no
    GATEWAY_KEY gets no key at all."""
    folder.env(f"GATEWAY_URL={local.url}/v1\n{MODELS}")

    ran = folder.ran("run", "assistant", "--smoke", OPENAI_API_KEY=KEY)

    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert local.received
    assert all("authorization" not in request.headers for request in local.received)


def test_a_local_server_works_with_no_key_and_is_sent_none(folder: Folder, local: StandIn, roles: Roles) -> None:
    """With GATEWAY_URL on this machine and no key anywhere, every model is there, the whole run plays, and no
    request carries an Authorization header (not even an empty one)."""
    folder.env(f"GATEWAY_URL={local.url}/v1\nGATEWAY_KEY=\n{MODELS}")

    ran = folder.ran("run", "-k", "1")

    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "skipped" not in ran.stdout
    assert set(roles.seen) == {"agent", "user", "judge"}
    assert local.received
    assert all("authorization" not in request.headers for request in local.received)


def test_only_a_model_name_missing_says_just_that(folder: Folder, local: StandIn) -> None:
    """With the server set and AGENT_MODEL empty, the assistant is skipped saying only AGENT_MODEL is missing."""
    folder.env(f"GATEWAY_URL={local.url}/v1\nUSER_MODEL=user-model\nJUDGE_MODEL=judge-model\nAGENT_MODEL=\n")

    ran = folder.ran("run", "-k", "1")

    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "- skipped agent assistant: set AGENT_MODEL in .env (see .env.example)" in ran.stdout


@pytest.mark.parametrize(
    ("provider", "effort"),
    [
        ("", lambda body: body["reasoning_effort"]),
        ("openrouter", lambda body: body["reasoning"]["effort"]),
    ],
    ids=["compatible", "openrouter"],
)
def test_streaming_effort_and_provider_from_env_reach_each_request(
    folder: Folder, local: StandIn, roles: Roles, provider: str, effort: object
) -> None:
    """GATEWAY_STREAM, GATEWAY_PROVIDER and each part's effort set in .env are in the body of every request of
    that part — the agent's tool-calling turns too, whose streamed call keeps its id — and the run plays whole."""
    folder.env(
        f"GATEWAY_URL={local.url}/v1\n{MODELS}GATEWAY_STREAM=true\nGATEWAY_PROVIDER={provider}\n"
        "USER_EFFORT=low\nJUDGE_EFFORT=high\nAGENT_EFFORT=medium\n"
    )

    ran = folder.ran("run", "-k", "1")

    assert ran.returncode == 0, ran.stdout + ran.stderr
    wanted = {"user-model": "low", "judge-model": "high", "agent-model": "medium"}
    bodies = [request.json for request in local.received]
    assert {body["model"] for body in bodies} == set(wanted)
    for body in bodies:
        assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
        assert effort(body) == wanted[body["model"]]  # type: ignore[operator]
        assert ("usage" in body) == (provider == "openrouter")
    sent_back = [message for body in bodies for message in body["messages"] if message["role"] == "tool"]
    assert sent_back and all(message["tool_call_id"] == "call_standin1" for message in sent_back)


def test_a_bad_effort_in_env_names_the_setting_and_sends_nothing(folder: Folder, local: StandIn) -> None:
    """JUDGE_EFFORT=extreme exits 2 naming judge_effort, before any request."""
    folder.env(f"GATEWAY_URL={local.url}/v1\n{MODELS}JUDGE_EFFORT=extreme\n")

    ran = folder.ran("run", "-k", "1")

    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "judge_effort" in ran.stderr and "extreme" not in ran.stderr
    assert local.received == []


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("https://openrouter.ai/api/v1", "openrouter"),
        ("HTTPS://OpenRouter.AI/api/v1", "openrouter"),
        ("https://API.OpenAI.com/v1", "openai"),
        ("http://127.0.0.1:8000/v1/openrouter.ai", "compatible"),
        ("http://localhost:11434/v1", "compatible"),
    ],
)
def test_the_provider_is_told_from_the_url_host_in_any_case(url: str, kind: str) -> None:
    """The provider comes from the URL's host whatever its case, and a path that names a provider does not count."""
    model = OpenAiModel("m", url, effort="low", max_tokens=5)
    assert model.kind() == kind
    body = model.body((Said("user", "hi"),))
    assert ("reasoning" in body, "max_completion_tokens" in body) == (kind == "openrouter", kind == "openai")


@pytest.mark.parametrize(
    ("given", "url", "key"),
    [
        ({"OPENAI_API_KEY": "sk-o"}, "https://api.openai.com/v1", "sk-o"),
        ({"OPENAI_API_KEY": "sk-o", "OPENAI_BASE_URL": "http://127.0.0.1:4000/v1"}, "http://127.0.0.1:4000/v1", "sk-o"),
        ({"OPENAI_API_KEY": "sk-o", "GATEWAY_URL": "http://127.0.0.1:11434/v1"}, "http://127.0.0.1:11434/v1", None),
        ({"OPENAI_API_KEY": "sk-o", "GATEWAY_URL": "https://api.openai.com/v1/"}, "https://api.openai.com/v1/", "sk-o"),
        ({"OPENAI_API_KEY": "sk-o", "GATEWAY_URL": "https://openrouter.ai/api/v1", "GATEWAY_KEY": "sk-g"}, "https://openrouter.ai/api/v1", "sk-g"),
        ({"GATEWAY_URL": "http://127.0.0.1:8000/v1", "GATEWAY_KEY": ""}, "http://127.0.0.1:8000/v1", None),
    ],
    ids=["openai-key-only", "openai-url-and-key", "other-gateway", "gateway-is-openai", "gateway-key-wins", "local-no-key"],
)
def test_the_gateway_pairs_each_key_with_its_own_server(
    given: dict[str, str], url: str, key: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each model is on the server the settings name, with the key meant for that server or none."""
    from test_template_agent import TEMPLATE, loaded

    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    for name, value in given.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)  # no .env here
    monkeypatch.setenv("USER_MODEL", "m")
    model = loaded(TEMPLATE / "gateway_settings.py", "template_gateway_settings").GatewaySettings().model("user")
    assert isinstance(model, OpenAiModel)
    assert model.base_url == url
    assert (model.key.get_secret_value() if model.key is not None else None) == key
