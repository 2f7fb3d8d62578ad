"""The one native-bf16 test (core/env.py's bf16_compute), both branches from /proc/cpuinfo flags as Linux writes
them (the PyTorch decoders follow it: tests/decoders/test_bf16_decoders.py)."""

from __future__ import annotations

import torch

from trtbench.core.env import bf16_compute

ZEN3 = "fpu sse sse2 avx avx2 fma f16c bmi2 sha_ni vaes vpclmulqdq"
ICE_LAKE = ZEN3 + " avx512f avx512dq avx512bw avx512vl avx512_vnni"  # AVX-512 BW/VL/DQ without bf16
COOPER_LAKE = ICE_LAKE + " avx512_bf16"
SAPPHIRE_RAPIDS = COOPER_LAKE + " amx_bf16 amx_tile amx_int8"


def test_native_bf16_is_avx512_bf16_or_amx_bf16():
    assert (bf16_compute("cpu", COOPER_LAKE).mode, bf16_compute("cpu", COOPER_LAKE).unit) == ("native", "AVX512-BF16")
    amx = bf16_compute("cpu", SAPPHIRE_RAPIDS)
    assert (amx.mode, amx.unit) == ("native", "AMX-BF16") and amx.text == "native (AMX-BF16 in the CPU flags)"


def test_avx512_without_bf16_units_is_emulated():
    for flags in (ZEN3, ICE_LAKE, ""):  # the decoders' old check took AVX-512 BW/VL/DQ for native bf16
        compute = bf16_compute("cpu", flags)
        assert compute.mode == "emulated" and compute.unit is None
        assert compute.text.startswith("emulated (neither AVX512-BF16 nor AMX-BF16 in the CPU flags")


def test_this_machine_is_read():
    compute = bf16_compute(torch.device("cpu"))
    assert compute.mode in ("native", "emulated") and compute.why
