"""The ``profile:`` section of a run config: which variants and shapes to profile, and how."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional

from trtbench.core import schema
from trtbench.core.errors import UserInputError
from trtbench.core.inputs import SHAPE_LABELS
from trtbench.core.precision import PRECISIONS
from trtbench.variants import variant_names

OPTIMIZERS = ("sgd", "adam", "none")


@dataclass
class LayersConfig:
    """Per-node timing with an FX interpreter: ``runs`` timed passes after ``warmup`` passes."""

    enabled: bool = True
    warmup: int = 2
    runs: int = 20
    top_k: int = 15  # rows shown in the report and the plot (results.json keeps every node)

    def validate(self, path: str) -> None:
        schema.require_positive_fields(self, ("warmup", "runs", "top_k"), path)


@dataclass
class OperatorsConfig:
    """``torch.profiler`` operator table over ``runs`` passes, and optionally a Chrome trace file."""

    enabled: bool = True
    runs: int = 3
    top_k: int = 15
    trace: bool = True
    record_shapes: bool = False

    def validate(self, path: str) -> None:
        schema.require_positive_fields(self, ("runs", "top_k"), path)


@dataclass
class TrainConfig:
    """Forward + backward (+ optimizer step) timing on a copy of each variant that has trainable parameters."""

    enabled: bool = False
    warmup: int = 1
    iterations: int = 5
    optimizer: str = "sgd"  # sgd | adam | none (forward + backward only)
    lr: float = 0.01

    def validate(self, path: str) -> None:
        schema.require_positive_fields(self, ("warmup", "iterations", "lr"), path)
        schema.require_choice(self.optimizer, OPTIMIZERS, schema.join(path, "optimizer"))


@dataclass
class ProfileConfig:
    """Which profile sections run, on the builds of one ``precision`` of the listed ``variants`` at ``shapes``."""

    enabled: bool = True
    precision: Optional[str] = None
    variants: list[str] = field(default_factory=lambda: ["eager"])
    shapes: list[str] = field(default_factory=lambda: ["opt"])
    layers: LayersConfig = field(default_factory=LayersConfig)
    operators: OperatorsConfig = field(default_factory=OperatorsConfig)
    memory: bool = True
    structure: bool = True
    train: TrainConfig = field(default_factory=TrainConfig)

    def validate(self, path: str) -> None:
        if self.precision is not None:
            schema.require_choice(self.precision, PRECISIONS, schema.join(path, "precision"))
        for key, items, choices in (("variants", self.variants, variant_names()),
                                    ("shapes", self.shapes, SHAPE_LABELS)):
            where = schema.join(path, key)
            if not items:
                raise UserInputError(where, "is empty", f"list at least one of: {', '.join(choices)}")
            if len(set(items)) != len(items):
                raise UserInputError(where, f"has duplicates: {items}", "list each entry once")
            for i, item in enumerate(items):
                schema.require_choice(item, choices, schema.join(where, i))

    def for_run(self, variants: list[str], precisions: list[str], path: str) -> "ProfileConfig":
        """This section checked against the run's ``variants`` and ``precisions``, its precision defaulted."""
        for i, name in enumerate(self.variants):
            if name != "eager" and name not in variants:
                raise UserInputError(schema.join(path, f"variants[{i}]"),
                                     f"'{name}' is not among the run's variants {variants}",
                                     f"add '{name}' to the top-level 'variants' list or remove it here")
        if self.precision is None:
            return dataclasses.replace(self, precision=precisions[0])
        if self.precision not in precisions:
            raise UserInputError(schema.join(path, "precision"),
                                 f"'{self.precision}' is not among the run's precisions {precisions}",
                                 f"use one of: {', '.join(precisions)}")
        return self
