"""``convy check`` and ``convy run --dry-run``, run as a user runs them: every problem of a project
at once (exit 2), or what a run would play (exit 0) — and nothing sent, nothing written.

Each test makes a project in ``tmp_path`` and starts the real ``convy``. That nothing is written is
seen by listing the project folder, every entry, before and after; that nothing is sent, by an agent
whose conversation leaves a file outside the project when it opens, and by the stand-in, a real
server on 127.0.0.1 that keeps every request it receives.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support.process import run_convy
from support.standin import StandIn

KEY = "sk-check-CANARY-4a9f1c"
# The template gateway's settings: a test's project reads them from its own .env alone.
GATEWAY = ("GATEWAY_URL", "GATEWAY_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY", "USER_MODEL", "JUDGE_MODEL", "AGENT_MODEL")

# An agent that answers as Echo does, and leaves the file OPENED when a conversation opens.
RECORDING = """\
from contextlib import asynccontextmanager
from pathlib import Path

from convy.fakes import Echo

OPENED = Path({opened!r})


class Recording(Echo):
    @asynccontextmanager
    async def conversation(self):
        OPENED.touch()
        async with super().conversation() as conversation:
            yield conversation


agent = Recording()
"""

ABSENT_MODELS = """\
from convy import Absent, Models

models = Models(user=Absent("no user model here"), judge=Absent("no judge here"))
"""

# Limits at their defaults, after the settings a test gives: the last lines of "settings in force".
LIMITS = [
    "  agent_places      0 (no cap)    default",
    "  user_places       0 (no cap)    default",
    "  judge_places      0 (no cap)    default",
    "  agent_per_minute  0 (no limit)  default",
    "  user_per_minute   0 (no limit)  default",
    "  judge_per_minute  0 (no limit)  default",
    "  agent_patience    300.0         default",
    "  user_patience     300.0         default",
    "  judge_patience    300.0         default",
    "  max_turns         10            default",
    "  open_seconds      60.0          default",
    "  turn_seconds      120.0         default",
    "  close_seconds     60.0          default",
    "  (no cap: places start at 4 and grow while the service keeps up)",
]


def convy(folder: Path, *arguments: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """``convy`` run in ``folder`` to its end, with no CONVY_* variable but ``variables``, and free to
    write Python's bytecode (as a user's shell is), so a ``__pycache__`` left in the project shows."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("CONVY_") and name not in GATEWAY and name != "PYTHONDONTWRITEBYTECODE"
    }
    return run_convy(folder, *arguments, env={**environment, **variables}, timeout=120)


def listing(folder: Path) -> list[str]:
    """Every entry under ``folder``, folders and hidden ones included, with its size for a file."""
    return sorted(
        f"{path.relative_to(folder)} {path.stat().st_size if path.is_file() else '/'}" for path in folder.rglob("*")
    )


@pytest.fixture
def sound(tmp_path: Path) -> Path:
    """A project that can run: a recording agent, an absent one, models both absent, three scenarios
    (one needs the user's model, one the judge, one neither), and attempts set in [tool.convy]."""
    folder = tmp_path / "project"
    (folder / "agents").mkdir(parents=True)
    (folder / "agents" / "a.py").write_text(RECORDING.format(opened=str(tmp_path / "opened")), encoding="utf-8")
    (folder / "agents" / "off.py").write_text('from convy import Absent\n\nagent = Absent("set OFF_URL")\n', encoding="utf-8")
    (folder / "models.py").write_text(ABSENT_MODELS, encoding="utf-8")
    (folder / "scenarios").mkdir()
    (folder / "scenarios" / "hello.yaml").write_text(
        "tags: [smoke]\nscript: [hello]\njudge:\n  - check: {said: hello}\n", encoding="utf-8"
    )
    (folder / "scenarios" / "talk.yaml").write_text("user: Say hello.\njudge:\n  - check: {said: hello}\n", encoding="utf-8")
    (folder / "scenarios" / "claims.yaml").write_text("script: [hi]\njudge: [the agent greeted back]\n", encoding="utf-8")
    (folder / "pyproject.toml").write_text("[tool.convy]\nattempts = 4\n", encoding="utf-8")
    return folder


