"""An outside audit of ``convy rejudge`` and human labels: what someone who did not write them would
try. Hostile run folders (an origin leading out of ``results/``, a source that lost lines since
it finished), hostile labels files, a judge's server that limits its rate and echoes its key.

The real ``convy`` command throughout, on a project of fakes (``test_rejudge.Fakes``) or, for the
judge's server, the template project on the stand-in.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pytest
from support.litellmproxy import Proxy
from support.process import start_convy
from support.standin import Bucket, Drained, Echo, Limits, SlowBody, StandIn, Window
from support.waiting import wait_until
from test_canary import GATEWAY_KEY, JUDGED
from test_canary import Project as CanaryProject
from test_labels import Project
from test_proxy import usage_of
from test_rejudge import AGENT, DEADLINE, GREETS, LEAVES, MODELS, Asked, Fakes, judged_claims
from test_services_cli import KEY, Made, outcomes

from convy.attempt import Spent
from convy.judge import Verdict
from convy.labels import LabelsKept
from convy.outcome import Outcome
from convy.report import Summary


@pytest.fixture
def made(tmp_path: Path) -> Fakes:
    """test_rejudge's project of fakes: an echoing agent, a judge that holds every claim, a strict one."""
    for folder in ("agents", "scenarios"):
        (tmp_path / folder).mkdir()
    (tmp_path / "agents" / "bot.py").write_text(AGENT)
    (tmp_path / "models.py").write_text(MODELS)
    (tmp_path / "scenarios" / "greets.yaml").write_text(GREETS)
    (tmp_path / "scenarios" / "leaves.yaml").write_text(LEAVES)
    (tmp_path / "pyproject.toml").write_text("[tool.convy]\nattempts = 3\n")
    return Fakes(tmp_path)


@pytest.fixture
def made_proxy(tmp_path: Path) -> Iterator[Made]:
    """test_services_cli's project from ``convy init``, with no .env yet."""
    folder = tmp_path / "project"
    folder.mkdir()
    made = Made(folder)
    assert made.ran("init").returncode == 0
    yield made


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """test_labels' project: runs of one scenario played by convy's bench with its fakes."""
    return Project(tmp_path)


@pytest.fixture
def project_canary(tmp_path: Path) -> Iterator[tuple[CanaryProject, StandIn]]:
    """test_canary's project (its canary scenarios, its .env) on a gateway of its own."""
    with StandIn(api_key=GATEWAY_KEY) as gateway:
        folder = tmp_path / "project"
        folder.mkdir()
        made = CanaryProject(folder)
        assert made.ran("init").returncode == 0
        (folder / ".env").write_text(
            f"GATEWAY_URL={gateway.url}/v1\nGATEWAY_KEY={GATEWAY_KEY}\nUSER_MODEL=user-model\nJUDGE_MODEL=judge-model\n"
        )
        (folder / "scenarios" / "canary").mkdir()
        (folder / "scenarios" / "canary" / "judged.yaml").write_text(JUDGED)
        yield made, gateway


def run_json(made: Fakes, run: str) -> Path:
    return made.folder / "results" / "bot" / run / "run.json"


def rewritten(path: Path, change: dict[str, object], where: str = "spec") -> None:
    data = json.loads(path.read_text())
    data[where] |= change
    path.write_text(json.dumps(data))


def attempts(made: Fakes, run: str) -> Counter[tuple[str, int]]:
    return Counter((outcome.scenario, outcome.attempt) for outcome in made.outcomes(run))


# --- origins that lead out of results/ ---------------------------------------------------------


