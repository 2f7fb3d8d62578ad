"""Synthetic run folders for the history's tests: a run of a tiny model's eager and traced rows at given medians,
with its run id, start time, versions and machine, written as results.json by the real writer of results; and the
committed version-2 history (:data:`V2_DATABASE`) with what the code that wrote it read back from it."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from helpers.paths import ASSETS
from trtbench.core.case import Case
from trtbench.core.env import machine_fingerprint
from trtbench.core.record import Record
from trtbench.core.stats import Interval
from trtbench.history.figures import Figure, Machine, Point, RunRow, SeriesKey
from trtbench.history.series import Series
from trtbench.results.resultset import ResultSet

# Written by the store of schema version 2 (series.precision_name; trtbench at commit 2693fc0) from these folders:
# series_folders(Path("runs"), [5.0] * 4 + [5.75] * 3) and a run 8 with torch 2.15.0 and traced failed, then
# run-005 accepted; history_v2.json holds what that code read back from it (read_back).
V2_DATABASE = ASSETS / "history_v2.sqlite"
V2_READ_BACK = ASSETS / "history_v2.json"
MACHINE_ENV = {"cpu": "AMD EPYC test", "cpu_count": 2, "gpu_name": None, "gpu_memory_gib": None}


def case(variant: str) -> Case:
    return Case(model="python:toy_models:tiny_cnn", variant=variant, precision="fp32", point="opt",
                input_shapes=((2, 3, 16, 16),), threads=2, device="cpu")


def rounds(median: float, rng: np.random.Generator, noise: float = 0.01, count: int = 12) -> list[list[float]]:
    """``count`` rounds of 5 calls about ``median`` (ms), with relative noise ``noise``."""
    return [[float(median * np.exp(noise * rng.standard_normal())) for _ in range(5)] for _ in range(count)]


def write_run(folder: Path, index: int, medians: dict, versions: dict | None = None, seed: int = 0,
              status: dict | None = None) -> Path:
    """Run ``index`` (its id ``run-<index>``, started on day ``index``) into ``folder``: a record per variant at
    ``medians[variant]`` ms, failed where ``status`` says so; its environment has ``versions`` (torch 2.14.1 and
    no library by default)."""
    rng = np.random.default_rng(seed * 1000 + index)
    env_id = f"env-{index}"
    env = {"id": env_id, "python": "3.12.3", "torch": "2.14.1", "libraries": {}, **MACHINE_ENV, **(versions or {})}
    env["machine"] = machine_fingerprint(env, "avx2 fma sse4_2")
    run_id = f"run-{index:03d}"
    results = ResultSet(environments={env_id: env},
                        runs=[{"run_id": run_id, "name": "toy", "label": f"commit-{index}",
                               "models": {"python:toy_models:tiny_cnn": "hash-toy"}, "environment": env_id,
                               "started_at": f"2026-01-{index + 1:02d}T00:00:00+00:00", "status": "complete"}])
    for variant, median in medians.items():
        why = (status or {}).get(variant)
        if why:
            results.add(Record(case=case(variant), environment=env_id, status="failed", reason=why, run_id=run_id))
        else:
            results.add(Record(case=case(variant), environment=env_id, rounds=rounds(median, rng),
                               accuracy={"ok": True, "max_abs_err": 1e-6}, run_id=run_id))
    folder.mkdir(parents=True, exist_ok=True)
    results.save(folder / "results.json")
    return folder


def series_folders(root: Path, traced_ms: list[float], eager_ms: float = 10.0, seed: int = 0) -> list[Path]:
    """A run folder per entry of ``traced_ms`` (eager at ``eager_ms`` in each), runs 1, 2, ..."""
    return [write_run(root / f"run{i}", i, {"eager": eager_ms, "traced": ms}, seed=seed)
            for i, ms in enumerate(traced_ms, start=1)]


def read_back(store) -> dict:
    """Everything ``store`` reads (its runs, series and points) as plain data, as :data:`V2_READ_BACK` holds it: each
    point as its run's id, its series' id, its status, its value (``{"value", "low", "high"}``) and its reason."""
    points = [{"run_id": p.run.run_id, "series_id": p.figure.key.series_id, "status": p.figure.status,
               "value": p.figure.value and p.figure.value.to_dict(), "reason": p.figure.reason} for p in store.points()]
    return json.loads(json.dumps({"runs": [asdict(r) for r in store.runs()],
                                  "series": {i: asdict(k) for i, k in store.series().items()}, "points": points}))


def drawn_series(variant: str, values: Sequence[Interval], steps: tuple = (),
                 versions: Callable[[int], dict] = lambda i: {}) -> Series:
    """The median series of model ``m``'s ``variant`` as the history's page draws it: run ``run-<i>``, started on
    day ``10 + i`` with ``versions(i)``, at ``values[i]``; ``steps`` found in it."""
    key = SeriesKey("m", "hash-m", variant, "", "fp32", "opt", 2, "", "cpu", "machine-a", "median")
    machine = Machine("AMD EPYC test", 2, None, None, ("avx2",), "machine-a")
    points = tuple(Point(RunRow(f"run-{i}", f"2026-11-{10 + i:02d}T02:00:00", "toy", "complete", "", "runs",
                                versions(i), machine), Figure(key, "ok", value))
                   for i, value in enumerate(values))
    return Series(key, points, steps)
