"""The pages in a real headless Chromium, opened from file:// as a reader opens them.

The runs are played by convy's bench with its fakes (``test_page.Played``). Each test opens a
page in a fresh browser context that records every request and every script error: a test fails
if any request goes anywhere but file:// or data:, or if a script throws. Screenshots of each
page, light and dark, go to /tmp/convy-shots/.

Chromium is the system's (Debian's ``chromium`` package at /usr/bin/chromium), driven by
Playwright's Python client; Playwright's own browsers are never downloaded.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
from support.waiting import wait_until

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
SHOTS = Path("/tmp/convy-shots")

if not CHROMIUM.exists():
    pytest.skip(f"no Chromium at {CHROMIUM}: install Debian's chromium package to run the browser tests", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright's Python client is not installed (pip install playwright)")
expect = sync_api.expect


@contextmanager
def chromium() -> Iterator[Any]:
    """The system's Chromium, headless, launched by Playwright; closed when the block ends."""
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield launched
        finally:
            launched.close()


# Playwright gives an assertion 5 s and an action 30 s before it fails: on a loaded machine a big
# page can take longer to draw, and a test must not fail for the machine's speed. These waits end
# as soon as what they wait for holds; the bound only stops a page that never gets there.
PATIENCE_MS = 300_000
expect.set_options(timeout=PATIENCE_MS)
# A page's condition is polled every 100 ms, not on each animation frame (Playwright's default):
# a headless Chromium on a busy machine can starve a page of frames, and a wait polled on them
# then never looks again, though what it waits for holds.
POLL_MS = 100
# pytest-timeout's 120 s (pyproject) would cut a wait short of that patience: each test of this
# module is given room for it.
pytestmark = pytest.mark.timeout(900)

from test_page import Played  # noqa: E402

from convy import Answer, Bench, Call, Limits, Models, Reported, RunJournal, RunSpec, Scenarios, Thought, Usage  # noqa: E402
from convy.fakes import FakeAgent, FakeJudge  # noqa: E402
from convy.page import ComparisonPage, ReportPage  # noqa: E402
from convy.report import Summary  # noqa: E402
from convy.runs import Runs  # noqa: E402

CONTRAST = """() => {
  const parse = (text) => {
    const found = /rgba?\\(([^)]+)\\)/.exec(text);
    if (!found) return null;
    const parts = found[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return [parts[0], parts[1], parts[2], parts.length > 3 ? parts[3] : 1];
  };
  const luminance = (rgb) => {
    const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(rgb[0]) + 0.7152 * f(rgb[1]) + 0.0722 * f(rgb[2]);
  };
  const background = (node) => {
    const layers = [];
    for (let at = node; at; at = at.parentElement) {
      const colour = parse(getComputedStyle(at).backgroundColor);
      if (colour && colour[3] > 0) {
        layers.push(colour);
        if (colour[3] >= 0.99) break;
      }
    }
    let rgb = [255, 255, 255];
    for (const layer of layers.reverse()) rgb = rgb.map((c, i) => c * (1 - layer[3]) + layer[i] * layer[3]);
    return rgb;
  };
  const low = [];
  let checked = 0;
  const root = document.querySelector("dialog[open]") || document.body;
  for (const node of root.querySelectorAll("*")) {
    if (node.closest("svg, option, :disabled, noscript")) continue;
    const own = [...node.childNodes].some((kid) => kid.nodeType === 3 && kid.textContent.trim());
    if (!own || !node.getClientRects().length) continue;
    const style = getComputedStyle(node);
    if (style.visibility === "hidden") continue;
    const fg = parse(style.color);
    const bg = background(node);
    const a = luminance(fg.slice(0, 3)), b = luminance(bg);
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    checked++;
    if (ratio < 4.5) low.push(node.tagName + "." + node.className + " '" + node.textContent.trim().slice(0, 30) + "' " + ratio.toFixed(2));
  }
  return { checked, low };
}"""


class Visit:
    """One page in a fresh context: the requests it made and the errors its scripts threw."""

    def __init__(self, browser: Any, scheme: str = "light", policy: bool = True, size: tuple[int, int] = (1320, 900), touch: bool = False) -> None:
        # ``touch``: a phone's browser (a touch screen that reports no hover, the viewport's meta tag obeyed).
        self.context = browser.new_context(
            viewport={"width": size[0], "height": size[1]}, color_scheme=scheme, bypass_csp=not policy, is_mobile=touch, has_touch=touch)
        self.context.set_default_timeout(PATIENCE_MS)
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("console", lambda message: self.errors.append(message.text) if message.type == "error" else None)

    def open(self, path: Path, fragment: str = "") -> Any:
        # The page in front: headless Chromium may stop giving frames to a page behind another
        # (a test that opens several), and every wait for what a page draws waits on its frames.
        self.page.bring_to_front()
        self.page.goto(path.as_uri() + (f"#{fragment}" if fragment else ""))
        # Asked from here, not with wait_for_selector: Playwright polls a selector on the page's
        # animation frames, which a loaded machine's headless Chromium may stop giving (a clean
        # clone waited out 300 s on a page whose script had run). A page that never draws fails
        # with what its scripts threw.
        drawn = wait_until(
            lambda: self.page.evaluate("document.querySelector('#app > *') !== null") or self.errors,
            f"{path.name} to draw", timeout=PATIENCE_MS / 1000, every=0.02,
        )
        if drawn is not True:
            raise AssertionError(f"{path.name} drew nothing: its scripts said {self.errors}")
        return self.page

    def close(self) -> None:
        self.context.close()

    def offsite(self) -> list[str]:
        return [url for url in self.requests if not (url.startswith("file://") or url.startswith("data:"))]


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return Played(tmp_path_factory.mktemp("browser")).made().pages()


@pytest.fixture(scope="module")
def browser(pages: dict[str, Path]) -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def visit(browser: Any) -> Iterator[Callable[..., Visit]]:
    """Fresh visits; each one must have asked nothing of the network and thrown nothing."""
    made: list[Visit] = []

    def new(scheme: str = "light", policy: bool = True) -> Visit:
        made.append(Visit(browser, scheme, policy))
        return made[-1]

    yield new
    for one in made:
        one.close()
        assert one.offsite() == [], one.offsite()
        assert one.errors == []


def rows(page: Any) -> list[str]:
    return page.eval_on_selector_all("#scenarios tbody tr.row", "rows => rows.map(row => row.dataset.id)")


