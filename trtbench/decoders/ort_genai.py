"""ONNX Runtime GenAI on the CPU (more: docs/generate.md, "Module notes")."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from trtbench.core.target import Target
from trtbench.decoders.base import Decoder, register_decoder

INSTALL = "pip install 'trtbench[genai]'"
# the model_types (config.json) onnxruntime-genai 0.18's builder can build
MODEL_TYPES = ("gemma", "gemma2", "gemma3_text", "granite", "llama", "mistral", "nemotron", "olmo", "phi", "phi3",
               "qwen2", "qwen3", "smollm3")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model")
BUILD_OUTPUT_TAIL = 3000  # characters of the builder's output quoted when it fails


def import_og():
    return importlib.import_module("onnxruntime_genai")


def session_options(threads: int) -> dict:
    """The decoder session options that pin ONNX Runtime's thread pools."""
    return {"intra_op_num_threads": threads, "inter_op_num_threads": 1}


@register_decoder
class OrtGenAI(Decoder):
    name = "ort_genai"
    precisions = ("fp32", "int8", "int4")
    builds_apart = False  # the model builder already runs in a process of its own: the build loads nothing here

    def unavailable_reason(self, target: Target) -> Optional[str]:
        precision, device, model_type = target.precision, str(target.device), target.model_type
        try:
            import_og()
        except ImportError as err:
            return f"onnxruntime-genai is not installed ({err}): {INSTALL}"
        if device != "cpu":
            return f"ort_genai is built for the CPU (onnxruntime-genai's CPU package) and this run uses '{device}'"
        if precision == "bf16":
            return "onnxruntime-genai's model builder makes bf16 models for CUDA and TensorRT-RTX only, not the CPU"
        if precision not in self.precisions:
            return f"ort_genai builds {', '.join(self.precisions)} on the CPU, not {precision}"
        if model_type not in MODEL_TYPES:
            return (f"onnxruntime-genai's model builder cannot build model type '{model_type}' "
                    f"(it builds {', '.join(MODEL_TYPES)})")
        return None

    def build(self, source: Path, precision: str, out_dir: Path, threads: int,
              shapes: tuple[tuple[int, int], ...], device: str) -> Path:
        if not any((source / name).is_file() for name in TOKENIZER_FILES):
            raise FileNotFoundError(f"{source} has no tokenizer ({' or '.join(TOKENIZER_FILES)}): onnxruntime-genai's "
                                    f"model builder copies the folder's tokenizer next to the model")
        artifact = out_dir / f"{self.name}-{precision}"
        cache = out_dir / f"{self.name}-{precision}-cache"  # the builder's scratch folder
        command = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(source), "-o", str(artifact),
                   "-p", precision, "-e", "cpu", "-c", str(cache)]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": str(threads)}
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        shutil.rmtree(cache, ignore_errors=True)
        if done.returncode != 0:
            output = (done.stdout + done.stderr)[-BUILD_OUTPUT_TAIL:]
            raise RuntimeError(f"onnxruntime-genai's model builder failed (exit {done.returncode}): "
                               f"{' '.join(command)}\n{output}")
        config_path = artifact / "genai_config.json"
        config = json.loads(config_path.read_text(encoding="utf-8"))
        config["model"]["decoder"]["session_options"].update(session_options(threads))
        config_path.write_text(json.dumps(config, indent=4), encoding="utf-8")
        return artifact

    def load(self, artifact: Path, device: str, threads: int) -> "OrtGenAISession":
        return OrtGenAISession(artifact, threads)


class OrtGenAISession:
    """An ``og.Model`` on the artifact, its session options overlaid with the thread count."""

    def __init__(self, artifact: Path, threads: int):
        self.og = og = import_og()
        config = og.Config(str(artifact))
        config.overlay(json.dumps({"model": {"decoder": {"session_options": session_options(threads)}}}))
        self.model = og.Model(config)
        self.facts = {"threads": threads, "intra_op_threads": threads, "inter_op_threads": 1,
                      "runtime": f"onnxruntime-genai {og.__version__}", "per_token_times": "streamed"}

    def _generator(self, batch: int, length: int, min_length: int):
        params = self.og.GeneratorParams(self.model)
        params.set_search_options(do_sample=False, max_length=length, min_length=min_length, batch_size=batch)
        return self.og.Generator(self.model, params)

    def generate(self, prompt: np.ndarray, new_tokens: int, stamp: Callable[[], None]) -> np.ndarray:
        batch, prompt_len = prompt.shape
        total = prompt_len + new_tokens
        generator = self._generator(batch, total, total)
        generator.append_tokens(prompt.astype(np.int32))
        tokens = np.empty((batch, new_tokens), dtype=np.int64)
        for step in range(new_tokens):
            generator.generate_next_token()
            stamp()
            tokens[:, step] = generator.get_next_tokens()
        return tokens

    def logits(self, ids: np.ndarray) -> np.ndarray:
        generator = self._generator(1, ids.shape[1], 0)
        generator.append_tokens(ids.astype(np.int32))
        return np.asarray(generator.get_output("logits"), dtype=np.float32)

    def close(self) -> None:
        self.model = None
