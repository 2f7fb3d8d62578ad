"""Report text as data: headings, paragraphs and lists, each writing its Markdown; report.html renders them too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional, Sequence, Union


@dataclass(frozen=True)
class Span:
    """Text set apart: ``style`` ``code`` or ``strong``."""

    text: str
    style: str

    @property
    def markdown(self) -> str:
        mark = "`" if self.style == "code" else "**"
        return f"{mark}{self.text}{mark}"


Text = tuple[Union[str, Span], ...]  # a line's plain strings and spans, in order


def code(text: object) -> Span:
    return Span(str(text), "code")


def strong(text: object) -> Span:
    return Span(str(text), "strong")


def markdown_text(text: Text) -> str:
    return "".join(part if isinstance(part, str) else part.markdown for part in text)


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    kind: ClassVar[str] = "heading"

    def markdown(self) -> list[str]:
        return [f"{'#' * self.level} {self.text}"]


@dataclass(frozen=True)
class Paragraph:
    text: Text
    kind: ClassVar[str] = "paragraph"

    def markdown(self) -> list[str]:
        return [markdown_text(self.text)]


@dataclass(frozen=True)
class Item:
    """A list's item: its text, its ``number`` where its list is numbered, and the ``items`` under it."""

    text: Text
    number: Optional[int] = None
    items: tuple[Item, ...] = ()

    def markdown(self, indent: str = "") -> list[str]:
        marker = "-" if self.number is None else f"{self.number}."
        return [f"{indent}{marker} {markdown_text(self.text)}",
                *[line for item in self.items for line in item.markdown(indent + "  ")]]


@dataclass(frozen=True)
class Items:
    """A list (numbered where its items are)."""

    items: tuple[Item, ...]
    kind: ClassVar[str] = "list"

    def markdown(self) -> list[str]:
        return [line for item in self.items for line in item.markdown()]


Block = Union[Heading, Paragraph, Items]


def markdown_lines(blocks: Sequence[Block]) -> list[str]:
    """The blocks as Markdown lines, a blank line after each."""
    return [line for block in blocks for line in (*block.markdown(), "")]
