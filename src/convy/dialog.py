"""The dialogue and its judgement: the simulated user, the judge and what they decide.

``SimulatedUser`` speaks to the agent on a model, guided by a simulator prompt whose ``{{ slots }}``
are filled from the scenario. ``Judge`` decides a scenario's claims from a ``Transcript``;
``ChatJudge`` asks a model about every claim at once, one request each, the reason before the
decision. ``Checked`` stands between any judge and the run: it hands the judge only what was said
and turns an error, or an answer that does not fit the claims, into ``ModelFailure``.

An attempt ends in one of three results: ``Verdict`` (every claim decided), ``Failed`` (the agent
failed, so nothing was judged) or ``NoVerdict`` (a model failed, so the judge's claims cannot be
decided; the checks decided by code still are, and one that failed fails the attempt).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import operator
import re
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Protocol, TypeVar

import msgspec

from convy.agent import Answer, Call, Message, NotReported, NoUsage, Reported, Usage
from convy.busy import Busy, Places
from convy.files import Shipped
from convy.model import Absent, Contained, Model, ModelFailure, Reply, Said, StillBusy
from convy.problems import CutReply, Outside
from convy.slots import Slotted, nearest

if TYPE_CHECKING:
    from convy.conduct import Instructions

STOP = "###STOP###"

# A slot written with one brace, as Python's format writes it (``{instructions}``), not within two.
_ONE_BRACE = re.compile(r"(?<!\{)\{\s*(\w+)\s*\}(?!\})")
# Instructions that are a file's name alone: no space, ending in a text file's suffix.
_FILE_NAME = re.compile(r"[^\s]{1,200}\.(?:md|txt|prompt|jinja|j2|markdown)", re.IGNORECASE)
# A template engine's tag (Jinja's ``{% if persona %}``): never read by convy.
_TAG = re.compile(r"\{%[^\n]{0,40}?%\}|\{%")


class Graded(msgspec.Struct, frozen=True):
    """A claim decided on a scale of grades, worst first; ``pass_`` is the worst that passes."""

    claim: str
    grades: tuple[str, ...]
    pass_: str = msgspec.field(name="pass")


class Confidence(msgspec.Struct, frozen=True, gc=False, tag="confidence"):
    """How sure the judge was of a decision, from 0 to 1."""

    value: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.value <= 1.0:
            raise ValueError("confidence must be between 0 and 1")


class NoConfidence(msgspec.Struct, frozen=True, gc=False, tag="no_confidence"):
    """A decision with no confidence given: decided by code, or by a judge that does not say."""


class Grade(msgspec.Struct, frozen=True, gc=False, tag="grade"):
    """The grade a judge gave a graded claim."""

    name: str


class NoGrade(msgspec.Struct, frozen=True, gc=False, tag="no_grade"):
    """The decision of a claim that has no grades."""


# Curly, angled and low quotation marks, and the backtick and acute accent judges write for an
# apostrophe, each read as the plain mark: a quote is found whichever its model wrote.
_MARKS = str.maketrans(
    {
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "`": "'",
        "\u00b4": "'",
    }
)


def plain(text: str) -> str:
    """``text`` with its quotation marks made plain and every run of whitespace one space, trimmed:
    what a quote and a dialogue are compared as. Text of ASCII without a backtick has no mark to
    make plain, and is not translated: ``str.translate`` looks each character up in ``_MARKS``, some
    150 ns apiece (6 us of a simulated user's "said again" fault of 37 characters, on every attempt
    of a user that repeats itself)."""
    if not text.isascii() or "`" in text:
        text = text.translate(_MARKS)
    # str.split() with no separator splits at the characters ``\s`` matches (str.isspace) and
    # drops the empty ends: the same as replacing each run by one space and trimming, which a
    # regular expression did at four times the cost (1.5 us for a message of 37 characters).
    return " ".join(text.split())


# Where a judge left words out of a quote: three dots or an ellipsis, with the spaces around them.
_ELIDED = re.compile(r"\s*(?:\.\.\.|\u2026)\s*")


def pieces(quote: str) -> tuple[str, ...]:
    """The pieces of ``quote`` (made ``plain``) a dialogue must hold in this order: one, or several
    where the judge left words out with "..." or "…"; none for a quote with no words."""
    return tuple(piece for piece in _ELIDED.split(plain(quote)) if piece)


def holds(text: str, wanted: tuple[str, ...]) -> bool:
    """Whether ``text`` (already ``plain``) holds every piece of ``wanted``, in order, none
    overlapping the one before it; case counts."""
    if not wanted:
        return False
    at = 0
    for piece in wanted:
        found = text.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


# Why a quote found in the dialogue is still no evidence for a claim about one speaker
# (``Quote.weakness``): "short", fewer than ``Quote.WORDS`` words and not a whole message;
# "fragment", it cuts a word in two; "speaker", only the other speaker said it.
Weakness = Literal["", "short", "fragment", "speaker"]

# A word as a quote's words are counted: letters or digits, with an apostrophe inside ("don't").
_WORD = re.compile(r"\w+(?:['\u2019]\w+)*")


class Quote(msgspec.Struct, frozen=True):
    """A judge's quote as evidence for a claim about ``speaker``'s words (the agent's: every claim
    a judge is asked is about the agent). It is sound when it holds at least ``WORDS`` whole words,
    or the whole of a shorter message, of one message by that speaker: "I", ".", a piece of a word
    or the user's own words prove nothing about what the agent did."""

    text: str
    speaker: Literal["agent", "user"] = "agent"

    WORDS: ClassVar[int] = 3

    def evidence(self, transcript: Transcript) -> Evidence:
        found = transcript.quotes(self.text)
        return Evidence(self.text, found, self.weakness(transcript) if found else "")

    def weakness(self, transcript: Transcript) -> Weakness:
        """Why the quote is no evidence though the dialogue holds it, or ``""`` when it is sound:
        the best any one of the speaker's messages allows."""
        wanted = pieces(self.text)
        words = [word for piece in wanted for word in _WORD.findall(piece)]
        best: Weakness = "speaker"
        for turn in transcript.turns:
            own = turn.answer.text if self.speaker == "agent" else turn.message
            text = plain(own)
            if not holds(text, wanted):
                continue
            if not _whole(text, wanted):
                best = "fragment" if best == "speaker" else best
                continue
            if words and (len(words) >= self.WORDS or words == _WORD.findall(text)):
                return ""
            best = "short"
        return best


