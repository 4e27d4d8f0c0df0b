"""The errors convy raises, and what each means for a run.

    Exception
    ├── AgentFailure (agent.py)       the agent failed (Accountable makes any error of its code one):
    │   │                             that attempt is Failed, the judge is not asked
    │   └── OutOfTime                 ... by passing a time limit: stop reason "time_limit"
    ├── Busy (busy.py)                a service refused a request unprocessed: sent again
    │                                 while the participant's patience lasts, then raised on
    ├── HttpFailure (http.py, here)   a request failed after it may have reached the service:
    │                                 never sent again; the agent's attempt fails, a model fails
    ├── ModelFailure (here)           the simulated user's or the judge's model failed:
    │   │                             that attempt has NoVerdict and stays out of the pass rate,
    │   │                             unless a check decided by code failed: then it is failed
    │   ├── StillBusy                 ... because its service stayed busy past its patience
    │   ├── EmptyReply                ... by answering with nothing (a simulated user's "empty" fault)
    │   ├── CutReply                  ... by a reply its service cut short (finish_reason "length"
    │   │                             or "content_filter"): a simulated user's half message is never sent
    │   └── ServiceFailure            ... because its service failed the request (an HttpFailure:
    │                                 a connection, a timeout, an error status), not its answer
    ├── Problems (here)               a ValueError: a record's fields break several of its rules
    ├── UrlProblem (here)             a ValueError: a URL given that cannot be one, with the value,
    │                                 so the command names the variable holding it
    ├── ConfigurationError (here)     the project cannot be run as it is: nothing is sent and
    │   │                             nothing written; the command says why and exits with code 2
    │   ├── DeadService (vital.py)    ... found during a run: a participant never answered and its
    │   │                             service refused it for good; the run stops, the fix is named
    │   ├── ScenarioError             one line per broken scenario file
    │   ├── RunInUse (bench.py)       another process is playing that run
    │   └── RunDamaged (bench.py)     its run.json cannot be read: resume refused, attempts readable
    ├── Unwritable (here)             the file system refused a write convy needs (a full
    │                                 disk, a file-size limit, a read-only mount): the run
    │                                 stops, marked interrupted, and what it kept stays readable
    ├── Concealed (secrets.py)        never raised: the cause of an HttpFailure in place of an
    │                                 error whose text held a secret, with its trace
    ├── WorkersLost (here)            a spread run's workers kept dying, each replaced up to a
    │                                 bound: the run stops, marked interrupted, resume plays the rest
    └── Unplayed (here)               convy's own bug: the bench ended with planned attempts
        │                             it never recorded; the run stops, marked interrupted
        └── DialoguesLost             not a bug: a re-judged run's source lacks dialogues it
                                      had (lines lost since it finished); stops the same way

A failure of one attempt never stops the run; a configuration error stops it before any request.
Any other error is convy's own: it is never recorded as a participant's failure, and stops the run.
``Outside`` is an exception that came out of a participant's code: whether it is that code's
failure (anything but Ctrl+C or a cancellation of convy's own task), and its words, read so that
describing it can never fail.
``FieldProblem`` says a msgspec validation message in the words of these errors: the field's path,
then what is wrong with it.
Requests sent together keep their errors, so that the others finish and count (``kept``), and a
task group's errors are raised one, the first (``first_error``): each written here once.
"""

from __future__ import annotations

import asyncio
import difflib
import re
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import msgspec
import msgspec.inspect


