"""Model registry: torchvision, timm, transformers, built-in, Python and TorchScript models (docs/config.md)."""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch
from torch import nn

from trtbench.core import schema
from trtbench.core.errors import UserInputError
from trtbench.core.fsutil import require_readable_file

SOURCES = ("torchvision", "timm", "transformers", "builtin", "python", "torchscript")
BUILTIN_MODELS: dict[str, Callable[..., nn.Module]] = {}


@dataclass
class ModelConfig:
    """Which model to build: ``source`` + ``name`` (+ ``kwargs``, ``weights``); a transformers model may name its
    ``task`` (``causal-lm``) and come from a local Hugging Face folder (``path``)."""

    name: str = ""
    source: str = "torchvision"
    kwargs: dict = field(default_factory=dict)
    weights: Optional[str] = None
    label: Optional[str] = None  # the model's name in tables; default source:name plus kwargs
    task: Optional[str] = None  # transformers only: causal-lm (default: the bare model, AutoModel)
    path: Optional[str] = None  # transformers only: a local model folder (config.json, weights, tokenizer)

    def validate(self, path: str) -> None:
        schema.require_choice(self.source, SOURCES, schema.join(path, "source"))
        if not self.name and self.path is None:
            raise UserInputError(schema.join(path, "name"), "required key is missing",
                                 f"add 'name: ...' under '{path or 'model'}'")
        if self.weights is not None:
            require_readable_file(self.weights, schema.join(path, "weights"))
        check_model_exists(self, path)

    @property
    def id(self) -> str:
        """The model's id in cases: its label, else ``source:name`` with any constructor kwargs."""
        if self.label:
            return self.label
        kwargs = ",".join(f"{k}={v}" for k, v in sorted(self.kwargs.items()))
        return f"{self.source}:{self.path or self.name}" + (f"({kwargs})" if kwargs else "")


def register_builtin(name: str):
    """Decorator: register a factory ``(**kwargs) -> nn.Module`` as built-in model ``name``."""

    def decorate(factory):
        BUILTIN_MODELS[name] = factory
        return factory

    return decorate


def torchvision_model_names() -> list[str]:
    """Every torchvision classification model name."""
    import torchvision

    return sorted(torchvision.models.list_models(module=torchvision.models))


def builtin_model_names() -> list[str]:
    """The built-in models' names, once their modules are imported."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    return sorted(BUILTIN_MODELS)


def list_models() -> dict[str, list[str]]:
    """Model names by source, for ``trtbench models``."""
    return {"torchvision": torchvision_model_names(), "builtin": builtin_model_names()}


EXTRAS = {"timm": "timm", "transformers": "transformers"}  # source -> the extra that installs its library


def _import_source_library(source: str, key: str):
    """The library of an optional model source, or exit 2 naming the extra that installs it."""
    try:
        return importlib.import_module(source)
    except ImportError as err:
        raise UserInputError(key, f"model source '{source}' needs the {source} package, which is not installed "
                             f"({err})", f"pip install 'trtbench[{EXTRAS[source]}]'") from err


def _transformers_config(name: str, kwargs: dict, key: str):
    """A transformers config of model type ``name`` (``bert``, ``gpt2``...) with ``kwargs`` set, offline."""
    transformers = _import_source_library("transformers", key)
    try:
        return transformers.AutoConfig.for_model(name, **kwargs)
    except ValueError as err:
        known = sorted(transformers.CONFIG_MAPPING.keys())
        raise UserInputError(schema.join(key, "name"), f"unknown transformers model type '{name}'",
                             schema.suggest(name, known) or "use a model type such as bert, gpt2, distilbert") from err


def _import_factory(spec: str, key: str) -> Callable[..., nn.Module]:
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UserInputError(key, f"'{spec}' is not of the form 'pkg.module:factory'",
                             "write e.g. name: mypkg.models:build_model")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise UserInputError(key, f"cannot import module '{module_name}': {err}",
                             "install the package or add its folder to PYTHONPATH") from err
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise UserInputError(key, f"module '{module_name}' has no callable '{attr}'",
                             "name a function or class that returns an nn.Module")
    return factory


TASKS = ("causal-lm",)  # model.task: the head a transformers model is built with (default: none, AutoModel)


def _check_transformers_model(model_cfg, path: str) -> None:
    """A transformers model's type exists, its local folder holds a config, and a ``task`` is one its type has."""
    if model_cfg.path is not None:
        folder = Path(model_cfg.path).expanduser()
        if not (folder / "config.json").is_file():
            raise UserInputError(schema.join(path, "path"), f"{folder} holds no config.json",
                                 "point path: at a Hugging Face model folder (config.json, weights, optional "
                                 "tokenizer), e.g. one written by save_pretrained")
    else:
        _transformers_config(model_cfg.name, {}, path)
    if model_cfg.task is None:
        return
    schema.require_choice(model_cfg.task, TASKS, schema.join(path, "task"))
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    model_type = transformers_model_type(model_cfg)
    if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise UserInputError(schema.join(path, "task"), f"'{model_type}' has no language-model head, so it cannot be "
                             f"built for task {model_cfg.task}",
                             "use a decoder model type such as llama, gpt2, qwen2 or mistral, or drop task:")