def test_check_of_a_sound_project_says_what_would_run_and_sends_and_writes_nothing(sound: Path) -> None:
    """`convy check` exits 0 with the settings in force and where each came from, each agent's
    scenarios × attempts, the scenarios skipped for an absent model and why, the absent agent, and
    the product; the project folder is as it was and no conversation was opened."""
    before = listing(sound)

    done = convy(sound, "check", CONVY_TRUST="0.5")

    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout.splitlines() == [
        "settings in force:",
        "  attempts          4             [tool.convy]",
        "  min_attempts      5             default",
        "  max_attempts      60            default",
        "  target_width      0.2           default",
        "  trust             0.5           CONVY_TRUST",
        "  max_not_judged    0.0           default",
        "  fail_under        none          default",
        "  fail_on_skip      False         default",
        "  max_cost          0.0           default",
        "  max_tokens        0             default",
        "  max_minutes       0.0           default",
        "  user_prompt       convy's own   default",
        "  judge_repeats     1             default",
        "  panel             majority      default",
        "  evidence          flag          default",
        "  user_checks       none          default",
        "  user_faults       not_judged    default",
        "  workers           0             default",
        "  ray               none          default",
        "  live_seconds      5.0           default",
        "  receive_traces    False         default",
        "  traces_port       0 (any free)  default",
        "  traces_wait       10.0          default",
        *LIMITS,
        "a: 1 scenario × 4 attempts = 4 attempts",
        "  skipped 2 scenario(s) that need a model:",
        "    claims: needs a model for the judge: no judge here",
        "    talk: needs a model for the simulated user: no user model here",
        "- skipped agent off: set OFF_URL",
        "would run 1 agent × 1 scenario × 4 attempts = 4 attempts; nothing was sent, nothing written",
    ]
    assert listing(sound) == before
    assert not (sound.parent / "opened").exists()

    played = convy(sound, "run", "a", "-k", "1")  # the same project, played: the agent does record its conversations
    assert played.returncode == 0, played.stdout + played.stderr
    assert (sound.parent / "opened").exists()
    assert (sound / "results").is_dir()