ROWS = "[...document.querySelectorAll('#scenarios tbody tr.row')].map((row) => row.dataset.id)"


RUNS = "[...document.querySelectorAll('#runs tbody tr.row')].map((row) => row.dataset.run)"


def shows(page: Any, wanted: list[str], start: int = 0, end: int | None = None, listed: str = ROWS) -> None:
    """Wait until the rows from ``start`` to ``end`` (of the scenarios, or those ``listed`` gives)
    are ``wanted``; fail showing the rows drawn."""
    try:
        page.wait_for_function(
            f"([wanted, start, end]) => JSON.stringify({listed}.slice(start, end === null ? undefined : end)) === JSON.stringify(wanted)",
            arg=[wanted, start, end], polling=POLL_MS)
    except sync_api.TimeoutError:
        raise AssertionError(f"the rows are {page.evaluate(listed)}, not {wanted} at [{start}:{end}]") from None


def hashed(page: Any, part: str, present: bool = True) -> None:
    """Wait until the page's hash holds ``part`` (or, with ``present`` false, no longer holds it)."""
    try:
        page.wait_for_function("([part, present]) => location.hash.includes(part) === present", arg=[part, present], polling=POLL_MS)
    except sync_api.TimeoutError:
        raise AssertionError(f"the hash {page.evaluate('location.hash')!r} {'lacks' if present else 'holds'} {part!r}") from None


def focused(page: Any, wanted: str) -> None:
    """Wait until the element with the focus has ``wanted`` as its id or its row's id."""
    try:
        page.wait_for_function(
            "(wanted) => [document.activeElement.id, document.activeElement.dataset.id].includes(wanted)", arg=wanted, polling=POLL_MS)
    except sync_api.TimeoutError:
        raise AssertionError(f"the focus is on {page.evaluate('document.activeElement.outerHTML.slice(0, 80)')}") from None


def test_report_shows_header_tiles_and_table(pages: dict[str, Path], visit: Callable[..., Visit]) -> None:
    """The report draws its header, every tile and one row per scenario with its status in words."""
    page = visit().open(pages["2026-01-05-before"])
    header = page.inner_text("header.top")
    for said in ("shop · 2026-01-05-before", "✓ finished", "fake-user", "fake-judge", "9f2c4e1ab37d", "0.1.0", "30 of 30 planned"):
        assert said in header
    page.click("#skipped summary")  # a notice beside the verdict is folded to its first line
    notices = "\n".join(page.locator(".notice").all_inner_texts())  # the pass rule's verdict, then the run's notes
    assert "billing/invoice" in notices
    assert "✗ 2 scenarios failed the pass rule" in notices
    tiles = page.inner_text(".tiles")
    for said in ("PASS RATE", "95% CI", "bootstrap across scenarios", "passed of", "✓ 2 always pass", "~ 1 flaky", "✗ 1 never pass",
                 "NOT JUDGED", "6 judge failed", "AGENT TOKENS", "cached", "TOTAL COST", "incomplete", "unpriced", "ANSWER TIME", "p95",
                 "USER MODEL AND JUDGE", "user model:", "judge:", "CONSISTENCY", "pass^6"):
        assert said in tiles, said
    shows(page, ["hostile", "orders/crash", "orders/unsure", "refunds/damaged", "refunds/late"])
    table = page.inner_text("#scenarios")
    for said in ("✓ always passes", "~ flaky", "✗ never passes", "– not judged", "6/6", "3/6", "0/6", "– 6 not judged"):
        assert said in table, said
    not_judged = page.locator(".tile", has=page.locator("h2", has_text="Not judged"))
    assert not_judged.locator(".big").inner_text() == "6"
    claims = lambda scenario: page.inner_text(f"#scenarios tr[data-id='{scenario}'] .claims-cell").strip()  # noqa: E731
    assert claims("refunds/late") == "9/12 75%"
    assert claims("refunds/damaged") == "12/12 100%"
    assert claims("orders/crash") == "—"
    assert page.locator("#scenarios tr[data-id='refunds/damaged'] .claims-cell .mark-held").count() == 1


def test_report_filters_sorts_searches_and_groups(pages: dict[str, Path], visit: Callable[..., Visit]) -> None:
    """Status, tag and claim filters, the search, sorting by pass rate and grouping by folder or
    tag each change the rows, and each is written to the hash."""
    page = visit().open(pages["2026-01-05-before"])
    page.select_option("#filter-status", "flaky")
    shows(page, ["refunds/late"])
    hashed(page, "status=flaky")
    page.select_option("#filter-status", "")
    page.select_option("#filter-tag", "orders")
    shows(page, ["orders/crash", "orders/unsure"])
    page.select_option("#filter-tag", "")
    page.select_option("#filter-claim", "The agent gives a date.")
    shows(page, ["refunds/late"])
    assert page.inner_text("#scenarios tbody tr.row .claims-cell").strip() == "3/6"
    page.select_option("#filter-claim", "")
    page.fill("#search", "kettle")
    shows(page, [])
    assert "No scenario matches" in page.inner_text("#scenarios tbody")
    page.fill("#search", "refund")
    shows(page, ["refunds/damaged", "refunds/late"])
    page.fill("#search", "")
    page.click("#scenarios thead button:has-text('Passed')")
    shows(page, ["hostile", "refunds/damaged"], 0, 2)
    shows(page, ["orders/unsure"], -1)
    page.click("#scenarios thead button:has-text('Passed')")
    shows(page, ["orders/crash", "refunds/late"], 0, 2)
    hashed(page, "sort=rate")
    hashed(page, "dir=asc")
    page.click("#scenarios thead button:has-text('Claims held')")
    shows(page, ["refunds/late", "orders/crash", "orders/unsure"], 2)
    hashed(page, "sort=claims")
    page.select_option("#group", "folder")
    groups = page.locator("#scenarios tbody tr.group")
    expect(groups).to_have_text(["folder orders · 2 scenarios", "folder refunds · 2 scenarios", "folder top folder · 1 scenario"])
    page.select_option("#group", "tag")
    expect(groups).to_have_text(["tag orders · 2 scenarios", "tag refunds · 2 scenarios", "tag smoke · 1 scenario", "tag no tag · 1 scenario"])


