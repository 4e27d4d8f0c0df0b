"""An outside review of held1 against main: a service that tells nothing of its limits is strict from
its first answer (``answers.opened``), so the opening's sends are held at the wire for their moments,
with the rules that came with it (``gaps.gap`` read on the wire, ``Pace.bracketed_from``,
``answers.written_apart``, ``refusals._HELD``). Each case runs in virtual time
(``clock.in_virtual_time``), the same on any machine. The strict xfails are where held1 does worse
than main (main passes them), with both figures; the plain tests are shapes checked where it holds
(or does better), so that a later change keeps them."""

from __future__ import annotations

import asyncio
import statistics

import pytest
from support.clock import START, in_virtual_time
from support.project import Key, conversations
from support.standin import Bucket, Window
from test_busy_bare import Wired
from test_busy_demand_review import played, unlimited
from test_busy_slow_review import run

from convy.busy import Busy

WAYS = range(1, 13)


def tokens(seed: int, rate: float, burst: float, attempts: int, only_user: bool = False) -> tuple[float, int]:
    """One way of the project (``test_busy_demand_review``'s token case) with each participant's key
    (``only_user``: the simulated user's, the others unlimited) a bucket of ``rate`` tokens a
    second, ``burst`` at most saved up, that tells nothing, its requests 50 to 150 tokens: the wall
    and the refusals of the three keys."""
    keys = {
        who: Key(who[0], Bucket(rate, burst, unit="tokens", headers=False), seed + offset, 100.0)
        if who == "user" or not only_user
        else Key(who[0], unlimited(), seed + offset)
        for who, offset in (("user", 0), ("agent", 100), ("judge", 200))
    }

    async def main() -> float:
        return await conversations(keys, attempts)

    wall: float = in_virtual_time(main)
    return wall, sum(key.refused() for key in keys.values())


class AtOnce(Wired):
    """``Wired`` with no rate limit but at most ``most`` requests answered at once (a server's cap
    on concurrent requests, as a self-hosted model's): one more is refused with a Retry-After of 1 s
    and nothing else said."""

    def __init__(self, most: int, latency: float, seed: int) -> None:
        super().__init__(Bucket(1e9, 1e9, headers=False), "k", seed)
        self.latency = latency
        self.most_at_once = most
        self.under_way = 0

    async def __call__(self) -> str:
        await self.written()
        loop = asyncio.get_running_loop()
        let = self.under_way < self.most_at_once
        self.reached.append((loop.time(), let))
        if not let:
            raise Busy("429 Too Many Requests", 1.0)
        self.under_way += 1
        try:
            await asyncio.sleep(self.latency)
        finally:
            self.under_way -= 1
        return "answer"


class HalvedEarly(Wired):
    """``Wired`` whose bucket's rate is halved from 5 s on (a provider lowering a tier's limit)."""

    async def __call__(self) -> str:
        if asyncio.get_running_loop().time() - START >= 5.0:
            self.limit.rate = 25.0
        return await super().__call__()


# --- worse at held1 --------------------------------------------------------------------------------


@pytest.mark.xfail(
    strict=True,
    reason=(
        "held1: the median of the twelve ways 33.07 s where main 29.10 (all three keys, burst 150; "
        "seeds 13-24: 29.18 where 26.23), 26.55 where 23.45 (the user's key alone, burst 200). "
        "The opening held at the wire reads its refusal a step over the sends let through (57.9 "
        "refused, 54.6 taken) and the pace stays over the token limit's 50 requests a second: "
        "refused right after a pause twice, refusals.drained takes it to the most answered in a "
        "second, 8 to 15 so early, and it never climbs past twice that (the user's key alone: 10 "
        "ways of 12 so, 7 and 9 on main). Left not strict at answers.opened: 29.09 s again"
    ),
)
@pytest.mark.parametrize(("burst", "only_user", "most"), [(150, False, 29.6), (200, True, 24.0)])
def test_a_token_limit_with_a_burst_of_one_and_a_half_or_two_requests(
    burst: float, only_user: bool, most: float
) -> None:
    """Each participant's key (or the user's alone) a bucket of 5,000 tokens a second, ``burst``
    at most saved up (a request of 50 to 150 tokens), that tells nothing, 125 conversations: the
    user's key's floor some 10 s. main: the median way 29.10 s (burst 150, three keys) and 23.45
    (burst 200, the user's)."""
    walls = [tokens(seed, 5000, burst, 125, only_user)[0] for seed in WAYS]
    assert statistics.median(walls) <= most, f"{statistics.median(walls):.2f} s"


