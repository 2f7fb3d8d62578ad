"""Seeded inputs of the built-in planted-fault nets (:mod:`trtbench.models.planted`) and a config of them, for the
diagnose tests."""

from __future__ import annotations

import torch


def planted_inputs(batch: int = 2) -> tuple[torch.Tensor]:
    return (torch.rand(batch, 3, 8, 8, generator=torch.Generator().manual_seed(1)) * 4,)


def planted_config(tmp_path, fault: str, at: int) -> dict:
    """A config of the built-in ``planted_net`` on the CPU (eager at fp32 and ``fault``), its output under
    ``tmp_path``."""
    return {"name": "planted", "device": "cpu",
            "model": {"source": "builtin", "name": "planted_net", "kwargs": {"fault": fault, "at": at}},
            "inputs": [{"name": "input", "shape": [2, 3, 8, 8], "value_range": [0, 4]}],
            "variants": ["eager"], "precisions": ["fp32", fault], "output": {"dir": str(tmp_path / "out")}}
