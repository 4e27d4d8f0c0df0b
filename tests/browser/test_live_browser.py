"""The live report in a real headless Chromium, from file:// while ``convy run`` writes it: the page
reloads itself as the run goes on, keeping the reader's filter, open window, scroll and focus,
waits while the reader types, and stops once the run has ended.

The page's clock is Playwright's, installed on the browser context and paused: its timers (the one
that reloads it among them) run only when the test runs the clock on, so a reload never lands
between two steps of the test, and a page that should not reload is seen not to. The run's attempts
are let through one gate at a time (``test_live.GatedRun``) and each step waits for the pages on
the disk to show them. Every wait is for a condition, never for time."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from support.waiting import wait_until
from test_browser import PATIENCE_MS, POLL_MS, Visit, chromium  # noqa: F401 (skips without Chromium)
from test_live import GatedRun, Page, gated  # noqa: F401 (the fixture)

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


def kept(run: GatedRun, attempts: int, status: str = "running") -> Callable[[], bool]:
    """Whether the report on the disk shows ``attempts`` kept and the run ``status``."""

    def shows() -> bool:
        path = run.report()
        if not path.exists():
            return False
        header = Page(path.read_text(encoding="utf-8")).block("data")["header"]
        return bool(header["kept"] == attempts and header["status"] == status)

    return shows


def listed(run: GatedRun, attempts: int, status: str = "running") -> Callable[[], bool]:
    """Whether the index on the disk lists the run with ``attempts`` and ``status``."""

    def shows() -> bool:
        if not run.index().exists():
            return False
        rows = Page(run.index().read_text(encoding="utf-8")).block("data")["runs"]
        return bool(len(rows) == 1 and rows[0]["attempts"] == attempts and rows[0]["status"] == status)

    return shows


class Reader:
    """One page opened in a context whose clock stands still until ``on`` runs it: the page's
    ``setTimeout``, ``Date`` and ``performance.now`` are Playwright's, carried from each document
    the tab loads to the next, so the page's pace is counted in the test's steps."""

    KEY = "'convy-live:' + location.pathname"  # where the page keeps its view across its own reload

    def __init__(self, browser: Any) -> None:
        self.visit = Visit(browser)
        start = datetime.now(UTC)
        self.visit.context.clock.install(time=start)
        self.visit.context.clock.pause_at(start + timedelta(seconds=1))

    def open(self, path: Path, fragment: str = "") -> Any:
        self.page = self.visit.open(path, fragment)
        return self.page

    def on(self, milliseconds: int) -> None:
        """Run the page's clock on by ``milliseconds``, firing every timer due on the way."""
        self.visit.context.clock.run_for(milliseconds)

    def reloaded(self, text: str) -> None:
        """Run the clock well past the page's pace and wait until the tab holds a new document
        showing ``text`` (the mark set on the old one gone). A page that does not reload hangs here."""
        self.page.evaluate("window.__old = true")
        self.on(10_000)
        self.page.wait_for_function(
            "(text) => !window.__old && document.body.innerText.includes(text)", arg=text, polling=POLL_MS, timeout=PATIENCE_MS
        )

    def still(self) -> bool:
        """Whether the page has not begun to reload since ``window.__old`` was set: it is the same
        document, and the view it writes in the same task as it reloads was not written."""
        return bool(self.page.evaluate(f"window.__old === true && sessionStorage.getItem({self.KEY}) === null"))

    def close(self) -> None:
        self.visit.close()


def ended(run: GatedRun, reader: Reader, shows: Callable[[], bool]) -> None:
    """Let the rest of the run's 12 attempts through, see the command end well and the page on the
    disk ``shows`` it finished, then the page in the browser reload to say so."""
    run.let(12)
    code, _, err = run.ended()
    assert code == 0, err
    wait_until(shows, "the page on the disk shows the run finished")
    reader.reloaded("finished")


