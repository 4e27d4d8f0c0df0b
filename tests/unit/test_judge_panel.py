"""Repeated and panel judging, and the judge's evidence: each rule of ``convy.judge`` on its own,
then through real runs (of fakes, and of judges over HTTP on the stand-in), and what run.json keeps."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from support.process import run_convy
from support.standin import StandIn, judged

from convy.agent import Answer, NoUsage
from convy.agreement import Consensus
from convy.attempt import Attempt
from convy.bench import Bench
from convy.fakes import FakeAgent, FakeJudge, FakeModel, FickleModel, MemoryJournal
from convy.judge import (
    ChatJudge,
    Checked,
    Claim,
    Confidence,
    Grade,
    Graded,
    Judging,
    Models,
    Panel,
    PatientJudge,
    Poll,
    Ruling,
    RunJudge,
    Verdict,
    Vote,
    decision,
)
from convy.model import Absent, OpenAiModel
from convy.outcome import Outcome
from convy.plan import Plan
from convy.providers import Made
from convy.records import Limits, ModelNames, RunFile, RunSpec
from convy.scenario import Scenario
from convy.transcript import Evidence, Transcript, Turn

GRADES = Graded("helpful", ("poor", "fair", "good"), "fair")


def votes(*held: bool, judge: str = "j") -> list[Vote]:
    return [Vote(judge, one, f"vote {number}", Confidence(0.5 + number / 100)) for number, one in enumerate(held)]


def graded(*grades: str) -> list[Vote]:
    return [Vote("j", GRADES.grades.index(grade) >= GRADES.grades.index("fair"), grade, Confidence(0.9), Grade(grade)) for grade in grades]


def transcript(*answers: str) -> Transcript:
    turns = tuple(Turn(f"message {number}", Answer(text), True, 0.0, 0.0, NoUsage(), 0.0, 0.0) for number, text in enumerate(answers))
    return Transcript(turns)


# --- the rules --------------------------------------------------------------------------------


def test_a_majority_decides_and_its_reason_and_confidence_are_the_agreeing_votes() -> None:
    """3 of 5 held: held, with the first agreeing vote's reason and the mean of the agreeing
    votes' confidence; 2 of 5: failed; the votes are kept, in order."""
    held = decision("c", votes(True, False, True, False, True))
    assert (held.held, held.reason, held.doubt) == (True, "vote 0", "")
    assert type(held.confidence) is Confidence and held.confidence.value == pytest.approx((0.50 + 0.52 + 0.54) / 3)
    assert [vote.held for vote in held.votes] == [True, False, True, False, True]
    failed = decision("c", votes(False, True, False, True, False))
    assert (failed.held, failed.reason) == (False, "vote 0")


def test_a_tie_is_a_split_that_decides_nothing_and_is_never_trusted() -> None:
    """Two for, two against: not held, doubt "split", a reason that says so, not trusted at any
    threshold; the attempt is not judged, and says the judge split."""
    split = decision("c", votes(True, False, True, False))
    assert (split.held, split.doubt) == (False, "split")
    assert split.reason == "the judge split: 2 of 4 votes said it held, 2 that it did not"
    assert not split.trusted(0.0)
    outcome = _outcome(Verdict((Claim("other", True, "fine"), split)))
    assert outcome.status(0.0) == "not_judged"
    assert Attempt(outcome, 0.0).why() == "split"
    # A trusted failure elsewhere still fails the attempt.
    assert _outcome(Verdict((Claim("other", False, "no"), split))).status(0.0) == "failed"
    panel = decision("c", [*votes(True, judge="a"), *votes(False, judge="b")])
    assert panel.reason.startswith("the judges split")


def test_unanimous_holds_only_when_every_vote_holds_and_never_splits() -> None:
    unanimous = Judging(panel="unanimous")
    assert decision("c", votes(True, True, True), unanimous).held
    one_against = decision("c", votes(True, False, True, True), unanimous)
    assert (one_against.held, one_against.doubt, one_against.reason) == (False, "", "vote 1")
    assert decision("c", votes(True, False), unanimous).doubt == ""


