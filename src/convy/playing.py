"""What the simulated user's model plays besides the user: its answer, in character, to an agent
that paused to ask (``InCharacter``), and a scenario's tool where no declared answer fits a call and
the tool says ``simulate: true`` (``PlayedTool``).

Both are the scenario's world, which the simulated user's model already plays, so their requests
go on its model (and its budget, places and patience) and are counted with its requests. Both go
through ``model.Contained``: any failure of the model is a ``ModelFailure``, which the attempt ends
on as the model's, never the agent's (``pauses.Asking.failure``, ``tools.Toolbox.failure``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from convy.agent import NoUsage, Usage
from convy.model import Contained, Model, Said
from convy.problems import ModelFailure
from convy.tools import Tool
from convy.transcript import Transcript

_WORD = re.compile(r"[\w-]+")


class InCharacter(msgspec.Struct, frozen=True):
    """The simulated user, told who it is by ``prompt`` (its filled simulator prompt), answering an
    agent's question in the middle of a turn: the dialogue so far (``heard``: the transcript of
    the turns before, and the message of the turn under way) is given as its dialogue is."""

    model: Model
    prompt: str
    heard: Callable[[], tuple[Transcript, str]]

    async def __call__(self, question: str, options: tuple[str, ...]) -> tuple[str, Usage | NoUsage]:
        transcript, message = self.heard()
        said: list[Said] = [
            Said("system", self.prompt),
            Said("user", "[The agent is ready. Write your first message to it.]"),
        ]
        for turn in transcript.turns:
            said += [Said("assistant", turn.message), Said("user", turn.answer.text or "[the agent said nothing]")]
        said.append(Said("assistant", message))
        choose = f" Answer with exactly one of: {', '.join(options)}." if options else " Answer in a few words."
        said.append(
            Said(
                "user",
                f"[Before it answers, the agent pauses and asks you: {question}{choose} Answer as the person you play would.]",
            )
        )
        reply = await Contained(self.model).reply(tuple(said))
        text = reply.text.strip()
        if not options:
            return text, reply.usage
        chosen = _chosen(text, options)
        if not chosen:
            raise ModelFailure(
                f"the simulated user's model {self.model.name} answered the agent's question ({question}) with "
                f"{text[:200]!r}, not one of its options ({', '.join(options)})",
                (reply.usage,),
            )
        return chosen, reply.usage


def _chosen(text: str, options: tuple[str, ...]) -> str:
    """The option ``text`` is, or begins with, in any case ("Approve.", "aisle, please"), or ""
    where it is none: a word found further in ("No, do not approve") is never taken for a choice."""
    wanted = {option.lower(): option for option in options}
    if (whole := text.strip(" .!\"'`*").lower()) in wanted:
        return wanted[whole]
    first = _WORD.match(text.lstrip(" \"'`*"))
    return wanted.get(first.group(0).lower(), "") if first else ""


class PlayedTool(msgspec.Struct, frozen=True):
    """A model playing a scenario's tools where no declared answer fits a call (``simulate:
    true``): told the tool as the agent sees it, the state the scenario's tools hold now, and the
    call, it answers with the JSON value the tool returns (a reply that is not JSON is taken as
    the tool's text)."""

    model: Model

    async def __call__(
        self, tool: Tool, arguments: Mapping[str, Any], state: Mapping[str, Any]
    ) -> tuple[Any, Usage | NoUsage]:
        told = (
            "You play a software tool that an AI agent under test calls. Answer each call as the real tool would: "
            "with its result as one JSON value and nothing else: no prose, no code fences. Be consistent with the "
            "tool's description and the state of the world given; do not change the state.\n\n"
            f"The tool: {json.dumps(tool.function()['function'])}\n\n"
            f"The state of the world: {json.dumps(state, default=str)}"
        )
        asked = f"The agent calls {tool.name} with {json.dumps(dict(arguments), default=str)}. Its result:"
        reply = await Contained(self.model).reply((Said("system", told), Said("user", asked)))
        text = reply.text.strip()
        fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
        if fenced:
            text = fenced.group(1)
        try:
            return json.loads(text), reply.usage
        except ValueError:
            return text, reply.usage
