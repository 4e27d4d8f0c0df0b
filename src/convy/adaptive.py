"""Attempts spent where they decide something (issue 13): a run whose scenarios get more attempts
only while what they say is still uncertain.

``Adaptive`` is the rule a run keeps in its spec (``RunSpec.adaptive``; the spec's ``attempts`` is
then the most a scenario may get): every scenario gets ``least`` attempts first, then more, in
rounds, until its stopping rule holds, it has the most, or the budget is spent. The stopping rules
are a closed union: ``Narrow`` (the scenario's 95% Wilson interval, the one its report shows, is at
most ``width`` wide) and ``Against`` (a comparison with a base run is decided: ``sequential.py``).

A rule is looked at only on checkpoints, never between them: a scenario is judged on its attempts
1 to ``c`` once every one of them is kept, and if the rule does not hold there, its next checkpoint
is found from those same attempts alone. So what the rule decides is a function of the attempts
kept, by number, and not of the order they ended in, how the rounds were cut, or whether the run
was interrupted: ``Course`` finds it again from ``attempts.jsonl`` alone, and a resumed run stops
where an uninterrupted one would have, given the same attempts.

``Rounds`` plays it: a ``plan.Player`` that wraps another (a ``Bench``, a ``spread.Crew``) and
asks it to play each round's attempts, one call per round, seeing each attempt as it is recorded.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, Literal

import msgspec

from convy.budget import Budget, BudgetedJournal, Earlier, Spending
from convy.outcome import Outcome
from convy.problems import Unplayed
from convy.sequential import Decided, Futile, ScenarioVerdict, Sequential, Undecided, Watch
from convy.stats import Z95, Tally, Wilson

if TYPE_CHECKING:
    from convy.plan import Journal, Planned, Player, Playlist


class Narrow(msgspec.Struct, frozen=True, tag="narrow"):
    """Stop a scenario once its pass rate's 95% Wilson interval is at most ``width`` wide (high
    less low: 0.2 is ±0.1 around the middle). Each scenario is decided on its own."""

    width: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.width) and 0.0 < self.width < 1.0):
            raise ValueError("target_width: must be more than 0 and less than 1")

    def standing(self, scenario: str, statuses: Mapping[int, str], least: int, most: int) -> Standing:
        """Where ``scenario`` stands given its attempts' statuses by number: walked checkpoint by
        checkpoint from ``least``, each decided on the attempts up to it."""
        checkpoint = min(least, most)
        looked, passed, judged = 0, 0, 0
        width = 1.0
        while True:
            missing = tuple(number for number in range(looked + 1, checkpoint + 1) if number not in statuses)
            if missing:
                return Standing(scenario, looked, Tally(passed, judged), width, checkpoint, "", self.width, missing)
            for number in range(looked + 1, checkpoint + 1):
                status = statuses[number]
                if status != "not_judged":
                    judged += 1
                    passed += status == "passed"
            looked = checkpoint
            tally = Tally(passed, judged)
            width = self.width_of(tally)
            if width <= self.width:
                return Standing(scenario, looked, tally, width, looked, "narrow", self.width)
            if looked >= most:
                return Standing(scenario, looked, tally, width, looked, "most", self.width)
            checkpoint = self.next(looked, tally, most)

    def width_of(self, tally: Tally) -> float:
        """The width of the report's interval for ``tally``: 1 when nothing was judged."""
        interval = Wilson(tally).interval()
        return 1.0 if interval is None else interval.high - interval.low

    def next(self, looked: int, tally: Tally, most: int) -> int:
        """The next checkpoint after ``looked`` attempts: as many as would bring the interval to the
        target if the rate and the share judged stayed what they are, but at least one more, at
        most twice as many (a guess from few attempts is rough) and at most ``most``."""
        if tally.judged == 0:
            return min(most, 2 * looked)
        share = tally.judged / looked
        rate = tally.passed / tally.judged
        low, high = tally.judged, 10**12  # the width over ``high`` judged attempts is under any target
        while high - low > 1:  # the smallest judged count whose width is within the target
            middle = (low + high) // 2
            if self.projected(rate, middle) <= self.width:
                high = middle
            else:
                low = middle
        wanted = math.ceil(high / share)
        return min(most, max(looked + 1, min(wanted, 2 * looked)))

    def projected(self, rate: float, judged: int) -> float:
        """The Wilson interval's width at this rate over ``judged`` attempts."""
        z2 = Z95 * Z95
        centre = (rate + z2 / (2 * judged)) / (1 + z2 / judged)
        half = Z95 / (1 + z2 / judged) * math.sqrt(rate * (1 - rate) / judged + z2 / (4 * judged * judged))
        return min(1.0, centre + half) - max(0.0, centre - half)

    def course(self, scenarios: Sequence[str], statuses: Mapping[str, Mapping[int, str]], least: int, most: int) -> Course:
        return Course(tuple(self.standing(scenario, statuses.get(scenario, {}), least, most) for scenario in scenarios))

    def said(self) -> str:
        return f"until its 95% interval is at most {self.width:g} wide"


