"""An outside review of rev20's ``refusals.unseen`` and ``refusals.behind`` (a refusal of the first
send after a pause the service asked for, at or after its end, neither finds nor cuts the pace; it,
or one at a gap the limit let through more than a second after the pause, marks the key,
``Pace.unseen``, whose found pace grows again as at the start once ten pauses' time went by,
``answers.climbed``) against main 92cb11a, in virtual time (``clock.in_virtual_time``), three
seeded ways each, through ``test_busy_bare.Wired``'s way to the wire. Each case is bounded at what
main achieves, with a small margin; the figures are main -> rev20, each way's wall (refusals).

What holds: one participant alone on a strict bucket (a loaded machine, a way to the wire that
jitters up to 30 ms, a limit lowered mid-run, bursts, runs of 2,000-3,000 requests, answers of
0.1, 1, 1-2 and 2 s) and a steady outside sender on a bucket with a burst are the same bytes on
both: alone, the first send after a pause of whole seconds finds a bucket of 50 a second whole, so
``unseen`` never fires, and the ``behind`` mark alone changes nothing here. What it gains: two
participants on one key with answers of 0.1 s, and the wall behind a window that always says
Retry-After 1. Where it loses: a steady outside sender on a strict bucket, refused at every
pause's end in the same phase, for good; and more refusals behind the window that says 1 s.
"""

from __future__ import annotations

import asyncio
import math
import random
import statistics

import pytest
from support.clock import in_virtual_time
from support.project import conversations
from support.standin import Bucket, Window
from test_busy_ahead_review import Loaded, keys
from test_busy_bare import Wired
from test_busy_drained_review import Changed
from test_busy_slow_review import WAYS, Mixed, run

from convy.busy import Patience, Places


def wired(seed: int, latency: float, burst: float = 1.0, most: float = 0.008) -> Wired:
    """One key to a bucket of 50 a second with ``burst`` that tells nothing, answers of
    ``latency``, its way to the wire up to ``most`` seconds."""
    key = Wired(Bucket(50, burst, headers=False), "k", seed, most)
    key.latency = latency
    return key


def loaded(seed: int, latency: float) -> Loaded:
    """``wired``'s key on a machine loaded now and then (bench/bare_virtual.py ``--loaded 0.05``)."""
    key = Loaded(Bucket(50, 1, headers=False), "k", seed, 0.05)
    key.latency = latency
    return key


def worst(ways: list[tuple[float, int]]) -> str:
    """Each way's wall and refusals, for an assertion's message."""
    return " ".join(f"{wall:.2f} s ({refused})" for wall, refused in ways)


class Outside(Wired):
    """``Wired`` whose bucket another process the participant does not see takes from too, a
    request every 1 / ``other`` seconds from the start until ``until``, refused or not (a poller,
    a second run on the same key)."""

    def __init__(self, limit: Bucket, seed: int, latency: float, other: float, until: float = math.inf) -> None:
        super().__init__(limit, "k", seed)
        self.latency, self.other, self.until = latency, other, until
        self.jitter: random.Random | None = None  # where set, each of its sends up to 10 ms either side


def beside(key: Outside, requests: int, most: float = 3000.0) -> tuple[float, int]:
    """``requests`` requests of one participant beside ``key``'s outside sender: the virtual
    seconds they took (``math.inf`` past ``most``) and the participant's refusals."""

    async def main() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        done = asyncio.Event()

        async def other() -> None:
            sent = 0
            while not done.is_set() and (sent + 1) / key.other <= key.until:
                sent += 1
                off = key.jitter.uniform(-0.01, 0.01) if key.jitter else 0.0
                await asyncio.sleep(max(0.0, start + sent / key.other + off - loop.time()))
                key.limit.admit(loop.time(), 1)

        sender = asyncio.create_task(other())
        places = Places(0, patience=Patience(86400))
        try:
            await asyncio.wait_for(asyncio.gather(*(places.sent(key) for _ in range(requests))), most)
            return loop.time() - start
        except TimeoutError:
            return math.inf
        finally:
            done.set()
            await sender

    wall: float = in_virtual_time(main)
    return wall, key.refused


class Short(Window):
    """A window that says Retry-After: 1 whatever the wait (a gateway that always says 1 s)."""

    def admit(self, now: float, cost: float) -> tuple[int | None, dict[str, str]]:
        wait, said = super().admit(now, cost)
        return (None if wait is None else 1), said


def short(seed: int) -> tuple[float, int]:
    """400 requests behind 100 a window of 10 s that says Retry-After 1, answers of 0.1 s."""
    key = Wired(Short(100, 10.0, headers=False), "k", seed)
    key.latency = 0.1
    return run(key, 400)


