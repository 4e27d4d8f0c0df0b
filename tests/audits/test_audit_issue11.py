"""Issue 11's features attacked from outside (audit): the leak check on realistic scenarios and
messages, ``no_stop`` on ordinary runs, hostile matrices and personas, causes under a strict rate
limit, and secrets in what the checks quote. Each test failed before its fix, or pins down a
behaviour found sound."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from convy import Answer, Scenario, Turn, Usage
from convy.fakes import FakeModel
from convy.prompt import Prompt, default_user_prompt
from convy.transcript import Transcript, UserFault
from convy.user import Conduct


def turn(message: str, answer: str = "Sure, let me look into that for you.") -> Turn:
    return Turn(message, Answer(answer), False, 0.0, 0.0, Usage(1, 1), 0.0, 0.0)


def conduct(user: str, *messages: str, vars: dict[str, Any] | None = None) -> tuple[UserFault, ...]:
    """The code checks of a dialogue whose user was told the default simulator prompt (the real
    prompts/user.md) filled with ``user`` and ``vars``, as a run fills it."""
    scenario = msgspec.convert({"id": "s", "user": user, "vars": vars or {}, "judge": ["The agent helped."]}, Scenario)
    simulated = scenario.simulated(FakeModel(["Hi."]), Prompt(default_user_prompt()))
    return Conduct(Transcript(tuple(turn(message) for message in messages)), "finished").faults(simulated.instructions)


# A user in character says the facts and wishes it was given, often in the very words: none of
# these is a leak. Before the audit the last four were "leaked" (12+ words shared with the prompt),
# so by default their attempts were not judged.
IN_CHARACTER = [
    ("Your order number is A-1043 and it arrived broken; you want a refund.", "Hi, my order A-1043 arrived broken and I want a refund"),
    (
        "You are Maria Lopez. You bought a blender, order A-1043, and it arrived with a cracked jug. "
        "You want a full refund to your card, not store credit.",
        "Hi, I bought a blender, order A-1043, and it arrived with a cracked jug. I want a full refund to my card, not store credit.",
    ),
    (
        "I would like to get a refund for my order A-1043 because it arrived broken and I do not want a replacement.",
        "Hello. I would like to get a refund for my order A-1043 because it arrived broken and I do not want a replacement.",
    ),
    (
        "Ask to change your flight from Paris to Berlin on the 12th of March to the 14th of March, economy class, same time of day.",
        "Hi, I need to change my flight from Paris to Berlin on the 12th of March to the 14th of March, economy class, same time of day.",
    ),
    (
        "You were charged twice for the same monthly subscription in March, 19.99 euros each time, and want one charge refunded.",
        "I was charged twice for the same monthly subscription in March, 19.99 euros each time, and want one charge refunded.",
    ),
]


@pytest.mark.parametrize(("user", "said"), IN_CHARACTER)
def test_a_user_saying_the_facts_it_was_given_is_no_leak(user: str, said: str) -> None:
    assert conduct(user, said) == ()


def test_facts_from_vars_are_no_leak_either() -> None:
    user = "You are {{ name }}. {{ problem }}"
    problem = "Your parcel with the winter coat was delivered to the wrong address on Baker Street last Friday evening."
    said = "My parcel with the winter coat was delivered to the wrong address on Baker Street last Friday evening."
    assert conduct(user, said, vars={"name": "Sam Hill", "problem": problem}) == ()


def test_the_prompts_framing_said_is_still_a_leak() -> None:
    """What the check is for: the simulator's own rules read out to the agent."""
    user = "Your order number is A-1043 and it arrived broken; you want a refund."
    found = conduct(user, "Sorry, I must never invent facts that are not in your instructions. If the agent asks for something")
    assert [fault.check for fault in found] == ["leaked"]
    found = conduct(user, "I'm playing a person who is talking to a customer-facing AI agent, in order to test it.")
    assert [fault.check for fault in found] == ["leaked"]


def test_a_stretch_that_runs_from_the_framing_into_the_instructions_is_a_leak() -> None:
    """The heading and the start of the instructions together: the runs that cross the border
    are the prompt's, not the scenario's, so the stretch is still long enough to be found."""
    user = "You are Maria Lopez and your blender arrived with a cracked jug."
    found = conduct(user, "Who you are and what you want: You are Maria Lopez and your blender arrived with a cracked jug.")
    assert [fault.check for fault in found] == ["leaked"]


