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

# A count in braces, read in a pattern's skeleton (``Pattern._skeleton``: ``\{9999}``, ``\x{2019}``,
# ``[{,}]`` are no counts).
_COUNTS = re.compile(r"\{(\d*)(,?)(\d*)\}")
# A group's opening with its flags or name, ``(?:``, ``(?i:``, ``(?P<name>``; and flags alone, ``(?i)``.
_OPENING = re.compile(r"\(\?(?:[A-Za-z-]*:|P?<[^>]*>)")
_FLAGS = re.compile(r"\(\?([A-Za-z-]*)\)")
# A pattern of ASCII letters, digits and spaces only (a word or words, as most ``said:`` checks
# are) holds nothing RE2 reads as anything but itself: its match is itself, wherever it is in the
# text (a UTF-8 byte below 128 is that character alone), found without RE2's wrapper for a tenth
# of the cost, twice an attempt for a scenario with a said and a not_said.
_LITERAL = re.compile(r"[A-Za-z0-9 ]+")


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
        for found in _COUNTS.finditer(self._skeleton()):
            low, comma, high = found.groups()
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
    # What an anchor needs beside it to match, in the skeleton: the characters that are not text of
    # their own ("." stands for a class or an escape such as \d, \b, \z; "a" for a character of text).
    _SYNTAX: ClassVar[str] = "|()?*+{}[].^$\\"

    def anywhere(self) -> bool:
        """Whether it matches every reply, even an empty one (``refund|``, ``.*``, ``(?s)``): a
        check with it would be decided before the agent spoke. Read for a pattern convy can match."""
        return all(self.found(text) is not None for text in self.PROBES)

    def stranded(self) -> str:
        """The anchor that makes it never match, or "": ``$`` (the end of the reply, or of a line
        with ``(?m)``) with a character of text after it, as in ``costs $4.99``; ``^`` (the start)
        with one before it; ``$\\n`` and ``\\n^``, a newline beside an anchor without ``(?m)``.
        Escaped anchors (``\\$``), those in a class (``[$]``) or in ``\\Q...\\E`` are text. Said only
        when certain: an anchor in a group with alternatives, ``(?:USD|$)5``, is passed over, and
        with alternatives at the top every one of them must be stranded."""
        skeleton = self._skeleton()
        anchors: list[str] = []
        start, depth = 0, 0
        for at, char in enumerate(skeleton + "|"):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if char == "|" and depth <= 0:
                anchors.append(self._anchor(skeleton[start:at]))
                start = at + 1
        return anchors[0] if all(anchors) else ""

    def _anchor(self, skeleton: str) -> str:
        """The first certain stranded anchor of one top-level alternative's skeleton, or ""."""
        opened: list[bool] = []  # for each open group, whether it has alternatives
        chosen = self._alternated(skeleton)
        for at, char in enumerate(skeleton):
            if char == "(":
                opened.append(at in chosen)
            elif char == ")" and opened:
                opened.pop()
            if any(opened) or char not in "^$":
                continue
            if char == "^":
                before = skeleton[at - 1 : at] if at else ""
                if before and before not in self._SYNTAX and skeleton[at + 1 : at + 2] not in ("?", "*", "{"):
                    return "\n^" if before == "\n" else "^"
                continue
            after = at + 1
            while skeleton[after : after + 1] == ")":
                after += 1
            following = skeleton[after : after + 1]
            if following and following not in self._SYNTAX and skeleton[after + 1 : after + 2] not in ("?", "*", "{"):
                return "$\n" if following == "\n" else "$"
        return ""

    @staticmethod
    def _alternated(skeleton: str) -> set[int]:
        """Where each group of the skeleton that has alternatives of its own opens."""
        stack: list[int] = []
        chosen: set[int] = set()
        for at, char in enumerate(skeleton):
            if char == "(":
                stack.append(at)
            elif char == ")" and stack:
                stack.pop()
            elif char == "|" and stack:
                chosen.add(stack[-1])
        return chosen

    def _skeleton(self) -> str:
        """The pattern with each piece that is one thing written as one character: an escaped
        character of text (``\\$``, ``\\x{2019}``) and each character of ``\\Q...\\E`` as "a", a
        class (``[{,}]``) or any other escape (``\\d``, ``\\p{Greek}``, ``\\z``) as ".", a group's
        opening (``(?:``, ``(?P<n>``) as "(", flags alone (``(?i)``) as nothing; the rest as written.
        A newline (written or ``\\n``) stays a newline, text, unless an ``m`` flag is set anywhere."""
        text, at, out = self.text, 0, []
        multiline = re.search(r"\(\?[A-Za-z-]*m", text) is not None
        newline = "." if multiline else "\n"
        while at < len(text):
            char = text[at]
            if text.startswith("\\Q", at):
                end = text.find("\\E", at + 2)
                end = len(text) if end < 0 else end
                out.append("a" * (end - at - 2))
                at = end + 2
            elif char == "\\":
                letter = text[at + 1 : at + 2]
                after = _escape_end(text, at)
                out.append(
                    newline
                    if letter == "n"
                    else "a"
                    if (letter and not letter.isalnum()) or letter in ("x", "t", "r", "f", "v", "a")
                    else "."
                )
                at = after
            elif char == "[":
                at = _class_end(text, at)
                out.append(".")
            elif opening := _OPENING.match(text, at):
                out.append("(")
                at = opening.end()
            elif flags := _FLAGS.match(text, at):
                at = flags.end()
            else:
                out.append(newline if char == "\n" else char)
                at += 1
        return "".join(out)

    def found(self, text: str) -> str | None:
        """The leftmost match of this pattern in ``text``, or ``None``."""
        if _LITERAL.fullmatch(self.text):  # it matches itself alone, wherever it is: RE2 would find it there
            return self.text if self.text in text else None
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


def _escape_end(text: str, at: int) -> int:
    """Where the escape at ``at`` (a backslash) ends: ``\\x{2019}``, ``\\p{Greek}`` take their braces."""
    letter = text[at + 1 : at + 2]
    if letter in ("x", "p", "P"):
        if text[at + 2 : at + 3] == "{":
            close = text.find("}", at + 3)
            return len(text) if close < 0 else close + 1
        return at + (4 if letter == "x" else 3)  # \x41, \pL
    return at + 2


def _class_end(text: str, at: int) -> int:
    """Where the class opened at ``at`` (a "[") ends, its "]" taken in: ``[]a]``, ``[^]]``,
    ``[[:alpha:]]`` and escapes inside (``[\\]]``) are stepped over."""
    at += 1
    at += text[at : at + 1] == "^"
    at += text[at : at + 1] == "]"  # a "]" first in a class is one of its characters
    while at < len(text):
        if text[at] == "\\":
            at = _escape_end(text, at)
        elif text.startswith("[:", at) and text.find(":]", at + 2) >= 0:
            at = text.find(":]", at + 2) + 2
        elif text[at] == "]":
            return at + 1
        else:
            at += 1
    return at
