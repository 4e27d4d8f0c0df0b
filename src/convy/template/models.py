"""The models that play the simulated user and judge the claims of this project's scenarios.

A scenario with a ``user:`` needs the user's model; a claim in ``judge:`` that is not a ``check:``
needs the judge's. While a model is ``Absent``, ``convy run`` skips the scenarios that need it,
says why, and still plays the fully scripted scenarios judged by checks alone.
"""

from convy.model import Absent, Models

# The next version of this file wires a real OpenAI-compatible gateway (OpenRouter, OpenAI, a
# local server...) from the settings in .env: copy .env.example to .env and fill it in.
models = Models(
    user=Absent(reason="set GATEWAY_URL, GATEWAY_KEY and USER_MODEL in .env"),
    judge=Absent(reason="set GATEWAY_URL, GATEWAY_KEY and JUDGE_MODEL in .env"),
)
