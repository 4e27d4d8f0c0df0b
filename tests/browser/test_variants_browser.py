"""A matrix run's report in a real headless Chromium: the Variants section's rates per value,
grouping the scenario table by a matrix key, filtering by a value, and both kept in the hash."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_browser import SHOTS, Visit, chromium, expect, hashed, shows

pytestmark = pytest.mark.timeout(900)

DEMO = Path(__file__).resolve().parents[2] / "bench" / "matrix_demo.py"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's project played offline, 4 attempts a variant: its report."""
    folder = tmp_path_factory.mktemp("matrix")
    done = subprocess.run([sys.executable, str(DEMO), str(folder), "-k", "4"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (page,) = (folder / "results" / "bot").glob("*/report.html")
    return page


@pytest.fixture(scope="module")
def browser(report: Path) -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_report_groups_and_filters_by_a_variant_dimension(report: Path, browser: Any, scheme: str) -> None:
    """The Variants section has a tile per matrix key with each value's rate; grouping by mood puts
    each mood's variants under a header that says its rate; a value filters the table; the hash
    keeps both, and a page opened on it draws them again."""
    visit = Visit(browser, scheme)
    try:
        page = visit.open(report)
        expect(page.locator("#variants .variant-dimension")).to_have_count(3)
        expect(page.locator("#variants .variant-dimension h2")).to_have_text(["mood", "language", "persona"])
        expect(page.locator("#variants [data-key='mood'] tbody tr")).to_have_count(2)
        expect(page.locator("#variants [data-key='mood'] tbody th")).to_have_text(["calm", "angry"])
        page.select_option("#group", "variant:mood")
        groups = page.locator("#scenarios tbody tr.group")
        expect(groups).to_have_count(3)
        expect(groups.nth(0)).to_contain_text("mood calm · 4 scenarios · ")
        expect(groups.nth(1)).to_contain_text("mood angry · 4 scenarios · ")
        expect(groups.nth(2)).to_have_text("no mood · 1 scenario")
        calm = page.inner_text("#variants [data-key='mood'] tbody tr[data-value='calm'] td.rate")
        assert f"· {calm} [" in groups.nth(0).inner_text()
        hashed(page, "group=variant%3Amood")
        shows(page, [
            "refunds/upset[mood=calm,language=English,persona=retiree]",
            "refunds/upset[mood=calm,language=English,persona=student]",
            "refunds/upset[mood=calm,language=German,persona=retiree]",
            "refunds/upset[mood=calm,language=German,persona=student]",
        ], 0, 4)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"report-variants-{scheme}.png"), full_page=True)
        page.click("#variants [data-key='language'] tbody tr[data-value='German'] button")
        expect(page.locator("#filter-variant")).to_have_value("language=German")
        shows(page, [
            "refunds/upset[mood=calm,language=German,persona=retiree]",
            "refunds/upset[mood=calm,language=German,persona=student]",
            "refunds/upset[mood=angry,language=German,persona=retiree]",
            "refunds/upset[mood=angry,language=German,persona=student]",
        ])
        hashed(page, "variant=language%3DGerman")
        url = page.url
        again = Visit(browser, scheme)
        try:
            reopened = again.open(report, url.split("#", 1)[1])
            expect(reopened.locator("#group")).to_have_value("variant:mood")
            expect(reopened.locator("#filter-variant")).to_have_value("language=German")
            expect(reopened.locator("#scenarios tbody tr.group")).to_have_count(2)
        finally:
            again.close()
            assert again.errors == []
    finally:
        visit.close()
    assert visit.offsite() == []
    assert visit.errors == []
