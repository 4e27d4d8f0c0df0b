"""A judge's rule that holds claims at random at a known rate, from a seeded generator: what
``fakes.Rated`` does evenly, this does by chance, so a run on it varies as a real one does and is
still the same run each time for one seed. Shared by the tests of ``--against`` and its bench."""

from __future__ import annotations

import random


class Drawn:
    """A ``FakeJudge``'s ``held``: every claim holds with probability ``rate``, drawn from
    ``random.Random(seed)`` one ruling after another."""

    def __init__(self, rate: float, seed: int) -> None:
        self.rate = rate
        self.chooser = random.Random(seed)

    def __call__(self, claim: str, transcript: object) -> bool:
        return self.chooser.random() < self.rate
