"""The agent's own spans in the scenario window (issue 30, item 4), in a real headless Chromium
from file://, at a desktop's width and a phone's: a call its spans showed is marked so among the
turn's steps, and its spans have a lane of their own on the timeline, listed by name and service.
A run whose agent sent none draws no such lane. Screenshots go to /tmp/convy-shots/."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from test_browser import SHOTS, Visit, chromium, expect

from convy import Answer, Bench, Models, RunJournal, RunSpec, Scenarios, trace_context
from convy.fakes import FakeAgent, FakeJudge
from convy.listener import TRACES
from convy.otlp import INTERNAL, Signals, Span
from convy.page import ReportPage
from convy.receiver import Receiver
from convy.report import Summary
from convy.runs import Runs

pytestmark = pytest.mark.timeout(900)


def played(folder: Path, name: str, receiver: Receiver | None) -> Path:
    """A run of one scenario whose agent, an in-process fake, sends the spans of its tool call to
    ``receiver`` (as an agent with the OpenTelemetry SDK would) and reports no call itself."""
    scenarios = folder / "scenarios"
    scenarios.mkdir(parents=True)
    (scenarios / "order.yaml").write_text("script: [Where is order 42?]\njudge:\n  - check: {called: lookup_order}\n", encoding="utf-8")

    def answer(text: str) -> Answer:
        here = trace_context()
        if receiver is not None and here is not None:
            top, tool, now = "1" * 16, "2" * 16, time.time_ns()
            spans = (
                Span(here.trace_id, top, here.span_id, "invoke_agent shop", INTERNAL, now, now + 4_000_000),
                Span(here.trace_id, tool, top, "execute_tool lookup_order", INTERNAL, now + 1_000_000, now + 3_000_000, {"gen_ai.tool.name": "lookup_order"}),
            )
            body = Signals({"service.name": "shop-agent"}, "shop", "1", spans).proto_traces()
            httpx2.post(receiver.url + TRACES, content=body, headers={"content-type": "application/x-protobuf"}, trust_env=False)
        return Answer("Order 42 shipped on Monday.")

    bench = Bench(FakeAgent(answer), Models(judge=FakeJudge()), receiver=receiver)
    spec = RunSpec(id=name, agent="bot", scenarios=Scenarios(scenarios).every(), attempts=1, limits=bench.limits)
    asyncio.run(RunJournal(folder / "results" / "bot" / name).play(spec, bench))
    (run,), _ = Runs(folder / "results").read()
    path = folder / "report.html"
    path.write_text(ReportPage(Summary(run)).html(), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    receiver = Receiver()
    try:
        traced = played(tmp_path_factory.mktemp("traced"), "traced", receiver)
    finally:
        receiver.close()
    yield traced, played(tmp_path_factory.mktemp("untraced"), "untraced", None)


@pytest.fixture(scope="module")
def browser(reports: tuple[Path, Path]) -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.mark.parametrize(("size", "touch"), [((1320, 900), False), ((390, 844), True)], ids=["desktop", "phone"])
def test_a_traced_call_is_marked_and_the_agents_spans_have_their_lane(
    browser: Any, reports: tuple[Path, Path], size: tuple[int, int], touch: bool
) -> None:
    traced, untraced = reports
    visit = Visit(browser, size=size, touch=touch)
    try:
        page = visit.open(traced, "s=order&a=1")
        page.wait_for_selector(".attempt[data-attempt='1']")
        expect(page.locator(".attempt .steps summary").first).to_contain_text("1 tool call")
        page.locator(".attempt .steps summary").first.click()
        expect(page.locator(".attempt .step.call").first).to_contain_text("lookup_order")
        expect(page.locator(".attempt .step.call").first).to_contain_text("seen in the agent's own spans")
        expect(page.locator(".attempt .decisions")).to_contain_text("agent called lookup_order in turn 1")
        expect(page.locator(".timeline-box .legend")).to_contain_text("the agent's own spans")
        expect(page.locator("svg.timeline rect.span-traced")).to_have_count(2)
        page.locator(".span-list summary").click()
        expect(page.locator(".span-list")).to_contain_text("execute_tool lookup_order (shop-agent)")
        SHOTS.mkdir(exist_ok=True)
        page.locator(".attempt").screenshot(path=str(SHOTS / f"window-traced-{'phone' if touch else 'desktop'}.png"))

        page = visit.open(untraced, "s=order&a=1")
        page.wait_for_selector(".attempt[data-attempt='1']")
        expect(page.locator(".timeline-box .legend")).not_to_contain_text("the agent's own spans")
        expect(page.locator("svg.timeline rect.span-traced")).to_have_count(0)
        assert visit.errors == []
    finally:
        visit.context.close()
