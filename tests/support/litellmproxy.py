"""LiteLLM's proxy, offline, once for the whole session: the server of test_proxy.py, test_proxy_busy.py
and the audits that play on it.

The proxy runs from its own venv, ``.venv-proxy`` (``make test`` makes it), with a config of mock
models: each answers with a fixed reply and never leaves the machine. A callback of the proxy's own
(``usage_log.py`` below) writes down every reply it sends: its model group, usage and cost, and
whether the request carried a user's message twice. So convy's counts are checked against the
server's, not against numbers a test made up. Without ``.venv-proxy`` the tests are skipped,
saying how to get it.

``proxy`` is defined here and registered by conftest.py alone, so that the session has one
definition of it and the proxy starts once (about 12 s on CI): a module that imported it would
register a definition of its own, and a proxy of its own with it. Its users are one xdist group
(conftest.SHARED), so it starts in one worker only.

The proxy's minute is the test's (``Proxy.turned``): the router counts a model's ``rpm`` per minute
of the clock it reads, and the callback module sets that clock to a minute a file says. A refusal
for the rpm then lasts until the test turns the minute, not until the wall clock's minute is over.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import msgspec
import pytest
from test_services_cli import KEY

from support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
LITELLM = ROOT / ".venv-proxy" / "bin" / "litellm"
STARTUP = 180.0  # seconds the proxy may take to come up: it takes about 8
JUDGED = '{"reason": "the mock judge agrees", "pass": true, "confidence": 0.9}'
# A judge that quotes the mock agent's words as its evidence, and one that quotes words never said.
QUOTING = '{"evidence": "Hello   from the mock", "reason": "it greeted", "pass": true, "confidence": 0.8}'
INVENTING = '{"evidence": "I have refunded you", "reason": "it refunded", "pass": false, "confidence": 0.7}'
USER_SAYS = "Hi, my order A-1043 arrived broken. Can you help?"
TOOL_USAGE = {"prompt_tokens": 120, "completion_tokens": 15, "total_tokens": 135,
              "prompt_tokens_details": {"cached_tokens": 64}, "completion_tokens_details": {"reasoning_tokens": 7}}

# The models the template's project asks: its assistant's, the simulated user's, the judge's.
TEMPLATE_MODELS = ("user-model", "judge-model", "agent-model")

# The tool-calling mock, as the template's assistant asks it: it always calls the tool, with detailed usage.
TOOL_CALLING = {
    "id": "chatcmpl-mock-tools",
    "object": "chat.completion",
    "model": "agent-model",
    "choices": [{
        "index": 0,
        "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order": "A-1043"}'}}
        ]},
    }],
    "usage": TOOL_USAGE,
}

# The tool-calling mock again, with an ``rpm`` limit the router keeps it within (test_proxy_busy.py).
# LiteLLM's usage-based routing lets through RPM - 1 requests a minute, not RPM: it refuses a request
# once the count plus one reaches the limit.
LIMITED = "limited-agent-model"
RPM = 16
# The same again for test_proxy_busy.py's test of what is left: the proxy says on each answer what
# is left of a model's rpm (x-ratelimit-remaining-requests), its router's own count of the wall
# clock's minute, kept apart from the one it refuses by (the test's minute, ``Proxy.turned``), and
# not moved by the callback's clock. A model of its own is asked by that test alone, so that count
# holds nothing of the other tests' requests.
LEFT = "left-agent-model"

CONFIG = {
    "model_list": [
        {"model_name": "mock-gpt", "litellm_params": {"model": "openai/gpt-4o-mini", "api_key": "fake", "mock_response": "Hello from the mock"}},
        {"model_name": "user-model", "litellm_params": {"model": "openai/gpt-4o-mini", "api_key": "fake", "mock_response": USER_SAYS}},
        {"model_name": "judge-model", "litellm_params": {"model": "openai/gpt-4o-mini", "api_key": "fake", "mock_response": JUDGED}},
        {"model_name": "quoting-judge", "litellm_params": {"model": "openai/gpt-4o-mini", "api_key": "fake", "mock_response": QUOTING}},
        {"model_name": "inventing-judge", "litellm_params": {"model": "openai/gpt-4o-mini", "api_key": "fake", "mock_response": INVENTING}},
        {"model_name": "agent-model", "litellm_params": {"model": "openai/gpt-4o-mini", "api_key": "fake", "mock_response": TOOL_CALLING}},
        {"model_name": LIMITED, "litellm_params": {"model": "openai/gpt-4o-mini", "api_key": "fake", "rpm": RPM, "mock_response": TOOL_CALLING}},
        {"model_name": LEFT, "litellm_params": {"model": "openai/gpt-4o-mini", "api_key": "fake", "rpm": RPM, "mock_response": TOOL_CALLING}},
        {"model_name": "mock-busy", "litellm_params": {"model": "openai/gpt-4o-mini", "api_key": "fake", "mock_response": "litellm.RateLimitError"}},
    ],
    "litellm_settings": {"callbacks": "usage_log.usage_log"},
    # The proxy would try a refused request twice more itself before passing the 429 on. The
    # usage-based router keeps each deployment within its rpm (only LIMITED has one).
    "router_settings": {"num_retries": 0, "routing_strategy": "usage-based-routing-v2"},
}

USAGE_LOG = '''"""Writes down every reply the proxy sends, one JSON line each: its model group, usage and cost,
and whether the request carried a user's message twice; and, in a file of their own, what it says
is left of a model's rpm on an answer (x-ratelimit-remaining-requests), as it sends it. And sets the clock the router counts a
model's rpm by to the minute the test gives in the file CONVY_TEST_MINUTE, and the wait its refusal
for the rpm asks for to the seconds the file CONVY_TEST_WAIT gives, where the test wrote one."""

import datetime
import json
import os

import litellm
from litellm.integrations.custom_logger import CustomLogger
from litellm.router_strategy import lowest_tpm_rpm_v2


def minute():
    """The router's "now": the first of January 2026 plus as many minutes as the test turned."""
    try:
        with open(os.environ["CONVY_TEST_MINUTE"], encoding="utf-8") as turned:
            minutes = int(turned.read())
    except FileNotFoundError:
        minutes = 0
    return datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(minutes=minutes)


