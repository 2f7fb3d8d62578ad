"""How close a decode step comes to the memory limit: the STREAM-like triad ceiling, the datasheet table, the bytes
a decode step reads (exact arithmetic on a known tiny config) and the generate report's bandwidth column."""

from __future__ import annotations

import pytest

from trtbench.core.status import Status
from trtbench.measure.bandwidth import (MemoryCeiling, cpu_last_level_cache, datasheet_bandwidth, measured_triad,
                                        memory_ceilings)
from trtbench.measure.decode_bytes import decode_step_bytes, kv_cache_bytes, weight_bytes, weight_counts
from trtbench.scenarios.generate.report import generate_section
from trtbench.scenarios.generate.result import GenerateRecord


# hidden 64, 2 layers, 4 heads of 16, 2 KV heads, intermediate 128, vocab 512
TINY = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 512, "max_position_embeddings": 64}
# per layer: q 64x64, k and v 64x32, o 64x64, gate/up/down 64x128 each; the LM head 64x512
MATMUL = 2 * (64 * 64 * 2 + 64 * 32 * 2 + 3 * 64 * 128) + 64 * 512
NORMS = 2 * 2 * 64 + 64  # two RMSNorms per layer and the final one


def test_the_triad_measures_a_stated_positive_bandwidth():
    triad = measured_triad("cpu", threads=1, array_bytes=1 << 20, repeats=2)
    assert triad["bytes_per_s"] > 0 and len(triad["samples_bytes_per_s"]) == 2
    assert triad["bytes_per_s"] == max(triad["samples_bytes_per_s"]) and triad["threads"] == 1
    assert triad["array_bytes"] == 1 << 20 and "3 x 8 bytes per element" in triad["method"]


def test_the_last_level_cache_counts_each_shared_instance_once(tmp_path):
    for cpu in range(4):  # an L2 per core, one L3 per pair of cores
        for index, (level, size, kind, shared) in enumerate(
                [(1, "32K", "Instruction", str(cpu)), (2, "512K", "Unified", str(cpu)),
                 (3, "16384K", "Unified", "0-1" if cpu < 2 else "2-3")]):
            folder = tmp_path / f"cpu{cpu}" / "cache" / f"index{index}"
            folder.mkdir(parents=True)
            for name, text in (("level", str(level)), ("size", size), ("type", kind), ("shared_cpu_list", shared)):
                (folder / name).write_text(text + "\n")
    assert cpu_last_level_cache(tmp_path) == (32 << 20, "sysfs: 2 L3 cache(s) of 16 MiB")
    assert cpu_last_level_cache(tmp_path / "none")[1].startswith("assumed")


def test_the_datasheet_is_known_for_listed_gpus_only():
    assert datasheet_bandwidth("cuda:0", "NVIDIA H100 80GB HBM3")["bytes_per_s"] == pytest.approx(3.35e12)
    assert datasheet_bandwidth("cuda:0", "NVIDIA H100 PCIe")["bytes_per_s"] == pytest.approx(2.0e12)
    assert datasheet_bandwidth("cuda", "NVIDIA H200")["bytes_per_s"] == pytest.approx(4.8e12)
    assert datasheet_bandwidth("cuda", "NVIDIA A100-SXM4-40GB")["bytes_per_s"] == pytest.approx(1.555e12)
    assert datasheet_bandwidth("cuda", "NVIDIA L4")["bytes_per_s"] == pytest.approx(0.3e12)
    assert datasheet_bandwidth("cuda", "NVIDIA GeForce RTX 4090")["bytes_per_s"] is None
    cpu = datasheet_bandwidth("cpu")
    assert cpu["bytes_per_s"] is None and "unknown for a CPU" in cpu["reason"]
    assert memory_ceilings("cpu", 1, measure=False) == {"datasheet_bytes_per_s": None,
                                                         "datasheet_source": cpu["reason"]}


