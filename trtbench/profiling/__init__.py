"""Where the time and memory go: per-layer and per-operator timing, memory, structure, training step.

:func:`trtbench.profiling.runner.run_profiles` runs the sections a :class:`ProfileConfig` asks for.
"""


class NotSupported(Exception):
    """A profile section cannot run on this variant; the message says why."""
