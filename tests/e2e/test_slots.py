"""``{{ slots }}`` as a user writes them, through the real ``convy`` command: filled by one rule in
a scenario's user, script, claims and checks, in a simulator prompt of one's own and in a JSON
agent's body, or refused (exit 2, one line naming the file, the field and the slot) — never sent
as written. And the slots docs/protocols.md lists are the ones the code fills.

The mistakes are written as an author makes them: a var given but no matrix, a slot typed
``seats`` for ``seat``, ``{{ message }}`` in a JSON body, a plain URL for the endpoint.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.process import run_convy
from support.standin import StandIn

ROOT = Path(__file__).resolve().parents[2]

# An airline agent of one's own: it moves the user to the seat named last in the message, says
# so, and reports the tool call, so `called`/`with` and `said` checks can see it.
AIRLINE = """\
from convy import Answer, Call
from convy.fakes import FakeAgent


def answer(text):
    seat = text.rstrip(".!").rsplit(" ", 1)[-1]
    number = int(seat) if seat.isdigit() else seat
    return Answer(f"Done: you are now in seat {seat}. You wrote: {text}", steps=(Call("change_seat", {"seat": number}),))


agent = FakeAgent(answer)
"""


def project(tmp_path: Path, scenarios: dict[str, str], agent: str = AIRLINE, extra: str = "") -> Path:
    folder = tmp_path / "project"
    (folder / "agents").mkdir(parents=True)
    (folder / "agents" / "airline.py").write_text(agent, encoding="utf-8")
    (folder / "scenarios").mkdir()
    for name, text in scenarios.items():
        (folder / "scenarios" / name).write_text(text, encoding="utf-8")
    (folder / "pyproject.toml").write_text(f"[tool.convy]\nattempts = 1\n{extra}", encoding="utf-8")
    return folder


def attempts(folder: Path, agent: str = "airline") -> list[dict]:
    (run,) = (folder / "results" / agent).iterdir()
    return [json.loads(line) for line in (run / "attempts.jsonl").read_text(encoding="utf-8").splitlines()]


def messages(attempt: dict) -> list[str]:
    return [turn["message"] for turn in attempt["transcript"]["turns"]]


def claims(attempt: dict) -> list[tuple[str, bool]]:
    return [(claim["claim"], claim["held"]) for claim in attempt["result"]["claims"]]


def test_vars_fill_the_script_and_the_checks_without_a_matrix(tmp_path: Path) -> None:
    """`vars: {ref: XYZ789}` fills `script:` and a `said` check in a scenario with no matrix: the
    agent is sent the booking reference, not `{{ ref }}`, and the check looks for it."""
    folder = project(
        tmp_path,
        {
            "booking.yaml": (
                "vars: {ref: XYZ789, seat: 12A}\n"
                "script:\n  - my booking is {{ ref }}, please move me to {{ seat }}\n"
                "judge:\n"
                "  - check: {said: 'booking is {{ ref }}'}\n"
                "  - check: {called: change_seat, with: {seat: '{{ seat }}'}}\n"
            )
        },
    )
    done = run_convy(folder, "run", "airline")
    assert done.returncode == 0, done.stdout + done.stderr
    (attempt,) = attempts(folder)
    assert messages(attempt) == ["my booking is XYZ789, please move me to 12A"]
    assert claims(attempt) == [("said /booking is XYZ789/", True), ("called change_seat with seat='12A'", True)]


def test_matrix_values_fill_claims_and_every_check_field(tmp_path: Path) -> None:
    """A matrix's values fill `with:`, `said:` and a judged claim of each variant: the agent that
    does as asked passes every variant, and the report's claims say the values. A value that is
    the slot alone keeps its kind: the seat number 14 is asked for as the number 14."""
    folder = project(
        tmp_path,
        {
            "seats.yaml": (
                "matrix:\n  seat: [12A, 14]\n"
                "script:\n  - please move me to seat {{ seat }}\n"
                "judge:\n"
                "  - check: {called: change_seat, with: {seat: '{{ seat }}'}}\n"
                "  - check: {said: 'seat {{ seat }}\\.'}\n"
                "  - check: {not_said: 'seat {{ seat }}9'}\n"
            )
        },
    )
    done = run_convy(folder, "run", "airline")
    assert done.returncode == 0, done.stdout + done.stderr
    found = {attempt["scenario"]: claims(attempt) for attempt in attempts(folder)}
    assert found == {
        "seats[seat=12A]": [
            ("called change_seat with seat='12A'", True),
            ("said /seat 12A\\./", True),
            ("never said /seat 12A9/", True),
        ],
        "seats[seat=14]": [
            ("called change_seat with seat=14", True),
            ("said /seat 14\\./", True),
            ("never said /seat 149/", True),
        ],
    }


def test_a_value_in_a_pattern_matches_as_written(tmp_path: Path) -> None:
    """`said: '{{ price }}'` with `price: "$4.99"` looks for "$4.99" itself: `$` and `.` in a value
    are not pattern syntax, so an agent that echoes "$4.99" holds it and one that echoes "$4x99"
    does not."""
    said = "judge:\n  - check: {said: 'fee is {{ price }}'}\n"
    scenarios = {
        "exact.yaml": "vars: {price: $4.99}\nscript: ['the fee is {{ price }}']\n" + said,
        "other.yaml": "vars: {price: $4.99}\nscript: ['the fee is $4x99']\n" + said,
    }
    folder = project(tmp_path, scenarios, AIRLINE.replace("FakeAgent(answer)", "FakeAgent(lambda text: text)"))
    done = run_convy(folder, "run", "airline")
    assert "Traceback" not in done.stderr
    found = {attempt["scenario"]: (messages(attempt), claims(attempt)) for attempt in attempts(folder)}
    assert found == {
        "exact": (["the fee is $4.99"], [("said /fee is \\$4\\.99/", True)]),
        "other": (["the fee is $4x99"], [("said /fee is \\$4\\.99/", False)]),
    }


def test_a_backslash_writes_a_literal_double_brace(tmp_path: Path) -> None:
    r"""`\{{ name }}` is sent as `{{ name }}`, in a script and in a check alike: no slot, no refusal."""
    scenario = "script: ['type \\{{ name }} in the form']\njudge:\n  - check: {said: 'type \\{{ name }} in'}\n"
    folder = project(tmp_path, {"form.yaml": scenario})
    done = run_convy(folder, "run", "airline")
    assert done.returncode == 0, done.stdout + done.stderr
    (attempt,) = attempts(folder)
    assert messages(attempt) == ["type {{ name }} in the form"]
    assert claims(attempt)[0][1] is True


def test_a_backslash_writes_a_literal_single_brace_and_a_pattern_keeps_it(tmp_path: Path) -> None:
    r"""`\{name}` where name is a var is sent as `{name}`, not hinted as a slot written wrong; in a
    said pattern the backslash is the pattern's own escape and stays: it matches the braces."""
    scenario = (
        "vars: {name: Sam}\nscript: ['Hi {{ name }}, why does print(f\"\\{name}\") fail?']\n"
        "judge:\n  - check: {said: 'print\\(f\"\\{name}\"\\)'}\n"
    )
    folder = project(tmp_path, {"brace.yaml": scenario})
    done = run_convy(folder, "run", "airline")
    assert done.returncode == 0, done.stdout + done.stderr
    (attempt,) = attempts(folder)
    assert messages(attempt) == ['Hi Sam, why does print(f"{name}") fail?']
    assert claims(attempt) == [('said /print\\(f"\\{name}"\\)/', True)]


