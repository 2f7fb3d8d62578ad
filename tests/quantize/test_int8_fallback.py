"""The accuracy fallback's loop, on a real model whose layers a real (fake-)quantizer rounds: the most
sensitive layers are kept in fp32 until the budget is met, and past the cap the build fails with the
figures."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from trtbench.quantize.calibration import CalibrationData
from trtbench.config.config import Int8Budget
from trtbench.quantize.common import QuantSettings
from trtbench.quantize.fallback import AccuracyBudgetMissed, quantize_within_budget
from trtbench.quantize.setup import Int8Setup


def _model() -> nn.Sequential:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 10)).eval()
    with torch.no_grad():
        model[2].weight[:, 0] *= 200  # an outlier column: per-tensor INT8 rounding of this layer wipes the rest out
    return model


def _quantize(model: nn.Sequential):
    """Weights of every Linear not in ``settings.exclude`` rounded per tensor to INT8 (torch's fake quantization)."""
    def quantize(settings: QuantSettings) -> nn.Module:
        copy_ = copy.deepcopy(model)
        with torch.no_grad():
            for name, module in copy_.named_modules():
                if isinstance(module, nn.Linear) and name not in settings.exclude:
                    scale = float(module.weight.abs().max()) / 127
                    module.weight.copy_(torch.fake_quantize_per_tensor_affine(module.weight, scale, 0, -128, 127))
        return copy_
    return quantize


def _setup(model, cap: int) -> Int8Setup:
    batches = [(torch.randn(32, 16, generator=torch.Generator().manual_seed(i)),) for i in range(4)]
    with torch.inference_mode():
        references = [model(*b) for b in batches]
    return Int8Setup(CalibrationData(batches[:1], batches), Int8Budget(top1_agree_min=0.9, sqnr_db_min=15),
                     QuantSettings(), cap, references)


def test_the_most_sensitive_layer_is_kept_in_fp32():
    model = _model()
    result = quantize_within_budget(_quantize(model), ["0", "2", "4"], _setup(model, cap=2))
    assert not result.full_int8.ok and result.accuracy.ok
    assert result.settings.exclude[0] == "2"  # the planted outlier layer
    assert min(result.sensitivity, key=result.sensitivity.get) == "2"  # the worst SQNR quantized alone
    assert result.cost.reduced_ms > 0 and result.cost.precision == "int8"
    assert result.info()["fallback_cost"]["full_int8_ms"] == result.cost.reduced_ms


def test_past_the_cap_the_build_fails_with_the_figures():
    model = _model()
    with pytest.raises(AccuracyBudgetMissed) as info:
        quantize_within_budget(_quantize(model), ["0", "2", "4"], _setup(model, cap=0))
    assert "misses the accuracy budget" in str(info.value) and "SQNR" in str(info.value)
