"""The three pages as standalone HTML files: a run's report, a comparison of two runs, the index.

A page is one file that works opened from disk: its styles, scripts and icon are inlined from the
assets in ``convy/pages/``, and its data is the view record embedded as JSON in
``<script type="application/json">`` with every ``<`` written ``\\u003c``, so no text an agent said
can close the tag. The page's Content-Security-Policy allows only the one inline script, by its
hash, and no request anywhere: what the data holds is drawn as text and can run nothing.

A run report keeps its dialogues apart from the tables, and a comparison its pairs of attempts:
they are ``Packed``, gzipped in chunks of consecutive attempts (of a report, keyed
``<scenario>#<attempt>``) or scenarios (of a comparison) and written in base64, one JSON block
each, and the page reads and inflates a chunk (``DecompressionStream``) only when a window needs
one of its values or soon may (a report's row pointed at or focused, its first rows once the page
is idle), so a run of thousands of attempts opens as fast as its tables draw.
A chunk holds scenarios until its JSON reaches ``Packed.limit`` bytes (256 KiB; a larger scenario
is a chunk of its own), gzipped at level 1. One gzip per scenario compressed each alone: 10,000 scenarios of one
attempt each carried 10,000 gzip headers and lost what consecutive dialogues share (the window
of gzip is 32 KiB). A chunk this size inflates and parses in a few milliseconds. Each chunk is
gzipped in a thread beside the one that makes the next (``Packed.chunks``).

The window's records are written as arrays of their fields' values (``views.py``), so the index
block carries their ``PackedLayout``: each record's field names, in order, read from the records
themselves (``Fields``), by which the page reads a value back into objects when it draws it.
"""

from __future__ import annotations

import base64
import hashlib
import html
import itertools
import time
import zlib
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from types import UnionType
from typing import Any, ClassVar, Union, get_args, get_origin

import msgspec

from convy.files import Shipped
from convy.report import Summary
from convy.views import ComparisonView, DialogueView, IndexView, LiveView, Pair, RunView

_ENCODER = msgspec.json.Encoder()
# Where a report's data block puts a part encoded on its own (``ReportPage._data``): a byte no JSON
# msgspec writes holds unescaped.
_MARK_BYTES = b"\x00"
_MARK = msgspec.Raw(_MARK_BYTES)


class JsonBlock(msgspec.Struct, frozen=True):
    """One JSON block of a page: its element id and its encoded JSON."""

    id: str
    json: bytes

    def html(self) -> str:
        text = self.json.decode("utf-8").replace("<", "\\u003c")
        return f'<script type="application/json" id="{self.id}">{text}</script>'

    def pieces(self) -> Iterator[str]:
        """``html()`` and a line break, in pieces (``Flowing.pieces``)."""
        return Flowing(self.id, (self.json,)).pieces()


class Flowing(msgspec.Struct, frozen=True):
    """A JSON block written as its JSON is made: ``parts``, taken one by one, are its encoded
    JSON in order (a report's view around its attempts tables, each row encoded as it is
    reached), and its text is written in pieces of about ``PIECE`` bytes of it, so that neither
    its JSON nor its text is ever held whole (the JSON, and three copies of it as text, were)."""

    id: str
    parts: Iterable[bytes | bytearray]

    # A piece is held about five times at once while it is written (the bytes taken, their copy,
    # the text, the text with its ``<`` written out, and the bytes the file is given): at 1 MiB
    # that was 5 MiB of a report's peak once its tables passed a MiB (a run of about 5,000
    # attempts), which the measured slope of a run's memory counted as bytes an attempt.
    PIECE: ClassVar[int] = 64 * 1024

    def html(self) -> str:
        """As ``JsonBlock.html()``: the block whole (``parts`` walked again: they must be a
        collection, not an iterator, to be asked twice)."""
        return "".join(self.pieces()).removesuffix("\n")

    def pieces(self) -> Iterator[str]:
        """What ``JsonBlock.html()`` and a line break give for the JSON the parts join to."""
        yield f'<script type="application/json" id="{self.id}">'
        held = bytearray()
        for part in self.parts:
            # A long part (a chunk of dialogues, in base64) is taken a piece at a time, not copied
            # whole into what is held beside itself.
            whole = memoryview(part)
            for start in range(0, len(whole), self.PIECE):
                held += whole[start : start + self.PIECE]
                while len(held) > self.PIECE:  # a byte past the piece: a cut can see where a character ends
                    yield self._text(held, self.PIECE)
        while held:
            yield self._text(held, len(held))
        yield "</script>\n"

    def _text(self, held: bytearray, most: int) -> str:
        """The first ``most`` bytes of ``held`` or a little fewer (never part of a character),
        taken out of it, as text, a ``<`` written so that no tag can close early."""
        end = most
        while end < len(held) and held[end] & 0xC0 == 0x80:  # a character's later byte
            end -= 1
        text = held[:end].decode("utf-8").replace("<", "\\u003c")
        del held[:end]
        return text


