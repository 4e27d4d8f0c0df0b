"""The ``{{ name }}`` slots of the texts a user writes, and the one rule that reads them.

A slot is ``{{`` and ``}}`` round a name of letters, digits and ``_`` (spaces inside are
optional). The same rule holds in every text convy fills: a scenario's ``user:``, ``script:``,
claims and checks (from its ``vars``, ``matrix`` and persona), the simulator prompt, and a JSON
agent's body. ``\\{{`` is a literal ``{{``: the backslash is dropped and what follows is text,
not a slot. So is ``\\{name}`` a literal ``{name}`` (one brace, a name, one brace): where a
one-brace ``{name}`` would be taken for a slot written wrong, the backslash says it is meant; a
pattern keeps that backslash, its own escape for a brace. Any other ``{{`` (``{{ seat-no }}``,
``{{ 1 }}``, one never closed) is a mistake the reader refuses, rather than sending it as written.

Nothing here knows which names a text may use: the reader of each text says that.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

ESCAPE = "\\{{"  # written in a text for a literal "{{"
BRACE = "\\{"  # written before "name}" for a literal "{name}"

# In one pass: an escaped "{{", a slot (its name captured), or any other "{{" (a stray one,
# with what follows it up to a "}}" on the same line, or else up to a space, to show it). A "{" before a "{{" is text:
# "{{{ name }}" is "{" and a slot.
_TOKEN = re.compile(r"\\\{\{|\\\{(?=\s*[A-Za-z_][A-Za-z0-9_]*\s*\})|\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}|\{\{(?!\{)(?:[^{}\n]{0,40}\}\}|[^\s{]{0,20})")


class Slotted(msgspec.Struct, frozen=True):
    """A text with ``{{ name }}`` slots."""

    text: str

    def slots(self) -> frozenset[str]:
        """The names of its slots (an escaped ``\\{{`` is none)."""
        return frozenset(found.group(1) for found in _TOKEN.finditer(self.text) if found.group(1))

    def stray(self) -> str:
        """What is wrong with the first ``{{`` that is neither a slot nor escaped, or ""."""
        for found in _TOKEN.finditer(self.text):
            written = found.group(0)
            if written not in (ESCAPE, BRACE) and not found.group(1):
                return (
                    f"{written!r} is not a slot: a slot is {{{{ name }}}}, its name letters, digits and _; "
                    f"write {ESCAPE} for a literal {{{{"
                )
        return ""

    def missing(self, values: Mapping[str, Any]) -> str:
        """The slots ``values`` leave without a value, said, or "" when there are none."""
        missing = sorted(self.slots() - set(values))
        return f"no value for {', '.join('{{ ' + name + ' }}' for name in missing)}" if missing else ""

    def size(self, values: Mapping[str, Any]) -> int:
        """How many bytes of UTF-8 the text filled with ``values`` would take, counted without
        making it (a slot with no value counts as empty)."""
        sizes = {name: len(str(value).encode("utf-8", "surrogatepass")) for name, value in values.items()}
        size = len(self.text.encode("utf-8", "surrogatepass"))
        for found in _TOKEN.finditer(self.text):
            if found.group(1):
                size += sizes.get(found.group(1), 0) - len(found.group(0))
            elif found.group(0) in (ESCAPE, BRACE):
                size -= 1
        return size

    def filled(self, values: Mapping[str, Any], shown: Any = str, brace: str = "{") -> str:
        """The text with every slot filled (each value as ``shown`` writes it), every ``\\{{``
        made ``{{`` and every ``\\{name}`` made ``brace`` and ``name}`` (``{name}`` in a text sent;
        a pattern passes ``\\{``, its own escape); a stray ``{{`` or a slot with no value is a
        ``ValueError`` saying so."""
        problem = self.stray() or self.missing(values)
        if problem:
            raise ValueError(problem)

        def made(found: re.Match[str]) -> str:
            if found.group(1):
                return str(shown(values[found.group(1)]))
            return brace if found.group(0) == BRACE else "{{"

        return _TOKEN.sub(made, self.text)

    def alone(self) -> str:
        """The name of the slot when the text is that one slot and nothing else, or ""."""
        found = _TOKEN.fullmatch(self.text.strip())
        return found.group(1) or "" if found else ""


def nearest(name: str, names: Iterable[str]) -> str:
    """The one of ``names`` that ``name`` is most likely a slip for, or ""."""
    close = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    return close[0] if close else ""
