"""Broken scenario files, and the one line each gives: the file, the field, and what is wrong."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from convy.problems import ScenarioError
from convy.scenario import Scenario, Scenarios

GRADED = "  - claim: the agent was polite\n    grades: [rude, neutral, warm]\n"

# (case, file text, the exact message it gives)
BROKEN: list[tuple[str, str, str]] = [
    (
        "unknown top-level field",
        "user: I want a refund\njudge: [the agent helped]\ncolour: red\n",
        "scenarios/refund.yaml: colour: unknown field",
    ),
    (
        "unknown field in a judge entry",
        "user: I want a refund\njudge:\n  - claim: the agent helped\n    weight: 2\n",
        "scenarios/refund.yaml: judge[0].weight: unknown field",
    ),
    (
        "unknown field in a check",
        "user: I want a refund\njudge:\n  - check: {called: refund, whith: {order: A1}}\n",
        "scenarios/refund.yaml: judge[0].check.whith: unknown field",
    ),
    (
        "missing judge",
        "user: I want a refund\n",
        "scenarios/refund.yaml: judge: required",
    ),
    (
        "empty judge list",
        "user: I want a refund\njudge: []\n",
        "scenarios/refund.yaml: judge: give at least one claim",
    ),
    (
        "judge given as text, not a list",
        "user: I want a refund\njudge: the agent helped\n",
        "scenarios/refund.yaml: judge: expected a list, got text",
    ),
    (
        "an empty claim",
        "user: I want a refund\njudge: ['  ']\n",
        "scenarios/refund.yaml: judge[0]: an empty claim",
    ),
    (
        "a judge entry that is a number",
        "user: I want a refund\njudge: [3]\n",
        "scenarios/refund.yaml: judge[0]: expected text or a mapping, got a whole number",
    ),
    (
        "a rule with grades but no claim",
        "user: I want a refund\njudge:\n  - grades: [bad, good]\n    pass: good\n",
        "scenarios/refund.yaml: judge[0].claim: give the claim, or a check",
    ),
    (
        "neither user nor script",
        "judge: [the agent helped]\n",
        "scenarios/refund.yaml: user: a scenario needs a user, a script, or both",
    ),
    (
        "user given as nothing",
        "user:\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: user: expected text, got nothing",
    ),
    (
        "slot in user with no value in vars",
        "user: 'I want a refund for order {{ order }}'\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: user: no value for {{ order }} in vars",
    ),
    (
        "a var that is a list",
        "user: I want a refund\njudge: [the agent helped]\nvars: {order: [A1, A2]}\n",
        "scenarios/refund.yaml: vars.order: expected text, a number or true/false, got a list",
    ),
    (
        "a var with no value",
        "user: I want a refund\njudge: [the agent helped]\nvars: {order: }\n",
        "scenarios/refund.yaml: vars.order: expected text, a number or true/false, got nothing",
    ),
    (
        "a var whose key is a number",
        "user: I want a refund\njudge: [the agent helped]\nvars: {1: A1}\n",
        "scenarios/refund.yaml: vars: expected text as a key, got a whole number",
    ),
    (
        "grades with one grade",
        "user: I want a refund\njudge:\n  - the agent helped\n  - claim: the agent was polite\n"
        "    grades: [rude]\n    pass: rude\n",
        "scenarios/refund.yaml: judge[1].grades: give at least two, worst first",
    ),
    (
        "duplicate grades",
        "user: I want a refund\njudge:\n  - the agent helped\n  - claim: the agent was polite\n"
        "    grades: [rude, rude, warm]\n    pass: warm\n",
        "scenarios/refund.yaml: judge[1].grades: 'rude' given twice",
    ),
    (
        "grades without pass",
        f"user: I want a refund\njudge:\n{GRADED}",
        "scenarios/refund.yaml: judge[0].pass: give the worst grade that still passes",
    ),
    (
        "pass not in grades",
        f"user: I want a refund\njudge:\n  - the agent helped\n{GRADED}    pass: great\n",
        "scenarios/refund.yaml: judge[1].pass: must be one of the grades",
    ),
    (
        "pass without grades",
        "user: I want a refund\njudge:\n  - claim: the agent was polite\n    pass: warm\n",
        "scenarios/refund.yaml: judge[0].pass: goes only with grades",
    ),
    (
        "check with two kinds",
        "user: I want a refund\njudge:\n  - check: {called: refund, said: sorry}\n",
        "scenarios/refund.yaml: judge[0].check: give exactly one of called, not_called, said, not_said",
    ),
    (
        "check with no kind",
        "user: I want a refund\njudge:\n  - check: {}\n",
        "scenarios/refund.yaml: judge[0].check: give exactly one of called, not_called, said, not_said",
    ),
    (
        "check beside a claim",
        "user: I want a refund\njudge:\n  - claim: the agent helped\n    check: {said: sorry}\n",
        "scenarios/refund.yaml: judge[0].check: a check stands alone, with no claim, grades or pass beside it",
    ),
    (
        "with without called",
        "user: I want a refund\njudge:\n  - check: {not_called: refund, with: {order: A1}}\n",
        "scenarios/refund.yaml: judge[0].check.with: goes only with called",
    ),
    (
        "invalid regex in said",
        "user: I want a refund\njudge:\n  - check: {said: '(refund'}\n",
        "scenarios/refund.yaml: judge[0].check.said: not a valid regular expression: "
        "missing ), unterminated subpattern at position 0",
    ),
    (
        "invalid regex in not_said",
        "user: I want a refund\njudge:\n  - the agent helped\n  - check: {not_said: '[a-'}\n",
        "scenarios/refund.yaml: judge[1].check.not_said: not a valid regular expression: "
        "unterminated character set at position 0",
    ),
    (
        "max_turns 0",
        "user: I want a refund\njudge: [the agent helped]\nmax_turns: 0\n",
        "scenarios/refund.yaml: max_turns: must be at least 1",
    ),
    (
        "max_turns a string",
        "user: I want a refund\njudge: [the agent helped]\nmax_turns: many\n",
        "scenarios/refund.yaml: max_turns: expected a whole number, got text",
    ),
    (
        "max_turns a fraction",
        "user: I want a refund\njudge: [the agent helped]\nmax_turns: 2.5\n",
        "scenarios/refund.yaml: max_turns: expected a whole number, got a number",
    ),
    (
        "script longer than max_turns",
        "script: [hello, my order is late, where is it]\njudge: [the agent helped]\nmax_turns: 2\n",
        "scenarios/refund.yaml: script: 3 messages, more than max_turns (2)",
    ),
    (
        "empty script message",
        "script: [hello, '   ']\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: script[1]: an empty message",
    ),
    (
        "empty id",
        "id: ''\nuser: I want a refund\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: id: must not be empty",
    ),
    (
        "id a number",
        "id: 7\nuser: I want a refund\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: id: expected text, got a whole number",
    ),
    (
        "tags given as text",
        "user: I want a refund\njudge: [the agent helped]\ntags: urgent\n",
        "scenarios/refund.yaml: tags: expected a list, got text",
    ),
    (
        "a tag that is a number",
        "user: I want a refund\njudge: [the agent helped]\ntags: [urgent, 2]\n",
        "scenarios/refund.yaml: tags[1]: expected text, got a whole number",
    ),
    (
        "duplicate key in YAML",
        "user: I want a refund\njudge: [the agent helped]\nuser: I want it now\n",
        "scenarios/refund.yaml: line 3, column 1: the key 'user' is given twice",
    ),
    (
        "a list, not a mapping",
        "- user: I want a refund\n- judge: [the agent helped]\n",
        "scenarios/refund.yaml: must be a mapping of fields (id, user, script, judge, ...)",
    ),
    (
        "an empty file",
        "",
        "scenarios/refund.yaml: empty: a scenario needs at least a judge and a user or a script",
    ),
    (
        "a file with only a comment",
        "# to do\n",
        "scenarios/refund.yaml: empty: a scenario needs at least a judge and a user or a script",
    ),
]

# YAML syntax errors: the message names the file and the line; the rest is PyYAML's.
STARTS: list[tuple[str, str, str]] = [
    (
        "unclosed list",
        "user: I want a refund\njudge: [the agent helped\n",
        "scenarios/refund.yaml: line 3, column 1: ",
    ),
    (
        "tab for indent",
        "user: I want a refund\n\tjudge: [the agent helped]\n",
        "scenarios/refund.yaml: line 2, column 1: ",
    ),
    (
        "unclosed quote",
        "user: 'I want a refund\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: line 3, column 1: ",
    ),
]


def problem(folder: Path) -> ScenarioError:
    with pytest.raises(ScenarioError) as raised:
        Scenarios(folder).every()
    return raised.value


def written(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "scenarios"
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def read(tmp_path: Path, text: str) -> Scenario:
    (scenario,) = Scenarios(written(tmp_path, {"refund.yaml": text})).every()
    return scenario


@pytest.mark.parametrize(("case", "text", "expected"), BROKEN, ids=[case for case, _, _ in BROKEN])
def test_broken_file_gives_its_exact_message(tmp_path: Path, case: str, text: str, expected: str) -> None:
    """A broken scenario file is a ScenarioError whose one line names the file, the field and the fault."""
    error = problem(written(tmp_path, {"refund.yaml": text}))
    assert error.problems == (expected,)
    assert str(error) == expected


@pytest.mark.parametrize(("case", "text", "start"), STARTS, ids=[case for case, _, _ in STARTS])
def test_yaml_syntax_error_names_the_line(tmp_path: Path, case: str, text: str, start: str) -> None:
    """A YAML syntax error is one line naming the file and the line, then PyYAML's words."""
    error = problem(written(tmp_path, {"refund.yaml": text}))
    assert len(error.problems) == 1
    assert error.problems[0].startswith(start)
    assert len(error.problems[0]) > len(start)