def test_scenario_window_shows_dialogue_steps_decisions_and_timeline(pages: dict[str, Path], visit: Callable[..., Visit]) -> None:
    """A row opens the window: the claim × attempt matrix with marks, then the attempt's
    decisions with reasons and confidence, its timeline lanes, and the dialogue with the agent's
    thoughts and tool calls, arguments and results, collapsed until asked."""
    page = visit().open(pages["2026-01-05-before"])
    page.click("#scenarios tr[data-id='refunds/damaged']")
    page.wait_for_selector("dialog#window[open] .attempt")
    matrix = page.inner_text("#matrix")
    assert "The agent offers a refund." in matrix and "called issue_refund with order='A-1043'" in matrix
    assert matrix.count("✓") >= 18 and "6/6" in matrix
    attempt = page.locator(".attempt")
    text = attempt.inner_text()
    for said in ("✓ passed", "stop: script played out", "✓ held", "decided by FakeJudge", "confidence 90%", "by code",
                 "agent called issue_refund in turn 2", "Hi, my kettle arrived broken.", "refund of $39.90",
                 "Agent's steps: 1 thought, 2 tool calls, 1 pause to ask"):
        assert said in text, said
    assert page.locator(".attempt strong:has-text('refund of $39.90')").count() == 1
    assert "(https://example.com/refunds)" in text and page.locator(".attempt a").count() == 0
    assert page.locator("svg.timeline rect.span-agent").count() == 2
    assert page.locator("svg.timeline rect.span-judge").count() == 1
    # Collapsed, the steps are not drawn at all: only their summary line is in the window.
    steps = page.locator("details.steps").first
    assert not steps.evaluate("node => node.open")
    expect(page.locator("details.step.call")).to_have_count(0)
    expect(page.locator("pre:has-text('\"paid\": 39.9')")).to_have_count(0)
    page.click("button.expand")
    expect(page.locator("pre:has-text('\"paid\": 39.9')").first).to_be_visible()
    # The pause to ask before the refund, just before its call: who answered, and what.
    pause = page.locator("details.step.asked").first
    expect(pause).to_contain_text("✋ asked May I run issue_refund")
    expect(pause).to_contain_text('the scenario\'s approvals answered "approve"')
    kinds = page.locator(".step-list:has(details.step.asked)").first.evaluate("node => [...node.children].map((kid) => kid.className).join(',')")
    assert kinds == "step thought,step call,step asked,step call"
    expect(page.locator("pre:has-text('\"amount\": 39.9')").first).to_be_visible()
    page.click("#window .attempt-tabs button:has-text('attempt 3')")
    page.wait_for_selector(".attempt[data-attempt='3']")
    hashed(page, "a=3")
    page.click("#window button.close")
    expect(page.locator("dialog#window[open]")).to_have_count(0)
    hashed(page, "s=", present=False)


def test_failed_and_unjudged_attempts_say_why(pages: dict[str, Path], visit: Callable[..., Visit]) -> None:
    """A crashed attempt shows the agent's failure and its stop; one the judge could not decide
    says so, and an unreported tool result says it was not reported."""
    page = visit().open(pages["2026-01-05-before"], "s=orders/crash")
    attempt = page.locator(".attempt")
    for said in ("✗ failed", "agent failed", "the shop's database is down"):
        expect(attempt).to_contain_text(said, use_inner_text=True)
    # Only the hash changes: the window is drawn anew, so wait for the new scenario's attempt.
    page.goto(pages["2026-01-05-before"].as_uri() + "#s=orders/unsure")
    for said in ("– not judged", "judge failed", "not judged (judge)"):
        expect(attempt).to_contain_text(said, use_inner_text=True)
    page.goto(pages["2026-01-06-after"].as_uri() + "#s=refunds/damaged")
    page.wait_for_selector(".attempt")
    page.click("button.expand")
    expect(attempt).to_contain_text("not reported by the agent", use_inner_text=True)


def test_a_window_opened_again_before_its_close_event_keeps_its_scenario(pages: dict[str, Path], visit: Callable[..., Visit]) -> None:
    """The dialog's close event comes in a task after it shut: a window closed and opened again in
    one task (Esc and a quick click) is not cleared by that late close, and the address names it."""
    page = visit().open(pages["2026-01-05-before"])
    page.click("#scenarios tr[data-id='refunds/damaged']")
    page.wait_for_selector("dialog#window[open] .attempt .msg")
    page.evaluate("""() => { document.querySelector("dialog#window").close();
                             document.querySelector("#scenarios tr[data-id='refunds/damaged']").click(); }""")
    expect(page.locator("dialog#window[open] .attempt .msg").first).to_be_visible()
    hashed(page, "s=refunds%2Fdamaged")
    page.keyboard.press("Escape")
    hashed(page, "s=refunds%2Fdamaged", present=False)


def test_a_window_whose_chunk_is_inflated_opens_whole_in_the_task_of_its_click(pages: dict[str, Path], visit: Callable[..., Visit]) -> None:
    """Once a scenario's chunk has been inflated (here by opening its window once), a click or
    Enter on its row draws the attempt's dialogue before the click returns: no "Loading" line, no
    task between the click and the frame that shows the window."""
    page = visit().open(pages["2026-01-05-before"])
    page.click("#scenarios tr[data-id='refunds/damaged']")
    page.wait_for_selector("dialog#window[open] .attempt .msg")
    page.keyboard.press("Escape")
    expect(page.locator("dialog#window[open]")).to_have_count(0)
    shown = """() => ({open: !!document.querySelector("dialog#window[open]"), msg: !!document.querySelector("dialog#window[open] .attempt .msg"),
                      loading: !!document.querySelector("#window .loading")})"""
    clicked = page.evaluate(f"""() => {{ document.querySelector("#scenarios tr[data-id='refunds/damaged']").click(); return ({shown})(); }}""")
    assert clicked == {"open": True, "msg": True, "loading": False}
    hashed(page, "s=refunds%2Fdamaged")
    page.keyboard.press("Escape")
    hashed(page, "s=", present=False)
    focused(page, "refunds/damaged")
    entered = page.evaluate(
        f"""() => {{
          document.activeElement.dispatchEvent(new KeyboardEvent("keydown", {{key: "Enter", bubbles: true, cancelable: true}}));
          return ({shown})();
        }}"""
    )
    assert entered == {"open": True, "msg": True, "loading": False}