def _whole(text: str, wanted: tuple[str, ...]) -> bool:
    """Whether ``text`` holds the pieces of ``wanted`` in order, each starting and ending where a
    word does (a piece's edge that is not a letter or digit needs no boundary)."""
    at = 0
    for piece in wanted:
        start = r"(?<!\w)" if piece[:1].isalnum() or piece[:1] == "_" else ""
        end = r"(?!\w)" if piece[-1:].isalnum() or piece[-1:] == "_" else ""
        found = re.compile(start + re.escape(piece) + end).search(text, at)
        if found is None:
            return False
        at = found.end()
    return True


class Evidence(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """The words of the dialogue a judge said its decision rests on, whether they are there
    (``Transcript.quotes``: compared with whitespace and quotation marks made plain), and, when
    they are, why they are still no evidence (``Quote.weakness``; ``""``, sound). Runs kept before
    ``weak`` was known read it as ``""``."""

    quote: str
    found: bool
    weak: Weakness = ""

    def sound(self) -> bool:
        return self.found and not self.weak

    def said(self) -> str:
        """What is wrong with it, in words; ``""`` when it is sound."""
        if not self.found:
            return "not in the dialogue"
        match self.weak:
            case "short":
                return f"too short: fewer than {Quote.WORDS} whole words, and not a whole message"
            case "fragment":
                return "a piece of a word, not whole words"
            case "speaker":
                return "the other speaker's words, not the agent's"
            case "":
                return ""


class Vote(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """One decision of a claim among several (a judge asked again, or a panel's judges): who
    decided, and what."""

    judge: str
    held: bool
    reason: str = ""
    confidence: Confidence | NoConfidence = NoConfidence()
    grade: Grade | NoGrade = NoGrade()
    evidence: Evidence | None = None


class Claim(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """One claim decided: whether it held, why, and how sure the decider was.

    ``evidence`` is what the judge quoted from the dialogue (none for a check, or a judge that
    quoted nothing). ``votes`` are the decisions it was made from when there were several (the
    judge asked ``judge_repeats`` times, or a panel): empty for one decision.
    """

    claim: str
    held: bool
    reason: str
    confidence: Confidence | NoConfidence = NoConfidence()
    grade: Grade | NoGrade = NoGrade()
    by: Literal["judge", "code"] = "judge"
    evidence: Evidence | None = None
    votes: tuple[Vote, ...] = ()
    # Why the decision is not trusted whatever its confidence: "split", its votes were as many for
    # as against, so nothing was decided; "unquoted", the run requires evidence (``evidence =
    # "require"``) and none of the judges agreeing quoted words that are in the dialogue;
    # "unseen", a tool check on a dialogue none of whose replies held the agent's ``calls`` path
    # (``Answer.unheld``): no tool call could be seen, so nothing is known of the agent's.
    doubt: Literal["", "split", "unquoted", "unseen"] = ""

    def trusted(self, trust: float) -> bool:
        if self.doubt:
            return False
        match self.confidence:
            case Confidence(value=value):
                return value >= trust
            case NoConfidence():
                return True


class Verdict(msgspec.Struct, frozen=True, gc=False, tag="verdict"):
    """Every claim of the scenario decided, in the scenario's order."""

    claims: tuple[Claim, ...]

    def status(self, trust: float) -> Literal["passed", "failed", "not_trusted"]:
        """Failed when a trusted claim failed; passed only when every claim is trusted and held."""
        if any(not claim.held and claim.trusted(trust) for claim in self.claims):
            return "failed"
        if all(claim.held and claim.trusted(trust) for claim in self.claims):
            return "passed"
        return "not_trusted"


class Failed(msgspec.Struct, frozen=True, gc=False, tag="failed", omit_defaults=True):
    """The agent failed: the attempt counts as failed and the judge was not asked.

    ``message`` is what the user had just said when the agent failed ("" while opening).
    """

    reason: str
    message: str = ""


class NoVerdict(msgspec.Struct, frozen=True, gc=False, tag="no_verdict", omit_defaults=True):
    """No verdict, for a reason that is not the agent's: a model failed, or a service stayed busy.

    ``checks`` are the scenario's checks that code could still decide, in the scenario's order:
    all of them on the whole dialogue when only the judge failed, and when the dialogue was cut
    short only those more turns could not change (a tool called that must not be, a pattern said
    that must not be; a tool called or a pattern said that must be). A check that failed is a
    certain failure, whatever the models did: the attempt is then failed, not left out of the pass
    rate. (Attempts kept before checks were recorded here read back with none.)

    ``service`` says that the model's service failed the request (a ``ServiceFailure``: a
    connection, a timeout, an error status), not the model its answer: recorded where the failure
    was caught, so an attempt's cause never rests on its text. (Attempts kept before it read back
    as the model's.)
    """

    who: Literal["user", "judge", "busy"]
    reason: str
    checks: tuple[Claim, ...] = ()
    service: bool = False

    def status(self) -> Literal["failed", "not_judged"]:
        """Failed when a check decided by code failed; otherwise not judged."""
        return "failed" if any(not claim.held and not claim.doubt for claim in self.checks) else "not_judged"


# What a simulated user's checks look for (issue 11): decided by code on every dialogue with a
# simulated user, or, opted in (``user_checks``), by a model.
UserCheck = Literal[
    "empty",  # a message with nothing in it
    "repeated",  # the same message twice in a row
    "leaked",  # a long stretch of its own instructions said to the agent
    "first_turn_stop",  # done before it said anything
    "no_stop",  # the turns ran out and it never said it was done
    "role_swap",  # it spoke as the agent (a model's check)
    "stopped_on_question",  # it stopped while the agent had just asked it something (a model's check)
    "unsupported",  # it said things its instructions do not support (a model's check)
]


class UserFault(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """Something the simulated user did wrong, found by one of its checks: which check, at which
    turn (from 1: the turn its message opened; one past the last turn for how it ended), what
    shows it, and whether code or a model found it."""

    check: UserCheck
    turn: int
    detail: str = ""
    by: Literal["code", "model"] = "code"

    _SAID: ClassVar[dict[str, str]] = {
        "empty": "said nothing at turn {turn}",
        "repeated": "repeated itself at turn {turn}",
        "leaked": "said its instructions at turn {turn}",
        "first_turn_stop": "stopped before it said anything",
        "no_stop": "never said it was done",
        "role_swap": "spoke as the agent at turn {turn}",
        "stopped_on_question": "stopped while the agent was asking it something",
        "unsupported": "said things its instructions do not support at turn {turn}",
    }

    def said(self) -> str:
        """The fault in words, as an attempt not judged for it gives its reason: "the simulated
        user repeated itself at turn 3"."""
        return "the simulated user " + self._SAID[self.check].format(turn=self.turn)


class Unchecked(msgspec.Struct, frozen=True, gc=False):
    """A model-decided check of the simulated user that was not decided, and why (its model
    failed, answered in the wrong shape, or there was no model to ask): nothing is known of it."""

    check: UserCheck
    reason: str


# Why a dialogue stopped: the user was done (or a script ran out), the turns ran out, or one side
# failed or stayed busy.
Stop = Literal["finished", "max_turns", "agent_failed", "time_limit", "model_failed", "agent_busy"]


class Finished(msgspec.Struct, frozen=True):
    """The simulated user's goal is met, or clearly out of reach: the dialogue ends."""


class Turn(msgspec.Struct, frozen=True, gc=False):
    """One exchange: the user's message and the agent's answer, with when each was made.

    Times are seconds from the attempt's start. A scripted message took no model request:
    ``user_seconds`` is 0 and ``user_usage`` is ``NoUsage``.
    """

    message: str
    answer: Answer
    scripted: bool
    user_start: float
    user_seconds: float
    user_usage: Usage | NoUsage
    agent_start: float
    agent_seconds: float


class Transcript(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """The dialogue so far."""

    turns: tuple[Turn, ...] = ()

    def __add__(self, turn: Turn) -> Transcript:
        return Transcript(self.turns + (turn,))

    def said(self) -> Transcript:
        """Only what was said: the same turns without the agent's thoughts and tool calls."""
        replace = msgspec.structs.replace
        return Transcript(tuple([replace(turn, answer=Answer(turn.answer.text, turn.answer.usage)) for turn in self.turns]))

    def fingerprint(self) -> str:
        """What identifies this dialogue whoever judged it: SHA-256 of what each side said, turn by
        turn, and of each tool call the agent made — its name, its arguments (whatever the order of
        their keys) and its result — (the first 32 hex digits). A re-judged run keeps its source's
        dialogues, so their human labels follow them; two dialogues that read alike but called
        different tools are two dialogues, so a label of a ``called`` check is of one of them. A
        dialogue with no tool call has the fingerprint it had before calls were part of it."""
        turns: list[list[Any]] = []
        for turn in self.turns:
            calls = [_called(step) for step in turn.answer.steps if isinstance(step, Call)]
            turns.append([turn.message, turn.answer.text, calls] if calls else [turn.message, turn.answer.text])
        return hashlib.sha256(msgspec.json.encode(turns, order="sorted")).hexdigest()[:32]

    def said_fingerprint(self) -> str:
        """The fingerprint of what was said alone, as it was before tool calls were part of it:
        what labels made then name (``labels.Decided`` lets one match only the attempt it names)."""
        said = msgspec.json.encode([[turn.message, turn.answer.text] for turn in self.turns])
        return hashlib.sha256(said).hexdigest()[:32]

    def called(self) -> bool:
        """Whether the agent called any tool in this dialogue."""
        return any(isinstance(step, Call) for turn in self.turns for step in turn.answer.steps)

    def quotes(self, quote: str) -> bool:
        """Whether ``quote`` is in what was said (by either side, within one message), compared
        with whitespace and quotation marks made plain; an empty quote is not. Where the quote
        leaves words out with "..." or "…", its pieces must be in that one message in order.
        Case counts: a judge quotes, it does not paraphrase."""
        wanted = pieces(quote)
        if not wanted:
            return False
        return any(holds(plain(turn.message), wanted) or holds(plain(turn.answer.text), wanted) for turn in self.turns)

    def text(self) -> str:
        """The dialogue as plain text, one line per speaker, for a model to read."""
        lines: list[str] = []
        for turn in self.turns:
            lines.append(f"USER: {turn.message}")
            lines.append(f"AGENT: {turn.answer.text}")
        return "\n\n".join(lines)


class Prompt(msgspec.Struct, frozen=True):
    """A prompt with ``{{ name }}`` slots, filled from a scenario's values by the rule of
    ``convy.slots`` (``\\{{`` writes a literal ``{{``).

    A filled prompt is at most ``LIMIT`` bytes of UTF-8, as large as a scenario file may be: a
    value used in many slots could otherwise fill gigabytes (a 900 KB file, 20 GB). The size is
    counted before the text is made.
    """

    text: str

    LIMIT: ClassVar[int] = 1024 * 1024

    def slots(self) -> frozenset[str]:
        return Slotted(self.text).slots()

    def size(self, values: dict[str, Any]) -> int:
        """How many bytes the text filled with ``values`` would take, counted without making it
        (a slot with no value counts as empty)."""
        return Slotted(self.text).size(values)

    def missing(self, values: dict[str, Any]) -> str:
        """The slots ``values`` leave without a value (or a stray ``{{``), said, or "" when there
        are none."""
        slotted = Slotted(self.text)
        return slotted.stray() or slotted.missing(values)

    def oversize(self, values: dict[str, Any]) -> str:
        """What is wrong with the size of the text filled with ``values``, or "" when it fits."""
        size = self.size(values)
        if size <= self.LIMIT:
            return ""
        return f"would be {size / self.LIMIT:,.1f} MB, more than {self.LIMIT // 1024 // 1024} MB"

    def unfit(self) -> tuple[str, ...]:
        """What would keep this prompt, as a simulator prompt, from telling the simulated user its
        scenario or how to end, each said with the fix; none when it is sound. Without
        ``{{ instructions }}`` (or ``{{ user }}``) no scenario's ``user:`` would reach the model;
        without ``{{ stop }}`` (or the mark written out) it would never learn the mark that ends a
        dialogue. A slot written with one brace, as Python's ``format`` writes it, and a template
        tag (``{% if %}``) are sent as written: said so."""
        slots = self.slots()
        # A slot misspelt (``{{ instrucions }}``) is said by the scenario's values, with the one meant.
        slots |= {nearest(slot, ("instructions", "user", "stop")) for slot in slots}
        problems: list[str] = []
        known = "its slots are {{ instructions }} (or {{ user }}), {{ stop }} and the scenario's vars"
        if not {"instructions", "user"} & slots:
            single = _ONE_BRACE.search(self.text)
            if single and single.group(1) in ("instructions", "user"):
                problems.append(
                    f"{single.group(0)} is sent as written, so the scenario's user: would never reach the simulated user: "
                    f"a slot has two braces, {{{{ {single.group(1)} }}}}"
                )
            else:
                problems.append(
                    "no {{ instructions }}: the scenario's user: would never reach the simulated user; "
                    f"put {{{{ instructions }}}} where it reads who it is and what it wants ({known})"
                )
        if "stop" not in slots and STOP not in self.text:
            single = next((found for found in _ONE_BRACE.finditer(self.text) if found.group(1) == "stop"), None)
            if single:
                problems.append(f"{single.group(0)} is sent as written: a slot has two braces, {{{{ stop }}}}")
            else:
                problems.append(
                    f"no {{{{ stop }}}}: the simulated user would never learn the mark that ends a dialogue ({STOP}), "
                    "so every dialogue would run to max_turns; tell it, e.g. \"when you are done, reply with {{ stop }}\""
                )
        tag = _TAG.search(self.text)
        if tag:
            problems.append(
                f"{tag.group(0)!r} is sent as written: convy fills {{{{ name }}}} slots only, no {{% if %}} nor {{% for %}}; "
                "write what differs in each scenario's user: or vars"
            )
        return tuple(problems)

    def filled(self, values: dict[str, Any]) -> str:
        """The text with every slot filled; a slot with no value, a stray ``{{``, or a text that
        would be larger than ``LIMIT``, is a ``ValueError`` saying so."""
        missing = self.missing(values)
        if missing:
            raise ValueError(missing)
        oversize = self.oversize(values)
        if oversize:
            raise ValueError(f"the filled text {oversize}")
        return Slotted(self.text).filled(values)


class Spoken(msgspec.Struct, frozen=True):
    """What the simulated user did in its turn, and the tokens its request took."""

    move: Message | Finished
    usage: Usage | NoUsage = NoUsage()


class SimulatedUser(msgspec.Struct, frozen=True, dict=True):
    """A model that plays the user, told who it is by the filled simulator prompt.

    The two messages every request opens with, and its model made ``Contained``, are made once
    and kept beside its fields (``dict=True`` gives it room for them): a run asks this user for
    every simulated turn.
    """

    model: Model
    prompt: str
    # The parts of ``prompt`` its scenario wrote for it (filled instructions, vars' values): its to
    # say, so its leak check excuses them.
    own: tuple[str, ...] = ()

    @functools.cached_property
    def instructions(self) -> Instructions:
        """The prompt it was told, as its leak check looks for it: indexed once, for every
        attempt of its scenario."""
        from convy.conduct import Instructions  # conduct.py reads dialogues: it imports this module

        return Instructions(self.prompt, self.own)

    async def spoken(self, transcript: Transcript) -> Spoken:
        """The user's next message, or ``Finished``.

        Its model is ``Contained`` whatever it was given as: any error of it, an answer that is not
        a ``Reply`` and an empty message are a ``ModelFailure`` (an empty one an ``EmptyReply``,
        which its checks record as its ``empty`` fault), the user's failure and never the agent's.
        """
        contained, messages = self._contained, self._messages(transcript)
        try:  # ``Contained.reply``, in line: one coroutine less on every simulated turn
            answered = await contained.model.reply(messages)
        except BaseException as error:
            contained.failed(error)
            raise
        reply = contained.kept(answered)
        if reply.cut():  # half a message is not what the user meant: never sent, never judged
            raise CutReply(self._cut(reply), (reply.usage,))
        text = reply.text.strip()
        if STOP in text:
            return Spoken(Finished(), reply.usage)
        return Spoken(Message(text), reply.usage)

    def _cut(self, reply: Reply) -> str:
        """Why the reply was cut, with the fix: the model's ``max_tokens`` when it has one."""
        name = self.model.name
        if reply.finish == "content_filter":
            return (
                f"the simulated user's model {name}: its service's content filter cut its reply short "
                '(finish_reason "content_filter"), so nothing was sent to the agent; soften what the scenario '
                "asks the user to say, or give the user another model in models.py"
            )
        model: Any = self.model
        for _ in range(4):  # through the wrappers (PatientModel, Contained) to the model made in models.py
            if hasattr(model, "max_tokens") or not hasattr(model, "model"):
                break
            model = model.model
        most = getattr(model, "max_tokens", None)
        fix = (
            f"max_tokens={most} is too few for its replies; raise it in models.py"
            if isinstance(most, int) and not isinstance(most, bool)
            else "its service's token limit is too low for its replies; set a larger max_tokens in models.py"
        )
        return (
            f"the simulated user's model {name}: its reply was cut at its token limit "
            f'(finish_reason "length"), so nothing was sent to the agent: {fix}'
        )

    def _messages(self, transcript: Transcript) -> tuple[Said, ...]:
        # The model plays the user, so the roles are turned round: what it said before is
        # "assistant", what the agent said is "user". The messages of the dialogue it was last
        # asked about are kept: a dialogue that goes on from it (the same turns, the very same
        # objects, and more) has only its new turns' made, not every turn's again at every turn.
        turns = transcript.turns
        last = self._last
        known, said = last[0]
        if len(turns) < len(known) or not all(map(operator.is_, known, turns)):
            known, said = (), self._opening
        added: list[Said] = []
        for turn in turns[len(known) :]:
            added.append(Said("assistant", turn.message))
            added.append(Said("user", turn.answer.text or "[the agent said nothing]"))
        if added:
            said += tuple(added)
            last[0] = (turns, said)  # one assignment: whoever reads it finds turns and messages together
        return said

    @functools.cached_property
    def _last(self) -> list[tuple[tuple[Turn, ...], tuple[Said, ...]]]:
        """The turns of the dialogue last asked about and its messages, in a list of one."""
        return [((), self._opening)]

    @functools.cached_property
    def _contained(self) -> Contained:
        return Contained(self.model)

    @functools.cached_property
    def _opening(self) -> tuple[Said, Said]:
        return (Said("system", self.prompt), Said("user", "[The agent is ready. Write your first message to it.]"))


class DefaultPrompts(msgspec.Struct, frozen=True):
    """The prompts convy ships, read from the package once."""

    @functools.cache  # noqa: B019 - no fields: every DefaultPrompts is the same key
    def user(self) -> str:
        return Shipped(("prompts", "user.md")).text()

    @functools.cache  # noqa: B019
    def judge(self) -> str:
        return Shipped(("prompts", "judge.md")).text()


class Ruling(msgspec.Struct, frozen=True):
    """A judge's answer: one decided ``Claim`` per claim asked, and what each of its model
    requests took."""

    claims: tuple[Claim, ...]
    requests: tuple[Usage | NoUsage, ...] = ()


class Judge(Protocol):
    """Decides a scenario's claims about a dialogue."""

    @property
    def name(self) -> str: ...

    async def ruling(self, claims: tuple[str | Graded, ...], transcript: Transcript) -> Ruling: ...


# A confidence out of range is the judge model's wrong shape, caught where its answer is read.
Between0And1 = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


class _Passed(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """A judge model's decision of a plain claim, as it writes it."""

    reason: str
    pass_: bool = msgspec.field(name="pass")
    confidence: Between0And1
    evidence: str = ""  # optional: a model that quotes nothing has decided all the same


class _Graded(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """A judge model's decision of a graded claim, as it writes it."""

    reason: str
    grade: str
    confidence: Between0And1
    evidence: str = ""


_Answer = TypeVar("_Answer", _Passed, _Graded)


class _JudgeAnswer(msgspec.Struct, frozen=True):
    """A judge model's reply, as its JSON object is found in it.

    A reasoning model may write its thoughts first in a ``<think>…</think>`` block, and any model
    may write text after the object: both may hold braces of their own. The object is looked for
    after the last ``</think>`` (in the whole reply when nothing follows it holds one): first from
    the first "{" to the last "}", as most replies are; else each object JSON reads from a "{" on,
    the text after it ignored, the first that has the answer's shape taken — at most ``TRIES`` of
    them, so a reply of many braces costs a bounded time (each is read in time linear in the
    reply: a regex here was quadratic on many "{")."""

    text: str

    TRIES: ClassVar[int] = 64

    def held(self) -> bool:
        """Whether the reply holds a "{" before a "}" at all."""
        said = self._said()
        start = said.find("{")
        return start >= 0 and said.rfind("}") > start

    def decoded(self, kind: type[_Answer]) -> _Answer:
        """The first object in the reply of the shape ``kind``; else the error of the most likely
        one (an object of another shape, or else the span from the first "{" to the last "}")."""
        said = self._said()
        start = said.find("{")
        try:
            return msgspec.json.decode(said[start : said.rfind("}") + 1], type=kind)
        except (msgspec.ValidationError, msgspec.DecodeError) as error:
            failure: Exception = error
        except RecursionError:  # nested deeper than any answer is
            failure = msgspec.DecodeError("the JSON is nested too deeply")
        reader = json.JSONDecoder()
        at = start
        for _ in range(self.TRIES):
            if at < 0:
                break
            try:
                found, end = reader.raw_decode(said, at)
            except (ValueError, RecursionError):
                found, end = None, at
            if isinstance(found, dict):
                try:
                    return msgspec.json.decode(said[at:end], type=kind)
                except (msgspec.ValidationError, msgspec.DecodeError) as error:
                    failure = error
                except RecursionError:
                    pass
            at = said.find("{", at + 1)
        raise failure

    def _said(self) -> str:
        """The reply after its thoughts: after the last ``</think>``, when a "{" follows it."""
        closed = self.text.lower().rfind("</think>")
        after = self.text[closed + len("</think>") :] if closed >= 0 else self.text
        return after if "{" in after else self.text


def first_failure(errors: list[Exception], every: list[Usage | NoUsage]) -> None:
    """Raise the first of ``errors``, if any, of requests sent together (a ruling's claims, a
    panel's votes): a ``ModelFailure`` made again with the usage of ``every`` request answered, the
    failures' too, so none is lost; any other error as it was."""
    if not errors:
        return
    first = errors[0]
    match first:
        case ModelFailure():
            raise type(first)(Outside(first).text(), tuple(every)) from first
    raise first


class ChatJudge(msgspec.Struct, frozen=True):
    """A judge on a chat model: one request per claim, the reason first, then pass or grade."""

    model: Model
    instructions: str = ""

    def __post_init__(self) -> None:
        # Outside data (models.py), converted where it enters: a file given as a Path is read now.
        model: Any = self.model
        if isinstance(model, type) or not callable(getattr(model, "reply", None)):
            match model:
                case str():
                    named = msgspec.json.encode(model).decode()
                    raise TypeError(
                        f"ChatJudge: model={named} is text, not a chat model: give the model by its name, "
                        f'ChatJudge(OpenAiModel({named}, base_url, key))'
                    )
                case type():
                    raise TypeError(f"ChatJudge: model= is the class {model.__name__}, not a chat model: make one, {model.__name__}(...)")
                case _:
                    raise TypeError(
                        f"ChatJudge: model= is a {type(model).__name__}, not a chat model: "
                        'give one, ChatJudge(OpenAiModel("model-name", base_url, key))'
                    )
        instructions: Any = self.instructions
        match instructions:
            case PurePath():
                try:
                    text = Path(instructions).read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError) as error:
                    why = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
                    raise ValueError(f"ChatJudge: instructions={str(instructions)!r}: cannot be read: {why}") from None
                msgspec.structs.force_setattr(self, "instructions", text)
            case str() if _FILE_NAME.fullmatch(instructions.strip()):
                raise ValueError(
                    f"ChatJudge: instructions={instructions!r} is a file's name, and would be sent as the instructions: "
                    f'give the file, instructions=Path("{instructions.strip()}") (read when models.py is loaded), or its text'
                )
            case str():
                pass
            case _:
                raise TypeError(f"ChatJudge: instructions= must be text or a Path, not {type(instructions).__name__}")

    @property
    def name(self) -> str:
        return self.model.name

    async def ruling(self, claims: tuple[str | Graded, ...], transcript: Transcript) -> Ruling:
        """Every claim asked at once (each request still within the judge's places, its model
        being patient in a run): five claims of 2 s take 2 s, not 10. The decisions keep the
        order of the claims. When a claim fails, the first failure in that order is raised, with
        the usage of every request that was answered."""

        async def asked(claim: str | Graded) -> tuple[Claim, Usage | NoUsage] | Exception:
            # An error is kept as a value, so the other claims' requests finish and count, and
            # the caller gets the error itself rather than an ExceptionGroup.
            try:
                return await self._claim(claim, transcript)
            except Exception as error:
                return error

        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(asked(claim)) for claim in claims]
        decided: list[Claim] = []
        requests: list[Usage | NoUsage] = []
        every: list[Usage | NoUsage] = []  # every answered request, failures' too, in the claims' order
        errors: list[Exception] = []
        for task in tasks:
            match task.result():
                case (Claim() as one, spent):
                    decided.append(one)
                    requests.append(spent)
                    every.append(spent)
                case ModelFailure() as failure:
                    errors.append(failure)
                    every.extend(failure.requests)
                case Exception() as error:
                    errors.append(error)
        first_failure(errors, every)
        return Ruling(tuple(decided), tuple(requests))

    async def _claim(self, claim: str | Graded, transcript: Transcript) -> tuple[Claim, Usage | NoUsage]:
        system = self.instructions or DefaultPrompts().judge()
        match claim:
            case str(text):
                ask = (
                    f"The claim: {text}\n\nAnswer with one JSON object and nothing else: "
                    '{"evidence": "the exact words of the dialogue your decision rests on", '
                    '"reason": "...", "pass": true or false, "confidence": 0.0 to 1.0}'
                )
            case Graded(claim=text, grades=grades):
                ask = (
                    f"The claim: {text}\nThe grades, worst first: {', '.join(grades)}\n\n"
                    "Answer with one JSON object and nothing else: "
                    '{"evidence": "the exact words of the dialogue your decision rests on", '
                    '"reason": "...", "grade": "one of the grades", "confidence": 0.0 to 1.0}'
                )
        # Contained: the model's own error or wrong answer fails this claim as a ModelFailure, so
        # the usage of the claims decided before it is kept.
        reply = await Contained(self.model).reply(
            (Said("system", system), Said("user", f"The dialogue:\n\n{transcript.text()}\n\n{ask}"))
        )
        answer = _JudgeAnswer(reply.text)
        if not answer.held():
            raise ModelFailure(f"the judge's model {self.model.name} answered without a JSON object{self._cut(reply)}", (reply.usage,))
        try:
            match claim:
                case str(text):
                    said = answer.decoded(_Passed)
                    return (
                        Claim(text, said.pass_, said.reason, Confidence(said.confidence), evidence=_quoted(said.evidence, transcript)),
                        reply.usage,
                    )
                case Graded(claim=text, grades=grades, pass_=bar):
                    graded = answer.decoded(_Graded)
                    if graded.grade not in grades:
                        raise ModelFailure(
                            f"the judge gave the grade {graded.grade!r}, not one of {', '.join(grades)}", (reply.usage,)
                        )
                    held = grades.index(graded.grade) >= grades.index(bar)
                    return (
                        Claim(
                            text,
                            held,
                            graded.reason,
                            Confidence(graded.confidence),
                            Grade(graded.grade),
                            evidence=_quoted(graded.evidence, transcript),
                        ),
                        reply.usage,
                    )
        except (msgspec.ValidationError, msgspec.DecodeError) as error:
            raise ModelFailure(
                f"the judge's model {self.model.name} answered in the wrong shape: {error}{self._cut(reply)}", (reply.usage,)
            ) from error


    def _cut(self, reply: Reply) -> str:
        """Why an answer convy could not read was likely broken: its service cut it short."""
        match reply.finish:
            case "length":
                return '; its service cut the answer at its token limit (finish_reason "length"): raise max_tokens in models.py'
            case "content_filter":
                return '; its service\'s content filter cut the answer short (finish_reason "content_filter")'
            case _:
                return ""


def _called(call: Call) -> list[Any]:
    """A tool call as a dialogue's fingerprint holds it: its name, arguments and result."""
    match call.result:
        case Reported(value=value):
            result: list[Any] = ["reported", value]
        case NotReported():
            result = ["not_reported"]
    return [call.name, call.arguments, result]


def _quoted(quote: str, transcript: Transcript) -> Evidence | None:
    """What a judge quoted, and whether the dialogue holds it; ``None`` when it quoted nothing."""
    if not quote.strip():
        return None
    return Quote(quote).evidence(transcript)


class PatientJudge(msgspec.Struct, frozen=True):
    """The same judge, deciding within its participant's places, and again while its service is
    busy and the participant's patience lasts. (A ``ChatJudge`` is made patient request by request
    instead, through its model: see ``Bench``.)"""

    judge: Judge
    places: Places

    @property
    def name(self) -> str:
        return self.judge.name

    async def ruling(self, claims: tuple[str | Graded, ...], transcript: Transcript) -> Ruling:
        # The free way taken here where the places allow, as ``model.PatientModel.reply`` takes it.
        places = self.places
        ticket = places.freely(True)
        if ticket is None:
            return await places.sent(functools.partial(self.judge.ruling, claims, transcript))
        try:
            ruling = await self.judge.ruling(claims, transcript)
        except Busy as busy:
            refused = busy
        except BaseException:
            places.freely_failed(ticket)
            raise
        else:
            places.freely_answered(ticket)
            return ruling
        return await places.freely_refused(functools.partial(self.judge.ruling, claims, transcript), ticket, refused)


_RULING = msgspec.json.Decoder(Ruling)


class Checked(msgspec.Struct, frozen=True):
    """The same judge, given only what was said, whose every failure is a ``ModelFailure``.

    Its answer is encoded and decoded as the run folder will keep it, and must hold one claim per
    claim asked, in order, a graded claim with one of its grades and the pass that grade earns.
    """

    judge: Judge | Absent

    @property
    def name(self) -> str:
        return self.judge.name

    async def ruling(self, claims: tuple[str | Graded, ...], transcript: Transcript) -> Ruling:
        match self.judge:
            case Absent(reason=reason):  # a run skips the scenarios that need it; only a bug asks it
                raise ModelFailure(f"the judge is absent: {reason}")
        try:
            ruling = await self.judge.ruling(claims, transcript.said())
            ruling = _RULING.decode(msgspec.json.encode(ruling))
        except ModelFailure:
            raise
        except Busy as busy:
            raise StillBusy(f"the judge {self.judge.name}: {Outside(busy).text()}") from busy
        except BaseException as error:  # a judge's bug (a SystemExit too) is the judge's failure, never the run's
            if not Outside(error).theirs():
                raise
            raise ModelFailure(f"the judge {self.judge.name} failed: {Outside(error).named()}") from error
        # An unusable ruling still took its tokens: each failure below carries them.
        spent = ruling.requests
        if len(ruling.claims) != len(claims):
            raise ModelFailure(f"the judge decided {len(ruling.claims)} claims of {len(claims)}", spent)
        for asked, decided in zip(claims, ruling.claims, strict=True):
            self._fits(asked, decided, spent)
        return ruling

    def _fits(self, asked: str | Graded, decided: Claim, spent: tuple[Usage | NoUsage, ...]) -> None:
        if isinstance(asked, str) and isinstance(decided.grade, NoGrade) and decided.claim == asked:
            return  # the first case below, as most claims are: without building a tuple to match
        match asked, decided.grade:
            case str(text), NoGrade():
                if decided.claim != text:
                    raise ModelFailure(f"the judge answered {decided.claim!r} for the claim {text!r}", spent)
            case Graded(claim=text, grades=grades, pass_=bar), Grade(name=name):
                if decided.claim != text:
                    raise ModelFailure(f"the judge answered {decided.claim!r} for the claim {text!r}", spent)
                if name not in grades:
                    raise ModelFailure(f"the judge gave the grade {name!r}, not one of {', '.join(grades)}", spent)
                if decided.held != (grades.index(name) >= grades.index(bar)):
                    raise ModelFailure(f"the judge's pass for grade {name!r} does not match the scenario's", spent)
            case Graded(claim=text), NoGrade():
                raise ModelFailure(f"the judge gave no grade for the graded claim {text!r}", spent)
            case str(text), Grade():
                raise ModelFailure(f"the judge gave a grade for the plain claim {text!r}", spent)
