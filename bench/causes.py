"""Why attempts did not pass: the cause breakdown of two runs, as the command and the report show it.

(a) The template demo, played offline as ``make demo`` plays it: ``convy init`` then ``convy run``
    in a new folder, with no key and no network; the script prints the command's breakdown line and
    the report's "Why not passed" tile (``RunView.causes``) of the run it kept.
(b) A run on the stand-in (``tests/support/standin.py``) with faults injected over HTTP: the agent speaks
    Chat Completions on one stand-in, the simulated user's model and the judge's each on one of
    their own, and each stand-in is given faults for some of its requests — the agent a 500 and a
    dropped connection (the agent's: it failed), the user's model a 502, a dropped connection and
    a stall past its read timeout (the service's) and a reply that is no chat completion (the
    user's), the judge a 500 and a 429 past its patience (the service's) and a reply that is no
    chat completion (the judge's). The run is played by
    ``RunJournal.play`` into a project's ``results/``, then ``convy report`` on it prints the line
    the command prints, and the tile is read from the report's view.

    .venv/bin/python bench/causes.py

Nothing is timed: the figures are counts, the same on any machine.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.standin import Drop, Stall, StandIn, Status, WrongShape  # noqa: E402

from convy.bench import Bench
from convy.http import JsonEndpoint
from convy.httpagents import ChatAgent
from convy.judge import ChatJudge, Models
from convy.model import OpenAiModel
from convy.records import Limits, ModelNames, RunSpec
from convy.report import Summary  # noqa: E402
from convy.runs import Runs  # noqa: E402
from convy.scenario import Scenario  # noqa: E402
from convy.storage import RunJournal
from convy.views import RunView  # noqa: E402

CONVY = Path(sys.executable).with_name("convy")
ATTEMPTS = 10


def tile(view: RunView) -> str:
    """The report's "Why not passed" tile, as its lines read."""
    lines = [f"Why not passed: {view.not_passed}"]
    for one in view.causes:
        share = f" · {one.share:.0%}" if one.count and one.share is not None else ""
        lines.append(f"  {one.cause}: {one.count}{share}")
    return "\n".join(lines)


def demo(folder: Path) -> None:
    subprocess.run([str(CONVY), "init", str(folder)], check=True, capture_output=True)
    done = subprocess.run([str(CONVY), "run"], cwd=folder, capture_output=True, text=True, check=False)
    said = [line for line in done.stdout.splitlines() if "passed" in line and ("attempts" in line or "by cause" in line)]
    print("(a) the template demo, offline: convy init demo && cd demo && convy run")
    print("\n".join(f"  $ {line}" for line in said))
    (run,), _ = Runs(folder / "results").read()
    print("\n".join(f"  {line}" for line in tile(Summary(run).view()).splitlines()))


class Roles:
    """The stand-ins' answers: the agent's, the simulated user's (two messages, then done) and the judge's."""

    def agent(self, request: dict[str, Any]) -> str:
        return "Your order A-3100 ships tomorrow."

    def user(self, request: dict[str, Any]) -> str:
        said = sum(1 for message in request["messages"] if message["role"] == "assistant")
        return ("Hi, where is my order A-3100?", "Thanks, when exactly?")[said] if said < 2 else "###STOP###"

    def judge(self, request: dict[str, Any]) -> str:
        return json.dumps({"evidence": "ships tomorrow", "reason": "it gave a date", "pass": True, "confidence": 0.9})


def faulted(folder: Path) -> None:
    roles = Roles()
    scenario = Scenario(id="orders/where", user="You want to know where your order A-3100 is.", judge=("The agent gives a date.",))
    with StandIn(reply=roles.agent) as agent, StandIn(reply=roles.user) as user, StandIn(reply=roles.judge) as judge:
        agent.faults(Status(500), Drop())
        user.faults(Status(502), Drop(), Stall(60), WrongShape())
        judge.faults(Status(500), Status(429, retry_after="1"), WrongShape())
        limits = Limits(agent_places=1, user_places=1, judge_places=1, judge_patience=0.5)
        bench = Bench(
            ChatAgent(JsonEndpoint(agent.url + "/v1/chat/completions"), "agent-model"),
            Models(
                user=OpenAiModel("user-model", user.url + "/v1", timeout=2.0),
                judge=ChatJudge(OpenAiModel("judge-model", judge.url + "/v1")),
            ),
            limits,
        )
        spec = RunSpec(
            id="faulted", agent="shop", scenarios=(scenario,), attempts=ATTEMPTS, limits=limits, trust=0.5,
            models=ModelNames(user="user-model", judge="judge-model"),
        )
        asyncio.run(RunJournal(folder / "results" / "shop" / "faulted").play(spec, bench))
    (folder / "pyproject.toml").write_text("[tool.convy]\n", encoding="utf-8")
    done = subprocess.run([str(CONVY), "report", "faulted"], cwd=folder, capture_output=True, text=True, check=False)
    print(f"(b) a run on the stand-in with faults injected over HTTP ({ATTEMPTS} attempts): convy report faulted")
    print("\n".join(f"  $ {line}" for line in done.stdout.splitlines() if "by cause" in line))
    (run,), _ = Runs(folder / "results").read()
    summary = Summary(run)
    print("\n".join(f"  {line}" for line in tile(summary.view()).splitlines()))
    print("  each attempt not passed: cause, then what its line records")
    for attempt in summary.attempts():
        cause = attempt.cause()
        if cause is not None:
            why = re.sub(r"http://127\.0\.0\.1:\d+", "<stand-in>", getattr(attempt.outcome.result, "reason", ""))
            print(f"    #{attempt.outcome.attempt:<3} {cause:<8} {attempt.outcome.stop:<13} {why[:110]}")


def main() -> None:
    with tempfile.TemporaryDirectory() as temporary:
        demo(Path(temporary) / "demo")
        print()
        faulted(Path(temporary) / "faulted")


if __name__ == "__main__":
    main()