def test_keyboard_moves_opens_and_closes(pages: dict[str, Path], visit: Callable[..., Visit]) -> None:
    """/ focuses the search, j and k move between rows, Enter opens the window, arrows change the
    attempt, j moves to the next scenario inside it, and Esc closes it, leaving the row focused."""
    page = visit().open(pages["2026-01-05-before"])
    page.keyboard.press("/")
    focused(page, "search")
    page.keyboard.press("Escape")
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("k")
    page.keyboard.press("j")
    focused(page, "orders/crash")
    page.keyboard.press("Enter")
    page.wait_for_selector("dialog#window[open] .attempt[data-attempt='1']")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector(".attempt[data-attempt='2']")
    page.keyboard.press("j")
    page.wait_for_selector("dialog#window[open] .attempt")
    hashed(page, "s=orders%2Funsure")
    page.keyboard.press("Escape")
    page.wait_for_function("() => !location.hash.includes('s=')", polling=POLL_MS)
    expect(page.locator("dialog#window[open]")).to_have_count(0)
    focused(page, "orders/unsure")


def test_hash_link_reopens_the_same_view(pages: dict[str, Path], visit: Callable[..., Visit]) -> None:
    """A link with filters, sort, an open scenario and attempt reopens exactly that view, in a new
    page and when only the hash changes."""
    page = visit().open(pages["2026-01-05-before"])
    page.select_option("#filter-tag", "refunds")
    page.click("#scenarios thead button:has-text('Scenario')")
    page.click("#scenarios tr[data-id='refunds/late']")
    page.click("#window .attempt-tabs button:has-text('attempt 4')")
    page.wait_for_selector(".attempt[data-attempt='4']")
    hashed(page, "a=4")  # the hash is written after the frame that shows the attempt
    link = page.evaluate("location.href")  # page.url may not yet know of the hash the page just wrote
    other = visit().open(pages["2026-01-05-before"], link.split("#", 1)[1])
    other.wait_for_selector("dialog#window[open] .attempt[data-attempt='4']")
    assert other.input_value("#filter-tag") == "refunds"
    shows(other, ["refunds/damaged", "refunds/late"])
    assert other.get_attribute("#scenarios th[aria-sort='ascending']", "aria-sort") == "ascending"
    assert other.locator("#window .attempt-tabs button[aria-pressed='true']").inner_text().endswith("attempt 4")
    other.goto(pages["2026-01-05-before"].as_uri() + "#status=never&s=orders/crash&a=2")
    other.wait_for_selector(".attempt[data-attempt='2']")
    shows(other, ["orders/crash"])
    expect(other.locator("#filter-status")).to_have_value("never")
    other.goto(pages["2026-01-05-before"].as_uri() + "#status=never")
    other.wait_for_function("() => !document.querySelector('dialog#window[open]')", polling=POLL_MS)


@pytest.mark.parametrize("policy", [True, False], ids=["with-csp", "csp-bypassed"])
def test_hostile_text_is_shown_as_text_and_runs_nothing(pages: dict[str, Path], visit: Callable[..., Visit], policy: bool) -> None:
    """An answer carrying <script> and <img onerror> is shown as its characters; no script runs,
    no image is made, and a claim carrying </script> shows as text too. With the page's
    Content-Security-Policy bypassed too: the text is safe because it is text, not because the
    policy would stop it."""
    page = visit(policy=policy).open(pages["2026-01-05-before"], "s=hostile")
    page.wait_for_selector(".attempt")
    assert page.evaluate("typeof window.__pwned") == "undefined"
    text = page.inner_text(".attempt")
    assert "<script>window.__pwned=1</script>" in text
    assert '<img src=x onerror="window.__pwned=1">' in text
    assert "The agent stays calm </script><b>bold</b>." in page.inner_text("#matrix")
    assert "Say something </script><script>window.__pwned=1</script> nasty." in text
    assert page.locator(".attempt img, .attempt script, #matrix b").count() == 0
    assert page.locator(".msg-agent strong:has-text('still text')").count() == 1


def test_themes_follow_the_system_and_the_toggle_with_enough_contrast(pages: dict[str, Path], visit: Callable[..., Visit]) -> None:
    """The page takes the system's light or dark scheme, the toggle switches it and is remembered,
    and every text has a contrast of 4.5:1 or more in both themes, in the window too."""
    for scheme, background in (("light", "rgb(255, 255, 255)"), ("dark", "rgb(17, 20, 24)")):
        one = visit(scheme)
        page = one.open(pages["2026-01-05-before"])
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") == background
        for path in (pages["2026-01-05-before"], pages["comparison"], pages["index"]):
            page.goto(path.as_uri())
            page.wait_for_selector("#app > *")
            found = page.evaluate(CONTRAST)
            assert found["checked"] > 40 and found["low"] == [], (scheme, path.name, found["low"])
        page.goto(pages["2026-01-05-before"].as_uri() + "#s=refunds/damaged")
        page.wait_for_selector(".attempt")
        page.click("button.expand")
        found = page.evaluate(CONTRAST)
        assert found["checked"] > 40 and found["low"] == [], (scheme, "window", found["low"])
    page = visit("light").open(pages["2026-01-05-before"])
    page.click("button.theme")
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    expect(page.locator("body")).to_have_css("background-color", "rgb(17, 20, 24)")
    # The choice is kept in the browser's storage, which Chromium's renderer hands on to the browser
    # process in its own time; another page of the same renderer reads the renderer's copy, so it
    # does not tell that the browser has it (a clean clone on a loaded machine reloaded to the light
    # theme twice, once after another page had read "dark"). The page is reloaded until it comes
    # back dark: what is asserted is that it does, once the browser holds the choice.

    def reloaded() -> bool:
        page.reload()
        page.wait_for_selector("#app > *")
        return page.locator("html").get_attribute("data-theme") == "dark"

    wait_until(reloaded, "the page reloaded in the theme chosen", every=0.2)
    expect(page.locator("button.theme")).to_contain_text("Light theme")


