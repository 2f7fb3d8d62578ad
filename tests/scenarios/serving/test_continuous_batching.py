"""Continuous batching for LLM serving (``batching: {mode: continuous, max_batch}``): its settings' errors exit 2
naming the key; openvino_genai on the tiny Llama (2 layers, hidden 64) served by the serving stage's call on a real
worker under LoadGen at a fixed QPS: every query completes with its new_tokens, some query is admitted while another
is generating (from the queries' own stamps: one worker serving one at a time gives at most 1 in flight), and the
result states the mode; the ContinuousBatchingPipeline the worker built gives the LLMPipeline's greedy tokens to
sequences that join it at different steps (that in a generate + server run eager's result is skipped, naming the
decoders that have an engine: tests/scenarios/serving/test_llm_server_entry.py, in its one run)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("mlperf_loadgen")

from helpers.llm import SERVER, llm_config, save_tiny_llama  # noqa: E402
from trtbench.building.decoder_recipe import DecoderRecipe  # noqa: E402
from trtbench.config.config import config_from_dict  # noqa: E402
from trtbench.core import schema  # noqa: E402
from trtbench.core.errors import UserInputError  # noqa: E402
from trtbench.core.knobs import Knobs  # noqa: E402
from trtbench.decoders import get_decoder  # noqa: E402
from trtbench.scenarios.serving.tokens.lengths import QueryLengths  # noqa: E402
from trtbench.scenarios.serving.tokens.pool import serving_requests  # noqa: E402
from trtbench.scenarios.serving.tokens.config import DecoderServingConfig  # noqa: E402
from trtbench.scenarios.serving.tokens.result import DecoderServingResult  # noqa: E402
from trtbench.scenarios.serving.tokens.stage import _served, without_engine  # noqa: E402

PROMPT, NEW, MAX_BATCH = 8, 12, 4
CONTINUOUS = {"mode": "continuous", "max_batch": MAX_BATCH}


@pytest.mark.parametrize("batching, key, says", [
    ({"mode": "dynamic"}, "scenarios[1].serving.batching.mode", "unknown value 'dynamic'"),
    ({"mode": "continuous", "max_batch": 0}, "scenarios[1].serving.batching.max_batch", "must be positive"),
    ({"mode": "continuous", "window_ms": 5}, "scenarios[1].serving.batching.window_ms",
     "continuous batching gathers nothing"),
    ({"mode": "static", "window_ms": 0}, "scenarios[1].serving.batching.window_ms", "must be positive"),
])
def test_bad_batching_modes_name_the_key(tmp_path, batching, key, says):
    with pytest.raises(UserInputError) as info:
        config_from_dict(llm_config(tmp_path, {**SERVER, "batching": batching}))
    assert info.value.where == key and says in info.value.problem, info.value.format()


def test_the_modes_settings():
    config = config_from_dict(llm_config("out", {**SERVER, "batching": CONTINUOUS}))
    continuous = config.scenarios[1].settings
    assert continuous.continuous and continuous.max_batch == MAX_BATCH and continuous.request_batch == 1
    assert continuous.batching.static is None and continuous.batching.to_dict() == CONTINUOUS
    static = config_from_dict(llm_config("out", {**SERVER, "batching": {"max_batch": 2}})).scenarios[1].settings
    assert not static.continuous and static.request_batch == 2
    assert static.batching.to_dict() == {"mode": "static", "max_batch": 2, "window_ms": 2.0}


def test_which_decoders_have_an_engine():
    assert without_engine("openvino_genai") is None
    reason = without_engine("eager")
    assert "eager has none (those that have one: openvino_genai)" in reason and "mode: static" in reason, reason


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The tiny Llama's folder, and its openvino_genai fp32 served by one worker under continuous batching (the
    serving stage's own call): one LoadGen run at a fixed QPS of 40 queries of PROMPT and NEW tokens; the result and
    the run's output folder (the worker's build inside)."""
    pytest.importorskip("openvino_genai")
    folder, out = tmp_path_factory.mktemp("tiny_llama"), tmp_path_factory.mktemp("served")
    save_tiny_llama(folder)
    settings = schema.from_dict(DecoderServingConfig, {
        "ttft_ms": 5000, "tpot_ms": 1000, "percentile": 0.5, "qps": 80, "min_queries": 40, "min_duration_s": 0.5,
        "repeats": 1, "batching": CONTINUOUS}, "serving")
    lengths = QueryLengths.fixed(PROMPT, NEW)
    requests = serving_requests(lengths, settings.request_batch, 1000)
    recipe = DecoderRecipe("openvino_genai", "fp32", str(folder), str(out / "worker"), "cpu", 1, requests,
                           next(iter(requests.values()))[0], engine_batch=settings.max_batch)
    planned = DecoderServingResult(0, 1, 1, settings.ttft_ms, settings.tpot_ms, settings.percentile, settings.peak_rule,
                                 log_dir="serving/ov", batching=settings.batching.to_dict(), lengths=lengths.to_dict())
    ctx = SimpleNamespace(out_dir=out, config=SimpleNamespace(benchmark=SimpleNamespace(worker_timeout_s=120.0)))
    return _served(ctx, recipe, Knobs(), lengths, settings, planned), out


def test_a_worker_admits_each_query_into_its_running_engine_under_loadgen(served):
    result, out = served
    assert result.status == "ok", result.reason
    assert result.batching == CONTINUOUS and result.batching_text == f"continuous, up to {MAX_BATCH}"
    assert result.capacity_qps == pytest.approx(MAX_BATCH * 1e3 / result.service["e2e_ms"])
    (step,) = result.steps
    assert step.queries >= 40 and not step.error and step.passed
    assert step.summary.ttft_ms["p50"] > 0 and step.summary.tpot_ms["p50"] > 0, "LoadGen's token latencies"
    assert step.output_tokens_per_s / step.request_per_s == pytest.approx(NEW), "every query got its new_tokens"
    assert step.summary.completed_tokens_per_s / step.summary.completed_qps == pytest.approx(NEW, rel=0.03)
    assert step.batches == {1: step.queries}, "each query admitted alone into the running engine"
    assert 1 < step.most_in_flight <= MAX_BATCH, "queries admitted while others generated, on the one worker"
    assert (out / result.log_dir / "worker-0.log").is_file()


def test_sequences_joining_at_different_steps_get_the_pipelines_greedy_tokens(served):
    _, out = served
    (model,) = (out / "worker").rglob("openvino_model.xml")  # the worker's build
    decoder = get_decoder("openvino_genai")
    prompts = np.random.default_rng(0).integers(3, 1000, (3, PROMPT)).astype(np.int64)
    session = decoder.load(model.parent, "cpu", 1)
    expected = [session.generate(prompts[i:i + 1], NEW, lambda: None)[0].tolist() for i in range(3)]
    session.close()
    engine = decoder.load_engine(model.parent, "cpu", 1, MAX_BATCH)
    got: dict[int, list[int]] = {}
    for key in range(3):  # each joins two steps after the one before it
        engine.add(key, prompts[key:key + 1], NEW)
        for _ in range(2):
            for done, tokens in engine.step().items():
                got.setdefault(done, []).extend(tokens)
    while engine.busy():
        for done, tokens in engine.step().items():
            got.setdefault(done, []).extend(tokens)
    assert [got[key] for key in range(3)] == expected
    assert engine.facts["engine"] == "ContinuousBatchingPipeline" and engine.facts["max_num_seqs"] == MAX_BATCH

