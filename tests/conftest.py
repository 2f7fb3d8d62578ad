"""Shared fixtures: tiny configs on real (small) models, run fast on 2 CPU cores."""

from __future__ import annotations

import contextlib
import copy
import gc
import os
import signal
import subprocess
import sys
import time
from typing import Callable, Optional
from pathlib import Path

import pytest
import yaml

ASSETS = Path(__file__).parent / "assets"
REPO = Path(__file__).parent.parent
sys.path.insert(0, str(ASSETS))
# one timing process per variant unless a test asks for more (benchmark.processes): the default 3 would triple
# every pipeline's workers; tests/workers/test_replicates.py runs several. Set here, it reaches the CLI's
# subprocesses too
os.environ["TRTBENCH_PROCESSES"] = "1"
# OpenMP's threads sleep as soon as a parallel region ends, rather than spin-wait for the next: on a busy 2-core
# machine the spinning of torch's second thread cost a tiny model's call about 15 ms of CPU (25x the call), in this
# process, its workers and the CLI's processes alike (they inherit it). Set before torch loads OpenMP; a caller's
# own setting wins
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

TINY_CONFIG = {
    "name": "tiny",
    "model": {"source": "python", "name": "toy_models:tiny_cnn"},
    "inputs": [{"name": "input", "dtype": "float32", "min_shape": [1, 3, 16, 16],
                "opt_shape": [2, 3, 16, 16], "max_shape": [4, 3, 16, 16]}],
    "device": "cpu",
    "precisions": ["fp32"],
    "variants": ["eager", "traced", "scripted"],
    "benchmark": {"mode": "fixed", "warmup": 1, "warmup_s": 0, "iterations": 5, "shapes": ["min", "opt", "max"],
                  "measure_ceiling": False,  # the matmul ceiling takes seconds; its own tests time it
                  # a worker per variant costs seconds; tests/workers/test_isolation.py runs them
                  "isolation": "in_process"},
    "output": {"cold_start": False},  # rows without cold-start metrics; test_artifacts turns them on
}


def run_dict(data: dict, fresh: bool = False, shard=None):
    """Load, resolve and run a config given as plain data (the API path the CLI takes); the RunOutcome."""
    from trtbench.config.config import config_from_dict
    from trtbench.config.plan import resolve
    from trtbench.pipeline.runner import run_config

    return run_config(resolve(config_from_dict(copy.deepcopy(data)), shard), fresh=fresh)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (its children, theirs...), from /proc."""
    kids = [int(child) for task in Path(f"/proc/{pid}/task").glob("*")
            for child in (task / "children").read_text().split()]
    return kids + [grandchild for kid in kids for grandchild in descendants(kid)]


def kill_when(command: list[str], env: dict, ready: Callable[[], bool], what: str, timeout_s: float = 240,
              output: Optional[Path] = None) -> None:
    """Start ``command``, and SIGKILL it and every process below it (the run process under ``trtbench run``'s
    supervisor, its workers) as soon as ``ready()`` (polled); returns once they are all gone, and the lock of the
    run's ``output`` folder is free. Fails if it ends first or ``what`` is not ready within ``timeout_s``."""
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout_s
    try:
        while not ready():
            assert proc.poll() is None, f"the run ended before {what}: {proc.stderr.read().decode()}"
            assert time.monotonic() < deadline, f"no {what} after {timeout_s:g} s"
            time.sleep(0.02)
        below = descendants(proc.pid)
        proc.send_signal(signal.SIGKILL)
        for pid in below:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=60)
        while any(Path(f"/proc/{pid}").exists() and "State:\tZ" not in _status(pid) for pid in below):
            assert time.monotonic() < deadline + 60, f"processes {below} outlived SIGKILL"
            time.sleep(0.02)
        while output is not None and not output_free(output):  # a process started as the kill came holds it longer
            assert time.monotonic() < deadline + 60, f"{output}'s lock still held after the kill"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL


def output_free(output: Path) -> bool:
    """Whether no run holds the output folder ``output`` (trtbench's own lock, tried as a run tries it; a folder
    not made yet is free)."""
    from trtbench.core.errors import UserInputError
    from trtbench.core.outdir import OutputDir

    if not output.exists():
        return True
    try:
        OutputDir(output).acquire().release()
    except UserInputError:
        return False
    return True


def _status(pid: int) -> str:
    """/proc/<pid>/status, or "" once the process is gone."""
    try:
        return Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return ""


def by_point(results) -> dict:
    """{(variant, point label): record} of a ResultSet (or any iterable of records)."""
    return {(r.case.variant, r.case.point): r for r in results}


