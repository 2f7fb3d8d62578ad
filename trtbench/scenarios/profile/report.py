"""Report sections for profiles: the ``profiles`` data as Markdown, and the slowest-layers figures."""

from __future__ import annotations

from trtbench.report.plots import top_layers_plot
from trtbench.report.section import Plot
from trtbench.core.status import Status


def layer_plots(profiles: dict, prefix: str = "") -> list[Plot]:
    """Each per-layer profile's slowest layers (files ``layers_<prefix>...``), each file's path noted in its entry."""
    if profiles.get("status") != Status.OK:
        return []
    top_k = profiles["settings"]["layers"]["top_k"]
    plots = []
    for name, entry in profiles["variants"].items():
        for label, shape in entry.get("shapes", {}).items():
            layers = shape.get("layers")
            if layers and layers["status"] == Status.OK:
                plot = top_layers_plot(layers["nodes"], f"layers_{prefix}{name}_{label}.png", top_k,
                                       title=f"Slowest layers: {name} at {label} ({shape['shape']})")
                layers["plot"] = str(plot.path) if plot else None
                plots += [plot] if plot else []
    return plots


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


def _not_ok(section: dict) -> str:
    status = Status(section["status"])
    text = "not supported for this variant" if status is Status.UNSUPPORTED else status.value
    return f"_{text}: {section.get('reason') or section.get('error')}_"


def _layers_md(layers: dict, top_k: int) -> list[str]:
    out = [f"**Layers** (FX interpreter, {layers['runs']} runs"
           + (", synchronized after every node" if layers["synchronized_per_node"] else "") + "): "
           f"plain forward {_ms(layers['model_ms']['mean'])} ms; "
           f"interpreted run {_ms(layers['interpreted_ms']['mean'])} ms, "
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
        if params["status"] == Status.OK:
            out.append(f"Parameters: {params['parameters']:,} ({_bytes(params['parameter_bytes'])}), "
                       f"trainable {params['trainable_parameters']:,}; buffers {_bytes(params['buffer_bytes'])}.")
        else:
            out.append(f"Parameters: {_not_ok(params)}")
    for art in entry.get("artifacts", []):
        out.append(f"Artifact `{art['path']}`: {_bytes(art['bytes'])} on disk.")
    return [" ".join(out), ""] if out else []


def profile_markdown(profiles: dict, where: str = "") -> str:
    """The Markdown of the ``profiles`` data; ``where`` names its model and machine."""
    lines = [f"## Profile ({where + ', ' if where else ''}{profiles['precision']}, {profiles['device']})", ""]
    if profiles["status"] != Status.OK:
        return "\n".join(lines + [_not_ok(profiles), ""])
    settings = profiles["settings"]
    trainings = []
    for name, entry in profiles["variants"].items():
        lines += [f"### {name}", ""]
        if entry["status"] != Status.OK:
            lines += [_not_ok(entry), ""]
            continue
        lines += _memory_md(entry)
        for label, shape in entry["shapes"].items():
            lines += [f"#### {name} at {label} ({shape['shape']})", ""]
            memory = shape.get("memory")
            if memory is not None:
                lines += [(f"**Peak memory** of one forward pass: {_bytes(memory['peak_bytes'])}, "
                           f"{_bytes(memory['step_bytes'])} above the {_bytes(memory['baseline_bytes'])} before it "
                           f"(method: {memory['method']})." if memory["status"] == Status.OK
                           else f"**Peak memory**: {_not_ok(memory)}"), ""]
            for key, render in (("layers", lambda s: _layers_md(s, settings["layers"]["top_k"])),
                                ("operators", _operators_md), ("structure", _structure_md)):
                section = shape.get(key)
                if section is not None:
                    ok = section["status"] == Status.OK
                    lines += render(section) if ok else [f"**{key.title()}**: {_not_ok(section)}", ""]
            if "train" in shape:
                trainings.append((name, label, shape["shape"], shape["train"]))
    if trainings:
        lines += ["### Training step", "",
                  "Forward in train mode with autograd, and the whole step (zero_grad, forward, loss, backward, "
                  "optimizer step), on a copy of each variant's module; medians in ms.", ""]
        rows = []
        for name, label, dims, train in trainings:
            if train["status"] == Status.OK:
                rows.append([name, f"{label} ({dims})", train["optimizer"], train["loss"],
                             _ms(train["forward_ms"]["median"]),
                             _ms(train["step_ms"]["median"]), f"{100 * train['backward_and_step_share']:.0f}%",
                             train.get("note", "")])
            else:
                rows.append([name, f"{label} ({dims})", "", "", "", "", "", _not_ok(train)])
        lines += [_table(["variant", "shape", "optimizer", "loss", "forward", "step", "backward+step share", "note"],
                         rows), ""]
    return "\n".join(lines)
