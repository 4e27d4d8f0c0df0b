"""convy against a Chat Completions server written by others: LiteLLM's proxy, offline.

The proxy (tests/support/litellmproxy.py) runs once for the session with a config of mock models: each
answers with a fixed reply and never leaves the machine. A callback of the proxy's own writes down
the usage of every reply it sends, so convy's counts are checked against the server's, not against
numbers the test made up. Without ``.venv-proxy`` the tests are skipped, saying how to get it.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import msgspec
import pytest
from support.litellmproxy import USER_SAYS, Proxy
from test_services_cli import KEY, Made, made, outcomes  # noqa: F401 - made is a fixture used here

from convy.agent import Cost, Message, NotReported, NoUsage, Requests, Unpriced, Usage
from convy.attempt import Spent
from convy.http import HttpFailure, JsonEndpoint
from convy.httpagents import ChatAgent
from convy.judge import NoVerdict, Verdict
from convy.model import OpenAiModel, Said
from convy.outcome import Outcome

# The first test here waits for the proxy to start as well: room for that on a loaded machine.
pytestmark = pytest.mark.timeout(300)


def model(proxy: Proxy, stream: bool, name: str = "mock-gpt", key: str = KEY) -> OpenAiModel:
    return OpenAiModel(name, proxy.url + "/v1", key=key, stream=stream, timeout=60)


def usage_of(sent: dict[str, Any]) -> Usage | NoUsage:
    """A reply's usage and cost as the proxy wrote them down, in convy's terms."""
    cached = (sent.get("prompt_tokens_details") or {}).get("cached_tokens")
    reasoning = (sent.get("completion_tokens_details") or {}).get("reasoning_tokens")
    cost = sent.get("cost")
    return Usage(
        sent["prompt_tokens"],
        sent["completion_tokens"],
        NotReported() if cached is None else cached,
        NotReported() if reasoning is None else reasoning,
        Unpriced() if cost is None else Cost(Decimal(str(cost)), "provider"),
    )


def assert_counted(proxy: Proxy, before: dict[str, int], assistant: list[Outcome], kept: list[Outcome]) -> None:
    """Every request convy recorded of each of the template's models since ``before`` (the
    assistant's in ``assistant``; the simulated user's for each turn it spoke and the one that
    ended a dialogue, and the judge's, in ``kept``) is a reply the proxy sent, no more and no
    fewer: the tokens and the cost are the proxy's own."""
    recorded: dict[str, list[Usage | NoUsage]] = {
        "agent-model": [usage for outcome in assistant for turn in outcome.transcript.turns for usage in turn.answer.requests()],
        "user-model": [
            usage for outcome in kept for usage in
            [turn.user_usage for turn in outcome.transcript.turns if not turn.scripted] + list(outcome.user_ending)
        ],
        "judge-model": [usage for outcome in kept for usage in outcome.judge_requests],
    }
    for group, usages in recorded.items():
        assert usages, group
        sent = proxy.awaited(group, before[group] + len(usages))[before[group]:]
        assert proxy.sent(group)[before[group]:] == sent, f"{group}: the proxy sent more replies than convy recorded"
        ours, theirs = Spent(tuple(usages)).tokens(), Spent(tuple(usage_of(usage) for usage in sent)).tokens()
        assert (ours.requests, ours.reported, ours.input, ours.output, ours.cached, ours.reasoning) == (
            theirs.requests, theirs.reported, theirs.input, theirs.output, theirs.cached, theirs.reasoning,
        ), group
        spent, billed = Spent(tuple(usages)).cost(), Spent(tuple(usage_of(usage) for usage in sent)).cost()
        assert (Decimal(spent.amount or "0"), spent.source, spent.complete) == (Decimal(billed.amount or "0"), "provider", True), group


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_model_on_the_proxy_replies_with_the_proxys_usage(proxy: Proxy, stream: bool) -> None:
    """OpenAiModel reads the proxy's mock reply whole, and its usage is exactly what the proxy sent."""
    before = len(proxy.sent("mock-gpt"))
    subject = model(proxy, stream)

    async def asked() -> list[Any]:
        return [await subject.reply((Said("user", f"question {n}: where is my order?"),)) for n in range(3)]

    replies = asyncio.run(asked())
    assert [reply.text for reply in replies] == ["Hello from the mock"] * 3
    sent = proxy.awaited("mock-gpt", before + 3)[before:]
    assert [reply.usage for reply in replies] == [usage_of(usage) for usage in sent]
    # The proxy gives its cost in a streamed reply's usage, and in a header for a plain one: both the provider's.
    assert all(isinstance(reply.usage, Usage) and isinstance(reply.usage.cost, Cost) for reply in replies)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_wrong_key_is_refused_and_not_shown(proxy: Proxy, stream: bool) -> None:
    """A key the proxy does not know fails the request (this proxy answers 400 "No connected db."), the key not shown."""
    with pytest.raises(HttpFailure, match="400 Bad Request") as failure:
        asyncio.run(model(proxy, stream, key="sk-not-the-key-0815").reply((Said("user", "hello"),)))
    assert "sk-not-the-key" not in str(failure.value)


def test_a_rate_limit_of_the_proxy_is_busy(proxy: Proxy) -> None:
    """The proxy's 429 is Busy, the refusal convy may send again (the proxy gives no Retry-After)."""
    from convy.busy import Busy

    with pytest.raises(Busy) as refused:
        asyncio.run(model(proxy, False, "mock-busy").reply((Said("user", "hello"),)))
    assert "429" in str(refused.value)


