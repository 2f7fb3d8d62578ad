"""Command line: ``trtbench --config FILE`` runs a benchmark; subcommands validate, list models, verify."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from trtbench.core.errors import DiskFullError, UserInputError
from trtbench.core.fsutil import atomic_write_text
from trtbench.core.outdir import DEFAULT_HISTORY, RESULTS_ROOT

HISTORY_ACTIONS = ("show", "runs", "export", "html", "ingest", "rebuild", "accept", "forget")


def _variants_arg(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def _processes_arg(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a count of processes: give an integer of 1 or more")
    return int(text)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'")
    return value


def _add_budget_arg(parser_: argparse.ArgumentParser, default_from: str) -> None:
    parser_.add_argument("--p99-budget", type=_positive, metavar="MS",
                         help="recommend, per environment and model, the variant, precision and batch size with the "
                              f"most throughput whose measured p99 latency is at most MS ms (default: {default_from})")


def _print_results(results, p99_budget_ms) -> None:
    """The latency rows (where there are any), what else failed, and each scenario's recommendation."""
    from trtbench.pipeline.sections import summary_lines
    from trtbench.report.tables import failed_part_notes, text_table

    if len(results):
        print(text_table(results), end="")
    for note in failed_part_notes(results):
        print(f"failed: {note}")
    for line in summary_lines(results, p99_budget_ms):
        print(("\n" if not line.startswith(" ") else "") + line)


