"""Where the time and memory go: per-layer and per-operator timing, memory, structure, training step."""


class NotSupported(Exception):
    """A profile section cannot run on this variant; the message says why."""
