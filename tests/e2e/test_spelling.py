"""A variable one slip from a name that is read, in ``.env`` or (for convy's own) in the environment,
is named by the real ``convy check`` with the name meant, and a ``CONVY_*`` slip refuses ``convy run``
too: never a setting lost without a word. Its value is never shown.

Each test makes a project in ``tmp_path`` (the template, as ``convy init`` copies it, or a small one
whose own code reads its variables) and starts the real ``convy``; the gateway named in ``.env`` is a
closed port on 127.0.0.1, and ``convy check`` sends nothing. The rule itself (how far a slip may be)
is checked against a plain edit distance on drawn names.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from support.process import run_convy

from convy.project import Project
from convy.spelling import Spelling

VALUE = "sk-slip-CANARY-77e1"
# Names a test's project reads from its own .env alone: none of them, in any case, from this process.
GATEWAY = {
    "GATEWAY_URL", "GATEWAY_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY", "GATEWAY_STREAM", "GATEWAY_PROVIDER",
    "USER_MODEL", "JUDGE_MODEL", "AGENT_MODEL", "USER_EFFORT", "JUDGE_EFFORT", "AGENT_EFFORT",
}
SOUND = f"GATEWAY_URL=http://127.0.0.1:9/v1\nGATEWAY_KEY={VALUE}\nUSER_MODEL=user-model\nAGENT_MODEL=agent-model\n"


def convy(folder: Path, *arguments: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """``convy`` run in ``folder`` to its end, with no CONVY_* variable nor gateway setting but ``variables``."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.upper().startswith(("CONVY_", "CONVEY_")) and name.upper() not in GATEWAY
    }
    return run_convy(folder, *arguments, env={**environment, **variables}, timeout=120)


def template(tmp_path: Path, dotenv: str) -> Path:
    """The template project, as ``convy init`` copies it, with ``dotenv`` as its ``.env``."""
    folder = tmp_path / "project"
    folder.mkdir()
    Project(folder).created()
    (folder / ".env").write_text(dotenv, encoding="utf-8")
    return folder


def test_a_slip_in_dotenv_is_named_with_the_name_meant(tmp_path: Path) -> None:
    """JUDGE_MODLE in the template's .env: `convy check` exits 2 naming it and JUDGE_MODEL, and says
    nothing of its value; lower case is read as pydantic-settings reads it, and said as written."""
    project = template(tmp_path, SOUND + f"JUDGE_MODLE={VALUE}\njudge_efort={VALUE}\n")

    done = convy(project, "check")

    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        "convy: JUDGE_MODLE in .env: unknown; did you mean JUDGE_MODEL?",
        "convy: judge_efort in .env: unknown; did you mean JUDGE_EFFORT?",
        "2 problems: nothing was sent, nothing written",
    ]
    assert VALUE not in done.stdout + done.stderr


def test_a_slip_of_convy_s_own_variables_refuses_check_and_run(tmp_path: Path) -> None:
    """CONVY_ATTEMPT in .env and CONVEY_MAX_COST in the environment are each named with the variable
    meant, by `convy check` and by `convy run`, which plays nothing (no results/ made)."""
    project = template(tmp_path, SOUND + "JUDGE_MODEL=judge-model\nCONVY_ATTEMPT=10\n")
    expected = [
        "convy: CONVY_ATTEMPT in .env: unknown; did you mean CONVY_ATTEMPTS?",
        "convy: CONVEY_MAX_COST in the environment: unknown; did you mean CONVY_MAX_COST?",
    ]

    checked = convy(project, "check", CONVEY_MAX_COST="0.5")
    played = convy(project, "run", "shop", CONVEY_MAX_COST="0.5")

    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert checked.stderr.splitlines() == [*expected, "2 problems: nothing was sent, nothing written"]
    assert played.returncode == 2, played.stdout + played.stderr
    assert played.stderr.splitlines()[:2] == expected
    assert not (project / "results").exists()


