"""The live report (issue 13): while ``convy run`` plays, its report and the index are written
again every few seconds, whole, and show the run as under way with the attempts kept so far.

The run is the real command on a project of fakes whose agent opens a conversation only once the
test lets it (a number in the file ``gate``): the test decides how many attempts are kept, and
waits for the pages to show them, never for time."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from support.waiting import wait_until

from convy.live import LiveReport, Paced
from convy.settings import Settings

AGENT = '''\
import asyncio
import contextlib
from pathlib import Path

from convy import Answer

GATE = Path(__file__).resolve().parent.parent / "gate"


class _Talk:
    def __init__(self, number):
        self.number = number

    async def turn(self, message):
        return Answer("ok" if self.number % 3 else "no")


class Gated:
    """Opens its n-th conversation once the number in ``gate`` is n or more."""

    def __init__(self):
        self.opened = 0

    @contextlib.asynccontextmanager
    async def conversation(self):
        self.opened += 1
        number = self.opened
        while int(GATE.read_text() or 0) < number:
            await asyncio.sleep(0.02)
        yield _Talk(number)


agent = Gated()
'''

MODELS = "from convy import Models\n\nmodels = Models()\n"

PATIENCE = 240.0  # only a hang reaches it


class GatedRun:
    """``convy run bot`` on the gated project in ``folder``, the live report every ``every`` seconds."""

    def __init__(self, folder: Path, every: float, scenarios: int = 3, attempts: int = 4, environ: dict[str, str] | None = None) -> None:
        self.folder = folder
        (folder / "agents").mkdir(parents=True)
        (folder / "agents" / "bot.py").write_text(AGENT, encoding="utf-8")
        (folder / "models.py").write_text(MODELS, encoding="utf-8")
        (folder / "scenarios").mkdir()
        for number in range(1, scenarios + 1):
            (folder / "scenarios" / f"s{number}.yaml").write_text(
                f"script: ['Hello {number}']\njudge: [{{check: {{said: ok}}}}]\n", encoding="utf-8"
            )
        (folder / "pyproject.toml").write_text(
            # Every third conversation fails on purpose, for the pages to show: any pass rate is accepted.
            f"[tool.convy]\nattempts = {attempts}\nagent_places = 1\nopen_seconds = 100000\nfail_under = 0\n", encoding="utf-8"
        )
        self.let(0)
        environment = {name: value for name, value in os.environ.items() if not name.startswith("CONVY_")}
        environment["CONVY_LIVE_SECONDS"] = repr(every)
        environment.update(environ or {})
        self.child = subprocess.Popen(
            [sys.executable, "-m", "convy", "run", "bot"],
            cwd=folder,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def let(self, attempts: int) -> None:
        """Let the agent open its first ``attempts`` conversations (the file replaced whole)."""
        (self.folder / "gate.tmp").write_text(str(attempts), encoding="utf-8")
        (self.folder / "gate.tmp").rename(self.folder / "gate")

    def report(self) -> Path:
        found = list((self.folder / "results" / "bot").glob("*/report.html"))
        return found[0] if found else self.folder / "results" / "bot" / "none" / "report.html"

    def index(self) -> Path:
        return self.folder / "results" / "index.html"

    def ended(self) -> tuple[int, str, str]:
        out, err = self.child.communicate(timeout=PATIENCE)
        return self.child.returncode, out, err

    def stop(self) -> None:
        if self.child.poll() is None:
            self.child.kill()
            self.child.communicate()


class Page(msgspec.Struct, frozen=True):
    """What a page written by convy holds: its data block, its live block, whether it is whole."""

    text: str

    def whole(self) -> bool:
        return self.text.startswith("<!doctype html>") and self.text.endswith("</html>\n")

    def block(self, name: str) -> Any:
        found = re.search(f'<script type="application/json" id="{name}">(.*?)</script>', self.text, re.S)
        return None if found is None else msgspec.json.decode(found.group(1).replace("\\u003c", "<"))


@pytest.fixture
def gated(tmp_path: Path) -> Iterator[Callable[..., GatedRun]]:
    made: list[GatedRun] = []

    def new(every: float, scenarios: int = 3, attempts: int = 4, environ: dict[str, str] | None = None) -> GatedRun:
        made.append(GatedRun(tmp_path / f"project{len(made)}", every, scenarios, attempts, environ))
        return made[-1]

    yield new
    for one in made:
        one.stop()


pytestmark = pytest.mark.timeout(600)


def test_the_report_and_index_show_the_run_under_way_and_are_never_seen_in_part(gated: Callable[..., GatedRun]) -> None:
    """While the run plays, report.html and index.html are written again and again, each read of
    them a whole page: the report says running with the attempts kept so far of those planned, the
    index lists the run as running with its attempts; at the end the report says finished, carries
    no live block, and no temporary file is left."""
    run = gated(0.05)
    reads: list[Page] = []

    def shows(kept: int) -> bool:
        path = run.report()
        if not path.exists():
            return False
        page = Page(path.read_text(encoding="utf-8"))
        reads.append(page)
        assert page.whole(), "a page read in part"
        header = page.block("data")["header"]
        return bool(header["status"] == "running" and header["kept"] == kept and header["planned"] == 12)

    run.let(2)
    wait_until(lambda: shows(2), "the report shows 2 attempts kept of 12, running")
    live = reads[-1].block("live")
    assert live["every"] >= 0.05 and live["stale"] > live["every"]

    def listed(attempts: int) -> bool:
        if not run.index().exists():
            return False
        page = Page(run.index().read_text(encoding="utf-8"))
        assert page.whole(), "an index read in part"
        rows = page.block("data")["runs"]
        return bool(len(rows) == 1 and rows[0]["status"] == "running" and rows[0]["attempts"] == attempts and rows[0]["planned"] == 12)

    wait_until(lambda: listed(2), "the index lists the run as running with 2 attempts of 12")
    run.let(7)
    wait_until(lambda: shows(7), "the report shows 7 attempts kept of 12, running")
    run.let(12)
    code, out, err = run.ended()
    assert code == 0, err
    final = Page(run.report().read_text(encoding="utf-8"))
    header = final.block("data")["header"]
    assert (header["status"], header["kept"]) == ("finished", 12)
    assert final.block("live") is None
    rows = Page(run.index().read_text(encoding="utf-8")).block("data")["runs"]
    assert rows[0]["status"] == "finished"
    assert not list((run.folder / "results").rglob("*.tmp"))
    assert len(reads) > 2


def test_a_run_with_the_live_report_off_writes_its_report_only_at_the_end(gated: Callable[..., GatedRun]) -> None:
    """CONVY_LIVE_SECONDS=0: no page is written while the run plays; the report comes at the end."""
    run = gated(0.0)
    run.let(2)
    wait_until(lambda: len((next(iter((run.folder / "results" / "bot").glob("*/attempts.jsonl")), run.folder / "none")).read_bytes().splitlines()) == 2
          if list((run.folder / "results" / "bot").glob("*/attempts.jsonl")) else False, "two attempts kept")
    assert not run.report().exists() and not run.index().exists()
    run.let(12)
    code, out, err = run.ended()
    assert code == 0, err
    assert Page(run.report().read_text(encoding="utf-8")).block("data")["header"]["status"] == "finished"


def test_the_setting_turns_the_live_report_on_and_off_and_is_bounded() -> None:
    """live_seconds is 5 by default (a LiveReport for the run), 0 turns it off, and a negative or
    endless value is refused naming the field."""
    live = Settings().live(Path("/p"), "r1")
    assert live == LiveReport(Path("/p"), "r1", 5.0)
    assert Settings(live_seconds=0.0).live(Path("/p"), "r1") is None
    for bad in (-1.0, float("inf"), 10_000.0):
        with pytest.raises(ValueError, match="live_seconds"):
            Settings(live_seconds=bad)


def test_a_page_of_a_run_under_way_goes_stale_well_after_its_next_writing_was_due() -> None:
    """A page says when it was written and how often it reloads; it is stale only after three of
    its paces and a minute more, so a writing that is late by a page's own build is never taken for a stop."""
    from datetime import UTC, datetime

    view = Paced(2.0).view(datetime(2026, 1, 1, tzinfo=UTC))
    assert (view.every, view.written, view.stale) == (2.0, "2026-01-01T00:00:00+00:00", 66.0)


