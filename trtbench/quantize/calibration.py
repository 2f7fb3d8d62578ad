"""Calibration and evaluation data for quantized builds (more: docs/int8.md, "Module notes")."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

import torch

from trtbench.core import schema
from trtbench.core.errors import UserInputError
from trtbench.quantize.common import CALIBRATION_METHODS, CalibrationBatches

SOURCES = ("random", "images", "tensors")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
TENSOR_SUFFIXES = (".npy", ".npz", ".pt")
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
LABELS_KEY = "labels"


@dataclass
class CalibrationConfig:
    """Where calibration and evaluation samples come from, how many, and how quantizers use them (docs/config.md)."""

    source: str = "random"
    path: Optional[str] = None
    samples: int = 64
    eval_samples: int = 128
    method: str = "minmax"
    per_channel: bool = True
    max_fp32_layers: int = 4
    seed: int = 0
    resize: Optional[int] = None
    mean: Optional[list[float]] = None
    std: Optional[list[float]] = None

    def validate(self, path: str) -> None:
        schema.require_choice(self.source, SOURCES, schema.join(path, "source"))
        schema.require_choice(self.method, CALIBRATION_METHODS, schema.join(path, "method"))
        for key in ("samples", "eval_samples", "resize"):
            schema.require_positive(getattr(self, key), schema.join(path, key))
        if self.max_fp32_layers < 0:
            raise UserInputError(schema.join(path, "max_fp32_layers"), "must not be negative",
                                 "use 0 (no fallback) or the most layers to keep in fp32")
        if self.source == "random":
            if self.path is not None:
                raise UserInputError(schema.join(path, "path"), "is set but source is 'random'",
                                     "use source: images (a folder) or source: tensors (a file), or drop 'path'")
            return
        if self.path is None:
            raise UserInputError(schema.join(path, "path"), f"source '{self.source}' needs a path",
                                 "a folder of JPEG/PNG images" if self.source == "images"
                                 else "a .npz, .pt or .npy file of arrays keyed by input name")
        where = Path(self.path).expanduser()
        if self.source == "images" and not where.is_dir():
            raise UserInputError(schema.join(path, "path"), f"no such folder: {where}",
                                 "give a folder of JPEG/PNG images (or of class subfolders of them)")
        if self.source == "tensors":
            if not where.is_file():
                raise UserInputError(schema.join(path, "path"), f"file not found: {where}",
                                     "give a .npz, .pt or .npy file "
                                     "(relative paths resolve from the current directory)")
            if where.suffix not in TENSOR_SUFFIXES:
                raise UserInputError(schema.join(path, "path"), f"{where.name}: not a {'/'.join(TENSOR_SUFFIXES)} file",
                                     "save the arrays with numpy.savez or torch.save, keyed by input name")


@dataclass(frozen=True, kw_only=True)
class CalibrationFacts:
    """Where the calibration samples came from, for the report (no path for random), how many, in what batches."""

    source: str
    path: Optional[str] = None
    samples: int
    eval_samples: int
    batch: int
    labels: bool

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "path" or self.source != "random"}


@dataclass
class CalibrationData:
    """Batches that calibrate, disjoint batches that judge accuracy, and the latter's labels if any."""

    calibration: CalibrationBatches
    evaluation: CalibrationBatches
    labels: Optional[torch.Tensor] = None  # one class index per evaluation sample
    facts: Optional[CalibrationFacts] = None


def _batch_size(input_specs) -> int:
    first = input_specs[0].opt_shape
    return first[0] if first else 1


def _batches(samples: list[torch.Tensor], batch: int) -> list[tuple[torch.Tensor, ...]]:
    """``samples``: one tensor per input, leading dim the samples; cut into whole batches of ``batch``."""
    count = samples[0].shape[0] // batch
    return [tuple(s[i * batch:(i + 1) * batch] for s in samples) for i in range(count)]


