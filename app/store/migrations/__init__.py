"""Every schema migration of a project file, one module per version, in order.

Append a new module and an entry here; never edit an applied one: tests/test_migrations.py
pins each version's schema and each module's code, so an edit fails CI. A shipped mistake
is repaired by a new migration, as ``m006_repair_v5`` repairs migration 5.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from types import MappingProxyType

from ..schema_base import Migration
from . import (
    m001_initial,
    m002_search,
    m003_item_identity,
    m004_item_verdicts,
    m005_label_schemas,
    m006_repair_v5,
    m007_reference_reviews,
    m008_assignments,
    m009_active_time,
    m010_label_ranks,
    m011_verdict_reads,
    m012_filter_indexes,
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial schema", m001_initial.apply),
    Migration(2, "full-text search and filter indexes", m002_search.apply),
    Migration(3, "item identity: dataset id + content", m003_item_identity.apply),
    Migration(4, "item verdicts decided once, in the judge layer", m004_item_verdicts.apply),
    Migration(5, "label schemas, verdict log-probabilities and confidence", m005_label_schemas.apply),
    Migration(6, "repair version-5 files made by earlier builds of migration 5", m006_repair_v5.apply),
    Migration(7, "reference reviews: 'reference is wrong', audited", m007_reference_reviews.apply),
    Migration(8, "team assignments and gold items", m008_assignments.apply),
    Migration(9, "active time of a label", m009_active_time.apply),
    Migration(10, "full rankings with ties (labels, references)", m010_label_ranks.apply),
    Migration(11, "a covering index for reading a run's verdicts", m011_verdict_reads.apply),
    Migration(12, "covering indexes for the filters (item ids, labeled)", m012_filter_indexes.apply),
)

LATEST_VERSION = MIGRATIONS[-1].version

#: Versions whose migration shipped in other forms before it was fixed: each earlier form's
#: ``apply``. Files made by them are accepted on open (their schema is PairScope's own) and
#: brought to the final form by a later migration.
SHIPPED_EARLIER: Mapping[int, tuple[Callable[[sqlite3.Connection], None], ...]] = MappingProxyType(
    {5: m005_label_schemas.SHIPPED_EARLIER}
)