def cmd_merge(args) -> int:
    from trtbench.pipeline.merge import merge_runs

    outcome = merge_runs(args.dirs, args.output, args.p99_budget, _history_arg(args.history))
    _print_results(outcome.results, outcome.p99_budget_ms)
    print(f"\nmerged {len(args.dirs)} run(s), {len(outcome.results)} record(s) in "
          f"{len(outcome.results.environments)} environment(s): {outcome.files['json']}  "
          f"report: {outcome.files['markdown']}, {outcome.files['html'].name}")
    for note in outcome.notes:
        print(f"merge: {note}", file=sys.stderr)
    if outcome.history:
        print(outcome.history, file=sys.stderr)
    return outcome.exit_code


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trtbench",
        description="Build a model's deployment variants (TorchScript, torch.export, torch.compile, AOTInductor, "
                    "ONNX Runtime, OpenVINO, Torch-TensorRT; decoder LLMs too), check them against eager fp32, time "
                    "them interleaved, serve them under load and save deployable artifacts.",
        epilog="Without a subcommand, 'trtbench --config FILE' is 'trtbench run --config FILE'.")
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="run a benchmark config (the default command)")
    profile = sub.add_parser("profile", help="run a config with its profile: section on (per-layer, per-operator, "
                                             "memory, structure; defaults when the config has none)")
    for parser_ in (run, profile):
        parser_.add_argument("--config", required=True,
                             help="config file, or a bundled config name such as resnet34.yaml")
        parser_.add_argument("--output", help="output directory (overrides output.dir)")
        parser_.add_argument("--device", help="auto, cpu, cuda or cuda:N (overrides device)")
        parser_.add_argument("--variants", type=_variants_arg, help="comma-separated variants (overrides variants)")
        parser_.add_argument("--quiet", action="store_true", help="no progress output; print only the final table")
        parser_.add_argument("--fresh", action="store_true",
                             help="start over: discard what an earlier, unfinished run into --output measured "
                                  "(by default the same command resumes it)")
        parser_.add_argument("--shard", help="run only shard I of N (I/N, 0-based): a deterministic slice of the "
                                             "matrix's build groups, for cluster schedulers; merge the shards' "
                                             "outputs with 'trtbench merge'")
        parser_.add_argument("--processes", type=_processes_arg, metavar="N",
                             help="replicate worker processes per variant, raced: the most (overrides "
                                  "benchmark.processes; 1: one process each, a quick look whose intervals cover that "
                                  "process alone)")
        _add_budget_arg(parser_, "the config's budget.p99_ms")
        _add_history_arg(parser_, f"output.history: {DEFAULT_HISTORY} for the default output folder, else none")
        parser_.add_argument("--label", help="the run's label in the history, a commit say (overrides output.label)")
    validate = sub.add_parser("validate", help="check a config without running it")
    validate.add_argument("config")
    sub.add_parser("models", help="list model names by source")
    sub.add_parser("variants", help="list variants, their options, and whether they can run on this machine")
    verify = sub.add_parser("verify", help="reload saved artifacts in a fresh process and check their outputs")
    verify.add_argument("output", help="output directory of a run (or its artifacts/manifest.json)")
    verify.add_argument("--force", action="store_true",
                        help="load TensorRT engines even if built for another TensorRT version or GPU architecture")
    compare = sub.add_parser("compare", help="compare two runs' timings, noise-aware: NEW's speedup over BASELINE "
                                             "(BASELINE's median / NEW's) with its bootstrap CI")
    compare.add_argument("baseline", help="output directory (or results.json) of the baseline run")
    compare.add_argument("new", help="output directory (or results.json) of the run to compare")
    _add_threshold_arg(compare, "change reported as faster/slower")
    merge = sub.add_parser("merge", help="merge runs (shards, machines) into one report: tables keyed by environment; "
                                          "mismatched or repeated cases are reported (exit 1), never dropped")
    merge.add_argument("dirs", nargs="+", metavar="DIR", help="output directories of the runs to merge")
    merge.add_argument("--output", required=True, help="directory for the merged results and report")
    _add_budget_arg(merge, "the budget the inputs' configs name")
    _add_history_arg(merge, f"{DEFAULT_HISTORY} where --output is in ./{RESULTS_ROOT}, else none")
    diagnose = sub.add_parser("diagnose", help="where a reduced-precision build diverges from eager fp32: each "
                                               "layer's own and carried error, the layer named by taps and splices")
    diagnose.add_argument("--config", required=True, help="config file, or a bundled config name")
    diagnose.add_argument("--variants", type=_variants_arg, help="comma-separated variants (default: the config's)")
    diagnose.add_argument("--precision", type=_variants_arg, dest="precisions", metavar="PRECISIONS",
                          help="comma-separated precisions (default: the config's reduced ones)")
    diagnose.add_argument("--point", default="opt", help="the point whose seeded inputs are used (default: opt)")
    diagnose.add_argument("--output", help="output directory (overrides output.dir); results go under diagnose/")
    diagnose.add_argument("--device", help="auto, cpu, cuda or cuda:N (overrides device)")
    diagnose.add_argument("--minutes", type=_positive, default=10.0,
                          help="budget of each diagnosis in minutes: it stops before a build past it (default: 10)")
    history = sub.add_parser("history", help="the history of runs: each series' latest value, trend and steps; "
                                             "runs, export --csv, ingest, rebuild, accept RUN, forget RUN")
    history.add_argument("action", nargs="?", default="show", choices=HISTORY_ACTIONS,
                         help="show (default): each series; runs: the stored runs; export: every point as CSV; "
                              "html OUT.html: a page of every series; ingest DIR...: add runs' folders (each run "
                              "once); rebuild DIR...: recreate the database from folders; accept RUN: its steps are "
                              "the new normal; forget RUN: drop a bad run")
    history.add_argument("targets", nargs="*", metavar="DIR|RUN", help="folders (ingest, rebuild), a run id (accept, "
                                                                        "forget) or the page to write (html)")
    history.add_argument("--model", help="series whose model id contains this")
    history.add_argument("--variant", help="series of this variant")
    history.add_argument("--figure", help="series of this figure (median, p99, speedup, accuracy, peak_qps..., ttft, "
                                          "tpot)")
    history.add_argument("--since", help="points of runs started at or after this ISO date or time")
    history.add_argument("--csv", action="store_true", help="export: as CSV (the only format)")
    history.add_argument("--output", help="export: write the CSV to this file (default: standard output)")
    _add_threshold_arg(history, "step reported")
    _add_history_arg(history, DEFAULT_HISTORY)
    gate = sub.add_parser("gate", help="exit 1 if a run regressed against its history (each regression named, with "
                                       "intervals and what changed), 0 if not, 2 on bad input")
    gate.add_argument("run_dir", nargs="?", metavar="RUN_DIR",
                      help="a run's output folder, added to the history first if missing (default: the latest run "
                           "stored)")
    gate.add_argument("--figures", type=_variants_arg, default=None,
                      help="comma-separated figures held to their steps (default: median,speedup)")
    _add_threshold_arg(gate, "change that regresses")
    _add_history_arg(gate, DEFAULT_HISTORY)
    return parser


def _add_history_arg(parser_: argparse.ArgumentParser, default: str) -> None:
    parser_.add_argument("--history", metavar="PATH|URL",
                         help=f"the history: a SQLite file or a postgresql:// URL; 'false' for none "
                              f"(default: {default})")


def _add_threshold_arg(parser_: argparse.ArgumentParser, what: str) -> None:
    parser_.add_argument("--threshold", type=float, default=0.05,
                         help=f"smallest relative {what} (default 0.05 = 5%%)")


def _history_arg(text):
    """``--history``: None when not given, "" for false or none, else the path or URL."""
    return "" if text is not None and text.strip().lower() in ("false", "none", "no", "") else text


def _store_of(args) -> str:
    where = _history_arg(args.history)
    if where == "":
        raise UserInputError("--history", "false names no history", "give a SQLite file or a postgresql:// URL")
    return where or DEFAULT_HISTORY