def test_a_decode_steps_bytes_are_its_weights_as_deployed_and_its_kv_cache():
    transformers = pytest.importorskip("transformers")
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**TINY))
    counts = weight_counts(model)
    assert counts == {"matmul": MATMUL, "other": NORMS, "embedding": 512 * 64}
    assert weight_bytes(counts, "fp32") == 4 * (MATMUL + NORMS)
    assert weight_bytes(counts, "bf16") == 2 * (MATMUL + NORMS)
    assert weight_bytes(counts, "int4") == MATMUL * (0.5 + 4 / 32) + 4 * NORMS
    assert weight_bytes(counts, "int8") == MATMUL * (1 + 4 / 32) + 4 * NORMS
    config = model.config
    assert kv_cache_bytes(config, 2, 16, "fp32") == 2 * 2 * 2 * 16 * 16 * 2 * 4  # K and V, layers, kv heads, dim
    step = decode_step_bytes(counts, config, (12, 4, 2), "bf16")  # mean position 12 + 4 / 2 = 14
    assert step["mean_position"] == 14 and step["kv_bytes"] == 2 * 2 * 2 * 16 * 14 * 2 * 2
    assert step["bytes"] == 2 * (MATMUL + NORMS) + step["kv_bytes"]
    tied = weight_counts(transformers.LlamaForCausalLM(transformers.LlamaConfig(**TINY, tie_word_embeddings=True)))
    assert tied == {"matmul": MATMUL, "other": NORMS, "embedding": 0}  # the LM head is the embedding


def _record(achieved: float) -> GenerateRecord:
    steps = {"median": 10.0, "median_ci_rel": 0.01}
    metrics = {name: steps for name in ("ttft_ms", "tpot_ms", "e2e_ms", "decode_tokens_per_s", "prefill_tokens_per_s")}
    metrics["itl_ms"] = {"p50": 10.0, "p99": 11.0}
    metrics["step_ms"] = [10.0, 10.0]
    data = {"device": "cpu", "prompt_tokens": 12, "new_tokens": 3, "batch": 1, "kv_cache_bytes": 2 << 20,
            "decode_bytes": {"bytes": achieved * 0.01, "achieved_bytes_per_s": achieved}, "metrics": metrics,
            "rounds": 3, "stopped_by": "max_requests", "peak_rss_bytes": 300 << 20}
    return GenerateRecord("env", "tiny", 2, "p12-n3-b1", "eager", "eager", "fp32", Status.OK, "", data)


def test_the_report_shows_the_bandwidth_column_against_the_ceilings(tmp_path):
    ceiling = MemoryCeiling("env", "cpu", 2, {"datasheet_bytes_per_s": None, "datasheet_source": "unknown for a CPU",
                                              "measured_bytes_per_s": 20e9, "measured_method": "STREAM triad",
                                              "measured_sized_by": "given"})
    markdown = generate_section([_record(5e9)], [ceiling], {}).markdown
    assert "| decode GB/s (% triad, % datasheet) | peak RSS / KV cache MB |" in markdown
    assert "| 5 (25%, -) | 300 / 2 |" in markdown
    assert "- cpu, 2 thread(s): triad 20 GB/s (STREAM triad; arrays sized at given); datasheet unknown" in markdown
    assert MemoryCeiling.from_dict(ceiling.to_dict()) == ceiling
    markdown = generate_section([_record(5e9)], [], {}).markdown  # no ceiling measured: the figure alone
    assert "| 5 (-, -) |" in markdown


def test_a_memory_ceiling_measured_by_two_inputs_merges_as_one_fact():
    from trtbench.results.resultset import ResultSet

    sets = []
    for measured in (20e9, 21e9):
        results = ResultSet()
        results.add(MemoryCeiling("env", "cpu", 2, {"datasheet_bytes_per_s": None, "measured_bytes_per_s": measured}))
        sets.append(results)
    merged, notes = ResultSet.merge(sets)
    assert notes == [] and [c.values["measured_bytes_per_s"] for c in merged.parts(MemoryCeiling.KIND)] == [21e9]
