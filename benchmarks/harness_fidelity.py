"""Does trtbench read the same latency as torch.utils.benchmark.Timer?

Run:  .venv/bin/python benchmarks/harness_fidelity.py [--pairs 5] [--tty] [--schedule interleaved|steady]
      .venv/bin/python benchmarks/harness_fidelity.py --results DIR --config FILE [--variants eager,compiled]
          [--pairs 4] [--min-run-time 1] [--json OUT]

Each pair runs, one after the other, (a) the trtbench CLI in its own process on eager torchvision
resnet18 at 1x3x160x160 with 2 threads (default adaptive timing), and (b) a fresh Python process
timing the same model and input with ``Timer.blocked_autorange`` (num_threads=2), alternating which
goes first. It prints each pair's ratio (CLI median / Timer median) and the median ratio.
``--tty`` runs the CLI under a pseudo-terminal (``script``), as a user at a terminal does, so its
progress display is on. Target: ratios within 0.97-1.03.

``--results DIR --config FILE`` (scripts/gpu_check.sh) checks the rows of a run already made (DIR, made from
FILE) at one point and precision (``--point``, ``--precision``), each variant of ``--variants`` that its run
rebuilt in its workers (eager, compiled). Per variant two processes start with what the run's workers were given
(the same recipe: model, weights, inputs of every point, dtype, memory format, the variant's options, threads,
cuDNN autotuning; the same environment: the build group's allocator, OpenMP runtime and binding): (a) trtbench's
own timing worker, timed by trtbench's loop with the run's timing settings for a short fixed time, and (b) a
reference process that calls the same callable under ``Timer.blocked_autorange`` and, on CUDA,
``triton.testing.do_bench`` (median). They take turns in ``--pairs`` pairs, alternating which goes first, each
segment about ``--min-run-time`` s, the other process idle meanwhile: each pair's ratio (trtbench median /
reference) compares two readings taken side by side in time, on a machine whose speed drifts from minute to
minute. It prints each pair's ratios and their median, judged against the target, and writes them as JSON to
``--json`` (after each variant, so that a stopped run keeps what it finished).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pickle
import shlex
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import yaml

from trtbench.building.copies import precision_copies
from trtbench.building.recipe import VariantRecipe, write_payloads
from trtbench.config.config import load_config
from trtbench.config.plan import resolve
from trtbench.core.env import torch_settings
from trtbench.core.errors import UserInputError
from trtbench.core.knobs import Knobs, worker_env
from trtbench.measure.timing import TimingSettings, measure_interleaved
from trtbench.models import build_model
from trtbench.workers.loop import WorkerTimer, close_workers, spawn_workers, start_workers

TARGET = (0.97, 1.03)
THREADS = 2
TIMER_SNIPPET = """
import torch, torchvision, torch.utils.benchmark as tb
torch.manual_seed(0)
model = torchvision.models.resnet18(weights=None).eval()
x = torch.randn(1, 3, 160, 160)
with torch.inference_mode():
    for _ in range(5):
        model(x)
    t = tb.Timer(stmt="model(x)", globals={"model": model, "x": x}, num_threads=%d)
    print(t.blocked_autorange(min_run_time=%f).median * 1e3)
"""

# The reference process of --results: the run's recipe materialized as its worker does, then, on each line of
# stdin ("time SECONDS"), the row's callable timed by torch.utils.benchmark (and triton on CUDA), one JSON line out.
REFERENCE_SNIPPET = """
import json, pickle, sys
from trtbench.core.knobs import apply_binding
apply_binding()
import torch
import torch.utils.benchmark as tb
from trtbench.measure.timing import synchronize
recipe, label = pickle.load(open(sys.argv[1], "rb"))
calls, facts = recipe.materialize()
call, device = calls[label], torch.device(recipe.device)
print("fidelity " + json.dumps({"ready": facts}), flush=True)
for line in sys.stdin:
    seconds = float(line.split()[1])
    out = {}
    with torch.inference_mode():
        synchronize(device)
        timer = tb.Timer(stmt="call()", globals={"call": call}, num_threads=recipe.threads)
        out["timer_ms"] = timer.blocked_autorange(min_run_time=seconds).median * 1e3
        if device.type == "cuda":
            from triton.testing import do_bench
            out["do_bench_ms"] = do_bench(call, rep=int(seconds * 1e3), return_mode="median")
    print("fidelity " + json.dumps(out), flush=True)
