"""An outside audit of ``convy rejudge`` and human labels: what someone who did not write them would
try. Hostile run folders (an origin leading out of ``results/``, a source that lost lines since
it finished), hostile labels files, a judge's server that limits its rate and echoes its key.

The real ``convy`` command throughout, on a project of fakes (``test_rejudge.Fakes``) or, for the
judge's server, the template project on the stand-in.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import msgspec
import pytest
from test_rejudge import AGENT, GREETS, LEAVES, MODELS, Fakes

from convy.scenario import Outcome


@pytest.fixture
def made(tmp_path: Path) -> Fakes:
    """test_rejudge's project of fakes: an echoing agent, a judge that holds every claim, a strict one."""
    for folder in ("agents", "scenarios"):
        (tmp_path / folder).mkdir()
    (tmp_path / "agents" / "bot.py").write_text(AGENT)
    (tmp_path / "models.py").write_text(MODELS)
    (tmp_path / "scenarios" / "greets.yaml").write_text(GREETS)
    (tmp_path / "scenarios" / "leaves.yaml").write_text(LEAVES)
    (tmp_path / "pyproject.toml").write_text("[tool.convy]\nattempts = 3\n")
    return Fakes(tmp_path)


def run_json(made: Fakes, run: str) -> Path:
    return made.folder / "results" / "bot" / run / "run.json"


def rewritten(path: Path, change: dict[str, object], where: str = "spec") -> None:
    data = json.loads(path.read_text())
    data[where] |= change
    path.write_text(json.dumps(data))


def attempts(made: Fakes, run: str) -> Counter[tuple[str, int]]:
    return Counter((outcome.scenario, outcome.attempt) for outcome in made.outcomes(run))


# --- origins that lead out of results/ ---------------------------------------------------------


@pytest.mark.parametrize(
    ("origin", "field"),
    [
        ({"agent": "/ABSOLUTE", "run": "evil"}, "spec.origin.agent"),  # joined to results/, it replaces it
        ({"agent": "..", "run": ".."}, "spec.origin.agent"),
        ({"agent": "bot", "run": "../../outside/evil"}, "spec.origin.run"),
        ({"agent": "bot", "run": "\x1b]0;owned\x07run"}, "spec.origin.run"),
        ({"agent": "bot", "run": "r" * 201}, "spec.origin.run"),
    ],
)
def test_a_rejudged_run_whose_origin_leads_out_of_results_is_refused_naming_the_field(
    made: Fakes, tmp_path: Path, origin: dict[str, str], field: str
) -> None:
    """A re-judged run's run.json is edited so its origin names a folder outside results/ where a sound run
    lies (a copy of the source, its id matching): ``convy rejudge`` and ``convy resume`` of it read nothing
    there and exit 2 naming run.json and the field; ``convy labels show`` says run.json is damaged (its own
    labels still count). Before the fix the absolute path was followed (results/ / "/x" is "/x") and its
    attempts.jsonl read as the dialogues, and labels show said nothing."""
    source = made.played()
    again = made.rejudged(source)
    outside = tmp_path / "outside" / "evil"
    shutil.copytree(made.folder / "results" / "bot" / source, outside)
    rewritten(outside / "run.json", {"id": "evil"})
    origin = {name: value.replace("/ABSOLUTE", str(outside.parent)) for name, value in origin.items()}
    rewritten(run_json(made, again), {"origin": origin})

    shown = made.ran("labels", "show", again)
    assert shown.returncode == 0 and f"read results/bot/{again}: run.json is damaged" in shown.stderr
    for command in (("rejudge", again), ("resume", again)):
        ran = made.ran(*command)
        assert ran.returncode == 2, (command, ran.stdout, ran.stderr)
        assert f"{again}/run.json" in ran.stderr and field in ran.stderr, (command, ran.stderr)
        assert "\x1b" not in ran.stdout + ran.stderr
        assert str(outside) not in ran.stderr


# --- a source that changed after it finished ----------------------------------------------------


def test_a_source_that_lost_lines_stops_the_rejudge_naming_them_and_resume_finishes_once_restored(made: Fakes) -> None:
    """The source's attempts.jsonl loses its last two lines after the run finished (its run.json still says
    finished): ``convy rejudge`` re-judges what is there, then exits 2 naming the file and the dialogues
    missing, the new run marked interrupted, not finished. Before the fix it said finished, exit 0, with 4 of
    6 attempts and one scenario's pass rate over a single attempt. Once the lines are back, ``convy resume``
    re-judges just the two, each attempt kept once."""
    source = made.played()
    file = made.folder / "results" / "bot" / source / "attempts.jsonl"
    whole = file.read_bytes()
    lines = whole.splitlines(keepends=True)
    lost = [msgspec.json.decode(line, type=Outcome) for line in lines[-2:]]
    file.write_bytes(b"".join(lines[:-2]))

    ran = made.ran("rejudge", source)

    assert ran.returncode == 2, ran.stdout + ran.stderr
    again = made.newest()
    names = ", ".join(f"{one.scenario} #{one.attempt}" for one in sorted(lost, key=lambda one: (one.scenario, one.attempt)))
    assert f"{file}: 2 of the 6 recorded dialogues to re-judge are not there ({names})" in ran.stderr
    assert f"run {again} stopped and keeps 4 of 6 attempts" in ran.stderr
    assert json.loads(run_json(made, again).read_text())["status"]["type"] == "interrupted"

    resumed = made.ran("resume", again)
    assert resumed.returncode == 2 and "2 of the 2 recorded dialogues to re-judge are not there" in resumed.stderr

    file.write_bytes(whole + lines[0])  # restored, and one line doubled: its dialogue is re-judged once
    resumed = made.ran("resume", again)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert attempts(made, again) == Counter({key: 1 for key in attempts(made, source)}) and len(attempts(made, again)) == 6
    assert json.loads(run_json(made, again).read_text())["status"]["type"] == "finished"
