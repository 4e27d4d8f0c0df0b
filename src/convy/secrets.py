"""Secrets: the keys, header values, query values and path tokens a run knows of, and the texts they are hidden from.

A service may echo a request in its error (a proxy's error page repeats the headers, a 404 the
path with its query), and an agent's own exception may hold its key. ``Secrets`` hides each known
secret wherever convy keeps or shows text from outside: in full, as written and as an echo may
have encoded it (percent-encoded, JSON-escaped, hexadecimal, base64 among other bytes), and any eight characters of one too, so a text
cut later, or a service that cut its own echo, shows no prefix or suffix of a key. Text is
hidden before it is cut, never after.

``Address`` is a URL as its secrets are found in it: the values of its query, the password before
its host, and the tokens in its path (a bot's ``/bot<id>:<token>/``, a webhook's last segment).

This module is a leaf: it imports nothing of convy's. What gathers a project's secrets — its
environment, its agents and models — is ``holders.py``, above the modules that define them.

A value shorter than eight characters is not taken for a secret: hiding it would blot ordinary
words, and it is too short to be a key.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from typing import Any, TypeVar
from urllib.parse import quote, quote_plus, unquote, unquote_plus

import msgspec

HIDDEN = "<hidden>"
PIECE = 8  # the shortest secret, and the length of a piece of one that is hidden as well
# Pieces no secret is made of, whatever value holds them: a URL given where a key goes (the two
# swapped in .env) would otherwise have "https://" hidden from every message that says it.
_SAID = frozenset({"https://"})

T = TypeVar("T")

# Anything shaped like a credential in a service's error, known to convy or not.
_SHAPES = (
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+"), r"\1 " + HIDDEN),
    (re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{8,}"), HIDDEN),
    # A chat bot's token, as Telegram's API takes it in the path: /bot123456789:AAHd.../sendMessage.
    (re.compile(r"(?<![\w:])\d{6,}:[A-Za-z0-9_-]{30,}"), HIDDEN),
)
# Query fields whose values are never secret, such as Azure's api-version=2024-02-15-preview.
_PLAIN_QUERY = frozenset({"api-version", "api_version", "version", "v", "model", "format", "lang", "locale"})
# A path segment that is a token: a bot's id and key (Telegram's bot123456789:AAHd..., the "bot"
# its API puts before it left shown), ...
_BOT_TOKEN = re.compile(r"(?:bot)?(\d{5,}:[A-Za-z0-9_-]{20,})")
# ... a segment of 20 characters or more holding a run of 16 letters and digits with both cases
# and a digit (a Slack or Discord webhook's token), which a name of words and numbers apart
# (Llama-3-70B-Instruct, a version, a UUID) never holds, or of hexadecimal digits (a key as hex) ...
_MIXED_TOKEN = re.compile(r"[A-Za-z0-9_-]{20,}")
_MIXED_RUN = re.compile(r"(?=[A-Za-z0-9]*[a-z])(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{16,}")
_HEX_TOKEN = re.compile(r"(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{32,}")
# ... or a key of a well-known shape.
_KEY_TOKEN = re.compile(r"(sk|pk|rk)-[A-Za-z0-9_-]{8,}")


class Concealed(Exception):
    """An error whose text held a secret, in its place as a cause: the same type's name and the
    same trace, with the secret hidden from its text."""


class Secrets(msgspec.Struct, frozen=True):
    """The secrets a run knows of. Its ``repr`` shows how many, never one."""

    values: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"Secrets(<{len(self.values)} hidden>)"

    def __add__(self, other: Secrets) -> Secrets:
        return Secrets(tuple(dict.fromkeys(self.values + other.values)))

    def hidden(self, text: str) -> str:
        """``text`` with every known secret hidden: in full, in each of its encodings, and every
        piece of eight characters of one."""
        forms = self._forms()
        if not forms or not text:
            return text
        for form in forms:
            if form in text:
                text = text.replace(form, HIDDEN)
        return self._pieces_hidden(text)

    def blotted(self, text: str) -> str:
        """``text`` hidden as ``hidden`` does, and anything shaped like a key or a credential too,
        for the error text of a service, which may echo keys convy does not know."""
        text = self.hidden(text)
        for shape, replacement in _SHAPES:
            text = shape.sub(replacement, text)
        return text

    def opening(self, text: str, length: int) -> str:
        """At most the first ``length`` characters of a service's text once blotted, reading only
        what can reach them: a window a little longer, blotted, without its last characters, where
        a secret the window cut through may have left fewer than eight."""
        window = length + 1024 + max((len(form) for form in self._forms()), default=0)
        if len(text) <= window:
            return self.blotted(text)[:length]
        return self.blotted(text[:window])[: -(PIECE - 1)][:length]

    def kept(self, value: T) -> T:
        """``value`` (a record, such as an attempt) with every secret hidden from each text in it,
        its keys included; the record itself when no secret is known."""
        if not self._forms():
            return value
        encoded = msgspec.json.encode(value)
        if not self.may_hold(encoded):
            return value
        plain = msgspec.json.decode(encoded)
        return msgspec.json.decode(msgspec.json.encode(self._walked(plain)), type=type(value))

    def cause(self, error: BaseException) -> BaseException:
        """What may stand as the cause of an error convy raises: ``error`` itself when neither its
        text nor its causes' hold a secret, else a ``Concealed`` with the same trace and the text
        hidden, its own cause likewise."""
        return self._cause(error, 0)

    def _cause(self, error: BaseException, depth: int) -> BaseException:
        text = str(error)
        deeper = error.__cause__ if error.__cause__ is not None else (
            None if error.__suppress_context__ else error.__context__
        )
        safe = self._cause(deeper, depth + 1) if deeper is not None and depth < 16 else None
        if self.hidden(text) == text and safe is deeper:
            return error
        stand_in = Concealed(f"{type(error).__name__}: {self.hidden(text)}").with_traceback(error.__traceback__)
        stand_in.__cause__ = safe
        stand_in.__suppress_context__ = True
        return stand_in

    def _walked(self, value: Any) -> Any:
        match value:
            case str():
                return self.hidden(value)
            case list():
                return [self._walked(item) for item in value]
            case dict():
                return {self.hidden(key): self._walked(item) for key, item in value.items()}
            case _:
                return value

    @functools.cache  # noqa: B019 - a frozen Secrets is its own key: its forms are made once
    def _forms(self) -> tuple[str, ...]:
        """Each secret as written and as an echo may encode it, the longest first."""
        forms: set[str] = set()
        for value in self.values:
            if len(value) < PIECE:
                continue
            encoded = {quote(value, safe=""), quote(value), quote_plus(value)}
            encoded |= {re.sub(r"%[0-9A-F]{2}", lambda found: found.group(0).lower(), one) for one in encoded}
            escaped = {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
            escaped |= {one.replace("/", "\\/") for one in escaped}
            forms |= {value, *encoded, *escaped, *self._binary(value)}
        return tuple(sorted(forms, key=lambda form: (-len(form), form)))

    def _binary(self, value: str) -> set[str]:
        """``value`` as a service may echo its bytes: in hexadecimal, and in base64 (standard and
        URL-safe) wherever it stands among other bytes (HTTP Basic's ``user:key``): at each of the
        three places a base64 group can start, the characters made of the secret's bits alone."""
        raw = value.encode("utf-8")
        forms = {raw.hex(), raw.hex().upper()}
        for shift in range(3):
            bits = 8 * (shift + len(raw))
            for encode in (base64.b64encode, base64.urlsafe_b64encode):
                encoded = encode(b"\0" * shift + raw).decode("ascii")
                # Character i holds bits 6i to 6i+6: the first ones hold bits of the bytes before
                # the secret, the last may hold bits of those after it.
                forms.add(encoded[-(-8 * shift // 6) : bits // 6])
        return {form for form in forms if len(form) >= PIECE}

    @functools.cache  # noqa: B019 - as _forms
    def _quarters(self) -> tuple[bytes, ...]:
        """The fours each form of a secret is made of, from its start (its last four too), in UTF-8."""
        found = {form[start : start + 4] for form in self._forms() for start in range(0, len(form) - 3, 4)}
        found |= {form[-4:] for form in self._forms()}
        return tuple(sorted(quarter.encode("utf-8") for quarter in found))

    def may_hold(self, data: bytes) -> bool:
        """Whether ``data``, UTF-8 text such as a record's JSON, may hold a piece of a secret: any
        eight characters of a form cover one of the fours it is made of, so a text that holds none
        of them holds no piece (and UTF-8 bytes hold a text's bytes only where they hold the text).
        A quick test for a whole record, a search per four, before the walk through its texts."""
        return any(quarter in data for quarter in self._quarters())

    @functools.cache  # noqa: B019 - as _forms
    def _pieces(self) -> tuple[str, ...]:
        """Every eight characters of every form of a secret, each once."""
        found = {form[start : start + PIECE] for form in self._forms() for start in range(len(form) - PIECE + 1)}
        return tuple(sorted(found - {HIDDEN} - _SAID))

    def _pieces_hidden(self, text: str) -> str:
        spans: list[tuple[int, int]] = []
        for piece in self._pieces():
            found = text.find(piece)
            while found != -1:
                spans.append((found, found + PIECE))
                found = text.find(piece, found + 1)
        if not spans:
            return text
        merged: list[list[int]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        parts: list[str] = []
        at = 0
        for start, end in merged:
            parts.append(text[at:start])
            parts.append(HIDDEN)
            at = end
        parts.append(text[at:])
        return "".join(parts)


class Address(msgspec.Struct, frozen=True):
    """A URL as its secrets are found in it: each value of its query as written and decoded (but
    a version's, a model's, such as Azure's ``api-version``), the user and password before its
    host (and the Basic authorization an HTTP client makes of them), and each token in its path —
    a bot's ``/bot<id>:<token>/``, a webhook's token, a key as hex or of a key's shape. A path
    segment of plain words, a version, a deployment's name or a UUID is no token and is shown."""

    url: str

    def secrets(self) -> Secrets:
        values: list[str] = []
        query = self.url.partition("?")[2].partition("#")[0]
        for pair in query.split("&"):
            name, _, given = pair.partition("=")
            if unquote_plus(name).lower() not in _PLAIN_QUERY:
                values.extend([given, unquote_plus(given)])
        authority = self._authority()
        if "@" in authority:
            credentials = authority.rpartition("@")[0]
            password = credentials.partition(":")[2]
            plain = unquote(credentials)
            # An HTTP client sends a URL's user and password as a Basic authorization header.
            sent = base64.b64encode(plain.encode()).decode("ascii")
            values.extend([credentials, password, unquote(password), plain, sent])
        values.extend(self.tokens())
        return Secrets(tuple(dict.fromkeys(value for value in values if value)))

    def tokens(self) -> tuple[str, ...]:
        """The tokens in the URL's path, as written and decoded."""
        found: list[str] = []
        for segment in self._path().split("/"):
            for written in dict.fromkeys((segment, unquote(segment))):
                bot = _BOT_TOKEN.fullmatch(written)
                if bot is not None:
                    found.append(bot.group(1))
                elif _HEX_TOKEN.fullmatch(written) or _KEY_TOKEN.fullmatch(written):
                    found.append(written)
                elif _MIXED_TOKEN.fullmatch(written) and any(
                    _MIXED_RUN.fullmatch(run) for run in re.split(r"[_-]", written)
                ):
                    found.append(written)
        return tuple(dict.fromkeys(found))

    def shown(self) -> str:
        """The URL as a message may show it: without its query, fragment, user and password, and
        with each token of its path hidden."""
        bare = self.url.split("?", 1)[0].split("#", 1)[0]
        scheme, given, rest = bare.partition("://")
        if not given:  # no scheme: all of it is the host and path
            scheme, rest = "", bare
        host, slash, path = rest.partition("/")
        for token in sorted(self.tokens(), key=len, reverse=True):
            path = path.replace(token, HIDDEN).replace(quote(token, safe=""), HIDDEN)
        return f"{scheme}{given}{host.rpartition('@')[2]}{slash}{path}"

    def _authority(self) -> str:
        return self.url.partition("://")[2].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]

    def _path(self) -> str:
        rest = self.url.partition("://")[2] if "://" in self.url else self.url
        return rest.partition("/")[2].split("?", 1)[0].split("#", 1)[0]