def test_the_report_reloads_while_the_run_plays_keeping_the_view_and_stops_when_it_ends(
    browser: Any, gated: Callable[..., GatedRun],  # noqa: F811
) -> None:
    """Opened with a filter, a scenario's window open and the page scrolled, the report reloads
    itself as attempts are kept, and comes back with the same filter, window and scroll, reload
    after reload; while the reader types it waits, then reloads keeping what was typed, the focus
    and the caret; once the run has ended it shows it finished and reloads no more."""
    run = gated(0.2)
    run.let(2)
    wait_until(kept(run, 2), "the report shows 2 attempts")
    reader = Reader(browser)
    try:
        page = reader.open(run.report(), "q=s2")
        page.set_viewport_size({"width": 1320, "height": 400})  # a page taller than its window, to scroll
        page.wait_for_selector("#scenarios tbody tr.row[data-id='s2']")
        assert "2 of 12 planned" in page.inner_text("#live")
        page.click("#scenarios tbody tr.row[data-id='s2']")  # Playwright scrolls the row into sight first
        page.wait_for_selector("dialog#window[open]")
        page.evaluate("window.scrollTo(0, 120)")  # behind the open window: the place to come back to
        page.wait_for_function("() => window.scrollY === 120", polling=POLL_MS)

        run.let(5)
        wait_until(kept(run, 5), "the report shows 5 attempts")
        reader.reloaded("5 of 12 planned")
        assert page.input_value("#search") == "s2"
        page.wait_for_selector("dialog#window[open]")
        assert "s2" in page.inner_text("#window-title")
        assert page.evaluate("window.scrollY") == 120
        assert "q=s2" in page.evaluate("location.hash") and "s=s2" in page.evaluate("location.hash")
        # Again, from another place: each reload comes back where the reader was.
        page.evaluate("window.scrollTo(0, 60)")
        page.wait_for_function("() => window.scrollY === 60", polling=POLL_MS)
        reader.reloaded("5 of 12 planned")
        page.wait_for_selector("dialog#window[open]")
        assert page.evaluate("window.scrollY") == 60

        # Typing in the search box: the page waits while keys come (3 s of its clock), then reloads
        # keeping what was typed, the focus and the caret.
        page.keyboard.press("Escape")
        page.wait_for_function("() => !document.querySelector('dialog#window').open", polling=POLL_MS)
        page.fill("#search", "s1")
        page.keyboard.press("ArrowLeft")
        assert page.evaluate("[document.activeElement.id, document.activeElement.selectionStart]") == ["search", 1]
        run.let(8)
        wait_until(kept(run, 8), "the report shows 8 attempts")
        page.evaluate("window.__old = true")
        reader.on(2_500)
        assert reader.still(), "the page reloaded while the reader was typing"
        reader.reloaded("8 of 12 planned")
        assert page.input_value("#search") == "s1"
        assert page.evaluate("[document.activeElement.id, document.activeElement.selectionStart]") == ["search", 1]
        assert "q=s1" in page.evaluate("location.hash")

        # The run ends: the page reloads once more, shows it finished, and reloads no more.
        ended(run, reader, kept(run, 12, "finished"))
        assert page.query_selector("#live") is None
        assert page.input_value("#search") == "s1"
        page.evaluate("window.__old = true")
        reader.on(600_000)
        assert reader.still(), "the page of a finished run reloaded"
        assert reader.visit.errors == []
    finally:
        reader.close()


def test_the_index_lists_a_run_under_way_and_reloads_until_it_ends(browser: Any, gated: Callable[..., GatedRun]) -> None:  # noqa: F811
    """The index shows a running run with its attempts of those planned, reloads as they grow,
    and stops reloading once the run is finished."""
    run = gated(0.2)
    run.let(3)
    wait_until(listed(run, 3), "the index lists the run with 3 attempts")
    reader = Reader(browser)
    try:
        page = reader.open(run.index())
        page.wait_for_function("() => document.body.innerText.includes('3 of 12')", polling=POLL_MS, timeout=PATIENCE_MS)
        assert "running" in page.inner_text("#runs tbody")
        assert "still playing" in page.inner_text("#live")

        run.let(6)
        wait_until(listed(run, 6), "the index lists the run with 6 attempts")
        reader.reloaded("6 of 12")

        ended(run, reader, listed(run, 12, "finished"))
        assert page.query_selector("#live") is None
        page.evaluate("window.__old = true")
        reader.on(600_000)
        assert reader.still(), "the index reloaded with no run under way"
        assert reader.visit.errors == []
    finally:
        reader.close()


def test_a_scenario_with_no_attempt_kept_yet_is_said_not_played_yet_not_not_judged(
    browser: Any, gated: Callable[..., GatedRun],  # noqa: F811
) -> None:
    """With 1 attempt of 12 kept, at least two of the three scenarios have none: their rows and
    windows say "not played yet" (the page once called them "not judged", beside a tile saying
    every attempt was judged). Once the run has ended, no scenario is said not played."""
    run = gated(0.2)
    run.let(1)
    wait_until(kept(run, 1), "the report shows 1 attempt")
    reader = Reader(browser)
    try:
        page = reader.open(run.report())
        page.wait_for_selector("#scenarios tbody tr.row", timeout=PATIENCE_MS)
        waiting = page.locator("#scenarios tbody .st-not_played")
        assert waiting.count() >= 2, page.inner_text("#scenarios tbody")
        assert set(waiting.all_inner_texts()) == {"… not played yet"}
        assert "not judged" not in page.inner_text("#scenarios tbody")

        ended(run, reader, kept(run, 12, "finished"))
        assert page.locator("#scenarios tbody .st-not_played").count() == 0
        assert reader.visit.errors == []
    finally:
        reader.close()
