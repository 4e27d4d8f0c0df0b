"""The fault table: what convy records for each fault a service can throw, and whether it resent.

Every fault of the stand-in (``tests/support/standin.py``) is played through a real ``Bench``:

- against the agent under test, a ``JsonAgent`` whose URL has a key in its query and whose
  headers hold a secret; the fault hits the second turn of a two-turn script;
- against the simulated user's model, an ``OpenAiModel`` (plain, then streamed) with a key; the
  fault hits its second request.

For each, the table shows how the attempt ended, how many requests reached the service for the
message the fault hit (with their statuses; "—" when no status was sent), and whether that message
was sent twice. Only a service that refused a request unprocessed (429, 503) is asked again. The
script checks on the way that no secret reached any outcome, and says so under the tables.

    python bench/faults.py            # prints the tables in markdown
"""

from __future__ import annotations

import asyncio
import re
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.standin import Drop, Fault, Invalid, SlowBody, Stall, StandIn, Status, Truncated, WrongShape, http_date  # noqa: E402

from convy.bench import Bench
from convy.fakes import FakeAgent, MemoryJournal  # noqa: E402
from convy.http import JsonEndpoint
from convy.httpagents import JsonAgent, TokenPaths
from convy.judge import Failed, Models, NoVerdict, Verdict
from convy.model import OpenAiModel
from convy.outcome import Outcome
from convy.plan import Plan
from convy.records import Limits
from convy.scenario import Scenario
from convy.vital import DeadService  # noqa: E402

SECRET = "secret-in-query"
HEADER = "hunter2-header-value"
KEY = "sk-user-model-key"
TIMEOUT = 0.5
FIRST = "[The agent is ready. Write your first message to it.]"
ANSWER = "Noted: Hello, I need help."


@dataclass(frozen=True)
class Case:
    name: str
    fault: Callable[[], Fault | None]
    patience: float = 5.0
    refused: bool = False  # nothing listens: the connection is refused


CASES = [
    Case("429, Retry-After: 1", lambda: Status(429, retry_after="1")),
    Case("429, Retry-After: HTTP date 1 s ahead", lambda: Status(429, retry_after=http_date(1))),
    Case("503, retry-after-ms: 200", lambda: Status(503, retry_after_ms="200")),
    Case("500", lambda: Status(500)),
    Case("502", lambda: Status(502)),
    Case("504", lambda: Status(504)),
    Case("Truncated (Content-Length longer than the body)", Truncated),
    Case("Invalid (not JSON)", Invalid),
    Case("WrongShape (JSON of another shape)", WrongShape),
    Case(f"SlowBody 0.2 s (timeout {TIMEOUT:g} s)", lambda: SlowBody(0.2, pieces=2)),
    Case(f"SlowBody 4 s (timeout {TIMEOUT:g} s)", lambda: SlowBody(4, pieces=2)),
    Case(f"Stall 4 s (timeout {TIMEOUT:g} s)", lambda: Stall(4)),
    Case("Drop (closed, no answer)", Drop),
    Case("Drop(reset=True) (TCP RST)", lambda: Drop(reset=True)),
    Case("connection refused (nothing listens)", lambda: None, refused=True),
    Case("busy past patience (0.5 s; 429, Retry-After: 1)", lambda: Status(429, retry_after="1"), patience=0.5),
]


@dataclass(frozen=True)
class Row:
    fault: str
    recorded: str
    received: str
    twice: str
    leaked: bool


def scenario(**fields: Any) -> Scenario:
    return msgspec.convert({"id": "fault", "judge": [{"check": {"said": "."}}], **fields}, Scenario)


def played(bench: Bench, scenario: Scenario) -> Outcome:
    journal = MemoryJournal()
    asyncio.run(bench.run(Plan((scenario,)), journal))
    (outcome,) = journal.outcomes
    return outcome


def recorded(outcome: Outcome, url: str) -> str:
    match outcome.result:
        case Verdict():
            waited = sum(wait.seconds for wait in outcome.waits)
            after = f", after waiting {waited:.1f} s" if waited >= 0.05 else ""
            result = f"Verdict, {outcome.status(1.0)}{after}"
        case Failed(reason=reason):
            result = f"Failed: {reason}"
        case NoVerdict(who=who, reason=reason):
            result = f"NoVerdict({who}): {reason}"
    shown = re.sub(r': \{"error".*$', ': {"error": …}', result.replace(url, "http://127.0.0.1:PORT")).replace("|", "\\|")
    shown = shown if len(shown) <= 200 else shown[:199] + "…"
    return f"`{outcome.stop}` · {shown}"


def received(statuses: list[int | None]) -> str:
    return f"{len(statuses)}" + (f" ({' → '.join('—' if status is None else str(status) for status in statuses)})" if statuses else "")