def cmd_history(args) -> int:
    from trtbench import api
    from trtbench.history.text import run_lines, series_lines

    where, targets = _store_of(args), args.targets
    query = api.HistoryQuery(args.model, args.variant, args.figure, args.since, args.threshold)
    if targets and args.action in ("show", "runs", "export"):
        raise UserInputError(targets[0], f"'history {args.action}' takes no folder or run",
                             "trtbench history ingest DIR... adds folders; accept and forget take a run")
    if args.action in ("ingest", "rebuild"):
        done = (api.ingest if args.action == "ingest" else api.rebuild)(targets, where)
        print(done.text(where))
    elif args.action in ("accept", "forget"):
        if len(targets) != 1:
            raise UserInputError("RUN", f"{args.action} takes one run, got {len(targets)}",
                                 f"trtbench history {args.action} RUN_ID (trtbench history runs lists them)")
        run_id = (api.accept if args.action == "accept" else api.forget)(targets[0], where)
        print(f"{'accepted: the gate measures from' if args.action == 'accept' else 'forgot'} run {run_id}")
    elif args.action == "export":
        if not args.csv:
            raise UserInputError("export", "no format given", "trtbench history export --csv (the one format)")
        text = api.export_csv(where)
        if args.output:
            atomic_write_text(Path(args.output), text)
        else:
            sys.stdout.write(text)
    elif args.action == "html":
        if len(targets) != 1:
            raise UserInputError("OUT.html", f"html takes one file to write, got {len(targets)}",
                                 "trtbench history html OUT.html [--model M] [--variant V] [--figure F]")
        from trtbench.report.history_page import from_history
        from trtbench.report.writer import write_history_page

        print(f"history page: {write_history_page(Path(targets[0]), from_history(api.history_series(where, query)))}")
    elif args.action == "runs":
        from trtbench.history.ingest import existing
        from trtbench.history.store import open_store

        with open_store(existing(where)) as store:
            print("\n".join(run_lines(store.runs())))
    else:
        print("\n".join(series_lines(api.history_series(where, query))))
    return 0


def cmd_gate(args) -> int:
    from trtbench.api import gate

    result = gate(args.run_dir, _store_of(args), figures=args.figures, threshold=args.threshold)
    run = result.run
    print(f"gate: run {run.run_id} ({run.started_at}{', ' + run.label if run.label else ''}): {result.checked} "
          f"series checked, {len(result.regressions)} regression(s)")
    for regression in result.regressions:
        print(f"regression: {regression.series}: {regression.text}")
    return result.exit_code


def cmd_diagnose(args) -> int:
    from trtbench.config.config import load_config
    from trtbench.pipeline.diagnosis import Request, diagnose_config

    config = load_config(args.config, device=args.device, output_dir=args.output)
    outcome = diagnose_config(config, Request(args.variants, args.precisions, args.point, args.minutes))
    for diagnosis in outcome.diagnoses:
        print(f"{diagnosis.stem}: {diagnosis.status}; builds {diagnosis.builds} (announced "
              f"{diagnosis.builds_announced})")
    print(f"diagnosis: {outcome.files['report.md']}")
    return outcome.exit_code


def cmd_compare(args) -> int:
    from trtbench.api import compare

    comparison = compare(args.baseline, args.new, threshold=args.threshold)
    print(f"{comparison.table()}\n{comparison.summary()}")
    return 0


def cmd_run(args) -> int:
    from trtbench.config.config import load_config
    from trtbench.core.env import busy_machine_note
    from trtbench.config.plan import parse_shard, resolve
    from trtbench.core.progress import Progress
    from trtbench.core.status import RunStatus
    from trtbench.pipeline.runner import run_config

    config = load_config(args.config, device=args.device, variants=args.variants, output_dir=args.output,
                         profile=args.command == "profile")
    if args.p99_budget is not None:
        config.budget.p99_ms = args.p99_budget
    if args.processes is not None:
        config.benchmark.processes = args.processes
    history = _history_arg(args.history)
    if history is not None:
        config.output.history = history or False
    if args.label is not None:
        config.output.label = args.label
    plan = resolve(config, parse_shard(args.shard) if args.shard else None)
    for line in plan.shard_lines():
        print(line, file=sys.stderr)
    outcome = run_config(plan, Progress(quiet=args.quiet), fresh=args.fresh)
    if outcome.resumed:
        print(f"resumed: kept {outcome.resumed} case(s) measured by an earlier run into {outcome.out_dir} "
              f"(--fresh starts over)", file=sys.stderr)
    print()
    _print_results(outcome.results, config.budget.p99_ms)
    print(f"\nresults: {outcome.files['json']}  report: {outcome.files['markdown']}, {outcome.files['html'].name}")
    if outcome.history:
        print(outcome.history, file=sys.stderr)
    busy = busy_machine_note(outcome.environment)
    if busy:
        print(f"note: {busy}", file=sys.stderr)
    if outcome.interrupted:
        print("interrupted: partial results were written", file=sys.stderr)
    elif outcome.results.runs and outcome.results.runs[-1].get("status") == RunStatus.FAILED:
        print(f"error: the run stopped on an error (traceback: {outcome.out_dir / 'failures.log'}); what it "
              f"measured was written, and the same command resumes it", file=sys.stderr)
    return outcome.exit_code


