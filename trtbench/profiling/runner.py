"""Run the configured profile sections over variants and shapes: results.json's ``profiles`` and Chrome traces."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import torch

from trtbench.core.case import shapes_text
from trtbench.profiling import NotSupported
from trtbench.profiling.config import ProfileConfig
from trtbench.profiling.layers import profile_layers
from trtbench.profiling.memory import artifact_sizes, parameter_summary, peak_memory
from trtbench.profiling.operators import profile_operators
from trtbench.profiling.structure import layer_table
from trtbench.profiling.training import profile_training
from trtbench.core.status import Status
from trtbench.measure.timing import TimingSettings
from trtbench.variants import Built, Variant

TRACE_DIR = "profiles"


@dataclass(frozen=True)
class ProfiledVariant:
    """A variant to profile, with the files it saved (their sizes are reported with its memory)."""

    name: str
    variant: Variant
    built: Built
    files: tuple[Path, ...] = ()


def _section(run: Callable[[], dict]) -> dict:
    """Run one section, its status first; one that cannot apply or breaks is recorded, not raised."""
    try:
        return {"status": Status.OK, **run()}
    except NotSupported as err:
        return {"status": Status.UNSUPPORTED, "reason": str(err)}
    except Exception as err:  # profiling is auxiliary: record any failure (OOM, kernel errors) next to the data
        return {"status": Status.FAILED, "error": f"{type(err).__name__}: {err}"}


def _profile_shape(cfg: ProfileConfig, profiled: ProfiledVariant, label: str, inputs: tuple, device: torch.device,
                   out_dir: Path) -> dict:
    variant, built = profiled.variant, profiled.built
    entry: dict = {"shape": shapes_text([list(t.shape) for t in inputs])}
    prepared = variant.prepare(built, inputs)
    if cfg.structure:
        entry["structure"] = _section(lambda: layer_table(built.module, inputs))
    if cfg.memory:
        entry["memory"] = _section(lambda: peak_memory(lambda: variant.run(built, prepared), device))
    if cfg.layers.enabled:
        entry["layers"] = _section(lambda: profile_layers(built.module, inputs, device, cfg.layers.runs,
                                                          cfg.layers.warmup))
    if cfg.operators.enabled:
        trace = Path(TRACE_DIR) / f"{profiled.name}_{label}.trace.json" if cfg.operators.trace else None
        operators = _section(lambda: profile_operators(
            lambda: variant.run(built, prepared), device, cfg.operators.runs, cfg.operators.top_k,
            trace_path=out_dir / trace if trace else None, record_shapes=cfg.operators.record_shapes))
        if operators["status"] == Status.OK:
            operators["trace"] = str(trace) if trace else None
        entry["operators"] = operators
    if cfg.train.enabled:
        timing = TimingSettings(mode="fixed", warmup=cfg.train.warmup, warmup_s=0, iterations=cfg.train.iterations,
                                switch_in_below_s=0)  # one callable, nothing switches in: every step is warmup or timed
        entry["train"] = _section(lambda: profile_training(built.module, inputs, device, timing,
                                                           cfg.train.optimizer, cfg.train.lr))
    return entry


def run_profiles(profile_cfg: ProfileConfig, variants: Iterable[ProfiledVariant], inputs_by_shape: dict[str, tuple],
                 device: torch.device, out_dir: Path, tick: Callable[[], None] = lambda: None) -> dict:
    """Profile each configured variant built at each configured shape (``inputs_by_shape``); JSON-ready results."""
    variants = {profiled.name: profiled for profiled in variants}
    missing = [label for label in profile_cfg.shapes if label not in inputs_by_shape]
    if missing:
        raise ValueError(f"no inputs given for profile shapes {missing}")
    out_dir = Path(out_dir)
    result: dict = {"status": Status.OK, "precision": profile_cfg.precision, "device": str(device),
                    "settings": dataclasses.asdict(profile_cfg), "variants": {}}
    for name in profile_cfg.variants:
        if name not in variants:
            result["variants"][name] = {"status": Status.SKIPPED,
                                        "reason": "the variant was not built (see its build status)"}
            continue
        profiled = variants[name]
        entry: dict = {"status": Status.OK}
        if profile_cfg.memory:
            entry["parameters"] = _section(lambda: parameter_summary(profiled.built.module))
            entry["artifacts"] = artifact_sizes(list(profiled.files), root=out_dir)
        entry["shapes"] = {}
        for label in profile_cfg.shapes:
            entry["shapes"][label] = _profile_shape(profile_cfg, profiled, label, inputs_by_shape[label], device,
                                                    out_dir)
            tick()
        result["variants"][name] = entry
    return result