# The rpm and tpm counters' keys end in this clock's minute ("%H-%M"). A LiteLLM that no longer
# reads it there fails here, at the proxy's start, rather than leave the test on the wall clock.
assert callable(lowest_tpm_rpm_v2.get_utc_datetime)
lowest_tpm_rpm_v2.get_utc_datetime = minute


def said_wait():
    """The Retry-After the test asks the router's rpm refusals to carry, or None: LiteLLM's own 60."""
    try:
        with open(os.environ["CONVY_TEST_WAIT"], encoding="utf-8") as wait:
            return wait.read().strip()
    except FileNotFoundError:
        return None


def waiting(check):
    """``check`` (a router's rpm check), its refusal asking for the test's wait rather than a whole
    minute: the minute is the test's to turn, and ends when the test turns it."""

    async def checked(*arguments, **named):
        try:
            return await check(*arguments, **named)
        except litellm.RateLimitError as refused:
            wait = said_wait()
            if wait is not None and refused.response is not None:
                refused.response.headers["retry-after"] = wait
            raise

    return checked


# The two places the router refuses a request over a deployment's rpm, each with "retry-after: 60".
_HANDLER = lowest_tpm_rpm_v2.LowestTPMLoggingHandler_v2
_HANDLER.async_pre_call_check = waiting(_HANDLER.async_pre_call_check)
_HANDLER.async_get_available_deployments = waiting(_HANDLER.async_get_available_deployments)


