"""Curation: exporting curated sets (VL-RewardBench, TRL, JSONL) and teamwork (pack, merge).

Reads and writes projects only through ``app.store``; may import ``app.records``,
``app.formats`` (for the media rules) and ``app.taxonomy``; never Qt, torch or transformers.
"""
