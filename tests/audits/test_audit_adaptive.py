"""An outside audit of issue 13 (``--attempts auto``, ``--against``, resume, the live report).

Probes written against the features as a user meets them; the ones marked xfail(strict=True)
show a bug found by the audit and pass once it is fixed. The rest hold on today's convy and
guard what held up: hostile options and settings refused naming the field, hostile base runs
refused with nothing written, the sequential rule's false-alarm rate under no change, and a run
killed outright (SIGKILL) while its live report is being written, then resumed.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import threading
from pathlib import Path

import pytest
from support.fakeproject import FakeProject
from support.process import start_convy
from support.waiting import wait_until
from test_exit_codes import convy, runs

from convy.adaptive import Narrow
from convy.records import Complete
from convy.sequential import Decided, Futile, Sequential, Undecided
from convy.stats import Tally, Wilson
from convy.storage import RunJournal

AGENT = "from convy.fakes import FakeAgent\n\nagent = FakeAgent(lambda text: 'hello')\n"
MODELS = """\
from convy.fakes import FakeJudge, Rated
from convy.judge import Models

models = Models(judge=FakeJudge(Rated({"passes a": 0.9, "passes b": 0.5, "passes c": 0.7})))
"""


def project(tmp_path: Path, attempts: int | str = 10) -> Path:
    files = {f"{name}.yaml": f"script: [hi]\njudge:\n  - passes {name}\n" for name in "abc"}
    folder = FakeProject(AGENT, MODELS, files, 3).written(tmp_path / "project")
    value = f'"{attempts}"' if isinstance(attempts, str) else str(attempts)
    # Its claims hold by chance (90%, 50%, 70%): the project measures pass rates and accepts any.
    (folder / "pyproject.toml").write_text(f"[tool.convy]\nattempts = {value}\nlive_seconds = 0\nfail_under = 0\n", encoding="utf-8")
    return folder


# --- the futility forecast -------------------------------------------------------------------


def played_out(base: dict[str, tuple[bool, ...]], most: int, candidate: float, seed: int) -> Decided | Undecided | Futile:
    """The watch played round by round as ``convy run --against`` plays it, the candidate's attempts
    passing at ``candidate`` (seeded), until the verdict is no longer undecided."""
    chooser = random.Random(seed)
    watch = Sequential(0.05, most).started(base)
    while isinstance(verdict := watch.verdict(), Undecided) and (asks := watch.asks()):
        watch = watch.played({ask.scenario: Tally(sum(chooser.random() < candidate for _ in range(ask.attempts)), ask.attempts) for ask in asks})
    return verdict


def test_a_candidate_failing_everything_is_decided_worse_not_futile() -> None:
    """One scenario, a base of 20 attempts, 18 passed; the candidate fails every attempt. Played to its
    plan of 20 the rule reaches e ≥ 20 (the audit switched the forecast off: 200 of 200 seeded runs
    decided, in 9.4 attempts on average); with the forecast as shipped it stops futile after its first
    block or two, saying that even the far edge of the change's interval could not decide it."""
    base: dict[str, tuple[bool, ...]] = {"s": (True,) * 9 + (False,) + (True,) * 9 + (False,)}
    verdict = played_out(base, 20, 0.0, seed=1)
    assert isinstance(verdict, Decided) and verdict.direction == "worse", verdict


def test_a_broken_candidate_on_a_small_suite_is_decided_in_nearly_every_run() -> None:
    decided = 0
    for seed in range(100):
        chooser = random.Random(seed)
        base = {name: tuple(chooser.random() < 0.9 for _ in range(10)) for name in "abc"}
        decided += isinstance(played_out(base, 10, 0.0, seed + 1000), Decided)
    assert decided >= 95, f"decided in {decided} of 100 runs"  # the forecast off: 100 of 100; with the flip: 39


# --- the false-alarm rate under no change ------------------------------------------------------


