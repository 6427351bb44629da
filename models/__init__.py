"""Judge backends: a request in, a verdict out.

Never imports Qt, SQLite or anything from ``pairscope.app``; torch and transformers
are imported lazily, only when a judge is first used.
"""