def test_names_that_are_read_or_far_from_any_are_left_alone(tmp_path: Path) -> None:
    """A .env of names the project reads (any case) and names far from them, an environment with a slip
    of the project's names (the environment is other programs' too) and a CONVY_* name near nothing:
    `convy check` finds no problem."""
    project = template(
        tmp_path,
        SOUND + "judge_model=judge-model\nGATEWAY_STREAM=false\nHTTPS_PROXY=\nLOG_LEVEL=debug\nMY_OWN_THING=1\n",
    )

    done = convy(project, "check", JUDGE_MODLE="x", CONVY_SOMETHING_ELSE_ENTIRELY="1", CONVY_TRUST="0.5")

    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert "  trust             0.5           CONVY_TRUST" in done.stdout.splitlines()


def test_a_slip_of_convy_s_own_variables_is_pytest_s_collection_error(tmp_path: Path) -> None:
    """`pytest --convy` reads the settings as `convy run` does: CONVY_ATTEMPT in .env is a collection
    error naming the variable meant, and nothing is played."""
    project = template(tmp_path, SOUND + "CONVY_ATTEMPT=10\n")
    environment = {name: value for name, value in os.environ.items() if not name.upper().startswith("CONVY_")}

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--convy", "-p", "no:cacheprovider"],
        cwd=project, env=environment, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )

    assert done.returncode == 2, done.stdout + done.stderr
    assert "convy: CONVY_ATTEMPT in .env: unknown; did you mean CONVY_ATTEMPTS?" in done.stdout.splitlines()
    assert "ERROR collecting convy" in done.stdout
    assert not (project / "results").exists()


# A project whose own code reads its variables: a pydantic-settings class with a prefix and an alias,
# loaded with the agent, and os.environ / os.getenv with literal names, in a module nobody loads yet.
SETTINGS = """\
from pydantic import Field
from pydantic_settings import SettingsConfigDict

from convy import Env
from convy.fakes import Echo


class Shop(Env):
    model_config = SettingsConfigDict(env_prefix="SHOP_")

    endpoint: str = ""
    secret: str = Field("", alias="SHOP_API_TOKEN")


Shop()
agent = Echo()
"""
LATER = """\
import os


def tracing():
    return os.environ.get("TRACE_COLLECTOR"), os.getenv("TRACE_SAMPLING", "1"), os.environ["TRACE_SERVICE"]
"""


def test_the_names_a_project_s_own_code_reads_are_known(echo_project: Path) -> None:
    """Slips of a settings class's fields (under its prefix, and its alias), of the names the code reads
    from os.environ or os.getenv, and of a name in .env.example, are each named with the name meant."""
    (echo_project / "agents" / "a.py").write_text(SETTINGS, encoding="utf-8")
    (echo_project / "tracing.py").write_text(LATER, encoding="utf-8")
    (echo_project / ".env.example").write_text("# what to set\nWIDGET_COLOR=\n", encoding="utf-8")
    (echo_project / ".env").write_text(
        "SHOP_ENDPIONT=a\nSHOP_API_TOKN=b\nTRACE_COLECTOR=c\nTRACE_SAMPLNG=d\nTRACE_SERVCE=e\nWIDGET_COLOUR=f\n"
        "TRACE_SERVICE=h\n",
        encoding="utf-8",
    )

    done = convy(echo_project, "check")

    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        "convy: SHOP_ENDPIONT in .env: unknown; did you mean SHOP_ENDPOINT?",
        "convy: SHOP_API_TOKN in .env: unknown; did you mean SHOP_API_TOKEN?",
        "convy: TRACE_COLECTOR in .env: unknown; did you mean TRACE_COLLECTOR?",
        "convy: TRACE_SAMPLNG in .env: unknown; did you mean TRACE_SAMPLING?",
        "convy: TRACE_SERVCE in .env: unknown; did you mean TRACE_SERVICE?",
        "convy: WIDGET_COLOUR in .env: unknown; did you mean WIDGET_COLOR?",
        "6 problems: nothing was sent, nothing written",
    ]


