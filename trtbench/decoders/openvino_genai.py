"""OpenVINO GenAI on the CPU: ``LLMPipeline`` on a stateful OpenVINO IR (more: docs/generate.md, "Module notes")."""

from __future__ import annotations

import importlib
import importlib.util
import json
import shutil
import time
import warnings
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from trtbench.core.target import Target
from trtbench.decoders.base import Decoder, register_decoder

INSTALL = "pip install 'trtbench[genai]'"
SETTINGS_FILE = "trtbench_decoder.json"  # in the artifact: the precision it was built at
COPIED_FILES = ("config.json", "generation_config.json")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model")
INT4_GROUP_SIZE = 32
# CPU plugin settings per precision, pinned to the row's: compute precision and KV-cache precision
RUNTIME_PRECISION = {"fp32": ("f32", "f32"), "bf16": ("bf16", "bf16"), "int8": ("f32", "f32"),
                     "int4": ("f32", "f32")}
# model_type of the causal LMs this export was checked on (each keeps one key and one value per layer)
MODEL_TYPES = ("gemma", "gpt2", "llama", "mistral", "phi3", "qwen2", "qwen3")
TRACE_BATCH, TRACE_PAST, TRACE_NEW = 2, 3, 4  # example shapes for tracing (all dimensions stay dynamic)


def import_module(name: str):
    return importlib.import_module(name)


