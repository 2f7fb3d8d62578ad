"""FLOPs of a forward pass, the hardware's theoretical peak, and the measured matmul ceiling."""

from __future__ import annotations

import itertools

import pytest
import torch

from trtbench.measure import ceiling
from trtbench.measure.ceiling import cpu_peak, gpu_peak, measured_matmul_ceiling, theoretical_peak
from trtbench.core.flops import forward_flops


def test_forward_flops_counts_two_per_multiply_add():
    model = __import__("toy_models").tiny_cnn().eval()
    batch, height, width = 2, 16, 16
    conv = 2 * batch * 8 * height * width * 3 * 3 * 3  # out channels x pixels x (in channels x 3 x 3) MACs
    linear = 2 * batch * 8 * 10
    assert forward_flops(model, (torch.randn(batch, 3, height, width),)) == conv + linear


def cpuinfo(flags: str, cores: int, threads_per_core: int = 1, mhz: str = "2300.000", model: str = "AMD EPYC",
            vendor: str = "", family: int | None = None, model_number: int | None = None) -> str:
    """/proc/cpuinfo text as Linux writes it (vendor_id, cpu family and model in decimal where given)."""
    ids = (f"vendor_id\t: {vendor}\n" if vendor else "") + (f"cpu family\t: {family}\n" if family is not None else "") \
        + (f"model\t\t: {model_number}\n" if model_number is not None else "")
    blocks = []
    for cpu in range(cores * threads_per_core):
        blocks.append(f"processor\t: {cpu}\n{ids}model name\t: {model}\ncpu MHz\t\t: {mhz}\nphysical id\t: 0\n"
                      f"core id\t\t: {cpu // threads_per_core}\nflags\t\t: fpu sse sse2 {flags}\n")
    return "\n".join(blocks)


def test_avx512_peak_is_cores_times_clock_times_64():
    peak = cpu_peak(2, cpuinfo("avx avx2 fma avx512f", cores=2))
    assert peak["flops_per_s"] == pytest.approx(2 * 2.3e9 * 64)  # ~294 GFLOP/s
    assert peak["vector_unit"] == "AVX-512" and peak["clock_source"].startswith("/proc/cpuinfo")
    assert any("Zen 4" in line for line in peak["assumptions"])


AVX2 = "avx avx2 fma"
AVX512 = "avx avx2 fma avx512f avx512dq avx512bw avx512vl"


