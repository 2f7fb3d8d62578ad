"""The deployment knobs (benchmark.allocator, openmp, binding): every worker process starts with a stated
setting, its rows say which, and sweep: makes them an axis."""

from __future__ import annotations

import statistics

import pytest

from toy_runtimes import MallocsPerCall
from trtbench.core import allocator
from trtbench.core.allocator import TUNED, library_path, missing_library, process_env
from trtbench.core.knobs import Knobs
from trtbench.core.target import Target
from trtbench.measure.timing import TimingSettings, measure_interleaved
from trtbench.workers.loop import WorkerTimer, spawn_workers, start_workers

import torch

FIXED = TimingSettings(mode="fixed", warmup=2, warmup_s=0.0, iterations=6, block_s=0.0, switch_in_below_s=0.0)


def test_default_removes_every_knob_a_parent_had_and_tuned_fixes_the_thresholds():
    parent = {"PATH": "/bin", "LD_PRELOAD": "/x/libjemalloc.so.2", "MALLOC_MMAP_THRESHOLD_": "1", "MALLOC_CONF": "y"}
    assert process_env("default", parent) == {"PATH": "/bin"}, "default: glibc as a fresh deployment starts"
    assert process_env("tuned", parent) == {"PATH": "/bin", **TUNED}


def test_a_preloaded_allocator_is_found_or_its_install_line_given(tmp_path):
    (tmp_path / "libjemalloc.so.2").write_bytes(b"")
    assert process_env("jemalloc", {}, [str(tmp_path)]) == {"LD_PRELOAD": str(tmp_path / "libjemalloc.so.2")}
    assert missing_library("jemalloc", [str(tmp_path)]) is None and missing_library("tuned") is None
    reason = missing_library("tcmalloc", [str(tmp_path)])
    assert "libtcmalloc_minimal.so.4 is not installed" in reason and "apt-get install libtcmalloc-minimal4" in reason
    with pytest.raises(ValueError, match="apt-get install libtcmalloc-minimal4"):
        process_env("tcmalloc", {}, [str(tmp_path)])


@pytest.mark.parametrize("benchmark, key, fragment", [
    ({"allocator": "tcmaloc"}, "benchmark.allocator", "did you mean 'tcmalloc'"),
    ({"allocator": "tuned", "isolation": "in_process"}, "benchmark.allocator", "use isolation: process"),
])
def test_bad_allocator_settings_name_the_key(tiny_config, write_config, capsys, benchmark, key, fragment):
    from trtbench.cli import main

    tiny_config["benchmark"] = {**tiny_config["benchmark"], **benchmark}
    assert main(["validate", str(write_config(tiny_config))]) == 2
    err = capsys.readouterr().err
    assert key in err and fragment in err, err


def test_a_missing_allocator_skips_the_group_with_its_install_line(tiny_config, monkeypatch):
    from trtbench.config.config import config_from_dict
    from trtbench.config.plan import resolve

    monkeypatch.setattr(allocator, "LIBRARY_DIRS", ())
    tiny_config["benchmark"] = {**tiny_config["benchmark"], "allocator": "jemalloc", "isolation": "process"}
    (group,) = resolve(config_from_dict(tiny_config)).groups
    assert set(group.unavailable) == {group.slot_id(e.name, p) for e, p in group.slots()}
    assert all("apt-get install libjemalloc2" in reason for reason in group.unavailable.values())


