"""A dialogue as it was said: its turns (``Transcript``), how it stopped, the faults of its
simulated user, and the words a judge quotes from it (``Quote``, ``Evidence``), matched on text
made plain.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, ClassVar, Literal

import msgspec

from convy.agent import Answer, Asked, Call, NotReported, NoUsage, Reported, Step, Thought, Usage

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
    """The dialogue so far; and, where the scenario declares tools, their state as the dialogue
    left it (``tools.Toolbox.state``: ``None`` where it declares none)."""

    turns: tuple[Turn, ...] = ()
    state: dict[str, Any] | None = None
    # Every turn had spans of the agent's own under it (``traced.dialogue``, issue 30): its calls
    # were seen in them whatever its replies held.
    traced: bool = False
    # Why not every tool call of it could be seen, where they are seen only in the agent's spans (a
    # JsonAgent with no calls=, in a run that receives them) and not all of those came: a tool check
    # no call seen decides is left undecided (``checks.Check``), never decided against it or for it.
    # "" where every call could be seen.
    unseen: str = ""

    def __add__(self, turn: Turn) -> Transcript:
        return Transcript(self.turns + (turn,), self.state)

    def said(self) -> Transcript:
        """What was said, and what the scenario's own tools saw: the same turns without the agent's
        thoughts and the calls only it reported, but with the calls those tools served (their
        record is as much what happened as a message), which a judge reads (``text``)."""
        replace = msgspec.structs.replace
        return Transcript(
            tuple([replace(turn, answer=Answer(turn.answer.text, turn.answer.usage, _served(turn.answer.steps))) for turn in self.turns])
        )

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
        what labels made then name (``labels.LabelledDecisions`` lets one match only the attempt it names)."""
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
        """The dialogue as plain text, one line per speaker, for a model to read; before the
        agent's words of a turn, a line for each call the scenario's own tools served in it and
        each pause it made to ask."""
        lines: list[str] = []
        for turn in self.turns:
            lines.append(f"USER: {turn.message}")
            lines.extend(_tool_line(step) for step in _served(turn.answer.steps))
            lines.append(f"AGENT: {turn.answer.text}")
        return "\n\n".join(lines)


def _served(steps: tuple[Step, ...]) -> tuple[Step, ...]:
    """The calls the scenario's own tools served among an answer's steps, those the agent's own
    spans showed, and its pauses to ask a person: what happened, not only what the agent says."""
    return tuple(step for step in steps if type(step) is Call and (step.source or step.traced) or type(step) is Asked)


def _tool_line(call: Step) -> str:
    """A served call as a judge reads it: the tool, its arguments, and what it answered; a pause
    to ask, the question and its answer."""
    match call:
        case Asked(question=question, answer=answer, by="nobody"):
            return f"AGENT ASKED THE USER: {question!r}; nobody answered{' (taken as deny)' if answer else ''}"
        case Asked(question=question, answer=answer):
            return f"AGENT ASKED THE USER: {question!r}; the answer was {answer!r}"
        case Call(name=name, arguments=arguments, error=error) if error:
            return f"AGENT CALLED TOOL {name} with {_json(arguments)}: it answered with the error {error!r}"
        case Call(name=name, arguments=arguments, result=Reported(value=value)):
            return f"AGENT CALLED TOOL {name} with {_json(arguments)}: it answered {_json(value)}"
        case Call(name=name, arguments=arguments):
            return f"AGENT CALLED TOOL {name} with {_json(arguments)}"
        case Thought():
            return ""


def _json(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _called(call: Call) -> list[Any]:
    """A tool call as a dialogue's fingerprint holds it: its name, arguments and result."""
    match call.result:
        case Reported(value=value):
            result: list[Any] = ["reported", value]
        case NotReported():
            result = ["not_reported"]
    if call.error:  # a call answered with an error: the error is its result (none before tools could answer so)
        result.append(call.error)
    return [call.name, call.arguments, result]
