"""Text in the exported CSV reads back as the same text: a reply of ``nan`` is the text "nan", and a
reply of ``=HYPERLINK(...)`` is shown by a spreadsheet as text, never run as a formula.

A run is played where the agent answers each scripted message with the words readers are known to
take for a missing value; its tables are written as convy export writes them and read back with
polars' defaults and with the pandas call docs/tables.md gives. Another run's agent, scenario, replies
and tool calls begin with what a spreadsheet takes for a formula: in CSV each such text cell has a
leading ``'``, in JSON Lines it is exact.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from convy import Bench, Models, RunJournal, RunSpec, Scenarios
from convy.agent import Answer, Asked, Call, NoUsage, Reported
from convy.fakes import FakeAgent, FakeJudge
from convy.rows import Table
from convy.runs import Runs
from convy.tables import Tables

pandas = pytest.importorskip("pandas")
polars = pytest.importorskip("polars")

# Every text pandas' read_csv takes for a missing value by default, and a few more.
WORDS = ("nan", "NaN", "-nan", "NA", "<NA>", "N/A", "n/a", "#N/A", "#NA", "NULL", "null", "None", "1.#QNAN", "-1.#IND", "#N/A N/A")
PANDAS = {"keep_default_na": False, "na_values": [""]}  # as docs/tables.md says to read the files
# Two of the words begin with "-", which a spreadsheet takes for a formula: the CSV shows them with a '.
SHOWN = tuple("'" + word if word.startswith("-") else word for word in WORDS)


@pytest.fixture(scope="module")
def turns(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The turns table as CSV, of a run whose agent answered each word with that word, and once with ""."""
    folder = tmp_path_factory.mktemp("export")
    scenarios = folder / "scenarios"
    scenarios.mkdir()
    script = ", ".join(f'"{word}"' for word in WORDS)
    (scenarios / "words.yaml").write_text(f"max_turns: 20\nscript: [{script}, silence]\njudge: [{{check: {{said: x}}}}]\n", encoding="utf-8")
    bench = Bench(FakeAgent(lambda text: "" if text == "silence" else text), Models())
    spec = RunSpec(id="words", agent="echo", scenarios=Scenarios(scenarios).every(), attempts=1, limits=bench.limits)
    asyncio.run(RunJournal(folder / "results" / "echo" / "words").play(spec, bench))
    runs, unread = Runs(folder / "results").read()
    assert unread == ()
    path = folder / "turns.csv"
    path.write_text(Tables(runs).named("turns").csv(), encoding="utf-8")
    return path


def test_polars_reads_every_word_as_its_text_and_empty_text_as_empty(turns: Path) -> None:
    """polars' read_csv with its defaults gives each reply as the text it was, "" as "", and no null."""
    frame = polars.read_csv(turns)
    assert frame.get_column("agent_text").to_list() == [*SHOWN, ""]
    assert frame.get_column("user_text").to_list() == [*SHOWN, "silence"]
    assert frame.get_column("agent_tokens_in").null_count() == len(WORDS) + 1, "a missing value stays missing"


def test_pandas_reads_every_word_as_its_text_the_documented_way(turns: Path) -> None:
    """pandas' read_csv, called as docs/tables.md says, gives each reply as the text it was, and a
    missing number as NaN; with its defaults it would take "nan" for missing, which is why the call."""
    frame = pandas.read_csv(turns, **PANDAS)
    assert frame["agent_text"].tolist()[:-1] == list(SHOWN)
    assert frame["user_text"].tolist() == [*SHOWN, "silence"]
    assert frame["agent_tokens_in"].isna().all()
    # pandas' defaults, for the docs' sake: every word is missing but the two the ' turned into other words.
    escaped = sum(1 for word, shown in zip(WORDS, SHOWN, strict=True) if word != shown)
    assert escaped == 2
    assert pandas.read_csv(turns)["agent_text"].isna().sum() == len(WORDS) + 1 - escaped


