"""A reviewer's tests of the free way's requests that go over HTTP after all (``Places.freely``,
``Places._tried``'s opening): what they name, and when the free way ends. Each holds what the
places did before the free way stopped setting a ``Told`` of its own (e893603), and each names
the case it attacks."""

from __future__ import annotations

import asyncio
from typing import Any

from support.clock import in_virtual_time

from convy.busy import Busy, Patience, Places
from convy.model import PatientModel, Reply
from convy.quota import TOLD, Heard, Quota, Services

SHORT = 0.05
QUOTED = Heard(requests=Quota(remaining=5.0, reset=1.0, limit=10.0))


def named(service: str, heard: Heard | None = None) -> None:
    """What convy's HTTP layer does as a request starts (``_traced``) and as its response comes
    (``_checked``): the service named, and what it said, on the ``Told`` the request finds."""
    told = TOLD.get()
    if told is not None:
        told.service = service
        if heard is not None:
            told.heard = heard


class Model:
    """A model answering in-process unless told otherwise: each request runs ``steps[n]`` (the
    n-th request's, from 0) if there is one, else answers at once."""

    name = "a model"

    def __init__(self) -> None:
        self.steps: dict[int, Any] = {}
        self.sent = 0

    async def reply(self, messages: Any) -> Reply:
        number = self.sent
        self.sent += 1
        step = self.steps.get(number)
        if step is not None:
            await step()
        return Reply("hello")


async def free(model: Model, places: Places) -> PatientModel:
    patient = PatientModel(model, places)
    await patient.reply(())
    await patient.reply(())
    assert places._free
    return patient


def test_a_request_let_go_after_another_named_its_service_is_not_sent_the_free_way() -> None:
    """Two requests of a participant on the free way under way at once: the first goes over HTTP
    after all (it names its service as it starts, then waits for its answer); the second is let
    go after that. The free way ended when the service was named, so the second is sent as any
    request is, with a ``Told`` of its own, and what its response says of the limits is heard:
    the participant knows the service and its rate. (cpu5 ends the free way only as the first
    request ends, so the second goes the free way and what its service said is lost.)"""

    async def main() -> tuple[bool, float]:
        model = Model()
        places = Places(4)
        patient = await free(model, places)
        gate = asyncio.Event()

        async def over_http() -> None:
            named("a service")
            await gate.wait()

        async def quoted() -> None:
            named("a service", QUOTED)

        model.steps = {2: over_http, 3: quoted}
        first = asyncio.create_task(patient.reply(()))
        await asyncio.sleep(0)  # the first has named its service, and waits for its answer
        await patient.reply(())
        gate.set()
        await first
        known = places._services._known.get("a service") is places._pacing.service
        return known, places._pacing.service.meters["requests"].rate

    known, rate = in_virtual_time(main)
    assert known
    assert rate > 0


def test_an_in_process_refusal_is_not_put_down_to_a_service_another_request_named() -> None:
    """The first of two requests under way on the free way goes over HTTP (names "a service") and
    is answered; the second, let go after the first named its service, is refused by in-process
    code that never reached any service. The refusal is put down to no service: the other
    processes of a spread run hear of no pause, and the participant knows no service. (cpu5 lets
    the second go the free way, and its refusal reads the name the first request left: a pause
    told of a service the request never used.)"""
    told_of: list[tuple[str, float]] = []

    async def main() -> bool:
        model = Model()
        places = Places(4, services=Services(heard=lambda service, pause: told_of.append((service, pause))))
        patient = await free(model, places)
        first_gate, second_gate = asyncio.Event(), asyncio.Event()

        async def over_http() -> None:
            named("a service")
            await first_gate.wait()

        async def refused() -> None:
            await second_gate.wait()
            raise Busy("429 from in-process code", SHORT)

        model.steps = {2: over_http, 3: refused}
        first = asyncio.create_task(patient.reply(()))
        await asyncio.sleep(0)  # the first has named its service
        second = asyncio.create_task(patient.reply(()))
        await asyncio.sleep(0)  # the second is under way
        first_gate.set()
        await first
        second_gate.set()
        await second
        return "a service" in places._services._known

    assert in_virtual_time(main) is False
    assert told_of == []