def test_check_says_that_places_of_0_have_no_cap_and_grow_and_a_number_caps_them(sound: Path) -> None:
    """A place setting of 0 is none set, as a per-minute of 0 is no limit: `convy check` says so
    ("0 (no cap)", and once how places with none grow), where a bare 0 read as no place at all, or
    as the 4 they start at. A number set is shown as it is, and with every place capped the line
    on growing is not said."""
    pyproject = sound / "pyproject.toml"
    pyproject.write_text("[tool.convy]\nattempts = 4\nagent_places = 4\njudge_per_minute = 60\n", encoding="utf-8")

    rows = {line.split()[0]: line for line in convy(sound, "check").stdout.splitlines() if line.startswith("  ")}

    assert rows["agent_places"] == "  agent_places      4             [tool.convy]"
    assert rows["user_places"] == "  user_places       0 (no cap)    default"
    assert rows["judge_per_minute"] == "  judge_per_minute  60            [tool.convy]"
    assert rows["agent_per_minute"] == "  agent_per_minute  0 (no limit)  default"
    assert rows["(no"] == "  (no cap: places start at 4 and grow while the service keeps up)"

    pyproject.write_text("[tool.convy]\nattempts = 4\nagent_places = 4\nuser_places = 2\njudge_places = 2\n", encoding="utf-8")
    done = convy(sound, "check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no cap" not in done.stdout, done.stdout
    assert "  judge_places      2             [tool.convy]" in done.stdout.splitlines()


def test_a_dry_run_says_the_same_for_the_selection_of_agents_scenarios_and_attempts(sound: Path) -> None:
    """`convy run a --dry-run -k 2 --tag smoke` says what that run would play — the agent named, the
    scenarios tagged, -k's attempts, named as the source of attempts — and writes nothing."""
    (sound / "scenarios" / "again.yaml").write_text(
        "tags: [smoke]\nscript: [hello again]\njudge:\n  - check: {said: again}\n", encoding="utf-8"
    )
    before = listing(sound)

    done = convy(sound, "run", "a", "--dry-run", "-k", "2", "--tag", "smoke", "--judge-repeats", "3")

    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout.splitlines()[1:20] == [
        "  attempts          2             -k",
        "  min_attempts      5             default",
        "  max_attempts      60            default",
        "  target_width      0.2           default",
        "  trust             0.0           default",
        "  max_not_judged    0.0           default",
        "  fail_under        none          default",
        "  fail_on_skip      False         default",
        "  max_cost          0.0           default",
        "  max_tokens        0             default",
        "  max_minutes       0.0           default",
        "  user_prompt       convy's own   default",
        "  judge_repeats     3             --judge-repeats",
        "  panel             majority      default",
        "  evidence          flag          default",
        "  user_checks       none          default",
        "  user_faults       not_judged    default",
        "  workers           0             default",
        "  ray               none          default",
    ]
    assert done.stdout.splitlines()[-2:] == [
        "a: 2 scenarios × 2 attempts = 4 attempts",
        "would run 1 agent × 2 scenarios × 2 attempts = 4 attempts; nothing was sent, nothing written",
    ]
    assert listing(sound) == before
    assert not (sound.parent / "opened").exists()


def test_a_dry_run_refuses_what_the_run_refuses_with_the_same_words(sound: Path) -> None:
    """An absent agent named on the command line and a tag no scenario has: `convy run --dry-run`
    exits 2 with the lines `convy run` gives for each, and a count."""
    for arguments, expected in (
        (("off",), "convy: agents/off.py: the agent is absent: set OFF_URL"),
        (("a", "--tag", "nothing"), "convy: no scenario matches: --tag nothing: no scenario has it; the tags are smoke"),
    ):
        ran = convy(sound, "run", *arguments)
        dry = convy(sound, "run", *arguments, "--dry-run")

        assert (ran.returncode, ran.stderr.splitlines()) == (2, [expected])
        assert (dry.returncode, dry.stdout) == (2, "")
        assert dry.stderr.splitlines() == [expected, "1 problem: nothing was sent, nothing written"]
    assert not (sound / "results").exists()


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (("--junit", "/"), "convy: --junit /: a folder; name a file in it: --junit /junit.xml"),
        (("--summary", "/"), "convy: --summary /: a folder; name a file in it: --summary /summary.md"),
        (("--junit", "agents"), "convy: --junit agents: a folder; name a file in it: --junit agents/junit.xml"),
        (("--summary", "pyproject.toml/s.md"), "convy: --summary pyproject.toml/s.md: pyproject.toml is a file, not a folder"),
        (("--junit", "out.md", "--summary", "out.md"), "convy: --junit and --summary name one file: give each its own"),
        (("--ray", "ray://"), "convy: --workers/--ray: ray: not an address: auto, ray://HOST:10001 or HOST:6379"),
    ],
)
def test_an_output_or_an_address_that_cannot_be_one_is_refused_before_anything_is_played(
    sound: Path, arguments: tuple[str, ...], expected: str
) -> None:
    """``--junit /`` and its kind are refused in one line (exit 2, no traceback) before any attempt
    opens a conversation; so is a Ray address with no host."""
    before = listing(sound)
    ran = convy(sound, "run", "a", *arguments)
    assert (ran.returncode, ran.stderr.splitlines(), ran.stdout) == (2, [expected], "")
    assert listing(sound) == before
    assert not (sound.parent / "opened").exists()


def test_a_ray_address_with_no_host_in_the_settings_is_a_problem_check_names(sound: Path) -> None:
    """``ray = "ray://"`` in [tool.convy] is named by ``convy check``, not found by Ray 31 s later."""
    (sound / "pyproject.toml").write_text('[tool.convy]\nattempts = 4\nray = "ray://"\n', encoding="utf-8")
    checked = convy(sound, "check")
    assert checked.returncode == 2
    assert "convy: pyproject.toml: [tool.convy] ray: not an address: auto, ray://HOST:10001 or HOST:6379" in checked.stderr.splitlines()


