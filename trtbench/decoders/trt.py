"""``trt``: Torch-TensorRT with a static KV cache (more: docs/tensorrt.md, "Module notes")."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import torch

from trtbench.core.env import torch_thread_facts
from trtbench.core.target import Target
from trtbench.decoders.base import Decoder, register_decoder
from trtbench.decoders.static_cache import cache_inputs, export_with_static_cache
from trtbench.decoders.torch_model import DTYPES, eos_ids, greedy_loop
from trtbench.variants.trt_common import (describe_settings, import_torch_tensorrt, trt_device,
                                          version_of, why_no_torch_tensorrt)

INSTALL = "pip install torch-tensorrt==2.14.0 (a CUDA build of torch 2.14 and TensorRT 11.1 come with it)"
NAME = "trt"


def compile_settings(trt, precision: str, device: str) -> dict:
    """``run_llm.py`` ``compile_torchtrt``'s keywords to ``torch_tensorrt.dynamo.compile``, as 2.14.0 names them."""
    return {"device": trt_device(trt, torch.device(device)), "use_fp32_acc": precision == "fp16",
            "disable_tf32": True, "offload_module_to_cpu": True, "min_block_size": 1}


def engine_inputs(trt, program: torch.export.ExportedProgram, batch: int, length: int) -> list:
    """A ``torch_tensorrt.Input`` per input: ids and positions of 1 to ``length`` tokens, the caches static."""
    steps = [trt.Input(min_shape=(rows, 1), opt_shape=(rows, 1), max_shape=(rows, length), dtype=torch.int64)
             for rows in (batch, 1)]  # input_ids (batch, seq), position_ids (1, seq)
    return steps + [trt.Input(shape=tuple(c.shape), dtype=c.dtype) for c in cache_inputs(program)]


def load_causal_lm(source: Path, precision: str, device: str) -> torch.nn.Module:
    """The folder's causal LM as ``run_llm.py`` ``get_model`` loads it: SDPA attention, ``use_cache`` off."""
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging

    logging.disable_progress_bar()
    return AutoModelForCausalLM.from_pretrained(source, dtype=DTYPES[precision], attn_implementation="sdpa",
                                                use_cache=False, local_files_only=True).to(device).eval()


def build_program(trt, model: torch.nn.Module, shape: tuple[int, int], settings: dict, path: Path) -> None:
    """The engine for ``shape`` (batch, cache length) compiled from ``model`` and saved to ``path``."""
    batch, length = shape
    program = export_with_static_cache(model, batch, length)
    device = next(model.parameters()).device
    compiled = trt.dynamo.compile(program, inputs=engine_inputs(trt, program, batch, length), **settings)
    model.to(device)  # offload_module_to_cpu moves the program's weights, which it shares with the model, off the GPU
    examples = [torch.zeros((batch, 2), dtype=torch.int64, device=device),
                torch.arange(2, device=device).unsqueeze(0), *cache_inputs(program)]
    seq = torch.export.Dim("seq_len", min=1, max=length)
    trt.save(compiled, str(path), output_format="exported_program", arg_inputs=examples,
             dynamic_shapes=({1: seq}, {1: seq}, *[None] * (len(examples) - 2)))


def build_artifact(trt, model: torch.nn.Module, precision: str, out_dir: Path,
                   shapes: tuple[tuple[int, int], ...], device: str) -> Path:
    """An engine per (batch, cache length) of ``shapes``, saved under ``out_dir``, and the artifact listing them."""
    settings = compile_settings(trt, precision, device)
    out_dir.mkdir(parents=True, exist_ok=True)
    programs, started = [], time.perf_counter()
    for batch, length in sorted(set(shapes)):
        path = out_dir / f"{NAME}-{precision}-b{batch}-l{length}.pt2"
        build_program(trt, model, (batch, length), settings, path)
        programs.append({"batch": batch, "length": length, "file": path.name})
    artifact = out_dir / f"{NAME}-{precision}.json"
    artifact.write_text(json.dumps({
        "precision": precision, "programs": programs, "eos": list(eos_ids(model)), "torch_tensorrt": version_of(trt),
        "compile_settings": describe_settings(settings), "compile_s": round(time.perf_counter() - started, 3)}))
    return artifact


