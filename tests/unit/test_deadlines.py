"""Deadlines: time limits kept by one timer per length, with asyncio.timeout's meaning.

Every case runs on the virtual-time loop (tests/support/clock.py) and reads the loop's clock, never the
wall clock: a limit of a minute passes at once, and at the same moment on any machine.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from support.clock import START, in_virtual_time

from convy.agent import Answer, Message, OutOfTime, TimeLimited
from convy.deadlines import LIMIT, Deadlines


@pytest.mark.parametrize("made", ["limit", "here"])
def test_a_limit_that_runs_out_ends_its_block_in_timeout_error_at_its_moment(made: str) -> None:
    # ``here`` finds the task as the limit is made, ``limit`` as the block is entered: the same.
    deadlines = Deadlines()

    async def main() -> tuple[float, bool]:
        scope = deadlines.here(5.0) if made == "here" else deadlines.limit(5.0)
        with pytest.raises(TimeoutError):
            async with scope:
                await asyncio.sleep(60)
        return asyncio.get_running_loop().time(), scope.expired()

    ended, expired = in_virtual_time(main)
    assert (ended, expired) == (START + 5.0, True)


def test_limits_that_end_in_time_leave_nothing_to_expire_and_the_late_ones_still_do() -> None:
    # Many quick blocks, then a slow one, each limited to 10 s: only the slow one runs out, at
    # 10 s after it began, although the timer was first armed for the first quick block.
    deadlines = Deadlines()

    async def main() -> list[tuple[str, float]]:
        loop = asyncio.get_running_loop()
        ended: list[tuple[str, float]] = []
        for _ in range(1000):
            async with deadlines.limit(10.0):
                await asyncio.sleep(0.001)
        began = loop.time()
        try:
            async with deadlines.limit(10.0):
                await asyncio.sleep(60)
        except TimeoutError:
            ended.append(("slow", loop.time() - began))
        return ended

    [(name, seconds)] = in_virtual_time(main)
    assert name == "slow"
    assert seconds == pytest.approx(10.0)


def test_limits_of_different_lengths_and_tasks_each_expire_at_their_own_moment() -> None:
    deadlines = Deadlines()

    async def limited(seconds: float, sleep: float) -> tuple[float, str]:
        loop = asyncio.get_running_loop()
        try:
            async with deadlines.limit(seconds):
                await asyncio.sleep(sleep)
        except TimeoutError:
            return seconds, f"out at {loop.time() - START:g}"
        return seconds, f"done at {loop.time() - START:g}"

    async def main() -> list[tuple[float, str]]:
        return list(await asyncio.gather(limited(3, 10), limited(7, 5), limited(2, 1), limited(3, 2), limited(9, 20)))

    assert in_virtual_time(main) == [(3, "out at 3"), (7, "done at 5"), (2, "done at 1"), (3, "done at 2"), (9, "out at 9")]


@pytest.mark.parametrize("kind", ["deadlines", "asyncio.timeout"])
def test_a_cancellation_from_outside_goes_on_as_a_cancellation_even_when_the_limit_runs_out_too(kind: str) -> None:
    # As asyncio.timeout (the same case run on both): the limit's TimeoutError only when its
    # cancellation is the only one; here another comes in the same round of the loop.
    deadlines = Deadlines()

    async def main() -> tuple[str, bool]:
        loop = asyncio.get_running_loop()
        scope = deadlines.limit(1.0) if kind == "deadlines" else asyncio.timeout(1.0)

        async def inner() -> None:
            async with scope:
                await asyncio.sleep(60)

        task = asyncio.ensure_future(inner())
        await asyncio.sleep(0)  # the block is entered
        loop.call_at(START + 1.0, task.cancel)  # rings just after the limit, in the same round
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled", scope.expired()
        except TimeoutError:
            return "timed out", scope.expired()
        return "returned", scope.expired()

    assert in_virtual_time(main) == ("cancelled", True)


@pytest.mark.parametrize("kind", ["deadlines", "asyncio.timeout"])
def test_a_block_that_swallows_the_cancellation_of_its_limit_returns_as_under_asyncio_timeout(kind: str) -> None:
    deadlines = Deadlines()

    async def main() -> tuple[str, bool, int]:
        scope = deadlines.limit(2.0) if kind == "deadlines" else asyncio.timeout(2.0)
        async with scope:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                pass
        task = asyncio.current_task()
        assert task is not None
        return "returned", scope.expired(), task.cancelling()

    assert in_virtual_time(main) == ("returned", True, 0)


def test_a_timeout_error_raised_inside_is_not_the_limits_own() -> None:
    deadlines = Deadlines()

    async def main() -> bool:
        scope = deadlines.limit(100.0)
        with pytest.raises(TimeoutError):
            async with scope:
                raise TimeoutError("the block's own")
        return scope.expired()

    assert in_virtual_time(main) is False


def test_deadlines_used_from_a_second_loop_start_afresh() -> None:
    deadlines = Deadlines()

    async def main() -> float:
        loop = asyncio.get_running_loop()
        with pytest.raises(TimeoutError):
            async with deadlines.limit(4.0):
                await asyncio.sleep(60)
        return loop.time() - START

    assert in_virtual_time(main) == 4.0
    assert in_virtual_time(main) == 4.0  # the timer of the first loop is not waited on


class _Slow:
    """A conversation that answers "slow" after ten minutes and anything else at once."""

    def __init__(self) -> None:
        self.turns = 0

    async def turn(self, message: Message) -> Answer:
        self.turns += 1
        if message.text == "slow":
            await asyncio.sleep(600)
        return Answer("ok")


class _SlowAgent:
    def __init__(self) -> None:
        self.talk = _Slow()

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[_Slow]:
        yield self.talk


def test_a_turn_past_its_time_limit_is_out_of_time_and_the_next_turns_are_limited_again() -> None:
    # TimeLimited's turns share one Deadlines: a slow turn runs out at its limit, counted from the
    # moment it began, after quick turns whose limits ended without ringing.
    agent = _SlowAgent()

    async def main() -> tuple[list[str], float]:
        loop = asyncio.get_running_loop()
        said: list[str] = []
        limited = TimeLimited(agent, turn=30.0)
        async with limited.conversation() as conversation:
            for _ in range(3):
                said.append((await conversation.turn(Message("quick"))).text)
            began = loop.time()
            with pytest.raises(OutOfTime, match="did not answer within 30 s"):
                await conversation.turn(Message("slow"))
            took = loop.time() - began
            said.append((await conversation.turn(Message("quick"))).text)
        return said, took

    said, took = in_virtual_time(main)
    assert said == ["ok", "ok", "ok", "ok"]
    assert took == 30.0
    assert agent.talk.turns == 5


def test_a_limit_begun_again_is_the_same_object_once_its_block_ended_and_runs_out_from_its_new_start() -> None:
    # A conversation's turns, one after another: ``again`` makes nothing new, and the limit counts
    # from the moment the next block begins; while a block is under way, ``again`` is a new limit.
    deadlines = Deadlines()

    async def main() -> tuple[bool, bool, float, bool]:
        loop = asyncio.get_running_loop()
        first = deadlines.here(5.0)
        with first:
            under_way = first.again()
            with under_way:
                pass
        await asyncio.sleep(3)  # the first limit's timer rings at 5, for nothing
        second = first.again()
        began = loop.time()
        with pytest.raises(TimeoutError):
            with second:
                await asyncio.sleep(60)
        return under_way is not first, second is first, loop.time() - began, second.expired()

    assert in_virtual_time(main) == (True, True, 5.0, True)


def test_a_limit_begun_again_at_another_length_runs_out_at_that_length_and_the_first_length_no_longer_stops_it() -> None:
    # A conversation's opening (60 s), then its turns (120 s): the same object, watched among the
    # limits of its new length. The 60 s timer armed for the opening rings without stopping the
    # turn, which runs out 120 s after it began.
    deadlines = Deadlines()

    async def main() -> tuple[bool, float, bool]:
        loop = asyncio.get_running_loop()
        opening = deadlines.here(60.0)
        with opening:
            pass
        turn = opening.again(120.0)
        began = loop.time()
        with pytest.raises(TimeoutError):
            with turn:
                await asyncio.sleep(600)
        return turn is opening, loop.time() - began, turn.expired()

    assert in_virtual_time(main) == (True, 120.0, True)


def test_a_held_wait_is_not_counted_and_a_limit_of_the_same_length_runs_out_meanwhile() -> None:
    # A limit of 10 s held for 20 s of its block (a wait for a busy service) runs out 10 s of its own
    # time after it began, at 30 s; another of 10 s begun at 1 s and not held runs out at 11 s.
    deadlines = Deadlines()

    async def held() -> float:
        loop = asyncio.get_running_loop()
        scope = deadlines.here(10.0)
        with pytest.raises(TimeoutError):
            with scope:
                await asyncio.sleep(4)
                with scope.held():
                    await asyncio.sleep(20)
                await asyncio.sleep(60)
        return loop.time() - START

    async def plain() -> float:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(1)
        with pytest.raises(TimeoutError):
            with deadlines.here(10.0):
                await asyncio.sleep(60)
        return loop.time() - START

    async def main() -> list[float]:
        return list(await asyncio.gather(held(), plain()))

    assert in_virtual_time(main) == [30.0, 11.0]


def test_a_closing_runs_out_at_its_limit_though_a_wait_begun_in_the_last_turn_ends_meanwhile() -> None:
    # The last turn leaves a request of its own task waiting for a busy service (held: not the
    # agent's time) and ends; the wait ends 0.5 s into the closing. The closing's limit, begun
    # again from the turn's (``Deadline.again``), is not the turn's: the wait's end neither stops
    # nor lengthens it, and a closing of 2 s runs out at its limit of 1 s.
    waits: list[asyncio.Task[None]] = []

    class Leaving:
        @asynccontextmanager
        async def conversation(self) -> AsyncIterator[Leaving]:
            yield self
            await asyncio.sleep(2.0)

        async def turn(self, message: Message) -> Answer:
            limit = LIMIT.get()
            assert limit is not None

            async def waiting() -> None:
                with limit.held():
                    await asyncio.sleep(0.5)

            waits.append(asyncio.ensure_future(waiting()))
            await asyncio.sleep(0)
            return Answer("ok")

    async def main() -> tuple[str, float]:
        loop = asyncio.get_running_loop()
        began = loop.time()
        with pytest.raises(OutOfTime) as ended:
            async with TimeLimited(Leaving(), open=1.0, turn=1.0, close=1.0).conversation() as conversation:
                await conversation.turn(Message("hi"))
        closed = loop.time() - began
        await asyncio.gather(*waits)
        return str(ended.value), closed

    assert in_virtual_time(main) == ("the agent did not close its conversation within 1 s", 1.0)


def test_a_closing_runs_out_at_its_limit_though_a_wait_the_last_turn_left_begins_meanwhile() -> None:
    # A task the last turn left behind (its ``LIMIT`` the turn's) waits for a busy service from
    # 0.2 s into the closing for 3 s: a wait of no turn's, which holds none of the closing's time.
    # A closing of 2 s runs out at its limit of 1 s.
    waits: list[asyncio.Task[None]] = []

    class Leaving:
        @asynccontextmanager
        async def conversation(self) -> AsyncIterator[Leaving]:
            yield self
            await asyncio.sleep(2.0)

        async def turn(self, message: Message) -> Answer:
            limit = LIMIT.get()
            assert limit is not None

            async def waiting() -> None:
                await asyncio.sleep(0.2)
                with limit.held():
                    await asyncio.sleep(3.0)

            waits.append(asyncio.ensure_future(waiting()))
            return Answer("ok")

    async def main() -> tuple[str, float]:
        loop = asyncio.get_running_loop()
        began = loop.time()
        with pytest.raises(OutOfTime) as ended:
            async with TimeLimited(Leaving(), open=1.0, turn=1.0, close=1.0).conversation() as conversation:
                await conversation.turn(Message("hi"))
        closed = loop.time() - began
        await asyncio.gather(*waits)
        return str(ended.value), closed

    assert in_virtual_time(main) == ("the agent did not close its conversation within 1 s", 1.0)


class _BusyOnce:
    """An agent whose every turn sends one request through the turn under way (``busy.TURN``), as
    convy's HTTP layer does; the service refuses its first request for 10 s, then answers, and a
    turn that waits ``slow`` seconds of its own more is slow."""

    def __init__(self, slow: float = 0.0) -> None:
        self.slow = slow
        self.requests = 0

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[_BusyOnce]:
        yield self

    async def turn(self, message: Message) -> Answer:
        from convy.busy import TURN

        under_way = TURN.get()
        assert under_way is not None
        answer = await under_way.resent(self._request)
        await asyncio.sleep(self.slow)
        return Answer(answer)

    async def _request(self) -> str:
        from convy.busy import Busy

        self.requests += 1
        if self.requests == 1:
            raise Busy("busy", retry_after=10.0)
        return "ok"


@pytest.mark.parametrize(("slow", "answered"), [(4.0, True), (6.0, False)])
def test_a_turns_request_waiting_for_a_busy_service_is_not_the_agents_time(slow: float, answered: bool) -> None:
    # A turn limited to 5 s whose request waits 10 s for a busy service answers when the agent's
    # own time (its wait after the answer) is 4 s, and is out of time at 6 s: the wait is held.
    from convy.agent import turned
    from convy.busy import Places

    agent = _BusyOnce(slow)

    async def main() -> tuple[bool, float]:
        loop = asyncio.get_running_loop()
        places = Places(0)
        async with TimeLimited(agent, turn=5.0).conversation() as conversation:
            began = loop.time()
            try:
                await turned(places, conversation.turn, Message("hi"))
            except OutOfTime:
                return False, loop.time() - began
            return True, loop.time() - began

    assert in_virtual_time(main) == (answered, 10.0 + (slow if answered else 5.0))
    assert agent.requests == 2
