"""Timing workers: each variant in a process of its own, the interleaving kept, spinning settled.

The protocol is held with toy runtimes (tests/assets/toy_runtimes.py) and asserts on CPU time,
not wall-clock time, so it holds on a busy machine.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import statistics

import pytest
import torch

from conftest import by_point, run_dict
from helpers.timers import ScriptedCost
from trtbench.measure.interference import interference_check
from trtbench.measure.race import Entrants
from trtbench.measure.timing import TimingSettings, measure_interleaved
from trtbench.workers.loop import WorkerError, WorkerTimer, spawn_workers, start_workers
from toy_runtimes import (ColdAfterOthers, Crashes, FailsToBuild, Hangs, Marks, MarksFreedOutputs, Refaults,
                          Sleeper, Spinner, Two)

CPU = torch.device("cpu")
FIXED = TimingSettings(mode="fixed", warmup=1, warmup_s=0, iterations=6, schedule="interleaved")


@pytest.fixture
def workers(tmp_path):
    started = []

    def start(recipes, timeout_s=120.0):
        ready, errors = start_workers(recipes, spawn_workers(len(recipes), timeout_s, log_dir=tmp_path))
        started.extend(ready.values())
        return ready, errors

    yield start
    for worker in started:
        worker.close()


def test_a_spinning_neighbour_is_settled_page_faults_are_counted_per_process_and_a_switch_in_call_is_kept_apart(
        workers, tmp_path):
    """One set of workers (each costs a torch import) for three claims; the neighbour hosts a sleeper (its point
    "p") and a marker (its point "also_p").

    A spinner's spin is settled before its neighbours' blocks. A runtime that maps and touches fresh pages on every
    call shows thousands of page faults per call, its sleeping neighbour none; counted in the worker (a count, so it
    holds on a busy machine) and, for a variant timed here, in this process.

    A runtime whose first call after its neighbour ran is cold (sleeps 0.25 s; later calls are free, as a cache
    refill after another runtime evicted it): with a switch-in call each block's timed calls are warm and the cold
    one is kept apart, per block; without, the sample of every block that follows the neighbour's is cold. The
    cold time is a lower bound (a sleep never ends early), and a free call is far below it on any machine."""
    import mmap

    mark = str(tmp_path / "mark")
    ready, errors = workers({"spinner": Spinner(spin_s=0.05), "refaults": Refaults(megabytes=8),
                             "neighbour": Two(Sleeper(call_s=0.06), Marks(mark)),
                             "cold": ColdAfterOthers(mark, cold_s=0.25)})
    assert not errors
    timers = {name: WorkerTimer(ready[name], "p") for name in ("spinner", "refaults", "neighbour")}
    result = measure_interleaved(timers, CPU, FIXED)
    spinner = result["spinner"]
    # the spin happened inside the spinner's own settle wait (CPU-time, whatever the machine's load)...
    assert statistics.median(spinner.settle_cpu_ms) > 10
    # ...so while its neighbours were timed, the spinner's process used about no CPU at all
    assert len(spinner.cpu_between_ms) == 6  # 6 timed rounds of 1 call (warm-up blocks are not kept)
    assert statistics.median(spinner.cpu_between_ms) < 2.0
    assert statistics.median(result["neighbour"].settle_cpu_ms) < 2.0  # a sleeper never spins
    assert ready["spinner"].facts["runtime"] == "spinner" and ready["spinner"].facts["pid"] != os.getpid()
    assert ready["spinner"].facts["pid"] != ready["neighbour"].facts["pid"]
    pages = (8 << 20) // mmap.PAGESIZE
    assert len(result["refaults"].kept("faults")) == 6
    assert statistics.median(result["refaults"].kept("faults")) >= 0.9 * pages
    assert statistics.median(result["neighbour"].kept("faults")) < 50
    here = measure_interleaved({"refaults": Refaults(megabytes=8).materialize()[0]["p"]}, CPU, FIXED)
    assert statistics.median(here["refaults"].kept("faults")) >= 0.9 * pages

    timers = {"cold": WorkerTimer(ready["cold"], "p"), "neighbour": WorkerTimer(ready["neighbour"], "also_p")}
    # the warm-up's call (cold: the neighbour ran between) sizes the blocks: 0.25 s is "short" under 1 s
    result = measure_interleaved(timers, CPU, dataclasses.replace(FIXED, switch_in_below_s=1.0))
    cold = result["cold"]
    assert len(cold.samples) == 6 and max(cold.samples) < 250
    # rounds rotate (cold, neighbour / neighbour, cold / ...): the neighbour ran before cold's blocks in
    # rounds 1, 2, 4 and 6; in rounds 3 and 5 cold's block directly follows its own
    after_neighbour = [True, True, False, True, False, True]
    assert [ms >= 250 for ms in cold.switch_in_ms] == after_neighbour
    never = measure_interleaved(timers, CPU, dataclasses.replace(FIXED, switch_in_below_s=0))["cold"]
    assert [ms >= 250 for ms in never.samples] == after_neighbour and never.switch_in_ms == []
    # schedule: steady leads each block shorter than block_s in with a block's worth of calls: the cold one is among
    # them, never timed (a 0.25 s call fills the default 0.25 s block: it would be timed with no lead-in)
    steady = measure_interleaved(timers, CPU, dataclasses.replace(FIXED, switch_in_below_s=0, schedule="steady",
                                                                  block_s=1.0))
    assert len(steady["cold"].samples) == 6 and max(steady["cold"].samples) < 250


def test_a_worker_that_crashes_cannot_build_or_hangs_is_an_error_the_others_survive_keeping_no_check_output(
        workers, tmp_path):
    """One set of workers (each costs a torch import) for three claims. A worker that crashes, or cannot build, is
    an error its neighbour survives. A worker keeps no output of its accuracy check through the timed calls: the
    check's output goes to the parent as a file and is freed in the worker before its answer: held through the
    timed calls, a block that a call allocated would pin its place in glibc's heap, and a torch.compile'd resnet18
    then faulted its buffers in on some calls rather than on every call as it does alone (benchmarks/NOTES.md).
    The toy's outputs say when they are freed; the timed calls' outputs are dropped as they come. Last, a worker
    that hangs (the survivor's point "also_p") is killed at its timeout and named."""
    mark = tmp_path / "freed"

    def freed() -> list[str]:
        return sorted(mark.read_text().split()) if mark.exists() else []

    ready, errors = workers({"crash": Crashes(), "broken": FailsToBuild(),
                             "marks": Two(MarksFreedOutputs(mark=str(mark)), Hangs())})
    assert set(ready) == {"crash", "marks"}
    assert "cannot load its model" in str(errors["broken"])
    checked = ready["marks"].check("p")
    assert checked.output.shape == (256,), "the parent got the output"
    assert freed() == ["1"], "the worker freed the check's output before answering"
    with pytest.raises(WorkerError,
                       match=r"crash's worker died .*exit code 7.*last output:\n.*fatal error in kernel 3"):
        ready["crash"].block("p", 1)
    assert len(ready["marks"].block("p", 3).host_ms) == 3
    assert freed() == ["1", "2", "3", "4"]

    worker = ready["marks"]
    worker.timeout_s = 1.0  # the build had the long timeout; a block gets this one
    with pytest.raises(WorkerError, match="marks's worker gave no answer .* within 1 s .*worker_timeout_s.* killed"):
        worker.block("also_p", 1)
    assert worker.process.poll() is not None


def test_a_worker_takes_its_recipe_without_importing_the_config_layer_or_matplotlib(tiny_config, subprocess_env):
    """A worker imports what its recipe's objects need: the model's and the inputs' specs live in the models and
    core layers, so unpickling a recipe imports neither the config layer nor, through its scenarios and their
    report, matplotlib (a second of CPU in every worker process)."""
    import pickle
    import subprocess
    import sys
    from pathlib import Path

    from trtbench.building.recipe import VariantRecipe
    from trtbench.config.config import config_from_dict
    from trtbench.config.plan import resolve

    config = config_from_dict(tiny_config)
    (group,) = resolve(config).groups
    recipe = VariantRecipe.for_group(config, group, "eager", "fp32", Path("payload.pt"), CPU)
    script = ("import pickle, sys; from trtbench.workers.loop import worker_main; "
              "pickle.loads(sys.stdin.buffer.read()); "
              "print(sorted(m for m in sys.modules if m.startswith(('trtbench.config', 'matplotlib'))))")
    out = subprocess.run([sys.executable, "-c", script], input=pickle.dumps(recipe), capture_output=True,
                         env=subprocess_env, check=True)
    assert out.stdout.decode().strip() == "[]", out.stdout.decode()


def test_variants_leave_the_rounds_once_precise_while_the_baseline_stays():
    # eager alternates 1 and 30 ms: never precise, so it runs to the cap
    timing = TimingSettings(mode="adaptive", race=False, warmup=0, warmup_s=0, target_rel_ci=0.05, max_time_s=3,
                            min_iterations=5, block_s=0.003,
                            switch_in_below_s=0)  # (a switch-in call would take every other call out of its blocks)
    result = measure_interleaved({"eager": ScriptedCost(1.0, 30.0), "steady": ScriptedCost(1.0)}, CPU, timing,
                                 entrants=Entrants(baseline="eager"))
    steady, eager = result["steady"], result["eager"]
    assert steady.stopped_by == "target_rel_ci" and eager.stopped_by == "max_time_s"
    assert len(steady.rounds) < len(eager.rounds)  # the baseline went on as the drift reference
    assert eager.alone  # and was then timed alone for the interference check


def test_run_times_each_variant_in_its_own_process_and_states_it(tiny_config, tmp_path):
    tiny_config["variants"] = ["eager", "traced"]
    tiny_config["benchmark"].update(isolation="process", shapes=["opt"])
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)  # about timing, not saving
    outcome = run_dict(tiny_config)
    assert outcome.exit_code == 0
    records = by_point(outcome.results)
    eager, traced = records[("eager", "opt")], records[("traced", "opt")]
    pids = {eager.metrics["isolation"]["pid"], traced.metrics["isolation"]["pid"], os.getpid()}
    assert len(pids) == 3
    for record in (eager, traced):
        facts = record.metrics["isolation"]
        assert facts["method"] == "process" and facts["intra_op_threads"] == record.case.threads
        assert facts["blocks"] >= 5 and facts["peak_rss_mb"] > 0
        assert facts["switch_in_ms_median"] > 0  # a toy's call is far below switch_in_below_s
    check = interference_check(eager)
    assert check is not None and check.variants == ("traced",)
    assert outcome.results.speedup(traced) is not None
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Isolation" in report and "process" in report and "| switch-in call |" in report


