"""A demonstration, not a benchmark: two judges measured against the same people, offline.

It writes the project of ``bench/ambiguous.py`` into FOLDER, with a second judge named in
``models.py``'s ``judges``: ``steady``, which decides every claim the same way each time. Then,
with the real ``convy`` command:

1. ``convy run`` plays the project; its judge (``FickleModel``) decides the claim "The agent
   answered politely" by a coin.
2. A person's labels: for every decision of every claim, right when it says the claim held (the
   agent's answer is polite, greets, refunds and names the order), except "How helpful was the
   answer", which the person finds failed. They are written in the format
   the scenario window downloads (docs/judging.md, "Human labels"), the file a person would get by
   pressing ✓ and ✗ in the window (``tests/browser/test_labels_browser.py`` does that in Chromium).
3. ``convy labels add`` keeps them in the run's folder; ``convy labels show`` measures the judge.
4. ``convy rejudge --judge steady`` decides the same dialogues again with the other judge: the
   labels follow the dialogues, so ``convy labels show`` of the new run measures it against the
   same people, and ``convy compare`` of the two puts both judges in one table.

    python bench/labels_demo.py /tmp/labels-demo
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from convy.judge import Verdict
from convy.outcome import Outcome

HERE = Path(__file__).resolve().parent
CONVY = str(Path(sys.executable).with_name("convy"))

JUDGES = '''

from convy.fakes import FickleModel as _Steady

# A judge that decides every claim the same way each time, for `convy rejudge --judge steady`.
judges = {"steady": ChatJudge(_Steady(word="no claim says this", seed=1, name="steady"))}
'''


def convy(folder: Path, *arguments: str) -> str:
    environment = {name: value for name, value in os.environ.items() if not name.startswith("CONVY_")}
    done = subprocess.run([CONVY, "-C", str(folder), *arguments], capture_output=True, text=True, env=environment)
    shown = (done.stdout + done.stderr).rstrip()
    print(f"$ convy {' '.join(arguments)}    (exit {done.returncode})")
    print("\n".join("  " + line for line in shown.splitlines()))
    print()
    return done.stdout


def newest(folder: Path) -> Path:
    return max((folder / "results" / "bot").glob("*/run.json"), key=lambda path: path.stat().st_mtime_ns).parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("folder", type=Path)
    options = parser.parse_args()
    folder: Path = options.folder
    subprocess.run([sys.executable, str(HERE / "ambiguous.py"), str(folder)], check=True, capture_output=True)
    with (folder / "models.py").open("a", encoding="utf-8") as models:
        models.write(JUDGES)

    convy(folder, "run")
    run = newest(folder)
    labels = []
    at = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    for line in (run / "attempts.jsonl").read_bytes().splitlines():
        outcome = msgspec.json.decode(line, type=Outcome)
        match outcome.result:
            case Verdict(claims=claims):
                for claim in claims:
                    labels.append(
                        {
                            "fingerprint": outcome.transcript.fingerprint(),
                            "scenario": outcome.scenario,
                            "attempt": outcome.attempt,
                            "claim": claim.claim,
                            "held": claim.held,
                            # The person: every claim held in these dialogues but one, which
                            # they found not helpful enough whatever the judge graded.
                            "right": claim.held == (claim.claim != "How helpful was the answer"),
                            "at": at,
                        }
                    )
            case _:
                pass
    file = folder / "labels-from-the-window.json"
    file.write_text(json.dumps({"version": 1, "run": {"agent": "bot", "id": run.name}, "labels": labels}), encoding="utf-8")
    print(f"wrote {len(labels)} labels to {file}, as the window downloads them\n")
    convy(folder, "labels", "add", run.name, str(file))
    convy(folder, "labels", "show", run.name)
    convy(folder, "rejudge", run.name, "--judge", "steady")
    again = newest(folder)
    convy(folder, "labels", "show", again.name)
    convy(folder, "compare", run.name, again.name)


if __name__ == "__main__":
    main()
