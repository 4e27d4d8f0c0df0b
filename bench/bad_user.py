"""A run against a deliberately bad simulated user, offline, with every check of the user firing.

It writes a project in a temporary folder and plays it with the real ``convy`` command:

- the agent (``agents/shop.py``) is a ``FakeAgent`` that answers a greeting with a question and
  anything else plainly;
- the simulated user is ``convy.fakes.BadUser``, one per scenario, each misbehaving one way: it
  reads out its instructions (``leaked``), says its first message again (``repeated``), gives an
  empty reply (``empty``), says it is done before it began (``first_turn_stop``), never says it is
  done (``no_stop``), speaks as the agent (``role_swap``), makes up an order number
  (``unsupported``), or says it is done just after the agent asked it something
  (``stopped_on_question``); a well-behaved one plays the last scenario;
- the judge is a ``ChatJudge`` on ``convy.fakes.RuledModel``, which holds every claim and decides
  the model checks, which ``[tool.convy] user_checks`` asks for.

Then it prints ``convy run``'s lines and, from ``attempts.jsonl``, each attempt's faults (check,
turn, by code or a model, what shows it) and its result: every attempt whose user misbehaved is
not judged, with the fault as its reason (but ``no_stop``, kept and judged). ``--count`` plays it with ``user_faults = "count"``:
the faults kept, every attempt judged.

    python bench/bad_user.py [--count]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CONVY = Path(sys.executable).with_name("convy")

BEHAVIOURS = ("leaks", "repeats", "empty", "stops_at_once", "never_stops", "swaps", "invents", "stops_after", "behaves")

MODELS = '''
from convy import ChatJudge, Models
from convy.fakes import BadUser, RuledModel

BEHAVIOURS = {BEHAVIOURS!r}


class ByScenario:
    """The bad user a scenario asks for, by the word its instructions open with."""

    name = "bad-user"

    def __init__(self):
        self.users = {{behaviour: BadUser(**{{behaviour: True}}) for behaviour in BEHAVIOURS[:-2]}}
        self.users["stops_after"] = BadUser(stops_after=1)  # stops on the agent's question
        self.users["behaves"] = BadUser()

    async def reply(self, messages):
        told = messages[0].content
        behaviour = next(word for word in BEHAVIOURS if f"[{{word}}]" in told)
        return await self.users[behaviour].reply(messages)


models = Models(user=ByScenario(), judge=ChatJudge(RuledModel()))
'''

AGENT = '''
from convy.fakes import FakeAgent

def answer(text):
    """A question to a greeting, and a plain answer to anything else."""
    if text.startswith("Hello"):
        return "I can help with that. Could you tell me your order number?"
    return "Thank you. Your refund of order A-1234 is on its way."


agent = FakeAgent(answer)
'''

SCENARIO = """\
id: {behaviour}
user: "[{behaviour}] You are Dana. Your kettle, order A-1234, arrived broken. You want a refund."
max_turns: 4
judge:
  - The agent offered to help.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", action="store_true", help='play with user_faults = "count"')
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="convy-bad-user-") as folder:
        project = Path(folder)
        (project / "agents").mkdir()
        (project / "scenarios").mkdir()
        (project / "agents" / "shop.py").write_text(AGENT)
        (project / "models.py").write_text(MODELS.format(BEHAVIOURS=BEHAVIOURS))
        for behaviour in BEHAVIOURS:
            (project / "scenarios" / f"{behaviour}.yaml").write_text(SCENARIO.format(behaviour=behaviour))
        (project / "pyproject.toml").write_text(
            "[tool.convy]\nattempts = 1\n"
            'user_checks = ["role_swap", "stopped_on_question", "unsupported"]\n'
            + ('user_faults = "count"\n' if options.count else "")
        )
        done = subprocess.run([str(CONVY), "run", "shop"], cwd=project, capture_output=True, text=True, check=False)
        print(f"$ convy run shop    (exit {done.returncode})")
        print(done.stdout.rstrip())
        print(done.stderr.rstrip())
        (attempts,) = (project / "results" / "shop").glob("*/attempts.jsonl")
        print(f"\n{attempts.relative_to(project)}: each attempt's user faults")
        for line in attempts.read_text().splitlines():
            outcome = json.loads(line)
            result = outcome["result"]
            said = f"not judged: {result['reason']}" if result["type"] == "no_verdict" else result["type"]
            print(f"\n  {outcome['scenario']:<14} stop {outcome['stop']:<12} {said}")
            for fault in outcome.get("user_faults", []):
                print(f"    {fault['check']:<20} turn {fault['turn']:<3} by {fault.get('by', 'code'):<6} {fault.get('detail', '')}")
            for unchecked in outcome.get("user_unchecked", []):
                print(f"    {unchecked['check']:<20} not decided: {unchecked['reason']}")


if __name__ == "__main__":
    main()