def test_a_variant_whose_worker_dies_fails_alone(tiny_config, tmp_path, monkeypatch):
    # eager runs the model's Python forward in its worker, which exits there; traced runs the traced graph
    monkeypatch.setenv("TOY_PARENT_PID", str(os.getpid()))
    tiny_config["model"] = {"source": "python", "name": "toy_models:exits_outside_parent"}
    tiny_config["variants"] = ["eager", "traced"]
    tiny_config["benchmark"].update(isolation="process", shapes=["opt"])
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)  # about timing, not saving
    outcome = run_dict(tiny_config)
    records = by_point(outcome.results)
    assert records[("eager", "opt")].status == "failed"
    assert "worker" in records[("eager", "opt")].reason and "exit code 7" in records[("eager", "opt")].reason
    assert records[("traced", "opt")].status == "ok" and records[("traced", "opt")].rounds
    assert outcome.exit_code == 1


def test_a_variant_not_built_within_max_build_s_is_skipped_and_the_run_goes_on(tiny_config, tmp_path, monkeypatch):
    # eager's worker makes a first call in its build, which sleeps an hour there: killed at the limit; traced's
    # build (a 1 s trace in this process) is within it, and its worker runs the traced graph
    monkeypatch.setenv("TOY_PARENT_PID", str(os.getpid()))
    tiny_config["model"] = {"source": "python", "name": "toy_models:slow_builds"}
    tiny_config["variants"] = ["eager", "traced"]
    tiny_config["benchmark"].update(isolation="process", shapes=["opt"], max_build_s=6)
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)
    outcome = run_dict(tiny_config)
    records = by_point(outcome.results)
    assert records[("eager", "opt")].status == "skipped"
    assert records[("eager", "opt")].reason.startswith("built in more than max_build_s=6 s: eager's worker")
    assert records[("traced", "opt")].status == "ok" and records[("traced", "opt")].rounds
    assert outcome.exit_code == 0 and (tmp_path / "out" / "report.md").is_file()


