"""INT8 for the ``compiled`` and ``aoti`` variants: PT2E quantization through torchao (docs/int8.md)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Sequence

import torch
from torch import nn

from trtbench.quantize.common import CalibrationBatches, QuantizationUnavailable, QuantSettings

QUANTIZABLE_MODULES = (nn.Conv1d, nn.Conv2d, nn.Linear)  # X86InductorQuantizer's default_quantizable_ops, as modules
INDUCTOR_OPTIONS = {"freezing": True}  # the int8 kernels are freezing patterns


def _torchao():
    """torchao's PT2E entry points, or QuantizationUnavailable naming the version pair tried."""
    try:
        import torchao
    except ImportError as err:
        raise QuantizationUnavailable(f"torchao is not installed ({err}): pip install 'trtbench[int8]'") from err
    try:
        from torchao.quantization.pt2e import observer
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
        from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer
    except Exception as err:  # a torchao built for another torch fails in its own ways (imports, op registration)
        raise QuantizationUnavailable(f"torchao {torchao.__version__} does not work with torch {torch.__version__}: "
                                      f"{type(err).__name__}: {err}") from err
    return observer, prepare_pt2e, convert_pt2e, x86_inductor_quantizer


def quantizable_layers_pt2e(model: nn.Module) -> list[str]:
    """Qualified names of the modules the x86 quantizer quantizes (Conv1d/Conv2d/Linear), in order."""
    return [name for name, module in model.named_modules() if isinstance(module, QUANTIZABLE_MODULES)]


def _quantization_config(settings: QuantSettings, observer, xiq):
    """The x86 default config, with ``MinMaxObserver`` for ``minmax``; per-tensor weights are refused."""
    if not settings.per_channel:
        raise QuantizationUnavailable("PT2E on x86 lowers int8 convolutions only with per-channel weights "
                                      "(per-tensor ones stay fp32 kernels): use per_channel: true")
    config = xiq.get_default_x86_inductor_quantization_config()
    if settings.method != "minmax":
        return config
    minmax = observer.MinMaxObserver.with_args(eps=2 ** -12)  # the eps the default config gives its observers
    activation = dataclasses.replace(config.input_activation, observer_or_fake_quant_ctr=minmax)
    return dataclasses.replace(config, input_activation=activation, output_activation=activation)


def quantize_pt2e(model: nn.Module, example_inputs: tuple[torch.Tensor, ...], calibration: CalibrationBatches,
                  settings: QuantSettings, dynamic_shapes=None) -> torch.fx.GraphModule:
    """``model`` captured by a strict export and quantized by PT2E, the modules of ``settings.exclude`` kept fp32."""
    observer, prepare_pt2e, convert_pt2e, xiq = _torchao()
    settings.require_known(quantizable_layers_pt2e(model), "quantizable layers of the model")
    quantizer = xiq.X86InductorQuantizer()
    quantizer.set_global(_quantization_config(settings, observer, xiq))
    for name in settings.exclude:
        quantizer.set_module_name_qconfig(name, None)
    # by default dim 0 of every input left to export to decide (``Dim.AUTO``): calibration batches may differ in size
    shapes = tuple({0: torch.export.Dim.AUTO} if t.dim() else None for t in example_inputs) \
        if dynamic_shapes is None else dynamic_shapes
    with torch.no_grad():
        captured = torch.export.export(model, tuple(example_inputs), dynamic_shapes=shapes,
                                       strict=True).module()
        prepared = prepare_pt2e(captured, quantizer)
        for batch in calibration:
            prepared(*batch)
        return convert_pt2e(prepared)


class CompiledPT2E:
    """``torch.compile`` of a quantized graph, each call under Inductor's freezing (``settings``: the manifest's)."""

    def __init__(self, gm: torch.fx.GraphModule, mode: str | None = None):
        self.settings = {"mode": mode, "dynamic": False, "inductor_configs": dict(INDUCTOR_OPTIONS)}
        self.compiled = torch.compile(gm, mode=mode, dynamic=False)

    def __call__(self, *inputs):
        with torch._inductor.config.patch(self.settings["inductor_configs"]):
            return self.compiled(*inputs)


def aoti_package_pt2e(gm: torch.fx.GraphModule, example_inputs: Sequence[torch.Tensor], package_path: Path) -> Path:
    """An AOTInductor package of a quantized graph with Inductor's int8 kernels, for ``example_inputs``' shapes."""
    with torch.inference_mode(False), torch.no_grad():
        program = torch.export.export(gm, tuple(example_inputs))
        return Path(torch._inductor.aoti_compile_and_package(program, package_path=str(package_path),
                                                             inductor_configs=dict(INDUCTOR_OPTIONS)))


def aoti_int8_unavailable(input_specs) -> str | None:
    """Why an AOTInductor int8 package cannot serve these inputs (a dim that varies), or None."""
    varying = [spec.name for spec in input_specs if list(spec.min_shape) != list(spec.max_shape)]
    if not varying:
        return None
    import torchao

    return (f"aoti at int8 needs static shapes: with torch {torch.__version__} and torchao {torchao.__version__} an "
            f"AOTInductor int8 package of a dynamic dim computes wrong outputs (input(s) {', '.join(varying)} vary "
            f"from min_shape to max_shape); give them min_shape = opt_shape = max_shape, or use compiled at int8, "
            f"which compiles each shape")
