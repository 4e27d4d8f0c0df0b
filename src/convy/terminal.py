"""Text from outside made inert for a terminal.

An agent's answer or exception, a service's error body, a model's reply: any of them may hold an
escape sequence that clears the screen, sets the window's title, asks the terminal for the cursor's
place (whose answer arrives as if typed), or a bidi override that shows a line in another order
than it is. ``Inert`` writes each such character out as an escape (``\\x1b``, ``\\u202e``), so it
shows what was sent and does nothing; with the escape character itself written out, no sequence
remains. convy prints with plain writes, never through rich's markup, so ``[bold]`` in an answer
prints as it is.
"""

from __future__ import annotations

import re

import msgspec

# C0 and C1 controls and DEL, lone surrogates, the line and paragraph separators, and the
# characters that change the direction of text.
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_IN_LINES = re.compile(f"[{_CONTROLS}]")
_IN_ONE_LINE = re.compile(f"[{_CONTROLS}\n\t]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


class Inert(msgspec.Struct, frozen=True):
    """Text as a terminal may show it: every control character written out, so it does nothing."""

    text: str

    def lines(self) -> str:
        """The text with its newlines and tabs kept, every other control character written out."""
        if self.text.isprintable():  # none of them: each is a control, format, surrogate or separator
            return self.text
        return _IN_LINES.sub(self._written, self.text)

    def line(self) -> str:
        """The text on one line: newlines and tabs written out too, so outside text cannot start a
        line that looks like convy's own."""
        if self.text.isprintable():
            return self.text
        return _IN_ONE_LINE.sub(self._written, self.text)

    def short(self, most: int) -> str:
        """The text on one line (``line``), within ``most`` characters of its own: the rest left out
        and counted, "… (N more characters)", so one long text (an exception of megabytes) cannot
        flood a log."""
        line = self.line()
        if len(line) <= most:
            return line
        return f"{line[:most]}… ({len(line) - most} more characters)"

    def _written(self, found: re.Match[str]) -> str:
        character = found.group(0)
        if character in _NAMED:
            return _NAMED[character]
        code = ord(character)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