def faults_per_call(knobs: Knobs, tmp_path) -> tuple[float, dict]:
    """The toy's median page faults per call, and its facts, in a worker started with ``knobs``."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (worker,) = spawn_workers(1, 120.0, tmp_path, knobs)
    try:
        ready, errors = start_workers({"mallocs": MallocsPerCall(megabytes=48)}, [worker])
        assert not errors, errors
        measured = measure_interleaved({"mallocs": WorkerTimer(ready["mallocs"], "p")}, torch.device("cpu"), FIXED)
        return statistics.median(measured["mallocs"].kept("faults")), ready["mallocs"].facts
    finally:
        worker.close()


def test_the_state_reaches_the_worker_and_decides_whether_a_call_faults_its_pages_in_and_a_bound_worker_says_its_cores(
        tmp_path):
    """48 MB is above glibc's largest dynamic mmap threshold (32 MB): with the default state each call maps
    and faults in its buffer afresh; with the tuned thresholds it stays on the heap. The tuned worker is also
    bound (binding: cores, one thread): it runs on the first core this process may use, and says so."""
    import os

    pages = (48 << 20) // 4096
    default, _ = faults_per_call(Knobs(allocator="default"), tmp_path / "default")
    tuned, facts = faults_per_call(Knobs(allocator="tuned", binding="cores"), tmp_path / "tuned")
    assert default >= 0.9 * pages, default
    assert tuned < 0.05 * pages, tuned
    assert facts["bound_cpus"] == [sorted(os.sched_getaffinity(0))[0]], facts


@pytest.mark.parametrize("name", ["jemalloc", "tcmalloc"])
def test_a_preloaded_allocator_runs_in_the_worker_where_installed(name, tmp_path):
    if library_path(name) is None:
        pytest.skip(missing_library(name))
    faults, facts = faults_per_call(Knobs(allocator=name), tmp_path)
    assert facts["preloaded"] == [name], facts  # what it does with a freed 48 MB block is its own policy
    assert faults >= 0


DEPLOYED = r'''
import json, sys
import onnxruntime as ort
import torch  # as the worker has it
from trtbench.core.allocator import mmap_threshold
options = ort.SessionOptions()
options.intra_op_num_threads = 1
session = ort.InferenceSession(sys.argv[1], options, providers=["CPUExecutionProvider"])
feed = {session.get_inputs()[0].name: torch.randn(1, 8).numpy()}
for _ in range(3):
    session.run(None, feed)
print(json.dumps({"mmap_threshold": mmap_threshold()}))
'''


def test_a_default_worker_starts_its_timed_calls_in_the_state_of_a_fresh_process_loading_the_same_file(
        tiny_config, tmp_path, subprocess_env):
    """glibc's state is its thresholds (core/allocator.py): freeing a 24 MiB block raises the mmap threshold to
    24 MiB (and the trim threshold to twice that), and then per-call buffers below them stay on the heap instead
    of faulting in again on every call. The toy's ONNX file is tiny, but the payload a worker gets carries its
    24 MiB of unused weights: a worker that loaded and freed them before its timed calls (a plain torch.load)
    would time in another state than a fresh process that loads the same file. Whether a given call trims also
    depends on the heap's layout, which varies from process to process in a deployment too; the thresholds are
    what the worker's start-up alone could move."""
    import json
    import subprocess
    import sys

    from conftest import run_dict

    tiny_config["model"] = {"source": "python", "name": "toy_models:unused_weights"}
    tiny_config["inputs"] = [{"name": "x", "dtype": "float32", "min_shape": [1, 8], "opt_shape": [1, 8],
                              "max_shape": [1, 8]}]
    tiny_config["variants"] = ["eager", "ort"]
    tiny_config["benchmark"].update(isolation="process", shapes=["opt"], threads=1)
    tiny_config["output"] = {"dir": str(tmp_path / "out"), "save_artifacts": True, "cold_start": False}
    outcome = run_dict(tiny_config)
    (ort,) = [r for r in outcome.results if r.case.variant == "ort"]
    worker = ort.metrics["isolation"]
    assert worker["hosts"] == "the saved .onnx file", worker
    (entry,) = [e for e in json.loads((tmp_path / "out" / "artifacts" / "manifest.json").read_text())["artifacts"]
                if e["variant"] == "ort"]
    saved = tmp_path / "out" / "artifacts" / entry["file"]
    assert saved.stat().st_size < 1 << 20, "the file keeps the unused weights"
    out = subprocess.run([sys.executable, "-c", DEPLOYED, str(tmp_path / "out" / "artifacts" / entry["file"])],
                         capture_output=True, text=True, env=subprocess_env, check=True)
    fresh = json.loads(out.stdout.strip().splitlines()[-1])
    raised = 16 << 20  # freeing the weights would raise it to 24 MiB (the probe reads 16 MiB: its sizes double)
    assert fresh["mmap_threshold"] < raised, fresh
    assert worker["mmap_threshold_bytes"] < raised, (worker, fresh)


