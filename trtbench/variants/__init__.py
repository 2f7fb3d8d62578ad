"""Variant registry: each module in this package defines and registers one variant."""

from __future__ import annotations

from trtbench.core.registry import Registry
from trtbench.variants.base import Artifact, Built, BuildContext, NoOptions, RunnerVariant, Variant

VARIANTS: Registry[Variant] = Registry("variant", __name__)

__all__ = ["Artifact", "Built", "BuildContext", "NoOptions", "RunnerVariant", "Variant", "VARIANTS", "register",
           "get_variant", "variant_names", "variant_class", "build_order"]


register = VARIANTS.register
variant_names = VARIANTS.names
variant_class = VARIANTS.find


def get_variant(name: str) -> Variant:
    """A fresh instance of the variant called ``name`` (an UnknownName error, a KeyError, where there is none)."""
    return VARIANTS.get(name)()


def build_order(names: list[str]) -> list[str]:
    """``names`` plus the variants they start from, each after what it depends on; eager first."""
    order: list[str] = []

    def visit(name: str) -> None:
        dep = VARIANTS.get(name).depends_on
        if dep:
            visit(dep)
        if name not in order:
            order.append(name)

    for name in ["eager", *names]:
        visit(name)
    return order
