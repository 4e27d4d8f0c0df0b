"""``convy rejudge``: a recorded run's dialogues decided again, with no request to the agent or the user.

The real ``convy`` command throughout. Over HTTP, the template project plays on the stand-in as its
gateway (the agent's model, the simulated user's and the judge's, told apart by each request), and
a re-judge is held to what the stand-in received: only the judge named, one request per claim of
each dialogue that reached the judge. A re-judge killed mid-way is finished by ``convy resume``,
which asks the judge only. The rest uses a project of fakes: bad input, a changed check, compare.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from support.process import run_convy
from support.standin import StandIn
from support.waiting import wait_until
from test_services_cli import KEY, Made, Roles, accepted, outcomes, spec

from convy.judge import NoVerdict, Verdict
from convy.outcome import Outcome

DEADLINE = 300.0  # a hang guard, not a measure of speed


class Asked(Roles):
    """The stand-in's three roles, as ``Roles`` answers them, with each request's role and model
    counted; the judge ``other-judge`` fails every claim, and while ``held`` is set it waits once
    it has been asked ``hold_after`` times."""

    def __init__(self) -> None:
        super().__init__()
        self.models: Counter[tuple[str, str]] = Counter()
        self.hold_after: int | None = None
        self.other = 0

    async def __call__(self, request: dict[str, Any]) -> str | dict[str, Any]:
        messages = request["messages"]
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        role = "agent" if "tools" in request else "user" if "You are playing a person" in system else "judge"
        self.models[(role, request["model"])] += 1
        if request["model"] != "other-judge":
            return await super().__call__(request)
        assert role == "judge", f"the {role} asked other-judge"
        self.other += 1
        while self.hold_after is not None and self.other > self.hold_after and self.held.is_set():
            await asyncio.sleep(0.01)
        graded = re.search(r"^The grades, worst first: (.+)$", messages[-1]["content"], re.MULTILINE)
        if graded:
            worst = graded.group(1).split(", ")[0]
            return json.dumps({"reason": "the other judge disagrees", "grade": worst, "confidence": 0.8})
        return json.dumps({"reason": "the other judge disagrees", "pass": False, "confidence": 0.8})


@pytest.fixture
def asked() -> Asked:
    return Asked()


@pytest.fixture
def gateway(tmp_path: Path, asked: Asked) -> Iterator[tuple[Made, StandIn]]:
    """A project from ``convy init`` whose gateway is the stand-in, and the stand-in."""
    folder = tmp_path / "project"
    folder.mkdir()
    made = Made(folder)
    assert made.ran("init").returncode == 0
    with StandIn(reply=asked, api_key=KEY) as server:
        made.gateway(server.url + "/v1")
        yield made, server
        assert server.errors == []
    for process in made.processes:
        if process.poll() is None:
            process.kill()
            process.wait()


def folders(made: Made) -> dict[str, Path]:
    """Every run folder of the project, by its id."""
    return {path.parent.name: path.parent for path in (made.folder / "results").glob("*/*/run.json")}


def judged_claims(outcome: Outcome) -> int:
    """The claims of an attempt a judge decided (none when its dialogue never reached the judge)."""
    match outcome.result:
        case Verdict(claims=claims):
            return sum(1 for claim in claims if claim.by == "judge")
        case _:
            return 0


def test_rejudge_asks_only_the_judge_named_once_per_claim_and_keeps_the_dialogues(
    gateway: tuple[Made, StandIn], asked: Asked
) -> None:
    """After a run of the assistant on the gateway, ``convy rejudge RUN --judge other-judge`` sends the stand-in
    only requests for other-judge, exactly one per claim the judge decides in each attempt, none to the agent's
    or the user's model; the new run keeps each dialogue as it was (same fingerprint), names its origin, its
    models and fingerprints, counts only the judge's tokens as spent, and ``convy report`` reads it."""
    made, server = gateway
    ran = made.ran("run", "assistant", "-k", "2")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (source,) = folders(made).values()
    before = len(server.received)
    agent_and_user = {key: count for key, count in asked.models.items() if key[0] != "judge"}

    # other-judge fails claims: --fail-under 0 accepts any pass rate, as this test is of what is sent and kept.
    rejudged = made.ran("rejudge", source.name, "--judge", "other-judge", "--fail-under", "0")

    assert rejudged.returncode == 0, rejudged.stdout + rejudged.stderr
    assert f"re-judging the dialogues of run {source.name} with other-judge: no request to the agent" in rejudged.stdout
    (folder,) = (path for name, path in folders(made).items() if name != source.name)
    new = server.received[before:]
    assert Counter(request.json["model"] for request in new) == Counter({"other-judge": len(new)})
    assert {key: count for key, count in asked.models.items() if key[0] != "judge"} == agent_and_user
    kept = outcomes(folder)
    recorded = {(outcome.scenario, outcome.attempt): outcome for outcome in outcomes(source)}
    assert sorted(recorded) == sorted((outcome.scenario, outcome.attempt) for outcome in kept)
    assert len(new) == sum(judged_claims(outcome) for outcome in kept) > 0
    for outcome in kept:
        was = recorded[(outcome.scenario, outcome.attempt)]
        assert outcome.rejudged and not was.rejudged
        assert outcome.transcript == was.transcript and outcome.transcript.fingerprint() == was.transcript.fingerprint()
        assert len(outcome.judge_requests) == judged_claims(outcome)
        assert all(not claim.held for claim in outcome.result.claims if claim.by == "judge")
    run = spec(folder)
    assert run["origin"] == {"agent": "assistant", "run": source.name}
    assert run["models"] == {"user": "user-model", "judge": "other-judge"}
    assert run["fingerprints"]["agent"] == spec(source)["fingerprints"]["agent"]
    assert run["fingerprints"]["prompt"] == spec(source)["fingerprints"]["prompt"]
    report = made.ran("report", folder.name)
    assert report.returncode == 0, report.stdout + report.stderr
    totals = json.loads((folder / "summary.json").read_text())["totals"]
    spent = sum(usage.input + usage.output for outcome in kept for usage in outcome.judge_requests)
    assert totals["tokens"] == spent, "only the judge's requests are this run's spending"
    assert totals["attempts"] == len(kept)
    accepted(server, before)
    assert made.unwritten() >= 4


