"""Run the configured profile sections over variants and shapes; render them for report.md.

:func:`run_profiles` returns plain data for the ``profiles`` section of results.json and
writes Chrome traces under ``<out_dir>/profiles`` and layer plots under ``<out_dir>/plots``
(paths in the data are relative to ``out_dir``). :func:`profile_markdown` turns that data
into report sections.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable

import torch

from trtbench.inputs import format_shapes
from trtbench.profiling import NotSupported
from trtbench.profiling.config import ProfileConfig
from trtbench.profiling.layers import profile_layers
from trtbench.profiling.memory import artifact_sizes, parameter_summary, peak_memory
from trtbench.profiling.operators import profile_operators
from trtbench.profiling.structure import layer_table
from trtbench.profiling.training import profile_training
from trtbench.report.plots import top_layers_plot
from trtbench.timing import TimingPlan
from trtbench.variants import Built, Variant

TRACE_DIR = "profiles"
PLOT_DIR = "plots"


def _section(run: Callable[[], dict]) -> dict:
    """Run one section; a section that cannot apply or breaks is recorded, not raised, so the run's other results survive."""
    try:
        return run()
    except NotSupported as err:
        return {"status": "unsupported", "reason": str(err)}
    except Exception as err:  # profiling is auxiliary: record any failure (OOM, kernel errors) next to the data
        return {"status": "failed", "error": f"{type(err).__name__}: {err}"}


def _profile_shape(cfg: ProfileConfig, name: str, variant: Variant, built: Built, label: str, inputs: tuple,
                   device: torch.device, out_dir: Path) -> dict:
    entry: dict = {"shape": format_shapes([list(t.shape) for t in inputs])}
    prepared = variant.prepare(built, inputs)
    stem = f"{name}_{label}"
    if cfg.structure:
        entry["structure"] = _section(lambda: layer_table(built.module, inputs))
    if cfg.memory:
        entry["memory"] = _section(lambda: peak_memory(lambda: variant.run(built, prepared), device))
    if cfg.layers.enabled:
        layers = _section(lambda: profile_layers(built.module, inputs, device, cfg.layers.runs, cfg.layers.warmup))
        if layers["status"] == "ok":
            plot = top_layers_plot(layers["nodes"], out_dir / PLOT_DIR / f"layers_{stem}.png", cfg.layers.top_k,
                                   title=f"Slowest layers: {name} at {label} ({entry['shape']})")
            layers["plot"] = str(plot.path.relative_to(out_dir)) if plot else None
        entry["layers"] = layers
    if cfg.operators.enabled:
        trace = Path(TRACE_DIR) / f"{stem}.trace.json" if cfg.operators.trace else None
        operators = _section(lambda: profile_operators(
            lambda: variant.run(built, prepared), device, cfg.operators.runs, cfg.operators.top_k,
            trace_path=out_dir / trace if trace else None, record_shapes=cfg.operators.record_shapes))
        if operators["status"] == "ok":
            operators["trace"] = str(trace) if trace else None
        entry["operators"] = operators
    if cfg.train.enabled:
        plan = TimingPlan(warmup=cfg.train.warmup, iterations=cfg.train.iterations)
        entry["train"] = _section(lambda: profile_training(built.module, inputs, device, plan,
                                                           cfg.train.optimizer, cfg.train.lr))
    return entry


def run_profiles(profile_cfg: ProfileConfig, variants: dict[str, tuple[Variant, Built]],
                 inputs_by_shape: dict[str, tuple], device: torch.device, out_dir: Path,
                 artifacts: dict[str, list[Path]] | None = None, tick: Callable[[], None] = lambda: None) -> dict:
    """Profile each configured variant at each configured shape; JSON-serialisable results.

    ``variants`` maps names to the built variants of ``profile_cfg.precision`` (a configured
    variant missing here, e.g. one that failed to build, is reported as skipped);
    ``inputs_by_shape`` maps every label in ``profile_cfg.shapes`` to the inputs at that
    shape, on ``device``; ``artifacts`` maps variant names to the files they saved. ``tick``
    is called after each variant x shape (progress bars).
    """
    missing = [label for label in profile_cfg.shapes if label not in inputs_by_shape]
    if missing:
        raise ValueError(f"no inputs given for profile shapes {missing}")
    out_dir = Path(out_dir)
    result: dict = {"status": "ok", "precision": profile_cfg.precision, "device": str(device),
                    "settings": dataclasses.asdict(profile_cfg), "variants": {}}
    for name in profile_cfg.variants:
        if name not in variants:
            result["variants"][name] = {"status": "skipped", "reason": "the variant was not built (see its build status)"}
            continue
        variant, built = variants[name]
        entry: dict = {"status": "ok"}
        if profile_cfg.memory:
            entry["parameters"] = _section(lambda: parameter_summary(built.module))
            entry["artifacts"] = artifact_sizes((artifacts or {}).get(name, []), root=out_dir)
        entry["shapes"] = {}
        for label in profile_cfg.shapes:
            entry["shapes"][label] = _profile_shape(profile_cfg, name, variant, built, label, inputs_by_shape[label],
                                                    device, out_dir)
            tick()
        result["variants"][name] = entry
    return result


# ---- report.md -------------------------------------------------------------------------------

def _table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _ms(value: float) -> str:
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


STATUS_WORDS = {"unsupported": "not supported for this variant", "skipped": "skipped", "failed": "failed"}


def _not_ok(section: dict) -> str:
    return f"_{STATUS_WORDS[section['status']]}: {section.get('reason') or section.get('error')}_"


