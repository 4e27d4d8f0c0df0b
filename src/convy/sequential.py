"""A comparison against a base run decided while the candidate plays (issue 13, "until the
comparison is decided"), with a false-alarm rate that holds however often one looks and whenever
one stops.

The base run is fixed: its attempts were played already. The candidate plays in rounds: a round
gives some scenarios one *block* each, a few more attempts. The null hypothesis is convy's
comparison's: in every scenario the candidate's true pass rate is the base's (``significance.Stratified``
tests the same null at a fixed size). The evidence against it is an e-process, built from the
safe test of two proportions of Turner, Ly and Grünwald (2024): each block pairs the candidate's
new attempts with a share of the base's attempts, taken in the order they were played, and scores
them with

    e = Π qA^x (1−qA)^(1−x) over the block's base attempts · Π qB^y (1−qB)^(1−y) over its candidate
        attempts, divided by Π q0^z (1−q0)^(1−z) over all of them, q0 = (mA·qA + mB·qB) / (mA + mB),

where qA and qB are guesses of the two rates made before the block (from the blocks already
scored) and mA, mB the block's attempts of each run. With no change, whatever the common rate p,
the mean of e is at most 1 (weighted AM–GM; docs/statistics.md); so the product over blocks and
scenarios is a test supermartingale for every p, and by Ville's inequality it ever reaches 1/α
with probability at most α: looks after every round, stopping early, or going on are all covered.

``Sequential`` is the rule; ``Sequential.started`` gives a ``Watch``, the comparison under way,
which a run loop asks for the next round (``Watch.asks``), tells what the round gave
(``Watch.played``) and asks for the ``verdict``: ``Decided``, ``Undecided`` or ``Futile``.
Standard library only.
"""

from __future__ import annotations

import math
from statistics import fmean
from typing import ClassVar, Literal

import msgspec

from convy.stats import Tally

EDGE = 0.005  # guesses of a rate are kept within [EDGE, 1 − EDGE]
FAR = 2.576  # the futility forecast takes the change at the edge of its 99% interval


class Sequential(msgspec.Struct, frozen=True):
    """The rule of a comparison decided while it plays.

    ``alpha``: the false-alarm rate held under optional stopping. ``most``: the candidate's
    attempts per scenario at most (the plan; the base's attempts are spread over them, so a run
    that stops early has used only the matching share of the base, and one that goes past it has
    no base left to compare its extra attempts with). ``prior``: how many attempts' worth of
    evidence the guess of a change needs before it is trusted fully (a shrinkage to "no change").
    """

    alpha: float = 0.05
    most: int = 50
    prior: float = 4.0
    ratio: int = 0

    # The bound a new comparison plays under (``ratio``): a scenario's candidate gets at most this
    # many times its base's judged attempts. Each block holds one base attempt or more, so past it
    # more candidate attempts only make each block larger, each adding less evidence than the one
    # before, and the first block of a base of 3 (scored with no guess, its evidence lost) is a third
    # of the plan however large: a base of 3 against a most of 60 played blocks of 20. At 4× a base
    # of 3 plays blocks of 4; a seeded simulation (tests/unit/test_against_plan.py) finds it deciding a
    # fall to 50% as often as the unbounded plan, where 2× misses some.
    RATIO: ClassVar[int] = 4

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError("alpha must be between 0 and 1")
        if self.most < 1:
            raise ValueError("most must be at least 1")
        if self.prior <= 0:
            raise ValueError("prior must be positive")
        if self.ratio < 0:
            raise ValueError("ratio must be 0 (no bound) or more")

    def fitted(self, base: int) -> int:
        """The candidate's attempts at most in a scenario whose base has ``base`` judged attempts:
        ``most``, bounded at ``ratio`` times ``base`` when a ratio is set (0: the rule of runs kept
        before the bound, which played to ``most`` whatever the base). Fixed before anything is
        played, so the comparison's validity is untouched: the plan is only smaller."""
        return min(self.most, self.ratio * base) if self.ratio and base else self.most

    def started(self, base: dict[str, tuple[bool, ...]]) -> Watch:
        """A comparison against ``base``: each scenario's judged base attempts, passed or not, in
        the order they were played (by attempt number, never by the time they ended)."""
        return Watch(self, tuple(Track(scenario, outcomes) for scenario, outcomes in base.items()))