def test_a_graded_claim_takes_the_lower_median_grade_or_the_worst_when_unanimous() -> None:
    """The grade agrees with the decision, so Checked accepts it; a tie of grades is a split."""
    majority = decision(GRADES, graded("good", "poor", "fair", "good"))
    assert (majority.held, majority.grade) == (True, Grade("fair"))
    assert decision(GRADES, graded("good", "poor", "poor")).grade == Grade("poor")
    split = decision(GRADES, graded("good", "poor"))
    assert (split.held, split.doubt, split.grade) == (False, "split", Grade("poor"))
    worst = decision(GRADES, graded("good", "fair", "good"), Judging(panel="unanimous"))
    assert (worst.held, worst.grade) == (True, Grade("fair"))
    for claim in (majority, split, worst):
        Checked(FakeJudge())._fits(GRADES, claim, ())  # raises when the grade and the pass disagree


def test_evidence_is_an_agreeing_vote_found_in_the_dialogue_and_can_be_required() -> None:
    missing, found = Evidence("not said", False), Evidence("said", True)
    cast = [
        Vote("a", True, "r", evidence=missing),
        Vote("b", False, "r", evidence=Evidence("against", True)),
        Vote("c", True, "r", evidence=found),
    ]
    assert decision("c", cast).evidence == found
    assert decision("c", cast[:1] + cast[1:2] + cast[:1]).doubt == ""  # flagged only
    required = decision("c", cast[:1] + cast[1:2] + cast[:1], Judging(evidence="require"))
    assert (required.held, required.doubt, required.trusted(0.0)) == (True, "unquoted", False)
    assert decision("c", [Vote("a", True, "r")], Judging(evidence="require")).doubt == "unquoted"
    assert decision("c", cast, Judging(evidence="require")).doubt == ""
    # One vote is the decision itself: no votes kept.
    assert decision("c", cast[:1]).votes == ()


def test_judging_is_bounded() -> None:
    with pytest.raises(ValueError, match="judge_repeats: must be from 1 to 15"):
        Judging(repeats=16)
    with pytest.raises(ValueError):
        Judging(repeats=0)
    assert Judging().direct() and not Judging(repeats=2).direct() and not Judging(evidence="require").direct()


# --- evidence in the dialogue ----------------------------------------------------------------


def test_a_quote_is_found_with_plain_whitespace_and_quotation_marks_and_elisions_in_order() -> None:
    said = transcript("I  can\nrefund “order 1234” today. It’s on its way.", "Goodbye.")
    assert said.quotes('refund "order 1234" today')
    assert said.quotes("It's on its   way")
    assert said.quotes("I can refund ... today")
    assert said.quotes("I can … It's on its way.")
    assert not said.quotes("today ... I can")  # pieces out of order
    assert not said.quotes("i can refund")  # case counts
    assert not said.quotes("today. Goodbye.")  # across two messages
    assert not said.quotes("   ")
    assert not said.quotes("...")
    assert said.quotes("message 1")  # the user's side too


def test_a_chat_judge_reads_its_models_evidence_and_checks_it() -> None:
    """The evidence field is optional: a quote found, a quote not in the dialogue (flagged), and
    none at all."""
    replies = {
        "found": '{"evidence": "refund  order 1234", "reason": "r", "pass": true, "confidence": 0.9}',
        "invented": '{"evidence": "I will call you back", "reason": "r", "pass": true, "confidence": 0.9}',
        "none": '{"reason": "r", "pass": false, "confidence": 0.9}',
    }

    def reply(messages: Any) -> str:
        claim = messages[-1].content.split("The claim: ")[1].split("\n")[0]
        return replies[claim]

    judge = ChatJudge(FakeModel(reply))
    ruling = asyncio.run(Checked(judge).ruling(("found", "invented", "none"), transcript("I can refund order 1234.")))
    assert [claim.evidence for claim in ruling.claims] == [
        Evidence("refund  order 1234", True),
        Evidence("I will call you back", False),
        None,
    ]
    assert '"evidence"' in judge.model.requests[0][-1].content  # type: ignore[attr-defined]


