"""What packing and merging report: counts per input, conflicts, the whole merge."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..store.merge import CopyCounts


@dataclass
class PackResult:
    """What :func:`pack_project` wrote."""

    path: Path
    annotator: str
    project_id: str
    source_project_id: str
    items: int = 0
    labels: int = 0
    display_orders: int = 0
    media_files: int = 0
    missing_media: int = 0
    collection: str | None = None
    #: ``table.column`` of the source's columns a fresh project lacks (added to it by hand)
    columns_not_copied: list[str] = field(default_factory=list)
    #: files a killed earlier pack into the same place had left (``*.tmp``, unused media)
    leftovers_removed: int = 0
    #: why media files of the source were not packed (not an image or video by their header …)
    media_refused: list[str] = field(default_factory=list)

    def message(self) -> str:
        """What ``pairscope pack`` says: the counts, and the one file to send."""
        missing = f" ({self.missing_media} missing, listed by pairscope info --missing)" if self.missing_media else ""
        return (
            f"packed {self.items} items, {self.labels} labels and {self.media_files} media files{missing}"
            f" for {self.annotator}; send {self.path} (one file: its media are inside it)"
        )


@dataclass(frozen=True)
class Conflict:
    """An item whose content differs: ``output_from`` is the project the output's version
    came from (the output itself, or the input that added it during this merge)."""

    ext_id: str
    input: str
    output_from: str
    output_hash: str
    input_hash: str

    def __str__(self) -> str:
        return (
            f"item {self.ext_id!r}: content in {self.input} differs from the version taken from "
            f"{self.output_from}; kept that version, merged the labels onto it"
        )


@dataclass
class InputReport(CopyCounts):
    """What merging one input did: the copier's counts of rows written (``*_added``), of rows the
    output already held (``*_present``; display orders: ``*_differing`` when the output's
    differs), plus conflicts and media files. An input with a row that breaks the rules is
    refused whole, so nothing is ever dropped."""

    path: str = ""
    project_id: str | None = None
    conflicts: int = 0
    media_files: int = 0
    #: why media of the input were not copied: a path leaving its own media store, a file that
    #: is no image or video (missing files are counted in ``missing_media``)
    media_refused: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(
            (
                self.items_added,
                self.annotators_added,
                self.labels_added,
                self.display_orders_added,
                self.runs_added,
                self.verdicts_added,
                self.collections_added,
                self.collection_items_added,
                self.label_schemas_added,
            )
        )


@dataclass
class MergeReport:
    """What :func:`merge_projects` did, per input, plus every conflict and skipped input."""

    out: Path
    created: bool = False
    inputs: list[InputReport] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: files a killed earlier merge into ``out`` had left (``*.tmp``, unused media)
    leftovers_removed: int = 0

    @property
    def labels_added(self) -> int:
        return sum(r.labels_added for r in self.inputs)

    @property
    def changed(self) -> bool:
        return any(r.changed for r in self.inputs)