# --- one participant alone: the same bytes ---------------------------------------------------


@pytest.mark.parametrize(("latency", "most"), [(0.1, 29.0), (1.0, 40.0)])
def test_one_participant_on_a_machine_loaded_now_and_then(latency: float, most: float) -> None:
    """1,000 requests, a strict bucket of 50 a second, the machine loaded now and then: the same
    bytes on both. Answers of 0.1 s: 25.88, 27.08, 27.78 s (2, 2, 2); 1 s: 35.14, 35.48, 38.91
    (1, 2, 4). (2,000 requests at 0.1 s: 49.25, 51.60, 51.59 (2 each), the same too.)"""
    ways = [run(loaded(seed, latency), 1000) for seed in WAYS]
    assert max(wall for wall, _ in ways) <= most, worst(ways)
    assert max(refused for _, refused in ways) <= 5, worst(ways)


def test_one_participant_whose_way_to_the_wire_jitters() -> None:
    """1,000 requests, a strict bucket of 50 a second, each request 0.5 to 30 ms on its way to
    the wire, answers of 0.1 s: the same bytes on both, 31.93, 33.77, 32.24 s (2, 5, 5)."""
    ways = [run(wired(seed, 0.1, most=0.03), 1000) for seed in WAYS]
    assert max(wall for wall, _ in ways) <= 35.0, worst(ways)
    assert max(refused for _, refused in ways) <= 6, worst(ways)


def test_answers_of_1_to_2_s_alone() -> None:
    """1,000 requests, a strict bucket of 50 a second, answers of 1 to 2 s: the same bytes on both,
    42.13, 41.30, 43.27 s (2, 1, 2)."""
    ways = [run(Mixed(Bucket(50, 1, headers=False), seed, 1.0, 2.0), 1000) for seed in WAYS]
    assert max(wall for wall, _ in ways) <= 45.0, worst(ways)
    assert max(refused for _, refused in ways) <= 3, worst(ways)


@pytest.mark.parametrize(
    ("burst", "latency", "most", "refusals"), [(1, 0.1, 49.0, 13), (1, 1.0, 60.0, 13), (10, 0.1, 46.0, 16)]
)
def test_a_limit_lowered_mid_run(burst: int, latency: float, most: float, refusals: int) -> None:
    """800 requests, a bucket of 50 a second lowered to 20 at 8 s: the first send after a pause
    is let through (a pause of a whole second fills a bucket of 20 too), so ``unseen`` never
    fires; the same bytes on both. Burst 1, 0.1 s: 45.71, 47.14, 45.34 s (12 each); 1 s: 57.94,
    55.69, 58.21 (11, 10, 12); burst 10, 0.1 s: 44.58, 42.28, 44.13 (13, 15, 12)."""
    ways = [run(Changed(Bucket(50, burst, headers=False), seed, latency, 8.0, 20.0), 800) for seed in WAYS]
    assert max(wall for wall, _ in ways) <= most, worst(ways)
    assert max(refused for _, refused in ways) <= refusals, worst(ways)


@pytest.mark.parametrize(
    ("requests", "burst", "latency", "most", "refusals"),
    [(2000, 10, 0.1, 53.0, 10), (1000, 20, 1.0, 33.0, 5), (3000, 1, 0.1, 66.0, 3), (2000, 1, 2.0, 85.0, 4)],
)
def test_bursts_and_long_runs(requests: int, burst: int, latency: float, most: float, refusals: int) -> None:
    """A bucket of 50 a second, alone: the same bytes on both, no doubling retries (the key is
    never marked). 2,000 requests, burst 10, 0.1 s: 51.88, 45.93, 51.04 s (9, 7, 8); 1,000, burst
    20, 1 s: 31.79, 30.03, 27.44 (5, 3, 3); 3,000, burst 1, 0.1 s: 63.40, 64.81, 64.10 (2, 3, 3);
    2,000, burst 1, 2 s: 81.65, 83.68, 80.73 (2, 4, 2). (2,000 of 1-2 s: 65.64, 65.47, 67.53.)"""
    ways = [run(wired(seed, latency, burst), requests) for seed in WAYS]
    assert max(wall for wall, _ in ways) <= most, worst(ways)
    assert max(refused for _, refused in ways) <= refusals, worst(ways)


