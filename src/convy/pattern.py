"""The patterns the checks ``said`` and ``not_said`` look for, matched with RE2.

A pattern comes from a scenario file and is matched against what an agent said: text from
outside, of any length and any content. Python's ``re`` backtracks, so a pattern such as
``(a+)+$`` takes time exponential in the length of a hostile answer, and a run would never end.
RE2 (``google-re2``, decision 0009) takes time linear in the text for every pattern it accepts:
a check is decided the same way on any machine, with no clock involved.

The price is RE2's syntax: no lookaround, no backreferences, no atomic groups or possessive
repeats; a pattern that uses them is refused when the scenario is read, with the reason.
Matching works on UTF-8 bytes with captures turned off, since a check needs only where the
match is: a search's memory then grows with the pattern's size, not with its groups times the
answer's length, and an answer holding a lone surrogate is matched rather than raising.
"""

from __future__ import annotations

import functools
import re
from typing import ClassVar

import msgspec
import re2  # no types of its own: see [tool.mypy] in pyproject.toml

# A count in braces, after any escaped character has been stepped over (so ``\{9999}`` is text).
_COUNTS = re.compile(r"\\.|\{(\d*)(,?)(\d*)\}", re.DOTALL)


class Pattern(msgspec.Struct, frozen=True):
    """A pattern as a scenario's check gives it, in RE2's syntax."""

    text: str

    MAX_REPEAT: ClassVar[int] = 1_000  # RE2's own limit for a count, nested counts multiplied
    MAX_MEM: ClassVar[int] = 8 << 20  # the bytes RE2 may use to compile and match one pattern
    SHOWN: ClassVar[int] = 100  # the characters of RE2's error a refusal shows
    # What each of RE2's errors that Python's syntax runs into is missing.
    HINTS: ClassVar[dict[str, str]] = {
        "invalid perl operator": "RE2 syntax: no lookaround, atomic groups or (?P=name); the flags are i, m, s and U",
        "invalid escape sequence": r"RE2 syntax: no backreferences; \z for the end, \x{...} for a code point",
        "bad repetition operator": "RE2 syntax: no possessive repeats",
        "invalid repetition size": f"at most {MAX_REPEAT:,} repeats, nested counts multiplied",
        "pattern too large - compile failed": f"it would take more than {MAX_MEM >> 20} MiB to match",
    }

    def problem(self) -> str:
        """Why convy cannot match this pattern, or "" when it can."""
        for found in _COUNTS.finditer(self.text):
            low, comma, high = found.groups()
            if found.group(0).startswith("\\"):
                continue
            if comma and not low:
                # Python reads {,n} as {0,n}; RE2 reads it as text. Say which was meant.
                return f"{found.group(0)} would be matched as text: write {{0,{high}}} to repeat, or \\{found.group(0)}"
            if any(len(count) > 5 or int(count) > self.MAX_REPEAT for count in (low, high) if count):
                # RE2 refuses most of these, but reads a count of 2**31 - 1 or more as text.
                return f"a repetition of more than {self.MAX_REPEAT:,} in the pattern"
        try:
            self._compiled()
        except re2.error as error:
            match error.args:  # RE2 says its errors in bytes
                case (bytes() as raw, *_):
                    said = raw.decode("utf-8", "replace")
                case (str() as raw, *_):
                    said = raw
                case _:
                    said = "refused by RE2"
            said = said if len(said) <= self.SHOWN else said[: self.SHOWN] + "..."  # RE2 may quote it all
            hint = next((hint for start, hint in self.HINTS.items() if said.startswith(start)), "")
            return f"not a pattern convy can match: {said}" + (f" ({hint})" if hint else "")
        return ""

    # Replies a pattern that holds of every reply matches, the empty one first.
    PROBES: ClassVar[tuple[str, ...]] = ("", "x", "No.", " \n")
    # What an anchor needs beside it to match: the characters that are not text of their own.
    _SYNTAX: ClassVar[str] = "|()?*+{}[].^$\\\n"

    def anywhere(self) -> bool:
        """Whether it matches every reply, even an empty one (``refund|``, ``.*``, ``(?s)``): a
        check with it would be decided before the agent spoke. Read for a pattern convy can match."""
        return all(self.found(text) is not None for text in self.PROBES)

    def stranded(self) -> str:
        """The anchor that can never match, or "": a ``$`` (the end of the reply, or of a line with
        ``(?m)``) with a character of text after it, or a ``^`` (the start) with one before it, as
        in ``costs $4.99``. Escaped ones (``\\$``) and those in a class (``[$]``) are text."""
        text, at, within, before = self.text, 0, False, ""
        while at < len(text):
            char = text[at]
            if char == "\\":
                escaped = text[at + 1 : at + 2]
                before = escaped if escaped and not escaped.isalnum() else ""  # \$ is a "$"; \d, \b are not one
                at += 2
                continue
            if within:
                within = char != "]"
                before = "" if within else "]"
                at += 1
                continue
            if char == "[":
                within, before = True, ""
                at += 1
                at += text[at : at + 1] == "^"
                at += text[at : at + 1] == "]"  # a "]" first in a class is one of its characters
                continue
            if char == "^" and before and before not in self._SYNTAX:
                return "^"
            if char == "$":
                after = at + 1
                while text[after : after + 1] == ")":
                    after += 1
                following = text[after : after + 1]
                if following and following not in self._SYNTAX and text[after + 1 : after + 2] not in ("?", "*", "{"):
                    return "$"
            before = char
            at += 1
        return ""

    def found(self, text: str) -> str | None:
        """The leftmost match of this pattern in ``text``, or ``None``."""
        match = self._compiled().search(text.encode("utf-8", "surrogatepass"))
        return None if match is None else match.group(0).decode("utf-8", "replace")

    @functools.lru_cache(maxsize=128)  # noqa: B019 - a Pattern is its text: equal patterns share one
    def _compiled(self) -> re2._Regexp:
        # The 128 patterns used last are kept compiled, by their text: a run's checks (up to that
        # many) compile once each, not once an attempt (re2's own cache still builds its key and
        # options on every call, a tenth of a run of instant fakes' checks).
        options = re2.Options()
        options.log_errors = False  # RE2 would write its errors to standard error; convy says them
        options.max_mem = self.MAX_MEM
        options.never_capture = True
        return re2.compile(self.text.encode("utf-8", "surrogatepass"), options)
