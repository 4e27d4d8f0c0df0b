"""Where the jitter between convy letting a request go and a rate limit counting it arises.

One case of ``bench/busy.py`` (default: the strict bucket, burst 1, 20 a second, 100 ms latency,
default settings), with every step of each request stamped on one clock: ``time.monotonic``,
which is the same CLOCK_MONOTONIC in convy's process and in the stand-in's child process (and is
what asyncio's ``loop.time()`` reads). Nothing here changes what convy or the stand-in do; the
stamps are taken by wrapping a few of their methods in this script only.

convy's side:
  due      the moment a paced request's timer was set for (``pacing.Pacing.release``'s timer)
  let      the moment ``Places`` let the request go (``quota.Send.moment``)
  woken    the moment the request's task ran again and called the service
  written  the moment httpx2 wrote the request's first bytes to the socket (a new connection or a
           kept one: said apart)
the stand-in's side:
  read     the moment its event loop got those bytes from the socket (``data_received``)
  counted  the moment its limit counted the request (``Received.time``): the kernel's stamp of the
           bytes' arrival (SO_TIMESTAMPNS), so before ``read``; until the stand-in stamped that, it
           was its clock once the whole request was read and parsed, after ``read``

"the same strict bucket replayed" counts what a strict bucket would have refused had it counted
the requests at each step: at ``read``, what a limit in the stand-in's loop would refuse; at
``written``, the refusals convy's own side causes.

For each step: the delay's p50 / p90 / p99 / max in ms, and for each refused request the steps
where it lost (or gained) time against the request before it.

    .venv/bin/python bench/jitter.py                       # 300 requests, the strict bucket
    .venv/bin/python bench/jitter.py --shape bare --requests 150
"""

from __future__ import annotations

import argparse
import asyncio
import asyncio.selector_events
import asyncio.streams
import json
import multiprocessing
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
sys.path.insert(0, str(HERE))


def _key(data: bytes) -> tuple[str, str] | None:
    """The (session, message) of an agent request's body, if these bytes hold one."""
    start = data.find(b"{")
    if start < 0:
        return None
    try:
        body = json.loads(data[start:])
    except ValueError:
        return None
    if isinstance(body, dict) and "session" in body:
        return str(body["session"]), str(body.get("message"))
    return None


# --- the stand-in's side, in its child process --------------------------------------------------


def _serve(pipe: Any, settings: dict[str, Any]) -> None:
    sys.path.insert(0, str(TESTS))
    import busy as bench
    from support import standin
    from support.standin import StandIn

    read_at: dict[tuple[str, str], list[float]] = {}
    counted: list[dict[str, Any]] = []
    original_received = asyncio.streams.StreamReaderProtocol.data_received
    original_read = standin._read_request
    original_admit = StandIn._admit

    def data_received(self: Any, data: bytes) -> None:
        now = time.monotonic()
        reader = self._stream_reader
        if reader is not None and data.startswith(b"POST"):
            reader.probe_read = now
        original_received(self, data)

    async def read_request(reader: Any, writer: Any) -> Any:
        request = await original_read(reader, writer)
        if request is not None:
            key = _key(request.body)
            if key is not None:
                read_at.setdefault(key, []).append(getattr(reader, "probe_read", float("nan")))
        return request

    def admit(self: Any, record: Any) -> int | None:
        wait = original_admit(self, record)
        key = (record.conversation, record.message or "")
        reads = read_at.get(key) or [float("nan")]
        counted.append({"key": key, "read": reads.pop(0), "counted": record.time, "refused": wait is not None})
        return wait

    asyncio.streams.StreamReaderProtocol.data_received = data_received  # type: ignore[method-assign]
    standin._read_request = read_request
    StandIn._admit = admit  # type: ignore[method-assign]
    shape = settings.pop("shape")
    settings["limit"] = bench.limit_of(shape, settings.pop("rate"), settings.pop("floor"))
    with StandIn(**settings) as server:
        pipe.send(server.url)
        pipe.recv()
        pipe.send(counted)


# --- convy's side, in this process --------------------------------------------------------------


class Stamps:
    """convy's stamps, by request (session, message) where the bytes tell it."""

    def __init__(self) -> None:
        self.by_task: dict[Any, dict[str, float]] = {}
        self.requests: dict[tuple[str, str], list[dict[str, float]]] = {}
        self.lateness: list[float] = []
        self.posts: dict[Any, int] = {}

    def install(self) -> None:
        from convy.busy import Places
        from convy.pacing import Pacing

        stamps = self
        original_release, original_asked = Pacing.release, Places._asked
        original_write = asyncio.selector_events._SelectorSocketTransport.write

        def release(self: Any) -> None:
            due = getattr(self, "probe_due", None)
            now = asyncio.get_running_loop().time()
            before = self.sent
            original_release(self)
            if due is not None and self.sent > before and now >= due:
                stamps.lateness.append(now - due)
                self.probe_due = None
            if self._timer is not None:
                self.probe_due = self._timer.when()

        async def asked(self: Any, request: Any, told: Any, send: Any, paced: bool) -> Any:
            task = asyncio.current_task()
            stamps.by_task[task] = {"let": send.moment, "woken": asyncio.get_running_loop().time()}
            return await original_asked(self, request, told, send, paced)

        def write(self: Any, data: Any) -> None:
            now = time.monotonic()
            raw = bytes(data)
            task = asyncio.current_task()
            if raw.startswith(b"POST"):
                seen = stamps.posts.get(self, 0)
                stamps.posts[self] = seen + 1
                found = stamps.by_task.get(task)
                if found is not None:
                    found["written"] = now
                    found["new"] = 1.0 if seen == 0 else 0.0
            key = _key(raw)
            found = stamps.by_task.get(task)
            if key is not None and found is not None and "written" in found:
                stamps.requests.setdefault(key, []).append(dict(found))
                found.pop("written")
            original_write(self, data)

        Pacing.release = release  # type: ignore[method-assign]
        Places._asked = asked  # type: ignore[method-assign]
        asyncio.selector_events._SelectorSocketTransport.write = write  # type: ignore[method-assign]


