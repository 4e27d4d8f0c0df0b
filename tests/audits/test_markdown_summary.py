"""The Markdown summary from the real ``convy`` command, rendered with a real CommonMark renderer.

markdown-it-py (rich's dependency) renders each summary to HTML with its GFM-like preset (tables
and strikethrough; its link finder is off, as it needs a package convy does not have): the tests
read the tables back from that HTML, and check that text from outside — a scenario's file name, a
claim, a judge's error — made no element of its own.

The project made here has a bot whose answers follow ``mode.txt``, so one project gives a run
before and a run after a change: ``good`` always passes, ``bad`` says what its check forbids, and
``wobble`` says it once.
"""

from __future__ import annotations

import json
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import msgspec
import pytest
from markdown_it import MarkdownIt
from support.fakeproject import Command, FakeProject

from convy.markdown import MOST, MarkdownText, SectionsFitted

SECRET = "sk-canary-7f3a9c2e41d8b6a05e"
HOSTILE = "<img src=x onerror=alert(1)> | **bold** [link](https://evil.example) @octocat #1 `tick` \x1b[31m\r\n# heading"

AGENT = '''\
from decimal import Decimal
from pathlib import Path

from convy.agent import Answer, Cost, Usage
from convy.fakes import FakeAgent

said = []


def answer(text):
    mode = Path("mode.txt").read_text().strip() if Path("mode.txt").exists() else "good"
    said.append(text)
    if mode == "bad" or (mode == "wobble" and len(said) == 1):
        return "I guarantee it"
    return Answer("hello " + text, Usage(input=7, output=3, cost=Cost(Decimal("0.0125"), "provider")))


agent = FakeAgent(answer)
'''

MODELS = f'''\
import os
from pathlib import Path

from convy.fakes import FakeJudge
from convy.judge import Models


def held(claim, transcript):
    if "unjudgeable" in claim:
        raise ValueError("key=" + os.environ["BOT_API_KEY"] + " " + {HOSTILE!r} + "x" * 300)
    return "fails" not in claim


name = Path("judge.txt").read_text() if Path("judge.txt").exists() else "fake-judge"
models = Models(judge=FakeJudge(held, name=name))
'''

PLAIN = "script: [hi]\njudge:\n  - check: {not_said: guarantee}\n  - The bot is polite.\n"


