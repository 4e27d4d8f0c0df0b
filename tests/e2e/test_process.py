"""The real ``convy`` command, run as a user runs it: killed, interrupted, piped, run twice at once.

Each test makes a project in ``tmp_path`` and starts ``.venv/bin/convy`` as a subprocess. The
project's agent ``slow`` pauses a little on every turn, so a run of 5 scenarios × 20 attempts
takes a couple of seconds and there is time to kill it part way. Nothing here measures time:
waits poll the run folder with a generous deadline and only fail when it passes.
"""

from __future__ import annotations

import fcntl
import os
import random
import select
import shutil
import signal
import struct
import subprocess
import termios
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec
import pytest
from support.process import CONVY, environment, run_convy, start_convy
from support.waiting import wait_until

from convy.outcome import Outcome

DEADLINE = 300.0  # seconds a wait may take before the test gives up: a hang guard, far more than any run needs under load

HELD_REPORT = '''

import os as _os
import sys as _sys
import time as _time


def _held_report(event, arguments):
    if event == "open" and "report.html." in str(arguments[0]) and str(arguments[0]).endswith(".tmp"):
        open({writing!r}, "w").close()
        while _os.path.exists({held!r}):
            _time.sleep(0.01)


_sys.addaudithook(_held_report)
'''

SLOW_AGENT = '''\
"""An agent that answers like FakeAgent after a short pause, and waits while the file ``hold`` exists."""

import asyncio
import random
from contextlib import asynccontextmanager
from pathlib import Path

from convy.fakes import FakeAgent

HOLD = Path(__file__).resolve().parent.parent / "hold"


class Paused:
    def __init__(self, origin):
        self._origin = origin

    async def turn(self, message):
        await asyncio.sleep(random.uniform(0.01, 0.05))
        while HOLD.exists():
            await asyncio.sleep(0.01)
        return await self._origin.turn(message)


class Slow(FakeAgent):
    @asynccontextmanager
    async def conversation(self):
        async with super().conversation() as conversation:
            yield Paused(conversation)


def answered(text):
    if "boom" in text:
        raise RuntimeError("the agent broke on purpose")
    return f"you said: {text}"


agent = Slow(answered)
'''

SCENARIO = """\
script:
  - hello {number}
  - how are you {number}
judge:
  - check:
      said: "{said}"
"""


class Folder(msgspec.Struct, frozen=True):
    """A run's folder as the tests read it: its lines, attempts and status."""

    path: Path

    def data(self) -> bytes:
        try:
            return (self.path / "attempts.jsonl").read_bytes()
        except FileNotFoundError:
            return b""

    def lines(self) -> int:
        return self.data().count(b"\n")

    def outcomes(self) -> list[Outcome]:
        """Every line, each of which must be a whole attempt, newline included."""
        data = self.data()
        assert data.endswith(b"\n"), "attempts.jsonl ends with a torn line"
        return [msgspec.json.decode(line, type=Outcome) for line in data.splitlines()]

    def pairs(self) -> Counter[tuple[str, int]]:
        return Counter((outcome.scenario, outcome.attempt) for outcome in self.outcomes())

    def status(self) -> str:
        return msgspec.json.decode((self.path / "run.json").read_bytes())["status"]["type"]


