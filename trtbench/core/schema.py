"""Typed dataclasses from plain YAML data, with errors that name the key path and the fix."""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from typing import Any, Callable, TypeVar, Union

from trtbench.core.errors import UserInputError

T = TypeVar("T")
INLINE = "trtbench.schema.inline"  # field metadata: the field's dataclass takes its keys from the section


def inline(factory: Callable[[], Any]) -> Any:
    """A field holding a dataclass whose keys sit in the enclosing section (default: ``factory()``)."""
    return dataclasses.field(default_factory=factory, metadata={INLINE: True})

_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false", dict: "a mapping"}


def suggest(name: str, choices) -> str:
    """A 'did you mean' hint for ``name`` among ``choices`` (empty when nothing is close)."""
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else ""


def describe(tp: Any) -> str:
    """Human wording for a type annotation."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        text = " or ".join(describe(a) for a in args if a is not type(None))
        return text + " (or null)" if type(None) in args else text
    if origin is list:
        return f"a list of {describe(args[0]).removeprefix('a ').removeprefix('an ')}s" if args else "a list"
    if origin is dict or dataclasses.is_dataclass(tp):
        return "a mapping"
    return _TYPE_NAMES.get(tp, getattr(tp, "__name__", str(tp)))


def join(path: str, key: Any) -> str:
    """The key path of ``key`` inside ``path``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def convert(value: Any, tp: Any, path: str) -> Any:
    """Check ``value`` against annotation ``tp`` and return it converted (dataclasses built)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return convert(value, arg, path)
            except UserInputError as err:
                errors.append(err)
        if len(errors) == 1:
            raise errors[0]
        raise UserInputError(path, f"expected {describe(tp)}, got {value!r}", f"set '{path}' to {describe(tp)}")
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, value, path)
    if origin is list:
        if not isinstance(value, list):
            raise UserInputError(path, f"expected {describe(tp)}, got {value!r}",
                                 f"write '{path}' as a YAML list, e.g. [1, 2]")
        return [convert(item, args[0], join(path, i)) for i, item in enumerate(value)] if args else list(value)
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise UserInputError(path, f"expected a mapping, got {value!r}",
                                 f"write '{path}' as a YAML mapping of key: value")
        return dict(value)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if (tp in (int, float) and isinstance(value, bool)) or (isinstance(tp, type) and not isinstance(value, tp)):
        raise UserInputError(path, f"expected {describe(tp)}, got {value!r}", f"set '{path}' to {describe(tp)}")
    return value


def from_dict(cls: type[T], data: Any, path: str = "") -> T:
    """Dataclass ``cls`` from ``data``, keys and types checked, then its ``prepare`` and ``validate`` if any."""
    where = path or "config"
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise UserInputError(where, f"expected a mapping, got {data!r}",
                             f"write '{where}' as a YAML mapping of key: value")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    hints = typing.get_type_hints(cls)
    owner: dict[str, str | None] = {}  # key -> the inline field that takes it (None: the field of that name)
    for name, field in fields.items():
        if field.metadata.get(INLINE):
            owner.update((f.name, name) for f in dataclasses.fields(hints[name]) if f.init)
        else:
            owner[name] = None
    for key in data:
        if key not in owner:
            hint = suggest(key, owner) or f"known keys: {', '.join(owner)}"
            raise UserInputError(join(path, key), "unknown key", hint)
    kwargs = {}
    for name, field in fields.items():
        if field.metadata.get(INLINE):
            kwargs[name] = from_dict(hints[name], {k: v for k, v in data.items() if owner[k] == name}, path)
        elif name in data:
            kwargs[name] = convert(data[name], hints[name], join(path, name))
        elif field.default is not dataclasses.MISSING:
            kwargs[name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            kwargs[name] = field.default_factory()
        else:
            raise UserInputError(join(path, name), "required key is missing", f"add '{name}: ...' under '{where}'")
    prepare = getattr(cls, "prepare", None)
    if callable(prepare):
        kwargs = prepare(kwargs, path)
    obj = cls(**kwargs)
    validate = getattr(obj, "validate", None)
    if callable(validate):
        validate(path)
    return obj


def require_positive(value: float | int | None, path: str) -> None:
    """Reject counts and durations that are zero or negative."""
    if value is not None and value <= 0:
        raise UserInputError(path, f"must be positive, got {value}", f"set '{path}' to a value greater than 0")


def require_positive_fields(section: Any, names: tuple[str, ...], path: str) -> None:
    """:func:`require_positive` for each attribute of ``section`` (a config section at ``path``) named in ``names``."""
    for name in names:
        require_positive(getattr(section, name), join(path, name))


def require_choice(value: str, choices, path: str) -> None:
    """Reject a value outside ``choices`` with a close-match hint."""
    if value not in choices:
        hint = suggest(value, choices) or f"choose one of: {', '.join(map(str, choices))}"
        raise UserInputError(path, f"unknown value '{value}'", hint)
