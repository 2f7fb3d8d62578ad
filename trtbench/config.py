"""The run config: dataclasses that are both the YAML schema and the Python API.

``load_config(path)`` reads YAML, validates every key (unknown keys, types, shape bounds,
counts, model and variant names, device) and returns a :class:`Config`. Nothing is
written to disk while loading, so a bad config leaves no output behind.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Optional

import yaml

from trtbench import schema
from trtbench.errors import UserInputError
from trtbench.profiling.config import ProfileConfig

SOURCES = ("torchvision", "builtin", "python", "torchscript")
SHAPE_LABELS = ("min", "opt", "max")
DTYPES = ("float32", "float16", "bfloat16", "int64", "int32", "bool")
DEVICE_HINT = "use 'auto', 'cpu', 'cuda' or 'cuda:N'"


@dataclass
class ModelConfig:
    """Which model to build: ``source`` + ``name`` (+ constructor ``kwargs``, optional ``weights``)."""

    name: str
    source: str = "torchvision"
    kwargs: dict = field(default_factory=dict)
    weights: Optional[str] = None

    def validate(self, path: str) -> None:
        schema.require_choice(self.source, SOURCES, schema.join(path, "source"))
        if self.weights is not None:
            require_readable_file(self.weights, schema.join(path, "weights"))
        from trtbench.models import check_model_exists

        check_model_exists(self, path)


@dataclass
class InputConfig:
    """One model input: a static ``shape`` or dynamic ``min_shape``/``opt_shape``/``max_shape``."""

    name: str = "input"
    dtype: str = "float32"
    shape: Optional[list[int]] = None
    min_shape: Optional[list[int]] = None
    opt_shape: Optional[list[int]] = None
    max_shape: Optional[list[int]] = None
    value_range: Optional[list[float]] = None

    def validate(self, path: str) -> None:
        schema.require_choice(self.dtype, DTYPES, schema.join(path, "dtype"))
        dynamic = [self.min_shape, self.opt_shape, self.max_shape]
        if self.shape is not None:
            if any(s is not None for s in dynamic):
                raise UserInputError(path, "has both 'shape' and min/opt/max shapes",
                                     "give either 'shape' (static) or all of min_shape, opt_shape, max_shape (dynamic)")
            self.min_shape = self.opt_shape = self.max_shape = list(self.shape)
        elif any(s is None for s in dynamic):
            missing = [n for n, s in zip(("min_shape", "opt_shape", "max_shape"), dynamic) if s is None]
            raise UserInputError(path, f"missing {', '.join(missing)}",
                                 "give either 'shape' (static) or all of min_shape, opt_shape, max_shape (dynamic)")
        for label in SHAPE_LABELS:
            shape = self.shape_for(label)
            key = schema.join(path, "shape" if self.shape is not None else f"{label}_shape")
            if not shape:
                raise UserInputError(key, "is empty", "list one size per dimension, e.g. [1, 3, 224, 224]")
            for dim, size in enumerate(shape):
                if size <= 0:
                    raise UserInputError(key, f"dim {dim} is {size}", "every dimension must be a positive integer")
        ranks = {len(self.shape_for(label)) for label in SHAPE_LABELS}
        if len(ranks) != 1:
            raise UserInputError(path, "min_shape, opt_shape and max_shape have different ranks",
                                 "give the same number of dimensions in all three")
        for dim, (lo, opt, hi) in enumerate(zip(self.min_shape, self.opt_shape, self.max_shape)):
            if not lo <= opt <= hi:
                raise UserInputError(schema.join(path, "opt_shape"),
                                     f"dim {dim} violates min <= opt <= max ({lo} <= {opt} <= {hi})",
                                     f"choose sizes so that min_shape[{dim}] <= opt_shape[{dim}] <= max_shape[{dim}]")
        if self.value_range is not None:
            if len(self.value_range) != 2 or self.value_range[0] >= self.value_range[1]:
                raise UserInputError(schema.join(path, "value_range"), f"got {self.value_range}",
                                     "give [low, high] with low < high")
        elif not self.dtype.startswith(("float", "bfloat")):
            raise UserInputError(schema.join(path, "value_range"), f"is required for dtype {self.dtype}",
                                 "give [low, high) for integer inputs, e.g. [0, 1000] for token ids")

    @property
    def is_dynamic(self) -> bool:
        return not (self.min_shape == self.opt_shape == self.max_shape)

    def shape_for(self, label: str) -> list[int]:
        """The concrete shape at ``label`` (min, opt or max)."""
        return {"min": self.min_shape, "opt": self.opt_shape, "max": self.max_shape}[label]


@dataclass
class BenchmarkConfig:
    """How to time: warm-up, fixed or adaptive iteration count, shapes, threads."""

    warmup: int = 10
    iterations: int = 100
    shapes: list[str] = field(default_factory=lambda: list(SHAPE_LABELS))
    threads: Optional[int] = None
    mode: str = "fixed"
    target_rel_ci: float = 0.01
    max_time_s: float = 30.0
    min_iterations: int = 10
    cudnn_benchmark: bool = True
    seed: int = 0

    def validate(self, path: str) -> None:
        for name in ("iterations", "threads", "max_time_s", "min_iterations", "target_rel_ci"):
            schema.require_positive(getattr(self, name), schema.join(path, name))
        if self.warmup < 0:
            raise UserInputError(schema.join(path, "warmup"), f"must not be negative, got {self.warmup}",
                                 "set it to 0 (no warm-up) or more")
        schema.require_choice(self.mode, ("fixed", "adaptive"), schema.join(path, "mode"))
        if not self.shapes:
            raise UserInputError(schema.join(path, "shapes"), "is empty", "list at least one of: min, opt, max")
        for i, label in enumerate(self.shapes):
            schema.require_choice(label, SHAPE_LABELS, schema.join(path, f"shapes[{i}]"))


@dataclass
class Tolerance:
    """Accuracy bounds against eager fp32: pass when ``max |out - ref| <= atol + rtol * max |ref|``."""

    atol: float
    rtol: float

    def validate(self, path: str) -> None:
        for name in ("atol", "rtol"):
            if getattr(self, name) < 0:
                raise UserInputError(schema.join(path, name), "must not be negative", "use 0 or a positive number")


def default_tolerances() -> dict[str, Tolerance]:
    # fp32 allows TF32 math on GPUs (cuDNN convolutions, TensorRT by default): about 5e-4 of the
    # output scale for a ResNet34, so 5e-3 leaves a margin and still fails any real error.
    return {"fp32": Tolerance(atol=1e-5, rtol=5e-3), "fp16": Tolerance(atol=1e-3, rtol=5e-2)}


@dataclass
class OutputConfig:
    """Where results go and whether deployable artifacts are saved."""

    dir: Optional[str] = None
    save_artifacts: bool = True


@dataclass
class VariantEntry:
    """One requested variant and its options (the variant's own Options dataclass)."""

    name: str
    options: Any = None


@dataclass
class Config:
    """A whole run. Build one with :func:`load_config` or :func:`config_from_dict`."""

    name: str
    model: ModelConfig
    inputs: list[InputConfig]
    device: str = "auto"
    precisions: list[str] = field(default_factory=lambda: ["fp32"])
    channels_last: bool = False
    variants: list[Any] = field(default_factory=lambda: ["eager", "traced", "scripted"])
    benchmark: BenchmarkConfig = field(default_factory=BenchmarkConfig)
    tolerances: dict = field(default_factory=dict)
    output: OutputConfig = field(default_factory=OutputConfig)
    profile: Optional[ProfileConfig] = None

    def validate(self, path: str) -> None:
        from trtbench.precision import PRECISIONS
        from trtbench.variants import parse_variant_entries

        if not self.inputs:
            raise UserInputError("inputs", "is empty", "list at least one input with a shape")
        names = [i.name for i in self.inputs]
        if len(set(names)) != len(names):
            raise UserInputError("inputs", f"duplicate input names {names}", "give each input a unique name")
        check_device(self.device, "device")
        if not self.precisions:
            raise UserInputError("precisions", "is empty", "list at least one of: " + ", ".join(PRECISIONS))
        for i, p in enumerate(self.precisions):
            schema.require_choice(p, PRECISIONS, f"precisions[{i}]")
        self.variants = parse_variant_entries(self.variants, "variants")
        tolerances = default_tolerances()
        for key, value in self.tolerances.items():
            schema.require_choice(key, PRECISIONS, schema.join("tolerances", key))
            tolerances[key] = schema.from_dict(Tolerance, value, schema.join("tolerances", key))
        self.tolerances = tolerances
        if self.output.dir is None:
            self.output.dir = str(Path("results") / self.name)
        if self.profile is not None:
            self.profile.check_against(self.variant_names, self.precisions, "profile")

    @property
    def variant_names(self) -> list[str]:
        return [v.name for v in self.variants]

    def to_dict(self) -> dict:
        """The resolved config as plain data (for results.json and the manifest)."""
        return dataclasses.asdict(self)


def check_device(device: str, path: str) -> None:
    """Reject malformed devices and CUDA devices this machine does not have."""
    import torch

    if device in ("auto", "cpu"):
        return
    if device == "cuda" or device.startswith("cuda:"):
        index = device.partition(":")[2]
        if index and not index.isdigit():
            raise UserInputError(path, f"malformed device '{device}'", DEVICE_HINT)
        if not torch.cuda.is_available():
            raise UserInputError(path, f"'{device}' requested but CUDA is not available on this machine",
                                 "use 'device: cpu' or 'device: auto', or run on a machine with an NVIDIA GPU "
                                 "(docker run --gpus all ...)")
        if index and int(index) >= torch.cuda.device_count():
            raise UserInputError(path, f"'{device}' requested but only {torch.cuda.device_count()} GPU(s) exist",
                                 f"use an index below {torch.cuda.device_count()}")
        return
    raise UserInputError(path, f"unknown device '{device}'", DEVICE_HINT)


def resolve_device(device: str) -> str:
    """'auto' becomes 'cuda' when a GPU is present, else 'cpu'."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def require_readable_file(path: str, key: str) -> Path:
    """Return ``path`` as a Path, or raise naming ``key`` when it is missing or unreadable."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise UserInputError(key, f"file not found: {p}", "check the path (relative paths resolve from the current directory)")
    try:
        with p.open("rb") as fh:
            fh.read(1)
    except OSError as err:
        raise UserInputError(key, f"cannot read {p}: {err.strerror}", "check the file's permissions") from err
    return p


def bundled_config_dir() -> Path:
    """The folder of configs that ship with trtbench (resolved for bare ``--config`` names)."""
    return Path(str(resources.files("trtbench") / "configs"))


def resolve_config_path(name: str) -> Path:
    """A config path as given, or a bare name (``resnet34`` / ``resnet34.yaml``) from the bundled configs."""
    path = Path(name).expanduser()
    if path.is_file():
        return path
    if path.parent == Path("."):
        for candidate in (name, f"{name}.yaml"):
            bundled = bundled_config_dir() / candidate
            if bundled.is_file():
                return bundled
    known = sorted(p.name for p in bundled_config_dir().glob("*.yaml"))
    hint = schema.suggest(path.name, known) or f"bundled configs: {', '.join(known)}"
    raise UserInputError("--config", f"file not found: {name}", hint)


def read_yaml(path: Path) -> Any:
    """Parse a YAML file; syntax errors name the file and line."""
    require_readable_file(str(path), "--config")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(err, "problem", None) or str(err)
        raise UserInputError(where, f"YAML syntax error: {problem}", "fix the YAML at that line (indentation, colons, brackets)") from err


def config_from_dict(data: Any) -> Config:
    """Validate plain data (as parsed from YAML) into a :class:`Config`."""
    return schema.from_dict(Config, data)


def load_config(path: str | Path, *, device: str | None = None, variants: list[str] | None = None,
                output_dir: str | None = None, profile: bool = False) -> Config:
    """Read a config file, apply command-line overrides, and validate it.

    ``profile=True`` turns the ``profile:`` section on (with its defaults when the file has none).
    """
    resolved = resolve_config_path(str(path))
    data = read_yaml(resolved)
    if not isinstance(data, dict):
        raise UserInputError(str(resolved), "the config must be a YAML mapping", "start with 'name: ...' and 'model: ...' keys")
    if device is not None:
        data["device"] = device
    if variants is not None:
        data["variants"] = variants
    if output_dir is not None:
        output = data.get("output")
        data["output"] = {**(output if isinstance(output, dict) else {}), "dir": output_dir}
    if profile:
        section = data.get("profile")
        data["profile"] = {**(section if isinstance(section, dict) else {}), "enabled": True}
    return config_from_dict(data)
