"""The configs and the report of scripts/gpu_check.sh (which runs each part in its time share).

    python3 scripts/gpu_check.py configs DEVICE OUT    # each part's config into OUT/configs/
    python3 scripts/gpu_check.py report DEVICE OUT     # OUT/report.md from OUT/parts.tsv and each part's results

On ``cuda`` the parts are the GPU check; on ``cpu`` the same checks as a rehearsal, at smaller shapes and shares
(fp16 and CUDA graphs need CUDA: those rows are left out there and the report says so; the fp16 localisation runs
there on eager alone, for accuracy).
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

import yaml

from trtbench.core.record import Record
from trtbench.models.planted import planted_path
from trtbench.report.columns.energy import energy_notes
from trtbench.report.columns.speedup import speedup_text
from trtbench.report.rows import Row
from trtbench.results.resultset import ResultSet

TARGET = (0.97, 1.03)  # benchmarks/harness_fidelity.py's: trtbench's median over a reference's
TORCH_PATHS = ["eager", "traced", "scripted", "exported", "compiled"]
LLAMA = {"hidden_size": 512, "intermediate_size": 1376, "num_hidden_layers": 6, "num_attention_heads": 8,
         "num_key_value_heads": 4, "vocab_size": 8000, "max_position_embeddings": 1024}  # configs/tinyllama.yaml's
SMALL_LLAMA = {**LLAMA, "hidden_size": 128, "intermediate_size": 344, "num_hidden_layers": 2, "vocab_size": 1000}

# What each part times, per device: (shape or generate point, precisions, timing). A GPU's shapes are the issue's;
# a CPU's are smaller so that the rehearsal ends within 8 minutes on 2 cores.
SIZES = {
    "cuda": {"resnet34": ([1, 3, 224, 224], [2, 3, 224, 224], [16, 3, 224, 224]), "precisions": ["fp32", "fp16"],
             "graphs": [2, 3, 224, 224], "resnet50": [64, 3, 224, 224], "llama": LLAMA,
             "generate": {"prompt_tokens": [128], "new_tokens": [64], "batch": [1]},
             "llama_precisions": ["fp32", "fp16", "bf16"], "shapes": ["min", "opt", "max"]},
    "cpu": {"resnet34": ([1, 3, 64, 64], [2, 3, 64, 64], [4, 3, 64, 64]), "precisions": ["fp32"],
            "graphs": None, "resnet50": [8, 3, 64, 64], "llama": SMALL_LLAMA,
            "generate": {"prompt_tokens": [32], "new_tokens": [8], "batch": [1]},
            "llama_precisions": ["fp32", "bf16"], "shapes": ["opt"]},
}
# The fp16 localisation part: `trtbench diagnose` of the built-in planted_net, its fp16 range fault in block
# PLANTED_AT, on each of LOCALISED's paths; a CPU localises fp16 on eager only (docs/accuracy.md, "The GPU check").
PLANTED_AT = 3
LOCALISED = ("eager", "compiled", "trt")
LOCALISED_ON = {"cuda": ["eager", "trt", "compiled"], "cpu": ["eager", "trt"]}  # trt first: unavailable at no cost
BENCHMARK = {"mode": "adaptive", "warmup": 1, "warmup_s": 0.5, "budget_s": 3, "max_build_s": 90,
             "measure_ceiling": True}


def _vision(name: str, model: str, inputs: dict, precisions: list[str], variants: list) -> dict:
    return {"name": name, "model": {"source": "torchvision", "name": model},
            "inputs": [{"name": "input", "dtype": "float32", **inputs}], "precisions": precisions,
            "variants": variants, "benchmark": dict(BENCHMARK),
            "output": {"save_artifacts": False, "cold_start": False}}


def part_configs(device: str) -> dict[str, dict]:
    """Each part's config: the torch paths of resnet34, eager replaying a CUDA graph (CUDA only), the
    compute-bound point, the tiny Llama's generate rows, the planted fp16 fault to localise."""
    size = SIZES[device]
    low, opt, high = size["resnet34"]
    configs = {"resnet34": _vision("resnet34", "resnet34", {"min_shape": low, "opt_shape": opt, "max_shape": high},
                                   size["precisions"], TORCH_PATHS)}
    configs["resnet34"]["benchmark"]["shapes"] = size["shapes"]
    if size["graphs"]:  # CUDA graphs replay static shapes; its own run (a variant is listed once per config)
        configs["cuda_graphs"] = _vision("cuda_graphs", "resnet34", {"shape": size["graphs"]}, size["precisions"],
                                         [{"eager": {"cuda_graphs": True}}])
    configs["resnet50"] = _vision("resnet50_compute", "resnet50", {"shape": size["resnet50"]}, size["precisions"],
                                  ["eager"])
    configs["tinyllama"] = {
        "name": "tinyllama", "model": {"source": "transformers", "name": "llama", "task": "causal-lm",
                                       "label": "tinyllama", "kwargs": size["llama"]},
        "variants": ["eager", "compiled"], "precisions": size["llama_precisions"],
        "scenarios": [{"generate": {**size["generate"], "min_requests": 3, "max_requests": 10, "max_time_s": 10}}],
        "benchmark": {"max_build_s": 90}, "output": {"save_artifacts": False, "cold_start": False}}
    configs["localise"] = {
        "name": "localise", "model": {"source": "builtin", "name": "planted_net",
                                      "kwargs": {"fault": "fp16", "at": PLANTED_AT}},
        "inputs": [{"name": "input", "shape": [2, 3, 8, 8], "value_range": [0, 4]}],
        "variants": LOCALISED_ON[device], "precisions": ["fp32", "fp16"], "benchmark": {"max_build_s": 90}}
    for config in configs.values():
        config["device"] = device
        if device == "cpu":  # a rehearsal on a shared machine: OpenMP's 2 threads ran resnet50 10x slower than 1
            config["benchmark"]["threads"] = 1  # there at load average 11 (benchmarks/NOTES.md)
    return configs


