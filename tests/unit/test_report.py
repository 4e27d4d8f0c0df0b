"""The numbers and decisions the pages draw, made in Python: totals, summaries per scenario, the
attempt a window opens on, the comparison's clamped Δ interval, the directions of its ratios with
their tolerance, the change of each flipped claim, and the pair of runs the index suggests.

The runs are test_page's ``Played``: played by convy's bench with its fakes into ``tmp_path``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
import pytest
from test_page import Judged, Played, Shop

from convy import Bench, Models, NoUsage, Reply, RunJournal, RunSpec, Scenarios, Usage
from convy.agent import Cost, NotReported
from convy.attempt import Added, Spent, Sum
from convy.comparison import TOLERANCE, Bounded, Comparison, Ratio, comparable
from convy.fakes import FakeAgent, FakeJudge, FakeModel, MemoryJournal
from convy.index import Index
from convy.page import ReportPage
from convy.records import Running
from convy.report import Held, Summary
from convy.runs import Read, Runs
from convy.storage import Kept
from convy.views import HeldView, IntervalView, RunView, Suggestion, TokensView


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    return Played(tmp_path_factory.mktemp("report")).made()


@pytest.fixture(scope="module")
def before(played: Played) -> RunView:
    return Summary(played.runs()["2026-01-05-before"]).view()


def test_token_total_is_input_plus_output_or_none_when_nobody_reported() -> None:
    """``total`` sums input and output over the reported requests; with none reported it is
    ``None``, so a table sorts the scenario last rather than as zero."""
    tokens = Spent((Usage(40, 11), NoUsage(), Usage(120, 45, cached=80))).tokens()
    assert (tokens.input, tokens.output, tokens.total, tokens.reported, tokens.requests) == (160, 56, 216, 2, 3)
    assert Spent((NoUsage(),)).tokens().total is None
    assert Spent(()).tokens().total is None
    assert TokensView().total is None
    assert Spent((Usage(0, 0),)).tokens().total == 0


def test_run_totals_and_claim_list(before: RunView) -> None:
    """The not-judged tile's total is the sum of its reasons; every token total is input + output;
    the claim filter's list is every claim, once, sorted."""
    assert before.not_judged == {"judge": 6}
    assert before.not_judged_total == 6
    for spend in (before.agent, before.user):
        assert spend.tokens.reported and spend.tokens.total == spend.tokens.input + spend.tokens.output
    assert before.judge.tokens.requests == 0 and before.judge.tokens.total is None  # the fake judge makes no request
    assert before.claims == sorted({claim.text for scenario in before.scenarios for claim in scenario.claims})
    assert "The agent stays calm </script><b>bold</b>." in before.claims


def test_scenario_summaries_of_claims_time_and_first_attempt(before: RunView) -> None:
    """Each scenario sums its claims over every attempt into held out of decided, its share and a
    word; gives its answer p50 as its time; and names the attempt its window opens on: the first
    that failed, else the first."""
    scenarios = {scenario.id: scenario for scenario in before.scenarios}
    assert scenarios["refunds/late"].claims_held == HeldView(held=9, decided=12, share=0.75, holds="sometimes")
    assert scenarios["refunds/damaged"].claims_held == HeldView(held=12, decided=12, share=1.0, holds="always")
    assert scenarios["orders/unsure"].claims_held == HeldView(held=0, decided=0, share=None, holds="undecided")
    assert [claim.holds for claim in scenarios["refunds/late"].claims] == ["sometimes", "always"]
    for scenario in before.scenarios:
        assert scenario.claims_held.held == sum(claim.held for claim in scenario.claims)
        assert scenario.claims_held.decided == sum(claim.decided for claim in scenario.claims)
        assert scenario.answer_p50 == scenario.agent.seconds.p50
        failed = [attempt.attempt for attempt in scenario.attempts if attempt.status == "failed"]
        assert scenario.first == (failed or [attempt.attempt for attempt in scenario.attempts])[0]
    assert scenarios["orders/crash"].answer_p50 is None
    assert Held(0, 3).view() == HeldView(held=0, decided=3, share=0.0, holds="never")


def test_turns_count_their_steps(played: Played) -> None:
    """A turn says how many thoughts and tool calls its agent took."""
    dialogue = Summary(played.runs()["2026-01-05-before"]).dialogues()["refunds/damaged"][0]
    assert [(turn.thoughts, turn.calls) for turn in dialogue.turns] == [(1, 0), (1, 2)]