def cpu_properties(artifact: Path, threads: int) -> dict:
    """The CPU plugin's properties for the precision the artifact was built at."""
    precision = json.loads((artifact / SETTINGS_FILE).read_text(encoding="utf-8"))["precision"]
    compute, cache = RUNTIME_PRECISION[precision]
    return {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": compute, "KV_CACHE_PRECISION": cache}


def runtime_facts(genai, properties: dict) -> dict:
    """What a session's and an engine's records state of the runtime."""
    return {"threads": properties["INFERENCE_NUM_THREADS"], "runtime": f"openvino-genai {genai.__version__}",
            "inference_precision": properties["INFERENCE_PRECISION_HINT"],
            "kv_cache_precision": properties["KV_CACHE_PRECISION"], "attention_backend": "PA", "prefix_caching": False}


def greedy_config(genai, new_tokens: int):
    """Greedy generation of exactly ``new_tokens``, EOS ignored."""
    return genai.GenerationConfig(max_new_tokens=new_tokens, min_new_tokens=new_tokens, ignore_eos=True,
                                  do_sample=False)


@register_decoder
class OpenVinoGenAI(Decoder):
    name = "openvino_genai"
    precisions = ("fp32", "bf16", "int8", "int4")
    continuous_batching = True

    def unavailable_reason(self, target: Target) -> Optional[str]:
        precision, device, model_type = target.precision, str(target.device), target.model_type
        for module, package in (("openvino_genai", "openvino-genai"), ("openvino_tokenizers", "openvino-tokenizers")):
            try:
                import_module(module)
            except ImportError as err:
                return f"{package} is not installed ({err}): {INSTALL}"
        if device != "cpu":
            return f"openvino_genai runs on the CPU here and this run uses '{device}'"
        if precision not in self.precisions:
            return f"openvino_genai builds {', '.join(self.precisions)} on the CPU, not {precision}"
        if model_type not in MODEL_TYPES:
            return (f"openvino_genai's export (ov.convert_model with the KV cache made stateful) is checked on "
                    f"{', '.join(MODEL_TYPES)}, not on model type '{model_type}'")
        if precision in ("int8", "int4") and importlib.util.find_spec("nncf") is None:
            return f"nncf is not installed (it compresses the weights to {precision}): {INSTALL}"
        if precision == "bf16":
            capabilities = import_module("openvino").Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
            if "BF16" not in capabilities:
                return f"this CPU has no bf16 units (OpenVINO's CPU plugin lists {', '.join(capabilities)})"
        return None

    def build(self, source: Path, precision: str, out_dir: Path, threads: int,
              shapes: tuple[tuple[int, int], ...], device: str) -> Path:
        ov = import_module("openvino")
        artifact = out_dir / f"{self.name}-{precision}"
        artifact.mkdir(parents=True, exist_ok=True)
        model = stateful_ir(source)
        if precision in ("int8", "int4"):
            model = compress_weights(model, precision)
        ov.save_model(model, artifact / "openvino_model.xml", compress_to_fp16=False)
        for name in COPIED_FILES:
            if (source / name).is_file():
                shutil.copy(source / name, artifact / name)
        if any((source / name).is_file() for name in TOKENIZER_FILES):
            save_tokenizer(source, artifact)
        (artifact / SETTINGS_FILE).write_text(json.dumps({"precision": precision}), encoding="utf-8")
        return artifact

    def load(self, artifact: Path, device: str, threads: int) -> "OpenVinoGenAISession":
        return OpenVinoGenAISession(artifact, cpu_properties(artifact, threads))

    def load_engine(self, artifact: Path, device: str, threads: int, max_batch: int) -> "OpenVinoGenAIEngine":
        return OpenVinoGenAIEngine(artifact, cpu_properties(artifact, threads), max_batch)


def stateful_ir(source: Path):
    """The transformers model in ``source`` as a stateful OpenVINO model (KV cache in states, ``beam_idx`` input)."""
    torch = import_module("torch")
    ov = import_module("openvino")
    transformers = import_module("transformers")
    hf = transformers.AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32, attn_implementation="sdpa")
    hf.eval()
    config = hf.config
    layers = config.num_hidden_layers
    kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    past_shape = (TRACE_BATCH, kv_heads, TRACE_PAST, head_dim)
    example = (torch.ones(TRACE_BATCH, TRACE_NEW, dtype=torch.long),
               torch.ones(TRACE_BATCH, TRACE_PAST + TRACE_NEW, dtype=torch.long),
               torch.arange(TRACE_PAST, TRACE_PAST + TRACE_NEW).expand(TRACE_BATCH, TRACE_NEW),
               *[torch.zeros(past_shape) for _ in range(2 * layers)])
    shapes = [ov.PartialShape([-1, -1])] * 3 + [ov.PartialShape([-1, kv_heads, -1, head_dim])] * (2 * layers)
    with torch.no_grad(), warnings.catch_warnings():
        # the branches the trace fixes on shapes hold for every length (docs/generate.md)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        model = ov.convert_model(_explicit_cache_module()(hf), example_input=example, input=shapes)
    past = [f"past_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    present = [f"present.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    for port, name in zip(model.inputs, ["input_ids", "attention_mask", "position_ids", *past]):
        port.get_tensor().set_names({name})
    for port, name in zip(model.outputs, ["logits", *present]):
        port.get_tensor().set_names({name})
    _make_stateful(model, dict(zip(past, present)))
    return model


def _explicit_cache_module():
    """A torch module class taking and returning the KV cache as tensors (one key and one value per layer)."""
    torch = import_module("torch")
    cache_utils = import_module("transformers.cache_utils")

    class ExplicitCache(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, position_ids, *past):
            cache = cache_utils.DynamicCache()
            cache.layers = []
            for key, value in zip(past[0::2], past[1::2]):
                # initialized, as DynamicLayer's lazy start would trace a constant empty tensor
                layer = cache_utils.DynamicLayer()
                layer.keys, layer.values, layer.device, layer.is_initialized = key, value, key.device, True
                cache.layers.append(layer)
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                             cache=cache, use_cache=True)
            grown = [tensor for layer in out.cache.layers for tensor in (layer.keys, layer.values)]
            return (out.logits, *grown)

    return ExplicitCache


