"""The free way taken by its callers (``Places.freely``): an agent's turn (``agent.turned``), a
simulated user's model (``PatientModel``) and a judge (``PatientJudge``) send a request of a
participant with no limit and nothing waiting themselves, without ``Places._tried``. What they
count, how a refusal, a failure and a service named on the way go on, and that the counts are
those of the way through ``Places``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support.clock import in_virtual_time

from convy.agent import Answer, Message, Requests, Usage, turned
from convy.busy import TURN, Busy, Places
from convy.judge import Claim, PatientJudge, Ruling
from convy.model import PatientModel, Reply
from convy.quota import TOLD
from convy.transcript import Transcript

SHORT = 0.05


HELLO = Message("hello")


async def answered(message: Message) -> Answer:
    return Answer("answer", Usage(input=1, output=1))


async def freed(places: Places) -> Places:
    """``places`` once a first turn was answered in-process: on the free way from then on."""
    await turned(places, answered, HELLO)
    assert places._free
    return places


def test_a_turn_on_the_free_way_counts_what_the_way_through_places_counts() -> None:
    """Turns of an in-process agent sent by ``turned`` on the free way leave the participant's
    counts (its sends, the service's numbered sends, the last second's most answers, the peak) as
    the same turns sent through ``Places.retried`` leave them."""

    async def main(quick: bool) -> tuple[Any, ...]:
        places = await freed(Places(0))
        for _ in range(5):
            if quick:
                await turned(places, answered, HELLO)
            else:
                await places.retried(lambda: answered(HELLO))
        service = places._pacing.service
        return places.sends, [number for number, _ in service.latest()], service.pace.most, places.peak, places.refused

    assert in_virtual_time(lambda: main(True)) == in_virtual_time(lambda: main(False))


def test_a_turn_refused_by_the_agents_own_code_on_the_free_way_plays_again_keeping_what_it_spent() -> None:
    """A turn on the free way whose agent's own code says its service was busy (``Busy`` with what
    it spent) is played again after the pause, as a refused turn sent through ``Places`` is: the
    answer holds what both tries spent, the refusal is counted, and the turn under way (``TURN``)
    is set for each try and reset after."""
    tries: list[object] = []

    async def turn(message: Message) -> Answer:
        tries.append(TURN.get())
        if len(tries) == 1:
            raise Busy("429", SHORT, spent=Answer("", Usage(input=5, output=0)))
        return Answer("answer", Usage(input=1, output=1))

    async def main() -> tuple[Answer, Places, object]:
        places = await freed(Places(0))
        answer = await turned(places, turn, HELLO)
        return answer, places, TURN.get()

    answer, places, after = in_virtual_time(main)
    assert answer.text == "answer"
    assert answer.usage == Requests((Usage(input=5, output=0), Usage(input=1, output=1)))
    assert places.refused == 1
    assert places.sends == 3  # the first turn, then this one's two tries
    assert all(under_way is not None for under_way in tries) and after is None


def test_a_turn_refused_for_good_on_the_free_way_ends_without_another_try() -> None:
    """A ``final`` refusal (its request already sent again until its patience ran out) on the
    free way ends the turn with what it spent, as through ``Places``: no second try."""
    tries = 0

    async def turn(message: Message) -> Answer:
        nonlocal tries
        tries += 1
        raise Busy("429", SHORT, spent=Answer("", Usage(input=5, output=0)), final=True)

    async def main() -> Busy:
        places = await freed(Places(0))
        with pytest.raises(Busy) as raised:
            await turned(places, turn, HELLO)
        return raised.value

    busy = in_virtual_time(main)
    assert tries == 1
    assert busy.final
    assert busy.spent == Answer("", Usage(input=5, output=0))


def test_an_error_of_a_turn_on_the_free_way_goes_on_and_resets_the_turn_under_way() -> None:
    async def turn(message: Message) -> Answer:
        raise ValueError("the agent's own bug")

    async def main() -> object:
        places = await freed(Places(0))
        with pytest.raises(ValueError, match="own bug"):
            await turned(places, turn, HELLO)
        await turned(places, answered, HELLO)  # the places go on as before
        return TURN.get()

    assert in_virtual_time(main) is None


class Model:
    """A model answering in-process; ``refusals`` first requests are refused, and one that
    ``names`` a service names it on the ``Told`` it finds, as convy's HTTP layer does."""

    name = "a model"

    def __init__(self, refusals: int = 0, names: str = "") -> None:
        self.refusals = refusals
        self.names = names
        self.sent = 0
        self.gate: asyncio.Event | None = None

    async def reply(self, messages: Any) -> Reply:
        self.sent += 1
        if self.names:
            told = TOLD.get()
            assert told is not None
            told.service = self.names
        if self.gate is not None:
            await self.gate.wait()
        if self.sent <= self.refusals:
            raise Busy("429", SHORT)
        return Reply("hello")


