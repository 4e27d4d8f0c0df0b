"""The comparison page of a pair whose candidate was played against its base until decided
(``convy run --against BASE --attempts auto``), in a real headless Chromium: the anytime-valid
verdict leads, the fixed-design test is marked as description only, and each scenario's own
anytime-valid change has a column; a candidate played against another base gets a note that the
verdict does not apply; a base name from a tampered run.json is drawn as text and runs nothing.

The runs and the pages are made by the real ``convy`` command on a project of fakes, as
tests/unit/test_against.py makes them."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_against import MODELS, project
from test_browser import CONTRAST, POLL_MS, SHOTS, Visit, chromium, expect
from test_comparison_sequential import played_against
from test_exit_codes import convy, runs

pytestmark = pytest.mark.timeout(900)

HOSTILE = '<img src=x onerror="window.owned=1">'


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A base at 0.9; a candidate at 0.5 played against it until decided; a second base at 0.9
    played apart; and a copy of the candidate whose run.json names a hostile base. The pages of
    ``convy compare`` of the first base with the candidate (``applies``), of the second base with
    it (``apart``), and of the first base with the copy (``hostile``)."""
    folder = project(tmp_path_factory.mktemp("sequential"))
    base, candidate, _ = played_against(folder)
    (folder / "models.py").write_text(MODELS.format(rate=0.9))
    assert convy(folder, "run").returncode == 0
    (other,) = set(runs(folder)) - {base, candidate}
    copy = candidate[:-4] + "dead"
    results = folder / "results" / "bot"
    shutil.copytree(results / candidate, results / copy)
    saved = json.loads((results / copy / "run.json").read_text())
    saved["spec"]["id"] = copy
    saved["spec"]["adaptive"]["until"]["run"] = HOSTILE
    (results / copy / "run.json").write_text(json.dumps(saved))
    made: dict[str, Path] = {}
    for name, (before, after) in {"applies": (base, candidate), "apart": (other, candidate), "hostile": (base, copy)}.items():
        compared = convy(folder, "compare", before, after)
        assert compared.returncode == 0, compared.stderr
        made[name] = folder / "results" / "compare" / f"{before}--{after}.html"
    return made


@pytest.fixture(scope="module")
def browser(pages: dict[str, Path]) -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def visits(browser: Any) -> Iterator[list[Visit]]:
    """Visits made by a test; each must have asked nothing of the network and thrown nothing."""
    made: list[Visit] = []
    yield made
    for one in made:
        one.close()
        assert one.offsite() == [], one.offsite()
        assert one.errors == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_anytime_valid_verdict_leads_and_the_fixed_test_only_describes(
    pages: dict[str, Path], browser: Any, visits: list[Visit], scheme: str, tmp_path: Path
) -> None:
    visits.append(Visit(browser, scheme))
    page = visits[-1].open(pages["applies"])
    data = page.evaluate("JSON.parse(document.getElementById('data').textContent)")
    sequential = data["sequential"]
    assert sequential["applies"] and sequential["verdict"] == "worse"
    expect(page.locator("#sequential strong")).to_have_text(
        "Played until decided: the anytime-valid verdict leads, the fixed-design test only describes"
    )
    expect(page.locator("#sequential p")).to_have_text(sequential["note"])
    tile = page.locator("#sequential-verdict")
    expect(tile.locator("h2")).to_have_text("Change · anytime-valid verdict")
    expect(tile.locator(".big")).to_have_text("▼ worse")
    expect(tile.locator(".big")).to_have_class("big st-worse")
    e = sequential["e"]
    expect(page.locator("#sequential-e")).to_have_text(f"e = {e:.1f} ≥ 20 = 1/α (α = 0.05)")
    expect(tile).to_contain_text(f"after {sequential['attempts']} judged attempts of the candidate run")
    expect(page.locator("#sequential-said")).to_have_text(sequential["said"])
    # The verdict tile comes first; the fixed-design tile after it, marked, its numbers kept.
    order = page.eval_on_selector_all(".tiles .tile.verdict", "nodes => nodes.map(node => node.id)")
    assert order == ["sequential-verdict", "fixed-verdict"]
    fixed = page.locator("#fixed-verdict")
    expect(fixed.locator("h2")).to_have_text("Fixed-design test · description only")
    expect(fixed.locator(".badge")).to_have_text("! not valid for a verdict")
    expect(fixed).to_contain_text("this test alone says worse")
    expect(page.locator("#fixed-caveat")).to_have_text(sequential["fixed"])
    expect(fixed).not_to_contain_text("a real change")
    expect(fixed).to_contain_text("95% CI")
    expect(page.locator("#tested")).to_contain_text(re.compile(r"p [=<] \S"))
    expect(page.locator("#tested")).not_to_contain_text("= <")  # "p < 0.001", never "p = < 0.001"
    # Each scenario: the fixed-design change and its own anytime-valid one, side by side.
    headers = page.locator("#group-worse thead th")
    expect(headers).to_have_text(["Scenario", "Before", "After", "p", "adjusted p", "Fixed-design", "Anytime-valid"])
    row = page.locator("#group-worse tr[data-id='a']")
    own = next(one for one in data["scenarios"] if one["id"] == "a")
    expect(row.locator("td.anytime")).to_have_text(f"= same e = {own['sequential_e']:.2f}")
    counts = sequential["counts"]
    expect(page.locator("#groups-note")).to_contain_text(
        f"Anytime-valid: each scenario's own e-value, decided by e-BH — {counts['worse']} worse, {counts['better']} better, {counts['same']} same."
    )
    contrast = page.evaluate(CONTRAST)
    assert contrast["checked"] > 50 and contrast["low"] == [], contrast["low"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = tmp_path / f"comparison-sequential-{scheme}.png"
    page.screenshot(path=str(shot), full_page=True)
    shutil.copyfile(shot, SHOTS / shot.name)


def test_a_candidate_played_against_another_base_says_the_verdict_does_not_apply(
    pages: dict[str, Path], browser: Any, visits: list[Visit]
) -> None:
    visits.append(Visit(browser))
    page = visits[-1].open(pages["apart"])
    expect(page.locator("#sequential strong")).to_have_text("The sequential verdict does not apply to this pair")
    expect(page.locator("#sequential p")).to_contain_text("not against this base")
    expect(page.locator("#sequential p")).to_contain_text("does not apply to this one")
    expect(page.locator("#sequential-verdict")).to_have_count(0)
    expect(page.locator("#fixed-caveat")).to_have_count(0)
    expect(page.locator("#fixed-verdict h2")).to_have_text("Change")
    expect(page.locator("#group-worse thead th")).to_have_text(["Scenario", "Before", "After", "p", "adjusted p", "Change"])
    expect(page.locator("#groups-note")).to_have_count(0)


@pytest.mark.parametrize("policy", [True, False])
def test_a_hostile_base_name_from_run_json_is_drawn_as_text(
    pages: dict[str, Path], browser: Any, visits: list[Visit], policy: bool
) -> None:
    """Also with the page's content security policy bypassed: the text is never parsed as HTML."""
    visits.append(Visit(browser, policy=policy))
    page = visits[-1].open(pages["hostile"])
    expect(page.locator("#sequential p")).to_contain_text(f"played against bot/{HOSTILE}, not against this base")
    assert page.locator("#sequential img").count() == 0 and page.locator("img[src='x']").count() == 0
    page.wait_for_function("() => document.readyState === 'complete'", polling=POLL_MS)
    assert page.evaluate("window.owned") is None
