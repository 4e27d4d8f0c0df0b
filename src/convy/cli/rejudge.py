"""``convy rejudge``: a finished run's transcripts judged again, into a run of their own."""

from __future__ import annotations

import os

import msgspec

from convy.cli.console import Shown
from convy.cli.exits import Cures
from convy.cli.outputs import Outputs
from convy.cli.parser import Budgeted
from convy.cli.progress import Recorded
from convy.collector import OtlpEndpoint
from convy.loaded import Loaded
from convy.project import Project
from convy.scenarios import Matching
from convy.terminal import Inert


class RejudgeCommand(msgspec.Struct, frozen=True):
    """``convy rejudge RUN``: a new run whose attempts are RUN's recorded dialogues decided again
    by the project's judge (or ``--judge``'s) against the scenarios' current claims; the agent and
    the simulated user are never asked (``rejudge.py``)."""

    project: Project
    run_id: str
    judge: str | None = None
    patterns: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    trust: float | None = None
    fail_under: float | None = None
    max_not_judged: float | None = None
    budget: Budgeted = Budgeted()
    judge_repeats: int | None = None
    outputs: Outputs = Outputs()  # --junit and --summary of the new run
    fail_on_skip: bool | None = None

    def run(self, shown: Shown, errors: Shown) -> int:
        from convy.rejudge import JudgeChoice, Rejudge, Rejudging

        collector = OtlpEndpoint.environ(os.environ)  # where traces go (issue 30): a bad setting stops here

        given = {
            "judge_repeats": self.judge_repeats,
            "fail_under": self.fail_under,
            "fail_on_skip": self.fail_on_skip,
            "max_not_judged": self.max_not_judged,  # kept in the new run's rule, as convy run keeps it
        }
        changes = {name: value for name, value in given.items() if value is not None}
        settings = self.budget.over(self.project.settings(), changes)
        unjudged = settings.max_not_judged if self.max_not_judged is None else self.max_not_judged
        rejudge = Rejudge(self.project, self.project.found(self.run_id, "rejudge"), Matching(self.patterns, self.tags), self.trust)
        source, dialogues = rejudge.origin()
        loaded = Loaded(self.project, source.agent)
        models = loaded.models()
        judge = JudgeChoice(self.judge).judge(models, loaded.judges())
        secrets = loaded.secrets(judge, models)
        spec = secrets.kept(rejudge.spec(judge, settings))
        shown.line(
            f"re-judging the dialogues of run {Inert(dialogues.folder.name).line()} with {Inert(judge.name).line()}: "
            "no request to the agent or the simulated user"
        )
        bench = Rejudging(dialogues, judge, spec.limits, settings.budget(), spec.judging)
        code = Recorded(
            self.project, spec, bench, shown, errors, None, secrets, max_not_judged=unjudged,
            live=settings.live(self.project.folder, spec.id),
            # a judge that never answers: the fix, in the words of where its name was given
            cures=Cures(self.project.folder, spec.agent, {"judge": judge}, "" if self.judge is None else f"--judge {self.judge}"),
            collector=collector,
        ).played()
        return self.outputs.played(self.project, (spec.id,), code, shown, errors)
