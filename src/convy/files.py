"""Files convy reads from a project or a run folder, within bounds.

A path found on disk may name anything: a FIFO that blocks whoever opens it, ``/dev/zero`` that
never ends, a folder. ``RegularFile`` opens without blocking, reads only a regular file, and reads
at most as much as its caller allows: whole (``data``), or line by line with each line bounded
(``lines``). What it refuses is an ``Unreadable``, an ``OSError`` like the system's own, so a caller
says either in the same words (``error.strerror``). ``Replaced`` is a file convy writes whole,
through a temporary file it makes itself.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO, ClassVar

import msgspec

from convy.problems import Unwritable


class Unreadable(OSError):
    """A file convy will not read: not a regular file, or larger than its reader's bound."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EINVAL, reason)


class RegularFile(msgspec.Struct, frozen=True):
    """A path that must be a regular file to be read."""

    path: Path

    CHUNK: ClassVar[int] = 1024 * 1024
    # Read 64 KiB at a time, not io's 8 KiB: an attempt's line (about 4 KB) then rarely spans two
    # reads, and reading a 10,000-attempt attempts.jsonl line by line took 5 ms rather than 17.
    BUFFER: ClassVar[int] = 64 * 1024
    PIECE: ClassVar[int] = 1024 * 1024  # the most ``data`` asks of one read

    @contextmanager
    def opened(self) -> Iterator[BinaryIO]:
        """The file, open for reading; a folder is ``IsADirectoryError``, any other file that is not
        regular (a FIFO, a device, a socket) ``Unreadable``, and opening never waits."""
        descriptor = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        try:
            mode = os.fstat(descriptor).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
            if not stat.S_ISREG(mode):
                raise Unreadable("not a regular file")
            os.set_blocking(descriptor, True)
            stream = os.fdopen(descriptor, "rb", buffering=self.BUFFER)
        except BaseException:
            os.close(descriptor)
            raise
        with stream:
            yield stream

    def data(self, most: int) -> bytes:
        """The whole file, refused when larger than ``most`` bytes."""
        # Read a piece at a time: one read of ``most`` bytes makes a buffer of that size before it
        # knows the file's (16 MB for each small Python file a project's fingerprints read).
        pieces: list[bytes] = []
        held = 0
        with self.opened() as stream:
            while held <= most:
                piece = stream.read(min(self.PIECE, most + 1 - held))
                if not piece:
                    break
                pieces.append(piece)
                held += len(piece)
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        if len(data) > most:
            raise Unreadable(f"larger than {most / 1024 / 1024:g} MB")
        return data

    def lines(self, longest: int) -> Iterator[bytes | None]:
        """Each line, its newline kept (the last may lack one); a line longer than ``longest`` bytes
        is read past without being kept, and given as ``None``."""
        for _, line in self.placed(longest):
            yield line

    def placed(self, longest: int) -> Iterator[tuple[int, bytes | None]]:
        """Each line as ``lines`` gives it, with where it begins in the file (its byte offset): a
        reader that lets an attempt go may read its line again (``at``)."""
        with self.opened() as stream:
            offset = 0
            while line := stream.readline(longest + 1):
                if len(line) <= longest or line.endswith(b"\n"):
                    yield offset, line
                    offset += len(line)
                    continue
                while (rest := stream.readline(self.CHUNK)) and not rest.endswith(b"\n"):
                    pass
                yield offset, None
                offset = stream.tell()

    def at(self, offsets: Iterable[int], longest: int) -> Iterator[bytes]:
        """The line that begins at each of ``offsets``, in their order, read through one open file
        (at most ``longest`` bytes of it)."""
        with self.opened() as stream:
            for offset in offsets:
                stream.seek(offset)
                yield stream.readline(longest + 1)


class Shipped(msgspec.Struct, frozen=True):
    """A file that ships inside the convy package (a default prompt, a part of the pages), read
    through the package's own loader (this module's, at the package's top): found the same in a zip as on disk, without
    ``importlib.resources``, whose import (tempfile, shutil, random) cost every command about a
    third of asyncio's."""

    parts: tuple[str, ...]  # the path inside the package, as its parts: ("pages", "base.js")

    def data(self) -> bytes:
        """The file's bytes; an ``OSError`` when the package holds no such file."""
        # This module's own loader and folder are the package's: it lies at the package's top.
        loader = __spec__.loader if __spec__ is not None else None
        where = os.path.join(os.path.dirname(__file__), *self.parts)
        if loader is None or not hasattr(loader, "get_data"):
            return Path(where).read_bytes()
        return bytes(loader.get_data(where))

    def text(self) -> str:
        return self.data().decode("utf-8")

    def exists(self) -> bool:
        try:
            self.data()
        except OSError:
            return False
        return True


class Delivered(msgspec.Struct, frozen=True):
    """A file the command writes for someone else to read (a JUnit file, a Markdown summary), where
    the user named it: its folder made, written whole through ``Replaced``; a refused write is
    ``Unwritable``, which the command says in one line."""

    path: Path

    def written(self, data: bytes) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            Replaced(self.path).written((data,))
        except OSError as error:
            raise Unwritable(self.path, error) from error


class Replaced(msgspec.Struct, frozen=True):
    """A file convy writes whole: into ``<name>.<pid>.tmp``, a file it makes itself (whatever stood
    at that name is removed first: a FIFO there would block the write, a link lead it elsewhere),
    then renamed over ``path``, so a reader finds the old file or the new one, never half of one.
    The name is the writing process's own: two processes writing one page at once (a run's live
    report and another run's, both rebuilding the index) never write into, or rename, each other's
    half. A write that fails leaves no ``.tmp`` behind and raises the ``OSError``; one that succeeds
    removes the ``.tmp`` a writer killed halfway left (its process gone)."""

    path: Path

    def written(self, parts: Iterable[bytes]) -> None:
        """Write ``parts``, each as it is made (a report's pieces are made while it is written)."""
        self._replaced(parts, synced=False)

    def synced(self, data: bytes) -> None:
        """Write ``data`` and flush it to the disk before the rename: after a power loss the file
        is the old one or the new one, never an empty one."""
        self._replaced((data,), synced=True)

    def _replaced(self, parts: Iterable[bytes], synced: bool) -> None:
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            temporary.unlink(missing_ok=True)
            with temporary.open("xb") as file:
                file.writelines(parts)
                if synced:
                    file.flush()
                    os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:  # a full disk, a file-size limit, a read-only folder, Ctrl+C mid-write
            with suppress(OSError):
                temporary.unlink(missing_ok=True)
            raise
        self._swept()

    def _swept(self) -> None:
        """Remove the ``.tmp`` a writer of this file left when it was killed halfway (SIGKILL, or
        a second Ctrl+C while it cleaned up): one whose process is no longer running. Another
        writer's, still running, is its own."""
        name = self.path.name
        with suppress(OSError):
            for path in self.path.parent.iterdir():
                if not (path.name.startswith(name + ".") and path.name.endswith(".tmp")):
                    continue
                pid = path.name[len(name) + 1 : -len(".tmp")]
                if not pid.isdigit() or int(pid) == os.getpid():
                    continue
                try:
                    os.kill(int(pid), 0)
                except ProcessLookupError:  # ended: what it left is nobody's
                    with suppress(OSError):
                        path.unlink()
                except (PermissionError, OverflowError):  # running, as another user; or no process's number
                    continue
