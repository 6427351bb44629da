"""The window: composes widgets, owns controllers and background workers."""
