"""What was measured: a frozen, hashable :class:`Case`; with the environment id it keys a record."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field

from trtbench.core.codec import Coded, key

BASELINE_VARIANT = "eager"


def shapes_text(shapes) -> str:
    """``[[2, 3, 224, 224]]`` -> ``2x3x224x224`` (inputs joined by ``,``)."""
    return ",".join("x".join(str(d) for d in shape) for shape in shapes)


def parse_shapes_text(text: str) -> tuple[tuple[int, ...], ...]:
    """The inverse of :func:`shapes_text`."""
    return tuple(tuple(int(d) for d in part.split("x")) for part in text.split(",") if part)


@dataclass(frozen=True)
class Case(Coded):
    """One measured point: model x variant(options) x precision x input shapes x threads x device."""

    model: str  # model id, e.g. "torchvision:resnet34" (ModelConfig.id)
    variant: str
    precision: str
    point: str  # the shape point's label: min | opt | max, or b<N> for a swept batch size
    input_shapes: tuple[tuple[int, ...], ...]
    threads: int
    device: str  # resolved: cpu, cuda:0
    options: str = ""  # the variant's options as canonical JSON ("" for defaults)
    # the deployment knobs its process started with, as Knobs.text ("" for the defaults: left out, so that cases from
    # before the knobs axis keep their keys)
    knobs: str = field(default="", metadata=key(omit_default=True))

    @property
    def batch(self) -> int:
        """The leading dim of the first input (1 for a scalar input)."""
        first = self.input_shapes[0] if self.input_shapes else ()
        return first[0] if first else 1

    @property
    def shapes(self) -> str:
        return shapes_text(self.input_shapes)

    @property
    def key(self) -> str:
        """The case's id, stable: the same case gets the same key in every process and on every machine."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def baseline_id(self) -> tuple:
        """Identifies, with a precision and an environment, the eager records of its speedups."""
        return (self.model, self.point, self.input_shapes, self.threads, self.device, self.knobs)

    @property
    def label(self) -> str:
        """``variant`` or ``variant{options}`` for tables."""
        return f"{self.variant}{self.options}" if self.options else self.variant


def options_text(options) -> str:
    """A variant's options as canonical JSON of the fields that differ from the defaults."""
    if options is None or not dataclasses.is_dataclass(options):
        return ""
    defaults = type(options)()
    changed = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)
               if getattr(options, f.name) != getattr(defaults, f.name)}
    return json.dumps(changed, sort_keys=True, separators=(",", ":"), default=str) if changed else ""
