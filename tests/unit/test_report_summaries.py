"""What makes reports and the index cheap must not change their numbers: the per-run
``summary.json`` the index reads, rebuilt when the attempts change, and pass^k / pass@k made from
running binomial coefficients.

The runs are test_page's ``Played``: played by convy's bench with its fakes into ``tmp_path``.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import msgspec
import pytest
from test_page import Played

from convy.index import Index, Listing
from convy.report import Summary
from convy.stats import Consistency, Tally
from convy.totals import Summed


@pytest.fixture()
def played(tmp_path: Path) -> Played:
    return Played(tmp_path).made()


def test_index_from_summaries_equals_the_index_from_whole_runs(played: Played) -> None:
    """The index built from each run's summary.json is the one built from every run read whole."""
    runs = played.runs()
    whole = Index(tuple(runs.values())).view()
    first, unread = Listing(played.folder / "results").every()  # no summary yet: each run read and summed
    assert unread == ()
    assert sorted(path.parent.name for path in (played.folder / "results").rglob("summary.json")) == sorted(runs)
    again, _ = Listing(played.folder / "results").every()  # from the summaries alone
    assert Index(first).view() == whole
    assert Index(again).view() == whole


def test_a_summary_is_read_instead_of_the_attempts_while_they_are_unchanged(played: Played) -> None:
    """While attempts.jsonl is as it was, the index takes the run's totals from summary.json."""
    folder = played.folder / "results" / "shop" / "2026-01-05-before"
    Listing(played.folder / "results").every()
    summed = msgspec.json.decode((folder / "summary.json").read_bytes(), type=Summed)
    changed = msgspec.structs.replace(summed, totals=msgspec.structs.replace(summed.totals, passed=12345))
    (folder / "summary.json").write_bytes(msgspec.json.encode(changed))
    listed, _ = Listing(played.folder / "results").every()
    assert [one.totals.passed for one in listed if one.run.folder == folder] == [12345]


def test_a_summary_is_made_again_when_the_attempts_change(played: Played) -> None:
    """Attempts added to a run (as a resume adds them) make its summary stale: it is summed again."""
    results = played.folder / "results"
    folder = results / "shop" / "2026-01-05-before"
    Listing(results).every()
    before = msgspec.json.decode((folder / "summary.json").read_bytes(), type=Summed)
    lines = (folder / "attempts.jsonl").read_bytes().splitlines(keepends=True)
    (folder / "attempts.jsonl").write_bytes(b"".join(lines[: len(lines) // 2]))  # half of them, as if interrupted
    halved, _ = Listing(results).every()
    after = msgspec.json.decode((folder / "summary.json").read_bytes(), type=Summed)
    assert after.totals.attempts == len(lines) // 2 < before.totals.attempts
    assert after.stamp != before.stamp
    assert Index(halved).view() == Index(tuple(played.runs().values())).view()


def test_a_torn_summary_is_made_again(played: Played) -> None:
    """A summary.json that cannot be read is never trusted: the run is read whole and summed."""
    results = played.folder / "results"
    Listing(results).every()
    for path in results.rglob("summary.json"):
        path.write_bytes(b'{"stamp": {"size": 1')
    listed, unread = Listing(results).every()
    assert unread == ()
    assert Index(listed).view() == Index(tuple(played.runs().values())).view()


def test_a_report_leaves_the_summary_the_index_reads(played: Played) -> None:
    """Writing a run's report keeps its totals beside it, equal to those summed from the run."""
    from convy.project import Project

    project = Project(played.folder)
    run = played.runs()["2026-01-06-after"]
    project.reported(Summary(run))
    summed = msgspec.json.decode((run.folder / "summary.json").read_bytes(), type=Summed)
    assert summed.totals == Summary(run).totals()
    assert summed.stamp == Listing(played.folder / "results").stamp(run.folder)


def test_an_unreadable_folder_is_listed_as_unread(played: Played) -> None:
    """A folder without run.json is reported as unread by the listing, as by Runs."""
    broken = played.folder / "results" / "shop" / "not-a-run"
    broken.mkdir()
    _, unread = Listing(played.folder / "results").every()
    assert [one.folder.name for one in unread] == ["not-a-run"]
    shutil.rmtree(broken)


def test_the_pass_curve_equals_pass_hat_and_pass_at_for_every_k() -> None:
    """Consistency.curve gives pass_hat(k) and pass_at(k) (exact integers) to within 1e-12, for every k."""
    pick = random.Random(5)
    for _ in range(30):
        tallies = []
        for _ in range(pick.randint(1, 12)):
            judged = pick.randint(0, 300)
            tallies.append(Tally(pick.randint(0, judged), judged))
        consistency = Consistency(tuple(tallies))
        curve = consistency.curve()
        assert [k for k, _, _ in curve] == list(consistency.ks())
        for k, hat, at in curve:
            assert abs(hat - consistency.pass_hat(k)) < 1e-12 and abs(at - consistency.pass_at(k)) < 1e-12



def test_the_attempts_a_run_keeps_have_a_short_repr(played: Played) -> None:
    """Kept's repr counts its attempts rather than spelling them out: asyncio formats it when a
    run played by asyncio.run ends."""
    from convy.storage import RunJournal

    kept = RunJournal(played.folder / "results" / "shop" / "2026-01-05-before").kept()
    assert repr(kept) == f"Kept({len(kept.outcomes)} outcomes, 0 broken)"


def test_the_bootstrap_draws_the_same_means_as_one_draw_at_a_time() -> None:
    """Headline.bootstrap gives the interval of drawing each mean by itself, bit for bit."""
    import math
    from statistics import fmean

    from convy.stats import Headline

    pick = random.Random(3)
    for _ in range(100):
        count = pick.randint(2, 60)
        rates = tuple(pick.random() if pick.random() < 0.8 else pick.choice((0.0, 1.0)) for _ in range(count))
        headline = Headline(rates, draws=pick.choice((10, 100, 1000)))
        chooser = random.Random(headline.seed)
        means = sorted(fmean(chooser.choices(rates, k=count)) for _ in range(headline.draws))
        low, high = means[int(0.025 * (headline.draws - 1))], means[int(math.ceil(0.975 * (headline.draws - 1)))]
        interval = headline.bootstrap()
        assert (interval.estimate, interval.low, interval.high) == (fmean(rates), low, high)


def test_a_summary_keeps_the_attempts_that_did_not_pass_by_cause(played: Played) -> None:
    """summary.json, in the run's folder, says whose each attempt that did not pass was, counted by
    cause as the report's tile counts them (every cause named, 0 for none)."""
    results = played.folder / "results"
    Listing(results).every()
    for run in played.runs().values():
        summed = msgspec.json.decode((run.folder / "summary.json").read_bytes(), type=Summed)
        counted = Summary(run).breakdown().counts
        assert summed.totals.causes == {str(cause): count for cause, count in counted.items()}
        assert list(summed.totals.causes) == ["agent", "user", "judge", "service", "tool"]
        assert sum(summed.totals.causes.values()) == summed.totals.attempts - summed.totals.passed


def test_a_summary_finds_its_verdict_once(played: Played) -> None:
    """The end of a run asks a summary for its verdict four times (the command's lines, its exit
    code, the page's header): it is found at the first asking, each attempt's row walked for it
    then, and the same verdict given after, as a summary made again finds it."""
    for run in played.runs().values():
        summary = Summary(run)
        found = summary.verdict()
        assert summary.verdict() is found
        assert Summary(run).verdict() == found