def _split(tensors: list[torch.Tensor], labels: Optional[torch.Tensor], cfg: CalibrationConfig, batch: int,
           where: str) -> CalibrationData:
    total = tensors[0].shape[0]
    calib_n, eval_n = _whole(cfg.samples, batch), _whole(cfg.eval_samples, batch)
    if calib_n + eval_n > total:
        raise UserInputError("calibration.samples", f"{where} holds {total} sample(s), fewer than samples + "
                             f"eval_samples = {calib_n} + {eval_n} (in whole batches of {batch})",
                             "add samples there, or lower calibration.samples / calibration.eval_samples")
    order = torch.randperm(total, generator=torch.Generator().manual_seed(cfg.seed))
    tensors = [t[order] for t in tensors]
    labels = labels[order] if labels is not None else None
    calibration = _batches([t[:calib_n] for t in tensors], batch)
    evaluation = _batches([t[calib_n:calib_n + eval_n] for t in tensors], batch)
    return CalibrationData(calibration, evaluation,
                           labels[calib_n:calib_n + eval_n] if labels is not None else None,
                           facts=CalibrationFacts(source=cfg.source, path=cfg.path, samples=calib_n,
                                                  eval_samples=eval_n, batch=batch, labels=labels is not None))


def _whole(count: int, batch: int) -> int:
    """``count`` rounded up to whole batches."""
    return math.ceil(count / batch) * batch


