"""The three pages as files: one standalone HTML file each, nothing from the network, the data
embedded with ``<`` escaped, and the data read back equal to the view records it came from.

The runs are real: played by convy's bench with its fakes into a folder in ``tmp_path``, read
back by ``Runs``. ``Played`` is shared with ``test_browser.py``, which opens the same pages in
Chromium.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import hashlib
import itertools
import json
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import msgspec
import pytest

from convy import (
    AgentFailure,
    Answer,
    Asked,
    Bench,
    Call,
    Cost,
    Fingerprints,
    ModelNames,
    Models,
    NotReported,
    Reply,
    Reported,
    RunJournal,
    RunSpec,
    Scenarios,
    Skipped,
    Thought,
    Usage,
    views,
)
from convy.agent import Step
from convy.comparison import Comparison, comparable
from convy.fakes import FakeAgent, FakeJudge, FakeModel
from convy.index import Index
from convy.page import (
    ComparisonPage,
    Fields,
    IndexPage,
    JsonBlock,
    Packed,
    PackedChunks,
    PackedIndex,
    ReportPage,
    Template,
)
from convy.report import Summary
from convy.runs import Read, Runs
from convy.views import ComparisonView, CostArray, DialogueView, IndexView, Pair, RunView, TokensArray

SCRIPT = "<script>window.__pwned=1</script>"
IMAGE = '<img src=x onerror="window.__pwned=1">'
HOSTILE = f"Here you are: {SCRIPT} and {IMAGE} — **still text**."

SCENARIOS = {
    "refunds/damaged.yaml": """\
tags: [refunds, smoke]
script:
  - "Hi, my kettle arrived broken."
  - "It's order A-1043."
judge:
  - The agent offers a refund.
  - check: {called: issue_refund, with: {order: A-1043}}
""",
    "refunds/late.yaml": """\
tags: [refunds]
user: You are waiting for a refund that is late.
script: ["Where is my refund?"]
max_turns: 3
judge:
  - The agent gives a date.
  - claim: The agent is polite.
    grades: [rude, neutral, warm]
    pass: neutral
""",
    "orders/crash.yaml": """\
tags: [orders]
script: ["Please crash now."]
judge: [The agent answers.]
""",
    "orders/unsure.yaml": """\
tags: [orders]
script: ["Is my order on its way?"]
judge: [The judge cannot decide this.]
""",
    "hostile.yaml": """\
script: ["Say something </script><script>window.__pwned=1</script> nasty."]
judge:
  - "The agent stays calm </script><b>bold</b>."
