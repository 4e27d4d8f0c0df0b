"""Replies read as their servers mean them (issue 26, item 9): a stream ended by [DONE] whose
finish_reason stayed null, a simulated user's reply cut at its token limit or by a content filter,
the judge's JSON among a reasoning model's thoughts and trailing text, a base URL written in upper
case, and Azure OpenAI's header and token field. Against the stand-in, a real HTTP server."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from support.standin import NoFinish, StandIn

from convy.agent import Answer, NoUsage, TimeLimited, Usage
from convy.fakes import Echo, FakeJudge
from convy.http import JsonEndpoint
from convy.judge import ChatJudge, NoVerdict
from convy.model import Contained, ModelFailure, OpenAiModel, Said
from convy.problems import UrlProblem
from convy.prompt import Prompt, default_user_prompt
from convy.scenario import Scenario
from convy.transcript import Transcript, Turn


def reply(model: OpenAiModel) -> str:
    return asyncio.run(Contained(model).reply((Said("user", "hi"),))).text


@pytest.mark.parametrize("stream", [True, False])
def test_a_whole_reply_whose_finish_reason_stayed_null_is_kept(stream: bool) -> None:
    """A stream ended by [DONE] whose chunks all say finish_reason null is whole, as OpenAI's client
    takes it (main: "the streamed reply ended without a finish reason")."""
    with StandIn() as server:
        server.faults(NoFinish())
        assert reply(OpenAiModel("m", server.url + "/v1", stream=stream)) == "You said: hi"


def played(server: StandIn, finish: str, stream: bool = False, max_tokens: int | None = 6) -> tuple[object, Echo]:
    """One attempt of a scenario whose simulated user's model the stand-in cuts with ``finish``."""
    server.reply = lambda request: {
        "content": "Hi, I want to ret",
        "finish_reason": finish,
        "usage": {"prompt_tokens": 40, "completion_tokens": 6},
    }
    scenario = msgspec.convert({"id": "s", "user": "You want a refund.", "judge": ["The agent helped."]}, Scenario)
    model = OpenAiModel("m", server.url + "/v1", max_tokens=max_tokens, stream=stream)
    user = scenario.simulated(model, Prompt(default_user_prompt()))
    echo = Echo()
    outcome = asyncio.run(scenario.outcome(1, TimeLimited(echo), user, FakeJudge(), 3))
    return outcome, echo


@pytest.mark.parametrize("stream", [False, True])
def test_a_users_reply_cut_at_its_token_limit_is_never_sent_and_names_the_fix(stream: bool) -> None:
    """finish_reason "length": the half message never reaches the agent, the attempt is the user's and
    not judged, the words name max_tokens in models.py, and the request's tokens are counted (main:
    the half message was sent, again and again, and blamed as the user repeating itself)."""
    with StandIn() as server:
        outcome, echo = played(server, "length", stream)
        chats = [one for one in server.received if one.kind == "chat"]
    assert echo.messages == []
    assert outcome.transcript.turns == ()
    assert outcome.stop == "model_failed"
    match outcome.result:
        case NoVerdict(who="user", reason=reason):
            assert 'finish_reason "length"' in reason
            assert "max_tokens=6 is too few for its replies; raise it in models.py" in reason
        case other:
            raise AssertionError(other)
    assert len(chats) == 1  # the judge was never asked, and the user not asked again
    assert [(usage.input, usage.output) for usage in outcome.user_ending if isinstance(usage, Usage)] == [(40, 6)]
    assert outcome.user_faults == ()


def test_a_cut_without_max_tokens_set_says_to_set_one() -> None:
    with StandIn() as server:
        outcome, _ = played(server, "length", max_tokens=None)
    assert isinstance(outcome.result, NoVerdict)
    assert "set a larger max_tokens in models.py" in outcome.result.reason


def test_a_users_reply_cut_by_a_content_filter_is_never_sent_either() -> None:
    with StandIn() as server:
        outcome, echo = played(server, "content_filter")
    assert echo.messages == []
    match outcome.result:
        case NoVerdict(who="user", reason=reason):
            assert "content filter" in reason and 'finish_reason "content_filter"' in reason
        case other:
            raise AssertionError(other)


def test_a_reply_that_ended_of_itself_is_sent_as_ever() -> None:
    with StandIn() as server:
        outcome, echo = played(server, "stop")
    assert echo.messages[:1] == ["Hi, I want to ret"]


TRANSCRIPT = Transcript() + Turn("hello", Answer("You said: hello"), True, 0.0, 0.0, NoUsage(), 0.0, 0.0)
DECIDED = '{"evidence": "You said: hello", "reason": "it echoes", "pass": true, "confidence": 0.9}'