@contextlib.contextmanager
def without_pytest_current_test():
    """Fixtures and tests run without pytest's ``PYTEST_CURRENT_TEST`` in ``os.environ``.

    pytest rewrites that variable at every phase of every test, and trtbench starts its fresh-process
    verify worker anew whenever ``os.environ`` differs from the one it was started with: a torch
    import (seconds) for every test that saves an artifact. Hidden, the worker is shared as in one
    run; tests that change the environment themselves still get a new one.
    """
    value = os.environ.pop("PYTEST_CURRENT_TEST", None)
    try:
        yield
    finally:
        if value is not None:
            os.environ["PYTEST_CURRENT_TEST"] = value


# The files that cost the most (seconds of one `-n 2` run), handed out first: `make test` gives each test file to
# one of two processes as they free up (`--dist loadfile`, in collection order: `--no-loadscope-reorder`), so a
# long file handed out last would keep one process busy while the other has finished. Only the order changes
HEAVY_FIRST = (
    "scenarios/generate/test_generate_run.py", "quantize/test_int8_pt2e.py", "decoders/test_decoder_builds.py",
    "scenarios/serving/test_llm_server_entry.py", "scenarios/serving/test_token_serving.py",
    "variants/test_backends.py", "workers/test_isolation.py", "workers/test_replicates.py", "workers/test_crash.py",
    "pipeline/test_resume.py", "scenarios/serving/test_serving.py", "decoders/test_decoders_genai.py",
)


def pytest_collection_modifyitems(config, items):
    tests = Path(__file__).parent
    missing = [name for name in HEAVY_FIRST if not (tests / name).is_file()]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py HEAVY_FIRST names test files that do not exist: {missing} "
                                f"(rename or drop them there)")
    rank = {str(tests / name): i for i, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(str(item.path), len(rank)))  # stable: the rest keep their order


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    with without_pytest_current_test():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    with without_pytest_current_test():
        return (yield)


@pytest.fixture(scope="session", autouse=True)
def short_busy_probe():
    """A run started in this process reads how busy the machine was over 50 ms instead of 300 ms
    (``cpu_busy_at_start``): every run slept that window, and what it reads only sets the report's busy-machine
    note, which no test reads from a run (tests/pipeline/test_pipeline.py calls the probe with its own windows)."""
    import functools

    import trtbench.core.env as env

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(env, "cpu_busy_fraction", functools.partial(env.cpu_busy_fraction, window_s=0.05))
        yield


@pytest.fixture(autouse=True)
def torch_threads_kept():
    """Each test starts with this process's torch thread count and cuDNN autotuning flag: a decoder loaded here or
    a recipe materialized here (each sets what it deploys with, as in its worker) must not change what later tests
    in this process read."""
    import torch

    threads, cudnn_benchmark = torch.get_num_threads(), torch.backends.cudnn.benchmark
    yield
    torch.set_num_threads(threads)
    torch.backends.cudnn.benchmark = cudnn_benchmark


@pytest.fixture
def one_torch_thread():
    """The test computes on one torch thread (``torch_threads_kept`` restores the count after it).

    For tests that run models in this process and judge only what they compute: on a busy 2-core machine, with
    a neighbour process on the other core, a second intra-op thread mostly spins waiting for it (a ResNet-152's
    forward pass at batch 2 took 10x the CPU on 2 threads as on 1, measured here)."""
    import torch

    torch.set_num_threads(1)
    yield


@pytest.fixture(autouse=True)
def frozen_heap():
    """Move what earlier modules left alive out of the garbage collector's way (``gc.freeze``).

    The timing loop calls ``gc.collect()`` before every shape point, and a collection scans every
    tracked object: in this long-lived process (torch, its compilers, the runtimes, every earlier
    test's leftovers) that took about 0.3 s a point, and the automatic collections cost as much.
    Frozen objects are still freed by reference counting; only cycles among them stay.
    """
    gc.collect()
    gc.freeze()
    yield


@pytest.fixture
def tiny_config() -> dict:
    """A fresh copy of the tiny config as plain data (edit it, then write it)."""
    return copy.deepcopy(TINY_CONFIG)


@pytest.fixture
def write_config(tmp_path):
    """Write a config dict (or raw text) to a YAML file; output.dir defaults under tmp_path."""

    def write(data, name: str = "config.yaml") -> Path:
        path = tmp_path / name
        if isinstance(data, str):
            path.write_text(data)
        else:
            data = copy.deepcopy(data)
            data.setdefault("output", {}).setdefault("dir", str(tmp_path / "out"))
            path.write_text(yaml.safe_dump(data))
        return path

    return write


@pytest.fixture
def subprocess_env() -> dict:
    """Environment for running ``python -m trtbench`` with the test models importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(ASSETS), env.get("PYTHONPATH", "")])
    return env