@pytest.mark.parametrize("name, text, per_cycle, microarchitecture", [
    # the flags overstate these: corrected per microarchitecture
    ("Zen 1 (EPYC 7601)", cpuinfo(AVX2, 1, model="AMD EPYC 7601 32-Core Processor", vendor="AuthenticAMD",
                                  family=23, model_number=1), 16, "AMD Zen/Zen+"),
    ("Zen+ (Ryzen 7 2700X)", cpuinfo(AVX2, 1, model="AMD Ryzen 7 2700X Eight-Core Processor", vendor="AuthenticAMD",
                                     family=23, model_number=8), 16, "AMD Zen/Zen+"),
    ("Zen+ APU (Ryzen 5 3400G, model 18h)", cpuinfo(AVX2, 1, model="AMD Ryzen 5 3400G", vendor="AuthenticAMD",
                                                    family=23, model_number=0x18), 16, "AMD Zen/Zen+"),
    ("Hygon Dhyana", cpuinfo(AVX2, 1, model="Hygon C86 7185 32-core Processor", vendor="HygonGenuine", family=24,
                             model_number=1), 16, "Hygon Dhyana"),
    ("Zen 4 (EPYC 9654)", cpuinfo(AVX512, 1, model="AMD EPYC 9654 96-Core Processor", vendor="AuthenticAMD",
                                  family=25, model_number=17), 32, "AMD Zen 4"),
    ("Xeon Silver 4114 (Skylake-SP)", cpuinfo(AVX512, 1, model="Intel(R) Xeon(R) Silver 4114 CPU @ 2.20GHz",
                                              vendor="GenuineIntel", family=6, model_number=85), 32, "one AVX-512 FMA"),
    ("Xeon Bronze 3204 (Cascade Lake)", cpuinfo(AVX512, 1, model="Intel(R) Xeon(R) Bronze 3204 CPU @ 1.90GHz",
                                                vendor="GenuineIntel", family=6, model_number=85), 32,
     "one AVX-512 FMA"),
    ("Xeon Gold 5120", cpuinfo(AVX512, 1, model="Intel(R) Xeon(R) Gold 5120 CPU @ 2.20GHz", vendor="GenuineIntel",
                               family=6, model_number=85), 32, "one AVX-512 FMA"),
    # the flags are right for these
    ("Zen 2 (EPYC 7742, model 31h)", cpuinfo(AVX2, 1, model="AMD EPYC 7742 64-Core Processor", vendor="AuthenticAMD",
                                             family=23, model_number=0x31), 32, None),
    ("Zen 3 (EPYC 7B13, this dev machine)", cpuinfo(AVX2, 1, model="AMD EPYC 7B13", vendor="AuthenticAMD", family=25,
                                                    model_number=1), 32, None),
    ("Zen 5 (EPYC 9755)", cpuinfo(AVX512, 1, model="AMD EPYC 9755 128-Core Processor", vendor="AuthenticAMD",
                                  family=26, model_number=2), 64, None),
    ("Xeon Gold 5122 (2 FMA units)", cpuinfo(AVX512, 1, model="Intel(R) Xeon(R) Gold 5122 CPU @ 3.60GHz",
                                             vendor="GenuineIntel", family=6, model_number=85), 64, None),
    ("Xeon Gold 6148", cpuinfo(AVX512, 1, model="Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", vendor="GenuineIntel",
                               family=6, model_number=85), 64, None),
    ("Xeon Platinum 8480+", cpuinfo(AVX512, 1, model="Intel(R) Xeon(R) Platinum 8480+", vendor="GenuineIntel",
                                    family=6, model_number=143), 64, None),
])
def test_flop_per_cycle_is_corrected_where_the_flags_overstate_it(name, text, per_cycle, microarchitecture):
    peak = cpu_peak(1, text)
    assert peak["flop_per_cycle"] == per_cycle, name
    assert peak["flops_per_s"] == pytest.approx(peak["clock_ghz"] * 1e9 * per_cycle)
    if microarchitecture is None:
        assert "microarchitecture" not in peak
        assert any("flags" in line and "Zen 4" in line for line in peak["assumptions"])
    else:
        assert microarchitecture in peak["microarchitecture"]
        stated = [line for line in peak["assumptions"] if line.startswith(f"{per_cycle} fp32 FLOP per cycle")]
        assert len(stated) == 1 and "source: " in stated[0] and peak["microarchitecture"] in stated[0]


def test_hyperthreads_add_no_peak_and_the_best_clock_source_wins():
    text = cpuinfo("avx avx2 fma", cores=2, threads_per_core=2, model="Intel(R) Xeon(R) CPU @ 2.10GHz")
    assert cpu_peak(4, text)["flops_per_s"] == pytest.approx(2 * 2.1e9 * 32)
    assert cpu_peak(4, text)["clock_source"] == "model name (base clock)"
    with_lscpu = cpu_peak(1, text, lscpu_text="CPU max MHz:                     3500.0000\n")
    assert with_lscpu["flops_per_s"] == pytest.approx(3.5e9 * 32) and with_lscpu["cores"] == 1


# lscpu in a KVM guest on the Zen 3 EPYC of the report: no "CPU max MHz" line (the host hides its clocks)
LSCPU_KVM_ZEN3 = """Architecture:                            x86_64
CPU(s):                                  2
Vendor ID:                               AuthenticAMD
Model name:                              AMD EPYC 7B13
CPU family:                              25
Model:                                   1
Thread(s) per core:                      1
Core(s) per socket:                      2
BogoMIPS:                                4900.00
Hypervisor vendor:                       KVM
"""
ZEN3_VM = cpuinfo(AVX2, 2, mhz="2450.000", model="AMD EPYC 7B13", vendor="AuthenticAMD", family=25, model_number=1)