MISTAKES = [
    (
        "a slot typed seats for the matrix's seat",
        "matrix:\n  seat: [12A, 14C]\nscript: ['move me to {{ seat }}']\njudge:\n"
        "  - check: {called: change_seat, with: {seat: '{{ seats }}'}}\n",
        "scenarios/seat.yaml: judge[0].check.with.seat: no value for {{ seats }} in vars or matrix"
        " (is {{ seats }} a slip for {{ seat }}?)",
    ),
    (
        "a said check with a slot and no vars",
        "script: ['move me to 12A']\njudge:\n  - check: {said: 'seat {{ seat }}'}\n",
        "scenarios/seat.yaml: judge[0].check.said: no value for {{ seat }} in vars",
    ),
    (
        "a judged claim with a slot no var fills",
        "vars: {ref: XYZ789}\nscript: ['my booking is {{ ref }}']\njudge:\n  - The agent confirms booking {{ booking }}.\n",
        "scenarios/seat.yaml: judge[0]: no value for {{ booking }} in vars",
    ),
    (
        "a graded claim's slot",
        "vars: {ref: XYZ789}\nscript: ['my booking is {{ ref }}']\njudge:\n"
        "  - claim: How clearly did the agent confirm {{ rfe }}?\n    grades: [poorly, clearly]\n    pass: clearly\n",
        "scenarios/seat.yaml: judge[0].claim: no value for {{ rfe }} in vars (is {{ rfe }} a slip for {{ ref }}?)",
    ),
    (
        "a dash in a slot's name",
        "vars: {seat_no: 12A}\nscript: ['move me to {{ seat-no }}']\njudge:\n  - check: {said: seat}\n",
        "scenarios/seat.yaml: script[0]: '{{ seat-no }}' is not a slot: a slot is {{ name }}, its name letters,"
        " digits and _; write \\{{ for a literal {{",
    ),
    (
        "a slot closed with one brace",
        "vars: {seat: 12A}\nscript: ['move me to {{seat} please']\njudge:\n  - check: {said: seat}\n",
        "scenarios/seat.yaml: script[0]: '{{seat}' is not a slot: a slot is {{ name }}, its name letters,"
        " digits and _; write \\{{ for a literal {{",
    ),
    (
        "a slot in capitals for a var in lower case",
        "vars: {seat: 12A}\nscript: ['move me to {{ Seat }}']\njudge:\n  - check: {said: seat}\n",
        "scenarios/seat.yaml: script[0]: no value for {{ Seat }} in vars (is {{ Seat }} a slip for {{ seat }}?)",
    ),
    (
        "a user text with a slot no var fills",
        "user: 'You are {{ name }}, booking {{ ref }}.'\nvars: {name: Dana}\njudge:\n  - check: {said: seat}\n",
        "scenarios/seat.yaml: user: no value for {{ ref }} in vars",
    ),
    (
        "a var whose value holds another var's slot",
        "vars: {name: Dana, greeting: 'Hi, I am {{ name }}'}\nscript: ['{{ greeting }}']\njudge:\n  - check: {said: Dana}\n",
        "scenarios/seat.yaml: vars.greeting: a value is not filled, so {{ name }} in it would be sent as written:"
        " put the slot in the text the value goes into",
    ),
    (
        "a check's only text a var left empty",
        "vars: {ref: ''}\nscript: ['my booking']\njudge:\n  - check: {said: '{{ ref }}'}\n",
        "scenarios/seat.yaml: judge[0].check.said: empty once its slots are filled: give their values some text",
    ),
    (
        "a var named stop",
        "vars: {stop: now}\nscript: ['please stop {{ stop }}']\njudge:\n  - check: {said: seat}\n",
        "scenarios/seat.yaml: vars.stop: the simulator prompt fills {{ stop }} itself"
        " (the mark that ends the dialogue, ###STOP###): give the value another name",
    ),
]