def test_comparison_page(pages: dict[str, Path], visit: Callable[..., Visit]) -> None:
    """The comparison shows both runs, the pass rate before → after, Δ with its interval and p and
    whether it is real, the scenarios worse / better / same with marks and words, the flipped
    claims, and one attempt of each run side by side, turn by turn."""
    page = visit().open(pages["comparison"])
    header = page.inner_text("header.top").lower()
    assert "2026-01-05-before → 2026-01-06-after" in header and "before (base)" in header and "after (candidate)" in header
    assert page.locator("#banner").count() == 0
    tiles = page.inner_text(".tiles")
    for said in ("PASS RATE", "→", "CHANGE", "pts", "95% CI", "p =", "SMALLEST DETECTABLE CHANGE", "TOKENS", "COST", "TIME", "per attempt"):
        assert said in tiles, said
    # Clamped: the t interval reaches −104.6; its high end is the two sides' intervals' (they hold
    # the attempts' own noise, issue 26), past the t interval's +54.6.
    assert "95% CI −100.0 pts to +63.4 pts" in tiles
    assert re.match(r"p [=<] \S+ \((exact|cmh)\) · sign-flip p [=<] ", page.inner_text("#tested"))  # not paired: not McNemar
    tile = lambda title: page.locator(".tile", has=page.locator("h2", has_text=title))  # noqa: E731
    assert "= same ×1.00 per attempt" in tile("Tokens").inner_text()
    timed = page.evaluate("JSON.parse(document.getElementById('data').textContent).time_direction")  # the fakes' times vary
    assert {"lower": "▼ lower", "higher": "▲ higher", "same": "= same"}[timed] in tile("Time").inner_text()
    assert "no ratio per attempt" in tile("Cost").inner_text()
    assert tile("Tokens").locator(".st-same").get_attribute("title") == "“same” within ±5%"
    assert page.locator(".tile.verdict .badge").inner_text() in ("~ within noise", "▼ worse")
    worse = page.inner_text("#group-worse")
    assert "▼ Worse" in worse and "refunds/damaged" in worse and "6/6" in worse and "0/6" in worse and "▼ worse" in worse
    assert "= Same (within ±10 pts)" in page.inner_text("#group-same")
    # At 6 attempts the unchanged scenarios are undecided, not "same" (issue 26), in the command's words.
    undecided = page.inner_text("#group-undecided")
    assert "? Undecided" in undecided and "? undecided at 6 attempts" in undecided and "? undecided: not judged in both runs" in undecided
    assert page.inner_text("#scenarios-said") == "Scenarios: " + page.evaluate("JSON.parse(document.getElementById('data').textContent).scenarios_said")
    claims = page.inner_text("#claims")
    assert "The agent offers a refund." in claims and "100%" in claims and "0%" in claims and "▼ flipped, holds less" in claims
    page.fill("#search", "late")
    expect(page.locator("#group-worse tr.row")).to_have_count(0)
    hashed(page, "s=", present=False)
    hashed(page, "q=late")
    page.fill("#search", "")
    page.click("#group-worse tr[data-id='refunds/damaged']")
    page.wait_for_selector("dialog#window[open] #pair")
    pair = page.locator("#pair")
    labels = page.eval_on_selector_all("#pair .row-label", "nodes => nodes.map(node => node.textContent)")
    assert labels == ["Decisions", "Turn 1", "Turn 2"]
    cells = page.eval_on_selector_all("#pair > .cell", "nodes => nodes.map(node => node.innerText)")
    assert "refund of $39.90" in cells[6] and "passed this to a colleague" in cells[7]
    assert "Before: 2026-01-05-before" in pair.inner_text() and "After: 2026-01-06-after" in pair.inner_text()
    hashed(page, "s=refunds%2Fdamaged")
    page.reload()
    page.wait_for_selector("dialog#window[open] #pair")
    page.keyboard.press("Escape")
    expect(page.locator("dialog#window[open]")).to_have_count(0)


def test_comparison_banner_and_scenarios_apart(pages: dict[str, Path], tmp_path: Path, visit: Callable[..., Visit]) -> None:
    """Runs that are not comparable get a banner with each reason; scenarios in one run only or
    changed are listed apart."""
    runs, _ = Runs(pages["index"].parent).read()
    by_id = {run.file.spec.id: run for run in runs}
    from convy.comparison import Comparison

    view = Comparison(by_id["2026-01-05-before"], by_id["2026-01-07-first"]).view()
    view = msgspec.structs.replace(view, only_base=["billing/old"], only_candidate=["billing/new"], changed=["refunds/late"])
    path = tmp_path / "compare.html"
    path.write_text(ComparisonPage(view).html(), encoding="utf-8")
    page = visit().open(path)
    banner = page.inner_text("#banner")
    assert "not comparable" in banner and "the judge differs: fake-judge → other-judge" in banner
    assert page.inner_text("#no-verdict") == "– no verdict: not comparable"  # issue 26: no verdict for such a pair
    assert page.locator(".tile.verdict .big.st-worse, .tile.verdict .big.st-better").count() == 0
    apart = page.inner_text("#apart")
    assert "only in the base run: billing/old" in apart and "only in the candidate run: billing/new" in apart and "changed between the runs: refunds/late" in apart



def test_comparison_of_the_same_dialogues_says_so_with_the_paired_attempts(
    pages: dict[str, Path], tmp_path: Path, visit: Callable[..., Visit]
) -> None:
    """A comparison of a run and its re-judged run says they decided the same dialogues, in a note of
    its own (no banner), with the attempts paired by (scenario, attempt) and how many changed."""
    runs, _ = Runs(pages["index"].parent).read()
    by_id = {run.file.spec.id: run for run in runs}
    from convy.comparison import Comparison
    from convy.views import SameDialogues

    view = Comparison(by_id["2026-01-05-before"], by_id["2026-01-06-after"]).view()
    said = "the candidate re-judged the base's dialogues (judge fake-judge → strict): a change here is the judge's or the claims', not the agent's"
    view = msgspec.structs.replace(
        view,
        banner=[],
        same_dialogues=SameDialogues(said=said, paired=12, worse=3, better=1, other=2, both=4, neither=2),
        method="mcnemar",
        p=0.625,
    )
    path = tmp_path / "same.html"
    path.write_text(ComparisonPage(view).html(), encoding="utf-8")
    page = visit().open(path)
    note = page.inner_text("#same-dialogues")
    assert said in note
    assert "Attempts paired by (scenario, attempt): 12; 3 passed before and fail now, 1 failed before and pass now, 2 changed" in note
    assert page.locator("#banner").count() == 0
    assert page.inner_text("#tested").startswith("paired (McNemar, exact): p = 0.63 · sign-flip p = ")