def _make_stateful(model, past_to_present: dict) -> None:
    """optimum-intel's patch_stateful_decoder for a batch-first cache (``beam_idx``, the past/present pairs states)."""
    ov = import_module("openvino")
    opset = import_module("openvino.opset13")
    offline = import_module("openvino._offline_transformations")
    beam_idx = opset.parameter(name="beam_idx", dtype=ov.Type.i32, shape=ov.PartialShape([-1]))
    beam_idx.output(0).get_tensor().add_names({"beam_idx"})
    model.add_parameters([beam_idx])
    for name in past_to_present:
        port = model.input(name)
        consumers = port.get_target_inputs()
        gathered = opset.gather(port, beam_idx, opset.constant(0))
        for consumer in consumers:
            consumer.replace_source_output(gathered.output(0))
    model.validate_nodes_and_infer_types()
    offline.apply_make_stateful_transformation(model, past_to_present)
    batch = opset.gather(opset.shape_of(model.input("input_ids"), output_type="i64"), opset.constant([0]),
                         opset.constant(0))
    for op in model.get_ops():
        if op.get_type_name() == "ReadValue":
            dims = [dim.min_length for dim in op.get_output_partial_shape(0)]
            parts = [batch] + [opset.constant(np.array([dim], dtype=np.int64)) for dim in dims[1:]]
            zero = opset.constant(0.0, dtype=op.get_output_element_type(0))
            op.set_arguments([opset.broadcast(zero, opset.concat(parts, axis=0))])
    model.validate_nodes_and_infer_types()


def compress_weights(model, precision: str):
    nncf = import_module("nncf")
    if precision == "int8":
        return nncf.compress_weights(model, mode=nncf.CompressWeightsMode.INT8_ASYM)
    return nncf.compress_weights(model, mode=nncf.CompressWeightsMode.INT4_SYM, ratio=1.0,
                                 group_size=INT4_GROUP_SIZE)


def save_tokenizer(source: Path, artifact: Path) -> None:
    ov = import_module("openvino")
    convert_tokenizer = import_module("openvino_tokenizers").convert_tokenizer
    hf_tokenizer = import_module("transformers").AutoTokenizer.from_pretrained(source)
    tokenizer, detokenizer = convert_tokenizer(hf_tokenizer, with_detokenizer=True)
    ov.save_model(tokenizer, artifact / "openvino_tokenizer.xml")
    ov.save_model(detokenizer, artifact / "openvino_detokenizer.xml")


class OpenVinoGenAISession:
    """An ``LLMPipeline`` on the artifact; the IR compiled by OpenVINO Core for teacher-forced logits (on first use)."""

    def __init__(self, artifact: Path, properties: dict):
        self.ov = import_module("openvino")
        self.genai = import_module("openvino_genai")
        self.artifact, self.properties = artifact, properties
        self.pipeline = self.genai.LLMPipeline(str(artifact), "CPU", scheduler_config=_scheduler_config(self.genai),
                                               **properties)
        self.request = None
        self._step_times: Optional[np.ndarray] = None
        self.facts = {**runtime_facts(self.genai, properties), "per_token_times": "streamed"}

    def generate(self, prompt: np.ndarray, new_tokens: int, stamp: Callable[[], None]) -> np.ndarray:
        batch = prompt.shape[0]
        config = greedy_config(self.genai, new_tokens)
        ids = np.ascontiguousarray(prompt, dtype=np.int64)
        if batch == 1:
            self._step_times = None
            self.facts["per_token_times"] = "streamed"
            result = self.pipeline.generate(self.ov.Tensor(ids), config, _stamping_streamer(self.genai, stamp))
        else:
            inputs = self.genai.TokenizedInputs(self.ov.Tensor(ids), self.ov.Tensor(np.ones_like(ids)))
            start = time.perf_counter()
            result = self.pipeline.generate(inputs, config)
            self._step_times = _token_times(result.perf_metrics.raw_metrics, start, time.perf_counter())
            self.facts["per_token_times"] = "from runtime metrics"
        tokens = np.asarray(result.tokens, dtype=np.int64)
        if tokens.shape != (batch, new_tokens):
            raise RuntimeError(f"OpenVINO GenAI returned tokens of shape {tokens.shape}, "
                               f"expected {(batch, new_tokens)}")
        return tokens

    def step_times(self) -> Optional[np.ndarray]:
        """After a generate() that did not stream (batch > 1), each step's ``time.perf_counter()``; else None."""
        return self._step_times

    def logits(self, ids: np.ndarray) -> np.ndarray:
        if self.request is None:
            compiled = self.ov.Core().compile_model(str(self.artifact / "openvino_model.xml"), "CPU", self.properties)
            self.request = compiled.create_infer_request()
        self.request.reset_state()
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        self.request.infer({"input_ids": ids, "attention_mask": np.ones_like(ids),
                            "position_ids": np.arange(ids.shape[1], dtype=np.int64)[None],
                            "beam_idx": np.zeros(ids.shape[0], dtype=np.int32)})
        return np.array(self.request.get_tensor("logits").data, dtype=np.float32)

    def close(self) -> None:
        self.pipeline = self.request = None


