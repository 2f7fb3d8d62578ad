"""An offline HTML page rendered by Jinja2 (autoescaped) from ``templates/``, nothing fetched (docs/outputs.md)."""

from __future__ import annotations

import base64
import math
from importlib.resources import files
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

# the page may load nothing but its own inline style and script and data: images
POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


def plain(value: Any) -> Any:
    """``value`` with every non-finite float as its text (``-inf``, as the CSV writes it): strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def png_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _asset(name: str) -> str:
    return files("trtbench.report").joinpath("assets", name).read_text(encoding="utf-8")


_PAGES = Environment(loader=PackageLoader("trtbench.report"), autoescape=True, undefined=StrictUndefined,
                     trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
_PAGES.filters["png_uri"] = png_uri
_PAGES.policies["json.dumps_kwargs"] = {"allow_nan": False, "separators": (",", ":")}
_PAGES.globals.update(policy=POLICY, style=_asset("page.css"), script=_asset("page.js"))


def render(template: str, **context: Any) -> str:
    """The page ``template`` (a file of ``templates/``) rendered with ``context``."""
    return _PAGES.get_template(template).render(**context)
