"""Variant registry. Each module in this package defines and registers one variant;
adding a variant is adding a module."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from trtbench import schema
from trtbench.errors import UserInputError
from trtbench.variants.base import Artifact, Built, BuildContext, NoOptions, Variant

_REGISTRY: dict[str, type[Variant]] = {}
_loaded = False

__all__ = ["Artifact", "Built", "BuildContext", "NoOptions", "Variant", "register", "get_variant",
           "variant_names", "parse_variant_entries", "build_order"]


def register(cls: type[Variant]) -> type[Variant]:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    _REGISTRY[cls.name] = cls
    return cls


def _load_all() -> None:
    global _loaded
    if not _loaded:
        for info in pkgutil.iter_modules(__path__):
            if info.name != "base":
                importlib.import_module(f"{__name__}.{info.name}")
        _loaded = True


def variant_names() -> list[str]:
    """Names of all registered variants."""
    _load_all()
    return list(_REGISTRY)


def get_variant(name: str) -> Variant:
    """A fresh instance of the variant called ``name``."""
    _load_all()
    return _REGISTRY[name]()


def parse_variant_entries(entries: Any, path: str) -> list:
    """Validate the ``variants`` list: names, or single-key mappings ``{name: {options}}``."""
    from trtbench.config import VariantEntry

    _load_all()
    if not isinstance(entries, list) or not entries:
        raise UserInputError(path, f"expected a non-empty list, got {entries!r}",
                             "write e.g. variants: [eager, traced, scripted]")
    parsed, seen = [], set()
    for i, entry in enumerate(entries):
        key = f"{path}[{i}]"
        if isinstance(entry, VariantEntry):
            parsed.append(entry)
            seen.add(entry.name)
            continue
        if isinstance(entry, dict) and len(entry) == 1:
            name, options = next(iter(entry.items()))
        elif isinstance(entry, str):
            name, options = entry, None
        else:
            raise UserInputError(key, f"expected a variant name or {{name: {{options}}}}, got {entry!r}",
                                 "write e.g. 'traced' or '{trt: {min_block_size: 3}}'")
        if name not in _REGISTRY:
            hint = schema.suggest(name, _REGISTRY) or f"known variants: {', '.join(_REGISTRY)}"
            raise UserInputError(key, f"unknown variant '{name}'", hint)
        if not _REGISTRY[name].timed:
            dependents = [n for n, c in _REGISTRY.items() if c.depends_on == name]
            first, *others = sorted(dependents, key=lambda n: (len(n), n))  # the plainest one first: ort
            also = f"; {', '.join(others)} build from it too" if others else ""
            raise UserInputError(key, f"'{name}' is a build step, not a variant to time",
                                 f"list {first} instead (it builds {name} first){also}")
        if name in seen:
            raise UserInputError(key, f"variant '{name}' is listed twice", "list each variant once")
        seen.add(name)
        cls = _REGISTRY[name]
        parsed.append(VariantEntry(name=name, options=schema.from_dict(cls.Options, options, f"{key}.{name}")))
    return parsed


def build_order(names: list[str]) -> list[str]:
    """``names`` plus the variants they start from, each after what it depends on; eager first."""
    _load_all()
    order: list[str] = []

    def visit(name: str) -> None:
        dep = _REGISTRY[name].depends_on
        if dep:
            visit(dep)
        if name not in order:
            order.append(name)

    for name in ["eager", *names]:
        visit(name)
    return order
