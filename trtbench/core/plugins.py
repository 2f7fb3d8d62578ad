"""Plug-in packages: a package whose every module registers one thing (a variant, a decoder) when imported."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Iterable


def import_plugins(package: str, path: Iterable[str], skip: tuple[str, ...] = ("base",)) -> None:
    """Import every module of ``package`` (its ``__path__``), but those named in ``skip``, so each registers itself."""
    for info in pkgutil.iter_modules(path):
        if info.name not in skip:
            importlib.import_module(f"{package}.{info.name}")