def clock_measured_at(ghz):
    """A stand-in for measure_cpu_clock that records the add latency it was asked to assume."""
    def measure(latency_cycles):
        measure.asked.append(latency_cycles)
        return ghz
    measure.asked = []
    return measure


def test_a_vm_that_hides_its_maximum_clock_has_it_measured_not_its_base_clock_used():
    """The report's case: 2 Zen 3 cores in a VM stated 157 GFLOP/s (2.45 GHz, the nominal clock) while a matmul
    measured 189; the cores run at 3.5 GHz."""
    assert cpu_peak(2, ZEN3_VM, LSCPU_KVM_ZEN3)["flops_per_s"] == pytest.approx(2 * 2.45e9 * 32)  # not measured
    measure = clock_measured_at(3.5)
    peak = cpu_peak(2, ZEN3_VM, LSCPU_KVM_ZEN3, measure_clock=measure)
    assert measure.asked == [3]  # Zen 3 adds fp64 in 3 cycles
    assert peak["flops_per_s"] == pytest.approx(2 * 3.5e9 * 32) and peak["flops_per_s"] > 189e9
    assert peak["clock_source"].startswith("measured clock") and "3 cycles" in peak["clock_source"]
    assert any("measured clock" in line and "3 cycles" in line for line in peak["assumptions"])


@pytest.mark.parametrize("lscpu_text, max_freq_khz, source", [
    (LSCPU_KVM_ZEN3 + "CPU max MHz:                             3529.0000\n", "", "lscpu 'CPU max MHz'"),
    (LSCPU_KVM_ZEN3, "3529000\n", "cpufreq cpuinfo_max_freq")])
def test_a_stated_maximum_clock_is_used_without_measuring(lscpu_text, max_freq_khz, source):
    measure = clock_measured_at(9.9)
    peak = cpu_peak(2, ZEN3_VM, lscpu_text, max_freq_khz, measure_clock=measure)
    assert measure.asked == [] and peak["clock_source"] == source and peak["clock_ghz"] == pytest.approx(3.529)


@pytest.mark.parametrize("measured, note", [(2.0, "read lower (2.00 GHz)"), (None, "gave no reading"),
                                            (12.0, "12.00 GHz, outside 0.5-6.2 GHz"),
                                            (6.5, "6.50 GHz, outside 0.5-6.2 GHz (no shipped part runs there)")])
def test_a_measured_clock_below_the_nominal_one_or_implausible_is_not_used(measured, note):
    peak = cpu_peak(2, ZEN3_VM, LSCPU_KVM_ZEN3, measure_clock=clock_measured_at(measured))
    assert peak["clock_ghz"] == pytest.approx(2.45)
    assert peak["clock_source"].startswith("/proc/cpuinfo 'cpu MHz'") and note in peak["clock_source"]


@pytest.mark.parametrize("text, cycles", [
    (cpuinfo(AVX512, 1, model="AMD EPYC 9755 128-Core Processor", vendor="AuthenticAMD", family=26,
             model_number=2), 2),
    (cpuinfo(AVX512, 1, model="Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", vendor="GenuineIntel", family=6,
             model_number=85), 4),
    (cpuinfo(AVX2, 1, model="Intel(R) Xeon(R) CPU E5-2686 v4 @ 2.30GHz", vendor="GenuineIntel", family=6,
             model_number=79), 3),
    (cpuinfo(AVX512, 1, model="Intel(R) Xeon(R) Platinum 8480+", vendor="GenuineIntel", family=6,
             model_number=143), None),  # Sapphire Rapids without its AMX flags: not recognised, so not measured
    # the case: AMX and AVX512-FP16 on a model number a hypervisor gave as 167 (0xA7, "Rocket Lake"): the
    # flags say Golden Cove or later, whose adds take 2 cycles, not Skylake-to-Ice-Lake's 4
    (cpuinfo(AVX512 + " avx512_fp16 amx_bf16 amx_tile amx_int8", 1, model="Intel(R) Xeon(R) Processor",
             vendor="GenuineIntel", family=6, model_number=167), 2),
])
def test_the_clock_is_measured_with_the_add_latency_of_the_microarchitecture(text, cycles):
    measure = clock_measured_at(4.0)
    peak = cpu_peak(1, text, measure_clock=measure)
    assert measure.asked == ([cycles] if cycles else [])
    assert peak["clock_source"].startswith("measured clock") is bool(cycles)


