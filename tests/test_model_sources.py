"""Model sources: torchvision by name, local weights, Python factories, TorchScript files."""

from __future__ import annotations

import pytest
import torch

from trtbench.config import ModelConfig
from trtbench.errors import UserInputError
from trtbench.models import build_model, list_models


def test_torchvision_models_build_with_random_weights():
    model = build_model(ModelConfig(name="mobilenet_v3_small", source="torchvision", kwargs={"num_classes": 7}))
    assert not model.training
    assert model(torch.randn(1, 3, 64, 64)).shape == (1, 7)


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
