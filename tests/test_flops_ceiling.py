"""FLOPs of a forward pass, the hardware's theoretical peak, and the measured matmul ceiling."""

from __future__ import annotations

import pytest
import torch

from trtbench.ceiling import cpu_peak, gpu_peak, measured_matmul_ceiling, theoretical_peak
from trtbench.flops import forward_flops


def test_forward_flops_counts_two_per_multiply_add():
    model = __import__("toy_models").tiny_cnn().eval()
    batch, height, width = 2, 16, 16
    conv = 2 * batch * 8 * height * width * 3 * 3 * 3  # out channels x pixels x (in channels x 3 x 3) MACs
    linear = 2 * batch * 8 * 10
    assert forward_flops(model, (torch.randn(batch, 3, height, width),)) == conv + linear


def cpuinfo(flags: str, cores: int, threads_per_core: int = 1, mhz: str = "2300.000", model: str = "AMD EPYC") -> str:
    blocks = []
    for cpu in range(cores * threads_per_core):
        blocks.append(f"processor\t: {cpu}\nmodel name\t: {model}\ncpu MHz\t\t: {mhz}\nphysical id\t: 0\n"
                      f"core id\t\t: {cpu // threads_per_core}\nflags\t\t: fpu sse sse2 {flags}\n")
    return "\n".join(blocks)


def test_avx512_peak_is_cores_times_clock_times_64():
    peak = cpu_peak(2, cpuinfo("avx avx2 fma avx512f", cores=2))
    assert peak["flops_per_s"] == pytest.approx(2 * 2.3e9 * 64)  # ~294 GFLOP/s
    assert peak["vector_unit"] == "AVX-512" and peak["clock_source"].startswith("/proc/cpuinfo")
    assert any("Zen 4" in line for line in peak["assumptions"])


def test_hyperthreads_add_no_peak_and_the_best_clock_source_wins():
    text = cpuinfo("avx avx2 fma", cores=2, threads_per_core=2, model="Intel(R) Xeon(R) CPU @ 2.10GHz")
    assert cpu_peak(4, text)["flops_per_s"] == pytest.approx(2 * 2.1e9 * 32)
    assert cpu_peak(4, text)["clock_source"] == "model name (base clock)"
    with_lscpu = cpu_peak(1, text, lscpu_text="CPU max MHz:                     3500.0000\n")
    assert with_lscpu["flops_per_s"] == pytest.approx(3.5e9 * 32) and with_lscpu["cores"] == 1


def test_unknown_vector_unit_gives_no_peak_and_says_why():
    peak = cpu_peak(2, cpuinfo("", cores=2).replace("sse sse2 ", ""))
    assert peak["flops_per_s"] is None and "vector unit" in peak["reason"]


@pytest.mark.parametrize("name, dtype, tf32, tflops", [
    ("NVIDIA H100 80GB HBM3", torch.float16, False, 989.4),
    ("NVIDIA H100 PCIe", torch.float32, False, 51.2),
    ("NVIDIA H100 PCIe", torch.float32, True, 378.0),
    ("NVIDIA H200", torch.bfloat16, False, 989.4),
    ("NVIDIA A100-SXM4-80GB", torch.float32, True, 156.0),
    ("NVIDIA L4", torch.float16, False, 121.0),
    ("NVIDIA L40S", torch.float16, False, 362.0),
    ("NVIDIA A10", torch.float32, False, 31.2),
    ("Tesla T4", torch.float32, True, 8.1),  # no TF32 units: the fp32 peak
])
def test_gpu_peaks_come_from_the_table(name, dtype, tf32, tflops):
    assert gpu_peak(name, dtype, tf32)["flops_per_s"] == pytest.approx(tflops * 1e12)


def test_an_unknown_gpu_has_no_peak():
    peak = gpu_peak("NVIDIA GeForce GTX 1080", torch.float32, False)
    assert peak["flops_per_s"] is None and "not in the table" in peak["reason"]


def test_theoretical_peak_of_this_cpu_states_its_method():
    peak = theoretical_peak(torch.device("cpu"), torch.float32, threads=1)
    assert peak["method"] == "cores x clock x fp32 FLOP per cycle per core" and peak["cores"] == 1
    assert theoretical_peak(torch.device("cpu"), torch.float16)["flops_per_s"] is None


def test_measured_ceiling_is_the_best_of_every_size_and_repeat():
    threads = torch.get_num_threads()
    result = measured_matmul_ceiling(torch.device("cpu"), sizes=(32, 64), repeats=3, threads=1)
    samples = result["samples_flops_per_s"]
    assert set(samples) == {"32", "64"} and all(len(values) == 3 for values in samples.values())
    assert result["flops_per_s"] == max(max(values) for values in samples.values()) > 0
    assert result["flops_per_s"] in samples[str(result["size"])]
    assert result["threads"] == 1 and torch.get_num_threads() == threads
