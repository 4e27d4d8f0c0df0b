"""A run counted in one pass over its ``attempts.jsonl`` (``Counted``) gives the numbers its
``Summary`` gives from every outcome held: tallies, statuses, stops, causes, claims, spend.

The runs are test_page's ``Played``; one is read again with its lines shuffled and with lines
``RunJournal.kept`` leaves out (a repeat, one cut short, one of no plan, one unreadable)."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import msgspec
import pytest
from test_page import Played

from convy.counted import Counted
from convy.index import Listing
from convy.judge import NoVerdict, Verdict
from convy.outcome import Outcome
from convy.report import Summary
from convy.runs import Read, Runs
from convy.storage import LinesLeftOut, RunJournal, Seen
from convy.totals import Listed, Totals


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    return Played(tmp_path_factory.mktemp("counted")).made()


def same(read: Read) -> None:
    """Every number ``Counted`` gives of the run is ``Summary``'s."""
    summary = Summary(read)
    counted = Counted.of(read.folder, read.file.spec)
    view = summary.view()
    verdict = summary.verdict()

    assert counted.kept() == len(read.outcomes) == verdict.kept > 0
    kept = RunJournal(read.folder).kept(read.file.spec)
    assert counted.lines == msgspec.structs.replace(kept, outcomes=(), seen=Seen())
    assert counted.lines.broken == read.broken
    assert counted.tallies() == summary.tallies()
    assert counted.headline() == summary.headline()
    assert counted.breakdown().counts == summary.breakdown().counts
    assert sum(one.not_judged for one in counted.counts.values()) == verdict.not_judged
    assert sum(one.agent_failed for one in counted.counts.values()) == verdict.agent_failed
    assert sum((Counter(one.why) for one in counted.counts.values()), Counter()) == Counter(view.not_judged)
    assert sum((Counter(one.stops) for one in counted.counts.values()), Counter()) == Counter(view.stops)
    unseen = Counter(found for outcome in read.outcomes for found in outcome.unseen())
    assert sum((Counter(one.unseen) for one in counted.counts.values()), Counter()) == unseen

    agent, user, judge = counted.total()
    assert (agent.tokens(), agent.cost()) == (view.agent.tokens, view.agent.cost)
    assert (user.tokens(), user.cost()) == (view.user.tokens, view.user.cost)
    assert (judge.tokens(), judge.cost()) == (view.judge.tokens, view.judge.cost)
    totals = summary.totals()
    assert Totals.counted(counted) == totals
    every = agent + user + judge
    assert (every.input + every.output, every.cost()) == (totals.tokens, totals.cost)

    assert list(counted.counts) == [scenario.id for scenario in view.scenarios]
    for scenario in view.scenarios:
        one = counted.counts[scenario.id]
        assert (one.passed, one.passed + one.failed, one.not_judged) == (
            scenario.passed,
            scenario.judged,
            scenario.not_judged,
        )
        assert one.stops == scenario.stops and one.causes == scenario.causes
        assert [(text, claim.by, claim.held, claim.decided) for text, claim in one.claims.items()] == [
            (row.text, row.by, row.held, row.decided) for row in scenario.claims
        ]
        assert (one.agent.tokens(), one.agent.cost()) == (scenario.agent.tokens, scenario.agent.cost)


def test_each_run_counted_in_one_pass_is_summed_as_its_summary_sums_it(played: Played) -> None:
    for read in played.runs().values():
        same(read)


def test_shuffled_and_broken_lines_are_counted_as_the_summary_reads_them(played: Played, tmp_path: Path) -> None:
    """Counted in the file's order, not the attempts' (a spread run writes them as they end): the
    claims still come in the order ``Summary`` meets them, and the lines ``kept`` leaves out are
    left out here too."""
    source = played.runs()["2026-01-06-after"].folder
    folder = tmp_path / "results" / "shop" / "2026-01-06-after"
    folder.mkdir(parents=True)
    (folder / "run.json").write_bytes((source / "run.json").read_bytes())
    lines = (source / "attempts.jsonl").read_bytes().splitlines(keepends=True)
    random.Random(7).shuffle(lines)
    foreign = lines[0].replace(b'"attempt":', b'"attempt":9', 1)  # attempt 9x: past the plan's 6
    other = lines[1].replace(b'"scenario":"', b'"scenario":"gone/', 1)  # a scenario the plan does not hold
    # A repeat, foreign twice, a repeat of a foreign one, blank, unreadable, and a torn last.
    lines += [lines[3], foreign, other, other, b"\n", b"{not json\n", lines[5][:40]]
    (folder / "attempts.jsonl").write_bytes(b"".join(lines))

    read = Runs(tmp_path / "results").one(folder)
    assert isinstance(read, Read) and read.broken == 6
    same(read)
    lines_left = Counted.of(folder, read.file.spec).lines
    assert (lines_left.repeated, lines_left.foreign, lines_left.unreadable, lines_left.torn) == (2, 2, 1, 1)


