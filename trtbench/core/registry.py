"""Registries of plug-ins by name; a plug-in package's modules are imported at the first lookup."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Generic, Optional, TypeVar

from trtbench.core.schema import suggest

T = TypeVar("T")


class UnknownName(KeyError):
    """A name no class is registered under; its message names what was looked up and the names there are."""

    def __str__(self) -> str:
        return str(self.args[0])


class Registry(Generic[T]):
    """Classes by their ``name``, in registration order (``package``: loaded at first lookup)."""

    def __init__(self, what: str, package: Optional[str] = None):
        self.what, self._package = what, package
        self._classes: dict[str, type[T]] = {}

    def register(self, cls: type[T]) -> type[T]:
        """Class decorator: make ``cls`` available under ``cls.name`` (a later class of that name replaces it)."""
        self._classes[cls.name] = cls
        return cls

    def unregister(self, name: str) -> Optional[type[T]]:
        """Remove the class registered as ``name`` and return it (None where none is)."""
        return self._classes.pop(name, None)

    def find(self, name: str) -> Optional[type[T]]:
        """The class registered as ``name``, None where none is."""
        self._load()
        return self._classes.get(name)

    def get(self, name: str) -> type[T]:
        """The class registered as ``name``; :class:`UnknownName` (a KeyError) with :meth:`hint` where none is."""
        cls = self.find(name)
        if cls is None:
            raise UnknownName(f"unknown {self.what} '{name}': {self.hint(name)}")
        return cls

    def hint(self, name: object, among: Optional[list[str]] = None) -> str:
        """How to fix an unknown ``name``: the close one among ``among`` (default: all), or all of them."""
        known = self.names() if among is None else among
        return suggest(name, known) or f"known {self.what}s: {', '.join(known) or 'none'}"

    def names(self) -> list[str]:
        """Every registered name, in registration order."""
        self._load()
        return list(self._classes)

    def classes(self) -> list[type[T]]:
        """Every registered class, in registration order."""
        self._load()
        return list(self._classes.values())

    def _load(self) -> None:
        if self._package is not None:
            package, self._package = importlib.import_module(self._package), None
            for info in pkgutil.iter_modules(package.__path__):
                if info.name != "base":
                    importlib.import_module(f"{package.__name__}.{info.name}")
