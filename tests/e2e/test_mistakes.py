"""A corpus of the mistakes people make with a convy project, each played through the real ``convy``
command on a real project in ``tmp_path`` (issue 25, "keep it kept").

The cases are written as a user makes them, not from the code: a slot typed ``{{ ordr }}``, a field
``judeg:``, ``pass:`` put beside ``judge:`` instead of under it, ``[tool.convey]``, ``attempts =
"three"``, ``GATWAY_URL`` in ``.env``, ``convy run asistant``, a scenario saved as ``.yaml.txt``,
``--scenarios greeting,late``, ``convy compare`` of a run with itself, ``agent = Echo`` without the
brackets, a JSON body with ``{ text }``. Each table's row is one mistake: the files written over a
small sound project, the command, the exit code docs/results.md's table gives, and the one line that
names the file, field or name and says the fix. Every case asserts that line exactly, that no
traceback is shown, and, where the mistake is refused, that nothing looks like a verdict: no run
folder under ``results/`` and no pass rate.

A few mistakes are used as meant rather than refused (a scenario saved as ``.YAML``, a folder given
to ``--scenarios``, a run named by the path tab completion gives): those cases assert the run.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest
from support.process import run_convy
from support.standin import StandIn
from test_services_cli import Roles

# Settings the template's gateway reads: a case's project reads them from its own .env alone.
GATEWAY = {
    "GATEWAY_URL", "GATEWAY_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY", "GATEWAY_STREAM", "GATEWAY_PROVIDER",
    "USER_MODEL", "JUDGE_MODEL", "AGENT_MODEL", "USER_EFFORT", "JUDGE_EFFORT", "AGENT_EFFORT",
}  # fmt: skip

GREETING = 'script:\n  - Hi!\njudge:\n  - check: {said: "Hi"}\n'

# A small sound project: an agent that says back what it heard, both models absent, one scripted
# scenario judged by a check, one attempt. A case writes its files over these (None removes one).
SOUND: dict[str, str | None] = {
    "agents/bot.py": "from convy.fakes import Echo\n\nagent = Echo()\n",
    "models.py": 'from convy import Absent, Models\n\nmodels = Models(user=Absent("no user model here"), judge=Absent("no judge here"))\n',
    "scenarios/greeting.yaml": GREETING,
    "pyproject.toml": "[tool.convy]\nattempts = 1\n",
}


def project(folder: Path, files: dict[str, str | None], base: dict[str, str | None] = SOUND) -> Path:
    """The sound project in ``folder`` with ``files`` written over it (a path ending in / is an
    empty folder; None leaves the file out)."""
    for path, text in {**base, **files}.items():
        if text is None:
            continue
        where = folder / path
        if path.endswith("/"):
            where.mkdir(parents=True, exist_ok=True)
            continue
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_text(text, encoding="utf-8")
    return folder


def convy(folder: Path, *arguments: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """``convy`` run in ``folder`` to its end, with no CONVY_* (or CONVEY_*) variable nor gateway
    setting of this process but ``variables``."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.upper().startswith(("CONVY_", "CONVEY_")) and name.upper() not in GATEWAY
    }
    return run_convy(folder, *arguments, env={**environment, **variables}, timeout=120)


def runs(folder: Path) -> set[Path]:
    return set(folder.glob("results/*/*/run.json"))


def refused(done: subprocess.CompletedProcess[str], folder: Path, code: int, line: str, before: frozenset[Path] = frozenset()) -> None:
    """The command ended with ``code``, its first error line is ``line``, it showed no traceback,
    kept no new run and said no pass rate."""
    said = done.stdout + done.stderr
    assert "Traceback" not in said, said
    assert done.returncode == code, said
    assert done.stderr.splitlines()[:1] == [line], said
    assert runs(folder) == before, said
    assert "pass rate" not in said


# --- a scenario file: `convy check`, exit 2 -------------------------------------------------------
# (case, files written, expected line); the command is `convy check`, the code 2.

S = "scenarios/greeting.yaml"
F = "convy: scenarios/greeting.yaml: "
# Twelve scripted messages, more than the default max_turns (10), the last one checked.
LONG = "script: [" + ", ".join(f"m{number}" for number in range(12)) + "]\njudge:\n  - check: {said: m11}\n"
SCENARIOS = [
    ("slot typo in user", {S: "vars: {name: Sam}\nuser: You are {{ nam }}.\njudge:\n  - check: {said: Hi}\n"},
     F + "user: no value for {{ nam }} in vars (is {{ nam }} a slip for {{ name }}?)"),
    ("slot typo in script", {S: "vars: {order: A-1043}\nscript: ['where is {{ ordr }}?']\njudge:\n  - check: {said: Hi}\n"},
     F + "script[0]: no value for {{ ordr }} in vars (is {{ ordr }} a slip for {{ order }}?)"),
    ("slot typo in a said check", {S: "matrix: {seat: [12A, 14C]}\nscript: ['move me to {{ seat }}']\njudge:\n  - check: {said: '{{ seet }}'}\n"},
     F + "judge[0].check.said: no value for {{ seet }} in vars or matrix (is {{ seet }} a slip for {{ seat }}?)"),
    ("slot typo in a claim", {S: "vars: {order: A-1043}\nscript: ['where is {{ order }}?']\njudge:\n  - The agent looks up {{ ordr }}.\n"},
     F + "judge[0]: no value for {{ ordr }} in vars (is {{ ordr }} a slip for {{ order }}?)"),
    ("slot typo in with", {S: "vars: {seat: 12A}\nscript: ['move me to {{ seat }}']\njudge:\n  - check: {called: change_seat, with: {seat: '{{ seats }}'}}\n"},
     F + "judge[0].check.with.seat: no value for {{ seats }} in vars (is {{ seats }} a slip for {{ seat }}?)"),
    ("slot with no vars at all", {S: "script: ['my booking is {{ ref }}']\njudge:\n  - check: {said: Hi}\n"},
     F + "script[0]: no value for {{ ref }} in vars"),
    ("judeg for judge", {S: "script: [Hi!]\njudeg:\n  - check: {said: Hi}\n"}, F + "judeg: unknown field; did you mean judge?"),
    ("colour, a field of nothing", {S: "colour: blue\n" + GREETING}, F + "colour: unknown field; the fields here are id, judge, user, vars, script, max_turns, tags, matrix, fail_under, tools, state, approvals"),
    ("scrip for script", {S: "scrip: [Hi!]\njudge:\n  - check: {said: Hi}\n"}, F + "scrip: unknown field; did you mean script?"),
    ("tag for tags", {S: "tag: [smoke]\n" + GREETING}, F + "tag: unknown field; did you mean tags?"),
    ("max_turn for max_turns", {S: "max_turn: 3\n" + GREETING}, F + "max_turn: unknown field; did you mean max_turns?"),
    ("notsaid for not_said", {S: "script: [Hi!]\njudge:\n  - check: {notsaid: sorry}\n"},
     F + "judge[0].check.notsaid: unknown field; did you mean not_said?"),
    ("width for with", {S: "script: [Hi!]\njudge:\n  - check: {called: lookup_order, width: {order: A-1043}}\n"},
     F + "judge[0].check.width: unknown field; did you mean with?"),
    ("say for said", {S: "script: [Hi!]\njudge:\n  - check: {say: Hi}\n"}, F + "judge[0].check.say: unknown field; the fields here are called, with, not_called, said, not_said, state, asked_approval, not_asked_approval, said_done, by_calling"),
    ("pass at the top", {S: "script: [Hi!]\npass: clear\njudge:\n  - claim: How clear was the agent?\n    grades: [unclear, clear]\n"},
     F + "pass: not a field here; it belongs under judge[0]"),
    ("grades at the top", {S: "script: [Hi!]\ngrades: [unclear, clear]\njudge:\n  - claim: How clear was the agent?\n    pass: clear\n"},
     F + "grades: not a field here; it belongs under judge[0]"),
    ("with beside check", {S: "script: [Hi!]\njudge:\n  - check: {called: lookup_order}\n    with: {order: A-1043}\n"},
     F + "judge[0].with: not a field here; it belongs under judge[0].check"),
    ("said without check", {S: "script: [Hi!]\njudge:\n  - check: {said: Hi}\n  - said: hello\n"},
     F + "judge[1].said: not a field here; it belongs under judge[1].check"),
    ("max_turns inside a claim", {S: "script: [Hi!]\njudge:\n  - claim: The agent is polite.\n    max_turns: 3\n"},
     F + "judge[0].max_turns: not a field here; it belongs at the top of the file"),
    ("attempts in a scenario", {S: "attempts: 5\n" + GREETING},
     F + "attempts: not a field here; attempts are set for the whole run: [tool.convy] attempts, or convy run -k N"),
    ("persona beside user", {S: "persona: [retiree]\nuser: Ask where your order is.\njudge:\n  - check: {said: order}\n"},
     F + "persona: not a field here; it belongs under matrix (matrix: {persona: [name, ...]})"),
    ("check at the top", {S: "script: [Hi!]\ncheck:\n  - said: Hi\n"}, F + "check: not a field here; it belongs under an entry of judge"),
    ("pass not a grade", {S: "script: [Hi!]\njudge:\n  - claim: How clear?\n    grades: [unclear, partly clear, clear]\n    pass: nice\n"},
     F + "judge[0].pass: must be one of the grades: unclear, partly clear, clear"),
    ("grades without pass", {S: "script: [Hi!]\njudge:\n  - claim: How clear?\n    grades: [unclear, clear]\n"},
     F + "judge[0].pass: give the worst grade that still passes"),
    ("with beside not_called", {S: "script: [Hi!]\njudge:\n  - check: {not_called: cancel_booking, with: {ref: X}}\n"},
     F + "judge[0].check.with: goes only with called"),
    ("two checks in one", {S: "script: [Hi!]\njudge:\n  - check: {said: Hi, not_said: bye}\n"},
     F + "judge[0].check: give exactly one of called, not_called, said, not_said, state, asked_approval, not_asked_approval, said_done"),
    ("check written as text", {S: "script: [Hi!]\njudge:\n  - check: said Hi\n"}, F + "judge[0].check: expected a mapping, got text"),
    ("judge as one text", {S: "script: [Hi!]\njudge: The agent greets back.\n"}, F + "judge: expected a list, got text"),
    ("judge as a mapping", {S: "script: [Hi!]\njudge:\n  check: {said: Hi}\n"}, F + "judge: expected a list, got a mapping"),
    ("script as one text", {S: "script: Hi!\njudge:\n  - check: {said: Hi}\n"}, F + "script: expected a list, got text"),
    ("user as a list", {S: "user: [Say hello.]\njudge:\n  - check: {said: Hi}\n"}, F + "user: expected text, got a list"),
    ("tags as one text", {S: "tags: smoke\n" + GREETING}, F + "tags: expected a list, got text"),
    ("vars as a list", {S: "vars: [order, A-1043]\n" + GREETING}, F + "vars: expected a mapping, got a list"),
    ("a matrix value that is not a list", {S: "matrix: {seat: 12A}\nscript: ['seat {{ seat }}']\njudge:\n  - check: {said: Hi}\n"},
     F + "matrix.seat: expected a list of values, got text"),
    ("max_turns in words", {S: "max_turns: three\n" + GREETING}, F + "max_turns: expected a whole number, got text"),
    ("fail_under as a percentage", {S: "fail_under: 80\n" + GREETING}, F + "fail_under: must be between 0 and 1 (0.8 for 80%)"),
    ("a year as a tag, unquoted", {S: "tags: [smoke, 2024]\n" + GREETING}, F + "tags[1]: expected text, got a whole number: write it in quotes, '2024'"),
    ("a pattern left open", {S: "script: [Hi!]\njudge:\n  - check: {said: '(Hi'}\n"},
     F + "judge[0].check.said: not a pattern convy can match: missing ): (Hi"),
    ("a tab for indent", {S: "script:\n\t- Hi!\njudge:\n  - check: {said: Hi}\n"},
     F + "line 2, column 1: found character that cannot start any token"),
    ("no user nor script", {S: "judge:\n  - check: {said: Hi}\n"}, F + "user: a scenario needs a user, a script, or both"),
    ("no judge", {S: "script: [Hi!]\n"}, F + "judge: required"),
    ("a file that is a list", {S: "- script: [Hi!]\n  judge:\n    - check: {said: Hi}\n"},
     F + "must be a mapping of fields (id, user, script, judge, ...)"),
    ("an empty file", {S: ""}, F + "empty: a scenario needs at least a judge and a user or a script"),
    ("an id copied from another file", {"scenarios/late.yaml": "id: greeting\n" + GREETING},
     "convy: scenarios/late.yaml: id: 'greeting' is also the id of scenarios/greeting.yaml"),
]