def test_a_model_request_on_the_free_way_holds_a_place_while_it_is_under_way() -> None:
    """A simulated user's model request on the free way holds one of its places: with one place,
    a second request waits for the first, and the place is free again at the end."""

    async def main() -> tuple[int, int, int]:
        model = Model()
        places = Places(1)
        patient = PatientModel(model, places)
        await patient.reply(())
        assert places._free
        model.gate = asyncio.Event()
        first = asyncio.create_task(patient.reply(()))
        second = asyncio.create_task(patient.reply(()))
        await asyncio.sleep(0)
        under_way = model.sent
        model.gate.set()
        await asyncio.gather(first, second)
        return under_way, places.peak, places._taken

    assert in_virtual_time(main) == (2, 1, 0)


def test_a_model_request_refused_on_the_free_way_is_sent_again_after_the_pause() -> None:
    async def main() -> tuple[str, int, int, int, float]:
        model = Model()
        places = Places(2)
        patient = PatientModel(model, places)
        await patient.reply(())
        model.refusals = 2  # the next request: refused once (its second send answered)
        start = asyncio.get_running_loop().time()
        reply = await patient.reply(())
        return reply.text, model.sent, places.refused, places._taken, asyncio.get_running_loop().time() - start

    text, sent, refused, taken, seconds = in_virtual_time(main)
    assert (text, sent, refused, taken) == ("hello", 3, 1, 0)
    assert seconds == pytest.approx(SHORT)  # virtual time: the pause, and nothing more


def test_a_model_request_that_names_a_service_on_the_free_way_ends_it() -> None:
    """The ``Told`` a model request finds on the free way is the places', set for the request and
    reset after it: a request that names its service on it (convy's HTTP layer, as it starts)
    ends the free way for the next ones."""

    async def main() -> tuple[bool, object]:
        model = Model()
        places = Places(2)
        patient = PatientModel(model, places)
        await patient.reply(())
        await patient.reply(())
        assert places._free
        model.names = "a service"
        await patient.reply(())
        return places._free is not None, TOLD.get()

    assert in_virtual_time(main) == (False, None)


def test_a_judge_refused_on_the_free_way_is_asked_again() -> None:
    class Judge:
        name = "a judge"
        asked = 0

        async def ruling(self, claims: Any, transcript: Any) -> Ruling:
            self.asked += 1
            if self.asked == 2:
                raise Busy("429", SHORT)
            return Ruling((Claim("c", True, "why"),))

    async def main() -> tuple[int, int, int]:
        judge = Judge()
        places = Places(1)
        patient = PatientJudge(judge, places)
        await patient.ruling(("c",), Transcript())
        assert places._free
        ruling = await patient.ruling(("c",), Transcript())
        assert ruling.claims[0].held
        return judge.asked, places.refused, places._taken

    assert in_virtual_time(main) == (3, 1, 0)


def test_an_opening_refused_on_the_free_way_is_tried_again_and_names_its_service() -> None:
    """A try not paced (a conversation's opening, ``retried`` with ``paced`` False) of a
    participant on the free way finds a ``Told`` of its own, as any opening does: a refusal of one
    that named its service on it is tried again after the pause, counted, and the participant
    knows the service from then on, off the free way."""
    tries: list[object] = []

    async def opening() -> str:
        told = TOLD.get()
        tries.append(told)
        assert told is not None
        told.service = "a service"
        if len(tries) == 1:
            raise Busy("429", SHORT)
        return "open"

    async def main() -> tuple[str, int, bool, bool, float, object]:
        places = await freed(Places(0))
        start = asyncio.get_running_loop().time()
        opened = await places.retried(opening, paced=False)
        named = places._services._known.get("a service") is places._pacing.service
        free = places._free is not None
        return opened, places.refused, free, named, asyncio.get_running_loop().time() - start, TOLD.get()

    opened, refused, free, named, seconds, after = in_virtual_time(main)
    assert (opened, refused, free, named, after) == ("open", 1, False, True, None)
    assert seconds == pytest.approx(SHORT)
    assert len(tries) == 2 and tries[0] is not tries[1]