class HttpFailure(Exception):
    """A request failed in a way that may have reached the service: never sent again.

    Raised by ``http.py`` (and importable from there); declared here so that ``model.Contained``
    can tell a model's service failing from the model's answer without loading the HTTP layer.

    Besides its text it says what happened in fields, so nobody reads the text to learn it:
    ``status``, the HTTP status the service answered (0 when none came: a connection, a timeout,
    a stream cut short); ``connected``, False when no connection could be made at all (nothing
    listens there, the host is unknown or does not answer); ``url``, the URL as errors show it
    (no query, no password); ``said``, the start of the error's body with every secret hidden;
    ``model``, the ``model`` field of the JSON that was posted, if it had one; ``plain``, True when
    TLS was asked for (an ``https://`` URL) and the server answered in plain HTTP; ``reached``,
    False when the request never reached the service (no connection, no TLS). ``incurable``
    says whether sending it again could never help (``vital.py`` stops a run on it).
    """

    def __init__(
        self,
        message: str,
        status: int = 0,
        connected: bool = True,
        url: str = "",
        said: str = "",
        model: str = "",
        plain: bool = False,
        reached: bool = True,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.connected = connected
        self.reached = reached  # whether the request reached the service (False: no connection made)
        self.url = url
        self.said = said
        self.model = model
        self.plain = plain

    def incurable(self) -> bool:
        """Whether the request failed in a way no retry can mend: the key refused (401, 403), no
        such path or model (404), no POST there (405, 501: something else answers at that address,
        a static file server say), a 400 whose body names the model posted (an unknown model, as
        LiteLLM says it), no connection at all (nothing listens there), or plain HTTP where TLS was
        asked for."""
        if not self.connected or self.plain:
            return True
        if self.status in (401, 403, 404, 405, 501):
            return True
        return self.status == 400 and bool(self.model) and self.model in self.said


class UrlProblem(ValueError):
    """A URL given to convy that cannot be one: a model's base URL or an endpoint's URL without
    ``http://``, or a base URL that holds the path convy adds itself. ``value`` is what was given,
    so that the command can name the variable it came from (``loaded.UrlGiven``); the message never
    holds it when it may be a key given in the wrong place."""

    def __init__(self, message: str, value: str) -> None:
        super().__init__(message)
        self.value = value


class ModelFailure(Exception):
    """The simulated user's or the judge's model failed, or said something convy cannot use.

    The attempt gets no verdict (unless a check decided by code failed) and stays out of the pass
    rate: it says nothing about the agent. ``requests`` holds the usage of the requests that were
    answered before it failed (an answer convy could not use still took its tokens), so the run's
    totals stay honest. It is given when the failure is made and never changes: a caller that knows
    of earlier requests raises a new failure with them, ``after``.
    """

    def __init__(self, message: str, requests: tuple[Any, ...] = ()) -> None:
        super().__init__(message)
        self._requests = requests

    @property
    def requests(self) -> tuple[Any, ...]:
        return self._requests

    def after(self, earlier: tuple[Any, ...]) -> ModelFailure:
        """The same failure, of the same kind, with ``earlier`` requests counted before its own."""
        # A model may raise a ModelFailure of its own, whose text is read as an outside exception's.
        return type(self)(Outside(self).text(), (*earlier, *self._requests))


class StillBusy(ModelFailure):
    """The model's service stayed busy for longer than the participant's patience."""


class EmptyReply(ModelFailure):
    """The model answered with nothing (no text, or only whitespace): for a simulated user, its
    ``empty`` fault."""


class CutReply(ModelFailure):
    """The simulated user's reply was cut short by its service — at its token limit (finish_reason
    ``length``) or by its content filter (``content_filter``) — so it is not a whole message: it
    is never sent to the agent, and the attempt is not judged; the words say the fix."""


class ServiceFailure(ModelFailure):
    """The model's service failed the request — it could not be reached, broke the connection, did
    not answer in time, or answered with an error status (an ``HttpFailure``) — so the model never
    gave an answer to judge it by. Told apart where the failure is caught (``model.Contained``, by
    the kind of the error), never from its text, so an attempt it ends is the service's, not the model's (``NoVerdict.service``).
    """


class ConfigurationError(Exception):
    """The project, a file of it or the command's arguments cannot be used as they are.

    Its text is meant for the person who can fix it: it names the file and the field, never a value
    read from settings.
    """


class ScenarioError(ConfigurationError):
    """One or more scenario files are broken; the text has one line per problem."""

    def __init__(self, problems: tuple[str, ...]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class Problems(ValueError):
    """Several problems of one record's fields, raised by its checks at once: each line
    ``field: what is wrong``; ``layout.Layout`` says each on its own line."""

    def __init__(self, lines: tuple[str, ...]) -> None:
        super().__init__("; ".join(lines))
        self.lines = lines


class FieldProblem(msgspec.Struct, frozen=True):
    """A msgspec validation message, said as ``field.path: what is wrong``.

    ``shape`` is the type the data was converted to: with it, an unknown field is told the known
    field whose name is closest.
    """

    message: str
    shape: Any = None

    KINDS: ClassVar[dict[str, str]] = {
        "str": "text",
        "int": "a whole number",
        "float": "a number",
        "bool": "true or false",
        "object": "a mapping",
        "array": "a list",
        "null": "nothing",
    }
    SAID: ClassVar[dict[str, str]] = {
        "Integer value out of range": "a whole number too large",
        "Number out of range": "a number too large",
    }

    def text(self) -> str:
        """The message as one line: any character that is not printable is shown escaped."""
        said = self._said()
        return said if said.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in said)

    def _said(self) -> str:
        # msgspec puts the path last, and what is wrong may hold " - at `" itself: a pattern's text.
        what, at, where = self.message.rpartition(" - at `")
        if not at:
            what, where = self.message, ""
        keyed = where.startswith("key` in `")
        path = self._shown(where.removeprefix("key` in `").removeprefix("$").rstrip("`").lstrip("."))
        found = re.fullmatch(r"Object contains unknown field `(.*)`", what, re.DOTALL)
        if found and not found.group(1):
            return f"{path}: a field with an empty name" if path else "a field with an empty name"
        if found:
            name = found.group(1)
            return f"{self._joined(path, self._shown(name))}: unknown field{self._suggested(path, name)}"
        found = re.fullmatch(r"Object missing required field `(.+)`", what)
        if found:
            return f"{self._joined(path, found.group(1))}: required"
        found = re.fullmatch(r"([a-z_]+(?:\[\d+\])?(?:\.[^\s:]+)*): (.+)", what, re.DOTALL)
        if found:
            # A record's own check names the field within the record (or a path within it: a
            # tool's ``answers[0].when.seat``); when the record is itself that field (a check's
            # ``check:``), the path already names it.
            field = found.group(1)
            named = path if path == field or path.endswith(f".{field}") else self._joined(path, field)
            return f"{named}: {found.group(2)}"
        found = re.fullmatch(r"Expected `(.+?)`(?:, got `(.+)`)?", what)
        if found:
            expected = self._kind(found.group(1))
            got = f", got {self._kind(found.group(2))}" if found.group(2) else ""
            if keyed:
                return f"{path or 'the file'}: expected {expected} as a key{got}"
            return f"{path or 'the file'}: expected {expected}{got}"
        if what.startswith("Invalid enum value"):
            # msgspec repeats the value, which may be a secret pasted in the wrong place: never
            # shown; the values the field takes are, when the shape knows them.
            allowed = self._allowed(path)
            what = f"must be one of {', '.join(allowed)}" if allowed else "not one of the values it takes"
        what = self.SAID.get(what, what)
        return f"{path}: {what}" if path else what

    def _suggested(self, path: str, unknown: str) -> str:
        if self.shape is None:
            return ""
        record = self._record(msgspec.inspect.type_info(self.shape))
        for name in (part for part in re.split(r"\.|\[\d+\]", path) if part):
            field = next((field for field in record.fields if field.encode_name == name), None) if record else None
            if field is None:
                return ""
            record = self._record(field.type)
        if record is None:
            return ""
        close = difflib.get_close_matches(unknown, [field.encode_name for field in record.fields], n=1, cutoff=0.6)
        return f"; did you mean {close[0]}?" if close else ""

    def _allowed(self, path: str) -> tuple[str, ...]:
        """The values of the enumerated field at ``path`` (a ``Literal``), or none when unknown."""
        if self.shape is None:
            return ()
        shape: msgspec.inspect.Type | None = msgspec.inspect.type_info(self.shape)
        for name in (part for part in re.split(r"\.|\[\d+\]", path) if part):
            record = self._record(shape) if shape is not None else None
            field = next((field for field in record.fields if field.encode_name == name), None) if record else None
            if field is None:
                return ()
            shape = field.type
        if path.endswith("]"):  # an entry of a list: the values its entries take
            match shape:
                case msgspec.inspect.VarTupleType(item_type=item) | msgspec.inspect.ListType(item_type=item):
                    shape = item
                case _:
                    pass
        match shape:
            case msgspec.inspect.LiteralType(values=values):
                return tuple(str(value) for value in values)
            case msgspec.inspect.UnionType(types=members):
                return tuple(
                    str(value) for member in members if isinstance(member, msgspec.inspect.LiteralType) for value in member.values
                )
            case _:
                return ()

    def _record(self, shape: msgspec.inspect.Type) -> msgspec.inspect.StructType | None:
        # The record a field's type holds: itself, the items of a list, or a union's record.
        match shape:
            case msgspec.inspect.StructType():
                return shape
            case msgspec.inspect.VarTupleType(item_type=item) | msgspec.inspect.ListType(item_type=item):
                return self._record(item)
            case msgspec.inspect.UnionType(types=members):
                found = [self._record(member) for member in members]
                return next((record for record in found if record is not None), None)
            case _:
                return None

    def _shown(self, name: str) -> str:
        # A name read from a file stays on one line and never drives a terminal.
        return name if name.isprintable() else repr(name)

    def _joined(self, path: str, field: str) -> str:
        return f"{path}.{field}" if path else field

    def _kind(self, kinds: str) -> str:
        named = [self.KINDS.get(kind, kind) for kind in kinds.split(" | ")]
        shown = [kind for kind in named if kind != "nothing"] or named
        return " or ".join(shown)


def kind_of(value: Any) -> str:
    """What a value read from YAML is, in the words these messages use."""
    match value:
        case None:
            return FieldProblem.KINDS["null"]
        case dict():
            return FieldProblem.KINDS["object"]
        case list() | tuple():
            return FieldProblem.KINDS["array"]
        case bool():
            return FieldProblem.KINDS["bool"]
        case int():
            return FieldProblem.KINDS["int"]
        case float():
            return FieldProblem.KINDS["float"]
        case str():
            return FieldProblem.KINDS["str"]
        case _:
            return "something else"


class Unwritable(Exception):
    """The file system refused to write ``path``: the disk is full, a file-size limit was reached,
    or the folder is read-only. The text names the file and gives the system's reason."""

    def __init__(self, path: Path, error: OSError) -> None:
        self.path = path
        self.reason = error.strerror or str(error)
        super().__init__(f"{path}: cannot be written: {self.reason}")


class Outside(msgspec.Struct, frozen=True):
    """An exception raised by code that is not convy's (an agent's, a model's, a judge's), as convy
    blames and describes it.

    Reading an outside exception runs outside code (its ``__str__``), which may itself raise or
    return something that is not text: the description then falls back to the exception's type.
    """

    error: BaseException

    def theirs(self) -> bool:
        """Whether the exception is the failure of the code that raised it: any exception, a
        ``SystemExit`` included, but a stop of convy itself — Ctrl+C, a generator being closed, or
        a cancellation of the task convy runs the code in (the run stopping, a time limit). A
        ``CancelledError`` the code raised while nobody cancelled that task is its own doing."""
        match self.error:
            case KeyboardInterrupt() | GeneratorExit():
                return False
            case asyncio.CancelledError():
                task = asyncio.current_task()
                return task is not None and task.cancelling() == 0
            case _:
                return True

    def text(self) -> str:
        """The exception's text, or what stands for it when the text cannot be read."""
        read = self._read()
        return "(its text could not be read)" if read is None else read

    def named(self) -> str:
        """The exception's type and its text, as in ``ValueError: bad input``; its type alone
        when it has no text, and with a word that the text could not be read when it cannot."""
        name = type(self.error).__name__
        read = self._read()
        if read is None:
            return f"{name} (its text could not be read)"
        return f"{name}: {read}" if read else name

    def _read(self) -> str | None:
        try:
            # A subclass of str could run more outside code when formatted: made plain text.
            return str.__str__(str(self.error))
        except Exception:
            return None


class Unplayed(Exception):
    """The bench ended with planned attempts that were never recorded: a bug of convy's, raised so
    that a run never says it is finished with attempts missing."""


class WorkersLost(Exception):
    """The workers of a spread run kept dying (each replaced, up to ``spread.Crew.MOST_REPLACED``
    times as many as were started): the run stops, marked interrupted, what they played kept;
    ``convy resume`` plays the rest. Not the project's configuration: a machine that ran out of
    memory, a node that went away, an agent whose code ends its process."""


class DialoguesLost(Unplayed):
    """A re-judged run's source no longer holds some of the recorded dialogues it is to decide (its
    ``attempts.jsonl`` was cut, or lines of it damaged, since it finished): the run stops rather
    than say it is finished with those attempts missing. Not a bug: the text names the file."""


_Asked = TypeVar("_Asked")
_Answer = TypeVar("_Answer")
_Error = TypeVar("_Error", bound=BaseException)


async def kept(
    ask: Callable[[_Asked], Awaitable[_Answer]], each: Iterable[_Asked], kind: type[_Error]
) -> list[_Answer | _Error]:
    """``ask`` of each of ``each``, all at once, the answers in their order: an error of ``kind`` is
    kept as that one's answer, so the others finish and count (a ruling's claims, a panel's votes,
    the simulated user's checks), and the caller gets the error itself rather than an
    ``ExceptionGroup``. Any other error cancels the rest, as a task group does."""

    async def one(asked: _Asked) -> _Answer | _Error:
        try:
            return await ask(asked)
        except kind as error:
            return error

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(one(asked)) for asked in each]
    return [task.result() for task in tasks]


def first_error(group: BaseExceptionGroup) -> BaseException:
    """The first error of a group, however deeply task groups nest it: the one a run says."""
    first = group.exceptions[0]
    return first_error(first) if isinstance(first, BaseExceptionGroup) else first
