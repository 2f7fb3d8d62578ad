"""The served sleeper: a toy model that sleeps CALL_S a call, served by worker processes under LoadGen (its M/D/c
queue: helpers/queue_model.py), and a LoadGen summary of an INVALID run."""

from __future__ import annotations

from toy_runtimes import SleepsPerCall
from trtbench.scenarios.serving.vision.config import ServingConfig
from trtbench.scenarios.serving.vision.run import ServingWorkers, run_serving

CALL_S = 0.0102


BOUND_MS = 40.0


def serve_sleeper(out_dir, settings: ServingConfig, progress=None):
    """The sleeper (CALL_S a call) served under ``settings``; ``progress`` gets a line before each LoadGen run."""
    hosts = ServingWorkers(lambda threads: SleepsPerCall(CALL_S), default_threads=2, start_timeout_s=120.0)
    return run_serving(hosts, settings, out_dir, "toy", progress)


SUMMARY_INVALID = """================================================
MLPerf Results Summary
================================================
SUT name : PySUT
Scenario : Server
Mode     : PerformanceOnly
Completed samples per second    : 36.56
Result is : INVALID
  Performance constraints satisfied : Yes
  Min duration satisfied : Yes
  Min queries satisfied : Yes
  Early stopping satisfied: NO
================================================
Additional Stats
================================================
Scheduled samples per second : 36.74
Min latency (ns)                : 10423661
Max latency (ns)                : 32809624
Mean latency (ns)               : 13495216
50.00 percentile latency (ns)   : 10574078
90.00 percentile latency (ns)   : 20943647
99.00 percentile latency (ns)   : 32809624
99.90 percentile latency (ns)   : 32809624
"""