def test_every_chosen_scenario_skipped_is_nothing_tested_for_check_as_for_run(sound: Path) -> None:
    """When every scenario chosen needs a model that is absent, `convy run` exits 7 (nothing was
    tested): `convy check` and `run --dry-run` of the same selection say it and exit 7 too, naming
    each scenario and the model it lacks; nothing is sent or written."""
    (sound / "scenarios" / "hello.yaml").unlink()  # the one scenario judged by code alone
    before = listing(sound)
    for command in (("check",), ("run", "a", "--dry-run"), ("run", "--dry-run", "--scenarios", "talk")):
        checked = convy(sound, *command)
        assert checked.returncode == 7, checked.stdout + checked.stderr
        assert checked.stderr.splitlines() == [
            "convy: nothing would be tested: every chosen scenario would be skipped ("
            + ("talk: needs a model for the simulated user: no user model here" if "talk" in command else
               "claims: needs a model for the judge: no judge here; talk: needs a model for the simulated user: no user model here")
            + ")",
            "1 problem: nothing was sent, nothing written",
        ]
    assert listing(sound) == before
    ran = convy(sound, "run", "a")
    assert ran.returncode == 7, ran.stdout + ran.stderr
    (sound / "pyproject.toml").write_text("[tool.convy]\nattempts = 0\n", encoding="utf-8")
    broken = convy(sound, "check")  # with another problem beside it, a configuration error
    assert broken.returncode == 2, broken.stdout + broken.stderr
    assert "nothing would be tested" in broken.stderr


def test_what_is_already_a_problem_is_not_said_again_as_nothing_tested(sound: Path) -> None:
    """models.py that fails to load, or a broken scenario file, is the problem: check does not add
    "every chosen scenario would be skipped" on top of it (the skips follow from it)."""
    (sound / "scenarios" / "hello.yaml").unlink()  # the one scenario judged by code alone
    (sound / "scenarios" / "bad.yaml").write_text("script: [Hi]\njudge: []\n", encoding="utf-8")
    checked = convy(sound, "check")
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert checked.stderr.splitlines() == [
        "convy: scenarios/bad.yaml: judge: give at least one claim",
        "1 problem: nothing was sent, nothing written",
    ]
    (sound / "scenarios" / "bad.yaml").unlink()
    (sound / "models.py").write_text("raise ValueError('no judge today')\n", encoding="utf-8")
    checked = convy(sound, "check")
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert checked.stderr.splitlines() == [
        "convy: loading models.py failed: ValueError: no judge today",
        "1 problem: nothing was sent, nothing written",
    ]


def test_a_tool_check_written_as_a_call_is_refused_with_the_bare_name(sound: Path) -> None:
    """`called: lookup_booking()` names no tool an agent calls: every attempt would fail it, blamed
    on the agent. Refused with the name alone, and its arguments sent to with:."""
    (sound / "scenarios" / "tool.yaml").write_text(
        "script: [hi]\njudge:\n  - check: {called: lookup_booking()}\n  - check: {not_called: 'issue_refund(order=A-1)'}\n", encoding="utf-8"
    )
    checked = convy(sound, "check")
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert checked.stderr.splitlines()[0] == (
        "convy: scenarios/tool.yaml: judge[0].check.called: 'lookup_booking()': a tool's name, without brackets: called: lookup_booking"
    )
    (sound / "scenarios" / "tool.yaml").write_text("script: [hi]\njudge:\n  - check: {not_called: 'issue_refund(order=A-1)'}\n", encoding="utf-8")
    assert convy(sound, "check").stderr.splitlines()[0] == (
        "convy: scenarios/tool.yaml: judge[0].check.not_called: 'issue_refund(order=A-1)': a tool's name, without brackets: "
        "not_called: issue_refund, and its arguments under with: {...}"
    )