@pytest.mark.parametrize(("case", "files", "line"), [pytest.param(*row, id=row[0]) for row in SCENARIOS])
def test_a_mistake_in_a_scenario_file_is_named_by_check(tmp_path: Path, case: str, files: dict[str, str | None], line: str) -> None:
    folder = project(tmp_path, files)
    done = convy(folder, "check")
    refused(done, folder, 2, line)
    assert done.stderr.splitlines()[-1].endswith("nothing was sent, nothing written")


# --- what a scenario's author writes that would play wrong in silence: `convy check`, exit 2 -------
# (case, files written, command, variables set, expected line); found by an outside audit.

SEATS = "script: ['seat 12A please']\njudge:\n"
WRITTEN = [
    ("a dollar sign in a said pattern", {S: SEATS + "  - check: {said: 'Seat 12A costs $4.99.'}\n"}, ("check",), {},
     F + "judge[0].check.said: /Seat 12A costs $4.99./ can never match: $ is the end of the reply (or of a line, with (?m)), "
     "and text follows it; write \\$ for a dollar sign"),
    ("an alternative left empty", {S: SEATS + "  - check: {not_said: '(?i)sorry|'}\n"}, ("check",), {},
     F + "judge[0].check.not_said: /(?i)sorry|/ matches every reply, even an empty one, so the check always fails: "
     "drop the empty alternative: /(?i)sorry/"),
    ("a said of anything", {S: SEATS + "  - check: {said: '.*'}\n"}, ("run",), {},
     F + "judge[0].check.said: /.*/ matches every reply, even an empty one, so the check always holds: give it text the reply must hold"),
    ("not_said left empty beside said", {S: SEATS + "  - check: {said: 12A, not_said: ''}\n"}, ("check",), {},
     F + "judge[0].check.not_said: empty, and an empty pattern matches every reply: give the text to look for, or leave not_said out"),
    ("a with value left blank", {S: SEATS + "  - check: {called: change_seat, with: {seat: }}\n"}, ("check",), {},
     F + "judge[0].check.with.seat: no value (YAML reads seat: with nothing after it as null): write the value the agent "
     "must pass, in quotes when it is text (seat: '12A'), or null for a null"),
    ("a slot in a tag", {S: "vars: {ref: XYZ789}\ntags: ['{{ ref }}']\n" + GREETING}, ("check",), {},
     F + "tags[0]: '{{ ref }}' has a slot, and a tag is never filled: write the tag itself"),
    ("a slot in the id", {S: "vars: {ref: XYZ789}\nid: 'booking-{{ ref }}'\n" + GREETING}, ("check",), {},
     F + "id: 'booking-{{ ref }}' has a slot, and an id is never filled: write the id itself (a matrix adds its values "
     "to each variant's id, as seat[seat=12A])"),
    ("a var in single braces", {S: "vars: {ref: XYZ789}\nscript: ['my booking is {ref}']\njudge:\n  - check: {said: Hi}\n"}, ("check",), {},
     F + "script[0]: {ref} would stay as written, one pair of braces: did you mean {{ ref }}, or \\{ref} for the braces themselves?"),
    ("a var in single braces inside another var's value", {S: "vars: {name: Sam, greet: 'Hi {name}'}\nscript: ['{{ greet }}']\njudge:\n  - check: {said: Hi}\n"}, ("check",), {},
     F + "vars.greet: {name} would be sent as written, and a value is not filled: put {{ name }} in the text the value "
     "goes into, or, for the braces themselves, write the text there with \\{name}"),
    ("a var in single braces inside a matrix value", {S: "vars: {x: 1}\nmatrix: {q: ['what is {x}?', ok]}\nscript: ['{{ q }}']\njudge:\n  - check: {said: Hi}\n"}, ("check",), {},
     F + "matrix.q[0]: {x} would be sent as written, and a value is not filled: put {{ x }} in the text the value "
     "goes into, or, for the braces themselves, write the text there with \\{x}"),
    ("a check in quotes", {S: "script: [Hi!]\njudge:\n  - 'check: {said: Hi}'\n"}, ("check",), {},
     F + "judge[0]: 'check: {said: Hi}' is in quotes, so it is a claim's text the judge would be asked, but it reads as "
     "a check: write it without the quotes, - check: {said: Hi}"),
    ("a tag with a space after it", {S: "tags: ['smoke ', refunds]\n" + GREETING}, ("check",), {},
     F + "tags[0]: 'smoke ' has spaces round it, and --tag matches a tag as written: write 'smoke'"),
    ("a tag twice", {S: "tags: [smoke, smoke]\n" + GREETING}, ("check",), {},
     F + "tags[1]: 'smoke' is given already, at tags[0]: leave one out"),
    ("--tag in another case", {S: "tags: [smoke]\n" + GREETING}, ("run", "--tag", "Smoke"), {},
     "convy: no scenario matches: --tag Smoke: no scenario has it; a tag is matched as written: --tag smoke"),
    ("a matrix value with a space after it", {S: "matrix: {seat: [12A, '12A ']}\nscript: ['seat {{ seat }}']\njudge:\n  - check: {said: 12A}\n"},
     ("check",), {}, F + "matrix.seat[1]: '12A ' has spaces round it, which would be in the variant's id and in every text it fills: write '12A'"),
    ("a scenario's fail_under as text that is no share", {S: "fail_under: eighty\n" + GREETING}, ("check",), {},
     F + 'fail_under: expected a number, got text (0.8 or "80%")'),
    ("matrix put under vars", {S: "vars:\n  matrix: {seat: [12A]}\nscript: ['seat {{ seat }}']\njudge:\n  - check: {said: 12A}\n"},
     ("check",), {}, F + "vars.matrix: not a value: matrix is a field of the scenario; it belongs at the top of the file, not under vars"),
    ("max_turns of the project below a script", {"pyproject.toml": "[tool.convy]\nattempts = 1\nmax_turns = 1\n", S: "script: [Hi!, Bye!]\njudge:\n  - check: {said: Hi}\n"},
     ("check",), {}, F + "script: 2 messages, more than the run's max_turns (1, from [tool.convy] in pyproject.toml), "
     "which would cut it after 1: give the scenario max_turns: 2 or more, or raise the run's"),
    ("CONVY_MAX_TURNS below a script", {S: "script: [Hi!, Bye!, Thanks!]\njudge:\n  - check: {said: Hi}\n"}, ("run",), {"CONVY_MAX_TURNS": "2"},
     F + "script: 3 messages, more than the run's max_turns (2, from CONVY_MAX_TURNS in the environment), which would "
     "cut it after 2: give the scenario max_turns: 3 or more, or raise the run's"),
    ("CONVY_MAX_TURNS in .env below a script", {".env": "CONVY_MAX_TURNS=2\n", S: "script: [Hi!, Bye!, Thanks!]\njudge:\n  - check: {said: Hi}\n"},
     ("check",), {}, F + "script: 3 messages, more than the run's max_turns (2, from CONVY_MAX_TURNS in .env), which would "
     "cut it after 2: give the scenario max_turns: 3 or more, or raise the run's"),
    ("the default max_turns below a script a user goes on from", {S: LONG + "user: Ask for seat 12A.\n"}, ("check",), {},
     F + "script: 12 messages, more than the run's max_turns (10, convy's default), which would cut it after 10: give "
     "the scenario max_turns: 12 or more, or raise the run's"),
]

