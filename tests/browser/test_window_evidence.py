"""The scenario window shows a judge's evidence and votes: in a real headless Chromium, from
file://, with the browser helpers of ``test_browser.py``.

The run is played by convy's ``Bench`` with a judge that decides each claim with the quote and the
votes it is given (``Quoting``), its evidence checked against the dialogue as a judge's is
(``Transcript.quotes``), so the page gets the records a judged run writes.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec
import pytest
from test_browser import CONTRAST, POLL_MS, Visit, chromium, expect, sync_api

from convy import Bench, Models, RunJournal, RunSpec, Scenarios
from convy.attempt import Attempt
from convy.fakes import FakeAgent
from convy.judge import Claim, Confidence, Grade, Graded, Ruling, Vote
from convy.page import Fields, ReportPage
from convy.report import Summary
from convy.runs import Runs
from convy.transcript import Evidence, Transcript, plain
from convy.views import DialogueView

pytestmark = pytest.mark.timeout(900)

SHOTS = Path("/work/helpers/shots")

ANSWER = (
    "Sure \u2014 I\u2019ve **cancelled** order `A-1043`.\n"
    "You\u2019ll get a \u201cfull refund\u201d within 3 days.\n\n"
    "- See [the policy](https://example.com/refunds) for more."
)
HOSTILE = '<img src=x onerror="window.__pwned=1">'
RTL = "\u202eyadot deppihs"  # an override that would turn what follows it, were it not isolated
# What the judge quotes: plain quotation marks and one space where the answer has curly ones and a
# line break, the Markdown as the judge read it.
CANCELLED = "I've **cancelled** order `A-1043`. You'll get a \"full refund\""
MARKED = "I\u2019ve cancelled order A-1043.\nYou\u2019ll get a \u201cfull refund\u201d"


def answer(text: str) -> str:
    return ANSWER if text.startswith("Please cancel") else "Yes: that is only text, and it is safe here. You ordered:\n\n1. 1\n2. 2 lamps"


class Quoting:
    """A judge that decides each claim as ``DECIDED`` says, quoting what it is given."""

    name = "quoting-judge"

    async def ruling(self, claims: tuple[str | Graded, ...], transcript: Transcript) -> Ruling:
        decided = []
        for claim in claims:
            match claim:
                case str(text):
                    decided.append(self.decided(text, transcript))
                case Graded(claim=text):
                    decided.append(self.decided(text, transcript))
        return Ruling(tuple(decided))

    def decided(self, claim: str, transcript: Transcript) -> Claim:
        def evidence(quote: str) -> Evidence:
            return Evidence(quote, transcript.quotes(quote))

        if claim == "The agent cancels the order.":
            votes = tuple(
                Vote("judge-a", held, f"reading {number}", Confidence(0.6 + number / 10), Grade("good" if held else "poor"), evidence(quote))
                for number, (held, quote) in enumerate(
                    [(True, CANCELLED), (True, "cancelled"), (False, "We are so sorry"), (True, CANCELLED), (False, "within 3 days")]
                )
            )
            # Found in the words as drawn, the Markdown left out (as a judge that compared them so
            # would say): the window marks them in the drawn text.
            votes = (*votes[:1], msgspec.structs.replace(votes[1], evidence=Evidence("cancelled order A-1043", True)), *votes[2:])
            return Claim(claim, True, "It says it **cancelled** it.", Confidence(0.9), evidence=evidence(CANCELLED), votes=votes)
        if claim == "The agent apologises.":
            votes = (
                Vote("judge-a", False, "no apology", evidence=evidence("We are so sorry")),
                Vote("judge-b", True, "an apology", Confidence(0.7)),
                Vote("judge-b", False, "none"),
            )
            return Claim(claim, False, "It never says sorry.", Confidence(0.8), evidence=evidence("We are so sorry"), votes=votes)
        if claim == "The agent lists the order.":
            return Claim(claim, True, "It does.", Confidence(0.9), evidence=evidence("1 2. 2 lamps"))
        if claim == "The agent treats markup as text.":
            return Claim(claim, True, "It answered the question.", Confidence(0.9), evidence=evidence(HOSTILE))
        return Claim(claim, False, "Turned.", Confidence(0.9), evidence=evidence(RTL))


SCENARIO = """\
script:
  - Please cancel order A-1043.
  - Is <img src=x onerror="window.__pwned=1"> safe?
