"""INT8 on a model with learned weights: the digits CNN (tests/assets/trained_models.py, trained in seconds) in a
config whose calibration and accuracy data are the digits test set."""

from __future__ import annotations

import numpy as np

from trained_models import digits_data

BATCH = 32


def digits_config(tmp_path, model: str = "trained_models:digits_cnn", **calibration) -> dict:
    _, _, test_x, test_y = digits_data()
    data = tmp_path / "digits.npz"
    np.savez(data, input=test_x.numpy(), labels=test_y.numpy())
    return {
        "name": "digits-int8",
        "model": {"source": "python", "name": model},
        # the images' own range: each row is judged where timed on seeded inputs (SQNR), which must lie in
        # the range the build was calibrated on
        "inputs": [{"name": "input", "min_shape": [1, 1, 8, 8], "opt_shape": [BATCH, 1, 8, 8],
                    "max_shape": [64, 1, 8, 8], "value_range": [0, 1]}],
        "device": "cpu", "precisions": ["fp32", "int8"], "variants": ["eager", "ort"],
        "calibration": {"source": "tensors", "path": str(data), "samples": 64, "eval_samples": 320, **calibration},
        "benchmark": {"mode": "fixed", "warmup": 1, "warmup_s": 0, "iterations": 5, "shapes": ["opt"],
                      "measure_ceiling": False, "isolation": "in_process"},
        "output": {"dir": str(tmp_path / "out"), "cold_start": False},
    }
