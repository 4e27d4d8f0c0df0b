"""The view records: what the pages draw, computed in Python and embedded in each page as JSON.

They are data for the browser, not domain objects: a number nobody reported is ``None`` (``null``),
and they have no version — one convy writes the template and the data into one file together.
Every number and decision a page shows is made before it gets here (``report.py``,
``comparison.py``); the page's script only draws, filters and navigates.
"""

from __future__ import annotations

from typing import Literal

import msgspec


# Each subclass says frozen=True again: msgspec inherits it, but a type checker reads the class
# through dataclass_transform, which does not (msgspec issue 657).
class View(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Base of the view records.

    They are trees of plain data that never refer back to themselves, so the garbage collector
    need not track them (``gc=False``): a report of 10,000 attempts makes about a million, and
    tracked they set off collections that walked every attempt read, 1.2 of its 2.6 CPU-s."""


class IntervalView(View, frozen=True):
    estimate: float
    low: float
    high: float


class SpreadView(View, frozen=True):
    """min, p50, p95 and max of some values (seconds or tokens), and how many there were."""

    count: int = 0
    min: float | None = None
    p50: float | None = None
    p95: float | None = None
    max: float | None = None


class TokensView(View, frozen=True):
    """Tokens by kind, over some requests; ``cached``/``reasoning`` are ``None`` when nobody said.

    ``total`` is ``input + output``, or ``None`` when no request reported its tokens (a table sorts
    by it, unreported last).
    """

    requests: int = 0
    reported: int = 0
    input: int = 0
    output: int = 0
    cached: int | None = None
    reasoning: int | None = None
    total: int | None = None


class CostView(View, frozen=True):
    """A total cost in US dollars (as text, exact), where it came from, and whether it is complete.

    ``unpriced`` requests had no known price: the total leaves them out and says so.
    """

    amount: str | None = None
    source: Literal["provider", "computed", "mixed"] | None = None
    priced: int = 0
    unpriced: int = 0
    complete: bool = True


class TimeView(View, frozen=True):
    """Seconds summed over attempts, split by who spent them; ``unaccounted`` is the rest, not clamped."""

    wall: float = 0.0
    agent: float = 0.0
    user: float = 0.0
    judge: float = 0.0
    waiting: float = 0.0
    unaccounted: float = 0.0


class SpendView(View, frozen=True):
    """What one participant took: tokens, cost, and the spreads of its request times and tokens."""

    tokens: TokensView = TokensView()
    cost: CostView = CostView()
    seconds: SpreadView = SpreadView()
    per_request: SpreadView = SpreadView()


class HeldView(View, frozen=True):
    """Claims held out of claims decided (trusted decisions only), their share, and in one word:
    ``always`` (every decided one held), ``never`` (none did), ``sometimes``, or ``undecided``."""

    held: int
    decided: int
    share: float | None
    holds: Literal["always", "sometimes", "never", "undecided"]


class ClaimRow(View, frozen=True):
    """One claim of a scenario over its attempts; ``holds`` as in ``HeldView``."""

    text: str
    by: Literal["judge", "code"]
    held: int
    decided: int
    holds: Literal["always", "sometimes", "never", "undecided"]
    rate: IntervalView | None = None


class CauseView(View, frozen=True):
    """One cause of attempts that did not pass (``causes.py``): how many, and their share of the
    attempts that did not pass (``None`` when every attempt passed)."""

    cause: Literal["agent", "user", "judge", "service", "tool"]
    count: int
    share: float | None


class AttemptRow(View, frozen=True):
    """One attempt as the scenario's table and matrix show it; ``cause`` whose it was when it did
    not pass (``""`` when it passed)."""

    attempt: int
    status: Literal["passed", "failed", "not_judged"]
    why: str
    stop: str
    turns: int
    seconds: float
    marks: list[Literal["held", "failed", "none"]]
    cause: str = ""


class ScenarioView(View, frozen=True):
    """One scenario of a run: its result, its claims, and its attempts in short.

    ``claims_held`` sums every claim over every attempt: claims held out of claims decided. It
    has no interval: the claims of one attempt are not independent of each other. ``answer_p50``
    is the scenario's time in one number: the median of its agent's answer times, over every turn
    of every attempt (``agent.seconds.p50``). ``first`` is the attempt its window opens on: the
    first that failed, else the first kept (``None`` when none was kept).
    """

    index: int
    id: str
    group: str
    tags: list[str]
    passed: int
    judged: int
    not_judged: int
    rate: IntervalView | None
    status: Literal["always", "flaky", "never", "not_judged"]
    claims: list[ClaimRow]
    claims_held: HeldView
    attempts: list[AttemptRow]
    first: int | None
    turns: SpreadView
    agent: SpendView
    answer_p50: float | None
    cost: CostView
    stops: dict[str, int]
    variant: dict[str, str] = {}  # a matrix variant's values, as its id writes them; {} for a scenario without a matrix
    variant_of: str = ""  # the scenario it was made from
    causes: dict[str, int] = {}  # its attempts that did not pass, by cause (only the causes it has)
    adaptive: str = ""  # in a run of --attempts auto: why it got the attempts it got ("narrow enough: width 0.18 ≤ 0.2")


class VariantValueView(View, frozen=True):
    """One value of a variant dimension over the run: the variants that have it, their attempts
    passed of judged, and their pass rate as the run's is found (the mean of the variants' rates,
    its interval by ``stats.Headline``: exact for one variant, else clustered by variant and holding the attempts' own noise)."""

    value: str
    variants: int
    passed: int
    judged: int
    rate: IntervalView | None
    method: str


class VariantDimensionView(View, frozen=True):
    """A matrix key of the run's scenarios (``mood``), with each of its values in the matrix's order."""

    key: str
    values: list[VariantValueView]


class Dimension(View, frozen=True):
    k: int
    pass_hat: float
    pass_at: float


class NoiseView(View, frozen=True):
    within: float | None = None
    between: float | None = None
    icc: float | None = None
    advice: str | None = None


class SkipGroup(View, frozen=True):
    """Scenarios not played for the same reasons: the reasons said once, the scenarios listed."""

    reason: str
    scenarios: list[str]


class HeaderView(View, frozen=True):
    agent: str
    run: str
    started: str
    ended: str | None
    seconds: float | None
    status: Literal["finished", "interrupted", "running", "stopped"]
    convy: str
    user_model: str
    judge_model: str
    fingerprint: str
    trust: float
    attempts: int
    planned: int
    kept: int
    broken: int
    skipped: list[str]
    stop: str = ""  # a budget's stop in words (spent.Stop), when one stopped the run
    budget: str = ""  # what a finished run spent of the budget it was given (spent.Allowance), when one was set
    reached: str = ""  # a finished run that reached or crossed its budget all the same, in words (spent.Stop.reached)
    adaptive: str = ""  # the rule that spent its attempts (adaptive.Adaptive.said), for a run of --attempts auto
    against: str = ""  # for a run played against a base (--against): the comparison's verdict in words (adaptive.Course.said)
    against_run: str = ""  # and that base, as agent/run
    verdict: str = ""  # the run against its pass rule in words (passing.RunVerdict.verdict): the exit code's
    tested: bool = True  # whether an attempt was judged: a run that judged none tested nothing
    failing: list[str] = []  # the scenarios that fail the pass rule, each with why (passing.RunVerdict.why)
    name: str = ""  # what a person called the run (``convy run --name``); "" for none
    skip_groups: list[SkipGroup] = []  # ``skipped`` grouped by their reasons: advice said once per cause


class LiveView(View, frozen=True):
    """What a page of a run under way knows of its next writing (``live.LiveReport``): it reloads
    itself ``every`` seconds while the run it shows is running; once ``stale`` seconds have passed
    since it was ``written`` (an ISO time) with no newer page, the process writing it has ended,
    and it stops."""

    every: float
    written: str
    stale: float


class ScoreView(View, frozen=True):
    """A decider measured against people on the decisions they labelled (``labels.py``): how many,
    how many it agreed on, the share with its Wilson interval, Cohen's κ with its interval (``None``
    when undefined: ``reading`` then says why) and κ in words."""

    labelled: int
    agree: int
    accuracy: IntervalView | None
    kappa: IntervalView | None
    reading: str


class AgreementRow(View, frozen=True):
    """One claim of one scenario measured against people (``claim`` ``""``: every claim)."""

    scenario: str
    claim: str
    by: str
    score: ScoreView


class Disagreement(View, frozen=True):
    """A decision people marked wrong: where it is, and what each side said held."""

    scenario: str
    attempt: int
    claim: str
    by: str
    decided: bool
    truth: bool


class AgreementView(View, frozen=True):
    """A run's decisions against the human labels of its dialogues (``labels.Agreement``):
    ``labels`` known for the run (its own and its sources'), ``unmatched`` those whose dialogue
    and claim the run has not, ``broken`` lines of ``labels.jsonl`` that could not be read; the
    disagreements listed up to a bound, ``more`` the rest."""

    labels: int
    unmatched: int
    broken: int
    overall: AgreementRow
    claims: list[AgreementRow]
    disagreements: list[Disagreement]
    more: int
class DecisionLink(View, frozen=True):
    """One decision the judging section points at, opened in the scenario window by its attempt:
    ``held`` of ``votes`` said it held (0 of 0 when it had no votes), what was decided, and
    whether its evidence is in the dialogue (``None``: it quoted nothing)."""

    attempt: int
    held: int
    votes: int
    decided: Literal["held", "failed", "split"]
    found: bool | None


class ClaimJudgingView(View, frozen=True):
    """How one claim of a scenario was judged over the run (``agreement.Consensus``): decisions,
    their evidence (quoted and found, quoted and not found, none), the judge's agreement with
    itself (``None`` when asked once), splits and dissents, the panel's agreement (``between``:
    the share of judge pairs agreeing; ``kappa``: Fleiss' κ, ``None`` when undefined or one judge),
    decisions left out of κ, the flags, and the decisions that split or quoted words not there."""

    scenario: str
    claim: str
    decisions: int
    quoted: int
    unquoted: int
    silent: int
    agreement: float | None
    splits: int
    dissents: int
    between: float | None
    kappa: float | None
    left_out: int
    ambiguous: bool
    disagree: bool
    split: list[DecisionLink]
    unfound: list[DecisionLink]


class JudgingView(View, frozen=True):
    """A run's judging: how it was asked (``repeats``, ``panel``, ``evidence``), by whom (with the
    providers known, the agent's model and provider, and the judges ``alike`` it: from the same
    provider, a possible bias), the panel's Fleiss' κ over every claim's decisions with its reading,
    the mean self-agreement, counts of flagged claims and unquoted decisions, and each claim."""

    repeats: int
    panel: str
    evidence: str
    judges: list[str]
    providers: dict[str, str]
    agent_model: str
    agent_provider: str
    alike: list[str]
    kappa: float | None
    kappa_reading: str
    kappa_subjects: int
    agreement: float | None
    ambiguous: int
    disagree: int
    unquoted: int
    decisions: int
    claims: list[ClaimJudgingView]


class RunView(View, frozen=True):
    """A run report's data. ``not_judged`` counts the attempts left out of the pass rate by
    reason, ``not_judged_total`` all of them; ``claims`` is every claim's text, sorted, for the
    claim filter."""

    header: HeaderView
    rate: IntervalView | None
    method: str
    passed: int
    judged: int
    always: int
    flaky: int
    never: int
    not_judged: dict[str, int]
    not_judged_total: int
    stops: dict[str, int]
    consistency: list[Dimension]
    noise: NoiseView
    agent: SpendView
    user: SpendView
    judge: SpendView
    cost: CostView
    time: TimeView
    scenarios: list[ScenarioView]
    tags: list[str]
    groups: list[str]
    claims: list[str]
    agreement: AgreementView | None = None  # the judge against human labels; None: no labels
    judging: JudgingView | None = None  # None: one judge asked once that quoted nothing
    variants: list[VariantDimensionView] = []  # the run's variant dimensions; [] with no matrix
    causes: list[CauseView] = []  # the attempts that did not pass by cause, every cause in order
    not_passed: int = 0  # the attempts that did not pass (failed or not judged)


# The scenario window's records below are written as JSON arrays of their fields' values, in the
# order the fields are declared (``array_like``), not as objects: a 10,000-attempt report held
# 60,000 turns, and their field names repeated were half of its 52 MB of window JSON, which was
# encoded and gzipped at the end of every run. The page reads them back into objects with the
# field names Python gives it beside the packed data (``page.PackedLayout``): the order is declared
# here alone.


class TokensArray(TokensView, frozen=True, array_like=True):
    """A ``TokensView`` in the window (a turn's, an attempt's), written as an array."""


class CostArray(CostView, frozen=True, array_like=True):
    """A ``CostView`` in the window (a turn's, an attempt's), written as an array."""


class StepView(View, frozen=True, array_like=True):
    """A thought (its ``text``), a tool call (the rest: ``error``, the error a tool answered
    with; ``source``, where the answer of a call the scenario's own tools served came from;
    ``traced``, whether the agent's own spans showed it), or a
    pause to ask a person (``asked``: the question in ``text``, the tool it asked to run in
    ``name`` with its ``arguments``, the answer in ``result``, who answered in ``source``, the
    ``options`` it offered)."""

    kind: Literal["thought", "call", "asked"]
    text: str = ""
    name: str = ""
    arguments: str = ""
    result: str | None = None
    seconds: float | None = None
    error: str = ""
    source: str = ""
    approval: str = ""  # where the agent asked before running it: what the scenario's approvals answered
    options: list[str] = []
    traced: bool = False  # a call the agent's own spans showed (``receive_traces``)


class TurnView(View, frozen=True, array_like=True):
    """One turn of a dialogue; ``thoughts``, ``calls`` and ``asked`` count its agent's steps of each kind."""

    user: str
    scripted: bool
    agent: str
    steps: list[StepView]
    thoughts: int
    calls: int
    agent_start: float
    agent_seconds: float
    user_start: float
    user_seconds: float
    agent_tokens: TokensArray
    user_tokens: TokensArray
    cost: CostArray
    asked: int = 0  # its pauses to ask a person


class VoteView(View, frozen=True, array_like=True):
    """One of the decisions a claim was made from (``judge.Vote``)."""

    judge: str
    held: bool
    reason: str
    confidence: float | None
    grade: str | None
    evidence: str | None
    found: bool | None
    weak: str | None = None  # found, but no evidence: why in words (``transcript.Evidence.said``)


class SplitView(View, frozen=True, array_like=True):
    """How a decision's votes fell: of ``votes`` decisions by ``judge`` (by every judge when it is
    ""), how many ``held``."""

    judge: str
    held: int
    votes: int


class DecisionView(View, frozen=True, array_like=True):
    claim: str
    by: str
    held: bool
    reason: str
    confidence: float | None
    grade: str | None
    trusted: bool
    # What the judge quoted from the dialogue, and whether it is there (None: nothing quoted).
    evidence: str | None = None
    found: bool | None = None
    votes: list[VoteView] = []
    # Whether people may label it right or wrong: False for what stands in for a decision (the
    # agent failed, nothing judged), which no judge or check made.
    markable: bool = True
    # Found in the dialogue but no evidence (too short, a piece of a word, the user's): why, in words.
    weak: str | None = None
    # How the votes fell: all of them first, then each judge's when a panel decided (empty: one decision).
    split: list[SplitView] = []


class SpanView(View, frozen=True, array_like=True):
    lane: Literal["agent", "user", "judge", "waiting", "traced"]
    start: float
    seconds: float
    label: str


class UserFaultView(View, frozen=True, array_like=True):
    """Something the simulated user did wrong (``transcript.UserFault``): the window marks its turn."""

    check: str
    turn: int
    detail: str
    by: str


class DialogueView(View, frozen=True, array_like=True):
    """One attempt in full, for the scenario window: loaded only when the window opens."""

    scenario: str
    attempt: int
    status: str
    why: str
    stop: str
    started: str
    seconds: float
    turns: list[TurnView]
    failed_on: str | None
    decisions: list[DecisionView]
    # The timeline's spans besides the turns' (the judge's and the waits'): the page draws each
    # turn's user model and agent spans from the turn's own start and seconds, which once came
    # here a second time, with a label each (a sixth of the dialogues' bytes).
    spans: list[SpanView]
    tokens: TokensArray
    cost: CostArray
    fingerprint: str = ""  # the dialogue's (``Transcript.fingerprint``), which human labels are kept by
    cause: str = ""  # whose it was when it did not pass (``causes.py``); "" when it passed
    # What the simulated user's checks found (issue 11), each marked at its turn, and the checks
    # a model was asked and did not decide ("role_swap: why").
    faults: list[UserFaultView] = []
    unchecked: list[str] = []
    # The scenario's tools' state as the dialogue left it, as JSON text; None where it declares no tools.
    state: str | None = None


class RunRow(View, frozen=True):
    """One run on the index."""

    agent: str
    run: str
    href: str
    started: str
    status: str
    rate: IntervalView | None
    passed: int
    judged: int
    scenarios: int
    attempts: int
    tokens: int
    cost: CostView
    seconds: float | None
    planned: int = 0  # the attempts its spec plans: a run under way shows "attempts of planned"
    name: str = ""  # what a person called the run (``convy run --name``)


class TrendPoint(View, frozen=True):
    run: str
    started: str
    rate: float | None
    name: str = ""  # what a person called the run
    finished: bool = True  # a run not finished is drawn as a point, never joined
    joined: bool = False  # whether the trend's line joins it to the run before it: both finished and comparable


class ComparisonLink(View, frozen=True):
    base: str
    candidate: str
    href: str


class Suggestion(View, frozen=True):
    """Two runs the index offers to compare: the newest run that has an earlier comparable one of
    the same agent, against the latest of those earlier ones."""

    base: str
    candidate: str


class IndexView(View, frozen=True):
    runs: list[RunRow]
    trends: dict[str, list[TrendPoint]]
    comparisons: list[ComparisonLink]
    skipped: list[str]
    agents: list[str]
    suggested: Suggestion | None


class SideView(View, frozen=True):
    """One run's side of a comparison; ``href`` is its report, relative to the comparison page."""

    agent: str
    run: str
    href: str
    started: str
    status: str
    rate: IntervalView | None
    passed: int
    judged: int
    attempts: int
    tokens: int
    cost: CostView
    seconds: float
    name: str = ""  # what a person called the run (``convy run --name``)


class ScenarioChange(View, frozen=True):
    id: str
    before_passed: int
    before_judged: int
    after_passed: int
    after_judged: int
    p: float
    adjusted: float
    # By the fixed-design test (Fisher, Benjamini–Hochberg) when it decides; else "same" only when
    # Newcombe's interval of the difference lies within ±``comparison.SAME`` (10 points), and
    # "undecided" otherwise: at 3 attempts 3/3 → 0/3 is not decided, and is not "same" either.
    change: Literal["worse", "better", "undecided", "same"]
    # When the comparison's sequential verdict applies (``SequentialView.applies``): this
    # scenario's own anytime-valid e-value and its change decided by e-BH over the scenarios,
    # from base to candidate; ``None`` otherwise, or for a scenario the sequential test never scored.
    sequential: Literal["worse", "better", "same"] | None = None
    sequential_e: float | None = None
    seen: Literal["worse", "better", "none"] = "none"  # the direction of the rates seen, decided or not
    difference: IntervalView | None = None  # after − before with Newcombe's interval; None unless judged in both
    said: str = ""  # the change in words: "undecided at 3 attempts (worse seen)", "same (within ±10 pts)"


class ClaimFlip(View, frozen=True):
    """A claim whose held rate changed: ``better`` it holds more often now, ``worse`` less often,
    ``one_run`` only one of the runs decided it. ``flipped``: it crossed half its attempts."""

    scenario: str
    claim: str
    before: float | None
    after: float | None
    change: Literal["better", "worse", "one_run"]
    flipped: bool


class Pair(View, frozen=True):
    """One attempt of each run for a scenario, to be lined up turn by turn."""

    scenario: str
    before: DialogueView | None
    after: DialogueView | None


class SameDialogues(View, frozen=True):
    """Two runs that decided the same recorded dialogues (one re-judged the other's, or both
    re-judged one run's): ``said``, the line that says so; each attempt paired with itself by
    (scenario, attempt) — ``paired`` in both, ``worse`` passed before and failed after, ``better``
    the other way, ``other`` whose status changed to or from not judged, ``both`` passed and
    ``neither`` failed both times. McNemar's test and the paired interval of the comparison are
    made of the attempts judged in both: ``both``, ``worse``, ``better`` and ``neither``."""

    said: str
    paired: int
    worse: int
    better: int
    other: int
    both: int = 0
    neither: int = 0


class SequentialView(View, frozen=True):
    """A run of the pair that was played against a base until a sequential comparison stopped it
    (``convy run --against BASE --attempts auto``: ``adaptive.Against``, ``sequential.py``).

    ``played`` is which run of the pair it is (``candidate``, or ``base`` when the pair is
    compared the other way round), ``against`` the run it was played against (agent/run).
    ``applies``: that run is the other one of this pair, so the sequential verdict is this
    comparison's and leads it; the fixed-design test, whose number of attempts the run chose by
    looking at them, is then shown for description only (``fixed`` says why). Otherwise the
    sequential verdict is of another pair and does not apply to this one.

    ``verdict`` is from base to candidate (flipped when the base was the run played): ``worse``
    or ``better`` once the e-value ``e`` reached ``threshold`` (1/α), else ``undecided``;
    ``attempts``, the played run's judged attempts the verdict used; ``said``, the verdict in
    words (the played run's report says the same, seen from that run); ``note``, the sentence
    that says how the runs are related; ``counts``, when it applies, the scenarios by their own
    sequential change (``ScenarioChange.sequential``)."""

    played: Literal["candidate", "base"]
    against: str
    applies: bool
    verdict: Literal["worse", "better", "undecided"]
    e: float
    threshold: float
    alpha: float
    attempts: int
    said: str
    note: str
    fixed: str = ""
    counts: dict[str, int] = {}

    def other(self) -> Literal["candidate", "base"]:
        """The pair's run that was not the one played."""
        return "candidate" if self.played == "base" else "base"


class ComparisonView(View, frozen=True):
    """Two runs compared (``comparison.py``).

    ``delta`` is the paired difference of pass rates with its interval, clamped to [−1, +1].
    ``token_ratio``, ``cost_ratio`` and ``time_ratio`` are the candidate's per attempt over the
    base's; each ``*_direction`` says ``lower``, ``higher``, or ``same`` when the ratio is within
    ``tolerance`` of 1 (``None`` with no ratio). ``counts`` is the scenarios per change,
    ``flipped`` the claims that crossed half their attempts.

    ``pairs`` is one attempt of each run per scenario; the page does not embed them with the rest
    but compressed, read when the side-by-side window opens (``page.py``).
    """

    base: SideView
    candidate: SideView
    banner: list[str]
    only_base: list[str]
    only_candidate: list[str]
    changed: list[str]
    delta: IntervalView | None
    p: float
    method: str
    verdict: Literal["worse", "better", "same"]
    real: bool
    sign_flip_p: float
    reading: str
    mde: float | None
    needed: str | None
    cost_ratio: float | None
    token_ratio: float | None
    time_ratio: float | None
    cost_direction: Literal["lower", "higher", "same"] | None
    token_direction: Literal["lower", "higher", "same"] | None
    time_direction: Literal["lower", "higher", "same"] | None
    tolerance: float
    scenarios: list[ScenarioChange]
    counts: dict[str, int]
    claims: list[ClaimFlip]
    flipped: int
    pairs: list[Pair]
    same_dialogues: SameDialogues | None = None
    judges: JudgesView | None = None  # both runs' deciders against the same human labels
    # The attempts not passed of the scenarios compared, by cause, in each run; and the sentences
    # that say a change is mostly the simulated user's or the judge's (``causes.Shift``).
    base_causes: list[CauseView] = []
    candidate_causes: list[CauseView] = []
    trouble: list[str] = []
    # A run of the pair played against a base (``convy run --against``): the sequential verdict,
    # and whether it is this pair's; ``None`` when neither run was.
    sequential: SequentialView | None = None
    # What differs between the runs and is compared as it should be, not a reason to doubt the
    # pair: attempts per scenario that differ (each scenario compared by its rate), a re-judging's
    # judging (what it compares).
    notes: list[str] = []
    # The scenarios by change in words, as the command, the page and the summary say them.
    scenarios_said: str = ""

    def unverdicted(self) -> str:
        """Why the pair has no verdict to give, in words: the candidate judged nothing, or the pair
        is not comparable (the banner, or no scenario judged in both); ``""`` when it has one. The
        command and the summary say this where they would say "within noise"."""
        if not self.candidate.judged:
            return f"nothing was tested in the candidate: run {self.candidate.run} has no judged attempt"
        if self.banner or self.delta is None:
            return "not comparable: " + ("; ".join(self.banner) or "no scenario was judged in both runs")
        return ""

    def regressed(self) -> bool:
        """The pass rate really dropped (``--fail-on-regression``): by the sequential verdict when
        it is this pair's, since the fixed-design test is not valid after the run stopped early;
        by the fixed-design test otherwise."""
        if self.sequential is not None and self.sequential.applies:
            return self.sequential.verdict == "worse"
        return self.real and self.verdict == "worse"


class JudgesRow(View, frozen=True):
    """One claim (``""``: every claim) decided by both runs of a comparison on the dialogues people
    labelled: each run's decider measured against the same labels."""

    scenario: str
    claim: str
    base: ScoreView
    candidate: ScoreView


class JudgesView(View, frozen=True):
    """Two runs' deciders against one human ground truth (``labels.Judges``): ``labels`` the
    labelled dialogue claims both runs decided."""

    labels: int
    overall: JudgesRow
    claims: list[JudgesRow]
