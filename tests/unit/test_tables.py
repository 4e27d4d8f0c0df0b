"""The tables of runs: real runs played with convy's bench and fakes, read back, and given as
records, CSV and JSON Lines; then read as a notebook would, with pandas and polars."""

from __future__ import annotations

import asyncio
import csv
import hashlib
import io
import json
import random
import re
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import msgspec
import pandas
import polars
import pytest

from convy.agent import Answer, Asked, Call, Cost, NoUsage, Reported, Thought, Usage
from convy.bench import Bench
from convy.checks import Check, Rule
from convy.fakes import Echo, FakeAgent, FakeJudge, FakeModel
from convy.judge import ChatJudge, Models, Verdict
from convy.model import Reply, Said
from convy.records import Fingerprints, Limits, ModelNames, RunFile, Running, RunSpec
from convy.rows import FORMULA_STARTS, Table
from convy.runs import Read, Runs
from convy.scenario import Scenario
from convy.storage import RunJournal
from convy.tables import Tables, Usages, UsageTotals

DOCS = Path(__file__).resolve().parents[2] / "docs" / "tables.md"
FINGERPRINT = hashlib.sha256(b"the scenarios").hexdigest()
NAMES = ("runs", "scenarios", "attempts", "turns", "claims", "votes", "tool_calls", "pauses", "model_requests")

REFUND = Scenario(
    id="orders/refund",
    user="You are Dana; your kettle broke and you want a refund.",
    script=("Hi, my kettle broke.",),
    judge=(
        "The agent offers a refund.",
        Rule(claim="The agent is polite.", grades=("rude", "ok", "warm"), pass_="ok"),
        Rule(check=Check(called="refund")),
    ),
    tags=("money", "refund"),
)
GREETING = Scenario(id="greeting", script=("Hello", "Bye"), judge=(Rule(check=Check(said="Hello")),))
CRASH = Scenario(id="crash", script=("please crash",), judge=("The agent answers.",))
TRIPS = Scenario(id="judge-trips", script=("nonsense please",), judge=("The agent makes sense.",))
LOST = Scenario(id="lost-user", user="You are lost.", judge=("The agent helps.",), tags=("users",))
# A matrix's two variants, so the variant columns have values to be read by.
GREETINGS = Scenario(
    id="greetings", script=("{{ word }}",), matrix={"word": ["Hello", "Hi"]}, judge=(Rule(check=Check(said="Hello")),)
).variants()


def shop(text: str) -> Answer:
    """The shop's agent: priced, unpriced and unreported usage, thoughts, calls with and without results."""
    if "crash" in text:
        raise RuntimeError("the shop is closed")
    if text == "Hello":
        return Answer("Hello, there", NoUsage())
    if text == "Bye":
        return Answer('Bye, "friend"', Usage(7, 2))
    if "nonsense" in text:
        # The pauses, as an attempt keeps them: one the simulated user answered (its request
        # counted with the user's), and a question nobody answered.
        pauses = (
            Asked("May I refund A1?", "approve", "user", ("approve", "deny"), "refund", {"order": "A1"}, 1.5, 0.25, Usage(30, 2)),
            Asked("Anything else?", "", "nobody", start=1.75),
        )
        return Answer("Gibberish", Usage(5, 1, cost=Cost(Decimal("0.0012"), "provider")), pauses)
    return Answer(
        "Refunded, 10 €.\nAnything else?",
        Usage(50, 12, cached=4, reasoning=2, cost=Cost(Decimal("0.0012"), "provider")),
        (
            Thought("find the order"),
            Call("lookup", {"order": "A1"}, Reported({"status": "broken"}), 0.25),
            Call("refund", {"order": "A1", "amount": 10}, error="refunds are closed today", source="fixture", approval="approved"),  # as a scenario's tool serves it, asked first
        ),
    )