def quantiles(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    at = [ordered[min(len(ordered) - 1, int(share * len(ordered)))] for share in (0.5, 0.9, 0.99)]
    return " ".join(f"{value * 1000:6.2f}" for value in [*at, ordered[-1]])


def replayed(moments: list[float], rate: float) -> int:
    """How many of these arrivals a token bucket of ``rate`` a second and burst 1 refuses."""
    level, last, refused = 1.0, None, 0
    for moment in sorted(moments):
        if last is not None:
            level = min(1.0, level + (moment - last) * rate)
        last = moment
        if level >= 1.0:
            level -= 1.0
        else:
            refused += 1
    return refused


def main() -> None:
    import busy as bench

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="bucket1", choices=bench.SHAPES)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--latency", type=float, default=0.1)
    arguments = parser.parse_args()

    from convy import Bench, JsonAgent, JsonEndpoint, Limits, Models, Plan
    from convy.fakes import MemoryJournal

    stamps = Stamps()
    stamps.install()
    attempts = max(1, arguments.requests // arguments.turns)
    floor = attempts * arguments.turns / arguments.rate
    settings = {"latency": arguments.latency, "shape": arguments.shape, "rate": arguments.rate, "floor": floor}
    context = multiprocessing.get_context("spawn")
    pipe, theirs = context.Pipe()
    process = context.Process(target=_serve, args=(theirs, settings), daemon=True)
    process.start()
    url = pipe.recv()
    agent = JsonAgent(JsonEndpoint(url + "/agent"), reply="output.text")
    bench_ = Bench(agent, Models(), Limits())
    start = time.monotonic()
    asyncio.run(bench_.run(Plan((bench.scenario(arguments.turns, 0),), attempts), MemoryJournal()))
    wall = time.monotonic() - start
    pipe.send("stats")
    counted = pipe.recv()
    process.join(10)

    rows = []
    for record in counted:  # the n-th count of a request is its n-th try
        mine = stamps.requests.get(tuple(record["key"]))
        if mine:
            rows.append({**mine.pop(0), **record})
    rows.sort(key=lambda row: row["counted"])
    refused = sum(1 for row in rows if row["refused"])
    print(f"{arguments.shape}: {len(rows)} requests matched of {len(counted)} counted, {refused} refused, wall {wall:.2f} s ({wall / floor:.2f}x floor)")
    print(f"{'step (ms)':<34} {'p50':>6} {'p90':>6} {'p99':>6} {'max':>6}")
    print(f"{'timer late (due -> let)':<34} {quantiles(stamps.lateness)}")
    steps = [("let -> woken", "let", "woken"), ("woken -> written", "woken", "written"), ("written -> read (other process)", "written", "read"), ("read -> counted", "read", "counted"), ("let -> counted (all)", "let", "counted")]
    for name, first, last in steps:
        print(f"{name:<34} {quantiles([row[last] - row[first] for row in rows])}")
    for new, label in ((1.0, "new connection"), (0.0, "kept connection")):
        chosen = [row for row in rows if row.get("new") == new]
        print(f"{'woken -> written, ' + label:<34} {quantiles([row['written'] - row['woken'] for row in chosen])}   ({len(chosen)})")
    gaps = [later["let"] - earlier["let"] for earlier, later in zip(rows, rows[1:], strict=False)]
    counted_gaps = [later["counted"] - earlier["counted"] for earlier, later in zip(rows, rows[1:], strict=False)]
    print(f"{'gap between lets':<34} {quantiles(gaps)}")
    print(f"{'gap between counts':<34} {quantiles(counted_gaps)}")
    print("\nthe same strict bucket replayed on each step's stamps (every try an arrival): refused")
    for stage in ("let", "woken", "written", "read", "counted"):
        print(f"  at {stage:<8} {replayed([row[stage] for row in rows], arguments.rate)}")
    print("\nrefused: ms each step took more (+) or less (-) than for the request counted before it")
    print(f"{'count, s':<10} {'let gap':>8} {'let>woken':>10} {'woken>wrt':>10} {'wrt>read':>9} {'read>cnt':>9} {'new':>4}")
    for number, (earlier, later) in enumerate(zip(rows, rows[1:], strict=False), start=2):
        if not later["refused"]:
            continue
        deltas = [later[last] - later[first] - (earlier[last] - earlier[first]) for _, first, last in steps[:4]]
        when = f"{number} {later['counted'] - rows[0]['counted']:.2f}"
        print(
            f"{when:<10} {(later['let'] - earlier['let']) * 1000:8.2f} "
            + " ".join(f"{delta * 1000:+9.2f}" for delta in deltas)
            + f" {int(later.get('new', 0)):4d} (before it: {int(earlier.get('new', 0))})"
        )


if __name__ == "__main__":
    main()