@pytest.mark.parametrize(
    ("origin", "field"),
    [
        ({"agent": "/ABSOLUTE", "run": "evil"}, "spec.origin.agent"),  # joined to results/, it replaces it
        ({"agent": "..", "run": ".."}, "spec.origin.agent"),
        ({"agent": "bot", "run": "../../outside/evil"}, "spec.origin.run"),
        ({"agent": "bot", "run": "\x1b]0;owned\x07run"}, "spec.origin.run"),
        ({"agent": "bot", "run": "r" * 201}, "spec.origin.run"),
    ],
)
def test_a_rejudged_run_whose_origin_leads_out_of_results_is_refused_naming_the_field(
    made: Fakes, tmp_path: Path, origin: dict[str, str], field: str
) -> None:
    """A re-judged run's run.json is edited so its origin names a folder outside results/ where a sound run
    lies (a copy of the source, its id matching): ``convy rejudge`` and ``convy resume`` of it read nothing
    there and exit 2 naming run.json and the field; ``convy labels show`` says run.json is damaged (its own
    labels still count). Before the fix the absolute path was followed (results/ / "/x" is "/x") and its
    attempts.jsonl read as the dialogues, and labels show said nothing."""
    source = made.played()
    again = made.rejudged(source)
    outside = tmp_path / "outside" / "evil"
    shutil.copytree(made.folder / "results" / "bot" / source, outside)
    rewritten(outside / "run.json", {"id": "evil"})
    origin = {name: value.replace("/ABSOLUTE", str(outside.parent)) for name, value in origin.items()}
    rewritten(run_json(made, again), {"origin": origin})

    shown = made.ran("labels", "show", again)
    assert shown.returncode == 0 and f"read results/bot/{again}: run.json is damaged" in shown.stderr
    for command in (("rejudge", again), ("resume", again)):
        ran = made.ran(*command)
        assert ran.returncode == 2, (command, ran.stdout, ran.stderr)
        assert f"{again}/run.json" in ran.stderr and field in ran.stderr, (command, ran.stderr)
        assert "\x1b" not in ran.stdout + ran.stderr
        assert str(outside) not in ran.stderr


# --- a source that changed after it finished ----------------------------------------------------


def test_a_source_that_lost_lines_stops_the_rejudge_naming_them_and_resume_finishes_once_restored(made: Fakes) -> None:
    """The source's attempts.jsonl loses its last two lines after the run finished (its run.json still says
    finished): ``convy rejudge`` re-judges what is there, then exits 2 naming the file and the dialogues
    missing, the new run marked interrupted, not finished. Before the fix it said finished, exit 0, with 4 of
    6 attempts and one scenario's pass rate over a single attempt. Once the lines are back, ``convy resume``
    re-judges just the two, each attempt kept once."""
    source = made.played()
    file = made.folder / "results" / "bot" / source / "attempts.jsonl"
    whole = file.read_bytes()
    lines = whole.splitlines(keepends=True)
    lost = [msgspec.json.decode(line, type=Outcome) for line in lines[-2:]]
    file.write_bytes(b"".join(lines[:-2]))

    ran = made.ran("rejudge", source)

    assert ran.returncode == 2, ran.stdout + ran.stderr
    again = made.newest()
    names = ", ".join(f"{one.scenario} #{one.attempt}" for one in sorted(lost, key=lambda one: (one.scenario, one.attempt)))
    assert f"{file}: 2 of the 6 recorded dialogues to re-judge are not there ({names})" in ran.stderr
    assert f"run {again} stopped and keeps 4 of 6 attempts" in ran.stderr
    assert json.loads(run_json(made, again).read_text())["status"]["type"] == "interrupted"

    resumed = made.ran("resume", again)
    assert resumed.returncode == 2 and "2 of the 2 recorded dialogues to re-judge are not there" in resumed.stderr

    file.write_bytes(whole + lines[0])  # restored, and one line doubled: its dialogue is re-judged once
    resumed = made.ran("resume", again)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert attempts(made, again) == Counter({key: 1 for key in attempts(made, source)}) and len(attempts(made, again)) == 6
    assert json.loads(run_json(made, again).read_text())["status"]["type"] == "finished"


def test_a_source_deleted_before_resume_is_named_as_the_source(made: Fakes) -> None:
    """A re-judge stopped half way (its source's lines lost), then its source deleted: ``convy resume`` exits 2
    saying the run decides the dialogues of that run, which cannot be read. Before, it said only that
    results/bot/<source> is not a run folder, a run the user never named."""
    source = made.played()
    file = made.folder / "results" / "bot" / source / "attempts.jsonl"
    file.write_bytes(b"".join(file.read_bytes().splitlines(keepends=True)[:-1]))
    assert made.ran("rejudge", source).returncode == 2
    again = made.newest()
    shutil.rmtree(made.folder / "results" / "bot" / source)

    resumed = made.ran("resume", again)

    assert resumed.returncode == 2
    assert resumed.stderr.startswith(f"convy: run {again} decides the recorded dialogues of run {source}, which cannot be read: ")
    assert "not a run folder" in resumed.stderr


