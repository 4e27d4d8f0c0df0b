"""A demonstration, not a benchmark: one scenario played across variants of its user, offline.

It writes a small project into FOLDER:

- ``scenarios/refunds/upset.yaml``, whose ``matrix:`` plays a calm and an angry user, writing in
  English and in German, each as one of the project's two personas (``personas.yaml``): 8
  variants, each filling the ``{{ slots }}`` of the user's instructions;
- ``scenarios/orders/status.yaml``, a scenario without a matrix beside it;
- a simulated user (``FakeModel``) that speaks as its filled instructions say: shouting when it is
  told it is angry, in German when told so;
- an agent (``FakeAgent``) that refunds a calm request almost always and a shouted one far less
  often (a seeded coin per message), so the report's variant dimensions have something to show.

Then, with the real ``convy`` command: ``convy check`` (the variants planned), ``convy run``, and
``convy export`` (the tables' ``variant_of`` and ``variant`` columns). The report's Variants
section shows each value's pass rate with its interval, and its scenario table groups and filters
by a matrix key (``#group=variant:mood``).

    python bench/matrix_demo.py /tmp/matrix-demo
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

CONVY = str(Path(sys.executable).with_name("convy"))

SCENARIO = """\
id: refunds/upset
tags: [refunds]
user: >-
  You are a {{ mood }} customer writing in {{ language }}. You are {{ age }} and your comfort
  with technology is {{ tech }}. Ask for a refund of order A-1234, which arrived broken.
matrix:
  mood: [calm, angry]
  language: [English, German]
  persona: all
judge:
  - check: {called: issue_refund}
  - check: {not_said: "(?i)calm down"}
"""

STATUS = """\
id: orders/status
user: You want to know where order A-1234 is. Ask once, politely.
judge:
  - check: {called: lookup_order}
"""

PERSONAS = """\
- name: retiree
  age: 78
  tech: low
- name: student
  age: 20
  tech: high
"""

MODELS = '''\
"""The simulated user speaks as its filled instructions say; no judge model is needed: every
entry of the scenarios' judge lists is a check, decided by code."""

from convy import Models
from convy.prompt import STOP
from convy.fakes import FakeModel

LINES = {
    ("angry", "English"): "THIS IS RIDICULOUS! Order A-1234 arrived BROKEN. Refund me NOW!",
    ("angry", "German"): "DAS IST EINE FRECHHEIT! Bestellung A-1234 kam KAPUTT an. Geld zurueck, SOFORT!",
    ("calm", "English"): "Hello, order A-1234 arrived broken. Could I have a refund, please?",
    ("calm", "German"): "Guten Tag, Bestellung A-1234 kam kaputt an. Koennte ich eine Rueckerstattung bekommen?",
}


def spoken(messages):
    told = messages[0].content  # the filled simulator prompt
    if len(messages) > 2:  # the agent has answered: the user is done
        return STOP
    mood = "angry" if "angry customer" in told else "calm"
    language = "German" if "writing in German" in told else "English"
    where = "Where is order A-1234?" if "where order A-1234 is" in told else LINES[(mood, language)]
    return where


models = Models(user=FakeModel(spoken, name="scripted-user"))
'''

AGENT = '''\
"""A support bot that refunds a calm request almost always, and a shouted one less often."""

import random

from convy.agent import Answer, Call
from convy.fakes import FakeAgent

coin = random.Random(11)


def answer(text):
    if "where" in text.lower():
        return Answer("Order A-1234 was delivered on Monday.", steps=(Call("lookup_order", {"order": "A-1234"}),))
    shouting = sum(1 for letter in text if letter.isupper()) > len(text) / 3
    german = "Bestellung" in text
    refuses = coin.random() < (0.55 if shouting else 0.08) + (0.1 if german else 0.0)
    if refuses:
        return Answer("Please calm down. I cannot help with refunds in this tone.")
    return Answer("I am sorry about that: I have refunded order A-1234.", steps=(Call("issue_refund", {"order": "A-1234"}),))


agent = FakeAgent(answer)
'''


def convy(folder: Path, *arguments: str) -> str:
    environment = {name: value for name, value in os.environ.items() if not name.startswith("CONVY_")}
    done = subprocess.run([CONVY, "-C", str(folder), *arguments], capture_output=True, text=True, env=environment)
    shown = (done.stdout + done.stderr).rstrip()
    print(f"$ convy {' '.join(arguments)}    (exit {done.returncode})")
    print("\n".join("  " + line for line in shown.splitlines()))
    print()
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("folder", type=Path)
    parser.add_argument("-k", "--attempts", type=int, default=12, help="attempts per variant (default 12)")
    options = parser.parse_args()
    folder: Path = options.folder
    (folder / "scenarios" / "refunds").mkdir(parents=True, exist_ok=True)
    (folder / "scenarios" / "orders").mkdir(parents=True, exist_ok=True)
    (folder / "agents").mkdir(exist_ok=True)
    (folder / "scenarios" / "refunds" / "upset.yaml").write_text(SCENARIO, encoding="utf-8")
    (folder / "scenarios" / "orders" / "status.yaml").write_text(STATUS, encoding="utf-8")
    (folder / "personas.yaml").write_text(PERSONAS, encoding="utf-8")
    (folder / "models.py").write_text(MODELS, encoding="utf-8")
    (folder / "agents" / "bot.py").write_text(AGENT, encoding="utf-8")
    (folder / "pyproject.toml").write_text(f"[tool.convy]\nattempts = {options.attempts}\n", encoding="utf-8")
    convy(folder, "check")
    convy(folder, "run")
    convy(folder, "export")
    report = max((folder / "results" / "bot").glob("*/report.html"), key=lambda path: path.stat().st_mtime_ns)
    print(f"report grouped by mood: file://{report.resolve()}#group=variant:mood")


if __name__ == "__main__":
    main()