def test_two_files_with_the_same_id(tmp_path: Path) -> None:
    """Two files giving one id: the later file is reported, naming the earlier one."""
    body = "id: refund\nuser: I want a refund\njudge: [the agent helped]\n"
    error = problem(written(tmp_path, {"a.yaml": body, "b.yaml": body}))
    assert error.problems == ("scenarios/b.yaml: id: 'refund' is also the id of scenarios/a.yaml",)


def test_explicit_id_clashing_with_a_default_id(tmp_path: Path) -> None:
    """A file whose id is another file's default id (its path) clashes with that file."""
    error = problem(
        written(
            tmp_path,
            {
                "refunds/damaged.yaml": "user: My parcel came broken\njudge: [the agent helped]\n",
                "zz.yaml": "id: refunds/damaged\nuser: I want a refund\njudge: [the agent helped]\n",
            },
        )
    )
    assert error.problems == (
        "scenarios/zz.yaml: id: 'refunds/damaged' is also the id of scenarios/refunds/damaged.yaml",
    )


def test_every_broken_file_reported_together(tmp_path: Path) -> None:
    """Two broken files beside a sound one give one error with one line for each broken file."""
    error = problem(
        written(
            tmp_path,
            {
                "good.yaml": "user: Hello\njudge: [the agent greeted back]\n",
                "orders/late.yaml": "user: Where is my order?\njudge: []\n",
                "refund.yaml": "user: I want a refund\njudge: [the agent helped]\nmax_turns: 0\n",
            },
        )
    )
    assert error.problems == (
        "scenarios/orders/late.yaml: judge: give at least one claim",
        "scenarios/refund.yaml: max_turns: must be at least 1",
    )
    assert str(error).splitlines() == list(error.problems)