def write_configs(device: str, out: Path) -> None:
    folder = out / "configs"
    folder.mkdir(parents=True, exist_ok=True)
    for name, config in part_configs(device).items():
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def _parts(out: Path) -> dict[str, dict]:
    """Each part's exit code, seconds taken and share (OUT/parts.tsv, written by gpu_check.sh)."""
    parts = {}
    path = out / "parts.tsv"
    for line in path.read_text().splitlines() if path.is_file() else []:
        name, rc, took, share = line.split("\t")
        parts[name] = {"rc": int(rc), "took_s": float(took), "share_s": float(share)}
    return parts


def _part_text(name: str, part: dict | None) -> str:
    if part is None:
        return f"| {name} | not run | | |"
    rc = part["rc"]
    failed = "a path diverges, as planted; see below" if name == "localise" else "some row failed; see below"
    state = ("ran out of its share (stopped; its results so far are kept)" if rc in (124, 130, 137)
             else "done" if rc == 0 else f"exit {rc}" + (f" ({failed})" if rc == 1 else ""))
    return f"| {name} | {state} | {part['took_s']:.0f} | {part['share_s']:.0f} |"


def _results(out: Path, name: str) -> ResultSet:
    """A part's results (empty where it wrote none)."""
    path = out / name / "results.json"
    return ResultSet.load(path) if path.is_file() else ResultSet()


def _median(record: Record) -> float | None:
    stats = record.stats
    return None if stats is None else stats.median


def _row(record: Record) -> str:
    case, metrics = record.case, record.metrics
    median = _median(record)
    launch = (metrics.get("launch") or {}).get("share")
    energy = metrics.get("energy") or {}
    joules = energy.get("joules_per_call")
    reason = record.reason.splitlines()[0][:160] if record.reason else ""
    return (f"| {case.variant}{' ' + case.options if case.options else ''} | {case.precision} | "
            f"{case.point} | {record.status} | {'' if median is None else f'{median:.3f}'} | "
            f"{'' if launch is None else f'{launch:.0%}'} | {'' if joules is None else f'{joules:.4g}'} | "
            f"{'' if energy.get('average_power_w') is None else round(energy['average_power_w'])} | {reason} |")


def vision_table(records: list[Record]) -> list[str]:
    if not records:
        return ["No results (the part did not run, or stopped before its first row).", ""]
    lines = ["| variant | precision | point | status | median ms | host share at return | J/inference | avg W | "
             "reason |", "|---|---|---|---|---|---|---|---|---|"]
    return lines + [_row(r) for r in records] + [""]