class Made(msgspec.Struct, frozen=True):
    """A project on disk, how to run ``convy`` in it, and the processes started there."""

    folder: Path
    processes: list[subprocess.Popen] = msgspec.field(default_factory=list)

    def scenarios(self, said: tuple[str, ...]) -> None:
        """Fully scripted scenarios s1, s2, ... in place of the project's, each checking its pattern of ``said``."""
        for old in (self.folder / "scenarios").glob("*.yaml"):
            old.unlink()
        for number, pattern in enumerate(said, start=1):
            text = SCENARIO.format(number=number, said=pattern.format(number=number))
            (self.folder / "scenarios" / f"s{number}.yaml").write_text(text)

    def environment(self) -> dict[str, str]:
        # The user's CONVY_* settings must not change the project's own.
        return environment()

    def started(self, *arguments: str, name: str, **options) -> tuple[subprocess.Popen, Path, Path]:
        """``convy`` started with its output going to files named after ``name``."""
        out, err = self.folder / f"{name}.out", self.folder / f"{name}.err"
        with out.open("wb") as shown, err.open("wb") as errors:
            process = start_convy(
                self.folder, *arguments, env=self.environment(), stdout=options.pop("stdout", shown), stderr=errors, **options
            )
        self.processes.append(process)
        return process, out, err

    def ran(self, *arguments: str, **environ: str) -> subprocess.CompletedProcess[str]:
        """``convy`` run to its end, with ``environ`` set too."""
        return run_convy(self.folder, *arguments, env={**self.environment(), **environ}, timeout=DEADLINE)

    def run(self, process: subprocess.Popen | None = None) -> Folder:
        """The folder of the project's only run, once its run.json is written (by ``process``, if given)."""
        found = wait_until(
            lambda: list((self.folder / "results").glob("*/*/run.json")), "a run folder with run.json", process=process
        )
        assert found, f"convy ended ({process and process.returncode}) before it wrote run.json"
        assert len(found) == 1
        return Folder(found[0].parent)


@contextmanager
def project(folder: Path) -> Iterator[Made]:
    """A project in ``folder``: the slow agent, five scenarios that pass, attempts = 2, agent_places = 4."""
    (folder / "agents").mkdir()
    (folder / "scenarios").mkdir()
    (folder / "agents" / "slow.py").write_text(SLOW_AGENT)
    (folder / "pyproject.toml").write_text("[tool.convy]\nattempts = 2\nagent_places = 4\n")
    made = Made(folder)
    made.scenarios(("hello {number}",) * 5)
    try:
        yield made
    finally:
        for process in made.processes:  # a failed test leaves no convy behind
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.fixture
def made(tmp_path: Path) -> Iterator[Made]:
    """A project in tmp_path (see ``project``)."""
    with project(tmp_path) as made:
        yield made


def planned(scenarios: int, attempts: int) -> Counter[tuple[str, int]]:
    """Each (scenario, attempt) pair of a run of the project, once."""
    return Counter((f"s{number}", attempt) for number in range(1, scenarios + 1) for attempt in range(1, attempts + 1))


def clean(errors: str) -> None:
    """Standard error shows no traceback and no exception's name."""
    assert "Traceback" not in errors, errors
    assert "Error" not in errors, errors


def killed(process: subprocess.Popen, folder: Folder, target: int, jitter: float) -> str:
    """SIGKILL ``process`` once ``target`` attempts are kept (and ``jitter`` s more): what happened, said."""
    wait_until(lambda: folder.lines() >= target, f"{target} attempts", process=process)
    time.sleep(jitter)  # lands the kill anywhere within an attempt, mid-write included
    process.send_signal(signal.SIGKILL)  # does nothing when the process has already ended
    code = process.wait(timeout=DEADLINE)
    if code != -signal.SIGKILL:
        assert code == 0, f"convy ended with {code} before it was killed"
        return f"ended by itself before the kill at {target}"
    return f"killed at {folder.lines()} kept (target {target}, +{jitter * 1000:.0f} ms)"


SEEDS = (11, 29, 3, 5, 7, 13, 17, 19, 23, 31)  # the first three in CI, all ten with --full
KILLS = 10  # per seed: one during the run, the rest during resumes; 30 in CI, 100 with --full


