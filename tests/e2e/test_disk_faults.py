"""The run folder under file-system faults: a file-size limit, a full disk, a read-only results/,
and the folder's own damage (a repeated line, a broken run.json), as a user meets them.

The faults are real and harmless to the machine: ``RLIMIT_FSIZE`` set in the child alone (it then
gets ``EFBIG``), and, where this process may mount, a small tmpfs over the project's ``results/``
that is filled up, grown again, or made read-only, and unmounted after the test.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from support.process import run_convy
from test_process import DEADLINE, Folder, Made, clean, planned, project

from convy.runs import Runs
from convy.storage import RunJournal


def limited(size: int):
    """A ``preexec_fn`` that caps the size of any file the child writes at ``size`` bytes."""

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a killing signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


def bounded(memory: int):
    """A ``preexec_fn`` that caps the child's address space at ``memory`` bytes: reading without
    bound ends in MemoryError, not in a machine out of memory."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return limit


def ran(made: Made, *arguments: str, size: int | None = None, memory: int | None = None) -> subprocess.CompletedProcess[str]:
    """``convy`` run to its end, its files limited to ``size`` bytes, or its memory to ``memory``, when given."""
    preexec = limited(size) if size is not None else bounded(memory) if memory is not None else None
    return run_convy(made.folder, *arguments, env=made.environment(), timeout=DEADLINE, preexec_fn=preexec)


def status(folder: Folder) -> str:
    """The run's status as every command reads it (a run marked running whose lock is free was stopped)."""
    runs, unread = Runs(folder.path.parent.parent).read()
    assert not unread, unread
    return next(run for run in runs if run.folder == folder.path).status()


def whole(folder: Folder) -> None:
    """attempts.jsonl holds whole lines only, each one attempt, none twice."""
    assert folder.data().endswith(b"\n") or not folder.data()
    assert max(folder.pairs().values(), default=1) == 1


class Mounted(msgspec.Struct, frozen=True):
    """A small tmpfs mounted over a folder for one test."""

    folder: Path

    def options(self, *options: str) -> None:
        subprocess.run(["mount", "-o", ",".join(("remount", *options)), str(self.folder)], check=True, capture_output=True)


@pytest.fixture
def made(tmp_path: Path) -> Iterator[Made]:
    """The project of test_process.py in tmp_path."""
    with project(tmp_path) as made:
        yield made


@pytest.fixture
def results(made: Made) -> Iterator[Mounted]:
    """The project's results/ on a 64 KiB tmpfs; skipped where this process may not mount one."""
    folder = made.folder / "results"
    folder.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a small tmpfs")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield Mounted(folder)
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def test_a_file_size_limit_stops_the_run_with_one_line_and_resume_finishes_it(made: Made) -> None:
    """A file-size limit reached mid-run: exit 1, one line naming the file and the way on, only whole lines kept, resume plays the rest once."""
    stopped = ran(made, "run", "slow", "-k", "20", size=20_000)
    folder = made.run()
    run = folder.path.name

    assert stopped.returncode == 1, stopped.stderr
    assert stopped.stderr.splitlines() == [
        f"convy: results/slow/{run}/attempts.jsonl: cannot be written: File too large; run {run} stopped "
        f"and keeps {len(folder.outcomes())} of 100 attempts; once there is room: convy resume {run}"
    ]
    whole(folder)
    assert 0 < len(folder.outcomes()) < 100
    assert status(folder) == "interrupted"

    resumed = ran(made, "resume", run)
    assert resumed.returncode == 0, resumed.stderr
    clean(resumed.stderr)
    assert folder.pairs() == planned(5, 20)
    assert folder.status() == "finished"


def test_a_limit_that_leaves_no_room_for_run_json_exits_2_and_plays_nothing(made: Made) -> None:
    """When not even run.json can be written, the run exits 2 with one line, sends nothing and leaves no folder behind."""
    stopped = ran(made, "run", "slow", "-k", "2", size=100)

    assert stopped.returncode == 2, stopped.stderr
    lines = stopped.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("convy: ") and lines[0].endswith(
        "/run.json: cannot be written: File too large; nothing was played"
    ), lines
    assert "✓" not in stopped.stdout
    assert not list((made.folder / "results").glob("*/*"))


