"""Labeling: what a keypress writes (``session``), the blind order, the label schema and its
keys (``schema``, ``keymap``), and saves kept while the store cannot take them (``pending``)."""
