"""Are trtbench's generate figures (TTFT, TPOT) what each runtime measures of itself on the same saved model?

Run:  .venv/bin/python benchmarks/generate_fidelity.py [--alternations 3] [--requests 10] [--prompt-tokens 128]
          [--new-tokens 64] [--threads 2] [--decoders eager,ort_genai,openvino_genai] [--evict]

trtbench: one generate run per alternation on a config this file writes (a Llama of hidden size 512, 6 layers,
8 heads, 4 KV heads, vocabulary 8000, random weights; the prompt and new tokens given, batch 1, fp32, the
decoders given), read back from its results.json: each decoder's median TTFT and TPOT.

The truth: after each trtbench run, each runtime alone in a fresh process of its own, on the artifacts that run
published (``OUT/artifacts/``, as its manifest names them), timed by its own tool, one warm-up request, then
``--requests``:

* ort_genai: ONNX Runtime GenAI's generator loop, timed as onnxruntime-genai's
  ``benchmark/python/benchmark_e2e.py`` times it: the generator is made outside the timing (greedy,
  ``min_length = max_length``, the thread count in the session options as trtbench writes it); TTFT is
  ``append_tokens`` (the prefill) plus the first ``generate_next_token``, TPOT the mean of the later ones;
* openvino_genai: ``LLMPipeline.generate`` with the GenerationConfig and pipeline settings trtbench uses
  (:mod:`trtbench.decoders.openvino_genai`: PagedAttention scheduler with prefix caching off, f32 compute and KV
  cache, the thread count), no streamer; TTFT and TPOT are its ``perf_metrics.get_ttft().mean`` and
  ``get_tpot().mean``;
* eager: a plain loop over the model in the saved Hugging Face folder, fp32, with a ``DynamicCache``, greedy, the
  last position's logits only (``logits_to_keep=1``, as transformers' own generate), timed with perf_counter;
  TPOT = (E2E - TTFT) / (new_tokens - 1).

``--evict`` sweeps a buffer of 4x the last-level cache before each alone request, as trtbench's rounds leave the
cache to the other decoders between one decoder's requests (the model here, 80 MB in fp32, fits in a large L3, so
back-to-back requests alone start with their weights cached and trtbench's do not).

Each alone process's figure is its median over its requests; trtbench's and the alone figures each have one
value per alternation, and the table gives each side's median over the alternations (with the range), how far
trtbench's is off, and whether that is within 5%. Definitions differ slightly, and the table is read knowing
them: trtbench's TTFT includes making the request (ORT GenAI's generator, OpenVINO's streamer call) and its TPOT
includes reading each step's tokens. On a shared 2-core VM the machine's speed drifts between processes; run it
on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from trtbench.core.allocator import process_env
from trtbench.measure.bandwidth import cpu_last_level_cache

TARGET = 0.05
MODEL = {"source": "transformers", "name": "llama", "task": "causal-lm", "label": "fidelity-llama",
         "kwargs": {"hidden_size": 512, "intermediate_size": 1376, "num_hidden_layers": 6, "num_attention_heads": 8,
                    "num_key_value_heads": 4, "vocab_size": 8000, "max_position_embeddings": 1024}}
SEED = 0
# what each runtime alone loads, relative to the artifact the run's manifest names for its fp32 slot: eager, the
# Hugging Face folder published beside its decoder.json; the runtimes, the artifact folder itself
ARTIFACTS = {"eager": "../model", "ort_genai": ".", "openvino_genai": "."}

# One runtime alone, timed by its own tool. argv: kind, artifact, requests, threads, prompt tokens, new tokens,
# vocabulary, seed, bytes swept before each request (0: none).
ALONE = r'''
import json, statistics, sys, time
import numpy as np
kind, path, requests, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
prompt_tokens, new_tokens, vocab, seed, evict_bytes = (int(a) for a in sys.argv[5:10])
sweep = np.zeros(evict_bytes, dtype=np.uint8)
# the prompt trtbench's generate scenario draws for the point (scenarios/generate/scenario.py, point_prompts)
prompt = np.random.default_rng([seed, prompt_tokens, new_tokens, 1]).integers(
    min(3, vocab - 1), vocab, size=(1, prompt_tokens), dtype=np.int64)
if kind == "ort_genai":
    import onnxruntime_genai as og
    config = og.Config(path)
    config.overlay(json.dumps({"model": {"decoder": {"session_options": {
        "intra_op_num_threads": threads, "inter_op_num_threads": 1}}}}))
    model = og.Model(config)
    total = prompt_tokens + new_tokens
    def request():
        params = og.GeneratorParams(model)
        params.set_search_options(do_sample=False, max_length=total, min_length=total, batch_size=1)
        generator = og.Generator(model, params)  # outside the timing, as benchmark_e2e.py
        start = time.perf_counter()
        generator.append_tokens(prompt.astype(np.int32))
        generator.generate_next_token()
        ttft = time.perf_counter() - start
        steps = []
        for _ in range(new_tokens - 1):
            t0 = time.perf_counter()
            generator.generate_next_token()
            steps.append(time.perf_counter() - t0)
        return ttft * 1e3, statistics.mean(steps) * 1e3
elif kind == "openvino_genai":
    import openvino as ov
    import openvino_genai as genai
    scheduler = genai.SchedulerConfig()
    scheduler.max_num_batched_tokens = np.iinfo(np.int64).max
    scheduler.enable_prefix_caching = False
    pipeline = genai.LLMPipeline(path, "CPU", scheduler_config=scheduler, INFERENCE_NUM_THREADS=threads,
                                 INFERENCE_PRECISION_HINT="f32", KV_CACHE_PRECISION="f32")
    config = genai.GenerationConfig(max_new_tokens=new_tokens, min_new_tokens=new_tokens, ignore_eos=True,
                                    do_sample=False)
    def request():
        metrics = pipeline.generate(ov.Tensor(prompt), config).perf_metrics
        return metrics.get_ttft().mean, metrics.get_tpot().mean
elif kind == "eager":
    import torch
    from transformers import AutoModelForCausalLM, DynamicCache
    torch.set_num_threads(threads)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, local_files_only=True).eval()
    ids = torch.from_numpy(prompt)
    def request():
        with torch.inference_mode():
            cache = DynamicCache(config=model.config)
            start = time.perf_counter()
            logits = model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1).logits
            token = logits[:, -1].argmax(-1, keepdim=True)
            token.item()
            first = time.perf_counter()
            for _ in range(new_tokens - 1):
                logits = model(input_ids=token, cache=cache, use_cache=True, logits_to_keep=1).logits
                token = logits[:, -1].argmax(-1, keepdim=True)
                token.item()
            end = time.perf_counter()
        return (first - start) * 1e3, (end - first) * 1e3 / (new_tokens - 1)
else:
    raise SystemExit(f"unknown kind {kind}")
def evicted():
    if evict_bytes:
        np.add(sweep, 1, out=sweep)  # reads and writes every byte: the cache holds the sweep, not the model
    return request()
evicted()  # warm-up
timed = [evicted() for _ in range(requests)]
print(json.dumps({"ttft_ms": statistics.median(t for t, _ in timed), "tpot_ms": statistics.median(p for _, p in timed),
                  "requests": requests}))
'''


def run_trtbench(out: Path, args) -> dict:
    """Each decoder's (median TTFT ms, median TPOT ms) of one trtbench generate run, read from its results.json."""
    config = {"name": "generate-fidelity", "model": MODEL, "device": "cpu", "variants": args.decoders,
              "precisions": ["fp32"], "benchmark": {"threads": args.threads, "seed": SEED, "measure_ceiling": False},
              "scenarios": [{"generate": {"prompt_tokens": [args.prompt_tokens], "new_tokens": [args.new_tokens],
                                          "batch": [1]}}],
              "output": {"dir": str(out)}}
    path = out.parent / f"{out.name}.yaml"
    path.write_text(yaml.safe_dump(config))
    done = subprocess.run([sys.executable, "-m", "trtbench", "--config", str(path), "--fresh", "--quiet"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"trtbench failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    rows = json.loads((out / "results.json").read_text())["generate"]
    return {row["decoder"]: (row["data"]["metrics"]["ttft_ms"]["median"], row["data"]["metrics"]["tpot_ms"]["median"])
            for row in rows if row["status"] == "ok" and row["precision"] == "fp32"}


def artifact(out: Path, decoder: str) -> Path:
    """What ``decoder`` alone loads of the fp32 artifact that the run in ``out`` published (its manifest's entry)."""
    entries = json.loads((out / "artifacts" / "manifest.json").read_text())["artifacts"]
    entry = next((e for e in entries if e["variant"] == decoder and e["precision"] == "fp32"), None)
    if entry is None:
        raise SystemExit(f"the run in {out} published no fp32 artifact of {decoder}")
    path = ((out / "artifacts" / entry["artifact"]) / ARTIFACTS[decoder]).resolve()
    if not path.exists():
        raise SystemExit(f"{decoder}'s artifact is not at {path}")
    return path


def alone(decoder: str, path: Path, args) -> tuple[float, float]:
    """(TTFT ms, TPOT ms) of ``decoder`` alone in a fresh process, timed by its own tool."""
    command = [sys.executable, "-c", ALONE, decoder, str(path), str(args.requests), str(args.threads),
               str(args.prompt_tokens), str(args.new_tokens), str(MODEL["kwargs"]["vocab_size"]), str(SEED),
               str(4 * cpu_last_level_cache()[0] if args.evict else 0)]
    done = subprocess.run(command, capture_output=True, text=True, env=process_env("default", dict(os.environ)))
    if done.returncode != 0:
        raise SystemExit(f"{decoder} alone failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    return measured["ttft_ms"], measured["tpot_ms"]


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.4g} ({min(values):.4g}-{max(values):.4g})"


def report(trtbench: dict[str, list], own: dict[str, list], args) -> None:
    """Per decoder and metric: trtbench's median over the alternations against its own tool's, off by, within."""
    tools = {"eager": "plain loop (DynamicCache)", "ort_genai": "generator loop (benchmark_e2e.py)",
             "openvino_genai": "PerfMetrics"}
    print()
    print("| runtime | own tool | metric | trtbench ms, median (range) | own tool ms, median (range) | off by | "
          f"within {TARGET:.0%} |")
    print("|---|---|---|---|---|---|---|")
    for decoder in args.decoders:
        for index, metric in enumerate(("TTFT", "TPOT")):
            mine = [run[index] for run in trtbench[decoder]]
            theirs = [run[index] for run in own[decoder]]
            off = statistics.median(mine) / statistics.median(theirs) - 1
            print(f"| {decoder} | {tools[decoder]} | {metric} | {_spread(mine)} | {_spread(theirs)} | {off:+.1%} | "
                  f"{'yes' if abs(off) <= TARGET else 'NO'} |")
    print(f"\n{args.alternations} alternations, each a trtbench run then each runtime alone ({args.requests} requests "
          f"after one warm-up{', the cache swept before each' if args.evict else ''}); p{args.prompt_tokens} "
          f"n{args.new_tokens} b1, {args.threads} threads, fp32")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--alternations", type=int, default=3)
    parser.add_argument("--requests", type=int, default=10, help="timed requests per alone process")
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--evict", action="store_true", help="sweep 4x the last-level cache before each alone request")
    parser.add_argument("--decoders", default=",".join(ARTIFACTS), help=f"comma-separated, of: {', '.join(ARTIFACTS)}")
    args = parser.parse_args()
    args.decoders = args.decoders.split(",")
    unknown = sorted(set(args.decoders) - set(ARTIFACTS))
    if unknown or args.new_tokens < 2 or args.alternations < 1:
        parser.error(f"--decoders of {', '.join(ARTIFACTS)} (not {unknown}), --new-tokens >= 2, --alternations >= 1")
    trtbench: dict[str, list] = {d: [] for d in args.decoders}
    own: dict[str, list] = {d: [] for d in args.decoders}
    with tempfile.TemporaryDirectory(prefix="generate-fidelity-") as tmp:
        for i in range(args.alternations):  # trtbench and the alone processes alternate, so drift hits both
            out = Path(tmp) / f"run{i}"
            found = run_trtbench(out, args)
            missing = [d for d in args.decoders if d not in found]
            if missing:
                raise SystemExit(f"trtbench timed no fp32 row of {', '.join(missing)}: see {out / 'report.md'}")
            line = []
            for decoder in args.decoders:
                trtbench[decoder].append(found[decoder])
                own[decoder].append(alone(decoder, artifact(out, decoder), args))
                line.append(f"{decoder} trtbench {found[decoder][0]:.1f}/{found[decoder][1]:.2f}, "
                            f"own {own[decoder][-1][0]:.1f}/{own[decoder][-1][1]:.2f}")
            print(f"alternation {i + 1} (TTFT/TPOT ms): " + "; ".join(line), flush=True)
    report(trtbench, own, args)


if __name__ == "__main__":
    main()
