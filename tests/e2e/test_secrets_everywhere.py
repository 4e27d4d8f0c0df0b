"""Every secret the project knows hidden in every run a command writes (issue 26, item 13): a token in
a URL's path, an agent's key echoed by another agent, a URL of .env, and the runs of convy run,
resume and rejudge, in every file they write and on the terminal. And secrets.py stays a leaf."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from support.standin import StandIn, Status

from convy.http import JsonEndpoint
from convy.secrets import HIDDEN, Secrets

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
BETA_KEY = "beta-Zq81rT5uVw3xYk9LmN2p"
HOOK = "https://hooks.slack.com/services/T0AAAA/B0BBBB/aB3dEfGh1jKlMn0pQrStUvWx"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"https://api.telegram.org/bot{TOKEN}/sendMessage", f"https://api.telegram.org/bot{HIDDEN}/sendMessage"),
        (HOOK, f"https://hooks.slack.com/services/T0AAAA/B0BBBB/{HIDDEN}"),
        (
            "https://discord.com/api/webhooks/123456789012345678/AbCdEfGhIjKlMnOpQrStUvWxYz0907-abcdEFGH_ijkl",
            f"https://discord.com/api/webhooks/123456789012345678/{HIDDEN}",
        ),
        ("https://x.example/hook/0123456789abcdef0123456789abcdef", f"https://x.example/hook/{HIDDEN}"),
    ],
)
def test_a_token_in_a_urls_path_is_a_secret(url: str, shown: str) -> None:
    from convy.secrets import Address  # here, as in the tests below: main has none, and fails each test alone

    assert Address(url).shown() == shown
    assert JsonEndpoint(url).shown() == shown
    token = url.rstrip("/").rsplit("/", 2)[-2 if "telegram" in url else -1].removeprefix("bot")
    assert JsonEndpoint(url).secrets().hidden(f"POST {url}: 500") == f"POST {shown}: 500"
    assert token not in JsonEndpoint(url).secrets().hidden(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://x.example/models/meta-llama/Llama-3-70B-Instruct-Turbo",
        "https://x.example/openai/deployments/gpt-4o-mini-2024-07-18/chat",
        "https://x.example/sessions/123e4567-e89b-12d3-a456-426614174000",
        "https://x.example/api/v1/conversations/messages",
    ],
)
def test_names_versions_and_uuids_in_a_path_are_no_tokens(url: str) -> None:
    from convy.secrets import Address

    assert Address(url).tokens() == ()
    assert Address(url).shown() == url


def test_the_query_and_password_stay_hidden_as_before() -> None:
    from convy.secrets import Address

    secrets = Address("http://user:pa55word-long@h.example/x?key=abcdefghij&api-version=2024-10-21").secrets()
    assert secrets.hidden("pa55word-long abcdefghij 2024-10-21") == f"{HIDDEN} {HIDDEN} 2024-10-21"


def test_a_url_of_the_environment_gives_its_secrets_whatever_its_name(tmp_path: Path) -> None:
    from convy.holders import Environment

    (tmp_path / ".env").write_text(f"NOTIFY_URL={HOOK}\nMODEL_NAME=gpt-4o-mini-2024-07-18\n")
    hidden = Environment(tmp_path).secrets().hidden(f"posted to {HOOK} with gpt-4o-mini-2024-07-18")
    assert "aB3dEfGh1jKlMn0pQrStUvWx" not in hidden
    assert "gpt-4o-mini-2024-07-18" in hidden  # a setting that is no secret is not blotted


def test_secrets_py_imports_nothing_of_convy() -> None:
    """secrets.py is a leaf: everything that holds a secret imports it, so it may import none of them
    (main: it imported convy.env and convy.model, which tied 19 modules into one import cycle)."""
    import convy.secrets

    tree = ast.parse(Path(convy.secrets.__file__).read_text(encoding="utf-8"))
    imported = [
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert [name for name in imported if name and name.startswith("convy")] == []


# --- the runs convy writes ------------------------------------------------------------------------

MODELS = "from convy.fakes import FakeJudge\nfrom convy import Models\nmodels = Models(judge=FakeJudge(lambda claim, transcript: True))\n"
ALPHA = f"""
from contextlib import asynccontextmanager
from convy import Answer