def compute_verdict(results: ResultSet, device: str) -> str:
    """PASS where eager fp16's median is below fp32's, with fp16's speedup over fp32 as the report gives it."""
    eager = {r.case.precision: r for r in results if r.case.variant == "eager"}
    medians = {precision: _median(r) for precision, r in eager.items()}
    if device != "cuda":
        return "n/a on the CPU rehearsal: fp16 needs CUDA (fp32 timed only, as a rehearsal of the part)."
    fp32, fp16 = medians.get("fp32"), medians.get("fp16")
    if fp32 is None or fp16 is None:
        return f"FAIL: eager fp32 and fp16 were not both timed ({medians})."
    launch = {r.case.precision: (r.metrics.get("launch") or {}).get("share") for r in results}
    if fp16 < fp32:
        speedup = results.speedup(eager["fp16"])
        over = f" ({speedup_text(speedup)})" if speedup is not None else ""
        return f"PASS: eager fp16 {fp16:.3f} ms < fp32 {fp32:.3f} ms{over}."
    return (f"FAIL: eager fp16 {fp16:.3f} ms is not below fp32 {fp32:.3f} ms; host share at return fp32 "
            f"{launch.get('fp32')}, fp16 {launch.get('fp16')} (at 80% or more the call is launch-bound, "
            "not compute-bound).")


def fidelity_lines(out: Path, device: str) -> list[str]:
    path = out / "fidelity.json"
    if not path.is_file():
        return ["No fidelity figures (the part did not run or ran out of its share).", ""]
    found = json.loads(path.read_text())
    lo, hi = found["target"]
    refs = "torch.utils.benchmark's Timer" + (" and triton's do_bench" if device == "cuda" else "")
    shape = "x".join(map(str, found["spec"].get("shape") or [])) or "the run's opt point"
    how = (f"in {found['pairs']} pairs of a trtbench worker and a reference process, both built from the row's worker "
           f"recipe and timed side by side in time" if "pairs" in found
           else "each variant alone in a fresh process, against the run's median (unpaired)")  # written before pairs
    lines = [f"trtbench's median at {shape} {found['spec'].get('precision', 'fp32')} over {refs}, {how}; "
             f"target {lo}-{hi}.", ""]
    for variant, figures in found["variants"].items():
        if "error" in figures:
            lines.append(f"- {variant}: FAIL: {figures['error']}")
            continue
        verdict = "PASS" if figures["within"] else "FAIL"
        if "pairs" not in figures:
            ratios = ", ".join(f"{name} {r:.3f}" for name, r in figures["ratios"].items())
            lines.append(f"- {variant}: {verdict}: trtbench {figures['trtbench_ms']:.3f} ms; ratios {ratios}")
            continue
        ratios = ", ".join(f"{name} {r:.3f} ({figures['ranges'][name][0]:.3f}-{figures['ranges'][name][1]:.3f})"
                           for name, r in figures["ratios"].items())
        lines.append(f"- {variant}: {verdict}: median ratio over {len(figures['pairs'])} pairs {ratios}; the run's "
                     f"median {figures['run_ms']:.3f} ms")
    return lines + [""]


def _localised(diagnosis: dict | None, planted: str) -> str:
    """One path's line: PASS where it names ``planted``, else what it found or why it could not run."""
    if diagnosis is None:
        return "NOT RUN: no diagnosis written (the part did not run, or ran out of its share before writing one)."
    variant, status = diagnosis["variant"], diagnosis["status"]
    builds = f"{diagnosis['builds']} builds, {diagnosis['builds_announced']} announced"
    if status == "diverges" and diagnosis["named"] == planted:
        how = ("by its splice and its taps" if diagnosis["confirmed"]
               else f"by its splice (its taps named {diagnosis['tap_layer']})")
        return f"PASS: names {planted}, the planted layer, {how}; {builds}."
    if status == "diverges":
        return f"FAIL: names {diagnosis['named']}, not the planted {planted}: {diagnosis['sentence']}"
    if status == "agrees" and variant != "eager":
        return (f"NOT LOCALISED: the whole {variant} fp16 build keeps the tolerance ({diagnosis['output']}), so "
                f"there is no fault to name on this path: a compiler that fuses the planted scale-up and scale-down "
                f"into one kernel computes them in fp32 and nothing overflows (docs/accuracy.md, Limits); {builds}.")
    if status == "agrees":
        return f"FAIL: eager rounds every op to fp16, yet the planted overflow did not show ({diagnosis['output']})."
    label = {"unavailable": "SKIPPED", "stopped": "STOPPED"}.get(status, "FAIL")
    return f"{label}: {diagnosis['reason']}"


