"""An offline HTML page: one file that opens from ``file://`` with nothing fetched (its Content-Security-Policy
forbids any request but ``data:`` images), its style and script inline, its data as JSON in a script element."""

from __future__ import annotations

import html
import json
import math
import re
from importlib.resources import files
from typing import Any, Optional, Sequence

# the page may load nothing but its own inline style and script and data: images
POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"
_CODE = re.compile(r"`([^`]+)`")
_STRONG = re.compile(r"\*\*([^*]+)\*\*")
# a list item: "- x", "  - x", "1. x"
_ITEM = re.compile(r"^\s*(?:-|\d+\.) (.*)$")


def escape(text: Any) -> str:
    """``text`` as HTML text or an attribute's value."""
    return html.escape(str(text), quote=True)


def inline(markdown: str) -> str:
    """A line of the report's Markdown as HTML: escaped, with its ``code`` and **strong** spans."""
    return _STRONG.sub(r"<strong>\1</strong>", _CODE.sub(r"<code>\1</code>", escape(markdown)))


def blocks(lines: Sequence[str]) -> list[str]:
    """Lines of the report's Markdown as HTML: ``#`` and ``##`` headings, list items as lists, the rest paragraphs."""
    out, items = [], []
    for line in [*lines, ""]:
        item = _ITEM.match(line)
        if item:
            items.append(f"<li>{inline(item.group(1))}</li>")
            continue
        if items:
            out += ["<ul>", *items, "</ul>"]
            items = []
        if line.startswith(("# ", "## ")):
            level = 1 if line.startswith("# ") else 2
            out.append(f"<h{level}>{inline(line.split(' ', 1)[1])}</h{level}>")
        elif line.strip():
            out.append(f"<p>{inline(line)}</p>")
    return out


def plain(value: Any) -> Any:
    """``value`` with every non-finite float as its text (``-inf``, as the CSV writes it): strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def data_script(element_id: str, data: Any) -> str:
    """``data`` as JSON in a script element the page's JavaScript reads (``<`` escaped, so no text in it can end
    the element)."""
    text = json.dumps(plain(data), allow_nan=False, separators=(",", ":")).replace("<", "\\u003c")
    return f'<script type="application/json" id="{escape(element_id)}">{text}</script>'


def filter_box(selector: str, placeholder: str) -> str:
    """A text box that shows only the elements matching ``selector`` whose text holds every word typed."""
    return (f'<div class="controls"><input type="search" id="filter" data-filter="{escape(selector)}" '
            f'data-count="shown" placeholder="{escape(placeholder)}" aria-label="filter">'
            f'<span id="shown"></span></div>')


def _asset(name: str) -> str:
    return files("trtbench.report").joinpath("assets", name).read_text(encoding="utf-8")


def page(title: str, body: str, data: Optional[str] = None) -> str:
    """The whole page: ``body`` (HTML) under ``title``, with ``data`` (a :func:`data_script`) where given."""
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{escape(POLICY)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title>", f"<style>\n{_asset('page.css')}</style>", "</head>", "<body>",
        body, '<div id="tip" role="tooltip"></div>', data or "", f"<script>\n{_asset('page.js')}</script>",
        "</body>", "</html>", ""])
