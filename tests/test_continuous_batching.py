"""Continuous batching for LLM serving (``batching: {mode: continuous, max_batch}``): its settings' errors exit 2
naming the key; OpenVINO GenAI's ContinuousBatchingPipeline on the tiny Llama (2 layers, hidden 64) gives the
LLMPipeline's greedy tokens to sequences that join it at different steps; served by a real worker under LoadGen at
a fixed QPS, every query completes with its new_tokens and some query is admitted while another is in flight (from
the queries' own stamps, which one-at-a-time serving on one worker cannot give); and in a generate + server run the
openvino_genai row is served, stating the mode, while eager's is skipped naming the decoders that have an engine."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("mlperf_loadgen")

from test_decoders_genai import save_tiny_llama  # noqa: E402
from test_llm_server_entry import GENERATE, SERVER, llm_config  # noqa: E402
from trtbench.build.decoder_recipe import DecoderRecipe  # noqa: E402
from trtbench.config.config import config_from_dict  # noqa: E402
from trtbench.core.errors import UserInputError  # noqa: E402
from trtbench.decoders import get_decoder  # noqa: E402
from trtbench.scenarios.token_lengths import QueryLengths  # noqa: E402
from trtbench.scenarios.token_loadgen import TokenLoad, TokenServing, token_run  # noqa: E402
from trtbench.scenarios.token_pool import TokenPool, serving_requests  # noqa: E402
from trtbench.scenarios.token_serving_stage import without_engine  # noqa: E402

PROMPT, NEW, MAX_BATCH = 8, 12, 4
CONTINUOUS = {"mode": "continuous", "max_batch": MAX_BATCH}


@pytest.mark.parametrize("batching, key, says", [
    ({"mode": "dynamic"}, "scenarios[1].server.batching.mode", "unknown value 'dynamic'"),
    ({"mode": "continuous", "max_batch": 0}, "scenarios[1].server.batching.max_batch", "must be positive"),
    ({"mode": "continuous", "window_ms": 5}, "scenarios[1].server.batching.window_ms",
     "continuous batching gathers nothing"),
    ({"mode": "static", "window_ms": 0}, "scenarios[1].server.batching.window_ms", "must be positive"),
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
def tiny_ir(tmp_path_factory):
    """The tiny Llama's folder and its openvino_genai fp32 artifact."""
    pytest.importorskip("openvino_genai")
    folder = tmp_path_factory.mktemp("tiny_llama")
    save_tiny_llama(folder)
    artifact = get_decoder("openvino_genai").build(folder, "fp32", folder / "built", 1, ())
    return folder, artifact


def test_sequences_joining_at_different_steps_get_the_pipelines_greedy_tokens(tiny_ir):
    decoder = get_decoder("openvino_genai")
    prompts = np.random.default_rng(0).integers(3, 1000, (3, PROMPT)).astype(np.int64)
    session = decoder.load(tiny_ir[1], "cpu", 1)
    expected = [session.generate(prompts[i:i + 1], NEW, lambda: None)[0].tolist() for i in range(3)]
    session.close()
    engine = decoder.load_engine(tiny_ir[1], "cpu", 1, MAX_BATCH)
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


def test_a_worker_admits_queries_into_its_running_engine_under_loadgen(tiny_ir, tmp_path):
    folder, _ = tiny_ir
    lengths = QueryLengths.fixed(PROMPT, NEW)
    requests = serving_requests(lengths, 1, 1000)
    teacher = next(iter(requests.values()))[0]
    recipe = DecoderRecipe("openvino_genai", "fp32", str(folder), str(tmp_path / "worker"), "cpu", 1, requests,
                           teacher, engine_batch=MAX_BATCH)
    with TokenPool(recipe, 1, 120.0, tmp_path / "logs") as pool:
        servers = pool.servers(60.0)
        assert len(servers) == MAX_BATCH, "a dispatcher per sequence the engine has room for"
        load = TokenLoad(ttft_ms=5000, tpot_ms=1000, min_duration_s=0.5, min_queries=40, percentile=0.5)
        run = token_run(servers, load, TokenServing(lengths.draw()), 80.0, tmp_path / "run")
    assert not run.error and len(run.queries) >= 40 and run.passed
    assert all(len(q.tokens_ms) == NEW for q in run.queries), "each query completed with its new_tokens"
    assert run.summary.completed_tokens_per_s / run.summary.completed_qps == pytest.approx(NEW, rel=0.03)
    spans = sorted((q.issued_s + q.tokens_ms[0] / 1e3, q.issued_s + q.tokens_ms[-1] / 1e3) for q in run.queries)
    overlapping = [(a, b) for a, b in zip(spans, spans[1:]) if b[0] < a[1]]
    assert overlapping, "some query got its first token while another, on the same worker, was still generating"


def test_a_run_serves_openvino_genai_continuously_and_skips_eager_naming_the_decoders_with_an_engine(tmp_path):
    from conftest import run_dict
    from test_generate import generate_config
    from trtbench.results.resultset import ResultSet

    server = {"ttft_ms": 5000, "tpot_ms": 1000, "percentile": 0.5, "qps": 80, "min_queries": 40, "min_duration_s": 0.5,
              "repeats": 1, "workers": [1], "batching": CONTINUOUS}
    generate = {"generate": {"prompt_tokens": [PROMPT], "new_tokens": [NEW], "batch": [1], "min_requests": 3,
                             "max_requests": 3}}
    out = tmp_path / "run"
    outcome = run_dict(generate_config(variants=["eager", "openvino_genai"], precisions=["fp32"],
                                       output={"dir": str(out)}, scenarios=[generate, {"server": server}]))
    assert outcome.exit_code == 0
    parts = {part.decoder: part for part in ResultSet.load(out).parts("served_decoder")}
    (skipped,), (served,) = parts["eager"].results, parts["openvino_genai"].results
    assert skipped.status == "skipped" and not skipped.steps, skipped
    assert "eager has none (those that have one: openvino_genai)" in skipped.reason, skipped.reason
    assert served.status == "ok", served.reason
    assert served.batching == CONTINUOUS and served.batching_text == f"continuous, up to {MAX_BATCH}"
    (step,) = served.steps
    assert step.queries >= 40 and not step.error and step.passed
    assert step.output_tokens_per_s / step.request_per_s == pytest.approx(NEW), "every query got its new_tokens"
    assert step.batches == {1: step.queries}, "each query admitted alone into the running engine"
    assert step.most_in_flight > 1, "a query was admitted while another was generating, on the one worker"
    assert served.capacity_qps == pytest.approx(MAX_BATCH * 1e3 / served.service["e2e_ms"])
    report = (out / "report.md").read_text().split("## LLM serving under load")[1]
    assert f"| continuous, up to {MAX_BATCH} |" in report and "skipped: batching mode 'continuous'" in report
