"""The exit code a command ends with, and what it says of why: the order in which codes win
(``Worst``), a run against its pass rule (``Ruled``), and the likely fix for a participant that
never answered (``Cures``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import msgspec

from convy.holders import Environment, Holders
from convy.passing import RunVerdict
from convy.terminal import Inert
from convy.vital import DeadService, Unanswered

# Why an attempt's task ends cancelled with no Ctrl+C, no SIGTERM and no time limit: the project's
# own code cancelled the task it runs in, which convy cannot tell from its own stop.
CANCELLED = "cancelled from within, as code that cancels its own task does (asyncio.current_task().cancel())"


class Ruled(msgspec.Struct, frozen=True):
    """What the command says of a run against its pass rule (``passing.RunVerdict``, the verdict
    JUnit, the summary, the pages and ``pytest --convy`` give too), and the codes that follow:
    7 when no attempt was judged, 3 when a scenario fails the rule, 8 when a scenario was skipped
    and the rule fails a run for it. ``why`` says why nothing was judged, when nothing was."""

    verdict: RunVerdict
    agent: str
    why: str = ""
    partial: str = ""  # for a run that kept fewer attempts than it planned: how many, said with its verdict

    MOST: ClassVar[int] = 5  # scenarios named in a line

    def said(self) -> tuple[list[str], tuple[int, ...]]:
        verdict, agent = self.verdict, Inert(self.agent).line()
        rule = verdict.rule
        lines: list[str] = []
        codes: list[int] = []
        if not verdict.tested():
            lines.append(f"{agent}: nothing was tested: {self.why or 'no attempt was judged'}")
            codes.append(7)
        failing = verdict.failing()
        mean = verdict.mean()
        if verdict.below_mean() and mean is not None and rule.fail_under is not None:
            lines.append(f"{agent}: pass rate {mean:.1%} is below fail_under {rule.fail_under:.1%}")
        if failing:
            bar = (
                "every judged attempt passes; set fail_under (per run or per scenario) to accept less"
                if rule.fail_under is None
                else f"the mean pass rate at least fail_under {rule.fail_under:.1%}"
            )
            lines.append(
                f"{agent}: {len(failing)} of {len(verdict.tallies)} scenario{'s' if len(verdict.tallies) != 1 else ''} "
                f"failed the pass rule ({bar}):"
            )
            lines += [f"  ✗ {Inert(one).line()}: {verdict.why(one)}" for one in failing[: self.MOST]]
            if len(failing) > self.MOST:
                lines.append(f"  and {len(failing) - self.MOST} more (see the report)")
            codes.append(3)
        elif verdict.tested():
            accepted = [one for one in verdict.tallies if verdict.accepted(one)]
            held = "every scenario passed every judged attempt"
            if rule.fail_under is not None and mean is not None:
                held = f"pass rate {mean:.1%}, at or above fail_under {rule.fail_under:.1%}"
            elif accepted:
                held = "every scenario at or above its fail_under"
            lines.append(f"{agent}: passed the pass rule{self.partial}: {held}")
            if accepted:
                named = ", ".join(
                    f"{Inert(one).line()} ({verdict.tallies[one].passed} of {verdict.tallies[one].judged})" for one in accepted[: self.MOST]
                )
                more = f" and {len(accepted) - self.MOST} more" if len(accepted) > self.MOST else ""
                lines.append(f"  accepted short of every attempt, as the project's fail_under allows: {named}{more}")
        if verdict.skipped and rule.fail_on_skip:
            lines.append(
                f"{agent}: {verdict.skipped} scenario{'s' if verdict.skipped != 1 else ''} skipped, and fail_on_skip "
                "(--fail-on-skip) fails a run that skipped any"
            )
            codes.append(8)
        return lines, tuple(codes)


class Cures(msgspec.Struct, frozen=True):
    """What most likely mends each participant that never answered (``vital.DeadService``), in the
    project's words: the variable that holds its key, its URL or its model's name — found by its
    value in ``.env`` and the environment, and named, never shown — else the file that gives it.
    ``parts`` are the participants as the project made them, by who they are: what holds the keys."""

    folder: Path
    agent: str
    parts: dict[str, Any] = {}
    judge_named: str = ""  # where the judge's model was named, when not in the project (``--judge NAME``)

    def lines(self, dead: DeadService) -> list[str]:
        """One line per participant: who, what its service answered, and the likely fix."""
        return [
            Inert(f"convy: {one.participant(self.agent)} {one.answered()}: {self.cure(one)}").line()
            for one in dead.unanswered
        ]

    def cure(self, one: Unanswered) -> str:
        first = one.first
        given = f"agents/{self.agent}.py" if one.who == "agent" else "models.py"
        base = first.url.removesuffix("/chat/completions")
        if not first.connected:
            if one.who == "agent":
                return f"is the agent's server running at {base}?{self._set(self._url(base), given)}"
            return f"is the server at {base} running, and is that its address?{self._set(self._url(base), given)}"
        if first.plain:
            plain = "http://" + base.removeprefix("https://")
            return f"the server there speaks plain HTTP: is its URL {plain}?{self._set(self._url(base), given)}"
        model = first.model
        if first.unknown_model():
            if one.who == "judge" and self.judge_named:
                return f"is the model name right ({Inert(self.judge_named).line()})?"
            named = self.environment.named(lambda value: value == model)
            return f"is the model name right ({named[0] if named else f'{Inert(model).line()!r}, in {given}'})?"
        unversioned = re.search(r"/v\d+(/|$)", urlsplit(base).path) is None
        match first.status:
            case 401 | 403:
                keys = self._key(one.who)
                held = f"check {keys[0]}" if keys else f"check the key {given} gives it"
                return f"the key was refused: {held}"
            case 404 if first.url.endswith("/chat/completions") and unversioned:
                return f"the URL has no /v1: is it {base}/v1?{self._set(self._url(base), given)}"
            case 405 | 501 if one.who == "agent":
                return (
                    "something answers there, but not the agent's endpoint (it takes no POST: a static file server?): "
                    f"is the agent's server running, and is the URL right?{self._set(self._url(base), given)}"
                )
            case 405 | 501:
                return (
                    "something answers there, but not a Chat Completions service (it takes no POST): is that the "
                    f"service's base URL?{self._set(self._url(base), given)}"
                )
            case _:
                return f"is the URL right?{self._set(self._url(base), given)}"

    @property
    def environment(self) -> Environment:
        return Environment(self.folder)

    def _set(self, names: tuple[str, ...], given: str) -> str:
        return f" ({names[0]})" if names else f" (given in {given})"

    def _url(self, base: str) -> tuple[str, ...]:
        """The variables whose value is the start of ``base``, the longest first."""

        def start(value: str) -> bool:
            bare = value.rstrip("/")
            return bare.startswith(("http://", "https://")) and (base == bare or base.startswith(bare + "/"))

        return self.environment.named(start)

    def _key(self, who: str) -> tuple[str, ...]:
        """The variables whose value is a secret the participant holds (its key)."""
        held = set(Holders((self.parts.get(who),)).secrets().values)
        return self.environment.named(lambda value: len(value) >= 8 and value in held)


class Terminated(Exception):
    """SIGTERM stopped the run: it stops as on Ctrl+C, with its own exit code."""


class Worst(msgspec.Struct, frozen=True):
    """The exit code of several runs, or of a run and what came after it: the first of ``ORDER``
    among theirs (the module's docstring says why this order); a code it does not list would
    still fail the command."""

    codes: tuple[int, ...]

    ORDER: ClassVar[tuple[int, ...]] = (130, 143, 2, 6, 1, 5, 7, 9, 8, 4, 3)

    def code(self) -> int:
        for code in self.ORDER:
            if code in self.codes:
                return code
        return max(self.codes, default=0)