def test_a_peak_below_the_measured_matmul_is_raised_to_it_and_says_so():
    from trtbench.measure.ceiling import peak_not_below_measured

    stated = {"peak_flops_per_s": 157e9, "peak_clock_ghz": 2.45, "measured_flops_per_s": 189e9,
              "peak_clock_source": "/proc/cpuinfo 'cpu MHz' (the current or, in a VM, nominal clock)"}
    raised = peak_not_below_measured(stated)
    assert raised["peak_flops_per_s"] == 189e9 and raised["peak_stated_flops_per_s"] == 157e9
    assert "below the measured matmul" in raised["peak_note"] and "2.45 GHz (/proc/cpuinfo" in raised["peak_note"]
    assert peak_not_below_measured({**stated, "peak_flops_per_s": 224e9}) == {**stated, "peak_flops_per_s": 224e9}
    assert peak_not_below_measured({"peak_flops_per_s": 1e11}) == {"peak_flops_per_s": 1e11}  # nothing measured


def test_the_report_says_what_the_peak_is_and_where_its_clock_came_from():
    from helpers.records import record
    from trtbench.measure.ceiling import Ceiling, peak_not_below_measured
    from trtbench.report.tables import markdown_table
    from trtbench.results.resultset import ResultSet

    results = ResultSet(environments={"env-a": {"id": "env-a"}})
    for variant, median in (("eager", 10.0), ("traced", 5.0)):
        results.add(record(variant, median, "env-a", metrics={"flops": 1e9}))
    values = {"peak_flops_per_s": 224e9, "peak_method": "cores x clock x fp32 FLOP per cycle per core",
              "peak_clock_ghz": 3.5, "peak_clock_source": "measured clock (a chain of dependent fp64 adds)",
              "measured_flops_per_s": 189e9}
    results.add(Ceiling("env-a", "cpu", "float32", 2, values))
    table = markdown_table(results)
    assert "% peak on cpu (float32, 2 threads) is of 224 GFLOP/s" in table
    assert "clock 3.50 GHz from measured clock (a chain of dependent fp64 adds)" in table
    stated = dict(values, peak_flops_per_s=157e9, peak_clock_ghz=2.45, peak_clock_source="model name (base clock)")
    results.add(Ceiling("env-a", "cpu", "float32", 2, peak_not_below_measured(stated)))
    table = markdown_table(results)
    assert "is of 189 GFLOP/s" in table and "the peak stated at 2.45 GHz (model name (base clock)), 157 GFLOP/s, " \
        "is below the measured matmul, 189 GFLOP/s" in table


def test_a_row_above_100_percent_of_the_peak_is_named_with_the_likely_cause():
    """On a Zen 5 CPU openvino at batch 16 read 102% of the peak: its convolutions do fewer FLOPs than counted."""
    from helpers.records import record
    from trtbench.measure.ceiling import Ceiling
    from trtbench.report.tables import markdown_table
    from trtbench.results.resultset import ResultSet

    results = ResultSet(environments={"env-a": {"id": "env-a"}})
    for variant, median in (("eager", 10.0), ("openvino", 4.3)):  # 100 and 233 GFLOP/s
        results.add(record(variant, median, "env-a", metrics={"flops": 1e9}))
    results.add(Ceiling("env-a", "cpu", "float32", 2, {"peak_flops_per_s": 224e9, "peak_method": "cores x clock"}))
    table = markdown_table(results)
    named = next(line for line in table.splitlines() if "above 100% of the peak" in line)
    assert "openvino fp32 opt (104%)" in named and "eager" not in named and "Winograd" in named
    results.add(Ceiling("env-a", "cpu", "float32", 2, {"peak_flops_per_s": 300e9, "peak_method": "cores x clock"}))
    assert "above 100% of the peak" not in markdown_table(results)