def test_a_build_in_the_run_process_over_max_build_s_is_skipped_after_it(tiny_config, tmp_path):
    # traced's trace sleeps 1 s in this process, which cannot be stopped midway: judged when it returns
    tiny_config["model"] = {"source": "python", "name": "toy_models:slow_builds"}
    tiny_config["variants"] = ["eager", "traced"]
    tiny_config["benchmark"].update(shapes=["opt"], max_build_s=0.5)
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)
    records = by_point(run_dict(tiny_config).results)
    assert records[("eager", "opt")].status == "ok"
    assert records[("traced", "opt")].status == "skipped"
    assert re.match(r"built in more than max_build_s=0.5 s \(took [\d.]+ s in the run's process",
                    records[("traced", "opt")].reason)


def test_accuracy_is_judged_where_the_variant_is_timed_and_its_file_is_not_rerun_here(tiny_config, tmp_path,
                                                                                       monkeypatch):
    # eager's forward adds 1 in any process but this one: judged in its worker, it fails its accuracy check;
    # traced's saved file (the one its worker loaded and ran at every point) is published without a second
    # reload in this process, and still passes the fresh-process check
    monkeypatch.setenv("TOY_PARENT_PID", str(os.getpid()))
    tiny_config["model"] = {"source": "python", "name": "toy_models:off_outside_parent"}
    tiny_config["variants"] = ["eager", "traced"]
    tiny_config["benchmark"].update(isolation="process")
    tiny_config["output"]["dir"] = str(tmp_path / "out")
    outcome = run_dict(tiny_config)
    records = by_point(outcome.results)
    for point in ("min", "opt", "max"):
        assert not records[("eager", point)].accuracy["ok"], records[("eager", point)].accuracy
        assert records[("eager", point)].metrics["peak_memory"]["peak_bytes"] > 0
        assert records[("traced", point)].accuracy["ok"] and records[("traced", point)].status == "ok"
    manifest = json.loads((tmp_path / "out" / "artifacts" / "manifest.json").read_text())
    (traced,) = [e for e in manifest["artifacts"] if e["variant"] == "traced"]
    assert traced["reload_check"]["by"].startswith("its timing worker")
    assert traced["reload_check"]["shapes"] == ["min", "opt", "max"] and traced["fresh_process_check"]