# --- through runs ----------------------------------------------------------------------------


def scenario(claims: list[Any], name: str = "s") -> Scenario:
    return msgspec.convert({"id": name, "script": ["Can I get a refund?"], "judge": claims}, Scenario)


def played(bench: Bench, *scenarios: Scenario, attempts: int = 1) -> list[Outcome]:
    journal = MemoryJournal()
    asyncio.run(bench.run(Plan(scenarios, attempts), journal))
    return journal.outcomes


def test_one_judge_asked_once_keeps_the_records_as_they_were() -> None:
    """No Poll, no votes, no doubt in the line kept: the path of a run without repeats."""
    bench = Bench(FakeAgent(lambda text: "Refunded."), Models(judge=FakeJudge()))
    (outcome,) = played(bench, scenario(["It refunded"]))
    line = msgspec.json.encode(outcome).decode()
    assert '"votes"' not in line and '"doubt"' not in line and '"evidence"' not in line
    judge = RunJudge(bench.models.judge, bench.judging).within(Limits().places("judge"))
    assert type(judge.judge) is PatientJudge  # asked directly, as before: no Poll


def test_a_run_judged_five_times_keeps_every_vote_and_the_fickle_claim_disagrees() -> None:
    """FickleModel: the claim with "politely" gets votes both ways across 8 attempts, the others
    five agreeing votes each; every request answered, 5 per claim per attempt."""
    model = FickleModel(word="politely", seed=3)
    bench = Bench(FakeAgent(lambda text: "I can refund it."), Models(judge=ChatJudge(model)), judging=Judging(repeats=5))
    outcomes = played(bench, scenario(["It offered a refund", "It answered politely", {"claim": "helpful", "grades": ["poor", "fair", "good"], "pass": "fair"}]), attempts=8)
    assert model.requests == 8 * 3 * 5
    mixed = 0
    for outcome in outcomes:
        match outcome.result:
            case Verdict(claims=(refund, polite, helpful)):
                assert [len(claim.votes) for claim in (refund, polite, helpful)] == [5, 5, 5]
                assert {vote.held for vote in refund.votes} == {True} and refund.evidence == Evidence("I can refund it.", True)
                assert helpful.grade == Grade("good")
                assert {vote.judge for vote in polite.votes} == {"fickle-judge"}
                mixed += len({vote.held for vote in polite.votes}) > 1
                assert polite.held == (sum(vote.held for vote in polite.votes) >= 3)
                assert len(outcome.judge_requests) == 15
            case other:
                raise AssertionError(other)
    assert mixed >= 4


def test_a_panel_over_http_asks_every_judge_every_time_and_names_their_votes() -> None:
    """Three ChatJudges on the stand-in (one model twice), two repeats each: 6 requests per claim,
    the votes named by judge (the repeated one numbered), the stand-in's evidence found; one judge
    says no, so unanimous fails what majority holds."""

    def reply(request: dict[str, Any]) -> str:
        return judged(request, held=request["model"] != "naysayer")

    with StandIn(reply=reply) as server:
        judges = [ChatJudge(OpenAiModel(name, server.url + "/v1", timeout=30)) for name in ("alpha", "naysayer", "alpha")]
        models = Models(judge=judges)
        assert type(models.judge) is Panel and models.judge.name == "alpha, naysayer, alpha #2"
        agent = FakeAgent(lambda text: "Your refund is on its way.")
        (majority,) = played(Bench(agent, models, judging=Judging(repeats=2)), scenario(["It refunded", "It was kind"]))
        assert len(server.received) == 2 * 3 * 2
        (unanimous,) = played(Bench(agent, models, judging=Judging(panel="unanimous")), scenario(["It refunded"]))
    match majority.result:
        case Verdict(claims=claims):
            for claim in claims:
                assert [vote.judge for vote in claim.votes] == ["alpha", "alpha", "naysayer", "naysayer", "alpha #2", "alpha #2"]
                assert (claim.held, claim.doubt) == (True, "")
                assert claim.evidence == Evidence("Your refund is on its way.", True)
        case other:
            raise AssertionError(other)
    match unanimous.result:
        case Verdict(claims=(claim,)):
            assert (claim.held, len(claim.votes)) == (False, 3)
        case other:
            raise AssertionError(other)