class Against(msgspec.Struct, frozen=True, tag="against"):
    """Stop once the comparison with the base run ``agent``/``run`` is decided — a real change, or
    none reachable — by the sequential test of ``sequential.py`` at false-alarm rate ``alpha``.

    ``base`` is the base's judged attempts of each scenario, in attempt-number order, one
    character each: ``1`` passed, ``0`` failed (attempts not judged are left out). It is read once,
    when the run starts, and kept here in the run's spec: the watch is rebuilt from it whenever the
    course is found again (on resume, for the report), the same whatever happens to the base's
    folder after.

    The course replays the watch round by round from the attempts kept: each round is the watch's
    ``asks`` after the rounds before it (one block per scenario with any left, in the order the
    asks give), a scenario's attempts numbered on from its last; a round is scored once every
    attempt of it is kept, judged or not, and the verdict is looked at after each. So the rounds,
    like ``Narrow``'s checkpoints, are a function of the attempts kept by number, and a resumed
    run ends where an uninterrupted one would. ``least`` is not used: the first round is one block
    per scenario (a first block is scored with no guess of the change yet, so its evidence is
    lost; a larger one would lose more)."""

    agent: str
    run: str
    alpha: float = 0.05
    base: dict[str, str] = {}
    # The candidate's attempts per scenario at most, as a multiple of its base's judged attempts
    # (``Sequential.fitted``); 0, as in runs kept before the bound, plays to the run's most.
    ratio: int = 0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.alpha) and 0.0 < self.alpha < 1.0):
            raise ValueError("alpha: must be more than 0 and less than 1")
        if self.ratio < 0:
            raise ValueError("ratio: must be 0 (no bound) or more")
        for scenario, outcomes in self.base.items():
            if outcomes.strip("01"):
                raise ValueError(f"base: {scenario!r}: only 1 (passed) and 0 (failed) may be kept")

    def started(self, scenarios: Sequence[str], most: int) -> Watch:
        """The watch before the candidate's first round: the scenarios of ``scenarios`` the base has."""
        return Sequential(self.alpha, most, ratio=self.ratio).started(self._marks(scenarios))

    def fitted(self, scenario: str, most: int) -> int:
        """The attempts at most of ``scenario`` (``Sequential.fitted``): ``most``, or less under the ratio."""
        return Sequential(self.alpha, most, ratio=self.ratio).fitted(len(self.base.get(scenario, "")))

    def plan(self, scenarios: Sequence[str], most: int) -> PlanAgainstBase:
        """What the comparison may play, said before anything is: see ``PlanAgainstBase``."""
        watch = self.started(scenarios, most)
        sizes = [len(track.base) for track in watch.tracks]
        bounds = [watch.most(track) for track in watch.tracks]
        blocks = [track.block(watch.most(track)) for track in watch.tracks]
        # When it cannot decide even a flip, the fix: a larger most, where the run's most (not the
        # ratio) is what holds it, or else the base's attempts per scenario that would.
        flipped, wider, needed = watch.flipped(), 0, 0
        if flipped is None and sizes:
            fits = self.ratio * max(sizes) if self.ratio else 4 * most
            if fits > most and Sequential(self.alpha, fits, ratio=self.ratio).started(self._marks(scenarios)).flipped() is not None:
                wider = fits
            else:
                for size in range(max(sizes) + 1, 101):
                    trial = Sequential(self.alpha, max(most, self.ratio * size), ratio=self.ratio)
                    if trial.started({track.scenario: (True,) * size for track in watch.tracks}).flipped() is not None:
                        needed = size
                        break
        return PlanAgainstBase(
            f"{self.agent}/{self.run}", len(watch.tracks), most, self.ratio, tuple(sizes), tuple(bounds), tuple(blocks),
            flipped, watch.reach(), wider, needed,
        )

    def _marks(self, scenarios: Sequence[str]) -> dict[str, tuple[bool, ...]]:
        return {name: tuple(mark == "1" for mark in self.base[name]) for name in scenarios if name in self.base}

    def course(self, scenarios: Sequence[str], statuses: Mapping[str, Mapping[int, str]], least: int, most: int) -> Course:
        watch = self.started(scenarios, most)
        played = dict.fromkeys(scenarios, 0)
        limit = {name: self.fitted(name, most) for name in scenarios}
        while True:
            verdict = watch.verdict()
            asks = [ask for ask in watch.asks() if played.get(ask.scenario, most) < limit.get(ask.scenario, most)]
            match verdict:
                case Decided():
                    return self.stopped(watch, verdict, played, "decided")
                case Futile() if asks:
                    return self.stopped(watch, verdict, played, "futile")
                case _ if not asks:
                    return self.stopped(watch, verdict, played, "most")
            turn = {ask.scenario: range(played[ask.scenario] + 1, min(limit[ask.scenario], played[ask.scenario] + ask.attempts) + 1) for ask in asks}
            kept = {name: statuses.get(name, {}) for name in turn}
            if any(number not in kept[name] for name, numbers in turn.items() for number in numbers):
                return self.going(watch, verdict, played, turn, kept)
            tallies: dict[str, Tally] = {}
            for name, numbers in turn.items():
                judged = [kept[name][number] for number in numbers if kept[name][number] != "not_judged"]
                tallies[name] = Tally(judged.count("passed"), len(judged))
                played[name] += len(numbers)
            watch = watch.played(tallies)

    def stopped(self, watch: Watch, verdict: Verdict, played: dict[str, int], stop: Ending) -> Course:
        own = {one.scenario: one for one in watch.scenarios()}
        return Course(
            tuple(Watched(name, count, count, stop, verdict, own.get(name), self.alpha) for name, count in played.items()),
            verdict,
        )

    def going(self, watch: Watch, verdict: Verdict, played: dict[str, int], turn: dict[str, range], kept: dict[str, Mapping[int, str]]) -> Course:
        """The course part way through a turn: its attempts not kept yet are wanted, dealt in the asks' order."""
        own = {one.scenario: one for one in watch.scenarios()}
        order = {name: rank for rank, name in enumerate(turn)}
        standings: list[Watched] = []
        for name, count in played.items():
            numbers = turn.get(name, range(0))
            missing = tuple(number for number in numbers if number not in kept[name]) if name in turn else ()
            wanted = numbers[-1] if numbers else count
            standings.append(Watched(name, count, wanted, "", verdict, own.get(name), self.alpha, order.get(name, len(order)), missing))
        return Course(tuple(standings), verdict)

    def said(self) -> str:
        return f"until the comparison with {self.agent}/{self.run} is decided (α {self.alpha:g})"

    def most(self, most: int) -> int:
        """The most attempts any scenario may get: ``most``, or less when the ratio bounds them all."""
        return max((self.fitted(name, most) for name in self.base), default=most)