@pytest.mark.parametrize(("case", "text", "said"), MISTAKES, ids=[case for case, *_ in MISTAKES])
def test_a_slot_with_no_value_is_refused_naming_file_field_and_slot(tmp_path: Path, case: str, text: str, said: str) -> None:
    """`convy check` and `convy run` refuse the scenario in one line (exit 2), before anything is
    played or written."""
    folder = project(tmp_path, {"seat.yaml": text})
    for command in (("check",), ("run", "airline")):
        done = run_convy(folder, *command)
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"convy: {said}" in done.stderr.splitlines(), done.stderr
        assert "Traceback" not in done.stderr
    assert not (folder / "results").exists()


USER_MODEL = """\
from pathlib import Path

from convy.fakes import FakeModel
from convy.judge import Models


def replies(messages):
    Path("told.txt").write_text(messages[0].content, encoding="utf-8")
    return "Please move me to 12A." if len(messages) == 2 else "Thanks! ###STOP###"


models = Models(user=FakeModel(replies))
"""


def test_a_simulator_prompt_of_ones_own_gets_user_instructions_and_vars(tmp_path: Path) -> None:
    """prompts/user.md written with `{{ user }}` (the scenario's user text, as one would expect),
    `{{ stop }}` and a var is filled; the simulated user's model is told exactly that."""
    scenario = "user: 'You are {{ name }}; move your seat to 12A.'\nvars: {name: Dana}\njudge:\n  - check: {not_said: sorry}\n"
    folder = project(tmp_path, {"seat.yaml": scenario}, extra='user_prompt = "prompts/user.md"\n')
    (folder / "models.py").write_text(USER_MODEL, encoding="utf-8")
    (folder / "prompts").mkdir()
    (folder / "prompts" / "user.md").write_text("Play {{ name }}: {{ user }} End with {{ stop }}.", encoding="utf-8")
    assert run_convy(folder, "check").returncode == 0
    done = run_convy(folder, "run", "airline")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (folder / "told.txt").read_text(encoding="utf-8") == "Play Dana: You are Dana; move your seat to 12A. End with ###STOP###."


