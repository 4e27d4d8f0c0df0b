"""Who made a model, guessed from its name and where it is served: for the report to name a judge
that may favour an agent built on the same provider's model (judges are known to rate their own
family's answers higher).

``Made`` is a model's name and base URL; ``provider`` reads, in order: a maker named as a
segment of the name (``openai/gpt-4o``, ``anthropic/claude-3-5-sonnet``, ``meta-llama/...``),
then the model family the last segment starts with (``gpt-``, ``o3``, ``claude``, ``gemini``,
``llama``, ``mistral``, ``grok``, ``deepseek``, ``qwen``, ``command``), then the service's host
(``api.openai.com``, ``api.anthropic.com``, ``generativelanguage.googleapis.com``, ...). A
router's host (OpenRouter, a LiteLLM proxy, 127.0.0.1) says nothing: "" when none of them is
known. Used where the models enter a run (``Project.spec``), and kept in ``run.json``.
"""

from __future__ import annotations

import sys
from typing import Any
from urllib.parse import urlsplit

import msgspec

# A maker as a name's segment may spell it: "openai/gpt-4o", "vertex_ai/gemini-pro".
_SEGMENTS = {
    "openai": "openai",
    "azure": "openai",
    "anthropic": "anthropic",
    "google": "google",
    "gemini": "google",
    "vertex_ai": "google",
    "meta": "meta",
    "meta-llama": "meta",
    "mistral": "mistral",
    "mistralai": "mistral",
    "deepseek": "deepseek",
    "deepseek-ai": "deepseek",
    "x-ai": "xai",
    "xai": "xai",
    "cohere": "cohere",
    "qwen": "alibaba",
}
# The families a model's own name starts with, longest first where one begins another.
_FAMILIES = (
    ("chatgpt", "openai"),
    ("gpt-", "openai"),
    ("gpt4", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("claude", "anthropic"),
    ("gemini", "google"),
    ("gemma", "google"),
    ("llama", "meta"),
    ("codestral", "mistral"),
    ("ministral", "mistral"),
    ("magistral", "mistral"),
    ("mistral", "mistral"),
    ("mixtral", "mistral"),
    ("deepseek", "deepseek"),
    ("grok", "xai"),
    ("command", "cohere"),
    ("qwen", "alibaba"),
)
_HOSTS = (
    ("openai.com", "openai"),
    ("openai.azure.com", "openai"),
    ("anthropic.com", "anthropic"),
    ("googleapis.com", "google"),
    ("mistral.ai", "mistral"),
    ("deepseek.com", "deepseek"),
    ("x.ai", "xai"),
    ("cohere.com", "cohere"),
    ("cohere.ai", "cohere"),
)


class Made(msgspec.Struct, frozen=True):
    """A model known by ``name`` (may be "") on the service at ``url`` (may be "")."""

    name: str = ""
    url: str = ""

    def provider(self) -> str:
        """The model's provider (``openai``, ``anthropic``, ``google``, ...), or "" when neither
        its name nor its host says."""
        segments = [segment for segment in self.name.lower().split("/") if segment]
        for segment in segments[:-1]:
            if segment in _SEGMENTS:
                return _SEGMENTS[segment]
        last = segments[-1] if segments else ""
        for start, maker in _FAMILIES:
            if last.startswith(start):
                return maker
        try:
            host = (urlsplit(self.url).hostname or "").lower()
        except ValueError:
            return ""
        for end, maker in _HOSTS:
            if host == end or host.endswith("." + end):
                return maker
        return ""


def judge_made(judge: Any) -> Made:
    """What a judge is made of: a ``ChatJudge``'s model (its name and base URL when it is an
    ``OpenAiModel``), or the judge's own name."""
    from convy.judge import ChatJudge
    from convy.model import OpenAiModel

    match judge:
        case ChatJudge(model=OpenAiModel(name=name, base_url=url)):
            return Made(name, url)
        case ChatJudge(model=model):
            return Made(str(model.name))
        case _:
            return Made(str(judge.name))


def agent_made(agent: Any) -> Made:
    """What the agent runs on, as far as it says: a ``ChatAgent``'s model and URL, a
    ``JsonAgent``'s URL, or any agent's own ``model`` attribute when it is a text (a project's
    agent may declare one, ``model = "gpt-4o-mini"``). Nothing when it says nothing."""
    # Only an agent of convy.httpagents can be one of its agents: a run that never loaded it (a project
    # of fakes, its own agent classes) does not load it here either.
    http: Any = sys.modules.get("convy.httpagents")
    if http is not None:
        match agent:
            case http.ChatAgent(model=model, endpoint=endpoint):
                return Made(model, endpoint.url)
            case http.JsonAgent(endpoint=endpoint):
                return Made(_declared(agent), endpoint.url)
    return Made(_declared(agent))


def _declared(agent: Any) -> str:
    # The project's own object, read where it enters: only a text is a model's name.
    model = getattr(agent, "model", None)
    return model if type(model) is str else ""