class OpenVinoGenAIEngine:
    """A ``ContinuousBatchingPipeline`` on the artifact with room for ``max_batch`` sequences."""

    def __init__(self, artifact: Path, properties: dict, max_batch: int):
        self.ov = import_module("openvino")
        self.genai = import_module("openvino_genai")
        scheduler = _scheduler_config(self.genai)
        scheduler.max_num_seqs = max_batch
        self.pipeline = self.genai.ContinuousBatchingPipeline(str(artifact), scheduler, "CPU", properties)
        self.handles: dict = {}
        self.facts = {**runtime_facts(self.genai, properties), "engine": "ContinuousBatchingPipeline",
                      "max_num_seqs": max_batch}

    def add(self, key: int, prompt: np.ndarray, new_tokens: int) -> None:
        ids = self.ov.Tensor(np.ascontiguousarray(prompt, dtype=np.int64))
        self.handles[key] = self.pipeline.add_request(key, ids, greedy_config(self.genai, new_tokens))

    def step(self) -> dict[int, list[int]]:
        self.pipeline.step()
        got = {}
        for key, handle in list(self.handles.items()):
            if handle.can_read():
                got[key] = [token for output in handle.read().values() for token in output.generated_ids]
            status = handle.get_status()
            if status != self.genai.GenerationStatus.RUNNING and not handle.can_read():
                del self.handles[key]
                if status != self.genai.GenerationStatus.FINISHED:
                    raise RuntimeError(f"OpenVINO GenAI's scheduler ended request {key} as {status.name}, "
                                       f"not FINISHED")
        return got

    def busy(self) -> bool:
        return bool(self.handles)

    def close(self) -> None:
        self.pipeline = None
        self.handles = {}


def _scheduler_config(genai):
    """The pipeline's default scheduler (no limit on the tokens of a step) without prefix caching."""
    config = genai.SchedulerConfig()
    config.max_num_batched_tokens = np.iinfo(np.int64).max
    config.enable_prefix_caching = False
    return config


def _stamping_streamer(genai, stamp: Callable[[], None]):
    """A token streamer (``StreamerBase``: token ids, no detokenizer) that stamps each step as it arrives."""

    class Stamping(genai.StreamerBase):
        def write(self, token):
            stamp()
            return genai.StreamingStatus.RUNNING

        def end(self):
            return None

    return Stamping()


def _token_times(raw, start: float, end: float) -> np.ndarray:
    """Each step's ``time.perf_counter`` moment from the raw metrics' ``m_new_token_times``, checked in the call."""
    times = np.asarray(raw.m_new_token_times, dtype=np.float64) / 1000.0
    if times.size == 0 or times[0] < start or times[-1] > end:
        raise RuntimeError(f"OpenVINO GenAI's token times ({times[:1]}..{times[-1:]} s) do not fall within the "
                           f"generate call ({start:.6f}..{end:.6f} s on time.perf_counter): its clock is not "
                           f"perf_counter's here")
    return times
