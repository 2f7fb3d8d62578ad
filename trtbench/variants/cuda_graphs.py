"""CUDA graph capture for the ``cuda_graphs: true`` option of ``eager`` and ``compiled`` (docs/backends.md)."""

from __future__ import annotations

import torch

from trtbench.variants import BuildContext

WARMUP_CALLS = 3


def check_can_capture(ctx: BuildContext) -> None:
    """Raise ValueError when the run cannot use CUDA graphs: no CUDA device, or dynamic input shapes."""
    if ctx.device.type != "cuda":
        raise ValueError(f"cuda_graphs: true needs a CUDA device and this run uses '{ctx.device}'; "
                         f"remove the option or run with device: cuda")
    dynamic = [spec.name for spec in ctx.input_specs if spec.is_dynamic]
    if dynamic:
        raise ValueError(f"cuda_graphs: true needs static input shapes, and {', '.join(dynamic)} has a min..max "
                         f"range; give each input one 'shape' (a graph replays the shapes it was captured at)")


class GraphReplay:
    """A callable captured as a CUDA graph at the example inputs' shapes."""

    def __init__(self, fn, example_inputs: tuple):
        self.static_inputs = tuple(t.clone() for t in example_inputs)
        self.graph, self.static_output = capture(fn, self.static_inputs)

    def __call__(self, *inputs):
        """One request, both timed: its inputs copied into the captured buffers, then one replay; the captured
        output tensors (valid until the next replay)."""
        if [t.shape for t in inputs] != [t.shape for t in self.static_inputs]:
            raise ValueError(f"the CUDA graph was captured at {[list(t.shape) for t in self.static_inputs]}, "
                             f"got {[list(t.shape) for t in inputs]}")
        for buffer, tensor in zip(self.static_inputs, inputs):
            buffer.copy_(tensor)
        self.graph.replay()
        return self.static_output


def capture(fn, static_inputs: tuple) -> tuple:
    """``fn`` on ``static_inputs`` captured as a CUDA graph: (the ``torch.cuda.CUDAGraph``, its output tensors)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(WARMUP_CALLS):
            fn(*static_inputs)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_output = fn(*static_inputs)
    torch.cuda.synchronize()
    return graph, static_output
