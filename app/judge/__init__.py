"""Judging: running a judge model over items and deciding what its samples say.

Owns the judging-mode registry (``modes``: how each mode plans samples, renders the prompt,
parses an answer and votes per item), the batch/live session that drives a backend
(``session``), the one definition of a run's verdict on an item (``results``), the judge CLI
(``cli``) and the review data of one item (``review``). May import ``app.store``,
``app.records``, ``app.media``, ``app.labeling`` and ``pairscope.models``; never Qt.
"""