# --- another sender on the key ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("burst", "latency", "most", "refusals"), [(10, 0.1, 46.0, 13), (10, 1.0, 58.0, 12), (50, 1.0, 38.0, 14)]
)
def test_a_steady_outside_sender_on_a_bucket_with_a_burst(
    burst: int, latency: float, most: float, refusals: int
) -> None:
    """1,000 requests of one participant beside another process at a steady 20 a second on a
    bucket of 50 a second (30 left, the floor some 33 s): the same bytes on both. Burst 10, 0.1 s:
    45.00, 43.10, 40.90 s (12, 9, 7); 1 s: 45.95, 48.20, 56.55 (9, 11, 1); burst 50, 1 s: 37.15,
    36.60, 36.55 (13, 6, 12). (Burst 10, 1-2 s and burst 50, 0.1 s the same too.)"""
    ways = [beside(Outside(Bucket(50, burst, headers=False), seed, latency, 20.0), 1000) for seed in WAYS]
    assert max(wall for wall, _ in ways) <= most, worst(ways)
    assert max(refused for _, refused in ways) <= refusals, worst(ways)


def test_a_steady_outside_sender_on_a_strict_bucket() -> None:
    """100 requests beside another process at a steady 20 a second on a strict bucket of 50 a
    second (burst 1), answers of 0.1 s, within 1,000 s. Hard on both: any send within 20 ms after
    the other's is refused, whatever the pace. main: 918.30, 901.10, 725.15 s (69, 67, 53). rev20:
    none done in 1,500 s, a refusal every second (1,500 each): the pause ends a whole second
    after the refusal, the pace kept (``unseen``), the first send after it goes at the pause's
    end, so in the same phase of the other's sends each time (14.6 ms after one, in way 1),
    refused again, read as unseen again, for good. With the default patience (300 s) every
    request waiting then gives up: attempts lost, not slower. A strict xfail on rev20; mended
    (``Pace.passed``: not passed over twice in a row), 486.45, 434.15, 759.85 s."""
    ways = [beside(Outside(Bucket(50, 1, headers=False), seed, 0.1, 20.0), 100, 1500.0) for seed in WAYS]
    assert max(wall for wall, _ in ways) <= 1000.0, worst(ways)


@pytest.mark.xfail(
    strict=True, reason="rev20: never done, 1,500 refusals in each way; mended 130, 245, 225, where main 69, 67, 53"
)
def test_a_steady_outside_sender_on_a_strict_bucket_is_refused_no_more_often() -> None:
    """The shape above, the refusals within 75: main 69, 67, 53; rev20 1,500 in each way (the
    run cut at 1,500 s); mended 130, 245, 225 (every other refusal at a pause's end passed over)."""
    ways = [beside(Outside(Bucket(50, 1, headers=False), seed, 0.1, 20.0), 100, 1500.0) for seed in WAYS]
    assert max(refused for _, refused in ways) <= 75, worst(ways)


def test_two_participants_on_one_strict_key_with_answers_of_a_tenth_of_a_second() -> None:
    """Two participants unknown to each other, 300 requests each, one strict bucket of 50 a second,
    answers of 0.1 s: main 183.34, 134.16, 37.69 s (9, 9, 10); rev20 35.25, 19.76, 19.91 (11, 10,
    12); mended 98.60, 25.85, 23.18 (10, 10, 12). A gain, bounded at main's."""
    ways = [run(wired(seed, 0.1), 300, participants=2) for seed in WAYS]
    assert max(wall for wall, _ in ways) <= 190.0, worst(ways)


# --- a service whose Retry-After is too short --------------------------------------------------


def test_a_window_that_always_says_one_second_is_no_slower() -> None:
    """400 requests behind 100 a window of 10 s that says Retry-After: 1 whatever the wait
    (the first send after a pause refused again while the window is full: ``unseen`` reads it as
    another sender's), answers of 0.1 s: main 41.24, 40.22, 37.76 s; rev20 33.08, 33.55, 32.67."""
    ways = [short(seed) for seed in WAYS]
    assert max(wall for wall, _ in ways) <= 42.0, worst(ways)


@pytest.mark.xfail(strict=True, reason="rev20: 30, 33, 33 refusals where main 20, 23, 29")
def test_a_window_that_always_says_one_second_is_refused_no_more_often() -> None:
    """The window above, refusals within 30: main 20, 23, 29; rev20 30, 33, 33 (each pause's first
    send refused while the window is full, the pace not cut)."""
    ways = [short(seed) for seed in WAYS]
    assert max(refused for _, refused in ways) <= 30, worst(ways)