def user(messages: tuple[Said, ...]) -> Reply:
    """The simulated user: one message after the script, then it is done."""
    if "You are lost." in messages[0].content:
        raise ConnectionError("the user's model is down")
    if len(messages) <= 4:
        return Reply("Can you refund it?", Usage(20, 5, cost=Cost(Decimal("0.0003"), "computed")))
    return Reply("Thanks ###STOP###", Usage(22, 3))


class Decisions:
    """A judge model: grades, plain decisions that alternate (one refund attempt of two passes),
    and no JSON at all for a dialogue of nonsense."""

    def __init__(self) -> None:
        self.refunds = 0

    def __call__(self, messages: tuple[Said, ...]) -> Reply:
        asked = messages[-1].content
        if "nonsense" in asked:
            return Reply("I cannot say.", Usage(90, 4))
        if "The grades, worst first" in asked:
            return Reply(
                '{"evidence": "I am so sorry", "reason": "polite enough", "grade": "warm", "confidence": 0.8}',
                Usage(100, 8, cost=Cost(Decimal("0.0005"), "provider")),
            )
        self.refunds += 1
        held = "true" if self.refunds % 2 == 1 else "false"
        return Reply(f'{{"evidence": "Refunded, 10 €.", "reason": "it did or did not", "pass": {held}, "confidence": 0.9}}', Usage(100, 6))


def played(results: Path, spec: RunSpec, bench: Bench) -> None:
    asyncio.run(RunJournal(results / spec.agent / spec.id).play(spec, bench))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Read, ...]:
    """Three runs: a finished one judged by a chat judge that quotes (found and not), one killed
    while it played (with a torn line and claims a panel of two was not sure of, split on the
    graded one), and one of an echo that reported nothing."""
    results = tmp_path_factory.mktemp("project") / "results"
    limits = Limits(agent_places=2, judge_places=1)
    first = RunSpec(
        id="20250101-090000-aaaa",
        agent="shop",
        scenarios=(REFUND, GREETING, CRASH, TRIPS),
        attempts=2,
        limits=limits,
        trust=0.5,
        models=ModelNames(user="fake-user", judge="fake-judge"),
        fingerprints=Fingerprints(scenarios=FINGERPRINT),
        convy="0.1.0",
        name="prompt B",  # the runs table's name column; the other runs have none
    )
    played(results, first, Bench(FakeAgent(shop), Models(FakeModel(user, "fake-user"), ChatJudge(FakeModel(Decisions(), "fake-judge"))), limits))
    second = RunSpec(
        id="20250102-090000-bbbb", agent="shop", scenarios=(REFUND, LOST), attempts=1, limits=limits, trust=0.7, convy="0.1.0"
    )
    panel = [
        FakeJudge(confidence=0.5, name="a", quote="Refunded"),
        FakeJudge(lambda claim, said: "polite" not in claim, confidence=0.5, name="b", quote="Sorry"),
    ]
    played(results, second, Bench(FakeAgent(shop), Models(FakeModel(user, "fake-user"), panel), limits))
    folder = results / "shop" / second.id
    killed = RunFile(second, Running(RunJournal(folder).run().status.started))
    (folder / "run.json").write_bytes(msgspec.json.encode(killed))
    with (folder / "attempts.jsonl").open("a", encoding="utf-8") as lines:
        lines.write('{"scenario": "torn"}\n')
    third = RunSpec(id="20250103-090000-cccc", agent="echo", scenarios=(GREETING,), attempts=3, limits=limits)
    played(results, third, Bench(Echo(), Models(), limits))
    fourth = RunSpec(id="20250104-090000-dddd", agent="echo", scenarios=GREETINGS, attempts=1, limits=limits)
    played(results, fourth, Bench(Echo(), Models(), limits))
    read, unread = Runs(results).read()
    assert unread == ()
    return read


@pytest.fixture(scope="module")
def tables(runs: tuple[Read, ...]) -> dict[str, Table]:
    return {table.name: table for table in Tables(runs).every()}


