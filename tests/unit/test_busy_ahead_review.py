"""An outside review of probe1's c3f7c3d (``wire._AHEAD_GAP``: a strict limit's request let go up to
half a gap ahead of its moment, not a quarter, at most 10 ms as before), played in virtual time
(``clock.in_virtual_time``) with bench/bare_virtual.py's attempts and way to the wire (0.5 to 8 ms,
seeded; the limit counts a request once written). The strict xfails are where half a gap is worse
than a quarter (a quarter passes them), with both figures in their reasons (two passed since, with
burst1's ``refusals.drained``, and are plain tests now); the plain tests pin
what half a gap gains, and what holds at either (one send of a participant at the wire at a time,
a shared key's sends written in the order of their moments, nothing changed at 25 a second or
less, where 10 ms is under a quarter of a gap already)."""

from __future__ import annotations

import asyncio
import statistics
from typing import Any

import pytest
from support.clock import in_virtual_time
from support.project import conversations
from support.standin import Bucket
from test_busy_bare import Bare, Wired

from convy.pacing import Asked
from convy.quota import TOLD

WAYS = range(1, 13)  # the seeds of bench/bare_virtual.py's first twelve ways


class Loaded(Wired):
    """``Wired`` on a machine loaded now and then (bench/bare_virtual.py ``--loaded``): at each send
    a chance ``loaded`` of a stretch of 0.3 to 1 s in which every write, once the request's moment
    has come, takes 5 to 25 ms (seeded). It also keeps how many of its participant's requests let
    go ahead wait on their way at once (``most_at_wire``), and when each went on the wire with the
    moment it was let go for (``written``)."""

    def __init__(self, limit: Bucket, name: str, seed: int, loaded: float = 0.0) -> None:
        super().__init__(limit, name, seed)
        self.loaded = loaded
        self.at_wire = 0
        self.most_at_wire = 0
        self.written: list[tuple[float, float]] = []  # (on the wire, its moment), of sends let go ahead

    async def __call__(self) -> str:
        told = TOLD.get()
        if told is not None and not told.service:
            told.service = self.name
        loop = asyncio.get_running_loop()
        ahead = isinstance(told, Asked) and told._send.ahead > 0.0
        self.at_wire += ahead
        self.most_at_wire = max(self.most_at_wire, self.at_wire)
        try:
            await asyncio.sleep(self.way.uniform(0.0005, self.most))
            if told is not None:
                await told.writable()
                if stretch := self.stretched(loop.time(), self.loaded):
                    await asyncio.sleep(stretch)
                told.wrote(loop.time())
                if ahead and isinstance(told, Asked):
                    self.written.append((loop.time(), told._send.moment))
        finally:
            self.at_wire -= ahead
        return await Bare.__call__(self)


def keys(seed: int, rate: float = 50.0, burst: float = 1.0, shared: str = "", loaded: float = 0.0) -> dict[str, Loaded]:
    """Each participant's key to a strict bucket that tells nothing (``rate``, ``burst``), the
    participants named in ``shared`` ("aj": the agent and the judge, "uaj": all three) on one key;
    the ways seeded as bench/bare_virtual.py's (the user's ``seed``, the agent's + 100, the
    judge's + 200)."""
    limits: dict[str, Bucket] = {}
    made = {}
    for who, offset in (("user", 0), ("agent", 100), ("judge", 200)):
        group = shared if who[0] in shared else who
        limit = limits.setdefault(group, Bucket(rate, burst, headers=False))
        made[who] = Loaded(limit, group, seed + offset, loaded)
    return made


def median_wall(count: int, agent_per_minute: int = 0, **shape: Any) -> float:
    """The median, over ``WAYS``, of the virtual seconds ``count`` attempts take on ``keys(**shape)``."""
    walls = []
    for seed in WAYS:
        made = keys(seed, **shape)

        async def main(made: dict[str, Loaded] = made) -> float:
            return await conversations(made, count, agent_per_minute)

        walls.append(in_virtual_time(main))
    return statistics.median(walls)


# --- where half a gap is worse than a quarter ----------------------------------------------


def test_a_machine_loaded_now_and_then_is_no_slower_than_at_a_quarter_of_a_gap() -> None:
    """125 attempts, each participant on a strict bucket of 50 a second of its own that tells
    nothing, the machine loaded now and then (bare_virtual.py p-bare@3000 --loaded 0.05): the
    median way within 16.0 s (15.61; 18.85 at a quarter of a gap and the latest 16 leads, 21.65 at
    half a gap with them, the first sends after a stretch of load paced less its writes' delays)."""
    wall = median_wall(125, loaded=0.05)
    assert wall <= 16.0, f"{wall:.2f} s"


@pytest.mark.xfail(
    strict=True,
    reason=(
        "combo2: 26.29 s where burst1 took 25.56, the places grown back after the first refusal to "
        "as many as it came at (not traced further: 3% of the run)"
    ),
)
def test_a_key_the_agent_and_the_judge_share_on_a_loaded_machine() -> None:
    """125 attempts, the agent and the judge on one strict bucket of 50 a second, the user on
    another, the machine loaded now and then: the median way within 26.0 s (25.63 at a quarter).
    A strict xfail until burst1 (28.13 s at c3f7c3d, 26.55 with the least of the latest 64 leads):
    25.56 s once a pace let through only on what each pause saved up is cut to the most answered in
    a second (``refusals.drained``); 26.07 without that cut's guard of fewer sends since the pause
    than that most."""
    wall = median_wall(125, shared="aj", loaded=0.05)
    assert wall <= 26.0, f"{wall:.2f} s"


