"""The ``hf`` export: a Hugging Face dataset folder, the files ``push_to_hub`` uploads.

``data/train-00000-of-0000N.parquet`` shards (at most ~500 MB of rows each, row groups of
100 rows, as 🤗 datasets writes them) and a dataset card ``README.md``. The columns are TRL's
conversational preference columns (``prompt``, ``chosen``, ``rejected``, ``images``) plus
``id``, ``videos``, ``category`` and ``preference_source``. ``images`` is a list of the
``Image`` feature's storage, ``{"bytes", "path"}`` with the bytes embedded and the file's
name as path (``Image.embed_storage``); an image whose file is missing keeps its reference as
``path`` with no bytes. ``videos`` holds paths relative to the folder (the files copied
under ``media/``).

The schema carries datasets' ``huggingface`` metadata (``{"info": {"features": …}}``), so
``datasets.load_dataset("parquet", data_files=…)`` decodes the images without this card; the
card's YAML holds the same features, the split's counts and ``configs`` (the data files),
and its text the preference source and the counts from the export's manifest.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..durable import AtomicWriter, Made
from .export_formats import ExportedMedia

DATA_DIR = "data"
SPLIT = "train"
CARD = "README.md"
SHARD_BYTES = 500 * 1000 * 1000  # datasets' MAX_SHARD_SIZE ("500MB")
ROW_GROUP_ROWS = 100
ROW_GROUP_BYTES = 100 * 1000 * 1000  # datasets' MAX_ROW_GROUP_SIZE
_SHARD_NAME = re.compile(rf"{SPLIT}-\d{{5}}-of-\d{{5}}\.parquet")

_STRING: dict[str, Any] = {"dtype": "string", "_type": "Value"}
_MESSAGES: dict[str, Any] = {
    "feature": {
        "role": _STRING,
        "content": {"feature": {"type": _STRING, "text": _STRING}, "_type": "List"},
    },
    "_type": "List",
}
#: The columns as 🤗 datasets' ``Features.to_dict()`` writes them (the schema metadata).
FEATURES: dict[str, Any] = {
    "id": _STRING,
    "prompt": _MESSAGES,
    "chosen": _MESSAGES,
    "rejected": _MESSAGES,
    "images": {"feature": {"_type": "Image"}, "_type": "List"},
    "videos": {"feature": _STRING, "_type": "List"},
    "category": _STRING,
    "preference_source": _STRING,
}
_MESSAGE_TYPE = pa.list_(
    pa.struct([("role", pa.string()), ("content", pa.list_(pa.struct([("type", pa.string()), ("text", pa.string())])))])
)
_IMAGE_TYPE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])  # datasets' Image.pa_type
SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("prompt", _MESSAGE_TYPE),
        ("chosen", _MESSAGE_TYPE),
        ("rejected", _MESSAGE_TYPE),
        ("images", pa.list_(_IMAGE_TYPE)),
        ("videos", pa.list_(pa.string())),
        ("category", pa.string()),
        ("preference_source", pa.string()),
    ],
    metadata={"huggingface": json.dumps({"info": {"features": FEATURES}})},
)


def yaml_features(features: dict[str, Any] = FEATURES) -> list[dict[str, Any]]:
    """The features as a dataset card lists them (datasets' ``Features._to_yaml_list``: a
    value is ``dtype``, a list ``list`` (its item's dtype, or its struct's named fields))."""

    def inner(feature: dict[str, Any]) -> dict[str, Any]:
        kind = feature.get("_type")
        if kind == "Value":
            return {"dtype": feature["dtype"]}
        if kind == "List":
            item = inner(feature["feature"])
            return {"list": item.get("dtype", item.get("struct", item))} if len(item) == 1 else {"list": item}
        if kind is not None:  # Image, Video …: no parameters here
            return {"dtype": re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()}
        return {"struct": [{"name": name, **inner(sub)} for name, sub in feature.items()]}

    return [{"name": name, **inner(feature)} for name, feature in features.items()]


def _utf8(value: Any) -> Any:
    """Strings Parquet can hold: a lone surrogate is written escaped (``\\ud800``)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, list):
        return [_utf8(v) for v in value]
    if isinstance(value, dict):
        return {k: _utf8(v) for k, v in value.items()}
    return value


