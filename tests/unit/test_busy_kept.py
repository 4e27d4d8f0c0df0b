"""A reviewer's properties of what the pacing layer reads rather than keeps (cpu6): ``Pace.most``
read from the last second's answers and the most of them at their latest trim, ``Service.latest``
numbering the moments a service keeps from its count of sends, and ``Places.sends`` counted from
the ranks given. Each is held against the way ad07358 kept the same thing (written out here as a
reference), over random sequences in virtual time; each passes there too (``latest`` read as
ad07358's ``sent``, which held the numbers itself)."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from support.clock import in_virtual_time

from convy.busy import Busy, Patience, Places
from convy.model import PatientModel, Reply
from convy.quota import Pace, Service


class KeptPace:
    """ad07358's ``Pace`` as far as the last second's answers go: the most of them kept on every answer."""

    def __init__(self) -> None:
        self.answers: deque[float] = deque()
        self.most = 0

    def heard(self, sent: float) -> None:
        # The second before the answer's send, not before the answer (slow1): an answer that took a
        # second or more counts among the answers sent within a second of it.
        self.answers.append(sent)
        while self.answers and self.answers[0] < sent - 1.0:
            self.answers.popleft()
        self.most = max(self.most, len(self.answers))

    def let_through(self, now: float) -> int:
        while self.answers and self.answers[0] < now - 1.0:
            self.answers.popleft()
        return len(self.answers)


def latest(service: Service) -> list[tuple[int, float]]:
    """The latest sends, newest first, with their numbers: ``Service.latest``, or ad07358's
    ``sent`` of numbers and moments."""
    if hasattr(service, "latest"):
        return list(service.latest())
    return list(reversed(service.sent))  # type: ignore[arg-type]  # ad07358's sent of tuples


# A step of the clock, and what happens then: an answer (sent some time before, maybe over a
# second, maybe before answers already in), a count of the last second's, or an answer on the
# free way (``Places.freely_answered``: heard at the moment it was sent).
STEP = st.sampled_from([0.0, 0.001, 0.3, 0.5, 0.999, 1.0, 1.0001, 2.5])
AGE = st.sampled_from([0.0, 0.0, 0.2, 0.999, 1.0, 1.0001, 1.7, 3.0])
EVENTS = st.lists(st.tuples(STEP, st.sampled_from(["heard", "counted", "free"]), AGE), max_size=120)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(events=EVENTS)
def test_the_most_answers_read_are_those_kept_on_every_answer(events: list[tuple[float, str, float]]) -> None:
    """``Pace.most`` read beside the last second's answers is, after every step, the most that
    keeping it on every answer gives, and the answers themselves the same: answers out of the
    order they were sent in, answers that took over a second, counts in between."""
    pace, kept = Pace(), KeptPace()
    now = 1000.0
    for step, what, age in events:
        now += step
        sent = now - age
        match what:
            case "heard" | "free":
                pace.heard(sent)
                kept.heard(sent)
            case _:
                assert pace.let_through(now) == kept.let_through(now)
        assert (pace.most, list(pace.answers)) == (kept.most, list(kept.answers))


# What is done to a service: a send noted by ``took``, one noted as the free way notes it, a send
# (some way back, or none kept) gone on the wire later, a latest send late.
SERVICE_EVENTS = st.lists(
    st.tuples(st.sampled_from(["took", "free", "wired", "late"]), st.integers(-2, 20), st.floats(0.0, 0.05)),
    max_size=400,
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(events=SERVICE_EVENTS)
def test_a_services_latest_sends_are_numbered_as_when_each_kept_its_number(
    events: list[tuple[str, int, float]],
) -> None:
    """``Service.latest`` gives each kept moment the number its send was given, as a deque of
    (number, moment) kept them, past the 256 kept, through ``wired`` and ``late``."""
    service = Service(0.5)
    service.meters["requests"].rate = 5.0
    kept: deque[tuple[int, float]] = deque(maxlen=256)
    now, count = 1000.0, 0
    for what, back, later in events:
        now += later
        match what:
            case "took":
                number = service.took(now, 0.5)
                kept.append((number, now))
                count += 1
            case "free":
                # As the free way notes it (``Places.freely``); ad07358 kept the number beside it.
                service.sent.append(now if hasattr(service, "latest") else (service.sends, now))  # type: ignore[arg-type]
                service.sends += 1
                kept.append((count, now))
                count += 1
            case "wired":
                number = count - 1 - back
                service.wired(number, now + later)
                for index in range(len(kept) - 1, max(len(kept) - 17, -1), -1):
                    if kept[index][0] == number:
                        kept[index] = (number, now + later)
                        break
            case _:
                number = count - 1 - back % 3
                if kept and kept[-1][0] == number and kept[-1][1] < now + later:
                    kept[-1] = (number, now + later)
                service.late(number, now + later)
        assert latest(service) == list(reversed(kept))


# A request of a participant: answered at once or after a while, refused (with a pause or
# none), failing, or interrupted; sent in a place (``sent``), by a model (``PatientModel``, the
# free way's caller), in a place held (``retried``), or opening (``retried`` not paced).
OUTCOME = st.sampled_from(["now", "now", "later", "busy", "busy-said", "fails", "interrupted"])
WAY = st.sampled_from(["sent", "model", "held", "opening"])
REQUESTS = st.lists(st.tuples(WAY, OUTCOME, st.booleans()), min_size=1, max_size=30)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(requests=REQUESTS, size=st.sampled_from([0, 1, 2]), cancel=st.integers(0, 40))
def test_a_participants_sends_are_its_services_numbered_sends(
    requests: list[tuple[str, str, bool]], size: int, cancel: int
) -> None:
    """A participant alone on its service (no name given, no meter): every request it lets go is
    numbered by the service, so its count of sends (read from the ranks given) is the service's
    count, whatever came of them: refused and tried again, failing, interrupted, cancelled while
    waiting to be sent or under way, a request of a second task beside it."""

    async def main() -> tuple[int, int]:
        places = Places(size, patience=Patience(2.0, 0.1))

        def request(outcome: str) -> Any:
            tries = 0

            async def ask() -> str:
                nonlocal tries
                tries += 1
                if outcome == "later":
                    await asyncio.sleep(0.3)
                elif outcome.startswith("busy") and tries == 1:
                    raise Busy("429", 0.05 if outcome == "busy-said" else None)
                elif outcome == "fails":
                    raise ValueError("no")
                elif outcome == "interrupted":
                    raise KeyboardInterrupt
                return "answer"

            return ask

        class Model:
            name = "a model"

            def __init__(self, ask: Any) -> None:
                self.ask = ask

            async def reply(self, messages: Any) -> Reply:
                return Reply(await self.ask())

        async def one(way: str, outcome: str) -> None:
            ask = request(outcome)
            try:
                match way:
                    case "sent":
                        await places.sent(ask)
                    case "model":
                        await PatientModel(Model(ask), places).reply(())
                    case "held":
                        seat = await places.seat()
                        try:
                            await places.retried(ask)
                        finally:
                            seat.release()
                    case _:
                        await places.retried(ask, paced=False)
            except (Busy, ValueError, KeyboardInterrupt):
                pass

        async def participant(beside: bool) -> None:
            for way, outcome, alongside in requests:
                if alongside == beside:
                    await one(way, outcome)

        tasks = [asyncio.create_task(participant(False)), asyncio.create_task(participant(True))]
        await asyncio.sleep(cancel * 0.01)
        if cancel % 3 == 0:
            tasks[cancel % 2].cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return places.sends, places._pacing.service.sends

    sends, numbered = in_virtual_time(main)
    assert sends == numbered
