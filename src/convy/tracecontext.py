"""An attempt's place in a trace, as W3C Trace Context names it (issue 30).

Each attempt is one trace. Its id is drawn when the attempt starts and kept in its record
(``Outcome.trace``); every span of it has an id made from the trace's and the span's place in the
attempt (``TraceIds``), so the spans ``convy export --format otlp`` writes later, those sent while
the run plays, and the parent an agent's turn is told about are the same ids without any of them
being stored.

During each agent turn ``TRACED`` holds the turn's ``TraceContext``: an HTTP agent is sent it as a
``traceparent`` header, and a Python agent reads it with ``trace_context()``, so the agent's own
spans join the attempt's trace in the team's backend.
"""

from __future__ import annotations

import hashlib
import secrets
from contextvars import ContextVar

import msgspec


class TraceIds(msgspec.Struct, frozen=True):
    """The ids of one attempt's trace: ``trace``, 32 hex digits, and each span's 16, made from it
    and the span's place (the attempt's root, a turn, a tool call, a request), never all zero."""

    trace: str

    @classmethod
    def new(cls) -> TraceIds:
        return cls(secrets.token_hex(16))

    @classmethod
    def of(cls, trace: str, *place: object) -> TraceIds:
        """The ids of an attempt whose record keeps ``trace``; one kept before attempts had a trace
        (``""``), or whose id is not 32 hex digits, has one made from ``place`` (its run, scenario,
        number and start), the same each time."""
        if len(trace) == 32 and all(char in "0123456789abcdef" for char in trace) and trace.strip("0"):
            return cls(trace)
        # None kept, or one no trace id can be (a line edited by hand): one made from its place.
        return cls(cls._digest("/".join(str(part) for part in place), 32))

    def root(self) -> str:
        return self.span("attempt")

    def turn(self, number: int) -> str:
        """The span of the agent's turn ``number`` (from 1): the parent of the agent's own spans."""
        return self.span("turn", number)

    def span(self, *place: object) -> str:
        return self._digest("/".join((self.trace, *(str(part) for part in place))), 16)

    @staticmethod
    def _digest(text: str, digits: int) -> str:
        made = hashlib.sha256(text.encode()).hexdigest()[:digits]
        return made if made.strip("0") else "1".rjust(digits, "0")  # an id of zeros is invalid


class TraceContext(msgspec.Struct, frozen=True):
    """Where an agent's turn sits in the attempt's trace: the trace's id and the id of the turn's
    span, which the agent's own spans take as their parent."""

    trace_id: str
    span_id: str

    def traceparent(self) -> str:
        """The W3C ``traceparent`` header: version 00, sampled."""
        return f"00-{self.trace_id}-{self.span_id}-01"

    def headers(self) -> dict[str, str]:
        return {"traceparent": self.traceparent()}


# The turn under way's place in its attempt's trace; None outside an agent's turn.
TRACED: ContextVar[TraceContext | None] = ContextVar("convy_traced", default=None)


def trace_context() -> TraceContext | None:
    """For an agent's code: the trace context of the turn it is answering (None outside one), to
    start its own spans under (``traceparent()`` gives the W3C header)."""
    return TRACED.get()
