"""The models that play the simulated user and judge the claims of this project's scenarios.

A scenario with a ``user:`` needs the user's model; a claim in ``judge:`` that is not a ``check:``
needs the judge. While one is ``Absent``, ``convy run`` skips the scenarios that need it, says
why, and still plays the fully scripted scenarios judged by checks alone. Fill in .env (copy
.env.example) to play them all.
"""

from gateway import Gateway

from convy import ChatJudge, Models, OpenAiModel

gateway = Gateway()
user = gateway.model("user")
judge = gateway.model("judge")

match judge:
    case OpenAiModel():
        models = Models(user=user, judge=ChatJudge(judge))
    case _:
        models = Models(user=user, judge=judge)
