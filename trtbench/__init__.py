"""trtbench: build, check, benchmark and ship compiled PyTorch models from one YAML config."""

from trtbench.core.version import __version__  # noqa: F401
