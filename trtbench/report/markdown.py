"""The human-readable ``report.md``: environment, speedup table, plots, notes, artifacts and profiles."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from trtbench.profiling.runner import profile_markdown
from trtbench.env import busy_machine_note
from trtbench.report.tables import markdown_table
from trtbench.results import Result


def environment_lines(env: dict) -> list[str]:
    """Bullet lines naming what the numbers were measured on."""
    lines = [f"- device: {env.get('device')}; CPU: {env.get('cpu')} ({env.get('threads')} threads)",
             f"- python {env.get('python')}, torch {env.get('torch')}, torchvision {env.get('torchvision')}"]
    if env.get("gpu_name"):
        lines.append(f"- GPU: {env['gpu_name']} (sm {env.get('compute_capability')}), driver {env.get('driver')}, "
                     f"CUDA {env.get('cuda')}, cudnn.benchmark={env.get('cudnn_benchmark')}")
    return lines


def report_markdown(config, env: dict, results: list[Result], interrupted: bool, manifest,
                    plots: Sequence[Path] = (), profiles: dict | None = None) -> str:
    """The whole report as Markdown; ``plots`` are paths relative to the report's folder."""
    bench = config.benchmark
    timing = (f"{bench.iterations} iterations" if bench.mode == "fixed"
              else f"adaptive: until the median's 95% CI is within {bench.target_rel_ci:.1%} or {bench.max_time_s:g} s")
    parts = [
        f"# trtbench: {config.name}",
        "",
        f"Model `{config.model.source}:{config.model.name}`, precisions {', '.join(config.precisions)}; "
        f"{bench.warmup} warm-up runs then {timing} per shape; synchronized per iteration, "
        f"grad disabled (inference_mode). Speedup is eager's median over the variant's median at the same "
        f"shape and precision; parity compares with eager fp32.",
        "",
        *environment_lines(env),
        "",
    ]
    busy = busy_machine_note(env)
    if busy:
        parts += [f"**Note**: {busy}.", ""]
    if interrupted:
        parts += ["**Interrupted**: the run was stopped by Ctrl-C; results below are partial.", ""]
    parts += ["## Speedup", "", markdown_table(results)]
    parts += [f"![{path.stem}]({path.as_posix()})" for path in plots] + ([""] if plots else [])
    warned = sorted({(r.variant, w) for r in results for w in r.warnings})
    if warned:
        parts += ["## Warnings captured", "", *[f"- {variant}: {w}" for variant, w in warned], ""]
    if manifest:
        parts += ["## Artifacts", "", f"Saved under `artifacts/` with `{manifest.name}`; "
                  "check them with `trtbench verify <this directory>`.", ""]
    if profiles is not None:
        parts.append(profile_markdown(profiles))
    return "\n".join(parts)
