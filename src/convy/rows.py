"""The tables' rows and the ``Table`` that writes them: records, CSV and JSON Lines.

Each table has one row type, whose fields in order are its columns (documented in
docs/tables.md: a column may be added, never renamed or removed). A value nobody gave, or one that
does not apply to the row, is ``None``: an empty field in CSV, ``null`` in JSON Lines, a missing
value in pandas and polars. A cost stays an exact ``Decimal`` in the row and is written with its
exact digits, as a number in both files.

Text in CSV is defused for spreadsheets: a cell that begins with a character a spreadsheet takes
for the start of a formula gets a leading ``'`` (see ``FORMULA_STARTS``); JSON Lines keep it exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import Any, Literal

import msgspec

TableName = Literal[
    "runs", "scenarios", "attempts", "turns", "claims", "votes", "tool_calls", "pauses", "model_requests"
]

# Costs become JSON numbers with their exact digits; records() reads them back as floats.
EXACT_JSON = msgspec.json.Encoder(decimal_format="number")

# A text cell beginning with one of these gets a leading ' in CSV. The first six are OWASP's "CSV
# Injection" list: Excel, LibreOffice and Google Sheets run such a cell as a formula when the file is
# opened. NUL is in OWASP ASVS 1.2.10's list. The quote itself is there so the escape can be undone:
# every text cell of the CSV that begins with ' has exactly one ' more than the text.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\0", "'")


# Each subclass says frozen=True again: msgspec inherits it, but a type checker reads the class
# through dataclass_transform, which does not (msgspec issue 657).
class Row(msgspec.Struct, frozen=True, kw_only=True):
    """Base of the tables' rows: flat records of text, numbers, booleans and ``None``; the
    fields, in order, are the table's columns."""


class RunsRow(Row, frozen=True):
    agent: str
    run: str
    name: str | None  # what a person called the run (``convy run --name``); None for none
    started: str
    ended: str | None
    seconds: float | None
    status: Literal["finished", "interrupted", "running", "stopped"]
    convy_version: str | None
    user_model: str
    judge_model: str
    scenarios_fingerprint: str | None
    trust: float
    attempts_per_scenario: int
    scenarios: int
    skipped: int
    planned: int
    attempts: int
    broken: int
    passed: int
    failed: int
    not_judged: int
    pass_rate: float | None
    pass_rate_low: float | None
    pass_rate_high: float | None
    pass_rate_method: Literal["t", "bootstrap", "exact"] | None
    scenarios_always: int
    scenarios_flaky: int
    scenarios_never: int
    scenarios_not_judged: int
    turns: int
    requests: int
    tokens_in: int | None
    tokens_out: int | None
    tokens_cached: int | None
    tokens_reasoning: int | None
    cost_usd: Decimal | None
    cost_source: Literal["provider", "computed", "mixed"] | None
    priced_requests: int
    unpriced_requests: int
    attempt_seconds: float
    agent_seconds: float
    user_seconds: float
    judge_seconds: float
    waiting_seconds: float


class ScenariosRow(Row, frozen=True):
    agent: str
    run: str
    scenario: str
    group: str | None
    tags: str | None
    claims: int | None
    attempts: int
    passed: int
    failed: int
    not_judged: int
    judged: int
    pass_rate: float | None
    pass_rate_low: float | None
    pass_rate_high: float | None
    status: Literal["always", "flaky", "never", "not_judged"]
    turns: int
    seconds: float
    tokens_in: int | None
    tokens_out: int | None
    cost_usd: Decimal | None
    unpriced_requests: int
    variant_of: str | None  # the scenario a matrix variant was made from; None for a scenario without a matrix
    variant: str | None  # its values, a JSON object in the matrix's order: {"mood":"angry","language":"German"}


class AttemptsRow(Row, frozen=True):
    agent: str
    run: str
    scenario: str
    attempt: int
    started: str
    seconds: float
    status: Literal["passed", "failed", "not_judged"]
    why: Literal["claim", "agent", "user", "judge", "busy", "not_trusted", "split", "unquoted", "unseen"] | None
    cause: Literal["agent", "user", "judge", "service", "tool"] | None
    stop: str
    turns: int
    claims: int | None
    claims_held: int | None
    failure: str | None
    failed_on: str | None
    agent_seconds: float
    user_seconds: float
    judge_seconds: float
    waiting_seconds: float
    agent_tokens_in: int | None
    agent_tokens_out: int | None
    agent_cost_usd: Decimal | None
    user_tokens_in: int | None
    user_tokens_out: int | None
    user_cost_usd: Decimal | None
    judge_tokens_in: int | None
    judge_tokens_out: int | None
    judge_cost_usd: Decimal | None
    requests: int
    tokens_in: int | None
    tokens_out: int | None
    cost_usd: Decimal | None
    unpriced_requests: int
    tool_calls: int
    variant_of: str | None
    variant: str | None


class TurnsRow(Row, frozen=True):
    agent: str
    run: str
    scenario: str
    attempt: int
    turn: int
    user_text: str
    scripted: bool
    agent_text: str
    user_start: float
    user_seconds: float
    agent_start: float
    agent_seconds: float
    agent_tokens_in: int | None
    agent_tokens_out: int | None
    agent_tokens_cached: int | None
    agent_tokens_reasoning: int | None
    agent_cost_usd: Decimal | None
    user_tokens_in: int | None
    user_tokens_out: int | None
    user_cost_usd: Decimal | None
    thoughts: int
    tool_calls: int