def test_a_refusal_of_a_request_that_named_its_service_in_a_task_of_its_own_is_put_down_to_it() -> None:
    """A model request on the free way whose own code sends over HTTP in a task it starts
    (``asyncio.gather``, as a model fanning out would), refused there: the service named in that
    task is the refusal's, as it was when the request's ``Told`` was a context variable the task
    inherited. The other processes of a spread run are told of the pause, and the participant
    knows the service. (cpu5 keeps only names given in the request's own task: the refusal is put
    down to no service.)"""
    told_of: list[tuple[str, float]] = []

    async def main() -> bool:
        model = Model()
        places = Places(4, services=Services(heard=lambda service, pause: told_of.append((service, pause))))
        patient = await free(model, places)

        async def sent() -> None:
            named("a service")
            raise Busy("429", SHORT)

        async def fanned_out() -> None:
            await asyncio.gather(sent())

        model.steps = {2: fanned_out}
        await patient.reply(())
        return places._services._known.get("a service") is places._pacing.service

    assert in_virtual_time(main) is True
    assert told_of == [("a service", SHORT)]


def test_an_opening_refused_in_a_task_of_its_own_is_put_down_to_its_service() -> None:
    """A conversation's opening (``retried``, not paced) of a participant on the free way that
    opens over HTTP in a task it starts, refused there: the refusal names the service, and the
    participant knows it from then on, as with a plain ``Told`` of its own the task inherited.
    (cpu5: the name given in another task is not the opening's, so no service is known.)"""
    tries = 0

    async def opening() -> str:
        nonlocal tries
        tries += 1

        async def sent() -> None:
            named("a service", QUOTED)
            if tries == 1:
                raise Busy("429", SHORT)

        await asyncio.gather(sent())
        return "open"

    async def main() -> tuple[str, bool]:
        model = Model()
        places = Places(4, "agent")
        await free(model, places)
        opened = await places.retried(opening, paced=False)
        return opened, places._services._known.get("a service") is places._pacing.service

    assert in_virtual_time(main) == ("open", True)


def test_a_refusal_names_its_service_however_many_other_requests_named_theirs_meanwhile() -> None:
    """A model request on the free way that named its service, then waited while many requests
    outside it (100, in tasks of their own) named theirs, is refused: it is put down to its own
    service all the same. (cpu5 keeps the latest 64 names given on ``quota.UNTOLD``: the
    request's own is gone by then, and the refusal is put down to no service.)"""
    told_of: list[tuple[str, float]] = []

    async def main() -> None:
        model = Model()
        places = Places(4, services=Services(heard=lambda service, pause: told_of.append((service, pause))))
        patient = await free(model, places)
        gate = asyncio.Event()

        async def over_http() -> None:
            named("a service")
            await gate.wait()
            raise Busy("429", SHORT)

        async def elsewhere() -> None:
            named("another service")

        model.steps = {2: over_http}
        request = asyncio.create_task(patient.reply(()))
        await asyncio.sleep(0)
        await asyncio.gather(*(elsewhere() for _ in range(100)))
        gate.set()
        await request

    in_virtual_time(main)
    assert told_of == [("a service", SHORT)]


def test_a_task_a_request_started_that_names_a_service_after_it_ends_the_free_way() -> None:
    """A model request on the free way starts a task that outlives it (a model's background work,
    a connection kept warm) and later sends over HTTP: the task inherited the request's ``Told``,
    so the service it names ends the participant's free way then, as a service named while the
    request was under way would. (cpu5: the task names its service on ``quota.UNTOLD`` when no
    request of the participant is under way to see the count move: the free way goes on.)"""

    async def main() -> bool:
        model = Model()
        places = Places(4)
        patient = await free(model, places)
        later = asyncio.Event()
        kept: list[asyncio.Task[None]] = []

        async def warm() -> None:
            await later.wait()
            named("a service")

        async def started() -> None:
            kept.append(asyncio.create_task(warm()))

        model.steps = {2: started}
        await patient.reply(())
        later.set()
        await kept[0]
        return places._free is not None

    assert in_virtual_time(main) is False