def test_a_panel_judge_that_fails_fails_the_ruling_with_every_requests_usage() -> None:
    def broken(claim: str, said: Transcript) -> bool:
        raise ValueError("the judge broke down")

    models = Models(judge=[FakeJudge(name="a"), FakeJudge(broken, name="b")])
    (outcome,) = played(Bench(FakeAgent(lambda text: "ok"), models), scenario(["It refunded"]))
    assert outcome.status(0.0) == "not_judged"
    assert "the judge broke down" in outcome.result.reason  # type: ignore[union-attr]


def test_models_make_a_panel_where_they_enter() -> None:
    one = FakeJudge()
    assert Models(judge=[one]).judge is one
    absent = Absent("no key")
    assert Models(judge=[one, absent]).judge is absent
    with pytest.raises(ValueError, match="names no judge"):
        Models(judge=[])
    panel = Models(judge=(FakeJudge(name="x"), FakeJudge(name="y"))).judge
    assert type(panel) is Panel and panel.names() == ("x", "y")
    ruling = asyncio.run(panel.ruling(("c",), transcript("hi")))
    assert type(ruling) is Ruling and [len(claim.votes) for claim in ruling.claims] == [2]
    assert Poll((FakeJudge(),), ("x",)).name == "x"


# --- what run.json keeps ---------------------------------------------------------------------


def test_run_json_keeps_the_judging_and_the_panel_and_reads_an_old_one() -> None:
    spec = RunSpec(
        id="r",
        agent="a",
        scenarios=(),
        attempts=1,
        limits=Limits(),
        models=ModelNames("u", "x, y", ("x", "y"), "gpt-4o", "openai", {"y": "openai"}),
        judging=Judging(5, "unanimous", "require"),
    )
    kept = msgspec.json.encode(spec)
    assert msgspec.json.decode(kept, type=RunSpec) == spec
    assert spec.models.judges() == ("x", "y") and spec.models.alike() == ("y",)
    old = {
        "spec": {"id": "r", "agent": "a", "scenarios": [], "attempts": 1, "limits": {}, "models": {"user": "u", "judge": "j"}},
        "status": {"type": "running", "started": "2026-01-01T00:00:00+00:00"},
    }
    read = msgspec.json.decode(json.dumps(old), type=RunFile)
    assert read.spec.judging == Judging()
    assert read.spec.models.judges() == ("j",) and read.spec.models.alike() == ()
    assert ModelNames().judges() == ()


def test_a_models_provider_from_its_name_or_its_host() -> None:
    assert Made("openai/gpt-4o").provider() == "openai"
    assert Made("openrouter/anthropic/claude-3.5-sonnet").provider() == "anthropic"
    assert Made("gpt-4o-mini").provider() == "openai"
    assert Made("o3-mini").provider() == "openai"
    assert Made("gemini-2.0-flash").provider() == "google"
    assert Made("meta-llama/llama-3.1-70b").provider() == "meta"
    assert Made("judge", "https://api.anthropic.com/v1").provider() == "anthropic"
    assert Made("judge", "http://127.0.0.1:8000/v1").provider() == ""
    assert Made("fake").provider() == ""