class Template(msgspec.Struct, frozen=True):
    """A page's frame: the shared parts, the scenario window where the page uses it, its own script.

    ``script`` names the page's own script in ``convy/pages``; a stylesheet of the same stem is
    inlined too when there is one.
    """

    script: str
    window: bool = False

    def part(self, name: str) -> str:
        return Shipped(("pages", name)).text()

    def has(self, name: str) -> bool:
        return Shipped(("pages", name)).exists()

    def style(self) -> str:
        names = ["base.css"] + (["window.css", "labels.css"] if self.window else [])
        own = self.script.rsplit(".", 1)[0] + ".css"
        if self.has(own):
            names.append(own)
        return "\n".join(self.part(name) for name in names)

    def code(self) -> str:
        names = ["base.js"] + (["window.js", "labels.js"] if self.window else []) + [self.script]
        return "\n".join(self.part(name) for name in names)

    def icon(self) -> str:
        return "data:image/svg+xml;base64," + base64.b64encode(self.part("icon.svg").encode("utf-8")).decode("ascii")

    def html(self, title: str, blocks: Iterable[JsonBlock]) -> str:
        """The whole page: ``title`` as text, the data ``blocks``, the inlined parts."""
        return "".join(self.parts(title, blocks))

    def parts(self, title: str, blocks: Iterable[JsonBlock | Flowing]) -> Iterator[str]:
        """The page in pieces, in order, each block's text made only when it is reached: written
        as they come, a report never holds its whole text (nor each chunk twice) at once."""
        style, code = self.style(), self.code()
        if "</style" in style.lower() or "</script" in code.lower():
            raise ValueError("a page part must not close its own tag")
        digest = base64.b64encode(hashlib.sha256(code.encode("utf-8")).digest()).decode("ascii")
        policy = (
            "default-src 'none'; "
            f"script-src 'sha256-{digest}'; "
            "style-src 'unsafe-inline'; "
            "img-src data:; "
            "base-uri 'none'; form-action 'none'"
        )
        head = [
            "<!doctype html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{policy}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="color-scheme" content="light dark">',
            f"<title>{html.escape(title)}</title>",
            f'<link rel="icon" href="{self.icon()}">',
            f"<style>\n{style}\n</style>",
            "</head>",
            "<body>",
            '<noscript><p class="noscript">This page draws its data with JavaScript: allow scripts to see it.</p></noscript>',
            '<div id="app"></div>',
        ]
        yield "\n".join(head) + "\n"
        for block in blocks:
            yield from block.pieces()
            del block  # a block's JSON is let go as soon as it is written, not once the next is made
        yield "\n".join([f"<script>{code}</script>", "</body>", "</html>", ""])


class PackedLayout(msgspec.Struct, frozen=True):
    """How the page reads packed values back into objects: ``kind`` names the values' record type,
    and ``records`` gives it and every record type it holds, each as its fields in the order they
    are declared, with what a field holds: a record type's name, ``[name]`` for a list of them,
    ``None`` for plain data. A record written as an array (``array_like``) is read by position,
    one written as an object by name; either way the page gets the object the names make."""

    kind: str
    records: dict[str, list[tuple[str, str | list[Any] | None]]]