def test_isolation_is_validated(tiny_config, write_config, capsys):
    from trtbench.cli import main

    tiny_config["benchmark"]["isolation"] = "threads"
    assert main(["validate", str(write_config(tiny_config))]) == 2
    assert "benchmark.isolation" in capsys.readouterr().err


def test_runnable_threads_reads_each_threads_state(tmp_path):
    import threading

    from trtbench.measure.settle import runnable_threads

    me = threading.get_native_id()
    states = {me: "R", 101: "S", 102: "R", 103: "D", 104: "R"}  # the caller's own thread does not count
    for tid, state in states.items():
        (tmp_path / str(tid)).mkdir()
        (tmp_path / str(tid) / "stat").write_text(f"{tid} (ort worker (x)) {state} 1 2 3 4")
    assert runnable_threads(str(tmp_path)) == 2
    assert runnable_threads(str(tmp_path / "missing")) is None


@pytest.mark.parametrize("alone, rounds, disturbed", [
    ([9.8, 10.0, 10.2, 9.9, 10.1] * 4, [10.0, 10.2, 10.4, 10.1, 10.3] * 4, False),  # 2% apart, CIs overlap
    ([9.8, 10.0, 10.2, 9.9, 10.1] * 4, [10.8, 11.0, 11.2, 10.9, 11.1] * 4, True),  # 10% apart, precise
    ([8.0, 12.0, 10.0], [10.9] * 20, False),  # 9% apart, but 3 alone calls cannot resolve 5%, and CIs overlap
    ([8.0, 8.1, 8.2, 8.0, 8.1], [12.0] * 20, True),  # CIs far apart
])
def test_interference_flags_what_the_samples_can_resolve(alone, rounds, disturbed):
    from trtbench.core.case import Case
    from trtbench.core.record import Record

    case = Case("m", "eager", "fp32", "opt", ((1, 3),), 2, "cpu")
    record = Record(case, "env", rounds=[rounds], metrics={"interference": {"alone_ms": alone, "variants": ["ort"]}})
    assert interference_check(record).disturbed is disturbed