@pytest.mark.parametrize("seed", SEEDS)
def test_kill_9_at_seeded_moments_then_resume_keeps_every_attempt_exactly_once(made: Made, seed: int, full: bool) -> None:
    """However often run and resume are SIGKILLed, and wherever (starting, mid-append, rewriting run.json), the last resume keeps each planned attempt exactly once."""
    if seed not in SEEDS[:3] and not full:
        pytest.skip("a full-size seed: run with --full")
    chance = random.Random(seed)
    process, _, _ = made.started("run", "slow", "-k", "20", name="run")
    folder = made.run(process)
    said: list[str] = []
    for turn in range(KILLS):
        if turn:
            process, _, _ = made.started("resume", folder.path.name, name=f"resume{turn}")
        # 0 more attempts lands the kill while the process starts, repairs the file or rewrites run.json
        more = chance.randint(0, (100 - folder.lines()) // (KILLS + 1))
        said.append(killed(process, folder, folder.lines() + more, chance.uniform(0.0, 0.03)))
        assert folder.status() in ("running", "interrupted"), said
    finished = made.ran("resume", folder.path.name)
    print(f"seed {seed}: " + "; ".join(said))
    assert sum(one.startswith("killed") for one in said) == KILLS, said
    assert finished.returncode == 0, finished.stderr
    clean(finished.stderr)
    assert folder.pairs() == planned(5, 20)
    assert folder.status() == "finished"
    again = made.ran("resume", folder.path.name[-6:])  # a unique part of the id will do
    assert again.returncode == 0, again.stderr
    assert "✓" not in again.stdout, "a finished run plays nothing again"
    assert folder.pairs() == planned(5, 20)


def test_resume_cuts_a_torn_last_line_and_plays_that_attempt_again(made: Made) -> None:
    """A half-written last line (a kill mid-append) is cut off by resume, and that attempt is played once more."""
    first = made.ran("run", "slow", "-k", "2")
    assert first.returncode == 0, first.stderr
    folder = made.run()
    lines = folder.data().splitlines(keepends=True)
    torn = msgspec.json.decode(lines[-1], type=Outcome)
    (folder.path / "attempts.jsonl").write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])

    resumed = made.ran("resume", folder.path.name)

    assert resumed.returncode == 0, resumed.stderr
    clean(resumed.stderr)
    played = [line for line in resumed.stdout.splitlines() if line.startswith("✓")]
    assert len(played) == 1 and played[0].startswith(f"✓ {torn.scenario} #{torn.attempt} "), resumed.stdout
    assert folder.pairs() == planned(5, 2)
    assert folder.outcomes()[-1].started != torn.started
    assert folder.status() == "finished"


