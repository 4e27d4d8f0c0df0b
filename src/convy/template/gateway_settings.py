"""The gateway's settings, read from .env and the environment with pydantic-settings.

The server is GATEWAY_URL with GATEWAY_KEY; without them, OPENAI_BASE_URL and OPENAI_API_KEY, as
the OpenAI SDK reads them (OpenAI's own server when only the key is set). A server on your machine
(Ollama, vLLM, llama.cpp) needs no key: none is sent. How to ask is set here too: GATEWAY_STREAM,
GATEWAY_PROVIDER and each part's reasoning effort (USER_EFFORT, JUDGE_EFFORT, AGENT_EFFORT). With
no server or no model name, a part is absent, and convy plays only what needs no model.

gateway.py reads these only when some are set: see there why. The .env read is the one beside
this file, the project's, wherever convy or pytest was started.
"""

from decimal import Decimal
from pathlib import Path
from typing import Literal

from pydantic import SecretStr
from pydantic_settings import SettingsConfigDict

from convy import Absent, Env, OpenAiModel, Price, Prices

OPENAI = "https://api.openai.com/v1"  # where the OpenAI SDK sends OPENAI_API_KEY by default

Effort = Literal["none", "minimal", "low", "medium", "high"]
Part = Literal["user", "judge", "agent"]


class GatewaySettings(Env):
    """The gateway's server, key and settings, and the model for each part, from .env or the
    environment; a setting left empty (``GATEWAY_EFFORT=``) is as if it were not there."""

    model_config = SettingsConfigDict(env_file=Path(__file__).resolve().with_name(".env"), env_ignore_empty=True)

    gateway_url: str = ""
    gateway_key: SecretStr = SecretStr("")
    openai_base_url: str = ""
    openai_api_key: SecretStr = SecretStr("")
    gateway_stream: bool = False
    gateway_provider: Literal["openai", "openrouter", "compatible"] | None = None
    user_model: str = ""
    judge_model: str = ""
    agent_model: str = ""
    user_effort: Effort | None = None
    judge_effort: Effort | None = None
    agent_effort: Effort | None = None

    def url(self) -> str:
        """GATEWAY_URL; else OPENAI_BASE_URL; else OpenAI's server when only OPENAI_API_KEY is set."""
        if self.gateway_url:
            return self.gateway_url
        if self.openai_base_url:
            return self.openai_base_url
        return OPENAI if self.openai_api_key.get_secret_value() else ""

    def key(self) -> SecretStr | None:
        """GATEWAY_KEY; else OPENAI_API_KEY, but only for the server that key is for (OPENAI_BASE_URL,
        or OpenAI's), so it never goes to another GATEWAY_URL; None when there is no key to send."""
        if self.gateway_key.get_secret_value():
            return self.gateway_key
        meant = (self.openai_base_url or OPENAI).rstrip("/")
        if self.openai_api_key.get_secret_value() and self.url().rstrip("/") == meant:
            return self.openai_api_key
        return None

    def model(self, part: Part) -> OpenAiModel | Absent:
        """The model of ``part`` on the gateway (USER_MODEL, JUDGE_MODEL or AGENT_MODEL), or why there is none."""
        match part:
            case "user":
                name, effort = self.user_model, self.user_effort
            case "judge":
                name, effort = self.judge_model, self.judge_effort
            case "agent":
                name, effort = self.agent_model, self.agent_effort
        setting = f"{part.upper()}_MODEL"
        if not self.url():
            return Absent(f"set GATEWAY_URL, GATEWAY_KEY and {setting} in .env (see .env.example)")
        if not name:
            return Absent(f"set {setting} in .env (see .env.example)")
        return OpenAiModel(
            name,
            self.url(),
            self.key(),
            temperature=0.2,
            max_tokens=600,
            effort=effort,
            stream=self.gateway_stream,
            provider=self.gateway_provider,
            # Prices in US dollars per million tokens, for gateways that do not report a cost
            # (OpenRouter does). A model missing here is counted as unpriced, never as free.
            prices=Prices({"gpt-4o-mini": Price(Decimal("0.15"), Decimal("0.60"), Decimal("0.075"))}),
        )
