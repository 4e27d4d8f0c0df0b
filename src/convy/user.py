"""The simulated user: a model told who it is by the filled simulator prompt (``SimulatedUser``),
and its conduct, checked (issue 11).

A simulated user is a model, and a model playing a person goes wrong in ways that look like the
agent's failures: it says nothing, says the same thing twice, reads its instructions out, stops
before it began, or never stops. ``Conduct`` finds these by code on every attempt with a
simulated user, once the dialogue is over, in time linear in the dialogue; ``Instructions`` is the
filled simulator prompt as the leak check looks for it (its word 6-grams indexed once per
scenario). ``UserChecks`` is the setting (kept in the run's spec): which further checks a model
decides (``role_swap``, ``stopped_on_question``, ``unsupported``; none unless asked) and what a
fault does to the attempt (``not_judged``, the default, or ``count``). ``UserReview`` asks those
checks of a model, one request per check, and says the checks it could not decide.
"""

from __future__ import annotations

import functools
import operator
import re
from typing import Any, ClassVar, Literal

import msgspec

from convy.agent import Message, NoUsage, Usage
from convy.model import Absent, Contained, Model, Reply, Said
from convy.problems import CutReply, ModelFailure, Outside, kept
from convy.prompt import STOP
from convy.transcript import Finished, Stop, Transcript, Turn, Unchecked, UserFault, plain


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


ModelCheck = Literal["role_swap", "stopped_on_question", "unsupported"]


Consequence = Literal["not_judged", "count"]


# A word as the leak check counts them: letters and digits, punctuation and case left out, so a
# stretch said with other quotation marks or capitals is the same stretch.
_WORD = re.compile(r"\w+")


_TURN = operator.attrgetter("turn")  # a fault's turn, to sort faults by