def cmd_validate(args) -> int:
    from trtbench.config.config import load_config
    from trtbench.models import build_model

    config = load_config(args.config)
    for model in config.models:
        build_model(model)
    print(f"{args.config}: ok ({', '.join(m.id for m in config.models)}, variants {', '.join(config.variant_names)}, "
          f"precisions {', '.join(config.precisions)}, device {config.device})")
    return 0


def cmd_models(args) -> int:
    from trtbench.models import list_models

    for source, names in list_models().items():
        print(f"{source} ({len(names)}):")
        for name in names:
            print(f"  {name}")
    print("python: any 'pkg.module:factory' returning an nn.Module; torchscript: a saved .ts/.pt file path")
    return 0


def cmd_variants(args) -> int:
    from trtbench.config.plan import resolve_device, why_unavailable
    from trtbench.core.env import bf16_compute
    from trtbench.core.target import Target
    from trtbench.variants import get_variant, variant_names

    device = resolve_device("auto")
    for name in variant_names():
        variant = get_variant(name)
        reason = variant.unavailable_reason(Target(device))
        bf16 = why_unavailable(name, device, "bf16")
        print(f"{name}: {variant.description}")
        if not variant.timed:
            print("  build step: built for the variants that start from it, not listed or timed itself")
        if variant.depends_on:
            print(f"  builds from: {variant.depends_on}")
        if variant.option_names():
            print(f"  options: {', '.join(variant.option_names())}")
        print(f"  here ({device}): {'available' if reason is None else 'skipped: ' + reason}")
        if variant.timed:
            how = (bf16_compute(device).text if variant.runtime == "torch"
                   else f"{variant.runtime}'s bf16 kernels, where the build finds them (else skipped, saying why)")
            print(f"  bf16 here: {how if bf16 is None else 'skipped: ' + bf16}")
    return 0


def cmd_verify(args) -> int:
    from trtbench.artifacts.store import verify_manifest

    rows = verify_manifest(args.output, force=args.force)
    for row in rows:
        verdict = "ok" if row["ok"] else "FAIL"
        detail = f"max abs err {row['max_abs_err']:.2e}" if "max_abs_err" in row else ""
        for key, first in (("first_call_ms", "first call"), ("first_token_ms", "first token")):  # token: a decoder's
            if key in row:
                detail += f"  load {row['load_s']:.2f} s, {first} {row[key]:.1f} ms"
        print(f"{verdict:4}  {row['file']:32}  {detail}  {row.get('error', '')}".rstrip())
    failed = sum(not row["ok"] for row in rows)
    print(f"{len(rows) - failed} verified, {failed} failed")
    return 1 if failed else 0


HANDLERS = {"run": cmd_run, "profile": cmd_run, "validate": cmd_validate, "models": cmd_models,
            "variants": cmd_variants, "verify": cmd_verify, "compare": cmd_compare, "merge": cmd_merge,
            "diagnose": cmd_diagnose, "history": cmd_history, "gate": cmd_gate}


def main(argv: list[str] | None = None) -> int:
    """The ``trtbench`` command's exit code; as the command (``argv`` None), a run goes under a supervisor."""
    command_line = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in HANDLERS and argv[0] not in ("-h", "--help"):
        argv = ["run", *argv]
    args = build_parser().parse_args(argv)
    # torchao's enums registered with torch 2.14's pytree warn once each: nothing a user can act on
    logging.getLogger("torch.utils._pytree").setLevel(logging.ERROR)
    if args.command is None:
        build_parser().print_help()
        return 2
    if command_line and args.command in ("run", "profile"):
        from trtbench.pipeline.supervisor import supervise, supervised

        if not supervised():
            return supervise(argv)
    try:
        return HANDLERS[args.command](args)
    except UserInputError as err:
        print(f"trtbench: error: {err.format()}", file=sys.stderr)
        return err.exit_code
    except DiskFullError as err:  # a fault, not bad input: every case measured is in the journal already
        print(f"trtbench: error: {err}; the cases measured are kept in the output folder's journal, and the "
              f"same command resumes from them", file=sys.stderr)
        return 1