def test_a_rejudge_killed_mid_way_is_finished_by_resume_asking_the_judge_alone(
    gateway: tuple[Made, StandIn], asked: Asked
) -> None:
    """``convy rejudge`` SIGKILLed once some attempts are kept (the judge held after four requests, one place):
    ``convy resume RUN2`` re-judges the rest — each attempt kept exactly once, the run finished — and nothing
    reaches the agent's or the user's model after the source run."""
    made, server = gateway
    ran = made.ran("run", "assistant", "-k", "2")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (source,) = folders(made).values()
    settings = made.folder / "pyproject.toml"
    settings.write_text(settings.read_text().replace("judge_places = 0 ", "judge_places = 1 "))
    agent_and_user = {key: count for key, count in asked.models.items() if key[0] != "judge"}
    asked.hold_after = 4
    asked.held.set()

    process = made.started("rejudge", source.name, "--judge", "other-judge")

    def kept_one() -> Path | None:
        found = [path for name, path in folders(made).items() if name != source.name]
        if found and (found[0] / "attempts.jsonl").exists() and (found[0] / "attempts.jsonl").read_bytes().count(b"\n") >= 1:
            return found[0]
        return None

    folder = wait_until(kept_one, "the re-judge to keep an attempt", timeout=DEADLINE, process=process)
    assert folder is not None, "the re-judge kept no attempt before the judge was held: " + made.shown()
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=DEADLINE) == -signal.SIGKILL
    planned = len(outcomes(source))
    assert 1 <= len(outcomes(folder)) < planned
    asked.held.clear()

    resumed = made.ran("resume", folder.name, "--fail-under", "0")  # other-judge fails claims: any pass rate accepted

    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    kept = outcomes(folder)
    assert Counter((outcome.scenario, outcome.attempt) for outcome in kept) == Counter(
        (outcome.scenario, outcome.attempt) for outcome in outcomes(source)
    )
    assert all(outcome.rejudged for outcome in kept)
    assert json.loads((folder / "run.json").read_text())["status"]["type"] == "finished"
    assert {key: count for key, count in asked.models.items() if key[0] != "judge"} == agent_and_user
    assert "other-judge" in {request.json["model"] for request in server.received}


# --- a project of fakes ------------------------------------------------------------------------

MODELS = """\
from convy.fakes import FakeJudge
from convy.judge import Models

models = Models(judge=FakeJudge(lambda claim, transcript: True))
judges = {
    "strict": FakeJudge(lambda claim, transcript: False, name="strict-judge"),
    "picky": FakeJudge(lambda claim, transcript: "goodbye" not in claim, name="picky-judge"),
}
"""