def test_index_page(pages: dict[str, Path], visit: Callable[..., Visit]) -> None:
    """The index lists every run newest first with its numbers, filters by agent, searches, sorts,
    draws a trend per agent, links each report and comparison, and gives the compare command."""
    page = visit().open(pages["index"])
    shows(page, ["2026-01-07-first", "2026-01-06-after", "2026-01-05-before"], listed=RUNS)
    table = page.inner_text("#runs")
    for said in ("shop", "echo", "✓ finished", "%", "[", "30"):
        assert said in table
    page.select_option("#filter-agent", "shop")
    shows(page, ["2026-01-06-after", "2026-01-05-before"], listed=RUNS)
    expect(page.locator(".trend-tile[data-agent='echo']")).to_be_hidden()
    page.select_option("#filter-agent", "")
    page.fill("#search", "before")
    shows(page, ["2026-01-05-before"], listed=RUNS)
    page.fill("#search", "")
    shows(page, ["2026-01-07-first", "2026-01-06-after", "2026-01-05-before"], listed=RUNS)
    page.click("#runs thead button:has-text('Pass rate')")
    hashed(page, "sort=rate")  # written as the rows are drawn in their new order
    rates = page.eval_on_selector_all("#runs tbody tr.row td:nth-child(5) .rate", "nodes => nodes.map(node => parseFloat(node.textContent))")
    assert rates == sorted(rates, reverse=True)
    assert page.locator(".trend-tile[data-agent='shop'] svg.trend circle").count() == 2
    assert page.locator(".trend-tile[data-agent='echo'] svg.trend circle").count() == 1
    expect(page.locator("#compare-command")).to_have_text("convy compare 2026-01-05-before 2026-01-06-after")
    page.select_option("#compare-base", "2026-01-06-after")
    page.select_option("#compare-candidate", "2026-01-07-first")
    expect(page.locator("#compare-command")).to_have_text("convy compare 2026-01-06-after 2026-01-07-first")
    hrefs = page.eval_on_selector_all("a[href]", "links => links.map(link => link.href)")
    assert hrefs and all(href.startswith("file://") and Path(href.removeprefix("file://")).is_file() for href in hrefs)
    assert any(href.endswith("compare/2026-01-05-before--2026-01-06-after.html") for href in hrefs)
    page.click("#runs a:has-text('2026-01-06-after')")
    expect(page.locator("h1")).to_contain_text("shop · 2026-01-06-after")


def test_no_page_asks_the_network_for_anything(pages: dict[str, Path], visit: Callable[..., Visit]) -> None:
    """Opening every page, a window, a comparison pair and switching theme requests only the
    page's own file:// URL and data: URIs."""
    one = visit()
    page = one.open(pages["2026-01-05-before"], "s=refunds/damaged")
    page.wait_for_selector(".attempt")
    page.click("button.expand")
    page.keyboard.press("Escape")
    page.click("button.theme")
    page.goto(pages["comparison"].as_uri() + "#s=refunds/damaged")
    page.wait_for_selector("#pair")
    page.goto(pages["index"].as_uri())
    page.wait_for_selector("#runs tbody tr.row")
    assert one.requests and all(url.startswith(("file://", "data:")) for url in one.requests)
    assert one.offsite() == []


def test_screenshots_of_each_page_in_both_themes(
    pages: dict[str, Path], visit: Callable[..., Visit], tmp_path: Path
) -> None:
    """Screenshots of the report, the scenario window, the comparison and its pair, and the index,
    light and dark, for people to look at: taken in the test's own folder (two suites at once must
    not write the same file), then copied to /tmp/convy-shots/."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    views = {
        "report": (pages["2026-01-05-before"], "", None),
        "window": (pages["2026-01-05-before"], "s=refunds/damaged", ".attempt"),
        "window-steps": (pages["2026-01-05-before"], "s=refunds/damaged&a=2", ".attempt[data-attempt='2']"),
        "comparison": (pages["comparison"], "", None),
        "pair": (pages["comparison"], "s=refunds/damaged", "#pair"),
        "index": (pages["index"], "", None),
    }
    for scheme in ("light", "dark"):
        one = visit(scheme)
        for name, (path, fragment, ready) in views.items():
            page = one.open(path, fragment)
            if ready:
                page.wait_for_selector(ready)
            if name == "window-steps":
                page.click("button.expand")
                page.evaluate("document.querySelector('.window-body').scrollTop = 720")
            shot = tmp_path / f"{name}-{scheme}.png"
            page.screenshot(path=str(shot), full_page=not ready)
            assert shot.stat().st_size > 10_000
            shutil.copyfile(shot, SHOTS / shot.name)


class Large:
    """A run of 10,000 attempts: 500 scenarios of 20 attempts, with tool calls and thoughts."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def made(self) -> Path:
        scenarios = self.folder / "scenarios"
        scenarios.mkdir(parents=True)
        for number in range(500):
            (scenarios / f"s{number:03}.yaml").write_text(
                f"tags: [t{number % 7}]\nscript: [Hello {number}, More please]\njudge: [The agent helps., {{check: {{called: look}}}}]\n",
                encoding="utf-8",
            )
        agent = FakeAgent(lambda text: Answer("Sure, here you go. " * 5, Usage(30, 12), (Thought("think"), Call("look", {"q": text}, Reported({"n": 1}), 0.01))))
        judge = FakeJudge(lambda claim, transcript: sum(map(ord, transcript.turns[0].message)) % 3 != 0)
        bench = Bench(agent, Models(judge=judge), Limits(agent_places=32, judge_places=32))
        spec = RunSpec(id="large", agent="fake", scenarios=Scenarios(scenarios).every(), attempts=20, limits=bench.limits)
        import asyncio

        asyncio.run(RunJournal(self.folder / "results" / "fake" / "large").play(spec, bench))
        (run,), _ = Runs(self.folder / "results").read()
        path = self.folder / "large.html"
        path.write_text(ReportPage(Summary(run)).html(), encoding="utf-8")
        return path


