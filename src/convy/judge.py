"""The judge: what it decides, how, and how several decisions make one.

``Judge`` decides a scenario's claims from a ``Transcript``; ``ChatJudge`` asks a model about every
claim at once, one request each, the reason before the decision. ``Checked`` stands between any
judge and the run: it hands the judge only what was said and turns an error, or an answer that
does not fit the claims, into ``ModelFailure``. ``PatientJudge`` decides within its participant's
places, and ``RunJudge`` is the run's judge as each attempt asks it. ``Models`` is the simulated
user's model and the judge as a project's ``models.py`` names them.

An attempt ends in one of three results: ``Verdict`` (every claim decided), ``Failed`` (the agent
failed, so nothing was judged) or ``NoVerdict`` (a model failed, so the judge's claims cannot be
decided; the checks decided by code still are, and one that failed fails the attempt).

A claim decided from several votes: the judge asked again (``judge_repeats``), a panel of
judges (``Models(judge=[...])``), or both.

``Judging`` is how a run judges: how many times each judge is asked about each claim, how a
panel's votes make the decision (``majority`` or ``unanimous``), and what a decision whose quoted
evidence is not in the dialogue is worth (``flag`` or ``require``). ``Panel`` is the judges a
project's ``models.py`` names, as data. ``Poll`` is the judge a run asks when there is more than
one vote, or when evidence is required: it asks every judge ``repeats`` times, all at once (each
request within the judge's places), and makes each claim's ``Claim`` from its votes with
``decision``. With one judge asked once and evidence flagged, a run asks its judge directly, as it
always has: no ``Poll``, no votes written.

The rules (docs/statistics.md says them for readers of a report):

- *majority*: a claim holds when more than half of all its votes (every judge, every repeat) say
  it held, fails when more than half say it failed; as many for as against is a *split*: nothing is
  decided, the claim is not trusted (``Claim.doubt == "split"``), so the attempt is not judged,
  unless another claim failed with trust.
- *unanimous*: a claim holds only when every vote says it held; one vote against fails it. There
  is never a split.
- a *graded* claim: each vote's grade passes or not by the scenario's bar, and the decision is
  made from those as above; its grade is the lower median of the votes' grades under majority
  (the worse of the two middle ones for an even count, so it always agrees with the decision), and
  the worst grade under unanimous.
- the decision's reason, confidence and evidence are those of the votes that agree with it: the
  first agreeing vote's reason, the mean of their confidences (none when a vote gave none), the
  first agreeing quote that is sound evidence (``transcript.Quote``: a few whole words of one of the
  agent's messages, or the whole of a shorter one), else the first found in the dialogue, else
  the first quoted. With ``evidence = "require"`` a decision with no sound quote is not trusted
  (``Claim.doubt == "unquoted"``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from pathlib import Path, PurePath
from typing import Annotated, Any, ClassVar, Literal, Protocol, TypeVar

import msgspec

from convy.agent import NoUsage, Usage
from convy.busy import Busy, Places
from convy.model import Absent, Contained, Model, ModelFailure, PatientModel, Reply, Said, StillBusy
from convy.problems import Outside, kept
from convy.prompt import default_judge_prompt
from convy.transcript import Evidence, Quote, Transcript

# Instructions that are a file's name alone: no space, ending in a text file's suffix.
_FILE_NAME = re.compile(r"[^\s]{1,200}\.(?:md|txt|prompt|jinja|j2|markdown)", re.IGNORECASE)


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

        answers = await kept(lambda claim: self._claim(claim, transcript), claims, Exception)
        decided: list[Claim] = []
        requests: list[Usage | NoUsage] = []
        every: list[Usage | NoUsage] = []  # every answered request, failures' too, in the claims' order
        errors: list[Exception] = []
        for answer in answers:
            match answer:
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
        system = self.instructions or default_judge_prompt()
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


class Judging(msgspec.Struct, frozen=True, omit_defaults=True):
    """How a run judges its claims (kept in ``run.json``, so a resumed run and its report know):
    each judge asked ``repeats`` times per claim, a panel's votes combined by ``panel``, and a
    decision whose evidence is not sound — not in the dialogue, or too short, a piece of a word or
    the user's words (``transcript.Quote``) — flagged (``flag``) or not trusted (``require``)."""

    repeats: int = 1
    panel: Literal["majority", "unanimous"] = "majority"
    evidence: Literal["flag", "require"] = "flag"

    MOST_REPEATS: ClassVar[int] = 15

    def __post_init__(self) -> None:
        if not 1 <= self.repeats <= self.MOST_REPEATS:
            raise ValueError(f"judge_repeats: must be from 1 to {self.MOST_REPEATS}")

    def direct(self) -> bool:
        """Whether one judge may be asked directly, once per claim, its decision kept as it is."""
        return self.repeats == 1 and self.evidence == "flag"