""",
}


class Shop:
    """The agent under test: it looks up and refunds orders with tool calls and thoughts, crashes
    when asked to, and says back hostile markup; ``refunds`` off, it never refunds."""

    def __init__(self, refunds: bool) -> None:
        self.refunds = refunds

    def answer(self, text: str) -> Answer | str:
        if "crash" in text:
            raise AgentFailure("the shop's database is down")
        if "nasty" in text:
            return Answer(HOSTILE, Usage(12, 9))
        if "kettle" in text:
            return Answer(
                "Sorry about that! Which order was it?",
                Usage(40, 11, cost=Cost(Decimal("0.0004"), "provider")),
                (Thought("The user has a broken kettle: I need the order number first."),),
            )
        if "A-1043" in text:
            steps: tuple[Step, ...] = (
                Thought("Look the order up, then refund it."),
                Call("lookup_order", {"order": "A-1043"}, Reported({"item": "kettle", "paid": 39.9}), 0.12),
            )
            if self.refunds:
                # It asks before refunding, and the scenario's approvals say yes (as an attempt keeps the pause).
                asked = 'May I run issue_refund with {"order":"A-1043","amount":39.9}?'
                steps += (
                    Asked(asked, "approve", "scenario", ("approve", "deny"), "issue_refund", {"order": "A-1043", "amount": 39.9}, 0.5),
                    Call("issue_refund", {"order": "A-1043", "amount": 39.9}, Reported({"ok": True}), 0.3),
                )
                said = (
                    "Done: a **refund of $39.90** is on its way.\n\n"
                    "- it shows in 3–5 days\n- you keep the kettle\n\n"
                    "Details: [refund policy](https://example.com/refunds) and `ref R-77`."
                )
            else:
                steps += (Call("escalate", {"order": "A-1043"}, NotReported()),)
                said = "I have passed this to a colleague."
            return Answer(said, Usage(120, 45, cached=80, cost=Cost(Decimal("0.0021"), "provider")), steps)
        if "refund" in text.lower():
            return Answer("Your refund left us on Monday; expect it by Friday.", Usage(30, 14))
        return Answer("It ships tomorrow.", Usage(20, 5))


class Judged:
    """The judge's decisions: refunds offered when said, a date given on every other attempt,
    and one claim it cannot decide."""

    def __init__(self) -> None:
        self.dates = itertools.count()

    def held(self, claim: str, transcript: object) -> bool:
        if claim.startswith("The judge cannot"):
            raise RuntimeError("the judge model answered nonsense")
        if claim.startswith("The agent offers a refund"):
            return any("refund" in turn.answer.text for turn in transcript.turns)  # type: ignore[attr-defined]
        if claim.startswith("The agent gives a date"):
            return next(self.dates) % 2 == 0
        return True


@dataclass
class Played:
    """Runs played into ``folder/results`` and the pages made from them, as convy writes them."""

    folder: Path

    def scenarios(self) -> Path:
        root = self.folder / "scenarios"
        for name, text in SCENARIOS.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return root

    def play(
        self, agent: str, run: str, refunds: bool, attempts: int, judge: str = "fake-judge", name: str = "", skipped: tuple[Skipped, ...] = ()
    ) -> None:
        scenarios = Scenarios(self.scenarios()).every()
        user = FakeModel(lambda messages: Reply("Thanks, that is all. ###STOP###", Usage(25, 6)), name="fake-user")
        bench = Bench(FakeAgent(Shop(refunds).answer), Models(user=user, judge=FakeJudge(Judged().held, confidence=0.9, name=judge)))
        spec = RunSpec(
            id=run,
            agent=agent,
            scenarios=scenarios,
            attempts=attempts,
            limits=bench.limits,
            models=ModelNames(user="fake-user", judge=judge),
            fingerprints=Fingerprints(scenarios="9f2c4e1ab37d5c60e8"),
            skipped=skipped or (Skipped("billing/invoice", ("needs the judge model, which is absent",)),),
            convy="0.1.0",
            name=name,
        )
        asyncio.run(RunJournal(self.folder / "results" / agent / run).play(spec, bench))

    def made(self) -> Played:
        """Three runs: ``shop`` before and after it stopped refunding, and one of ``echo``."""
        self.play("shop", "2026-01-05-before", refunds=True, attempts=6)
        self.play("shop", "2026-01-06-after", refunds=False, attempts=6)
        self.play("echo", "2026-01-07-first", refunds=True, attempts=2, judge="other-judge")
        return self

    def runs(self) -> dict[str, Read]:
        found, unread = Runs(self.folder / "results").read()
        assert unread == ()
        return {run.file.spec.id: run for run in found}

    def pages(self) -> dict[str, Path]:
        """Every page written where convy writes it: reports, one comparison, the index."""
        runs = self.runs()
        results = self.folder / "results"
        written: dict[str, Path] = {}
        for run in runs.values():
            path = run.folder / "report.html"
            path.write_text(ReportPage(Summary(run)).html(), encoding="utf-8")
            written[run.file.spec.id] = path
        compare = results / "compare" / "2026-01-05-before--2026-01-06-after.html"
        compare.parent.mkdir(parents=True, exist_ok=True)
        compare.write_text(ComparisonPage(self.comparison()).html(), encoding="utf-8")
        written["comparison"] = compare
        index = results / "index.html"
        index.write_text(IndexPage(self.index()).html(), encoding="utf-8")
        written["index"] = index
        return written

    def comparison(self) -> ComparisonView:
        runs = self.runs()
        return Comparison(runs["2026-01-05-before"], runs["2026-01-06-after"]).view()

    def index(self) -> IndexView:
        runs = self.runs()
        return Index(tuple(runs.values()), (), ("2026-01-05-before--2026-01-06-after",), comparable).view()


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    return Played(tmp_path_factory.mktemp("pages")).made()


class Page:
    """A page's text and what is in it."""

    def __init__(self, text: str) -> None:
        self.text = text

    def block(self, name: str) -> str:
        found = re.search(rf'<script type="application/json" id="{name}">(.*?)</script>', self.text, re.S)
        assert found, name
        return found.group(1)

    def outside_data(self) -> str:
        return re.sub(r'<script type="application/json" id="[\w-]+">.*?</script>', "", self.text, flags=re.S)

    def script(self) -> str:
        found = re.findall(r"<script>(.*?)</script>", self.text, re.S)
        assert len(found) == 1
        return found[0]


