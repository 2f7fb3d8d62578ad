"""A model's identity across runs: a hash of what defines it (docs/outputs.md, ``runs``' ``models``)."""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
from pathlib import Path

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".onnx")


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _factory_file(model_cfg) -> Path | None:
    """The source file of a built-in model's or a Python factory's module (None where it cannot be found)."""
    if model_cfg.source == "builtin":
        from trtbench.models import BUILTIN_MODELS, builtin_model_names

        builtin_model_names()  # imports the built-in models' modules
        factory = BUILTIN_MODELS.get(model_cfg.name)
        return Path(inspect.getsourcefile(factory)) if factory is not None else None
    module = model_cfg.name.split(":", 1)[0]
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return Path(spec.origin) if spec is not None and spec.origin else None


def _folder_facts(folder: Path) -> dict:
    """A model folder's config.json digest and each weight file's name and size."""
    config = folder / "config.json"
    return {"config.json": _file_digest(config) if config.is_file() else None,
            "weights": sorted([p.name, p.stat().st_size] for p in folder.iterdir() if p.suffix in WEIGHT_SUFFIXES)}


def model_hash(model_cfg) -> str:
    """A 16-hex-digit hash of what defines ``model_cfg``'s model."""
    facts: dict = {"source": model_cfg.source, "name": model_cfg.name, "kwargs": model_cfg.kwargs,
                   "task": model_cfg.task}
    if model_cfg.weights:
        facts["weights"] = _file_digest(Path(model_cfg.weights).expanduser())
    if model_cfg.source == "torchscript" and Path(model_cfg.name).is_file():
        facts["file"] = _file_digest(Path(model_cfg.name))
    if model_cfg.source in ("builtin", "python"):
        factory = _factory_file(model_cfg)
        facts["factory"] = _file_digest(factory) if factory is not None and factory.is_file() else None
    if model_cfg.path:
        facts["folder"] = _folder_facts(Path(model_cfg.path).expanduser())
    text = json.dumps(facts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