class PlanAgainstBase(msgspec.Struct, frozen=True):
    """What a run against a base may play, worked out before it plays (``Against.plan``): its
    ``scenarios``, the run's ``most`` per scenario and the ``ratio`` bounding it, each scenario's
    base judged attempts (``sizes``), the attempts it may get (``bounds``) and its block
    (``blocks``); ``flipped``, the attempts after which a change of every scenario from passing to
    failing (or back) is decided (``None``: never, the base can decide nothing), ``reach``, the
    smallest change it could decide at all (``Watch.reach``); when it cannot decide a flip, the fix:
    ``wider``, a most per scenario that would, or ``needed``, the base's judged attempts per scenario
    that would (0 when none up to 100 would)."""

    base: str
    scenarios: int
    most: int
    ratio: int
    sizes: tuple[int, ...]
    bounds: tuple[int, ...]
    blocks: tuple[int, ...]
    flipped: int | None
    reach: float | None
    wider: int = 0
    needed: int = 0

    def attempts(self) -> int:
        return sum(self.bounds)

    def lines(self) -> tuple[str, ...]:
        """The plan in words: the most it may play and in what blocks, then what it can decide."""
        if not self.scenarios:
            return ()
        each = _span(self.sizes)
        these = f"{self.scenarios} scenario{'s' if self.scenarios != 1 else ''}"
        bounded = ""
        if self.ratio and any(bound < self.most for bound in self.bounds):
            bounded = f", bounded at {self.ratio}× the base's: more would only make each block larger"
        first = (
            f"against {self.base} ({each} judged attempt{'s' if max(self.sizes) != 1 else ''} per scenario): at most "
            f"{self.attempts()} attempts ({these} × up to {_span(self.bounds)}{bounded}), in blocks of {_span(self.blocks)} per scenario"
        )
        if self.flipped is None:
            if self.wider:
                fix = f"--max-attempts {self.wider} would decide that"
            elif self.needed:
                fix = f"a base with {self.needed} judged attempts per scenario would (convy run -k {self.needed} plays one)"
            else:
                fix = "play a base with many more attempts per scenario"
            return (
                first,
                f"this base can decide nothing: not even a change of every scenario from passing to failing, within "
                f"{self.attempts()} attempts; {fix}",
            )
        second = f"a change of every scenario from passing to failing (or back) is decided after {self.flipped} attempts"
        if self.reach is not None:
            second += f"; a change under about {self.reach * 100:.0f} points cannot be decided with this base"
        return first, second