def test_the_command_keeps_the_judging_and_the_agents_provider(tmp_path: Path) -> None:
    """`convy run --judge-repeats 3` on a project whose agent says it runs on gpt-4o-mini and whose
    panel has an OpenAI-named judge: run.json says so."""
    from convy.cli import main

    project = tmp_path / "p"
    (project / "agents").mkdir(parents=True)
    (project / "agents" / "bot.py").write_text(
        'from convy.fakes import FakeAgent\nagent = FakeAgent(lambda text: "ok")\nagent.model = "gpt-4o-mini"\n'
    )
    (project / "models.py").write_text(
        "from convy import ChatJudge, Models\nfrom convy.fakes import FickleModel\n"
        'models = Models(judge=[ChatJudge(FickleModel(name="a")), ChatJudge(FickleModel(name="openai/gpt-x"))])\n'
    )
    (project / "scenarios").mkdir()
    (project / "scenarios" / "s.yaml").write_text("script: [hi]\njudge: [It answered]\n")
    (project / "pyproject.toml").write_text("[tool.convy]\nattempts = 1\n")
    assert main(["-C", str(project), "run", "--judge-repeats", "3"]) == 0
    (kept,) = (project / "results" / "bot").glob("*/run.json")
    spec = msgspec.json.decode(kept.read_bytes(), type=RunFile).spec
    assert spec.judging == Judging(repeats=3)
    assert spec.models == ModelNames("absent", "a, openai/gpt-x", ("a", "openai/gpt-x"), "gpt-4o-mini", "openai", {"openai/gpt-x": "openai"})
    assert spec.models.alike() == ("openai/gpt-x",)


def _outcome(result: Verdict) -> Outcome:
    return Outcome("s", 1, "2026-01-01T00:00:00+00:00", 0.0, Transcript(), "finished", result)


# --- the report's judging section ------------------------------------------------------------


def judged_run(folder: Path, models: Models, judging: Judging, names: ModelNames, attempts: int = 6) -> Any:
    """A run of three claims (one with "politely") played into ``folder``, read back and summed."""
    from convy.report import Summary
    from convy.runs import Runs
    from convy.storage import RunJournal

    bench = Bench(FakeAgent(lambda text: "Hello! Your refund is on its way."), models, judging=judging)
    spec = RunSpec(
        id="judged",
        agent="bot",
        scenarios=(scenario(["It offered a refund", "It answered politely"], "refund"), scenario(["It greeted"], "hello")),
        attempts=attempts,
        limits=bench.limits,
        models=names,
        judging=judging,
    )
    asyncio.run(RunJournal(folder / "results" / "bot" / "judged").play(spec, bench))
    (read,), unread = Runs(folder / "results").read()
    assert unread == ()
    return Summary(read)


def test_the_report_flags_the_claim_the_judge_cannot_decide_and_links_its_split_decisions(tmp_path: Path) -> None:
    """Asked five times, FickleModel agrees with itself on two claims and not on the "politely"
    one: that claim alone is ambiguous, with the attempts whose votes split; evidence all found."""
    model = FickleModel(word="politely", seed=5)
    summary = judged_run(tmp_path, Models(judge=ChatJudge(model)), Judging(repeats=5), ModelNames(judge="fickle-judge"))
    judging = summary.view().judging
    assert judging is not None and (judging.repeats, judging.judges, judging.kappa) == (5, ["fickle-judge"], None)
    rows = {(row.scenario, row.claim): row for row in judging.claims}
    polite = rows[("refund", "It answered politely")]
    assert polite.ambiguous and judging.ambiguous == 1
    assert polite.agreement is not None and polite.agreement < Consensus.AMBIGUOUS
    assert polite.dissents == len(polite.split) > 0
    assert all(0 < link.held < link.votes == 5 for link in polite.split)
    assert {link.attempt for link in polite.split} <= set(range(1, 7))
    for key in (("refund", "It offered a refund"), ("hello", "It greeted")):
        assert (rows[key].agreement, rows[key].ambiguous, rows[key].split) == (1.0, False, [])
    assert (judging.unquoted, judging.decisions) == (0, 18)
    assert all(row.quoted == row.decisions == 6 for row in judging.claims)


