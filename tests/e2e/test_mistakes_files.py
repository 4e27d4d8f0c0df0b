"""Mistakes a user makes with the project's files and the command line (issue 25, items 3, 4 and 8),
each played through the real ``convy`` command on a project in ``tmp_path``, as the user made it:
a scenario saved as ``.yml``, the same scenario saved twice, an empty ``scenarios/``, a typo in
``--scenarios`` or ``--tag``, a JSON agent whose ``calls=`` path is wrong, the agent named by the
path tab completion gives, a run id prefix that two runs share. Each asserts the one message that
says what is wrong and how to fix it, and the exit code, and that nothing looks like a verdict.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.process import run_convy
from support.standin import StandIn

MODELS = """\
from convy import Absent, Models

models = Models(user=Absent("no user model here"), judge=Absent("no judge here"))
"""

ECHO = """\
from convy.fakes import Echo

agent = Echo()
"""

GREETING = """\
script:
  - Hi!
judge:
  - check: {said: "Hi"}
"""


def project(folder: Path, scenarios: dict[str, str], agent: str = ECHO, name: str = "bot") -> Path:
    (folder / "agents").mkdir(parents=True)
    (folder / "agents" / f"{name}.py").write_text(agent, encoding="utf-8")
    (folder / "models.py").write_text(MODELS, encoding="utf-8")
    (folder / "scenarios").mkdir()
    for path, text in scenarios.items():
        (folder / "scenarios" / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / "scenarios" / path).write_text(text, encoding="utf-8")
    (folder / "pyproject.toml").write_text("[tool.convy]\nattempts = 1\n", encoding="utf-8")
    return folder


def kept(folder: Path) -> list[dict[str, object]]:
    """Every attempt line kept under results/."""
    return [json.loads(line) for path in sorted(folder.glob("results/*/*/attempts.jsonl")) for line in path.read_text().splitlines()]


# --- item 4: every scenario file is read ------------------------------------------------------


def test_a_scenario_saved_as_yml_is_played(tmp_path: Path) -> None:
    """greeting.yml (the editor's default extension) is a scenario like greeting.yaml: chosen by
    its id and by the path tab completion gives, and played."""
    folder = project(tmp_path, {"greeting.yml": GREETING, "orders/late.yaml": GREETING})
    for chosen in ("greeting", "scenarios/greeting.yml", "./scenarios/greeting.yml"):
        ran = run_convy(folder, "run", "--scenarios", chosen)
        assert ran.returncode == 0, ran.stderr
        assert "bot: 1 passed, 0 failed, 0 not judged of 1 attempt" in ran.stdout
    assert [line["scenario"] for line in kept(folder)] == ["greeting"] * 3


def test_convy_check_counts_a_yml_scenario(tmp_path: Path) -> None:
    folder = project(tmp_path, {"greeting.yml": GREETING, "late.yaml": GREETING})
    checked = run_convy(folder, "check")
    assert checked.returncode == 0, checked.stderr
    assert "bot: 2 scenarios × 1 attempt = 2 attempts" in checked.stdout


def test_a_broken_yml_scenario_is_named_by_convy_check(tmp_path: Path) -> None:
    """A .yml file is checked as a .yaml one is: its unknown field named with its file."""
    folder = project(tmp_path, {"greeting.yml": GREETING + "colour: blue\n"})
    checked = run_convy(folder, "check")
    assert checked.returncode == 2
    assert "convy: scenarios/greeting.yml: colour: unknown field; the fields here are id, judge, user, vars, script, max_turns, tags, matrix, fail_under, tools, state, approvals" in checked.stderr.splitlines()[0]


def test_pytest_convy_collects_a_yml_scenario_as_its_file(tmp_path: Path) -> None:
    """`pytest --convy` has an item for a .yml scenario, and names its file where it says why one
    is skipped."""
    chat = "user: Ask about your order.\njudge:\n  - The agent is polite.\n"
    folder = project(tmp_path, {"greeting.yml": GREETING, "chat.yml": chat})
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("CONVY_", "PYTEST_"))}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--convy", "-v", "-ra", "-p", "no:cacheprovider"],
        cwd=folder, env=environment, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "convy::bot::greeting PASSED" in done.stdout
    assert "SKIPPED [1] scenarios/chat.yml: for agent bot, needs a model for the simulated user" in done.stdout


def test_the_same_scenario_saved_as_yaml_and_yml_is_refused_naming_both(tmp_path: Path) -> None:
    folder = project(tmp_path, {"greeting.yaml": GREETING, "greeting.yml": GREETING.replace("Hi!", "Hello!")})
    expected = "convy: scenarios/greeting.yaml and scenarios/greeting.yml: two files of scenario 'greeting'; keep one of them"
    ran = run_convy(folder, "run")
    assert (ran.returncode, ran.stderr.splitlines()) == (2, [expected])
    checked = run_convy(folder, "check")
    assert checked.returncode == 2
    assert checked.stderr.splitlines()[0] == expected
    assert not (folder / "results").exists()


@pytest.mark.parametrize("command", [("run",), ("check",), ("run", "--scenarios", "greeting")])
def test_an_empty_scenarios_folder_is_said_so(tmp_path: Path, command: tuple[str, ...]) -> None:
    """Not "no scenario matches": there is nothing to match."""
    folder = project(tmp_path, {})
    (folder / "scenarios" / "notes.txt").write_text("ideas for scenarios\n", encoding="utf-8")
    ran = run_convy(folder, *command)
    assert ran.returncode == 2
    assert ran.stderr.splitlines()[0] == "convy: no scenario files in scenarios/ (one scenario per file: scenarios/<id>.yaml)"
    assert not (folder / "results").exists()


def test_a_typo_in_scenarios_names_the_nearest_ids(tmp_path: Path) -> None:
    folder = project(tmp_path, {"greeting.yaml": GREETING, "refunds/damaged.yaml": GREETING})
    ran = run_convy(folder, "run", "--scenarios", "greting")
    assert (ran.returncode, ran.stderr.splitlines()) == (2, ["convy: no scenario matches: --scenarios greting: no such scenario; nearest: greeting"])
    ran = run_convy(folder, "run", "--scenarios", "refunds/damage")
    assert ran.stderr.splitlines() == ["convy: no scenario matches: --scenarios refunds/damage: no such scenario; nearest: refunds/damaged"]
    assert not (folder / "results").exists()


def test_a_tag_no_scenario_has_names_the_tags(tmp_path: Path) -> None:
    folder = project(tmp_path, {"greeting.yaml": "tags: [smoke, orders]\n" + GREETING})
    ran = run_convy(folder, "run", "--tag", "order")
    assert (ran.returncode, ran.stderr.splitlines()) == (2, ["convy: no scenario matches: --tag order: no scenario has it; the tags are orders, smoke"])


# --- item 3: a calls path that never matches is said -------------------------------------------

BOOKING = """\
script:
  - my booking is XYZ789
judge:
  - check: {called: lookup_booking, with: {ref: XYZ789}}
  - check: {not_called: cancel_booking}
"""


def booking(data: object) -> dict[str, object]:
    """An airline agent's endpoint: it looks the booking up, and says so under "tool_calls"."""
    return {"reply": "Your booking XYZ789: seat 12A.", "tool_calls": [{"name": "lookup_booking", "arguments": {"ref": "XYZ789"}}]}


def airline(url: str, calls: str) -> str:
    return f'from convy import JsonAgent, JsonEndpoint\n\nagent = JsonAgent(JsonEndpoint("{url}/agent"), reply="reply", calls="{calls}")\n'


def test_a_wrong_calls_path_leaves_the_tool_checks_not_judged_and_is_named(tmp_path: Path) -> None:
    """calls="tools" where the replies say "tool_calls": no tool call can be seen, so the tool
    checks are not a verdict on the agent; the run names the path and the agent's file."""
    with StandIn(agent_reply=booking) as server:
        folder = project(tmp_path, {"booking.yaml": BOOKING}, airline(server.url, "tools"), "airline")
        ran = run_convy(folder, "run", "-k", "2")
    assert ran.returncode == 5, ran.stderr
    assert "agent never called" not in ran.stdout + ran.stderr
    assert "airline: 0 passed, 0 failed, 2 not judged of 2 attempts" in ran.stdout
    assert (
        "agents/airline.py: calls path 'tools': in no reply of 2 attempts, whose tool checks were not judged: "
        "set calls= to where the agent's replies list its tool calls"
    ) in ran.stdout.splitlines()
    assert "not judged: called lookup_booking with ref='XYZ789': no reply of the agent held its calls path 'tools'" in ran.stdout
    claims = [claim for line in kept(folder) for claim in line["result"]["claims"]]  # type: ignore[index, union-attr]
    assert [(claim["held"], claim.get("doubt")) for claim in claims] == [(False, "unseen")] * 4


def test_the_right_calls_path_decides_the_tool_checks(tmp_path: Path) -> None:
    with StandIn(agent_reply=booking) as server:
        folder = project(tmp_path, {"booking.yaml": BOOKING}, airline(server.url, "tool_calls"), "airline")
        ran = run_convy(folder, "run", "-k", "2")
    assert ran.returncode == 0, ran.stderr
    assert "airline: 2 passed, 0 failed, 0 not judged of 2 attempts" in ran.stdout
    assert "calls path" not in ran.stdout


def test_an_agent_that_calls_nothing_with_the_right_path_still_fails_its_called_check(tmp_path: Path) -> None:
    """The path is held (an empty list): a `called` check that fails is the agent's, as before."""
    with StandIn(agent_reply=lambda data: {"reply": "I cannot look that up.", "tool_calls": []}) as server:
        folder = project(tmp_path, {"booking.yaml": BOOKING}, airline(server.url, "tool_calls"), "airline")
        ran = run_convy(folder, "run", "-k", "1")
    assert "agent never called lookup_booking" in ran.stdout
    assert "airline: 0 passed, 1 failed, 0 not judged of 1 attempt" in ran.stdout
    assert "by cause: agent 1" in ran.stdout


# --- item 8: the README's commands, as a user types them -------------------------------------


def test_the_agent_named_by_its_file_path_is_run(tmp_path: Path) -> None:
    """`convy run agents/bot.py` (what tab completion gives) runs the agent bot; a .py path that is
    no file of agents/ is refused with both ways to name it."""
    folder = project(tmp_path, {"greeting.yaml": GREETING})
    for given in ("agents/bot.py", "./agents/bot.py"):
        ran = run_convy(folder, "run", given)
        assert ran.returncode == 0, ran.stderr
        assert "bot: 1 passed, 0 failed, 0 not judged of 1 attempt" in ran.stdout
    wrong = run_convy(folder, "run", "bot.py")
    assert (wrong.returncode, wrong.stderr.splitlines()) == (
        2, ["convy: bot.py: not a file of agents/; give the agent's name (convy run bot) or its file's path (agents/bot.py)"],
    )  # fmt: skip
    typo = run_convy(folder, "run", "agents/bto.py")
    assert (typo.returncode, typo.stderr.splitlines()[0]) == (2, "convy: agents/bto.py: no such agent; the project has bot")
    assert len(list(folder.glob("results/bot/*/run.json"))) == 2


def status(run: Path, to: str) -> None:
    """Mark a kept run as another state, as a run stopped by Ctrl+C would be marked."""
    data = json.loads((run / "run.json").read_text())
    data["status"] = {"type": to, "started": data["status"]["started"], "ended": data["status"]["ended"]}
    (run / "run.json").write_text(json.dumps(data))


def test_a_run_id_part_two_runs_share_lists_them_and_resume_takes_the_only_unfinished(tmp_path: Path) -> None:
    """`convy resume 2026` (the year every id starts with) once there are two runs: refused with
    both, newest first, and the shortest way to name one; when one of them was interrupted, it
    is the one resumed."""
    folder = project(tmp_path, {"greeting.yaml": GREETING})
    for _ in range(2):
        assert run_convy(folder, "run").returncode == 0
    older, newer = sorted(folder.glob("results/bot/*/"), key=lambda run: json.loads((run / "run.json").read_text())["status"]["started"])
    shared = older.name[:4]
    said = (
        f"convy: '{shared}' matches 2 runs, newest first: {newer.name} (bot, finished), {older.name} (bot, finished); "
        f"give more of the id (its last part is enough: convy resume {newer.name.rsplit('-', 1)[-1]})"
    )
    resumed = run_convy(folder, "resume", shared)
    assert (resumed.returncode, resumed.stderr.splitlines()) == (2, [said])
    report = run_convy(folder, "report", shared)
    assert report.returncode == 2
    assert report.stderr.splitlines()[0].endswith(f"(its last part is enough: {newer.name.rsplit('-', 1)[-1]})")
    status(older, "interrupted")
    resumed = run_convy(folder, "resume", shared)
    assert resumed.returncode == 0, resumed.stderr
    assert f"run kept in results/bot/{older.name}" in resumed.stdout
    by_part = run_convy(folder, "report", older.name.rsplit("-", 1)[-1])
    assert by_part.returncode == 0, by_part.stderr


def test_the_smoke_test_notes_a_calls_path_no_reply_held(tmp_path: Path) -> None:
    with StandIn(agent_reply=booking) as server:
        folder = project(tmp_path, {"booking.yaml": BOOKING}, airline(server.url, "tools"), "airline")
        wrong = run_convy(folder, "run", "--smoke")
        (folder / "agents" / "airline.py").write_text(airline(server.url, "tool_calls"), encoding="utf-8")
        right = run_convy(folder, "run", "--smoke")
    assert wrong.returncode == 0, wrong.stderr
    assert (
        "  note: no reply held the calls path 'tools' of agents/airline.py: if the agent calls tools, "
        "set calls= to where its replies list them (or have it send an empty list)"
    ) in wrong.stdout.splitlines()
    assert right.returncode == 0, right.stderr
    assert "calls path" not in right.stdout


def test_the_smoke_test_says_what_a_calls_path_held_instead_of_a_list(tmp_path: Path) -> None:
    """calls="usage" where the replies keep an object: the smoke test says what the path held."""
    def reply(data: object) -> dict[str, object]:
        return {**booking(data), "usage": {"in": 10, "out": 5}}

    with StandIn(agent_reply=reply) as server:
        folder = project(tmp_path, {"booking.yaml": BOOKING}, airline(server.url, "usage"), "airline")
        done = run_convy(folder, "run", "--smoke")
    assert done.returncode == 0, done.stderr
    assert (
        "  note: the calls path 'usage' of agents/airline.py held an object, never a list of calls: "
        "set calls= to where its replies list them"
    ) in done.stdout.splitlines()


def test_a_json_agent_without_calls_is_refused_where_a_scenario_checks_tool_calls(tmp_path: Path) -> None:
    """No calls= at all: convy cannot see a tool call, so a called check would only ever fail on the
    agent. check and run refuse it (exit 2, nothing sent), --smoke notes it; with no tool check in
    the scenarios, the agent is played as it is."""
    agent = 'from convy import JsonAgent\n\nagent = JsonAgent("{url}/agent", reply="reply")\n'
    line = (
        "agents/airline.py: JsonAgent has no calls=, so its tool calls cannot be seen and the check "
        "\"called lookup_booking with ref='XYZ789'\" of scenario booking {what}: set calls= to where its replies list "
        'the tool calls (calls="tool_calls"), set receive_traces = true where it sends OpenTelemetry spans of them, or leave such checks out'
    )
    with StandIn(agent_reply=booking) as server:
        folder = project(tmp_path, {"booking.yaml": BOOKING}, agent.format(url=server.url), "airline")
        checked, ran = run_convy(folder, "check"), run_convy(folder, "run")
        sent, kept = len(server.received), list(folder.glob("results/*/*/run.json"))
        smoke = run_convy(folder, "run", "--smoke")
        (folder / "scenarios" / "booking.yaml").write_text("script: [Hi!]\njudge:\n  - check: {said: 12A}\n", encoding="utf-8")
        greeted = run_convy(folder, "run")
    assert (checked.returncode, checked.stderr.splitlines()[0]) == (2, "convy: " + line.format(what="cannot be decided"))
    assert (ran.returncode, ran.stderr.splitlines()) == (2, ["convy: " + line.format(what="cannot be decided")])
    assert (sent, kept) == (0, [])
    assert smoke.returncode == 0, smoke.stderr
    assert "  note: " + line.format(what="could not be decided (convy check refuses it)") in smoke.stdout.splitlines()
    assert greeted.returncode == 0, greeted.stdout + greeted.stderr


def test_a_null_written_in_with_asks_for_a_null_argument(tmp_path: Path) -> None:
    """with: {coupon: null} (or ~) is written on purpose: the agent must pass null, and is judged
    so; a value left out (coupon: with nothing after it) is still refused."""
    def reply(data: object) -> dict[str, object]:
        call = {"name": "lookup_booking", "arguments": {"ref": "XYZ789", "coupon": None, "opts": {"a": [1, None]}}}
        return {"reply": "Your booking XYZ789.", "tool_calls": [call]}

    scenarios = {
        "null.yaml": "script: [my booking is XYZ789]\njudge:\n  - check: {called: lookup_booking, with: {coupon: null, opts: {a: [1, ~]}}}\n",
        "other.yaml": "script: [my booking is XYZ789]\njudge:\n  - check: {called: lookup_booking, with: {ref: null}}\n",
    }
    with StandIn(agent_reply=reply) as server:
        folder = project(tmp_path, scenarios, airline(server.url, "tool_calls"), "airline")
        ran = run_convy(folder, "run")
        (folder / "scenarios" / "blank.yaml").write_text(
            "script: [Hi]\njudge:\n  - check: {called: lookup_booking, with: {coupon: }}\n", encoding="utf-8"
        )
        checked = run_convy(folder, "check")
    assert ran.returncode == 3, ran.stdout + ran.stderr  # a scenario failed the pass rule
    assert "airline: 1 passed, 1 failed, 0 not judged of 2 attempts" in ran.stdout
    (attempt,) = [
        json.loads(line)
        for path in folder.glob("results/airline/*/attempts.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
        if json.loads(line)["scenario"] == "other"
    ]
    assert "never with ref=None: it was given (ref='XYZ789', coupon=None, " in json.dumps(attempt)
    assert (checked.returncode, checked.stderr.splitlines()[0]) == (
        2,
        "convy: scenarios/blank.yaml: judge[0].check.with.coupon: no value (YAML reads coupon: with nothing after it as "
        "null): write the value the agent must pass, in quotes when it is text (coupon: '12A'), or null for a null",
    )


def test_a_json_agent_that_reads_its_calls_in_its_own_answer_is_played(tmp_path: Path) -> None:
    """A subclass of JsonAgent whose answer() makes the calls from its replies itself reports them
    its own way: no calls= is needed, check and run play it and its called check is decided."""
    agent = (
        "from convy import Answer, JsonAgent\nfrom convy.agent import Call\n\n\n"
        "class Mine(JsonAgent, frozen=True):\n"
        "    def answer(self, reply):\n"
        "        said = super().answer(reply)\n"
        '        calls = tuple(Call(c["name"], c["arguments"]) for c in reply["tool_calls"])\n'
        "        return Answer(said.text, said.usage, said.steps + calls)\n\n\n"
        'agent = Mine("{url}/agent", reply="reply")\n'
    )
    with StandIn(agent_reply=booking) as server:
        folder = project(tmp_path, {"booking.yaml": BOOKING}, agent.format(url=server.url), "airline")
        checked, ran = run_convy(folder, "check"), run_convy(folder, "run")
    assert checked.returncode == 0, checked.stderr
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "airline: 1 passed, 0 failed, 0 not judged of 1 attempt" in ran.stdout
