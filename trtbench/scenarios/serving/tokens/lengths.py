"""The lengths an LLM server's queries ask for (a serving entry's ``lengths:``), fixed or drawn with a seed from a list
or a named distribution, at most :data:`MOST_DISTINCT` values a length (docs/serving.md)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Optional, Union

import numpy as np

from trtbench.core import schema
from trtbench.core.errors import UserInputError

DISTRIBUTIONS = ("uniform", "lognormal")
MOST_DISTINCT = 16  # values of one length; each is a request the workers warm up, at every batch size
LEAST = {"prompt_tokens": 1, "new_tokens": 2}  # LoadGen's TPOT needs two tokens of each query


@dataclass(frozen=True)
class LengthDistribution:
    """A named distribution of one length over the multiples of ``step`` from ``low`` to ``high``: ``uniform``, or
    ``lognormal`` (``median``, and ``sigma`` of its log) rounded to the nearest of them."""

    distribution: str
    low: int
    high: int
    median: Optional[float] = None  # lognormal only
    sigma: Optional[float] = None  # lognormal only
    step: int = 1

    def validate(self, path: str) -> None:
        schema.require_choice(self.distribution, DISTRIBUTIONS, schema.join(path, "distribution"))
        schema.require_positive_fields(self, ("low", "high", "step", "median", "sigma"), path)
        if self.high < self.low:
            raise UserInputError(schema.join(path, "high"), f"is below low ({self.high} < {self.low})",
                                 "give high >= low")
        lognormal = self.distribution == "lognormal"
        for name in ("median", "sigma"):
            if (getattr(self, name) is None) == lognormal:
                problem = ("is required by the lognormal distribution" if lognormal
                           else f"applies only to the lognormal distribution, not to {self.distribution}")
                fix = f"add {name}: ..." if lognormal else f"remove {name}, or use distribution: lognormal"
                raise UserInputError(schema.join(path, name), problem, fix)
        if len(self.values()) > MOST_DISTINCT:
            raise UserInputError(schema.join(path, "step"), f"{self.low} to {self.high} in steps of {self.step} give "
                                 f"{len(self.values())} distinct lengths, more than {MOST_DISTINCT} (each is a request "
                                 "every worker warms up at every batch size)",
                                 f"give step: {math.ceil((self.high - self.low) / (MOST_DISTINCT - 1))} or more, or "
                                 "narrow low..high")

    def values(self) -> tuple[int, ...]:
        """The lengths it can draw: the multiples of ``step`` from ``low``, up to ``high``."""
        return tuple(range(self.low, self.high + 1, self.step))

    def draw(self, rng: np.random.Generator, count: int) -> list[int]:
        grid = np.asarray(self.values())
        if self.distribution == "uniform":
            return [int(v) for v in rng.choice(grid, size=count)]
        drawn = self.median * np.exp(self.sigma * rng.standard_normal(count))
        return [int(grid[np.abs(grid - v).argmin()]) for v in drawn]


Length = Union[tuple[int, ...], LengthDistribution]  # the values a query draws from uniformly, or a distribution


@dataclass(frozen=True)
class QueryLengths:
    """Each query's (prompt_tokens, new_tokens): ``samples`` pairs drawn with ``seed``."""

    prompt_tokens: Any
    new_tokens: Any
    samples: int = 64  # LoadGen's query sample library: the pairs its queries pick from
    seed: int = 0

    @staticmethod
    def prepare(fields: dict, path: str) -> dict:
        """A length written as a value, a list or a mapping, held as a tuple of values or a distribution."""
        return {**fields, **{name: _length(fields[name], schema.join(path, name)) for name in LEAST}}

    @classmethod
    def fixed(cls, prompt_tokens: int, new_tokens: int) -> "QueryLengths":
        """Every query at the same lengths."""
        return cls((prompt_tokens,), (new_tokens,), samples=1)

    def validate(self, path: str) -> None:
        schema.require_positive(self.samples, schema.join(path, "samples"))
        for name, least in LEAST.items():
            length, where = getattr(self, name), schema.join(path, name)
            lowest = length.low if isinstance(length, LengthDistribution) else min(length)
            if lowest < least:
                why = " (LoadGen's time per output token needs two tokens a query)" if name == "new_tokens" else ""
                raise UserInputError(where, f"reaches {lowest}, below {least}{why}",
                                     f"keep every {name} at {least} or more")
            if isinstance(length, tuple) and len(set(length)) > MOST_DISTINCT:
                raise UserInputError(where, f"lists {len(set(length))} distinct lengths, more than {MOST_DISTINCT} "
                                     "(each is a request every worker warms up at every batch size)",
                                     f"list at most {MOST_DISTINCT}, or give a distribution with a step")

    def values(self, name: str) -> tuple[int, ...]:
        """The distinct values ``name`` (prompt_tokens or new_tokens) can take, ascending."""
        length = getattr(self, name)
        return length.values() if isinstance(length, LengthDistribution) else tuple(sorted(set(length)))

    @property
    def longest(self) -> int:
        """The most tokens a sequence can hold: the longest prompt plus the most new tokens."""
        return max(self.values("prompt_tokens")) + max(self.values("new_tokens"))

    def to_dict(self) -> dict:
        """The spec as plain data, as results record it (a length: its list of values, or its distribution)."""
        return asdict(self)

    @property
    def text(self) -> str:
        """``p 32 n 16``, ``p [32, 64] n lognormal(median 32, sigma 0.6; 8..128 by 8), 64 samples seed 0``."""
        if self.samples == 1 or all(len(self.values(name)) == 1 for name in LEAST):
            return f"p {self.values('prompt_tokens')[0]} n {self.values('new_tokens')[0]}"
        return " ".join(f"{name[0]} {_text(getattr(self, name))}" for name in LEAST) + (
            f", {self.samples} samples seed {self.seed}")

    def draw(self) -> tuple[tuple[int, int], ...]:
        """The query sample library: ``samples`` (prompt_tokens, new_tokens) pairs, the same for the same seed."""
        rng = np.random.default_rng(self.seed)
        drawn = {name: _draw(getattr(self, name), rng, self.samples) for name in LEAST}
        return tuple(zip(drawn["prompt_tokens"], drawn["new_tokens"]))


def _length(value: Any, path: str) -> Length:
    if isinstance(value, dict):
        return schema.from_dict(LengthDistribution, value, path)
    values = value if isinstance(value, (list, tuple)) else [value]
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise UserInputError(path, f"expected a token count, a non-empty list of them or a distribution, got {value!r}",
                             f"write e.g. {path.rsplit('.', 1)[-1]}: 64, [32, 64] or "
                             "{distribution: uniform, low: 16, high: 128, step: 16}")
    return tuple(values)


def _draw(length: Length, rng: np.random.Generator, count: int) -> list[int]:
    if isinstance(length, LengthDistribution):
        return length.draw(rng, count)
    return [int(v) for v in rng.choice(np.asarray(length), size=count)]


def _text(length: Length) -> str:
    if isinstance(length, LengthDistribution):
        shape = f"median {length.median:g}, sigma {length.sigma:g}; " if length.distribution == "lognormal" else ""
        return f"{length.distribution}({shape}{length.low}..{length.high} by {length.step})"
    return f"[{', '.join(str(v) for v in length)}]" if len(length) > 1 else str(length[0])
