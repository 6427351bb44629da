"""PairScope core: records, the SQLite project store, dataset formats, media, CLI.

Nothing in this package (outside ``app/gui``) imports Qt, torch or transformers.
"""

__version__ = "0.1.0"