class _Stream:
    """A write-only file for pyarrow over an :class:`AtomicWriter` (hashed as it goes)."""

    closed = False

    def __init__(self, writer: AtomicWriter) -> None:
        self.writer = writer

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self.writer.write(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self.writer.size

    def flush(self) -> None:
        pass


class ParquetRows:
    """Writes ``hf`` rows as Parquet shards under ``out_dir/data``, durably (temporary names,
    renamed to ``train-0000i-of-0000N.parquet`` at :meth:`commit`, when N is known)."""

    def __init__(self, out_dir: Path, made: Made) -> None:
        self.out_dir = out_dir
        self.dir = out_dir / DATA_DIR
        self.made = made
        self.shards: list[AtomicWriter] = []
        self.rows = 0
        self.row_bytes = 0
        self._pending: list[dict[str, Any]] = []
        self._pending_bytes = 0
        self._shard_bytes = 0
        self._parquet: pq.ParquetWriter | None = None

    def write(self, row: dict[str, Any]) -> None:
        images = [self._image(m) for m in row["images"]]
        rest = _utf8({k: v for k, v in row.items() if k != "images"})
        size = sum(len(i["bytes"] or b"") for i in images) + len(json.dumps(rest))  # about the Arrow size
        self._pending.append({**rest, "images": images})
        self._pending_bytes += size
        if len(self._pending) >= ROW_GROUP_ROWS or self._pending_bytes >= ROW_GROUP_BYTES:
            self._flush()

    def _image(self, media: ExportedMedia) -> dict[str, Any]:
        """The ``Image`` storage of one image: its bytes (read from the file the export
        found, copied or not) and its file name; a missing file keeps the row's reference."""
        name = media.path or media.ref
        if media.source is None:
            return {"bytes": None, "path": name}
        return {"bytes": Path(media.source).read_bytes(), "path": Path(name).name}

    def _flush(self) -> None:
        if not self._pending and self._parquet is not None:
            return
        if self._parquet is None or self._shard_bytes >= SHARD_BYTES:
            self._close_shard()
            self.made.mkdir(self.dir)
            writer = AtomicWriter(self.dir / f"{SPLIT}-{len(self.shards):05d}.parquet", self.made)
            self.shards.append(writer)
            self._parquet = pq.ParquetWriter(_Stream(writer), SCHEMA, compression="snappy")
            self._shard_bytes = 0
        if not self._pending:
            return  # an empty shard: the schema, no row group (datasets refuses a row group of 0 rows)
        table = pa.Table.from_pylist(self._pending, schema=SCHEMA)
        self._parquet.write_table(table, row_group_size=table.num_rows)
        self.rows += table.num_rows
        self.row_bytes += table.nbytes
        self._shard_bytes += self._pending_bytes
        self._pending, self._pending_bytes = [], 0

    def _close_shard(self) -> None:
        if self._parquet is not None:
            self._parquet.close()
            self._parquet = None

    def commit(self) -> dict[str, dict[str, Any]]:
        """Write what is pending (one empty shard for no rows), place the shards under their
        final names and remove shards of an earlier export there that these do not replace."""
        self._flush()
        self._close_shard()
        files = {}
        for i, writer in enumerate(self.shards):
            writer.target = self.dir / f"{SPLIT}-{i:05d}-of-{len(self.shards):05d}.parquet"
            files[writer.target.relative_to(self.out_dir).as_posix()] = writer.commit()
        placed = {w.target.name for w in self.shards}
        for old in self.dir.iterdir():
            if _SHARD_NAME.fullmatch(old.name) and old.name not in placed and old.is_file():
                old.unlink()  # a stale shard would join this split (data/train-*)
        return files

    def discard(self) -> None:
        if self._parquet is not None:
            try:
                self._parquet.close()
            except (OSError, pa.ArrowException):
                pass
            self._parquet = None
        for writer in self.shards:
            writer.discard()

    def finish(self, manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """Write the dataset card from the finished manifest."""
        download = sum(f["bytes"] for name, f in manifest["files"].items() if name.startswith(f"{DATA_DIR}/"))
        text = dataset_card(manifest, self.rows, self.row_bytes, download)
        writer = AtomicWriter(self.out_dir / CARD, self.made)
        try:
            writer.write(text.encode("utf-8"))
            return {CARD: writer.commit()}
        except BaseException:
            writer.discard()
            raise


# -- the dataset card --------------------------------------------------------------------------


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    text = str(value)
    plain = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_./*-]*", text) and text.lower() not in ("true", "false", "null", "yes")
    return text if plain else json.dumps(text)  # a JSON string is a YAML double-quoted scalar


def to_yaml(value: Any, indent: int = 0) -> list[str]:
    """Block YAML for dicts, lists and scalars (the card's front matter; no YAML library)."""
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for key, sub in value.items():
            if isinstance(sub, dict | list) and sub:
                lines.append(f"{pad}{_scalar(key)}:")
                lines += to_yaml(sub, indent + (0 if isinstance(sub, list) else 2))
            else:
                lines.append(f"{pad}{_scalar(key)}: {_scalar(sub) if not isinstance(sub, dict | list) else '[]'}")
    elif isinstance(value, list):
        for sub in value:
            nested = to_yaml(sub, indent + 2) if isinstance(sub, dict | list) else [f"{pad}  {_scalar(sub)}"]
            lines.append(f"{pad}- {nested[0].lstrip()}")
            lines += nested[1:]
    else:
        lines.append(f"{pad}{_scalar(value)}")
    return lines


def card_metadata(n_rows: int, row_bytes: int, download_bytes: int) -> dict[str, Any]:
    """The card's YAML: ``dataset_info`` (features, split, sizes) and ``configs``."""
    return {
        "dataset_info": {
            "features": yaml_features(),
            "splits": [{"name": SPLIT, "num_bytes": row_bytes, "num_examples": n_rows}],
            "download_size": download_bytes,
            "dataset_size": row_bytes,
        },
        "configs": [{"config_name": "default", "data_files": [{"split": SPLIT, "path": f"{DATA_DIR}/{SPLIT}-*"}]}],
        "tags": ["pairscope", "preference", "dpo", "multimodal"],
    }


def _md(text: Any) -> str:
    """Text from a project (names, reasons) shown in the card as plain text."""
    return re.sub(r"([\\`*_\[\]<>|])", r"\\\1", str(text)).replace("\n", " ")


def dataset_card(manifest: dict[str, Any], n_rows: int, row_bytes: int, download_bytes: int) -> str:
    """``README.md``: the YAML front matter, then the preference source and the counts."""
    counts = manifest["counts"]
    preference = manifest["preference"]
    project = Path(str(manifest["source"].get("project") or "project")).stem
    lines = ["---", *to_yaml(card_metadata(n_rows, row_bytes, download_bytes)), "---", ""]
    lines += [
        f"# {_md(project)}: a curated preference set",
        "",
        f"Exported by PairScope {_md(manifest['tool']['version'])} on {_md(manifest['created_at'])}.",
        "",
        f"**Preference source:** `{preference['source']}` ({_md(preference['description'])}).",
        "",
        f"{n_rows} rows of {counts['considered']} items considered; skipped {counts['skipped']}.",
        "",
        "| count | value |",
        "|---|---|",
        *(f"| preference source {_md(k)} | {v} |" for k, v in counts["per_preference_source"].items()),
        *(f"| category {_md(k)} | {v} |" for k, v in counts["per_category"].items()),
        *(f"| skipped: {_md(k)} | {v} |" for k, v in counts["skipped_by_reason"].items()),
        f"| missing media | {counts['missing_media']} |",
        "",
        'Columns: `prompt` (a user message: one `{"type": "image"}` per image, in order, then the text),',
        "`chosen` / `rejected` (assistant messages), `images` (embedded), `videos` (paths under `media/`;",
        'a `{"type": "video"}` placeholder each), `id`, `category`, `preference_source`.',
        "`manifest.json` lists every row's preference source and every skipped item with its reason.",
        'TRL\'s DPO collator takes images only: drop the video rows for it (`ds.filter(lambda r: not r["videos"])`).',
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        f'ds = load_dataset("parquet", data_files="{DATA_DIR}/{SPLIT}-*.parquet", split="{SPLIT}")',
        "# TRL: DPOTrainer(model, train_dataset=ds, processing_class=processor, ...)",
        "```",
        "",
    ]
    return "\n".join(lines)


__all__ = ["CARD", "DATA_DIR", "FEATURES", "SCHEMA", "ParquetRows", "card_metadata", "dataset_card", "yaml_features"]
