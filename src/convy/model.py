"""The models that play the simulated user and the judge.

A ``Model`` answers a list of chat messages with a ``Reply``. ``Models`` is what a project's
``models.py`` defines: the simulated user's model and the judge's, either of which may be
``Absent`` with the reason, so a run without a key still plays what needs no model.

``Contained`` turns any error of a model into ``ModelFailure``; ``PatientModel`` sends each request
within the participant's places.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

import msgspec

from convy.agent import NoUsage, Usage
from convy.busy import Busy, Places


class ModelFailure(Exception):
    """The simulated user's or the judge's model failed, or said something convy cannot use.

    The attempt gets no verdict and stays out of the pass rate: it says nothing about the agent.
    """


class StillBusy(ModelFailure):
    """The model's service stayed busy for longer than the participant's patience."""


class Said(msgspec.Struct, frozen=True):
    """One chat message sent to a model."""

    role: Literal["system", "user", "assistant"]
    content: str


class Reply(msgspec.Struct, frozen=True):
    """A model's reply: its text and the tokens the request took."""

    text: str
    usage: Usage | NoUsage = NoUsage()


class Model(Protocol):
    """A chat model, known in the run folder by its name."""

    @property
    def name(self) -> str: ...

    async def reply(self, messages: tuple[Said, ...]) -> Reply: ...


class Absent(msgspec.Struct, frozen=True):
    """A model the project has not configured, with what to do about it."""

    reason: str = "no model configured in models.py"
    name: str = "absent"


class Models(msgspec.Struct, frozen=True):
    """The simulated user's model and the judge's model of a project; either may be absent."""

    user: Any = Absent()
    judge: Any = Absent()


class Contained(msgspec.Struct, frozen=True):
    """The same model, whose every error, and every empty reply, is a ``ModelFailure``."""

    model: Any

    @property
    def name(self) -> str:
        return self.model.name

    async def reply(self, messages: tuple[Said, ...]) -> Reply:
        try:
            reply = await self.model.reply(messages)
        except ModelFailure:
            raise
        except Busy as busy:
            raise StillBusy(f"model {self.model.name}: {busy}") from busy
        except Exception as error:  # a bug in the model's code must not stop the run
            raise ModelFailure(f"model {self.model.name} failed: {type(error).__name__}: {error}") from error
        if not reply.text.strip():
            raise ModelFailure(f"model {self.model.name} gave an empty reply")
        return reply


class PatientModel(msgspec.Struct, frozen=True):
    """The same model, sending each request within its participant's places, and again while
    its service is busy and the participant's patience lasts."""

    model: Any
    places: Places

    @property
    def name(self) -> str:
        return self.model.name

    async def reply(self, messages: tuple[Said, ...]) -> Reply:
        return await self.places.sent(lambda: self.model.reply(messages))