def test_report_is_one_file_with_no_resource_from_the_network(played: Played) -> None:
    """A report names no URL but the SVG namespace, loads no script, style, font or image by
    reference, and its icon is a data: URI."""
    page = Page(ReportPage(Summary(played.runs()["2026-01-05-before"])).html())
    outside = page.outside_data()
    assert set(re.findall(r"https?://[^\s\"'<>)]+", outside)) <= {"http://www.w3.org/2000/svg"}
    assert not re.search(r"<(script|img|iframe|audio|video|source|link)\b[^>]*\bsrc\s*=", outside, re.I)
    assert not re.search(r'<link\b(?![^>]*rel="icon")[^>]*>', outside)
    assert re.search(r'<link rel="icon" href="data:image/svg\+xml;base64,[A-Za-z0-9+/=]+">', outside)
    assert "@import" not in outside and "url(" not in outside
    assert "fetch(" not in page.script() and "XMLHttpRequest" not in page.script()


@pytest.mark.parametrize("kind", ["report", "comparison", "index"])
def test_every_page_allows_only_its_own_script(played: Played, kind: str) -> None:
    """Each page's Content-Security-Policy allows no source at all but its one inline script, by
    that script's hash, and inline styles and data: images."""
    text = played.pages()["2026-01-05-before" if kind == "report" else kind].read_text(encoding="utf-8")
    page = Page(text)
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', text)
    assert policy
    digest = base64.b64encode(hashlib.sha256(page.script().encode("utf-8")).digest()).decode()
    assert policy.group(1).startswith("default-src 'none'; ")
    assert f"script-src 'sha256-{digest}'" in policy.group(1)
    assert "unsafe-eval" not in policy.group(1) and "http" not in policy.group(1)
    assert text.count("<script") == text.count("</script>")


def test_data_escapes_every_less_than_sign(played: Played) -> None:
    """No ``<`` survives inside an embedded JSON block, so ``</script>`` said by anyone cannot close
    it; the claim that carries markup is there as ``\\u003c``."""
    page = Page(ReportPage(Summary(played.runs()["2026-01-05-before"])).html())
    for name in ("data", "dialogues", "dialogues-0"):
        assert "<" not in page.block(name)
    assert "\\u003c/script>\\u003cb>bold\\u003c/b>" in page.block("data")
    scenarios = {one["id"]: one for one in json.loads(page.block("data"))["scenarios"]}
    assert scenarios["hostile"]["claims"][0]["text"] == "The agent stays calm </script><b>bold</b>."


def unpacked(page: Page, name: str, kind: type) -> dict[str, object]:
    """Packed blocks read back: the index, every chunk gunzipped, and each key found in the chunk
    the index says."""
    index = msgspec.json.decode(page.block(name), type=PackedIndex)
    texts = [msgspec.json.decode(page.block(f"{name}-{number}"), type=str) for number in range(index.count)]
    chunks = [msgspec.json.decode(gzip.decompress(base64.b64decode(text)), type=dict[str, kind]) for text in texts]  # type: ignore[valid-type]
    assert sorted(key for chunk in chunks for key in chunk) == sorted(index.where)
    assert f'id="{name}-{index.count}"' not in page.text
    return {key: chunks[at][key] for key, at in index.where.items()}


def test_run_report_data_round_trips(played: Played) -> None:
    """The report's data reads back as the very RunView, and each scenario's dialogues, gunzipped,
    as the very DialogueViews."""
    summary = Summary(played.runs()["2026-01-05-before"])
    page = Page(ReportPage(summary).html())
    assert msgspec.json.decode(page.block("data"), type=RunView) == summary.view()
    dialogues = unpacked(page, "dialogues", DialogueView)
    expected = {f"{scenario}#{one.attempt}": one for scenario, found in summary.dialogues().items() for one in found}
    assert dialogues == expected
    assert list(dialogues) == list(expected)
    hostile = [turn.agent for key, dialogue in dialogues.items() if key.startswith("hostile#") for turn in dialogue.turns]  # type: ignore[attr-defined]
    assert hostile and all(answer == HOSTILE for answer in hostile)


def test_packed_chunks_hold_consecutive_scenarios_up_to_their_limit() -> None:
    """Scenarios go into a chunk in order until its JSON reaches the limit; one larger than the
    limit is a chunk of its own; every key is found in the chunk named for it."""
    values = {f"s{number}": "x" * size for number, size in enumerate([10, 10, 10, 500, 10, 10])}
    packed = Packed(values.items(), limit=100).chunks()
    assert packed.where == {"s0": 0, "s1": 0, "s2": 0, "s3": 0, "s4": 1, "s5": 1}
    assert len(packed.chunks) == 2
    assert unpacked(Page("\n".join(block.html() for block in packed.blocks("values"))), "values", str) == values
    assert Packed(()).chunks() == PackedChunks(chunks=[], where={})
    assert len(Packed(values.items()).chunks().chunks) == 1


