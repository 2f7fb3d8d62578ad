"""The generate scenario on a 2-layer, hidden-size-64 Llama with random weights: the compiled decoder against eager,
the bad inputs that exit 2 naming their key, resume's bookkeeping and the memory budget's plan (a whole run and what
it produced: tests/scenarios/generate/test_generate_run.py; exported's and aoti's builds:
tests/decoders/test_decoder_builds.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")

from helpers.llm import TINY_LLAMA, generate_config  # noqa: E402
from trtbench.config.config import config_from_dict  # noqa: E402
from trtbench.core.errors import UserInputError  # noqa: E402


def test_compiled_matches_eager_and_states_its_compile(tmp_path):
    from trtbench.config.config import ModelConfig
    from trtbench.decoders import get_decoder
    from trtbench.measure.token_timing import timed_request
    from trtbench.models import build_model
    from trtbench.models.hf_folder import write_model_folder

    folder = write_model_folder(build_model(ModelConfig(name="llama", source="transformers", task="causal-lm",
                                                        kwargs=TINY_LLAMA)), tmp_path / "hf")
    prompt = np.random.default_rng(0).integers(3, 512, size=(1, 8))
    sessions = {name: get_decoder(name).load(
        get_decoder(name).build(folder, "fp32", tmp_path / name, 1, ((1, 12),), "cpu"), "cpu", 1)
                for name in ("eager", "compiled")}
    tokens = {name: timed_request(s, prompt, 4).tokens for name, s in sessions.items()}
    compiled = sessions["compiled"]
    graphs = compiled.facts["compiled_graphs"]
    assert compiled.facts["compile_s"] > 0 and graphs >= 2  # the prefill and a decode step
    again = timed_request(compiled, prompt, 4)
    assert compiled.facts["compiled_graphs"] == graphs, "a second request of the same shape compiles nothing"
    assert compiled.facts["recompiles"] == 0
    assert np.array_equal(tokens["compiled"], tokens["eager"]) and np.array_equal(again.tokens, tokens["eager"])
    logits = {name: s.logits(prompt) for name, s in sessions.items()}
    assert logits["eager"].shape == (1, 8, 512) and logits["eager"].dtype == np.float32
    assert np.abs(logits["compiled"] - logits["eager"]).max() < 1e-4


@pytest.mark.parametrize("changes, key, says", [
    ({"scenarios": [{"generate": {"new_tokens": [1]}}]}, "scenarios[0].generate.new_tokens[0]", "at least two"),
    ({"scenarios": [{"generate": {"prompt_tokens": [60], "new_tokens": [8]}}]}, "scenarios[0].generate.prompt_tokens",
     "above model's 64 positions"),
    ({"model": {"source": "transformers", "name": "vit", "task": "causal-lm"}}, "model.task",
     "no language-model head"),
    ({"model": {"source": "torchvision", "name": "resnet18"}}, "scenarios[0].generate",
     "generate runs a causal language model"),
    ({"model": {"source": "transformers", "name": "llama", "kwargs": TINY_LLAMA}}, "scenarios[0].generate",
     "is not one"),
    ({"variants": ["eager", "tensorrt_llm"]}, "variants[1]", "unknown decoder 'tensorrt_llm'"),
    ({"precisions": ["fp8"]}, "precisions[0]", "unknown value 'fp8'"),
    ({"tolerances": {"int4": {"cosine_min": 2}}}, "tolerances.int4.cosine_min", "not within [0, 1]"),
    ({"scenarios": ["latency", {"generate": {}}]}, "scenarios", "cannot share a config with latency"),
    ({"scenarios": [{"generate": {"memory_budget_mb": 0}}]}, "scenarios[0].generate.memory_budget_mb",
     "must be positive"),
])
def test_bad_generate_input_names_the_key(changes, key, says):
    with pytest.raises(UserInputError) as info:
        config_from_dict(generate_config(**changes))
    assert info.value.where == key and says in info.value.problem, info.value.format()


def test_bad_generate_input_exits_2_through_the_cli(write_config, capsys):
    """Through the command's entry point in this process (the supervisor passes a run's exit code on:
    tests/workers/test_isolation.py runs it as a command)."""
    from trtbench.cli import main

    path = write_config(generate_config(scenarios=[{"generate": {"new_tokens": [1]}}]))
    assert main(["--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "scenarios[0].generate.new_tokens[0]" in err and "fix:" in err, err


def test_the_bundled_example_is_the_issues_shape():
    from trtbench.config.config import load_config

    config = load_config("tinyllama")
    assert config.models[0].task == "causal-lm" and config.inputs == []
    assert config.scenarios[0].settings.batch == [1, 4] and config.precisions == ["fp32", "int4"]
    assert Path(config.output.dir) == Path("results/tinyllama")


def test_a_resumed_run_owes_only_the_points_missing_a_slot():
    """Each point's rows are yielded together, once its rounds end (their speedups pair those rounds), so a point
    is owed until every slot of it is journaled."""
    from types import SimpleNamespace

    from trtbench.config.plan import resolve
    from trtbench.core.status import Status
    from trtbench.scenarios.generate.result import GenerateRecord

    config = config_from_dict(generate_config(variants=["eager"]))
    (group,), (scenario,) = resolve(config).groups, config.scenarios

    def part(point, slot):
        return GenerateRecord("env", group.model.id, group.threads, point, slot, "eager", "fp32", Status.OK)

    def done(*parts):
        return SimpleNamespace(parts=lambda kind: list(parts) if kind == GenerateRecord.KIND else [])

    assert [p.label for p in scenario.points_todo(group, done())] == ["p12-n4-b1", "p12-n4-b2"]
    half = done(part("p12-n4-b1", "eager"), part("p12-n4-b1", "eager@int4"), part("p12-n4-b2", "eager"))
    assert [p.label for p in scenario.points_todo(group, half)] == ["p12-n4-b2"]
    assert not scenario.owes(group, done(*[part(p, s) for p in ("p12-n4-b1", "p12-n4-b2")
                                           for s in ("eager", "eager@int4")]))
    assert GenerateRecord.from_dict(part("p12-n4-b1", "eager").to_dict()) == part("p12-n4-b1", "eager")


def test_a_decoder_that_does_not_fit_beside_eager_is_skipped_with_the_fix():
    from trtbench.scenarios.generate.memory import MIB, plan_groups

    groups, too_big = plan_groups({"eager": 600 * MIB, "exported": 700 * MIB, "compiled": 500 * MIB}, 1200 * MIB,
                                  "eager")
    assert groups == [["eager", "compiled"]]
    assert "raise memory_budget_mb under the generate entry" in too_big["exported"]


def test_each_request_keeps_its_process_and_round():
    """A request is the generate scenario's block: like a latency block it keeps the replicate process that made it
    and the global round it was made in."""
    from trtbench.measure.token_timing import RequestMetrics
    from trtbench.scenarios.generate.result import RequestSeries, requests_of

    made = [RequestMetrics(10.0 + i, 1.0, 20.0 + i, (1.0,), 100.0, 1000.0) for i in range(4)]
    kept = requests_of(RequestSeries(made, [(0, 0), (1, 0), (0, 1), (1, 1)]))
    assert kept["process"] == [0, 1, 0, 1] and kept["round"] == [0, 0, 1, 1] and kept["e2e_ms"] == [20, 21, 22, 23]