# --- hostile labels files and labels.jsonl ------------------------------------------------------


@pytest.mark.parametrize(
    ("run", "said"),
    [
        ({"agent": "A" * 300_000, "id": "r1"}, "run.agent: longer than 200 characters"),
        ({"agent": "bot", "id": "../../elsewhere"}, "run.id: not a folder's name"),
        ({"agent": "\x1b[2J\u202ebot", "id": "r1"}, "run.agent: not a folder's name"),
    ],
)
def test_a_labels_file_naming_its_run_by_no_folders_name_is_refused(project: Project, run: dict[str, str], said: str) -> None:
    """A labels file whose ``run`` is no run's folder name — 300,000 characters, a path, escape sequences
    and a bidi override — is refused naming the file and the field, nothing kept, nothing of it echoed.
    Before the fix the 300,000-character name was accepted, written on each label's line (longer than
    labels.jsonl's longest line, so every label added was unreadable: "0 labels known, 1 line could not
    be read") and echoed whole on stderr."""
    read = project.played("r1", [True])
    data = json.loads(msgspec.json.encode(project.labels(read, {1: False})))
    data["run"] = run
    project.file("labels.json", json.dumps(data).encode())

    code, out, err = project.convy("labels", "add", "r1", "labels.json")

    assert code == 2, out + err
    assert "labels.json" in err and said in err and "Traceback" not in err
    assert len(err) < 1000 and "\x1b" not in err + out and "\u202e" not in err + out
    assert not (read.folder / "labels.jsonl").exists()


