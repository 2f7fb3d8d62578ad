"""The human-readable ``report.md``: its head, the failures, each scenario's section and the artifacts."""

from __future__ import annotations

from collections.abc import Sequence

from trtbench.core.env import busy_machine_note, environment_name
from trtbench.core.record import Record
from trtbench.core.status import RunStatus
from trtbench.report.blocks import Block, Heading, Item, Items, Paragraph, code, markdown_lines, strong
from trtbench.report.tables import failed_part_notes
from trtbench.results.resultset import ResultSet


def environment_list(results: ResultSet) -> Items:
    """What the numbers were measured on: each environment, its GPU and whether the machine was busy under it."""
    items = []
    for env in results.environments.values():
        libs = ", ".join(f"{k} {v}" for k, v in (env.get("libraries") or {}).items())
        threads = env.get("default_threads")
        allotted = f"; default threads {threads['threads']} ({threads['source']})" if threads else ""
        text = (strong(environment_name(env)), f": device {env.get('device')}; CPU {env.get('cpu')} "
                f"({env.get('cpu_count')} CPUs{allotted}); python {env.get('python')}, torch {env.get('torch')}, "
                f"torchvision {env.get('torchvision')}" + (f", {libs}" if libs else ""))
        gpu = (f"GPU {env.get('gpu_name')} (sm {env.get('compute_capability')}), driver {env.get('driver')}, "
               f"CUDA {env.get('cuda')}, cudnn.benchmark={env.get('cudnn_benchmark')}")
        under = [Item((gpu,))] if env.get("gpu_name") else []
        busy = busy_machine_note(env)
        items.append(Item(text, items=tuple(under + ([Item((strong("Note"), f": {busy}."))] if busy else []))))
    return Items(tuple(items))


def ended_blocks(ended: str) -> list[Paragraph]:
    """Why the results are partial, where the run did not complete (``ended``: a RunStatus)."""
    if ended == RunStatus.INTERRUPTED:
        return [Paragraph((strong("Interrupted"), ": the run was stopped; the results below are partial. Run the same "
                                                  "command again to resume."))]
    if ended == RunStatus.FAILED:
        return [Paragraph((strong("Stopped by an error"), " outside any one variant (its traceback: failures.log); the "
                           "results below are partial. Run the same command again to resume once it is fixed."))]
    return []


def failure_blocks(results: ResultSet) -> list[Block]:
    """The failures besides the rows (:func:`~trtbench.report.tables.failed_part_notes`), where there are any."""
    failed = failed_part_notes(results)
    if not failed:
        return []
    return [Heading(2, "Failures"),
            Paragraph(("What failed besides the rows above, and why (each makes the run exit 1):",)),
            Items(tuple(Item((note,)) for note in failed))]


def timing_text(bench) -> str:
    """How each point was timed, in words."""
    timing = bench.timing
    if timing.mode == "fixed":
        how = f"{timing.iterations} calls per variant"
    elif timing.racing:
        how = (f"raced: after each cycle of rounds a variant slower than the leader by more than "
               f"{timing.race_margin:.0%} (its paired 95% CI) stops, and the point ends once decided or after "
               f"{timing.cap_s:g} s of rounds (budget_s), a tie where undecided; each variant starts in 2 processes, "
               f"a contender getting more (up to {bench.processes}) where they make most of its interval")
    else:
        how = (f"adaptive: rounds until every variant's median has a 95% CI within {timing.ci_target:.1%} "
               f"(at least {timing.min_iterations} calls), at most {timing.cap_s:g} s per point")
    leaving = ("a variant leaves the rounds when the race stops it or the point ends" if timing.racing else
               "a variant whose median is precise leaves the rounds")
    steady = (" (schedule: steady: each block's timed calls after a block's worth of untimed back-to-back calls, "
              "none where one call fills a block, as a server that never idles reads them; benchmark.schedule: "
              "interleaved gives an idling server's)"
              if timing.schedule == "steady" else
              " (schedule: interleaved: each block right after the others' blocks, as a server that idles between "
              "requests reads it; benchmark.schedule: steady gives a busy server's figure)")
    return (f"Per point, the variants were warmed up ({timing.warmup} calls each, at least {timing.warmup_s:g} s in "
            f"all) and then timed interleaved, in rounds of short blocks in rotating order{steady}; {how}. Each call "
            f"is timed alone, synchronized, with grad disabled (inference_mode). Variants were timed "
            f"{'each in a worker process of its own' if bench.isolation == 'process' else 'in this process'}; "
            f"{leaving} while eager stays as the drift reference, "
            f"and eager is then timed alone to check that the rounds did not disturb it.")


def run_intro(config) -> list[Block]:
    """A run report's title and how it measured, from its config (how its rows were timed, where it makes rows)."""
    models = [part for i, m in enumerate(config.models) for part in ((", ",) if i else ()) + (code(m.id),)]
    timed = any(Record in scenario.parts for scenario in config.scenarios)
    how = (f" {timing_text(config.benchmark)} Speedup is paired by round: the median over the rounds "
           f"both were timed in at the same point of eager's block over the variant's, with a 95% CI from those "
           f"rounds and each one's replicate processes (the headers say how many); "
           f"parity compares with eager fp32." if timed else "")
    names = ", ".join(scenario.name for scenario in config.scenarios)
    return [Heading(1, f"trtbench: {config.name}"),
            Paragraph(("Model(s) ", *models, f"; precisions {', '.join(config.precisions)}; scenarios {names}.{how}"))]


def report_markdown(head, results: ResultSet, sections: Sequence[str] = (), summary: Sequence[Block] = ()) -> str:
    """The whole report as Markdown."""
    parts = [*markdown_lines(head.intro), *markdown_lines(summary), *environment_list(results).markdown(), ""]
    parts += markdown_lines(ended_blocks(head.ended) + failure_blocks(results)) + list(sections)
    if head.manifest:
        parts += ["## Artifacts", "", f"Saved under `artifacts/` with `{head.manifest.name}`; "
                  "check them with `trtbench verify <this directory>`.", ""]
    return "\n".join(parts)