def _span(numbers: Sequence[int]) -> str:
    """``4``, or ``2 to 4`` when they differ."""
    low, high = min(numbers), max(numbers)
    return f"{low}" if low == high else f"{low} to {high}"


class BaseJudged(msgspec.Struct, frozen=True):
    """A base run's attempts as ``Against.base`` keeps them: each scenario's judged attempts in
    attempt-number order (never the order they ended in), ``1`` passed, ``0`` failed, each seen
    through the base's ``trust``; attempts not judged are left out."""

    outcomes: Sequence[Outcome]
    trust: float

    def marks(self, scenarios: Iterable[str]) -> dict[str, str]:
        wanted: dict[str, list[tuple[int, str]]] = {name: [] for name in scenarios}
        for outcome in self.outcomes:
            status = outcome.status(self.trust)
            if outcome.scenario in wanted and status != "not_judged":
                wanted[outcome.scenario].append((outcome.attempt, "1" if status == "passed" else "0"))
        return {name: "".join(mark for _, mark in sorted(pairs)) for name, pairs in wanted.items()}


Verdict = Decided | Undecided | Futile
Ending = Literal["decided", "futile", "most", ""]


class Watched(msgspec.Struct, frozen=True):
    """One scenario of a run played against a base (``Against``): ``looked``, its attempts 1 to
    ``looked`` that rounds scored; ``wanted``, the attempts it should have now (to the end of the
    round under way, or ``looked`` once the run stopped); ``stop``, why the run stopped
    (``decided``, ``futile``, ``most``: no scenario had attempts left) or ``""`` while it goes on;
    ``verdict``, the run's comparison as those rounds left it, and ``own``, this scenario's own
    (its e-value alone, decided over the scenarios by e-BH); ``rank``, its place in the round's
    asks; ``missing``, the round's attempts of it not kept yet."""

    scenario: str
    looked: int
    wanted: int
    stop: Ending
    verdict: Verdict
    own: ScenarioVerdict | None
    alpha: float
    rank: int = 0
    missing: tuple[int, ...] = ()

    def order(self) -> float:
        return self.rank

    def said(self, status: str) -> str:
        """Why it got the attempts it got, in words: the run's verdict and this scenario's own."""
        bar = f"{1 / self.alpha:g}"
        match self.verdict:
            case Decided(direction=direction, e=e):
                run = f"real change ({direction}), e = {e:.1f} ≥ {bar}"
            case Futile(e=e) | Undecided(e=e):
                run = f"undecided, e = {e:.2f} < {bar}"
        own = "" if self.own is None or not self.looked else f"; this scenario alone: e = {self.own.e:.2f}, {self.own.change}"
        match self.stop:
            case "decided":
                return f"comparison decided: {run}{own}"
            case "futile":
                return f"comparison futile (cannot be decided within max attempts): {run}{own}"
            case "most":
                return f"max attempts: {run}{own}"
            case "":
                match status:
                    case "stopped":
                        return f"budget spent: {run}{own}"
                    case "running":
                        return f"playing: {run}{own}"
                    case "interrupted":
                        return f"interrupted: {run}{own}"
                    case _:
                        return f"undecided: {run}{own}"