def test_a_chat_agent_plays_a_conversation_through_the_proxy(proxy: Proxy) -> None:
    """A ChatAgent's conversation of three turns gets the proxy's reply each turn, with the usage the proxy sent."""
    before = len(proxy.sent("mock-gpt"))
    agent = ChatAgent(JsonEndpoint(proxy.url + "/v1/chat/completions", {"authorization": f"Bearer {KEY}"}, timeout=60), "mock-gpt")

    async def talked() -> list[Any]:
        async with agent.conversation() as conversation:
            return [await conversation.turn(Message(text)) for text in ("Hi", "Where is A-1043?", "Thanks")]

    answers = asyncio.run(talked())
    assert [answer.text for answer in answers] == ["Hello from the mock"] * 3
    sent = proxy.awaited("mock-gpt", before + 3)[before:]
    assert [answer.usage for answer in answers] == [usage_of(usage) for usage in sent]


def test_a_panel_on_the_proxy_votes_with_its_evidence_checked(proxy: Proxy) -> None:
    """Three judges on the proxy, each asked twice per claim: every vote is one reply the proxy
    sent, the quoting judge's evidence is found in what the mock agent said, the inventing one's
    is not, the one that quotes nothing has none; the majority (4 of 6) holds the claim."""
    from convy import Bench, ChatJudge, Models
    from convy.fakes import MemoryJournal
    from convy.judge import Judging
    from convy.plan import Plan
    from convy.scenario import Scenario
    from convy.transcript import Evidence

    names = ("quoting-judge", "inventing-judge", "judge-model")
    before = {name: len(proxy.sent(name)) for name in names}
    agent = ChatAgent(JsonEndpoint(proxy.url + "/v1/chat/completions", {"authorization": f"Bearer {KEY}"}, timeout=60), "mock-gpt")
    judges = [ChatJudge(model(proxy, False, name)) for name in names]
    scenario = msgspec.convert({"id": "greet", "script": ["Hi"], "judge": ["It greeted"]}, Scenario)
    journal = MemoryJournal()
    asyncio.run(Bench(agent, Models(judge=judges), judging=Judging(repeats=2)).run(Plan((scenario,)), journal))
    (outcome,) = journal.outcomes
    match outcome.result:
        case Verdict(claims=(claim,)):
            assert [vote.judge for vote in claim.votes] == [name for name in names for _ in range(2)]
            assert [vote.evidence for vote in claim.votes] == [
                Evidence("Hello   from the mock", True), Evidence("Hello   from the mock", True),
                Evidence("I have refunded you", False), Evidence("I have refunded you", False),
                None, None,
            ]
            assert (claim.held, claim.evidence) == (True, Evidence("Hello   from the mock", True))
        case other:
            raise AssertionError(other)
    for name in names:
        assert len(proxy.awaited(name, before[name] + 2)) == before[name] + 2


@pytest.mark.timeout(600)
def test_convy_run_of_the_template_on_the_proxy_counts_what_the_proxy_sent(made: Made, proxy: Proxy) -> None:  # noqa: F811
    """``convy run`` with .env pointing at the proxy plays the model-driven scenarios, and every token it records
    for the assistant, the simulated user and the judge is one the proxy sent: the totals are equal."""
    made.gateway(proxy.url + "/v1")
    before = proxy.counts()

    # The mock user says the same thing every turn and never stops: its faults are counted, so every
    # dialogue is judged and the judge's tokens are there to count.
    ran = made.ran("run", "-k", "1", CONVY_MAX_TURNS="2", CONVY_USER_FAULTS="count")

    # Exit 5: the mock judge gives no grade, so the scenarios with a graded claim are not judged.
    assert ran.returncode == 5, ran.stdout + ran.stderr
    assert "Object missing required field `grade`" in ran.stdout
    assert "skipped" not in ran.stdout
    runs = made.runs()
    assert set(runs) == {"assistant", "shop"}
    kept = [outcome for folder in runs.values() for outcome in outcomes(folder)]
    simulated = [outcome for outcome in kept if any(not turn.scripted for turn in outcome.transcript.turns)]
    assert simulated and all(turn.message == USER_SAYS for outcome in simulated for turn in outcome.transcript.turns)
    for outcome in kept:
        # A plain claim is judged; a graded one gets no grade from this mock judge: not judged, the judge's fault.
        match outcome.result:
            case Verdict():
                pass
            case NoVerdict(who="judge", reason=reason):
                assert "grade" in reason, reason
            case other:
                raise AssertionError(f"{outcome.scenario}: {other}")
    assistant = outcomes(runs["assistant"])
    assert all(
        [(usage.input, usage.output, usage.cached, usage.reasoning) for usage in turn.answer.requests() if isinstance(usage, Usage)]
        == [(120, 15, 64, 7)] * 3
        for outcome in assistant
        for turn in outcome.transcript.turns
    ), "three tool calls a turn, each with the proxy's cached and reasoning tokens"
    assert all(isinstance(turn.answer.usage, Requests) for outcome in assistant for turn in outcome.transcript.turns)

    assert_counted(proxy, before, assistant, kept)
    assert made.unwritten() >= 4