def test_interference_compares_the_alone_blocks_with_their_own_process_in_the_rounds():
    """The alone blocks ran in the baseline's first process: another process 10% slower throughout (its own
    offset, not interference) must not read as a disturbance."""
    from trtbench.core.case import Case
    from trtbench.core.record import Record

    case = Case("m", "eager", "fp32", "opt", ((1, 3),), 2, "cpu")
    first, slower = [9.8, 10.0, 10.2, 9.9, 10.1], [10.8, 11.0, 11.2, 10.9, 11.1]
    record = Record(case, "env", rounds=[first, slower] * 4, block_process=[0, 1] * 4,
                    block_round=[r for r in range(4) for _ in range(2)],
                    metrics={"interference": {"alone_ms": first * 4, "variants": ["ort"]}})
    check = interference_check(record)
    assert not check.disturbed and check.rounds_ms == pytest.approx(10.0)


def test_the_notes_name_rows_that_fault_their_pages_in_on_every_call():
    """A row whose process faulted thousands of pages per timed call (glibc handing its buffers back) is named
    in the report's notes with its count; one with a few faults is not."""
    from trtbench.core.case import Case
    from trtbench.core.record import Record
    from trtbench.report.tables import notes
    from trtbench.results.resultset import ResultSet

    results = ResultSet()
    for variant, faults in (("eager", 64192.0), ("ort", 3.0)):
        case = Case("m", variant, "fp32", "b8", ((8, 3),), 2, "cpu")
        results.add(Record(case, "env", rounds=[[10.0, 10.1, 9.9]],
                           metrics={"isolation": {"minor_faults_per_call_median": faults}}))
    (line,) = [n for n in notes(results, []) if n.startswith("page faults on every call")]
    assert "eager fp32 b8 (64192/call)" in line and "ort" not in line.split(":")[1]


def test_the_notes_name_rows_whose_allocator_state_changed_during_timing():
    """A row whose blocks faulted thousands of pages per call and then none, or on only some calls (glibc's
    state flipped within its process: one call in four trimmed the heap, measured on a Zen 4), is named with its
    range: its median mixes two speeds; one that stayed in one state is not."""
    from trtbench.core.case import Case
    from trtbench.core.record import Record
    from trtbench.report.tables import notes
    from trtbench.results.resultset import ResultSet

    results = ResultSet()
    for variant, spread in (("compiled", [0.0, 4576.0]), ("aoti", [1144.0, 4576.0]), ("eager", [0.0, 2.0]),
                            ("ort", [4400.0, 4700.0])):
        case = Case("m", variant, "fp32", "b1", ((1, 3),), 2, "cpu")
        results.add(Record(case, "env", rounds=[[10.0, 10.1, 9.9]],
                           metrics={"isolation": {"minor_faults_per_call_median": spread[0],
                                                  "minor_faults_per_call_range": spread}}))
    (line,) = [n for n in notes(results, []) if n.startswith("allocator state changed")]
    assert "compiled fp32 b1 (0-4576/call)" in line and "aoti fp32 b1 (1144-4576/call)" in line
    assert "eager" not in line and "ort fp32" not in line