Why = Literal["narrow", "most", ""]


class Standing(msgspec.Struct, frozen=True):
    """One scenario under the rule: ``looked``, its attempts 1 to ``looked`` (all kept) that the
    rule was last decided on, and their ``tally`` and interval ``width``; ``wanted``, the attempts
    it should have now (its next checkpoint, or ``looked`` once it stopped); ``stop``, why it
    stopped (``narrow``, ``most``) or ``""`` while it goes on; ``missing``, the attempts up to
    ``wanted`` not kept yet."""

    scenario: str
    looked: int
    tally: Tally
    width: float
    wanted: int
    stop: Why
    target: float
    missing: tuple[int, ...] = ()

    def order(self) -> float:
        """Its place in a round's dealing: the widest interval first."""
        return -self.width

    def said(self, status: str) -> str:
        """Why it stopped, in words, in a run of ``status``: "narrow enough: width 0.18 ≤ 0.20",
        "max attempts", or why it did not (the budget, an interruption)."""
        match self.stop:
            case "narrow":
                return f"narrow enough: width {self.width:.3f} ≤ {self.target:g}"
            case "most":
                return f"max attempts: width {self.width:.3f} > {self.target:g}"
            case "":
                undecided = f"width {self.width:.3f} > {self.target:g}" if self.looked else "not looked at yet"
                match status:
                    case "stopped":
                        return f"budget spent: {undecided}"
                    case "running":
                        return f"playing: {undecided}"
                    case "interrupted":
                        return f"interrupted: {undecided}"
                    case _:
                        return f"undecided: {undecided}"