AGENT = """\
from convy.fakes import Echo

agent = Echo()
"""

GREETS = """\
script: [hello there]
judge:
  - the agent greets back
  - check: {said: "hello"}
"""

LEAVES = """\
script: [bye now]
judge:
  - the agent says goodbye
"""


class Fakes(msgspec.Struct, frozen=True):
    """A project of fakes on disk (an agent that echoes, a judge that holds every claim, and a
    strict one named in ``judges``), and the ``convy`` command run in it."""

    folder: Path

    def ran(self, *arguments: str) -> subprocess.CompletedProcess[str]:
        done = run_convy(self.folder, *arguments, timeout=DEADLINE)
        assert "Traceback" not in done.stdout + done.stderr, done.stderr
        return done

    def played(self) -> str:
        """The id of a new run of the project's agent."""
        ran = self.ran("run")
        assert ran.returncode == 0, ran.stdout + ran.stderr
        return self.newest()

    def rejudged(self, *arguments: str) -> str:
        """The id of a new re-judged run (its judges may fail claims: any pass rate is accepted)."""
        ran = self.ran("rejudge", *arguments, "--fail-under", "0")
        assert ran.returncode == 0, ran.stdout + ran.stderr
        return self.newest()

    def newest(self) -> str:
        found = sorted((self.folder / "results" / "bot").glob("*/run.json"), key=lambda path: path.stat().st_mtime_ns)
        return found[-1].parent.name

    def outcomes(self, run: str) -> list[Outcome]:
        data = (self.folder / "results" / "bot" / run / "attempts.jsonl").read_bytes()
        # Its lines that end with a newline: a run killed mid-write may end in a torn line.
        return [msgspec.json.decode(line, type=Outcome) for line in data[: data.rfind(b"\n") + 1].splitlines()]


@pytest.fixture
def fakes(tmp_path: Path) -> Fakes:
    (tmp_path / "agents").mkdir()
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "agents" / "bot.py").write_text(AGENT)
    (tmp_path / "models.py").write_text(MODELS)
    (tmp_path / "scenarios" / "greets.yaml").write_text(GREETS)
    (tmp_path / "scenarios" / "leaves.yaml").write_text(LEAVES)
    (tmp_path / "pyproject.toml").write_text("[tool.convy]\nattempts = 3\n")
    return Fakes(tmp_path)


def test_a_check_changed_in_the_scenario_is_decided_again_and_a_removed_scenario_is_skipped(fakes: Fakes) -> None:
    """After the scenario's check changes from said /hello/ to said /goodbye/ and a scenario file is removed,
    the re-judged run decides the new check on the recorded dialogue (failing it, as the agent said hello)
    and skips the removed scenario with its reason."""
    source = fakes.played()
    (fakes.folder / "scenarios" / "greets.yaml").write_text(GREETS.replace('said: "hello"', 'said: "goodbye"'))
    (fakes.folder / "scenarios" / "leaves.yaml").unlink()

    ran = fakes.ran("rejudge", source)

    assert ran.returncode == 3, ran.stdout + ran.stderr  # greets fails its changed check: the pass rule fails the run
    assert "leaves: no longer in the project's scenarios" in ran.stdout
    kept = fakes.outcomes(fakes.newest())
    assert {outcome.scenario for outcome in kept} == {"greets"}
    for outcome in kept:
        match outcome.result:
            case Verdict(claims=(judged, check)):
                assert judged.held and judged.by == "judge"
                assert (check.claim, check.held, check.by) == ("said /goodbye/", False, "code")
                assert check.reason == "agent never said anything matching /goodbye/"
            case other:
                pytest.fail(f"not a verdict: {other}")
    spec = json.loads((fakes.folder / "results" / "bot" / fakes.newest() / "run.json").read_text())["spec"]
    assert spec["skipped"] == [{"scenario": "leaves", "reasons": ["no longer in the project's scenarios: its dialogues are not re-judged"]}]


