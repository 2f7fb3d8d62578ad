"""The YAML config: its dataclasses and validation, and the run plan resolved from it."""
