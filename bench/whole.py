"""Benchmark of whole ``convy`` processes, as a user runs them, beside the same commands of a base
convy (by default the ``main`` branch, unpacked with ``git archive`` into a temporary folder).

Each case runs the real command in a child process (``python -m convy``) and measures it with
``os.wait4``: wall time, CPU time (user + system, the child's own) and peak resident size. Every
figure is the best of ``--repeat`` runs, base and this checkout interleaved, since other work on
the machine moves the wall time much more than the CPU time.

Cases:

- ``run``: ``convy run`` of a project of ``--scenarios`` (10) scenarios x ``--attempts`` (1,000)
  attempts of 6 turns, every participant an instant fake in the project's own files (the agent a
  ``FakeAgent``, the user a ``FakeModel``, the judge a ``FakeJudge``; the agent and user say the
  same each time as in ``bench/harness.py``, or with ``--varied`` vary their text as
  ``bench/pages.py``'s fakes do), ``agent_places`` = ``judge_places`` = ``user_places`` = 100. The whole
  process: import, play, write, read back, report, index. Each repeat is a new run in the same
  project, so later repeats also have earlier runs in ``results/`` for the index to list: the
  base and the candidate each get a project of their own. With ``--slope ATTEMPTS``, played at
  that many attempts a scenario too, and each side's peak at both sizes printed with what one
  more attempt adds to it: the driver's memory slope (issue 27, item 6). With ``--auto``, the run
  is one of ``--attempts auto`` (5 to its attempts per scenario, a target width of 0.001 that no
  scenario reaches: every scenario plays its most, in rounds of 5, 10, 20, ... attempts).
- ``report``: ``convy report RUN`` of the first run of that project.
- ``compare``: ``convy compare RUN1 RUN2`` of its first two runs (a second run is played first,
  untimed, when there is one only).
- ``index``: ``convy report`` with no run named: the report of every run of that project, and the
  index (each run read and summed once).
- ``many``: ``--many`` (10,000) conversations at once, the agent answering each of 6 turns after
  ``--turn`` seconds (1; ``asyncio.sleep``), 100 scenarios of ``--many`` / 100 attempts, places
  enough for all. Beside it, in the same script, bare asyncio: a child process that runs as many
  tasks of 6 sleeps as long, and nothing else (the ideal). Shown as ratios to it: the whole ``convy run``
  process (start, report and index included), and its play alone (from ``run.json``'s start to
  its end).
- ``demo``: ``convy init`` then ``convy run`` of the template project (8 scenarios, its offline
  shop bot, no models), start to exit, each time with no earlier run in ``results/``; only the
  run is timed.

Children may write bytecode caches (``PYTHONDONTWRITEBYTECODE`` is dropped from their
environment), as an installed convy has them: the best of the repeats is a start from them.

    python bench/whole.py                                   # every case, about 3-5 minutes
    python bench/whole.py --only run report --repeat 1
    python bench/whole.py --base /tmp/base/src              # a base convy of your choosing
    python bench/whole.py --only run --profile /tmp/run.prof   # cProfile of the candidate's run
    python bench/whole.py --only many --profile /tmp/many.prof # of its many conversations (with run: of run only)
    python bench/whole.py --only run --repeat 1 --keep      # keep the projects (and their runs) to profile
    python bench/whole.py --only run --repeat 1 --attempts 2000 --slope 200 --base /tmp/main-before/src   # peak and B/attempt
    python bench/whole.py --only run --repeat 1 --attempts 2000 --slope 200 --auto   # the same, of --attempts auto
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import datetime
from pathlib import Path

import msgspec

HERE = Path(__file__).resolve().parent.parent
CASES = ("run", "report", "compare", "index", "many", "demo")

TALK = '''
"""Varied text from one seeded generator, as bench/pages.py makes it."""

import asyncio
import os
import random
from collections import deque
from decimal import Decimal

from convy import Answer, Call, Cost, Reply, Reported, Thought, Usage

WORDS = (
    "order refund parcel delivery kettle lamp invoice account address payment card bank courier warehouse "
    "tracking number today tomorrow Monday Friday week days hours minutes please thanks sorry afraid happy "
    "help check look find send return replace exchange cancel confirm update change arrive arrived late "
    "broken damaged missing wrong colour size price discount voucher code email phone chat store policy "
    "the a an and or but so because if when while with without for from to of in on at by about into "
    "I you we they it this that these those my your our their is are was were be been have has had do"
).split()
TOOLS = ("lookup_order", "track_parcel", "issue_refund", "update_address", "search_products", "check_stock")


PLAIN = os.environ.get("BENCH_TEXT", "plain") == "plain"
ANSWER = Answer("Your order for the lamp is noted. Anything else?", Usage(input=120, output=14), (Call("lookup_order", {"item": "lamp"}),))
REPLY = Reply("Yes, and please deliver it on Friday. My order is A-1234.", Usage(input=300, output=9))


class Talk:
    """Text for the fakes: the same answer and reply every time (bench/harness.py's), or varied."""

    def __init__(self, seed):
        self.random = random.Random(seed)

    def words(self, low, high):
        return " ".join(self.random.choices(WORDS, k=self.random.randint(low, high))).capitalize() + "."

    def answer(self, text):
        if PLAIN:
            return ANSWER
        pick = self.random
        said = " ".join(self.words(8, 16) for _ in range(pick.randint(2, 4)))
        if pick.random() < 0.5:
            said += f" Your order A-{pick.randint(1000, 9999)} is noted."
        steps = [Thought(self.words(10, 30))]
        for _ in range(pick.randint(1, 2)):
            arguments = {"order": f"A-{pick.randint(1000, 9999)}", "query": self.words(2, 5)}
            result = {"status": pick.choice(("shipped", "pending", "lost")), "items": pick.randint(1, 4), "note": self.words(4, 10)}
            steps.append(Call(pick.choice(TOOLS), arguments, Reported(result), round(pick.uniform(0.01, 0.4), 3)))
        given, taken = pick.randint(300, 2500), pick.randint(20, 300)
        cost = Cost(Decimal(given * 3 + taken * 15) / Decimal(1_000_000), "computed")
        return Answer(said, Usage(given, taken, cached=pick.randint(0, given // 2), cost=cost), tuple(steps))

    def reply(self, messages):
        if PLAIN:
            return REPLY
        return Reply(self.words(6, 22), Usage(self.random.randint(200, 900), self.random.randint(8, 40)))


class Slow:
    """The same agent, answering each turn after ``seconds``."""

    def __init__(self, agent, seconds):
        self.agent, self.seconds = agent, seconds

    def conversation(self):
        return _Slowed(self.agent.conversation(), self.seconds)


class _Slowed:
    def __init__(self, opened, seconds):
        self.opened, self.seconds = opened, seconds

    async def __aenter__(self):
        self.inner = await self.opened.__aenter__()
        return self

    async def __aexit__(self, *exc):
        return await self.opened.__aexit__(*exc)

    async def turn(self, message):
        await asyncio.sleep(self.seconds)
        return await self.inner.turn(message)


def forgetful():
    return deque(maxlen=0)
'''

AGENT = '''
import os

from talk import Slow, Talk, forgetful

from convy.fakes import FakeAgent

fake = FakeAgent(Talk(1).answer)
fake.messages = forgetful()
seconds = float(os.environ.get("BENCH_TURN_SECONDS", "0"))
agent = Slow(fake, seconds) if seconds else fake
'''

MODELS = '''
import random

from talk import Talk, forgetful

from convy import Models
from convy.fakes import FakeJudge, FakeModel

talk = Talk(2)
user = FakeModel(talk.reply, name="fake-user")
user.requests = forgetful()
rates = random.Random(7)
held = {}


def decided(claim, transcript):
    number = int(transcript.turns[0].message.split("case ", 1)[1].split(":", 1)[0])
    rate = held.setdefault(number, min(0.99, max(0.3, rates.betavariate(6, 1.5))))
    return talk.random.random() < rate


models = Models(user=user, judge=FakeJudge(decided, confidence=0.9, name="fake-judge"))
'''

SCENARIO = """\
id: {group}/case-{number:05}
user: You are a customer of a shop whose {{{{ item }}}} has a problem. Say so, and answer questions.
vars:
  item: {item}
script:
  - "Hello, about case {number}: my order has a problem."
max_turns: 6
tags: [{tag}]
judge:
  - The agent was polite.
  - The agent solved the customer's problem.
  - check:
      called: lookup_order
  - check:
      said: order
"""


BARE = """
import asyncio
import sys


async def conversation(turns, seconds):
    for _ in range(turns):
        await asyncio.sleep(seconds)


async def main(many, seconds):
    async with asyncio.TaskGroup() as group:
        for _ in range(many):
            group.create_task(conversation(6, seconds))


asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))
"""


class Made(msgspec.Struct, frozen=True):
    """A project of fakes to play: its scenarios, attempts each, and places."""

    scenarios: int
    attempts: int
    places: int

    def write(self, folder: Path) -> Path:
        (folder / "agents").mkdir(parents=True)
        (folder / "scenarios").mkdir()
        (folder / "talk.py").write_text(textwrap.dedent(TALK))
        (folder / "agents" / "shop.py").write_text(AGENT)
        (folder / "models.py").write_text(MODELS)
        for number in range(self.scenarios):
            group = ("orders", "refunds", "delivery", "account")[number % 4]
            text = SCENARIO.format(
                group=group, number=number, item=("kettle", "lamp", "parcel", "invoice")[number % 4], tag=("smoke", "regression")[number % 2]
            )
            (folder / "scenarios" / f"case-{number:05}.yaml").write_text(text)
        (folder / "pyproject.toml").write_text(
            "[tool.convy]\n"
            f"attempts = {self.attempts}\nmax_turns = 6\n"
            f"agent_places = {self.places}\nuser_places = {self.places}\njudge_places = {self.places}\n"
            "turn_seconds = 600\n"
            # Its fake user says the same thing every turn and never stops: its faults are counted,
            # so every attempt is judged as before the user's checks (which still run, and cost).
            'user_faults = "count"\n'
        )
        return folder


class Measured(msgspec.Struct, frozen=True):
    """One child process: wall and CPU seconds, peak resident MiB, exit code."""

    wall: float
    cpu: float
    rss: float
    code: int


class Child(msgspec.Struct, frozen=True):
    """A child process measured by ``os.wait4``."""

    argv: list[str]
    env: dict[str, str]
    fresh: Path | None = None  # a folder removed before the child starts
    refusable: bool = False  # exit 2 (a setting this convy refuses) is a result, not a failure

    def measured(self) -> Measured:
        if self.fresh is not None:
            shutil.rmtree(self.fresh, ignore_errors=True)
        start = time.perf_counter()
        with open(os.devnull, "wb") as sink, tempfile.TemporaryFile() as errors:
            child = subprocess.Popen(self.argv, env=self.env, stdout=sink, stderr=errors)
            _, status, usage = os.wait4(child.pid, 0)
            wall = time.perf_counter() - start
            child.returncode = os.waitstatus_to_exitcode(status)
            if child.returncode not in ((0, 1, 2, 3) if self.refusable else (0, 1, 3)):
                errors.seek(0)
                raise SystemExit(f"{' '.join(self.argv[-4:])} exited {child.returncode}:\n{errors.read().decode()[-3000:]}")
        return Measured(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, child.returncode)


class Side(msgspec.Struct, frozen=True):
    """One convy (base or candidate) and the folder it plays in."""

    name: str
    src: Path
    root: Path

    def child(self, argv: list[str], fresh: Path | None = None, refusable: bool = False, **environ: str) -> Child:
        env = {**os.environ, "PYTHONPATH": str(self.src), "NO_COLOR": "1", **environ}
        # An installed convy starts from compiled bytecode: a child may cache it, as pip's install
        # does, so a start is not timed compiling convy's source (PYTHONDONTWRITEBYTECODE, if set
        # here, would make every start do that).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        return Child([sys.executable, "-m", "convy", *argv], env, fresh, refusable)


def best(runs: list[Measured]) -> Measured:
    return Measured(min(r.wall for r in runs), min(r.cpu for r in runs), min(r.rss for r in runs), runs[-1].code)


def shown(title: str, base: Measured, candidate: Measured, extra: str = "") -> None:
    print(f"{title}")
    print(f"  {'':10} {'wall s':>8} {'CPU s':>8} {'peak MiB':>9}")
    if base.code == 2:  # the base refused the work (10,000 places, say): this one is shown alone
        print(f"  {'base':10} refused it (exit 2)")
        print(f"  {'this':10} {candidate.wall:8.2f} {candidate.cpu:8.2f} {candidate.rss:9.0f}" + (f"   {extra}" if extra else ""))
        print(flush=True)
        return
    print(f"  {'base':10} {base.wall:8.2f} {base.cpu:8.2f} {base.rss:9.0f}")
    print(f"  {'this':10} {candidate.wall:8.2f} {candidate.cpu:8.2f} {candidate.rss:9.0f}")
    print(
        f"  {'this/base':10} {candidate.wall / base.wall:8.2f} {candidate.cpu / base.cpu:8.2f} {candidate.rss / base.rss:9.2f}"
        + (f"   {extra}" if extra else "")
    )
    print(flush=True)


def sloped(few: int, small: list[Measured], many: int, large: list[Measured]) -> None:
    """Each side's peak at two sizes of a run, and what one more attempt adds to it: whether the
    driver's memory is flat (the whole process, its play, summary, report and index)."""
    print(f"convy run's peak at {few:,} and {many:,} attempts, and what one more attempt adds to it")
    print(f"  {'':10} {f'MiB {few:,}':>11} {f'MiB {many:,}':>11} {'B/attempt':>10}")
    for name, one, two in zip(("base", "this"), small, large, strict=True):
        print(f"  {name:10} {one.rss:11.0f} {two.rss:11.0f} {(two.rss - one.rss) * 1024 * 1024 / (many - few):10.0f}")
    print(flush=True)


def interleaved(repeat: int, sides: list[Side], make: object) -> list[Measured]:
    found: dict[str, list[Measured]] = {side.name: [] for side in sides}
    for _ in range(repeat):
        for side in sides:
            found[side.name].append(make(side).measured())  # type: ignore[operator]
    return [best(found[side.name]) for side in sides]


def played_seconds(project: Path) -> float | None:
    """The shortest play of the runs in ``project``: from the start to the end its run.json
    says (plain JSON: either side's convy may have written it)."""
    found = []
    for path in (project / "results" / "shop").glob("*/run.json"):
        status = msgspec.json.decode(path.read_bytes()).get("status", {})
        if status.get("type") == "finished":
            found.append((datetime.fromisoformat(status["ended"]) - datetime.fromisoformat(status["started"])).total_seconds())
    return min(found) if found else None


def first_run(project: Path) -> str:
    return made_runs(project)[0]


def made_runs(project: Path) -> list[str]:
    return sorted(path.name for path in (project / "results" / "shop").iterdir() if path.is_dir())


def header(base: Path) -> None:
    load = os.getloadavg()
    commit = subprocess.run(["git", "-C", str(HERE), "log", "-1", "--format=%h %s"], capture_output=True, text=True).stdout.strip()
    print(f"this: {HERE / 'src'} ({commit})   base: {base}")
    print(f"python {platform.python_version()}  {os.cpu_count()} cores  load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print()


def unpacked(commit: str, root: Path) -> Path:
    target = root / "base"
    target.mkdir()
    archive = subprocess.run(["git", "-C", str(HERE), "archive", commit, "src"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target / "src"


def sides_parser(described: str | None) -> argparse.ArgumentParser:
    """The options of a script that runs whole processes of this convy beside a base one, on
    bench/whole.py's project: how often, its size, and the base."""
    parser = argparse.ArgumentParser(description=described.split("\n\n")[0] if described else None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scenarios", type=int, default=10)
    parser.add_argument("--attempts", type=int, default=1000)
    parser.add_argument("--base", type=Path, help="the src folder of the base convy (default: main, unpacked)")
    parser.add_argument("--base-commit", default="main")
    return parser


def main() -> None:
    parser = sides_parser(__doc__)
    parser.add_argument("--only", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--many", type=int, default=10_000)
    parser.add_argument("--turn", type=float, default=1.0, help="with many: the seconds the agent takes to answer each turn (default 1)")
    parser.add_argument("--profile", type=Path, help="write a cProfile of the candidate's first run here (of run's project, else of many's)")
    parser.add_argument("--dir", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the folder of the projects and their runs, and say where it is")
    parser.add_argument(
        "--slope",
        type=int,
        metavar="ATTEMPTS",
        help="with run: play it at this many attempts a scenario too, and print each side's peak at both sizes and its growth per attempt",
    )
    parser.add_argument("--varied", action="store_true", help="varied text in every message (bench/pages.py's), not the same each time")
    parser.add_argument(
        "--auto", action="store_true", help="with run: play it as --attempts auto, 5 to its attempts per scenario, never narrow enough to stop early"
    )
    options = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="convy-whole-", dir=options.dir))
    os.environ["BENCH_TEXT"] = "varied" if options.varied else "plain"
    try:
        base_src = options.base or unpacked(options.base_commit, root)
        header(base_src)
        sides = [Side("base", base_src, root / "base-side"), Side("this", HERE / "src", root / "this-side")]
        for side in sides:
            side.root.mkdir()
        made = Made(options.scenarios, options.attempts, 100)
        if {"run", "report", "compare", "index"} & set(options.only):
            for side in sides:
                made.write(side.root / "project")
            if options.profile:
                project = sides[1].root / "project"
                env = {**os.environ, "PYTHONPATH": str(sides[1].src), "NO_COLOR": "1"}
                Child([sys.executable, "-m", "cProfile", "-o", str(options.profile), "-m", "convy", "-C", str(project), "run"], env).measured()
                print(f"profile of one run written to {options.profile}\n")
            def run(most: int) -> list[str]:
                if not options.auto:
                    return ["run"]
                return ["run", "--attempts", "auto", "--min-attempts", str(min(5, most)), "--max-attempts", str(most), "--target-width", "0.001"]

            ran = interleaved(options.repeat, sides, lambda side: side.child(["-C", str(side.root / "project"), *run(options.attempts)]))
            if "run" in options.only:
                auto = ", --attempts auto (5 to the most)" if options.auto else ""
                shown(f"convy run: {options.scenarios} scenarios x {options.attempts} attempts x 6 turns, instant fakes, 100 places{auto}", *ran)
                if options.slope:
                    fewer = Made(options.scenarios, options.slope, 100)
                    for side in sides:
                        fewer.write(side.root / "fewer")
                    small = interleaved(options.repeat, sides, lambda side: side.child(["-C", str(side.root / "fewer"), *run(options.slope)]))
                    sloped(options.scenarios * options.slope, small, options.scenarios * options.attempts, ran)
            if "report" in options.only:
                reported = interleaved(
                    options.repeat, sides, lambda side: side.child(["-C", str(side.root / "project"), "report", first_run(side.root / "project")])
                )
                shown(f"convy report of one run of {options.scenarios * options.attempts:,} attempts", *reported)
            if "compare" in options.only:
                for side in sides:
                    if len(made_runs(side.root / "project")) < 2:
                        side.child(["-C", str(side.root / "project"), "run"]).measured()
                compared = interleaved(
                    options.repeat,
                    sides,
                    lambda side: side.child(["-C", str(side.root / "project"), "compare", *made_runs(side.root / "project")[:2]]),
                )
                shown(f"convy compare of two runs of {options.scenarios * options.attempts:,} attempts", *compared)
            if "index" in options.only:
                counts = {side.name: len(made_runs(side.root / "project")) for side in sides}
                indexed = interleaved(options.repeat, sides, lambda side: side.child(["-C", str(side.root / "project"), "report"]))
                shown(
                    "convy report with no run named (every run's report, and the index): "
                    + ", ".join(f"{name} {count} runs" for name, count in counts.items()),
                    *indexed,
                )
        if "many" in options.only:
            wide = Made(100, max(1, options.many // 100), options.many)
            for side in sides:
                wide.write(side.root / "many")
            if options.profile and not {"run", "report", "compare", "index"} & set(options.only):
                project = sides[1].root / "many"
                env = {**os.environ, "PYTHONPATH": str(sides[1].src), "NO_COLOR": "1", "BENCH_TURN_SECONDS": str(options.turn)}
                Child([sys.executable, "-m", "cProfile", "-o", str(options.profile), "-m", "convy", "-C", str(project), "run"], env).measured()
                print(f"profile of one run written to {options.profile}\n")
            slow = interleaved(
                options.repeat,
                sides,
                lambda side: side.child(["-C", str(side.root / "many"), "run"], refusable=True, BENCH_TURN_SECONDS=str(options.turn)),
            )
            many = wide.scenarios * wide.attempts
            bare = best([Child([sys.executable, "-c", BARE, str(many), str(options.turn)], dict(os.environ)).measured() for _ in range(options.repeat)])
            shown(f"{many:,} conversations at once, agent {options.turn:g} s per turn, 6 turns", *slow)
            print(f"  {'bare':10} {bare.wall:8.2f} {bare.cpu:8.2f} {bare.rss:9.0f}   asyncio alone: {many:,} tasks of 6 sleeps of {options.turn:g} s")
            for side, measured in zip(sides, slow, strict=True):
                if measured.code == 2:
                    print(f"  {side.name:10} refused it")
                    continue
                play = played_seconds(side.root / "many")
                alone = "" if play is None else f", its play alone {play:.2f} s = {play / bare.wall:.2f}x bare"
                print(f"  {side.name:10} whole process {measured.wall / bare.wall:.2f}x bare{alone}")
            print(flush=True)
        if "demo" in options.only:
            for side in sides:
                side.child(["init", str(side.root / "demo")]).measured()
            demo = interleaved(
                max(3, options.repeat), sides, lambda side: side.child(["-C", str(side.root / "demo"), "run"], fresh=side.root / "demo" / "results")
            )
            shown("convy run of the demo project (8 scenarios), start to exit", *demo)
    finally:
        if options.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