def test_delta_interval_is_clamped_to_plus_minus_one(played: Played) -> None:
    """The t interval of four paired differences (one of −1) reaches below −1; the view clamps
    it to −1, a difference of two rates being no lower."""
    view = played.comparison()
    assert view.delta is not None
    assert view.delta.estimate == pytest.approx(-0.25)
    assert view.delta.low == -1.0
    assert 0 < view.delta.high < 1
    assert Bounded(0.2, -0.3, 1.7).view() == IntervalView(estimate=0.2, low=-0.3, high=1.0)
    assert Bounded(-1.2, -3.0, 2.0).view() == IntervalView(estimate=-1.0, low=-1.0, high=1.0)


@pytest.mark.parametrize(
    ("ratio", "direction"),
    [
        (None, None),
        (1.0, "same"),
        (1.05, "same"),
        (0.95, "same"),
        (1.0 + TOLERANCE * 1.01, "higher"),
        (1.0 - TOLERANCE * 1.01, "lower"),
        (0.2, "lower"),
        (3.0, "higher"),
    ],
)
def test_ratio_directions_are_same_within_the_tolerance(ratio: float | None, direction: str | None) -> None:
    """Within ±5% (inclusive) a ratio is "same"; outside it "lower" or "higher"; none, none."""
    assert TOLERANCE == 0.05
    assert Ratio(ratio).direction() == direction


def test_comparison_directions_counts_flips_and_links(played: Played) -> None:
    """The comparison gives each ratio's direction and its tolerance, the scenarios per change,
    each changed claim's change, the flipped count, and each run's report relative to its page."""
    view = played.comparison()
    assert view.tolerance == TOLERANCE
    for ratio, direction in ((view.token_ratio, view.token_direction), (view.cost_ratio, view.cost_direction), (view.time_ratio, view.time_direction)):
        assert direction == Ratio(ratio).direction()
    assert view.token_direction == "same"  # the same answers, as many tokens
    assert view.cost_direction is None  # neither run's cost is complete: no ratio
    # At 3 attempts no unchanged scenario is shown to be the same within ±10 points: undecided.
    assert view.counts == {"worse": 1, "better": 0, "undecided": 4, "same": 0, "undecided_worse": 0, "undecided_better": 0}
    assert sum(view.counts[name] for name in ("worse", "better", "undecided", "same")) == len(view.scenarios)
    assert view.scenarios_said.startswith("1 worse, 0 better, 4 undecided at ")
    assert {(flip.claim, flip.change, flip.flipped) for flip in view.claims} == {
        ("The agent offers a refund.", "worse", True),
        ("called issue_refund with order='A-1043'", "worse", True),
    }
    assert view.flipped == 2
    assert view.base.href == "../shop/2026-01-05-before/report.html"
    assert view.candidate.href == "../shop/2026-01-06-after/report.html"
    turned = Comparison(played.runs()["2026-01-06-after"], played.runs()["2026-01-05-before"]).view()
    assert {flip.change for flip in turned.claims} == {"better"}


def test_index_suggests_the_newest_run_against_the_one_before_it(played: Played, tmp_path: Path) -> None:
    """The index offers the newest run that has an earlier run of its agent, against the latest of
    those; with one run, or runs of different agents only, nothing (never a run against itself)."""
    runs = played.runs()
    assert played.index().suggested == Suggestion(base="2026-01-05-before", candidate="2026-01-06-after")
    assert msgspec.json.decode(msgspec.json.encode(played.index().suggested), type=Suggestion) == played.index().suggested
    assert Index((runs["2026-01-07-first"],), comparable=comparable).view().suggested is None
    assert Index(()).view().suggested is None
    mixed = Index((runs["2026-01-05-before"], runs["2026-01-07-first"]), comparable=comparable).view()
    assert mixed.suggested is None