def test_a_request_on_the_free_way_is_not_put_down_to_the_service_of_another_participants_request_in_it() -> None:
    """A judge's model request on the free way whose own code asks another participant's model
    (a ``PatientModel`` of places of its own, also on the free way), which goes over HTTP and,
    its patience spent, is refused: the judge's request had its own ``Told``, which the other's
    hid, so its refusal is put down to no service, and the judge's places know none. (cpu5: both
    find ``quota.UNTOLD``, in the same task, and the judge's places take the other's service for
    their own: they share its pace from then on.)"""

    async def main() -> bool:
        inner_model = Model()
        inner_places = Places(4, "user", patience=Patience(seconds=0.0))
        inner = await free(inner_model, inner_places)

        async def over_http_refused() -> None:
            named("a service")
            raise Busy("429", SHORT)

        inner_model.steps = {2: over_http_refused}
        outer_model = Model()
        outer_places = Places(4, "judge")
        outer = await free(outer_model, outer_places)

        async def asks_the_other() -> None:
            await inner.reply(())  # refused: its patience is spent at once

        outer_model.steps = {2: asks_the_other}
        await outer.reply(())
        return "a service" in outer_places._services._known

    assert in_virtual_time(main) is False


def test_an_opening_refused_keeps_the_last_word_its_service_said_over_its_requests() -> None:
    """A conversation's opening on the free way sends two requests to its service in its own
    task: the first is answered with the service's word (nothing left, whole again in 0.2 s); the
    second is named and breaks off before any answer, and the agent's code says its service was
    busy (``Retry-After`` 1 s). A ``Told`` keeps "the last thing a service said of its limits
    while one request was sent": the refusal's reset of 0.2 s shortens the pause, and the opening
    is tried again then. (cpu5 keeps what was said per name given on ``quota.UNTOLD``: the second
    naming said nothing, and the opening waits the whole second.)"""
    tries = 0

    async def opening() -> str:
        nonlocal tries
        tries += 1
        named("a service", Heard(requests=Quota(remaining=0.0, reset=0.2, limit=1.0)))
        named("a service")  # the second request: named as it starts, and no answer comes
        if tries == 1:
            raise Busy("429", 1.0)
        return "open"

    async def main() -> tuple[str, float]:
        places = Places(4, "agent")
        await free(Model(), places)
        start = asyncio.get_running_loop().time()
        opened = await places.retried(opening, paced=False)
        return opened, asyncio.get_running_loop().time() - start

    opened, seconds = in_virtual_time(main)
    assert opened == "open"
    assert seconds < 1.0


def test_a_request_elsewhere_does_not_change_how_a_participants_next_request_is_sent() -> None:
    """A participant on the free way has a request under way, answered in-process, while a
    request outside it (another participant's, or one sent outside any) names its service in a
    task of its own. The participant is no different for it: its next request, which goes over
    HTTP after all, is still sent the free way, and what its response said is not heard, as for
    any request on the free way. (cpu5 counts every name given on ``quota.UNTOLD``: the count
    moved while the first request was under way, so the participant's free way ended, and its
    next request, sent with a ``Told`` of its own, hears its service's rate: what one participant
    learns depends on what unrelated tasks did meanwhile.)"""

    async def main() -> tuple[float, bool]:
        model = Model()
        places = Places(4, "judge")
        patient = await free(model, places)
        gate = asyncio.Event()

        async def in_process() -> None:
            await gate.wait()

        async def quoted() -> None:
            named("a service", QUOTED)

        async def elsewhere() -> None:
            named("another service")

        model.steps = {2: in_process, 3: quoted}
        first = asyncio.create_task(patient.reply(()))
        await asyncio.sleep(0)
        await asyncio.create_task(elsewhere())
        gate.set()
        await first
        await patient.reply(())
        return places._pacing.service.meters["requests"].rate, "a service" in places._services._known

    assert in_virtual_time(main) == (0.0, False)
