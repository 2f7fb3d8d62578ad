"""The human-readable ``report.md``: its head (the run's intro, environments, how it ended), the failures
besides the rows, each scenario's section (given by the caller), and the artifacts."""

from __future__ import annotations

from collections.abc import Sequence

from trtbench.core.env import busy_machine_note, environment_name
from trtbench.core.record import Record
from trtbench.core.status import RunStatus
from trtbench.report.tables import failed_part_notes
from trtbench.results.resultset import ResultSet


def environment_lines(env: dict) -> list[str]:
    """Bullet lines naming what the numbers were measured on."""
    libs = ", ".join(f"{k} {v}" for k, v in (env.get("libraries") or {}).items())
    threads = env.get("default_threads")
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
    """A run report's title and how it measured, from its config (how its rows were timed, where it makes rows)."""
    models = ", ".join(f"`{m.id}`" for m in config.models)
    timed = any(Record in scenario.parts for scenario in config.scenarios)
    how = (f" {timing_text(config.benchmark)} Speedup is paired by round: the median over the rounds "
           f"both were timed in at the same point of eager's block over the variant's, with a 95% CI from those "
           f"rounds and each one's replicate processes (the headers say how many); "
           f"parity compares with eager fp32." if timed else "")
    names = ", ".join(scenario.name for scenario in config.scenarios)
    return [f"# trtbench: {config.name}", "",
            f"Model(s) {models}; precisions {', '.join(config.precisions)}; scenarios {names}.{how}", ""]


def report_markdown(head, results: ResultSet, sections: Sequence[str] = ()) -> str:
    """The whole report as Markdown: ``head``'s intro, the environments, the scenarios' ``sections``, the artifacts."""
    parts = list(head.intro)
    for env in results.environments.values():
        parts += environment_lines(env)
        busy = busy_machine_note(env)
        if busy:
            parts += [f"  - **Note**: {busy}."]
    parts.append("")
    if head.ended == RunStatus.INTERRUPTED:
        parts += ["**Interrupted**: the run was stopped; the results below are partial. Run the same command "
                  "again to resume.", ""]
    elif head.ended == RunStatus.FAILED:
        parts += ["**Stopped by an error** outside any one variant (its traceback: failures.log); the results "
                  "below are partial. Run the same command again to resume once it is fixed.", ""]
    failed = failed_part_notes(results)
    if failed:
        parts += ["## Failures", "", "What failed besides the rows above, and why (each makes the run exit 1):", "",
                  *[f"- {note}" for note in failed], ""]
    parts += list(sections)
    if head.manifest:
        parts += ["## Artifacts", "", f"Saved under `artifacts/` with `{head.manifest.name}`; "
                  "check them with `trtbench verify <this directory>`.", ""]
    return "\n".join(parts)