def test_index_offers_and_joins_only_comparable_finished_runs(tmp_path: Path) -> None:
    """A newer run judged by another judge is not comparable with the earlier ones: the index
    offers the two comparable runs before it, and its trend joins those two only; an interrupted
    run is a point of its own."""
    more = Played(tmp_path)
    more.play("shop", "2026-01-05-before", refunds=True, attempts=2)
    more.play("shop", "2026-01-06-after", refunds=False, attempts=2)
    more.play("shop", "2026-01-07-judged", refunds=False, attempts=2, judge="other-judge")
    runs = more.runs()
    view = Index(tuple(runs.values()), comparable=comparable).view()
    assert view.suggested == Suggestion(base="2026-01-05-before", candidate="2026-01-06-after")
    assert [(point.run, point.joined) for point in view.trends["shop"]] == [
        ("2026-01-05-before", False), ("2026-01-06-after", True), ("2026-01-07-judged", False)]
    interrupted = msgspec.structs.replace(
        runs["2026-01-06-after"], file=msgspec.structs.replace(runs["2026-01-06-after"].file, status=Running(started="2026-01-06T00:00:00+00:00")))
    cut = Index((runs["2026-01-05-before"], interrupted), comparable=comparable).view()
    assert [point.joined for point in cut.trends["shop"]] == [False, False]
    assert cut.suggested is None


def test_a_real_change_on_these_scenarios_says_whether_it_would_hold_for_new_ones(played: Played) -> None:
    """One scenario dropping from 6/6 to 0/6 is real on these scenarios, yet with its interval across
    scenarios spanning zero the reading says new scenarios are needed to know more."""
    view = played.comparison()
    assert view.real and view.verdict == "worse"
    assert view.delta is not None and view.delta.low < 0 < view.delta.high
    assert view.reading.startswith("real (worse) on these scenarios; whether it holds for new scenarios is not shown")


def test_usages_sum_the_same_one_by_one_in_one_pass_or_added() -> None:
    """A request summed alone (the turn's fast path), requests summed in one pass, and sums added
    with ``+`` or ``Added`` give the same ``Sum``: tokens, cached and reasoning only where
    reported, the exact cost and its source, mixed sources, unpriced and partly reported requests."""
    import random
    from decimal import Decimal

    kinds: list[Usage | NoUsage] = [
        NoUsage(),
        Usage(120, 14),
        Usage(300, 9, cached=40, reasoning=NotReported()),
        Usage(0, 7, unreported=("input",)),
        Usage(50, 5, cached=NotReported(), reasoning=3, cost=Cost(Decimal("0.0012"), "provider")),
        Usage(10, 2, cost=Cost(Decimal("0.000003"), "computed")),
        Usage(0, 0, cost=Cost(Decimal("0.5"), "provider"), unreported=("input", "output")),
    ]
    for one in kinds:
        for other in kinds:
            assert Spent((one,)).sum() + Spent((other,)).sum() == Spent((one, other)).sum()
    pick = random.Random(3)
    for _ in range(200):
        usages = tuple(pick.choice(kinds) for _ in range(pick.randint(0, 9)))
        alone = [Spent((usage,)).sum() for usage in usages]
        added = Sum()
        for one in alone:
            added = added + one
        assert Added(alone).sum() == added == Spent(usages).sum()
        assert Added([Sum(), *alone, Sum()]).sum() == added


