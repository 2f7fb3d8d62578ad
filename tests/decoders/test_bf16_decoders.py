"""The PyTorch decoders at bf16 follow the vision rows' policy: they run on any CPU, their record saying whether
natively or emulated (core/env.py's bf16_compute), never skipped for AVX-512 BW/VL/DQ as before."""

from __future__ import annotations

from trtbench.core.env import bf16_compute


def test_the_torch_decoders_run_bf16_and_say_how():
    from trtbench.decoders.torch_model import torch_facts, torch_unavailable

    assert torch_unavailable("eager", "bf16", "cpu") is None
    assert "fp16 on CUDA only" in torch_unavailable("eager", "fp16", "cpu")
    facts = torch_facts("bf16", "cpu")
    assert facts["bf16"] == bf16_compute("cpu").text and "bf16" not in torch_facts("fp32", "cpu")