# Found by the second outside audit: a pattern filled from a slot, a newline after $, not_said's fix.
WRITTEN += [
    ("a dollar sign before a slot in a said pattern", {S: "vars: {amount: '12.00'}\nscript: ['It costs $12.00']\njudge:\n  - check: {said: '${{ amount }}'}\n"},
     ("check",), {}, F + "judge[0].check.said: /${{ amount }}/ filled with amount='12.00' is /$12\\.00/, which can never match: "
     "$ is the end of the reply (or of a line, with (?m)), and text follows it; write \\$ for a dollar sign: \\${{ amount }}"),
    ("a slot filled empty before an alternative", {S: "vars: {ref: ''}\nscript: [Hi]\njudge:\n  - check: {not_said: '{{ ref }}|sorry'}\n"},
     ("check",), {}, F + "judge[0].check.not_said: /{{ ref }}|sorry/ filled with ref='' is /|sorry/, which matches every reply, "
     "even an empty one, so the check always fails: drop the empty alternative: /sorry/"),
    ("a matrix value that strands an anchor", {S: "matrix: {p: ['', x]}\nscript: [Hi]\njudge:\n  - check: {said: 'Hi$\\n{{ p }}'}\n"},
     ("check",), {}, F + "judge[0].check.said: /Hi$\\n{{ p }}/ filled with p='' is /Hi$\\n/, which can never match: without (?m), $ is the end of the reply, and a "
     "newline follows it; start it with (?m) for the end of a line, or leave out the newline"),
    ("a newline after $ without (?m)", {S: SEATS + "  - check: {said: \"Hi$\\n\"}\n"}, ("check",), {},
     F + "judge[0].check.said: /Hi$\\n/ can never match: without (?m), $ is the end of the reply, and a newline follows it; "
     "start it with (?m) for the end of a line, or leave out the newline"),
    ("a not_said of anything", {S: SEATS + "  - check: {not_said: '.*'}\n"}, ("check",), {},
     F + "judge[0].check.not_said: /.*/ matches every reply, even an empty one, so the check always fails: give it text the reply must not hold"),
]


def test_the_default_max_turns_cuts_no_script_with_no_user(tmp_path: Path) -> None:
    """docs/scenarios.md: with script and no user, the dialogue is exactly the script; max_turns left at
    convy's default (10) neither refuses a longer script nor cuts it: the last message is said."""
    folder = project(tmp_path, {S: LONG})
    checked, ran = convy(folder, "check"), convy(folder, "run")
    assert checked.returncode == 0, checked.stderr
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "bot: 1 passed, 0 failed, 0 not judged of 1 attempt" in ran.stdout


PERSONA = {S: "user: You are {{ persona }}, aged {{ age }}. Ask for seat 12A.\nmatrix: {persona: [retiree, student]}\njudge:\n  - check: {said: 12A}\n"}
TWO = "- name: retiree\n  age: 78\n- name: student\n  age: 20\n"
WRITTEN += [
    ("personas in the scenarios folder", {**PERSONA, "scenarios/personas.yaml": TWO}, ("check",), {},
     "convy: scenarios/personas.yaml: read as a scenario, since it is in scenarios/: personas are read from personas.yaml "
     "beside scenarios/; move it there"),
    ("personas as a mapping of names", {**PERSONA, "personas.yaml": "retiree:\n  age: 78\nstudent:\n  age: 20\n"}, ("check",), {},
     "convy: personas.yaml: must be a list of personas, each a mapping with a name, not a mapping of names: write each "
     "as - name: retiree with its values below it"),
    ("a persona's key misspelt", {**PERSONA, "personas.yaml": "- name: retiree\n  age: 78\n- name: student\n  ag: 20\n"}, ("check",), {},
     F + "user: no value for {{ age }} in vars, matrix or persona (persona 'student' of personas.yaml has no age; is its "
     "ag a slip for age?) (variant persona=student)"),
    ("a persona's name misspelt", {S: PERSONA[S].replace("student]", "studnet]"), "personas.yaml": TWO}, ("check",), {},
     F + "matrix.persona[1]: no persona 'studnet' in personas.yaml; did you mean student?"),
    ("all in a list of personas", {S: PERSONA[S].replace("[retiree, student]", "[all]"), "personas.yaml": TWO}, ("check",), {},
     F + "matrix.persona[0]: all in a list is a persona's name: for every persona, write persona: all, not in a list"),
    ("a persona under vars", {S: PERSONA[S].replace("matrix: {persona: [retiree, student]}", "vars: {persona: retiree}"), "personas.yaml": TWO},
     ("check",), {}, F + "vars.persona: 'retiree' is a persona of personas.yaml, but under vars it is one value and the "
     "persona's values fill nothing: write matrix: {persona: [retiree]}"),
]


@pytest.mark.parametrize(("case", "files", "command", "variables", "line"), [pytest.param(*row, id=row[0]) for row in WRITTEN])
def test_what_would_play_wrong_in_silence_is_refused(
    tmp_path: Path, case: str, files: dict[str, str | None], command: tuple[str, ...], variables: dict[str, str], line: str
) -> None:
    folder = project(tmp_path, files)
    refused(convy(folder, *command, **variables), folder, 2, line)


def test_personas_yml_is_read(tmp_path: Path) -> None:
    """A persona file saved as personas.yml is read as personas.yaml is: its values fill the slots."""
    scenario = "script: ['I am {{ persona }}, aged {{ age }}']\nmatrix: {persona: all}\njudge:\n  - check: {said: 'aged {{ age }}'}\n"
    folder = project(tmp_path, {S: scenario, "personas.yml": TWO})
    done = convy(folder, "run")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "bot: 2 passed, 0 failed, 0 not judged of 2 attempts · pass rate 100.0% [15.8%, 100.0%] (mean over scenarios)" in done.stdout.splitlines()


def test_a_with_value_of_another_kind_shows_what_the_agent_gave(tmp_path: Path) -> None:
    """`with: {row: '12'}` where the agent sends 12: the attempt's line shows the arguments it gave
    and which kind each is, not only that the agent never called the tool so."""

    def seat(data: object) -> dict[str, object]:
        return {"reply": "Done: seat 12A.", "tool_calls": [{"name": "change_seat", "arguments": {"seat": "12A", "row": 12}}]}

    scenario = "script: ['seat 12A please']\njudge:\n  - check: {called: change_seat, with: {row: '12'}}\n"
    with StandIn(agent_reply=seat) as server:
        agent = f'from convy import JsonAgent\n\nagent = JsonAgent("{server.url}/agent", reply="reply", calls="tool_calls")\n'
        folder = project(tmp_path, {"agents/bot.py": None, "agents/airline.py": agent, S: scenario})
        done = convy(folder, "run")
    said = done.stdout + done.stderr
    assert done.returncode == 3, said
    assert (
        "agent called change_seat 1 time(s), never with row='12': it was given (seat='12A', row=12) (row came as a whole "
        "number, 12, where with: has text, '12': write it as the agent sends it)"
    ) in said


# --- files and folders: their names -------------------------------------------------------------
# (case, files written, command, expected code, expected line)

FILES = [
    ("saved as .yaml.txt", {"scenarios/late.yaml.txt": GREETING}, ("check",), 2,
     "convy: scenarios/late.yaml.txt: not read: a scenario file's name ends in .yaml or .yml; rename it scenarios/late.yaml"),
    ("saved as .yml.txt in a folder", {"scenarios/refunds/late.yml.txt": GREETING}, ("run",), 2,
     "convy: scenarios/refunds/late.yml.txt: not read: a scenario file's name ends in .yaml or .yml; rename it scenarios/refunds/late.yml"),
    ("suffix typed .ymal", {"scenarios/late.ymal": GREETING}, ("run",), 2,
     "convy: scenarios/late.ymal: not read: a scenario file's name ends in .yaml or .yml; rename it scenarios/late.yaml"),
    ("an empty scenarios folder", {S: None, "scenarios/": ""}, ("check",), 2,
     "convy: no scenario files in scenarios/ (one scenario per file: scenarios/<id>.yaml)"),
    ("no scenarios folder", {S: None}, ("run",), 2,
     "convy: scenarios/: no such folder of scenarios (one scenario per file: scenarios/<id>.yaml)"),
    ("the folder named scenario", {S: None, "scenario/greeting.yaml": GREETING}, ("check",), 2,
     "convy: scenarios/: no such folder of scenarios (one scenario per file: scenarios/<id>.yaml); scenario/ is not read: rename it scenarios/"),
    ("no agents folder", {"agents/bot.py": None, "agent/bot.py": SOUND["agents/bot.py"]}, ("check",), 2,
     "convy: agents/: no agent files (agents/<name>.py, each defining `agent`)"),
]


@pytest.mark.parametrize(("case", "files", "command", "code", "line"), [pytest.param(*row, id=row[0]) for row in FILES])
def test_a_file_or_folder_named_wrong_is_said_with_the_name_meant(
    tmp_path: Path, case: str, files: dict[str, str | None], command: tuple[str, ...], code: int, line: str
) -> None:
    folder = project(tmp_path, files)
    refused(convy(folder, *command), folder, code, line)


# --- settings: pyproject.toml, .env, the environment --------------------------------------------
# (case, files written, variables set, command, expected line); the code is 2.