def test_a_slip_in_a_simulator_prompts_slot_is_refused_with_the_slot_meant(tmp_path: Path) -> None:
    scenario = "user: 'Move your seat to 12A.'\njudge:\n  - check: {not_said: sorry}\n"
    folder = project(tmp_path, {"seat.yaml": scenario}, extra='user_prompt = "prompts/user.md"\n')
    (folder / "models.py").write_text(USER_MODEL, encoding="utf-8")
    (folder / "prompts").mkdir()
    (folder / "prompts" / "user.md").write_text("{{ instrucions }} Say {{ stop }} when done.", encoding="utf-8")
    done = run_convy(folder, "check")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines()[0] == (
        "convy: prompts/user.md: no value for {{ instrucions }} (is {{ instrucions }} a slip for {{ instructions }}?)"
        " for scenario seat"
    )


JSON_AGENT = """\
from convy import JsonAgent, JsonEndpoint

agent = JsonAgent({endpoint}, body={body!r}, reply="output.text")
"""


def test_a_json_agents_unknown_body_slot_is_refused_naming_the_slots(tmp_path: Path) -> None:
    """`{{ message }}` (the slot is `text`) ends `convy check` and `convy run` in one line naming
    the field, the slot meant and every slot there is; nothing is sent."""
    with StandIn() as server:
        agent = JSON_AGENT.format(endpoint=f'JsonEndpoint("{server.url}/agent")', body={"message": "{{ message }}"})
        folder = project(tmp_path, {"hi.yaml": "script: [hello]\njudge:\n  - check: {said: hello}\n"}, agent)
        for command in (("check",), ("run", "airline")):
            done = run_convy(folder, *command)
            assert done.returncode == 2, done.stdout + done.stderr
            (line,) = done.stderr.splitlines()[:1]
            assert line.startswith("convy: loading agents/airline.py"), done.stderr
            assert line.endswith(
                "failed: ValueError: body.message: no slot {{ message }} in a JSON agent's body (for {{ text }}?):"
                " its slots are {{ text }}, {{ session }}, {{ turn }}, {{ history }}, {{ tools_url }}"
            ), done.stderr
        assert server.received == []