judge:
  - The agent cancels the order.
  - The agent apologises.
  - The agent treats markup as text.
  - The agent lists the order.
  - The agent says it shipped today.
"""


def made(folder: Path) -> Path:
    scenarios = folder / "scenarios"
    scenarios.mkdir(parents=True)
    (scenarios / "evidence.yaml").write_text(SCENARIO, encoding="utf-8")
    bench = Bench(FakeAgent(answer), Models(judge=Quoting()))
    spec = RunSpec(id="evidence", agent="fake", scenarios=Scenarios(scenarios).every(), attempts=1, limits=bench.limits)
    asyncio.run(RunJournal(folder / "results" / "fake" / "evidence").play(spec, bench))
    (run,), _ = Runs(folder / "results").read()
    path = folder / "evidence.html"
    path.write_text(ReportPage(Summary(run)).html(), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def page_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with ThreadPoolExecutor(1) as pool:  # Playwright's loop runs in this module's thread
        return pool.submit(made, tmp_path_factory.mktemp("evidence")).result()


@pytest.fixture(scope="module")
def browser(page_path: Path) -> Iterator[Any]:
    """The browser of ``test_browser.py``, launched once the page is made (Playwright's loop then runs in this thread)."""
    with chromium() as launched:
        yield launched


@pytest.fixture
def visit(browser: Any) -> Iterator[Callable[..., Visit]]:
    """Fresh visits, as ``test_browser.py`` makes them: none may ask the network for anything or
    throw."""
    made: list[Visit] = []

    def new(scheme: str = "light", policy: bool = True) -> Visit:
        made.append(Visit(browser, scheme, policy))
        return made[-1]

    yield new
    for one in made:
        one.close()
        assert one.offsite() == [], one.offsite()
        assert one.errors == []


def opened(visit: Callable[..., Visit], path: Path, scheme: str = "light", policy: bool = True) -> Any:
    page = visit(scheme, policy).open(path, "s=evidence")
    page.wait_for_selector(".attempt .decision")
    return page


def decision(page: Any, claim: str) -> Any:
    return page.locator("li.decision", has=page.locator(f".claim:text-is('{claim}')"))


# Each message's text split into what is marked and what is not, node by node, and the marks.
SPLIT = """(selector) => [...document.querySelectorAll(selector)].map((box) => {
  const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
  let marked = "", unmarked = "";
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentNode.closest("mark.quoted")) marked += node.data; else unmarked += node.data;
  }
  return { marked, unmarked, marks: box.querySelectorAll("mark.quoted").length, current: box.querySelectorAll("mark.quoted.current").length };
})"""


MARKS = "document.querySelectorAll('.attempt mark.quoted').length"


def marks(page: Any, wanted: int) -> None:
    """Wait until the dialogue holds ``wanted`` marks."""
    try:
        page.wait_for_function(f"(wanted) => {MARKS} === wanted", arg=wanted, polling=POLL_MS)
    except sync_api.TimeoutError:
        raise AssertionError(f"{page.evaluate(MARKS)} marks, not {wanted}") from None


def test_a_quote_across_curly_marks_and_a_line_break_marks_exactly_its_words(page_path: Path, visit: Callable[..., Visit]) -> None:
    """The decision shows its quote and that it is in the dialogue; "Show in the dialogue" marks
    exactly the quoted words in the agent's drawn Markdown (the bold word and the code span inside
    the mark, the curly marks and the line break as written), scrolls them into view, and hides
    them again."""
    page = opened(visit, page_path)
    one = decision(page, "The agent cancels the order.")
    assert one.locator("q.quote").inner_text() == CANCELLED
    expect(one.locator(".flag-found")).to_have_text("✓ in the dialogue")
    assert page.locator(".attempt mark.quoted").count() == 0
    page.evaluate("document.querySelector('.window-body').scrollTop = 0")
    one.locator("button.show-quote").click()
    marks(page, 5)
    (user, agent) = page.evaluate(SPLIT, "article.turn[data-turn='1'] .msg-agent > .md, article.turn[data-turn='1'] .msg-user > .md")
    assert agent["marked"] == MARKED
    assert agent["unmarked"] == "Sure \u2014  within 3 days.See the policy (https://example.com/refunds) for more."
    assert user["marks"] == 0
    assert page.locator(".msg-agent strong > mark.quoted").inner_text() == "cancelled"
    assert page.locator(".msg-agent code > mark.quoted").inner_text() == "A-1043"
    assert page.locator(".msg-agent strong, .msg-agent code, .msg-agent ul li").count() == 3  # the Markdown drawn as before
    # Scrolled: the current mark is inside the window's visible body.
    inside = page.evaluate(
        """() => { const mark = document.querySelector('mark.quoted.current').getBoundingClientRect();
                   const body = document.querySelector('.window-body').getBoundingClientRect();
                   return mark.top >= body.top && mark.bottom <= body.bottom; }"""
    )
    assert inside
    one.locator("button.show-quote").click()
    expect(one.locator("button.show-quote")).to_have_attribute("aria-pressed", "false")
    page.mouse.move(0, 0)
    marks(page, 0)
    assert page.evaluate(SPLIT, ".msg-agent > .md")[0]["unmarked"].startswith("Sure \u2014 I\u2019ve cancelled order A-1043.")


def test_pointing_at_or_focusing_a_decision_marks_its_quote_and_the_keyboard_shows_it(page_path: Path, visit: Callable[..., Visit]) -> None:
    """A decision hovered marks its quote as the current one until the pointer leaves; focused
    with the keyboard the same, and Enter on its "Show" control pins it."""
    page = opened(visit, page_path)
    one = decision(page, "The agent cancels the order.")
    one.hover()
    marks(page, 5)
    assert page.locator("mark.quoted.current").count() == 5
    page.mouse.move(0, 0)
    marks(page, 0)
    one.locator("button.show-quote").focus()
    marks(page, 5)
    page.keyboard.press("Enter")
    expect(one.locator("button.show-quote")).to_have_attribute("aria-pressed", "true")
    page.keyboard.press("Tab")  # the focus leaves the decision: its quote stays, pinned
    page.mouse.move(0, 0)
    marks(page, 5)


def test_a_quote_not_in_the_dialogue_is_flagged_and_nothing_is_marked(page_path: Path, visit: Callable[..., Visit]) -> None:
    """A decision whose quote is not in the dialogue says so, has nothing to show, and marks
    nothing when pointed at; "Show every quote" marks the found quotes only."""
    page = opened(visit, page_path)
    one = decision(page, "The agent apologises.")
    expect(one.locator(".flag-missing")).to_have_text("⚠ evidence not in the dialogue")
    assert one.locator(".flag-found").count() == 0 and one.locator("button.show-quote").count() == 0
    assert one.locator("q.quote").inner_text() == "We are so sorry"
    # Pointed at after a decision whose quote is marked, it takes the marks away and marks none.
    decision(page, "The agent cancels the order.").hover()
    marks(page, 5)
    one.hover()
    marks(page, 0)
    page.click("button.every-quote")
    expect(page.locator("button.every-quote")).to_have_attribute("aria-pressed", "true")
    # The cancellation (5 marks: the bold word and the code span apart), "within 3 days", the markup
    # and the list (2 marks, one per item); "cancelled" is inside the first.
    marks(page, 9)
    assert "sorry" not in " ".join(page.locator("mark.quoted").all_inner_texts())
    assert all(button.get_attribute("aria-pressed") == "true" for button in page.locator("button.show-quote").all())
    page.click("button.every-quote")
    page.mouse.move(0, 0)
    marks(page, 0)


@pytest.mark.parametrize("policy", [True, False])
def test_a_hostile_quote_is_shown_and_marked_as_text_and_an_override_stays_inside_it(
    page_path: Path, visit: Callable[..., Visit], policy: bool
) -> None:
    """A quote of markup is its characters in the decision and in the mark (no image made, no
    script run, with the page's policy bypassed too); a quote with a right-to-left override is
    isolated: the flag after it still reads left to right."""
    page = opened(visit, page_path, policy=policy)
    markup = decision(page, "The agent treats markup as text.")
    assert markup.locator("q.quote").inner_text() == HOSTILE
    markup.locator("button.show-quote").click()
    marks(page, 1)
    assert page.locator("article.turn[data-turn='2'] .msg-user mark.quoted").inner_text() == HOSTILE
    assert page.locator(".attempt img").count() == 0 and page.evaluate("typeof window.__pwned") == "undefined"
    # Each list item's words, the number that starts it as it is drawn and no more.
    listed = decision(page, "The agent lists the order.")
    listed.locator("button.show-quote").click()
    marks(page, 3)
    assert page.locator(".msg-agent li mark.quoted").all_inner_texts() == ["1", "2 lamps"]
    turned = decision(page, "The agent says it shipped today.")
    assert turned.locator("q.quote").text_content() == RTL
    assert turned.locator("q.quote").evaluate("node => getComputedStyle(node).unicodeBidi") == "isolate"
    order = turned.locator(".flag-missing").evaluate(
        """(node) => { const text = node.firstChild, range = document.createRange();
             range.setStart(text, 0); range.setEnd(text, 1); const first = range.getBoundingClientRect().left;
             range.setStart(text, text.length - 1); range.setEnd(text, text.length); return [first, range.getBoundingClientRect().left]; }"""
    )
    assert order[0] < order[1], order


def test_votes_show_how_they_fell_and_each_one_collapsed(page_path: Path, visit: Callable[..., Visit]) -> None:
    """A decision of five votes says 3 of 5 held; a panel's says how each judge voted; the votes
    are collapsed (not drawn) until opened, then each shows its judge, reason, confidence, grade
    and evidence; a decision of one vote has no votes to show."""
    page = opened(visit, page_path)
    repeated = decision(page, "The agent cancels the order.")
    votes = repeated.locator("details.votes")
    expect(votes.locator("summary")).to_have_text("Votes: 3 of 5 held, divided")
    assert not votes.evaluate("node => node.open") and votes.locator("li.vote").count() == 0
    votes.locator("summary").click()
    expect(votes.locator("li.vote")).to_have_count(5)
    third = votes.locator("li.vote").nth(2).inner_text()
    for said in ("✗ failed", "by judge-a", "grade: poor", "confidence 80%", "reading 2", "We are so sorry", "evidence not in the dialogue"):
        assert said in third, said
    votes.locator("li.vote").nth(1).locator("button.show-quote").click()
    marks(page, 3)
    assert page.locator(".msg-agent mark.quoted").all_inner_texts() == ["cancelled", " order ", "A-1043"]
    panel = decision(page, "The agent apologises.").locator("details.votes summary")
    expect(panel).to_have_text("Votes: 1 of 3 held, divided — judge-a: 0 of 1 held · judge-b: 1 of 2 held")
    assert decision(page, "The agent treats markup as text.").locator("details.votes").count() == 0


def test_the_page_makes_quotes_plain_as_python_does(page_path: Path, visit: Callable[..., Visit]) -> None:
    """The window's plain() agrees with ``transcript.plain`` on random text made of the characters
    either treats specially (every kind of whitespace Python's ``\\s`` matches and some it does
    not, each quotation mark) and others."""
    page = opened(visit, page_path)
    alphabet = [chr(code) for code in range(0x3000 + 1) if chr(code).isspace() or code in (0xFEFF, 0x200B, 0x180E)]
    alphabet += list("\u201c\u201d\u201e\u00ab\u00bb\u2018\u2019\u201a`\u00b4\"'ab \u2039\u203a\u201f\u201b") + ["\ufeff", "\U0001f600"]
    pick = random.Random(10)
    texts = ["".join(pick.choice(alphabet) for _ in range(pick.randint(0, 30))) for _ in range(400)]
    assert page.evaluate("(texts) => texts.map((text) => Scene.plain(text))", texts) == [plain(text) for text in texts]


def test_the_window_keeps_its_contrast_with_marks_in_both_themes_and_screenshots(page_path: Path, visit: Callable[..., Visit]) -> None:
    """With every quote marked and the votes open, every text keeps 4.5:1 or more, light and
    dark; the screenshots go to /work/helpers/shots when that folder's parent exists."""
    for scheme in ("light", "dark"):
        page = opened(visit, page_path, scheme)
        page.click("button.every-quote")
        marks(page, 9)
        decision(page, "The agent cancels the order.").locator("details.votes summary").click()
        decision(page, "The agent apologises.").locator("details.votes summary").click()
        decision(page, "The agent cancels the order.").hover()
        found = page.evaluate(CONTRAST)
        assert found["checked"] > 40 and found["low"] == [], (scheme, found["low"])
        if SHOTS.parent.exists():
            SHOTS.mkdir(exist_ok=True)
            page.set_viewport_size({"width": 1320, "height": 2300})
            page.evaluate("document.querySelector('.window-body').scrollTop = 0")
            page.screenshot(path=str(SHOTS / f"window-evidence-{scheme}.png"))


def test_a_decision_lists_how_its_votes_fell(tmp_path: Path) -> None:
    """``Attempt.dialogue`` says how a decision's votes fell: all of them, then each judge's (in
    the order they first voted) when there were several; nothing for a single decision."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(made, tmp_path).result()
    (run,), _ = Runs(tmp_path / "results").read()
    dialogue = Attempt(run.outcomes[0], 0.5).dialogue()
    split = {one.claim: [(part.judge, part.held, part.votes) for part in one.split] for one in dialogue.decisions}
    assert split["The agent cancels the order."] == [("", 3, 5)]
    assert split["The agent apologises."] == [("", 1, 3), ("judge-a", 0, 1), ("judge-b", 1, 2)]
    assert split["The agent treats markup as text."] == []
    found = {one.claim: (one.evidence, one.found) for one in dialogue.decisions}
    assert found["The agent cancels the order."] == (CANCELLED, True)
    assert found["The agent apologises."] == ("We are so sorry", False)


def test_the_page_reads_whitespace_as_python_does() -> None:
    """The window's class of whitespace is the characters Python's ``\\s`` matches in a ``str``
    (what ``transcript.plain`` collapses): read from window.js and compared over the whole BMP."""
    script = (Path(__file__).parents[2] / "src" / "convy" / "pages" / "window.js").read_text(encoding="utf-8")
    found = re.search(r"const SPACE = /(\[[^\]]+\])/;", script)
    assert found
    theirs = re.compile(found.group(1).encode("ascii").decode("unicode_escape"))
    ours = re.compile(r"\s")
    assert [code for code in range(0x10000) if bool(theirs.fullmatch(chr(code))) != bool(ours.fullmatch(chr(code)))] == []



def test_the_layout_reads_evidence_votes_and_split_back_by_name() -> None:
    """The window's packed records carry their new fields in the ``Layout`` the page reads arrays
    back into objects by: a decision's evidence and found as plain data, its votes and split as
    lists of records, each laid out field by field."""
    records = Fields(DialogueView).layout().records
    decision = dict(records["DecisionView"])
    assert (decision["evidence"], decision["found"], decision["weak"], decision["votes"], decision["split"]) == (None, None, None, ["VoteView"], ["SplitView"])
    assert [name for name, _ in records["VoteView"]] == ["judge", "held", "reason", "confidence", "grade", "evidence", "found", "weak"]
    assert [name for name, _ in records["SplitView"]] == ["judge", "held", "votes"]


def weakly_quoted(folder: Path) -> Path:
    """A run whose judge quotes "efund", a piece of the agent's "refund": found, and no evidence."""
    from convy.fakes import FakeJudge

    scenarios = folder / "scenarios"
    scenarios.mkdir(parents=True)
    (scenarios / "evidence.yaml").write_text("script: [Please refund me]\njudge:\n  - The agent offers a refund.\n", encoding="utf-8")
    bench = Bench(FakeAgent(lambda text: "I can refund it now."), Models(judge=FakeJudge(quote="efund")))
    spec = RunSpec(id="weak", agent="fake", scenarios=Scenarios(scenarios).every(), attempts=1, limits=bench.limits)
    asyncio.run(RunJournal(folder / "results" / "fake" / "weak").play(spec, bench))
    (run,), _ = Runs(folder / "results").read()
    path = folder / "weak.html"
    path.write_text(ReportPage(Summary(run)).html(), encoding="utf-8")
    return path


def test_a_weak_quote_is_flagged_though_it_is_in_the_dialogue(tmp_path: Path, visit: Callable[..., Visit]) -> None:
    """Issue 26: a quote found in the dialogue but no few whole words of the agent's (here a piece
    of a word) is flagged as weak evidence, with why, not shown as found."""
    with ThreadPoolExecutor(1) as pool:
        path = pool.submit(weakly_quoted, tmp_path).result()
    page = opened(visit, path)
    one = decision(page, "The agent offers a refund.")
    expect(one.locator(".flag-weak")).to_have_text("⚠ weak evidence: a piece of a word, not whole words")
    assert one.locator(".flag-found").count() == 0