def test_a_full_disk_stops_the_run_keeps_what_it_had_and_resume_finishes_once_there_is_room(
    made: Made, results: Mounted
) -> None:
    """A full disk mid-run: exit 1 and one line; whole lines only; report exits 2 in one line; with room again resume plays the rest once."""
    stopped = ran(made, "run", "slow", "-k", "20")
    folder = made.run()
    run = folder.path.name

    assert stopped.returncode == 1, stopped.stderr
    assert stopped.stderr.splitlines() == [
        f"convy: results/slow/{run}/attempts.jsonl: cannot be written: No space left on device; run {run} "
        f"stopped and keeps {len(folder.outcomes())} of 100 attempts; once there is room: convy resume {run}"
    ]
    whole(folder)
    assert 0 < len(folder.outcomes()) < 100
    assert status(folder) == "interrupted"
    assert not list(folder.path.glob("*.tmp")), "no half-written file is left taking space"

    reported = ran(made, "report")
    assert reported.returncode == 2, reported.stderr
    assert reported.stderr.splitlines() == [f"convy: results/slow/{run}/report.html: cannot be written: No space left on device"]

    results.options("size=16m")
    resumed = ran(made, "resume", run)
    assert resumed.returncode == 0, resumed.stderr
    clean(resumed.stderr)
    assert folder.pairs() == planned(5, 20)
    assert folder.status() == "finished"


def test_a_read_only_results_folder_exits_2_in_one_line_for_every_command(made: Made, results: Mounted) -> None:
    """With results/ read-only, run, resume, report and export each exit 2 with one line naming the file, and read what is there."""
    results.options("size=16m")
    first = ran(made, "run", "slow", "-k", "1")
    assert first.returncode == 0, first.stderr
    folder = made.run()
    results.options("ro")

    for arguments in (("run", "slow", "-k", "1"), ("resume", folder.path.name), ("report",), ("export",)):
        refused = ran(made, *arguments)
        assert refused.returncode == 2, (arguments, refused.stderr)
        lines = refused.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("convy: "), (arguments, lines)
        assert lines[0].endswith(("Read-only file system", "Read-only file system; nothing was played")), (arguments, lines)
        clean(refused.stderr)
    assert folder.pairs() == planned(5, 1)


def test_a_repeated_line_counts_once(made: Made) -> None:
    """A valid line found twice in attempts.jsonl is one attempt, and the copy is counted as left out."""
    assert ran(made, "run", "slow", "-k", "2").returncode == 0
    folder = made.run()
    with (folder.path / "attempts.jsonl").open("ab") as attempts:
        attempts.write(folder.data().splitlines(keepends=True)[0])

    kept = RunJournal(folder.path).kept()
    resumed = ran(made, "resume", folder.path.name)

    assert (len(kept.outcomes), kept.broken) == (10, 1)
    assert resumed.returncode == 0, resumed.stderr
    assert "of 10 attempts" in resumed.stdout, resumed.stdout


def test_report_and_resume_do_not_wait_on_fifos_in_place_of_the_lock_and_run_json_tmp(made: Made) -> None:
    """FIFOs named run.lock and run.json.tmp: `convy report` and `convy resume` neither wait for a writer nor write through them."""
    assert ran(made, "run", "slow", "-k", "1").returncode == 0
    folder = made.run()
    (folder.path / "run.lock").unlink()
    for name in ("run.lock", "run.json.tmp"):
        os.mkfifo(folder.path / name)

    reported = ran(made, "report")
    resumed = ran(made, "resume", folder.path.name)

    assert reported.returncode == 0, reported.stderr
    assert reported.stderr == ""
    assert resumed.returncode == 0, resumed.stderr
    clean(resumed.stderr)
    assert (folder.path / "report.html").is_file() and folder.status() == "finished"


