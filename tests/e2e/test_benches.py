"""A small run of each benchmark added for the harness, as a smoke check: it runs to its end and
prints its table. No figure it prints is checked: they depend on the machine."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def ran(*argv: str) -> str:
    done = subprocess.run(
        [sys.executable, *argv],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_whole_process_benchmark_runs_small() -> None:
    """bench/whole.py plays, reports and runs the demo on a tiny project, this convy as its own base."""
    out = ran(
        "bench/whole.py", "--only", "run", "report", "compare", "index", "demo", "--scenarios", "2", "--attempts", "3", "--repeat", "1",
        "--base", "src",
    )  # fmt: skip
    assert "convy run: 2 scenarios x 3 attempts" in out
    assert "convy report of one run of 6 attempts" in out
    assert "convy compare of two runs of 6 attempts" in out
    assert "convy report with no run named (every run's report, and the index): base 2 runs, this 2 runs" in out
    assert "convy run of the demo project" in out
    assert out.count("this/base") == 5


def test_the_memory_benchmarks_print_each_sides_peak_and_slope() -> None:
    """bench/whole.py --slope and bench/counted.py give each side's peak at two sizes and what one
    more attempt adds to it (issue 27, item 6), this convy as its own base."""
    out = ran("bench/whole.py", "--only", "run", "--scenarios", "2", "--attempts", "3", "--slope", "1", "--repeat", "1", "--base", "src")
    assert "convy run's peak at 2 and 6 attempts, and what one more attempt adds to it" in out
    assert [line.split()[0] for line in out.splitlines()[-3:] if line.strip()] == ["base", "this"]
    out = ran("bench/counted.py", "--sizes", "20", "40", "--scenarios", "2", "--before", "src")
    rows = [line.split()[:2] for line in out.splitlines() if line.split()[:1] in (["end"], ["report"], ["listing"])]
    assert rows == [["listing", "after"], ["listing", "before"], ["report", "after"], ["report", "before"], ["end", "after"], ["end", "before"]]


def test_the_slopes_benchmark_and_whole_auto_run_small() -> None:
    """bench/slopes.py gives each case's peaks at two sizes on both sides, and bench/whole.py
    --auto plays the run as --attempts auto, this convy as its own base."""
    out = ran("bench/slopes.py", "--sizes", "2", "4", "--before", "src")
    rows = [line.split()[:3] for line in out.splitlines() if line.split()[:1] in (["rejudge"], ["resume"], ["auto"])]
    assert rows == [[case, what, side] for case in ("rejudge", "resume", "auto") for what in ("rss", "traced") for side in ("before", "this")]
    out = ran("bench/whole.py", "--only", "run", "--scenarios", "2", "--attempts", "3", "--slope", "1", "--repeat", "1", "--auto", "--base", "src")
    assert "convy run: 2 scenarios x 3 attempts x 6 turns, instant fakes, 100 places, --attempts auto (5 to the most)" in out
    assert [line.split()[0] for line in out.splitlines()[-3:] if line.strip()] == ["base", "this"]


def test_the_resume_benchmark_runs_small() -> None:
    """bench/resume.py resumes a tiny run stopped one attempt short, this convy as its own base."""
    out = ran("bench/resume.py", "--scenarios", "2", "--attempts", "3", "--missing", "1", "--repeat", "1", "--base", "src")
    assert "convy resume of a run of 6 attempts that keeps 5 (plays 1, then the report and the index)" in out
    assert out.count("this/base") == 1


def test_the_judging_benchmark_runs_small() -> None:
    """bench/judging.py judges attempts of 1 and 2 claims on the stand-in, alone and in a run, this convy as its own base."""
    out = ran("bench/judging.py", "--claims", "1", "2", "--latency", "0.01", "--attempts", "2", "--base", "src")
    assert "claims" in out and "this/ideal" in out
    rows = [line.split() for line in out.splitlines() if line.strip().startswith(("1 ", "2 "))]
    assert [row[:3] for row in rows] == [["1", "alone", rows[0][2]], ["1", "in", "a"], ["2", "alone", rows[2][2]], ["2", "in", "a"]]


def test_the_harness_benchmark_runs_small() -> None:
    """bench/harness.py plays each in-process case on 20 attempts and prints a row for each."""
    out = ran("bench/harness.py", "--attempts", "20", "--repeat", "1", "--no-memory")
    for case in (
        "baseline: bare asyncio", "Bench.run -> MemoryJournal", "RunJournal.play (run folder on disk)", "RunJournal.record only",
        "folder, the agent sending its spans elsewhere", "spans, each attempt waiting once for nothing",
        "folder, the agent's spans received by convy",
    ):
        assert case in out, out
    assert "received: " in out and "x spans' best" in out and "x waited's best" in out, out


def test_the_slow_disk_benchmark_runs_small_beside_another_source() -> None:
    """bench/slow_disk.py plays a tiny run on the disk as it is and on a slow one, this convy as its own --before."""
    out = ran("bench/slow_disk.py", "--attempts", "4", "--turns", "2", "--turn", "0.01", "--places", "2", "--sync", "0.01", "--repeat", "1", "--before", "src")
    assert "(floor)" in out and "x the floor" in out and out.count("x the floor") == 3, out


def test_the_cpu_benchmark_runs_small_beside_another_source() -> None:
    """bench/cpu.py plays 20 attempts in child processes, this convy beside itself as --before,
    and prints both medians, their ratio and each one's pacing layer share."""
    out = ran("bench/cpu.py", "--attempts", "20", "--repeat", "1", "--before", "src", "--profile")
    assert "now / before:" in out, out
    assert out.count("pacing layer without a profiler:") == 2 and out.count("pacing layer (busy.py") == 2, out