def test_a_report_of_ten_thousand_attempts_draws_its_first_rows_and_inflates_on_demand(tmp_path: Path, visit: Callable[..., Visit]) -> None:
    """A report of 10,000 attempts draws its first 200 rows of 500 scenarios with no dialogue in the
    page, inflates a scenario's dialogues only when its window opens, and draws more rows when the
    reader scrolls to the end (how fast it opens is measured in bench/pages.py, not here)."""
    with ThreadPoolExecutor(1) as pool:
        path = pool.submit(Large(tmp_path).made).result()
    page = visit().open(path)
    table = page.locator("#scenarios tbody tr.row")
    expect(table).to_have_count(200)
    expect(page.locator(".count")).to_contain_text("500 scenarios")
    expect(page.locator(".msg")).to_have_count(0)
    page.fill("#search", "s499")
    expect(table).to_have_count(1)
    page.click("#scenarios tbody tr.row")
    page.wait_for_selector(".attempt")
    expect(page.locator("#matrix thead button")).to_have_count(20)
    page.keyboard.press("Escape")
    expect(page.locator("dialog#window[open]")).to_have_count(0)
    # The window's close event, which comes in a task of its own after the dialog shuts, gives
    # the focus back to the row: filling the search before it could lose the focus between
    # selecting the text and deleting it (seen on a loaded machine: the search kept "s499").
    expect(table).to_be_focused()
    page.fill("#search", "")
    expect(table).to_have_count(200)
    page.evaluate("document.querySelector('#scenarios tbody tr.more').scrollIntoView()")
    page.wait_for_function("() => document.querySelectorAll('#scenarios tbody tr.row').length > 200", polling=POLL_MS)


SPANS = 20_000  # code spans in one message: twice what the old drawing stopped at


