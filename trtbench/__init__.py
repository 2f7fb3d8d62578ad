"""trtbench: build, check, benchmark and ship compiled PyTorch models from one YAML config; the Python API
(:mod:`trtbench.api`) resolved on first use (PEP 562), so that a worker's ``import trtbench`` stays cheap."""

from trtbench.core.version import __version__  # noqa: F401

__all__ = ["load_config", "run", "load_results", "compare", "history_series", "ingest", "rebuild", "accept",
           "forget", "export_csv", "gate"]
_API = (*__all__, "Comparison", "HistoryQuery")


def __getattr__(name: str):
    if name in _API:
        from trtbench import api

        value = getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'trtbench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
