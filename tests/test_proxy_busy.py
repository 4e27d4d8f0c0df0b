"""A busy service inside a turn, against LiteLLM's proxy (issue 26, item 7).

A second proxy, offline like test_proxy.py's, whose tool-calling mock model has an ``rpm`` limit: the
proxy's router refuses a request over it with a 429 until the minute is over. The template's LLM
assistant (three requests a turn: the mock always asks for the tool) plays three conversations of
three turns at once, more requests than two minutes of the limit allow, so some are refused in the
middle of a turn whatever second the test starts at. The proxy's own callback writes down every
reply it sends and whether the request carried a user's message twice: convy keeps exactly the
replies the proxy sent, their tokens and cost, and no request carried a user's message twice.
Without ``.venv-proxy`` the test is skipped. It waits for the proxy's minute to turn, a minute or
two: the limit is the proxy's, counted on its clock.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from pydantic import SecretStr
from test_proxy import LITELLM, TOOL_USAGE, started, usage_of
from test_services_cli import KEY

import convy
from convy.agent import Answer, Call, Message, QueuedAgent, TimeLimited
from convy.attempt import Spent
from convy.busy import Patience, Places
from convy.model import OpenAiModel

pytestmark = pytest.mark.timeout(600)

RPM = 10
CONFIG = {
    "model_list": [
        {
            "model_name": "agent-model",
            "litellm_params": {
                "model": "openai/gpt-4o-mini",
                "api_key": "fake",
                "rpm": RPM,
                "mock_response": {
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
                },
            },
        },
    ],
    "litellm_settings": {"callbacks": "answered_log.answered_log"},
    # The router keeps each deployment within its rpm, and passes a refusal on without retrying it.
    "router_settings": {"num_retries": 0, "routing_strategy": "usage-based-routing-v2"},
}

ANSWERED_LOG = '''"""Writes down every reply the proxy sends: its usage and cost, and whether the request carried a user's message twice."""

import json
import os

from litellm.integrations.custom_logger import CustomLogger


class AnsweredLog(CustomLogger):
    async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
        usage = getattr(response_obj, "usage", None)
        said = [m.get("content") for m in kwargs.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
        line = {
            "usage": usage.model_dump() if usage is not None else None,
            "cost": kwargs.get("response_cost"),
            "twice": len(said) != len(set(map(str, said))),
        }
        with open(os.environ["CONVY_TEST_ANSWERED_LOG"], "a", encoding="utf-8") as log:
            log.write(json.dumps(line) + "\\n")


answered_log = AnsweredLog()
'''


class Limited(msgspec.Struct, frozen=True):
    url: str
    log: Path

    def answered(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def awaited(self, count: int) -> list[dict[str, Any]]:
        """The first ``count`` replies, once the proxy has written them all down (its callback runs just after)."""
        ends = time.monotonic() + 60
        while len(self.answered()) < count:
            if time.monotonic() > ends:
                pytest.fail(f"the proxy wrote down {len(self.answered())} replies, not {count}")
            time.sleep(0.05)
        return self.answered()


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Limited]:
    """LiteLLM's proxy with the rpm-limited mock model, on a free port of 127.0.0.1."""
    if not LITELLM.is_file():
        pytest.skip("LiteLLM's proxy is not installed in .venv-proxy: `make test` installs it")
    folder = tmp_path_factory.mktemp("limited")
    (folder / "config.yaml").write_text(json.dumps(CONFIG))  # JSON is YAML
    (folder / "answered_log.py").write_text(ANSWERED_LOG)
    with started(folder, {"CONVY_TEST_ANSWERED_LOG": str(folder / "answered.jsonl")}) as url:
        yield Limited(url, folder / "answered.jsonl")


def assistant(url: str) -> Any:
    """The template's assistant (of the convy under test) on the proxy."""
    template = Path(convy.__file__).resolve().parent / "template"
    sys.path.insert(0, str(template))
    try:
        spec = importlib.util.spec_from_file_location("template_assistant_rpm", template / "agents" / "assistant.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(template))
    return module.Assistant(OpenAiModel("agent-model", url + "/v1", key=SecretStr(KEY), timeout=60))


def test_under_the_proxys_rpm_convy_keeps_every_reply_it_sent_and_sends_no_message_twice(limited: Limited) -> None:
    agent = assistant(limited.url)
    places = Places(3, patience=Patience(300.0))

    async def one(number: int) -> list[Answer]:
        async with QueuedAgent(TimeLimited(agent, turn=300.0), places).conversation() as conversation:
            return [await conversation.turn(Message(f"Where is A-1043? (conversation {number}, turn {turn})")) for turn in range(3)]

    async def main() -> list[list[Answer]]:
        return list(await asyncio.gather(*(one(number) for number in range(3))))

    answers = [answer for conversation in asyncio.run(main()) for answer in conversation]
    kept = [usage for answer in answers for usage in answer.requests()]
    assert places.refused > 0, "more requests than two minutes of the limit allow: some were refused"
    sent = limited.awaited(len(kept))
    calls = sum(1 for answer in answers for step in answer.steps if isinstance(step, Call))
    seen = {
        "proxy answered": len(sent),
        "convy kept": len(kept),
        "tool calls kept": calls,
        "requests with a user message twice": sum(line["twice"] for line in sent),
    }
    assert seen == {"proxy answered": 27, "convy kept": 27, "tool calls kept": 27, "requests with a user message twice": 0}
    ours, theirs = Spent(tuple(kept)).tokens(), Spent(tuple(usage_of({**line["usage"], "cost": line["cost"]}) for line in sent)).tokens()
    assert (ours.requests, ours.input, ours.output) == (theirs.requests, theirs.input, theirs.output)