class UsageLog(CustomLogger):
    async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
        usage = getattr(response_obj, "usage", None)
        group = ((kwargs.get("litellm_params") or {}).get("metadata") or {}).get("model_group")
        said = [m.get("content") for m in kwargs.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
        line = {
            "group": group,
            "usage": usage.model_dump() if usage is not None else None,
            "cost": kwargs.get("response_cost"),
            "twice": len(said) != len(set(map(str, said))),
        }
        with open(os.environ["CONVY_TEST_USAGE_LOG"], "a", encoding="utf-8") as log:
            log.write(json.dumps(line) + "\\n")

    async def async_post_call_success_hook(self, data, user_api_key_dict, response):
        """What the answer about to be sent says is left of its model's rpm, by the request's last
        message: the proxy's own word, whatever a client makes of it."""
        headers = (getattr(response, "_hidden_params", None) or {}).get("additional_headers") or {}
        left = headers.get("x-ratelimit-remaining-requests")
        messages = data.get("messages") or []
        if left is not None and messages and isinstance(messages[-1], dict):
            line = {"group": data.get("model"), "message": str(messages[-1].get("content")), "left": int(left)}
            with open(os.environ["CONVY_TEST_LEFT_LOG"], "a", encoding="utf-8") as log:
                log.write(json.dumps(line) + "\\n")
        return response


usage_log = UsageLog()
'''


class Proxy(msgspec.Struct, frozen=True):
    """The running proxy: its base URL, the log its callback writes, the file of its minute, the
    file of the wait its rpm refusals ask for, and the log of what its answers say is left."""

    url: str
    log: Path
    minute: Path
    wait: Path
    said: Path

    @contextlib.contextmanager
    def waiting(self, seconds: int) -> Iterator[None]:
        """While inside, the router's rpm refusals ask for ``seconds`` (as Retry-After, which the proxy
        forwards as ``llm_provider-retry-after``), not for LiteLLM's whole minute."""
        written = self.wait.with_suffix(".new")
        written.write_text(str(seconds))
        written.replace(self.wait)
        try:
            yield
        finally:
            self.wait.unlink()

    def lines(self, group: str) -> list[dict[str, Any]]:
        """Every line the callback wrote for a reply of ``group`` so far, in order."""
        if not self.log.exists():
            return []
        lines = [json.loads(line) for line in written(self.log)]
        return [line for line in lines if line["group"] == group]

    def sent(self, group: str) -> list[dict[str, Any]]:
        """The usage of every reply of ``group`` the proxy sent so far, in order, with the cost it
        gave the reply (in the usage when streamed, in a header when not).

        The callback runs just after a reply is sent, so a wait for the count asked for is the caller's."""
        return [{**line["usage"], "cost": line["cost"]} for line in self.lines(group)]

    def counts(self) -> dict[str, int]:
        """How many replies of each of the template's models the proxy sent so far."""
        return {group: len(self.sent(group)) for group in TEMPLATE_MODELS}

    def awaited(self, group: str, count: int) -> list[dict[str, Any]]:
        """The usage of the first ``count`` replies of ``group``, once the proxy has written them all down."""
        wait_until(lambda: len(self.sent(group)) >= count, f"the proxy to write down {count} replies of {group}", every=0.05)
        return self.sent(group)[:count]

    def left(self, group: str) -> list[tuple[str, int]]:
        """What each answer of ``group`` so far said is left of its rpm, in the order the proxy
        sent them, with the last message of the request answered.

        The callback runs just before an answer is sent, so once a client has an answer, its line is written."""
        if not self.said.exists():
            return []
        lines = [json.loads(line) for line in written(self.said)]
        return [(line["message"], line["left"]) for line in lines if line["group"] == group]

    def turned(self) -> None:
        """The proxy's next minute: the rpm counts start again from nothing."""
        minutes = int(self.minute.read_text()) if self.minute.exists() else 0
        written = self.minute.with_suffix(".new")
        written.write_text(str(minutes + 1))
        written.replace(self.minute)  # whole: the proxy never reads half a number


def written(log: Path) -> list[str]:
    """The lines the proxy has finished writing to ``log``: a line it is writing as the test reads
    may be there in part, and counts once its newline is."""
    text = log.read_text(encoding="utf-8")
    return text[: text.rfind("\n") + 1].splitlines()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def alive(url: str) -> bool:
    try:
        return httpx2.get(url + "/health/liveliness", timeout=2, trust_env=False).status_code == 200
    except httpx2.HTTPError:
        return False


@pytest.fixture(scope="session")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    """LiteLLM's proxy on a free port of 127.0.0.1 with the mock models, for the whole session."""
    if not LITELLM.is_file():
        pytest.skip("LiteLLM's proxy is not installed in .venv-proxy: `make test` installs it")
    folder = tmp_path_factory.mktemp("proxy")
    (folder / "config.yaml").write_text(json.dumps(CONFIG))  # JSON is YAML
    (folder / "usage_log.py").write_text(USAGE_LOG)
    log, minute, wait, said = folder / "usage.jsonl", folder / "minute.txt", folder / "wait.txt", folder / "left.jsonl"
    variables = {
        "CONVY_TEST_USAGE_LOG": str(log), "CONVY_TEST_MINUTE": str(minute), "CONVY_TEST_WAIT": str(wait),
        "CONVY_TEST_LEFT_LOG": str(said),
    }
    with started(folder, variables) as url:
        yield Proxy(url, log, minute, wait, said)


@contextlib.contextmanager
def started(folder: Path, variables: dict[str, str]) -> Iterator[str]:
    """LiteLLM's proxy on a free port of 127.0.0.1, run from ``folder`` (its ``config.yaml`` and the
    callback modules it names), offline, with ``variables`` added to its environment; its URL while
    it runs, stopped after."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    environment = {
        **{name: value for name, value in os.environ.items() if not name.startswith(("CONVY_", "OPENAI_", "LITELLM_"))},
        "LITELLM_MASTER_KEY": KEY,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # the price map shipped with it: no fetch
        "PYTHONPATH": str(folder),
        **variables,
    }
    with (folder / "proxy.log").open("wb") as output:
        process = subprocess.Popen(
            [str(LITELLM), "--config", str(folder / "config.yaml"), "--host", "127.0.0.1", "--port", str(port)],
            cwd=folder, env=environment, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
        )
    try:
        if not wait_until(
            lambda: alive(url), f"LiteLLM's proxy to come up (its log: {folder / 'proxy.log'})",
            timeout=STARTUP, process=process, every=0.1,
        ):
            pytest.fail(f"LiteLLM's proxy did not come up:\n{(folder / 'proxy.log').read_text()[-3000:]}")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
