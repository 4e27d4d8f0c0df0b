"""Every page on a phone (390×844, a touch screen, as Playwright's ``is_mobile``/``has_touch`` make
one) and on a desktop (1320×900), in real headless Chromium: nothing wider than the screen, the
first failing scenario on the first screen, ids wrapped only where a word ends, no text under
11 px, no key hints on a touch screen, each side-by-side cell saying its side, and a run of code
checks only labelled as what it was (no judge, no simulated user, no price).

The runs are played by convy's bench with its fakes (``test_page.Played``), the variants report
by the matrix demo; the browser and its visits are ``test_browser``'s.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_browser import POLL_MS, Visit, chromium, shows
from test_page import Played

from convy import Answer, Bench, Call, Models, Reported, RunJournal, RunSpec, Scenarios, Skipped, Usage
from convy.comparison import Comparison, comparable
from convy.fakes import FakeAgent
from convy.index import Index
from convy.page import ComparisonPage, IndexPage, ReportPage
from convy.report import Summary
from convy.views import LiveView

pytestmark = pytest.mark.timeout(900)

PHONE = (390, 844)
DESKTOP = (1320, 900)
DEMO = Path(__file__).resolve().parents[2] / "bench" / "matrix_demo.py"
ADVICE = "needs a model for the judge: JUDGE_MODEL is not set; set JUDGE_MODEL=<model> in .env (or CONVY_JUDGE_MODEL in the environment)"
LONG = "The shop's database stayed down while the run played: " + "this notice says at length what the page says elsewhere. " * 8

WIDTH = "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
# The smallest text drawn, as seen: an SVG's text scaled as its drawing is.
SMALLEST = """() => {
  let least = [99, ""];
  for (const node of document.querySelectorAll("body *")) {
    const own = [...node.childNodes].some((kid) => kid.nodeType === 3 && kid.textContent.trim());
    if (!own || !node.getClientRects().length || node.closest("option, noscript, dialog:not([open])")) continue;
    const style = getComputedStyle(node);
    if (style.visibility === "hidden") continue;
    let size = parseFloat(style.fontSize);
    const svg = node.closest("svg");
    if (svg && svg.viewBox.baseVal && svg.viewBox.baseVal.width) size *= svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    if (size < least[0]) least = [size, node.tagName + " '" + node.textContent.trim().slice(0, 20) + "'"];
  }
  return least;
}"""
# Each id's lines, and the places where a line starts after a character that ends no word.
BROKEN = """(selector) => {
  const found = [];
  for (const node of document.querySelectorAll(selector)) {
    if (!node.getClientRects().length) continue;
    const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
    let top = null, before = "", lines = 1, broken = 0;
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
      for (let i = 0; i < text.length; i++) {
        const range = document.createRange(); range.setStart(text, i); range.setEnd(text, i + 1);
        const rect = range.getClientRects()[0];
        if (!rect) continue;
        if (top !== null && rect.top > top + 2) { lines++; if (!/[\\s\\-\\/_.·]/.test(before)) broken++; }
        top = rect.top; before = text.data[i];
      }
    }
    found.push([node.textContent, lines, broken]);
  }
  return found;
}"""
SHOWN = "(selector) => [...document.querySelectorAll(selector)].filter((node) => node.getClientRects().length).length"
# The first row of a failing scenario (of any, for a run where failing ones come further down).
FIRST_ROW = """(failing) => {
  const row = [...document.querySelectorAll("#scenarios tbody tr.row")].find((tr) => !failing || /never passes|flaky/.test(tr.innerText));
  return row ? row.getBoundingClientRect().bottom + window.scrollY : null;
}"""


def unpriced(text: str) -> Answer:
    """The code-checks run's agent: it refunds when given the order, and names no price."""
    if "A-1043" in text:
        return Answer("Done: your refund is on its way.", Usage(30, 12), (Call("issue_refund", {"order": "A-1043"}, Reported({"ok": True}), 0.1),))
    return Answer("Sorry about that! Which order was it?", Usage(20, 9))


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every page: a report whose run skipped five scenarios for one reason and one with a long
    one, a second named run, their comparison, the index, a report being written live, a run of
    code checks only, and the variants demo's report."""
    folder = tmp_path_factory.mktemp("phone")
    played = Played(folder)
    skips = tuple(Skipped(f"billing/{name}", (ADVICE,)) for name in ("invoice", "refund-window", "vat", "address-change", "duplicate-charge"))
    played.play("shop", "20260105-093000-a1b2", refunds=True, attempts=6, name="prompt A", skipped=(*skips, Skipped("zz/long", (LONG,))))
    played.play("shop", "20260106-093000-c3d4", refunds=False, attempts=6, name="prompt B", skipped=skips)
    code = folder / "code-scenarios"
    code.mkdir()
    (code / "refund.yaml").write_text(
        'script: ["Hi, my kettle arrived broken.", "It\'s order A-1043."]\njudge:\n  - check: {called: issue_refund}\n  - check: {said: "refund"}\n',
        encoding="utf-8",
    )
    bench = Bench(FakeAgent(unpriced), Models())
    spec = RunSpec(id="20260107-093000-e5f6", agent="checks", scenarios=Scenarios(code).every(), attempts=3, limits=bench.limits, convy="0.1.0")
    asyncio.run(RunJournal(folder / "results" / "checks" / spec.id).play(spec, bench))
    runs = played.runs()
    written: dict[str, Path] = {}
    for run in runs.values():
        path = run.folder / "report.html"
        path.write_text(ReportPage(Summary(run)).html(), encoding="utf-8")
        written[run.file.spec.id] = path
    live = runs["20260106-093000-c3d4"].folder / "live.html"
    live.write_text(ReportPage(Summary(runs["20260106-093000-c3d4"]), LiveView(every=3600, written="2026-01-06T09:30:00+00:00", stale=1e9)).html(), encoding="utf-8")
    written["live"] = live
    compare = folder / "results" / "compare" / "20260105-093000-a1b2--20260106-093000-c3d4.html"
    compare.parent.mkdir(parents=True)
    compare.write_text(ComparisonPage(Comparison(runs["20260105-093000-a1b2"], runs["20260106-093000-c3d4"]).view()).html(), encoding="utf-8")
    written["compare"] = compare
    index = folder / "results" / "index.html"
    index.write_text(IndexPage(Index(tuple(runs.values()), (), (compare.stem,), comparable).view()).html(), encoding="utf-8")
    written["index"] = index
    done = subprocess.run([sys.executable, str(DEMO), str(folder / "matrix"), "-k", "2"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (written["variants"],) = (folder / "matrix" / "results" / "bot").glob("*/report.html")
    return written


@pytest.fixture(scope="module")
def browser(pages: dict[str, Path]) -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def visit(browser: Any) -> Iterator[Any]:
    made: list[Visit] = []

    def new(size: tuple[int, int], touch: bool) -> Visit:
        made.append(Visit(browser, size=size, touch=touch))
        return made[-1]

    yield new
    for one in made:
        one.close()
        assert one.offsite() == [] and one.errors == [], (one.offsite(), one.errors)


def fits(page: Any, width: int) -> None:
    """Nothing on the page is wider than the screen."""
    assert page.evaluate(WIDTH) == width


def readable(page: Any) -> None:
    size, where = page.evaluate(SMALLEST)
    assert size >= 11, f"text of {size:.1f} px: {where}"


def whole(page: Any, selector: str, most: int) -> None:
    """Every id wraps only where one of its words ends, on at most ``most`` lines."""
    found = page.evaluate(BROKEN, selector)
    assert found, selector
    for text, lines, broken in found:
        assert broken == 0 and lines <= most, (text, lines, broken)


@pytest.mark.parametrize("name", ["report", "live", "variants"])
@pytest.mark.parametrize(("size", "touch"), [(PHONE, True), (DESKTOP, False)])
def test_a_report_shows_what_failed_on_the_first_screen(pages: dict[str, Path], visit: Any, name: str, size: tuple[int, int], touch: bool) -> None:
    """The first failing scenario's row (of the variants demo, whose failing ones sort further
    down: the first row) ends on the first screen, under a long notice and five scenarios skipped
    for one reason; the page is no wider than the screen, its filters
    included; no text under 11 px; no key hints on a touch screen; an id never broken mid-word."""
    path = pages[{"report": "20260105-093000-a1b2", "live": "live", "variants": "variants"}[name]]
    page = visit(size, touch).open(path)
    page.wait_for_selector("#scenarios tbody tr.row")
    fits(page, size[0])
    readable(page)
    whole(page, "#scenarios .id", 3)
    bottom = page.evaluate(FIRST_ROW, name != "variants")
    assert bottom is not None and bottom <= size[1], bottom
    assert page.evaluate(SHOWN, ".keys") == (0 if touch else 1)
    assert ("( / )" in page.get_attribute("#search", "placeholder")) is not touch
    if name == "report":
        assert page.evaluate("() => document.getElementById('app').textContent").count(".env") == 1  # said once, for its five scenarios
        assert "prompt A" in page.inner_text("header.top")
        page.click("#skipped summary")
        expect_text = page.inner_text("#skipped")
        assert "5 scenarios (billing/invoice, billing/refund-window, billing/vat, billing/address-change, billing/duplicate-charge)" in expect_text
    page.click("#scenarios tbody tr.row")
    page.wait_for_selector("dialog[open] .window-body .attempt svg.timeline")
    fits(page, size[0])
    page.wait_for_function(f"() => document.querySelector('dialog[open] svg.timeline').getBoundingClientRect().width <= {size[0]}", polling=POLL_MS)
    readable(page)  # the window's timeline too: drawn at its frame's width, its lane names stay 11 px or more


@pytest.mark.parametrize(("size", "touch"), [(PHONE, True), (DESKTOP, False)])
def test_the_index_fits_and_keeps_run_ids_whole(pages: dict[str, Path], visit: Any, size: tuple[int, int], touch: bool) -> None:
    """The index is no wider than the screen (its claim, agent and compare choices included);
    each run id is on at most two lines, broken after a "-"; the pass rate is on the screen; the
    trend's labels are 11 px; the run's name is shown."""
    page = visit(size, touch).open(pages["index"])
    fits(page, size[0])
    readable(page)
    whole(page, "#runs a.id", 2)
    rate = page.locator("#runs tbody tr.row .rate").first.bounding_box()
    assert rate is not None and 0 <= rate["x"] and rate["x"] + rate["width"] <= size[0]
    assert "prompt B" in page.inner_text("#runs")
    assert page.evaluate(SHOWN, ".keys") == (0 if touch else 1)


@pytest.mark.parametrize(("size", "touch"), [(PHONE, True), (DESKTOP, False)])
def test_the_side_by_side_says_each_cells_side_when_stacked(pages: dict[str, Path], visit: Any, size: tuple[int, int], touch: bool) -> None:
    """On a phone the two runs' columns stack, and every cell says whose it is; on a desktop the
    column heads say it. The page is no wider than the screen either way."""
    page = visit(size, touch).open(pages["compare"])
    fits(page, size[0])
    readable(page)
    assert "prompt A → prompt B" in page.inner_text("header.top")
    page.locator("#app tbody tr.row").first.click()
    page.wait_for_selector("#pair .cell")
    fits(page, size[0])
    page.click("details.timelines > summary")
    page.wait_for_function("() => [...document.querySelectorAll('details.timelines svg.timeline')].every((svg) => svg.getBoundingClientRect().width < 1000)", polling=POLL_MS)
    readable(page)
    said = page.evaluate("() => [...document.querySelectorAll('#pair > .cell')].map((cell) => cell.innerText.trim().split('\\n')[0])")
    assert len(said) >= 6
    if touch:
        assert all(line.startswith(("Before · 20260105-093000-a1b2", "After · 20260106-093000-c3d4")) for line in said), said
    else:
        assert not any(line.startswith(("Before ·", "After ·")) for line in said), said


@pytest.mark.parametrize(("size", "touch"), [(PHONE, True), (DESKTOP, False)])
def test_a_run_of_code_checks_is_labelled_as_what_it_was(pages: dict[str, Path], visit: Any, size: tuple[int, int], touch: bool) -> None:
    """No judge, no simulated user, no price: said as such, without a warning's colour; no
    right/wrong buttons on decisions made by code; its attempts stopped as their script ended."""
    page = visit(size, touch).open(pages["20260107-093000-e5f6"])
    fits(page, size[0])
    if touch:
        page.click("details.more-facts summary")
    header = page.inner_text("header.top")
    assert "user model\nnone: every turn scripted" in header and "judge\nnone: checks decided by code" in header, header
    assert "absent" not in header
    cost = page.locator(".tile", has=page.locator("h2", has_text="Total cost"))
    assert "no price known for its 6 requests" in cost.inner_text()
    assert cost.locator(".st-flaky").count() == 0 and "incomplete" not in cost.inner_text()
    shows(page, ["refund"])
    page.click("#scenarios tbody tr.row")
    page.wait_for_function("() => document.querySelector('dialog[open] .window-body') && /stop:/.test(document.querySelector('dialog[open] .window-body').innerText)", polling=POLL_MS)
    body = page.inner_text("dialog[open] .window-body")
    assert "stop: script played out" in body and "user finished" not in body
    assert page.locator("dialog[open] button.label-mark").count() == 0
    fits(page, size[0])