class ClaimsRow(Row, frozen=True):
    agent: str
    run: str
    scenario: str
    attempt: int
    claim: int
    text: str
    by: Literal["judge", "code"]
    held: bool
    trusted: bool
    reason: str
    confidence: float | None
    grade: str | None
    evidence: str | None
    evidence_found: bool
    votes: int
    votes_held: int
    doubt: str | None


class VotesRow(Row, frozen=True):
    agent: str
    run: str
    scenario: str
    attempt: int
    claim: int
    vote: int
    judge: str
    held: bool
    reason: str
    confidence: float | None
    grade: str | None
    evidence: str | None
    evidence_found: bool


class ToolCallsRow(Row, frozen=True):
    agent: str
    run: str
    scenario: str
    attempt: int
    turn: int
    call: int
    step: int
    name: str
    arguments: str
    result_reported: bool
    result: str | None
    seconds: float | None
    error: str | None = None
    source: str | None = None
    approval: str | None = None


class PausesRow(Row, frozen=True):
    """A pause the agent made to ask a person (``agent.Asked``), and the answer it went on with."""

    agent: str
    run: str
    scenario: str
    attempt: int
    turn: int
    pause: int
    step: int
    question: str
    options: str | None  # the options it offered, as a JSON list; None where it offered none
    tool: str | None  # the tool it asked to run, for an approval
    arguments: str | None
    answer: str | None  # None where nobody answered a question
    by: Literal["scenario", "user", "nobody"]
    start: float
    seconds: float
    tokens_in: int | None  # the simulated user's request, where its model answered
    tokens_out: int | None


class ModelRequestsRow(Row, frozen=True):
    agent: str
    run: str
    scenario: str
    attempt: int
    participant: Literal["agent", "user", "judge"]
    request: int
    turn: int | None
    seconds: float | None
    reported: bool
    tokens_in: int | None
    tokens_out: int | None
    tokens_cached: int | None
    tokens_reasoning: int | None
    cost_usd: Decimal | None
    cost_source: Literal["provider", "computed"] | None
    priced: bool


class Table(msgspec.Struct, frozen=True):
    """One table: its name, its columns in order, and its rows, each with every column."""

    name: TableName
    columns: tuple[str, ...]
    rows: tuple[Row, ...]

    def __post_init__(self) -> None:
        for row in self.rows:
            if row.__struct_fields__ != self.columns:
                raise ValueError(f"a row of {type(row).__name__} does not have the columns of the table {self.name}")

    def records(self) -> list[dict[str, Any]]:
        """The rows as dicts of plain values, as the JSON Lines hold them: a cost is a float here."""
        return msgspec.json.decode(EXACT_JSON.encode(self.rows))

    def jsonl(self) -> str:
        """One JSON object per row and line, every column in every object, ``null`` for a missing
        value, a cost as a JSON number with its exact digits."""
        return "".join(Lines(self.name, self.columns).jsonl(self.rows))

    def csv(self) -> str:
        """A header row, then one line per row: a text always in double quotes, so a reader that
        honours quotes takes a reply of ``nan``, ``NA`` or ``""`` as that text (polars does;
        pandas only with ``keep_default_na=False, na_values=[""]``, see docs/tables.md); an empty,
        unquoted field for a missing value; ``true`` and ``false`` for booleans; a cost with its
        exact digits, never in exponent notation. A text that begins with one of ``FORMULA_STARTS``
        gets a ``'`` in front, so a spreadsheet shows it as text rather than running it as a
        formula; every text column is treated alike, ids and names included."""
        return "".join(Lines(self.name, self.columns).csv(self.rows))


class Lines(msgspec.Struct, frozen=True):
    """A table's file line by line, as its rows come (``Table.csv`` and ``Table.jsonl`` joined
    are these lines of all its rows): ``convy export`` writes each row as it is made, holding
    none, so a run of any size is exported in the same memory."""

    name: TableName
    columns: tuple[str, ...]

    def jsonl(self, rows: Iterable[Row]) -> Iterator[str]:
        for row in rows:
            self._checked(row)
            yield EXACT_JSON.encode(row).decode() + "\n"

    def csv(self, rows: Iterable[Row]) -> Iterator[str]:
        """The header, then a line per row (``Table.csv`` says how each field is written)."""
        yield ",".join(self.columns) + "\n"
        for row in rows:
            self._checked(row)
            yield ",".join(self._field(value) for value in msgspec.structs.astuple(row)) + "\n"

    def _checked(self, row: Row) -> None:
        """A row of another table is a mistake in convy, said before anything of it is written."""
        if row.__struct_fields__ != self.columns:
            raise ValueError(f"a row of {type(row).__name__} does not have the columns of the table {self.name}")

    def _field(self, value: Any) -> str:
        match value:
            case None:
                return ""
            case str(text):
                shown = "'" + text if text.startswith(FORMULA_STARTS) else text
                return '"' + shown.replace('"', '""') + '"'
            case bool(flag):
                return "true" if flag else "false"
            case Decimal() as amount:
                return format(amount, "f")
            case float() as number:
                return EXACT_JSON.encode(number).decode()
            case _:
                return str(value)
