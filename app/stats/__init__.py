"""Statistics: agreement, judge accuracy, length bias, plots and the stats report.

Reads a project through ``app.store`` (one read snapshot, ``data.load_stats_data``) and
computes every figure in plain Python/NumPy/scikit-learn; the vote and the current label come
from ``app.judge`` and ``app.store``, never re-derived here. May import ``app.store``,
``app.records``, ``app.taxonomy``, ``app.judge``; never Qt (``plots`` uses matplotlib's Agg).
"""