def transformers_model_type(model_cfg) -> str:
    """The transformers model type (``llama``) of a transformers model: its name, or its folder's config."""
    return model_cfg.name if model_cfg.path is None else _folder_config(model_cfg).get("model_type", "")


def transformers_max_positions(model_cfg) -> int | None:
    """The most positions a transformers model takes (its config's ``max_position_embeddings``; None: unstated)."""
    config = (_folder_config(model_cfg) if model_cfg.path is not None
              else _transformers_config(model_cfg.name, model_cfg.kwargs, "model").to_dict())
    return config.get("max_position_embeddings") or config.get("n_positions")


def _folder_config(model_cfg) -> dict:
    return json.loads((Path(model_cfg.path).expanduser() / "config.json").read_text())


def check_model_exists(model_cfg, path: str) -> None:
    """Raise a :class:`UserInputError` naming ``path.name`` when the model cannot be found."""
    key = schema.join(path, "name")
    if (model_cfg.task is not None or model_cfg.path is not None) and model_cfg.source != "transformers":
        which = "task" if model_cfg.task is not None else "path"
        raise UserInputError(schema.join(path, which), f"is for source: transformers, not {model_cfg.source}",
                             f"use source: transformers, or drop {which}:")
    if model_cfg.source == "torchvision":
        names = torchvision_model_names()
    elif model_cfg.source == "timm":
        names = _import_source_library("timm", schema.join(path, "source")).list_models()
    elif model_cfg.source == "transformers":
        _check_transformers_model(model_cfg, path)
        return
    elif model_cfg.source == "builtin":
        names = builtin_model_names()
    elif model_cfg.source == "python":
        _import_factory(model_cfg.name, key)
        return
    else:
        require_readable_file(model_cfg.name, key)
        return
    if model_cfg.name not in names:
        hint = schema.suggest(model_cfg.name, names) or "run 'trtbench models' to list the names"
        raise UserInputError(key, f"unknown {model_cfg.source} model '{model_cfg.name}'", hint)


RANDOM_WEIGHTS_SEED = 0


def _instantiate(model_cfg) -> nn.Module:
    if model_cfg.source == "torchvision":
        import torchvision

        return torchvision.models.get_model(model_cfg.name, weights=None, **model_cfg.kwargs)
    if model_cfg.source == "timm":  # random weights: pretrained=False downloads nothing
        return _import_source_library("timm", "model.source").create_model(model_cfg.name, pretrained=False,
                                                                            **model_cfg.kwargs)
    if model_cfg.source == "transformers":  # from its config class, random weights, offline; or its local folder
        transformers = _import_source_library("transformers", "model.source")
        auto = transformers.AutoModelForCausalLM if model_cfg.task == "causal-lm" else transformers.AutoModel
        if model_cfg.path is not None:
            return auto.from_pretrained(Path(model_cfg.path).expanduser(), local_files_only=True, **model_cfg.kwargs)
        return auto.from_config(_transformers_config(model_cfg.name, model_cfg.kwargs, "model"))
    if model_cfg.source == "builtin":
        builtin_model_names()  # imports the built-in models' modules
        return BUILTIN_MODELS[model_cfg.name](**model_cfg.kwargs)
    if model_cfg.source == "python":
        return _import_factory(model_cfg.name, "model.name")(**model_cfg.kwargs)
    return torch.jit.load(model_cfg.name, map_location="cpu")


def build_model(model_cfg) -> nn.Module:
    """The configured model in eval mode on the CPU, its weights local or seeded random (the caller's RNG untouched)."""
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(RANDOM_WEIGHTS_SEED)
            model = _instantiate(model_cfg)
    except UserInputError:
        raise
    except TypeError as err:
        raise UserInputError("model.kwargs", f"{model_cfg.name} does not accept these arguments: {err}",
                             "check the names and values under model.kwargs against the model's constructor") from err
    except Exception as err:  # the model's own code failed: a config problem, not a trtbench crash
        raise UserInputError("model", f"building {model_cfg.source} model '{model_cfg.name}' failed: "
                             f"{type(err).__name__}: {err}", "check model.name, model.kwargs and the file") from err
    if not isinstance(model, nn.Module):
        raise UserInputError("model.name", f"the factory returned {type(model).__name__}, not an nn.Module",
                             "return an nn.Module instance from the factory")
    if model_cfg.weights:
        try:
            state = torch.load(model_cfg.weights, map_location="cpu", weights_only=True)
        except Exception as err:  # unpickling errors come in many types
            raise UserInputError("model.weights", f"cannot load {model_cfg.weights} as a state dict: {err}",
                                 "save weights with torch.save(model.state_dict(), path)") from err
        try:
            model.load_state_dict(state)
        except (RuntimeError, TypeError, AttributeError) as err:
            raise UserInputError("model.weights", f"state dict does not match the model: {err}",
                                 "point 'weights' at a state dict saved from this architecture") from err
    return model.eval()