class Long:
    """A run whose agent answers with long Markdown: a megabyte of "[" and thousands of code spans."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @staticmethod
    def answer(text: str) -> str:
        if "brackets" in text:
            return "[" * 1_000_000
        return " ".join(f"`c{number}`" for number in range(SPANS)) + " **the end**"

    def made(self) -> Path:
        scenarios = self.folder / "scenarios"
        scenarios.mkdir(parents=True)
        for name in ("brackets", "spans"):
            (scenarios / f"{name}.yaml").write_text(f"script: [Send {name}]\njudge: [{{check: {{said: x}}}}]\n", encoding="utf-8")
        bench = Bench(FakeAgent(self.answer), Models())
        spec = RunSpec(id="long", agent="fake", scenarios=Scenarios(scenarios).every(), attempts=1, limits=bench.limits)
        import asyncio

        asyncio.run(RunJournal(self.folder / "results" / "fake" / "long").play(spec, bench))
        (run,), _ = Runs(self.folder / "results").read()
        path = self.folder / "long.html"
        path.write_text(ReportPage(Summary(run)).html(), encoding="utf-8")
        return path


def test_long_messages_are_drawn_whole(tmp_path: Path, visit: Callable[..., Visit]) -> None:
    """A reply of a million "[" is drawn whole as text, and a reply of 20,000 code spans is drawn
    with every span, the text after them included."""
    with ThreadPoolExecutor(1) as pool:
        path = pool.submit(Long(tmp_path).made).result()
    page = visit().open(path, "s=brackets")
    page.wait_for_selector(".attempt .msg-agent .md")
    assert page.evaluate("document.querySelector('.msg-agent .md').textContent === '['.repeat(1000000)")
    page.goto(path.as_uri() + "#s=spans")
    page.wait_for_selector(".attempt[data-attempt='1'] .msg-agent .md code")
    drawn = page.evaluate(
        """() => {
          const box = document.querySelector('.msg-agent .md');
          const codes = [...box.querySelectorAll('code')].map((node) => node.textContent);
          return {count: codes.length, first: codes[0], last: codes[codes.length - 1],
                  strong: box.querySelector('strong') && box.querySelector('strong').textContent,
                  text: box.textContent};
        }"""
    )
    assert (drawn["count"], drawn["first"], drawn["last"], drawn["strong"]) == (SPANS, "c0", f"c{SPANS - 1}", "the end")
    assert drawn["text"] == " ".join(f"c{number}" for number in range(SPANS)) + " the end"


def test_a_scenario_of_many_attempts_shows_a_page_of_them(tmp_path: Path, visit: Callable[..., Visit]) -> None:
    """A window of a scenario with 120 attempts draws 20 of them (what the window's width shows),
    around the one chosen, and pages to the others."""
    import asyncio

    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / "many.yaml").write_text("script: [Hello]\njudge: [The agent helps.]\n", encoding="utf-8")
    bench = Bench(FakeAgent(lambda text: "Hi."), Models(judge=FakeJudge()), Limits(agent_places=8))
    spec = RunSpec(id="many", agent="fake", scenarios=Scenarios(scenarios).every(), attempts=120, limits=bench.limits)
    with ThreadPoolExecutor(1) as pool:  # Playwright's loop runs in this thread
        pool.submit(asyncio.run, RunJournal(tmp_path / "results" / "fake" / "many").play(spec, bench)).result()
    (run,), _ = Runs(tmp_path / "results").read()
    path = tmp_path / "many.html"
    path.write_text(ReportPage(Summary(run)).html(), encoding="utf-8")
    page = visit().open(path)
    page.click("#scenarios tbody tr.row")
    page.wait_for_selector(".attempt")
    expect(page.locator("#matrix thead button")).to_have_count(20)
    expect(page.locator(".attempt-tabs button")).to_have_count(20)
    expect(page.locator(".paging")).to_contain_text("attempts 1–20 of 120")
    expect(page.locator(".paging button:has-text('earlier')")).to_be_disabled()
    page.click(".paging button:has-text('later')")
    page.wait_for_function("() => document.querySelector('.paging').textContent.includes('attempts 21–40 of 120')", polling=POLL_MS)
    expect(page.locator("#matrix thead button").first).to_have_text("#21")
    page.goto(path.as_uri() + "#s=many&a=115")
    page.wait_for_function("() => document.querySelector('.paging').textContent.includes('attempts 101–120 of 120')", polling=POLL_MS)
    expect(page.locator(".paging button:has-text('later')")).to_be_disabled()


def test_the_judging_section_flags_an_ambiguous_claim_as_text_and_opens_its_split_decisions(
    tmp_path: Path, visit: Callable[..., Visit]
) -> None:
    """A run judged five times per claim by FickleModel, whose claim carrying <b> and an <img
    onerror> is the one it cannot decide: the section says "ambiguous claim: rewrite it", shows the
    claim's characters (no element made of them), a split decision's button opens that attempt's
    window, and every text has enough contrast, light and dark."""
    import asyncio

    from convy import ChatJudge, Judging, ModelNames, RunJournal, RunSpec, Scenario
    from convy.fakes import FickleModel

    hostile = 'It answered <b>politely</b> <img src=x onerror="window.__pwned=1">'
    scenario = msgspec.convert({"id": "refund", "script": ["Refund please"], "judge": ["It offered a refund", hostile]}, Scenario)
    bench = Bench(FakeAgent(lambda text: "Refunded."), Models(judge=ChatJudge(FickleModel(seed=2))), judging=Judging(repeats=5))
    spec = RunSpec(id="fickle", agent="bot", scenarios=(scenario,), attempts=6, limits=bench.limits, models=ModelNames(judge="fickle-judge"), judging=Judging(repeats=5))
    with ThreadPoolExecutor(1) as thread:  # Playwright's sync API runs a loop in this thread already
        thread.submit(lambda: asyncio.run(RunJournal(tmp_path / "results" / "bot" / "fickle").play(spec, bench))).result()
    (run,), _ = Runs(tmp_path / "results").read()
    path = run.folder / "report.html"
    path.write_text(ReportPage(Summary(run)).html(), encoding="utf-8")
    for scheme in ("light", "dark"):
        page = visit(scheme).open(path)
        section = page.locator("#judging")
        expect(section.locator(".flag-ambiguous")).to_have_text("ambiguous claim: rewrite it")
        assert hostile in section.inner_text()
        assert section.locator("b, img").count() == 0
        assert page.evaluate("typeof window.__pwned") == "undefined"
        found = page.evaluate(CONTRAST)
        assert found["low"] == [], (scheme, found["low"])
    first = section.locator("button.decision-link").first
    attempt = first.inner_text().split()[0].lstrip("#")
    first.click()
    page.wait_for_selector(".attempt")
    hashed(page, f"a={attempt}")
    hashed(page, "s=refund")


def test_the_causes_tile_and_the_filter_by_cause(pages: dict[str, Path], visit: Callable[..., Visit]) -> None:
    """The tile counts the attempts not passed by cause; the filter (or a cause in the tile) keeps
    the scenarios with attempts of that cause, is written to the hash, and a scenario opens on its
    first attempt of that cause, whose header says the cause."""
    page = visit().open(pages["2026-01-05-before"])
    tile = page.locator(".tile", has=page.locator("h2", has_text="Why not passed"))
    expect(tile.locator("#causes")).to_contain_text("judge: 6", use_inner_text=True)
    expect(tile.locator("#causes")).to_contain_text("service: 0", use_inner_text=True)
    expect(tile.locator("#causes")).to_contain_text("scenario's tool: 0", use_inner_text=True)
    page.select_option("#filter-cause", "judge")
    shows(page, ["orders/unsure"])
    hashed(page, "cause=judge")
    page.select_option("#filter-cause", "")
    shows(page, ["hostile", "orders/crash", "orders/unsure", "refunds/damaged", "refunds/late"])
    hashed(page, "cause=", present=False)
    tile.locator("button:has-text('agent')").click()
    shows(page, ["orders/crash", "refunds/late"])
    expect(page.locator("#filter-cause")).to_have_value("agent")
    page.click("#scenarios tr[data-id='refunds/late']")
    attempt = page.locator(".attempt")
    expect(attempt.locator(".attempt-head .badge.cause")).to_have_text("cause: agent")
    page.goto(pages["2026-01-05-before"].as_uri() + "#cause=judge&s=orders/unsure")
    expect(page.locator("#filter-cause")).to_have_value("judge")
    expect(page.locator(".attempt .attempt-head .badge.cause")).to_have_text("cause: judge")


def test_a_run_of_attempts_auto_says_each_scenarios_attempts_and_why_it_stopped(tmp_path: Path, visit: Callable[..., Visit]) -> None:
    """A run played against a base (--against BASE --attempts auto): the header gives the rule and
    the comparison's verdict, each row and each scenario's window its attempts and why it stopped."""
    import asyncio

    from convy.adaptive import Adaptive, Against, BaseJudged
    from convy.fakes import Rated

    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    for name in ("a", "b", "c"):
        (scenarios / f"{name}.yaml").write_text(f"script: [Hello]\njudge: [passes {name}]\n", encoding="utf-8")
    every = Scenarios(scenarios).every()

    def bench(rate: float) -> Bench:
        return Bench(FakeAgent(lambda text: "Hi."), Models(judge=FakeJudge(Rated({f"passes {name}": rate for name in "abc"}))), Limits())

    def played() -> None:
        base = asyncio.run(RunJournal(tmp_path / "results" / "fake" / "base").play(RunSpec("base", "fake", every, 30, Limits()), bench(0.9)))
        rule = Adaptive(1, Against("fake", "base", 0.05, BaseJudged(base.outcomes, 0.0).marks(("a", "b", "c"))))
        spec = RunSpec("auto", "fake", every, 30, Limits(), adaptive=rule)
        asyncio.run(RunJournal(tmp_path / "results" / "fake" / "auto").play(spec, spec.player(bench(0.4))))

    with ThreadPoolExecutor(1) as pool:  # Playwright's loop runs in this thread
        pool.submit(played).result()
    summary = Summary(Runs(tmp_path / "results").one(tmp_path / "results" / "fake" / "auto"))  # type: ignore[arg-type]
    path = tmp_path / "auto.html"
    path.write_text(ReportPage(summary).html(), encoding="utf-8")
    got = {scenario: len(attempts) for scenario, attempts in summary.by_scenario().items()}
    page = visit().open(path)
    expect(page.locator("#against")).to_contain_text("Played against run fake/base")
    expect(page.locator("#against")).to_contain_text("real change: worse, e = ")
    expect(page.locator("header.top details.more-facts dl.facts")).to_contain_text("up to 30 attempts per scenario, until the comparison with fake/base is decided (α 0.05)")
    for name in ("a", "b", "c"):
        expect(page.locator(f"#scenarios tr.row[data-id='{name}'] .adaptive")).to_have_text(
            re.compile(rf"^{got[name]} attempts · comparison decided: real change \(worse\), e = ")
        )
    page.click("#scenarios tr.row[data-id='b']")
    expect(page.locator("#window p.adaptive")).to_have_text(re.compile(rf"^{got['b']} attempts: comparison decided: real change \(worse\)"))