def test_the_threshold_is_read_without_moving_it(subprocess_env):
    """Reading glibc's mmap threshold probes blocks up to 32 MiB and unmaps those it mapped without free(), so
    the reading does not raise what it reads; freeing a mapped 8 MiB block does raise it."""
    import subprocess
    import sys

    script = ("import ctypes; from trtbench.core.allocator import mmap_threshold\n"
              "libc = ctypes.CDLL('libc.so.6'); libc.malloc.restype = ctypes.c_void_p\n"
              "libc.free.argtypes = [ctypes.c_void_p]\n"
              "first, second = mmap_threshold(), mmap_threshold()\n"
              "libc.free(libc.malloc(8 << 20))\n"
              "print(first, second, mmap_threshold())")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=subprocess_env,
                         check=True)
    first, second, after = map(int, out.stdout.split())
    assert first == second < 8 << 20 and after == 8 << 20, out.stdout  # raised to 8 MiB and a page
    jemalloc = library_path("jemalloc")
    if jemalloc is not None:  # another malloc first: no glibc state to read
        out = subprocess.run([sys.executable, "-c", script.replace("libc.free(", "(").replace(
            "print(first, second, mmap_threshold())", "print(first)")], capture_output=True, text=True,
            env={**subprocess_env, "LD_PRELOAD": str(jemalloc)}, check=True)
        assert out.stdout.split() == ["None"], out.stdout


def test_sweep_allocator_times_each_state_against_eager_in_it_and_eager_under_default(tiny_config, tmp_path):
    """sweep.allocator: [tuned] gives the variants under tuned, paired with eager under tuned, and eager under
    default beside them (what the knob buys); cases under default keep the keys they had before the axis."""
    from conftest import run_dict
    from trtbench.config.config import config_from_dict
    from trtbench.config.plan import resolve
    from trtbench.core.case import Case

    tiny_config["variants"] = ["eager", "traced"]
    tiny_config["benchmark"].update(isolation="process", shapes=["opt"])
    tiny_config["sweep"] = {"allocator": ["tuned"]}
    tiny_config["output"] = {"dir": str(tmp_path / "out"), "save_artifacts": False, "cold_start": False}
    groups = resolve(config_from_dict(tiny_config)).groups
    assert [(g.knobs.text, [e.name for e in g.variants]) for g in groups] == [("", ["eager"]),
                                                                            ("allocator=tuned", ["eager", "traced"])]
    outcome = run_dict(tiny_config)
    tuned = "allocator=tuned"
    records = {(r.case.variant, r.case.knobs): r for r in outcome.results}
    assert set(records) == {("eager", ""), ("eager", tuned), ("traced", tuned)}
    assert all(r.timed for r in records.values()), [r.reason for r in records.values()]
    assert records[("traced", tuned)].metrics["isolation"]["allocator"] == "tuned"
    assert outcome.results.baseline(records[("traced", tuned)]) is records[("eager", tuned)]
    default_case = records[("eager", "")].case
    assert "knobs" not in default_case.to_dict() and Case.from_dict(default_case.to_dict()) == default_case
    assert records[("eager", tuned)].case.key != default_case.key
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Deployment knobs" in report and f"| eager | {tuned} |" in report, report
    assert f"| traced | {tuned} |" in report and "| eager | defaults |" in report


@pytest.mark.parametrize("sweep, benchmark, fragment", [
    ({"allocator": ["tcmaloc"]}, {}, "sweep.allocator[0]"),
    ({"allocator": ["tuned", "tuned"]}, {}, "sweep.allocator: has duplicates"),
    ({"allocator": ["default", "tuned"]}, {"isolation": "in_process"}, "sweep.allocator"),
])
def test_bad_allocator_sweeps_name_the_key(tiny_config, write_config, capsys, sweep, benchmark, fragment):
    from trtbench.cli import main

    tiny_config["sweep"] = sweep
    tiny_config["benchmark"] = {**tiny_config["benchmark"], **benchmark}
    assert main(["validate", str(write_config(tiny_config))]) == 2
    err = capsys.readouterr().err
    assert fragment in err, err


