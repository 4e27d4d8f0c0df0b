"""Evidence means evidence (issue 26, item 5): under ``evidence = "require"`` a quote must be a few
of the agent's own words (``transcript.Quote``: at least three whole words, or the whole of a shorter
message, of one of the agent's messages). "I", ".", a piece of a word and the user's own words are
found in the dialogue but prove nothing of the agent: the claim is not trusted and the run exits 5;
under ``flag`` they are flagged, in the report's counts, the command's lines and the window."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from support.fakeproject import FakeProject
from test_exit_codes import convy

from convy.agent import Answer, NoUsage
from convy.judge import Judging, decision
from convy.transcript import Evidence, Quote, Transcript, Turn


def dialogue(*pairs: tuple[str, str]) -> Transcript:
    transcript = Transcript()
    for message, reply in pairs:
        transcript = transcript + Turn(message, Answer(reply), True, 0.0, 0.0, NoUsage(), 0.0, 0.0)
    return transcript


SAID = dialogue(("Please refund my order", "I can refund it now."), ("Thanks", "Done."))


@pytest.mark.parametrize(
    ("quote", "weak"),
    [
        ("I", "short"),
        (".", "short"),
        ("efund", "fragment"),
        ("can refu", "fragment"),
        ("Please refund my order", "speaker"),
        ("refund it", "short"),
        ("I can refund it now", ""),
        ("I can  refund it\nnow.", ""),  # whitespace made plain, as `quotes` does
        ("I can ... now", ""),  # pieces around an elision, whole words, three in all
        ("Done.", ""),  # the whole of a message shorter than three words
    ],
)
def test_a_quote_is_sound_only_as_a_few_whole_words_of_the_agent(quote: str, weak: str) -> None:
    evidence = Quote(quote).evidence(SAID)
    assert evidence.found
    assert evidence.weak == weak
    assert evidence.sound() == (weak == "")


def test_a_quote_not_in_the_dialogue_is_not_found_and_its_words_say_so() -> None:
    evidence = Quote("I will refund you twice").evidence(SAID)
    assert (evidence.found, evidence.weak, evidence.sound()) == (False, "", False)
    assert evidence.said() == "not in the dialogue"
    assert "fewer than 3 whole words" in Quote("I").evidence(SAID).said()


def test_a_weak_quote_is_not_trusted_under_require_and_a_sound_one_of_another_vote_is_chosen() -> None:
    from convy.judge import Vote

    weak = Vote("a", True, "r", evidence=Quote("I").evidence(SAID))
    sound = Vote("b", True, "r", evidence=Quote("I can refund it now").evidence(SAID))
    assert decision("c", [weak], Judging(evidence="require")).doubt == "unquoted"
    chosen = decision("c", [weak, sound], Judging(evidence="require"))
    assert chosen.doubt == "" and chosen.evidence == sound.evidence


def test_old_records_read_as_before() -> None:

    kept = msgspec.json.decode(b'{"quote": "I", "found": true}', type=Evidence)
    assert kept.weak == "" and msgspec.json.encode(kept) == b'{"quote":"I","found":true}'


AGENT = "from convy.fakes import FakeAgent\n\nagent = FakeAgent(lambda text: 'I can refund it now.')\n"
MODELS = """\
from convy.fakes import FakeJudge
from convy.judge import Models

models = Models(judge=FakeJudge(quote={quote!r}))
"""
SCENARIO = "script: [Please refund my order]\njudge:\n  - the agent offers a refund\n"


def project(tmp_path: Path, quote: str, evidence: str) -> Path:
    folder = FakeProject(AGENT, MODELS.format(quote=quote), {"refund.yaml": SCENARIO}, 2).written(tmp_path / "project")
    with (folder / "pyproject.toml").open("a", encoding="utf-8") as toml:
        toml.write(f'evidence = "{evidence}"\n')
    return folder


@pytest.mark.parametrize("quote", ["I", ".", "efund", "Please refund my order"])
def test_under_require_a_weak_quote_leaves_the_attempt_not_judged_exit_5(tmp_path: Path, quote: str) -> None:
    done = convy(project(tmp_path, quote, "require"), "run")
    assert done.returncode == 5, done.stdout + done.stderr
    assert "not trusted (no quote of a few of the agent's own words)" in done.stdout


def test_under_require_a_few_of_the_agents_words_pass(tmp_path: Path) -> None:
    done = convy(project(tmp_path, "I can refund it now", "require"), "run")
    assert done.returncode == 0, done.stdout + done.stderr


def test_under_flag_a_weak_quote_is_flagged_on_the_command_line(tmp_path: Path) -> None:
    done = convy(project(tmp_path, "efund", "flag"), "run")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 of 2 decisions quote no few of the agent's own words" in done.stdout


def test_the_window_is_told_why_a_found_quote_is_weak() -> None:
    from convy.attempt import Attempt
    from convy.judge import Claim, Confidence, Verdict, Vote
    from convy.outcome import Outcome

    weak = Quote("efund").evidence(SAID)
    claim = Claim("the agent offers a refund", True, "r", Confidence(1.0), evidence=weak, votes=(Vote("a", True, "r", evidence=weak),))
    outcome = Outcome("refund", 1, "2026-12-04T12:00:00Z", 1.0, SAID, "finished", Verdict((claim,)))
    (decision,) = Attempt(outcome, 0.0).dialogue().decisions
    assert decision.found is True and decision.weak == "a piece of a word, not whole words"
    assert decision.votes[0].weak == "a piece of a word, not whole words"
    sound = msgspec.structs.replace(claim, evidence=Quote("I can refund it now").evidence(SAID), votes=())
    (decision,) = Attempt(msgspec.structs.replace(outcome, result=Verdict((sound,))), 0.0).dialogue().decisions
    assert decision.weak is None