def test_ctrl_c_exits_130_says_how_to_resume_and_resume_finishes(made: Made) -> None:
    """SIGINT stops the run with code 130, status interrupted and a resume hint; resume then plays the rest once."""
    process, _, err = made.started(
        "run", "slow", "-k", "20", name="run",
        # a shell without job control may have left SIGINT ignored; a user's terminal never does
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    folder = made.run(process)
    wait_until(lambda: folder.lines() >= 5, "5 attempts", process=process)
    process.send_signal(signal.SIGINT)
    code = process.wait(timeout=DEADLINE)
    errors = err.read_text()

    assert code == 130, errors
    clean(errors)
    assert f"convy resume {folder.path.name}" in errors
    assert f"keeps {len(folder.outcomes())} of 100 attempts" in errors
    assert folder.status() == "interrupted"
    assert max(folder.pairs().values()) == 1
    resumed = made.ran("resume", folder.path.name)
    assert resumed.returncode == 0, resumed.stderr
    assert folder.pairs() == planned(5, 20)
    assert folder.status() == "finished"


def test_resume_of_a_run_another_process_plays_exits_2_in_use(made: Made) -> None:
    """While one convy plays a run, ``convy resume`` of it exits 2 saying the run is in use, and changes nothing."""
    hold = made.folder / "hold"
    hold.write_text("the agent waits while this file exists\n")
    try:
        process, _, err = made.started("run", "slow", "-k", "2", name="run")
        folder = made.run(process)
        assert folder.status() == "running"

        second = made.ran("resume", folder.path.name)
    finally:
        hold.unlink()
    assert second.returncode == 2, second.stderr
    assert f"run {folder.path.name} is in use by another convy process" in second.stderr
    clean(second.stderr)
    assert process.wait(timeout=DEADLINE) == 0, err.read_text()
    assert folder.pairs() == planned(5, 2)
    assert folder.status() == "finished"


def test_resume_while_the_run_lock_is_held_exits_2_and_works_once_it_is_free(made: Made) -> None:
    """A held run.lock makes resume exit 2 with an in-use message; once released, resume succeeds."""
    process, _, _ = made.started("run", "slow", "-k", "20", name="run")
    folder = made.run(process)
    killed(process, folder, 3, 0.0)
    descriptor = os.open(folder.path / "run.lock", os.O_RDWR)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        refused = made.ran("resume", folder.path.name)
    finally:
        os.close(descriptor)
    assert refused.returncode == 2, refused.stderr
    assert "in use" in refused.stderr
    clean(refused.stderr)
    assert refused.stdout.count("✓") == 0

    resumed = made.ran("resume", folder.path.name)
    assert resumed.returncode == 0, resumed.stderr
    assert folder.pairs() == planned(5, 20)


def test_closing_the_pipe_after_two_lines_does_not_stop_the_run(made: Made) -> None:
    """When the reader of stdout goes away (``| head -n 2``) the run still plays to its end and exits 0, quietly."""
    process, _, err = made.started("run", "slow", "-k", "20", name="run", stdout=subprocess.PIPE)
    assert process.stdout is not None
    first = [process.stdout.readline(), process.stdout.readline()]
    process.stdout.close()
    code = process.wait(timeout=DEADLINE)
    folder = made.run(process)

    assert first[0].startswith(b"slow: 5 scenarios"), first
    assert code == 0, err.read_text()
    clean(err.read_text())
    assert "BrokenPipe" not in err.read_text()
    assert folder.pairs() == planned(5, 20)
    assert folder.status() == "finished"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_piping_into_head_in_a_shell_keeps_the_exit_code(made: Made) -> None:
    """``convy run | head -n 2`` in bash: convy itself exits 0 and says nothing on stderr."""
    shell = subprocess.run(
        ["bash", "-c", f'"{CONVY}" run slow -k 4 2>run.err | head -n 2; exit "${{PIPESTATUS[0]}}"'],
        cwd=made.folder,
        env=made.environment(),
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert shell.returncode == 0, (made.folder / "run.err").read_text()
    assert len(shell.stdout.splitlines()) == 2
    assert (made.folder / "run.err").read_text() == ""
    assert made.run().pairs() == planned(5, 4)


def test_an_agent_that_raises_makes_the_exit_code_1(made: Made) -> None:
    """An attempt failed by the agent (it raised) gives exit code 1, and the run is still finished."""
    (made.folder / "scenarios" / "s2.yaml").write_text("script:\n  - boom\njudge:\n  - check:\n      said: x\n")
    ran = made.ran("run", "slow", "-k", "1")
    assert ran.returncode == 1, ran.stderr
    clean(ran.stderr)
    assert "agent failed" in ran.stdout
    assert made.run().status() == "finished"


@pytest.mark.parametrize(("fail_under", "code"), [(None, 3), ("0.99", 3), ("0.1", 0), ("60%", 3)])
def test_fail_under_decides_between_exit_0_and_3(made: Made, fail_under: str | None, code: int) -> None:
    """With claims failing but no agent failure, the pass rate (here 50%) against --fail-under gives 0 or 3;
    with none, the failing scenario fails the run (3): every judged attempt must pass."""
    made.scenarios(("hello {number}", "never said"))
    ran = made.ran("run", "slow", "-k", "2", *(("--fail-under", fail_under) if fail_under else ()))
    assert ran.returncode == code, ran.stdout + ran.stderr
    clean(ran.stderr)
    assert "pass rate 50.0%" in ran.stdout


def test_an_unknown_agent_exits_2_naming_it(made: Made) -> None:
    """Naming an agent the project lacks is a configuration error: exit 2, a one-line message, no run folder."""
    ran = made.ran("run", "nope")
    assert ran.returncode == 2
    assert ran.stderr.strip() == "convy: agents/nope.py: no such agent; the project has slow"
    assert not (made.folder / "results").exists()


COUNTED = """
import atexit
import os
import sys

opened = []  # why attempts.jsonl was opened for reading, each time: the convy function that did


def counted(event, arguments):
    if event == "open" and str(arguments[0]).endswith("attempts.jsonl"):
        flags = arguments[2] if isinstance(arguments[2], int) else 0
        if flags & os.O_ACCMODE == os.O_RDONLY:
            frame, names = sys._getframe(1), []
            while frame is not None:
                names.append(frame.f_code.co_name)
                frame = frame.f_back
            opened.append(next(name for name in names if name in ("kept", "_repaired", "unsaid", "_digest", "said", "within", "play")))


atexit.register(lambda: open(os.environ["OPENED"], "w").write(" ".join(opened)))
sys.addaudithook(counted)
"""


def test_resume_reads_the_attempts_once_and_plays_what_they_lack(made: Made) -> None:
    """``convy resume`` reads attempts.jsonl's lines once before it loads the agent, keeping only
    where each begins (``unsaid``), held to the run's plan as they are read, and passes them on
    to the play, which walks them again from there, one at a time, only to find what they lack
    (``play``: ``Kept.within`` knows they were held to that plan already); the other opens are the repair's look at the file's last bytes and, once the play
    is over, the end's: one that finds where each line begins (``unsaid``), one that walks them
    into the summary's digest, without the dialogues' words, and one more for the report, which
    reads each dialogue again at its line (neither the play nor the end holds an attempt kept,
    only where each begins, so a resumed run's memory grows little with its attempts)."""
    first = made.ran("run", "slow", "-k", "4")
    assert first.returncode == 0, first.stderr
    folder = made.run()
    lines = folder.data().splitlines(keepends=True)
    (folder.path / "attempts.jsonl").write_bytes(b"".join(lines[:-3]))
    (made.folder / "hooked").mkdir()
    (made.folder / "hooked" / "sitecustomize.py").write_text(COUNTED)  # loaded as the process starts
    opened = made.folder / "opened"

    # beside any PYTHONPATH the tests were given: the convy under test, not the one installed
    hooked = os.pathsep.join(filter(None, (str(made.folder / "hooked"), os.environ.get("PYTHONPATH"))))
    resumed = made.ran("resume", folder.path.name, PYTHONPATH=hooked, OPENED=str(opened))

    assert resumed.returncode == 0, resumed.stderr
    clean(resumed.stderr)
    assert opened.read_text().split() == ["unsaid", "_repaired", "play", "unsaid", "_digest", "said"]
    assert len([line for line in resumed.stdout.splitlines() if line.startswith("✓")]) == 3, resumed.stdout
    assert folder.pairs() == planned(5, 4)


def test_resume_refuses_when_the_agent_file_changed(made: Made) -> None:
    """``convy resume`` exits 2, naming agents/slow.py, when that file changed after the run started."""
    process, _, _ = made.started("run", "slow", "-k", "20", name="run")
    folder = made.run(process)
    killed(process, folder, 3, 0.0)
    kept = folder.data()
    with (made.folder / "agents" / "slow.py").open("a") as agent:
        agent.write("# changed after the run started\n")

    refused = made.ran("resume", folder.path.name)

    assert refused.returncode == 2, refused.stderr
    assert "agents/slow.py changed since the run started" in refused.stderr
    clean(refused.stderr)
    assert folder.data() == kept


def interruptible() -> None:
    """A child's SIGINT as a user's terminal gives it (a shell without job control may have left it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Pipe(msgspec.Struct, frozen=True):
    """A real pipe of one page (4096 bytes), whose read end the test holds and reads only when it says."""

    read: int
    write: int

    @classmethod
    def small(cls) -> Pipe:
        read, write = os.pipe()
        fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, 4096)
        return cls(read, write)

    def waiting(self) -> int:
        """Bytes written into the pipe and not read."""
        return struct.unpack("i", fcntl.ioctl(self.read, termios.FIONREAD, b"\0\0\0\0"))[0]

    def full(self) -> bool:
        """Whether a write now would wait for the reader."""
        return not select.select([], [self.write], [], 0)[1]


def test_sigterm_stops_the_run_like_ctrl_c_with_code_143_and_resume_finishes(made: Made) -> None:
    """SIGTERM stops the run with code 143, status interrupted and a resume hint; resume then plays the rest once."""
    process, _, err = made.started("run", "slow", "-k", "20", name="run")
    folder = made.run(process)
    wait_until(lambda: folder.lines() >= 5, "5 attempts", process=process)
    process.send_signal(signal.SIGTERM)
    code = process.wait(timeout=DEADLINE)
    errors = err.read_text()

    assert code == 143, errors
    clean(errors)
    assert f"terminated: run {folder.path.name} keeps {len(folder.outcomes())} of 100 attempts" in errors
    assert f"resume with: convy resume {folder.path.name}" in errors
    assert folder.status() == "interrupted"
    resumed = made.ran("resume", folder.path.name)
    assert resumed.returncode == 0, resumed.stderr
    assert folder.pairs() == planned(5, 20)
    assert folder.status() == "finished"


def test_a_stdout_pipe_nobody_reads_does_not_hold_up_the_run(made: Made) -> None:
    """With stdout a full pipe nobody reads, the run plays to its end (run.json says finished); once the reader goes, convy exits 0 quietly."""
    pipe = Pipe.small()
    process, _, err = made.started("run", "slow", "-k", "40", name="run", stdout=pipe.write)
    folder = made.run(process)

    wait_until(lambda: folder.status() == "finished", "run.json to say finished", process=process)
    assert folder.pairs() == planned(5, 40)
    assert pipe.full(), "the test meant stdout to be full"
    os.close(pipe.read)
    assert process.wait(timeout=DEADLINE) == 0, err.read_text()
    os.close(pipe.write)
    clean(err.read_text())


def test_two_ctrl_c_while_stdout_is_blocked_exit_130_with_the_resume_hint_and_no_traceback(made: Made) -> None:
    """With stdout a full pipe nobody reads, a first Ctrl+C marks the run interrupted and a second ends convy: 130, the hint, no traceback."""
    pipe = Pipe.small()
    process, _, err = made.started("run", "slow", "-k", "40", name="run", stdout=pipe.write, preexec_fn=interruptible)
    folder = made.run(process)
    # 100 lines of progress (4.5 KB) are more than the pipe holds
    wait_until(lambda: folder.lines() >= 100 and pipe.full(), "stdout's pipe to fill up", process=process)

    process.send_signal(signal.SIGINT)
    wait_until(lambda: "resume with" in err.read_text(), "the resume hint", process=process)
    process.send_signal(signal.SIGINT)
    code = process.wait(timeout=DEADLINE)
    os.close(pipe.read)
    os.close(pipe.write)
    errors = err.read_text()

    assert code == 130, errors
    clean(errors)
    assert f"resume with: convy resume {folder.path.name}" in errors
    assert len(errors.splitlines()) <= 3, errors
    assert folder.status() == "interrupted"
    assert max(folder.pairs().values()) == 1


def test_ctrl_c_while_the_report_is_written_says_the_run_is_finished_and_how_to_write_the_report(made: Made) -> None:
    """Ctrl+C after the last attempt, while report.html is written: 130, and one line saying the run is finished and how to write its report."""
    hold = made.folder / "hold"
    hold.write_text("the agent waits while this file exists\n")
    writing, held = made.folder / "writing", made.folder / "hold-report"
    held.write_text("the report waits while this file exists\n")
    with (made.folder / "agents" / "slow.py").open("a") as agent:
        # The report is written into report.html.tmp, a file convy makes itself: the agent's
        # module, loaded into convy, holds the write there (an audit hook on its opening) until
        # the test has pressed Ctrl+C.
        agent.write(HELD_REPORT.format(writing=str(writing), held=str(held)))
    process, _, err = made.started("run", "slow", "-k", "2", name="run", preexec_fn=interruptible)
    folder = made.run(process)
    hold.unlink()
    try:
        wait_until(writing.exists, "the report to be written", process=process)
        process.send_signal(signal.SIGINT)
    finally:
        held.unlink()
    code = process.wait(timeout=DEADLINE)
    run = folder.path.name

    assert code == 130, err.read_text()
    assert err.read_text().splitlines() == [
        f"interrupted while writing the report: run {run} is finished and kept; write its report with: convy report {run}"
    ]
    assert folder.status() == "finished"
    assert folder.pairs() == planned(5, 2)


def test_progress_the_reader_cannot_take_is_left_out_and_counted_and_the_last_line_still_comes() -> None:
    """Writing to a full pipe never waits: progress lines past the limit are left out and counted, and a kept line follows them."""
    from convy.cli.console import Shown

    pipe = Pipe.small()
    out = open(pipe.write, "w", closefd=False)  # noqa: SIM115  (the descriptor is closed below)
    shown = Shown(out)
    for number in range(3000):
        shown.progress(f"line {number}")
    shown.line("the end")
    got: list[bytes] = []
    reading = threading.Thread(target=lambda: got.extend(iter(lambda: os.read(pipe.read, 65536), b"")))
    reading.start()
    shown.drained()
    os.close(pipe.write)
    reading.join(DEADLINE)
    os.close(pipe.read)
    lines = b"".join(got).decode().splitlines()

    numbers = [int(line.split()[1]) for line in lines if line.startswith("line ")]
    notes = [line for line in lines if "left out" in line]
    assert numbers == list(range(len(numbers))), "the lines shown are the first ones, in order"
    assert notes == [f"… {3000 - len(numbers)} progress lines left out: the output was not read in time"]
    assert 0 < len(numbers) < 3000
    assert lines[-1] == "the end"


def test_a_ctrl_c_the_moment_a_line_is_written_leaves_it_said_once() -> None:
    """A Ctrl+C that comes just as a line reaches the pipe is held until the line is taken off the
    queue: the KeyboardInterrupt follows, and writing on never says the line again (a run's resume
    hint was once said twice this way)."""
    from convy.cli.console import Shown

    raised: list[int] = []

    class Interrupted(Shown):
        def _write(self, descriptor: int, data: bytes) -> int:  # type: ignore[override]
            written = os.write(descriptor, data)
            if not raised:
                raised.append(1)
                signal.raise_signal(signal.SIGINT)  # Python runs its handler at the next instruction it can
            return written

    handler = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own, wherever the test runs
    read, write = os.pipe()
    try:
        out = open(write, "w", closefd=False)  # noqa: SIM115  (the descriptor is closed below)
        shown = Interrupted(out)
        with pytest.raises(KeyboardInterrupt):
            shown.line("resume with: convy resume run-1")
        shown.line("the end")
        shown.drained()
        os.close(write)
        said = b"".join(iter(lambda: os.read(read, 65536), b"")).decode().splitlines()
    finally:
        signal.signal(signal.SIGINT, handler)
        os.close(read)

    assert raised == [1]
    assert said == ["resume with: convy resume run-1", "the end"]


def test_resume_refuses_when_the_simulator_prompt_changed(made: Made) -> None:
    """``convy resume`` exits 2 in one line when the settings now give another simulator prompt
    than the run started with, and plays nothing."""
    first = made.ran("run", "slow", "-k", "2")
    assert first.returncode == 0, first.stderr
    folder = made.run()
    path = folder.path / "attempts.jsonl"
    path.write_bytes(b"".join(folder.data().splitlines(keepends=True)[:-1]))
    kept = folder.data()
    (made.folder / "prompts").mkdir()
    (made.folder / "prompts" / "user.md").write_text("You are a customer. {{ instructions }} Say {{ stop }} when done.\n")
    with (made.folder / "pyproject.toml").open("a") as settings:
        settings.write('user_prompt = "prompts/user.md"\n')

    refused = made.ran("resume", folder.path.name)

    assert (refused.returncode, refused.stderr) == (
        2,
        f"convy: cannot resume {folder.path.name}: the simulator prompt changed since the run started; start a new run\n",
    )
    assert folder.data() == kept
