"""A busy service inside a turn, against LiteLLM's proxy (issue 26, item 7).

The session's proxy (tests/support/litellmproxy.py) has a tool-calling mock model with an ``rpm`` limit: the
proxy's router refuses a request over it with a 429 until its minute is over. The template's LLM
assistant (three requests a turn: the mock always asks for the tool) plays three conversations of
three turns at once, 27 requests, more than a minute of the limit allows (15), so some are refused,
most likely in the middle of a turn. The proxy's own callback writes down every reply it sends and
whether the request carried a user's message twice: convy keeps exactly the replies the proxy sent,
their tokens and cost, and no request carried a user's message twice.

The proxy's minute is the test's: it starts as the test starts, so the 27 requests cannot fall in
two minutes of the wall clock and meet no refusal, and turns when convy has been refused, as the
frozen minute never would. The proxy asks for the whole minute, ``llm_provider-retry-after: 60``,
whatever is left of it, and convy waits that (``http.RetryAfter``): in the first test, whose
minute turns when the test turns it, the proxy's refusals ask for a second instead
(``Proxy.waiting``); the second test asserts the 60 s convy was told and the refusals it met, so it
waits for nothing. The third holds that what the proxy says is left of the rpm on each answer
(without a reset) keeps convy from sending every request under way into the minute's end: one is
refused, or at most one for each request the proxy's count left out (it counts those it has
answered). Without ``.venv-proxy`` the tests are skipped.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from support.litellmproxy import LEFT, LIMITED, RPM, Proxy
from test_proxy import usage_of
from test_services_cli import KEY

import convy
from convy.agent import Answer, Call, Message, QueuedAgent, TimeLimited
from convy.attempt import Spent
from convy.busy import Busy, Patience, Places
from convy.model import OpenAiModel, PatientModel, Reply, Said

pytestmark = pytest.mark.timeout(600)


def assistant(url: str) -> Any:
    """The template's assistant (of the convy under test) on the proxy."""
    template = Path(convy.__file__).resolve().parent / "template"
    sys.path.insert(0, str(template))
    try:
        spec = importlib.util.spec_from_file_location("template_assistant_rpm", template / "agents" / "assistant.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(template))
    return module.Assistant(OpenAiModel(LIMITED, url + "/v1", key=SecretStr(KEY), timeout=60))


def test_under_the_proxys_rpm_convy_keeps_every_reply_it_sent_and_sends_no_message_twice(proxy: Proxy) -> None:
    agent = assistant(proxy.url)
    places = Places(3, patience=Patience(300.0))
    before = len(proxy.lines(LIMITED))

    async def one(number: int) -> list[Answer]:
        async with QueuedAgent(TimeLimited(agent, turn=300.0), places).conversation() as conversation:
            return [await conversation.turn(Message(f"Where is A-1043? (conversation {number}, turn {turn})")) for turn in range(3)]

    async def minutes() -> None:
        """The proxy's minute turns each time convy has been refused again (once is enough for 27)."""
        seen = 0
        while True:
            while places.refused == seen:
                await asyncio.sleep(0.02)
            seen = places.refused
            proxy.turned()

    async def main() -> list[list[Answer]]:
        turning = asyncio.create_task(minutes())
        try:
            return list(await asyncio.gather(*(one(number) for number in range(3))))
        finally:
            turning.cancel()

    proxy.turned()  # a minute of its own, whatever the session asked of the model before
    with proxy.waiting(1):  # the minute turns when the test turns it: within the second it asks for
        answers = [answer for conversation in asyncio.run(main()) for answer in conversation]
    kept = [usage for answer in answers for usage in answer.requests()]
    assert places.refused > 0, "more requests than a minute of the limit allows: some were refused"
    proxy.awaited(LIMITED, before + len(kept))
    sent = proxy.lines(LIMITED)[before:]
    calls = sum(1 for answer in answers for step in answer.steps if isinstance(step, Call))
    seen = {
        "proxy answered": len(sent),
        "convy kept": len(kept),
        "tool calls kept": calls,
        "requests with a user message twice": sum(line["twice"] for line in sent),
    }
    assert seen == {"proxy answered": 27, "convy kept": 27, "tool calls kept": 27, "requests with a user message twice": 0}
    ours, theirs = Spent(tuple(kept)).tokens(), Spent(tuple(usage_of({**line["usage"], "cost": line["cost"]}) for line in sent)).tokens()
    assert (ours.requests, ours.input, ours.output) == (theirs.requests, theirs.input, theirs.output)


def test_convy_waits_the_minute_the_proxy_said_of_its_rpm_rather_than_probing(proxy: Proxy) -> None:
    """Once a minute of the router's ``rpm`` is used up, the proxy refuses with the wait it asks for,
    the whole minute (60 s, whatever is left of it), said only as ``llm_provider-retry-after``. convy
    reads it: with a patience shorter than that, the refused request is given up at once, carrying
    the wait the proxy said, after that one refusal. Not read, it was sent again at 1, 2, 4 ... s,
    refused each time within the minute, until the patience ran out. Nothing waits for the minute:
    the test asserts the wait convy was told and the refusals it met, not a time."""
    model = OpenAiModel(LIMITED, proxy.url + "/v1", key=SecretStr(KEY), timeout=60)
    places = Places(1, who="user", patience=Patience(10.0))
    patient = PatientModel(model, places)

    async def main() -> tuple[int, Busy]:
        for sent in range(RPM + 1):
            try:
                await patient.reply((Said("user", f"Where is A-1043? (request {sent})"),))
            except Busy as busy:
                return sent, busy
        pytest.fail(f"the proxy let through {RPM + 1} requests in a minute of an rpm of {RPM}")

    proxy.turned()  # a minute of its own, whatever the session asked of the model before
    let_through, refused = asyncio.run(main())
    assert let_through == RPM - 1, "the router lets through RPM - 1 requests a minute (litellmproxy.LIMITED)"
    assert (refused.retry_after, places.refused, places.given_up) == (60.0, 1, 1)


class Noted:
    """A model as convy's places send to it, noting the requests in the order convy sent them (by
    their last message) and which were answered."""

    def __init__(self, model: OpenAiModel) -> None:
        self.model = model
        self.sent: list[str] = []
        self.answered: set[int] = set()

    @property
    def name(self) -> str:
        return self.model.name

    async def reply(self, messages: tuple[Said, ...]) -> Reply:
        rank = len(self.sent)
        self.sent.append(messages[-1].content)
        reply = await self.model.reply(messages)
        self.answered.add(rank)
        return reply

    def uncounted(self, left: dict[str, int]) -> int:
        """The most requests an answer's count left out of those convy sent up to the one answered
        (of those answered: a refused one is never counted), given what the proxy said was ``left``
        on the answer to each message. The proxy counts the requests it has answered: an answer to
        a request sent after one still under way there says one more is left than its router,
        which counted that one as it let it through, has."""
        answered = sorted(self.answered)
        return max(place + 1 - (RPM - left[self.sent[rank]]) for place, rank in enumerate(answered))


def test_when_the_proxys_rpm_runs_out_one_request_is_refused_not_every_one_under_way(proxy: Proxy) -> None:
    """On each answer of a model with an ``rpm``, the proxy says what is left of its own count
    (``x-ratelimit-remaining-requests``, 15 of 16 after the first) and never when more comes. 7
    places: the first requests alone, then 7 at once, answered together, then 7 more, the last of
    the 15 the minute lets through. Read, what is left holds the next ones back once nothing is
    (its router refuses after "1 left") but for one request alone, whose refusal tells the wait; the
    test turns the minute at that refusal, and the rest go in the next one. Not read, the 7 sent
    at once after the minute's last were all refused. The proxy's refusals ask for a second, not
    its whole minute (``Proxy.waiting``), and its router's minute turns when the test turns it.

    The count the proxy says is of the requests it has answered, while its router counts each one
    as it lets it through: on a loaded machine the proxy may answer a request before one sent
    earlier and still under way there, and say one more is left than its router has. convy takes
    what is left for its requests under way before the answered one too (``Ration``; counted from
    the answered one on, two were refused in one CI), but not for one whose answer it heard first
    though the proxy answered it later. So the proxy's callback writes down what each answer said,
    and the test holds the refusals to one, or to the most requests an answer's count left out of
    those convy sent up to it (none on a quiet machine): far fewer than the 7 under way, not read.

    What is left, the proxy counts apart, by the wall clock's minute (litellmproxy.LEFT), which no
    test can turn: a try counts only if it began and ended in one minute (it takes about two
    seconds), so that the count the proxy says and the one it refuses by are of the same requests;
    one that crossed a minute is played again in a fresh one. Nothing asserted is a time."""
    asked = 22

    def played() -> tuple[int, int, int]:
        """One try: the replies, the refusals convy met, and the most requests an answer's count
        left out."""
        model = Noted(OpenAiModel(LEFT, proxy.url + "/v1", key=SecretStr(KEY), timeout=60))
        places = Places(7, who="user", patience=Patience(300.0))
        patient = PatientModel(model, places)

        async def minutes() -> None:
            """The proxy's minute turns once convy has been refused."""
            while not places.refused:
                await asyncio.sleep(0.02)
            proxy.turned()

        async def main() -> list[Any]:
            turning = asyncio.create_task(minutes())
            try:
                return list(await asyncio.gather(*(patient.reply((Said("user", f"Where is A-1043? (request {sent})"),)) for sent in range(asked))))
            finally:
                turning.cancel()

        proxy.turned()  # a minute of its own, whatever the session asked before
        before = len(proxy.left(LEFT))
        with proxy.waiting(1):
            replies = len(asyncio.run(main()))
        said = dict(proxy.left(LEFT)[before:])
        assert len(said) == replies, "the proxy said what is left on each answer"
        return replies, places.refused, model.uncounted(said)

    for _ in range(3):
        while time.time() % 60 > 30:  # early in a minute of the wall clock, where the proxy counts what is left
            time.sleep(0.5)
        began = time.time() // 60
        replies, refused, uncounted = played()
        if time.time() // 60 == began:
            break
        while time.time() // 60 < began + 2:  # LEFT's count of the minute it ended in is partly spent
            time.sleep(0.5)
    else:
        pytest.fail("three tries each crossed a minute of the wall clock")
    assert replies == asked
    assert 1 <= refused <= max(1, uncounted), f"{refused} refused; the proxy's count left out at most {uncounted}"