# --- the tables and their rows ----------------------------------------------------------------


def test_nine_tables_in_order_each_with_its_columns(tables: dict[str, Table]) -> None:
    """Every table is there, in its order, and every row has exactly the table's columns."""
    assert tuple(tables) == NAMES
    for table in tables.values():
        assert len(set(table.columns)) == len(table.columns)
        assert all(re.fullmatch(r"[a-z][a-z0-9_]*", column) for column in table.columns)
        for record in table.records():
            assert tuple(record) == table.columns


def test_row_counts_match_the_runs(runs: tuple[Read, ...], tables: dict[str, Table]) -> None:
    """One row per run, scenario, attempt, turn, decided claim, tool call and request."""
    outcomes = [outcome for run in runs for outcome in run.outcomes]
    turns = [turn for outcome in outcomes for turn in outcome.transcript.turns]
    assert len(tables["runs"].rows) == 4
    assert len(tables["scenarios"].rows) == sum(len(run.file.spec.scenarios) for run in runs) == 9
    assert len(tables["attempts"].rows) == len(outcomes) == 8 + 2 + 3 + 2
    assert len(tables["turns"].rows) == len(turns)
    assert len(tables["tool_calls"].rows) == sum(1 for turn in turns for step in turn.answer.steps if type(step) is Call)
    requests = (
        len(turns)
        + sum(1 for turn in turns if not turn.scripted)
        + sum(len(outcome.user_ending) for outcome in outcomes)
        + sum(len(outcome.judge_requests) for outcome in outcomes)
        + sum(1 for turn in turns for step in turn.answer.steps if type(step) is Asked and step.usage is not None)  # the user's model inside a turn
    )
    assert len(tables["model_requests"].rows) == requests
    assert len(tables["pauses"].rows) == sum(1 for turn in turns for step in turn.answer.steps if type(step) is Asked) == 2 * 2
    claims = 0
    for outcome in outcomes:
        match outcome.result:
            case Verdict(claims=decided):
                claims += len(decided)
    assert len(tables["claims"].rows) == claims


