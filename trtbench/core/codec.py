"""Result parts as JSON data and back, by cattrs from their fields (docs/architecture.md, "Serialization")."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Optional

import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

CODEC = "trtbench.codec"  # field metadata: the field's override (:func:`key`)


def key(name: Optional[str] = None, rounded: Optional[int] = None, omit_default: Optional[bool] = None) -> dict:
    """A field's metadata: written as ``name``, ``rounded`` to so many decimals, ``omit_default`` or not."""
    hook = None if rounded is None else lambda values: [round(v, rounded) for v in values]
    return {CODEC: override(rename=name, unstruct_hook=hook, omit_if_default=omit_default)}


class Coded:
    """A dataclass written as a dict of its fields, read back by their types (missing or null: its default)."""

    def to_dict(self) -> dict:
        return converter.unstructure(self)

    @classmethod
    def from_dict(cls, data: dict) -> Any:
        return converter.structure(data, cls)


def _coded(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, Coded)


def _own(method: str) -> Any:
    """Whether a class has ``method`` of its own, not :class:`Coded`'s: it writes or reads itself."""
    return lambda cls: isinstance(cls, type) and hasattr(cls, method) and not _coded(cls)


def _numbers(tp: Any) -> bool:
    """Whether ``tp`` is a list of numbers or of such lists: kept as it is (a record's rounds, uncopied)."""
    args = typing.get_args(tp)
    return typing.get_origin(tp) is list and len(args) == 1 and (args[0] in (float, int) or _numbers(args[0]))


def _unstructure(cls: type) -> Any:
    made = make_dict_unstructure_fn(cls, converter, **_overrides(cls))
    after = getattr(cls, "WRITTEN_AFTER", {})

    def unstructure(value: Any) -> dict:
        out = {}
        for name, item in made(value).items():
            out[name] = item
            out.update((derived, getattr(value, derived)) for derived in after.get(name, ()))
        return out

    return unstructure


def _structure(cls: type) -> Any:
    made, hints = make_dict_structure_fn(cls, converter, **_overrides(cls)), typing.get_type_hints(cls)
    defaulted = {f.metadata[CODEC].rename or f.name if CODEC in f.metadata else f.name for f in dataclasses.fields(cls)
                 if type(None) not in typing.get_args(hints[f.name])
                 and (f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING)}
    read_with = getattr(cls, "READ_WITH", {})

    def structure(data: dict, _: Any) -> Any:
        value = made({k: v for k, v in data.items()
                      if (v is not None or k not in defaulted) and k not in read_with}, cls)
        return dataclasses.replace(value, **{name: _inner(hints[name]).from_dict(data.get(name), data.get(other))
                                             for name, other in read_with.items()})

    return structure


def _inner(tp: Any) -> Any:
    """``X`` of ``Optional[X]``, or ``tp``."""
    return next((arg for arg in typing.get_args(tp) if arg is not type(None)), tp)


def _overrides(cls: type) -> dict:
    return {f.name: f.metadata[CODEC] for f in dataclasses.fields(cls) if CODEC in f.metadata}


converter = cattrs.Converter(detailed_validation=False, unstruct_collection_overrides={tuple: list})
converter.register_structure_hook(float, lambda value, _: value)  # a JSON integer stays one
converter.register_unstructure_hook_func(_numbers, lambda values: values)
converter.register_structure_hook_func(_numbers, lambda values, _: values)
converter.register_unstructure_hook_func(  # mapping keys as JSON writes them
    lambda tp: typing.get_origin(tp) is dict and typing.get_args(tp)[:1] == (int,),
    lambda mapping: {str(k): converter.unstructure(v) for k, v in mapping.items()})
converter.register_unstructure_hook_func(_own("to_dict"), lambda value: value.to_dict())
converter.register_structure_hook_func(_own("from_dict"), lambda data, cls: cls.from_dict(data))
converter.register_unstructure_hook_factory(_coded, _unstructure)
converter.register_structure_hook_factory(_coded, _structure)