def test_the_docs_give_the_pandas_call_the_test_uses() -> None:
    """docs/tables.md reads CSV in pandas with keep_default_na=False and na_values=[""]."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "tables.md").read_text(encoding="utf-8")
    assert 'pd.read_csv("results/export/turns.csv", keep_default_na=False, na_values=[""])' in docs


# --- formulas -------------------------------------------------------------------------------------

# Texts a spreadsheet runs as a formula when it opens the file, and one that only looks like the escape.
FORMULAS = ('=HYPERLINK("http://127.0.0.1/x?d="&A1,"open")', "+1", "-2+3", "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1", "\x00=1+1", "'=quoted")
SAFE = ("a = b", "1+1", "x@y.org")  # a trigger that is not the first character is harmless
AGENT = "=agent"
SCENARIO = "@scenario"


def answer(text: str) -> Answer:
    """Each message answered with itself, after a tool of that name called with it and returning it,
    and a pause that asks it and is answered with it."""
    steps = (Call(text, {"q": text, "n": -2}, Reported(text), 0.5), Call("count", {}, Reported(-2)), Asked(text, text, options=(text,)))
    return Answer(text, NoUsage(), steps)


@pytest.fixture(scope="module")
def formulas(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Table]:
    """The tables of a run of the agent ``=agent`` playing ``@scenario``, whose script sends every
    formula and harmless text in turn to an agent that repeats it as its reply, a tool's name,
    arguments and result; a panel of two judges decides a claim, one quoting a formula."""
    folder = tmp_path_factory.mktemp("formulas")
    scenarios = folder / "scenarios"
    scenarios.mkdir()
    script = ", ".join(json.dumps(text) for text in (*FORMULAS, *SAFE))
    (scenarios / "formulas.yaml").write_text(
        f"id: {json.dumps(SCENARIO)}\nmax_turns: 20\nscript: [{script}]\njudge: [{{check: {{said: x}}}}, It repeats]\n", encoding="utf-8"
    )
    bench = Bench(FakeAgent(answer), Models(judge=[FakeJudge(name="a", quote=FORMULAS[0]), FakeJudge(name="b")]))
    spec = RunSpec(id="formulas", agent=AGENT, scenarios=Scenarios(scenarios).every(), attempts=1, limits=bench.limits)
    asyncio.run(RunJournal(folder / "results" / AGENT / "formulas").play(spec, bench))
    runs, unread = Runs(folder / "results").read()
    assert unread == ()
    return {table.name: table for table in Tables(runs).every()}


def written(table: Table, folder: Path) -> tuple[Path, Path]:
    csv, jsonl = folder / f"{table.name}.csv", folder / f"{table.name}.jsonl"
    csv.write_text(table.csv(), encoding="utf-8", newline="")
    jsonl.write_text(table.jsonl(), encoding="utf-8")
    return csv, jsonl


def test_replies_and_tool_calls_that_begin_a_formula_are_text_in_csv_and_exact_in_jsonl(formulas: dict[str, Table], tmp_path: Path) -> None:
    """Each reply, user message and tool name that begins with =, +, -, @, a tab or a carriage return
    (or NUL, or the ' of the escape) reads back from CSV with one ' in front; the harmless texts, and every
    text of the JSON Lines, read back as they were."""
    texts = (*FORMULAS, *SAFE)
    shown = [*("'" + text for text in FORMULAS), *SAFE]
    csv, jsonl = written(formulas["turns"], tmp_path)
    frame = pandas.read_csv(csv, **PANDAS)
    assert frame["agent_text"].tolist() == shown
    assert frame["user_text"].tolist() == shown
    assert frame["agent_tokens_in"].isna().all(), "a missing value is not text: nothing to escape"
    assert frame["turn"].tolist() == list(range(1, len(texts) + 1)), "a number is not text"
    assert frame["scripted"].tolist() == [True] * len(texts), "a boolean is not text"
    assert polars.read_csv(csv).get_column("agent_text").to_list() == shown
    exact = pandas.read_json(jsonl, lines=True, dtype=False)
    assert exact["agent_text"].tolist() == list(texts)
    assert exact["user_text"].tolist() == list(texts)
    assert [record["agent_text"] for record in formulas["turns"].records()] == list(texts)
    # The escape undone as docs/tables.md says, in pandas and in polars.
    assert frame["agent_text"].str.removeprefix("'").tolist() == list(texts)
    undone = polars.read_csv(csv).select(polars.col("agent_text").str.strip_prefix("'"))
    assert undone.get_column("agent_text").to_list() == list(texts)
    docs = (Path(__file__).resolve().parents[2] / "docs" / "tables.md").read_text(encoding="utf-8")
    assert 'turns["agent_text"].str.removeprefix("\'")' in docs and 'pl.col("agent_text").str.strip_prefix("\'")' in docs


def test_tool_calls_that_begin_a_formula_are_text_in_csv_and_exact_in_jsonl(formulas: dict[str, Table], tmp_path: Path) -> None:
    """A tool's name that begins a formula gets the '; its arguments are a JSON object, a cell that
    begins with {, and its result a JSON string, a cell that begins with "; neither is ever a
    formula, and both decode to the exact texts. A result of -2 is the JSON text -2: it gets a '."""
    texts = (*FORMULAS, *SAFE)
    csv, jsonl = written(formulas["tool_calls"], tmp_path)
    frame = pandas.read_csv(csv, **PANDAS)
    names = frame["name"].tolist()
    assert names[0::2] == [*("'" + text for text in FORMULAS), *SAFE]
    assert names[1::2] == ["count"] * len(texts)
    assert [json.loads(arguments) for arguments in frame["arguments"][0::2]] == [{"q": text, "n": -2} for text in texts]
    assert frame["arguments"][1::2].tolist() == ["{}"] * len(texts)
    assert [json.loads(result) for result in frame["result"][0::2]] == list(texts)
    assert frame["result"][1::2].tolist() == ["'-2"] * len(texts), "the JSON text -2 is text, and begins with -"
    assert frame["seconds"][0::2].tolist() == [0.5] * len(texts), "a number is not text"
    exact = pandas.read_json(jsonl, lines=True, dtype=False)
    assert exact["name"][0::2].tolist() == list(texts)
    assert exact["result"][1::2].tolist() == ["-2"] * len(texts)
    assert [json.loads(arguments)["q"] for arguments in exact["arguments"][0::2]] == list(texts)


def test_ids_and_names_convy_writes_are_escaped_alike(formulas: dict[str, Table], tmp_path: Path) -> None:
    """The agent's name and the scenario's id came from files: in every table they get the ' in CSV
    and stay exact in JSON Lines, like any text."""
    for table in formulas.values():
        csv, jsonl = written(table, tmp_path)
        frame = pandas.read_csv(csv, **PANDAS)
        exact = pandas.read_json(jsonl, lines=True, dtype=False)
        assert set(frame["agent"]) == {"'" + AGENT}, table.name
        assert set(exact["agent"]) == {AGENT}, table.name
        if "scenario" in table.columns:
            assert set(frame["scenario"]) == {"'" + SCENARIO}, table.name
            assert set(exact["scenario"]) == {SCENARIO}, table.name


def test_the_csv_cells_begin_with_the_escape(formulas: dict[str, Table]) -> None:
    """On the bytes: a defused cell is the quote of CSV, then ', then the text (its quotes doubled)."""
    text = formulas["turns"].csv()
    assert '"\'=HYPERLINK(""http://127.0.0.1/x?d=""&A1,""open"")"' in text
    assert '"\'\t=1+1"' in text and '"\'\r=1+1"' in text and "\"''=quoted\"" in text
    assert '"1+1"' in text and "\"'1+1\"" not in text