def broken(folder: Path) -> None:
    """Break ``folder``'s project in every way at once: an agent file that raises, a models.py that
    raises, a simulator prompt with a slot no scenario fills, a scenario with an unknown field, two
    bad [tool.convy] values (a CONVY_* variable is the test's to set)."""
    (folder / "agents" / "broken.py").write_text("import no_such_module_here\n", encoding="utf-8")
    (folder / "models.py").write_text('raise RuntimeError("the gateway is down")\n', encoding="utf-8")
    (folder / "prompts").mkdir()
    (folder / "prompts" / "user.md").write_text("You are {{ persona }}.\n{{ instructions }}\n{{ stop }}\n", encoding="utf-8")
    (folder / "scenarios" / "colour.yaml").write_text(
        "user: I want a refund\njudge: [the agent helped]\ncolour: red\n", encoding="utf-8"
    )
    (folder / "pyproject.toml").write_text(
        '[tool.convy]\nagent_places = -1\nturn_seconds = "long"\nuser_prompt = "prompts/user.md"\n', encoding="utf-8"
    )


# What `convy check` says of the project ``broken`` makes, with CONVY_ATTEMPTS=many: every problem.
EVERY_PROBLEM = [
    "convy: pyproject.toml: [tool.convy] turn_seconds: expected a number, got text",
    "convy: pyproject.toml: [tool.convy] agent_places: must be 0 (no cap: places grow) or more",
    "convy: CONVY_ATTEMPTS: attempts: must be a whole number of at least 1, or auto",
    "convy: scenarios/colour.yaml: colour: unknown field; the fields here are id, judge, user, vars, script, max_turns, tags, matrix, fail_under, tools, state, approvals",
    "convy: loading models.py failed: RuntimeError: the gateway is down",
    "convy: prompts/user.md: no value for {{ persona }} for scenario talk",
    "convy: loading agents/broken.py failed: ModuleNotFoundError: No module named 'no_such_module_here'",
    "7 problems: nothing was sent, nothing written",
]


def test_check_lists_every_problem_of_a_project_broken_in_every_way_at_once(sound: Path) -> None:
    """A broken agent file, a models.py that raises, a prompt slot no scenario fills, a scenario with
    a bad field, bad [tool.convy] values and a bad CONVY_* variable: one `convy check` lists them all,
    each naming its file and field, exits 2, and writes nothing, where `convy run` stops at the first
    part that is broken."""
    broken(sound)
    before = listing(sound)

    done = convy(sound, "check", CONVY_ATTEMPTS="many")

    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == EVERY_PROBLEM
    assert listing(sound) == before
    assert not (sound.parent / "opened").exists()
    ran = convy(sound, "run", CONVY_ATTEMPTS="many")
    assert (ran.returncode, ran.stderr.splitlines()) == (2, EVERY_PROBLEM[:3])


def test_check_shows_outside_text_inert_and_never_a_key(sound: Path) -> None:
    """An agent file whose error holds a terminal's escape and a key from .env: `convy check` writes
    the escape out and hides the key."""
    (sound / ".env").write_text(f"SERVICE_KEY={KEY}\n", encoding="utf-8")
    (sound / "agents" / "loud.py").write_text(
        f'raise RuntimeError("\\x1b]0;owned\\x07 refused {KEY}")\n', encoding="utf-8"
    )

    done = convy(sound, "check")

    assert done.returncode == 2
    assert KEY not in done.stdout + done.stderr
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr
    assert done.stderr.splitlines()[0].startswith("convy: loading agents/loud.py failed: RuntimeError: \\x1b]0;owned\\x07 refused ")


