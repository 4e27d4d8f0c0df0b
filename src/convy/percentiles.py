"""Some values summed up as the pages show a spread: min, p50, p95 and max, the percentiles by
linear interpolation (``Percentiles``), or of values ascending already, walked once to the ranks
shown rather than sorted again (``Ordered``)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import msgspec

from convy.ranked import Ascending
from convy.views import SpreadView


class Percentiles(msgspec.Struct, frozen=True):
    """Some values summed up: min, p50, p95, max (percentiles by linear interpolation)."""

    values: Sequence[float]  # a tuple, or an ``array('d')``: 8 bytes a value, for a run's every request

    def view(self) -> SpreadView:
        return self._of(sorted(self.values))

    def _of(self, ordered: Sequence[float]) -> SpreadView:
        if not ordered:
            return SpreadView()
        count = len(ordered)
        return SpreadView(
            count=count, min=ordered[0], p50=_at(ordered, count, 0.5), p95=_at(ordered, count, 0.95), max=ordered[-1]
        )


def _ranks(count: int, share: float) -> tuple[int, int, float]:
    """The two ranks among ``count`` ascending values a percentile lies between, and how far."""
    position = share * (count - 1)
    low = math.floor(position)
    return low, min(low + 1, count - 1), position - low


def _at(ordered: Sequence[float] | Mapping[int, float], count: int, share: float) -> float:
    """The percentile ``share`` of ``count`` ascending values, by linear interpolation;
    ``ordered`` gives the value at a rank (all of them, or those two)."""
    low, high, part = _ranks(count, share)
    return ordered[low] + (ordered[high] - ordered[low]) * part


class Ordered(msgspec.Struct, frozen=True):
    """Values ascending already (``digest.Digest``'s ``ranked.Ranked``): summed up as ``Percentiles``
    sums them, walked once to the ranks it shows, not sorted again nor held whole."""

    values: Ascending

    def view(self) -> SpreadView:
        count = len(self.values)
        if not count:
            return SpreadView()
        ranks = {0, count - 1, *_ranks(count, 0.5)[:2], *_ranks(count, 0.95)[:2]}
        found: dict[int, float] = {}
        values, last = iter(self.values), -1
        for rank in sorted(ranks):
            found[rank] = next(itertools.islice(values, rank - last - 1, None))
            last = rank
        return SpreadView(
            count=count, min=found[0], p50=_at(found, count, 0.5), p95=_at(found, count, 0.95), max=found[count - 1]
        )
