"""The window: composes widgets, owns controllers and the background executor.

The only package of ``app`` that imports Qt. It reads and writes the project through
``app.store`` via controllers and background tasks; widgets (``pairscope.widgets``) receive
plain records and never see the store.
"""