def judged(said: str) -> tuple[bool, str]:
    with StandIn(reply=lambda request: said) as server:
        ruling = asyncio.run(ChatJudge(OpenAiModel("m", server.url + "/v1")).ruling(("The agent echoes.",), TRANSCRIPT))
    claim = ruling.claims[0]
    return claim.held, claim.reason


@pytest.mark.parametrize(
    "said",
    [
        f'<think>The answer is {{"pass": ...}}, with {{evidence}} first.</think>\n{DECIDED}',
        f'{DECIDED}\nNote: the format was {{"pass": bool}}.',
        f'<think>{{"reason": "a draft", "pass": false, "confidence": 0.1}}</think>\n{DECIDED}\n(see {{this}})',
        f"<THINK>{{</THINK>Here: {DECIDED} {{}}",
    ],
)
def test_the_judges_json_is_found_among_thoughts_and_trailing_braces(said: str) -> None:
    """main: ModelFailure, "the judge's model answered in the wrong shape"."""
    assert judged(said) == (True, "it echoes")


def test_the_search_for_the_judges_json_is_bounded() -> None:
    """A reply of many objects of another shape before the answer: only the first 64 are tried, so
    a hostile reply costs a bounded number of reads, and the failure says the shape was wrong."""
    few = " ".join(['{"x": 1}'] * 10) + " " + DECIDED
    assert judged(few) == (True, "it echoes")
    many = " ".join(['{"x": 1}'] * 70) + " " + DECIDED
    with pytest.raises(ModelFailure, match="wrong shape"):
        judged(many)
    with pytest.raises(ModelFailure, match="wrong shape"):
        judged('{"a":' * 50_000 + "}")


def test_a_url_whose_scheme_is_in_capitals_is_a_url() -> None:
    """main: HTTP:// was refused at the first request (a traceback from convy run)."""
    assert JsonEndpoint("HTTP://example.com/agent").url == "http://example.com/agent"
    with StandIn() as server:
        model = OpenAiModel("m", server.url.replace("http://", "HTTP://") + "/v1")
        assert model.base_url.startswith("http://")
        assert reply(model) == "You said: hi"


def test_azure_openai_gets_its_api_key_header_and_max_completion_tokens() -> None:
    azure = OpenAiModel("gpt-4o", "https://shop.openai.azure.com/openai/v1", key="azure-key-0123456789", max_tokens=50)
    assert azure.kind() == "azure"
    assert "max_completion_tokens" in azure.body(()) and "max_tokens" not in azure.body(())
    with StandIn() as server:  # the host cannot be Azure's here: the provider is given
        wired = msgspec.structs.replace(azure, base_url=server.url + "/openai/v1", provider="azure")
        reply(wired)
        sent = server.received[-1]
    assert sent.headers.get("api-key") == "azure-key-0123456789"
    assert "authorization" not in sent.headers
    assert sent.json["max_completion_tokens"] == 50 and "max_tokens" not in sent.json


@pytest.mark.parametrize("url", ["https://shop.openai.azure.com", "https://shop.openai.azure.com/", "https://shop.openai.azure.com/openai/"])
def test_a_bare_azure_resource_is_refused_with_the_fix(url: str) -> None:
    with pytest.raises(UrlProblem, match="give https://shop.openai.azure.com/openai/v1"):
        OpenAiModel("gpt-4o", url)
    OpenAiModel("gpt-4o", "https://shop.openai.azure.com/openai/deployments/gpt-4o?api-version=2024-10-21")


def test_convy_refuses_a_bare_azure_resource_in_models_py(tmp_path: Path) -> None:
    (tmp_path / "agents").mkdir()
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "agents" / "echo.py").write_text("from convy.fakes import Echo\nagent = Echo()\n")
    (tmp_path / "models.py").write_text(
        "from convy import Models, OpenAiModel\nmodels = Models(user=OpenAiModel('gpt-4o', 'https://shop.openai.azure.com/'))\n"
    )
    (tmp_path / "scenarios" / "s.yaml").write_text("user: You want a refund.\njudge:\n  - check: {said: 'x'}\n")
    done = subprocess.run(
        [sys.executable, "-m", "convy", "run", "echo"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "models.py" in done.stderr and "/openai/v1" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_judges_answer_cut_at_its_token_limit_says_so() -> None:
    cut = {"content": '{"evidence": "You said: hello", "reas', "finish_reason": "length"}
    with StandIn(reply=lambda request: cut) as server, pytest.raises(ModelFailure, match="raise max_tokens in models.py"):
        asyncio.run(ChatJudge(OpenAiModel("m", server.url + "/v1")).ruling(("The agent echoes.",), TRANSCRIPT))
