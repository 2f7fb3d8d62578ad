"""Launch-bound rows: on CUDA, the host time until a call returns (before synchronising) against its
synchronised time, kept per block by its tracker around ``time_calls``'s calls and named in the report's notes at
80% or more.

The CUDA path cannot run on this machine (no GPU): ``time_calls`` runs its CUDA branch against a fake of the
two ``torch.cuda`` calls it makes, ``Event`` (``record()``, ``elapsed_time(end)`` in ms, as
``torch/cuda/streams.py`` defines them) and ``synchronize(device)``, whose wait stands for the GPU finishing
the queued kernels. A call that spends its time on the host (Python, launches) returns late; one that only
queues work returns at once and its time is in the synchronise.
"""

from __future__ import annotations

import time

import pytest
import torch

from trtbench.core.case import Case
from trtbench.core.record import Record
from trtbench.measure.timing import time_calls
from trtbench.measure.trackers import block_trackers
from trtbench.measure.trackers.launch import launch_metrics
from trtbench.report.tables import notes
from trtbench.results.resultset import ResultSet


class FakeEvent:
    """A fake of ``torch.cuda.Event``: the host time at ``record()``; ``elapsed_time`` in ms, as the real one."""

    def __init__(self, enable_timing: bool = False):
        if not enable_timing:
            raise RuntimeError("elapsed_time needs enable_timing=True")  # as CUDA refuses it
        self.at = None

    def record(self, stream=None):
        self.at = time.perf_counter()

    def elapsed_time(self, end: "FakeEvent") -> float:
        return (end.at - self.at) * 1e3


@pytest.fixture
def fake_gpu(monkeypatch):
    """The queued GPU work of the next synchronise, in seconds (set by each call)."""
    queued = [0.0]

    def synchronize(device=None):
        time.sleep(queued[0])
        queued[0] = 0.0

    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", synchronize)
    return queued


def test_time_calls_keeps_the_host_time_until_a_cuda_call_returns(fake_gpu):
    def host_bound():  # 20 ms of launches, nothing left for the GPU
        time.sleep(0.02)

    def gpu_bound():  # queues 20 ms of kernels and returns at once
        fake_gpu[0] = 0.02

    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    host = time_calls(host_bound, cuda, 5, trackers=block_trackers(cuda, None))
    gpu = time_calls(gpu_bound, cuda, 5, trackers=block_trackers(cuda, None))
    assert host.tracked["launch"] >= 20 and len(host.device_ms) == 5
    # sleeps are lower bounds: a loaded machine only lengthens them
    assert gpu.tracked["launch"] < 10 <= min(gpu.host_ms)
    assert launch_metrics([host.tracked["launch"]], host.host_ms)["share"] >= 0.8
    assert launch_metrics([gpu.tracked["launch"]], gpu.host_ms)["share"] < 0.5
    # a CPU call returns when done: no launch tracker there, and the page faults' tracker still reads
    assert set(time_calls(host_bound, cpu, 2, trackers=block_trackers(cpu, None)).tracked) == {"faults"}


def test_the_notes_name_launch_bound_rows_with_the_way_out():
    results = ResultSet()
    for variant, returned in (("eager", 3.9), ("compiled", 0.4)):
        case = Case("m", variant, "fp16", "b2", ((2, 3),), 1, "cuda")
        results.add(Record(case, "env", rounds=[[4.0, 4.1, 3.9]],
                           metrics={"launch": launch_metrics([returned], [4.0, 4.1, 3.9])}))
    (line,) = [n for n in notes(results, []) if n.startswith("launch-bound")]
    assert "eager fp16 b2 (98%)" in line and "compiled fp16" not in line
    assert "cuda_graphs: true" in line and "batch" in line
