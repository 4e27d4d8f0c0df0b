"""``convy labels``: people's labels for a run's claims, and how the judge agrees with them."""

from __future__ import annotations

from pathlib import Path

import msgspec

from convy.cli.console import LabelsSaid, Shown
from convy.project import Project
from convy.report import Summary
from convy.terminal import Inert


class LabelsCommand(msgspec.Struct, frozen=True):
    """``convy labels add RUN FILE`` keeps a labels file the report's page downloaded in the run's
    folder (``labels.jsonl``); ``convy labels show RUN`` says how the run's decisions agree with
    the labels it has (its own and its sources'). Neither takes the run's lock: see ``labels.py``."""

    project: Project
    wanted: str
    file: Path | None = None

    def run(self, shown: Shown, errors: Shown) -> int:
        from convy.labels import LabelsDownload, LabelsKept

        journal = self.project.found(self.wanted)
        where = journal.folder.relative_to(self.project.folder)
        if self.file is not None:
            labels = LabelsDownload(self.file).read()
            added = LabelsKept(journal.folder).added(labels)
            shown.line(
                f"labels: {added.added} added, {added.known} kept already; {where / LabelsKept.NAME} keeps {added.kept}"
            )
            made = labels.run
            if (made.agent, made.id) != (journal.folder.parent.name, journal.folder.name):
                errors.line(
                    f"note: {Inert(self.file.name).line()} was made on run {Inert(made.agent).line()}/{Inert(made.id).line()}; "
                    "labels follow their dialogues, so they count wherever these dialogues are"
                )
        read = self.project.read(journal.folder.name)
        if read.problem:  # a damaged run.json: its own labels still count, a source it names cannot
            errors.line(f"read {where}: {read.problem}")
        agreement = Summary(read).agreement()
        if agreement is None:
            shown.line(f"{where}: no labels")
            return 0
        for line in LabelsSaid(agreement).lines():
            shown.line(line)
        return 0
