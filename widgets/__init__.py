"""Reusable Qt widgets. They take plain data (``pairscope.app.records``) and emit
signals; they never touch the project store."""