def test_the_runs_table(tables: dict[str, Table]) -> None:
    """A finished run, a killed one (no end, one torn line), and one nobody priced."""
    first, second, third, _ = tables["runs"].records()
    assert (first["agent"], first["run"], first["status"], first["attempts"], first["planned"]) == ("shop", "20250101-090000-aaaa", "finished", 8, 8)
    assert (first["passed"], first["failed"], first["not_judged"]) == (3, 3, 2)
    assert (first["scenarios_always"], first["scenarios_flaky"], first["scenarios_never"], first["scenarios_not_judged"]) == (1, 1, 1, 1)
    assert first["pass_rate"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert first["pass_rate_low"] <= first["pass_rate"] <= first["pass_rate_high"]
    assert first["pass_rate_method"] == "bootstrap"
    assert first["cost_source"] == "mixed"
    assert first["scenarios_fingerprint"] == FINGERPRINT
    assert (second["status"], second["ended"], second["seconds"], second["broken"]) == ("interrupted", None, None, 1)
    assert (second["not_judged"], second["pass_rate"], second["pass_rate_method"]) == (2, None, None)
    assert (third["convy_version"], third["tokens_in"], third["cost_usd"], third["cost_source"]) == (None, None, None, None)
    assert (third["requests"], third["unpriced_requests"], third["passed"]) == (6, 6, 3)


def test_costs_add_up_exactly_across_tables(tables: dict[str, Table]) -> None:
    """The run's cost is the sum of its requests' costs, exact in CSV; tokens likewise."""
    rows = tables["model_requests"].rows
    for run in tables["runs"].rows:
        mine = [row for row in rows if row.run == run.run]
        priced = [row.cost_usd for row in mine if row.cost_usd is not None]
        assert run.cost_usd == (sum(priced, Decimal(0)) if priced else None)
        assert run.requests == len(mine)
        assert run.unpriced_requests == sum(1 for row in mine if not row.priced)
        reported = [row.tokens_in for row in mine if row.tokens_in is not None]
        assert run.tokens_in == (sum(reported) if reported else None)
    first = tables["runs"].rows[0]
    # agent: 2 refunds x 2 attempts... 4 answers at 0.0012 and 2 more of nonsense; user: 2 at 0.0003; judge: 2 grades at 0.0005
    assert first.cost_usd == Decimal("0.0012") * 6 + Decimal("0.0003") * 2 + Decimal("0.0005") * 2
    header, line = next(csv.reader(io.StringIO(tables["runs"].csv()))), list(csv.reader(io.StringIO(tables["runs"].csv())))[1]
    assert line[header.index("cost_usd")] == "0.0088"
    assert '"cost_usd":0.0088' in tables["runs"].jsonl().splitlines()[0]


def test_the_attempts_table(tables: dict[str, Table]) -> None:
    """Why each attempt passed, failed or was not judged, and what each participant took."""
    rows = {(row["run"][-4:], row["scenario"], row["attempt"]): row for row in tables["attempts"].records()}
    crash = rows[("aaaa", "crash", 1)]
    assert (crash["status"], crash["why"], crash["stop"], crash["failed_on"], crash["claims"]) == ("failed", "agent", "agent_failed", "please crash", None)
    assert crash["failure"] == "RuntimeError: the shop is closed"
    trips = rows[("aaaa", "judge-trips", 1)]
    # The judge's unusable answer still took its tokens: they are counted, with no cost (unpriced).
    assert (trips["status"], trips["why"], trips["judge_tokens_in"], trips["judge_cost_usd"]) == ("not_judged", "judge", 90, None)
    greeting = rows[("aaaa", "greeting", 2)]
    assert (greeting["status"], greeting["why"], greeting["failure"], greeting["claims"], greeting["claims_held"]) == ("passed", None, None, 1, 1)
    assert (greeting["agent_tokens_in"], greeting["agent_cost_usd"], greeting["unpriced_requests"]) == (7, None, 2)
    refunds = [rows[("aaaa", "orders/refund", attempt)] for attempt in (1, 2)]
    assert sorted(row["status"] for row in refunds) == ["failed", "passed"]
    assert all((row["turns"], row["tool_calls"], row["claims"], row["requests"]) == (2, 4, 3, 6) for row in refunds)
    assert all(row["judge_cost_usd"] == pytest.approx(0.0005) and row["user_tokens_in"] == 20 + 22 for row in refunds)
    lost = rows[("bbbb", "lost-user", 1)]
    assert (lost["why"], lost["stop"], lost["turns"], lost["agent_tokens_in"]) == ("user", "model_failed", 0, None)
    assert rows[("bbbb", "orders/refund", 1)]["why"] == "split"  # not trusted: the panel split on the graded claim
    # Whose it was: the agent's crash, the judge's unusable answer and split, the user model's failure.
    assert (crash["cause"], trips["cause"], greeting["cause"], lost["cause"]) == ("agent", "judge", None, "user")
    assert rows[("bbbb", "orders/refund", 1)]["cause"] == "judge"
    assert {row["cause"] for row in rows.values() if row["status"] == "passed"} == {None}
    assert all(row["cause"] in ("agent", "user", "judge", "service", "tool") for row in rows.values() if row["status"] != "passed")


def test_the_cause_column_in_pandas(tables: dict[str, Table], tmp_path: Path) -> None:
    """The attempts not passed counted by cause in a notebook, from the CSV: the same counts as the
    records, and no cause on an attempt that passed."""
    table = tables["attempts"]
    (tmp_path / "attempts.csv").write_text(table.csv(), encoding="utf-8")
    frame = pandas.read_csv(tmp_path / "attempts.csv")
    counted = frame[frame["status"] != "passed"].groupby(["run", "cause"]).size().to_dict()
    expected: dict[tuple[str, str], int] = {}
    for record in table.records():
        if record["status"] != "passed":
            key = (record["run"], record["cause"])
            expected[key] = expected.get(key, 0) + 1
    assert counted == expected and sum(counted.values()) > 0
    assert frame[frame["status"] == "passed"]["cause"].isna().all()


def test_the_turns_claims_calls_and_requests(tables: dict[str, Table]) -> None:
    """A missing number is None: tokens nobody reported, a cost nobody priced, a grade that does not apply."""
    turns = [row for row in tables["turns"].records() if row["run"].endswith("aaaa") and row["scenario"] == "orders/refund" and row["attempt"] == 1]
    assert [(row["turn"], row["scripted"], row["thoughts"], row["tool_calls"]) for row in turns] == [(1, True, 1, 2), (2, False, 1, 2)]
    assert (turns[0]["user_tokens_in"], turns[0]["user_cost_usd"], turns[1]["user_tokens_in"], turns[1]["user_cost_usd"]) == (None, None, 20, 0.0003)
    assert (turns[0]["agent_tokens_cached"], turns[0]["agent_tokens_reasoning"], turns[0]["agent_text"]) == (4, 2, "Refunded, 10 €.\nAnything else?")
    hello = [row for row in tables["turns"].records() if row["run"].endswith("aaaa") and row["scenario"] == "greeting"][:2]
    assert [(row["agent_tokens_in"], row["agent_tokens_cached"], row["agent_cost_usd"]) for row in hello] == [(None, None, None), (7, None, None)]
    claims = [row for row in tables["claims"].records() if row["run"].endswith("aaaa") and row["scenario"] == "orders/refund" and row["attempt"] == 1]
    assert [(row["claim"], row["by"], row["grade"], row["confidence"]) for row in claims] == [
        (1, "judge", None, 0.9),
        (2, "judge", "warm", 0.8),
        (3, "code", None, None),
    ]
    assert all(row["trusted"] for row in claims)
    assert not any(row["trusted"] for row in tables["claims"].records() if row["run"].endswith("bbbb") and row["by"] == "judge")
    calls = [row for row in tables["tool_calls"].records() if row["run"].endswith("aaaa") and row["attempt"] == 1 and row["turn"] == 1 and row["scenario"] == "orders/refund"]
    assert [(row["call"], row["step"], row["name"], row["result_reported"], row["seconds"]) for row in calls] == [
        (1, 2, "lookup", True, 0.25),
        (2, 3, "refund", False, None),
    ]
    assert (json.loads(calls[0]["arguments"]), json.loads(calls[0]["result"]), calls[1]["result"]) == ({"order": "A1"}, {"status": "broken"}, None)
    requests = [row for row in tables["model_requests"].records() if row["run"].endswith("aaaa") and row["scenario"] == "orders/refund" and row["attempt"] == 1]
    assert [(row["participant"], row["request"], row["turn"], row["priced"], row["cost_source"]) for row in requests] == [
        ("agent", 1, 1, True, "provider"),
        ("agent", 2, 2, True, "provider"),
        ("user", 1, 2, True, "computed"),
        ("user", 2, None, False, None),
        ("judge", 1, None, False, None),
        ("judge", 2, None, True, "provider"),
    ]
    assert requests[4]["seconds"] is None and requests[0]["seconds"] is not None and requests[3]["seconds"] is not None
    assert requests[3]["tokens_cached"] is None and requests[3]["cost_usd"] is None


def test_csv_and_jsonl_hold_the_records(tables: dict[str, Table]) -> None:
    """CSV: a header, an empty field for None, true/false; JSON Lines: every key, null for None;
    both give back the records, value for value."""
    for table in tables.values():
        records = table.records()
        read = list(csv.reader(io.StringIO(table.csv())))
        assert tuple(read[0]) == table.columns
        assert len(read) == len(records) + 1
        lines = table.jsonl().splitlines()
        assert len(lines) == len(records)
        for record, fields, line in zip(records, read[1:], lines, strict=True):
            assert len(fields) == len(table.columns)
            decoded = json.loads(line)
            assert list(decoded) == list(table.columns)
            assert decoded == record
            for column, field in zip(table.columns, fields, strict=True):
                match record[column]:
                    case None:
                        assert field == ""
                    case bool(flag):
                        assert field == ("true" if flag else "false")
                    case int(number):
                        assert field == str(number)
                    case float(number):
                        assert float(field) == number
                    case str(text):
                        assert field == ("'" + text if text.startswith(FORMULA_STARTS) else text) and text != ""


def test_a_table_refuses_a_row_of_another_table(tables: dict[str, Table]) -> None:
    with pytest.raises(ValueError, match="columns"):
        Table("runs", tables["runs"].columns, tables["turns"].rows[:1])


def test_no_runs_give_empty_tables_with_their_headers() -> None:
    for table in Tables(()).every():
        assert table.records() == [] and table.jsonl() == ""
        assert table.csv() == ",".join(table.columns) + "\n"


def test_the_docs_describe_every_column_in_order(tables: dict[str, Table]) -> None:
    """docs/tables.md has a section per table listing its columns, in order, each with a type."""
    text = DOCS.read_text(encoding="utf-8")
    for name, table in tables.items():
        section = text.split(f"## `{name}`", 1)[1].split("\n## ", 1)[0]
        documented = re.findall(r"^\| `([a-z0-9_]+)` \| (int|float|bool|text|decimal)\?? \|", section, re.MULTILINE)
        assert tuple(column for column, _ in documented) == table.columns, name


# --- read as a notebook would ---------------------------------------------------------------------

Kind = Literal["int", "float", "bool", "text"]


def kinds(table: Table) -> dict[str, tuple[Kind, bool]]:
    """Each column's kind, and whether it may be missing, from docs/tables.md (the contract)."""
    section = DOCS.read_text(encoding="utf-8").split(f"## `{table.name}`", 1)[1].split("\n## ", 1)[0]
    found: dict[str, tuple[Kind, bool]] = {}
    for column, kind, missing in re.findall(r"^\| `([a-z0-9_]+)` \| (int|float|bool|text|decimal)(\??) \|", section, re.MULTILINE):
        found[column] = ("float" if kind == "decimal" else kind, missing == "?")  # type: ignore[assignment]
    return found


def frames(table: Table, folder: Path) -> dict[str, Any]:
    (folder / f"{table.name}.csv").write_text(table.csv(), encoding="utf-8")
    (folder / f"{table.name}.jsonl").write_text(table.jsonl(), encoding="utf-8")
    return {
        "pandas csv": pandas.read_csv(folder / f"{table.name}.csv"),
        "pandas jsonl": pandas.read_json(folder / f"{table.name}.jsonl", lines=True, dtype=False),
        "pandas jsonl inferred": pandas.read_json(folder / f"{table.name}.jsonl", lines=True),
        "polars csv": polars.read_csv(folder / f"{table.name}.csv"),
        "pandas records": pandas.DataFrame(table.records(), columns=list(table.columns)),
        "polars records": polars.DataFrame(table.records(), infer_schema_length=None),
        # polars.read_ndjson may give the columns of a wide table in another order: name them.
        "polars ndjson": polars.read_ndjson(folder / f"{table.name}.jsonl").select(table.columns),
    }


def pandas_kind(series: Any) -> Kind:
    api = pandas.api.types
    if api.is_bool_dtype(series.dtype):
        return "bool"
    if api.is_integer_dtype(series.dtype):
        return "int"
    if api.is_float_dtype(series.dtype):
        return "float"
    assert api.is_string_dtype(series.dtype) or series.dtype == object, series.dtype
    assert all(type(value) is str for value in series.dropna()), series.name
    return "text"


def polars_kind(series: Any) -> Kind:
    dtype = series.dtype
    if dtype == polars.Boolean:
        return "bool"
    if dtype == polars.Int64:
        return "int"
    if dtype == polars.Float64:
        return "float"
    assert dtype == polars.String, (series.name, dtype)
    return "text"


@pytest.mark.parametrize("name", NAMES)
def test_pandas_and_polars_read_every_column_as_its_type(name: str, tables: dict[str, Table], tmp_path: Path) -> None:
    """Ints as int64 (float64 in pandas when some are missing), floats and costs as float64, booleans
    as bool, text as text; a missing value is NaN/None/null — never the text "None" or ""."""
    table = tables[name]
    expected = kinds(table)
    records = table.records()
    python = {"int": int, "float": float, "bool": bool, "text": str}
    for record in records:
        for column, value in record.items():
            assert value is None or type(value) is python[expected[column][0]], f"{name}.{column}: {value!r}"
    for reader, frame in frames(table, tmp_path).items():
        assert tuple(frame.columns) == table.columns, reader
        assert len(frame) == len(records)
        for column in table.columns:
            kind, may_miss = expected[column]
            missing = [record[column] is None for record in records]
            assert any(missing) <= may_miss, f"{column} is missing though documented as always there"
            assert not all(missing), f"{name}.{column} has no value in the test runs: its type cannot be seen"
            if reader.startswith("pandas"):
                series = frame[column]
                seen = pandas_kind(series)
                wanted = "float" if kind == "int" and any(missing) else kind
                if reader == "pandas jsonl inferred" and wanted == "float" and all(
                    record[column] is None or float(record[column]).is_integer() for record in records
                ):
                    # read_json's own inference makes whole floats int64 (and float64 again with NaN)
                    wanted = "float" if any(missing) else "int"
                assert seen == wanted, f"{reader} {name}.{column}: {series.dtype}"
                assert list(series.isna()) == missing, f"{reader} {name}.{column}"
            else:
                series = frame.get_column(column)
                assert polars_kind(series) == kind, f"{reader} {name}.{column}: {series.dtype}"
                assert series.is_null().to_list() == missing, f"{reader} {name}.{column}"
            values = series.to_list()
            assert "None" not in values and "" not in values and "null" not in values


def test_a_whole_cost_keeps_a_decimal_point() -> None:
    """A whole amount is written 2.0, so no reader types the cost column as an integer."""
    whole = Usages((Usage(1, 1, cost=Cost(Decimal("2"), "provider")), Usage(1, 1, cost=Cost(Decimal("1E+1"), "computed")))).totals()
    assert (whole.cost(), whole.source(), whole.unpriced()) == (Decimal("12.0"), "mixed", 0)
    assert Usages((NoUsage(), Usage(3, 4))).totals().cost() is None
    assert Usages((NoUsage(), Usage(3, 4))).totals().unpriced() == 2


def test_totals_added_are_the_totals_of_the_requests_together() -> None:
    """A run's and a scenario's rows add each attempt's ``UsageTotals`` rather than hold every request:
    added, they are what the requests give together, counts not reported and prices included."""
    draw = random.Random(3)
    kinds = (
        lambda: NoUsage(),
        lambda: Usage(draw.randint(0, 9), draw.randint(0, 9)),
        lambda: Usage(draw.randint(0, 9), draw.randint(0, 9), cached=draw.randint(0, 3), cost=Cost(Decimal(draw.randint(1, 9)) / 100, "provider")),
        lambda: Usage(draw.randint(0, 9), 0, unreported=("output",), reasoning=draw.randint(0, 3), cost=Cost(Decimal("0.5"), "computed")),
    )
    for _ in range(200):
        parts = [tuple(draw.choice(kinds)() for _ in range(draw.randint(0, 4))) for _ in range(draw.randint(0, 4))]
        together = Usages(tuple(usage for part in parts for usage in part)).totals()
        assert sum((Usages(part).totals() for part in parts), UsageTotals()) == together