def _random(cfg: CalibrationConfig, input_specs, seed: int) -> CalibrationData:
    from trtbench.core.inputs import batch_shapes, make_inputs

    batch = _batch_size(input_specs)
    shapes = batch_shapes(input_specs, batch)
    calib = [make_inputs(input_specs, shapes, seed + 1000 + i, torch.device("cpu"))
             for i in range(_whole(cfg.samples, batch) // batch)]
    evaluation = [make_inputs(input_specs, shapes, seed + 100_000 + i, torch.device("cpu"))
                  for i in range(_whole(cfg.eval_samples, batch) // batch)]
    facts = CalibrationFacts(source="random", samples=len(calib) * batch, eval_samples=len(evaluation) * batch,
                             batch=batch, labels=False)
    return CalibrationData(calib, evaluation, None, facts=facts)


def _image_files(folder: Path) -> tuple[list[Path], Optional[list[int]]]:
    """The images of ``folder``, and their labels when it holds class subfolders (ImageFolder)."""
    classes = sorted(p.name for p in folder.iterdir() if p.is_dir())
    if classes:
        from torchvision.datasets import ImageFolder

        dataset = ImageFolder(str(folder), is_valid_file=lambda p: Path(p).suffix.lower() in IMAGE_SUFFIXES,
                              allow_empty=True)
        return [Path(p) for p, _ in dataset.samples], [label for _, label in dataset.samples]
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES), None


def _images(cfg: CalibrationConfig, input_specs) -> CalibrationData:
    from PIL import Image
    from torchvision import transforms

    if len(input_specs) != 1 or len(input_specs[0].opt_shape) != 4 or input_specs[0].opt_shape[1] not in (1, 3):
        raise UserInputError("calibration.source", "images calibrate a model with one N x C x H x W input with 1 or 3 "
                             f"channels; this one takes {[spec.opt_shape for spec in input_specs]}",
                             "use source: tensors with arrays shaped like the inputs")
    _, channels, height, width = input_specs[0].opt_shape
    mean = cfg.mean or (IMAGENET_MEAN if channels == 3 else (sum(IMAGENET_MEAN) / 3,))
    std = cfg.std or (IMAGENET_STD if channels == 3 else (sum(IMAGENET_STD) / 3,))
    for key, values in (("mean", mean), ("std", std)):
        if len(values) != channels:
            raise UserInputError(f"calibration.{key}",
                                 f"has {len(values)} value(s), the input has {channels} channel(s)",
                                 f"give one value per channel, e.g. "
                                 f"{list(IMAGENET_MEAN if key == 'mean' else IMAGENET_STD)}")
    resize = cfg.resize or round(min(height, width) * 256 / 224)
    transform = transforms.Compose([transforms.Resize(resize), transforms.CenterCrop((height, width)),
                                    *([transforms.Grayscale(1)] if channels == 1 else []),
                                    transforms.ToTensor(), transforms.Normalize(mean, std)])
    folder = Path(cfg.path).expanduser()
    files, labels = _image_files(folder)
    if not files:
        raise UserInputError("calibration.path", f"{folder}: no {'/'.join(IMAGE_SUFFIXES)} images here",
                             "put JPEG or PNG files there (or class subfolders of them)")
    images = []
    for file in files:
        try:
            with Image.open(file) as image:
                images.append(transform(image.convert("RGB")))
        except Exception as err:  # PIL raises several types for a broken file
            raise UserInputError("calibration.path", f"{file}: unreadable image ({err})",
                                 "remove or replace that file") from err
    return _split([torch.stack(images)], torch.tensor(labels) if labels is not None else None, cfg,
                  _batch_size(input_specs), str(folder))


def _load_arrays(path: Path, input_specs) -> dict[str, torch.Tensor]:
    names = [spec.name for spec in input_specs]
    try:
        if path.suffix == ".pt":
            data = torch.load(path, map_location="cpu", weights_only=True)
            if isinstance(data, torch.Tensor):
                data = {names[0]: data} if len(names) == 1 else {"": data}
        else:
            import numpy as np

            loaded = np.load(path, allow_pickle=False)
            data = {names[0]: loaded} if path.suffix == ".npy" else dict(loaded.items())
    except Exception as err:
        raise UserInputError("calibration.path", f"{path}: cannot be read ({err})",
                             "save it with numpy.save / numpy.savez or torch.save (tensors only)") from err
    if not isinstance(data, dict):
        raise UserInputError("calibration.path",
                             f"{path}: holds a {type(data).__name__}, not arrays keyed by input name",
                             f"save a mapping with keys {names}")
    return {str(k): torch.as_tensor(v) for k, v in data.items()}


def _tensors(cfg: CalibrationConfig, input_specs) -> CalibrationData:
    from trtbench.core.inputs import INPUT_DTYPES

    path = Path(cfg.path).expanduser()
    data = _load_arrays(path, input_specs)
    tensors = []
    for spec in input_specs:
        if spec.name not in data:
            raise UserInputError("calibration.path", f"{path}: no array for input '{spec.name}' (it has "
                                 f"{sorted(data) or 'none'})", "save one array per input, keyed by its name")
        array = data[spec.name]
        if tuple(array.shape[1:]) != tuple(spec.opt_shape[1:]):
            raise UserInputError("calibration.path", f"{path}: array '{spec.name}' is {tuple(array.shape)}, which does "
                                 f"not fit input '{spec.name}' (samples x {tuple(spec.opt_shape[1:])})",
                                 "save samples stacked on the first dim, each shaped like one input sample")
        tensors.append(array.to(INPUT_DTYPES[spec.dtype]))
    labels = data.get(LABELS_KEY)
    counts = {t.shape[0] for t in [*tensors, *([labels] if labels is not None else [])]}
    if len(counts) != 1:
        raise UserInputError("calibration.path",
                             f"{path}: the arrays hold different numbers of samples {sorted(counts)}",
                             "give every array (and labels) the same first dim")
    return _split(tensors, labels, cfg, _batch_size(input_specs), str(path))


def load_calibration(cfg: CalibrationConfig, input_specs, seed: int) -> CalibrationData:
    """The calibration and evaluation samples ``cfg`` names, on the CPU (bad input exits 2 naming the key)."""
    if cfg.source == "images":
        return _images(cfg, input_specs)
    if cfg.source == "tensors":
        return _tensors(cfg, input_specs)
    return _random(cfg, input_specs, seed)