def test_the_report_gives_a_panels_kappa_and_names_a_judge_of_the_agents_provider(tmp_path: Path) -> None:
    """Two judges that always agree but one that says no to "politely": κ per claim where defined,
    a claim they disagree on, a quote not found counted and linked, the OpenAI judge named beside
    an agent on gpt-4o-mini."""
    judges = [
        FakeJudge(name="openai/gpt-x", quote="Your refund is on its way."),
        FakeJudge(lambda claim, said: "politely" not in claim, name="claude-y", quote="I never said this"),
    ]
    names = ModelNames("absent", "openai/gpt-x, claude-y", ("openai/gpt-x", "claude-y"), "gpt-4o-mini", "openai", {"openai/gpt-x": "openai", "claude-y": "anthropic"})
    summary = judged_run(tmp_path, Models(judge=judges), Judging(), names, attempts=3)
    judging = summary.view().judging
    assert judging is not None
    assert judging.alike == ["openai/gpt-x"] and judging.agent_provider == "openai"
    rows = {(row.scenario, row.claim): row for row in judging.claims}
    polite = rows[("refund", "It answered politely")]
    assert (polite.between, polite.disagree, polite.splits) == (0.0, True, 3)  # one for, one against: split
    assert rows[("hello", "It greeted")].kappa is None  # both always held: κ undefined
    assert rows[("hello", "It greeted")].between == 1.0
    assert judging.kappa is not None and judging.kappa < 0.5
    # The first judge's quote is found: every decision's evidence is an agreeing vote's found quote,
    # but the split one's first vote (the OpenAI judge's) too.
    assert judging.unquoted == 0
    assert judging.agreement is None  # asked once: no self-agreement


def test_a_run_of_one_judge_that_quotes_nothing_has_no_judging_section(tmp_path: Path) -> None:
    summary = judged_run(tmp_path, Models(judge=FakeJudge()), Judging(), ModelNames(judge="fake-judge"), attempts=1)
    assert summary.view().judging is None


def test_a_panels_keys_are_found_to_be_hidden_and_a_comparison_says_the_judging_changed(tmp_path: Path) -> None:
    """The keys of every judge of a panel are among the run's secrets; two runs judged differently
    are not compared without a word."""
    from convy.comparison import Comparison
    from convy.holders import Holders

    key = "sk-panel-canary-0123456789"
    models = Models(judge=[FakeJudge(), ChatJudge(OpenAiModel("m", "http://127.0.0.1:9/v1", key=key))])
    assert key in Holders((models,)).secrets().values
    once = judged_run(tmp_path / "once", Models(judge=FakeJudge()), Judging(), ModelNames(judge="fake-judge"), attempts=1)
    thrice = judged_run(tmp_path / "thrice", Models(judge=FakeJudge()), Judging(repeats=3), ModelNames(judge="fake-judge"), attempts=1)
    said = Comparison(once.run, thrice.run).banner()
    assert "the judging differs: asked 1×, majority, evidence flag → asked 3×, majority, evidence flag" in said