class Track(msgspec.Struct, frozen=True):
    """One scenario's part: its base attempts, how many of them the scored blocks used and
    passed, the candidate's judged attempts and passes, and its own log e (the scenario alone)."""

    scenario: str
    base: tuple[bool, ...]
    used: int = 0
    used_passed: int = 0
    judged: int = 0
    passed: int = 0
    log_e: float = 0.0

    def uses(self, judged: int, most: int) -> int:
        """The base attempts in use once the candidate has ``judged`` attempts: the base spread
        evenly over ``most``, rounded up so that each block has one."""
        return min(len(self.base), math.ceil(judged * len(self.base) / most))

    def block(self, most: int) -> int:
        """The candidate's attempts in this scenario's next block: enough for one base attempt
        or more (one when the base has at least ``most``); 0 when the plan is played out or
        there is no base."""
        if not self.base or self.judged >= most or self.used >= len(self.base):
            return 0
        size = max(1, math.ceil(most / len(self.base)))
        return min(size, most - self.judged)

    def rates(self) -> tuple[float, float, float, float]:
        """Smoothed rates of the scored data (base used, candidate) and their weight h = mA·mB/(mA+mB)
        and pooled rate."""
        a, m, c, n = self.used_passed, self.used, self.passed, self.judged
        base = (a + 0.5) / (m + 1)
        candidate = (c + 0.5) / (n + 1)
        weight = m * n / (m + n) if m and n else 0.0
        pooled = (a + c + 0.5) / (m + n + 1)
        return base, candidate, weight, pooled

    def guesses(self, shift: float) -> tuple[float, float]:
        """qA and qB for the next block, ``shift`` apart around the pooled rate (so that their
        mean weighted by the data is the pooled rate); equal — no bet — while the scored data
        all passed or all failed, or are missing on one side."""
        a, m, c, n = self.used_passed, self.used, self.passed, self.judged
        _, _, weight, pooled = self.rates()
        if weight == 0 or a + c in (0, m + n):
            return pooled, pooled
        low, high = EDGE, 1 - EDGE
        q_a = min(high, max(low, pooled - shift * n / (m + n)))
        q_b = min(high, max(low, pooled + shift * m / (m + n)))
        return q_a, q_b

    def scored(self, judged: int, passed: int, most: int, prior: float, q_a: float, q_b: float) -> tuple[Track, float, float]:
        """The track after a block of ``judged`` candidate attempts, ``passed`` of them passing,
        with the base attempts that come with them; and the block's log e under the run's
        guesses ``(q_a, q_b)`` and under the scenario's own."""
        uses = self.uses(self.judged + judged, most)
        taken = self.base[self.used : uses]
        base_passed = sum(taken)
        q_own = self.guesses(self.own_shift(prior))
        moved = msgspec.structs.replace(
            self,
            used=uses,
            used_passed=self.used_passed + base_passed,
            judged=self.judged + judged,
            passed=self.passed + passed,
        )
        run = Block(len(taken), base_passed, judged, passed).log_e(q_a, q_b)
        own = Block(len(taken), base_passed, judged, passed).log_e(*q_own)
        return msgspec.structs.replace(moved, log_e=self.log_e + own), run, own

    def own_shift(self, prior: float) -> float:
        """The scenario's own guess of its change, shrunk to 0 by ``prior``."""
        base, candidate, weight, _ = self.rates()
        return weight * (candidate - base) / (weight + prior)

    def difference(self) -> float | None:
        """The candidate's rate less the whole base's, on the candidate's judged attempts."""
        if not self.judged or not self.base:
            return None
        return self.passed / self.judged - sum(self.base) / len(self.base)

    def variance(self) -> float:
        """The variance of that difference, each rate smoothed (add one pass and one failure) so
        that 10 of 10 still has some."""
        total = 0.0
        for passed, judged in ((sum(self.base), len(self.base)), (self.passed, self.judged)):
            rate = (passed + 1) / (judged + 2)
            total += rate * (1 - rate) / max(judged, 1)
        return total


