"""What the PyTorch decoders share: their artifact (``decoder.json``), loading it, logits and the greedy loop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import torch

from trtbench.core.env import bf16_compute, torch_thread_facts
from trtbench.core.target import Target
from trtbench.decoders.base import Decoder

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}  # a PyTorch decoder's precisions
ARTIFACT = "decoder.json"
BUNDLED_MODEL = "model"  # the model folder's name beside a self-contained artifact


def torch_unavailable(name: str, precision: str, device: str) -> Optional[str]:
    """Why PyTorch decoder ``name`` cannot run at ``precision`` on ``device``, or None."""
    if precision not in DTYPES:
        return f"{name} has no {precision} path (it runs at {', '.join(DTYPES)}; weight-only int8/int4: ort_genai, " \
               f"openvino_genai)"
    if precision == "fp16" and device == "cpu":
        return f"{name} runs fp16 on CUDA only (a CPU computes half precision in bf16: list bf16)"
    return None


def torch_facts(precision: str, device: str) -> dict:
    """The facts a PyTorch decoder's record states: threads, torch's version, dtype, streamed stamps, bf16's kind."""
    bf16 = {"bf16": bf16_compute(device).text} if precision == "bf16" else {}
    return {**torch_thread_facts(), "torch": torch.__version__, "dtype": precision, "per_token_times": "streamed",
            **bf16}


def load_folder(folder: Path, precision: str, device: str, threads: int) -> torch.nn.Module:
    """The causal LM of the Hugging Face ``folder``, in eval mode on ``device`` at ``precision``'s dtype."""
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging

    logging.disable_progress_bar()
    torch.set_num_threads(threads)
    return AutoModelForCausalLM.from_pretrained(folder, dtype=DTYPES[precision],
                                                local_files_only=True).to(device).eval()


def load_model(artifact: Path, device: str, threads: int) -> tuple[torch.nn.Module, dict]:
    """The causal LM an artifact of :func:`write_artifact` names, and the facts a record states."""
    spec = json.loads(Path(artifact).read_text())
    folder = Path(artifact).parent / spec["folder"]
    return load_folder(folder, spec["precision"], device, threads), torch_facts(spec["precision"], device)


def teacher_forced_logits(model: torch.nn.Module, ids: np.ndarray) -> np.ndarray:
    """Logits at every position of ``ids`` (int64, 1 x seq), float32 (1 x seq x vocab), without a cache."""
    device = next(model.parameters()).device
    with torch.inference_mode():
        return model(input_ids=torch.from_numpy(ids).to(device), use_cache=False).logits.float().cpu().numpy()


def eos_ids(model: torch.nn.Module) -> tuple[int, ...]:
    """The model's end-of-sequence token ids (its generation config's, else its config's; none where unset)."""
    for config in (getattr(model, "generation_config", None), model.config):
        eos = getattr(config, "eos_token_id", None)
        if eos is not None:
            return tuple(eos) if isinstance(eos, (list, tuple)) else (int(eos),)
    return ()


def greedy_loop(step: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], prompt: np.ndarray, new_tokens: int,
                stamp: Callable[[], None], eos: tuple[int, ...] = ()) -> np.ndarray:
    """Greedy generation of exactly ``new_tokens``, ``eos`` never picked: ``step(ids, positions)`` returns the last
    position's logits (``positions``: the cache positions of ``ids``); ``stamp()`` once each step's tokens are on the
    host."""
    prompt_len = prompt.shape[1]
    generated = np.empty((prompt.shape[0], new_tokens), dtype=np.int64)

    def pick(logits: torch.Tensor) -> torch.Tensor:
        if eos:
            logits = logits.clone()
            logits[:, list(eos)] = float("-inf")
        return logits.argmax(-1, keepdim=True)

    with torch.inference_mode():
        ids, positions = torch.from_numpy(prompt), torch.arange(prompt_len)
        for i in range(new_tokens):
            ids = pick(step(ids, positions))
            generated[:, i] = ids[:, 0].cpu().numpy()
            stamp()
            positions = torch.tensor([prompt_len + i])
    return generated


class TorchDecoder(Decoder):
    """What the PyTorch decoders share as decoders: precisions, why one cannot run, the artifact."""

    precisions = tuple(DTYPES)
    builds_apart = False  # the build writes decoder.json

    def unavailable_reason(self, target: Target) -> Optional[str]:
        return torch_unavailable(self.name, target.precision, str(target.device))

    def build(self, source: Path, precision: str, out_dir: Path, threads: int,
              shapes: tuple[tuple[int, int], ...], device: str) -> Path:
        """``out_dir/decoder.json``, naming the folder and the precision."""
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / ARTIFACT).write_text(json.dumps({"folder": str(Path(source).resolve()), "precision": precision}))
        return out_dir / ARTIFACT

    def self_contained(self, artifact: Path, bring: Callable[[Path, Path], None]) -> None:
        """Where the artifact is ``decoder.json``, the model folder it names brought in beside it as ``model/``."""
        if artifact.name != ARTIFACT:
            return
        spec = json.loads(artifact.read_text())
        folder = artifact.parent / spec["folder"]
        if folder != artifact.parent / BUNDLED_MODEL:
            bring(folder, artifact.parent / BUNDLED_MODEL)
            artifact.write_text(json.dumps({**spec, "folder": BUNDLED_MODEL}))
