"""The generate scenario on a 2-layer, hidden-size-64 Llama with random weights: a run through the CLI, the
compiled decoder against eager, and the bad inputs that exit 2 naming their key (exported's and aoti's builds:
tests/test_decoder_builds.py)."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")

from trtbench.config.config import config_from_dict  # noqa: E402
from trtbench.core.errors import UserInputError  # noqa: E402

TINY_LLAMA = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "vocab_size": 512, "max_position_embeddings": 64}
GENERATE = {"name": "tinygen", "device": "cpu", "variants": ["eager", "exported"], "precisions": ["fp32", "int4"],
            "model": {"source": "transformers", "name": "llama", "task": "causal-lm", "kwargs": TINY_LLAMA,
                      "label": "tiny-llama"},
            "benchmark": {"threads": 1, "measure_ceiling": False},  # the triad: tests/test_bandwidth.py
            "scenarios": [{"generate": {"prompt_tokens": [12], "new_tokens": [4], "batch": [1, 2],
                                        "min_requests": 3, "max_requests": 4}}]}


def generate_config(**changes) -> dict:
    data = copy.deepcopy(GENERATE)
    data.update(changes)
    return data


def test_generate_runs_through_the_cli_and_reports_every_metric(write_config, subprocess_env, tmp_path):
    out = tmp_path / "out"
    path = write_config(generate_config(output={"dir": str(out)}))
    proc = subprocess.run([sys.executable, "-m", "trtbench", "--config", str(path), "--quiet"], env=subprocess_env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((out / "results.json").read_text())
    rows = {(r["point"], r["slot"]): r for r in doc["generate"]}
    assert set(rows) == {(p, s) for p in ("p12-n4-b1", "p12-n4-b2")
                         for s in ("eager", "exported", "eager@int4", "exported@int4")}
    for point, batch in (("p12-n4-b1", 1), ("p12-n4-b2", 2)):
        eager = rows[point, "eager"]
        assert eager["status"] == "ok" and eager["data"]["batch"] == batch
        metrics, requests = eager["data"]["metrics"], eager["data"]["requests"]
        assert 3 <= eager["data"]["rounds"] == len(requests["e2e_ms"]) <= 4
        assert metrics["ttft_ms"]["median"] < metrics["e2e_ms"]["median"]
        assert metrics["itl_ms"]["count"] == 3 * eager["data"]["rounds"] and len(metrics["step_ms"]) == 3
        tpot = metrics["tpot_ms"]["median"]
        assert metrics["decode_tokens_per_s"]["median"] == pytest.approx(batch * 1e3 / tpot, rel=0.5)
        assert eager["data"]["speedups"]["e2e_ms"]["value"] == pytest.approx(1.0)
        accuracy = eager["data"]["accuracy"]
        assert accuracy["cosine_min"] == pytest.approx(1.0) and accuracy["greedy_prefix"] == 4 and accuracy["ok"]
        assert eager["data"]["facts"]["per_token_times"] == "streamed"
        assert eager["data"]["facts"]["cold_start"]["first_token_ms"] > 0
        assert eager["data"]["kv_cache_bytes"] == 2 * 2 * 2 * 16 * batch * (12 + 4) * 4  # K and V, layers, heads, dim
        assert eager["data"]["decode_bytes"]["achieved_bytes_per_s"] > 0
        skipped = rows[point, "eager@int4"]
        assert skipped["status"] == "skipped" and "no int4 path" in skipped["reason"]
        exported = rows[point, "exported"]["data"]  # timed in the same rounds: paired speedups over eager fp32
        assert exported["rounds"] == eager["data"]["rounds"] and exported["speedups"]["tpot_ms"]["low"] is not None
        assert exported["accuracy"]["ok"] and exported["accuracy"]["greedy_prefix"] == 4
        assert exported["facts"]["programs"] == 3  # a program per point and one for the teacher-forced sequence
        facts = exported["facts"]  # built in a process of its own, which the worker outlived
        assert facts["build_pid"] != exported["memory"]["worker_pid"] and facts["build_peak_rss_mb"] > 100
        assert eager["data"]["facts"]["build_pid"] == eager["data"]["memory"]["worker_pid"], "loads nothing to build"
        assert 0 < facts["rss_after_load_mb"] <= exported["memory"]["worker_peak_rss_mb"]
    assert {r["point"] for r in doc["generate_recommendations"]} == {"p12-n4-b1", "p12-n4-b2"}
    assert [c["values"]["datasheet_bytes_per_s"] for c in doc["memory_ceilings"]] == [None]  # a CPU's: unknown
    report = (out / "report.md").read_text()
    assert "## Generate" in report and "**TPOT**: time per output token: (E2E - TTFT) / (new_tokens - 1)" in report
    assert "| p12-n4-b2 | eager | fp32 | ok |" in report and "### What to ship" in report
    assert "decode GB/s (% triad, % datasheet)" in report and "triad not measured" in report
    assert "![generate_steps](plots/generate_steps.png)" in report and "| first token ms |" in report
    assert (out / "plots" / "generate_batch.png").is_file()
    # the summary's lowest TPOT / TTFT at each point: either decoder, as their timings fall (both are accurate)
    assert re.search(r"tiny-llama p12-n4-b1: (eager|exported) fp32 [\d.]+ ms/token; (eager|exported) fp32", proc.stdout)

    from trtbench.pipeline.merge import merge_runs

    merged = merge_runs([str(out)], tmp_path / "merged")  # a merge reads the parts and reports them too
    assert len(merged.results.parts("generate")) == 8
    assert "## Generate" in (tmp_path / "merged" / "report.md").read_text()


def test_compiled_matches_eager_and_states_its_compile(tmp_path):
    from trtbench.config.config import ModelConfig
    from trtbench.decoders import get_decoder
    from trtbench.measure.token_timing import timed_request
    from trtbench.models import build_model
    from trtbench.models.hf_folder import write_model_folder

    folder = write_model_folder(build_model(ModelConfig(name="llama", source="transformers", task="causal-lm",
                                                        kwargs=TINY_LLAMA)), tmp_path / "hf")
    prompt = np.random.default_rng(0).integers(3, 512, size=(1, 8))
    sessions = {name: get_decoder(name).load(get_decoder(name).build(folder, "fp32", tmp_path / name, 1, ((1, 12),)),
                                             "cpu", 1)
                for name in ("eager", "compiled")}
    tokens = {name: timed_request(s, prompt, 4).tokens for name, s in sessions.items()}
    compiled = sessions["compiled"]
    graphs = compiled.facts["compiled_graphs"]
    assert compiled.facts["compile_s"] > 0 and graphs >= 2  # the prefill and a decode step
    again = timed_request(compiled, prompt, 4)
    assert compiled.facts["compiled_graphs"] == graphs, "a second request of the same shape compiles nothing"
    assert compiled.facts["recompiles"] == 0
    assert np.array_equal(tokens["compiled"], tokens["eager"]) and np.array_equal(again.tokens, tokens["eager"])
    logits = {name: s.logits(prompt) for name, s in sessions.items()}
    assert logits["eager"].shape == (1, 8, 512) and logits["eager"].dtype == np.float32
    assert np.abs(logits["compiled"] - logits["eager"]).max() < 1e-4


@pytest.mark.parametrize("changes, key, says", [
    ({"scenarios": [{"generate": {"new_tokens": [1]}}]}, "scenarios[0].generate.new_tokens[0]", "at least two"),
    ({"scenarios": [{"generate": {"prompt_tokens": [60], "new_tokens": [8]}}]}, "scenarios[0].generate.prompt_tokens",
     "above model's 64 positions"),
    ({"model": {"source": "transformers", "name": "vit", "task": "causal-lm"}}, "model.task",
     "no language-model head"),
    ({"model": {"source": "torchvision", "name": "resnet18"}}, "scenarios[0].generate",
     "generate runs a causal language model"),
    ({"model": {"source": "transformers", "name": "llama", "kwargs": TINY_LLAMA}}, "scenarios[0].generate",
     "is not one"),
    ({"variants": ["eager", "tensorrt_llm"]}, "variants[1]", "unknown decoder 'tensorrt_llm'"),
    ({"precisions": ["fp8"]}, "precisions[0]", "unknown value 'fp8'"),
    ({"tolerances": {"int4": {"cosine_min": 2}}}, "tolerances.int4.cosine_min", "not within [0, 1]"),
    ({"scenarios": ["latency", {"generate": {}}]}, "scenarios", "cannot share a config with latency"),
    ({"scenarios": [{"generate": {"memory_budget_mb": 0}}]}, "scenarios[0].generate.memory_budget_mb",
     "must be positive"),
])
def test_bad_generate_input_names_the_key(changes, key, says):
    with pytest.raises(UserInputError) as info:
        config_from_dict(generate_config(**changes))
    assert info.value.where == key and says in info.value.problem, info.value.format()


def test_bad_generate_input_exits_2_through_the_cli(write_config, subprocess_env):
    path = write_config(generate_config(scenarios=[{"generate": {"new_tokens": [1]}}]))
    proc = subprocess.run([sys.executable, "-m", "trtbench", "--config", str(path)], env=subprocess_env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "scenarios[0].generate.new_tokens[0]" in proc.stderr, proc.stderr


def test_the_bundled_example_is_the_issues_shape():
    from trtbench.config.config import load_config

    config = load_config("tinyllama")
    assert config.models[0].task == "causal-lm" and config.inputs == []
    assert config.scenarios[0].settings.batch == [1, 4] and config.precisions == ["fp32", "int4"]
    assert Path(config.output.dir) == Path("results/tinyllama")


def test_a_resumed_run_owes_only_the_points_missing_a_slot():
    """Each point's rows are yielded together, once its rounds end (their speedups pair those rounds), so a point
    is owed until every slot of it is journaled."""
    from types import SimpleNamespace

    from trtbench.config.plan import resolve
    from trtbench.core.status import Status
    from trtbench.scenarios.generate_result import GenerateRecord

    config = config_from_dict(generate_config(variants=["eager"]))
    (group,), (scenario,) = resolve(config).groups, config.scenarios

    def part(point, slot):
        return GenerateRecord("env", group.model.id, group.threads, point, slot, "eager", "fp32", Status.OK)

    def done(*parts):
        return SimpleNamespace(parts=lambda kind: list(parts) if kind == GenerateRecord.KIND else [])

    assert [p.label for p in scenario.points_todo(group, done())] == ["p12-n4-b1", "p12-n4-b2"]
    half = done(part("p12-n4-b1", "eager"), part("p12-n4-b1", "eager@int4"), part("p12-n4-b2", "eager"))
    assert [p.label for p in scenario.points_todo(group, half)] == ["p12-n4-b2"]
    assert not scenario.owes(group, done(*[part(p, s) for p in ("p12-n4-b1", "p12-n4-b2")
                                           for s in ("eager", "eager@int4")]))
    assert GenerateRecord.from_dict(part("p12-n4-b1", "eager").to_dict()) == part("p12-n4-b1", "eager")


def test_a_memory_budget_for_one_decoder_beside_eager_times_the_groups_one_after_another(tmp_path, monkeypatch):
    """A budget of two workers at a time (eager fp32 and one decoder, about 1000 MiB each): exported and ort_genai
    are timed in groups of their own, each with eager fp32, one after the other; the peaks are reported; exported's
    worker, SIGKILLed at its second point, fails that point's row naming the signal, and the rest is kept."""
    import os
    import signal

    from conftest import run_dict
    from trtbench.workers.loop import Worker

    pytest.importorskip("onnxruntime_genai")
    check = Worker.check

    def killing_check(self, label):
        if self.name == "exported" and label == "p8-n3-b2":
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()
        return check(self, label)

    monkeypatch.setattr(Worker, "check", killing_check)
    out = tmp_path / "out"
    data = generate_config(variants=["eager", "exported", "ort_genai"], precisions=["fp32"], output={"dir": str(out)},
                           scenarios=[{"generate": {"prompt_tokens": [8], "new_tokens": [3], "batch": [1, 2],
                                                    "min_requests": 2, "max_requests": 2, "memory_budget_mb": 2100}}])
    assert run_dict(data).exit_code == 1, "a killed worker fails its rows"
    doc = json.loads((out / "results.json").read_text())
    rows = {(r["point"], r["slot"]): r for r in doc["generate"]}
    assert len(rows) == 6
    memory = {key: row["data"]["memory"] for key, row in rows.items() if "memory" in row["data"]}
    assert {key[1]: m["members"] for key, m in memory.items()} == {
        "eager": ["eager", "exported"], "exported": ["eager", "exported"], "ort_genai": ["eager", "ort_genai"]}
    assert all(m["groups"] == 2 and m["budget_mb"] == 2100 for m in memory.values())
    by_group = [[m for m in memory.values() if m["group"] == g] for g in range(2)]
    for before, after in zip(by_group, by_group[1:]):
        assert min(m["group_started_at"] for m in after) >= max(m["timed_until"] for m in before), "one at a time"
        assert not {m["worker_pid"] for m in before} & {m["worker_pid"] for m in after}
    for m in memory.values():
        assert m["worker_peak_rss_mb"] > 50 and m["estimate_mb"] > 500
        assert m["run_peak_rss_mb"] > m["worker_peak_rss_mb"]
    killed = rows["p8-n3-b2", "exported"]
    assert killed["status"] == "failed" and "killed by SIGKILL" in killed["reason"] and "OOM killer" in killed["reason"]
    assert rows["p8-n3-b1", "exported"]["status"] == "ok", "what it measured before it died is kept"
    for point in ("p8-n3-b1", "p8-n3-b2"):
        for slot in ("eager", "ort_genai"):
            assert rows[point, slot]["status"] == "ok"
        assert rows[point, "ort_genai"]["data"]["speedups"]["e2e_ms"]["value"] > 0, "paired with its group's eager"
    report = (out / "report.md").read_text()
    assert "### Memory" in report and "| tiny-llama | t1 | 2 of 2 | ort_genai " in report


def test_a_decoder_that_does_not_fit_beside_eager_is_skipped_with_the_fix():
    from trtbench.scenarios.generate_memory import MIB, plan_groups

    groups, too_big = plan_groups({"eager": 600 * MIB, "exported": 700 * MIB, "compiled": 500 * MIB}, 1200 * MIB,
                                  "eager")
    assert groups == [["eager", "compiled"]]
    assert "raise memory_budget_mb under the generate entry" in too_big["exported"]