class Block(msgspec.Struct, frozen=True):
    """One block of one scenario: ``base`` base attempts (``base_passed`` passed) and
    ``candidate`` candidate attempts (``candidate_passed`` passed), all of them new."""

    base: int
    base_passed: int
    candidate: int
    candidate_passed: int

    def log_e(self, q_a: float, q_b: float) -> float:
        """log e of the block under the guesses ``q_a``, ``q_b`` (0 when it is empty on a side:
        then q0 is the other side's guess and e is 1)."""
        total = self.base + self.candidate
        if self.base == 0 or self.candidate == 0 or q_a == q_b:
            return 0.0
        q0 = (self.base * q_a + self.candidate * q_b) / total
        return (
            self.base_passed * math.log(q_a / q0)
            + (self.base - self.base_passed) * math.log((1 - q_a) / (1 - q0))
            + self.candidate_passed * math.log(q_b / q0)
            + (self.candidate - self.candidate_passed) * math.log((1 - q_b) / (1 - q0))
        )


class Ask(msgspec.Struct, frozen=True):
    """Play ``attempts`` more attempts of ``scenario`` in the next round; ``gain``, how much one
    block there narrows the run's difference (its variance drop), which orders the asks."""

    scenario: str
    attempts: int
    gain: float


class Decided(msgspec.Struct, frozen=True, tag=True):
    """The change is real: the e-value reached 1/α. ``direction`` from the difference of the
    mean scenario rates (convy's pass rate)."""

    direction: Literal["better", "worse"]
    e: float
    difference: float
    attempts: int


class Undecided(msgspec.Struct, frozen=True, tag=True):
    """Not decided yet: play on."""

    e: float
    difference: float | None
    attempts: int


class Futile(msgspec.Struct, frozen=True, tag=True):
    """The verdict cannot be reached with what is left to play: ``reason`` says why (every
    scenario played its plan, the budget is spent, or even the edge of the difference's interval
    would not get there with the attempts left)."""

    reason: str
    e: float
    difference: float | None
    attempts: int


class ScenarioVerdict(msgspec.Struct, frozen=True):
    """One scenario's own verdict: its e-value, and ``change`` decided by e-BH over scenarios."""

    scenario: str
    e: float
    difference: float | None
    change: Literal["better", "worse", "same"]


