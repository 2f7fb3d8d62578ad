"""Per-layer timing: an FX interpreter that times every node of the graph (docs/profiling.md)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
import torch.fx

from trtbench.profiling.fxgraph import compute_nodes, describe_node, fx_graph_module
from trtbench.core.stats import summarize
from trtbench.measure.timing import synchronize


class NodeTimer(torch.fx.Interpreter):
    """Runs a GraphModule node by node, recording each compute node's time and each run's total."""

    def __init__(self, gm: torch.fx.GraphModule, device: torch.device):
        super().__init__(gm)
        self.device = device
        self.nodes = compute_nodes(gm)
        self.node_ns: dict[torch.fx.Node, list[int]] = {n: [] for n in self.nodes}
        self.run_ns: list[int] = []

    def reset(self) -> None:
        """Forget the samples recorded so far (after warm-up)."""
        for samples in self.node_ns.values():
            samples.clear()
        self.run_ns.clear()

    def run(self, *args, **kwargs) -> Any:
        synchronize(self.device)
        start = time.perf_counter_ns()
        out = super().run(*args, **kwargs)
        synchronize(self.device)
        self.run_ns.append(time.perf_counter_ns() - start)
        return out

    def run_node(self, n: torch.fx.Node) -> Any:
        samples = self.node_ns.get(n)
        if samples is None:
            return super().run_node(n)
        start = time.perf_counter_ns()
        out = super().run_node(n)
        synchronize(self.device)
        samples.append(time.perf_counter_ns() - start)
        return out


def profile_layers(module: Any, inputs: tuple, device: torch.device, runs: int, warmup: int) -> dict:
    """Time every node of ``module``'s FX graph over ``runs`` passes, with totals and whole-model times."""
    gm = fx_graph_module(module)
    timer = NodeTimer(gm, device)
    model_ns: list[int] = []
    with torch.no_grad():
        for _ in range(warmup):
            timer.run(*inputs)
            module(*inputs)
        timer.reset()
        synchronize(device)
        for _ in range(runs):
            timer.run(*inputs)
            start = time.perf_counter_ns()
            module(*inputs)
            synchronize(device)
            model_ns.append(time.perf_counter_ns() - start)

    interpreted = summarize(np.asarray(timer.run_ns) / 1e6)
    nodes = []
    for index, node in enumerate(timer.nodes):
        samples_ms = np.asarray(timer.node_ns[node]) / 1e6
        mean_ms = float(samples_ms.mean())
        nodes.append({"index": index, **describe_node(gm, node), "mean_ms": mean_ms,
                      "median_ms": float(np.median(samples_ms)), "pct": 100.0 * mean_ms / interpreted.mean})
    nodes_sum = sum(row["mean_ms"] for row in nodes)
    return {
        "runs": runs,
        "warmup": warmup,
        "synchronized_per_node": device.type == "cuda",
        "model_ms": summarize(np.asarray(model_ns) / 1e6).to_dict(),
        "interpreted_ms": interpreted.to_dict(),
        "nodes_sum_ms": nodes_sum,
        "overhead_ms": interpreted.mean - nodes_sum,
        "nodes": nodes,
        "by_type": aggregate_by_type(nodes, interpreted.mean),
    }


def aggregate_by_type(nodes: list[dict], whole_ms: float) -> list[dict]:
    """Sum node times per layer type, largest first, with each type's share of ``whole_ms``."""
    times: dict[str, list[float]] = {}
    for row in nodes:
        times.setdefault(row["type"], []).append(row["mean_ms"])
    rows = [{"type": kind, "count": len(ms), "total_ms": sum(ms), "pct": 100.0 * sum(ms) / whole_ms}
            for kind, ms in times.items()]
    return sorted(rows, key=lambda r: r["total_ms"], reverse=True)