class Panel(msgspec.Struct, frozen=True):
    """The judges of a panel, as ``models.py`` lists them (``Models(judge=[...])`` makes one):
    each a ``Judge``. Asked directly (outside a run) each decides once, by majority."""

    judges: tuple[Judge, ...]

    @property
    def name(self) -> str:
        return ", ".join(self.names())

    def names(self) -> tuple[str, ...]:
        """Each judge's name, made distinct: the same model twice is ``name`` and ``name #2``."""
        return distinct([judge.name for judge in self.judges])

    async def ruling(self, claims: tuple[str | Graded, ...], transcript: Transcript) -> Ruling:
        return await Poll(tuple(Checked(judge) for judge in self.judges), self.names()).ruling(claims, transcript)


def distinct(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` with a repeated one numbered from its second (``name #2``)."""
    seen: dict[str, int] = {}
    made: list[str] = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        made.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return tuple(made)


class Poll(msgspec.Struct, frozen=True):
    """Every judge asked about every claim ``judging.repeats`` times, all at once, each claim
    decided from its votes (``decision``). ``judges`` are ``Checked`` (and patient in a run), so
    each vote has the claim's shape; ``names`` are theirs as the votes keep them.

    Every vote must be given: when a request fails, the ruling fails (the first failure in order,
    carrying the usage of every request answered), as one judge's does."""

    judges: tuple[Judge, ...]
    names: tuple[str, ...]
    judging: Judging = Judging()

    @property
    def name(self) -> str:
        return ", ".join(self.names)

    async def ruling(self, claims: tuple[str | Graded, ...], transcript: Transcript) -> Ruling:
        asks = [(name, judge) for judge, name in zip(self.judges, self.names, strict=True) for _ in range(self.judging.repeats)]
        # An error is kept: the other votes finish and count.
        answers = await kept(lambda judge: judge.ruling(claims, transcript), [judge for _, judge in asks], Exception)
        every: list[Usage | NoUsage] = []
        rulings: list[tuple[str, Ruling]] = []
        errors: list[Exception] = []
        for (name, _), answer in zip(asks, answers, strict=True):
            match answer:
                case Ruling() as ruling:
                    rulings.append((name, ruling))
                    every.extend(ruling.requests)
                case ModelFailure() as failure:
                    errors.append(failure)
                    every.extend(failure.requests)
                case Exception() as error:
                    errors.append(error)
        first_failure(errors, every)
        decided = [
            decision(claim, [_vote(name, ruling.claims[index]) for name, ruling in rulings], self.judging)
            for index, claim in enumerate(claims)
        ]
        return Ruling(tuple(decided), tuple(every))


def _vote(judge: str, claim: Claim) -> Vote:
    return Vote(judge, claim.held, claim.reason, claim.confidence, claim.grade, claim.evidence)


def decision(asked: str | Graded, votes: Sequence[Vote], judging: Judging = Judging()) -> Claim:
    """The claim decided from its ``votes`` by the rules of ``judging`` (this module's docstring).
    One vote is kept as the decision itself, with no votes."""
    if not votes:
        raise ValueError("a decision needs at least one vote")
    count = len(votes)
    held = sum(1 for vote in votes if vote.held)
    split = False
    match judging.panel:
        case "majority":
            split = 2 * held == count
            passed = 2 * held > count
        case "unanimous":
            passed = held == count
    agreeing = list(votes) if split else [vote for vote in votes if vote.held == passed]
    grade: Grade | NoGrade = NoGrade()
    match asked:
        case Graded(claim=text, grades=grades):
            ranks = sorted(grades.index(vote.grade.name) for vote in votes if type(vote.grade) is Grade)
            if ranks:
                rank = ranks[(len(ranks) - 1) // 2] if judging.panel == "majority" else ranks[0]
                grade = Grade(grades[rank])
        case str(text):
            pass
    confidences = [vote.confidence.value for vote in agreeing if type(vote.confidence) is Confidence]
    confidence: Confidence | NoConfidence = NoConfidence()
    if len(confidences) == len(agreeing):
        confidence = Confidence(min(1.0, max(0.0, sum(confidences) / len(confidences))))
    quoted = [vote.evidence for vote in agreeing if vote.evidence is not None]
    # The first sound quote, else the first found (flagged weak), else the first quoted.
    evidence = next((one for one in quoted if one.sound()), next((one for one in quoted if one.found), quoted[0] if quoted else None))
    doubt: Literal["", "split", "unquoted"] = ""
    if split:
        doubt = "split"
        judges = len({vote.judge for vote in votes})
        who = "the judge" if judges == 1 else "the judges"
        reason = f"{who} split: {held} of {count} votes said it held, {count - held} that it did not"
    else:
        reason = agreeing[0].reason
        if judging.evidence == "require" and (evidence is None or not evidence.sound()):
            doubt = "unquoted"
    return Claim(
        text,
        passed and not split,
        reason,
        confidence,
        grade,
        evidence=evidence,
        votes=tuple(votes) if count > 1 else (),
        doubt=doubt,
    )


class Models(msgspec.Struct, frozen=True):
    """The simulated user's model and the judge of a project; either may be absent.

    ``judge`` may be a list or tuple of judges, a panel: it is made a ``judge.Panel`` here, where
    it enters, so everything after sees one judge with one name (``"a, b, c"``). A panel with an
    absent judge is that judge's absence (the panel cannot sit whole); an empty one is refused.
    """

    user: Any = Absent()
    judge: Any = Absent()

    def __post_init__(self) -> None:
        # Outside data (models.py), checked where it enters: a name, None, an agent, or a model
        # where a judge goes would otherwise end a run in a traceback or leave it all not judged.
        problem = _unlike("user", self.user)
        if isinstance(self.judge, list | tuple):  # a panel: the member that is no judge is named
            for at, judge in enumerate(self.judge):
                problem = problem or _unlike("judge", judge, at)
        else:
            problem = problem or _unlike("judge", self.judge)
        if problem:
            raise TypeError(f"Models: {problem}")
        match self.judge:
            case list() | tuple() as judges:
                if not judges:
                    raise ValueError("Models: judge=[] names no judge; give one judge, or a list of several")
                absent = next((judge for judge in judges if type(judge) is Absent), None)
                if absent is not None:
                    msgspec.structs.force_setattr(self, "judge", absent)
                    return
                msgspec.structs.force_setattr(self, "judge", Panel(tuple(judges)) if len(judges) > 1 else judges[0])


def _unlike(role: Literal["user", "judge"], given: Any, at: int | None = None) -> str:
    """What ``given`` is instead of the simulated user's model (``role`` "user") or a judge, said
    with the fix, or "" when it is one (or ``Absent``): a model answers ``reply(messages)``, a
    judge ``ruling(claims, transcript)``. ``at`` is its place in a panel, a list of judges: then
    the fix is said for that member, not for the whole list."""
    wanted = "a chat model" if role == "user" else "a judge"
    named = f"{role}=" if at is None else f"{role}[{at}]"

    def put(value: str) -> str:
        return f"{role}={value}" if at is None else f"{value} in its place"

    made = 'OpenAiModel("model-name", base_url, key)'
    fix = put(made if role == "user" else f"ChatJudge({made})")
    if isinstance(given, Absent):
        return ""
    if isinstance(given, type):
        return f"{named} is the class {given.__name__}, not {wanted}: make one, {put(given.__name__ + '(...)')}"
    if callable(getattr(given, "ruling" if role == "judge" else "reply", None)):
        return ""
    shown = {None: "None", str: repr(given)}.get(None if given is None else type(given), "")
    said = f"{named}{shown}" if at is None else f"{named} is {shown}"  # user=None; judge[1] is None
    match given:
        case None:
            absent = f', or {role}=Absent("why") to play without it' if at is None else ""
            return f"{said} is not {wanted}: give one, {fix}{absent}" if at is None else f"{said}, not {wanted}: give one, {fix}"
        case str():
            named_fix = fix.replace('"model-name"', msgspec.json.encode(given).decode())
            return f"{said} is text, not {wanted}: give the model by its name, {named_fix}" if at is None else (
                f"{said}, text, not {wanted}: give the model by its name, {named_fix}"
            )
    kind = type(given).__name__
    if role == "judge" and callable(getattr(given, "reply", None)):
        return f"{named} is a chat model ({kind}), not a judge: wrap it, {put(f'ChatJudge({kind}(...))')}"
    if role == "user" and callable(getattr(given, "ruling", None)):
        return f"{named} is a judge ({kind}), not a chat model: give the simulated user a model, {fix}"
    if callable(getattr(given, "conversation", None)):
        return f"{named} is an agent ({kind}), not {wanted}: an agent goes in agents/<name>.py; give {fix}"
    return f"{named} is a {kind}, not {wanted}: give {fix}"


class RunJudge(msgspec.Struct, frozen=True):
    """A run's judge as each attempt asks it: within the judge's places, again while its service
    is busy and its patience lasts, and ``Checked``. With one judge asked once (``judging.direct``)
    the judge is asked directly, as it always was; otherwise through a ``Poll`` of every judge of
    the panel (or of the one judge, asked ``judging.repeats`` times), each vote ``Checked`` so it
    has its claim's shape. A played run (``Bench``) and a re-judged one (``rejudge.Rejudging``) ask
    it the same way."""

    judge: Any  # as Models holds it (outside data): a Judge, a Panel, or Absent, which decides nothing
    judging: Judging = Judging()

    def within(self, places: Places) -> Checked:
        judge = self.judge
        match judge:
            case Panel(judges=judges):
                names = judge.names()
            case _:
                if self.judging.direct():
                    return Checked(self._patient(judge, places))
                judges, names = (judge,), (judge.name,)
        return Checked(Poll(tuple(Checked(self._patient(one, places)) for one in judges), names, self.judging))

    def model(self, places: Places) -> PatientModel | Absent:
        """The chat model the simulated user's model-decided checks are asked of: the judge's (a
        ``ChatJudge``'s, or a panel's first ``ChatJudge``'s), within the judge's places and patient
        as its requests are; ``Absent`` with the reason when the judge has no chat model."""
        judge = self.judge
        match judge:
            case Panel(judges=judges):
                pass
            case _:
                judges = (judge,)
        for one in judges:
            match one:
                case ChatJudge(model=model):
                    return PatientModel(model, places)
                case _:
                    pass
        match judge:
            case Absent(reason=reason):
                return Absent(f"the judge is absent: {reason}")
        return Absent(f"the judge {judge.name} has no chat model to ask")

    def _patient(self, judge: Judge, places: Places) -> Judge:
        # A ChatJudge sends one request per claim: it waits for a busy service request by
        # request, so a refusal never sends again the claims already decided. Any other judge
        # is tried again whole.
        match judge:
            case ChatJudge(model=model):
                return msgspec.structs.replace(judge, model=PatientModel(model, places))
            case _:
                return PatientJudge(judge, places)
