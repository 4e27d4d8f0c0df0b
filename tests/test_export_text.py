"""Text in the exported CSV reads back as the same text: a reply of ``nan`` is the text "nan".

A run is played where the agent answers each scripted message with the words readers are known to
take for a missing value; its tables are written as convy export writes them and read back with
polars' defaults and with the pandas call docs/tables.md gives.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from convy import Bench, Models, RunJournal, RunSpec, Scenarios
from convy.fakes import FakeAgent
from convy.runs import Runs
from convy.tables import Tables

pandas = pytest.importorskip("pandas")
polars = pytest.importorskip("polars")

# Every text pandas' read_csv takes for a missing value by default, and a few more.
WORDS = ("nan", "NaN", "-nan", "NA", "<NA>", "N/A", "n/a", "#N/A", "#NA", "NULL", "null", "None", "1.#QNAN", "-1.#IND", "#N/A N/A")
PANDAS = {"keep_default_na": False, "na_values": [""]}  # as docs/tables.md says to read the files


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
    assert frame.get_column("agent_text").to_list() == [*WORDS, ""]
    assert frame.get_column("user_text").to_list() == [*WORDS, "silence"]
    assert frame.get_column("agent_tokens_in").null_count() == len(WORDS) + 1, "a missing value stays missing"


def test_pandas_reads_every_word_as_its_text_the_documented_way(turns: Path) -> None:
    """pandas' read_csv, called as docs/tables.md says, gives each reply as the text it was, and a
    missing number as NaN; with its defaults it would take "nan" for missing, which is why the call."""
    frame = pandas.read_csv(turns, **PANDAS)
    assert frame["agent_text"].tolist()[:-1] == list(WORDS)
    assert frame["user_text"].tolist() == [*WORDS, "silence"]
    assert frame["agent_tokens_in"].isna().all()
    assert pandas.read_csv(turns)["agent_text"].isna().sum() == len(WORDS) + 1, "pandas' defaults, for the docs' sake"


def test_the_docs_give_the_pandas_call_the_test_uses() -> None:
    """docs/tables.md reads CSV in pandas with keep_default_na=False and na_values=[""]."""
    docs = (Path(__file__).resolve().parents[1] / "docs" / "tables.md").read_text(encoding="utf-8")
    assert 'pd.read_csv("results/export/turns.csv", keep_default_na=False, na_values=[""])' in docs
