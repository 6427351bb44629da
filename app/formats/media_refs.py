"""Media references in a dataset: where a reference may point, what a file must be, and
image bytes carried inside a file (Parquet).

A reference is resolved *lexically* against the media root (``--media-root``) or the
dataset's folder and must stay inside it: an absolute path or a ``..`` that climbs out is
refused per item unless the user passes ``--allow-outside-media``. Symbolic links inside the
folder are followed (the Hugging Face cache keeps files as links into ``blobs/``): the
dataset's author put them there. A file is accepted only when its first bytes say it is an
image or a video of the kind the row names, so a row naming ``~/.aws/credentials`` can
never bring that file into a project, an export or a pack. A reference no file system can
hold (a name over 255 bytes, a path over 4,096 bytes, a NUL) is refused before any lookup.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..durable import Made, content_name, store_content

#: (offset, magic bytes, kind, suffix) — checked in order.
_SIGNATURES: tuple[tuple[int, bytes, str, str], ...] = (
    (0, b"\x89PNG", "image", ".png"),
    (0, b"\xff\xd8\xff", "image", ".jpg"),
    (0, b"GIF87a", "image", ".gif"),
    (0, b"GIF89a", "image", ".gif"),
    (0, b"BM", "image", ".bmp"),
    (0, b"II*\x00", "image", ".tif"),
    (0, b"MM\x00*", "image", ".tif"),
    (0, b"\x1aE\xdf\xa3", "video", ".webm"),  # Matroska / WebM
    (0, b"\x00\x00\x01\xba", "video", ".mpg"),
    (0, b"FLV", "video", ".flv"),
    (0, b"OggS", "video", ".ogv"),
    (0, b"0&\xb2u\x8ef\xcf\x11", "video", ".wmv"),
)
_IMAGE_BRANDS = (b"avif", b"avis", b"heic", b"heix", b"mif1", b"msf1")

#: The longest file or folder name (bytes, UTF-8) and path that Linux and macOS file systems hold.
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4096


def sniff_media(header: bytes) -> tuple[str, str] | None:
    """``(kind, suffix)`` of a file from its first 16 bytes; ``None`` when it is neither an
    image nor a video PairScope can show."""
    if header[:4] == b"RIFF" and header[8:12] == b"WEBP":
        return "image", ".webp"
    if header[:4] == b"RIFF" and header[8:12] == b"AVI ":
        return "video", ".avi"
    if header[4:8] == b"ftyp":  # ISO media: MP4, MOV, 3GP — or an AVIF/HEIF still image
        return ("image", ".avif") if header[8:12] in _IMAGE_BRANDS else ("video", ".mp4")
    for offset, magic, kind, suffix in _SIGNATURES:
        if header[offset : offset + len(magic)] == magic:
            return kind, suffix
    return None


def unusable(ref: str) -> str | None:
    """Why no file system can hold the path ``ref`` (completing "image path '…' …"), or ``None``."""
    if "\x00" in ref:
        return "contains a NUL character"
    size = len(ref.encode("utf-8", "surrogatepass"))
    if size > MAX_PATH_BYTES:
        return f"is {size:,} bytes long; file systems allow {MAX_PATH_BYTES:,} bytes per path"
    if size > MAX_NAME_BYTES:
        for name in ref.replace(os.sep, "/").split("/"):
            length = len(name.encode("utf-8", "surrogatepass"))
            if length > MAX_NAME_BYTES:
                return f"has a name of {length:,} bytes; file systems allow {MAX_NAME_BYTES} bytes per name"
    return None


def inside(root: Path, ref: str) -> Path | None:
    """``root / ref`` when that path stays inside ``root`` lexically, else ``None``."""
    if os.path.isabs(ref) or ref.startswith("~"):
        return None
    base = os.path.abspath(root)
    joined = os.path.normpath(os.path.join(base, ref))
    if joined != base and not joined.startswith(base.rstrip(os.sep) + os.sep):
        return None
    return Path(joined)


def check_file(path: Path, kind: str) -> str | None:
    """Why ``path`` cannot be used as a ``kind`` file (``None`` when it can).

    Reads only the first 16 bytes, and only from a regular file (never a FIFO or device)."""
    try:
        if not path.is_file():
            return "not found" if not path.exists() else "not a regular file"
        with open(path, "rb") as fh:
            header = fh.read(16)
    except OSError as exc:  # name too long, permission, I/O
        return f"cannot be read ({exc.strerror or exc})"
    found = sniff_media(header)
    if found is None:
        return "is not an image or a video file (by its header)"
    if found[0] != kind:
        return f"is a {found[0]} file, not a{'n' if kind == 'image' else ''} {kind}"
    return None


def store_bytes(media_dir: Path, data: bytes, written: list[Path]) -> tuple[Path, str | None]:
    """Write image bytes into the project's media folder under their sha256 (once).

    Returns the file and ``None``, or the would-be file and why the bytes were refused
    (not an image). A new file is appended to ``written`` so a failed import can remove it.
    """
    found = sniff_media(data[:16])
    digest = hashlib.sha256(data).hexdigest()
    if found is None or found[0] != "image":
        return media_dir / content_name(digest, fanout=True), "the image bytes are not an image file PairScope can show"
    made = Made()
    try:
        target, _, new = store_content(data, media_dir, found[1], fanout=True, made=made, digest=digest)
        made.sync()  # the file, its rename and a new folder on disk before the commit names it
    except BaseException:
        made.undo()
        raise
    if new:
        written.append(target)
    return target, None