def test_pages_and_tables_are_never_written_through_what_stands_at_their_temporary_names(made: Made, tmp_path: Path) -> None:
    """FIFOs at report.html.tmp, summary.json and its .tmp, links at index.html.tmp and turns.csv.tmp: report and export neither wait nor write through them."""
    assert ran(made, "run", "slow", "-k", "1").returncode == 0
    folder = made.run()
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me", encoding="utf-8")
    os.mkfifo(folder.path / "report.html.tmp")
    (folder.path / "summary.json").unlink()
    os.mkfifo(folder.path / "summary.json")
    os.mkfifo(folder.path / "summary.json.tmp")
    results = folder.path.parent.parent
    (results / "index.html.tmp").symlink_to(outside)
    (results / "export").mkdir(exist_ok=True)
    (results / "export" / "turns.csv.tmp").symlink_to(outside)

    reported = ran(made, "report")
    exported = ran(made, "export")

    assert (reported.returncode, reported.stderr) == (0, ""), reported.stderr
    assert (exported.returncode, exported.stderr) == (0, ""), exported.stderr
    assert outside.read_text(encoding="utf-8") == "keep me"
    assert (folder.path / "report.html").is_file() and (results / "index.html").is_file()
    assert (results / "export" / "turns.csv").is_file()
    assert not list(folder.path.glob("report.html.*.tmp")), "no temporary file of convy's is left"


def test_report_writes_no_lock_file_in_the_folders_it_reads(made: Made) -> None:
    """``convy report`` reads a run folder without creating run.lock there."""
    assert ran(made, "run", "slow", "-k", "1").returncode == 0
    folder = made.run()
    (folder.path / "run.lock").unlink()

    reported = ran(made, "report")

    assert reported.returncode == 0, reported.stderr
    assert not (folder.path / "run.lock").exists()


def test_a_damaged_run_json_leaves_the_attempts_readable_by_report_and_export(made: Made) -> None:
    """With run.json cut short, report and export still read every attempt and say how to recover; resume exits 2 saying the same."""
    assert ran(made, "run", "slow", "-k", "2").returncode == 0
    folder = made.run()
    (folder.path / "run.json").write_bytes((folder.path / "run.json").read_bytes()[:30])
    (folder.path / "report.html").unlink()
    note = (
        f"read results/slow/{folder.path.name}: run.json is damaged; its 10 attempts are read from "
        "attempts.jsonl alone (planned scenarios and settings unknown); restore run.json from a copy to resume it"
    )

    reported = ran(made, "report")
    exported = ran(made, "export", "--format", "jsonl")
    resumed = ran(made, "resume", folder.path.name)

    assert reported.returncode == 0, reported.stderr
    assert reported.stderr.splitlines() == [note]
    assert (folder.path / "report.html").is_file()
    assert exported.returncode == 0, exported.stderr
    assert exported.stderr.splitlines() == [note]
    assert len((made.folder / "results" / "export" / "attempts.jsonl").read_text().splitlines()) == 10
    assert resumed.returncode == 2
    assert "run.json: cannot be read" in resumed.stderr and "convy report and convy export" in resumed.stderr
    assert folder.pairs() == planned(5, 2)


def edited(folder: Folder, change) -> None:
    """run.json rewritten with ``change`` applied to its decoded data."""
    data = msgspec.json.decode((folder.path / "run.json").read_bytes())
    change(data)
    (folder.path / "run.json").write_bytes(msgspec.json.encode(data))


