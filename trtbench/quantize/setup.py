"""What a quantizing build gets in ``BuildContext.int8``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

import torch

from trtbench.measure.accuracy import Int8Accuracy, int8_accuracy, judge_int8
from trtbench.quantize.calibration import CalibrationData
from trtbench.quantize.common import QuantSettings


@dataclass
class Int8Setup:
    data: CalibrationData
    budget: Any  # trtbench.config.config.Int8Budget
    settings: QuantSettings
    max_fp32_layers: int
    references: list  # eager fp32's output on each evaluation batch

    @property
    def calibration(self):
        return self.data.calibration

    def evaluate(self, model: Callable[..., Any]) -> Int8Accuracy:
        """``model`` on the evaluation batches, judged against eager fp32 and the budget."""
        with torch.inference_mode():
            outputs = [model(*batch) for batch in self.data.evaluation]
        return judge_int8(int8_accuracy(outputs, self.references, self.data.labels), self.budget)


def _on(batches, device: torch.device) -> list[tuple]:
    return [tuple(t.to(device) for t in batch) for batch in batches]


def int8_setup(config, data: CalibrationData, model: torch.nn.Module) -> Int8Setup:
    """The setup for ``model`` (eager fp32 on the run's device), the calibration ``data`` moved to that device."""
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    data = dataclasses.replace(data, calibration=_on(data.calibration, device), evaluation=_on(data.evaluation, device))
    with torch.inference_mode():
        references = [model(*batch) for batch in data.evaluation]
    cfg = config.calibration
    return Int8Setup(data=data, budget=config.tolerances["int8"],
                     settings=QuantSettings(method=cfg.method, per_channel=cfg.per_channel),
                     max_fp32_layers=cfg.max_fp32_layers, references=references)