# Loaded by every Python the run starts (PYTHONPATH): the first process to open a report.html.tmp
# says its pid in ``writing`` and stays there, mid-write, while ``held`` exists.
HELD_WRITING = """\
import os
import sys
import time


def _held(event, arguments):
    if event == "open" and "report.html." in str(arguments[0]) and str(arguments[0]).endswith(".tmp") and not os.path.exists({writing!r}):
        with open({writing!r} + ".tmp", "w") as said:
            said.write(str(os.getpid()))
        os.rename({writing!r} + ".tmp", {writing!r})
        while os.path.exists({held!r}):
            time.sleep(0.01)


sys.addaudithook(_held)
"""


class Process(msgspec.Struct, frozen=True):
    """A process of this machine, by its pid, as /proc shows it."""

    pid: int

    def ended(self) -> bool:
        """Gone, or a zombie that nothing has reaped yet (it runs no more either)."""
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except FileNotFoundError:
            return True
        return stat.rsplit(")", 1)[1].split()[0] == "Z"


@pytest.mark.skipif(sys.platform != "linux", reason="the kernel's tie of a child to its parent (PR_SET_PDEATHSIG) is Linux's")
def test_a_run_killed_outright_takes_its_live_writing_with_it(gated: Callable[..., GatedRun], tmp_path: Path) -> None:
    """SIGKILL of ``convy run`` while its live writing is in the middle of report.html: the writing
    (a child process) ends too, there and then, and no page lands after the run is gone."""
    hooks, writing, held = tmp_path / "hooks", tmp_path / "writing", tmp_path / "held"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(HELD_WRITING.format(writing=str(writing), held=str(held)), encoding="utf-8")
    held.write_text("the live writing waits while this file exists\n", encoding="utf-8")
    run = gated(0.05, environ={"PYTHONPATH": str(hooks)})
    try:
        run.let(2)
        wait_until(writing.exists, "a live writing is under way, held in report.html.tmp")
        child = Process(int(writing.read_text(encoding="utf-8")))
        assert child.pid != run.child.pid and not child.ended()
        run.child.kill()
        run.child.communicate()
        wait_until(child.ended, "the live writing ends with the run that started it")
    finally:
        held.unlink()  # a writing left alive (the test failed) ends by itself
    assert not run.report().exists(), "a page was written for a run nobody plays"


def test_a_live_writing_whose_run_has_gone_writes_nothing(gated: Callable[..., GatedRun]) -> None:
    """``convy report --live`` started for a ``convy run`` that is no longer its parent (it ended
    before the child could tie itself to it) writes no page; tied to its real parent, it does."""
    run = gated(0.0)
    run.let(12)
    code, out, err = run.ended()
    assert code == 0, err
    report, index = run.report(), run.index()
    report.unlink()
    index.unlink()
    folder = report.parent.name

    def written(parent: int) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "convy", "-C", str(run.folder), "report", "--live", "1", "--parent", str(parent), folder],
            capture_output=True, text=True, timeout=PATIENCE, check=False,
        )

    gone = written(os.getpid() + 1_000_000)  # no pid this machine has given: not the child's parent
    assert (gone.returncode, gone.stdout, gone.stderr) == (0, "", "")
    assert not report.exists() and not index.exists()
    tied = written(os.getpid())
    assert tied.returncode == 0, tied.stderr
    assert report.exists() and index.exists()
