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
from test_browser import POLL_MS, SHOTS, Visit, chromium, expect
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
    # Kept by the browser for this file: a reload finds them. The page writes localStorage at
    # once, but the browser takes the write into its store a moment later, and a page loaded
    # before then reads the old value (seen once in three clean-clone suites at once): reload only
    # once another page of the file, loaded anew, sees both marks, and the address names attempt 2.
    # A probe page is loaded anew each time: one that read the store before the write reached it
    # keeps what it read, and once waited 300 s for news of it that never came (a clean clone's suite).
    while True:
        probe = visits[0].context.new_page()
        probe.goto(report.as_uri())
        seen = probe.evaluate(
            """() => { const text = localStorage.getItem('convy-labels:' + JSON.stringify(['bot', 'r1']));
                       return text !== null && JSON.parse(text).labels.length === 2; }"""
        )
        probe.close()
        if seen:
            break
        page.wait_for_timeout(POLL_MS)  # a look again a moment later, until the test's own timeout
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
