"""The model gateway this project talks to, read from .env: any OpenAI-compatible server.

models.py makes the simulated user's model and the judge from it, and agents/assistant.py an
LLM agent. With GATEWAY_URL, GATEWAY_KEY and the model names left empty, they are absent, and
convy plays only what needs no model.
"""

from decimal import Decimal

from pydantic import SecretStr

from convy import Absent, Env, OpenAiModel, Price, Prices


class Gateway(Env):
    """GATEWAY_URL, GATEWAY_KEY, and the model for each part, from .env or the environment."""

    gateway_url: str = ""
    gateway_key: SecretStr = SecretStr("")
    user_model: str = ""
    judge_model: str = ""
    agent_model: str = ""

    def model(self, name: str, setting: str) -> OpenAiModel | Absent:
        """The model ``name`` on the gateway, or why there is none (``setting`` names its variable)."""
        if not (self.gateway_url and self.gateway_key.get_secret_value() and name):
            return Absent(f"set GATEWAY_URL, GATEWAY_KEY and {setting} in .env (see .env.example)")
        return OpenAiModel(
            name,
            self.gateway_url,
            self.gateway_key,
            temperature=0.2,
            max_tokens=600,
            # Prices in US dollars per million tokens, for gateways that do not report a cost
            # (OpenRouter does). A model missing here is counted as unpriced, never as free.
            prices=Prices({"gpt-4o-mini": Price(Decimal("0.15"), Decimal("0.60"), Decimal("0.075"))}),
        )