class Course(msgspec.Struct, frozen=True):
    """Every scenario's standing under the rule, as the attempts kept say; under ``Against``, the
    comparison's ``verdict`` as the rounds scored so far leave it."""

    standings: tuple[Standing, ...] | tuple[Watched, ...]
    verdict: Verdict | None = None

    def wanted(self) -> list[tuple[str, int]]:
        """The next round: the attempts the scenarios still going on lack up to their checkpoints
        (under ``Against``, to the end of the round), the most uncertain scenario's first (the
        asks' order), dealt one from each in turn (so a budget spent part way through a round has
        shared what it allowed)."""
        return list(self.dealt())

    def dealt(self) -> Iterator[tuple[str, int]]:
        """``wanted``, one at a time, made as they are walked (a round is up to half a run)."""
        going = sorted((one for one in self.standings if one.missing), key=lambda one: one.order())
        for turn in range(max((len(one.missing) for one in going), default=0)):
            for one in going:
                if turn < len(one.missing):
                    yield (one.scenario, one.missing[turn])

    def planned(self) -> int:
        """The attempts the rule wants so far: each stopped scenario's, each other's next checkpoint."""
        return sum(one.wanted for one in self.standings)

    def by_scenario(self) -> dict[str, Standing | Watched]:
        return {one.scenario: one for one in self.standings}

    def said(self, status: str) -> str:
        """The comparison's verdict in words, for a run played against a base; ``""`` for any other.
        ``status`` is the run's: a budget that stopped it is said as the reason there is no verdict."""
        bar = f"{1 / self.alpha():g}"
        match self.verdict:
            case None:
                return ""
            case Decided(direction=direction, e=e, difference=difference, attempts=attempts):
                return f"real change: {direction}, e = {e:.1f} ≥ {bar} after {attempts} judged attempts (Δ {difference:+.1%})"
            case Futile(e=e, attempts=attempts) if self.ending() == "most":
                return f"no verdict within max attempts: within noise so far, e = {e:.2f} < {bar} after {attempts} judged attempts"
            case Futile(e=e, attempts=attempts):
                # The course looks at the verdict without a budget (``Watch.verdict``'s ``left``):
                # futile here is the plan's, max attempts per scenario, never a budget's.
                return (
                    f"futile: no verdict can be reached within the attempts left, e = {e:.2f} < {bar} after {attempts} judged "
                    "attempts, even at either end of the change's 99% interval"
                )
            case Undecided(e=e, attempts=attempts) if status == "stopped":
                return f"no verdict within the budget: budget spent, e = {e:.2f} < {bar} after {attempts} judged attempts"
            case Undecided(e=e, attempts=attempts) if self.ending() == "most":
                return f"no verdict within max attempts: within noise so far, e = {e:.2f} < {bar} after {attempts} judged attempts"
            case Undecided(e=e, attempts=attempts):
                return f"no verdict yet ({status}): e = {e:.2f} < {bar} after {attempts} judged attempts"

    def ending(self) -> str:
        """Why the rule stopped the run (the same for every scenario under ``Against``), or ``""``."""
        return self.standings[0].stop if self.standings else ""

    def alpha(self) -> float:
        first = self.standings[0] if self.standings else None
        return first.alpha if isinstance(first, Watched) else 0.05


class Adaptive(msgspec.Struct, frozen=True):
    """The rule of a run whose attempts are spent where they decide something: every scenario
    gets ``least`` attempts first, then more in rounds until ``until`` holds for it or it has the
    run's ``attempts`` (``RunSpec.attempts``, the most)."""

    least: int
    until: Narrow | Against

    def __post_init__(self) -> None:
        if self.least < 1:
            raise ValueError("min_attempts: must be at least 1")

    def course(self, scenarios: Sequence[str], outcomes: Iterable[Outcome], most: int, trust: float) -> Course:
        """Where every scenario stands, from the attempts kept (each seen through ``trust``)."""
        return self.marked(scenarios, Marks(trust, outcomes), most)

    def marked(self, scenarios: Sequence[str], marks: Marks, most: int) -> Course:
        """Where every scenario stands, from the marks of the attempts kept: all the rule looks at."""
        return self.until.course(scenarios, marks.scenarios, self.least, most)

    def said(self, most: int) -> str:
        """The rule in words: "5 to 60 attempts per scenario, until its 95% interval is at most 0.3
        wide", "up to 60 attempts per scenario, until the comparison with bot/r1 is decided (α 0.05)"."""
        match self.until:
            case Narrow():
                span = f"{most}" if self.least >= most else f"{self.least} to {most}"
                return f"{span} attempts per scenario, {self.until.said()}"
            case Against():
                return f"up to {self.until.most(most)} attempts per scenario, {self.until.said()}"