def test_garbage_torn_and_oversize_lines_of_labels_jsonl_are_counted_and_the_rest_read(project: Project) -> None:
    """labels.jsonl with, among two good lines: a line of binary garbage, invalid UTF-8 inside a string, a
    line of 300 KB (over the longest), JSON nested 100,000 deep, a label with a wrong type, with NaN, and a
    torn last line: the two labels count, the seven others are said as unreadable lines (by the command and
    the report's numbers), and adding more ends the torn line first. Memory stays bounded (the long line is
    read past, not kept)."""
    run = project.played("r1", [True, False])
    LabelsKept(run.folder).added(project.labels(run, {1: True, 2: True}))
    kept = run.folder / "labels.jsonl"
    good = kept.read_bytes()
    one = json.loads(good.splitlines()[0])
    wrong = json.dumps(one | {"attempt": "1"}).encode()
    nan = json.dumps(one).replace('"attempt": 1', '"attempt": NaN').encode()
    kept.write_bytes(
        good
        + b"\x00\xff\xfe garbage\n"
        + json.dumps(one).replace('"hello"', '"hel\\udc80"').encode().replace(b"\\udc80", b"\xed\xb2\x80") + b"\n"
        + b'{"claim": "' + b"x" * 300_000 + b'"}\n'
        + b"[" * 100_000 + b"\n"
        + wrong + b"\n"
        + nan + b"\n"
        + good[: len(good) // 3]
    )
    book = LabelsKept(run.folder).read()
    assert (len(book.labels), book.broken) == (2, 7)
    code, out, err = project.convy("labels", "show", "r1")
    assert code == 0, err
    assert "labels of 2 claims in distinct dialogues known" in out and "7 lines of labels.jsonl could not be read and are left out" in out
    assert "decisions against people: 2/2 agree" in out
    project.file("later.json", project.labels(run, {2: False}, at="2026-12-02T15:00:00Z"))
    code, out, _ = project.convy("labels", "add", "r1", "later.json")
    assert code == 0 and "labels: 1 added" in out and "1/2 agree" in out
    assert (len(LabelsKept(run.folder).read().labels), LabelsKept(run.folder).read().broken) == (2, 7)


# --- the judge's server: a strict rate limit ----------------------------------------------------


class Counted(Asked):
    """``Asked``, with each answer of other-judge reporting tokens of its own (1000 + n in, n out), and
    the usages it gave kept."""

    def __init__(self) -> None:
        super().__init__()
        self.given: list[tuple[int, int]] = []

    async def __call__(self, request: dict[str, Any]) -> str | dict[str, Any]:
        answer = await super().__call__(request)
        if request["model"] != "other-judge":
            return answer
        n = len(self.given) + 1  # the stand-in answers on one event loop: no two at once
        self.given.append((1000 + n, n))
        return {"content": answer, "usage": {"prompt_tokens": 1000 + n, "completion_tokens": n}}


@pytest.mark.parametrize(
    "limit",
    [
        pytest.param(lambda: Drained(Bucket(rate=3.0, burst=1.0), units=2.0), id="requests"),
        pytest.param(
            lambda: Limits((Drained(Bucket(rate=3.0, burst=1.0), units=2.0), Bucket(rate=1500.0, burst=1500.0, unit="tokens"))),
            id="requests-and-tokens",
        ),
        pytest.param(lambda: Window(count=4, seconds=1.0, headers=False), id="window-no-headers"),
    ],
)
def test_rejudge_under_a_strict_rate_limit_keeps_every_attempt_resends_no_answered_claim_and_counts_tokens_exactly(
    tmp_path: Path, limit: Any
) -> None:
    """The stand-in as the judge's server limits requests to a bucket of 3 a second (burst 1) with Retry-After
    and x-ratelimit headers, which a neighbour on the key has just spent (convy paces a bucket that
    tells what is left without a refusal: the neighbour makes sure some are refused), or to a window
    that says nothing: ``convy rejudge --judge other-judge`` keeps every attempt judged, each claim's
    request answered exactly once (no answered claim sent again), every refused one sent again until answered,
    and the tokens kept are exactly those the server reported."""
    asked = Counted()
    folder = tmp_path / "project"
    folder.mkdir()
    made = Made(folder)
    assert made.ran("init").returncode == 0
    with StandIn(reply=asked, api_key=KEY) as server:
        made.gateway(server.url + "/v1")
        ran = made.ran("run", "assistant", "-k", "1")
        assert ran.returncode == 0, ran.stdout + ran.stderr
        (source,) = (path.parent for path in (folder / "results").glob("*/*/run.json"))
        before = len(server.received)
        server.limit = limit()

        # other-judge fails claims: --fail-under 0 accepts any pass rate, as this test is of what is sent and kept.
        rejudged = made.ran("rejudge", source.name, "--judge", "other-judge", "--fail-under", "0")

        assert rejudged.returncode == 0, rejudged.stdout + rejudged.stderr
        new = server.received[before:]
    (again,) = (path.parent for path in (folder / "results").glob("*/*/run.json") if path.parent != source)
    kept = outcomes(again)
    def results(outcomes: list[Outcome]) -> list[tuple[str, int, str]]:
        return sorted((outcome.scenario, outcome.attempt, type(outcome.result).__name__) for outcome in outcomes)

    assert results(kept) == results(outcomes(source))  # every verdict a verdict again: none left not judged
    answered = [request for request in new if request.status == 200]
    refused = [request for request in new if request.status == 429]
    assert {request.status for request in new} <= {200, 429}
    assert refused, "the limit was never reached: the test tests nothing"
    print(f"rate limit: {len(answered)} answered, {len(refused)} refused")
    bodies = Counter(json.dumps(request.json["messages"], sort_keys=True) for request in answered)
    assert set(bodies.values()) == {1}, "an answered claim was sent again"
    assert len(answered) == sum(judged_claims(outcome) for outcome in kept) == len(asked.given)
    spent = [usage for outcome in kept for usage in outcome.judge_requests]
    assert sorted((usage.input, usage.output) for usage in spent) == sorted(asked.given)  # type: ignore[union-attr]


# --- a judge's key echoed by its server while re-judging ----------------------------------------

JUDGE_KEY = "sk-canary-" + secrets.token_hex(16)
JUDGES = """
from convy import ChatJudge, OpenAiModel

judges = {{"canary": ChatJudge(OpenAiModel("canary-judge", "{url}/v1", key="{key}"))}}
"""


def test_a_judge_key_echoed_while_rejudging_reaches_no_output_file_page_or_labels(project_canary: CanaryProject) -> None:
    """A judge named in models.py's ``judges`` with a key of its own (a literal, in no .env) on a server whose
    errors echo the request — its Authorization header at every offset around the cut, as text and as JSON,
    cut short by the server — re-judges a run: the key, or any eight characters of it, is on no stdout or
    stderr of rejudge, labels add/show, report, compare or export, nor in any file under results/ (attempts,
    run.json, labels.jsonl, the pages' packed chunks)."""
    made, gateway = project_canary
    gateway.reply = lambda request: json.dumps({"reason": "fine", "pass": True, "confidence": 0.9})
    # The judge answers once first: one refused from its first request on, with a 401 among the refusals, is dead
    # and stops the re-judging (test_dead_services); here it is alive, and each echo is an attempt not judged.
    faults = (
        [SlowBody(0, pieces=1, path="/v1/chat/completions")]
        + [Echo(400, pad, path="/v1/chat/completions") for pad in range(0, 300, 23)]
        + [Echo(401, pad, as_json=True, path="/v1/chat/completions") for pad in range(150, 300, 29)]
        + [Echo(502, pad, cut=200, path="/v1/chat/completions") for pad in range(0, 60, 20)]
    )
    with StandIn(api_key=JUDGE_KEY, reply=gateway.reply) as judging:
        (made.folder / "models.py").write_text(
            (made.folder / "models.py").read_text() + JUDGES.format(url=judging.url, key=JUDGE_KEY)
        )
        ran = made.ran("run", "shop", "--scenarios", "canary/judged", "-k", str(len(faults) + 3))
        assert ran.returncode == 0, ran.stdout + ran.stderr
        (source,) = (path.name for path in (made.folder / "results" / "shop").iterdir())
        judging.faults(*faults)
        rejudged = made.ran("rejudge", source, "--judge", "canary")
        assert judging.pending == [] and len(judging.received) >= len(faults) + 3
        assert all(request.refused is None for request in judging.received), "the key reached the judge"
    assert rejudged.returncode in (0, 5), rejudged.stdout + rejudged.stderr  # some attempts not judged
    again = next(path for path in (made.folder / "results" / "shop").iterdir() if path.name != source)
    kept = outcomes(again)
    labels = [
        {"fingerprint": outcome.transcript.fingerprint(), "scenario": outcome.scenario, "attempt": outcome.attempt,
         "claim": claim.claim, "held": claim.held, "right": outcome.attempt % 2 == 0, "at": "2026-12-02T14:30:00Z"}
        for outcome in kept if isinstance(outcome.result, Verdict) for claim in outcome.result.claims
    ]
    assert labels, "no attempt was judged: the labels path is not tested"
    (made.folder / "labels.json").write_text(json.dumps({"version": 1, "run": {"agent": "shop", "id": again.name}, "labels": labels}))
    assert made.ran("labels", "add", again.name, "labels.json").returncode == 0
    assert made.ran("labels", "show", again.name).returncode == 0
    assert made.ran("report").returncode == 0
    assert made.ran("compare", source, again.name).returncode == 0
    assert made.ran("export", "--format", "jsonl").returncode == 0
    texts = made.kept()
    assert any(name.endswith("labels.jsonl") for name in texts) and any(" chunk " in name for name in texts)
    assert "<hidden>" in "".join(texts.values()), "no echo was kept: the sweep tested nothing"
    pieces = {JUDGE_KEY[start : start + 8] for start in range(len(JUDGE_KEY) - 7)}
    for name, text in {"the commands' output": "\n".join(made.said), **texts}.items():
        found = sorted(piece for piece in pieces if piece in text)
        assert not found, f"{name} shows {found[:3]}"


# --- LiteLLM's proxy as the judge's server ------------------------------------------------------


@pytest.mark.timeout(300)
def test_rejudge_on_litellms_proxy_counts_exactly_what_the_proxy_sent(
    made_proxy: Made, proxy: Proxy  # proxy: conftest's, from litellmproxy
) -> None:
    """A run of the template's assistant on LiteLLM's proxy, then ``convy rejudge`` of it on the same proxy:
    the judge's tokens and cost kept are exactly those of the replies the proxy wrote down for judge-model
    since the re-judge began (and no request to the agent's or user's model)."""
    made = made_proxy
    made.gateway(proxy.url + "/v1")
    ran = made.ran("run", "assistant", "-k", "1", CONVY_MAX_TURNS="2")
    assert ran.returncode in (0, 5), ran.stdout + ran.stderr
    (source,) = made.runs().values()
    before = {group: len(proxy.sent(group)) for group in ("user-model", "judge-model", "agent-model")}

    rejudged = made.ran("rejudge", source.name)

    assert rejudged.returncode in (0, 5), rejudged.stdout + rejudged.stderr
    again = next(path.parent for path in (made.folder / "results").glob("*/*/run.json") if path.parent != source)
    kept = outcomes(again)
    assert len(kept) == len(outcomes(source))
    usages = [usage for outcome in kept for usage in outcome.judge_requests]
    assert usages, "no judge request: nothing was compared"
    sent = proxy.awaited("judge-model", before["judge-model"] + len(usages))[before["judge-model"]:]
    assert proxy.sent("judge-model")[before["judge-model"]:] == sent, "the proxy sent more judge replies than were kept"
    ours, theirs = Spent(tuple(usages)).tokens(), Spent(tuple(usage_of(one) for one in sent)).tokens()
    assert (ours.requests, ours.input, ours.output) == (theirs.requests, theirs.input, theirs.output)
    assert Decimal(Spent(tuple(usages)).cost().amount or "0") == Decimal(Spent(tuple(usage_of(one) for one in sent)).cost().amount or "0")
    assert {group: len(proxy.sent(group)) for group in ("user-model", "agent-model")} == {
        group: before[group] for group in ("user-model", "agent-model")
    }


# --- killed ------------------------------------------------------------------------------------

HELD_JUDGE = """
import asyncio
from pathlib import Path

from convy.fakes import FakeJudge
from convy.judge import Models


class Held(FakeJudge):
    async def ruling(self, claims, transcript):
        if self.rulings >= {after}:  # held until the test lets it go
            while not Path({go!r}).exists():
                await asyncio.sleep(0.01)
        return await super().ruling(claims, transcript)


models = Models(judge=Held(name="held-judge"))
"""


@pytest.mark.parametrize("after", [0, 3], ids=["before-any-attempt", "three-attempts-in"])
def test_a_rejudge_killed_at_any_point_is_finished_by_resume_each_attempt_once(made: Fakes, after: int) -> None:
    """``convy rejudge`` SIGKILLed while its judge is held — before it decided anything, and once three of six
    attempts are kept — then ``convy resume`` of the new run: finished, each of the source's attempts kept once."""
    source = made.played()
    go = made.folder / "go"
    (made.folder / "models.py").write_text(HELD_JUDGE.format(after=after, go=str(go)))
    process = start_convy(made.folder, "rejudge", source, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:

        def under_way() -> str | None:
            runs = [path.parent for path in (made.folder / "results" / "bot").glob("*/run.json") if path.parent.name != source]
            if runs and json.loads((runs[0] / "run.json").read_text() or "{}").get("status", {}).get("type") == "running":
                lines = runs[0] / "attempts.jsonl"
                if (lines.read_bytes().count(b"\n") if lines.exists() else 0) >= after:
                    return runs[0].name
            return None

        again = wait_until(under_way, f"the re-judge to keep {after} attempts", timeout=DEADLINE, process=process)
        assert again is not None, "the re-judge never got under way"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=DEADLINE)
    assert len(made.outcomes(again) if (made.folder / "results" / "bot" / again / "attempts.jsonl").exists() else []) == after
    go.touch()

    resumed = made.ran("resume", again)

    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert attempts(made, again) == Counter({key: 1 for key in attempts(made, source)})
    assert json.loads(run_json(made, again).read_text())["status"]["type"] == "finished"


# --- the numbers --------------------------------------------------------------------------------


def test_agreement_on_a_case_worked_by_hand_with_changed_minds_ties_and_labels_of_claims_gone(project: Project) -> None:
    """The judge decided GREETS held, held, failed, held (attempts 1-4, each its own dialogue) and BRIEF held
    everywhere. People: attempt 1 right; attempt 2 right at 14:30 then wrong at 15:00 (the later wins, whatever
    the order the files were added in); attempt 3 wrong; attempt 4 right then wrong at the same moment (the one
    kept last wins); BRIEF of attempt 1 wrong; and two labels of nothing in the run (a claim since removed, a
    dialogue of another run). Pairs (decided, truth): GREETS (T,T) (T,F) (F,T) (T,F), BRIEF (T,F): 1 of 5 agree.
    κ: p_o = 1/5; decided held 4/5, truth held 2/5: p_e = 4/5·2/5 + 1/5·3/5 = 11/25; κ = (5/25 − 11/25)/(14/25) = −3/7."""
    from statsmodels.stats.proportion import proportion_confint

    from convy.labels import Label, LabelledRun, LabelsFile

    run = project.played("r1", [True, True, False, True])
    outcomes = {outcome.attempt: outcome for outcome in run.outcomes}

    def label(attempt: int, right: bool, at: str, claim: str = "The agent greets the user.", held: bool | None = None) -> Label:
        outcome = outcomes[attempt]
        shown = next(one.held for one in outcome.result.claims if one.claim == claim) if held is None else held  # type: ignore[union-attr]
        return Label(outcome.transcript.fingerprint(), "hello", attempt, claim, shown, right, at)

    def added(*labels: Label) -> None:
        LabelsKept(run.folder).added(LabelsFile(1, LabelledRun("bot", "r1"), labels))

    added(label(2, False, "2026-12-02T15:00:00Z"))  # the later label added first
    added(
        label(1, True, "2026-12-02T14:30:00Z"),
        label(2, True, "2026-12-02T14:30:00Z"),
        label(3, False, "2026-12-02T14:30:00Z"),
        label(4, True, "2026-12-02T14:40:00Z"),
        label(4, False, "2026-12-02T15:40:00+01:00"),  # the same moment, written another way, kept last
        label(1, False, "2026-12-02T14:30:00Z", claim="The agent is brief."),
        label(1, True, "2026-12-02T14:30:00Z", claim="A claim since removed", held=True),
        Label("0123456789abcdef" * 2, "hello", 1, "The agent greets the user.", True, True, "2026-12-02T14:30:00Z"),
    )
    view = Summary(project.read("r1")).view().agreement
    assert view is not None
    assert (view.labels, view.unmatched, view.broken) == (7, 2, 0)
    score = view.overall.score
    assert (score.labelled, score.agree) == (5, 1)
    low, high = proportion_confint(1, 5, method="wilson")
    assert score.accuracy is not None and (score.accuracy.low, score.accuracy.high) == (pytest.approx(low), pytest.approx(high))
    from convy.kappa import CohenKappa

    pairs = [(True, True), (True, False), (False, True), (True, False), (True, False)]
    assert CohenKappa.of(pairs).kappa() == pytest.approx(-3 / 7)
    # at 5 labels κ says nothing (issue 26): not given, and said so
    assert score.kappa is None and score.reading == "κ says nothing at 5 labels (fewer than 10): read the accuracy"
    assert sorted((one.attempt, one.claim[:9], one.decided, one.truth) for one in view.disagreements) == [
        (1, "The agent", True, False), (2, "The agent", True, False), (3, "The agent", False, True), (4, "The agent", True, False)
    ]


@pytest.mark.skipif(not os.environ.get("CONVY_AUDIT_SLOW"), reason="slow (15-50 s): set CONVY_AUDIT_SLOW=1")
@pytest.mark.timeout(300)
def test_a_judge_litellm_always_refuses_leaves_the_attempt_not_judged(made_proxy: Made, proxy: Proxy) -> None:
    """Re-judged with ``--judge mock-busy``, a model the proxy always refuses with 429, within a judge patience
    of 1 s: the command ends, the attempt kept, not judged, exit 5. Behind a flag, as it is slow: the attempt's
    four claims took 16 s in all (50 s for all eight scenarios). The waits it notes, printed, say why: the
    first claim gave up after 1 s, and the other three waited for the pace 2.5, 7 and 12 s (not counted
    against the patience), then 2 to 3 s each for the busy service (over the patience of 1 s), though the
    attempt could no longer be judged once one claim had failed."""
    made = made_proxy
    made.gateway(proxy.url + "/v1")
    ran = made.ran("run", "assistant", "-k", "1", "--scenarios", "orders/impatient", CONVY_MAX_TURNS="2")
    assert ran.returncode in (0, 5), ran.stdout + ran.stderr
    (source,) = made.runs().values()

    busy = made.ran("rejudge", source.name, "--judge", "mock-busy", CONVY_JUDGE_PATIENCE="1")

    assert busy.returncode == 5, busy.stdout + busy.stderr
    newest = max((path.parent for path in (made.folder / "results").glob("*/*/run.json")), key=lambda path: path.name)
    assert json.loads((newest / "run.json").read_text())["status"]["type"] == "finished"
    (outcome,) = outcomes(newest)
    assert not judged_claims(outcome)
    print(msgspec.json.encode(outcome.waits).decode())
