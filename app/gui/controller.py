"""The window's link to the project: reads the store and prepares plain data for widgets."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from ..media import MediaError, open_image, sample_frames
from ..records import Item, ItemSummary
from ..store import Store

PREVIEW_SIZE = (960, 720)


@dataclass(frozen=True)
class ItemView:
    """Everything the item preview shows for one item."""

    item: Item
    order: tuple[int, ...]
    media: Image.Image | None
    media_note: str


class ProjectController:
    """Owns the open project for the window. No Qt widgets here."""

    def __init__(self, store: Store, annotator: str):
        self.store = store
        self.annotator = annotator

    @property
    def path(self) -> Path:
        return self.store.path

    def item_count(self) -> int:
        return self.store.item_count()

    def page(self, offset: int, limit: int) -> list[ItemSummary]:
        return self.store.item_summaries(offset, limit)

    def view(self, item_id: int) -> ItemView:
        """Load an item, its blind display order for this annotator and a media preview."""
        item = self.store.get_item(item_id)
        order = self.store.display_order(item_id, self.annotator)
        media, note = load_preview(item)
        return ItemView(item, order, media, note)

    def close(self) -> None:
        self.store.close()


def load_preview(item: Item) -> tuple[Image.Image | None, str]:
    """The first image (or the first frame of the video) at preview size, or why not."""
    if not item.media:
        return None, "This item has no image or video."
    first = item.media[0]
    if first.path is None:
        return None, f"Missing {first.kind}: {first.ref}\n{first.problem or ''}".strip()
    try:
        if first.kind == "video":
            frame = sample_frames(first.path, 1, max_size=PREVIEW_SIZE)[0]
            return frame.image, f"{first.ref} (frame at {frame.timestamp_s:.1f} s)"
        return open_image(first.path, max_size=PREVIEW_SIZE), first.ref
    except MediaError as exc:
        return None, f"Cannot show {first.ref}:\n{exc}"