@pytest.mark.parametrize(("scenarios", "base", "most"), [(1, 5, 50), (5, 5, 50), (5, 200, 50), (20, 200, 50), (3, 200, 200)])
def test_no_change_is_rarely_called_real_with_a_small_or_a_large_base(scenarios: int, base: int, most: int) -> None:
    """Candidate and base at the same rates (0.5 to 0.9 per scenario, seeded): of 300 runs looked at
    after every round, the ones said real stay within what a true rate of α = 0.05 gives in all but
    one run of a thousand (≤ 27 of 300). Measured by the audit at 3,000 runs with the futility stop
    off: 0.2% to 2.7%."""
    alarms = 0
    for run in range(300):
        chooser = random.Random(run * 7919 + scenarios * 31 + base)
        rates = [chooser.uniform(0.5, 0.9) for _ in range(scenarios)]
        kept = {f"s{i}": tuple(chooser.random() < rates[i] for _ in range(base)) for i in range(scenarios)}
        watch = Sequential(0.05, most).started(kept)
        while isinstance(watch.verdict(), Undecided) and (asks := watch.asks()):
            tallies = {}
            for ask in asks:
                rate = rates[int(ask.scenario[1:])]
                tallies[ask.scenario] = Tally(sum(chooser.random() < rate for _ in range(ask.attempts)), ask.attempts)
            watch = watch.played(tallies)
        alarms += isinstance(watch.verdict(), Decided)
    assert alarms <= 27


def test_the_narrow_rules_interval_covers_less_than_95_percent_at_coarse_widths_as_the_docs_allow() -> None:
    """Not a bug, a figure for the docs: at width 0.5 and min_attempts 3, the Wilson interval of a
    scenario stopped by the rule covers a true rate of 0.5 in about 84% of runs (seeded, 4,000), as
    docs/statistics.md now says (it once said the error was small for any rate well inside (0, 1))."""
    rule = Narrow(0.5)
    chooser = random.Random(5)
    covered = 0
    for _ in range(4000):
        draws = {number: "passed" if chooser.random() < 0.5 else "failed" for number in range(1, 61)}
        interval = Wilson(rule.standing("s", draws, 3, 60).tally).interval()
        assert interval is not None
        covered += interval.low <= 0.5 <= interval.high
    assert covered / 4000 < 0.9


# --- options and settings ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (("--target-width", "nan"), "--target-width"),
        (("--target-width", "inf"), "--target-width"),
        (("--target-width", "-0.1"), "--target-width"),
        (("--max-attempts", "-5"), "--max-attempts"),
        (("--max-attempts", "99999999999999999999"), "--max-attempts"),
        (("--max-cost", "nan"), "--max-cost"),
        (("--max-minutes", "1e308"), "--max-minutes"),
        (("--max-tokens", "-1"), "--max-tokens"),
    ],
)
def test_hostile_option_values_exit_2_naming_the_option(tmp_path: Path, options: tuple[str, ...], named: str) -> None:
    folder = project(tmp_path)
    done = convy(folder, "run", "--attempts", "auto", *options)
    assert done.returncode == 2 and named in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (folder / "results").exists()


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({"CONVY_ATTEMPTS": "auto", "CONVY_TARGET_WIDTH": "nan"}, "CONVY_TARGET_WIDTH"),
        ({"CONVY_ATTEMPTS": "auto", "CONVY_MIN_ATTEMPTS": "x"}, "CONVY_MIN_ATTEMPTS"),
        ({"CONVY_ATTEMPTS": "Auto"}, "CONVY_ATTEMPTS"),
        ({"CONVY_LIVE_SECONDS": "nan"}, "CONVY_LIVE_SECONDS"),
        ({"CONVY_LIVE_SECONDS": "-5"}, "CONVY_LIVE_SECONDS"),
    ],
)
def test_hostile_variables_exit_2_naming_the_variable(tmp_path: Path, variables: dict[str, str], named: str) -> None:
    folder = project(tmp_path)
    done = convy(folder, "run", **variables)
    assert done.returncode == 2 and named in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (folder / "results").exists()


def test_against_with_a_small_max_attempts_plays(tmp_path: Path) -> None:
    folder = project(tmp_path)
    assert convy(folder, "run").returncode == 0
    (base,) = runs(folder)
    done = convy(folder, "run", "--attempts", "auto", "--against", base, "--max-attempts", "3")
    assert done.returncode == 0, done.stderr  # once exit 2: "--min-attempts: must be at most max_attempts (3)"
    done = convy(folder, "run", "--attempts", "auto", "--max-attempts", "2")
    assert done.returncode == 0, done.stderr


# --- hostile bases -------------------------------------------------------------------------------