def test_a_burst_of_twenty_that_tells_nothing_is_no_slower_than_at_a_quarter_of_a_gap() -> None:
    """125 attempts, each participant on a bucket of 50 a second, burst 20, of its own that tells
    nothing: the median way within 17.3 s (17.28 at a quarter). A strict xfail until burst1 (17.53 s
    at c3f7c3d: the pace found from the gaps the burst let through, over the limit, cut a tenth a
    pause): 13.73 s once such a pace is cut to the most answered in a second
    (``refusals.drained``)."""
    wall = median_wall(125, burst=20.0)
    assert wall <= 17.3, f"{wall:.2f} s"


def test_an_agent_capped_per_minute_on_a_key_shared_with_the_judge() -> None:
    """125 attempts, the agent at most 2,400 requests a minute, it and the judge on one strict
    bucket of 50 a second that tells nothing: the median way within 17.1 s (17.04 at a quarter).
    A strict xfail until combo2 (18.92 s at half a gap, over 48 ways 17.73 against 17.00 with 275
    refusals against 225: the key's pace climbs to 64-68 a second while the cap holds the agent at
    40, and the judge's sends, let go 15 ms after the agent's, are refused): 16.98 s once the places
    grow back after the first refusal to as many as it came at (``Growth._regrows``)."""
    wall = median_wall(125, agent_per_minute=2400, shared="aj")
    assert wall <= 17.1, f"{wall:.2f} s"


# --- what half a gap gains, and what holds at either ---------------------------------------


def test_keys_of_their_own_at_50_a_second_gain_the_time_late_sends_lost() -> None:
    """bare_virtual.py p-bare@3000 (125 attempts, each participant a strict bucket of 50 a second
    of its own that tells nothing): the median way within 13.3 s (13.20; 13.50 at a quarter of a
    gap, where a third of the sends let go ahead came a millisecond or two late)."""
    wall = median_wall(125)
    assert wall <= 13.3, f"{wall:.2f} s"


def test_a_long_way_to_the_wire_gains_most() -> None:
    """The same attempts through a way of up to 16 ms (longer than the 10 ms lead itself in a
    third of the sends): the median way within 14.5 s (14.34; 15.81 at a quarter)."""
    walls = []
    for seed in WAYS:
        made = keys(seed)
        for key in made.values():
            key.most = 0.016

        async def main(made: dict[str, Loaded] = made) -> float:
            return await conversations(made, 125)

        walls.append(in_virtual_time(main))
    wall = statistics.median(walls)
    assert wall <= 14.5, f"{wall:.2f} s"


def test_at_25_a_second_or_less_nothing_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 20 a second a gap is 50 ms, and the 10 ms lead is under a quarter of it: half a gap
    lets every request go at the same moment as a quarter did, and every key is reached at the
    same moments (three ways, all three on one key, and each on its own). With answers of 0.25 s:
    a service that tells nothing is held at the wire from its first answer, and the pace it opens
    at is the places' worth over that answer's latency, 40 a second with answers of 0.1 s, where
    a quarter of a gap is 6.25 ms (one opening send written 0.19 ms later, and every send after
    it); at 0.25 s it opens at 16 a second."""
    import convy.wire

    def reached(shared: str) -> list[list[tuple[float, bool]]]:
        seen = []
        for seed in (1, 2, 3):
            made = keys(seed, rate=20.0, shared=shared)
            for key in made.values():
                key.latency = 0.25

            async def main(made: dict[str, Loaded] = made) -> float:
                return await conversations(made, 25)

            in_virtual_time(main)
            seen.extend(key.reached for key in made.values())
        return seen

    for shared in ("", "uaj"):
        half = reached(shared)
        monkeypatch.setattr(convy.wire, "_AHEAD_GAP", 0.25)
        quarter = reached(shared)
        monkeypatch.setattr(convy.wire, "_AHEAD_GAP", 0.5)
        assert half == quarter


def test_a_participant_never_has_two_sends_let_go_ahead_on_their_way_at_once() -> None:
    """Whether each participant has a key of its own, the agent and the judge share one, or all
    three do, and on a machine loaded now and then too: of the sends let go ahead of their moment,
    a participant has one at most between being let go and being on the wire
    (``busy.Places._unwritten``), so that a lead of half a gap never puts two of its sends at the
    wire together."""
    for shared, loaded in (("", 0.0), ("aj", 0.0), ("uaj", 0.0), ("aj", 0.05)):
        for seed in (1, 2, 3):
            made = keys(seed, shared=shared, loaded=loaded)

            async def main(made: dict[str, Loaded] = made) -> float:
                return await conversations(made, 40 if shared == "uaj" else 125)

            in_virtual_time(main)
            assert max(key.most_at_wire for key in made.values()) == 1
            assert all(key.written for key in made.values())


def test_a_key_shared_by_the_agent_and_the_judge_is_written_in_the_order_of_its_moments() -> None:
    """The agent and the judge on one strict bucket of 50 a second (125 attempts, twelve ways), all
    three on one (40 attempts): with a lead of half a gap the sends of the participants sharing a
    key, let go ahead, reach the wire in the order of the moments they were let go for, none
    overtaking another's (under load, a write of 5 to 25 ms may, at a quarter as at half)."""
    for shared, count in (("aj", 125), ("uaj", 40)):
        for seed in WAYS:
            made = keys(seed, shared=shared)

            async def main(made: dict[str, Loaded] = made, count: int = count) -> float:
                return await conversations(made, count)

            in_virtual_time(main)
            sharing = [made["agent"], made["judge"], *([made["user"]] if shared == "uaj" else [])]
            written = sorted(moment for key in sharing for moment in key.written)
            moments = [moment for _, moment in written]
            assert moments == sorted(moments), f"seed {seed}"
