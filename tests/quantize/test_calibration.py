"""The calibration section (sources, disjoint calibration and evaluation samples, bad input exits 2
naming the key and the file) and the INT8 accuracy figures."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from trtbench.measure.accuracy import int8_accuracy, judge_int8
from trtbench.quantize.calibration import load_calibration
from trtbench.cli import main
from trtbench.config.config import Int8Budget, config_from_dict
from trtbench.core.errors import UserInputError


def int8_config(tiny_config, **calibration) -> dict:
    tiny_config.update(precisions=["fp32", "int8"], variants=["eager", "ort"])
    tiny_config["calibration"] = {"samples": 4, "eval_samples": 4, **calibration}
    return tiny_config


def expect_exit_2(tiny_config, write_config, capsys, *fragments):
    path = write_config(tiny_config)
    assert main(["--config", str(path)]) == 2
    err = capsys.readouterr().err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    assert "fix:" in err and not (path.parent / "out").exists()


def write_images(folder, count: int, size=(20, 24), classes=None):
    from PIL import Image

    rng = np.random.default_rng(0)
    for i in range(count):
        where = folder / classes[i % len(classes)] if classes else folder
        where.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (*size, 3), dtype=np.uint8)).save(where / f"img{i}.png")


def test_a_missing_image_folder_exits_2_naming_the_key(tiny_config, write_config, capsys, tmp_path):
    int8_config(tiny_config, source="images", path=str(tmp_path / "nowhere"))
    expect_exit_2(tiny_config, write_config, capsys, "calibration.path", "nowhere")


def test_an_unreadable_image_exits_2_naming_the_file(tiny_config, write_config, capsys, tmp_path):
    write_images(tmp_path / "images", 10)
    (tmp_path / "images" / "broken.png").write_bytes(b"not a png")
    int8_config(tiny_config, source="images", path=str(tmp_path / "images"))
    expect_exit_2(tiny_config, write_config, capsys, "calibration.path", "broken.png", "unreadable image")


def test_tensors_that_do_not_fit_the_inputs_exit_2_naming_the_file(tiny_config, write_config, capsys, tmp_path):
    np.savez(tmp_path / "data.npz", input=np.zeros((16, 3, 8, 8), np.float32))  # the input is N x 3 x 16 x 16
    int8_config(tiny_config, source="tensors", path=str(tmp_path / "data.npz"))
    expect_exit_2(tiny_config, write_config, capsys, "calibration.path", "data.npz", "does not fit input 'input'")


def test_too_few_samples_exit_2(tiny_config, write_config, capsys, tmp_path):
    np.savez(tmp_path / "data.npz", input=np.zeros((5, 3, 16, 16), np.float32))
    int8_config(tiny_config, source="tensors", path=str(tmp_path / "data.npz"))
    expect_exit_2(tiny_config, write_config, capsys, "calibration.samples", "holds 5 sample(s)")


@pytest.mark.parametrize("section, where", [
    ({"method": "kl"}, "calibration.method"),
    ({"source": "imagez"}, "calibration.source"),
    ({"source": "tensors"}, "calibration.path"),
    ({"samples": 0}, "calibration.samples"),
    ({"max_fp32_layers": -1}, "calibration.max_fp32_layers"),
])
def test_bad_calibration_keys_are_named(tiny_config, section, where):
    tiny_config["calibration"] = section
    with pytest.raises(UserInputError) as info:
        config_from_dict(tiny_config)
    assert info.value.where == where


@pytest.mark.parametrize("budget, where", [({"top1_agree_min": 1.5}, "tolerances.int8.top1_agree_min"),
                                           ({"sqnr": 20}, "tolerances.int8.sqnr")])
def test_the_int8_budget_is_validated(tiny_config, budget, where):
    tiny_config["tolerances"] = {"int8": budget}
    with pytest.raises(UserInputError) as info:
        config_from_dict(tiny_config)
    assert info.value.where == where


def test_the_int8_budget_defaults():
    budget = config_from_dict({"name": "x", "model": {"name": "resnet18"},
                               "inputs": [{"shape": [1, 3, 8, 8]}]}).tolerances["int8"]
    assert (budget.top1_agree_min, budget.sqnr_db_min) == (0.99, 20)


def test_an_image_folder_of_classes_gives_labels_and_disjoint_batches(tiny_config, tmp_path):
    write_images(tmp_path / "images", 12, classes=["cat", "dog"])
    config = config_from_dict(int8_config(tiny_config, source="images", path=str(tmp_path / "images")))
    data = load_calibration(config.calibration, config.inputs, seed=0)
    assert data.facts.source == "images"
    assert [tuple(b[0].shape) for b in data.calibration] == [(2, 3, 16, 16)] * 2  # opt batch 2, 4 samples
    assert len(data.evaluation) == 2 and data.labels is not None and set(data.labels.tolist()) <= {0, 1}
    calib = torch.cat([b[0] for b in data.calibration])
    evaluation = torch.cat([b[0] for b in data.evaluation])
    assert not any(torch.equal(c, e) for c in calib for e in evaluation)  # disjoint
    assert abs(float(calib.mean())) < 1.5  # normalized, not raw 0..255


def test_random_calibration_is_seeded_and_labelled_not_representative(tiny_config):
    config = config_from_dict(int8_config(tiny_config))
    first, again = (load_calibration(config.calibration, config.inputs, seed=0) for _ in range(2))
    assert first.facts.source == "random" and first.labels is None
    assert all(torch.equal(a[0], b[0]) for a, b in zip(first.calibration, again.calibration))
    assert not torch.equal(first.calibration[0][0], first.evaluation[0][0])


def test_accuracy_figures():
    torch.manual_seed(0)
    ref = [torch.randn(n, 10) + 5 * torch.nn.functional.one_hot(torch.randint(0, 10, (n,)), 10) for n in (50, 30)]
    same = int8_accuracy(ref, ref, labels=torch.cat(ref).argmax(1))
    assert same.top1_agree == 1 and same.top5_overlap == 1 and math.isinf(same.sqnr_db) and same.top1 == 1
    noisy = [r + 0.01 * torch.randn_like(r) for r in ref]
    close = int8_accuracy(noisy, ref)
    assert 40 < close.sqnr_db < 50 and close.cosine_min > 0.999  # noise power 1e-4 of a signal of about 3.5
    assert judge_int8(close, Int8Budget()).ok
    wrong = int8_accuracy([torch.randn_like(r) for r in ref], ref)
    verdict = judge_int8(wrong, Int8Budget())
    assert not verdict.ok and "top-1 agreement" in verdict.reason and "SQNR" in verdict.reason


def test_an_int8_row_is_judged_again_where_it_is_timed():
    """Bug: the latency scenario kept the build-time judgement and dropped the check at the timed point.
    There the call's output is judged by the budget's SQNR (its top-1 agreement on seeded random inputs is
    kept, not judged), and a build that passed on the evaluation samples fails where its timed call misses."""
    from trtbench.measure.accuracy import int8_where_timed

    torch.manual_seed(0)
    reference = torch.randn(32, 10)
    built = judge_int8(int8_accuracy([reference.clone()], [reference]), Int8Budget()).to_dict()
    reference[0, :2] = torch.tensor([4.0, 3.999])  # a near tie, as random inputs give
    flipped = reference.clone()
    flipped[0, 1] = 4.001  # one sample of 32 changes class: agreement 0.969, the SQNR still high
    kept = int8_where_timed(built, flipped, reference, Int8Budget())
    assert kept["ok"] and kept["top1_agree"] == built["top1_agree"]  # the evaluation samples' figures stay
    assert kept["where_timed"]["top1_agree"] < 0.99 and kept["where_timed"]["top1_agree_min"] is None
    noisy = int8_where_timed(built, reference + 0.5 * torch.randn_like(reference), reference, Int8Budget())
    assert not noisy["ok"] and noisy["where_timed"]["sqnr_db"] < 20
    assert noisy["reason"].startswith("where timed: SQNR") and "value_range" in noisy["reason"]
