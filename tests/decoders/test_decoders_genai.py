"""The ONNX Runtime GenAI and OpenVINO GenAI decoders on a tiny random Llama (2 layers, hidden 64, vocab 1000) saved
with a small word-level tokenizer: each builds, loads, generates exactly the asked tokens with one stamp per step
(OpenVINO GenAI at batch 2: the runtime's step times instead), matches transformers' greedy tokens and teacher-forced
logits at fp32, and builds and runs at int4 (ort_genai's int4: in tests/scenarios/generate/test_generate_run.py's run,
whose ort_genai@int4 worker builds it, makes every request and keeps a cosine above 0.9); without its library each
names the install line."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from helpers.llm import SAVED_VOCAB, save_tiny_llama
from trtbench.core.target import Target
from trtbench.decoders import get_decoder

VOCAB, PROMPT, NEW = SAVED_VOCAB, 12, 6
SHAPES = ((1, PROMPT), (1, PROMPT + NEW), (2, PROMPT + NEW))  # what the tests ask for (these builds serve any)
LIBRARIES = {"ort_genai": "onnxruntime_genai", "openvino_genai": "openvino_genai"}


def at(device: str, precision: str, model_type: str) -> Target:
    return Target(torch.device(device), precision, model_type)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(folder, prompt (2, PROMPT), transformers' greedy tokens (2, NEW), its logits of prompt[:1])."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("tiny_llama")
    save_tiny_llama(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    prompt = np.random.default_rng(0).integers(3, VOCAB, (2, PROMPT)).astype(np.int64)
    ids = torch.from_numpy(prompt)
    with torch.no_grad():
        greedy = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW, min_new_tokens=NEW,
                                do_sample=False)[:, PROMPT:].numpy()
        logits = model(ids[:1]).logits.numpy()
    return folder, prompt, greedy, logits


@pytest.fixture(scope="module", params=sorted(LIBRARIES))
def fp32(request, tiny, tmp_path_factory):
    """(decoder name, loaded fp32 session)."""
    name = request.param
    pytest.importorskip(LIBRARIES[name])
    decoder = get_decoder(name)
    assert decoder.unavailable_reason(at("cpu", "fp32", "llama")) is None
    artifact = decoder.build(tiny[0], "fp32", tmp_path_factory.mktemp(name), threads=2, shapes=SHAPES, device="cpu")
    session = decoder.load(artifact, "cpu", threads=2)
    yield name, session
    session.close()


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


def generate(session, prompt: np.ndarray) -> tuple[np.ndarray, list[float], float]:
    """(tokens, stamp times, start time) of one generate call."""
    stamps: list[float] = []
    start = time.perf_counter()
    tokens = session.generate(prompt, NEW, lambda: stamps.append(time.perf_counter()))
    return tokens, stamps, start


@pytest.mark.parametrize("batch", [1, 2])
def test_generates_exactly_the_tokens_asked_one_stamp_a_step(fp32, tiny, batch):
    name, session = fp32
    tokens, stamps, start = generate(session, tiny[1][:batch])
    assert tokens.dtype == np.int64 and tokens.shape == (batch, NEW)
    np.testing.assert_array_equal(tokens, tiny[2][:batch])  # greedy, EOS masked until NEW tokens, as transformers
    if name == "openvino_genai" and batch > 1:  # it streams only at batch 1: step times from its raw metrics
        assert stamps == [] and session.facts["per_token_times"] == "from runtime metrics"
        times = session.step_times()
        assert times.shape == (NEW,) and start < times[0] and np.all(np.diff(times) > 0)
        assert times[-1] <= time.perf_counter()
    else:
        assert len(stamps) == NEW and session.facts["per_token_times"] == "streamed"
        assert getattr(session, "step_times", lambda: None)() is None
    assert session.facts["threads"] == 2


def test_teacher_forced_logits_match_transformers_at_fp32(fp32, tiny):
    _, session = fp32
    logits = session.logits(tiny[1][:1])
    assert logits.dtype == np.float32 and logits.shape == (1, PROMPT, VOCAB)
    np.testing.assert_allclose(logits, tiny[3], atol=1e-3)
    assert cosine(logits, tiny[3]).min() > 0.99


def test_int4_builds_and_runs(tiny, tmp_path):
    name = "openvino_genai"
    pytest.importorskip(LIBRARIES[name])
    decoder = get_decoder(name)
    assert decoder.unavailable_reason(at("cpu", "int4", "llama")) is None
    artifact = decoder.build(tiny[0], "int4", tmp_path, threads=2, shapes=SHAPES, device="cpu")
    session = decoder.load(artifact, "cpu", threads=2)
    try:
        tokens, stamps, _ = generate(session, tiny[1][:1])
        assert tokens.shape == (1, NEW) and len(stamps) == NEW
        assert cosine(session.logits(tiny[1][:1]), tiny[3]).min() > 0.9  # 4-bit groups of 32 on random weights
    finally:
        session.close()


@pytest.mark.parametrize("name, module", [("ort_genai", "trtbench.decoders.ort_genai"),
                                          ("openvino_genai", "trtbench.decoders.openvino_genai")])
def test_a_missing_library_is_a_skip_reason_with_the_install_line(name, module, monkeypatch):
    import importlib

    def missing(*args):
        raise ImportError("No module named 'x'")

    target = importlib.import_module(module)
    monkeypatch.setattr(target, "import_og" if name == "ort_genai" else "import_module", missing)
    reason = get_decoder(name).unavailable_reason(at("cpu", "fp32", "llama"))
    assert "not installed" in reason and "pip install 'trtbench[genai]'" in reason


def test_what_each_cannot_build_is_a_skip_reason():
    pytest.importorskip("onnxruntime_genai")
    pytest.importorskip("openvino_genai")
    ort, ov = get_decoder("ort_genai"), get_decoder("openvino_genai")
    assert "gpt2" in ort.unavailable_reason(at("cpu", "fp32", "gpt2"))
    assert ov.unavailable_reason(at("cpu", "fp32", "gpt2")) is None
    assert "gemma3_text" in ov.unavailable_reason(at("cpu", "fp32", "gemma3_text"))
    assert "bf16" in ort.unavailable_reason(at("cpu", "bf16", "llama"))
    for decoder in (ort, ov):
        assert "fp16" in decoder.unavailable_reason(at("cpu", "fp16", "llama"))
        assert "cuda" in decoder.unavailable_reason(at("cuda", "fp32", "llama"))


def test_ort_genai_refuses_a_folder_without_a_tokenizer(tmp_path):
    pytest.importorskip("onnxruntime_genai")
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="no tokenizer"):
        get_decoder("ort_genai").build(tmp_path, "fp32", tmp_path / "out", threads=1, shapes=SHAPES, device="cpu")


def test_openvino_genai_step_times_must_fall_within_the_call():
    from types import SimpleNamespace

    from trtbench.decoders.openvino_genai import _token_times

    raw = SimpleNamespace(m_new_token_times=[10_001.0, 10_002.5])  # milliseconds
    np.testing.assert_allclose(_token_times(raw, 10.0, 10.01), [10.001, 10.0025])
    with pytest.raises(RuntimeError, match="perf_counter"):
        _token_times(raw, 11.0, 12.0)


def test_the_pytorch_decoders_run_fp16_on_cuda_and_say_why_not_on_a_cpu():
    for name in ("eager", "compiled"):
        decoder = get_decoder(name)
        assert decoder.unavailable_reason(at("cuda", "fp16", "llama")) is None
        assert "CUDA only" in decoder.unavailable_reason(at("cpu", "fp16", "llama"))
        assert "int4" in decoder.unavailable_reason(at("cuda", "int4", "llama"))