def test_the_free_way_benchmark_plays_small() -> None:
    """bench/free_way.py plays 20 attempts' requests, and a whole run of 5 attempts (``--whole``),
    as convy sends them and on the bare free way (what it counts under cachegrind; four processes
    under valgrind take minutes, not run here)."""
    for way in ("paced", "bare"):
        ran("bench/free_way.py", "--play", way, "20")
        ran("bench/free_way.py", "--whole-play", way, "5")


def test_the_statistics_benchmark_runs_small() -> None:
    """bench/stats.py times convy's tests beside scipy's and statsmodels' on 10 scenarios x 5 attempts."""
    out = ran("bench/stats.py", "--scenarios", "10", "--attempts", "5", "--seeds", "1", "--repeat", "1")
    assert "statsmodels CMH p =" in out and "Comparison.view()" in out, out


def test_the_sequential_benchmark_runs_small() -> None:
    """bench/sequential.py simulates 8 runs a row, every row of its table printed."""
    out = ran("bench/sequential.py", "--runs", "8", "--workers", "1")
    assert out.count("|") >= 25 * 4 and "fixed@most" in out, out


def test_the_faults_benchmark_runs_small() -> None:
    """bench/faults.py plays each fault against the stand-in and says what convy recorded; no key is found in an outcome."""
    out = ran("bench/faults.py")
    assert "| 429, Retry-After: 1 |" in out, out
    assert "found in a recorded outcome: never." in out, out


def test_the_pages_benchmark_runs_small() -> None:
    """bench/pages.py builds, sizes, opens in Chromium and compares two tiny runs."""
    out = ran("bench/pages.py", "--runs", "5x2", "--compare", "3x2", "--repeat", "1")
    for part in ("BUILD:", "SIZE:", "BROWSER:", "COMPARE:"):
        assert part in out, out


def test_the_many_conversations_case_runs_small_beside_bare_asyncio() -> None:
    """bench/whole.py's many case: 100 conversations of 6 turns of 0.2 s, beside bare asyncio's
    tasks, with the whole process and the play alone as ratios to it."""
    out = ran("bench/whole.py", "--only", "many", "--many", "100", "--turn", "0.2", "--repeat", "1", "--base", "src")
    assert "100 conversations at once, agent 0.2 s per turn" in out
    assert "asyncio alone: 100 tasks of 6 sleeps of 0.2 s" in out
    assert out.count("x bare, its play alone") == 2