class Rounds(msgspec.Struct, frozen=True):
    """A ``plan.Player`` that plays a run of an ``Adaptive`` rule: of the attempts the run's
    folder lacks (those of its most), the ones the rule wants, a round at a time, each round
    played by ``player`` in one call. It sees each attempt as it is recorded, and finds the next
    round from every attempt kept so far; it ends when the rule wants no more, or the budget lets
    no more attempts start. Minutes are counted from the start of the play, over all its rounds."""

    player: Player
    adaptive: Adaptive
    scenarios: tuple[str, ...]
    most: int
    trust: float = 0.0

    @property
    def budget(self) -> Budget | None:
        return self.player.budget

    def budgeted(self, budget: Budget | None) -> Rounds:
        return msgspec.structs.replace(self, player=self.player.budgeted(budget))

    async def run(self, planned: Playlist, journal: Journal, earlier: Iterable[Outcome] | Earlier = ()) -> Spending | None:
        """Play the rounds; what was spent when a budget stopped them (``None`` when the rule ended
        them: the run is finished though attempts of its most were never played).

        Nothing is held of an attempt kept but its mark (``Marks``: a byte each), and, with a
        budget, what the run has spent (``Spending``), which each round's player starts from
        (``Spending.spent``): a run of any size holds a few bytes an attempt."""
        if isinstance(earlier, Earlier):  # no player plays rounds within rounds: its course needs the attempts
            raise TypeError("adaptive rounds are found from the attempts kept, not from what they spent")
        lacking = _Lacking(planned, self.most)
        budget = self.player.budget
        spending: Spending | None = None
        if budget is None:
            marks = Marks(self.trust, earlier)
        else:  # one walk of the attempts kept: each marked as the budget counts it
            marks = Marks(self.trust)
            spending = budget.spending(marks.taken(earlier), asyncio.get_running_loop().time)
        seen: Journal = _Noted(journal, marks)
        if spending is not None:
            seen = BudgetedJournal(seen, spending)
        while True:
            wanted = _Round(self.adaptive.marked(self.scenarios, marks, self.most), lacking)
            if not wanted:
                # The rule ended the run: with a budget, what was spent of it (``reached`` says
                # whether that reached it), never a stop.
                return spending
            player = self.player
            if budget is not None and spending is not None and budget.minutes:
                # The player counts minutes from its own start: it is given what is left of them.
                player = player.budgeted(msgspec.structs.replace(budget, minutes=max(budget.minutes - spending.minutes(), 1e-9)))
            before = marks.count
            # A round's player lets an attempt start only while it fits what is left of the budget
            # (the whole run's cost and tokens, counted from every attempt kept): one it kept from
            # starting stops the rounds, and the run.
            played = await player.run(wanted, seen, () if spending is None else spending.spent())
            if spending is not None and played is not None and played.stopped() is not None and marks.count - before < len(wanted):
                return spending.following(played)
            if marks.count == before:
                raise Unplayed(f"a round of {len(wanted)} attempts ended with none recorded")


