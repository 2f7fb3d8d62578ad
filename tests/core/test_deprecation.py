"""An upstream deprecation as a fact: which warnings say it (the real ones torch 2.14 raises), its note in their
place, once, and every other warning kept."""

from __future__ import annotations

import warnings

import torch

from trtbench.core.deprecation import Deprecation, silenced, warning_lines
from trtbench.variants import get_variant
from trtbench.variants.torchscript_common import TORCHSCRIPT_DEPRECATION


def _raised(fn) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return caught


def test_torch_s_own_torch_jit_warnings_become_the_note_once_and_others_stay():
    def trace_and_warn():
        torch.jit.trace(torch.nn.Linear(3, 2), torch.ones(1, 3))
        warnings.warn("something else", UserWarning)

    caught = _raised(trace_and_warn)
    assert any("torch.jit.trace" in str(w.message) for w in caught), "torch 2.14 warns on every trace"
    assert warning_lines(caught, (TORCHSCRIPT_DEPRECATION,)) == [
        "TorchScript: deprecated in torch 2.14; successor: exported / aoti", "UserWarning: something else"]
    assert any(line.startswith("FutureWarning: `torch.jit.trace` is deprecated") for line in warning_lines(caught))


def test_only_deprecation_categories_match():
    fact = Deprecation("X", "lib 1.0", ("y",), (r"`x\.",))
    assert [fact.says(w) for w in _raised(lambda: [warnings.warn("`x.f` is deprecated", c)
                                                   for c in (FutureWarning, DeprecationWarning, UserWarning)])] == [
        True, True, False]
    assert Deprecation("X", "lib 1.0", (), (), instead="its .pt2 file").note == (
        "X: deprecated in lib 1.0; successor: its .pt2 file")


def test_silenced_hides_only_what_the_deprecation_says():
    def save_and_warn():
        with silenced((TORCHSCRIPT_DEPRECATION,)):
            warnings.warn("`torch.jit.save` is deprecated. Please switch to `torch.export`.", FutureWarning)
            warnings.warn("unrelated", FutureWarning)

    assert [str(w.message) for w in _raised(save_and_warn)] == ["unrelated"]


def test_the_torchscript_variants_name_their_deprecations_and_successors():
    notes = {name: [d.note for d in get_variant(name).deprecations]
             for name in ("traced", "scripted", "trt_traced", "trt_scripted", "trt", "exported", "eager")}
    assert notes["traced"] == notes["scripted"] == ["TorchScript: deprecated in torch 2.14; successor: exported / aoti"]
    assert notes["trt_traced"] == notes["trt_scripted"] == [
        "Torch-TensorRT's TorchScript frontend: deprecated in torch_tensorrt 2.14; successor: trt",
        "TorchScript: deprecated in torch 2.14; successor: trt"]
    assert notes["trt"] == ["TorchScript (its .ts file): deprecated in torch 2.14; successor: its .pt2 file "
                            "(ExportedProgram), saved beside it"]
    assert notes["exported"] == notes["eager"] == []
