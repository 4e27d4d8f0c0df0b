"""Secrets hidden wherever outside text is kept or shown, and outside text inert on a terminal."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import pty
import re
import sys
import traceback
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import httpx2
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import SecretStr
from support.process import run_convy, start_convy
from support.standin import Echo, StandIn, Status

from convy import Env, JsonAgent, JsonEndpoint, Message, OpenAiModel
from convy.holders import Environment, Holders
from convy.http import HttpFailure
from convy.secrets import HIDDEN, Concealed, Secrets
from convy.terminal import Inert

KEY = "sk-live+Key/With=Signs\"and-more-0123456789"
PLAIN = "sk-plain-0123456789abcdefghij"
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b[6n\x9b31m\u202egnp.exe [bold]loud[/bold]"


def pieces(key: str) -> list[str]:
    return [key[start : start + 8] for start in range(len(key) - 7)]


def shows(text: str, key: str) -> list[str]:
    """The pieces of eight characters of ``key`` that ``text`` shows."""
    return [piece for piece in pieces(key) if piece in text]


# --- Secrets ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "form",
    [
        KEY,
        quote(KEY, safe=""),
        quote(KEY),
        quote_plus(KEY),
        quote(KEY, safe="").lower(),
        json.dumps(KEY)[1:-1],
        json.dumps(KEY).replace("/", "\\/")[1:-1],
        KEY[:20],
        KEY[-9:],
        KEY[11:19],
    ],
    ids=["raw", "quoted", "quoted-path", "quoted-plus", "lowercase-escapes", "json", "json-slash", "prefix", "suffix", "middle"],
)
def test_a_known_secret_is_hidden_in_every_encoding_and_every_piece(form: str) -> None:
    """A known secret echoed as written, percent-encoded, JSON-escaped, or only eight characters of it, is hidden."""
    text = f"error: the request was POST /v1?key={form} with it"
    hidden = Secrets((KEY,)).hidden(text)
    assert form not in hidden
    assert HIDDEN in hidden
    assert hidden.startswith("error: the request was POST /v1?key=")
    assert hidden.endswith(" with it")


def test_a_value_shorter_than_eight_characters_is_not_taken_for_a_secret() -> None:
    """Short values (a version, a flag) are left alone, so ordinary words are not blotted."""
    assert Secrets(("v1", "true", "1234567")).hidden("api v1 says true 1234567") == "api v1 says true 1234567"


def test_a_record_is_kept_with_every_text_hidden_its_keys_too() -> None:
    """``kept`` hides a secret in nested texts and in mapping keys, and returns a record of the same type."""
    answer = JsonAgent(JsonEndpoint("http://x/agent"), reply="text").answer({"text": f"my key is {PLAIN}"})
    kept = Secrets((PLAIN,)).kept(answer)
    assert type(kept) is type(answer)
    assert kept.text == f"my key is {HIDDEN}"
    assert Secrets((PLAIN,)).kept({PLAIN: [PLAIN[:10]]}) == {HIDDEN: [HIDDEN]}


def test_a_cause_holding_a_secret_stands_concealed_with_its_trace() -> None:
    """An error whose cause (or the cause's cause) holds a key is replaced by a ``Concealed`` with the same trace
    and the key hidden, so a traceback shows none of it; an error holding none is kept as it is."""
    secrets = Secrets((PLAIN,))
    try:
        try:
            raise ValueError(f"bad key {PLAIN}")
        except ValueError as inner:
            raise RuntimeError("the call failed") from inner
    except RuntimeError as error:
        caught = error
    stand_in = secrets.cause(caught)
    assert isinstance(stand_in, Concealed) and str(stand_in) == "RuntimeError: the call failed"
    assert stand_in.__traceback__ is caught.__traceback__
    assert isinstance(stand_in.__cause__, Concealed) and str(stand_in.__cause__) == f"ValueError: bad key {HIDDEN}"
    printed = "".join(traceback.format_exception(stand_in))
    assert not shows(printed, PLAIN) and "raise ValueError" in printed
    clean = OSError("no route")
    assert secrets.cause(clean) is clean


def test_secrets_never_show_in_their_own_repr() -> None:
    """A ``Secrets`` printed by mistake says how many it holds, never one."""
    assert repr(Secrets((PLAIN,))) == "Secrets(<1 hidden>)" and PLAIN not in str(Secrets((PLAIN,)))


# --- where the secrets come from ---------------------------------------------------------------------


def test_an_endpoint_holds_its_header_values_query_values_and_password() -> None:
    """A JSON endpoint's secrets are each header's value and words (a Basic one's user and password decoded),
    each query value (decoded too) and the URL's password (and the Basic header httpx2 makes of it); a content
    type and an API version are not secrets."""
    endpoint = JsonEndpoint(
        "https://user:pa%24%24word-1234@host/agent?key=sk-query%2B12345678&api-version=2024-02-15-preview",
        {"authorization": f"Bearer {PLAIN}", "content-type": "application/json"},
    )
    values = set(endpoint.secrets().values)
    sent = base64.b64encode(b"user:pa$$word-1234").decode()
    assert {f"Bearer {PLAIN}", PLAIN, "sk-query%2B12345678", "sk-query+12345678", "pa$$word-1234", sent} <= values
    assert not {"application/json", "2024-02-15-preview"} & values
    basic = JsonEndpoint("http://host/", {"authorization": "Basic " + base64.b64encode(b"me:open-sesame-42").decode()})
    assert {"me:open-sesame-42", "open-sesame-42"} <= set(basic.secrets().values)


class _Holder:
    def __init__(self) -> None:
        self.settings = {"nested": [SecretStr("sk-nested-secret-123")]}
        self.model = OpenAiModel("m", "http://gateway/v1", "sk-model-key-4567")
        self.endpoint = JsonEndpoint("http://agent/x?token=sk-token-890123")


def test_secrets_are_found_in_what_a_project_defines() -> None:
    """``Holders`` finds a SecretStr deep in an agent's attributes, a model's plain-text key and an endpoint's query."""
    found = set(Holders((_Holder(),)).secrets().values)
    assert {"sk-nested-secret-123", "sk-model-key-4567", "sk-token-890123"} <= found


def test_the_environment_knows_secrets_by_name_and_by_the_settings_that_read_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Variables named as secrets and those an ``Env`` reads into a ``SecretStr`` are secrets; other settings are not."""

    class Shop(Env):  # noqa: F841 - defined to be found among Env's subclasses
        shop_access: SecretStr = SecretStr("")

    (tmp_path / ".env").write_text("SHOP_ACCESS=access-value-1\nSHOP_URL=http://shop.example\nMY_API_KEY=key-value-22\n")
    monkeypatch.setenv("SERVICE_TOKEN", "token-value-333")
    monkeypatch.setenv("DB_PWD", "password-4444")
    monkeypatch.setenv("PWD", "/home/someone/project")  # the shell's working directory, not a password
    monkeypatch.setenv("OLDPWD", "/home/someone/before")
    values = set(Environment(tmp_path).secrets().values)
    assert {"access-value-1", "key-value-22", "token-value-333", "password-4444"} <= values
    assert "http://shop.example" not in values
    assert not {"/home/someone/project", "/home/someone/before"} & values
    assert "http://shop.example" in Environment(tmp_path).everything().values


# --- HTTP errors ---------------------------------------------------------------------------------------


def failure(agent: JsonAgent) -> HttpFailure:
    async def turned() -> HttpFailure:
        async with agent.conversation() as conversation:
            with pytest.raises(HttpFailure) as raised:
                await conversation.turn(Message("hello"))
        return raised.value

    return asyncio.run(turned())


def test_a_key_echoed_across_the_cut_of_an_error_body_shows_none_of_it() -> None:
    """Whatever the offset of an echoed key around the 300 characters kept of an error body, no eight characters of
    the key nor of its query value are in the error, its cause, or its traceback; the body's start is kept."""
    with StandIn(api_key=PLAIN) as server:
        agent = JsonAgent(JsonEndpoint(f"{server.url}/agent?key={PLAIN}", {"authorization": f"Bearer {PLAIN}"}))
        start = len("POST /agent?key=")
        offsets = range(300 - start - len(PLAIN) - 2, 300 - start + 2)
        server.faults(*[Echo(400, pad) for pad in offsets], Echo(401, 0, as_json=True))
        for _ in [*offsets, "json"]:
            raised = failure(agent)
            printed = "".join(traceback.format_exception(raised))
            assert not shows(printed, PLAIN), printed
            assert re.match(r"POST http://127\.0\.0\.1:\d+/agent: 40[01] \w+", str(raised))
        assert all(request.query == f"key={PLAIN}" for request in server.received)


def test_an_http_failure_keeps_its_cause() -> None:
    """A connection that could not be made raises ``HttpFailure`` with httpx2's error as its cause, not ``None``."""
    agent = JsonAgent(JsonEndpoint("http://127.0.0.1:1/agent?key=" + PLAIN))
    raised = failure(agent)
    assert isinstance(raised.__cause__, httpx2.ConnectError)
    assert "could not connect" in str(raised)


# --- the terminal ----------------------------------------------------------------------------------------


def test_inert_text_writes_every_control_character_out() -> None:
    """ESC, BEL, C1 controls, carriage returns and bidi overrides are written out; lines keep their newlines and
    tabs, one line writes them out too; rich markup is left as text."""
    assert Inert(HOSTILE + "\r\n\tend").lines() == (
        "\\x1b]0;pwned\\x07\\x1b[2J\\x1b[6n\\x9b31m\\u202egnp.exe [bold]loud[/bold]\\r\n\tend"
    )
    assert Inert("one\ntwo\tthree").line() == "one\\ntwo\\tthree"


def test_every_character_inert_writes_out_is_one_a_printable_text_cannot_hold() -> None:
    """Inert returns a printable text as it is, without its search: that is sound only while every
    character it writes out, alone, is not printable (all of Unicode is tried)."""
    printable = [chr(code) for code in range(sys.maxunicode + 1) if chr(code).isprintable()]
    # A newline, or a NUL, is not printable: behind one, each character goes through the search.
    assert Inert("\n" + "".join(printable)).lines() == "\n" + "".join(printable)
    assert Inert("\x00" + "".join(printable)).line() == "\\x00" + "".join(printable)
    assert Inert("\u202egnp.exe").line() == "\\u202egnp.exe" and Inert("plain text, é ü").line() == "plain text, é ü"


AGENT = """
from contextlib import asynccontextmanager

from convy import Answer


class Conversation:
    async def turn(self, message):
        if "{mode}" == "raise":
            raise RuntimeError({hostile!r})
        return Answer({hostile!r})


class Agent:
    @asynccontextmanager
    async def conversation(self):
        yield Conversation()


agent = Agent()
"""


def project(tmp_path: Path, mode: str, url: str = "") -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    assert run_convy(folder, "init", timeout=60).returncode == 0
    (folder / "agents" / "hostile.py").write_text(AGENT.format(mode=mode, hostile=HOSTILE))
    (folder / "agents" / "served.py").write_text(
        f"from convy import JsonAgent, JsonEndpoint\nagent = JsonAgent(JsonEndpoint({url + '/agent'!r}), calls='tool_calls')\n"
    )
    return folder


def quiet(said: str) -> None:
    """Nothing in ``said`` acts on a terminal, and rich markup is shown as it was sent."""
    for control in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert control not in said, repr(said)
    assert "[bold]loud[/bold]" in said


@pytest.mark.parametrize("mode", ["raise", "answer"])
def test_an_agents_text_never_drives_the_terminal(tmp_path: Path, mode: str) -> None:
    """Escape sequences and markup in an agent's exception (in a run and in --smoke) or answer (--smoke shows its
    first line) print written out."""
    folder = project(tmp_path, mode)
    runs = [["run", "hostile", "--scenarios", "off-topic", "-k", "1"]] if mode == "raise" else []
    for arguments in [*runs, ["run", "hostile", "--smoke"]]:
        done = run_convy(folder, *arguments, timeout=120)
        quiet(done.stdout + done.stderr)
        assert "\\x1b]0;pwned\\x07" in done.stdout + done.stderr


def test_an_http_error_body_never_drives_the_terminal(tmp_path: Path) -> None:
    """A service's error body and reason with escape sequences prints written out."""
    with StandIn() as server:
        folder = project(tmp_path, "answer", server.url)
        server.faults(Status(500, body=HOSTILE), Status(500, body=HOSTILE))
        for arguments in (["run", "served", "--scenarios", "off-topic", "-k", "1"], ["run", "served", "--smoke"]):
            done = run_convy(folder, *arguments, timeout=120)
            quiet(done.stdout + done.stderr)
            assert "500 Internal Server Error: \\x1b]0;pwned" in done.stdout + done.stderr


def test_on_a_real_terminal_with_the_progress_bar_hostile_text_stays_inert(tmp_path: Path) -> None:
    """On a terminal (a pty, with rich's progress bar live) the agent's escape sequences never arrive as such,
    ``[bold]`` prints literally, and markup in an agent's name is not read by the progress bar."""
    folder = project(tmp_path, "raise")
    (folder / "agents" / "hostile.py").rename(folder / "agents" / "hostile[blink].py")
    leader, follower = pty.openpty()
    process = start_convy(
        folder, "run", "hostile[blink]", "--scenarios", "off-topic", "-k", "1",
        stdout=follower, stderr=follower, env={**os.environ, "TERM": "xterm"},
    )
    os.close(follower)
    received = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the pty's other end closed: the command ended
            break
        if not chunk:
            break
        received += chunk
    os.close(leader)
    assert process.wait(timeout=120) == 1
    said = received.decode("utf-8", "replace")
    for sequence in ("\x1b]0;pwned", "\x1b[2J", "\x1b[6n", "\x9b31m", "\u202e", "\x1b[5m"):
        assert sequence not in said, repr(said)
    assert "[bold]loud[/bold]" in said and "\\x1b]0;pwned\\x07" in said
    progress = [line for line in said.split("\r") if "━" in line]
    assert progress and all("hostile[blink]" in line for line in progress), progress


def test_an_agent_file_whose_name_holds_an_escape_sequence_is_refused_in_one_inert_line(tmp_path: Path) -> None:
    """An agent's name becomes its run folder's name, so one with a control character is refused before
    anything is played, in one line that shows the sequence written out."""
    folder = project(tmp_path, "answer")
    (folder / "agents" / "hostile.py").rename(folder / "agents" / "hostile\x1b[2J.py")
    done = run_convy(folder, "run", "hostile\x1b[2J", "--scenarios", "off-topic", "-k", "1", timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == ["convy: agents/'hostile\\x1b[2J'.py: agent: not a folder's name"]
    assert "\x1b" not in done.stdout + done.stderr
    assert not (folder / "results").exists()


@pytest.mark.parametrize("prefix", ["", "u", "us", "user:", "a-longer-user:"])
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode], ids=["base64", "urlsafe"])
def test_a_secret_echoed_in_base64_is_hidden_wherever_it_stands(prefix: str, encode: Any) -> None:
    """A key a service echoes in base64, alone or after other bytes (HTTP Basic's user:key), is hidden: what
    is left of the echo is only the characters that also hold bits of the bytes around the key."""
    key = "sk-canary-Q7x9Lm2Pz8Rt4Vw6Yb1Nc3Jd5Hf0Kg"
    echoed = encode((prefix + key).encode()).decode()
    shown = Secrets((key,)).hidden(f"key={echoed} end")
    assert shown.startswith("key=") and shown.endswith(" end") and HIDDEN in shown
    left = shown.removeprefix("key=").removesuffix(" end").replace(HIDDEN, "")
    assert len(left) <= len(encode(prefix.encode()).decode().rstrip("=")) + 4, shown


def test_a_secret_echoed_in_hexadecimal_is_hidden() -> None:
    """A key a service echoes as the hexadecimal of its bytes, in either case, is hidden whole."""
    key = "sk-canary-Q7x9Lm2Pz8Rt4Vw6Yb1Nc3Jd5Hf0Kg"
    secrets = Secrets((key,))
    assert secrets.hidden(f"digest {key.encode().hex()}.") == f"digest {HIDDEN}."
    assert secrets.hidden(f"digest {key.encode().hex().upper()}.") == f"digest {HIDDEN}."


@given(
    before=st.text(max_size=40),
    after=st.text(max_size=40),
    start=st.integers(0, 40),
    length=st.integers(8, 48),
)
@settings(max_examples=300, derandomize=True, deadline=None)
def test_a_record_skipped_by_the_quick_test_holds_no_piece_of_a_secret(before: str, after: str, start: int, length: int) -> None:
    """Whenever hiding would change a text, the quick test on the whole record says it may hold a secret."""
    secrets = Secrets(("sk-canary-0123456789abcdefghijklmnopqrstuv",))
    form = secrets._forms()[start % len(secrets._forms())]
    text = before + form[start % max(1, len(form) - 8) :][:length] + after
    if secrets.hidden(text) != text:
        assert secrets.may_hold(text.encode("utf-8"))
        assert secrets.may_hold(msgspec.json.encode({"said": [text]}))  # as a record's line holds it
