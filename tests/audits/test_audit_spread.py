"""An outside audit of spread runs (``--workers N`` / ``--ray ADDRESS``, issue 12), with inputs the
team did not write: canary keys echoed by services while workers play (scanned in every output,
every file of the run, the exports and Ray's own folder — its logs and the packages a cluster
unpacks), hostile values of ``workers`` and ``ray`` from each place they come from, and Ctrl+C to
a spread run (the run kept interrupted, resumed each attempt once, no Ray process left behind).

Every command runs with ``RAY_TMPDIR`` set to a folder of the test's own, so the Ray a run starts
is found by that folder (its sessions, its logs, its processes) and nothing else's is looked at.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.litellmproxy import Proxy
from support.process import run_convy
from support.raycluster import LocalCluster as RayCluster
from support.raycluster import ray_processes
from support.standin import StandIn, Status
from support.waiting import wait_until
from test_canary import AGENT_KEY, Project, echoes, gateway, leaks, project, service  # noqa: F401  (fixtures)
from test_proxy import assert_counted
from test_services_cli import Made, made  # noqa: F401  (made is a fixture)
from test_services_cli import outcomes as proxy_outcomes
from test_spread import (
    DEADLINE,
    SCENARIOS,
    Place,
    each_once,
    outcomes,
    place,  # noqa: F401  (fixture)
)

# An agent that loads in the driver and fails in each worker, its error carrying the .env.
BROKEN_IN_WORKERS = '''
import sys
from pathlib import Path

ray = sys.modules.get("ray")
if ray is not None and ray.is_initialized():
    raise RuntimeError("cannot start with these settings: " + (Path(__file__).parent.parent / ".env").read_text())

from convy import JsonAgent, JsonEndpoint

agent = JsonAgent(JsonEndpoint("http://127.0.0.1:9/agent"), reply="output.text")
'''


@pytest.fixture(scope="module")
def outliving() -> Iterator[list[tuple[Path, str]]]:
    """The Ray folders of this module's tests, with what each test awaits of them: that no process
    of theirs is left. Awaited when the module's tests are done, not each at its test's end: a
    killed run's dashboard and runtime-env agents outlive it by about a minute (they try to tell the
    GCS, which died with the run, that their raylet died: Ray's publish_error waits 60 s for it), and
    a worker waiting for that alone would do nothing for a minute while the tests below could run."""
    folders: list[tuple[Path, str]] = []
    yield folders
    for folder, what in folders:
        wait_until(lambda folder=folder: not ray_processes(folder), what, every=0.05)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def ray_folder(monkeypatch: pytest.MonkeyPatch, outliving: list[tuple[Path, str]], request: pytest.FixtureRequest) -> Iterator[Path]:
    """A Ray temp folder of the test's own (short: Unix socket paths are limited), for every
    command the test starts; emptied at the end of the module once no process of it is left."""
    folder = Path(tempfile.mkdtemp(prefix="a12-", dir="/tmp"))
    monkeypatch.setenv("RAY_TMPDIR", str(folder))
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    yield folder
    outliving.append((folder, f"the processes of {folder} ({request.node.name}) to end"))


def workers_of(folder: Path) -> set[int]:
    """The live worker processes of the Ray whose temp folder is ``folder``: those Ray titled
    ``ray::`` (an actor, or a worker waiting for one), not its GCS, raylet or agents."""
    found = set()
    for pid in ray_processes(folder):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::"):
                found.add(pid)
        except OSError:
            continue
    return found


def texts(folder: Path) -> Iterator[tuple[Path, str]]:
    """Every file under ``folder`` as text (sockets and the like skipped)."""
    for path in folder.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink():
                yield path, path.read_bytes().decode("utf-8", "replace")
        except OSError:
            continue


# --- 0. a driver killed -----------------------------------------------------------------------
# First in the file: the killed run's Ray agents outlive the test by about a minute, awaited at the
# end of the module (``outliving``) while the tests below play.


def test_a_driver_killed_takes_the_ray_it_started_with_it_and_resume_plays_each_attempt_once(
    place: Place, ray_folder: Path  # noqa: F811
) -> None:
    """SIGKILL of ``convy run --workers 2``, on a Ray the run started itself: the workers that
    played end with the driver, and ``convy resume --workers 2``, on a Ray of its own again, plays
    what the run lacks, each attempt once; in the end no process of either Ray is left. (test_spread
    kills the driver of a run on the session's cluster, which outlives it.)"""
    place.written(attempts=4)
    # After 12 turns no conversation but greet's goes on until the driver is killed (``Roles.FREE``);
    # once one of the attempts that ended by then is recorded, the driver is killed.
    gate = threading.Event()
    place.roles.held = (12, gate)
    process = place.started("run", "--workers", "2")
    try:
        wait_until(lambda: place.roles.turns >= 12 and (run := place.runs()) is not None and bool(outcomes(run)), "an attempt recorded", every=0.05)
        # Whoever has sent by now is alive now, so the finder must see them: it is not blind.
        sent = {pid for pid, _ in place.senders()}
        live = ray_processes(ray_folder)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        gate.set()  # a failed wait leaves no conversation held, and the teardown cannot hang
    assert process.wait(DEADLINE) == -signal.SIGKILL
    assert sent and sent <= live and process.pid in live, (sent, live)  # the driver has the folder in its environment
    # Every worker of the killed run ends with it, those that had not sent yet too: one still
    # loading the project when the driver died may send once more before it ends, and would be
    # counted among the resume's workers.
    wait_until(lambda: not workers_of(ray_folder), "the killed run's workers to end", every=0.05)
    # The workers that sent, before the kill or just after: both, or on a loaded machine only the
    # first (the second may still have been loading the project); never the driver.
    workers = {pid for pid, _ in place.senders()}
    assert 1 <= len(workers) <= 2 and process.pid not in workers, workers
    run = place.run()
    before = len(outcomes(run))
    assert 1 <= before < len(SCENARIOS) * 4

    ran = place.ran("resume", run.name, "--workers", "2")

    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "played by 2 workers on a Ray started for this run" in ran.stdout, ran.stdout
    each_once(run, 4)
    resumers = {pid for pid, _ in place.senders()} - workers
    assert 1 <= len(resumers) <= 2 and not place.writers() & resumers, (resumers, place.writers())
    # Ray's own agents of the killed run outlive its raylet about a minute (they try to report its
    # death to a GCS that died with it), then end; the resume's Ray ends with the resume. That no
    # process of either Ray is left is awaited at the end of the module (``outliving``).
    print(f"\ndriver of its own Ray killed: {before} of {len(SCENARIOS) * 4} kept before the kill, the rest "
          "played by the resume, each attempt once")


# --- 1. secrets -----------------------------------------------------------------------------------


def test_no_echoed_canary_reaches_any_output_or_rays_own_folder_with_two_workers(
    project: Project, gateway: StandIn, service: StandIn, ray_folder: Path  # noqa: F811
) -> None:
    """Keys echoed by the agent's service (as text and as JSON, across the cut of an error body)
    and by the models' gateway, while two workers play: no piece of a canary reaches stdout or
    stderr, the run folder, its page, the exports, or anything Ray wrote (its logs among them)."""
    faults = echoes(400, range(270, 300, 5)) + echoes(500, range(270, 300, 10), as_json=True)
    faults += [Status(400, body={"error": {"echo": AGENT_KEY}})]
    service.faults(*faults)
    gateway.faults(*echoes(401, range(0, 300, 60), path="/v1/chat/completions"))
    gateway.faults(*echoes(400, range(250, 300, 10), as_json=True, path="/v1/chat/completions"))

    ran = project.ran("run", "echo", "--scenarios", "canary/scripted", "canary/judged", "-k", str(len(faults)), "--workers", "2")

    assert ran.returncode != 0 and "played by 2 workers" in ran.stdout, ran.stdout + ran.stderr
    assert "<hidden>" in ran.stdout  # an echo came back, and was hidden
    assert project.ran("export").returncode == 0
    assert_nothing_leaked(project, ray_folder, runs=1)


def test_no_canary_a_worker_holds_reaches_any_output_or_rays_own_folder(
    project: Project, ray_folder: Path  # noqa: F811
) -> None:
    """A key the workers read from .env into a SecretStr that the agent raises, and a worker that
    cannot load the project and says the whole .env: hidden in what the driver shows and keeps,
    and absent from Ray's folder."""
    (project.folder / "agents" / "broken.py").write_text(BROKEN_IN_WORKERS)
    raising = project.ran("run", "raising", "--scenarios", "canary/scripted", "-k", "2", "--workers", "2")
    assert raising.returncode == 1 and "refused access '<hidden>'" in raising.stdout, raising.stdout + raising.stderr
    broken = project.ran("run", "broken", "--scenarios", "canary/scripted", "-k", "1", "--workers", "2")
    assert broken.returncode == 2, broken.stdout + broken.stderr
    assert broken.stderr.count("a worker could not load the project") == 1, broken.stderr
    assert "GATEWAY_KEY=<hidden>" in broken.stderr, broken.stderr
    assert_nothing_leaked(project, ray_folder, runs=2)


def assert_nothing_leaked(project: Project, ray_folder: Path, runs: int) -> None:  # noqa: F811
    for said in project.said:
        assert not leaks(said), said
    for name, text in project.kept().items():
        assert not leaks(text), name
    sessions = list(ray_folder.rglob("session_*/logs"))
    assert len(sessions) >= runs, sessions  # each run's Ray, its logs kept
    for path, text in texts(ray_folder):
        assert not leaks(text), path


def test_a_cluster_is_shipped_the_project_without_its_env(place: Place, ray_cluster: RayCluster) -> None:  # noqa: F811
    """``--ray ADDRESS`` ships the project as the job's working directory: the cluster's nodes
    unpack it, and nothing of the project's ``.env`` (a canary in it) is in what they hold."""
    place.written(attempts=1)
    canary = "sk-canary-" + os.urandom(12).hex()
    (place.folder / ".env").write_text(f"SOME_SERVICE_KEY={canary}\n")
    (place.folder / "agents" / ".env").write_text(f"NESTED_KEY={canary}\n")

    ran = place.ran("run", "--ray", ray_cluster.address, "--workers", "2")

    assert ran.returncode == 0, ran.stdout + ran.stderr
    each_once(place.run(), 1)
    shipped = [path for path, _ in texts(ray_cluster.folder) if path.name == "bot.py" and "runtime_resources" in str(path)]
    assert shipped, "the project was not found where the cluster unpacks it"
    for path, text in texts(ray_cluster.folder):
        assert canary[10:18] not in text and canary[-8:] not in text, path
    assert not leaks(ran.stdout + ran.stderr)


# --- 3. hostile input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "arguments", "environment", "named"),
    [
        ("workers = -1", (), {}, "workers"),
        ("workers = 100000", (), {}, "workers"),
        ('ray = "\\u001b[31m"', (), {}, "ray"),
        ('ray = "\\u001b]0;owned\\u0007"', (), {}, "ray"),
        ("", (), {"CONVY_WORKERS": "abc"}, "CONVY_WORKERS"),
        ("", (), {"CONVY_RAY": "\x1b[2J"}, "CONVY_RAY"),
        ("", ("--workers", "-1"), {}, "--workers"),
        ("", ("--workers", "100000"), {}, "--workers"),
        ("", ("--workers", "abc"), {}, "--workers"),
        ("", ("--ray", "\x1b[31mhost:1"), {}, "--ray"),
        ("", ("--ray", ""), {}, "--ray"),
        ("workers = 2", ("--ray", ""), {}, "--ray"),
    ],
)
def test_a_hostile_workers_or_ray_exits_2_naming_it(
    place: Place, settings: str, arguments: tuple[str, ...], environment: dict[str, str], named: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    place.written(attempts=1, settings=settings)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    kept = {name: value for name, value in os.environ.items() if name != "RAY_ADDRESS"}
    done = run_convy(place.folder, "run", *arguments, env=kept, timeout=DEADLINE)
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert named in done.stderr and "Traceback" not in said, said
    assert "\x1b" not in said and "\x07" not in said, repr(said)
    assert place.runs() is None and not place.server.received  # nothing played


# --- 4. Ctrl+C ------------------------------------------------------------------------------------


def test_ctrl_c_to_two_workers_keeps_the_run_interrupted_leaves_no_ray_and_resume_finishes_it(
    place: Place, ray_folder: Path  # noqa: F811
) -> None:
    place.written(attempts=4)
    gate = threading.Event()
    place.roles.held = (6, gate)
    process = place.started("run", "--workers", "2")
    wait_until(lambda: place.roles.turns >= 6 and (run := place.runs()) is not None and bool(outcomes(run)), "an attempt recorded", every=0.05)
    # Whether the second worker has reached the stand-in by now is the machine's speed: it may
    # still be loading the project while the first plays. Every turn came from a worker, though.
    workers = {pid for pid, _ in place.senders()}
    os.kill(process.pid, signal.SIGINT)
    try:
        # The conversations stay held until the driver has ended: let go at once, on a loaded
        # machine the workers could play every attempt left before the driver's loop reads its
        # Ctrl+C, and the run would end complete (exit 0), which is no test of an interrupt.
        code = process.wait(DEADLINE)
    finally:
        gate.set()
    assert 1 <= len(workers) <= 2 and process.pid not in workers, workers
    assert code == 130, (place.folder.parent / "out.txt").read_text()
    said = (place.folder.parent / "out.txt").read_text()
    assert "Traceback" not in said, said
    run = place.run()
    status = json.loads((run / "run.json").read_text())["status"]
    assert status["type"] == "interrupted", status
    wait_until(lambda: not ray_processes(ray_folder), "the interrupted run's Ray to end", every=0.05)
    before = len(outcomes(run))
    assert 1 <= before < len(SCENARIOS) * 4

    ran = place.ran("resume", run.name, "--workers", "2")

    assert ran.returncode == 0, ran.stdout + ran.stderr
    each_once(run, 4)
    wait_until(lambda: not ray_processes(ray_folder), "the resume's Ray to end", every=0.05)
    print(f"\nCtrl+C: {before} of {len(SCENARIOS) * 4} kept before, resumed each once, no Ray process left")


# --- 2. LiteLLM's proxy ---------------------------------------------------------------------------


def test_two_workers_on_the_proxy_count_what_the_proxy_sent_each_attempt_once(
    made: Made, proxy: Proxy, ray_folder: Path  # noqa: F811
) -> None:
    """The template's assistant, simulated user and judge on LiteLLM's proxy, played by two
    workers: every token and the cost recorded for each model is what the proxy's own callback
    wrote down it sent, no reply more or less, and each attempt is kept once."""
    made.gateway(proxy.url + "/v1")
    before = proxy.counts()

    ran = made.ran("run", "-k", "2", "--workers", "2", CONVY_MAX_TURNS="2", CONVY_USER_FAULTS="count")

    assert ran.returncode == 5, ran.stdout + ran.stderr  # the mock judge gives no grade (as in test_proxy)
    assert "played by 2 workers" in ran.stdout, ran.stdout
    runs = made.runs()
    kept = [outcome for folder in runs.values() for outcome in proxy_outcomes(folder)]
    keys = [(name, outcome.scenario, outcome.attempt) for name, folder in runs.items() for outcome in proxy_outcomes(folder)]
    assert len(keys) == len(set(keys)) and kept
    assistant = proxy_outcomes(runs["assistant"])
    assert_counted(proxy, before, assistant, kept)
