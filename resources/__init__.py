"""Package data: icons, style sheets, prompt templates and the bundled demo dataset."""

from importlib.resources import files


def resource_path(*parts: str):
    """Return a Traversable for a file shipped under ``resources/``."""
    node = files(__name__)
    for part in parts:
        node = node / part
    return node