"""


def paired(trtbench: Callable[[int], float], reference: Callable[[int], dict], pairs: int) -> list[dict]:
    """``pairs`` pairs of one trtbench reading (ms) and one reference reading (ms by reference name, ``<name>_ms``),
    taken one right after the other, trtbench first in even pairs and the reference first in odd ones (so neither
    always reads the machine's later state); each pair's ratios are its trtbench ms over its own references'."""
    found = []
    for i in range(pairs):
        if i % 2 == 0:
            ms = trtbench(i)
            refs = reference(i)
        else:
            refs = reference(i)
            ms = trtbench(i)
        found.append({"first": "trtbench" if i % 2 == 0 else "reference", "trtbench_ms": ms, **refs,
                      "ratios": {name.removesuffix("_ms"): ms / ref for name, ref in refs.items()}})
    return found


def summary(pairs: list[dict]) -> dict:
    """The median ratio per reference over ``pairs`` (:func:`paired`), its range, and whether each median is
    within the target."""
    names = list(pairs[0]["ratios"])
    ratios = {name: statistics.median(p["ratios"][name] for p in pairs) for name in names}
    lo, hi = TARGET
    return {"ratios": ratios, "ranges": {name: [min(p["ratios"][name] for p in pairs),
                                                max(p["ratios"][name] for p in pairs)] for name in names},
            "within": all(lo <= r <= hi for r in ratios.values())}


@dataclass(frozen=True)
class Row:
    """One row of the run: what its workers were given and how the run timed it, and its median there."""

    recipe: VariantRecipe
    label: str  # the point
    knobs: Knobs  # the build group's deployment knobs, which its workers started with
    timing: TimingSettings  # the run's
    run_ms: float  # the row's median in the run (every call of every process)
    timeout_s: float  # benchmark.worker_timeout_s


def _record_error(record: dict, variant: str) -> str | None:
    """Why ``record``'s row cannot be timed again as its run timed it (None: it can): rows timed in the run's own
    process, or by workers that loaded a saved file rather than rebuilding the variant."""
    isolation = (record.get("metrics") or {}).get("isolation") or {}
    if isolation.get("method", "process") != "process":
        return (f"the run timed {variant} in its own process (benchmark.isolation: {isolation['method']}), "
                "not in workers")
    if isolation.get("hosts", "a rebuild") != "a rebuild":
        return f"the run's workers hosted {isolation['hosts']} for {variant}; only rebuilt variants are checked"
    return None


def run_rows(results: Path, config_path: Path, args, folder: Path) -> tuple[dict, dict]:
    """The rows of ``args.variants`` at ``args.point`` and ``args.precision`` of the run in ``results`` (made from
    ``config_path``), by variant: a :class:`Row`, or why not; and the point's facts (shape, device, threads). The
    model is built and its weights and inputs written to ``folder`` as the run's build did for its workers."""
    data = json.loads((results / "results.json").read_text())
    config = load_config(config_path)
    plan = resolve(config)
    rows, cases, spec = {}, {}, {}
    for record in data["records"]:
        case = record["case"]
        if case["point"] == args.point and case["precision"] == args.precision and record.get("rounds"):
            cases[case["variant"]] = (record, case)
            spec = {"shape": case["input_shapes"][0], "device": case["device"], "threads": case["threads"],
                    "point": args.point, "precision": args.precision}
    for variant in args.variants.split(","):
        if variant not in cases:
            rows[variant] = f"no timed {variant} row at {args.point} {args.precision}"
            continue
        record, case = cases[variant]
        group = _group_of(plan, case)
        rows[variant] = _record_error(record, variant) or (None if group is not None else (
            f"{config_path} makes no build group with {variant}'s row ({case['model']}, {case['threads']} threads, "
            f"{case['input_shapes']} at {args.point}, options '{case.get('options', '')}'): pass the config the run "
            f"was made from"))
        if rows[variant] is None:
            payload = _payload(config, group, args.precision, plan.device, folder)
            recipe = VariantRecipe.for_group(config, group, variant, args.precision, payload, plan.device)
            rows[variant] = Row(recipe, args.point, group.knobs, plan.timing,
                                statistics.median(s for r in record["rounds"] for s in r),
                                config.benchmark.worker_timeout_s)
    return rows, spec


def _group_of(plan, case: dict):
    """The build group of ``plan`` that makes ``case`` (its model, threads, knobs, point shapes and variant options;
    None: none does)."""
    def makes(group) -> bool:
        return (group.model.id == case["model"] and group.threads == case["threads"]
                and group.knobs.text == case.get("knobs", "")
                and any(p.label == case["point"] and [list(s) for s in p.shapes] == case["input_shapes"]
                        for p in group.points)
                and any(e.name == case["variant"] and e.options_text == case.get("options", "")
                        for e in group.variants))
    return next((g for g in plan.groups if makes(g)), None)


def _payload(config, group, precision: str, device, folder: Path) -> Path:
    """The weights and inputs (every point of ``group``) that the run's workers of ``precision`` loaded, written
    into ``folder`` once per group and precision."""
    path = folder / f"{group.model.id}-{group.threads}-{group.knobs.text}-{precision}"
    if not path.is_dir():
        path.mkdir(parents=True)
        with torch_settings(group.threads, config.benchmark.cudnn_benchmark):
            copies = precision_copies(build_model(group.model), [precision], config, group.points, device)
            write_payloads(path, copies, [precision], lambda at: at.inputs)
    return next(path.glob("payload-*.pt"))


class Reference:
    """The reference process of a row: started with the environment the run's workers got, it builds the row's
    recipe as they do and times its callable whenever asked (:data:`REFERENCE_SNIPPET`)."""

    MARK = "fidelity "  # its answers' prefix on stdout (REFERENCE_SNIPPET's; the rest is the runtime's own output)

    def __init__(self, row: Row, folder: Path):
        recipe_file = folder / f"{row.recipe.variant}-recipe.pkl"
        recipe_file.write_bytes(pickle.dumps((row.recipe, row.label)))
        env = worker_env(row.knobs, row.recipe.threads)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.process = subprocess.Popen([sys.executable, "-c", REFERENCE_SNIPPET, str(recipe_file)],
                                        stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env)

    def _answer(self) -> dict:
        for line in self.process.stdout:
            if line.startswith(self.MARK):
                return json.loads(line[len(self.MARK):])
            sys.stderr.write(line)
        raise RuntimeError(f"the reference process exited with code {self.process.wait()} (its errors are above)")

    def ready(self) -> dict:
        """Its facts (threads, allocator state) once it has built the row."""
        return self._answer()["ready"]

    def time(self, seconds: float) -> dict:
        """The references' medians (ms, ``<name>_ms``), each timing about ``seconds``."""
        self.process.stdin.write(f"time {seconds}\n")
        self.process.stdin.flush()
        return self._answer()

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def trtbench_median(worker, row: Row, seconds: float) -> float:
    """The row timed in its ``worker`` by trtbench's loop, with the run's timing settings for about ``seconds``
    (its warm-up, then at least three blocks): the median of its calls, the statistic the run reports."""
    timing = dataclasses.replace(row.timing, race=False, target_rel_ci=0.0, max_time_s=seconds)  # a fixed time: no stop
    variant = row.recipe.variant
    raw = measure_interleaved({variant: WorkerTimer(worker, row.label)}, torch.device(row.recipe.device), timing)
    return statistics.median(raw[variant].samples)


def check_row(row: Row, args, folder: Path) -> dict:
    """The row's trtbench worker and reference process, started together, then read in ``args.pairs`` pairs."""
    variant = row.recipe.variant
    reference = Reference(row, folder)
    try:
        spawned = spawn_workers(1, row.timeout_s, None, row.knobs, row.recipe.threads)
        ready, errors = start_workers({variant: row.recipe}, spawned)
        if variant in errors:
            raise errors[variant]
        worker = ready[variant]
        try:
            reference_facts = reference.ready()
            pairs = paired(lambda i: trtbench_median(worker, row, args.min_run_time),
                           lambda i: reference.time(args.min_run_time), args.pairs)
            worker_facts = worker.refresh_facts()
        finally:
            close_workers([worker])
    finally:
        reference.close()
    for i, pair in enumerate(pairs):
        print(f"{variant} pair {i + 1} ({pair['first']} first): trtbench {pair['trtbench_ms']:.3f} ms, " + ", ".join(
            f"{name} {pair[name + '_ms']:.3f} ms (ratio {r:.3f})" for name, r in pair["ratios"].items()), flush=True)
    return {"run_ms": row.run_ms, "pairs": pairs, **summary(pairs), "worker_facts": worker_facts,
            "reference_facts": reference_facts}


def against_references(args) -> None:
    """``--results``: each variant's trtbench readings against its references', in pairs, within the target or
    not."""
    found = {"target": list(TARGET), "pairs": args.pairs, "min_run_time_s": args.min_run_time, "variants": {}}
    with tempfile.TemporaryDirectory(prefix="fidelity.") as work:
        rows, found["spec"] = run_rows(Path(args.results), Path(args.config), args, Path(work))
        for variant, row in rows.items():
            try:
                if isinstance(row, str):
                    raise RuntimeError(row)
                found["variants"][variant] = figures = check_row(row, args, Path(work))
                print(f"{variant}: median ratio " + ", ".join(
                    f"{name} {r:.3f} ({figures['ranges'][name][0]:.3f}-{figures['ranges'][name][1]:.3f})"
                    for name, r in figures["ratios"].items()) + f" over {args.pairs} pairs: "
                      f"{'within' if figures['within'] else 'OUTSIDE'} target {TARGET[0]}-{TARGET[1]} "
                      f"(the run's median {row.run_ms:.3f} ms)", flush=True)
            except RuntimeError as err:  # a WorkerError too
                found["variants"][variant] = {"error": str(err).strip()[-300:]}
                print(f"{variant}: {found['variants'][variant]['error']}", flush=True)
            if args.json:  # after each variant: a part stopped at its share keeps what it finished
                Path(args.json).write_text(json.dumps(found, indent=1))


def cli_median(config: Path, out: Path, tty: bool) -> float:
    cmd = [sys.executable, "-m", "trtbench", "--config", str(config), "--output", str(out), "--fresh"]
    if tty:  # a pseudo-terminal: the progress display runs as it does for a user
        subprocess.run(["script", "-qec", shlex.join(cmd), "/dev/null"], check=True, capture_output=True)
    else:
        subprocess.run(cmd + ["--quiet"], check=True, capture_output=True)
    data = json.loads((out / "results.json").read_text())
    record = data["records"][0]
    samples = [s for r in record["rounds"] for s in r]
    return statistics.median(samples)


def timer_median(min_run_time: float) -> float:
    out = subprocess.run([sys.executable, "-c", TIMER_SNIPPET % (THREADS, min_run_time)], check=True,
                         capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--min-run-time", type=float, default=5.0,
                        help="Timer.blocked_autorange seconds (with --results: each segment of a pair, either side)")
    parser.add_argument("--tty", action="store_true", help="run the CLI under a pseudo-terminal")
    parser.add_argument("--schedule", choices=("interleaved", "steady"),
                        help="the CLI run's benchmark.schedule (default: trtbench's)")
    parser.add_argument("--results", help="a trtbench run's folder: its rows against references, in pairs")
    parser.add_argument("--config", help="with --results: the config the run was made from")
    parser.add_argument("--variants", default="eager,compiled", help="with --results: the variants to check")
    parser.add_argument("--point", default="opt", help="with --results: the point")
    parser.add_argument("--precision", default="fp32", help="with --results: the precision (fp32, fp16, bf16)")
    parser.add_argument("--json", help="with --results: write the figures here")
    args = parser.parse_args()
    if args.results:
        if not args.config:
            parser.error("--results needs --config, the config the run was made from")
        if not (Path(args.results) / "results.json").is_file():
            parser.error(f"--results {args.results}: no results.json there; pass a trtbench run's output folder")
        try:
            return against_references(args)
        except UserInputError as err:  # the config: its key and the fix
            parser.error(f"{args.config}: {err}")
    work = Path(tempfile.mkdtemp(prefix="fidelity."))
    config = work / "resnet18.yaml"
    config.write_text(yaml.safe_dump({
        "name": "fidelity", "model": {"source": "torchvision", "name": "resnet18"},
        "inputs": [{"name": "input", "shape": [1, 3, 160, 160]}], "device": "cpu", "variants": ["eager"],
        "benchmark": {"threads": THREADS, "measure_ceiling": False,
                      **({"schedule": args.schedule} if args.schedule else {})},
        "output": {"save_artifacts": False, "cold_start": False}}))
    print(f"CLI process ({args.schedule or 'default schedule'}) vs Timer process, resnet18 1x3x160x160, "
          f"{THREADS} threads, {args.pairs} pairs"
          f"{' (CLI under a pseudo-terminal)' if args.tty else ''}")
    pairs = paired(lambda i: cli_median(config, work / f"out{i}", args.tty),
                   lambda i: {"timer_ms": timer_median(args.min_run_time)}, args.pairs)
    for i, pair in enumerate(pairs):
        print(f"pair {i + 1}: CLI {pair['trtbench_ms']:.2f} ms, Timer {pair['timer_ms']:.2f} ms, "
              f"ratio {pair['ratios']['timer']:.3f}", flush=True)
    found = summary(pairs)
    (lo, hi), (low, high) = TARGET, found["ranges"]["timer"]
    print(f"median ratio {found['ratios']['timer']:.3f} (range {low:.3f}-{high:.3f}); "
          f"{'within' if found['within'] else 'OUTSIDE'} target {lo}-{hi}")


if __name__ == "__main__":
    main()