P = "pyproject.toml"
T = "convy: pyproject.toml: [tool.convy] "
SETTINGS = [
    ("a model check misspelt", {P: '[tool.convy]\nuser_checks = ["roleswap"]\n'}, {}, ("check",),
     T + "user_checks[0]: must be one of role_swap, stopped_on_question, unsupported"),
    ("attempts in words", {P: '[tool.convy]\nattempts = "three"\n'}, {}, ("check",), T + "attempts: must be a whole number of at least 1, or auto"),
    ("attempts 0", {P: "[tool.convy]\nattempts = 0\n"}, {}, ("run",), T + "attempts: must be a whole number of at least 1, or auto"),
    ("atempts", {P: "[tool.convy]\natempts = 3\n"}, {}, ("check",), T + "atempts: unknown field; did you mean attempts?"),
    ("fail_under as a percentage", {P: "[tool.convy]\nfail_under = 80\n"}, {}, ("check",), T + "fail_under: must be between 0 and 1 (0.8 for 80%)"),
    ("trust as a percentage", {P: "[tool.convy]\ntrust = 70\n"}, {}, ("run",), T + "trust: must be between 0 and 1"),
    ("panel misspelt", {P: '[tool.convy]\npanel = "majorty"\n'}, {}, ("check",), T + "panel: must be one of majority, unanimous"),
    ("evidence misspelt", {P: '[tool.convy]\nevidence = "flagg"\n'}, {}, ("check",), T + "evidence: must be one of flag, require"),
    ("seconds with a unit", {P: '[tool.convy]\nturn_seconds = "60s"\n'}, {}, ("check",), T + "turn_seconds: expected a number, got text"),
    ("yes for true", {P: '[tool.convy]\nfail_on_skip = "yes"\n'}, {}, ("check",), T + "fail_on_skip: expected true or false, got text"),
    ("a Ray address without a host", {P: '[tool.convy]\nray = "ray://"\n'}, {}, ("check",),
     T + "ray: not an address: auto, ray://HOST:10001 or HOST:6379"),
    ("user_prompt misspelt", {P: '[tool.convy]\nuser_prompt = "prompts/usr.md"\n', "prompts/user.md": "{{ instructions }}\n"}, {}, ("check",),
     "convy: prompts/usr.md: no such file (the user_prompt setting names it); the prompts there are prompts/user.md"),
    ("[tool.convey]", {P: "[tool.convey]\nattempts = 10\n"}, {}, ("check",), "convy: pyproject.toml: [tool.convey]: not read; did you mean [tool.convy]?"),
    ("[tool.Convy]", {P: "[tool.Convy]\nattempts = 10\n"}, {}, ("run",), "convy: pyproject.toml: [tool.Convy]: not read; did you mean [tool.convy]?"),
    ("[tools.convy]", {P: "[tools.convy]\nattempts = 10\n"}, {}, ("check",), "convy: pyproject.toml: [tools.convy]: not read; did you mean [tool.convy]?"),
    ("[convy] at the top", {P: "[convy]\nattempts = 10\n"}, {}, ("check",),
     "convy: pyproject.toml: [convy]: not read; convy's settings go under [tool.convy]"),
    ("CONVY_ATEMPTS in the environment", {}, {"CONVY_ATEMPTS": "3"}, ("check",),
     "convy: CONVY_ATEMPTS in the environment: unknown; did you mean CONVY_ATTEMPTS?"),
    ("CONVY_ATEMPTS in .env", {".env": "CONVY_ATEMPTS=3\n"}, {}, ("run",), "convy: CONVY_ATEMPTS in .env: unknown; did you mean CONVY_ATTEMPTS?"),
    ("CONVEY_MAX_COST", {}, {"CONVEY_MAX_COST": "1"}, ("run",), "convy: CONVEY_MAX_COST in the environment: unknown; did you mean CONVY_MAX_COST?"),
    ("CONVY_ATTEMPTS in words", {}, {"CONVY_ATTEMPTS": "three"}, ("run",), "convy: CONVY_ATTEMPTS: attempts: must be a whole number of at least 1, or auto"),
    ("CONVY_FAIL_UNDER as a percentage", {".env": "CONVY_FAIL_UNDER=80\n"}, {}, ("run",),
     "convy: CONVY_FAIL_UNDER: fail_under: must be between 0 and 1 (0.8 for 80%)"),
]


@pytest.mark.parametrize(("case", "files", "variables", "command", "line"), [pytest.param(*row, id=row[0]) for row in SETTINGS])
def test_a_setting_that_would_be_lost_or_wrong_is_refused(
    tmp_path: Path, case: str, files: dict[str, str | None], variables: dict[str, str], command: tuple[str, ...], line: str
) -> None:
    folder = project(tmp_path, files)
    refused(convy(folder, *command, **variables), folder, 2, line)


# --- the project's code: agents and models --------------------------------------------------------
# (case, files written, expected line); the command is `convy check`, then `convy run`, the code 2.

A = "agents/bot.py"
L = "convy: loading agents/bot.py failed: ValueError: "
SLOTS = "its slots are {{ text }}, {{ session }}, {{ turn }}, {{ history }}, {{ tools_url }}"


JSON_AGENT = "from convy import JsonAgent, JsonEndpoint, TokenPaths\n\n"


def json_agent(body: str = '{"message": "{{ text }}"}', endpoint: str = '"http://127.0.0.1:9/chat"') -> dict[str, str | None]:
    return {A: f'from convy import JsonAgent, JsonEndpoint\n\nagent = JsonAgent({endpoint}, body={body}, reply="reply")\n'}


CODE = [
    ("agent is the class", {A: "from convy.fakes import Echo\n\nagent = Echo\n"},
     "convy: agents/bot.py: `agent` is the class Echo, not an agent: make one, agent = Echo(...)"),
    ("agent is a function", {A: "def agent(text):\n    return 'Hi ' + text\n"},
     "convy: agents/bot.py: `agent` is a function, not an agent: an agent has a conversation() method (docs/agents.md: The agent interface)"),
    ("agent is a URL", {A: 'agent = "http://127.0.0.1:9/chat"\n'},
     'convy: agents/bot.py: `agent` is text, not an agent: an agent over HTTP is agent = JsonAgent("http://...", body=..., reply=...)'),
    ("agent named otherwise", {A: "from convy.fakes import Echo\n\nbot = Echo()\n"}, "convy: agents/bot.py: defines no `agent`"),
    ("agent file left unclosed", {A: "from convy.fakes import Echo\n\nagent = Echo(\n"},
     "convy: loading agents/bot.py failed: SyntaxError: '(' was never closed (bot.py, line 3)"),
    ("models named model", {"models.py": 'from convy import Absent, Models\n\nmodel = Models(user=Absent("x"), judge=Absent("y"))\n'},
     "convy: models.py: must define `models = Models(user=..., judge=...)`"),
    ("models the class", {"models.py": "from convy import Models\n\nmodels = Models\n"},
     "convy: models.py: must define `models = Models(user=..., judge=...)`"),
    ("body slot {{ input }}", json_agent('{"input": "{{ input }}"}'),
     L + "body.input: no slot {{ input }} in a JSON agent's body (for {{ text }}?): " + SLOTS),
    ("body slot {{ histroy }}", json_agent('{"message": "{{ text }}", "history": "{{ histroy }}"}'),
     L + "body.history: no slot {{ histroy }} in a JSON agent's body (for {{ history }}?): " + SLOTS),
    ("body slot with one brace", json_agent('{"message": "{ text }"}'),
     L + "body.message: { text } is sent as written: a slot has two braces, {{ text }}"),
    ("body slot as format writes it", json_agent('{"q": "{message}"}'),
     L + "body.q: {message} is sent as written: a slot has two braces, {{ text }}"),
    ("body without the user's words", json_agent('{"message": "hello"}'),
     L + "body: no {{ text }} nor {{ history }}: the user's messages would never be sent; put {{ text }} where the agent reads a message"),
    ("endpoint without http://", json_agent(endpoint='JsonEndpoint("127.0.0.1:8000/chat")'),
     L + "url: must start with http:// or https://, not '127.0.0.1:8000/chat' (http://127.0.0.1:8000/chat?)"),
    ("endpoint on a websocket", json_agent(endpoint='"ws://127.0.0.1:8000/chat"'),
     L + "url: must start with http:// or https://, not 'ws://127.0.0.1:8000/chat'"),
    ("headers given as the key", json_agent(endpoint='JsonEndpoint("http://127.0.0.1:9/chat", "Bearer sk-corpus-CANARY")'),
     L + 'headers: must map names to text, as {"authorization": "Bearer ..."}, not str'),
    ("calls given fourth, in tokens' place", {A: JSON_AGENT + 'agent = JsonAgent("http://127.0.0.1:9/chat", {"message": "{{ text }}"}, "reply", "tool_calls")\n'},
     L + 'tokens: "tool_calls" is text, but tokens are TokenPaths(input=..., output=...) (the fourth argument is tokens); '
     'give the path by name, as calls="tool_calls"'),
    ("reply as a list of keys", {A: JSON_AGENT + 'agent = JsonAgent("http://127.0.0.1:9/chat", reply=["choices", 0, "message"])\n'},
     L + 'reply: must be a path as text, as reply="reply", not list'),
    ("tokens as a dict", {A: JSON_AGENT + 'agent = JsonAgent("http://127.0.0.1:9/chat", tokens={"input": "usage.in", "output": "usage.out"})\n'},
     L + 'tokens: must be TokenPaths(input="usage.prompt_tokens", output="usage.completion_tokens"), not dict'),
    ("thoughts=True to see them", {A: JSON_AGENT + 'agent = JsonAgent("http://127.0.0.1:9/chat", thoughts=True)\n'},
     L + 'thoughts: must be a path as text, as thoughts="thoughts", not bool'),
    ("body written as JSON text", {A: JSON_AGENT + """agent = JsonAgent("http://127.0.0.1:9/chat", body='{"message": "{{ text }}"}')\n"""},
     L + 'body: JSON written as text would be sent as one string: give it as a dict, body={"message": "{{ text }}"}'),
    ("timeout in quotes", {A: JSON_AGENT + 'agent = JsonAgent(JsonEndpoint("http://127.0.0.1:9/chat", timeout="30"))\n'},
     L + "timeout: must be a number of seconds, as timeout=30, not str"),
]


@pytest.mark.parametrize(("case", "files", "line"), [pytest.param(*row, id=row[0]) for row in CODE])
def test_a_mistake_in_the_projects_code_is_refused_by_check_and_run(
    tmp_path: Path, case: str, files: dict[str, str | None], line: str
) -> None:
    folder = project(tmp_path, files)
    refused(convy(folder, "check"), folder, 2, line)
    ran = convy(folder, "run")
    # A run loads the agent and the models together, and names both files when the code fails.
    refused(ran, folder, 2, line.replace("loading agents/bot.py failed", "loading agents/bot.py or models.py failed"))
    assert "CANARY" not in ran.stdout + ran.stderr


# --- models.py, the simulator prompt, and what the agent can show ---------------------------------
# (case, files written, expected line of `convy check`); `convy run` says the same, its code loaded
# with the agent's (so "loading agents/bot.py or models.py failed"), and both exit 2.

M = "models.py"
LM = "convy: loading models.py failed: TypeError: Models: "
GATEWAY_MODEL = 'OpenAiModel("judge-model", "http://127.0.0.1:9/v1", "sk-corpus-CANARY")'
ASKED = {S: "user: You want to know where order A-1043 is.\njudge:\n  - check: {said: order}\n"}
PROMPT = {**ASKED, P: '[tool.convy]\nattempts = 1\nuser_prompt = "prompts/user.md"\n'}
PU = "convy: prompts/user.md: "
BOOKED = "script: ['my booking is XYZ789']\njudge:\n  - check: {called: lookup_booking}\n"


def models(line: str) -> dict[str, str | None]:
    return {M: f"from pathlib import Path\n\nfrom convy import Absent, ChatJudge, Models, OpenAiModel\nfrom convy.fakes import Echo\n\nmodels = {line}\n"}


