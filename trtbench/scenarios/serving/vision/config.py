"""The settings of a vision serving entry: a ``{serving: {...}}`` entry beside latency."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from trtbench.core import schema
from trtbench.core.errors import UserInputError
from trtbench.scenarios.serving.loadgen.settings import LoadSettings

VALIDITY_RULES = ("estimate", "bound", "loadgen")


@dataclass(frozen=True)
class ServingConfig(LoadSettings):
    """LoadGen's Server scenario over the latency scenario's variants, bounded by ``p99_ms``."""

    p99_ms: Optional[float] = None  # the latency bound, in ms, at ``percentile``
    target_qps: Optional[float] = None
    threads: Optional[int] = None  # intra-op threads per worker; default: the run's threads over the workers

    def validate(self, path: str) -> None:
        if self.p99_ms is None:
            raise UserInputError(schema.join(path, "p99_ms"), "required key is missing",
                                 "give the latency bound in ms, e.g. p99_ms: 40")
        schema.require_choice(self.validity, VALIDITY_RULES, schema.join(path, "validity"))
        schema.require_positive_fields(self, ("p99_ms", "threads"), path)
        self.validate_load(path, "target_qps")

    def check_against_inputs(self, inputs: list, path: str) -> None:
        """Batched calls must fit the build's dynamic batch range: one query is one sample (leading dim 1)."""
        if self.batching is None:
            return
        where = schema.join(schema.join(path, "batching"), "max_batch")
        for spec in inputs:
            lo, hi = spec.min_shape[0], spec.max_shape[0]
            if lo != 1 or self.batching.max_batch > hi:
                raise UserInputError(where, f"batches of 1 to {self.batching.max_batch} do not fit input "
                                     f"'{spec.name}''s batch range [{lo}, {hi}]",
                                     f"give the inputs min_shape[0] = 1 and max_shape[0] >= {self.batching.max_batch}, "
                                     f"or lower max_batch")
