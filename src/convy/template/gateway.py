"""The model gateway this project talks to, set in .env: any OpenAI-compatible server.

models.py makes the simulated user's model and the judge on it, and agents/assistant.py an LLM
agent. What can be set, and how each setting is read, is in gateway_settings.py; .env.example
lists them all. With no server or no model name, a part is absent, and convy plays only what
needs no model.

Reading the settings takes pydantic-settings, which costs about a fifth of a second to load.
With no .env here and none of the settings in the environment there is nothing to read and
every part is absent, so ``Gateway`` says so without loading it: the offline demo starts at
once. Once anything is set, every setting is read (and checked) as gateway_settings.py says.

The .env read is the one beside this file, the project's, wherever convy or pytest was started.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from convy import Absent, OpenAiModel

if TYPE_CHECKING:
    from gateway_settings import GatewaySettings

DOTENV = Path(__file__).resolve().with_name(".env")  # the project's .env, not the current folder's

# The variables GatewaySettings reads, by its field names; pydantic-settings matches them in any case.
SETTINGS = frozenset(
    {
        "gateway_url", "gateway_key", "openai_base_url", "openai_api_key", "gateway_stream", "gateway_provider",
        "user_model", "judge_model", "agent_model", "user_effort", "judge_effort", "agent_effort",
    }
)


class Gateway:
    """The gateway set in .env or the environment, and the model of each part on it."""

    def __init__(self) -> None:
        self.settings: GatewaySettings | None = None
        if DOTENV.exists() or any(name.lower() in SETTINGS for name in os.environ):
            from gateway_settings import GatewaySettings

            self.settings = GatewaySettings()

    def model(self, part: Literal["user", "judge", "agent"]) -> OpenAiModel | Absent:
        """The model of ``part`` (USER_MODEL, JUDGE_MODEL or AGENT_MODEL), or why there is none."""
        if self.settings is None:  # nothing set: no server, as GatewaySettings would say too
            return Absent(f"set GATEWAY_URL, GATEWAY_KEY and {part.upper()}_MODEL in .env (see .env.example)")
        return self.settings.model(part)
