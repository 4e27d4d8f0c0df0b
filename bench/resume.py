"""Benchmark of ``convy resume`` of a large run, beside the same command of a base convy (by
default the ``main`` branch), as whole processes measured by ``os.wait4`` (see ``whole.py``).

The run is bench/whole.py's: ``--scenarios`` (10) x ``--attempts`` (1,000) attempts of 6 turns
with instant fakes and 100 places, played once by each side in a project of its own. Its last
``--missing`` (10) lines are then cut from ``attempts.jsonl`` and ``run.json`` marked interrupted,
as a run stopped near its end; that folder is kept aside and put back before every timed resume,
so each resume reads the same 9,990 kept attempts, plays the 10 missing, and writes the report and
the index. ``--missing 0`` resumes a finished run: it plays nothing, and reads and reports only.
Base and candidate are interleaved, ``--repeat`` times, and the best of each is shown.

    python bench/resume.py                           # about a minute
    python bench/resume.py --missing 0 --repeat 5
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import msgspec
from whole import Made, Measured, Side, best, first_run, header, shown, sides_parser, unpacked

HERE = Path(__file__).resolve().parent.parent


class Stopped(msgspec.Struct, frozen=True):
    """A side's run folder cut back to a run stopped ``missing`` attempts before its end, kept aside."""

    side: Side
    missing: int

    def project(self) -> Path:
        return self.side.root / "project"

    def folder(self) -> Path:
        return self.project() / "results" / "shop" / first_run(self.project())

    def aside(self) -> Path:
        return self.side.root / "stopped"

    def made(self) -> None:
        folder = self.folder()
        path = folder / "attempts.jsonl"
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[: len(lines) - self.missing]))
        if self.missing:
            run = msgspec.json.decode((folder / "run.json").read_bytes())
            run["status"] = {"type": "interrupted", "started": run["status"]["started"], "ended": run["status"]["ended"]}
            (folder / "run.json").write_bytes(msgspec.json.encode(run))
        for name in ("report.html", "summary.json", "run.lock"):
            (folder / name).unlink(missing_ok=True)
        shutil.copytree(folder, self.aside())

    def resumed(self) -> Measured:
        folder = self.folder()
        shutil.rmtree(folder)
        shutil.copytree(self.aside(), folder)
        return self.side.child(["-C", str(self.project()), "resume", folder.name]).measured()


def main() -> None:
    parser = sides_parser(__doc__)
    parser.add_argument("--missing", type=int, default=10)
    options = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="convy-resume-"))
    try:
        base_src = options.base or unpacked(options.base_commit, root)
        header(base_src)
        sides = [Side("base", base_src, root / "base-side"), Side("this", HERE / "src", root / "this-side")]
        stopped = [Stopped(side, options.missing) for side in sides]
        made = Made(options.scenarios, options.attempts, 100)
        for one in stopped:
            one.side.root.mkdir()
            made.write(one.project())
            one.side.child(["-C", str(one.project()), "run"]).measured()
            one.made()
        found: dict[str, list[Measured]] = {one.side.name: [] for one in stopped}
        for _ in range(options.repeat):
            for one in stopped:
                found[one.side.name].append(one.resumed())
        kept = options.scenarios * options.attempts - options.missing
        shown(
            f"convy resume of a run of {options.scenarios * options.attempts:,} attempts that keeps {kept:,} "
            f"(plays {options.missing}, then the report and the index)",
            *(best(found[one.side.name]) for one in stopped),
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