def test_missing_folder(tmp_path: Path) -> None:
    """A project without a scenarios folder is a ScenarioError naming the folder."""
    error = problem(tmp_path / "scenarios")
    assert error.problems == ("scenarios/: no such folder of scenarios",)


def test_yaml_1_1_booleans_stay_text(tmp_path: Path) -> None:
    """no, yes and off are text in values, and on stays the text key "on", as YAML 1.2 reads them."""
    scenario = read(tmp_path, "user: Hello\njudge: [ok]\nvars: {answer: no, flag: yes, on: off}\n")
    assert scenario.vars == {"answer": "no", "flag": "yes", "on": "off"}
    assert all(type(key) is str and type(value) is str for key, value in scenario.vars.items())


def test_true_is_a_bool(tmp_path: Path) -> None:
    """true and false are the only booleans."""
    scenario = read(tmp_path, "user: Hello\njudge: [ok]\nvars: {vip: true, banned: false}\n")
    assert scenario.vars == {"vip": True, "banned": False}
    assert type(scenario.vars["vip"]) is bool


def test_leading_zero_and_dates_stay_text(tmp_path: Path) -> None:
    """012 is not octal and 2024-01-01 is not a date: both stay the text written."""
    scenario = read(tmp_path, "user: Hello\njudge: [ok]\nvars: {code: 012, since: 2024-01-01, count: 12, price: 9.5}\n")
    assert scenario.vars == {"code": "012", "since": "2024-01-01", "count": 12, "price": 9.5}
    assert type(scenario.vars["count"]) is int


def test_vars_fill_the_user_slots(tmp_path: Path) -> None:
    """A slot with a value in vars is accepted, whatever the value's kind."""
    scenario = read(
        tmp_path, "user: 'Order {{ order }}, answer {{ answer }}'\njudge: [ok]\nvars: {order: 12, answer: no}\n"
    )
    assert scenario.vars == {"order": 12, "answer": "no"}


def test_default_id_is_the_path_under_scenarios(tmp_path: Path) -> None:
    """A file without an id gets its path under scenarios/ without .yaml, subfolders included."""
    scenarios = Scenarios(
        written(
            tmp_path,
            {
                "refunds/damaged.yaml": "user: My parcel came broken\njudge: [the agent helped]\n",
                "off-topic.yaml": "id: chatter\nuser: Nice weather\njudge: [the agent stayed on topic]\n",
            },
        )
    ).every()
    assert sorted(scenario.id for scenario in scenarios) == ["chatter", "refunds/damaged"]


def test_broken_scenario_stops_the_command(tmp_path: Path) -> None:
    """`python -m convy run` on a broken scenario exits 2 naming the file and field, with no traceback and no run."""
    project = tmp_path / "project"
    (project / "agents").mkdir(parents=True)
    (project / "agents" / "a.py").write_text("from convy.fakes import Echo\n\nagent = Echo()\n", encoding="utf-8")
    written(project, {"refund.yaml": f"script: [hello]\njudge:\n{GRADED}    pass: great\n"})
    done = subprocess.run(
        [sys.executable, "-m", "convy", "run"], cwd=project, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert "scenarios/refund.yaml: judge[0].pass: must be one of the grades" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert not (project / "results").exists()
