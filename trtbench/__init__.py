"""trtbench: build, check, benchmark and ship compiled PyTorch models from one YAML config."""

__version__ = "0.1.0"