PARTS = [
    ("the judge given as the model's name", models('Models(user=Absent("none"), judge="gpt-4o-mini")'),
     LM + "judge='gpt-4o-mini' is text, not a judge: give the model by its name, "
     'judge=ChatJudge(OpenAiModel("gpt-4o-mini", base_url, key))'),
    ("user=None for no user model", models('Models(user=None, judge=Absent("none"))'),
     LM + 'user=None is not a chat model: give one, user=OpenAiModel("model-name", base_url, key), '
     'or user=Absent("why") to play without it'),
    ("the judge a chat model not wrapped", models(f'Models(user=Absent("none"), judge={GATEWAY_MODEL})'),
     LM + "judge= is a chat model (OpenAiModel), not a judge: wrap it, judge=ChatJudge(OpenAiModel(...))"),
    ("a panel with a chat model among its judges",
     models(f'Models(user=Absent("none"), judge=[ChatJudge({GATEWAY_MODEL}), {GATEWAY_MODEL}])'),
     LM + "judge[1] is a chat model (OpenAiModel), not a judge: wrap it, ChatJudge(OpenAiModel(...)) in its place"),
    ("the agent as the simulated user", models('Models(user=Echo(), judge=Absent("none"))'),
     LM + 'user= is an agent (Echo), not a chat model: an agent goes in agents/<name>.py; give user=OpenAiModel("model-name", base_url, key)'),
    ("ChatJudge given the model's name", models('Models(user=Absent("none"), judge=ChatJudge("gpt-4o"))'),
     "convy: loading models.py failed: TypeError: ChatJudge: model=\"gpt-4o\" is text, not a chat model: give the model by its name, "
     'ChatJudge(OpenAiModel("gpt-4o", base_url, key))'),
    ("judge instructions given as the file's name",
     {**models(f'Models(user=Absent("none"), judge=ChatJudge({GATEWAY_MODEL}, instructions="prompts/judge.md"))'),
      "prompts/judge.md": "Judge strictly.\n"},
     "convy: loading models.py failed: ValueError: ChatJudge: instructions='prompts/judge.md' is a file's name, and would be sent "
     'as the instructions: give the file, instructions=Path("prompts/judge.md") (read when models.py is loaded), or its text'),
    ("a simulator prompt without {{ instructions }}", {**PROMPT, "prompts/user.md": "You are a customer. Say {{ stop }} when done.\n"},
     PU + "no {{ instructions }}: the scenario's user: would never reach the simulated user; put {{ instructions }} where it "
     "reads who it is and what it wants (its slots are {{ instructions }} (or {{ user }}), {{ stop }} and the scenario's vars)"),
    ("a simulator prompt with {instructions}", {**PROMPT, "prompts/user.md": "You are a customer. {instructions} Say {{ stop }} when done.\n"},
     PU + "{instructions} is sent as written, so the scenario's user: would never reach the simulated user: "
     "a slot has two braces, {{ instructions }}"),
    ("a simulator prompt that never says the stop mark", {**PROMPT, "prompts/user.md": "You are a customer. {{ instructions }}\nWhen done, say DONE.\n"},
     PU + "no {{ stop }}: the simulated user would never learn the mark that ends a dialogue (###STOP###), so every dialogue "
     'would run to max_turns; tell it, e.g. "when you are done, reply with {{ stop }}"'),
    ("a simulator prompt with a Jinja if", {**PROMPT, "prompts/user.md": "{{ instructions }} {% if persona %}Be {{ persona }}.{% endif %} {{ stop }}\n"},
     PU + "'{% if persona %}' is sent as written: convy fills {{ name }} slots only, no {% if %} nor {% for %}; "
     "write what differs in each scenario's user: or vars"),
    ("a JSON agent without calls= and a called check",
     {A: JSON_AGENT + 'agent = JsonAgent("http://127.0.0.1:9/chat", reply="reply")\n', S: BOOKED},
     "convy: agents/bot.py: JsonAgent has no calls=, so its tool calls cannot be seen and the check 'called lookup_booking' of "
     'scenario greeting cannot be decided: set calls= to where its replies list the tool calls (calls="tool_calls"), set receive_traces = true where it sends OpenTelemetry spans of them, or leave such checks out'),
]


@pytest.mark.parametrize(("case", "files", "line"), [pytest.param(*row, id=row[0]) for row in PARTS])
def test_a_part_that_would_play_wrong_is_refused_by_check_and_run(
    tmp_path: Path, case: str, files: dict[str, str | None], line: str
) -> None:
    """A model, judge, simulator prompt or agent that a run would use wrong, or that would end it in
    a traceback: refused before anything is sent, naming the file, the argument and the fix."""
    folder = project(tmp_path, files)
    refused(convy(folder, "check"), folder, 2, line)
    ran = convy(folder, "run")
    refused(ran, folder, 2, line.replace("loading models.py failed", "loading agents/bot.py or models.py failed"))
    assert "CANARY" not in ran.stdout + ran.stderr


# --- the command line ---------------------------------------------------------------------------
# (case, files written, command, expected line); the code is 2.

LATE = {"scenarios/orders/late.yaml": "tags: [orders, urgent]\n" + GREETING}
COMMANDS = [
    ("an agent misspelt", {}, ("run", "bto"), "convy: agents/bto.py: no such agent; the project has bot"),
    ("a good agent, then one misspelt: neither played", {}, ("run", "bot", "bto"), "convy: agents/bto.py: no such agent; the project has bot"),
    ("a scenario id given as a second agent", {}, ("run", "bot", "greeting"), "convy: greeting: a scenario, not an agent; choose it with --scenarios greeting"),
    ("an agent file that is not there", {}, ("run", "agents/nope.py"), "convy: agents/nope.py: no such agent; the project has bot"),
    ("the agents folder misspelt", {}, ("run", "agent/bot.py"),
     "convy: agent/bot.py: not a file of agents/; give the agent's name (convy run bot) or its file's path (agents/bot.py)"),
    ("a scenario for an agent", {}, ("run", "scenarios/greeting.yaml"),
     "convy: scenarios/greeting.yaml: a scenario, not an agent; choose it with --scenarios scenarios/greeting.yaml"),
    ("--scenarios a folder misspelt", LATE, ("run", "--scenarios", "order/late"),
     "convy: no scenario matches: --scenarios order/late: no such scenario; nearest: orders/late"),
    ("--scenarios a path misspelt", {}, ("run", "--scenarios", "scenarios/greting.yaml"),
     "convy: no scenario matches: --scenarios scenarios/greting.yaml: no such scenario; nearest: greeting"),
    ("--scenarios with commas", LATE, ("run", "--scenarios", "greeting,orders/late"),
     "convy: no scenario matches: --scenarios greeting,orders/late: no such scenario; give each apart, with spaces: --scenarios greeting orders/late"),
    ("--tag misspelt", LATE, ("run", "--tag", "urgnt"), "convy: no scenario matches: --tag urgnt: no scenario has it; the tags are orders, urgent"),
    ("--tag with commas", LATE, ("run", "--tag", "orders,urgent"),
     "convy: no scenario matches: --tag orders,urgent: no scenario has it; give each apart, with spaces: --tag orders urgent"),
    ("--attempts 0", {}, ("run", "--attempts", "0"), "convy: --attempts: must be a whole number of at least 1, or auto"),
    ("-k in words", {}, ("run", "-k", "three"), "convy: --attempts: must be a whole number of at least 1, or auto"),
    ("--max-cost below 0", {}, ("run", "--max-cost", "-1"), "convy: --max-cost: must be 0 (no budget) or more"),
    ("--junit the root", {}, ("run", "--junit", "/"), "convy: --junit /: a folder; name a file in it: --junit /junit.xml"),
    ("--junit a folder", {"reports/": ""}, ("run", "--junit", "reports"), "convy: --junit reports: a folder; name a file in it: --junit reports/junit.xml"),
    ("--summary a folder", {"reports/": ""}, ("run", "--summary", "reports/"),
     "convy: --summary reports: a folder; name a file in it: --summary reports/summary.md"),
    ("--junit and --summary one file", {}, ("run", "--junit", "out.txt", "--summary", "./out.txt"),
     "convy: --junit and --summary name one file: give each its own"),
    ("--ray without a host", {}, ("run", "--ray", "ray://"), "convy: --workers/--ray: ray: not an address: auto, ray://HOST:10001 or HOST:6379"),
    ("--workers below 0", {}, ("run", "--workers", "-1"), "convy: --workers/--ray: workers: must be from 0 to 1000"),
]


@pytest.mark.parametrize(("case", "files", "command", "line"), [pytest.param(*row, id=row[0]) for row in COMMANDS])
def test_a_mistake_on_the_command_line_is_refused_before_anything_plays(
    tmp_path: Path, case: str, files: dict[str, str | None], command: tuple[str, ...], line: str
) -> None:
    folder = project(tmp_path, files)
    done = convy(folder, *command)
    refused(done, folder, 2, line)
    assert done.stderr.splitlines() == [line]


# The command line's own parser, for a value of the wrong kind: the last line is the one that says.
PARSED = [
    ("--fail-under 80", ("run", "--fail-under", "80"), "convy run: error: argument --fail-under: '80' is not between 0 and 1 (or 0% and 100%)"),
    ("--trust 70", ("run", "--trust", "70"), "convy run: error: argument --trust: '70' is not between 0 and 1 (or 0% and 100%)"),
    ("--fail-under two dots", ("run", "--fail-under", "0.8.0"), "convy run: error: argument --fail-under: '0.8.0' is not a number from 0 to 1 (or a percentage)"),
]


@pytest.mark.parametrize(("case", "command", "line"), [pytest.param(*row, id=row[0]) for row in PARSED])
def test_an_option_of_the_wrong_kind_is_refused_with_what_it_takes(tmp_path: Path, case: str, command: tuple[str, ...], line: str) -> None:
    folder = project(tmp_path, {})
    done = convy(folder, *command)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == line
    assert runs(folder) == set()


# --- a kept run named wrong ---------------------------------------------------------------------
# (case, command, expected line); {run} is the id of the one run kept; the code is 2.

