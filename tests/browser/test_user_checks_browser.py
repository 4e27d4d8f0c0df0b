"""The scenario window marks the turn where the simulated user went wrong, in a real headless
Chromium from file://: a user that repeats itself is marked at its second turn, one that never
stops after the last turn, each mark with the check's name and detail as text, and the decisions
area lists the faults. A screenshot goes to /tmp/convy-shots/."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_browser import SHOTS, Visit, chromium, expect

from convy import Bench, Models, RunJournal, RunSpec, Scenarios
from convy.fakes import BadUser, FakeAgent, FakeJudge
from convy.page import ReportPage
from convy.report import Summary
from convy.runs import Runs

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of two scenarios, one whose user repeats itself (with a detail holding markup) and one
    whose user never stops, played before the browser starts (Playwright's client runs an event
    loop of its own in the thread)."""
    folder = tmp_path_factory.mktemp("faults")
    scenarios = folder / "scenarios"
    scenarios.mkdir()
    for name, turns in (("repeats", 5), ("never", 3)):
        (scenarios / f"{name}.yaml").write_text(f"user: '[{name}] You want a refund.'\nmax_turns: {turns}\njudge: [The agent helps.]\n")

    class ByScenario:
        name = "bad-user"
        users = {"repeats": BadUser(repeats=True), "never": BadUser(never_stops=True)}

        async def reply(self, messages: Any) -> Any:
            told = messages[0].content
            return await self.users["repeats" if "[repeats]" in told else "never"].reply(messages)

    bench = Bench(FakeAgent(lambda text: "<b>Sure</b>, tell me more."), Models(ByScenario(), FakeJudge()))
    spec = RunSpec(id="r", agent="bot", scenarios=Scenarios(scenarios).every(), attempts=1, limits=bench.limits)
    asyncio.run(RunJournal(folder / "results" / "bot" / "r").play(spec, bench))
    (run,), _ = Runs(folder / "results").read()
    path = folder / "report.html"
    path.write_text(ReportPage(Summary(run)).html(), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def browser(report: Path) -> Iterator[Any]:
    with chromium() as launched:
        yield launched


def test_the_window_marks_the_turn_where_the_user_went_wrong(browser: Any, report: Path) -> None:
    visit = Visit(browser)
    try:
        page = visit.open(report, "s=repeats&a=1")
        page.wait_for_selector(".attempt[data-attempt='1']")
        marks = page.locator(".attempt .turn .user-fault")
        expect(marks).to_have_count(1)
        mark = page.locator(".attempt .turn[data-turn='2'] .user-fault[data-check='repeated']")
        expect(mark).to_contain_text("The simulated user repeated itself (repeated)")
        expect(mark).to_contain_text("said again: “Hello, I would like some help with my order, please.”")
        expect(page.locator(".attempt .turn[data-turn='1'] .user-fault")).to_have_count(0)
        listed = page.locator(".attempt .user-faults")
        expect(listed).to_contain_text("Turn 2 · repeated: said again")
        expect(page.locator(".attempt .decisions")).to_contain_text("the simulated user repeated itself at turn 2")
        SHOTS.mkdir(exist_ok=True)
        page.locator(".attempt").screenshot(path=str(SHOTS / "window-user-fault.png"))

        page = visit.open(report, "s=never&a=1")
        page.wait_for_selector(".attempt[data-attempt='1']")
        expect(page.locator(".attempt .turn .user-fault")).to_have_count(0)  # no turn holds it: it is how the dialogue ended
        after = page.locator(".attempt > .user-fault[data-check='no_stop']")
        expect(after).to_contain_text("never said it was done (no_stop)")
        expect(page.locator(".attempt .user-faults")).to_contain_text("After turn 3 · no_stop: 3 turns and it never said it was done")
        # Text only: the agent's markup is never parsed into the page's elements.
        assert page.locator(".attempt .user-fault b").count() == 0
    finally:
        visit.close()
    assert visit.offsite() == [] and visit.errors == []