def test_compare_says_the_dialogues_are_the_same_and_pairs_each_attempt(fakes: Fakes) -> None:
    """``convy compare`` of a run and its re-judged run says the candidate re-judged the base's dialogues (a
    change is the judge's or the claims', not the agent's), with no not-comparable line for the judge, and
    counts the attempts paired by (scenario, attempt) that now fail; two re-judged runs of one run say both
    re-judged its dialogues."""
    source = fakes.played()
    strict = fakes.rejudged(source, "--judge", "strict")
    again = fakes.rejudged(source)

    compared = fakes.ran("compare", source, strict)

    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert (
        "same dialogues: the candidate re-judged the base's dialogues (judge fake-judge → strict-judge): "
        "a change here is the judge's or the claims', not the agent's"
    ) in compared.stdout
    assert "attempts paired by (scenario, attempt): 6; 6 passed before and fail now, 0 failed before" in compared.stdout
    assert "not comparable" not in compared.stderr
    both = fakes.ran("compare", strict, again)
    assert both.returncode == 0, both.stdout + both.stderr
    assert f"same dialogues: both runs re-judged the dialogues of run {source} (judge strict-judge → fake-judge)" in both.stdout
    assert "6 failed before and pass now" in both.stdout
    played = fakes.played()
    unrelated = fakes.ran("compare", source, played)
    assert "same dialogues" not in unrelated.stdout


def test_compare_of_the_same_dialogues_decides_by_mcnemar_on_the_discordant_attempts(fakes: Fakes, tmp_path: Path) -> None:
    """A run and its re-judge by a judge that fails one scenario's claim (3 of 6 attempts passed before and
    fail now, none the other way): ``convy compare`` prints McNemar's exact p of those counts, 2·(½)³ = 0.25,
    "within noise", and the paired Δ with Newcombe's interval; the Markdown summary says the same. The
    strict judge fails all 6: p = 2·(½)⁶ = 0.03125, a real change (exit 4 with --fail-on-regression). A
    compare of two played runs keeps the test of independent samples."""
    from convy.significance import McNemar

    source = fakes.played()
    picky = fakes.rejudged(source, "--judge", "picky")
    summary = tmp_path / "summary.md"

    compared = fakes.ran("compare", source, picky, "--summary", str(summary))

    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "attempts paired by (scenario, attempt): 6; 3 passed before and fail now, 0 failed before and pass now" in compared.stdout
    table = McNemar(both=3, worse=3, better=0, neither=0)
    assert table.p() == pytest.approx(0.25)
    delta = table.interval()
    assert delta is not None
    change = f"{delta.estimate:+.1%} [{delta.low:+.1%}, {delta.high:+.1%}]"
    assert f"pass rate 100.0% → 50.0%, Δ {change}, paired (McNemar, exact): p = {table.p():.3g}: within noise" in compared.stdout
    assert "within noise: 3 attempts passed before and fail now, 0 the other way" in compared.stdout
    written = summary.read_text()
    assert "paired (McNemar, exact): p = 0.25" in written and "Δ −50.0 pts" in written

    strict = fakes.rejudged(source, "--judge", "strict")
    failing = fakes.ran("compare", source, strict, "--fail-on-regression")
    assert failing.returncode == 4, failing.stdout + failing.stderr
    assert f"paired (McNemar, exact): p = {McNemar(0, 6, 0, 0).p():.3g}: real (worse)" in failing.stdout
    assert McNemar(0, 6, 0, 0).p() == pytest.approx(0.03125)

    played = fakes.played()
    ordinary = fakes.ran("compare", source, played)
    assert "McNemar" not in ordinary.stdout
    # The attempts' own noise widens Δ's interval (issue 26): two scenarios at 3 of 3 each side.
    assert "pass rate 100.0% → 100.0%, Δ +0.0% [-45.9%, +45.9%], p = 1: within noise" in ordinary.stdout, ordinary.stdout