class TensorRTSession:
    """The saved engines by (batch, cache length), and the caches each last returned."""

    def __init__(self, programs: dict, spec: dict, device: str, facts: dict):
        self.device = torch.device(device)
        self.caches = {shape: cache_inputs(program) for shape, program in programs.items()}
        self.modules = {shape: program.module() for shape, program in programs.items()}
        self.eos = tuple(spec["eos"])
        self.facts = facts

    def _steps(self, batch: int, length: int) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
        """A call of the engine for (batch, length) on ids and positions: its logits; it keeps the caches returned."""
        if (batch, length) not in self.modules:
            raise ValueError(f"trt was built for (batch, cache length) {sorted(self.modules)}, "
                             f"not ({batch}, {length}): its engines have a static cache, built for the shapes "
                             "the run's points need")
        module = self.modules[batch, length]

        def step(ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
            logits, *caches = module(ids.to(self.device), positions.to(self.device), *self.caches[batch, length])
            self.caches[batch, length] = caches
            return logits

        return step

    def generate(self, prompt: np.ndarray, new_tokens: int, stamp: Callable[[], None]) -> np.ndarray:
        batch, prompt_len = prompt.shape
        step = self._steps(batch, prompt_len + new_tokens)
        return greedy_loop(lambda ids, positions: step(ids, positions.unsqueeze(0))[:, -1], prompt, new_tokens, stamp,
                           self.eos)

    def logits(self, ids: np.ndarray) -> np.ndarray:
        """Teacher-forced: the prefill of the whole sequence in the engine of its length."""
        step = self._steps(1, ids.shape[1])
        with torch.inference_mode():
            return step(torch.from_numpy(ids), torch.arange(ids.shape[1]).unsqueeze(0)).float().cpu().numpy()

    def close(self) -> None:
        self.modules.clear()
        self.caches.clear()


@register_decoder
class TensorRT(Decoder):
    name = NAME
    precisions = tuple(DTYPES)

    def unavailable_reason(self, target: Target) -> Optional[str]:
        precision, device = target.precision, str(target.device)
        if precision not in DTYPES:
            return (f"trt has no {precision} path (it builds {', '.join(DTYPES)}; weight-only int8/int4: ort_genai, "
                    f"openvino_genai)")
        if torch.device(device).type != "cuda":
            return f"trt needs a CUDA GPU; device is {device}"
        return why_no_torch_tensorrt(target.device, INSTALL)

    def build(self, source: Path, precision: str, out_dir: Path, threads: int,
              shapes: tuple[tuple[int, int], ...], device: str) -> Path:
        trt = import_torch_tensorrt()
        torch.cuda.set_device(torch.device(device))  # what the engines' builder allocates on
        return build_artifact(trt, load_causal_lm(source, precision, device), precision, out_dir, shapes, device)

    def load(self, artifact: Path, device: str, threads: int) -> TensorRTSession:
        import_torch_tensorrt()  # registers the engine op the saved programs call
        torch.set_num_threads(threads)
        if torch.device(device).type == "cuda":
            torch.cuda.set_device(torch.device(device))  # where the engines were built; inputs are moved there
        spec = json.loads(Path(artifact).read_text())
        programs = {(p["batch"], p["length"]): torch.export.load(str(Path(artifact).parent / p["file"]))
                    for p in spec["programs"]}
        facts = {**torch_thread_facts(), "torch": torch.__version__, "dtype": spec["precision"],
                 "torch_tensorrt": spec["torch_tensorrt"], "compile_s": spec["compile_s"],
                 "compile_settings": spec["compile_settings"], "programs": len(programs),
                 "cache": "static (the engine's inputs and outputs)", "per_token_times": "streamed"}
        return TensorRTSession(programs, spec, device, facts)
