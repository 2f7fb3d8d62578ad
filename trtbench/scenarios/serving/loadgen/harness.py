"""One LoadGen Server run, for both kinds of serving: its settings, the SUT and sample library, the test, and the
logs kept (:data:`KEPT_LOGS`); a kind brings its session and the load (:class:`ServerLoad`)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Protocol

from trtbench.scenarios.serving.loadgen.settings import LOADGEN_MODULE
from trtbench.scenarios.serving.loadgen.summary import LoadGenSummary, read_summary

KEPT_LOGS = ("mlperf_log_summary.txt", "mlperf_log_detail.txt")


@dataclass(frozen=True)
class Query:
    """One query LoadGen issued: its id, its sample's index in the library (vision serving's library holds one), its
    issue time (``perf_counter`` s) and its place in issue order (from 0; counted by vision serving)."""

    id: int
    sample: int
    issued_s: float
    index: int = 0


@dataclass(frozen=True)
class LatencyBound:
    """What LoadGen holds ``percentile`` of queries to: ``latency_ms``, or ``ttft_ms`` and ``tpot_ms``."""

    percentile: float
    latency_ms: Optional[float] = None
    ttft_ms: Optional[float] = None
    tpot_ms: Optional[float] = None


@dataclass(frozen=True)
class ServerLoad:
    """One run's load: Poisson arrivals at ``qps`` from ``seed``, at least ``min_duration_s`` and ``min_queries``
    long (LoadGen's minimums), held to ``bound``."""

    qps: float
    seed: int
    min_duration_s: float
    min_queries: int
    bound: LatencyBound


class Session(Protocol):
    """An SUT's side of one run: LoadGen's callbacks, and ``close()`` once the test is over."""

    def issue(self, samples) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


def loadgen_settings(lg, load: ServerLoad):
    """LoadGen's ``TestSettings`` for a PerformanceOnly Server run offering ``load``."""
    test = lg.TestSettings()
    test.scenario = lg.TestScenario.Server
    test.mode = lg.TestMode.PerformanceOnly
    test.server_target_qps = load.qps
    bound = load.bound
    if bound.ttft_ms is not None:
        test.use_token_latencies = True
        test.ttft_latency, test.tpot_latency = int(bound.ttft_ms * 1e6), int(bound.tpot_ms * 1e6)
    else:
        test.server_target_latency_ns = int(bound.latency_ms * 1e6)
    test.server_target_latency_percentile = bound.percentile
    test.min_duration_ms = int(load.min_duration_s * 1e3)
    test.min_query_count = load.min_queries
    test.schedule_rng_seed = load.seed
    return test


def log_settings(lg, folder: Path):
    """LoadGen's ``LogSettings``: its logs in ``folder``, nothing on stdout, no trace."""
    logs = lg.LogSettings()
    logs.log_output.outdir = str(folder)
    logs.log_output.copy_summary_to_stdout = False
    logs.enable_trace = False
    return logs


def run_loadgen(open_session: Callable[[Any], Session], samples: int, load: ServerLoad,
                folder: Path) -> tuple[Session, LoadGenSummary]:
    """One LoadGen Server run offering ``load`` to ``open_session(lg)``: the session, and LoadGen's summary."""
    lg = importlib.import_module(LOADGEN_MODULE)
    folder.mkdir(parents=True, exist_ok=True)
    session = open_session(lg)
    sut = lg.ConstructSUT(session.issue, session.flush)
    qsl = lg.ConstructQSL(samples, samples, lambda indices: None, lambda indices: None)
    try:
        lg.StartTestWithLogSettings(sut, qsl, loadgen_settings(lg, load), log_settings(lg, folder))
    finally:
        session.close()
        lg.DestroyQSL(qsl)
        lg.DestroySUT(sut)
    for path in folder.iterdir():
        if path.is_file() and path.name not in KEPT_LOGS:
            path.unlink()
    return session, read_summary(folder)
