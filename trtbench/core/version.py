"""trtbench's version, as the package metadata (pyproject.toml) states it."""

__version__ = "0.1.0"
