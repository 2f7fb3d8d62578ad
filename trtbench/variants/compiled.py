"""``torch.compile``, its first call made by the build at the opt shape; nothing deployable at float precisions."""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch

from trtbench.core.errors import UserInputError
from trtbench.core.fsutil import save_through_memory
from trtbench.core.precision import is_quantized
from trtbench.core.schema import join, require_choice
from trtbench.core.target import Target
from trtbench.variants import Artifact, Built, BuildContext, Variant, cuda_graphs, register

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def dynamo_counts() -> dict:
    """Dynamo's running totals this process: graphs compiled, graph breaks, Inductor FX-graph cache hits/misses."""
    from torch._dynamo.utils import counters

    return {"graphs": counters["stats"]["unique_graphs"], "graph_breaks": sum(counters["graph_break"].values()),
            "fxgraph_cache_hits": counters["inductor"]["fxgraph_cache_hit"],
            "fxgraph_cache_misses": counters["inductor"]["fxgraph_cache_miss"]}


def recompile_isolation() -> dict:
    """``torch.compile``'s ``isolate_recompiles=True`` where this torch takes it, else nothing."""
    return {"isolate_recompiles": True} if "isolate_recompiles" in inspect.signature(torch.compile).parameters else {}


@dataclass
class CompileOptions:
    """``torch.compile`` arguments; ``cuda_graphs: true`` replays the compiled forward as one CUDA graph."""

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
    description = ("torch.compile (first call compiles, at opt; recompilations counted); no deployable file: see aoti "
                   "(int8: PT2E via torchao, compiled with freezing; saves the quantized graph as .pt2)")
    Options = CompileOptions
    quantizes = True  # INT8: torchao's PT2E x86 quantizer, then Inductor's int8 kernels (trtbench.quantize.pt2e)
    int8_reload_rtol = 0.02  # its int8 file is compiled again where it is loaded (docs/int8.md)

    def unavailable_reason(self, target: Target) -> str | None:
        from trtbench.variants.pt2e_build import pt2e_unavailable

        return pt2e_unavailable(target)

    def build(self, model, ctx: BuildContext) -> Built:
        options = self.options_of(ctx)
        if is_quantized(ctx.precision):
            return self._build_int8(model, ctx, options)
        if options.cuda_graphs:
            cuda_graphs.check_can_capture(ctx)
        compiled = torch.compile(model, backend=options.backend,
                                 mode=None if options.mode == "default" else options.mode,
                                 dynamic=options.dynamic, fullgraph=options.fullgraph, **recompile_isolation())
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

    def _build_int8(self, model, ctx: BuildContext, options: CompileOptions) -> Built:
        """The PT2E-quantized graph, exported once, compiled by Inductor with freezing; one graph per shape."""
        from trtbench.quantize.fallback import judged
        from trtbench.quantize.pt2e import CompiledPT2E
        from trtbench.variants.exported import export_examples
        from trtbench.variants.pt2e_build import quantize_model

        if options.backend != "inductor" or options.cuda_graphs or options.dynamic:
            raise ValueError("compiled at int8 runs Inductor's int8 kernels with static shapes: leave backend, "
                             "dynamic and cuda_graphs at their defaults")
        int8 = quantize_model(model, ctx)
        program = torch.export.export(int8.graph, export_examples(ctx.input_specs, ctx.example_inputs),
                                      dynamic_shapes=int8.dynamic_shapes)
        compiled = CompiledPT2E(program.module(), mode=None if options.mode == "default" else options.mode)
        start = time.perf_counter()
        with torch.inference_mode():
            compiled(*ctx.example_inputs)
        info = {"backend": "inductor", "mode": options.mode, "dynamic": False,
                "first_call_s": time.perf_counter() - start,
                **judged(compiled, int8.quantized, ctx.int8, "the compiled int8 graph")}
        return Built(compiled, info, state={"graphs_after_first_call": dynamo_counts()["graphs"], "int8": int8,
                                            "program": program})

    def save(self, built: Built, directory: Path, stem: str) -> list[Artifact]:
        """At int8 the quantized program, with the ``torch.compile`` settings of its int8 kernels; else nothing."""
        int8 = built.state.get("int8")
        if int8 is None:
            return []
        from trtbench.variants.pt2e_build import DECOMPOSED_OPS_MODULE, INDUCTOR_PASSES_MODULE

        path = directory / f"{stem}.pt2"
        save_through_memory(path, lambda fh: torch.export.save(built.state["program"], fh))
        return [Artifact(path=path, loader="torch.export.load", outputs=int8.outputs,
                         imports=[DECOMPOSED_OPS_MODULE, INDUCTOR_PASSES_MODULE],
                         settings={"compile": built.module.settings})]

    def load(self, artifact: Artifact, device: torch.device):
        import importlib

        from trtbench.quantize.pt2e import CompiledPT2E

        for module in artifact.imports:
            importlib.import_module(module)
        return CompiledPT2E(torch.export.load(str(artifact.path)).module(), mode=artifact.settings["compile"]["mode"])

    def run_info(self, built: Built) -> dict:
        return {"recompilations": dynamo_counts()["graphs"] - built.state["graphs_after_first_call"]}