def test_rejudge_of_a_run_that_is_missing_in_use_damaged_or_unfinished_exits_2_saying_why(fakes: Fakes) -> None:
    """Each refusal is one line naming the run and exit 2, with nothing written: no such run, a run another
    process holds, a run.json that cannot be read, a run that did not finish."""
    source = fakes.played()
    folder = fakes.folder / "results" / "bot" / source
    runs = set((fakes.folder / "results" / "bot").iterdir())

    missing = fakes.ran("rejudge", "no-such-run")
    assert (missing.returncode, missing.stderr) == (2, f"convy: no run matches 'no-such-run' in results/; the newest: {source} (bot)\n")

    descriptor = os.open(folder / "run.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        busy = fakes.ran("rejudge", source)
    finally:
        os.close(descriptor)
    assert busy.returncode == 2
    assert busy.stderr == f"convy: run {source} is in use by another convy process: re-judge it once it has ended\n"

    file = folder / "run.json"
    whole = file.read_text()
    run = json.loads(whole)
    run["status"] = {"type": "interrupted", "started": run["status"]["started"], "ended": run["status"]["started"]}
    file.write_text(json.dumps(run))
    unfinished = fakes.ran("rejudge", source)
    assert unfinished.returncode == 2
    assert unfinished.stderr == (
        f"convy: cannot re-judge {source}: it is not finished (some of its attempts were never played); "
        f"convy resume {source} first\n"
    )

    file.write_text(whole[: len(whole) // 2])
    damaged = fakes.ran("rejudge", source)
    assert damaged.returncode == 2
    assert damaged.stderr.startswith(f"convy: {folder}/run.json: cannot be read"), damaged.stderr
    assert set((fakes.folder / "results" / "bot").iterdir()) == runs, "a refused re-judge writes no run"


def test_an_unknown_judge_name_exits_2_listing_the_named_judges(fakes: Fakes) -> None:
    """``--judge`` names no judge of models.py, and the project's judge is no ChatJudge on an OpenAiModel: exit 2
    with the judges models.py names and how to name one."""
    source = fakes.played()

    ran = fakes.ran("rejudge", source, "--judge", "nobody")

    assert ran.returncode == 2
    assert ran.stderr.startswith("convy: --judge nobody: no such judge (models.py names picky, strict); name one in models.py")


def test_a_judge_that_fails_is_not_judged_and_an_agent_failure_stays_failed(fakes: Fakes) -> None:
    """A dialogue the agent failed is kept failed, with no judge request; a judge that breaks on re-judging leaves
    the whole dialogues without a verdict, the check still decided."""
    (fakes.folder / "agents" / "bot.py").write_text(
        "from convy.fakes import FakeAgent\n\n"
        "def answered(text):\n"
        "    if 'bye' in text:\n"
        "        raise RuntimeError('the agent broke')\n"
        "    return text\n\n"
        "agent = FakeAgent(answered)\n"
    )
    ran = fakes.ran("run")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    source = fakes.newest()
    (fakes.folder / "models.py").write_text(
        MODELS.replace("lambda claim, transcript: True", "lambda claim, transcript: 1 / 0")
    )

    recorded = {(outcome.scenario, outcome.attempt): outcome for outcome in fakes.outcomes(source)}

    rejudged = fakes.ran("rejudge", source)

    assert rejudged.returncode == 1, rejudged.stdout + rejudged.stderr
    for outcome in fakes.outcomes(fakes.newest()):
        match outcome.scenario, outcome.result:
            case "leaves", failed:
                assert failed == recorded[("leaves", outcome.attempt)].result
                assert outcome.judge_requests == () and outcome.judge_seconds == 0.0
            case "greets", NoVerdict(who="judge", checks=(check,)):
                assert check.held and check.claim == "said /hello/"
            case other:
                pytest.fail(f"unexpected: {other}")


def test_a_rejudge_with_judge_repeats_asks_each_claim_that_many_times_and_keeps_the_votes(fakes: Fakes) -> None:
    """``convy rejudge RUN --judge-repeats 3`` asks the judge three times about each claim of each recorded
    dialogue, keeps the three votes beside the decision, and says in run.json how it judged, so that
    ``convy resume`` would judge the rest the same way; the dialogues stay the source's."""
    source = fakes.played()

    rejudged = fakes.rejudged(source, "--judge-repeats", "3")

    run = json.loads((fakes.folder / "results" / "bot" / rejudged / "run.json").read_text())["spec"]
    assert run["judging"]["repeats"] == 3
    recorded = {(outcome.scenario, outcome.attempt): outcome for outcome in fakes.outcomes(source)}
    kept = fakes.outcomes(rejudged)
    assert sorted(recorded) == sorted((outcome.scenario, outcome.attempt) for outcome in kept)
    for outcome in kept:
        assert outcome.transcript == recorded[(outcome.scenario, outcome.attempt)].transcript
        match outcome.result:
            case Verdict(claims=claims):
                judged = [claim for claim in claims if claim.by == "judge"]
                assert judged and all(len(claim.votes) == 3 for claim in judged)
            case other:
                pytest.fail(f"not a verdict: {other}")