def test_check_on_the_gateway_sends_no_request(tmp_path: Path) -> None:
    """A project from `convy init` with its gateway on the stand-in: `convy check` loads the real
    models and agent and plans all eight scenarios for both agents without one request reaching
    the server, and never shows the key; `convy run --smoke` on the same project does reach it."""
    folder = tmp_path / "project"
    folder.mkdir()
    assert convy(folder, "init").returncode == 0
    with StandIn(api_key=KEY) as server:
        (folder / ".env").write_text(
            f"GATEWAY_URL={server.url}/v1\nGATEWAY_KEY={KEY}\nUSER_MODEL=user-model\n"
            "JUDGE_MODEL=judge-model\nAGENT_MODEL=agent-model\n",
            encoding="utf-8",
        )
        before = listing(folder)

        done = convy(folder, "check")

        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        assert done.stdout.splitlines()[-3:] == [
            "assistant: 9 scenarios × 3 attempts = 27 attempts",
            "shop: 9 scenarios × 3 attempts = 27 attempts",
            "would run 2 agents × 9 scenarios × 3 attempts = 54 attempts; nothing was sent, nothing written",
        ]
        assert KEY not in done.stdout + done.stderr
        assert server.received == []
        assert listing(folder) == before

        smoke = convy(folder, "run", "assistant", "--smoke")
        assert server.received, smoke.stdout + smoke.stderr


def test_settings_say_every_problem_of_every_source_and_keep_the_sound_fields(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two bad [tool.convy] fields and a bad CONVY_* variable are all said, each once; the fields
    and variables that are sound stay in force, each with its source, the rest at their defaults."""
    from convy.settings import ProjectSettings

    for name in [name for name in os.environ if name.startswith("CONVY_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("CONVY_TURN_SECONDS", "inf")
    monkeypatch.setenv("CONVY_MAX_TURNS", "4")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.convy]\nattempts = 5\ntrust = 7\nagent_places = "x"\nopen_seconds = 9\n', encoding="utf-8"
    )

    sourced = ProjectSettings(tmp_path).sourced()

    assert sourced.problems == (
        "pyproject.toml: [tool.convy] agent_places: expected a whole number, got text",
        "pyproject.toml: [tool.convy] trust: must be between 0 and 1",
        "CONVY_TURN_SECONDS: turn_seconds: must be a finite number",
    )
    settings = sourced.settings
    assert (settings.attempts, settings.open_seconds, settings.max_turns) == (5, 9.0, 4)
    assert (settings.trust, settings.agent_places, settings.turn_seconds) == (0.0, 0, 120.0)
    assert sourced.sources == {"attempts": "[tool.convy]", "open_seconds": "[tool.convy]", "max_turns": "CONVY_MAX_TURNS"}


def test_check_of_a_project_whose_env_is_a_fifo_says_so_and_runs_none_of_its_code(sound: Path) -> None:
    """A .env that is a FIFO: `convy check` says so in one line and exits 2, without waiting on it
    itself nor running the project's code, which would."""
    os.mkfifo(sound / ".env")
    (sound / "agents" / "waits.py").write_text('open(".env").read()\n', encoding="utf-8")

    done = convy(sound, "check")

    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        "convy: .env: cannot be read: not a regular file",
        "1 problem: nothing was sent, nothing written",
    ]


def test_a_slot_of_the_prompt_that_a_skipped_scenario_leaves_empty_stops_the_run_and_the_check(sound: Path) -> None:
    """A scenario skipped for want of the user's model must still fill the simulator prompt: `convy
    run` and `convy check` both refuse it before anything is played, in the same words."""
    (sound / "user.md").write_text("You are {{ persona }}.\n{{ instructions }}\n{{ stop }}\n", encoding="utf-8")
    (sound / "pyproject.toml").write_text('[tool.convy]\nuser_prompt = "user.md"\n', encoding="utf-8")
    expected = "convy: user.md: no value for {{ persona }} for scenario talk"

    ran = convy(sound, "run", "a")
    checked = convy(sound, "check")

    assert (ran.returncode, ran.stderr.splitlines()) == (2, [expected])
    assert (checked.returncode, checked.stderr.splitlines()) == (2, [expected, "1 problem: nothing was sent, nothing written"])
    assert not (sound / "results").exists()