class Instructions(msgspec.Struct, frozen=True, dict=True):
    """The filled simulator prompt a simulated user was told, as its leak check looks for it.

    A leak is a stretch of at least ``WORDS`` words in a row, or of at least ``CHARACTERS``
    characters (the words joined by single spaces, made lower case, punctuation left out), that a
    message and the prompt share. Found from the prompt's runs of ``GRAM`` words, each hashed and
    indexed once (kept beside the field, ``dict=True``: a run checks every attempt of a scenario
    against one index), then the message's runs looked up one by one and chained while they go on
    in the prompt: time linear in the message, whatever the prompt's size.

    ``own`` are the parts of the prompt the scenario wrote for its user (its filled ``user:``
    instructions, its vars' values): its facts and wishes, which a user in character says, often in
    the words it was given ("I would like a refund for my order A-1043, it arrived broken"). Runs of
    words found in them are excused, so a leak is the prompt's framing said to the agent (how to
    play the user, the stop word's rules), or a stretch that crosses into it, never the scenario's
    own facts.
    """

    text: str
    own: tuple[str, ...] = ()

    GRAM: ClassVar[int] = 6
    WORDS: ClassVar[int] = 12
    CHARACTERS: ClassVar[int] = 60
    # Where one run of words may stand in the prompt: a prompt that says the same six words more
    # often than this is looked for at the first places only.
    PLACES: ClassVar[int] = 8

    def leaked(self, message: str, excused: frozenset[int] = frozenset()) -> str:
        """The longest stretch of this prompt that ``message`` says, as the check counts words,
        when it is long enough to be a leak; else "". Runs of words whose hash is in ``excused``
        (what the agent or the script said before) break a stretch: a user may say again what it
        was told."""
        size = self.GRAM
        words = _WORD.findall(message.casefold())
        if len(words) < size:
            return ""
        known = self._known
        grams = self._grams
        told = self._words
        starts: list[int] = []  # the characters before each word, joined by single spaces: made at a first hit
        best = ""
        best_length = 0
        runs: dict[int, int] = {}  # where a stretch's last run stands in the prompt: its runs so far
        inside = 0  # the message's words in a row up to here that the prompt holds at all
        for end, word in enumerate(words, start=1):
            # A run with a word the prompt never says cannot be in it: most runs of most messages
            # end here, for one lookup in a set, never hashed.
            if word in known:
                inside += 1
            else:
                inside = 0
            if inside < size:
                if runs:
                    runs = {}
                continue
            at = end - size
            piece = words[at:end]
            key = hash(tuple(piece))
            places = grams.get(key)
            if places is None or key in excused or key in self._own:
                if runs:
                    runs = {}
                continue
            runs = {place: runs.get(place - 1, 0) + 1 for place in places if told[place : place + size] == piece}
            if runs and not starts:
                starts.append(0)
                for one in words:
                    starts.append(starts[-1] + len(one) + 1)
            for length in runs.values():
                first = at - length + 1
                count = length + size - 1
                characters = starts[end] - starts[first] - 1
                if (count >= self.WORDS or characters >= self.CHARACTERS) and count > best_length:
                    best_length = count
                    best = " ".join(words[first:end])
        return best

    def leak(self, message: str) -> str:
        """``leaked(message)``, with nothing excused, found once for each message: a scenario's
        attempts ask it of the same messages again and again (a simulated user's first message,
        told the same prompt, is most often the same word for word), and the answer, of this
        prompt and that message alone, never changes. At most ``KEPT`` messages are kept; past
        them the oldest half go."""
        known = self._leaks
        found = known.get(message)
        if found is None:
            found = self.leaked(message)
            if len(known) >= self.KEPT:
                for old in list(known)[: self.KEPT // 2]:
                    del known[old]
            known[message] = found
        return found

    KEPT: ClassVar[int] = 1024

    def grams(self, text: str) -> frozenset[int]:
        """The hashes of ``text``'s runs of words, as ``leaked`` may be told to excuse them."""
        words = _WORD.findall(text.casefold())
        return frozenset(hash(tuple(words[at : at + self.GRAM])) for at in range(len(words) - self.GRAM + 1))

    @functools.cached_property
    def _words(self) -> list[str]:
        return _WORD.findall(self.text.casefold())

    @functools.cached_property
    def _own(self) -> frozenset[int]:
        return frozenset().union(*(self.grams(part) for part in self.own))

    @functools.cached_property
    def _leaks(self) -> dict[str, str]:
        return {}  # by message, what ``leak`` found

    @functools.cached_property
    def _known(self) -> frozenset[str]:
        return frozenset(self._words)

    @functools.cached_property
    def _grams(self) -> dict[int, list[int]]:
        index: dict[int, list[int]] = {}
        words = self._words
        for at in range(len(words) - self.GRAM + 1):
            places = index.setdefault(hash(tuple(words[at : at + self.GRAM])), [])
            if len(places) < self.PLACES:
                places.append(at)
        return index


class Conduct(msgspec.Struct, frozen=True):
    """One attempt's dialogue with a simulated user, and how it stopped, as its code-decided checks
    read them: ``faults`` are what they find, the earliest first, at most one of each check."""

    transcript: Transcript
    stop: Stop
    # Whether the user's model gave an empty reply: the dialogue ended there, a ``ModelFailure``
    # kept as such, and this the user's fault at the turn it would have opened.
    empty: bool = False

    def faults(self, instructions: Instructions) -> tuple[UserFault, ...]:
        turns = self.transcript.turns
        found: list[UserFault] = []
        simulated = [number for number, turn in enumerate(turns, start=1) if not turn.scripted]
        for number in simulated:
            if number > 1:
                said, before = turns[number - 1].message, turns[number - 2].message
                if said == before or self._same(said, before):  # the very same text, the common case, in line
                    found.append(UserFault("repeated", number, f"said again: {Quoted(said).text()}"))
                    break
        looked: set[str] = set()  # a message said again is looked for once
        excused: frozenset[int] = frozenset()
        heard = 0  # the turns whose words are in ``excused`` so far
        for number in simulated:
            message = turns[number - 1].message
            if message in looked:
                continue
            looked.add(message)
            leak = instructions.leak(message)
            if not leak:
                continue
            # Only now, with a stretch found, what the agent and the script said before it is
            # read (each turn once, however many stretches are found): words the user heard first
            # are its to say again.
            for turn in turns[heard : number - 1]:
                excused |= instructions.grams(turn.answer.text)
                if turn.scripted:
                    excused |= instructions.grams(turn.message)
            heard = max(heard, number - 1)
            leak = instructions.leaked(message, excused)
            if leak:
                words = len(leak.split())
                found.append(UserFault("leaked", number, f"{words} words of its instructions: {Quoted(leak).text()}"))
                break
        if self.empty:
            found.append(UserFault("empty", len(turns) + 1, "its model gave an empty reply"))
        match self.stop:
            case "finished" if not turns and not self.empty:
                found.append(UserFault("first_turn_stop", 1, "it said it was done before it said anything"))
            case "max_turns" if simulated:
                found.append(UserFault("no_stop", len(turns) + 1, f"{len(turns)} turns and it never said it was done"))
            case _:
                pass
        return tuple(sorted(found, key=_TURN)) if len(found) > 1 else tuple(found)

    def _same(self, said: str, before: str) -> bool:
        """Whether two messages are the same, whitespace and case aside (the very same text, the
        common case, told without splitting either)."""
        return said == before or said.casefold().split() == before.casefold().split()


class Noted:
    """The faults that leave an attempt not judged (under ``not_judged``), and the one that never
    does: ``no_stop`` is kept and shown, and the attempt judged all the same. A user that never says
    it is done is most often the sign of an agent that never resolves the problem (it keeps asking,
    or loops), or of a ``max_turns`` set below what the goal takes: leaving those attempts out of
    the pass rate would hide the agent's failures behind its user's (issue 11's audit)."""

    JUDGED: ClassVar[frozenset[str]] = frozenset({"no_stop"})

    @classmethod
    def withholding(cls, faults: tuple[UserFault, ...]) -> tuple[UserFault, ...]:
        return tuple(fault for fault in faults if fault.check not in cls.JUDGED)


class Quoted(msgspec.Struct, frozen=True):
    """Words of the dialogue as a fault's detail shows them: made plain, and cut at a space when
    longer than ``LONGEST``, so a secret is hidden whole when the run is kept (it holds no space)
    rather than cut into a piece too short to be known."""

    said: str
    marks: bool = True

    LONGEST: ClassVar[int] = 160

    def text(self) -> str:
        said = plain(self.said)
        if len(said) > self.LONGEST:
            cut = said.rfind(" ", 0, self.LONGEST)
            said = said[: cut if cut > 0 else self.LONGEST] + " …"
        return f"“{said}”" if self.marks else said


class UserChecks(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """How a run checks its simulated user, as its spec keeps it: the checks a model decides,
    opted in (``user_checks``), and what a fault does to the attempt (``user_faults``):
    ``not_judged``, the attempt is left out of the pass rate with the fault as its reason (the judge
    is not asked), or ``count``, the fault is kept and the attempt judged as any other."""

    asked: tuple[ModelCheck, ...] = ()
    faults: Consequence = "not_judged"

    def __post_init__(self) -> None:
        twice = sorted({check for check in self.asked if self.asked.count(check) > 1})
        if twice:
            raise ValueError(f"user_checks: {', '.join(map(repr, twice))} given twice")


class _Found(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """A model's answer to one check, as it writes it."""

    fault: bool
    turn: int = 0
    quote: str = ""
    reason: str = ""


_QUESTIONS: dict[ModelCheck, str] = {
    "role_swap": (
        "Did USER, at any turn, speak as the agent instead of as the customer: answer as the support "
        "agent would, offer the agent's help, write the agent's lines, or take the agent's part?"
    ),
    "stopped_on_question": (
        "USER ended the dialogue after the last turn. Was the AGENT's last message asking USER a "
        "question, or for something USER was expected to answer, so that USER left it unanswered?"
    ),
    "unsupported": (
        "Did USER, at any turn, state facts (names, numbers, dates, orders, wishes, circumstances) "
        "that its instructions above neither give nor support? Saying it does not know something is "
        "supported."
    ),
}


class Reviewed(msgspec.Struct, frozen=True):
    """What a model found of the simulated user: its faults, the checks it could not decide (with
    why), and what each of its requests took."""

    faults: tuple[UserFault, ...] = ()
    unchecked: tuple[Unchecked, ...] = ()
    requests: tuple[Usage | NoUsage, ...] = ()


class UserReview(msgspec.Struct, frozen=True):
    """The model-decided checks of a run's simulated user: ``checks`` says which, ``model`` is
    who decides them — in a run, the judge's chat model within the judge's places (its requests
    counted as the judge's), or ``Absent`` when the judge has none. One request per check per
    attempt, all at once; a check whose request failed, or was answered in the wrong shape, is not
    decided (``Unchecked``), and never fails the attempt or the run."""

    checks: UserChecks = UserChecks()
    model: Model | Absent = Absent("no model to decide the simulated user's checks")

    async def reviewed(self, transcript: Transcript, stop: Stop, told: str) -> Reviewed:
        asked = [check for check in self.checks.asked if self._applies(check, transcript, stop)]
        if not asked:
            return Reviewed()
        match self.model:
            case Absent(reason=reason):
                return Reviewed(unchecked=tuple(Unchecked(check, reason) for check in asked))
        contained = Contained(self.model)

        # A ModelFailure (a StillBusy too) is kept, so the other checks finish.
        answers = await kept(lambda check: self._decided(contained, check, transcript, told), asked, ModelFailure)
        faults: list[UserFault] = []
        unchecked: list[Unchecked] = []
        requests: list[Usage | NoUsage] = []
        for check, answer in zip(asked, answers, strict=True):
            match answer:
                case ModelFailure() as failure:
                    unchecked.append(Unchecked(check, Outside(failure).text()))
                    requests.extend(failure.requests)
                case (fault, spent):
                    requests.append(spent)
                    if fault is not None:
                        faults.append(fault)
        return Reviewed(tuple(sorted(faults, key=lambda fault: fault.turn)), tuple(unchecked), tuple(requests))

    def _applies(self, check: ModelCheck, transcript: Transcript, stop: Stop) -> bool:
        """Whether there is anything for ``check`` to decide: a simulated message for any, and for
        ``stopped_on_question`` a user that said it was done just after the agent wrote a question
        mark (no request is sent for a last answer that asks nothing)."""
        turns = transcript.turns
        if not any(not turn.scripted for turn in turns):
            return False
        if check == "stopped_on_question":
            return stop == "finished" and "?" in turns[-1].answer.text
        return True

    async def _decided(
        self, model: Contained, check: ModelCheck, transcript: Transcript, told: str
    ) -> tuple[UserFault | None, Usage | NoUsage]:
        turns = transcript.turns
        dialogue = "\n\n".join(
            f"Turn {number}\nUSER: {turn.message}\nAGENT: {turn.answer.text}" for number, turn in enumerate(turns, start=1)
        )
        given = f"The instructions USER was given:\n\n{told}\n\n" if check == "unsupported" else ""
        ask = (
            f"{given}The dialogue:\n\n{dialogue}\n\n{_QUESTIONS[check]}\n\nAnswer with one JSON object and "
            'nothing else: {"quote": "the exact words of USER that show it, or empty", "reason": "...", '
            '"fault": true or false, "turn": the turn\'s number, or 0 when there is no fault}'
        )
        system = (
            "You check a simulated user: USER is a model playing a customer who talks to an AI agent "
            "(AGENT) to test it. You decide whether USER misbehaved as asked, from the dialogue alone."
        )
        reply = await model.reply((Said("system", system), Said("user", ask)))
        start, end = reply.text.find("{"), reply.text.rfind("}")
        try:
            if start < 0 or end < start:
                raise msgspec.DecodeError("no JSON object")
            found = msgspec.json.decode(reply.text[start : end + 1], type=_Found)
        except (msgspec.ValidationError, msgspec.DecodeError) as error:
            raise ModelFailure(f"the model {model.name} answered the check {check} in the wrong shape: {error}", (reply.usage,)) from error
        if not found.fault:
            return None, reply.usage
        if check == "stopped_on_question":
            turn = len(turns) + 1  # it went wrong in how it ended, after the last turn
        elif 1 <= found.turn <= len(turns):
            turn = found.turn
        else:
            raise ModelFailure(f"the model {model.name} named turn {found.turn} of a dialogue of {len(turns)}", (reply.usage,))
        quote = Quoted(found.quote).text() if found.quote.strip() else ""
        reason = Quoted(found.reason, marks=False).text() if found.reason.strip() else ""
        return UserFault(check, turn, " — ".join(part for part in (quote, reason) if part), "model"), reply.usage