def test_a_steady_outside_sender_that_stops() -> None:
    """1,000 requests beside another process at a steady 20 a second for the first 20 s on a
    strict bucket of 50 a second (burst 1), answers of 0.1 s. main: 2,076.77, 2,056.43, 2,019.72 s
    (8, 7, 7), the pace found where the other's sends left it and kept once it was gone; rev20
    44.53, 44.57, 44.65 (22 each); mended 54.86, 55.31, 57.75 (13, 12, 12). A gain, bounded at
    main's."""
    ways = [beside(Outside(Bucket(50, 1, headers=False), seed, 0.1, 20.0, 20.0), 1000) for seed in WAYS]
    assert max(wall for wall, _ in ways) <= 2100.0, worst(ways)


def test_a_jittery_outside_sender_on_a_strict_bucket() -> None:
    """300 requests beside another process at 20 a second, each of its sends up to 10 ms either
    side of its moment, on a strict bucket of 50 a second (burst 1), answers of 0.1 s. main: none
    done in 3,000 s (170, 150, 136 refusals by then); rev20 1,577.65, 895.10, 1,295.15 s (267,
    395, 746); mended 2,784.15, 1,780.25, 916.31 (216, 268, 322). A gain in time, at more
    refusals."""

    ways = []
    for seed in WAYS:
        key = Outside(Bucket(50, 1, headers=False), seed, 0.1, 20.0)
        key.jitter = random.Random(seed + 7)
        ways.append(beside(key, 300))
    assert max(wall for wall, _ in ways) <= 3000.0, worst(ways)


def test_two_participants_on_one_strict_key_over_a_long_run() -> None:
    """Two participants unknown to each other, 1,000 requests each, one strict bucket of 50 a
    second, answers of 1 s: main 502.71, 1,480.55, 2,106.03 s (24, 31, 21); rev20 192.49, 196.69,
    100.18 (103, 111, 44). A gain in time, bounded at main's."""
    ways = [run(wired(seed, 1.0), 1000, participants=2) for seed in WAYS]
    assert max(wall for wall, _ in ways) <= 2200.0, worst(ways)


@pytest.mark.xfail(strict=True, reason="rev20: 103, 111, 44 refusals where main 24, 31, 21")
def test_two_participants_on_one_strict_key_over_a_long_run_are_refused_no_more_often() -> None:
    """The long run above, refusals within 35: main 24, 31, 21; rev20 103, 111, 44 (each try of
    the pace as at the start, while the other goes on, costs refusals of a second's pause each)."""
    ways = [run(wired(seed, 1.0), 1000, participants=2) for seed in WAYS]
    assert max(refused for _, refused in ways) <= 35, worst(ways)


# --- participants that see each other on a loaded machine ------------------------------------


def test_all_three_on_one_key_on_a_machine_loaded_now_and_then() -> None:
    """125 attempts of bench/bare_virtual.py's, the user, the agent and the judge on one strict
    bucket of 50 a second, the machine loaded now and then (``--loaded 0.05``), ways 1-12: the
    median within 45.0 s. main 44.05 s (6-13 refusals a way); rev20 47.08 (7-18). The three see
    each other, but a loaded machine's way to the wire brings refusals at a gap the limit let
    through (``refusals.behind``): the key is marked, and its pace, cut to some 28 a second by
    the load's refusals, is tried again as at the start every 10 s, found at 49, and cut back to
    29 in four more refusals, each a second's pause of all three (way 3: 44.21 -> 49.70 s).
    Why ``behind`` reads the load as another sender: once the service is strict,
    ``Service.latest`` holds when sends were let go, not when they were written (``Service.wired``
    notes the wire only before the first refusal, ``Service.late`` only for the latest send), so
    in way 3 at 5.31 s the send before the refused one, let go at 5.2625 and written 25 ms late
    (5.2875), shows a gap of 44 ms where the bucket saw 19 ms; at 7.57 s, 28.5 ms where it saw 9.
    Counting ``behind`` not at all, main's bytes, but the shared key's gain is lost (answers of
    1-2 s, way 1, 259.25 s again); counting it only at the second, 44.79 s, lost too; judging a
    growth's try by the pace it was cut back to, 46.70. A strict xfail on rev20; mended (the gap
    less how late the send before was written, ``Service.written_late``), main's bytes in all 12 ways."""
    walls = []
    for seed in range(1, 13):
        made = keys(seed, shared="uaj", loaded=0.05)

        async def main(made: dict[str, Loaded] = made) -> float:
            return await conversations(made, 125)

        walls.append(in_virtual_time(main))
    assert statistics.median(walls) <= 45.0, " ".join(f"{wall:.2f}" for wall in walls)