@pytest.mark.xfail(
    strict=True,
    reason=(
        "held1: 83 and 76 refusals in the twelve ways where main 67 and 53 (seeds 13-24 at 200: 89 "
        "where 61); the walls 26.26 and 21.60 s where 24.00 and 21.79"
    ),
)
@pytest.mark.parametrize(("burst", "most"), [(200, 70), (300, 56)])
def test_a_token_limit_with_a_burst_of_two_or_three_requests_is_refused_no_more(burst: float, most: int) -> None:
    """Each participant a bucket of 5,000 tokens a second with ``burst`` tokens saved up at most,
    that tells nothing, 125 conversations: main refused 67 (200) and 53 (300) times in the twelve
    ways, the median way 24.00 and 21.79 s."""
    refused = sum(tokens(seed, 5000, burst, 125)[1] for seed in WAYS)
    assert refused <= most, f"{refused} refusals"


# --- holding at held1 ------------------------------------------------------------------------------


def test_the_project_with_no_limit_at_all() -> None:
    """300 conversations, no key limited (``bench/bare_virtual.py``'s p-free, six times as many):
    the opening never ends, its sends held at the wire all the run. main: the median of six ways
    1.96 s (1.91-1.99); held1 2.00 (1.90-2.07), 2% slower, a way 4% (a single 40-80 ms)."""
    walls = [played(seed, 300, unlimited, unlimited, unlimited)[0] for seed in range(1, 7)]
    assert statistics.median(walls) <= 2.02, f"{statistics.median(walls):.2f} s"
    assert max(walls) <= 2.1, f"{max(walls):.2f} s"


def test_the_project_with_sliding_windows_that_tell_nothing() -> None:
    """Each key at most 50 requests in any sliding second (a window, not a bucket), telling
    nothing, 125 conversations. main: the median of six ways 13.52 s, 50 refusals; held1 13.56,
    57 (one way refused 10 times where 3, but 0.6 s quicker)."""
    ways = [played(seed, 125, *(lambda: Window(50, 1.0, headers=False),) * 3) for seed in range(1, 7)]
    walls = [wall for wall, _ in ways]
    assert statistics.median(walls) <= 13.7, f"{statistics.median(walls):.2f} s"
    refused = sum(sum(counts.values()) for _, counts in ways)
    assert refused <= 60, f"{refused} refusals"


def test_a_cap_on_requests_under_way() -> None:
    """One participant, 600 requests, against a service answering in 1 s that refuses any request
    beyond 16 under way (no rate limit at all): main 54.38-55.13 s, 12 refusals a way; held1
    50.32-50.34 s, 6."""
    for seed in (1, 2, 3, 4):
        wall, refused = run(AtOnce(16, 1.0, seed), 600)
        assert wall <= 55.5, f"way {seed}: {wall:.2f} s"
        assert refused <= 12, f"way {seed}: {refused} refusals"


def test_a_limit_halved_early_with_quick_answers() -> None:
    """800 requests against a strict bucket of 50 a second halved to 25 at 5 s, answers of 0.1 s:
    main the median of four ways 41.74 s, 38 refusals; held1 38.78, 34."""
    ways = [run(HalvedEarly(Bucket(50, 1, headers=False), "k", seed), 800) for seed in (1, 2, 3, 4)]
    assert statistics.median(wall for wall, _ in ways) <= 42.0
    assert sum(refused for _, refused in ways) <= 40


def test_six_participants_on_one_strict_key() -> None:
    """Six participants (places that grow, none knowing of the others), 150 requests each, on one
    strict bucket of 50 a second that tells nothing: main the median of eight ways 102.33 s and
    1,042 refusals; held1 97.06 and 968 (its slowest way 116.7 s where main's 147.35, though way 3
    is 70.65 where 58.25)."""
    ways = [run(Wired(Bucket(50, 1, headers=False), "k", seed), 150, participants=6) for seed in range(1, 9)]
    assert statistics.median(wall for wall, _ in ways) <= 103.0
    assert sum(refused for _, refused in ways) <= 1050
