"""Prompts: a prompt with ``{{ name }}`` slots filled from a scenario's values, and the prompts
convy ships.
"""

from __future__ import annotations

import functools
import re
from typing import Any, ClassVar

import msgspec

from convy.files import Shipped
from convy.slots import Slotted, nearest

STOP = "###STOP###"


# A slot written with one brace, as Python's format writes it (``{instructions}``), not within two.
_ONE_BRACE = re.compile(r"(?<!\{)\{\s*(\w+)\s*\}(?!\})")


# A template engine's tag (Jinja's ``{% if persona %}``): never read by convy.
_TAG = re.compile(r"\{%[^\n]{0,40}?%\}|\{%")


class Prompt(msgspec.Struct, frozen=True):
    """A prompt with ``{{ name }}`` slots, filled from a scenario's values by the rule of
    ``convy.slots`` (``\\{{`` writes a literal ``{{``).

    A filled prompt is at most ``LIMIT`` bytes of UTF-8, as large as a scenario file may be: a
    value used in many slots could otherwise fill gigabytes (a 900 KB file, 20 GB). The size is
    counted before the text is made.
    """

    text: str

    LIMIT: ClassVar[int] = 1024 * 1024

    def slots(self) -> frozenset[str]:
        return Slotted(self.text).slots()

    def size(self, values: dict[str, Any]) -> int:
        """How many bytes the text filled with ``values`` would take, counted without making it
        (a slot with no value counts as empty)."""
        return Slotted(self.text).size(values)

    def missing(self, values: dict[str, Any]) -> str:
        """The slots ``values`` leave without a value (or a stray ``{{``), said, or "" when there
        are none."""
        slotted = Slotted(self.text)
        return slotted.stray() or slotted.missing(values)

    def oversize(self, values: dict[str, Any]) -> str:
        """What is wrong with the size of the text filled with ``values``, or "" when it fits."""
        size = self.size(values)
        if size <= self.LIMIT:
            return ""
        return f"would be {size / self.LIMIT:,.1f} MB, more than {self.LIMIT // 1024 // 1024} MB"

    def unfit(self) -> tuple[str, ...]:
        """What would keep this prompt, as a simulator prompt, from telling the simulated user its
        scenario or how to end, each said with the fix; none when it is sound. Without
        ``{{ instructions }}`` (or ``{{ user }}``) no scenario's ``user:`` would reach the model;
        without ``{{ stop }}`` (or the mark written out) it would never learn the mark that ends a
        dialogue. A slot written with one brace, as Python's ``format`` writes it, and a template
        tag (``{% if %}``) are sent as written: said so."""
        slots = self.slots()
        # A slot misspelt (``{{ instrucions }}``) is said by the scenario's values, with the one meant.
        slots |= {nearest(slot, ("instructions", "user", "stop")) for slot in slots}
        problems: list[str] = []
        known = "its slots are {{ instructions }} (or {{ user }}), {{ stop }} and the scenario's vars"
        if not {"instructions", "user"} & slots:
            single = _ONE_BRACE.search(self.text)
            if single and single.group(1) in ("instructions", "user"):
                problems.append(
                    f"{single.group(0)} is sent as written, so the scenario's user: would never reach the simulated user: "
                    f"a slot has two braces, {{{{ {single.group(1)} }}}}"
                )
            else:
                problems.append(
                    "no {{ instructions }}: the scenario's user: would never reach the simulated user; "
                    f"put {{{{ instructions }}}} where it reads who it is and what it wants ({known})"
                )
        if "stop" not in slots and STOP not in self.text:
            single = next((found for found in _ONE_BRACE.finditer(self.text) if found.group(1) == "stop"), None)
            if single:
                problems.append(f"{single.group(0)} is sent as written: a slot has two braces, {{{{ stop }}}}")
            else:
                problems.append(
                    f"no {{{{ stop }}}}: the simulated user would never learn the mark that ends a dialogue ({STOP}), "
                    "so every dialogue would run to max_turns; tell it, e.g. \"when you are done, reply with {{ stop }}\""
                )
        tag = _TAG.search(self.text)
        if tag:
            problems.append(
                f"{tag.group(0)!r} is sent as written: convy fills {{{{ name }}}} slots only, no {{% if %}} nor {{% for %}}; "
                "write what differs in each scenario's user: or vars"
            )
        return tuple(problems)

    def filled(self, values: dict[str, Any]) -> str:
        """The text with every slot filled; a slot with no value, a stray ``{{``, or a text that
        would be larger than ``LIMIT``, is a ``ValueError`` saying so."""
        missing = self.missing(values)
        if missing:
            raise ValueError(missing)
        oversize = self.oversize(values)
        if oversize:
            raise ValueError(f"the filled text {oversize}")
        return Slotted(self.text).filled(values)


@functools.cache
def default_user_prompt() -> str:
    """The simulated user's prompt convy ships, read from the package once."""
    return Shipped(("prompts", "user.md")).text()


@functools.cache
def default_judge_prompt() -> str:
    """The judge's instructions convy ships, read from the package once."""
    return Shipped(("prompts", "judge.md")).text()