@pytest.mark.parametrize(
    "prompt",
    ["Play this person: {{ user }}\nReply with {{ stop }} when you are done.\n", "{{ instructions }}\nWhen done, say ###STOP### alone.\n"],
    ids=["user-slot", "stop-written-out"],
)
def test_a_simulator_prompt_with_user_or_the_stop_mark_written_out_is_sound(sound: Path, prompt: str) -> None:
    """{{ user }} is {{ instructions }} by another name, and the stop mark written out tells the
    simulated user as {{ stop }} does: neither is refused."""
    (sound / "prompts").mkdir()
    (sound / "prompts" / "user.md").write_text(prompt, encoding="utf-8")
    (sound / "pyproject.toml").write_text('[tool.convy]\nattempts = 4\nuser_prompt = "prompts/user.md"\n', encoding="utf-8")

    done = convy(sound, "check")

    assert (done.returncode, done.stderr) == (0, ""), done.stdout + done.stderr


def test_a_simulator_prompt_no_scenario_is_told_by_is_not_refused(sound: Path) -> None:
    """Only a scenario with a user: is told by the prompt: a run of scripted scenarios alone
    does not refuse a prompt that says no {{ instructions }}."""
    (sound / "prompt.md").write_text("You are a customer.\n", encoding="utf-8")
    (sound / "pyproject.toml").write_text('[tool.convy]\nuser_prompt = "prompt.md"\n', encoding="utf-8")

    scripted = convy(sound, "run", "a", "--dry-run", "--scenarios", "hello")
    told = convy(sound, "run", "a", "--dry-run", "--scenarios", "talk")

    assert (scripted.returncode, scripted.stderr) == (0, "")
    assert told.returncode == 2
    assert told.stderr.splitlines()[0].startswith("convy: prompt.md: no {{ instructions }}: ")


def test_a_judges_instructions_given_as_a_path_are_read_from_the_projects_folder(sound: Path) -> None:
    """ChatJudge(..., instructions=Path("prompts/judge.md")) reads the file when models.py is
    loaded, from the project's folder whatever the folder convy is started in; one not there is
    refused naming it."""
    (sound / "prompts").mkdir()
    (sound / "prompts" / "judge.md").write_text("Judge strictly: a claim half met fails.\n", encoding="utf-8")
    (sound / "models.py").write_text(
        "from pathlib import Path\n\nfrom convy import Absent, ChatJudge, Models\nfrom convy.fakes import FakeModel\n\n"
        'judge = ChatJudge(FakeModel([]), instructions=Path("prompts/judge.md"))\n'
        'assert judge.instructions == "Judge strictly: a claim half met fails.\\n", judge.instructions\n'
        'models = Models(user=Absent("none"), judge=judge)\n',
        encoding="utf-8",
    )

    read = convy(sound.parent, "-C", "project", "check")
    (sound / "prompts" / "judge.md").unlink()
    gone = convy(sound, "check")

    assert (read.returncode, read.stderr) == (0, ""), read.stdout + read.stderr
    assert gone.returncode == 2
    assert gone.stderr.splitlines()[0] == (
        "convy: loading models.py failed: ValueError: ChatJudge: instructions='prompts/judge.md': cannot be read: No such file or directory"
    )


def test_an_agent_whose_turn_returns_text_fails_its_turn_saying_to_return_an_answer(sound: Path) -> None:
    """A Python agent whose turn() returns a str: the smoke test fails on it (exit 1) with the fix,
    never a msgspec message."""
    (sound / "agents" / "a.py").write_text(
        "from contextlib import asynccontextmanager\n\n\nclass Talk:\n    async def turn(self, message):\n"
        "        return 'Seat 12A it is.'\n\n\nclass Bot:\n    @asynccontextmanager\n    async def conversation(self):\n"
        "        yield Talk()\n\n\nagent = Bot()\n",
        encoding="utf-8",
    )

    done = convy(sound, "run", "a", "--smoke")

    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.splitlines()[0] == (
        "✗ a: the agent's answer cannot be kept: turn() returned text, not an Answer: "
        "return Answer(text) (from convy import Answer), with its usage and steps when known"
    )