def test_an_attempts_turns_sum_as_their_requests_do() -> None:
    """Each turn's sums (one request summed with no loop, several in one pass, a scripted turn's
    user as no request) are what its requests sum to, and its window shows their tokens and
    their cost added; the attempt's totals are its turns' and its ending's, and its sizes only the
    requests that reported both counts (of a turn of several, each one reported at all)."""
    from decimal import Decimal

    from convy.agent import Answer, Requests
    from convy.attempt import Attempt
    from convy.judge import Verdict
    from convy.outcome import Outcome
    from convy.transcript import Transcript, Turn

    kinds: list[Usage | NoUsage] = [
        NoUsage(),
        Usage(120, 14),
        Usage(300, 9, cached=40, reasoning=NotReported()),
        Usage(0, 7, unreported=("input",)),
        Usage(50, 5, cached=NotReported(), reasoning=3, cost=Cost(Decimal("0.0012"), "provider")),
        Usage(10, 2, cost=Cost(Decimal("1E+2"), "computed")),
    ]
    answers: list[Usage | NoUsage | Requests] = [*kinds, Requests((kinds[1], kinds[3], kinds[4])), Requests(())]
    turns = tuple(
        Turn(f"m{n}", Answer(f"a{n}", answer), n % 3 == 0, float(n), 0.5, kinds[(n * 5 + 1) % len(kinds)], float(n) + 0.5, 0.25)
        for n, answer in enumerate(answers * 2)
    )
    outcome = Outcome("s", 1, "2026-01-01T00:00:00+00:00", 20.0, Transcript(turns), "finished", Verdict(()), user_ending=(kinds[4], kinds[0]))
    attempt = Attempt(outcome, 0.5)
    window = attempt.dialogue().turns
    for turn, (agent, user), shown in zip(turns, attempt.turn_sums(), window, strict=True):
        assert agent == Spent(turn.answer.requests()).sum()
        assert user == (Sum() if turn.scripted else Spent((turn.user_usage,)).sum())
        # The window writes its views as arrays (``TokensArray``, ``CostArray``): the same fields.
        fields = msgspec.structs.astuple
        assert (fields(shown.agent_tokens), fields(shown.user_tokens), fields(shown.cost)) == (
            fields(agent.tokens()),
            fields(user.tokens()),
            fields((agent + user).cost()),
        )
    assert attempt.agent_sum() == Spent(attempt.agent_usage()).sum()
    assert attempt.user_sum() == Spent(attempt.user_usage()).sum()
    single = [turn.answer.usage for turn in turns if isinstance(turn.answer.usage, Usage) and not turn.answer.usage.unreported]
    assert len(attempt.sizes().agent) == len(single) + 2 * 3  # a turn of several: each one reported, in full or in part


def test_a_runs_totals_are_the_same_summed_alone_or_after_its_view(played: Played) -> None:
    """A comparison and the index sum each attempt's requests in one pass; a report takes them
    from the sums by who its view made: the same tokens and exact cost either way."""
    from convy.runs import Runs

    runs, _ = Runs(played.folder / "results").read()
    assert runs
    for run in runs:
        alone = Summary(run).totals()
        viewed = Summary(run)
        viewed.view()
        assert alone == viewed.totals()
        assert alone.cost.amount is not None and alone.tokens > 0


# --- a run's summary and report, from its folder ----------------------------------------------------


def test_a_play_holds_no_attempt_and_its_summary_and_report_are_those_read_from_its_folder(tmp_path: Path) -> None:
    """``RunJournal.play`` passes each attempt on and lets it go: what it returns is read back from
    ``attempts.jsonl`` (the attempts it passed on, in the order it wrote them), resumed or not, and
    the report the command writes of it is the one ``convy report`` makes of the folder."""
    scenarios = Scenarios(Played(tmp_path).scenarios()).every()
    user = FakeModel(lambda messages: Reply("Thanks, that is all. ###STOP###"), name="fake-user")
    bench = Bench(FakeAgent(Shop(True).answer), Models(user=user, judge=FakeJudge(Judged().held, name="fake-judge")))
    spec = RunSpec(id="r1", agent="shop", scenarios=scenarios, attempts=4, limits=bench.limits)
    journal = RunJournal(tmp_path / "results" / "shop" / "r1")
    shown = MemoryJournal()

    kept = asyncio.run(journal.play(spec, bench, shown))

    assert kept.outcomes == tuple(shown.outcomes) and len(kept.outcomes) == len(scenarios) * 4
    assert not any(back is passed for back, passed in zip(kept.outcomes, shown.outcomes, strict=True))  # read back, not held
    assert kept == journal.kept(spec)

    def report(kept: Kept) -> str:  # as the command makes it at a run's end
        return ReportPage(Summary(Read(journal.folder, journal.run(), kept.outcomes, kept.broken, False))).html()

    read = Runs(tmp_path / "results").one(journal.folder)
    assert isinstance(read, Read)
    assert report(kept) == ReportPage(Summary(read)).html()

    # Resumed: the lines of the last three attempts cut, and played again.
    lines = (journal.folder / "attempts.jsonl").read_bytes().splitlines(keepends=True)
    (journal.folder / "attempts.jsonl").write_bytes(b"".join(lines[:-3]))
    again = MemoryJournal()

    resumed = asyncio.run(journal.play(spec, bench, again, earlier=journal.kept(spec)))

    assert len(again.outcomes) == 3
    assert resumed.outcomes == kept.outcomes[:-3] + tuple(again.outcomes)
    assert resumed == journal.kept(spec)