@pytest.mark.parametrize("device, cudnn_tf32, matmul_tf32, math", [
    ("cuda", True, False, "tf32"),  # torch's defaults: cuDNN convolutions allow TF32, cuBLAS matmuls do not
    ("cuda", False, True, "tf32"),
    ("cuda:1", False, False, "fp32"),
    ("cpu", True, True, "fp32"),
])
def test_fp32_math_is_tf32_where_cuda_allows_it(device, cudnn_tf32, matmul_tf32, math):
    from trtbench.measure.ceiling import fp32_math

    assert fp32_math(torch.device(device), cudnn_tf32, matmul_tf32) == math


@pytest.mark.parametrize("cudnn_tf32, peak_tflops", [(True, 494.7), (False, 67.0)])
def test_fp32_peak_and_measured_matmul_use_one_math_mode(monkeypatch, cudnn_tf32, peak_tflops):
    """Bug: the fp32 peak was the TF32 tensor cores' (cuDNN allows TF32 by default) while the matmul was measured
    at plain FP32 (cuBLAS TF32 is off by default), so fp32 rows read far above 100% of the matmul. The device's
    name and the timed matmuls are fakes (they need CUDA); the fake timing records the math mode cuBLAS would use."""
    import trtbench.measure.ceiling as ceiling

    seen = []

    def fake_time_matmuls(n, device, dtype, repeats):
        seen.append(torch.backends.cuda.matmul.allow_tf32)
        return [2 * n ** 3 / 5e13] * repeats  # 50 TFLOP/s: below either peak

    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(ceiling, "_time_matmuls", fake_time_matmuls)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", cudnn_tf32)
    before = torch.backends.cuda.matmul.allow_tf32
    values = ceiling.device_ceilings(torch.device("cuda"), torch.float32, 1, measure=True)
    assert values["peak_flops_per_s"] == pytest.approx(peak_tflops * 1e12)
    assert set(seen) == {cudnn_tf32} and torch.backends.cuda.matmul.allow_tf32 == before  # restored
    assert (values.get("math") == "tf32") is cudnn_tf32 and ("TF32" in values.get("math_note", "")) is cudnn_tf32
    half = ceiling.device_ceilings(torch.device("cuda"), torch.float16, 1, measure=True)
    assert half["peak_flops_per_s"] == pytest.approx(989.4e12) and "math" not in half and seen[-1] is False


def test_the_report_states_tf32_where_fp32_runs_as_tf32():
    from helpers.records import record
    from trtbench.measure.ceiling import TF32_NOTE, Ceiling
    from trtbench.report.tables import markdown_table
    from trtbench.results.resultset import ResultSet

    results = ResultSet(environments={"env-a": {"id": "env-a"}})
    results.add(record("eager", 10.0, "env-a", metrics={"flops": 1e9}))
    results.add(Ceiling("env-a", "cpu", "float32", 2, {"peak_flops_per_s": 494.7e12, "peak_method": "datasheet",
                                                       "math": "tf32", "math_note": TF32_NOTE}))
    assert "TF32 is used for fp32 here" in markdown_table(results)


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


def test_a_sizes_calls_stop_once_they_took_a_second_after_two_at_least(monkeypatch):
    """A size whose call takes 0.7 s is timed twice, not five times (the clock's readings are scripted)."""
    readings = itertools.count(step=0.7)  # each reading 0.7 s after the one before: every call takes 0.7 s
    monkeypatch.setattr(ceiling.time, "perf_counter", lambda: next(readings))
    assert ceiling._time_matmuls(8, torch.device("cpu"), torch.float32, repeats=5) == pytest.approx([0.7, 0.7])
    assert len(ceiling._time_matmuls(8, torch.device("cpu"), torch.float32, repeats=5)) == 2