class Marked(Mapping[int, str]):
    """One scenario's attempts kept, by number, as the rule reads them: each one's status
    (``passed``, ``failed``, ``not_judged``), a byte an attempt (a plain class: marked as attempts
    are kept). What ``Narrow`` and ``Against`` decide on, and nothing more of an attempt."""

    __slots__ = ("_marks", "_count")

    STATUSES: ClassVar[tuple[str, ...]] = ("", "passed", "failed", "not_judged")  # by mark; 0: not kept
    _MARK: ClassVar[dict[str, int]] = {"passed": 1, "failed": 2, "not_judged": 3}

    def __init__(self) -> None:
        self._marks = bytearray()
        self._count = 0

    def kept(self, number: int, status: str) -> None:
        """Mark attempt ``number`` (from 1) with ``status``: a later mark of it replaces an earlier."""
        marks = self._marks
        if number >= len(marks):
            marks.extend(bytes(max(number + 1, 2 * len(marks)) - len(marks)))
        self._count += not marks[number]
        marks[number] = self._MARK[status]

    def __contains__(self, number: object) -> bool:
        return isinstance(number, int) and 0 <= number < len(self._marks) and self._marks[number] != 0

    def __getitem__(self, number: int) -> str:
        if not 0 <= number < len(self._marks) or not self._marks[number]:
            raise KeyError(number)
        return self.STATUSES[self._marks[number]]

    def __iter__(self) -> Iterator[int]:
        return (number for number, mark in enumerate(self._marks) if mark)

    def __len__(self) -> int:
        return self._count


class Marks:
    """Every scenario's attempts kept, each as its ``Marked`` status (seen through ``trust``): all
    a course is found from, so a run of ``--attempts auto`` holds a byte an attempt, not the
    attempts (a plain class: added to as attempts are kept). ``count`` is how many were added."""

    __slots__ = ("_trust", "scenarios", "count")

    def __init__(self, trust: float, outcomes: Iterable[Outcome] = ()) -> None:
        self._trust = trust
        self.scenarios: dict[str, Marked] = {}
        self.count = 0
        for outcome in outcomes:
            self.add(outcome)

    def add(self, outcome: Outcome) -> None:
        marked = self.scenarios.get(outcome.scenario)
        if marked is None:
            marked = self.scenarios[outcome.scenario] = Marked()
        marked.kept(outcome.attempt, outcome.status(self._trust))
        self.count += 1

    def taken(self, outcomes: Iterable[Outcome]) -> Iterator[Outcome]:
        """``outcomes`` as they are, each marked here as it goes by: one walk of a run's kept
        attempts (read again from its file) both marks them and counts what they spent."""
        for outcome in outcomes:
            self.add(outcome)
            yield outcome


class _Round:
    """A round's attempts (a ``Playlist``): those the course wants that are lacking, in its order,
    each ``Planned`` made as it is walked, none held (a round is up to half a run). A plain class:
    nothing in it changes once made."""

    __slots__ = ("_course", "_lacking", "_count")

    def __init__(self, course: Course, lacking: _Lacking) -> None:
        self._course = course
        self._lacking = lacking
        self._count = sum(1 for _ in self)

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Planned]:
        for key in self._course.dealt():
            one = self._lacking.planned(key)
            if one is not None:
                yield one


class _Lacking:
    """Which attempts of a round's ``Playlist`` are still to play, and each one's ``Planned``:
    per scenario, its first ``Planned`` and a byte an attempt up to ``most`` (a dict of every planned
    attempt was about 150 bytes each). A plain class: nothing in it changes once made."""

    __slots__ = ("_first", "_marks")

    def __init__(self, planned: Playlist, most: int) -> None:
        self._first: dict[str, Planned] = {}  # each scenario's first attempt: the others are made from it
        self._marks: dict[str, bytearray] = {}
        for one in planned:
            name = one.scenario.id
            marks = self._marks.get(name)
            if marks is None:
                self._first[name] = one
                marks = self._marks[name] = bytearray(most + 1)
            if 1 <= one.attempt <= most:
                marks[one.attempt] = 1

    def planned(self, key: tuple[str, int]) -> Planned | None:
        """The attempt named ``key`` (its scenario's id and number), when it is lacking; else ``None``."""
        name, number = key
        marks = self._marks.get(name)
        if marks is None or not 1 <= number < len(marks) or not marks[number]:
            return None
        return msgspec.structs.replace(self._first[name], attempt=number)


class _Noted(msgspec.Struct, frozen=True):
    """A journal that marks each attempt in ``marks`` before passing it on."""

    journal: Journal
    marks: Marks

    def record(self, outcome: Outcome) -> None:
        self.journal.record(outcome)
        self.marks.add(outcome)