class Fields(msgspec.Struct, frozen=True):
    """A record type, and the ``PackedLayout`` of its values: its fields and those of the records it
    holds, read from the records themselves (``msgspec.structs.fields``), so their order is
    declared once, in ``views.py``."""

    kind: type[msgspec.Struct]

    def layout(self) -> PackedLayout:
        records: dict[str, list[tuple[str, str | list[Any] | None]]] = {}
        self._laid(self.kind, records)
        return PackedLayout(self.kind.__name__, records)

    def _laid(self, kind: type[msgspec.Struct], records: dict[str, list[tuple[str, str | list[Any] | None]]]) -> str:
        name = kind.__name__
        if name not in records:
            records[name] = []  # before its fields: a record that held its own kind would be laid once
            records[name] = [(field.encode_name, self._held(field.type, records)) for field in msgspec.structs.fields(kind)]
        return name

    def _held(self, kind: object, records: dict[str, list[tuple[str, str | list[Any] | None]]]) -> str | list[Any] | None:
        """What a field of this type holds, as ``PackedLayout`` says it."""
        if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
            return self._laid(kind, records)
        origin = get_origin(kind)
        if origin is list or origin is tuple:
            inner = self._held(get_args(kind)[0], records)
            return None if inner is None else [inner]
        if origin is Union or origin is UnionType:
            held = [one for one in (self._held(arm, records) for arm in get_args(kind)) if one is not None]
            if len(held) > 1:
                raise ValueError(f"{kind}: a field of several kinds of record cannot be laid out for the page")
            return held[0] if held else None
        return None


class PackedIndex(msgspec.Struct, frozen=True):
    """The index block of packed data: how many chunks, the chunk that holds each key, and the
    ``PackedLayout`` of the values when they are records."""

    count: int
    where: dict[str, int]
    layout: PackedLayout | None = None


class PackedChunks(msgspec.Struct, frozen=True):
    """``Packed`` data: ``chunks``, each a JSON object ``{key: value}`` gzipped and in base64,
    ``where``, the chunk that holds each key, and the values' ``layout`` when they are records."""

    chunks: list[str]
    where: dict[str, int]
    layout: PackedLayout | None = None

    def blocks(self, name: str) -> Iterator[JsonBlock]:
        """Block ``name`` holds the index (``PackedIndex``), and block ``name-i`` chunk ``i`` as a JSON
        string: the page reads only the chunk it needs, never the whole of them. Each made when
        it is asked for."""
        yield JsonBlock(name, _ENCODER.encode(PackedIndex(count=len(self.chunks), where=self.where, layout=self.layout)))
        for number, chunk in enumerate(self.chunks):
            yield JsonBlock(f"{name}-{number}", _ENCODER.encode(chunk))


def _checked(key: str, check: int) -> int:
    """``check``, a CRC-32 of the keys so far, taken on over ``key`` led by its length in bytes: keys
    run together with nothing between them would give one CRC for the same bytes cut otherwise
    (``ab``, ``c`` and ``a``, ``bc``), and none at all for a key of no bytes. What ``Packed.blocks``
    notes of each key it packs, and ``Where`` of each it walks again."""
    encoded = key.encode()
    return zlib.crc32(encoded, zlib.crc32(b"%d:" % len(encoded), check))


class Where(msgspec.Struct, frozen=True):
    """A packed index's JSON (``PackedIndex``), in parts, each time it is walked: ``before`` and
    ``after`` its ``where``, whose entries, ``"key":chunk`` as a dict of them encodes, are written
    from the ``keys`` walked again, the first ``counts[0]`` in chunk 0 and so on, a few KiB at a
    time. Held so, a report's index is a number a chunk, not about 25 bytes an attempt (and, as it
    was written, four copies of it at once). Keys that are not the ones packed (``check``, a CRC-32
    of them) are a ``ValueError``: the index would send the page to the wrong chunk."""

    before: bytes
    after: bytes
    keys: Callable[[], Iterable[str]]
    counts: array[int]
    check: int

    PART: ClassVar[int] = 64 * 1024

    def __iter__(self) -> Iterator[bytes]:
        yield self.before
        entries = bytearray(b"{")
        encode = _ENCODER.encode
        check = 0
        keys = iter(self.keys())
        first = True
        for number, count in enumerate(self.counts):
            chunk = b":%d" % number
            for key in itertools.islice(keys, count):
                check = _checked(key, check)
                if not first:
                    entries += b","
                first = False
                entries += encode(key)
                entries += chunk
                if len(entries) >= self.PART:
                    yield bytes(entries)
                    entries.clear()
        if check != self.check or next(keys, None) is not None:
            raise ValueError("a packed index's keys walked again are not the keys packed")
        entries += b"}"
        yield bytes(entries)
        yield self.after


