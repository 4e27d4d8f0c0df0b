"""A 429 storm inside agents' turns, counted against the server's own log (issue 26, item 7).

The template's LLM assistant (a tool call, then an answer: two requests a turn) plays 12
conversations of 3 turns at once against the stand-in limited to 5 requests in any sliding second.
The stand-in's responder runs only for requests its limit let through, so its count of answered
requests, tool calls and tokens is the server's own; beside it, what convy kept, and how many
requests carried a user's message twice (a turn played again on the same conversation).

    .venv/bin/python bench/storm.py                      # this checkout's convy
    .venv/bin/python bench/storm.py /old/src /new/src    # each convy's row, side by side

Each convy plays in a process of its own, with its src and this repository's tests/ (the stand-in)
on its path.
"""

from __future__ import annotations

import asyncio
import collections
import importlib.util
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
HEADER = "| convy | server: requests | 429s | answered | tool calls | tokens | convy kept: requests | tool calls | tokens | requests with a user message twice | turns failed |"


def compared(sources: list[str]) -> None:
    """Each convy's storm in a process of its own, its row under one header."""
    print(HEADER)
    print("|---" * (HEADER.count("|") - 1) + "|")
    for source in sources:
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join([source, str(HERE.parent / "tests")])}
        done = subprocess.run([sys.executable, __file__, "--one", source], env=environment, capture_output=True, text=True)
        print(done.stdout.strip() if done.returncode == 0 else f"| {source} | failed: {done.stderr.strip().splitlines()[-1:]} |")


def one(label: str) -> None:
    from support.standin import StandIn, Window, _text_of, _words

    import convy
    from convy.agent import Call, Message, QueuedAgent, TimeLimited, Usage
    from convy.busy import Patience, Places
    from convy.model import OpenAiModel

    template = Path(convy.__file__).resolve().parent / "template"
    sys.path.insert(0, str(template))
    spec = importlib.util.spec_from_file_location("template_assistant", template / "agents" / "assistant.py")
    assert spec is not None and spec.loader is not None
    assistant = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(assistant)

    class Log:
        def __init__(self) -> None:
            self.lock = threading.Lock()
            self.answered = self.tool_calls = self.tokens = 0

        def __call__(self, request: dict[str, Any]) -> Any:
            messages = request["messages"]
            if messages[-1]["role"] == "user":
                out: Any = {"tool_calls": [{"name": "lookup_order", "arguments": '{"order": "A-1043"}'}]}
                completion = _words('{"order": "A-1043"}')
            else:
                out = "Your kettle was delivered on 12 March."
                completion = _words(out)
            with self.lock:
                self.answered += 1
                self.tool_calls += "tool_calls" in out if isinstance(out, dict) else 0
                self.tokens += sum(_words(_text_of(m.get("content"))) for m in messages) + completion
            return out


    log = Log()
    with StandIn(limit=Window(5, 1.0), reply=log) as server:
        agent = assistant.Assistant(OpenAiModel("agent-model", server.url + "/v1"))
        places = Places(12, "agent", patience=Patience(300.0))

        async def played_one(number: int) -> list[Any]:
            answers: list[Any] = []
            try:
                async with QueuedAgent(TimeLimited(agent), places).conversation() as conversation:
                    for turn in range(3):
                        answers.append(await conversation.turn(Message(f"Where is order A-1043? (attempt {number}, turn {turn + 1})")))
            except Exception as error:  # noqa: BLE001 - an attempt that failed: what it kept is kept
                answers.append(error)
            return answers

        async def all_of_them() -> list[list[Any]]:
            return list(await asyncio.gather(*(played_one(number) for number in range(12))))

        played = asyncio.run(all_of_them())
        received = [r for r in server.received if r.kind == "chat"]
        twice = 0
        for request in received:
            said = collections.Counter(m["content"] for m in request.json["messages"] if m.get("role") == "user")
            twice += any(times > 1 for times in said.values())
        answers = [answer for conversation in played for answer in conversation if not isinstance(answer, Exception)]
        failed = [answer for conversation in played for answer in conversation if isinstance(answer, Exception)]
        kept = [usage for answer in answers for usage in answer.requests()]
        kept_calls = sum(1 for answer in answers for step in answer.steps if isinstance(step, Call))
        kept_tokens = sum(usage.input + usage.output for usage in kept if isinstance(usage, Usage))
        print(
        f"| {label} | {len(received)} | {sum(r.status == 429 for r in received)} | {log.answered} | "
        f"{log.tool_calls} | {log.tokens:,} | {len(kept)} | {kept_calls} | {kept_tokens:,} | {twice} | {len(failed)} |"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        one(sys.argv[2])
    else:
        compared(sys.argv[1:] or [str(HERE.parent / "src")])
