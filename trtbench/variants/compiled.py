"""``torch.compile``: TorchDynamo captures the model and a backend (Inductor by default) compiles it.

Compilation is lazy: ``torch.compile`` returns at once and the first call compiles. The build
makes that first call at the opt shape, under ``torch.inference_mode`` like the timed runs (a
different grad mode would fail dynamo's guards and recompile), and reports its time as
``first_call_s``. Each shape the benchmark then visits may recompile; ``run_info`` reports how
many graphs dynamo compiled after the first call (``torch._dynamo.utils.counters``). Each build
is its own recompile region (``isolate_recompiles``), so an fp16 build neither reuses nor
counts against the fp32 one. Nothing deployable comes out of it: the ``aoti`` variant compiles
the exported graph ahead of time into a ``.pt2`` file.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

import torch

from trtbench.errors import UserInputError
from trtbench.schema import join, require_choice
from trtbench.variants import Built, BuildContext, Variant, cuda_graphs, register

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def dynamo_counts() -> dict:
    """Dynamo's running totals this process: graphs compiled, graph breaks, Inductor FX-graph cache hits/misses."""
    from torch._dynamo.utils import counters

    return {"graphs": counters["stats"]["unique_graphs"], "graph_breaks": sum(counters["graph_break"].values()),
            "fxgraph_cache_hits": counters["inductor"]["fxgraph_cache_hit"],
            "fxgraph_cache_misses": counters["inductor"]["fxgraph_cache_miss"]}


@dataclass
class CompileOptions:
    """``torch.compile`` arguments. ``dynamic: null`` lets dynamo mark a dim dynamic once it changes
    (the first new shape recompiles); ``true`` compiles dynamic dims from the start; ``false``
    compiles each shape separately. ``cuda_graphs: true`` replays the compiled forward as one
    CUDA graph (CUDA, static shapes; ``mode: reduce-overhead`` does this inside Inductor)."""

    backend: str = "inductor"
    mode: str = "default"
    dynamic: Optional[bool] = None
    fullgraph: bool = False
    cuda_graphs: bool = False

    def validate(self, path: str) -> None:
        import torch._dynamo

        require_choice(self.backend, torch._dynamo.list_backends(exclude_tags=()), join(path, "backend"))
        require_choice(self.mode, MODES, join(path, "mode"))
        if self.mode != "default" and self.backend != "inductor":
            raise UserInputError(join(path, "mode"), f"'{self.mode}' is an Inductor mode and backend is "
                                 f"'{self.backend}'", "use backend: inductor, or mode: default")
        if self.cuda_graphs and self.mode in ("reduce-overhead", "max-autotune"):
            raise UserInputError(join(path, "cuda_graphs"), f"mode '{self.mode}' already replays CUDA graphs",
                                 "drop cuda_graphs: true, or use mode: default")


@register
class Compiled(Variant):
    name = "compiled"
    description = "torch.compile (first call compiles, at opt; recompilations counted); no deployable file: see aoti"
    Options = CompileOptions

    def build(self, model, ctx: BuildContext) -> Built:
        options = ctx.options or CompileOptions()
        if options.cuda_graphs:
            cuda_graphs.check_can_capture(ctx)
        compiled = torch.compile(model, backend=options.backend, mode=None if options.mode == "default" else options.mode,
                                 dynamic=options.dynamic, fullgraph=options.fullgraph, isolate_recompiles=True)
        before = dynamo_counts()
        start = time.perf_counter()
        with torch.inference_mode():
            compiled(*ctx.example_inputs)
        if ctx.device.type == "cuda":
            torch.cuda.synchronize(ctx.device)
        first_call_s = time.perf_counter() - start
        after = dynamo_counts()
        info = {"backend": options.backend, "mode": options.mode, "dynamic": options.dynamic,
                "fullgraph": options.fullgraph, "first_call_s": first_call_s,
                **{key: after[key] - before[key] for key in after},
                "artifact": "none: torch.compile caches compiled code in this process only; "
                            "the aoti variant compiles the exported graph into a deployable .pt2"}
        module = compiled
        if options.cuda_graphs:
            with torch.inference_mode():
                module = cuda_graphs.GraphReplay(compiled, ctx.example_inputs)
            info["cuda_graphs"] = True
        return Built(module, info, state={"graphs_after_first_call": after["graphs"]})

    def prepare(self, built: Built, inputs: tuple):
        return cuda_graphs.prepare(built, inputs)

    def run(self, built: Built, prepared):
        return cuda_graphs.run(built, prepared)

    def run_info(self, built: Built) -> dict:
        return {"recompilations": dynamo_counts()["graphs"] - built.state["graphs_after_first_call"]}
