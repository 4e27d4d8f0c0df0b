"""The end of a run sums and reports its attempts read back unsaid (``RunJournal.unsaid``: held
only as where each line begins, ``placed.Placed``), walked once into a ``digest.Digest`` and read
again from their lines, one at a time, where an attempt itself is wanted: everything it gives —
the view, the verdict, the totals, the dialogues, the report page, JUnit, the Markdown summary — is
what the run read back in full gives, and the view's tables and tiles are what each attempt, walked
and looked at one by one as ``Summary`` once did, says (``walked``).

The runs are test_page's ``Played``; one is read again with its lines shuffled and with lines
``RunJournal.kept`` leaves out (a repeat, one cut short, one of no plan, one unreadable)."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import msgspec
import pytest
from test_page import Played

from convy.causes import Breakdown
from convy.comparison import Comparison
from convy.junit import JUnitReport
from convy.markdown import RunSummary
from convy.page import ComparisonPage, Flowing, JsonBlock, Packed, PackedIndex, ReportPage, Where
from convy.percentiles import Percentiles
from convy.placed import Placed
from convy.report import Summary
from convy.runs import Read, Runs
from convy.storage import RunJournal
from convy.tables import Tables


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    return Played(tmp_path_factory.mktemp("unsaid")).made()


def unsaid(read: Read) -> Summary:
    """The run as the end of ``convy run`` sums it: read back unsaid, with where each line begins."""
    kept = RunJournal(read.folder).unsaid(read.file.spec)
    return Summary(msgspec.structs.replace(read, outcomes=kept.outcomes, broken=kept.broken))


def walked(summary: Summary) -> None:
    """The view's scenario tables and run tiles are what the attempts, walked one by one (each an
    ``Attempt`` of its outcome, as ``Summary`` held them before the digest), say."""
    view = summary.view()
    grouped = summary.by_scenario()
    assert [one.id for one in view.scenarios] == list(grouped)
    every = list(summary.attempts())
    assert [(one.outcome.scenario, one.outcome.attempt) for one in every] == [(one.scenario, one.attempt) for one in summary.run.outcomes]
    assert view.stops == dict(Counter(one.outcome.stop for one in every))
    assert view.not_judged == dict(Counter(one.why() for one in every if one.status() == "not_judged"))
    assert summary.breakdown() == Breakdown(tuple(one.cause() for one in every))
    times = [one.time() for one in every]
    assert (view.time.wall, view.time.agent, view.time.waiting) == (
        sum(time.wall for time in times),
        sum(time.agent for time in times),
        sum(time.waiting for time in times),
    )
    sizes = sorted(size for one in every for size in one.sizes().user)
    assert view.user.per_request == Percentiles(tuple(sizes)).view()
    for scenario in view.scenarios:
        attempts = list(grouped[scenario.id])
        assert [one.outcome.attempt for one in attempts] == sorted(one.outcome.attempt for one in attempts)
        claims, marks = summary._decided(attempts)
        assert scenario.claims == claims
        names = [claim.text for claim in claims]
        assert [row.marks for row in scenario.attempts] == [[mark.get(name, "none") for name in names] for mark in marks]
        assert [(row.attempt, row.status, row.why, row.stop, row.turns, row.seconds, row.cause) for row in scenario.attempts] == [
            (one.outcome.attempt, one.status(), one.why(), one.outcome.stop, len(one.outcome.transcript.turns), one.outcome.seconds, one.cause() or "")
            for one in attempts
        ]
        assert scenario.stops == dict(Counter(one.outcome.stop for one in attempts))
        assert scenario.causes == dict(Counter(cause for one in attempts if (cause := one.cause()) is not None))
        agent = sorted(seconds for one in attempts for seconds in (turn.agent_seconds for turn in one.outcome.transcript.turns))
        assert scenario.agent.seconds == Percentiles(tuple(agent)).view()


class Little(Flowing, frozen=True):
    """A block written in pieces of a few bytes: cut often, inside characters of several bytes
    and beside each ``<`` (the varied runs' texts hold both)."""

    PIECE = 7


def flowed(summary: Summary) -> None:
    """The report's data block, written as it is encoded (the view framed, each scenario's
    attempts table a row at a time), is the view encoded whole, as a block held whole writes it;
    so is every block written in pieces."""
    whole = JsonBlock("data", msgspec.json.encode(summary.view()))
    page = ReportPage(summary)
    assert all(not scenario.attempts for scenario in summary.framed().scenarios)
    for made in (Flowing, Little):
        assert "".join(made("data", page._data(summary.framed())).pieces()) == whole.html() + "\n"
    assert "".join(whole.pieces()) == whole.html() + "\n"
    assert [row for scenario in summary.view().scenarios for row in scenario.attempts] == [
        row for scenario in summary.framed().scenarios for row in summary.table(scenario.id)
    ]


def test_a_block_in_pieces_is_the_block_whole() -> None:
    """Cut anywhere, never inside a character: text of one to four bytes a character, and ``<``."""
    data = msgspec.json.encode({"a": "é<€>😀" * 5, "<b": ["</script>", "ü" * 9]})
    assert data.count(b"<") == 7 and len(data) > len(data.decode())
    block = JsonBlock("x", data)
    for size in range(4, 40):
        shaped = type("Shaped", (Flowing,), {"PIECE": size, "__module__": __name__})
        assert "".join(shaped("x", (data[:5], data[5:])).pieces()) == block.html() + "\n"
        assert "".join(shaped("x", iter(())).pieces()) == JsonBlock("x", b"").html() + "\n"


def same(read: Read) -> None:
    walked(Summary(read))
    whole, lean = Summary(read), unsaid(read)
    walked(lean)
    assert isinstance(lean.run.outcomes, Placed) and len(lean.run.outcomes) == len(read.outcomes) > 0
    assert all(not turn.message and not turn.answer.text for outcome in lean.run.outcomes for turn in outcome.transcript.turns)
    assert lean.view() == whole.view()
    assert lean.verdict() == whole.verdict()
    assert lean.totals() == whole.totals()
    assert lean.breakdown() == whole.breakdown()
    assert lean.dialogues() == whole.dialogues()
    assert ReportPage(lean).html() == ReportPage(whole).html()
    for summary in (lean, whole):
        flowed(summary)
    assert JUnitReport((lean,)).xml() == JUnitReport((whole,)).xml()
    assert RunSummary((lean,), read.folder).markdown() == RunSummary((whole,), read.folder).markdown()


def test_each_run_summed_unsaid_gives_what_it_gives_read_whole(played: Played) -> None:
    for read in played.runs().values():
        same(read)


def test_shuffled_and_broken_lines_give_each_dialogue_back_from_its_own_line(played: Played, tmp_path: Path) -> None:
    """Written in another order than the report shows them (a spread run writes attempts as they
    end), with lines left out between them: each dialogue is read back from its own line."""
    source = played.runs()["2026-01-06-after"].folder
    folder = tmp_path / "results" / "shop" / "2026-01-06-after"
    folder.mkdir(parents=True)
    (folder / "run.json").write_bytes((source / "run.json").read_bytes())
    lines = (source / "attempts.jsonl").read_bytes().splitlines(keepends=True)
    random.Random(11).shuffle(lines)
    foreign = lines[0].replace(b'"attempt":', b'"attempt":9', 1)
    # A repeat (the same line twice: either is its first), foreign, blank, two unreadable.
    lines[2:2] = [lines[4], foreign, b"\n", b"{not json\n", b"x" * 100 + b"\n"]
    lines.append(lines[6][:40])  # a torn last line
    (folder / "attempts.jsonl").write_bytes(b"".join(lines))

    read = Runs(tmp_path / "results").one(folder)
    assert isinstance(read, Read) and read.broken == 5
    same(read)


def test_a_comparison_of_runs_read_unsaid_is_the_one_of_runs_read_whole(played: Played) -> None:
    """``convy compare`` reads both runs unsaid: its view and page, the pairs' dialogues (read
    again in full from their lines) included, are those of the runs read whole."""
    runs = played.runs()
    before, after = runs["2026-01-05-before"], runs["2026-01-06-after"]
    results = Runs(before.folder.parent.parent, unsaid=True)
    base, candidate = results.one(before.folder), results.one(after.folder)
    assert isinstance(base, Read) and isinstance(candidate, Read)
    assert isinstance(base.outcomes, Placed) and isinstance(candidate.outcomes, Placed)
    lean = Comparison(base, candidate)
    whole = Comparison(before, after)
    view = lean.view()
    assert view == whole.view()
    assert any(pair.before is not None and pair.before.turns and pair.before.turns[0].user for pair in view.pairs)
    assert ComparisonPage(view).html() == ComparisonPage(whole.view()).html()


def test_a_run_that_kept_no_attempt_has_no_file_to_read_again(played: Played, tmp_path: Path) -> None:
    """A run that played nothing (every scenario skipped) has no attempts.jsonl: read unsaid, it
    is walked without opening one, and reports as read whole."""
    source = played.runs()["2026-01-06-after"].folder
    folder = tmp_path / "results" / "shop" / "2026-01-06-after"
    folder.mkdir(parents=True)
    (folder / "run.json").write_bytes((source / "run.json").read_bytes())
    whole, lean = Runs(tmp_path / "results").one(folder), Runs(tmp_path / "results", unsaid=True).one(folder)
    assert isinstance(whole, Read) and isinstance(lean, Read) and isinstance(lean.outcomes, Placed)
    assert list(lean.outcomes) == [] and not (folder / "attempts.jsonl").exists()
    assert ReportPage(Summary(lean)).html() == ReportPage(Summary(whole)).html()
    flowed(Summary(lean))
    assert JUnitReport((Summary(lean),)).xml() == JUnitReport((Summary(whole),)).xml()


def test_tables_exported_line_by_line_from_runs_read_unsaid_are_those_of_runs_read_whole(played: Played) -> None:
    """``convy export`` reads the runs unsaid and writes each table's file as its rows are made
    (``Tables.lines``): every file is the one the runs read whole, their tables held, give."""
    whole = tuple(played.runs().values())
    lean, unread = Runs(whole[0].folder.parent.parent, unsaid=True).read()
    assert unread == () and all(isinstance(run.outcomes, Placed) for run in lean)
    assert [run.folder for run in lean] == [run.folder for run in whole]
    held, streamed = Tables(whole), Tables(lean)
    for name in Tables.COLUMNS:
        table = held.named(name)
        assert "".join(streamed.lines(name, "csv")) == table.csv()
        assert "".join(streamed.lines(name, "jsonl")) == table.jsonl()
        assert name in ("votes", "tool_calls", "pauses") or table.rows  # played runs hold rows of the others


def test_attempts_held_as_places_are_cut_to_a_plan_as_attempts_held_whole(played: Played) -> None:
    """``Kept.within`` keeps of a ``Placed`` the places of the attempts the plan holds, in their
    order: read again, they are those it keeps of the attempts read whole."""
    read = played.runs()["2026-01-05-before"]
    journal = RunJournal(read.folder)
    spec = msgspec.structs.replace(read.file.spec, attempts=3, scenarios=read.file.spec.scenarios[1:])
    whole, lean = journal.kept(read.file.spec).within(spec), journal.unsaid(read.file.spec).within(spec)
    assert isinstance(lean.outcomes, Placed) and 0 < len(lean.outcomes) < len(read.outcomes)
    assert (lean.foreign, len(lean.outcomes)) == (whole.foreign, len(whole.outcomes))
    assert list(lean.outcomes.full()) == list(whole.outcomes)
    assert list(lean.outcomes) == [outcome.unsaid() for outcome in whole.outcomes]
    assert lean.outcomes[-1] == whole.outcomes[-1].unsaid() and list(lean.outcomes[1:2]) == [whole.outcomes[1].unsaid()]


def test_a_packed_index_written_from_its_keys_walked_again_is_the_one_of_its_dict() -> None:
    """``Packed.blocks`` holds no index while it packs, only how many keys each chunk took, and
    writes it from the keys walked again (the values' own, or ``keys``), a few KiB at a time
    (``Where``): the block is the dict's (``Packed.chunks``), keys that need escaping included.
    Keys walked again that are not those packed (one fewer, one more, one changed, or values
    that cannot be walked twice) are refused rather than written into an index that would send
    the page to the wrong chunk."""
    values = [(f"s{number % 3}/é<\"{number}#{number}", {"n": number, "t": "ü<" * number}) for number in range(300)]
    keys = [key for key, _ in values]
    chunks = Packed(values, limit=2000).chunks()
    index = JsonBlock("v", msgspec.json.encode(PackedIndex(count=len(chunks.chunks), where=chunks.where, layout=chunks.layout)))
    for packed in (Packed(values, limit=2000), Packed(iter(values), limit=2000, keys=lambda: iter(keys))):
        blocks = list(packed.blocks("v"))
        assert len(blocks) == len(chunks.chunks) + 1 > 3
        assert blocks[-1].html() == index.html()
        assert "".join(blocks[-1].pieces()) == "".join(index.pieces())
    where = blocks[-1].parts
    assert isinstance(where, Where)
    shaped = type("Shaped", (Where,), {"PART": 100, "__module__": __name__})
    small = shaped(where.before, where.after, where.keys, where.counts, where.check)
    assert b"".join(small) == b"".join(where) and max(len(part) for part in small) < 100 + 30 < len(b"".join(where)) // 10
    for wrong in (keys[:-1], [*keys, "one more"], [*keys[:7], "changed", *keys[8:]]):
        with pytest.raises(ValueError, match="not the keys packed"):
            list(list(Packed(values, limit=2000, keys=lambda wrong=wrong: wrong).blocks("v"))[-1].pieces())
    with pytest.raises(ValueError, match="not the keys packed"):
        list(list(Packed(iter(values), limit=2000).blocks("v"))[-1].pieces())
    assert "".join(list(Packed([]).blocks("v"))[-1].pieces()) == JsonBlock("v", msgspec.json.encode(PackedIndex(count=0, where={}))).html() + "\n"


def test_a_reports_index_of_dialogues_is_written_from_its_rows(played: Played) -> None:
    """A report's index of dialogues is written from the rows walked again (``Summary.order``),
    not from the attempts read: it is the index the dialogues' chunks give held with their dict,
    in chunks of any size."""
    for read in played.runs().values():
        for summary in (unsaid(read), Summary(read)):
            page = ReportPage(summary)
            assert [f"{scenario}#{attempt.outcome.attempt}" for scenario, attempt in summary.said()] == [
                f"{scenario}#{attempt}" for scenario, attempt in summary.order()
            ]
            for limit in (1, 3000, 256 * 1024):
                chunks = msgspec.structs.replace(page._dialogues(), limit=limit).chunks()
                blocks = list(msgspec.structs.replace(page._dialogues(), limit=limit).blocks("dialogues"))
                held = PackedIndex(count=len(chunks.chunks), where=chunks.where, layout=chunks.layout)
                assert blocks[-1].html() == JsonBlock("dialogues", msgspec.json.encode(held)).html()
                assert [block.html() for block in blocks[:-1]] == [block.html() for block in list(chunks.blocks("dialogues"))[1:]]
