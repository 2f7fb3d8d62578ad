"""Operator-level profile: ``torch.profiler`` key averages and a Chrome trace of a few runs."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function

from trtbench.core.fsutil import atomic_write
from trtbench.measure.timing import synchronize


def profile_operators(fn: Callable[[], object], device: torch.device, runs: int, top_k: int,
                      trace_path: Path | None = None, record_shapes: bool = False) -> dict:
    """The top-``top_k`` operators by self time per run over ``runs`` calls of ``fn``; a Chrome trace if asked."""
    cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with torch.no_grad():
        fn()
        synchronize(device)
        with profile(activities=activities, record_shapes=record_shapes) as prof:
            for i in range(runs):
                with record_function(f"run_{i}"):
                    fn()
                synchronize(device)
    if trace_path is not None:
        atomic_write(Path(trace_path), lambda tmp: prof.export_chrome_trace(str(tmp)))

    events = [e for e in prof.key_averages() if not e.is_user_annotation]
    sort_key = "self_device_time_total" if cuda else "self_cpu_time_total"
    # CPU operators also carry the device time of the kernels they launched: count only the kernels once
    self_total_us = sum(getattr(e, sort_key) for e in events if not cuda or e.device_type == DeviceType.CUDA)
    rows = []
    for event in sorted(events, key=lambda e: getattr(e, sort_key), reverse=True)[:top_k]:
        row = {
            "name": event.key,
            "on": event.device_type.name.lower(),
            "self_cpu_ms": event.self_cpu_time_total / 1e3 / runs,
            "cpu_total_ms": event.cpu_time_total / 1e3 / runs,
            "calls": event.count / runs,
            "pct": 100.0 * getattr(event, sort_key) / self_total_us if self_total_us else 0.0,
        }
        if cuda:
            row["self_device_ms"] = event.self_device_time_total / 1e3 / runs
            row["device_total_ms"] = event.device_time_total / 1e3 / runs
        rows.append(row)
    return {
        "runs": runs,
        "sorted_by": "self_device_time" if cuda else "self_cpu_time",
        "self_total_ms": self_total_us / 1e3 / runs,
        "operators": len(events),
        "top": rows,
        "trace": str(trace_path) if trace_path is not None else None,
    }
