"""A demonstration, not a benchmark: a small project of fakes whose judge cannot make up its mind
on one claim, to show offline what repeated and panel judging find.

It writes a project into FOLDER: an agent that answers politely-ish, three scenarios, and a
``models.py`` whose judge is a ``ChatJudge`` on ``convy.fakes.FickleModel`` (decides every claim
that says "politely" by a seeded coin, every other one the same way each time, quoting the agent's
words as evidence). With ``--panel`` the judge is a panel of three such judges, one of them named
like an OpenAI model, and the agent says it runs on ``gpt-4o-mini``: the report names that judge
as a possible bias. Then:

    python bench/ambiguous.py /tmp/ambiguous
    convy -C /tmp/ambiguous run --judge-repeats 5      # each claim asked 5 times
    convy -C /tmp/ambiguous report                     # results/bot/<run>/report.html

The report's "Judging" section shows the claim "The agent answered politely" as an ambiguous claim
(rewrite it), with its self-agreement and the attempts whose votes split, each a click away.
"""

from __future__ import annotations

import argparse
from pathlib import Path

AGENT = '''\
from convy.fakes import FakeAgent

agent = FakeAgent(lambda text: "Hello! I can refund your order 1234 today. Anything else?")
agent.model = "gpt-4o-mini"  # the model this agent says it runs on: the report compares judges' providers with it
'''

MODELS = '''\
from convy import ChatJudge, Models
from convy.fakes import FickleModel

models = Models(judge=ChatJudge(FickleModel(word="politely", seed=7)))
'''

PANEL = '''\
from convy import ChatJudge, Models
from convy.fakes import FickleModel

models = Models(
    judge=[
        ChatJudge(FickleModel(word="politely", seed=7, name="fickle-a")),
        ChatJudge(FickleModel(word="politely", seed=8, name="fickle-b")),
        ChatJudge(FickleModel(word="politely", seed=9, name="openai/gpt-fickle")),
    ]
)
'''

SCENARIOS = {
    "refund.yaml": (
        "script: [Hi, my order 1234 never came. Can I get a refund?]\n"
        "judge:\n"
        "  - The agent offered a refund\n"
        "  - The agent answered politely\n"
    ),
    "greeting.yaml": (
        "script: [Hello?]\n"
        "judge:\n"
        "  - The agent greeted the user\n"
        "  - claim: How helpful was the answer\n"
        "    grades: [poor, fair, good]\n"
        "    pass: fair\n"
    ),
    "order.yaml": (
        "script: [Where is order 1234?]\n"
        "judge:\n"
        "  - The agent named the order number\n"
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--panel", action="store_true", help="a panel of three fickle judges")
    parser.add_argument("--attempts", type=int, default=6)
    options = parser.parse_args()
    folder: Path = options.folder
    (folder / "agents").mkdir(parents=True, exist_ok=True)
    (folder / "agents" / "bot.py").write_text(AGENT, encoding="utf-8")
    (folder / "models.py").write_text(PANEL if options.panel else MODELS, encoding="utf-8")
    (folder / "scenarios").mkdir(exist_ok=True)
    for name, text in SCENARIOS.items():
        (folder / "scenarios" / name).write_text(text, encoding="utf-8")
    (folder / "pyproject.toml").write_text(f"[tool.convy]\nattempts = {options.attempts}\n", encoding="utf-8")
    print(f"wrote {folder}: now  convy -C {folder} run --judge-repeats 5  and  convy -C {folder} report")


if __name__ == "__main__":
    main()
