"""``receive_traces`` for one command: the agent's own spans received while its runs play (issue 30, item 4).

``Receiving.of`` binds the receiver's port before any agent is loaded, and ``given`` hands its
address to the agent as OpenTelemetry's SDKs read it: ``OTEL_EXPORTER_OTLP_ENDPOINT`` and
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` in this process's environment, where an agent's code loaded
next, and any process it starts, finds them. The environment is given back as it was when the
command ends. ``said`` is what the command says of it at its end: an agent that sent nothing, a
request that did not read, spans that came after their attempt ended.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import msgspec

from convy.listener import TRACES
from convy.problems import ConfigurationError
from convy.receiver import Receiver
from convy.terminal import Inert

if TYPE_CHECKING:
    from convy.settings import Settings, Spread

GIVEN = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


class Receiving(msgspec.Struct, frozen=True):
    """A command's receiver of the agent's spans, and what it gave the agent."""

    receiver: Receiver

    @classmethod
    def of(cls, settings: Settings, spread: Spread) -> Receiving | None:
        """The receiver ``settings`` ask for, its port bound; ``None`` without ``receive_traces``.
        A run played on several processes (``--workers``, ``--ray``) receives none: refused."""
        if not settings.receive_traces:
            return None
        if spread.spread():
            raise ConfigurationError(
                "receive_traces: the agent's spans are received by one process, so it does not go with "
                "--workers or --ray; play without them to receive the spans"
            )
        try:
            return cls(Receiver(settings.traces_port, settings.traces_wait))
        except OSError as error:
            port = f"port {settings.traces_port}" if settings.traces_port else "a port"
            raise ConfigurationError(
                f"receive_traces: cannot listen on {port} of 127.0.0.1 ({error.strerror or error}); "
                "set traces_port to a free one, or to 0 for one the system picks"
            ) from None

    @contextlib.contextmanager
    def given(self) -> Iterator[None]:
        """The receiver's address in this process's environment while the block runs."""
        kept = {name: os.environ.get(name) for name in GIVEN}
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = self.receiver.url
        os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = self.receiver.url + TRACES
        try:
            yield
        finally:
            for name, value in kept.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            self.receiver.close()

    def told(self) -> str:
        """The line a run starts with: where the agent's spans go."""
        return f"traces: the agent's own spans are received at {self.receiver.url} (give it as OTEL_EXPORTER_OTLP_ENDPOINT)"

    def said(self, agent: str) -> list[str]:
        """What the command says, once ``agent``'s run has played, of the spans it received, if
        anything went amiss."""
        receiver = self.receiver
        lines: list[str] = []
        # An agent whose calls are seen only in its spans (a JsonAgent with no calls=) had its tool
        # checks left undecided where they did not show them; another's calls were still seen as it said them.
        seen = "its tool checks were not judged" if receiver.sole else "its calls were seen only as its replies said them"
        if receiver.silent and not receiver.heard:
            elsewhere = (
                f"; {receiver.unmatched} span(s) came of no attempt's trace: an agent joins the attempt's trace by "
                "the W3C traceparent each turn carries (convy.trace_context() in Python)"
                if receiver.unmatched
                else ""
            )
            lines.append(
                f"convy: receive_traces: {agent} sent no span of any attempt to {receiver.url} within "
                f"{receiver.wait:g} s, so {seen}; an agent "
                f"instrumented with OpenTelemetry sends them when its OTEL_EXPORTER_OTLP_ENDPOINT is that address{elsewhere}"
            )
        elif receiver.heard and not receiver.tooled:
            taken = "its dialogues were taken as calling no tool" if receiver.sole else seen
            lines.append(
                f"convy: receive_traces: {agent} sent spans but no execute_tool span, so its tool calls could not be "
                f"read from them: {taken}"
            )
        if receiver.ended is not None:
            lines.append(
                f"convy: receive_traces: the process that received {agent}'s spans ended (code {receiver.ended}"
                f"{': ' + Inert(receiver.moaned).line() if receiver.moaned else ''}); the attempts played after it were "
                f"not waited for, and {'their tool checks were not judged' if receiver.sole else 'their calls were seen only as the replies said them'}"
            )
        if receiver.problem:
            lines.append(f"convy: receive_traces: {Inert(receiver.problem).line()}; {receiver.unread} such request(s) in all")
        if receiver.late:
            lines.append(
                f"convy: receive_traces: {receiver.late} span(s) of {agent}'s came after their attempt ended, and are not "
                "kept; a larger traces_wait waits longer for them (an SDK's batches go every OTEL_BSP_SCHEDULE_DELAY ms)"
            )
        if receiver.dropped:
            lines.append(f"convy: receive_traces: {receiver.dropped} span(s) of {agent}'s past what an attempt keeps were left out")
        if receiver.unmatched and not (receiver.silent and not receiver.heard):  # else said above
            lines.append(f"convy: receive_traces: {receiver.unmatched} span(s) of no attempt of {agent}'s came (another program's?), and are not kept")
        return lines
