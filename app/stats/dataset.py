"""Figures about the dataset itself, as the seed papers' tables count them.

- ``error_types``: VL-RewardBench Table 1 style — occurrences of each error tag kind among all
  tags of the dataset's reference (``existence``, ``recognition``, ``attribute``, ``counting``,
  ``other``…): ``count`` and ``share`` of all tags; an item with two tags counts twice.
- ``words``: query and response word quartiles [q1, median, q3] (linear percentiles), the
  query once with the ``<image>`` tokens of the prompt as written counted as words and once
  without (labelled); responses are responses 1 and 2 of every item.
"""

from __future__ import annotations

from collections import Counter
from itertools import chain
from typing import Any

import numpy as np

from ..labeling.schema import error_kind_order, kind_order_key
from .data import StatsData


def _quartiles(values: np.ndarray) -> list[float] | None:
    v = values[~np.isnan(values)]
    return None if not len(v) else [float(x) for x in np.percentile(v, [25, 50, 75])]


def dataset_report(data: StatsData) -> dict[str, Any]:
    """Error-tag distribution and word quartiles of the project's items."""
    counts = Counter(chain.from_iterable(data.error_kinds))  # in item order, as a loop over them
    total = sum(counts.values())
    order = sorted(counts, key=kind_order_key(error_kind_order(data)))  # the project's schema order
    tokens = (
        data.image_tokens
        if data.image_tokens is not None and len(data.image_tokens)
        else np.zeros(len(data.query_words))
    )
    return {
        "error_types": {
            "tags": total,
            "items_tagged": sum(map(bool, data.error_kinds)),
            "kinds": {k: {"count": counts[k], "share": counts[k] / total} for k in order},
        },
        "words": {
            "query_without_image_token": _quartiles(data.query_words),
            "query_with_image_token": _quartiles(data.query_words + tokens),
            "responses": _quartiles(data.response_words.ravel()),
        },
    }
