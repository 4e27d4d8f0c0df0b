"""Benchmark of convy's pages: how long a run's report takes to build, how big it is, how soon it is
interactive in a browser, and how long ``convy compare`` takes, each beside a baseline measured by
this script, on this machine, at the same time.

The runs are played by convy's own ``Bench`` with instant fakes into run folders in a temporary
folder (``--dir`` picks where, ``--keep`` keeps it), and look like real ones: up to 6 turns (the
simulated user ends about one dialogue in six early), varied text in every message (a seeded
random pick of words, so gzip finds no more repetition than in real dialogues), the agent's
thoughts and one or two tool calls per answer with arguments and results, token usage with a cost
on most answers, two claims decided by the judge (held at a rate that differs per scenario, each
with the few words of the agent's last answer it quotes as evidence, as a judge asked for evidence
gives them) and two ``check:`` claims decided by code.

Cases:

- ``build``: the report of runs of 1,000 and 10,000 attempts (``--runs``, as SCENARIOSxATTEMPTS:
  100x10, 500x20, 10000x1 and 10x1000 by default; the last is the harness's run, whose scenario
  window holds 1,000 attempts). Timed: ``Runs.one(folder)`` (reading the run folder, shown
  apart) and ``ReportPage(Summary(run)).html()``, the whole build from the run read back. Baseline:
  ``msgspec.json`` encoding the same view records (``Summary.view()`` and ``Summary.dialogues()``,
  made beforehand) alone, with no statistics, compression or template. Below: the build's parts.
- ``size``: the report's size in bytes against the raw ``attempts.jsonl`` it was made from, with
  the table data and the dialogues apart, and the page gzipped (what it weighs sent by mail or
  served compressed).
- ``browser``: the report opened from file:// in headless Chromium (``/usr/bin/chromium``, driven by
  Playwright; its own browsers are never downloaded), each time in a fresh context. Timed in the
  page, from its navigation start (``performance.now()`` is 0 there): the first table rows in the
  document (a ``MutationObserver`` installed before the page's script) and the first frame drawn
  after them (a ``requestAnimationFrame`` then a task); then a click on the first row, until the
  scenario window shows its attempt's dialogue and a frame is drawn (of 10x1000, a window of a
  scenario of 1,000 attempts): clicked at once, as soon as the rows are drawn, and in another
  fresh context after the page has been idle for a second, as a reader clicks ("after idle");
  each also until the page is idle again after that frame ("settled"). ``--base DIR/src`` builds
  the same run's report with that convy too ("before"), opened in turn with this one.
  Baseline: a static HTML page of
  the same byte size (the bytes in an inert ``<script type="application/json">`` block, as the
  report's data is), whose one table row, clicked, opens a ``<dialog>`` already in the page.
- ``compare``: ``python -m convy -C PROJECT compare BASE CANDIDATE``, the real command in a
  subprocess, on two runs of 200 scenarios x 50 attempts (``--compare``), the candidate a little
  better. Baseline: a subprocess that imports convy and reads the same two run folders with
  ``Runs`` and does nothing else (the command reads each of them twice: once to compare and once
  for the index it rewrites). Below: the parts, in this process.

Every time is the best of ``--repeat`` runs (default 3), except the browser's, the median of
``--repeat`` fresh contexts after one warm-up opening, and the build's parts, timed once. Read the ratios rather than the seconds: they depend on
the machine and on what else runs on it (the header prints the load average).

    .venv/bin/python bench/pages.py                        # every case, about 3-4 minutes on 2 cores
    .venv/bin/python bench/pages.py --only build size      # no browser, no compare
    .venv/bin/python bench/pages.py --runs 100x10 --compare 20x10 --repeat 1     # a quick look
    .venv/bin/python bench/pages.py --keep /tmp/pages      # keep the runs and pages to look at
    .venv/bin/python bench/pages.py --runs 10x1000 --only browser --repeat 5 --base /tmp/base/src   # the window, before -> after
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec

import convy
from convy import (
    Answer,
    Bench,
    Call,
    Cost,
    Limits,
    Models,
    Reply,
    Reported,
    RunJournal,
    RunSpec,
    Scenario,
    Thought,
    Usage,
)
from convy.comparison import Comparison
from convy.fakes import FakeAgent, FakeJudge, FakeModel
from convy.judge import Graded, Ruling
from convy.page import ComparisonPage, ReportPage
from convy.report import Summary
from convy.runs import Read, Runs
from convy.transcript import Evidence, Transcript

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CASES = ("build", "size", "browser", "compare")

WORDS = (
    "order refund parcel delivery kettle lamp invoice account address payment card bank courier warehouse "
    "tracking number today tomorrow Monday Friday week days hours minutes please thanks sorry afraid happy "
    "help check look find send return replace exchange cancel confirm update change arrive arrived late "
    "broken damaged missing wrong colour size price discount voucher code email phone chat store policy "
    "customer service team colleague manager label box package item items product stock available "
    "shipping express standard free fee charge charged twice once again still never already soon yet "
    "the a an and or but so because if when while with without for from to of in on at by about into "
    "I you we they it this that these those my your our their is are was were be been have has had do "
    "does did can could will would should may might must not no yes right now just also only very "
    "quite really sure certainly absolutely unfortunately currently usually normally within after before"
).split()
TOOLS = ("lookup_order", "track_parcel", "issue_refund", "update_address", "search_products", "check_stock")
CLAIMS = ("The agent was polite.", "The agent solved the customer's problem.")


# --- runs that look like real ones -------------------------------------------------------------


class Talk:
    """Varied text and tool calls, from one seeded generator (the bench's order varies; the mix does not)."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)

    def words(self, low: int, high: int) -> str:
        chosen = self.random.choices(WORDS, k=self.random.randint(low, high))
        return " ".join(chosen).capitalize() + "."

    def answer(self, text: str) -> Answer:
        pick = self.random
        said = " ".join(self.words(8, 16) for _ in range(pick.randint(2, 4)))
        if pick.random() < 0.3:
            said += "\n\n" + "\n".join(f"- {self.words(3, 8)}" for _ in range(pick.randint(2, 4)))
        if pick.random() < 0.5:
            said += f" Your order A-{pick.randint(1000, 9999)} is noted."
        steps: list[Thought | Call] = [Thought(self.words(10, 30))]
        for _ in range(pick.randint(1, 2)):
            name = pick.choice(TOOLS)
            arguments = {"order": f"A-{pick.randint(1000, 9999)}", "query": self.words(2, 5)}
            result = {"status": pick.choice(("shipped", "pending", "refunded", "lost")), "items": pick.randint(1, 4), "note": self.words(4, 10)}
            steps.append(Call(name, arguments, Reported(result), round(pick.uniform(0.01, 0.4), 3)))
        usage_in, usage_out = pick.randint(300, 2500), pick.randint(20, 300)
        cost = Cost(Decimal(usage_in * 3 + usage_out * 15) / Decimal(1_000_000), "computed")
        usage = Usage(usage_in, usage_out, cached=pick.randint(0, usage_in // 2), cost=cost) if pick.random() < 0.9 else Usage(usage_in, usage_out)
        return Answer(said, usage, tuple(steps))

    def reply(self, messages: object) -> Reply:
        ending = self.random.random() < 0.04
        return Reply(self.words(6, 22) + (" ###STOP###" if ending else ""), Usage(self.random.randint(200, 900), self.random.randint(8, 40)))


class Played(msgspec.Struct, frozen=True):
    """A run to play: how many scenarios and attempts, its name, and how its judge leans."""

    scenarios: int
    attempts: int
    name: str
    lean: float = 0.0  # added to every scenario's rate of held claims (a better candidate)

    def scenario_list(self) -> tuple[Scenario, ...]:
        found = []
        for number in range(self.scenarios):
            found.append(
                msgspec.convert(
                    {
                        "id": f"{('orders', 'refunds', 'delivery', 'account')[number % 4]}/case-{number:05}",
                        "user": "You are a customer of a shop whose {{ item }} has a problem. Say so, and answer questions.",
                        "vars": {"item": ("kettle", "lamp", "parcel", "invoice")[number % 4]},
                        "script": [f"Hello, about case {number}: my order has a problem."],
                        "max_turns": 6,
                        "tags": [("smoke", "regression", "billing")[number % 3]],
                        "judge": [*CLAIMS, {"check": {"called": "lookup_order"}}, {"check": {"said": "order"}}],
                    },
                    Scenario,
                )
            )
        return tuple(found)

    def judge(self, talk: Talk) -> FakeJudge:
        rates = random.Random(7)
        held = {number: min(0.99, max(0.3, rates.betavariate(6, 1.5) + self.lean)) for number in range(self.scenarios)}

        def decided(claim: str, transcript: Any) -> bool:
            number = int(transcript.turns[0].message.split("case ", 1)[1].split(":", 1)[0])
            return talk.random.random() < held[number]

        return Quoting(FakeJudge(decided, confidence=0.9, name="fake-judge"), talk)

    def play(self, results: Path, seed: int) -> Path:
        talk = Talk(seed)
        user = FakeModel(talk.reply, name="fake-user")
        user.requests = _Forgetful()  # type: ignore[assignment]
        agent = FakeAgent(talk.answer)
        agent.messages = _Forgetful()  # type: ignore[assignment]
        bench = Bench(agent, Models(user, self.judge(talk)), Limits(agent_places=32, judge_places=32, max_turns=6))
        spec = RunSpec(id=self.name, agent="shop", scenarios=self.scenario_list(), attempts=self.attempts, limits=bench.limits)
        folder = results / "shop" / self.name
        asyncio.run(RunJournal(folder).play(spec, bench))
        return folder


class Quoting:
    """A judge that decides as the one it wraps and quotes 4 to 12 words of the agent's last answer
    as each decision's evidence, checked against the dialogue as a judge's quote is."""

    def __init__(self, judge: FakeJudge, talk: Talk) -> None:
        self.judge = judge
        self.talk = talk

    @property
    def name(self) -> str:
        return self.judge.name

    async def ruling(self, claims: tuple[str | Graded, ...], transcript: Transcript) -> Ruling:
        ruled = await self.judge.ruling(claims, transcript)
        words = transcript.turns[-1].answer.text.split()
        quoted = []
        for claim in ruled.claims:
            start = self.talk.random.randrange(max(1, len(words) - 4))
            quote = " ".join(words[start : start + self.talk.random.randint(4, 12)])
            quoted.append(msgspec.structs.replace(claim, evidence=Evidence(quote, transcript.quotes(quote))))
        return Ruling(tuple(quoted), ruled.requests)


class _Forgetful(list):  # type: ignore[type-arg]
    """A fake's log that keeps nothing."""

    def append(self, item: object) -> None:
        pass


# --- measuring -----------------------------------------------------------------------------------


def best(repeat: int, work: Callable[[], object]) -> tuple[float, Any]:
    """The best time of ``repeat`` runs, and what the last run returned."""
    made = None
    times = []
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        made = work()
        times.append(time.perf_counter() - start)
    return min(times), made


def seconds(value: float) -> str:
    return f"{value * 1000:8.1f} ms" if value < 10 else f"{value:8.2f} s "


def size(value: int) -> str:
    return f"{value / 1_000_000:8.2f} MB" if value >= 100_000 else f"{value / 1000:8.1f} kB"


def header(options: argparse.Namespace) -> None:
    load = os.getloadavg()
    where = Path(convy.__file__).resolve().parent
    commit = subprocess.run(["git", "-C", str(where), "log", "-1", "--format=%h %s"], capture_output=True, text=True).stdout.strip()
    changed = subprocess.run(["git", "-C", str(where), "status", "--short", "--", "."], capture_output=True, text=True).stdout.split("\n")
    print(f"convy {where}  ({commit or 'not a git checkout'}; {len([line for line in changed if line.strip()])} files changed)")
    print(f"python {platform.python_version()}  msgspec {msgspec.__version__}  {os.cpu_count()} cores  load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"repeat {options.repeat}")
    print()


# --- build and size --------------------------------------------------------------------------------


class Built(msgspec.Struct, frozen=True):
    """One run's report, built: its times and sizes."""

    name: str
    attempts: int
    scenarios: int
    read: float
    build: float
    encode: float
    parts: dict[str, float]
    html: int
    data: int
    dialogues: int
    chunks: int
    jsonl: int
    gzipped: int


class Report(msgspec.Struct, frozen=True):
    """A played run's folder, and how to build its report."""

    folder: Path
    repeat: int

    def built(self) -> tuple[Built, str]:
        encoder = msgspec.json.Encoder()
        read_time, run = best(self.repeat, lambda: Runs(self.folder.parent.parent).one(self.folder))
        assert isinstance(run, Read), run
        build_time, html = best(self.repeat, lambda: ReportPage(Summary(run)).html())
        summary = Summary(run)
        view, dialogues = summary.view(), summary.dialogues()
        encode_time, _ = best(self.repeat, lambda: (encoder.encode(view), encoder.encode(dialogues)))
        parts = {  # once each: they only say where the build's time goes
            "Summary.view()": best(1, summary.view)[0],
            "Summary.dialogues()": best(1, summary.dialogues)[0],
            "ReportPage.dialogues() (dialogues, packed)": best(1, ReportPage(summary).dialogues)[0],
        }
        data = len(html.split('id="data">', 1)[1].split("</script>", 1)[0])
        index = msgspec.json.decode(html.split('id="dialogues">', 1)[1].split("</script>", 1)[0].encode())
        chunks = index["count"]
        packed = sum(len(html.split(f'id="dialogues-{number}">', 1)[1].split("</script>", 1)[0]) for number in range(chunks))
        raw = html.encode("utf-8")
        return (
            Built(
                name=run.file.spec.id,
                attempts=len(run.outcomes),
                scenarios=len(run.file.spec.scenarios),
                read=read_time,
                build=build_time,
                encode=encode_time,
                parts=parts,
                html=len(raw),
                data=data,
                dialogues=packed,
                chunks=chunks,
                jsonl=(self.folder / "attempts.jsonl").stat().st_size,
                gzipped=len(gzip.compress(raw, 6)),
            ),
            html,
        )


def show_build(built: list[Built]) -> None:
    print("BUILD: ReportPage(Summary(run)).html(), from the run read back; baseline: msgspec.json encoding the same")
    print("view records (Summary.view() and Summary.dialogues(), made beforehand) alone")
    print(f"  {'run':<22}{'attempts':>9}{'read folder':>13}{'build':>13}{'baseline':>13}{'build/base':>12}")
    for one in built:
        print(f"  {one.name:<22}{one.attempts:>9,}{seconds(one.read):>13}{seconds(one.build):>13}{seconds(one.encode):>13}{one.build / one.encode:>11.1f}x")
    print("  parts of the build (each timed alone, once):")
    for one in built:
        said = ", ".join(f"{name} {seconds(value).strip()}" for name, value in one.parts.items())
        print(f"    {one.name}: {said}")
    print()


def show_size(built: list[Built]) -> None:
    print("SIZE: report.html against the raw attempts.jsonl it was made from (the baseline)")
    print(f"  {'run':<22}{'attempts.jsonl':>15}{'report.html':>13}{'html/jsonl':>12}{'table data':>13}{'dialogues':>13}{'chunks':>8}{'html gzip':>12}{'per attempt':>13}")
    for one in built:
        print(
            f"  {one.name:<22}{size(one.jsonl):>15}{size(one.html):>13}{one.html / one.jsonl:>11.2f}x{size(one.data):>13}"
            f"{size(one.dialogues):>13}{one.chunks:>8}{size(one.gzipped):>12}{one.html / one.attempts / 1000:>9.2f} kB"
        )
    print("  (table data: the RunView as JSON; dialogues: every attempt in full, gzipped in chunks, in base64; html gzip: the page gzipped, as mailed or served)")
    print()


# --- the browser -----------------------------------------------------------------------------------

# Installed before any script of the page: the time (from navigation start) when the first table
# row is in the document, and when the frame after it has been drawn.
WATCH = """
(() => {
  const seen = () => document.querySelector("#scenarios tbody tr.row");
  const watch = new MutationObserver(() => {
    if (!seen()) return;
    watch.disconnect();
    window.__rows = performance.now();
    requestAnimationFrame(() => setTimeout(() => { window.__drawn = performance.now(); }, 0));
  });
  watch.observe(document, { childList: true, subtree: true });
})();
"""

# A click on the first row, until the window shows a dialogue and the frame after it is drawn
# ("painted"), then until the page is idle again (the first idle callback after that frame:
# "settled", which counts whatever the click left for later).
CLICK = """
async () => {
  const started = performance.now();
  const shown = () => document.querySelector("dialog[open] .attempt .msg");
  const waited = new Promise((resolve) => {
    const watch = new MutationObserver(() => { if (shown()) { watch.disconnect(); resolve(); } });
    watch.observe(document.body, { childList: true, subtree: true, attributes: true, attributeFilter: ["open"] });
  });
  document.querySelector("#scenarios tbody tr.row").click();
  if (!shown()) await waited;
  await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  const painted = performance.now() - started;
  await new Promise((resolve) => (typeof requestIdleCallback === "function" ? requestIdleCallback(resolve) : setTimeout(resolve, 0)));
  return [painted, performance.now() - started];
}
"""

# A report built by another convy (``--base``) from the same run folder.
BUILD = """
import sys
from pathlib import Path
from convy.page import ReportPage
from convy.report import Summary
from convy.runs import Runs
folder = Path(sys.argv[1])
Path(sys.argv[2]).write_text(ReportPage(Summary(Runs(folder.parent.parent).one(folder))).html(), encoding="utf-8")
"""


class Baseline(msgspec.Struct, frozen=True):
    """A static page of ``size`` bytes: the bytes in an inert JSON block, one table row, and a
    dialog already in the page that a click on the row opens."""

    size: int

    def html(self) -> str:
        head = (
            '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>baseline</title></head><body>\n'
            '<script type="application/json" id="pad">"'
        )
        tail = (
            '"</script>\n<table id="scenarios"><tbody><tr class="row" data-id="one"><td>one scenario</td></tr></tbody></table>\n'
            '<dialog id="window"><div class="attempt"><div class="msg">Hello, my order has a problem.</div></div></dialog>\n'
            '<script>document.querySelector("tr.row").addEventListener("click", () => document.getElementById("window").showModal());</script>\n'
            "</body></html>\n"
        )
        pad = max(0, self.size - len(head) - len(tail))
        return head + ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/" * (pad // 64 + 1))[:pad] + tail


class Opened(msgspec.Struct, frozen=True):
    rows: float
    drawn: float
    window: float  # clicked as soon as the first rows are drawn
    settled: float
    idle: float  # clicked after the page has been idle for a second, as a reader clicks
    idle_settled: float

    @classmethod
    def median(cls, runs: list[Opened]) -> Opened:
        return cls(*(statistics.median(getattr(one, field) for one in runs) for field in ("rows", "drawn", "window", "settled", "idle", "idle_settled")))


class Browser:
    """Headless Chromium; each opening in a fresh context."""

    def __init__(self, playwright: Any) -> None:
        self.browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)

    def opened(self, path: Path) -> Opened:
        rows, drawn, window, settled = self.clicked(path, pause=0)
        _, _, idle, idle_settled = self.clicked(path, pause=1)
        return Opened(rows, drawn, window, settled, idle, idle_settled)

    def clicked(self, path: Path, pause: float) -> tuple[float, float, float, float]:
        context = self.browser.new_context(viewport={"width": 1320, "height": 900})
        try:
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.add_init_script(WATCH)
            page.goto(path.as_uri(), wait_until="commit", timeout=120_000)
            # Polled from here: wait_for_function would evaluate a string in the page, which its
            # Content-Security-Policy forbids. The times are taken in the page, so the polling
            # step does not enter them.
            deadline = time.monotonic() + 120
            while page.evaluate("window.__drawn") is None:
                if time.monotonic() > deadline:
                    raise SystemExit(f"{path.name}: no table row drawn after 120 s")
                time.sleep(0.02)
            rows, drawn = page.evaluate("[window.__rows, window.__drawn]")
            time.sleep(pause)
            painted, settled = page.evaluate(CLICK)
            if errors:
                raise SystemExit(f"{path.name}: the page threw: {errors}")
            return rows / 1000, drawn / 1000, painted / 1000, settled / 1000
        finally:
            context.close()


    def close(self) -> None:
        self.browser.close()


def show_browser(reports: dict[str, Path], folder: Path, repeat: int, base: Path | None) -> None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("BROWSER: skipped, Playwright's Python client is not installed\n")
        return
    if not CHROMIUM.exists():
        print(f"BROWSER: skipped, no Chromium at {CHROMIUM}\n")
        return
    print(f"BROWSER: report.html from file:// in headless Chromium, median of {repeat} fresh contexts; from navigation start to the")
    print("first table rows in the document and the frame drawn after them, then a click on the first row until its window shows")
    print("the attempt's dialogue and a frame is drawn, clicked at once (as soon as the rows are drawn) and after the page has been")
    print("idle for a second (as a reader clicks; a fresh context each); 'settled': until the page is idle again after that frame.")
    print("Baseline: a static page of the same byte size (its bytes in an inert JSON block, a row, a dialog)")
    if base is not None:
        print(f"'before': the same run's report built by the convy in {base}, measured in turn with this one")
    pages: dict[str, Path] = {}
    for name, path in reports.items():
        if base is not None:
            before = folder / f"before-{name}.html"
            environment = dict(os.environ, PYTHONPATH=str(base))
            subprocess.run([sys.executable, "-c", BUILD, str(path.parent), str(before)], check=True, env=environment)
            pages[f"{name} before"] = before
        pages[name] = path
    print(f"  {'report':<24}{'size':>11}{'drawn':>12}{'drawn/base':>11}{'window':>12}{'settled':>12}{'after idle':>12}{'settled':>12}{'baseline':>12}")
    with sync_playwright() as playwright:
        browser = Browser(playwright)
        try:
            browser.opened(next(iter(reports.values())))  # warm-up: the first opening also pays for the browser's start
            floors: dict[str, Path] = {}
            for name, path in pages.items():
                floors[name] = folder / f"baseline-{name.replace(' ', '-')}.html"
                floors[name].write_text(Baseline(path.stat().st_size).html(), encoding="utf-8")
                assert abs(floors[name].stat().st_size - path.stat().st_size) < 16
            opened: dict[str, list[Opened]] = {name: [] for name in pages}
            floor: dict[str, list[Opened]] = {name: [] for name in pages}
            for _ in range(max(1, repeat)):  # before and after in turn, so that the load falls on both alike
                for name, path in pages.items():
                    opened[name].append(browser.opened(path))
                    floor[name].append(browser.opened(floors[name]))
            for name, path in pages.items():
                page, static = Opened.median(opened[name]), Opened.median(floor[name])
                print(
                    f"  {name:<24}{size(path.stat().st_size):>11}{seconds(page.drawn):>12}{page.drawn / static.drawn:>10.1f}x"
                    f"{seconds(page.window):>12}{seconds(page.settled):>12}{seconds(page.idle):>12}{seconds(page.idle_settled):>12}{seconds(static.idle):>12}"
                )
        finally:
            browser.close()
    print()


# --- convy compare ---------------------------------------------------------------------------------


def show_compare(project: Path, base: str, candidate: str, repeat: int) -> None:
    command = [sys.executable, "-m", "convy", "-C", str(project), "compare", base, candidate]
    reading = [sys.executable, "-c", "import sys; from pathlib import Path; from convy.runs import Runs; Runs(Path(sys.argv[1])).read()", str(project / "results")]
    environment = dict(os.environ, PYTHONPATH=str(Path(convy.__file__).resolve().parent.parent))

    def ran(argv: list[str]) -> Callable[[], None]:
        def run() -> None:
            done = subprocess.run(argv, capture_output=True, text=True, env=environment)
            if done.returncode != 0:
                raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr}")

        return run

    command_time, _ = best(repeat, ran(command))
    reading_time, _ = best(repeat, ran(reading))
    said = subprocess.run(command, capture_output=True, text=True, env=environment).stdout.strip().splitlines()
    runs, _ = Runs(project / "results").read()
    by_id = {run.file.spec.id: run for run in runs}
    attempts = sum(len(run.outcomes) for run in runs)
    page = project / "results" / "compare" / f"{base}--{candidate}.html"
    print("COMPARE: python -m convy compare BASE CANDIDATE (the real command, a subprocess); baseline: a subprocess that imports")
    print("convy and reads the same two run folders with Runs, nothing else (the command reads each twice: to compare, and for the index)")
    print(f"  {'runs':<30}{'attempts':>10}{'compare':>12}{'baseline':>12}{'ratio':>8}{'page':>11}")
    shape = f"2 x {len(by_id[base].file.spec.scenarios)} scenarios x {by_id[base].file.spec.attempts}"
    print(f"  {shape:<30}{attempts:>10,}{seconds(command_time):>12}{seconds(reading_time):>12}{command_time / reading_time:>7.1f}x{size(page.stat().st_size):>11}")
    parts = {  # once each: they only say where the command's time goes
        "Runs.read()": best(1, lambda: Runs(project / "results").read())[0],
        "Comparison.view()": best(1, lambda: Comparison(by_id[base], by_id[candidate]).view())[0],
    }
    view = Comparison(by_id[base], by_id[candidate]).view()
    parts["ComparisonPage.html()"] = best(1, lambda: ComparisonPage(view).html())[0]
    print("  parts, in this process, once each: " + ", ".join(f"{name} {seconds(value).strip()}" for name, value in parts.items()))
    print("  it said: " + " | ".join(said))
    print()


# --- main ------------------------------------------------------------------------------------------


class Shape(msgspec.Struct, frozen=True):
    scenarios: int
    attempts: int

    @classmethod
    def parsed(cls, text: str) -> Shape:
        scenarios, _, attempts = text.lower().partition("x")
        return cls(int(scenarios), int(attempts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", nargs="+", default=["100x10", "500x20", "10000x1", "10x1000"], help="reports to build, as SCENARIOSxATTEMPTS")
    parser.add_argument("--compare", default="200x50", help="the two runs convy compare compares, as SCENARIOSxATTEMPTS")
    parser.add_argument("--only", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="where to play the runs (default: a new temporary folder)")
    parser.add_argument("--keep", type=Path, help="play the runs there and keep them")
    parser.add_argument("--base", type=Path, help="a convy's src folder (git archive COMMIT src | tar -x -C DIR): its report of the same run is opened too ('before')")
    options = parser.parse_args()
    header(options)
    root = options.keep or Path(tempfile.mkdtemp(prefix="convy-pages-", dir=options.dir))
    root.mkdir(parents=True, exist_ok=True)
    try:
        started = time.perf_counter()
        reports: dict[str, Path] = {}
        if {"build", "size", "browser"} & set(options.only):
            built: list[Built] = []
            for number, text in enumerate(options.runs):
                shape = Shape.parsed(text)
                name = f"run-{shape.scenarios}x{shape.attempts}"
                clock = time.perf_counter()
                folder = Played(shape.scenarios, shape.attempts, name).play(root / "results", seed=number)
                print(f"played {name}: {shape.scenarios * shape.attempts:,} attempts in {time.perf_counter() - clock:.1f} s")
                one, html = Report(folder, options.repeat).built()
                built.append(one)
                reports[name] = folder / "report.html"
                reports[name].write_text(html, encoding="utf-8")
            print()
            if "build" in options.only:
                show_build(built)
            if "size" in options.only:
                show_size(built)
            if "browser" in options.only:
                show_browser(reports, root, options.repeat, options.base)
        if "compare" in options.only:
            shape = Shape.parsed(options.compare)
            project = root / "project"
            clock = time.perf_counter()
            Played(shape.scenarios, shape.attempts, "base").play(project / "results", seed=101)
            Played(shape.scenarios, shape.attempts, "candidate", lean=0.03).play(project / "results", seed=102)
            print(f"played base and candidate: 2 x {shape.scenarios * shape.attempts:,} attempts in {time.perf_counter() - clock:.1f} s\n")
            show_compare(project, "base", "candidate", options.repeat)
        print(f"whole benchmark: {time.perf_counter() - started:.0f} s" + (f"; runs and pages kept in {root}" if options.keep else ""))
    finally:
        if not options.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