HISTORY = [
    ("resume of a run that is not there", ("resume", "20990101-000000-abcd"),
     "convy: no run matches '20990101-000000-abcd' in results/; the newest: {run} (bot)"),
    ("report of a run misspelt", ("report", "{end}x"), "convy: no run matches '{end}x' in results/; the newest: {run} (bot)"),
    ("rejudge of a run that is not there", ("rejudge", "yesterday"), "convy: no run matches 'yesterday' in results/; the newest: {run} (bot)"),
    ("compare of a run with itself", ("compare", "{run}", "{end}"),
     "convy: '{run}' and '{end}' are the same run, bot/{run}: compare it with another run (convy compare BASE CANDIDATE)"),
    ("compare with the agent's name", ("compare", "bot", "{run}"), "convy: no run matches 'bot' in results/; the newest: {run} (bot)"),
    ("resume of another agent's run", ("resume", "shop/{run}"), "convy: no run matches 'shop/{run}' in results/; the newest: {run} (bot)"),
]


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with one run kept: played once, copied for each case."""
    folder = project(tmp_path_factory.mktemp("played"), {})
    done = convy(folder, "run")
    assert done.returncode == 0, done.stdout + done.stderr
    return folder


@pytest.mark.parametrize(("case", "command", "line"), [pytest.param(*row, id=row[0]) for row in HISTORY])
def test_a_run_named_wrong_is_refused_with_the_runs_there_are(
    played: Path, tmp_path: Path, case: str, command: tuple[str, ...], line: str
) -> None:
    folder = Path(shutil.copytree(played, tmp_path / "project"))
    (kept,) = runs(folder)
    run = kept.parent.name
    values = {"run": run, "end": run.rsplit("-", 1)[-1]}
    done = convy(folder, *(part.format(**values) for part in command))
    refused(done, folder, 2, line.format(**values), before=frozenset({kept}))


def test_a_part_two_runs_share_is_refused_naming_both(played: Path, tmp_path: Path) -> None:
    """`convy compare 2026 <id>`: the year starts every id, so it names no one run."""
    folder = Path(shutil.copytree(played, tmp_path / "project"))
    (first,) = runs(folder)
    assert convy(folder, "run").returncode == 0
    (second,) = runs(folder) - {first}
    # Newest by when each started: two runs may start within the second their ids give.
    older, newer = (path.parent.name for path in sorted((first, second), key=lambda path: json.loads(path.read_text())["status"]["started"]))
    shared = older[:4]
    done = convy(folder, "compare", shared, newer)
    line = (
        f"convy: '{shared}' matches 2 runs, newest first: {newer} (bot, finished), {older} (bot, finished); "
        f"give more of the id (its last part is enough: {newer.rsplit('-', 1)[-1]})"
    )
    refused(done, folder, 2, line, before=frozenset({first, second}))


def test_no_run_kept_yet_is_said_so(tmp_path: Path) -> None:
    folder = project(tmp_path, {})
    refused(convy(folder, "resume", "2026"), folder, 2, "convy: no run matches '2026' in results/: no run is kept there yet")


def test_init_in_a_project_already_is_refused(template: Path, tmp_path: Path) -> None:
    """`convy init .` where a project is: the demo's agents and scenarios would join the user's own."""
    folder = Path(shutil.copytree(template, tmp_path / "shop"))
    before = sorted(path.relative_to(folder) for path in folder.rglob("*"))
    done = convy(folder, "init", ".")
    refused(
        done, folder, 2,
        "convy: .: a project already (agents/ and scenarios/ hold files): convy init makes a new one, its demo agents "
        "and scenarios would join yours; give a new folder (convy init NEW), or convy init --ci github for the CI "
        "workflow alone",
    )
    assert sorted(path.relative_to(folder) for path in folder.rglob("*")) == before


# --- the template, as `convy init` makes it ------------------------------------------------------
# (case, .env written, command, expected line); the code is 2.

TEMPLATE = [
    ("GATWAY_URL", "GATWAY_URL=http://127.0.0.1:9/v1\nGATEWAY_KEY=sk-corpus-CANARY\n", ("check",),
     "convy: GATWAY_URL in .env: unknown; did you mean GATEWAY_URL?"),
    ("GATEWAY_KYE", "GATEWAY_URL=http://127.0.0.1:9/v1\nGATEWAY_KYE=sk-corpus-CANARY\n", ("check",),
     "convy: GATEWAY_KYE in .env: unknown; did you mean GATEWAY_KEY?"),
    ("AGENT_MDOEL", "AGENT_MDOEL=gpt-4o-mini\n", ("check",), "convy: AGENT_MDOEL in .env: unknown; did you mean AGENT_MODEL?"),
    ("CONVY_ATEMPTS", "CONVY_ATEMPTS=10\n", ("run",), "convy: CONVY_ATEMPTS in .env: unknown; did you mean CONVY_ATTEMPTS?"),
    ("an effort misspelt", "USER_EFFORT=hihg\n", ("check",),
     "convy: loading models.py failed: GatewaySettings: user_effort: Input should be 'none', 'minimal', 'low', 'medium' or 'high'"),
    ("run asistant", "", ("run", "asistant"), "convy: agents/asistant.py: no such agent; the project has assistant, shop"),
    ("run the absent agent by its file", "", ("run", "agents/assistant.py"),
     "convy: agents/assistant.py: the agent is absent: set GATEWAY_URL, GATEWAY_KEY and AGENT_MODEL in .env (see .env.example)"),
    ("--scenarios refund/damaged", "", ("run", "--scenarios", "refund/damaged"),
     "convy: no scenario matches: --scenarios refund/damaged: no such scenario; nearest: refunds/damaged, refunds/refunded-before, refunds/in-transit"),
    ("--tag urgnt", "", ("run", "--tag", "urgnt"), "convy: no scenario matches: --tag urgnt: no scenario has it; the tags are orders, refunds, smoke, tools"),
    ("GATEWAY_URL without http://", "GATEWAY_URL=localhost:4000/v1\nGATEWAY_KEY=sk-corpus-CANARY\nUSER_MODEL=user-model\n", ("check",),
     "convy: loading models.py failed: GATEWAY_URL in .env: base_url: must start with http:// or https://, "
     "not 'localhost:4000/v1' (http://localhost:4000/v1?)"),
    ("the URL and the key swapped", "GATEWAY_URL=sk-corpus-CANARY-0123\nGATEWAY_KEY=https://openrouter.ai/api/v1\nUSER_MODEL=user-model\n",
     ("check",),
     "convy: loading models.py failed: GATEWAY_URL in .env: base_url: must start with http:// or https://; what it was "
     "given is no address (a key?) and GATEWAY_KEY in .env holds a URL: are the two swapped?"),
    ("GATEWAY_URL with /chat/completions", "GATEWAY_URL=http://127.0.0.1:9/v1/chat/completions\nGATEWAY_KEY=sk-corpus-CANARY\n"
     "USER_MODEL=user-model\n", ("run", "shop"),
     "convy: loading agents/shop.py or models.py failed: GATEWAY_URL in .env: base_url: give the base URL ending in /v1 "
     "(or wherever the service's API starts); convy adds /chat/completions (is it http://127.0.0.1:9/v1?)"),
]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project `convy init` makes, made once and copied for each case."""
    folder = tmp_path_factory.mktemp("template") / "shop"
    done = convy(folder.parent, "init", "shop")
    assert done.returncode == 0, done.stdout + done.stderr
    return folder


@pytest.mark.parametrize(("case", "dotenv", "command", "line"), [pytest.param(*row, id=row[0]) for row in TEMPLATE])
def test_a_mistake_in_the_template_project_is_refused_with_the_name_meant(
    template: Path, tmp_path: Path, case: str, dotenv: str, command: tuple[str, ...], line: str
) -> None:
    folder = Path(shutil.copytree(template, tmp_path / "shop"))
    (folder / ".env").write_text(dotenv, encoding="utf-8")
    done = convy(folder, *command)
    refused(done, folder, 2, line)
    assert "CANARY" not in done.stdout + done.stderr


# --- services that cannot answer: the run stops at once with the fix ---------------------------------
# (case, .env lines past the models' names, given the stand-in's URL, expected fix); `convy run shop
# --scenarios orders/impatient -k 3` exits 2: the simulated user's model is asked first, and never answers.

MODEL_NAMES = "USER_MODEL={user}\nJUDGE_MODEL=judge-model\nAGENT_MODEL=agent-model\n"
DEAD = [
    ("a wrong key", "GATEWAY_URL={url}/v1\nGATEWAY_KEY=sk-wrong-CANARY\n", "user-model",
     "answered 401 Unauthorized at {url}/v1/chat/completions", "the key was refused: check GATEWAY_KEY in .env"),
    ("a URL without /v1", "GATEWAY_URL={url}\nGATEWAY_KEY=sk-corpus-KEY\n", "user-model",
     "answered 404 Not Found at {url}/chat/completions", "the URL has no /v1: is it {url}/v1? (GATEWAY_URL in .env)"),
    ("a model name misspelt", "GATEWAY_URL={url}/v1\nGATEWAY_KEY=sk-corpus-KEY\n", "user-modle",
     "answered 404 Not Found at {url}/v1/chat/completions", "is the model name right (USER_MODEL in .env)?"),
    ("a gateway that is not up", "GATEWAY_URL={down}/v1\nGATEWAY_KEY=sk-corpus-KEY\n", "user-model",
     "could not connect to {down}/v1/chat/completions", "is the server at {down}/v1 running, and is that its address? (GATEWAY_URL in .env)"),
    ("https:// for a gateway on plain HTTP", "GATEWAY_URL={url_tls}/v1\nGATEWAY_KEY=sk-corpus-KEY\n", "user-model",
     "answered in plain HTTP, not TLS, at {url_tls}/v1/chat/completions",
     "the server there speaks plain HTTP: is its URL {url}/v1? (GATEWAY_URL in .env)"),
    ("a file server where the gateway should be", "GATEWAY_URL={www}/v1\nGATEWAY_KEY=sk-corpus-KEY\n", "user-model",
     "answered 501 Not Implemented at {www}/v1/chat/completions",
     "something answers there, but not a Chat Completions service (it takes no POST): is that the service's base URL? "
     "(GATEWAY_URL in .env)"),
]