def _layers_md(layers: dict, top_k: int) -> list[str]:
    out = [f"**Layers** (FX interpreter, {layers['runs']} runs"
           + (", synchronized after every node" if layers["synchronized_per_node"] else "") + "): "
           f"plain forward {_ms(layers['model_ms']['mean'])} ms; interpreted run {_ms(layers['interpreted_ms']['mean'])} ms, "
           f"of which the nodes take {_ms(layers['nodes_sum_ms'])} ms and interpreter overhead "
           f"{_ms(layers['overhead_ms'])} ms. % is the share of the interpreted run.", ""]
    if layers.get("plot"):
        out += [f"![slowest layers]({layers['plot']})", ""]
    top = sorted(layers["nodes"], key=lambda n: n["mean_ms"], reverse=True)[:top_k]
    out += [_table(["#", "node", "target", "type", "mean ms", "%"],
                   [[n["index"], n["name"], f"`{n['target']}`", n["type"], _ms(n["mean_ms"]), f"{n['pct']:.1f}"]
                    for n in top]), ""]
    out += [_table(["layer type", "nodes", "total ms", "%"],
                   [[t["type"], t["count"], _ms(t["total_ms"]), f"{t['pct']:.1f}"] for t in layers["by_type"]]), ""]
    return out


def _operators_md(ops: dict) -> list[str]:
    cuda = ops["sorted_by"] == "self_device_time"
    trace = f"; Chrome trace: [{ops['trace']}]({ops['trace']})" if ops.get("trace") else ""
    out = [f"**Operators** (torch.profiler, per run over {ops['runs']} runs, sorted by "
           f"{'self CUDA time' if cuda else 'self CPU time'}; top {len(ops['top'])} of {ops['operators']}{trace})", ""]
    headers = ["operator"] + (["on"] if cuda else []) + ["self CPU ms", "CPU total ms"]
    headers += ["self CUDA ms", "CUDA total ms"] if cuda else []
    rows = []
    for op in ops["top"]:
        row = [f"`{op['name']}`"] + ([op["on"]] if cuda else []) + [_ms(op["self_cpu_ms"]), _ms(op["cpu_total_ms"])]
        if cuda:
            row += [_ms(op["self_device_ms"]), _ms(op["device_total_ms"])]
        rows.append(row + [f"{op['pct']:.1f}", f"{op['calls']:g}"])
    return out + [_table(headers + ["% self", "calls"], rows), ""]


def _structure_md(structure: dict) -> list[str]:
    rows = [[s["name"], s["type"], s["output_shape"] if s["output_shape"] is not None else "-", f"{s['parameters']:,}"]
            for s in structure["layers"]]
    return [f"<details><summary><b>Structure</b> ({len(rows)} layers, {structure['total_parameters']:,} parameters)"
            "</summary>", "", _table(["layer", "type", "output shape", "parameters"], rows), "", "</details>", ""]


def _memory_md(entry: dict) -> list[str]:
    out = []
    params = entry.get("parameters")
    if params is not None:
        if params["status"] == "ok":
            out.append(f"Parameters: {params['parameters']:,} ({_bytes(params['parameter_bytes'])}), "
                       f"trainable {params['trainable_parameters']:,}; buffers {_bytes(params['buffer_bytes'])}.")
        else:
            out.append(f"Parameters: {_not_ok(params)}")
    for art in entry.get("artifacts", []):
        out.append(f"Artifact `{art['path']}`: {_bytes(art['bytes'])} on disk.")
    return [" ".join(out), ""] if out else []


def profile_markdown(profiles: dict) -> str:
    """Report sections for the ``profiles`` data of :func:`run_profiles` (or a skipped profile's reason)."""
    lines = [f"## Profile ({profiles['precision']}, {profiles['device']})", ""]
    if profiles["status"] != "ok":
        return "\n".join(lines + [_not_ok(profiles), ""])
    settings = profiles["settings"]
    trainings = []
    for name, entry in profiles["variants"].items():
        lines += [f"### {name}", ""]
        if entry["status"] != "ok":
            lines += [_not_ok(entry), ""]
            continue
        lines += _memory_md(entry)
        for label, shape in entry["shapes"].items():
            lines += [f"#### {name} at {label} ({shape['shape']})", ""]
            memory = shape.get("memory")
            if memory is not None:
                lines += [(f"**Peak memory** of one forward pass: {_bytes(memory['peak_bytes'])}, "
                           f"{_bytes(memory['step_bytes'])} above the {_bytes(memory['baseline_bytes'])} before it "
                           f"(method: {memory['method']})." if memory["status"] == "ok"
                           else f"**Peak memory**: {_not_ok(memory)}"), ""]
            for key, render in (("layers", lambda s: _layers_md(s, settings["layers"]["top_k"])),
                                ("operators", _operators_md), ("structure", _structure_md)):
                section = shape.get(key)
                if section is not None:
                    lines += render(section) if section["status"] == "ok" else [f"**{key.title()}**: {_not_ok(section)}", ""]
            if "train" in shape:
                trainings.append((name, label, shape["shape"], shape["train"]))
    if trainings:
        lines += ["### Training step", "",
                  "Forward in train mode with autograd, and the whole step (zero_grad, forward, loss, backward, "
                  "optimizer step), on a copy of each variant's module; medians in ms.", ""]
        rows = []
        for name, label, dims, train in trainings:
            if train["status"] == "ok":
                rows.append([name, f"{label} ({dims})", train["optimizer"], train["loss"], _ms(train["forward_ms"]["median"]),
                             _ms(train["step_ms"]["median"]), f"{100 * train['backward_and_step_share']:.0f}%",
                             train.get("note", "")])
            else:
                rows.append([name, f"{label} ({dims})", "", "", "", "", "", _not_ok(train)])
        lines += [_table(["variant", "shape", "optimizer", "loss", "forward", "step", "backward+step share", "note"], rows), ""]
    return "\n".join(lines)