def test_measured_ceiling_stops_growing_the_matmul_once_a_size_gains_under_5_percent(monkeypatch):
    import trtbench.measure.ceiling as ceiling

    def timed(flops_by_size):  # each size's calls take what gives these FLOP/s
        return lambda n, device, dtype, repeats: [2 * n ** 3 / flops_by_size[n]] * repeats

    monkeypatch.setattr(ceiling, "_time_matmuls", timed({8: 1e9, 16: 1.02e9, 32: 5e9}))
    plateau = measured_matmul_ceiling(torch.device("cpu"), sizes=(8, 16, 32), repeats=2)
    assert set(plateau["samples_flops_per_s"]) == {"8", "16"} and plateau["size"] == 16
    monkeypatch.setattr(ceiling, "_time_matmuls", timed({8: 1e9, 16: 2e9, 32: 3e9}))
    growing = measured_matmul_ceiling(torch.device("cpu"), sizes=(8, 16, 32), repeats=2)
    assert set(growing["samples_flops_per_s"]) == {"8", "16", "32"} and growing["size"] == 32


SAPPHIRE_RAPIDS = AVX512 + " avx512_vnni avx512_bf16 amx_bf16 amx_tile amx_int8"


@pytest.mark.parametrize("flags, dtype, unit, per_cycle", [
    (AVX512 + " avx512_bf16", torch.bfloat16, "AVX512-BF16", 128),  # twice AVX-512's 64 fp32 FLOP per cycle
    (SAPPHIRE_RAPIDS, torch.bfloat16, "AMX-BF16", 1024),
    (AVX512 + " avx512_vnni", torch.int8, "AVX512-VNNI", 256),
    (AVX2 + " avx_vnni", torch.int8, "AVX-VNNI", 128),
    (SAPPHIRE_RAPIDS, torch.int8, "AMX-INT8", 2048),
])
def test_bf16_and_int8_peaks_are_those_of_their_units(flags, dtype, unit, per_cycle):
    peak = cpu_peak(2, cpuinfo(flags, cores=2), dtype=dtype)
    assert (peak["vector_unit"], peak["flop_per_cycle"]) == (unit, per_cycle)
    assert peak["flops_per_s"] == pytest.approx(2 * 2.3e9 * per_cycle)
    assert peak["method"].startswith("cores x clock x " + ("int8 ops" if dtype == torch.int8 else "bf16 FLOP"))


def test_without_bf16_units_bf16_reads_against_the_fp32_units():
    fp32, bf16 = cpu_peak(2, cpuinfo(AVX512, cores=2)), cpu_peak(2, cpuinfo(AVX512, cores=2), dtype=torch.bfloat16)
    assert bf16["flops_per_s"] == fp32["flops_per_s"] and "emulated" in bf16["vector_unit"]
    assert any("no AVX512-BF16 or AMX-BF16" in line for line in bf16["assumptions"])


def test_int8_without_vnni_states_no_peak_rather_than_fp32s():
    """INT8 rows once read "384% of peak" against the fp32 peak; without VNNI or AMX there is no INT8 peak."""
    peak = cpu_peak(2, cpuinfo(AVX2, cores=2), dtype=torch.int8)
    assert peak["flops_per_s"] is None and "no VNNI or AMX-INT8" in peak["reason"]


def test_int8_and_bf16_records_read_their_own_ceilings():
    import dataclasses

    from helpers.records import record
    from trtbench.measure.ceiling import Ceiling

    fp32 = record("ort", 1.0)
    at = {p: dataclasses.replace(fp32, case=dataclasses.replace(fp32.case, precision=p)) for p in ("int8", "bf16")}
    assert [Ceiling.scope_of(r)[2] for r in (fp32, at["int8"], at["bf16"])] == ["float32", "int8", "bfloat16"]
