"""The human-readable ``report.md``: environments, speedup table, plots, notes, artifacts and profiles."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from trtbench.core.env import busy_machine_note, environment_name
from trtbench.report.profile import profile_markdown
from trtbench.report.tables import deployment_table, isolation_table, markdown_table
from trtbench.results.resultset import ResultSet


def environment_lines(env: dict) -> list[str]:
    """Bullet lines naming what the numbers were measured on."""
    libs = ", ".join(f"{k} {v}" for k, v in (env.get("libraries") or {}).items())
    threads = env.get("default_threads")  # absent in results written before it was recorded
    allotted = f"; default threads {threads['threads']} ({threads['source']})" if threads else ""
    lines = [f"- **{environment_name(env)}**: device {env.get('device')}; CPU {env.get('cpu')} "
             f"({env.get('cpu_count')} CPUs{allotted}); python {env.get('python')}, torch {env.get('torch')}, "
             f"torchvision {env.get('torchvision')}" + (f", {libs}" if libs else "")]
    if env.get("gpu_name"):
        lines.append(f"  - GPU {env['gpu_name']} (sm {env.get('compute_capability')}), driver {env.get('driver')}, "
                     f"CUDA {env.get('cuda')}, cudnn.benchmark={env.get('cudnn_benchmark')}")
    return lines


def timing_text(bench) -> str:
    """How each point was timed, in words."""
    timing = bench.timing
    if timing.mode == "fixed":
        how = f"{timing.iterations} calls per variant"
    else:
        how = (f"adaptive: rounds until every variant's median has a 95% CI within {timing.target_rel_ci:.1%} "
               f"(at least {timing.min_iterations} calls), at most {timing.max_time_s:g} s per point")
    return (f"Per point, the variants were warmed up ({timing.warmup} calls each, at least {timing.warmup_s:g} s in "
            f"all) and then timed interleaved, in rounds of short blocks in rotating order; {how}. Each call is "
            f"timed alone, synchronized, with grad disabled (inference_mode). Variants were timed "
            f"{'each in a worker process of its own' if bench.isolation == 'process' else 'in this process'}; "
            f"a variant whose median is precise leaves the rounds while eager stays as the drift reference, "
            f"and eager is then timed alone to check that the rounds did not disturb it.")


def run_intro(config) -> list[str]:
    """A run report's title and how it measured, from its config."""
    models = ", ".join(f"`{m.id}`" for m in config.models)
    return [f"# trtbench: {config.name}", "",
            f"Model(s) {models}; precisions {', '.join(config.precisions)}. {timing_text(config.benchmark)} "
            f"Speedup is eager's median over the variant's at the same point, with a 95% CI from the paired "
            f"rounds; parity compares with eager fp32.", ""]


def report_markdown(intro: Sequence[str], results: ResultSet, interrupted: bool, manifest,
                    plots: Sequence[Path] = (), profiles: dict | None = None, sections: Sequence[str] = ()) -> str:
    """The whole report as Markdown after the ``intro`` lines (:func:`run_intro`, or a merge's);
    ``plots`` are paths relative to the report's folder; ``sections`` (the sweep and the recommendation
    sections) follow the speedup table."""
    parts = list(intro)
    for env in results.environments.values():
        parts += environment_lines(env)
        busy = busy_machine_note(env)
        if busy:
            parts += [f"  - **Note**: {busy}."]
    parts.append("")
    if interrupted:
        parts += ["**Interrupted**: the run was stopped; the results below are partial. Run the same command "
                  "again to resume.", ""]
    parts += ["## Speedup", "", markdown_table(results)]
    parts += [f"![{path.stem}]({path.as_posix()})" for path in plots] + ([""] if plots else [])
    parts += list(sections)
    deployment = deployment_table(results)
    if deployment:
        parts += ["## Build, cold start and memory", "",
                  "Build time in this process; first call: the compile that torch.compile defers to it; artifact "
                  "load and cold first call: the saved file loaded in a fresh process (the verify worker); peak "
                  "memory: host RSS high-water mark (device memory on CUDA) while building and during one call.",
                  "", deployment]
    isolation = isolation_table(results)
    if isolation:
        parts += ["## Isolation", "",
                  "Where each variant was timed: `process` is a worker process of its own per variant (as a "
                  "deployment runs one runtime per process), asked for one block at a time while the others wait "
                  "blocked; `in_process` is this process. After each block the process waits until its threads "
                  "are idle (settle; its CPU is what spinning cost), so the next block starts on quiet cores. "
                  "CPU between blocks: what a worker's process used while others were timed (about 0 when settled). "
                  "Page faults / call: minor page faults of its process per timed call; thousands mean its allocator "
                  "hands buffers back to the OS after each call and faults them in again (glibc's mmap threshold: "
                  "with a higher `MALLOC_MMAP_THRESHOLD_`, or jemalloc/tcmalloc, a deployment avoids that cost). "
                  "Switch-in call: a variant whose calls are shorter than `switch_in_below_s` starts each block "
                  "with one call kept out of its samples, since the first call after another variant ran refills "
                  "the caches that one evicted, which a runtime deployed alone never pays; shown against the "
                  "median (at the first point).",
                  "", isolation]
    warned = sorted({(r.case.label, w) for r in results for w in r.warnings})
    if warned:
        parts += ["## Warnings captured", "", *[f"- {variant}: {w}" for variant, w in warned], ""]
    if manifest:
        parts += ["## Artifacts", "", f"Saved under `artifacts/` with `{manifest.name}`; "
                  "check them with `trtbench verify <this directory>`.", ""]
    if profiles is not None:
        parts.append(profile_markdown(profiles))
    return "\n".join(parts)