def test_the_pacing_benchmark_plays_a_small_project() -> None:
    """bench/busy.py --project plays a project whose user and judge are models, on one shared key
    and with no limit: each attempt recorded and judged, and the stand-ins answered each
    participant exactly what the attempts needed (it exits 1 with PROBLEMS otherwise)."""
    out = ran("bench/busy.py", "--project", "p-all", "p-free", "--seconds", "1", "--free-project", "4", "--latency", "0.01")
    assert "all three one key, 1200/min" in out and "no limit, 4 attempts" in out, out
    assert "PROBLEMS" not in out
    assert out.count(" now ") == 2, out
    assert re.search(r"all at once \d+\.\d\d s: \d+\.\d\dx", out), out  # p-free beside what full concurrency allows
    assert re.search(r"knowing \d+\.\d s: \d+\.\d\dx", out), out  # p-all beside a client that knew its limit


def test_the_benchmarks_run_from_any_folder(tmp_path: Path) -> None:
    """A bench script started from another folder than the repository's (its path given whole)
    finds what it imports and writes nothing where it was started from but what it was told."""
    for argv in (
        ("bench/harness.py", "--attempts", "20", "--repeat", "1", "--no-memory"),
        ("bench/adaptive_demo.py",),
        ("bench/matrix_demo.py", "played"),
    ):
        done = subprocess.run(
            [sys.executable, str(ROOT / argv[0]), *argv[1:]],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, (argv, done.stderr[-3000:])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["played"]


def test_the_virtual_time_benchmarks_of_limits_without_headers_play_small() -> None:
    """bench/bare_virtual.py and bench/bare_rates.py play one seeded way each, in virtual time,
    and print each shape's or rate's floor, wall and refusals; bench/rpm_window.py and
    bench/crowded.py play a small count of requests per window (and a second limit behind it);
    bench/slow_answers.py one way of a strict bucket with answers of 1 s, and of a shared one."""
    out = ran("bench/bare_virtual.py", "p-free", "p-bare@300", "--ways", "1")
    assert out.count("floor") == 2 and "refused: u" in out, out
    out = ran("bench/bare_virtual.py", "p-bare@300", "--ways", "1", "--turns")
    assert out.count("floor") == 1 and "refused: u" in out, out
    out = ran("bench/bare_rates.py", "50", "--ways", "1")
    assert "50/s  floor 10.08" in out and "refused: " in out, out
    out = ran("bench/rpm_window.py", "20", "2", "30")
    assert "refused 1" in out and "window 1: 11 answered" in out, out
    out = ran("bench/crowded.py", "--requests", "120", "--after", "1")
    assert "120 requests: wall" in out and "by the second limit" in out and "window 1: 21 answered" in out, out
    out = ran("bench/slow_answers.py", "b1/1", "shared-b10/2", "--ways", "1")
    assert out.count("floor") == 2 and "b1/1          floor 10.98" in out and "refused: " in out, out


def test_the_tools_benchmark_plays_small() -> None:
    """bench/tools.py: a scenario's tools called from Python and over MCP, and the server's parts."""
    out = ran("bench/tools.py", "--attempts", "4", "--at-once", "2", "--servers", "2")
    assert "python" in out and "passed 4/4" in out and "the MCP server, 2 times" in out, out


def test_the_frameworks_demonstration_plays_each_adapter() -> None:
    """bench/frameworks.py: one attempt of each framework's agent, its requests beside the server's."""
    out = ran("bench/frameworks.py")
    assert out.count("3 requests kept, 3 received by the server; status passed") == 3, out
    assert "DIFFERENT" not in out and out.count("passed: the tools' state") == 3 + 6 and out.count("failed: the tools' state") == 3 + 3, out
    assert out.count("user answered 'approve' (60 in, 8 out)") == 3 and out.count("[denied]") == 3, out