def test_the_index_lists_a_run_whose_summary_is_stale_with_the_totals_its_summary_gives(played: Played) -> None:
    """``Listing`` sums a run whose ``summary.json`` is missing or stale by counting its file: the
    run it lists and the totals it keeps are those of the run read whole and summed."""
    results = played.folder / "results"
    for read in played.runs().values():
        (read.folder / "summary.json").unlink(missing_ok=True)
        listed = Listing(results).one(read.folder)
        assert isinstance(listed, Listed)
        assert listed.totals == Summary(read).totals()
        assert listed.run == msgspec.structs.replace(read, outcomes=())
        assert (read.folder / "summary.json").exists()  # kept, and read back the same
        assert Listing(results).one(read.folder) == listed


def test_claims_first_met_late_in_the_file_keep_the_order_summary_gives_them(played: Played, tmp_path: Path) -> None:
    """A claim's place is where it is first met in the attempts' order, not the file's: attempts
    whose verdicts name their claims in other orders, drop some, or give no verdict but checks,
    written last attempt first, are counted with the claims in ``Summary``'s order."""
    source = played.runs()["2026-01-05-before"].folder
    folder = tmp_path / "results" / "shop" / "2026-01-05-before"
    folder.mkdir(parents=True)
    (folder / "run.json").write_bytes((source / "run.json").read_bytes())
    decoder = msgspec.json.Decoder(Outcome)
    changed: list[bytes] = []
    for line in (source / "attempts.jsonl").read_bytes().splitlines():
        outcome = decoder.decode(line)
        match outcome.result:
            case Verdict(claims=claims) if len(claims) > 1:
                if outcome.attempt == 1:  # the first attempt names only the last claim
                    outcome = msgspec.structs.replace(outcome, result=Verdict(claims[-1:]))
                elif outcome.attempt == 2:  # the second gives no verdict, only its checks decided by code
                    checks = tuple(claim for claim in claims if claim.by == "code") or claims[:1]
                    outcome = msgspec.structs.replace(outcome, result=NoVerdict("judge", "it failed", checks=checks))
                elif outcome.attempt % 2:
                    outcome = msgspec.structs.replace(outcome, result=Verdict(tuple(reversed(claims))))
            case _:
                pass
        changed.append(msgspec.json.encode(outcome) + b"\n")
    changed.sort(key=lambda line: -decoder.decode(line).attempt)  # last attempts first
    (folder / "attempts.jsonl").write_bytes(b"".join(changed))

    read = Runs(tmp_path / "results").one(folder)
    assert isinstance(read, Read) and read.broken == 0
    same(read)
    orders = {scenario.id: [row.text for row in scenario.claims] for scenario in Summary(read).view().scenarios}
    assert any(len(texts) > 1 for texts in orders.values())


def test_repeats_are_told_at_every_attempt_number_whatever_the_scenarios(played: Played, tmp_path: Path) -> None:
    """Each scenario's attempts read are held a bit each: a line repeated is left out once, at the
    numbers either side of a byte's bounds and at the highest a run may have, and the same number
    of another scenario is no repeat."""
    source = played.runs()["2026-01-06-after"].folder
    line = (source / "attempts.jsonl").read_bytes().splitlines(keepends=True)[0]
    outcome = msgspec.json.decode(line)
    numbers = [*range(1, 25), 255, 256, 257, 9_999, 10_000]  # every bit of three bytes, and far ones
    lines = []
    for scenario in ("a", "b", "é😀"):
        for number in numbers:
            lines.append(msgspec.json.encode({**outcome, "scenario": scenario, "attempt": number}) + b"\n")
    repeats = [lines[i] for i in (0, 7, 24, 28, 29, 57, 86)]  # a's 1, 8, 255 and 10,000; b's 1, 10,000; é😀's 10,000
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "attempts.jsonl").write_bytes(b"".join(lines + repeats + repeats[:1]))
    left = LinesLeftOut()
    read = [(outcome.scenario, outcome.attempt) for _, outcome in RunJournal(folder).read(left)]
    assert sorted(read) == sorted((scenario, number) for scenario in ("a", "b", "é😀") for number in numbers)
    assert left.repeated == len(repeats) + 1 and left.foreign == 0