class Packed(msgspec.Struct, frozen=True):
    """Values by key (a scenario id), packed in gzipped chunks of consecutive keys.

    ``values`` are taken one by one, each encoded and gzipped with its chunk as it comes: a
    report's dialogues are made as they are packed, so no more than one chunk of them is ever
    held as JSON (all of a 10,000-attempt run's, at once, were 52 MB). ``keys`` gives their keys
    again, in the same order, without the values (a report's: from its rows, no line read), for
    the index ``blocks`` writes last; without it, ``values`` are walked again for their keys and
    must then be a collection."""

    values: Iterable[tuple[str, object]]
    limit: int = 256 * 1024
    kind: type[msgspec.Struct] | None = None  # the values' record type, for the page to read them back
    keys: Callable[[], Iterable[str]] | None = None

    def chunks(self) -> PackedChunks:
        """Every chunk, held, with the index: what a comparison's page packs."""
        where: dict[str, int] = {}
        chunks = list(self._each(where.__setitem__))
        return PackedChunks(chunks=chunks, where=where, layout=self._layout())

    def blocks(self, name: str) -> Iterator[JsonBlock | Flowing]:
        """The blocks ``PackedChunks.blocks`` gives, each chunk's made as soon as it is packed and the
        index (``PackedIndex``) last, once every key's chunk is known: a page written as it is made
        holds one or two chunks at a time, not every one (a varied run's report held 2.8 KB of
        them an attempt). The page's script, after every block, reads them by id, in any order.
        The index is not held while the chunks are packed, only how many keys each chunk took
        (``Where``): its entries are written from the keys walked again. The keys must not repeat
        (a report's dialogues: one a kept attempt), as a dict would have taken a repeat's place."""
        counts = array("I")  # the keys each chunk took, in order: the keys of one chunk are consecutive
        check = [0]  # a CRC-32 of the keys as they were packed, which the keys walked again must give

        def noted(key: str, number: int) -> None:
            if number == len(counts):
                counts.append(0)
            counts[number] += 1
            check[0] = _checked(key, check[0])

        count = 0
        for chunk in self._each(noted):
            yield JsonBlock(f"{name}-{count}", _ENCODER.encode(chunk))
            count += 1
        where = msgspec.structs.replace(PackedIndex(count=count, where={}, layout=self._layout()), where=_MARK)
        before, after = _ENCODER.encode(where).split(_MARK_BYTES)
        keys = self.keys or (lambda: (key for key, _ in self.values))
        yield Flowing(name, Where(before, after, keys, counts, check[0]))

    def _layout(self) -> PackedLayout | None:
        return None if self.kind is None else Fields(self.kind).layout()

    def _each(self, noted: Callable[[str, int], None]) -> Iterator[str]:
        """Each chunk in order, gzipped and in base64, as soon as it is done; ``noted`` told the
        chunk of each key as the values are taken."""
        # Each chunk is gzipped in a thread of its own while the next one's values are made and
        # encoded: zlib lets go of the interpreter while it compresses, so on a machine with a
        # core to spare the gzip of a report (a tenth of its time) is done meanwhile. The thread
        # needs the interpreter to start and to end each chunk, and would wait for this one to
        # let go of it (every 5 ms, the switch interval) while it encodes: it is let go at once
        # as each chunk is handed over (``sleep(0)``). Without that, most of the gzip was still
        # left when the last chunk was handed over (0.06-0.08 s of 0.08, at load 2.5). A chunk is
        # handed over only once the one two before it is done (and given out), so that a thread
        # left behind (no core to spare, text that compresses slowly) holds two chunks' JSON, not
        # all of them (25 MiB more at the peak of whole.py's varied run).
        # A chunk's JSON is encoded straight into one buffer (``encode_into``, at its end), not
        # value by value and joined: each of its bytes is written once.
        packing: deque[Future[str]] = deque()
        number = 0
        encode, into = _ENCODER.encode, _ENCODER.encode_into
        chunk = bytearray(b"{")
        with ThreadPoolExecutor(1, thread_name_prefix="convy-gzip") as gzip:
            for key, value in self.values:
                if len(chunk) > 1:
                    chunk += b","
                chunk += encode(key)
                chunk += b":"
                into(value, chunk, -1)
                noted(key, number)
                if len(chunk) >= self.limit:
                    while len(packing) >= 2:
                        yield packing.popleft().result()
                    chunk += b"}"
                    packing.append(gzip.submit(self._packed, chunk))
                    number += 1
                    time.sleep(0)
                    chunk = bytearray(b"{")
            if len(chunk) > 1:
                chunk += b"}"
                packing.append(gzip.submit(self._packed, chunk))
            while packing:
                yield packing.popleft().result()

    def _packed(self, chunk: bytearray) -> str:
        """A chunk's JSON, gzipped, in base64."""
        # Level 1: a third of level 6's time (0.9 s against 2.6 s for the 89 MB of dialogues of
        # 10,000 varied attempts) for about a fifth more bytes; the report is built at the end of
        # every run, and gzip was the largest part of its time. In gzip's format (wbits 31) by one
        # zlib call, with no checksum taken over the chunk a second time nor header joined on.
        return base64.b64encode(zlib.compress(chunk, 1, 31)).decode("ascii")