def convy(where: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``convy -C project …`` run from ``where``, with the bot's key in the environment."""
    return Command(where, SECRET).ran(*arguments)


def made(tmp_path: Path, scenarios: dict[str, str], attempts: int) -> Path:
    return FakeProject(AGENT, MODELS, scenarios, attempts).written(tmp_path / "project")


def played(tmp_path: Path, project: Path, mode: str) -> str:
    """A run of the bot in ``mode``; its id."""
    (project / "mode.txt").write_text(mode, encoding="utf-8")
    before = set((project / "results" / "bot").glob("*")) if (project / "results" / "bot").exists() else set()
    convy(tmp_path, "-C", "project", "run")
    (folder,) = set((project / "results" / "bot").glob("*")) - before
    return folder.name


class Rendered(HTMLParser):
    """The HTML markdown-it makes of a summary: every element, and each table's rows as text."""

    def __init__(self, markdown: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.tables: list[list[list[str]]] = []
        self.text = ""
        self._cell: list[str] | None = None
        self.feed(MarkdownIt("gfm-like", {"linkify": False}).render(markdown))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.text += data
        if self._cell is not None:
            self._cell.append(data)


ELEMENTS = {"h3", "p", "strong", "table", "thead", "tbody", "tr", "th", "td", "ul", "li", "blockquote", "br"}


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A project whose scenario's file name, claim and judge's error hold Markdown, HTML and control characters."""
    odd = "odd|<img src=x onerror=alert(1)>*_@me_*#2\x01\nname.yaml"
    claim = "It fails: <script>alert(1)</script> | **bold** @octocat #1 `tick` [x](https://evil.example)"
    return made(
        tmp_path,
        {
            "greet.yaml": PLAIN,
            odd: f"script: [hi]\njudge:\n  - {json.dumps(claim)}\n",
            "unjudged.yaml": "script: [hi]\njudge:\n  - An unjudgeable claim.\n",
        },
        2,
    )


def test_a_run_summary_gives_the_pass_rate_the_failures_and_the_report(tmp_path: Path) -> None:
    """`convy run --summary FILE` writes FILE where the command was run: the pass rate with its interval, the scenarios that failed with their claims, tokens, cost and the report's path from there."""
    project = made(tmp_path, {"greet.yaml": PLAIN, "refund.yaml": "script: [hi]\njudge:\n  - The bot fails here.\n"}, 3)
    done = convy(tmp_path, "-C", "project", "run", "--summary", "summary.md")
    assert done.returncode == 3, done.stderr  # refund fails every attempt: the pass rule fails the run
    written = tmp_path / "summary.md"
    assert f"summary: {written}" in done.stdout
    markdown = written.read_text(encoding="utf-8")
    (folder,) = (project / "results" / "bot").iterdir()
    assert markdown.startswith(f"### convy · bot · run {MarkdownText(folder.name).markdown()}\n")
    assert "**✗ Failed:** 1 of 2 scenarios failed the pass rule (every judged attempt must pass)" in markdown
    assert "**Pass rate 50.0%** (95% interval " in markdown
    assert "3 passed of 6 judged · 2 scenarios: 1 always pass, 0 flaky, 1 never pass" in markdown
    assert "**Cost:** $0.0750 (complete)" in markdown  # six answers at 0.0125, the fake judge free
    totals = msgspec.json.decode((folder / "summary.json").read_bytes())["totals"]  # what the report summed
    rate = totals["rate"]
    assert f"**Pass rate {rate['estimate']:.1%}** (95% interval {rate['low'] * 100:.{0 if rate['low'] in (0, 1) else 1}f}%–" in markdown
    rendered = Rendered(markdown)
    assert rendered.tables == [
        [["Scenario", "Passed", "Result", "What failed"], ["refund", "0 of 3", "✗ never passes", "The bot fails here. (0 of 3 held)"]]
    ]
    assert f"Report: project/results/bot/{folder.name}/report.html" in rendered.text
    assert rendered.tags <= ELEMENTS


def test_report_writes_the_summary_of_a_finished_run(tmp_path: Path) -> None:
    """`convy report RUN --summary FILE` writes what `convy run --summary` wrote, and refuses with no run named."""
    made(tmp_path, {"greet.yaml": PLAIN}, 2)
    assert convy(tmp_path, "-C", "project", "run", "--summary", "played.md").returncode == 0
    (folder,) = (tmp_path / "project" / "results" / "bot").iterdir()
    assert convy(tmp_path, "-C", "project", "report", folder.name, "--summary", "again.md").returncode == 0
    assert (tmp_path / "again.md").read_text() == (tmp_path / "played.md").read_text()
    done = convy(tmp_path, "-C", "project", "report", "--summary", "all.md")
    assert (done.returncode, done.stderr) == (2, "convy: --summary writes the runs named: convy report RUN… --summary FILE\n")


def test_a_real_regression_is_said_with_its_scenarios_and_flipped_claims(tmp_path: Path) -> None:
    """A comparison whose candidate fails every attempt says the change is real and worse, as the page does, and lists the scenarios and the claims that flipped."""
    project = made(tmp_path, {f"s{number}.yaml": PLAIN for number in range(4)}, 6)
    base, candidate = played(tmp_path, project, "good"), played(tmp_path, project, "bad")
    done = convy(tmp_path, "-C", "project", "compare", base, candidate, "--summary", "compare.md")
    assert done.returncode == 0, done.stderr
    markdown = (tmp_path / "compare.md").read_text(encoding="utf-8")
    assert "**Pass rate 100% → 0%: ▼ worse — a real change**" in markdown
    # The interval holds the attempts' own noise (issue 26): not [−100, −100] at 6 attempts a side.
    assert "Δ −100.0 pts, 95% CI −100.0 pts to −79.9 pts · p < 0.001 (exact)" in markdown
    assert "**Scenarios:** 4 worse, 0 better, 0 undecided, 0 same (within ±10 pts)" in markdown
    rendered = Rendered(markdown)
    scenarios, claims = rendered.tables
    assert [row[0] for row in scenarios] == ["Scenario", "s0", "s1", "s2", "s3"]
    assert {tuple(row[1:3]) + (row[4],) for row in scenarios[1:]} == {("6/6", "0/6", "▼ worse")}
    assert claims[0] == ["Scenario", "Claim", "Held before", "Held after", "Change"]
    assert claims[1:] == [[f"s{number}", "never said /guarantee/", "100%", "0%", "▼ worse, flipped"] for number in range(4)]
    assert f"Page: project/results/compare/{base}--{candidate}.html" in rendered.text
    assert rendered.tags <= ELEMENTS
    # The bad answers have no price: the cost after is a floor, and said to be.
    assert "**Cost:** $0.3000 → unpriced (no ratio per attempt; incomplete: some requests unpriced)" in markdown
    assert convy(tmp_path, "-C", "project", "report", candidate, "--summary", "after.md").returncode == 0
    assert "**Cost:** unpriced (no price known for its 24 requests)" in (tmp_path / "after.md").read_text(encoding="utf-8")


def test_a_change_within_noise_is_said_so(tmp_path: Path) -> None:
    """A candidate that fails one attempt of twenty-four is within noise, in the page's words, with no scenario worse and no claim flipped, and each run's attempts not judged said apart."""
    unjudged = {"u.yaml": "script: [hi]\njudge:\n  - An unjudgeable claim.\n"}
    project = made(tmp_path, {f"s{number}.yaml": PLAIN for number in range(4)} | unjudged, 6)
    base, candidate = played(tmp_path, project, "good"), played(tmp_path, project, "wobble")
    assert convy(tmp_path, "-C", "project", "compare", base, candidate, "--summary", "compare.md").returncode == 0
    markdown = (tmp_path / "compare.md").read_text(encoding="utf-8")
    assert "**Pass rate 100% → 95.8%: ~ within noise — not a real change**" in markdown
    # At 6 attempts no scenario is shown to be the same within ±10 points (issue 26): undecided,
    # the one that lost an attempt listed with the direction seen; no claim flipped.
    assert (
        "**Scenarios:** 0 worse, 0 better, 5 undecided at 6 attempts (1 worse seen; 1 not judged in both runs), 0 same (within ±10 pts)"
    ) in markdown
    (moved,) = Rendered(markdown).tables
    assert moved[1:] == [["s0", "6/6", "5/6", "1", "? undecided at 6 attempts (worse seen)"]]
    for name in ("base", "candidate"):
        assert f"**Not judged in the {name} run:** 6 attempts, left out of the pass rate\n- judge failed: 6 — e.g. " in markdown
    assert "within noise\\: a change this size is likely from attempt\\-to\\-attempt variation" in markdown


def test_what_makes_two_runs_not_comparable_is_said_as_text(tmp_path: Path) -> None:
    """Runs whose judges differ get the page's warning, the judge's name shown as text however it is written."""
    project = made(tmp_path, {"s0.yaml": PLAIN}, 2)
    base = played(tmp_path, project, "good")
    (project / "judge.txt").write_text("<b>judge</b> | @octocat **2**", encoding="utf-8")
    candidate = played(tmp_path, project, "good")
    assert convy(tmp_path, "-C", "project", "compare", base, candidate, "--summary", "compare.md").returncode == 0
    markdown = (tmp_path / "compare.md").read_text(encoding="utf-8")
    assert "> **⚠ These runs are not comparable as they stand**" in markdown
    rendered = Rendered(markdown)
    assert rendered.tags <= ELEMENTS
    assert "the judge differs: fake-judge → <b>judge</b> | @\u200boctocat **2**" in rendered.text


def test_outside_text_renders_as_text_and_keeps_secrets_hidden(tmp_path: Path, hostile: Path) -> None:
    """A scenario's file name, a claim and a judge's error holding HTML, Markdown, `|`, newlines and control characters render as their own text in one cell or line, with no element of theirs, and the key stays hidden."""
    done = convy(tmp_path, "-C", "project", "run", "--summary", "summary.md")
    assert done.returncode == 5, done.stderr  # an attempt was not judged (and no agent failed)
    markdown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert SECRET not in markdown and SECRET[:8] not in markdown
    assert "\x1b" not in markdown and "\x01" not in markdown and "\r" not in markdown
    rendered = Rendered(markdown)
    assert rendered.tags <= ELEMENTS  # no img, script, b, em, a, h1 or code of theirs
    (table,) = rendered.tables
    assert all(len(row) == 4 for row in table)  # a `|` split no cell
    odd = next(row for row in table if row[0].startswith("odd"))
    assert odd[0] == "odd|<img src=x onerror=alert(1)>*_@\u200bme_*#\u200b2\\x01\\nname"
    assert odd[3].startswith("It fails: <script>alert(1)</script> | **bold** @\u200boctocat #\u200b1 `tick` [x](https://evil.example)")
    assert "**Not judged:** 2 attempts, left out of the pass rate" in markdown
    reason = next(line for line in rendered.text.splitlines() if line.startswith("judge failed: 2 — e.g. "))
    assert "ValueError: key=<hidden> <img src=x onerror=alert(1)> | **bold** [link](https://evil.example) @\u200boctocat" in reason
    assert "\\x1b[31m\\r\\n#\u200b heading" in reason
    assert "xxxxx… (" in reason and reason.endswith(" more characters)")  # cut to its bound


def test_the_summary_stays_short_with_many_failing_scenarios(tmp_path: Path) -> None:
    """Forty failing scenarios with long names give fifteen rows and "and 25 more scenarios", far under GitHub's caps."""
    name = "@" * 150
    made(tmp_path, {f"{name}{number:02}.yaml": "script: [hi]\njudge:\n  - It fails.\n" for number in range(40)}, 1)
    assert convy(tmp_path, "-C", "project", "run", "--summary", "summary.md").returncode == 3
    markdown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    (table,) = Rendered(markdown).tables
    assert len(table) == 1 + 15
    assert "\nand 25 more scenarios\n" in markdown
    assert len(markdown) < 30_000


def test_sections_past_the_bound_share_the_room_and_only_then_are_left_out_and_named() -> None:
    """Sections that do not fit whole are each cut to a share of MOST at a line, every one kept; a
    small one keeps its whole; only when not even each first line fits are sections left out, named."""
    large = "### run\n\n" + "line\n" * 3000
    shared = SectionsFitted((large,) * 10 + ("### small\n\nall of it\n",), "runs").markdown()
    assert len(shared) <= MOST
    assert shared.count("### run\n") == 10 and "### small\n\nall of it\n" in shared
    assert shared.count(" more lines, left out to keep this short\n") == 10
    section = "x" * 1000 + "\n"
    many = SectionsFitted((section,) * 200, "runs", tuple(f"bot{number}/run" for number in range(200))).markdown()
    assert len(many) <= MOST
    kept = many.count(section)
    assert f"and {200 - kept} more runs, left out to keep this short: bot{kept}\\/run, " in many
    huge = SectionsFitted(("line\n" * 20_000,), "runs").markdown()
    assert len(huge) <= MOST
    assert huge.endswith(" more lines, left out to keep this short\n")


def test_a_summary_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    """A summary whose folder cannot be made is one line and exit 1 after a run (the run kept), exit 2 from compare."""
    project = made(tmp_path, {"greet.yaml": PLAIN}, 1)
    unnameable = "n" * 300 + ".md"  # a name no file system takes
    done = convy(tmp_path, "-C", "project", "run", "--summary", unnameable)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"convy: {tmp_path / unnameable}: cannot be written: ")
    (folder,) = (project / "results" / "bot").iterdir()
    assert done.stderr.endswith(f"the runs are kept: convy report {folder.name} --summary FILE\n")  # the run's own id
    assert convy(tmp_path, "-C", "project", "run").returncode == 0
    (other,) = {path.name for path in (project / "results" / "bot").iterdir()} - {folder.name}
    done = convy(tmp_path, "-C", "project", "compare", folder.name, other, "--summary", unnameable)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr and "cannot be written" in done.stderr
    assert not list(tmp_path.glob("**/nnnn*"))


# --- what a reviewer needs (issue 24, item 7) ------------------------------------------------------

CRASHING = '''\
import os

from convy.fakes import FakeAgent


def answer(text):
    if "crash" in text:
        raise RuntimeError("refused with key " + os.environ["BOT_API_KEY"] + "\\n✓ forged line \\x1b[31m" + "y" * 5000)
    return "hello " + text


agent = FakeAgent(answer)
'''


def test_ids_that_share_a_long_beginning_stay_apart(tmp_path: Path) -> None:
    """Two failing scenarios whose ids share 150 characters are cut in the middle: each row keeps the end that tells them apart."""
    stem = "a-very-long-" + "x" * 130
    project = made(tmp_path, {}, 1)
    (project / "scenarios" / "refunds").mkdir()
    for number in (1, 2):
        (project / "scenarios" / "refunds" / f"{stem}-case-{number}.yaml").write_text("script: [hi]\njudge:\n  - It fails.\n")
    assert convy(tmp_path, "-C", "project", "run", "--summary", "summary.md").returncode != 2
    (table,) = Rendered((tmp_path / "summary.md").read_text(encoding="utf-8")).tables
    ids = [row[0] for row in table[1:]]
    assert len(ids) == 2 and len(set(ids)) == 2, ids
    assert [one[-7:] for one in ids] == ["-case-1", "-case-2"]
    assert all(one.startswith("refunds/a-very-long-xxx") and "…" in one and len(one) <= 100 for one in ids)


def test_an_agents_crash_is_shown_with_its_error(tmp_path: Path) -> None:
    """A scenario the agent crashed in says so in its row, with the error as kept: the key hidden, on one line, its control characters written out, cut."""
    project = made(tmp_path, {"greet.yaml": PLAIN, "crash.yaml": "script: [crash now]\njudge:\n  - The bot is polite.\n"}, 2)
    (project / "agents" / "bot.py").write_text(CRASHING, encoding="utf-8")
    done = convy(tmp_path, "-C", "project", "run", "--summary", "summary.md")
    assert done.returncode == 1, done.stderr
    markdown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert SECRET not in markdown and "\x1b" not in markdown
    rendered = Rendered(markdown)
    assert rendered.tags <= ELEMENTS
    (table,) = rendered.tables
    assert table[0] == ["Scenario", "Passed", "Result", "What failed"]
    (row,) = table[1:]
    assert row[:3] == ["crash", "0 of 2", "✗ never passes"]
    said = row[3]
    assert said.startswith("the agent failed in 2 (RuntimeError: refused with key <hidden>\\n✓ forged line \\x1b[31myyy"), said
    assert said.endswith(" more characters))"), said


def test_scenarios_never_played_are_said_not_played(tmp_path: Path) -> None:
    """A run its budget stopped after one attempt lists the scenarios it never reached as not played, not as not judged."""
    project = made(tmp_path, {f"s{number}.yaml": PLAIN for number in range(3)}, 2)
    with (project / "pyproject.toml").open("a", encoding="utf-8") as toml:
        toml.write("agent_places = 1\njudge_places = 1\n")
    done = convy(tmp_path, "-C", "project", "run", "--max-tokens", "10", "--summary", "summary.md")
    assert done.returncode == 6, done.stdout + done.stderr
    markdown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    (table,) = Rendered(markdown).tables
    unplayed = [row for row in table[1:] if row[2] == "– not played"]
    assert len(unplayed) >= 1, table
    assert all(row[1] == "0 of 0" and row[3] == "—" for row in unplayed)
    assert "not judged" not in "".join(cell for row in table for cell in row)
    assert f", {len(unplayed)} not played" in markdown


def test_every_run_is_in_the_summary_when_many_agents_played(tmp_path: Path) -> None:
    """Six agents whose runs each fail sixteen scenarios with long ids would not fit whole: each run keeps its section, fewer scenarios listed in each, within MOST."""
    name = "@" * 150
    project = made(tmp_path, {f"{name}{number:02}.yaml": "script: [hi]\njudge:\n  - It fails.\n" for number in range(16)}, 1)
    agents = [f"bot{number}" for number in range(6)]
    for agent in agents:
        (project / "agents" / f"{agent}.py").write_text((project / "agents" / "bot.py").read_text())
    (project / "agents" / "bot.py").unlink()
    assert convy(tmp_path, "-C", "project", "run", "--summary", "summary.md").returncode == 3  # every scenario fails
    markdown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert len(markdown) <= MOST
    for agent in agents:
        (folder,) = (project / "results" / agent).iterdir()
        assert f"### convy · {agent} · run {MarkdownText(folder.name).markdown()}\n" in markdown
        assert f"Report: project/results/{agent}/{folder.name}/report.html" in Rendered(markdown).text
    assert "left out to keep this short" not in markdown  # fewer rows was enough
    assert all(len(table) == 1 + 5 for table in Rendered(markdown).tables)
    assert markdown.count("\nand 11 more scenarios\n") == 6
