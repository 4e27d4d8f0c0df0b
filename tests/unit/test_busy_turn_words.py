"""An agent's first turn, paced as a whole, whose request goes over convy's HTTP layer: what the
service says of its limits with that request's answer is heard by nobody, and the turn's answer is
no word from the service.

``bench/busy.py``'s ``p-b1@3000`` traced: the agent (a ``JsonAgent``) reaches a strict bucket of
50 a second that says what is left. Its first turn is paced as a request (nothing yet shows that
its requests go over HTTP); the request inside it is not paced again, so the words of the bucket
in its answer went unheard, and the turn's answer was taken for a service that said nothing. The
next two requests then went at once, the second within the bucket's 20 ms, refused before the
meters had heard any rate, and the refusal of a service with no rate halved the conversations
(the agent's places, 5 to 2) in the run's first half second. Played in virtual time
(``clock.in_virtual_time``): the turn's request a ``support.project.Key``, which tells the
``Told`` it was sent with what the bucket says."""

from __future__ import annotations

import asyncio

import pytest
from support.clock import in_virtual_time
from support.project import Key, turning
from support.standin import Bucket

from convy.agent import turned
from convy.busy import START, Patience, Places
from convy.quota import Services


def played(seed: int, conversations: int = 40) -> tuple[Key, list[int]]:
    """``conversations`` conversations of three turns each, a simulated user's part before each
    agent's turn; the agent's key, and its places at each answer."""
    key = Key("agent", Bucket(50.0, 1.0), seed)
    sizes: list[int] = []

    async def main() -> None:
        agent = Places(0, "agent", patience=Patience(600), services=Services())

        sent = turning(key)

        async def turn(message: str) -> str:
            answer = await sent(message)
            sizes.append(agent.size)
            return answer

        async def conversation(number: int) -> None:
            async with agent.one():
                # The user's part of the turn, 100 ms; at the start as a simulated user's key of
                # 50 a second lets them through: its first request alone until answered, then the
                # next ones 20 ms apart.
                await asyncio.sleep(0.1 if number == 0 else 0.2 + 0.02 * number)
                for _ in range(3):
                    await turned(agent, turn, "hello")  # type: ignore[arg-type]
                    await asyncio.sleep(0.1)

        await asyncio.gather(*(conversation(number) for number in range(conversations)))

    in_virtual_time(main)
    return key, sizes


@pytest.mark.parametrize("seed", range(6))
def test_the_first_turns_words_are_not_taken_for_silence(seed: int) -> None:
    """None of the 120 requests refused, and the conversations never fewer than they start at."""
    key, sizes = played(seed)
    assert key.refused() == 0, key.reached[:8]
    assert min(sizes) >= START, sizes[:12]