def test_binding_gives_each_process_that_runs_at_once_cores_of_its_own(monkeypatch):
    from trtbench.core import knobs as knobs_module

    monkeypatch.setattr(knobs_module.os, "sched_getaffinity", lambda pid: {4, 5, 6, 7})
    bound = Knobs(binding="cores")
    env = bound.env({"OMP_PLACES": "threads", "KMP_AFFINITY": "x"}, threads=2, slot=1)
    assert env[knobs_module.BOUND_CPUS] == "6,7" and env["OMP_PROC_BIND"] == "close" and env["OMP_PLACES"] == "cores"
    assert "KMP_AFFINITY" not in env, "another setting's binding variable is removed"
    assert knobs_module.BOUND_CPUS not in Knobs().env(env), "unbound: no binding variable is left"
    reason = bound.unavailable_reason(Target(threads=2, processes=3))
    assert "need 6 cores" in reason and "may use 4" in reason and "binding: none" in reason
    with pytest.raises(ValueError, match="need 6 cores"):
        bound.env({}, threads=2, slot=2)


def test_intel_openmp_is_preloaded_beside_the_allocator_or_its_install_line_given(monkeypatch, tmp_path):
    from trtbench.core import knobs as knobs_module

    monkeypatch.setattr(knobs_module.sys, "prefix", str(tmp_path))
    monkeypatch.setattr(knobs_module.allocator_state, "LIBRARY_DIRS", (str(tmp_path / "system"),))
    intel = Knobs(openmp="intel", allocator="tuned")
    assert "pip install intel-openmp" in intel.unavailable_reason(Target())
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libiomp5.so").write_bytes(b"")
    assert intel.unavailable_reason(Target()) is None
    env = intel.env({"LD_PRELOAD": "/elsewhere/libjemalloc.so.2"})
    assert env["LD_PRELOAD"] == str(tmp_path / "lib" / "libiomp5.so") and env["MALLOC_MMAP_THRESHOLD_"]
    assert intel.text == "allocator=tuned,openmp=intel" and Knobs().text == ""


@pytest.mark.parametrize("sweep, key", [({"openmp": ["gnu"]}, "sweep.openmp[0]"),
                                        ({"binding": ["none", "cores"]}, "sweep.binding")])
def test_bad_knob_sweeps_name_the_key(tiny_config, write_config, capsys, sweep, key):
    from trtbench.cli import main

    tiny_config["sweep"] = sweep  # tiny_config times in_process: a binding there is refused
    assert main(["validate", str(write_config(tiny_config))]) == 2
    assert key in capsys.readouterr().err


def test_the_knobs_section_compares_settings_on_their_processes():
    """A setting is timed in processes of its own, after the other: the variant's speed under it over its speed
    under the defaults resamples each setting's processes, so process luck (two slow processes of three under the
    defaults) is no recommendation, and a real gain (15%) still is."""
    import dataclasses

    import numpy as np
    from helpers.records import replicated

    from trtbench.report.knobs import knob_markdown
    from trtbench.results.resultset import ResultSet

    def under(record, knobs):
        return dataclasses.replace(record, case=dataclasses.replace(record.case, knobs=knobs))

    steady = np.full(12, 10.0)
    for tuned_ms, advised in ((10.0, False), (10.0 / 1.15, True)):
        results = ResultSet(environments={"e": {"id": "e"}})
        for knobs, ms, offsets in (("", 10.0, [1.0, 1.06, 1.06]), ("allocator=tuned", tuned_ms, [1.0, 1.0, 1.0])):
            results.add(under(replicated("eager", steady * 2, [1.0, 1.0, 1.0]), knobs))
            results.add(under(replicated("compiled", steady * ms / 10.0, offsets, seed=3), knobs))
        section = knob_markdown(results)
        assert ("set allocator=tuned" in section) is advised, section