class ReportPage(msgspec.Struct, frozen=True):
    """A run's report: its tables embedded whole, its dialogues packed in chunks; ``live``, when
    it is written again while the run plays (a block the page reads to reload itself)."""

    summary: Summary
    live: LiveView | None = None

    def dialogues(self) -> PackedChunks:
        """Each attempt in full (a ``DialogueView``), packed by ``<scenario id>#<attempt>``: a
        window opens one attempt, and inflates only the chunk that holds it (a scenario of 1,000
        attempts packed as one value made every window inflate and parse megabytes)."""
        return self._dialogues().chunks()

    def _dialogues(self) -> Packed:
        # Each made as it is packed: neither the tree of every attempt's view nor its JSON is kept,
        # nor, at the end of a run, the attempt in full (``Summary.said``: read again from its line).
        summary = self.summary
        return Packed(
            ((f"{scenario}#{attempt.outcome.attempt}", attempt.dialogue()) for scenario, attempt in summary.said()),
            kind=DialogueView,
            keys=lambda: (f"{scenario}#{attempt}" for scenario, attempt in summary.order()),
        )

    def html(self) -> str:
        return "".join(self.parts())

    def parts(self) -> Iterator[str]:
        """The page in pieces (``Template.parts``). Its data, the view, is written as it is
        encoded: each scenario's attempts table a row at a time (``Summary.table``), never held."""
        view = self.summary.framed()
        title = f"{view.header.agent} · {view.header.run} · convy"
        yield from Template("report.js", window=True).parts(title, self._blocks([view]))

    def _blocks(self, held: list[RunView]) -> Iterator[JsonBlock | Flowing]:
        """The data block, made from the view taken out of ``held`` (so that nothing else holds
        it once written), then the live block, then the dialogues' blocks as they are packed."""
        yield Flowing("data", self._data(held.pop()))
        if self.live is not None:
            yield JsonBlock("live", _ENCODER.encode(self.live))
        yield from self._dialogues().blocks("dialogues")

    def _data(self, view: RunView) -> Iterator[bytes]:
        """The JSON of ``Summary.view()``, in parts: ``view`` (``Summary.framed``) encoded with a
        mark where its scenarios go, each scenario with one where its attempts go, and each
        scenario's rows encoded one by one in their place. The mark is a byte JSON never holds
        unescaped (a control character), so it is found only where it was put."""
        outer = _ENCODER.encode(msgspec.structs.replace(view, scenarios=[_MARK]))
        before, after = outer.split(_MARK_BYTES)
        yield before
        for number, scenario in enumerate(view.scenarios):
            inner = _ENCODER.encode(msgspec.structs.replace(scenario, attempts=[_MARK]))
            head, tail = inner.split(_MARK_BYTES)
            yield (b"," + head) if number else head
            for at, row in enumerate(self.summary.table(scenario.id)):
                yield (b"," + _ENCODER.encode(row)) if at else _ENCODER.encode(row)
            yield tail
        yield after


class ComparisonPage(msgspec.Struct, frozen=True):
    """Two runs compared: the view without its pairs, and the pairs packed by scenario id."""

    view: ComparisonView

    def pairs(self) -> PackedChunks:
        return Packed([(pair.scenario, pair) for pair in self.view.pairs], kind=Pair).chunks()

    def html(self) -> str:
        base, candidate = self.view.base, self.view.candidate
        return Template("comparison.js", window=True).html(
            f"{base.run} → {candidate.run} · convy",
            (JsonBlock("data", _ENCODER.encode(msgspec.structs.replace(self.view, pairs=[]))), *self.pairs().blocks("pairs")),
        )


class IndexPage(msgspec.Struct, frozen=True):
    """Every run, its trend per agent, and the comparisons made."""

    view: IndexView
    live: LiveView | None = None

    def html(self) -> str:
        live = () if self.live is None else (JsonBlock("live", _ENCODER.encode(self.live)),)
        return Template("index.js").html("runs · convy", (JsonBlock("data", _ENCODER.encode(self.view)), *live))