def test_an_agent_that_never_resolves_is_judged_not_hidden_behind_no_stop() -> None:
    """An agent that keeps asking for the order number, and a patient user that answers each time
    in other words and never says it is done: before the audit every such attempt was "not judged,
    user failed" by default, so the agent's failure left the pass rate. Now no_stop is kept and
    shown, and the judge decides (here it fails the agent)."""
    import asyncio

    from convy import Bench, Models, Plan
    from convy.fakes import FakeAgent, FakeJudge, MemoryJournal

    asked = iter(range(1, 1000))
    user = FakeModel(lambda said: f"It is order A-1043, as I said ({next(asked)}). Can you refund it?")
    judge = FakeJudge(lambda claim, transcript: False)
    journal = MemoryJournal()
    scenario = msgspec.convert({"id": "loop", "user": "You want a refund for order A-1043.", "max_turns": 4, "judge": ["The agent refunded."]}, Scenario)
    agent = FakeAgent(lambda text: "Could you tell me your order number?")
    asyncio.run(Bench(agent, Models(user, judge)).run(Plan((scenario,), 1), journal))
    (outcome,) = journal.outcomes
    assert [fault.check for fault in outcome.user_faults] == ["no_stop"]
    assert outcome.status(0.0) == "failed"
    assert judge.rulings == 1


def test_a_shift_never_says_mostly_a_cause_whose_share_moved_the_other_way() -> None:
    """On random pairs of runs (hypothesis): each "mostly" sentence's cause moved the same way as
    the whole share of attempts not passed, and by more than half of it."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from convy.causes import NAMES, TROUBLE, Breakdown, Shift

    run = st.lists(st.sampled_from([None, "agent", "user", "judge", "service", "tool"]), min_size=1, max_size=40)

    @settings(max_examples=400, deadline=None)
    @given(run, run)
    def holds(base: list[Any], candidate: list[Any]) -> None:
        a, b = Breakdown(tuple(base)), Breakdown(tuple(candidate))
        whole = b.not_passed() / b.attempts - a.not_passed() / a.attempts
        for sentence in Shift(a, b).sentences():
            (cause,) = [cause for cause in ("user", "judge") if f"mostly {TROUBLE[cause]}" in sentence or f"mostly less {TROUBLE[cause]}" in sentence]
            change = b.counts[cause] / b.attempts - a.counts[cause] / a.attempts
            assert NAMES[cause] in sentence
            if "drop" in sentence:
                assert whole > 0 and change > whole / 2
            else:
                assert "rise" in sentence and whole < 0 and change < whole / 2

    holds()


def test_a_secret_in_a_model_checks_quote_is_hidden_in_the_run_folder(tmp_path: Path) -> None:
    """A user model key echoed by the user and quoted by a model's check (unsupported) is hidden
    in every file of the run folder, as every kept text is (found sound: no fix needed)."""
    import asyncio
    import json

    from convy import Bench, Models, RunJournal, RunSpec
    from convy.fakes import FakeAgent
    from convy.secrets import Secrets
    from convy.user import UserChecks

    canary = "sk-canary-quote-0123456789abcdef"

    def checker(said: Any) -> str:
        return json.dumps({"fault": True, "turn": 1, "quote": f"my key is {canary}", "reason": f"{canary} is not in its instructions"})

    from convy import ChatJudge

    judge = ChatJudge(FakeModel(checker))
    scenario = msgspec.convert({"id": "s", "user": "You want a refund.", "judge": ["The agent helped."]}, Scenario)
    bench = Bench(
        FakeAgent(lambda text: "Noted."),
        Models(FakeModel([f"My key is {canary}, refund me.", "###STOP###"]), judge),
        user_checks=UserChecks(("unsupported",), "count"),
    )
    spec = RunSpec(id="r", agent="a", scenarios=(scenario,), attempts=1, limits=bench.limits, user_checks=UserChecks(("unsupported",), "count"))
    asyncio.run(RunJournal(tmp_path / "a" / "r").play(spec, bench, secrets=Secrets((canary,))))
    kept = (tmp_path / "a" / "r" / "attempts.jsonl").read_text()
    assert "unsupported" in kept
    for path in (tmp_path / "a" / "r").rglob("*"):
        if path.is_file():
            assert canary not in path.read_text(errors="replace"), path