def refused_in_one_line(done: subprocess.CompletedProcess[str], expected: str) -> None:
    """Exit 2, and stderr the one line ``convy: <expected>``, with no traceback."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [f"convy: {expected}"], done.stderr
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("id", "../../../tmp/evilrun", "spec.id: not a folder's name"),
        ("id", "20200101-000000-beef", "spec.id: must be the name of the run's folder, {name}"),
        ("agent", "../../../tmp", "spec.agent: not a folder's name"),
        ("agent", "other", "spec.agent: must be the name of the folder the run is in, slow"),
    ],
)
def test_resume_refuses_a_run_json_whose_id_or_agent_is_not_its_folder(made: Made, field: str, value: str, said: str) -> None:
    """A run.json whose spec.id or spec.agent would put the resumed run in another folder (outside the project, even) exits 2 in one line naming run.json and the field; nothing is written anywhere."""
    assert ran(made, "run", "slow", "-k", "1").returncode == 0
    folder = made.run()
    name = folder.path.name
    edited(folder, lambda data: data["spec"].__setitem__(field, value))
    before = {path: path.stat().st_mtime_ns for path in made.folder.rglob("*")}

    resumed = ran(made, "resume", name)

    tail = (
        "; restore run.json from a copy to resume the run"
        if "folder the run is in" in said
        else "; its attempts can still be read by convy report and convy export; restore run.json from a copy to resume the run"
    )
    refused_in_one_line(resumed, f"{folder.path}/run.json: {said.format(name=name)}{tail}")
    assert {path: path.stat().st_mtime_ns for path in made.folder.rglob("*")} == before
    assert not (made.folder.parent / "tmp").exists()


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("attempts", 10**9, "spec.attempts: must be at most 10,000"),
        ("attempts", 10**400, "spec.attempts: must be at most 10,000"),
        ("limits.agent_places", 10**9, "spec.limits.agent_places: must be at most 100,000"),
        ("limits.turn_seconds", 1e308, "spec.limits.turn_seconds: must be at most 1,000,000"),
    ],
)
def test_resume_refuses_a_run_json_past_the_bounds_of_tool_convy(made: Made, field: str, value: object, said: str) -> None:
    """A run.json holding a number past the bound [tool.convy] has exits 2 in one line naming run.json and the field, before anything is played or allocated."""
    assert ran(made, "run", "slow", "-k", "1").returncode == 0
    folder = made.run()

    def change(data: dict) -> None:
        place = data["spec"]
        *above, last = field.split(".")
        for part in above:
            place = place[part]
        place[last] = value

    edited(folder, change)

    resumed = ran(made, "resume", folder.path.name, memory=2 * 1024**3)

    refused_in_one_line(
        resumed,
        f"{folder.path}/run.json: {said}; its attempts can still be read by convy report and convy export; "
        "restore run.json from a copy to resume the run",
    )
    assert folder.pairs() == planned(5, 1)


def test_lines_of_another_plan_or_unreadable_are_skipped_and_said_by_report_export_and_resume(made: Made) -> None:
    """attempts.jsonl lines of a scenario the run does not play, of an attempt past its number, or of bytes that are no JSON are left out of every count, and report, export and resume each say how many."""
    assert ran(made, "run", "slow", "-k", "2").returncode == 0
    folder = made.run()
    lines = folder.data().splitlines(keepends=True)
    nope = msgspec.json.decode(lines[0])
    nope["scenario"] = "nope"
    late = msgspec.json.decode(lines[1])
    late["attempt"] = 999
    with (folder.path / "attempts.jsonl").open("ab") as attempts:
        attempts.write(msgspec.json.encode(nope) + b"\n" + msgspec.json.encode(late) + b"\n\xff\xfe\x00junk\n")
    note = (
        f"read results/slow/{folder.path.name}: 3 lines of attempts.jsonl skipped: 1 could not be read, "
        "2 held an attempt the run did not plan"
    )

    reported = ran(made, "report")
    exported = ran(made, "export", "--format", "jsonl")
    resumed = ran(made, "resume", folder.path.name)

    assert reported.returncode == 0, reported.stderr
    assert reported.stderr.splitlines() == [note]
    assert exported.returncode == 0, exported.stderr
    assert exported.stderr.splitlines() == [note]
    (run,) = [msgspec.json.decode(line) for line in (made.folder / "results" / "export" / "runs.jsonl").read_bytes().splitlines()]
    assert len((made.folder / "results" / "export" / "attempts.jsonl").read_bytes().splitlines()) == 10
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.splitlines() == [note]
    assert "of 10 attempts" in resumed.stdout, resumed.stdout
    assert run["broken"] == 3, run


@pytest.mark.parametrize("kind", ["a folder", "/dev/zero", "a FIFO"])
@pytest.mark.parametrize("name", ["attempts.jsonl", "run.json"])
def test_a_run_file_that_is_not_a_regular_file_is_refused_in_one_line(made: Made, name: str, kind: str) -> None:
    """attempts.jsonl or run.json as a folder, a link to /dev/zero or a FIFO: report and export go on without that run (or with its attempts alone), resume exits 2 naming the file, and none reads without bound or waits."""
    assert ran(made, "run", "slow", "-k", "1").returncode == 0
    folder = made.run()
    path = folder.path / name
    path.unlink()
    match kind:
        case "a folder":
            path.mkdir()
            reason = "Is a directory"
        case "/dev/zero":
            path.symlink_to("/dev/zero")
            reason = "not a regular file"
        case _:
            os.mkfifo(path)
            reason = "not a regular file"
    run = f"results/slow/{folder.path.name}"
    if name == "attempts.jsonl":
        said = f"{folder.path}/attempts.jsonl: cannot be read: {reason}"
        note = f"skipped {run}: {said}"
    else:
        said = (
            f"{folder.path}/run.json: cannot be read: {reason}; its attempts can still be read by convy report "
            "and convy export; restore run.json from a copy to resume the run"
        )
        note = (
            f"read {run}: run.json is damaged; its 5 attempts are read from attempts.jsonl alone (planned "
            "scenarios and settings unknown); restore run.json from a copy to resume it"
        )

    reported = ran(made, "report", memory=2 * 1024**3)
    exported = ran(made, "export", memory=2 * 1024**3)
    resumed = ran(made, "resume", folder.path.name, memory=2 * 1024**3)

    for done in (reported, exported):
        assert done.returncode == 0, done.stderr
        assert done.stderr.splitlines() == [note]
    refused_in_one_line(resumed, said)



def test_play_reads_the_folder_again_when_what_it_was_given_is_no_longer_the_file(tmp_path: Path) -> None:
    """What a caller read of a run (``Kept``) is what play goes on from only while attempts.jsonl
    is seen the same under the lock: read before another process played the run, it is read
    again and nothing is played twice."""
    import asyncio

    from convy.bench import Bench
    from convy.checks import Check, Rule
    from convy.fakes import FakeAgent
    from convy.judge import Models
    from convy.records import RunSpec
    from convy.scenario import Scenario
    from convy.storage import Bounds, Kept

    agent = FakeAgent(lambda text: "hi")
    bench = Bench(agent, Models())
    chosen = Scenario(id="s", script=("hello",), judge=(Rule(check=Check(said=".")),))
    spec = RunSpec(id="one", agent="fake", scenarios=(chosen,), attempts=3, limits=bench.limits)
    journal = RunJournal(tmp_path / "results" / "fake" / "one")
    before = journal.kept(spec)
    assert before == Kept((), plan=Bounds.of(spec))  # no file yet: nothing read, held to the run's plan
    asyncio.run(journal.play(spec, bench))  # another process plays the run meanwhile
    assert agent.opened == 3

    again = asyncio.run(journal.play(spec, bench, earlier=before))

    assert agent.opened == 3
    assert sorted(outcome.attempt for outcome in again.outcomes) == [1, 2, 3]
    path = journal.folder / "attempts.jsonl"
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:2]))

    resumed = asyncio.run(journal.play(spec, bench, earlier=journal.kept(spec)))

    assert agent.opened == 4
    assert sorted(outcome.attempt for outcome in resumed.outcomes) == [1, 2, 3]
    assert resumed == journal.kept(spec)  # what the file holds now, and as it is seen now
