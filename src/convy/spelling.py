"""Names one slip away from a name that is known: the rule, ``Spelling``.

A name that is not known is a slip for the known names nearest to it, when they are at most one edit
away (a letter added, dropped, changed, or two side by side swapped), or two for a known name of
eight characters or more; names are compared in capitals, as pydantic-settings reads them. A name
further from every known one is left alone: it may be read by a tool convy does not know of.
``slips.py`` applies it to a project's variables; a scenario folder and a settings table misnamed
are found with it too.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec


class Spelling(msgspec.Struct, frozen=True):
    """Known names (in capitals), and the rule that tells a slip for one of them."""

    known: frozenset[str]

    LONG: ClassVar[int] = 8  # a known name this long or longer may be two edits away; a shorter one, one

    def meant(self, name: str) -> tuple[str, ...]:
        """The known names ``name`` is a slip for, nearest first and ties in order; none when it is
        known, or no known name is near enough."""
        upper = name.upper()
        if upper in self.known:
            return ()
        found: dict[int, list[str]] = {}
        for known in sorted(self.known):
            most = 2 if len(known) >= self.LONG else 1
            edits = self.distance(upper, known, most)
            if edits <= most:
                found.setdefault(edits, []).append(known)
        return tuple(found[min(found)]) if found else ()

    @staticmethod
    def distance(one: str, other: str, most: int) -> int:
        """The edits from ``one`` to ``other`` (optimal string alignment: insert, delete, change, swap
        two neighbours), or ``most + 1`` as soon as it is certain to be more than ``most``."""
        if abs(len(one) - len(other)) > most:
            return most + 1
        before: list[int] = []
        previous = list(range(len(other) + 1))
        for i, a in enumerate(one, start=1):
            current = [i] + [0] * len(other)
            for j, b in enumerate(other, start=1):
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b))
                if i > 1 and j > 1 and a == other[j - 2] and one[i - 2] == b:
                    current[j] = min(current[j], before[j - 2] + 1)
            if min(current) > most:
                return most + 1
            before, previous = previous, current
        return min(previous[-1], most + 1)

    def said(self, name: str, where: str) -> str | None:
        """The problem of ``name`` met in ``where``, or ``None`` when it is not a slip."""
        meant = self.meant(name)
        if not meant:
            return None
        return f"{name} in {where}: unknown; did you mean {' or '.join(meant)}?"