def localisation_lines(out: Path, device: str) -> list[str]:
    """The fp16 localisation of the planted net on each path, one line each (``trtbench diagnose``'s JSON files)."""
    planted = planted_path(PLANTED_AT)
    lines = [f"`trtbench diagnose` at fp16 of the built-in planted_net, whose module {planted} scales its "
             f"activations past fp16's range and back (exact in fp32): PASS where a path names {planted}.", ""]
    for variant in LOCALISED:
        if variant not in LOCALISED_ON[device]:
            lines.append(f"- {variant}: not on the CPU rehearsal: a CPU localises fp16 on eager only, for accuracy "
                         f"(compiled at fp16 keeps the tolerance on this net on a CPU: Inductor fuses the planted "
                         f"overflow away; docs/accuracy.md, Limits).")
            continue
        path = out / "localise" / "diagnose" / f"{variant}-fp16-opt.json"
        lines.append(f"- {variant}: {_localised(json.loads(path.read_text()) if path.is_file() else None, planted)}")
    return lines + [""]


def energy_lines(records: list[Record]) -> list[str]:
    """The report's energy notes over ``records`` (:func:`~trtbench.report.columns.energy.energy_notes`)."""
    notes = energy_notes([Row(r, None, False) for r in records]) or ["energy not measured: no timed row."]
    return [f"- {note}" for note in notes] + [""]


def _versions() -> str:
    import torch

    parts = [f"python {platform.python_version()}", f"torch {torch.__version__}"]
    if torch.cuda.is_available():
        parts += [f"CUDA {torch.version.cuda}", torch.cuda.get_device_name(0)]
        try:
            driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                    capture_output=True, text=True, timeout=20).stdout.strip()
            parts.append(f"driver {driver}")
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        import triton

        parts.append(f"triton {triton.__version__}")
    except ImportError:
        pass
    parts.append(f"{platform.processor() or platform.machine()}, {len(__import__('os').sched_getaffinity(0))} CPUs")
    return ", ".join(parts)


def write_report(device: str, out: Path) -> Path:
    parts = _parts(out)
    rehearsal = device != "cuda"
    lines = [f"# GPU check{' (CPU rehearsal)' if rehearsal else ''}", "", f"Device: {device}; {_versions()}.", ""]
    if rehearsal:
        lines += ["A rehearsal of scripts/gpu_check.sh on the CPU: smaller shapes (resnet34 at 64x64, its opt point "
                  "only; resnet50 at batch 8, 64x64; a Llama of 2 layers), 1 thread, fp32 only for the vision parts "
                  "and fp32/bf16 for the Llama (fp16 and CUDA graphs need CUDA), torch.utils.benchmark as the only "
                  "reference, and the fp16 localisation on eager only (for accuracy; nothing is timed at fp16).", ""]
    lines += ["## Parts", "", "| part | state | took s | share s |", "|---|---|---|---|"]
    names = ["install", "resnet34", "cuda_graphs", "resnet50", "tinyllama", "fidelity", "localise"]
    optional = ("install", "cuda_graphs") if rehearsal else ()  # the rehearsal installs nothing and has no CUDA graphs
    lines += [_part_text(name, parts.get(name)) for name in names if name in parts or name not in optional] + [""]
    for name, title in (("resnet34", "resnet34 over the torch paths"), ("cuda_graphs", "eager replaying a CUDA graph")):
        if name == "cuda_graphs" and rehearsal:
            continue
        lines += [f"## {title}", ""] + vision_table(_results(out, name).records)
    compute = _results(out, "resnet50")
    lines += ["## Compute-bound point (resnet50)", "", compute_verdict(compute, device), ""]
    lines += vision_table(compute.records)
    llama = out / "tinyllama" / "report.md"
    lines += ["## Tiny Llama (generate)", "", "See [tinyllama/report.md](tinyllama/report.md)." if llama.is_file()
              else "No report (the part did not run or ran out of its share before writing one).", ""]
    lines += ["## Fidelity", ""] + fidelity_lines(out, device)
    lines += ["## fp16 localisation (planted fault)", ""] + localisation_lines(out, device)
    lines += ["## Energy", ""] + energy_lines(_results(out, "resnet34").records + compute.records)
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path


if __name__ == "__main__":
    command, device, folder = sys.argv[1:4]
    if command == "configs":
        write_configs(device, Path(folder))
    else:
        print(write_report(device, Path(folder)).read_text())