@pytest.mark.parametrize(("slot", "meant"), [("scenario", ""), ("attempt", ""), ("messages", " (for {{ history }}?)"), ("sesion", " (for {{ session }}?)")])
def test_a_json_body_slot_convy_does_not_fill_is_refused(tmp_path: Path, slot: str, meant: str) -> None:
    """`{{ scenario }}` and `{{ attempt }}` are not sent to an agent; `{{ messages }}` and a typo
    are refused with the slot meant."""
    agent = JSON_AGENT.format(endpoint='"http://127.0.0.1:9/agent"', body={"message": "{{ text }}", "meta": [f"{{{{ {slot} }}}}"]})
    folder = project(tmp_path, {"hi.yaml": "script: [hello]\njudge:\n  - check: {said: hello}\n"}, agent)
    done = run_convy(folder, "check")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines()[0].startswith(
        f"convy: loading agents/airline.py failed: ValueError: body.meta[0]: no slot {{{{ {slot} }}}} in a JSON agent's body{meant}:"
    )


def test_a_json_agent_on_a_plain_url_plays_and_fills_every_body_slot(tmp_path: Path) -> None:
    """`JsonAgent("http://...")`, a URL for the endpoint, is taken as `JsonEndpoint(url)`: `convy check`
    passes and `convy run` sends each turn's text, session, turn number and history as
    docs/protocols.md says."""
    with StandIn() as server:
        body = {"message": "{{ text }}", "session": "{{ session }}", "turn": "{{ turn }}", "history": "{{ history }}", "note": "turn {{turn}} of \\{{ x }}"}
        agent = JSON_AGENT.format(endpoint=f'"{server.url}/agent"', body=body)
        scenario = "script: [hello, move me to 12A]\njudge:\n  - check: {said: 12A}\n"
        folder = project(tmp_path, {"hi.yaml": scenario}, agent)
        checked = run_convy(folder, "check")
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert server.received == []
        done = run_convy(folder, "run", "airline")
        assert done.returncode == 0, done.stdout + done.stderr
        first, second = (request.json for request in server.received if request.kind == "agent")
    assert re.fullmatch("[0-9a-f]{32}", first["session"]) and second["session"] == first["session"]
    assert (first["message"], first["turn"], first["note"]) == ("hello", 1, "turn 1 of {{ x }}")
    assert first["history"] == [{"role": "user", "content": "hello"}]
    assert (second["message"], second["turn"], second["note"]) == ("move me to 12A", 2, "turn 2 of {{ x }}")
    assert second["history"] == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "You said: hello"},
        {"role": "user", "content": "move me to 12A"},
    ]


def test_a_json_agents_url_without_its_scheme_is_refused_in_one_line(tmp_path: Path) -> None:
    agent = JSON_AGENT.format(endpoint='"localhost:8000/chat"', body={"message": "{{ text }}"})
    folder = project(tmp_path, {"hi.yaml": "script: [hello]\njudge:\n  - check: {said: hello}\n"}, agent)
    done = run_convy(folder, "check")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines()[0] == (
        "convy: loading agents/airline.py failed: ValueError: url: must start with http:// or https://,"
        " not 'localhost:8000/chat' (http://localhost:8000/chat?)"
    )


def documented(heading: str) -> set[str]:
    """The slots the table under ``heading`` in docs/protocols.md lists, one a row."""
    text = (ROOT / "docs" / "protocols.md").read_text(encoding="utf-8")
    section = text.split(f"## {heading}\n", 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"^\| `\{\{ (\w+) \}\}` \|", section, re.MULTILINE))


def test_the_documented_slots_are_the_slots_the_code_fills() -> None:
    """docs/protocols.md lists exactly the simulator prompt's slots and a JSON body's slots."""
    from convy.httpagents import BODY_SLOTS
    from convy.scenario import PROMPT_SLOTS

    assert documented("Simulator prompt slots") == set(PROMPT_SLOTS)
    assert documented("A JSON agent's body slots") == set(BODY_SLOTS)
    stop = (ROOT / "docs" / "protocols.md").read_text(encoding="utf-8")
    from convy.prompt import STOP

    assert f"**The stop mark** is `{STOP}`" in stop
