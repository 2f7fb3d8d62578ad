"""benchmark.allocator: every worker process starts in a stated allocator state, and its rows say which."""

from __future__ import annotations

import statistics

import pytest

from toy_runtimes import MallocsPerCall
from trtbench.core import allocator
from trtbench.core.allocator import TUNED, library_path, process_env, unavailable_reason
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
    assert unavailable_reason("jemalloc", [str(tmp_path)]) is None and unavailable_reason("tuned") is None
    reason = unavailable_reason("tcmalloc", [str(tmp_path)])
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


def faults_per_call(state: str, tmp_path) -> tuple[float, dict]:
    """The toy's median page faults per call, and its facts, in a worker started in ``state``."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (worker,) = spawn_workers(1, 120.0, tmp_path, state)
    try:
        ready, errors = start_workers({"mallocs": MallocsPerCall(megabytes=48)}, [worker])
        assert not errors, errors
        measured = measure_interleaved({"mallocs": WorkerTimer(ready["mallocs"], "p")}, torch.device("cpu"), FIXED)
        return statistics.median(measured["mallocs"].faults_per_call), ready["mallocs"].facts
    finally:
        worker.close()


def test_the_state_reaches_the_worker_and_decides_whether_a_call_faults_its_pages_in(tmp_path):
    """48 MB is above glibc's largest dynamic mmap threshold (32 MB): with the default state each call maps
    and faults in its buffer afresh; with the tuned thresholds it stays on the heap."""
    pages = (48 << 20) // 4096
    default, _ = faults_per_call("default", tmp_path / "default")
    tuned, _ = faults_per_call("tuned", tmp_path / "tuned")
    assert default >= 0.9 * pages, default
    assert tuned < 0.05 * pages, tuned


@pytest.mark.parametrize("name", ["jemalloc", "tcmalloc"])
def test_a_preloaded_allocator_runs_in_the_worker_where_installed(name, tmp_path):
    if library_path(name) is None:
        pytest.skip(unavailable_reason(name))
    faults, facts = faults_per_call(name, tmp_path)
    assert facts["preloaded"] == [name], facts  # what it does with a freed 48 MB block is its own policy
    assert faults >= 0