def test_judging_settings_are_read_and_refused_naming_their_field(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """[tool.convy] panel and evidence, and CONVY_JUDGE_REPEATS: each wrong value one line naming
    its field and source, exit 2, nothing sent."""
    from convy.cli import main

    project = tmp_path / "p"
    (project / "scenarios").mkdir(parents=True)
    (project / "scenarios" / "s.yaml").write_text("script: [hi]\njudge: [It answered]\n")
    (project / "pyproject.toml").write_text('[tool.convy]\npanel = "most"\nevidence = "maybe"\n')
    monkeypatch.setenv("CONVY_JUDGE_REPEATS", "16")
    assert main(["-C", str(project), "check"]) == 2
    said = capsys.readouterr().err.splitlines()
    assert "convy: pyproject.toml: [tool.convy] panel: must be one of majority, unanimous" in said
    assert "convy: pyproject.toml: [tool.convy] evidence: must be one of flag, require" in said
    assert "convy: CONVY_JUDGE_REPEATS: judge_repeats: must be at most 15" in said


def test_the_command_names_the_flagged_claims_and_a_judge_of_the_agents_provider(tmp_path: Path) -> None:
    """``convy run`` of bench/ambiguous.py's panel project says, after the run, the one claim its judges
    cannot decide consistently (ambiguous, and the judges disagree on it) and the judge named like an
    OpenAI model beside an agent on gpt-4o-mini; the claims decided the same way every time are not named."""
    import subprocess
    import sys

    bench = Path(__file__).resolve().parents[2] / "bench" / "ambiguous.py"
    subprocess.run([sys.executable, str(bench), str(tmp_path), "--panel"], check=True, capture_output=True)
    # The ambiguous claim fails some attempts by design: --fail-under 0 accepts any pass rate, as the test is of what is said.
    done = run_convy(Path.cwd(), "-C", str(tmp_path), "run", "--judge-repeats", "3", "--fail-under", "0", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    said = [line for line in done.stdout.splitlines() if line.startswith("judging: ")]
    assert len(said) == 2, done.stdout
    assert said[0].startswith("judging: refund · The agent answered politely: ambiguous claim, rewrite it (")
    assert said[0].endswith("; the judges disagree on it")
    assert said[1] == "judging: openai/gpt-fickle is from openai, the provider of the agent's model: a possible bias"


# --- "ambiguous claim" on a rate (issue 26, item 6) ------------------------------------------


def ambiguous_share(consistency: float, runs: int, attempts: int = 30, repeats: int = 4, seed: int = 26) -> float:
    """The share of ``runs`` seeded claims flagged ambiguous, each decided in ``attempts`` attempts
    by one judge asked ``repeats`` times that gives the claim's true answer with chance
    ``consistency`` each time; counted by the report's own ``Consensus``."""
    import random

    from convy.agreement import _Claimed

    pick = random.Random(seed)
    consensus = Consensus(RunSpec(id="r", agent="a", scenarios=(), attempts=attempts, limits=Limits(), judging=Judging(repeats=repeats)), {})
    flagged = 0
    for _ in range(runs):
        one = _Claimed()
        for attempt in range(attempts):
            said = [pick.random() < consistency for _ in range(repeats)]
            held = sum(said)
            claim = Claim("c", 2 * held > repeats, "", votes=tuple(votes(*said)), doubt="split" if 2 * held == repeats else "")
            consensus._add(one, claim, attempt + 1)
        flagged += consensus._row("s", "c", one, 1).ambiguous
    return flagged / runs


def test_a_claim_is_ambiguous_on_a_rate_of_wavering_not_on_one_tie() -> None:
    """Over 30 attempts asked 4 times each, a judge 95% consistent was flagged a third of the time
    (any 2–2 split flagged the claim); now it is flagged about 1% of the time, and a judge 70%
    consistent every time. One 2–2 split among 29 unanimous decisions flags nothing."""
    assert ambiguous_share(0.95, 600) < 0.03
    assert ambiguous_share(0.70, 200) == 1.0
    from convy.agreement import _Claimed

    consensus = Consensus(RunSpec(id="r", agent="a", scenarios=(), attempts=30, limits=Limits(), judging=Judging(repeats=4)), {})
    one = _Claimed()
    for attempt in range(30):
        said = (True, True, False, False) if attempt == 0 else (True,) * 4
        consensus._add(one, Claim("c", True, "", votes=tuple(votes(*said)), doubt="split" if attempt == 0 else ""), attempt + 1)
    row = consensus._row("s", "c", one, 1)
    assert row.agreement is not None and row.agreement > 0.98 and row.splits == 1
    assert not row.ambiguous
