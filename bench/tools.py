"""What a scenario's tools cost an attempt: called from Python, and served over MCP.

Plays ``--attempts`` (200) attempts of one scenario, ``--at-once`` (20) at a time, in one run
(``Bench``, the checks decided by code: no model, so that every second shown is the agent's and
the tools'), three ways side by side in this process:

- *no tools*: the agent answers each of the scenario's three scripted turns with no call (the floor);
- *python*: it calls ``change_seat`` once a turn through ``convy.toolbox().call``;
- *mcp*: it calls it once a turn over MCP, with the official SDK's client, at the address
  ``toolbox().url()`` gives (a server started for each attempt, stopped at its end);

(the floor passes none: its agent moves no seat). Over MCP most of an attempt's time is the
agent's side, the SDK's client (its session opened, each call's request made and its answer
read, in the same process as the server); then, alone, the MCP server's own parts, ``--servers`` (20) times: its start, one call from
the SDK's client (the client's side: its session opened, the call, the answer read) and its stop.

    .venv/bin/python bench/tools.py
    .venv/bin/python bench/tools.py --attempts 1000 --at-once 50
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec

from convy.agent import Answer, Message
from convy.bench import Bench
from convy.fakes import MemoryJournal
from convy.judge import Models
from convy.plan import Plan
from convy.records import Limits
from convy.scenario import Scenario
from convy.tools import Toolbox, toolbox
from convy.toolserver import served

SCENARIO = {
    "id": "seat",
    "script": ["move me to 14C", "then to 15C", "no, back to 14C"],
    "state": {"bookings": {"ABC123": {"seat": "12A"}}},
    "tools": [
        {
            "name": "change_seat",
            "parameters": {"type": "object", "properties": {"code": {"type": "string"}, "seat": {"type": "string"}}, "required": ["code", "seat"]},
            "answers": [{"when": {"code": "ABC123"}, "set": {"bookings.{{ code }}.seat": "{{ seat }}"}, "read": "bookings.{{ code }}"}],
        }
    ],
    "judge": [{"check": {"state": {"bookings.ABC123.seat": "14C"}}}],
}


class SeatAgent:
    """Moves booking ABC123 to the seat each message ends with: by ``way`` ("none": it only says so)."""

    def __init__(self, way: str) -> None:
        self.way = way

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[Any]:
        if self.way == "mcp":
            from mcp import Client

            async with Client(await toolbox().url()) as client:
                yield _Turns(self.way, client)
        else:
            yield _Turns(self.way, None)


class _Turns:
    def __init__(self, way: str, client: Any) -> None:
        self.way = way
        self.client = client

    async def turn(self, message: Message) -> Answer:
        seat = message.text.rsplit(" ", 1)[-1]
        arguments = {"code": "ABC123", "seat": seat}
        if self.way == "python":
            await toolbox().call("change_seat", arguments)
        elif self.way == "mcp":
            await self.client.call_tool("change_seat", arguments)
        return Answer(f"You are in {seat}.")


def played(way: str, attempts: int, at_once: int) -> tuple[float, int]:
    """The wall of ``attempts`` attempts the agent plays by ``way``, and how many passed."""
    scenario = msgspec.convert(SCENARIO, Scenario)
    bench = Bench(SeatAgent(way), Models(), Limits(agent_places=at_once))
    journal = MemoryJournal()
    start = time.perf_counter()
    asyncio.run(bench.run(Plan((scenario,), attempts), journal))
    wall = time.perf_counter() - start
    return wall, sum(outcome.status(0.0) == "passed" for outcome in journal.outcomes)


async def parts(times: int) -> tuple[list[float], list[float], list[float]]:
    """The MCP server's start, one call from the SDK's client, and its stop, ``times`` times."""
    from mcp import Client

    scenario = msgspec.convert(SCENARIO, Scenario)
    starts, calls, stops = [], [], []
    for _ in range(times):
        box = Toolbox(scenario.tools, scenario.state, served)
        begun = time.perf_counter()
        url = await box.url()
        up = time.perf_counter()
        async with Client(url) as client:
            asked = time.perf_counter()
            await client.call_tool("change_seat", {"code": "ABC123", "seat": "1A"})
            answered = time.perf_counter()
        closing = time.perf_counter()
        await box.closed()
        stops.append(time.perf_counter() - closing)
        starts.append(up - begun)
        calls.append(answered - asked)
    return starts, calls, stops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attempts", type=int, default=200)
    parser.add_argument("--at-once", type=int, default=20)
    parser.add_argument("--servers", type=int, default=20)
    arguments = parser.parse_args()
    begun = time.perf_counter()
    import mcp.server.lowlevel  # noqa: F401 - its import, once a process, shown apart
    import uvicorn  # noqa: F401

    print(f"importing the MCP SDK and uvicorn: {time.perf_counter() - begun:.2f} s, once a process")
    print(f"{arguments.attempts} attempts of 3 turns, {arguments.at_once} at once, one call a turn:")
    floor = 0.0
    for way in ("none", "python", "mcp"):
        wall, passed = played(way, arguments.attempts, arguments.at_once)
        floor = floor or wall
        each = wall / arguments.attempts * 1000
        more = (wall - floor) / arguments.attempts * 1000
        print(f"  {way:<7} {wall:6.2f} s  {each:6.2f} ms an attempt ({more:+6.2f} ms over no tools)  passed {passed}/{arguments.attempts}")
    starts, calls, stops = asyncio.run(parts(arguments.servers))
    median = statistics.median
    print(
        f"the MCP server, {arguments.servers} times: started in {median(starts) * 1000:.1f} ms, a call from the SDK's client"
        f" {median(calls) * 1000:.1f} ms (its session and the call), stopped in {median(stops) * 1000:.1f} ms (medians)"
    )


if __name__ == "__main__":
    main()