@pytest.mark.parametrize(("case", "dotenv", "user", "answered", "fix"), [pytest.param(*row, id=row[0]) for row in DEAD])
def test_a_service_that_cannot_answer_stops_the_run_with_the_fix(
    template: Path, tmp_path: Path, case: str, dotenv: str, user: str, answered: str, fix: str
) -> None:
    """A wrong key, URL or model name, or a gateway that is down: the first requests fail for good,
    so the run stops at once (exit 2), names the participant, what its service said and the fix,
    and keeps no run."""
    folder = Path(shutil.copytree(template, tmp_path / "shop"))
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{probe.getsockname()[1]}"
    www = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)  # python -m http.server
    threading.Thread(target=www.serve_forever, daemon=True).start()
    try:
        with StandIn(reply=Roles(), api_key="sk-corpus-KEY", prefix="/v1", models=frozenset({"user-model", "judge-model", "agent-model"})) as server:
            urls = {"url": server.url, "url_tls": server.url.replace("http://", "https://"), "down": down,
                    "www": f"http://127.0.0.1:{www.server_address[1]}"}
            (folder / ".env").write_text(dotenv.format(**urls) + MODEL_NAMES.format(user=user), encoding="utf-8")
            done = convy(folder, "run", "shop", "--scenarios", "orders/impatient", "-k", "3")
    finally:
        www.shutdown()
        www.server_close()
    said = done.stdout + done.stderr
    first = done.stderr.splitlines()[0] if done.stderr else ""
    assert (done.returncode, "Traceback" in said, "pass rate" in said, "CANARY" in said) == (2, False, False, False), said
    assert first.startswith(f"convy: the simulated user's model {user} {answered.format(**urls)} ("), said
    assert first.endswith(f"none answered): {fix.format(**urls)}"), said
    assert runs(folder) == set(), said


# --- runs that play, and say what was wrong -------------------------------------------------------
# (case, reply= path, calls= path, expected code, expected line of the run's output)


def booking(data: object) -> dict[str, object]:
    """An airline agent's endpoint: it looks the booking up, and says so under "tool_calls"."""
    return {"reply": "Your booking XYZ789: seat 12A.", "tool_calls": [{"name": "lookup_booking", "arguments": {"ref": "XYZ789"}}]}


PLAYED = [
    ("calls path misspelt", "reply", "toolcalls", 5,
     "agents/airline.py: calls path 'toolcalls': in no reply of 1 attempt, whose tool checks were not judged: "
     "set calls= to where the agent's replies list its tool calls"),
    ("calls path on the reply's text", "reply", "reply", 5,
     "agents/airline.py: calls path 'reply': held text, never a list, in every reply of 1 attempt, whose tool checks were not judged: "
     "set calls= to where the agent's replies list its tool calls"),
    ("reply path misspelt", "text", "tool_calls", 1, "agent failed (agent_failed): {url}/agent: reply path text: no 'text' in the reply"),
    ("reply path one level deep", "output.reply", "tool_calls", 1,
     "agent failed (agent_failed): {url}/agent: reply path output.reply: no 'output' in the reply"),
]


@pytest.mark.parametrize(("case", "reply", "calls", "code", "line"), [pytest.param(*row, id=row[0]) for row in PLAYED])
def test_a_path_the_replies_never_hold_is_named_by_the_run(tmp_path: Path, case: str, reply: str, calls: str, code: int, line: str) -> None:
    """The run plays and says the path and the agent's file: no tool check is blamed on the agent
    for a path it never wrote (exit 5, not judged); a reply read at the wrong path fails the
    attempt, naming the path (exit 1)."""
    scenario = "script: ['my booking is XYZ789']\njudge:\n  - check: {called: lookup_booking}\n  - check: {said: 12A}\n"
    with StandIn(agent_reply=booking) as server:
        agent = f'from convy import JsonAgent\n\nagent = JsonAgent("{server.url}/agent", reply="{reply}", calls="{calls}")\n'
        folder = project(tmp_path, {"agents/bot.py": None, "agents/airline.py": agent, S: None, "scenarios/booking.yaml": scenario})
        done = convy(folder, "run")
    said = done.stdout + done.stderr
    assert "Traceback" not in said
    assert done.returncode == code, said
    assert any(text.endswith(line.format(url=server.url)) for text in done.stdout.splitlines()), said
    assert "agent never called" not in said


# --- mistakes used as meant ----------------------------------------------------------------------
# (case, files written, command, expected line of the run's output); the code is 0.

MEANT = [
    ("a scenario saved as .YAML", {S: None, "scenarios/greeting.YAML": GREETING}, ("run", "--scenarios", "greeting"),
     "bot: 1 passed, 0 failed, 0 not judged of 1 attempt · pass rate 100.0% [2.5%, 100.0%] (mean over scenarios)"),
    ("--scenarios a folder", {S: None, "scenarios/orders/late.yaml": GREETING, "scenarios/orders/eu/late.yml": GREETING},
     ("run", "--scenarios", "orders"),
     "bot: 2 passed, 0 failed, 0 not judged of 2 attempts · pass rate 100.0% [15.8%, 100.0%] (mean over scenarios)"),
    ("--scenarios a folder's path", {"scenarios/orders/late.yaml": GREETING}, ("run", "--scenarios", "scenarios/orders/"),
     "bot: 1 passed, 0 failed, 0 not judged of 1 attempt · pass rate 100.0% [2.5%, 100.0%] (mean over scenarios)"),
    ("a JSON agent given a plain URL", json_agent(endpoint='"http://127.0.0.1:9/chat"'), ("check",),
     "would run 1 agent × 1 scenario × 1 attempt = 1 attempt; nothing was sent, nothing written"),
]


@pytest.mark.parametrize(("case", "files", "command", "line"), [pytest.param(*row, id=row[0]) for row in MEANT])
def test_a_mistake_with_one_meaning_is_used_as_meant(
    tmp_path: Path, case: str, files: dict[str, str | None], command: tuple[str, ...], line: str
) -> None:
    folder = project(tmp_path, files)
    done = convy(folder, *command)
    assert done.returncode == 0, done.stdout + done.stderr
    assert line in done.stdout.splitlines()


def test_a_run_named_by_its_folders_path_is_found(played: Path, tmp_path: Path) -> None:
    """`convy report results/bot/<id>/` and `convy resume bot/<id>`, as tab completion gives them."""
    folder = Path(shutil.copytree(played, tmp_path / "project"))
    (kept,) = runs(folder)
    run = kept.parent.name
    report = convy(folder, "report", f"results/bot/{run}/")
    assert report.returncode == 0, report.stderr
    assert f"report: results/bot/{run}/report.html" in report.stdout.splitlines()
    resumed = convy(folder, "resume", f"bot/{run}")
    assert resumed.returncode == 0, resumed.stderr
    assert f"run kept in results/bot/{run}" in resumed.stdout.splitlines()
    assert runs(folder) == {kept}


# --- the project around the scenarios: agents/ files, .env, the pass rule, options -----------------
# (case, files written, command, expected code, expected first line); found by an outside audit.

ECHO = SOUND["agents/bot.py"]
ASKING = "user: You want a refund for order A-1043.\njudge:\n  - The agent refunds the order.\n"
AROUND = [
    ("an agent saved as .py.txt", {A: None, "agents/bot.py.txt": ECHO}, ("check",), 2,
     "convy: agents/bot.py.txt: not read: an agent file's name ends in .py; rename it agents/bot.py"),
    ("a second agent saved as .pyw, asked for", {"agents/airline.pyw": ECHO}, ("run", "airline"), 2,
     "convy: agents/airline.py: no such agent; agents/airline.pyw is there but is not an agent file: rename it agents/airline.py; the project has bot"),
    ("the agent named is a backup", {"agents/airline.py.bak": ECHO}, ("run", "airline"), 2,
     "convy: agents/airline.py: no such agent; agents/airline.py.bak is there but is not an agent file: rename it agents/airline.py; the project has bot"),
    ("the agent named is a folder", {"agents/airline/__init__.py": ECHO}, ("run", "airline"), 2,
     "convy: agents/airline.py: no such agent; agents/airline/ is a folder: an agent is one file, agents/airline.py (which may import from the folder); the project has bot"),
    ("the agent named in capitals", {}, ("run", "Bot"), 2, "convy: agents/Bot.py: no such agent; did you mean bot (agents/bot.py)?"),
    ("_ for the - of an agent's name", {"agents/air-line.py": ECHO}, ("run", "air_line"), 2,
     "convy: agents/air_line.py: no such agent; did you mean air-line (agents/air-line.py)?"),
    ("a helper file in agents/", {"agents/common.py": 'URL = "http://127.0.0.1:9/chat"\n'}, ("check",), 2,
     "convy: agents/common.py: defines no `agent`; a file of helpers for the agents is named with a _ first "
     "(agents/_common.py, imported as agents._common), which convy does not load as an agent"),
    ("a helper imported as if agents/ were the path", {"agents/_common.py": "NAME = 'bot'\n", A: "from _common import NAME\n" + ECHO},
     ("check",), 2,
     "convy: loading agents/bot.py failed: ModuleNotFoundError: No module named '_common'; "
     "agents/_common.py is imported from the project's folder: from agents._common import ..."),
    ("a new key pasted under the old one", {".env": "GATEWAY_KEY=sk-new-key-1\nGATEWAY_KEY=sk-old-key-2\n"}, ("run",), 2,
     "convy: .env: line 2: GATEWAY_KEY is set again (first on line 1); the last would win: keep one"),
    ("a setting given twice in two cases", {".env": "CONVY_ATTEMPTS=2\nconvy_attempts=3\n"}, ("check",), 2,
     "convy: .env: line 2: convy_attempts (read as CONVY_ATTEMPTS) is set again (first on line 1); the last would win: keep one"),
    (".env written as YAML", {".env": "GATEWAY_URL: http://127.0.0.1:9/v1\n"}, ("check",), 2,
     "convy: .env: line 1: GATEWAY_URL: a .env line is NAME=value: write GATEWAY_URL=..."),
    ("every scenario needs a model, none is set", {S: ASKING}, ("check",), 7,
     "convy: nothing would be tested: every chosen scenario would be skipped (greeting: needs a model for the simulated "
     "user: no user model here and needs a model for the judge: no judge here)"),
    ("a dry run of scenarios that would all be skipped", {"scenarios/refund.yaml": ASKING}, ("run", "--dry-run", "--scenarios", "refund"), 7,
     "convy: nothing would be tested: every chosen scenario would be skipped (refund: needs a model for the simulated "
     "user: no user model here and needs a model for the judge: no judge here)"),
    ("a tool check written as a call", {S: "script: [Hi!]\njudge:\n  - check: {called: lookup_booking()}\n"}, ("check",), 2,
     F + "judge[0].check.called: 'lookup_booking()': a tool's name, without brackets: called: lookup_booking"),
    ("fail_under as text that is no share", {P: '[tool.convy]\nfail_under = "ninety"\n'}, ("check",), 2,
     T + 'fail_under: must be a number from 0 to 1, or a percentage (0.9 or "90%")'),
]