def test_layout_names_every_field_of_the_packed_records_in_their_order() -> None:
    """The layout beside packed records names each record's fields in their declared order, and
    which fields hold records or lists of them; a field that may hold two kinds of record is refused."""
    layout = Fields(Pair).layout()
    assert layout.kind == "Pair"
    assert sorted(layout.records) == sorted(
        ["Pair", "DialogueView", "TurnView", "StepView", "DecisionView", "VoteView", "SplitView", "SpanView", "TokensArray", "CostArray", "UserFaultView"]
    )
    for name, fields in layout.records.items():
        assert [field for field, _ in fields] == list(getattr(views, name).__struct_fields__)
    assert dict(layout.records["Pair"]) == {"scenario": None, "before": "DialogueView", "after": "DialogueView"}
    assert dict(layout.records["DialogueView"])["turns"] == ["TurnView"]
    assert dict(layout.records["TurnView"])["cost"] == "CostArray"
    assert msgspec.json.encode(TokensArray(requests=1, total=3)) == b"[1,0,0,0,null,null,3]"

    class Either(msgspec.Struct, frozen=True):
        one: TokensArray | CostArray

    with pytest.raises(ValueError, match="several kinds of record"):
        Fields(Either).layout()


def test_comparison_and_index_data_round_trip(played: Played) -> None:
    """The comparison page holds its ComparisonView, its pairs packed apart (not in the data), and
    the index its IndexView, exactly."""
    view = played.comparison()
    page = Page(ComparisonPage(view).html())
    assert msgspec.json.decode(page.block("data"), type=ComparisonView) == msgspec.structs.replace(view, pairs=[])
    assert unpacked(page, "pairs", Pair) == {pair.scenario: pair for pair in view.pairs}
    assert "passed this to a colleague" not in page.text
    index = played.index()
    assert msgspec.json.decode(Page(IndexPage(index).html()).block("data"), type=IndexView) == index


def test_report_keeps_dialogues_out_of_the_table_data(played: Played) -> None:
    """The table data holds no dialogue text: the answers are only in the compressed block."""
    page = Page(ReportPage(Summary(played.runs()["2026-01-05-before"])).html())
    assert "refund of $39.90" not in page.block("data")
    assert "refund of $39.90" not in page.text


def test_the_fixture_runs_hold_what_the_pages_must_show(played: Played) -> None:
    """The runs pass, fail, are not judged, carry tool calls and thoughts, and the comparison sees
    the refund scenario worse."""
    view = Summary(played.runs()["2026-01-05-before"]).view()
    statuses = {scenario.id: scenario.status for scenario in view.scenarios}
    assert statuses == {
        "hostile": "always",
        "orders/crash": "never",
        "orders/unsure": "not_judged",
        "refunds/damaged": "always",
        "refunds/late": "flaky",
    }
    assert view.not_judged == {"judge": 6}
    dialogue = Summary(played.runs()["2026-01-05-before"]).dialogues()["refunds/damaged"][0]
    assert [step.kind for turn in dialogue.turns for step in turn.steps] == ["thought", "thought", "call", "asked", "call"]
    comparison = played.comparison()
    assert [change.id for change in comparison.scenarios if change.change == "worse"] == ["refunds/damaged"]


def test_title_and_parts_are_safe() -> None:
    """The title is escaped as HTML text; a page part that would close its own tag is refused."""
    text = Template("index.js").html("a <b> & c", (JsonBlock("data", b'{"x": "</script>"}'),))
    assert "<title>a &lt;b&gt; &amp; c</title>" in text
    assert '{"x": "\\u003c/script>"}' in text
    with pytest.raises(ValueError, match="close its own tag"):
        Broken("index.js").html("x", ())


class Broken(Template, frozen=True):
    """A template whose script would close its tag."""

    def code(self) -> str:
        return "var x = '</script>';"


def test_every_part_a_page_needs_ships_with_convy() -> None:
    """The shared parts and each page's own script are in convy/pages, and nothing else is."""
    folder = Path(__file__).parents[2] / "src" / "convy" / "pages"
    names = {path.name for path in folder.iterdir()}
    assert {"base.css", "base.js", "icon.svg", "window.css", "window.js", "report.js", "comparison.js", "index.js"} <= names
    assert not any(name.endswith(".py") for name in names)
    for page in ("report.js", "comparison.js", "index.js"):
        assert Template(page, window=page != "index.js").code().count("innerHTML") == 0
