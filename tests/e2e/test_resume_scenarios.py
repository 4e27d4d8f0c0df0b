"""``convy resume`` and the scenario files edited or removed since the run started: a resume plays
the copy of each scenario the run kept, so such a change is refused with the two ways on (a new
run, or ``--old-scenarios``), and with that option said before the rest is played."""

from __future__ import annotations

import json
from pathlib import Path

from test_mistakes import GREETING, SOUND, convy, project

BYE = "script:\n  - Bye\njudge:\n  - check: {said: Bye}\n"


def interrupted(folder: Path) -> Path:
    """A run of two scenarios, two attempts each, that kept only bye's: greeting's are left to play."""
    project(folder, {"scenarios/bye.yaml": BYE, "pyproject.toml": "[tool.convy]\nattempts = 2\n"})
    done = convy(folder, "run")
    assert done.returncode == 0, done.stderr
    (run,) = folder.glob("results/bot/*/run.json")
    lines = (run.parent / "attempts.jsonl").read_text().splitlines(keepends=True)
    (run.parent / "attempts.jsonl").write_text("".join(line for line in lines if json.loads(line)["scenario"] == "bye"))
    return run.parent


def kept(run: Path) -> list[tuple[str, int]]:
    return sorted((line["scenario"], line["attempt"]) for line in map(json.loads, (run / "attempts.jsonl").read_text().splitlines()))


def test_an_edited_scenario_is_refused_naming_the_file_and_both_ways_on(tmp_path: Path) -> None:
    run = interrupted(tmp_path)
    before = (run / "attempts.jsonl").read_bytes()
    (tmp_path / "scenarios/greeting.yaml").write_text(GREETING.replace("Hi!", "Hi there!"))

    done = convy(tmp_path, "resume", run.name)

    short = run.name.rsplit("-", 1)[-1]
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"convy: cannot resume {run.name}: scenarios/greeting.yaml changed (scenario greeting) since the run started; "
        f"start a new run (convy run bot), or play the copy the run kept: convy resume {short} --old-scenarios"
    ]
    assert (run / "attempts.jsonl").read_bytes() == before


def test_a_removed_scenario_is_refused_as_removed(tmp_path: Path) -> None:
    run = interrupted(tmp_path)
    (tmp_path / "scenarios/bye.yaml").unlink()

    done = convy(tmp_path, "resume", run.name)

    assert done.returncode == 2, done.stderr
    assert "scenarios/bye.yaml was removed (scenario bye) since the run started" in done.stderr
    assert "Traceback" not in done.stderr


def test_old_scenarios_plays_the_kept_copy_and_says_so(tmp_path: Path) -> None:
    run = interrupted(tmp_path)
    (tmp_path / "scenarios/greeting.yaml").write_text(GREETING.replace("Hi!", "Hi there!"))
    (tmp_path / "scenarios/bye.yaml").unlink()

    done = convy(tmp_path, "resume", run.name, "--old-scenarios")

    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == (
        f"resuming {run.name} with the copy it kept: scenarios/bye.yaml was removed (scenario bye); "
        "scenarios/greeting.yaml changed (scenario greeting) since the run started"
    )
    assert kept(run) == [("bye", 1), ("bye", 2), ("greeting", 1), ("greeting", 2)]
    said = [line["transcript"]["turns"][0]["message"] for line in map(json.loads, (run / "attempts.jsonl").read_text().splitlines()) if line["scenario"] == "greeting"]
    assert set(said) == {"Hi!"}, said


def test_a_file_the_run_does_not_play_may_change(tmp_path: Path) -> None:
    """A scenario added since, or one the run did not choose, changes nothing the resume plays."""
    run = interrupted(tmp_path)
    (tmp_path / "scenarios/new.yaml").write_text(GREETING)

    done = convy(tmp_path, "resume", run.name)

    assert done.returncode == 0, done.stderr
    assert "changed" not in done.stderr
    assert len(kept(run)) == 4


def test_an_unchanged_project_resumes_without_a_word(tmp_path: Path) -> None:
    run = interrupted(tmp_path)

    done = convy(tmp_path, "resume", run.name)

    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert len(kept(run)) == 4


assert "scenarios/greeting.yaml" in SOUND


def test_a_persona_changed_is_said_beside_the_file_that_reads_it(tmp_path: Path) -> None:
    """A variant filled from personas.yaml changes with it, its scenario file untouched: the line
    says the file or its persona changed."""
    project(tmp_path, {
        "personas.yaml": "- name: retiree\n  age: 78\n",
        "scenarios/greeting.yaml": "matrix: {persona: [retiree]}\nscript: ['Hi, I am {{ age }}']\njudge:\n  - check: {said: Hi}\n",
    })
    assert convy(tmp_path, "run").returncode == 0
    (run,) = tmp_path.glob("results/bot/*/run.json")
    (run.parent / "attempts.jsonl").write_text("")
    (tmp_path / "personas.yaml").write_text("- name: retiree\n  age: 80\n")

    done = convy(tmp_path, "resume", run.parent.name)

    assert done.returncode == 2, done.stderr
    assert "scenarios/greeting.yaml or its persona changed (scenario greeting[persona=retiree]) since the run started" in done.stderr


def test_a_file_renamed_with_its_id_kept_is_the_same_scenario(tmp_path: Path) -> None:
    """bye.yaml renamed farewell.yaml with `id: bye` and its content kept plays the same scenario:
    the resume goes on without a word. Renamed and edited, it is said as changed, by its new name."""
    run = interrupted(tmp_path)
    (tmp_path / "scenarios/bye.yaml").unlink()
    (tmp_path / "scenarios/farewell.yaml").write_text("id: bye\n" + BYE.replace("Bye\n", "Bye, then\n", 1))

    done = convy(tmp_path, "resume", run.name)

    short = run.name.rsplit("-", 1)[-1]
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"convy: cannot resume {run.name}: scenarios/farewell.yaml changed (scenario bye) since the run started; "
        f"start a new run (convy run bot), or play the copy the run kept: convy resume {short} --old-scenarios"
    ]
    (tmp_path / "scenarios/farewell.yaml").write_text("id: bye\n" + BYE)

    done = convy(tmp_path, "resume", run.name)

    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert len(kept(run)) == 4


def test_a_run_started_with_places_capped_resumes_with_them_and_says_so_once(tmp_path: Path) -> None:
    """A run.json written before places with no cap grew holds 4, 8 and 8 (that convy's defaults),
    at which it played. A resume plays as the run started: those stay caps, though the project's
    settings now leave the places uncapped, and the resume says so, once, before it plays."""
    run = interrupted(tmp_path)
    written = json.loads((run / "run.json").read_text())
    written["spec"]["limits"] |= {"agent_places": 4, "user_places": 8, "judge_places": 8}
    (run / "run.json").write_text(json.dumps(written))

    done = convy(tmp_path, "resume", run.name)

    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"resuming {run.name} with the places it started with: agent_places 4 (now no cap), "
        "user_places 8 (now no cap), judge_places 8 (now no cap); a new run takes the settings now"
    ]
    assert len(kept(run)) == 4
    assert json.loads((run / "run.json").read_text())["spec"]["limits"]["agent_places"] == 4
