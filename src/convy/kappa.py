"""Agreement beyond chance: Cohen's κ of two deciders, Fleiss' κ of a panel, with the standard library only."""

from __future__ import annotations

import math
from statistics import fmean

import msgspec

from convy.stats import Z95, Interval


class CohenKappa(msgspec.Struct, frozen=True):
    """Cohen's κ of two raters over the same items, from their table of counts: ``table[i][j]``
    items the first rater put in category ``i`` and the second in ``j`` (square, any number of
    categories; for labels, the judge by rows and the people by columns, not held / held).

    κ = (p_o − p_e) / (1 − p_e), p_o the share of items they agree on, p_e the share two raters
    with these marginals would agree on by chance. Undefined (``None``) with no items, or when
    p_e = 1: both raters put every item in one and the same category, so there was nothing chance
    could get wrong, and no number says how well they agree beyond it. Its standard error is the
    large-sample one of Fleiss, Cohen and Everitt (1969), as statsmodels' ``cohens_kappa`` gives
    it, and the interval κ ± 1.96·SE (cut to [−1, 1]).
    """

    table: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        size = len(self.table)
        if any(len(row) != size for row in self.table):
            raise ValueError("a kappa table must be square")
        if any(count < 0 for row in self.table for count in row):
            raise ValueError("a kappa table holds counts, none negative")

    @classmethod
    def of(cls, pairs: list[tuple[bool, bool]]) -> CohenKappa:
        """The table of pairs of yes/no decisions (first rater, second rater): index 0 no, 1 yes."""
        table = [[0, 0], [0, 0]]
        for first, second in pairs:
            table[first][second] += 1
        return cls((tuple(table[0]), tuple(table[1])))

    def _parts(self) -> tuple[int, float, float, list[float], list[float]] | None:
        n = sum(sum(row) for row in self.table)
        if n == 0:
            return None
        size = len(self.table)
        rows = [sum(self.table[i]) / n for i in range(size)]
        columns = [sum(self.table[i][j] for i in range(size)) / n for j in range(size)]
        observed = sum(self.table[i][i] for i in range(size)) / n
        chance = sum(rows[i] * columns[i] for i in range(size))
        if chance >= 1 - 1e-12:
            return None
        return n, observed, chance, rows, columns

    def kappa(self) -> float | None:
        parts = self._parts()
        if parts is None:
            return None
        _, observed, chance, _, _ = parts
        return (observed - chance) / (1 - chance)

    def error(self) -> float | None:
        """The standard error of κ (not under the null): Fleiss, Cohen and Everitt's."""
        parts = self._parts()
        if parts is None:
            return None
        n, observed, chance, rows, columns = parts
        kappa = (observed - chance) / (1 - chance)
        size = len(self.table)
        same = sum(self.table[i][i] / n * (1 - (rows[i] + columns[i]) * (1 - kappa)) ** 2 for i in range(size))
        other = (1 - kappa) ** 2 * sum(
            self.table[i][j] / n * (columns[i] + rows[j]) ** 2 for i in range(size) for j in range(size) if i != j
        )
        variance = (same + other - (kappa - chance * (1 - kappa)) ** 2) / (1 - chance) ** 2 / n
        return math.sqrt(max(0.0, variance))

    def one_sided(self) -> bool:
        """Whether a rater put every item in one category (when both put every item in the same
        one, κ is undefined instead). κ is then 0 whatever the other did, and its standard error
        0: a number that says nothing of how well they agree (with people who found every claim
        held, a judge right 29 times in 30 has κ 0)."""
        size = len(self.table)
        rows = sum(1 for i in range(size) if any(self.table[i]))
        columns = sum(1 for j in range(size) if any(self.table[i][j] for i in range(size)))
        return rows == 1 or columns == 1

    def interval(self) -> Interval | None:
        """κ ± 1.96·SE, cut to [−1, 1]; none when κ is undefined or ``one_sided`` (an interval of
        width 0 there would read as certainty)."""
        kappa, error = self.kappa(), self.error()
        if kappa is None or error is None or self.one_sided():
            return None
        return Interval(kappa, max(-1.0, kappa - Z95 * error), min(1.0, kappa + Z95 * error))

    def reading(self) -> str:
        """κ in words, on Landis and Koch's scale (1977), or why there is none."""
        kappa = self.kappa()
        if kappa is None:
            if not any(any(row) for row in self.table):
                return "nothing to compare"
            return "κ undefined: both gave one answer to every item, so chance alone would agree as often"
        if self.one_sided():
            return "κ says nothing here: one side gave one answer to every item, which makes κ 0 however often they agree; read the accuracy"
        if kappa < -1e-12:
            return "less agreement than chance"
        if kappa < 1e-12:
            return "no agreement beyond chance"
        for bound, said in ((0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
            if kappa <= bound:
                return f"{said} agreement beyond chance"
        return "almost perfect agreement beyond chance"


class FleissKappa(msgspec.Struct, frozen=True):
    """Fleiss' κ: how much more a fixed number of raters agree on each subject than they would by
    chance, given how often each category is used overall.

    ``counts[i][j]`` is how many raters put subject ``i`` in category ``j``; every subject has the
    same number of ratings (at least two), and every row the same number of categories. In convy
    a subject is one decision of a claim (an attempt's), a rater one judge of the panel, and the
    categories held and not held. κ is 1 for perfect agreement, 0 for agreement at chance, below 0
    for less. It is undefined (``None``) when there is no subject, fewer than two raters, or every
    rating is in one category: chance agreement is then 1 and κ is 0/0 (statsmodels says nan).
    """

    counts: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        if self.counts:
            raters, width = sum(self.counts[0]), len(self.counts[0])
            for row in self.counts:
                if len(row) != width or sum(row) != raters or min(row) < 0:
                    raise ValueError("every subject must have the same number of ratings, none negative, in the same categories")

    def raters(self) -> int:
        return sum(self.counts[0]) if self.counts else 0

    def observed(self) -> float | None:
        """P̄: the mean, over subjects, of the share of pairs of raters that agree on it."""
        raters = self.raters()
        if raters < 2:
            return None
        pairs = raters * (raters - 1)
        return fmean([(sum(count * count for count in row) - raters) / pairs for row in self.counts])

    def expected(self) -> float | None:
        """P̄e: the agreement expected by chance, from each category's share of every rating."""
        raters = self.raters()
        if raters < 2:
            return None
        total = raters * len(self.counts)
        return math.fsum((sum(column) / total) ** 2 for column in zip(*self.counts, strict=True))

    def kappa(self) -> float | None:
        """(P̄ − P̄e) / (1 − P̄e), or ``None`` when undefined (see the class)."""
        observed, expected = self.observed(), self.expected()
        if observed is None or expected is None or expected >= 1.0 - 1e-12:
            return None
        return (observed - expected) / (1.0 - expected)

    @staticmethod
    def reading(kappa: float | None) -> str:
        """κ in words, after Landis and Koch (1977): a convention, not a test."""
        if kappa is None:
            return "undefined: every judge gave the same decision every time"
        for bound, words in ((0.0, "poor"), (0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
            if kappa <= bound:
                return f"{words} agreement"
        return "almost perfect agreement"