@pytest.mark.parametrize(("case", "files", "command", "code", "line"), [pytest.param(*row, id=row[0]) for row in AROUND])
def test_a_mistake_around_the_scenarios_is_said_with_the_fix(
    tmp_path: Path, case: str, files: dict[str, str | None], command: tuple[str, ...], code: int, line: str
) -> None:
    folder = project(tmp_path, files)
    refused(convy(folder, *command), folder, code, line)


# An option misspelt or given to the wrong command: argparse's usage, then the line that says.
OPTIONS = [
    ("--fail-on-regresion", ("compare", "a", "b", "--fail-on-regresion"),
     "convy compare: error: --fail-on-regresion: no such option; did you mean --fail-on-regression?"),
    ("--atempts", ("run", "--atempts", "3"), "convy run: error: --atempts: no such option; did you mean --attempts?"),
    ("--max-not-juged", ("run", "--max-not-juged", "0.1"), "convy run: error: --max-not-juged: no such option; did you mean --max-not-judged?"),
    ("--tag given to check", ("check", "--tag", "smoke"), "convy check: error: --tag is an option of convy rejudge and convy run, not of convy check; unrecognized arguments: smoke"),
]


@pytest.mark.parametrize(("case", "command", "line"), [pytest.param(*row, id=row[0]) for row in OPTIONS])
def test_an_option_misspelt_is_said_with_the_one_meant(tmp_path: Path, case: str, command: tuple[str, ...], line: str) -> None:
    folder = project(tmp_path, {})
    done = convy(folder, *command)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == line
    assert runs(folder) == set()


# Written as meant, though not as the docs show it: used so (code 0), the run's verdict as asked.
BOM = "\ufeff"
AS_MEANT = [
    ("CONVY_FAIL_UNDER=90% in .env", {".env": "CONVY_FAIL_UNDER=90%\n"}, ("check",), "  fail_under        0.9           CONVY_FAIL_UNDER"),
    ('fail_under = "90%" in pyproject', {P: '[tool.convy]\nattempts = 1\nfail_under = "90%"\n'}, ("check",), "  fail_under        0.9           [tool.convy]"),
    ("a scenario's fail_under: 90%, as the settings take it", {S: "fail_under: 90%\n" + GREETING}, ("run",),
     "bot: 1 passed, 0 failed, 0 not judged of 1 attempt · pass rate 100.0% [2.5%, 100.0%] (mean over scenarios)"),
    (".env with the same line twice", {".env": "CONVY_ATTEMPTS=2\nCONVY_ATTEMPTS=2\n"}, ("check",), "  attempts          2             CONVY_ATTEMPTS"),
    ("pyproject saved by Notepad (BOM, CRLF)", {P: BOM + "[tool.convy]\r\nattempts = 2\r\n"}, ("check",), "  attempts          2             [tool.convy]"),
    ("a scenario saved by Notepad (BOM, CRLF)", {S: BOM + GREETING.replace("\n", "\r\n")}, ("run",),
     "bot: 1 passed, 0 failed, 0 not judged of 1 attempt · pass rate 100.0% [2.5%, 100.0%] (mean over scenarios)"),
    (".env saved by Notepad (BOM, CRLF)", {".env": BOM + "CONVY_ATTEMPTS=2\r\n"}, ("check",), "  attempts          2             CONVY_ATTEMPTS"),
]


@pytest.mark.parametrize(("case", "files", "command", "line"), [pytest.param(*row, id=row[0]) for row in AS_MEANT])
def test_a_setting_or_file_written_otherwise_is_read_as_meant(
    tmp_path: Path, case: str, files: dict[str, str | None], command: tuple[str, ...], line: str
) -> None:
    folder = project(tmp_path, files)
    done = convy(folder, *command)
    assert done.returncode == 0, done.stdout + done.stderr
    assert line in done.stdout.splitlines(), done.stdout


@pytest.mark.parametrize("command", [("check", "-C", "proj"), ("-C", "proj", "check"), ("-C", "elsewhere", "check", "--project", "proj")])
def test_the_project_given_after_the_command_is_the_project(tmp_path: Path, command: tuple[str, ...]) -> None:
    """`convy check -C proj`, the project's folder given after the command: read as the project all
    the same (it was "unrecognized arguments: -C proj"); given on both sides, the one after the
    command wins."""
    project(tmp_path / "proj", {P: "[tool.convy]\nattempts = 2\n"})
    done = convy(tmp_path, *command)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  attempts          2             [tool.convy]" in done.stdout.splitlines(), done.stdout


def test_a_resume_after_the_scenario_was_edited_says_so(played: Path, tmp_path: Path) -> None:
    """Edit a scenario, then `convy resume` the run begun before: refused naming the file, with the
    two ways on, never the run's old copy played without a word."""
    folder = Path(shutil.copytree(played, tmp_path / "project"))
    (kept,) = runs(folder)
    run = kept.parent.name
    (folder / S).write_text(GREETING.replace("Hi!", "Hello!"), encoding="utf-8")
    line = (
        f"convy: cannot resume {run}: scenarios/greeting.yaml changed (scenario greeting) since the run started; "
        f"start a new run (convy run bot), or play the copy the run kept: convy resume {run.rsplit('-', 1)[-1]} --old-scenarios"
    )
    refused(convy(folder, "resume", run), folder, 2, line, before=frozenset({kept}))


def test_a_command_started_in_a_folder_of_the_project_says_where_the_project_is(tmp_path: Path) -> None:
    """`cd scenarios` to edit a file, then `convy check` there: it said the project had no agents
    and no scenarios; it names the project above and the command to run there."""
    folder = project(tmp_path, {})
    done = convy(folder / "scenarios", "run", "bot", "-k", "2")
    refused(done, folder, 2, "convy: scenarios/ is a folder of the project in .., not a project: cd .. && convy run bot -k 2, or convy -C .. run bot -k 2")
    assert not (folder / "scenarios" / "results").exists()


@pytest.mark.parametrize("command", [("check",), ("run",)])
def test_an_agent_file_parked_beside_the_agents_is_a_note(tmp_path: Path, command: tuple[str, ...]) -> None:
    """agents/legacy.py.txt beside a working bot.py stopped `convy run` (exit 2) while a .py.bak
    was passed over: it stops nothing now, and is said as a note with the rename that would play it."""
    folder = project(tmp_path, {"agents/legacy.py.txt": "agent = None\n", "agents/old.py.bak": "agent = None\n"})
    done = convy(folder, *command)
    assert done.returncode == 0, done.stdout + done.stderr
    notes = [line for line in done.stdout.splitlines() if line.startswith("note: agents/")]
    assert notes == ["note: agents/legacy.py.txt is not read: an agent file's name ends in .py; rename it agents/legacy.py to play it"]


def test_init_started_in_a_folder_of_a_project_is_refused(tmp_path: Path) -> None:
    """`convy init demo` in scenarios/ built a project there, which the project around it then read
    as its own: refused as check and run are, naming the project above."""
    folder = project(tmp_path, {})
    done = convy(folder / "scenarios", "init", "demo")
    refused(done, folder, 2, "convy: scenarios/ is a folder of the project in .., not a project: cd .. && convy init demo, or convy -C .. init demo")
    assert not (folder / "scenarios" / "demo").exists()


@pytest.mark.parametrize("command", [("report", "{id}"), ("compare", "{id}", "{id}"), ("export", "{id}"), ("labels", "show", "{id}")])
def test_a_run_named_from_a_folder_of_the_project_is_refused_naming_the_project(
    played: Path, tmp_path: Path, command: tuple[str, ...]
) -> None:
    """`convy report ID` in scenarios/ or in the run's own folder said no run matches: it names the
    project above and the command to run there."""
    folder = Path(shutil.copytree(played, tmp_path / "project"))
    (kept,) = runs(folder)
    given = tuple(word.format(id=kept.parent.name[-4:]) for word in command)
    words = " ".join(given)
    done = convy(folder / "scenarios", *given)
    refused(done, folder, 2, f"convy: scenarios/ is a folder of the project in .., not a project: cd .. && convy {words}, or convy -C .. {words}", before=frozenset({kept}))
    inside = kept.parent.relative_to(folder).as_posix()
    done = convy(kept.parent, *given)
    line = f"convy: {inside}/ is a folder of the project in ../../.., not a project: cd ../../.. && convy {words}, or convy -C ../../.. {words}"
    refused(done, folder, 2, line, before=frozenset({kept}))


def test_the_corpus_holds_sixty_mistakes_or_more() -> None:
    tables = (
        SCENARIOS, WRITTEN, FILES, SETTINGS, CODE, PARTS, COMMANDS, PARSED, HISTORY, TEMPLATE, DEAD, PLAYED, MEANT,
        AROUND, OPTIONS, AS_MEANT,
    )
    assert sum(len(table) for table in tables) >= 60


@pytest.mark.parametrize(
    "entry",
    ["'check: {said: Hi}'", "'said: Hi'", "'{said: Hi}'", "'claim: the agent greets back'", "'check: the agent greets the user back'", "'check:'"],
)
def test_a_quoted_entry_is_refused_only_with_a_fix_that_passes(tmp_path: Path, entry: str) -> None:
    """A judge entry in quotes that reads as a check or claim is refused with a fix; the fix, written
    in its place, passes check. One that reads as no sound check is a claim's text, and passes as it is."""
    folder = project(tmp_path, {S: f"script: [Hi!]\njudge:\n  - {entry}\n"})
    done = convy(folder, "check")
    if entry in ("'check: the agent greets the user back'", "'check:'"):
        # read as a claim: only the missing judge model is said (this project has none)
        assert done.returncode == 7 and "judge[0]" not in done.stderr, done.stderr
        return
    assert done.returncode == 2, done.stderr
    fix = done.stderr.splitlines()[0].split("write it without the quotes, ", 1)[1]
    (folder / S).write_text(f"script: [Hi!]\njudge:\n  {fix}\n")
    fixed = convy(folder, "check")
    assert fixed.returncode in (0, 7) and "judge[0]" not in fixed.stderr, fixed.stderr
