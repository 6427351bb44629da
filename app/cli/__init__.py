"""The command line: ``main`` parses and dispatches; ``judge``, ``ensemble`` and ``schema``
hold the commands of those families. It holds no logic of its own: each command calls the
same core functions the window does."""