class Plain:
    """The optimal string alignment distance written the plain way, with no cut-off."""

    def distance(self, one: str, other: str) -> int:
        table = [[i + j if i * j == 0 else 0 for j in range(len(other) + 1)] for i in range(len(one) + 1)]
        for i in range(1, len(one) + 1):
            for j in range(1, len(other) + 1):
                table[i][j] = min(
                    table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + (one[i - 1] != other[j - 1])
                )
                if i > 1 and j > 1 and one[i - 1] == other[j - 2] and one[i - 2] == other[j - 1]:
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
        return table[-1][-1]


NAMES = st.text(alphabet="ABC_", max_size=9)


@given(NAMES, NAMES, st.integers(min_value=0, max_value=3))
def test_the_distance_cut_short_agrees_with_the_plain_one(one: str, other: str, most: int) -> None:
    """``Spelling.distance`` is the plain distance, or ``most + 1`` whenever that is more than ``most``."""
    assert Spelling.distance(one, other, most) == min(Plain().distance(one, other), most + 1)


def test_a_slip_is_near_enough_only_for_a_name_long_enough() -> None:
    """One edit from a short name, two from a long one; a name known in any case is no slip; ties all said."""
    spelling = Spelling(frozenset({"USER_MODEL", "JUDGE_MODEL", "KEY", "AB_C", "AB_D"}))
    assert spelling.meant("JUDGE_MODLE") == ("JUDGE_MODEL",)  # two letters swapped: one edit
    assert spelling.meant("JUDGE_MDL") == ("JUDGE_MODEL",)  # two dropped from a long name
    assert spelling.meant("JUDGE_MD") == ()  # three
    assert spelling.meant("KYE") == ("KEY",)
    assert spelling.meant("KAYS") == ()  # two from a short name
    assert spelling.meant("judge_model") == ()
    assert spelling.meant("AB_E") == ("AB_C", "AB_D")
    assert spelling.said("AB_E", ".env") == "AB_E in .env: unknown; did you mean AB_C or AB_D?"


def test_a_misspelt_option_is_said_with_the_option_meant(tmp_path: Path) -> None:
    """A long option one slip from the command's own is named with it; one that belongs to another
    command says which; neither is run as written nor lost in "unrecognized arguments"."""
    cases = [
        (("compare", "a", "b", "--fail-on-regresion"), "convy compare: error: --fail-on-regresion: no such option; did you mean --fail-on-regression?"),
        (("run", "--atempts", "3"), "convy run: error: --atempts: no such option; did you mean --attempts?"),
        (("run", "--fail-under=0.5", "--tga", "smoke"), "convy run: error: --tga: no such option; did you mean --tag?"),
        (("resume", "4b52", "--old-senarios"), "convy resume: error: --old-senarios: no such option; did you mean --old-scenarios?"),
        (("check", "--dry-run"), "convy check: error: --dry-run is an option of convy run, not of convy check"),
        (("compare", "a", "b", "c"), "convy compare: error: unrecognized arguments: c"),
    ]
    for arguments, line in cases:
        done = convy(tmp_path, *arguments)
        assert done.returncode == 2, done.stderr
        assert done.stderr.splitlines()[-1] == line
        assert "Traceback" not in done.stderr


def test_init_s_next_command_can_be_pasted_for_a_folder_with_a_space(tmp_path: Path) -> None:
    done = convy(tmp_path, "init", "my proj")
    assert done.returncode == 0, done.stderr
    last = done.stdout.splitlines()[-1]
    assert last == "project ready in my proj; next: cd 'my proj' && convy run"
    pasted = subprocess.run(["sh", "-c", last.split("next: ", 1)[1].replace("convy run", "pwd")], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert pasted.stdout.strip() == str(tmp_path / "my proj")
