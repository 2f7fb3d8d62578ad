"""Model sources: torchvision by name, local weights, Python factories, TorchScript files."""

from __future__ import annotations

import pytest
import torch

from trtbench.config.config import ModelConfig
from trtbench.core.errors import UserInputError
from trtbench.models import build_model, list_models


def test_torchvision_models_build_with_random_weights():
    model = build_model(ModelConfig(name="mobilenet_v3_small", source="torchvision", kwargs={"num_classes": 7}))
    assert not model.training
    assert model(torch.randn(1, 3, 64, 64)).shape == (1, 7)


def test_random_weights_are_the_same_every_build_and_leave_the_callers_generator_alone():
    """A run, its resume and another machine judge the same model: random weights come from a seeded generator."""
    config = ModelConfig(name="resnet18", source="torchvision")
    torch.manual_seed(123)
    first = build_model(config)
    after_build = torch.rand(3)
    torch.manual_seed(123)
    assert torch.equal(torch.rand(3), after_build), "the caller's generator goes on as if nothing drew from it"
    second = build_model(config)
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), second.state_dict().values()))


def test_every_torchvision_classification_model_is_listed():
    names = list_models()["torchvision"]
    assert {"resnet34", "vit_b_16", "efficientnet_b0", "convnext_tiny"} <= set(names)
    assert "fasterrcnn_resnet50_fpn" not in names  # detection models are not classification models


def test_local_weights_are_loaded(tmp_path):
    source = build_model(ModelConfig(name="toy_models:tiny_cnn", source="python"))
    with torch.no_grad():
        for p in source.parameters():
            p.normal_()
    path = tmp_path / "weights.pt"
    torch.save(source.state_dict(), path)
    loaded = build_model(ModelConfig(name="toy_models:tiny_cnn", source="python", weights=str(path)))
    x = torch.randn(2, 3, 8, 8)
    assert torch.equal(loaded(x), source(x))


def test_mismatched_weights_name_the_key(tmp_path):
    path = tmp_path / "weights.pt"
    torch.save({"unrelated.weight": torch.zeros(1)}, path)
    with pytest.raises(UserInputError) as info:
        build_model(ModelConfig(name="toy_models:tiny_cnn", source="python", weights=str(path)))
    assert info.value.where == "model.weights" and "does not match" in info.value.problem


def test_weights_that_are_not_a_state_dict_are_refused(tmp_path):
    path = tmp_path / "weights.pt"
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(UserInputError) as info:
        build_model(ModelConfig(name="toy_models:tiny_cnn", source="python", weights=str(path)))
    assert info.value.where == "model.weights"


def test_torchscript_file_as_model_source(tmp_path):
    eager = build_model(ModelConfig(name="toy_models:tiny_cnn", source="python"))
    path = tmp_path / "model.ts"
    torch.jit.save(torch.jit.script(eager), str(path))
    loaded = build_model(ModelConfig(name=str(path), source="torchscript"))
    x = torch.randn(1, 3, 8, 8)
    assert torch.allclose(loaded(x), eager(x))


TINY_BERT = {"num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 64,
             "vocab_size": 100, "max_position_embeddings": 64}


def test_timm_models_build_with_random_weights_and_nothing_downloaded(monkeypatch):
    pytest.importorskip("timm")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a download would fail here
    model = build_model(ModelConfig(name="resnet18", source="timm", kwargs={"num_classes": 5}))
    assert not model.training and model(torch.randn(1, 3, 32, 32)).shape == (1, 5)
    with pytest.raises(UserInputError) as info:
        ModelConfig(name="resnet1", source="timm").validate("model")
    assert info.value.where == "model.name" and "resnet18" in info.value.hint


def test_transformers_models_build_from_their_config_class_offline(monkeypatch):
    pytest.importorskip("transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = build_model(ModelConfig(name="bert", source="transformers", kwargs=TINY_BERT))
    ids = torch.randint(0, 100, (2, 7))
    out = model(input_ids=ids, attention_mask=torch.ones_like(ids))
    assert out.last_hidden_state.shape == (2, 7, 32)
    with pytest.raises(UserInputError) as info:
        ModelConfig(name="bertt", source="transformers").validate("model")
    assert info.value.where == "model.name" and "bert" in info.value.hint


@pytest.mark.parametrize("source", ["timm", "transformers"])
def test_a_missing_model_library_exits_2_naming_the_extra(source, monkeypatch, tmp_path, capsys):
    import sys

    import yaml

    from trtbench.cli import main

    monkeypatch.setitem(sys.modules, source, None)  # import fails as if not installed
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "x", "model": {"source": source, "name": "resnet18"},
                                    "inputs": [{"name": "input", "min_shape": [1, 3, 8, 8], "opt_shape": [2, 3, 8, 8],
                                                "max_shape": [2, 3, 8, 8]}],
                                    "output": {"dir": str(tmp_path / "out")}}))
    assert main(["run", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"pip install 'trtbench[{source}]'" in err and "model" in err and not (tmp_path / "out").exists()


TINY_LLAMA = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "vocab_size": 512, "max_position_embeddings": 256}


def test_a_causal_lm_is_built_offline_written_as_a_folder_with_a_tokenizer_and_loaded_back(tmp_path):
    pytest.importorskip("transformers")
    from transformers import AutoTokenizer

    from trtbench.models.hf_folder import write_model_folder

    model = build_model(ModelConfig(name="llama", source="transformers", task="causal-lm", kwargs=TINY_LLAMA))
    folder = write_model_folder(model, tmp_path / "hf")
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in folder.iterdir()}
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    assert tokenizer("t5 t7").input_ids == [5, 7] and len(tokenizer) == 512
    loaded = build_model(ModelConfig(source="transformers", task="causal-lm", path=str(folder)))
    ids = torch.randint(0, 512, (1, 8))
    with torch.inference_mode():
        assert torch.equal(loaded(input_ids=ids).logits, model(input_ids=ids).logits)


@pytest.mark.parametrize("fields, key, says", [
    ({"name": "vit", "task": "causal-lm"}, "model.task", "no language-model head"),
    ({"name": "llama", "task": "seq2seq"}, "model.task", "unknown value"),
    ({"path": "/nonexistent"}, "model.path", "no config.json"),
    ({}, "model.name", "required key is missing"),
])
def test_bad_causal_lm_models_name_the_key(fields, key, says):
    pytest.importorskip("transformers")
    from trtbench.config.config import config_from_dict

    with pytest.raises(UserInputError) as info:
        config_from_dict({"name": "x", "model": {"source": "transformers", **fields}, "scenarios": ["latency"],
                          "inputs": [{"name": "input_ids", "dtype": "int64", "shape": [1, 8], "value_range": [0, 9]}]})
    assert info.value.where == key and says in info.value.problem, info.value


def test_task_is_for_transformers_only():
    from trtbench.config.config import config_from_dict

    with pytest.raises(UserInputError) as info:
        config_from_dict({"name": "x", "model": {"name": "resnet18", "task": "causal-lm"},
                          "inputs": [{"shape": [1, 3, 8, 8]}]})
    assert info.value.where == "model.task"
