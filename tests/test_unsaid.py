"""The end of a run sums and reports its attempts read back unsaid (``RunJournal.unsaid``: their
numbers and claims, not the words of their dialogues), and reads each dialogue again from its line
only to show it: everything it gives — the view, the verdict, the totals, the dialogues, the report
page, JUnit, the Markdown summary — is what the run read back in full gives.

The runs are test_pages' ``Played``; one is read again with its lines shuffled and with lines
``RunJournal.kept`` leaves out (a repeat, one cut short, one of no plan, one unreadable)."""

from __future__ import annotations

import random
from pathlib import Path

import msgspec
import pytest
from test_pages import Played

from convy.bench import RunJournal
from convy.junit import JUnitReport
from convy.markdown import RunSummary
from convy.page import ReportPage
from convy.report import Summary
from convy.runs import Read, Runs


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    return Played(tmp_path_factory.mktemp("unsaid")).made()


def unsaid(read: Read) -> Summary:
    """The run as the end of ``convy run`` sums it: read back unsaid, with where each line begins."""
    kept = RunJournal(read.folder).unsaid(read.file.spec)
    return Summary(msgspec.structs.replace(read, outcomes=kept.outcomes, broken=kept.broken, at=kept.at))


def same(read: Read) -> None:
    whole, lean = Summary(read), unsaid(read)
    assert len(lean.run.at) == len(read.outcomes) > 0
    assert all(not turn.message and not turn.answer.text for outcome in lean.run.outcomes for turn in outcome.transcript.turns)
    assert lean.view() == whole.view()
    assert lean.verdict() == whole.verdict()
    assert lean.totals() == whole.totals()
    assert lean.breakdown() == whole.breakdown()
    assert lean.dialogues() == whole.dialogues()
    assert ReportPage(lean).html() == ReportPage(whole).html()
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
