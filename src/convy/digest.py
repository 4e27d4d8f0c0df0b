"""A run's attempts walked once into what its report, verdict and totals need, holding none of them.

``report.Summary`` used to hold every attempt (about 8 KB each read back whole, 4-5 KB unsaid) and
walk them again for each table and tile. ``Digest`` walks them once, in the file's order, and
keeps of each attempt an ``AttemptDigest`` — what the attempts table, the verdict and the tiles' counts need:
its scenario, number, status, why, cause, stop, turns, seconds and the marks of its decisions, a
few hundred bytes — and adds everything else as it goes: each scenario's counts and claims and
what its requests spent (``counted.Counting``, the running totals ``Counted`` keeps), each request's
size and each turn's time in compact float arrays (``array('d')``, 8 bytes a value) for the
spreads' percentiles, and each attempt's times in arrays summed once at the end, in the file's
order as ``sum`` over the attempts summed them (Python 3.12 and later sum floats with a
compensation a running ``+=`` does not have: the same values summed by ``sum`` give the same
figure).

``Attempts`` is some of the run's attempts as a sequence that holds only their rows: walked, it
reads each attempt again from where the run holds it (the tuple read whole, or the file for a
``placed.Placed``), one at a time, for the outputs that want an attempt's claims or errors
(JUnit, the Markdown summary, the judging section, a comparison).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, Literal, TypeVar, overload

import msgspec

from convy.attempt import Attempt
from convy.causes import Cause
from convy.counted import Count, Counting
from convy.judge import Confidence, Failed, NoVerdict, Verdict
from convy.outcome import Outcome
from convy.placed import Placed
from convy.ranked import InOrder, Ranked, Spill
from convy.records import RunSpec

Status = Literal["passed", "failed", "not_judged"]
T = TypeVar("T")


class AttemptDigest(msgspec.Struct, frozen=True, gc=False):
    """One attempt as the tables and the verdict need it. ``index`` is its place among the run's
    attempts (the file's order: ``Read.outcomes``); ``marks``, each decision it trusted, as its
    claim's number among its scenario's ``Column.texts`` times two, plus one when it held (a claim
    decided twice in one attempt: the later one counts, as a dict of them kept it)."""

    index: int
    scenario: str
    attempt: int
    status: Status
    why: str
    cause: Cause | None
    stop: str
    turns: int
    seconds: float
    marks: tuple[int, ...] = ()

    def marked(self, texts: tuple[str, ...]) -> dict[str, Literal["held", "failed"]]:
        """Its marks by claim text: held or failed, for each claim it decided and trusted."""
        return {texts[mark >> 1]: "held" if mark & 1 else "failed" for mark in self.marks}


class Column(msgspec.Struct, frozen=True):
    """One scenario's attempts: their rows by attempt number, their counts (``counted.Count``:
    statuses, claims in their order, what they spent by who), the claims' texts ``AttemptDigest.marks``
    number, and its agent's request sizes and answer times, sorted (for its spreads and the run's)."""

    rows: Sequence[AttemptDigest]  # a ``Rows``: each made again as it is asked for
    count: Count
    texts: tuple[str, ...]
    sizes: Ranked
    seconds: Ranked


class _Numbered(Generic[T]):
    """Values numbered as first met (a plain class, filled as a run's rows are): ``values[n]``
    is the one numbered ``n``."""

    __slots__ = ("_numbers", "values")

    def __init__(self) -> None:
        self.values: list[T] = []
        self._numbers: dict[T, int] = {}

    def number(self, value: T) -> int:
        number = self._numbers.get(value)
        if number is None:
            number = self._numbers[value] = len(self.values)
            self.values.append(value)
        return number


class _Codes:
    """Whole numbers from 0 in the narrowest array that holds every one so far: a byte each while
    they are under 256, two while under 65,536, then four (a plain class, filled as a run's rows
    are: ``values`` is made wider, once, when a number outgrows it)."""

    __slots__ = ("values",)

    def __init__(self) -> None:
        self.values: array[int] = array("B")

    def append(self, number: int) -> None:
        try:
            self.values.append(number)
        except OverflowError:
            self.values = array("H" if number < 1 << 16 else "I", self.values)
            self.values.append(number)


class _Table:
    """Every attempt's ``AttemptDigest``, held as columns: its number, turns and seconds in arrays,
    and the rest of it — its scenario, status, why, cause, stop and marks — as the number of that
    combination among those met, most runs having few (an attempt of a scenario most often
    passes or fails as its others do): about 12 bytes an attempt (a byte or two for the
    combination, two for the number, one for the turns, eight for the seconds), where an array
    of four bytes for each text and the marks was about 40, and an ``AttemptDigest`` each, with
    its marks and numbers, about 250. A plain class, filled once by ``Digest.of`` and not changed
    after."""

    __slots__ = ("attempts", "kinds", "seconds", "turns")

    def __init__(self) -> None:
        # A row's index is its place: rows are added in the file's order (``add``).
        self.attempts, self.turns, self.seconds = _Codes(), _Codes(), array("d")
        # Each row's (scenario, status, why, cause, stop, marks) by number: the values, each row's number.
        self.kinds: tuple[_Numbered[tuple[str, Status, str, Cause | None, str, tuple[int, ...]]], _Codes] = (_Numbered(), _Codes())

    def __len__(self) -> int:
        return len(self.seconds)

    def add(self, row: AttemptDigest) -> None:
        self.attempts.append(row.attempt)
        self.turns.append(row.turns)
        self.seconds.append(row.seconds)
        self.kinds[1].append(self.kinds[0].number((row.scenario, row.status, row.why, row.cause, row.stop, row.marks)))

    def row(self, at: int) -> AttemptDigest:
        scenario, status, why, cause, stop, marks = self.kinds[0].values[self.kinds[1].values[at]]
        return AttemptDigest(at, scenario, self.attempts.values[at], status, why, cause, stop, self.turns.values[at], self.seconds[at], marks)


class Rows(Sequence[AttemptDigest]):
    """Some rows of a ``_Table``, by their places in it (a plain class: a ``Sequence`` the standard
    library's way; nothing in it changes once made): each ``AttemptDigest`` is made again as it is asked for
    and let go by whoever walked it, so a run's rows are never held as objects."""

    __slots__ = ("_at", "_table")

    def __init__(self, table: _Table, at: array[int] | range) -> None:
        self._table, self._at = table, at

    def __len__(self) -> int:
        return len(self._at)

    @overload
    def __getitem__(self, index: int) -> AttemptDigest: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[AttemptDigest]: ...

    def __getitem__(self, index: int | slice) -> AttemptDigest | Sequence[AttemptDigest]:
        if isinstance(index, slice):
            return Rows(self._table, self._at[index])
        return self._table.row(self._at[index])

    def __iter__(self) -> Iterator[AttemptDigest]:
        row = self._table.row
        for at in self._at:
            yield row(at)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Rows):
            return len(self) == len(other) and all(one == two for one, two in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Rows({len(self._at)})"


class Digest(msgspec.Struct, frozen=True):
    """A run's attempts walked once: each one's ``AttemptDigest`` in the file's order, each scenario's
    ``Column`` (in the order ``Summary.by_scenario`` gives: the spec's scenarios, then any other
    by id), the user's and the judge's request sizes and times, sorted, and each attempt's times, by part,
    in the file's order (``times``: wall, agent, user, judge, waiting, unaccounted)."""

    rows: Sequence[AttemptDigest]  # a ``Rows``, in the file's order
    columns: dict[str, Column]
    user_sizes: Ranked
    user_seconds: Ranked
    judge_sizes: Ranked
    judge_seconds: Ranked
    times: tuple[InOrder, ...]
    # Whether any judge's decision has votes or a quote: else the judging section has nothing to
    # show (``agreement.Consensus`` gives none), and the attempts need not be walked again for it.
    judging: bool = False

    @classmethod
    def of(cls, outcomes: Iterable[Outcome], spec: RunSpec) -> Digest:
        trust = spec.trust
        table = _Table()
        counting: dict[str, Counting] = {}
        texts: dict[str, dict[str, int]] = {}
        spill = Spill()  # the file values go to once a run has more than a few thousand attempts
        sizes: dict[str, Ranked] = {}
        seconds: dict[str, Ranked] = {}
        user_sizes, user_seconds, judge_sizes, judge_seconds = (Ranked(spill) for _ in range(4))
        times = tuple(InOrder(spill) for _ in range(6))
        wall, agent_time, user_time, judge_time, waiting, unaccounted = times
        placed: dict[str, array[int]] = {}  # each scenario's rows, by their places in the file
        interned: dict[str, str] = {}  # one string object for each scenario id and stop, not one a row
        judging = False
        for index, outcome in enumerate(outcomes):
            attempt = Attempt(outcome, trust)
            scenario = interned.setdefault(outcome.scenario, outcome.scenario)
            if scenario not in counting:
                counting[scenario], texts[scenario] = Counting(), {}
                sizes[scenario], seconds[scenario] = Ranked(spill), Ranked(spill)
            counting[scenario].add(attempt)
            placed.setdefault(scenario, array("I")).append(index)
            turns = outcome.transcript.turns
            table.add(
                AttemptDigest(
                    index,
                    scenario,
                    outcome.attempt,
                    attempt.status(),
                    attempt.why(),
                    attempt.cause(),
                    interned.setdefault(outcome.stop, outcome.stop),
                    len(turns),
                    outcome.seconds,
                    _marks(outcome, trust, texts[scenario]),
                )
            )
            spent = attempt.sizes()
            sizes[scenario].extend(spent.agent)
            seconds[scenario].extend([turn.agent_seconds for turn in turns])
            user_sizes.extend(spent.user)
            user_seconds.extend([turn.user_seconds for turn in turns if not turn.scripted])
            judge_sizes.extend(spent.judge)
            if outcome.judge_requests:
                judge_seconds.append(outcome.judge_seconds)
            if not judging:
                match outcome.result:
                    case Verdict(claims=claims):
                        judging = any(claim.by == "judge" and (claim.votes or claim.evidence is not None) for claim in claims)
                    case _:
                        pass
            time = attempt.time()
            wall.append(time.wall)
            agent_time.append(time.agent)
            user_time.append(time.user)
            judge_time.append(time.judge)
            waiting.append(time.waiting)
            unaccounted.append(time.unaccounted)
        # Each scenario's rows by attempt number (rows of one number in the file's order), the
        # spec's scenarios first, then any other by id; sorted a scenario at a time.
        grouped: dict[str, array[int]] = {scenario.id: array("I") for scenario in spec.scenarios}
        grouped |= {scenario: array("I") for scenario in sorted(placed) if scenario not in grouped}
        number = table.attempts.values.__getitem__
        for scenario, at in placed.items():
            grouped[scenario] = array("I", sorted(at, key=number))
        columns = {
            scenario: Column(
                Rows(table, found),
                counting[scenario].count() if scenario in counting else Count(),
                tuple(texts.get(scenario, {})),
                sizes.get(scenario) or Ranked(spill),
                seconds.get(scenario) or Ranked(spill),
            )
            for scenario, found in grouped.items()
        }
        return cls(
            Rows(table, range(len(table))),
            columns,
            user_sizes,
            user_seconds,
            judge_sizes,
            judge_seconds,
            times,
            judging,
        )


def _marks(outcome: Outcome, trust: float, texts: dict[str, int]) -> tuple[int, ...]:
    """An attempt's marks (``AttemptDigest.marks``), each claim numbered in ``texts`` as first met: what
    ``Summary._decided`` marks, a claim of a verdict it trusted, or a check code decided though a
    model failed, that it trusted."""
    marks: list[int] = []
    match outcome.result:
        case Verdict(claims=claims):
            for claim in claims:
                confidence = claim.confidence
                if not claim.doubt and (type(confidence) is not Confidence or confidence.value >= trust):
                    marks.append(texts.setdefault(claim.claim, len(texts)) * 2 + claim.held)
        case NoVerdict(checks=checks):
            for claim in checks:
                if not claim.doubt and claim.trusted(trust):
                    marks.append(texts.setdefault(claim.claim, len(texts)) * 2 + claim.held)
        case Failed():
            pass
    return tuple(marks)


class Attempts(Sequence[Attempt]):
    """Some of a run's attempts, held as their rows only (a plain class: a ``Sequence`` the
    standard library's way; nothing in it changes once made): walked, each is read again from
    ``outcomes`` — the run's attempts read whole, or a ``Placed``, whose lines are read again from
    the file, unsaid, one at a time."""

    __slots__ = ("_outcomes", "_rows", "_trust")

    def __init__(self, rows: Sequence[AttemptDigest], outcomes: Sequence[Outcome], trust: float) -> None:
        self._rows, self._outcomes, self._trust = rows, outcomes, trust

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> Attempt: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Attempt]: ...

    def __getitem__(self, index: int | slice) -> Attempt | Sequence[Attempt]:
        if isinstance(index, slice):
            return Attempts(self._rows[index], self._outcomes, self._trust)
        return Attempt(self._outcomes[self._rows[index].index], self._trust)

    def __iter__(self) -> Iterator[Attempt]:
        trust = self._trust
        outcomes = self._outcomes
        match outcomes:
            case Placed():
                for outcome in outcomes.chosen([row.index for row in self._rows]):
                    yield Attempt(outcome, trust)
            case _:
                for row in self._rows:
                    yield Attempt(outcomes[row.index], trust)

    def said(self, index: int) -> Attempt:
        """The attempt at ``index`` in full: its dialogue's words too (an attempt walked from a
        ``Placed`` is unsaid)."""
        outcomes = self._outcomes
        row = self._rows[index]
        match outcomes:
            case Placed():
                return Attempt(next(outcomes.full((row.index,))), self._trust)
            case _:
                return Attempt(outcomes[row.index], self._trust)

    def __repr__(self) -> str:
        return f"Attempts({len(self._rows)})"