class Watch(msgspec.Struct, frozen=True):
    """A comparison under way: the rule, each scenario's track, and the run's log e (every
    block of every scenario, scored with a shift shared by the scenarios)."""

    rule: Sequential
    tracks: tuple[Track, ...]
    log_e: float = 0.0
    rounds: int = 0

    def attempts(self) -> int:
        return sum(track.judged for track in self.tracks)

    def most(self, track: Track) -> int:
        """The candidate's attempts at most in ``track``'s scenario (``Sequential.fitted``)."""
        return self.rule.fitted(len(track.base))

    def flipped(self) -> int | None:
        """The candidate's attempts after which this comparison, not yet played, decides a change
        of every scenario from passing to failing (or back): each block the opposite of its
        base's usual outcome (failing where the base mostly passed), every attempt judged. ``None``
        when the plan never decides even that: the base is too small to decide anything."""
        watch = self
        while not isinstance(verdict := watch.verdict(), Decided):
            asks = watch.asks()
            if not asks:
                return None
            tallies: dict[str, Tally] = {}
            for ask in asks:
                track = next(one for one in watch.tracks if one.scenario == ask.scenario)
                tallies[ask.scenario] = Tally(0 if 2 * sum(track.base) >= len(track.base) else ask.attempts, ask.attempts)
            watch = watch.played(tallies)
        return verdict.attempts

    def reach(self) -> float | None:
        """The smallest change of every scenario's pass rate (either way, clamped at 0 and 1) that
        the plan could decide at all, by an optimistic forecast: the log e the attempts after each
        scenario's first block would add (the first is scored with no guess: its evidence is lost)
        were the guesses right from then on, the sum of their Kullback–Leibler divergences from
        the pooled rate, against log 1/α. A change under it cannot be decided with this base;
        one over it may be, and needs luck near it. ``None`` when no change can be."""
        threshold = math.log(1 / self.rule.alpha)

        def gain(shift: float) -> float:
            total = 0.0
            for track in self.tracks:
                most = self.most(track)
                first = track.block(most)
                if not first:
                    continue
                base_left = len(track.base) - track.uses(first, most)
                candidate_left = most - first
                if base_left <= 0 or candidate_left <= 0:
                    continue
                # The base's rate as played, not smoothed: a base that passed 3 of 3 has no room
                # above it, and a smoothed 0.875 would let a "rise" of 12 points look decidable.
                rate = sum(track.base) / len(track.base)
                after = min(1.0, max(0.0, rate + shift))
                pooled = (base_left * rate + candidate_left * after) / (base_left + candidate_left)
                total += base_left * Divergence(rate, pooled).nats() + candidate_left * Divergence(after, pooled).nats()
            return total

        found: list[float] = []
        for sign in (-1.0, 1.0):
            if gain(sign) < threshold:
                continue
            low, high = 0.0, 1.0
            for _ in range(40):
                middle = (low + high) / 2
                low, high = (low, middle) if gain(sign * middle) >= threshold else (middle, high)
            found.append(high)
        return min(found) if found else None

    def shift(self) -> float:
        """The shared guess of the change: the scored differences weighted by h, shrunk to 0 by
        ``prior``."""
        total = weighted = 0.0
        for track in self.tracks:
            base, candidate, weight, _ = track.rates()
            total += weight
            weighted += weight * (candidate - base)
        return weighted / (total + self.rule.prior)

    def asks(self, most: int | None = None) -> tuple[Ask, ...]:
        """The next round: one block for each scenario with any left, the ones that narrow the
        run's difference most first; only the first ``most`` when given. A round is scored as a
        whole: play every ask of it, then call ``played`` once. A loop that wants more attempts
        under way at once may play a multiple of an ask's attempts: the block is then larger and
        just as valid (its size is fixed before its outcomes are seen); it only looks less often."""
        found: list[Ask] = []
        for track in self.tracks:
            size = track.block(self.most(track))
            if size == 0:
                continue
            rate = (track.passed + 1) / (track.judged + 2)
            gain = rate * (1 - rate) * (1 / max(track.judged, 1) - 1 / (track.judged + size)) if track.judged else math.inf
            found.append(Ask(track.scenario, size, gain))
        found.sort(key=lambda ask: -ask.gain)
        return tuple(found if most is None else found[:most])

    def played(self, tallies: dict[str, Tally]) -> Watch:
        """The watch after a round: for each scenario played, its judged attempts and passes
        (every attempt asked, judged or not, must have ended; not judged ones are left out). The
        guesses come from the blocks scored before the round, so the round's blocks are all
        scored with them."""
        shift = self.shift()
        tracks: list[Track] = []
        log_e = self.log_e
        for track in self.tracks:
            tally = tallies.get(track.scenario)
            if tally is None or tally.judged == 0:
                tracks.append(track)
                continue
            q_a, q_b = track.guesses(shift)
            moved, run, _ = track.scored(tally.judged, tally.passed, self.most(track), self.rule.prior, q_a, q_b)
            tracks.append(moved)
            log_e += run
        unknown = set(tallies) - {track.scenario for track in self.tracks}
        if unknown:
            raise ValueError(f"scenarios not in the base: {', '.join(sorted(unknown))}")
        return Watch(self.rule, tuple(tracks), log_e, self.rounds + 1)

    def e(self) -> float:
        return math.exp(min(self.log_e, 700.0))

    def difference(self) -> float | None:
        """The mean over scenarios of candidate rate less base rate (scenarios the candidate has
        played): the change of convy's pass rate."""
        found = [one for one in (track.difference() for track in self.tracks) if one is not None]
        return fmean(found) if found else None

    def verdict(self, left: int | None = None) -> Decided | Undecided | Futile:
        """Decided once e ≥ 1/α. Futile when nothing is left to play (``left``, the attempts the
        budget still allows, is 0, or every scenario played its plan) or when even either end
        of the difference's 99% interval, played out over what is left, would not bring e to 1/α
        (an optimistic forecast: stopping for it never raises the false-alarm rate, only costs
        power). Else undecided."""
        attempts = self.attempts()
        difference = self.difference()
        threshold = math.log(1 / self.rule.alpha)
        if self.log_e >= threshold:
            sign = difference if difference else self.shift()
            return Decided("worse" if sign < 0 else "better", self.e(), difference or 0.0, attempts)
        remaining = sum(max(0, self.most(track) - track.judged) for track in self.tracks if track.block(self.most(track)))
        if remaining == 0:
            return Futile("every scenario played its plan", self.e(), difference, attempts)
        if left == 0:
            return Futile("budget spent", self.e(), difference, attempts)
        forecast = self.forecast(left)
        if forecast is not None and self.log_e + forecast < threshold:
            return Futile(
                "cannot be reached within the attempts left: even a change at either end of its interval would not decide it",
                self.e(),
                difference,
                attempts,
            )
        return Undecided(self.e(), difference, attempts)

    def forecast(self, left: int | None = None) -> float | None:
        """The log e still to gain if the change were at either end of the difference's 99%
        interval, whichever gains more, and the guesses were right from now on: for each scenario, the base and
        candidate attempts left, each adding its Kullback–Leibler divergence from the block's
        pooled rate; scaled down when the budget allows fewer attempts than the plan. ``None``
        before the candidate has played anything."""
        played = [track for track in self.tracks if track.judged and track.base]
        if not played:
            return None
        difference = fmean(track.difference() or 0.0 for track in played)
        error = math.sqrt(sum(track.variance() for track in played)) / len(played)
        # Either end of the change's 99% interval, each clamped at a rate of 0 or 1, and the more
        # hopeful of the two: the sign of the first blocks is noise (a lucky first pass against a
        # base near 1 points up, where there is no room), and a forecast that looked only the way
        # the change pointed once called a real drop futile after one attempt.
        gain = max(self._gain(difference - FAR * error), self._gain(difference + FAR * error))
        remaining = sum(max(0, self.most(track) - track.judged) for track in self.tracks if track.base)
        if left is not None and remaining:
            gain *= min(1.0, left / remaining)
        return gain

    def _gain(self, shift: float) -> float:
        """The log e the attempts left would add if each scenario's candidate rate were its
        base's shifted by ``shift`` (clamped to [0, 1])."""
        gain = 0.0
        for track in self.tracks:
            if not track.base:
                continue
            base_left = len(track.base) - track.used
            candidate_left = max(0, self.most(track) - track.judged)
            if base_left == 0 or candidate_left == 0:
                continue
            rate = (sum(track.base) + 0.5) / (len(track.base) + 1)
            after = min(1.0, max(0.0, rate + shift))
            pooled = (base_left * rate + candidate_left * after) / (base_left + candidate_left)
            gain += base_left * Divergence(rate, pooled).nats() + candidate_left * Divergence(after, pooled).nats()
        return gain

    def scenarios(self) -> tuple[ScenarioVerdict, ...]:
        """Each scenario's own verdict, its e-value from its own blocks (guesses from its data
        alone), decided by e-BH (Wang and Ramdas 2022) at α over the scenarios: the k largest
        e-values are changes, for the largest k with the k-th largest ≥ S/(kα). Valid whatever
        the dependence between scenarios, and at any stopping time."""
        count = len(self.tracks)
        order = sorted(range(count), key=lambda index: -self.tracks[index].log_e)
        changed = 0
        for rank, index in enumerate(order, start=1):
            if self.tracks[index].log_e >= math.log(count / (rank * self.rule.alpha)):
                changed = rank
        real = set(order[:changed])
        found: list[ScenarioVerdict] = []
        for index, track in enumerate(self.tracks):
            difference = track.difference()
            change: Literal["better", "worse", "same"] = "same"
            if index in real:
                change = "worse" if (difference if difference else track.own_shift(self.rule.prior)) < 0 else "better"
            found.append(ScenarioVerdict(track.scenario, math.exp(min(track.log_e, 700.0)), difference, change))
        return tuple(found)


class Divergence(msgspec.Struct, frozen=True):
    """The Kullback–Leibler divergence of Bernoulli(p) from Bernoulli(q), in nats."""

    p: float
    q: float

    def nats(self) -> float:
        p, q = self.p, min(1 - 1e-12, max(1e-12, self.q))
        total = 0.0
        if p > 0:
            total += p * math.log(p / q)
        if p < 1:
            total += (1 - p) * math.log((1 - p) / (1 - q))
        return total
