"""The demo project re-judged with another judge, end to end, with the real ``convy`` command.

``convy init`` makes the template project in a temporary folder; its ``.env`` points the gateway at
the test stand-in (tests/support/standin.py, a real HTTP server on 127.0.0.1), which plays three models,
told apart by each request: the assistant agent's model (``agent-model``), the simulated user's
(``user-model``) and the judge's (``judge-model``, which holds every claim). Then:

1. ``convy run assistant -k 2``: the dialogues, played and judged;
2. ``convy rejudge RUN --judge strict-judge``: the same dialogues decided again by another model
   on the same service (``strict-judge``, which fails every claim);
3. ``convy compare RUN RUN2``.

After each command the requests the stand-in received in it are printed, by model: the re-judge's
are all ``strict-judge``'s, one per claim the judge decides, and none reaches the agent's or the
user's model.

    python bench/rejudge_demo.py
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "tests"))
CONVY = Path(sys.executable).with_name("convy")
KEY = "sk-demo-not-a-real-key"


def answered(request: dict[str, Any]) -> str | dict[str, Any]:
    """The stand-in's answer, by the role the request is in."""
    messages = request["messages"]
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    last = messages[-1]
    if "tools" in request:  # the assistant's model: look the order up, then answer with what it found
        if last["role"] == "tool":
            return f"I looked it up: {last['content']}"
        found = re.search(r"[A-Z]-\d{4}", last.get("content") or "")
        return {"content": None, "tool_calls": [{"name": "lookup_order", "arguments": {"order": found.group(0) if found else "A-1043"}}]}
    if "You are playing a person" in system:  # the simulated user: two messages, then done
        said = sum(1 for message in messages if message["role"] == "assistant")
        return ("Hi, my order A-3100 has a problem.", "What can you do about it?")[said] if said < 2 else "###STOP###"
    held = request["model"] != "strict-judge"
    graded = re.search(r"^The grades, worst first: (.+)$", last["content"], re.MULTILINE)
    if graded:
        grades = graded.group(1).split(", ")
        return json.dumps({"reason": f"{request['model']} decided", "grade": grades[-1] if held else grades[0], "confidence": 0.9})
    return json.dumps({"reason": f"{request['model']} decided", "pass": held, "confidence": 0.9})


def main() -> None:
    from support.standin import StandIn

    environment = {name: value for name, value in os.environ.items() if not name.startswith(("CONVY_", "GATEWAY_", "OPENAI_"))}
    with tempfile.TemporaryDirectory() as folder, StandIn(reply=answered, api_key=KEY) as server:
        project = Path(folder) / "demo"

        def convy(*arguments: str) -> str:
            before = len(server.received)
            done = subprocess.run([str(CONVY), *arguments], cwd=project, env=environment, capture_output=True, text=True, check=False)
            print(f"$ convy {' '.join(arguments)}    (exit {done.returncode})")
            for line in (done.stdout + done.stderr).splitlines():
                print(f"  {line}")
            asked = Counter(request.json["model"] for request in server.received[before:])
            print(f"  → stand-in requests by model: {dict(sorted(asked.items())) or 'none'}\n")
            return done.stdout

        project.mkdir()
        subprocess.run([str(CONVY), "init"], cwd=project, env=environment, capture_output=True, check=True)
        (project / ".env").write_text(
            f"GATEWAY_URL={server.url}/v1\nGATEWAY_KEY={KEY}\nUSER_MODEL=user-model\nJUDGE_MODEL=judge-model\nAGENT_MODEL=agent-model\n"
        )
        convy("run", "assistant", "-k", "2")
        first = sorted((project / "results" / "assistant").iterdir())[0].name
        convy("rejudge", first, "--judge", "strict-judge")
        second = next(path.name for path in (project / "results" / "assistant").iterdir() if path.name != first)
        convy("compare", first, second)
        spec = json.loads((project / "results" / "assistant" / second / "run.json").read_text())["spec"]
        print(f"{second}/run.json: origin {spec['origin']}, models {spec['models']}")


if __name__ == "__main__":
    main()
