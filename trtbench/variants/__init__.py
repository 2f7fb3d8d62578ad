"""Variant registry. Each module in this package defines and registers one variant;
adding a variant is adding a module."""

from __future__ import annotations

from trtbench.core.plugins import import_plugins
from trtbench.variants.base import Artifact, Built, BuildContext, NoOptions, Variant

_REGISTRY: dict[str, type[Variant]] = {}
_loaded = False

__all__ = ["Artifact", "Built", "BuildContext", "NoOptions", "Variant", "register", "get_variant",
           "variant_names", "variant_class", "build_order"]


def register(cls: type[Variant]) -> type[Variant]:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    _REGISTRY[cls.name] = cls
    return cls


def _load_all() -> None:
    global _loaded
    if not _loaded:
        import_plugins(__name__, __path__)
        _loaded = True


def variant_names() -> list[str]:
    """Names of all registered variants."""
    _load_all()
    return list(_REGISTRY)


def get_variant(name: str) -> Variant:
    """A fresh instance of the variant called ``name``."""
    _load_all()
    return _REGISTRY[name]()


def variant_class(name: str) -> type[Variant] | None:
    """The registered class called ``name`` (None if there is none)."""
    _load_all()
    return _REGISTRY.get(name)


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