class C:
    async def turn(self, message):
        return Answer("the answer; by the way beta uses {BETA_KEY} and posts to {HOOK}")


class A:
    @asynccontextmanager
    async def conversation(self):
        yield C()


agent = A()
"""


def project(folder: Path, agents: dict[str, str]) -> Path:
    (folder / "agents").mkdir(parents=True)
    (folder / "scenarios").mkdir()
    for name, text in agents.items():
        (folder / "agents" / f"{name}.py").write_text(text)
    (folder / "models.py").write_text(MODELS)
    (folder / "scenarios" / "hello.yaml").write_text("script:\n  - Hello there\njudge:\n  - the agent answers\n")
    (folder / "pyproject.toml").write_text("[tool.convy]\nattempts = 2\n")
    return folder


def convy(folder: Path, *arguments: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "convy", *arguments],
        cwd=folder, capture_output=True, text=True, timeout=300, env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode in (0, 1, 3), done.stdout + done.stderr
    return done.stdout + done.stderr


def holding(folder: Path, *secrets: str) -> list[str]:
    """What convy wrote in ``folder`` (its results, pages, tables, JUnit and summaries) that holds any of ``secrets``."""
    written = [*folder.glob("results/**/*"), *folder.glob("*.xml"), *folder.glob("*.md")]
    return sorted(
        str(path.relative_to(folder))
        for path in written
        if path.is_file() and any(secret in path.read_text(errors="replace") for secret in secrets)
    )


def test_a_token_in_the_agents_url_path_is_hidden_in_every_file_and_line(tmp_path: Path) -> None:
    with StandIn() as server:
        agent = f"from convy import JsonAgent, JsonEndpoint\nagent = JsonAgent(JsonEndpoint({server.url + '/agent/bot' + TOKEN + '/chat'!r}))\n"
        folder = project(tmp_path / "p", {"bot": agent})
        server.faults(Status(500), Status(500))  # its error names the URL
        said = convy(folder, "run", "bot", "--junit", "junit.xml", "--summary", "summary.md")
    assert f"/agent/bot{HIDDEN}/chat" in said
    assert TOKEN not in said
    convy(folder, "export")
    assert holding(folder, TOKEN, TOKEN.split(":")[1]) == []
    assert len(holding(folder, "bot" + HIDDEN)) >= 2  # the error is kept, the token hidden from it


def test_an_agents_key_echoed_by_another_agent_is_hidden_in_every_run_a_command_writes(tmp_path: Path) -> None:
    """alpha echoes beta's key and a webhook URL of .env: hidden from alpha's run, its resume, its
    re-judge and everything made from them (main: kept in full in alpha's attempts and tables)."""
    with StandIn() as server:
        beta = f"from convy import JsonAgent, JsonEndpoint\nagent = JsonAgent(JsonEndpoint({server.url + '/agent'!r}, {{'x-api-key': {BETA_KEY!r}}}))\n"
        folder = project(tmp_path / "p", {"alpha": ALPHA, "beta": beta})
        (folder / ".env").write_text(f"NOTIFY_URL={HOOK}\n")
        hook_token = HOOK.rsplit("/", 1)[1]
        said = convy(folder, "run", "alpha", "--junit", "junit.xml", "--summary", "summary.md")
        assert BETA_KEY not in said
        run = next((folder / "results" / "alpha").iterdir())
        assert "beta uses <hidden>" in (run / "attempts.jsonl").read_text()

        # resume: the run made unfinished, its attempts gone, played again
        kept = json.loads((run / "run.json").read_text())
        kept["status"] = {"type": "interrupted", "started": kept["status"]["started"], "ended": kept["status"]["ended"]}
        (run / "run.json").write_text(json.dumps(kept))
        (run / "attempts.jsonl").write_text("")
        said += convy(folder, "resume", run.name, "--junit", "resumed.xml", "--summary", "resumed.md")
        assert len((run / "attempts.jsonl").read_text().splitlines()) == 2

        # rejudge: of a copy of the run whose lines hold the key, as one kept before the fix would
        copied = folder / "results" / "alpha" / (run.name[:-4] + "beef")
        shutil.copytree(run, copied)
        kept["spec"]["id"] = copied.name
        kept["status"] = json.loads((run / "run.json").read_text())["status"]
        (copied / "run.json").write_text(json.dumps(kept))
        lines = (copied / "attempts.jsonl").read_text().replace("beta uses <hidden>", f"beta uses {BETA_KEY}")
        (copied / "attempts.jsonl").write_text(lines)
        said += convy(folder, "rejudge", copied.name, "--junit", "rejudged.xml", "--summary", "rejudged.md")
        (copied / "attempts.jsonl").write_text(lines.replace(BETA_KEY, "<hidden>"))  # the planted copy is not convy's writing
        said += convy(folder, "report") + convy(folder, "export")
    assert BETA_KEY not in said and hook_token not in said
    assert len(list((folder / "results" / "alpha").iterdir())) == 3
    assert holding(folder, BETA_KEY, hook_token) == []


def test_secrets_add_without_repeats() -> None:
    assert (Secrets(("a" * 9,)) + Secrets(("a" * 9, "b" * 9))).values == ("a" * 9, "b" * 9)


def test_a_url_an_agent_of_its_own_keeps_as_text_gives_its_secrets() -> None:
    from convy.holders import Holders

    class Telegram:
        def __init__(self) -> None:
            self.url = f"https://api.telegram.org/bot{TOKEN}"

    assert TOKEN not in Holders((Telegram(),)).secrets().hidden(f"POST https://api.telegram.org/bot{TOKEN}/sendMessage")


def test_the_project_knows_the_keys_of_every_agent_and_of_the_judges_models_py_names(tmp_path: Path) -> None:
    """What a command hides in a run of alpha: beta's key (an agent not played) and the key of a
    judge named only for ``convy rejudge --judge``, besides alpha's and the models' own."""
    from convy.loaded import Loaded
    from convy.project import Project

    judge_key = "judge-key-Qw8Er7Ty6Ui5"
    folder = project(tmp_path / "p", {"alpha": ALPHA, "beta": f"from convy import JsonAgent\nagent = JsonAgent({'http://127.0.0.1:9/agent?key=' + BETA_KEY!r})\n"})
    (folder / "models.py").write_text(
        MODELS + f"from convy import ChatJudge, OpenAiModel\njudges = {{'other': ChatJudge(OpenAiModel('m', 'http://127.0.0.1:9/v1', key={judge_key!r}))}}\n"
    )
    loaded = Loaded(Project(folder), "alpha")
    agent, models = loaded.parts()
    hidden = loaded.secrets(agent, models).hidden(f"{BETA_KEY} {judge_key}")
    assert BETA_KEY not in hidden and judge_key not in hidden
    # a re-judge loads no agent to play, and hides them all the same
    assert BETA_KEY not in loaded.secrets(models.judge, models).hidden(BETA_KEY)


def test_a_run_of_every_agent_loads_each_agent_file_twice_at_most_and_still_hides_the_others_keys(tmp_path: Path) -> None:
    """Each agent's run needs the keys of every other agent of the project. A command that plays
    them all reads those once, not once for each agent played: main loaded every agent file again
    for each other agent's run (n x n imports of the project's code, with its side effects)."""
    loads = tmp_path / "loads.txt"
    noted = f"from pathlib import Path\nwith Path({str(loads)!r}).open('a') as file:\n    file.write(__name__.rsplit('.', 1)[-1] + '\\n')\n"
    with StandIn() as server:
        beta = noted + f"from convy import JsonAgent, JsonEndpoint\nagent = JsonAgent(JsonEndpoint({server.url + '/agent'!r}, {{'x-api-key': {BETA_KEY!r}}}))\n"
        folder = project(tmp_path / "p", {"alpha": noted + ALPHA, "beta": beta, "gamma": noted + ALPHA.replace("the answer", "gamma's answer")})
        said = convy(folder, "run")
    assert BETA_KEY not in said
    for name in ("alpha", "gamma"):
        assert "beta uses <hidden>" in next((folder / "results" / name).iterdir()).joinpath("attempts.jsonl").read_text()
    counted = Counter(loads.read_text().split())
    assert set(counted) == {"alpha", "beta", "gamma"}
    assert max(counted.values()) <= 2, counted  # played once, read once for the keys
    assert holding(folder, BETA_KEY) == []