def copied(folder: Path, base: str, name: str) -> tuple[str, dict, list[dict]]:
    """A copy of run ``base`` as run ``name`` (its id made to match its folder): its run.json and lines."""
    agent = folder / "results" / "bot"
    shutil.copytree(agent / base, agent / name)
    saved = json.loads((agent / name / "run.json").read_text())
    saved["spec"]["id"] = name
    lines = [json.loads(line) for line in (agent / name / "attempts.jsonl").read_text().splitlines()]
    return name, saved, lines


def written(folder: Path, name: str, saved: dict | str, lines: list[dict]) -> None:
    path = folder / "results" / "bot" / name
    (path / "run.json").write_text(saved if isinstance(saved, str) else json.dumps(saved))
    (path / "attempts.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def hostile(case: str, saved: dict, lines: list[dict]) -> tuple[dict | str, list[dict]]:
    match case:
        case "duplicated":
            return saved, lines + [dict(line, attempt=line["attempt"]) for line in lines]
        case "attempt past the plan":
            return saved, lines + [dict(lines[0], attempt=99999)]
        case "attempt 0":
            return saved, lines + [dict(lines[0], attempt=0)]
        case "foreign scenario":
            return saved, lines + [dict(lines[0], scenario="ghost")]
        case "nothing judged":
            return saved, [dict(line, result={"type": "no_verdict", "who": "judge", "reason": "x"}) for line in lines]
        case "no attempts":
            return saved, []
        case "another agent":
            saved["spec"]["agent"] = "other"
            return saved, lines
        case "huge attempts":
            saved["spec"]["attempts"] = 10**15
            return saved, lines
        case "running":
            saved["status"] = {"type": "running", "started": saved["status"]["started"]}
            return saved, lines
        case _:
            raise AssertionError(case)


@pytest.mark.parametrize(
    "case",
    ["duplicated", "attempt past the plan", "attempt 0", "foreign scenario", "nothing judged", "no attempts", "another agent", "huge attempts", "running"],
)
def test_a_hostile_base_exits_2_and_writes_nothing(tmp_path: Path, case: str) -> None:
    folder = project(tmp_path)
    assert convy(folder, "run").returncode == 0
    (base,) = runs(folder)
    name, saved, lines = copied(folder, base, "20260101-000000-bad1")
    written(folder, name, *hostile(case, saved, lines))
    before = {path: path.stat().st_mtime_ns for path in (folder / "results").rglob("*")}
    done = convy(folder, "run", "--attempts", "auto", "--max-attempts", "10", "--against", name)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert sorted(runs(folder)) == sorted([base, name])
    assert {path: path.stat().st_mtime_ns for path in (folder / "results").rglob("*")} == before


@pytest.mark.parametrize("damage", ["not JSON", "a list", "trust NaN"])
def test_a_base_with_a_damaged_run_json_is_said_damaged(tmp_path: Path, damage: str) -> None:
    folder = project(tmp_path)
    assert convy(folder, "run").returncode == 0
    (base,) = runs(folder)
    name, saved, lines = copied(folder, base, "20260101-000000-bad2")
    match damage:
        case "not JSON":
            text = '{"spec": '
        case "a list":
            text = "[]"
        case _:
            saved["spec"]["trust"] = float("nan")
            text = json.dumps(saved)
    written(folder, name, text, lines)
    done = convy(folder, "run", "--attempts", "auto", "--against", name)
    assert done.returncode == 2
    assert "run.json" in done.stderr and "convy resume" not in done.stderr, done.stderr


# --- SIGKILL while the live report is written, then resume -----------------------------------------

SLOW_AGENT = """\
import asyncio
import random

from convy import Answer


class _Talk:
    async def turn(self, message):
        await asyncio.sleep(random.random() * 0.03)
        return Answer("ok")


class _Open:
    async def __aenter__(self):
        return _Talk()

    async def __aexit__(self, *exc):
        return False


class Slow:
    def conversation(self):
        return _Open()


agent = Slow()
"""
RANDOM_MODELS = """\
import random

from convy.fakes import FakeJudge
from convy.judge import Models

models = Models(judge=FakeJudge(lambda claim, transcript: random.random() < 0.7))
"""
PATIENCE = 240.0  # only a hang reaches it


def writers(parent: int) -> list[str]:
    """The ``convy report --live`` processes tied to ``parent``, by their command lines."""
    found = []
    for process in Path("/proc").iterdir():
        if not process.name.isdigit():
            continue
        try:
            words = (process / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "--live" in words and "--parent" in words and str(parent) in words:
            found.append(" ".join(words))
    return found


class Pages(threading.Thread):
    """Reads every report.html and index.html under ``results`` again and again; each read must be a whole page."""

    def __init__(self, results: Path) -> None:
        super().__init__(daemon=True)
        self.results = results
        self.done = threading.Event()
        self.reads = 0
        self.torn: list[str] = []

    def run(self) -> None:
        while not self.done.is_set():
            for page in [*self.results.glob("*/*/report.html"), self.results / "index.html"]:
                try:
                    text = page.read_text(encoding="utf-8")
                except FileNotFoundError:
                    continue
                self.reads += 1
                if not text.lstrip().lower().startswith("<!doctype html") or not text.rstrip().endswith("</html>"):
                    self.torn.append(f"{page.name}: {len(text)} characters")


def count(results: Path) -> int:
    return sum(sum(1 for _ in path.open()) for path in results.glob("bot/*/attempts.jsonl"))


@pytest.mark.timeout(3 * PATIENCE)  # only a hang reaches it: the waits below are for conditions
def test_a_run_killed_while_its_live_report_is_written_leaves_no_writer_and_resumes_exactly(tmp_path: Path) -> None:
    """40 scenarios of --attempts auto, the live report every 0.2 s: once a writer is under way the run
    is SIGKILLed; the writer goes with it, no read of a page is ever torn, and the resumed run keeps
    each attempt once, exactly those its rule looked at, every scenario stopped by the rule."""
    folder = tmp_path / "project"
    (folder / "agents").mkdir(parents=True)
    (folder / "scenarios").mkdir()
    (folder / "agents" / "bot.py").write_text(SLOW_AGENT)
    (folder / "models.py").write_text(RANDOM_MODELS)
    for number in range(40):
        (folder / "scenarios" / f"s{number:02d}.yaml").write_text(f"script: [hi]\njudge:\n  - passes s{number:02d}\n")
    (folder / "pyproject.toml").write_text("[tool.convy]\nattempts = 3\nlive_seconds = 0.2\nagent_places = 8\nfail_under = 0\n")
    pages = Pages(folder / "results")
    pages.start()
    process = start_convy(
        folder, "run", "--attempts", "auto", "--max-attempts", "12", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        # A live writer (a `convy report --live` process) lives a moment at a time: looked for often.
        seen = wait_until(
            lambda: writers(process.pid) and count(folder / "results") >= 20,
            "a live writer at work with 20 attempts kept", timeout=PATIENCE, process=process, every=0.002,
        )
        assert seen, "the run ended before a live writer was seen with 20 attempts kept"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=PATIENCE)
        wait_until(lambda: not writers(process.pid), "the killed run's live writers to end", timeout=PATIENCE, every=0.05)
        (run,) = runs(folder)
        resumed = convy(folder, "resume", run)
        assert resumed.returncode in (0, 1) and "Traceback" not in resumed.stderr, resumed.stderr
    finally:
        if process.poll() is None:
            process.kill()
        pages.done.set()
        pages.join()
    assert pages.reads > 0 and pages.torn == []
    journal = RunJournal(folder / "results" / "bot" / run)
    kept = journal.kept(journal.run().spec)
    spec = journal.run().spec
    assert isinstance(journal.run().status, Complete) and spec.adaptive is not None
    keys = [(outcome.scenario, outcome.attempt) for outcome in kept.outcomes]
    assert len(keys) == len(set(keys)) and kept.repeated == 0
    course = spec.adaptive.course(tuple(one.id for one in spec.scenarios), kept.outcomes, spec.attempts, spec.trust)
    for standing in course.standings:
        assert standing.stop in ("narrow", "most")
        assert {number for scenario, number in keys if scenario == standing.scenario} == set(range(1, standing.looked + 1))
    assert not list((folder / "results").rglob("*.tmp"))


# --- a second outside audit, of the fixes above ------------------------------------------------------
#
# Each test below showed a bug the second audit found (a strict xfail until it was fixed).

BASE_19_OF_20 = (True,) * 19 + (False,)


def test_a_first_attempt_that_passed_does_not_make_a_real_drop_futile() -> None:
    """Three scenarios, each with a base of 19 passes in 20; the candidate's first attempt in each
    passed (0.7³ = 34% of runs for a candidate that dropped to 0.7). The difference seen is +5
    points, so the forecast looks only upwards, where a base at 95% has almost no room, and says
    futile after 3 attempts, though the 99% interval of the change reaches far below zero."""
    watch = Sequential(0.05, 20).started({name: BASE_19_OF_20 for name in "abc"})
    watch = watch.played({name: Tally(1, 1) for name in "abc"})
    assert not isinstance(watch.verdict(), Futile), watch.verdict()


def test_a_candidate_dropping_from_95_to_30_percent_on_one_scenario_is_decided_in_nearly_every_run() -> None:
    """One scenario, a base of 19 in 20, a plan of 20, the candidate at 0.3 (seeded, 200 runs). With
    the forecast as shipped: decided in 143 (56 called futile after one attempt that passed); with
    the forecast off, or taking the better of the interval's two ends: 198."""
    decided = sum(isinstance(played_out({"s": BASE_19_OF_20}, 20, 0.3, seed + 777), Decided) for seed in range(200))
    assert decided >= 190, f"decided in {decided} of 200 runs"


def settings_file(folder: Path, extra: str) -> None:
    (folder / "pyproject.toml").write_text(f"[tool.convy]\nattempts = 3\nlive_seconds = 0\nfail_under = 0\n{extra}", encoding="utf-8")


@pytest.mark.parametrize("where", ["[tool.convy]", "CONVY_MAX_ATTEMPTS"])
def test_max_attempts_set_alone_below_5_is_not_refused(tmp_path: Path, where: str) -> None:
    """The fix of --max-attempts alone holds for the option only: max_attempts = 3 in [tool.convy],
    or CONVY_MAX_ATTEMPTS=3, with no min_attempts set, refuses every convy run — a plain run of 3
    attempts, --attempts auto, --against (where min_attempts is not used), even with
    --max-attempts 3 given — with 'min_attempts: must be at most max_attempts (3); it is 5 (5
    unless set)'."""
    folder = project(tmp_path)
    assert convy(folder, "run").returncode == 0
    (base,) = runs(folder)
    variables = {"CONVY_MAX_ATTEMPTS": "3"} if where == "CONVY_MAX_ATTEMPTS" else {}
    if not variables:
        settings_file(folder, "max_attempts = 3\n")
    for arguments in (("run",), ("run", "--attempts", "auto"), ("run", "--attempts", "auto", "--against", base, "--max-attempts", "3")):
        done = convy(folder, *arguments, **variables) if variables else convy(folder, *arguments)
        assert done.returncode == 0, f"{arguments}: {done.stderr}"


def test_a_run_compared_with_the_base_it_was_played_against_is_not_called_not_comparable(tmp_path: Path) -> None:
    """convy compare of the very pair --against is made for says '! not comparable: attempts per
    scenario differ: 10 → 12' whenever --max-attempts (60 unless set) is not the base's attempts:
    the candidate's spec.attempts is its plan's most, and the sequential verdict allows for it."""
    folder = project(tmp_path)
    assert convy(folder, "run").returncode == 0
    (base,) = runs(folder)
    assert convy(folder, "run", "--attempts", "auto", "--against", base, "--max-attempts", "12").returncode == 0
    (candidate,) = set(runs(folder)) - {base}
    done = convy(folder, "compare", base, candidate)
    assert done.returncode == 0 and "anytime-valid" in done.stdout, done.stdout + done.stderr
    assert "attempts per scenario differ" not in done.stderr, done.stderr


def test_a_base_of_one_attempt_per_scenario_does_not_play_a_plan_that_cannot_decide(tmp_path: Path) -> None:
    """A base of 1 attempt per scenario (a smoke run): the block is the whole plan, and a first
    block is scored with no guess of the change, so e is 1 whatever the candidate does. convy
    plays all of it anyway (3 × 60 attempts with the default plan; here 3 × 20, a candidate failing
    everything against a base passing everything) and only then says 'no verdict'. It should be
    refused up front, or stopped before the plan is spent."""
    folder = project(tmp_path)
    (folder / "models.py").write_text(MODELS.replace("0.9", "1.0").replace("0.5", "1.0").replace("0.7", "1.0"))
    assert convy(folder, "run", "--attempts", "1").returncode == 0
    (base,) = runs(folder)
    (folder / "models.py").write_text(MODELS.replace("0.9", "0.0").replace("0.5", "0.0").replace("0.7", "0.0"))
    done = convy(folder, "run", "--attempts", "auto", "--against", base, "--max-attempts", "20")
    assert "Traceback" not in done.stderr, done.stderr
    played = [run for run in runs(folder) if run != base]
    spent = sum(sum(1 for _ in (folder / "results" / "bot" / run / "attempts.jsonl").open()) for run in played)
    assert spent < 3 * 20, done.stdout


def test_a_base_still_playing_is_not_sent_to_resume(tmp_path: Path) -> None:
    """A base marked running whose lock another process holds is playing: --against refuses it, but
    once told to run 'convy resume' on it, which refuses a run in use ('is in use by another convy
    process'); it says to wait for it instead. An interrupted base is still sent to resume."""
    import fcntl

    folder = project(tmp_path)
    assert convy(folder, "run").returncode == 0
    (base,) = runs(folder)
    name, saved, lines = copied(folder, base, "20260101-000000-live")
    saved["status"] = {"type": "running", "started": saved["status"]["started"]}
    written(folder, name, saved, lines)
    held = os.open(folder / "results" / "bot" / name / "run.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        done = convy(folder, "run", "--attempts", "auto", "--against", name)
        assert done.returncode == 2 and "is playing" in done.stderr, done.stderr
        assert "convy resume" not in done.stderr and "wait for it to end" in done.stderr, done.stderr
        assert "in use" in convy(folder, "resume", name).stderr  # why resume is no advice here
    finally:
        os.close(held)
    done = convy(folder, "run", "--attempts", "auto", "--against", name)  # the lock free: interrupted
    assert done.returncode == 2 and f"is interrupted, not finished: a base must be played out (convy resume {name})" in done.stderr, done.stderr


def test_the_dry_run_names_the_options_of_attempts_auto_as_the_source_of_their_settings(tmp_path: Path) -> None:
    """convy run --dry-run lists the settings in force and where each came from: --min-attempts,
    --max-attempts and --target-width were said to be the default (min_attempts too when
    --max-attempts alone had lowered it), so a user checking which max_attempts is in force was
    told the wrong thing."""
    folder = project(tmp_path)

    def sources(*options: str) -> dict[str, tuple[str, str]]:
        done = convy(folder, "run", "--attempts", "auto", *options, "--dry-run")
        assert done.returncode == 0, done.stderr
        rows = [line.split() for line in done.stdout.splitlines() if line.startswith("  ")]
        return {row[0]: (row[1], row[-1]) for row in rows if len(row) >= 3}

    found = sources("--max-attempts", "2", "--target-width", "0.3")
    assert found["max_attempts"] == ("2", "--max-attempts")
    assert found["target_width"] == ("0.3", "--target-width")
    assert found["min_attempts"] == ("2", "default")  # unset: 5, or max_attempts when lower
    found = sources("--max-attempts", "7", "--min-attempts", "3")
    assert found["max_attempts"] == ("7", "--max-attempts") and found["min_attempts"] == ("3", "--min-attempts")
    found = sources("--max-attempts", "7")
    assert found["min_attempts"] == ("5", "default")  # not lowered: still the default's


@pytest.mark.parametrize("options", [("--max-attempts", "2"), ("--min-attempts", "2"), ("--target-width", "0.3")])
def test_an_option_of_attempts_auto_given_with_a_fixed_number_is_refused(tmp_path: Path, options: tuple[str, str]) -> None:
    """convy run --attempts 3 --max-attempts 2 plays 3 attempts per scenario, the option silently
    dropped, though its help says 'with --attempts auto' and --against refuses the options it does
    not use (--min-attempts, --target-width: 'not used with --against')."""
    folder = project(tmp_path)
    done = convy(folder, "run", "--attempts", "3", *options)
    assert done.returncode == 2 and options[0] in done.stderr and "--attempts auto" in done.stderr, done.stdout + done.stderr
    assert not (folder / "results").exists()
