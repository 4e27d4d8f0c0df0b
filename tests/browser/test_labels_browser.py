"""Labelling in a real headless Chromium, from file://: marks two decisions in a report's window,
finds them kept by the browser after a reload, downloads the labels file, keeps it with the real
``convy labels add``, rebuilds the report and finds the judge–human agreement table showing them,
a disagreement one click from its attempt. Screenshots of the window with its labelling controls,
light and dark, go to /work/helpers/shots/ (when that folder exists) and /tmp/convy-shots/."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from support.waiting import wait_until
from test_browser import PATIENCE_MS, POLL_MS, SHOTS, Visit, chromium, expect
from test_labels import BRIEF, GREETS, Project

from convy.records import Origin

pytestmark = pytest.mark.timeout(900)
HELPERS_SHOTS = Path("/work/helpers/shots")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """A run of four attempts, played before the browser starts (Playwright's client runs an event
    loop of its own in the thread)."""
    project = Project(tmp_path_factory.mktemp("labels"))
    project.played("r1", [True, True, False, True])
    return project


@pytest.fixture(scope="module")
def browser(project: Project) -> Iterator[Any]:
    with chromium() as launched:
        yield launched


# In a page, from Python: whether the decision of a claim in the open attempt has its mark
# pressed, a press of it, and the window's count of labels.
FOUND = "const d = [...document.querySelectorAll('.attempt .decision')].find((one) => one.querySelector('.claim')?.textContent.includes(claim));"
PRESSED = "([claim, value]) => { " + FOUND + " return d?.querySelector('button.label-' + value)?.getAttribute('aria-pressed') === 'true'; }"
PRESS = "([claim, value]) => { " + FOUND + " d.querySelector('button.label-' + value).click(); }"
COUNT = "() => document.querySelector('#window .labels-count')?.textContent"


def decision(page: Any, claim: str) -> Any:
    return page.locator(".attempt .decision", has=page.locator(".claim", has_text=claim))


def test_marks_kept_downloaded_added_and_measured(browser: Any, project: Project, tmp_path: Path) -> None:
    code, _, err = project.convy("report", "r1")
    assert code == 0, err
    report = project.folder / "results" / "bot" / "r1" / "report.html"
    visits = [Visit(browser)]
    page = visits[0].open(report, "s=hello&a=1")
    page.wait_for_selector(".attempt[data-attempt='1']")
    expect(page.locator("#window .labels-count")).to_have_text("0 labels")
    # A second tab of the same report, open on attempt 2 before any mark is made.
    other = visits[0].context.new_page()
    other.on("pageerror", lambda error: visits[0].errors.append(str(error)))
    other.goto(report.as_uri() + "#s=hello&a=2")
    wait_until(lambda: other.evaluate("document.querySelector(\".attempt[data-attempt='2'] .label-marks\") !== null"),
               "the other tab to draw attempt 2", timeout=PATIENCE_MS / 1000, every=POLL_MS / 1000)
    page.bring_to_front()
    right = decision(page, GREETS).locator("button.label-right")
    right.click()
    expect(right).to_have_attribute("aria-pressed", "true")
    right.click()  # taken back
    expect(right).to_have_attribute("aria-pressed", "false")
    right.focus()
    page.keyboard.press("Enter")  # by keyboard
    expect(right).to_have_attribute("aria-pressed", "true")
    page.click("#window .attempt-tabs button:has-text('attempt 2')")
    page.wait_for_selector(".attempt[data-attempt='2']")
    decision(page, GREETS).locator("button.label-wrong").click()
    expect(page.locator("#window .labels-count")).to_have_text("2 labels")
    # Another tab of the same report follows the marks: the browser tells it of each write once
    # its store holds the write. Asked from Python, with the tab in front: Playwright's own waits
    # poll on animation frames, which a headless Chromium may stop giving a page behind another.
    other.bring_to_front()
    wait_until(lambda: other.evaluate(PRESSED, [GREETS, "wrong"]) and other.evaluate(COUNT) == "2 labels",
               "the other tab to show both marks", timeout=PATIENCE_MS / 1000, every=POLL_MS / 1000)
    # A mark made there is seen here, and taken back there is gone here: neither tab writes back a
    # set the other has changed.
    other.evaluate(PRESS, [BRIEF, "right"])
    page.bring_to_front()
    wait_until(lambda: page.evaluate(COUNT) == "3 labels", "this tab to show the other's mark",
               timeout=PATIENCE_MS / 1000, every=POLL_MS / 1000)
    other.bring_to_front()
    other.evaluate(PRESS, [BRIEF, "right"])
    page.bring_to_front()
    wait_until(lambda: page.evaluate(COUNT) == "2 labels", "this tab to lose the mark taken back there",
               timeout=PATIENCE_MS / 1000, every=POLL_MS / 1000)
    other.close()
    # Kept by the browser for this file: a reload finds them. The store holds the last write (this
    # tab was told of it), and the address names attempt 2.
    page.bring_to_front()
    page.wait_for_function("() => location.hash.includes('a=2')", polling=POLL_MS)
    page.reload()
    page.wait_for_selector(".attempt[data-attempt='2']")
    expect(decision(page, GREETS).locator("button.label-wrong")).to_have_attribute("aria-pressed", "true")
    with page.expect_download() as waiting:
        page.click("#window button.labels-download")
    labels = tmp_path / "downloaded.json"
    waiting.value.save_as(labels)
    assert waiting.value.suggested_filename == "convy-labels-bot-r1.json"
    code, out, err = project.convy("labels", "add", "r1", str(labels))
    assert code == 0, err
    assert "labels: 2 added" in out and "1/2 agree" in out
    assert project.convy("report", "r1")[0] == 0
    page = visits[0].open(report)
    table = page.locator("#agreement")
    expect(table).to_contain_text("every claim")
    expect(table).to_contain_text("1/2")
    # The judge held both decisions: κ is 0 by construction, so none is shown and the reading says why.
    expect(table).to_contain_text("κ says nothing here")
    expect(table).to_contain_text("1 decisions people found wrong")
    table.locator("button.link", has_text="hello #2").click()
    page.wait_for_selector("dialog#window[open] .attempt[data-attempt='2']")
    page.wait_for_function("() => location.hash.includes('a=2')", polling=POLL_MS)
    # The window with its labelling controls, light and dark.
    SHOTS.mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        visits.append(Visit(browser, scheme))
        shown = visits[-1].open(report, "s=hello&a=2")
        shown.wait_for_selector(".attempt[data-attempt='2'] .label-marks")
        decision(shown, GREETS).locator("button.label-wrong").click()  # this context's own marks
        decision(shown, BRIEF).locator("button.label-right").click()
        expect(shown.locator("#window .labels-count")).to_have_text("2 labels")
        shot = tmp_path / f"labels-{scheme}.png"
        shown.screenshot(path=str(shot))
        assert shot.stat().st_size > 10_000
        shutil.copyfile(shot, SHOTS / shot.name)
        if HELPERS_SHOTS.is_dir():
            shutil.copyfile(shot, HELPERS_SHOTS / shot.name)
    # Two judges on the same labelled dialogues, in the comparison page.
    results = project.folder / "results" / "bot"
    source = project.read("r1")
    for name, greets in (("judge-a", [True, True, False, True]), ("judge-b", [True, False, False, True])):
        folder = results / name
        folder.mkdir()
        spec = msgspec.structs.replace(source.file.spec, id=name, origin=Origin("bot", "r1"))
        (folder / "run.json").write_bytes(msgspec.json.encode(msgspec.structs.replace(source.file, spec=spec)))
        project.decided(folder, source, greets)
    code, out, err = project.convy("compare", "judge-a", "judge-b")
    assert code == 0, err
    page = visits[0].open(project.folder / "results" / "compare" / "judge-a--judge-b.html")
    judges = page.locator("#judges")
    expect(judges).to_contain_text("the same 2 labelled dialogue claims")
    expect(judges.locator("tr.overall")).to_contain_text("1/2")  # judge a: wrong on attempt 2
    expect(judges.locator("tr.overall")).to_contain_text("2/2")  # judge b: right on both
    for one in visits:
        one.close()
        assert one.offsite() == [], one.offsite()
        assert one.errors == []