def twice(statuses: list[int | None]) -> str:
    if len(statuses) < 2:
        return "no"
    busy = all(status in (429, 503) for status in statuses[:-1])
    return "yes: refused unprocessed (Busy), then sent once more" if busy else "**YES, after a failure**"


def leaked(outcome: Outcome) -> bool:
    kept = msgspec.json.encode(outcome).decode()
    return any(secret in kept for secret in (SECRET, HEADER, KEY))


def nowhere() -> tuple[socket.socket, str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock, f"http://127.0.0.1:{sock.getsockname()[1]}"


def refused_row(case: Case, play: Callable[[str], Outcome]) -> Row:
    """A participant whose every request finds nothing listening never answered: the run stops
    (``DeadService``) and keeps no attempt, rather than recording a failure per attempt."""
    sock, url = nowhere()
    with sock:
        try:
            outcome = play(url)
        except DeadService as stop:
            said = str(stop).replace(url, "http://127.0.0.1:PORT").replace("|", "\\|")
            kept = any(secret in str(stop) for secret in (SECRET, HEADER, KEY))
            return Row(case.name, f"no attempt kept: the run stops, `DeadService` · {said}", received([]), "no", kept)
    return Row(case.name, recorded(outcome, url), received([]), "no", leaked(outcome))


def agent_row(case: Case) -> Row:
    def bench(url: str) -> Bench:
        agent = JsonAgent(
            JsonEndpoint(url + f"/agent?key={SECRET}", {"authorization": f"Bearer {KEY}", "x-team": HEADER}, timeout=TIMEOUT),
            reply="output.text",
            tokens=TokenPaths("usage.in", "usage.out"),
        )
        return Bench(agent, Models(), Limits(agent_patience=case.patience))

    if case.refused:
        return refused_row(case, lambda url: played(bench(url), scenario(script=["one", "two"])))
    with StandIn(api_key=KEY) as server:
        fault = case.fault()
        assert fault is not None

        def reply(request: dict[str, Any]) -> str:
            if request["message"] == "one":
                server.faults(fault)
            return f"You said: {request['message']}"

        server.agent_reply = reply
        outcome = played(bench(server.url), scenario(script=["one", "two"]))
        statuses = [record.status for record in server.received if record.message == "two"]
        once = all(count == 1 for (_, message), count in server.counts().items() if message != "two")
        return Row(case.name, recorded(outcome, server.url), received(statuses), twice(statuses) if once else "**YES**", leaked(outcome))


def user_row(case: Case, stream: bool) -> Row:
    def bench(url: str) -> Bench:
        model = OpenAiModel("user-model", url + "/v1", key=KEY, stream=stream, timeout=TIMEOUT)
        return Bench(FakeAgent(lambda text: f"Noted: {text}"), Models(user=model), Limits(user_patience=case.patience))

    if case.refused:
        return refused_row(case, lambda url: played(bench(url), scenario(user="You need help.")))
    with StandIn(api_key=KEY) as server:
        fault = case.fault()
        assert fault is not None

        def reply(request: dict[str, Any]) -> str:
            if len(request["messages"]) > 2:
                return "###STOP###"
            server.faults(fault)
            return "Hello, I need help."

        server.reply = reply
        outcome = played(bench(server.url), scenario(user="You need help."))
        statuses = [record.status for record in server.received if record.message == ANSWER]
        once = server.counts()[("", FIRST)] == 1
        return Row(case.name, recorded(outcome, server.url), received(statuses), twice(statuses) if once else "**YES**", leaked(outcome))


def table(title: str, rows: list[Row]) -> str:
    lines = [
        f"### {title}",
        "",
        "| fault | what convy recorded | requests received for the message | sent twice? |",
        "|---|---|---|---|",
    ]
    lines += [f"| {row.fault} | {row.recorded} | {row.received} | {row.twice} |" for row in rows]
    return "\n".join(lines)


def main() -> None:
    tables = [
        ("Agent under test: JsonAgent, fault on turn 2 of 2", [agent_row(case) for case in CASES]),
        ("Simulated user's model: OpenAiModel, fault on its 2nd request", [user_row(case, False) for case in CASES]),
        ("Simulated user's model, streamed (stream=True)", [user_row(case, True) for case in CASES]),
    ]
    print("\n\n".join(table(title, rows) for title, rows in tables))
    leaks = sum(row.leaked for _, rows in tables for row in rows)
    print()
    print(f"Query key, header value or API key found in a recorded outcome: {'YES, in ' + str(leaks) + ' row(s)' if leaks else 'never'}.")


if __name__ == "__main__":
    main()
