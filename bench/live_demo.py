"""A demonstration of the live report (issue 13), and what it costs a run.

Writes a small project into a folder (``--dir``, a temporary one by default): a fake agent that
answers after a delay (``--delay`` seconds, a seeded spread around it, with ``asyncio.sleep``: the
way a real agent waits on its service), a fake simulated user and a fake judge that holds a claim
at a rate that differs per scenario. Then plays it with the real ``convy run`` command in a child
process, with the live report on (``CONVY_LIVE_SECONDS``, ``--every``), and prints where to open
the report while it plays.

    .venv/bin/python bench/live_demo.py                                    # 20 x 10, ~0.3 s a turn
    .venv/bin/python bench/live_demo.py --shots /work/helpers/shots         # and two screenshots, some seconds apart
    .venv/bin/python bench/live_demo.py --overhead --scenarios 100 --attempts 100 --delay 0 --places 8

``--shots FOLDER`` opens the report from file:// in headless Chromium while the run plays, a
scenario's window open, and saves ``live-1.png`` and ``live-2.png`` once the page has reloaded
itself with more attempts. ``--overhead`` plays the same project twice more, side by side, with
the live report off (``CONVY_LIVE_SECONDS=0``) and on, and prints the wall time of each
(best of ``--repeat``): what the live report costs a run, read as a ratio.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AGENT = '''\
import asyncio
import random

from convy import Answer


class _Conversation:
    def __init__(self, seed):
        self.random = random.Random(seed)

    async def turn(self, message):
        if DELAY:
            await asyncio.sleep(DELAY * self.random.uniform(0.5, 1.5))
        return Answer("I looked at " + message.text[:40] + " and this is what I found.")


class SlowBot:
    """Answers after a delay, as an agent waiting on its service would."""

    def __init__(self):
        self.opened = 0

    def conversation(self):
        import contextlib

        @contextlib.asynccontextmanager
        async def opened():
            self.opened += 1
            yield _Conversation(self.opened)

        return opened()


agent = SlowBot()
'''

MODELS = '''\
import random
import zlib

from convy.fakes import FakeJudge, FakeModel
from convy.judge import Models


def held(claim, transcript):
    # A scenario's rate from its first message: some always pass, some never, most are flaky.
    first = transcript.turns[0].message
    rate = zlib.crc32(first.encode()) % 100
    every = " ".join(turn.message + turn.answer.text for turn in transcript.turns) + claim + str(random.random())
    return zlib.crc32(every.encode()) % 100 < rate


def said(messages):
    return f"Thank you. Could you tell me more about point {len(messages)}?"


models = Models(user=FakeModel(said), judge=FakeJudge(held))
'''


class Demo:
    """The demo project, written into ``folder``, and its runs."""

    def __init__(self, folder: Path, scenarios: int, attempts: int, delay: float, places: int) -> None:
        self.folder = folder
        self.scenarios = scenarios
        self.attempts = attempts
        self.delay = delay
        self.places = places

    def written(self) -> None:
        (self.folder / "agents").mkdir(parents=True, exist_ok=True)
        (self.folder / "agents" / "bot.py").write_text(f"DELAY = {self.delay!r}\n" + AGENT, encoding="utf-8")
        (self.folder / "models.py").write_text(MODELS, encoding="utf-8")
        scenarios = self.folder / "scenarios"
        scenarios.mkdir(exist_ok=True)
        for number in range(self.scenarios):
            folder = ("orders", "refunds", "account")[number % 3]
            (scenarios / folder).mkdir(exist_ok=True)
            (scenarios / folder / f"case-{number:03d}.yaml").write_text(
                f"tags: [t{number % 4}]\nscript: ['Hello, this is case {number}.']\nuser: A customer with question {number}.\n"
                "max_turns: 3\njudge: [The agent answers the question., The agent stays polite.]\n",
                encoding="utf-8",
            )
        (self.folder / "pyproject.toml").write_text(
            f"[tool.convy]\nattempts = {self.attempts}\nagent_places = {self.places}\nuser_places = {self.places}\n"
            f"judge_places = {self.places}\nuser_faults = \"count\"\n",
            encoding="utf-8",
        )

    def started(self, every: float) -> subprocess.Popen[bytes]:
        environment = {name: value for name, value in os.environ.items() if not name.startswith("CONVY_")}
        environment["CONVY_LIVE_SECONDS"] = repr(every)
        return subprocess.Popen(
            [sys.executable, "-m", "convy", "-C", str(self.folder), "run", "bot"],
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def report(self) -> Path | None:
        found = sorted((self.folder / "results" / "bot").glob("*/report.html"), key=lambda path: path.stat().st_mtime)
        return found[-1] if found else None

    def timed(self, every: float) -> float:
        began = time.perf_counter()
        child = self.started(every)
        out, err = child.communicate()
        if child.returncode not in (0, 3):
            raise SystemExit(f"convy run exited {child.returncode}: {err.decode()[-2000:]}")
        return time.perf_counter() - began


class Shots:
    """Two screenshots of the live report, a reload apart, while the demo's run plays."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def taken(self, demo: Demo, child: subprocess.Popen[bytes]) -> None:
        from playwright.sync_api import sync_playwright

        self.folder.mkdir(parents=True, exist_ok=True)
        report = self.waited(demo, child)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(report.as_uri() + "#q=orders")
            page.wait_for_selector("#scenarios tbody tr.row")
            kept = self.kept(page)
            page.screenshot(path=str(self.folder / "live-1.png"), full_page=False)
            print(f"live-1.png: {kept}")
            page.wait_for_function(f"() => (document.querySelector('.facts') || document.body).innerText.includes(' of ') && !document.body.innerText.includes({kept!r})", timeout=120_000)
            page.wait_for_selector("#scenarios tbody tr.row")
            page.wait_for_timeout(300)  # the rows drawn before the picture, not a condition of the demo
            print(f"live-2.png: {self.kept(page)}")
            page.screenshot(path=str(self.folder / "live-2.png"), full_page=False)
            browser.close()

    def kept(self, page: object) -> str:
        text = page.inner_text("header.top")  # type: ignore[attr-defined]
        return next((line for line in text.splitlines() if "planned" in line), "")

    def waited(self, demo: Demo, child: subprocess.Popen[bytes]) -> Path:
        while child.poll() is None:
            report = demo.report()
            if report is not None:
                return report
            time.sleep(0.2)
        raise SystemExit("the run ended before its report was written")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path)
    parser.add_argument("--scenarios", type=int, default=20)
    parser.add_argument("--attempts", type=int, default=10)
    parser.add_argument("--delay", type=float, default=0.3)
    parser.add_argument("--places", type=int, default=4)
    parser.add_argument("--every", type=float, default=2.0)
    parser.add_argument("--shots", type=Path)
    parser.add_argument("--overhead", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    arguments = parser.parse_args()
    folder = arguments.dir or Path(tempfile.mkdtemp(prefix="convy-live-"))
    demo = Demo(folder, arguments.scenarios, arguments.attempts, arguments.delay, arguments.places)
    demo.written()
    print(f"project: {folder}  ({arguments.scenarios} scenarios x {arguments.attempts} attempts, agent delay ~{arguments.delay} s)")
    if arguments.overhead:
        print(f"load {os.getloadavg()[0]:.2f}  live report every {arguments.every} s")
        times: dict[str, list[float]] = {"off": [], "on": []}
        for _ in range(arguments.repeat):
            for name, every in (("off", 0.0), ("on", arguments.every)):
                times[name].append(demo.timed(every))
        off, on = min(times["off"]), min(times["on"])
        print(f"convy run, live off: best {off:.2f} s  (all: {', '.join(f'{one:.2f}' for one in times['off'])})")
        print(f"convy run, live on:  best {on:.2f} s  (all: {', '.join(f'{one:.2f}' for one in times['on'])})")
        print(f"on / off: {on / off:.3f}x")
        return
    child = demo.started(arguments.every)
    if arguments.shots is not None:
        Shots(arguments.shots).taken(demo, child)
    else:
        while child.poll() is None and demo.report() is None:
            time.sleep(0.2)
        report = demo.report()
        if report is not None:
            print(f"open while it plays: {report.as_uri()}")
            print(f"the index:           {(folder / 'results' / 'index.html').as_uri()}")
    out, err = child.communicate()
    sys.stdout.write(out.decode())
    sys.stderr.write(err.decode())


if __name__ == "__main__":
    main()
