"""``convy run --attempts auto`` end to end, with the real command, on the test stand-in (a real
HTTP server on 127.0.0.1), scenarios of known pass rates: how many attempts each got, and why it
stopped.

``convy init`` makes the template project; its ``.env`` points the gateway at the stand-in, which
plays the assistant agent's model and the judge's. The template's scenarios are replaced by four,
each one scripted message and one claim, ``The agent answers about <name>``; the stand-in's judge
holds each scenario's claim at a known rate, spread evenly over its rulings (the n-th ruling holds
when ⌊n·rate⌋ grows), so any first n rulings show the rate. Then::

    convy run assistant --attempts auto --min-attempts 5 --max-attempts 60 --target-width 0.3

and, with ``--workers 2`` (when Ray is installed), the same on two worker processes.

    python bench/adaptive_standin.py [--workers]
"""

from __future__ import annotations

import argparse
import json
import math
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
RATES = {"always": 1.0, "mostly": 0.9, "half": 0.5, "rarely": 0.2}


class Judge:
    """The stand-in's answers: the agent's model echoes, the judge holds each claim at its rate."""

    def __init__(self) -> None:
        self.rulings: Counter[str] = Counter()

    def __call__(self, request: dict[str, Any]) -> str:
        last = request["messages"][-1]
        if request["model"] != "judge-model":
            return f"Here is what I can tell you about {last.get('content') or 'that'}."
        found = re.search(r"The agent answers about (\w+)", last["content"])
        name = found.group(1) if found else "always"
        self.rulings[name] += 1
        n, rate = self.rulings[name], RATES.get(name, 1.0)
        held = math.floor(n * rate) > math.floor((n - 1) * rate)
        return json.dumps({"reason": "decided by the demo's rate", "pass": held, "confidence": 0.9})


def main() -> None:
    from support.standin import StandIn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", action="store_true", help="also play it on two worker processes (needs Ray)")
    asked = parser.parse_args()
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("CONVY_", "GATEWAY_", "OPENAI_"))}
    judge = Judge()
    with tempfile.TemporaryDirectory() as folder, StandIn(reply=judge, api_key=KEY) as server:
        project = Path(folder) / "demo"
        project.mkdir()
        subprocess.run([str(CONVY), "init"], cwd=project, env=environment, capture_output=True, check=True)
        (project / ".env").write_text(
            f"GATEWAY_URL={server.url}/v1\nGATEWAY_KEY={KEY}\nUSER_MODEL=user-model\nJUDGE_MODEL=judge-model\nAGENT_MODEL=agent-model\n"
        )
        scenarios = project / "scenarios"
        for old in sorted(scenarios.rglob("*.yaml")):
            old.unlink()
        for name in RATES:
            (scenarios / f"{name}.yaml").write_text(f"script: [Tell me about {name}]\njudge:\n  - The agent answers about {name}.\n")
        runs = [("run", "assistant", "--attempts", "auto", "--min-attempts", "5", "--max-attempts", "60", "--target-width", "0.3")]
        if asked.workers:
            runs.append((*runs[0], "--workers", "2"))
        for arguments in runs:
            judge.rulings.clear()
            done = subprocess.run([str(CONVY), *arguments], cwd=project, env=environment, capture_output=True, text=True, check=False)
            print(f"$ convy {' '.join(arguments)}    (exit {done.returncode})")
            for line in (done.stdout + done.stderr).splitlines():
                if not line.startswith(("✓", "✗", "?")):
                    print(f"  {line}")
            print(f"  true rates: {RATES}; the judge ruled {sum(judge.rulings.values())} times\n")


if __name__ == "__main__":
    main()