def test_a_refusal_on_the_free_way_names_no_service_that_an_earlier_stretch_of_it_heard_of() -> None:
    """A participant whose request over HTTP named its service on the free way, then answered
    in-process again (back on the free way), has two in-process requests refused at once: the
    first refusal ends the free way, and the second, which named nothing, is not put down to the
    service named before (its name kept from the earlier stretch): no service is known."""

    async def plain() -> str:
        return "plain"

    async def over_http() -> str:
        told = TOLD.get()
        assert told is not None
        told.service = "a service"
        return "http"

    def refused_once(after: float) -> Any:
        refusals = [1]

        async def request() -> str:
            await asyncio.sleep(after)
            if refusals.pop() if refusals else 0:
                raise Busy("429", SHORT)
            return "answered"

        return request

    async def main() -> tuple[bool, list[str], int, object]:
        places = Places(0, "user")
        await places.sent(plain)  # the free way begins
        await places.sent(over_http)  # names its service on the way: the free way ends
        await places.sent(plain)  # answered in-process: the free way again
        free = places._free is not None
        answers = await asyncio.gather(places.sent(refused_once(SHORT)), places.sent(refused_once(2 * SHORT)))
        return free, list(answers), places.refused, places._services._known.get("a service")

    assert in_virtual_time(main) == (True, ["answered", "answered"], 2, None)


def test_a_model_request_that_names_a_service_only_in_a_task_of_its_own_ends_the_free_way() -> None:
    """A request on the free way that went over HTTP only in tasks it started (``asyncio.gather``)
    named its service there, on the ``Told`` those tasks inherited from it: the free way ends with
    the name, to put a refusal down to, and the next request is sent with a ``Told`` of its own."""

    class Gathering(Model):
        async def reply(self, messages: Any) -> Reply:
            async def one() -> None:
                told = TOLD.get()
                assert told is not None
                told.service = "a service"

            await asyncio.gather(one(), one())
            return Reply("hello")

    async def main() -> tuple[bool, bool, str, bool]:
        places = Places(2)
        await PatientModel(Model(), places).reply(())
        free = places._free is not None
        await PatientModel(Gathering(), places).reply(())
        ended, named = places._free is not None, places._unnamed.named
        found: list[object] = []

        class Looking(Model):
            async def reply(self, messages: Any) -> Reply:
                found.append(TOLD.get())
                return Reply("hello")

        await PatientModel(Looking(), places).reply(())
        return free, ended, named, found[0] not in (None, places._unnamed)

    assert in_virtual_time(main) == (True, False, "a service", True)


def test_an_opening_refused_on_the_free_way_keeps_what_its_service_said() -> None:
    """An opening on the free way is sent with a plain ``Told`` (not one that asks its service):
    what its service said there, in its task, is its refusal's, read from that ``Told``. Here the refusal says the limit
    is whole again in 0.2 s, sooner than its ``Retry-After`` of 1 s: the opening is tried again
    then (and a millisecond more, for a reset said in milliseconds)."""
    from convy.quota import Heard, Quota

    tries = 0

    async def opening() -> str:
        nonlocal tries
        tries += 1
        told = TOLD.get()
        assert told is not None
        told.service = "a service"
        if tries == 1:
            told.heard = Heard(requests=Quota(remaining=0, reset=0.2, limit=1))
            raise Busy("429", 1.0)
        return "open"

    async def main() -> tuple[str, int, float]:
        places = await freed(Places(0))
        start = asyncio.get_running_loop().time()
        opened = await places.retried(opening, paced=False)
        return opened, places.refused, asyncio.get_running_loop().time() - start

    opened, refused, seconds = in_virtual_time(main)
    assert (opened, refused) == ("open", 1)
    assert seconds == pytest.approx(0.201)
