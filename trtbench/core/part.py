"""Result parts: the frozen values a scenario returns, each saving and loading itself, registered here."""

from __future__ import annotations

from typing import ClassVar, Iterator, Optional, Protocol, runtime_checkable


@runtime_checkable
class Part(Protocol):
    """A frozen piece of results, identified within its kind by :attr:`key`."""

    KIND: ClassVar[str]  # the journal line's "kind"
    JOINS_RECORD: ClassVar[bool]  # its key is a record's (case key, environment): it goes with that record
    RESULTS_KEY: ClassVar[str]  # results.json's list of this kind

    environment: str  # the environment id it was measured in

    @property
    def key(self) -> tuple:
        """Its identity within its kind: a later part with the same key replaces it (resume, merge)."""

    @property
    def fails_run(self) -> bool:
        """Whether it makes the run exit 1 (a failed row, a failed serving result)."""

    def to_dict(self) -> dict: ...

    # optional: ``failure_note`` (str), what failed in one line, for the report's notes when ``fails_run``

    @classmethod
    def from_dict(cls, data: dict) -> "Part": ...


class PartsByKind:
    """Parts other than records, by kind and then key: a later part with the same key replaces the earlier."""

    def __init__(self) -> None:
        self._by_kind: dict[str, dict[tuple, Part]] = {}

    def add(self, part: Part) -> None:
        self._by_kind.setdefault(part.KIND, {})[part.key] = part

    def of(self, kind: str) -> list[Part]:
        """Every part of ``kind``, in the order first added."""
        return list(self._by_kind.get(kind, {}).values())

    def get(self, kind: str, key: tuple) -> Optional[Part]:
        return self._by_kind.get(kind, {}).get(key)

    def drop_joined(self, key: tuple) -> None:
        """Remove every part that joins the record of ``key`` (it goes with a record that is replaced)."""
        for parts in self._by_kind.values():
            if key in parts and parts[key].JOINS_RECORD:
                del parts[key]

    def __iter__(self) -> Iterator[Part]:
        return (part for parts in self._by_kind.values() for part in parts.values())


_PART_TYPES: dict[str, type] = {}


def register_part(cls: type) -> type:
    """Class decorator: the journal and results.json read parts of ``cls.KIND`` with ``cls.from_dict``."""
    for name in ("KIND", "RESULTS_KEY", "JOINS_RECORD", "to_dict", "from_dict", "key", "fails_run"):
        if not hasattr(cls, name):
            raise TypeError(f"{cls.__name__} is not a result part: it has no {name}")
    _PART_TYPES[cls.KIND] = cls
    return cls


def unregister_part(kind: str) -> None:
    _PART_TYPES.pop(kind, None)


def part_type(kind: str) -> type | None:
    """The registered part type of journal ``kind`` (None when none is registered)."""
    return _PART_TYPES.get(kind)


def part_types() -> list[type]:
    """Every registered part type, in the order registered."""
    return list(_PART_TYPES.values())
