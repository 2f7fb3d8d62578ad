"""The settings of a ``server`` entry beside a generate scenario: LLM serving under LoadGen's token latencies
(:mod:`.token_serving_stage`), e.g. ``{server: {ttft_ms: 2000, tpot_ms: 200, find_peak: true, workers: [1]}}``.

A query is one sequence: QPS, TTFT and TPOT count sequences, also when a worker serves a static batch of them
(``batching``). Without ``lengths``, a query has the prompt_tokens and new_tokens of one of generate's points with
batch 1, and each such point is served; with ``lengths`` (:class:`~.token_lengths.QueryLengths`), each query draws its
lengths from that seeded spec, served once per decoder, at the first of those points. A query is late when its TTFT
is over ``ttft_ms`` or its TPOT over ``tpot_ms``; a run passes by :mod:`.serving_rule`'s one-sided bound on the late
share at ``percentile`` and ``confidence``, as the vision server's steps do (:class:`~.serving_config.ServingConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from trtbench.core import schema
from trtbench.core.errors import UserInputError
from trtbench.models import transformers_max_positions
from trtbench.scenarios.generate_result import GeneratePoint
from trtbench.scenarios.serving_config import LoadSettings
from trtbench.scenarios.token_lengths import QueryLengths
from trtbench.scenarios.serving_rule import rule_name

SERVED_BATCH = 1  # a query is one sequence: the generate points served are those at this batch


@dataclass(frozen=True)
class TokenServingConfig(LoadSettings):
    """LoadGen's Server scenario with token latencies over generate's decoders: Poisson arrivals at ``qps``, or the
    peak QPS found by a search (``find_peak``), valid while the ``percentile`` TTFT stays within ``ttft_ms`` and the
    ``percentile`` TPOT within ``tpot_ms`` (the rest, ``min_queries``' default included:
    :class:`~.serving_config.LoadSettings`). Each worker serves one request at a time, or a static batch of queries
    gathered within a window (``batching``).
    """

    ttft_ms: Optional[float] = None  # the bound on time to first token, in ms, at ``percentile``
    tpot_ms: Optional[float] = None  # the bound on time per output token, in ms, at ``percentile``
    qps: Optional[float] = None  # one run per repeat at this offered load, instead of a search
    lengths: Optional[QueryLengths] = None  # each query's lengths, drawn; None: each served point's own
    repeats: int = 1  # a request takes seconds: one search (or run at qps), each repeat of its own schedule
    query_timeout_s: float = 120.0  # a request unanswered this long fails its worker (killed) and the result

    def validate(self, path: str) -> None:
        for name in ("ttft_ms", "tpot_ms"):
            if getattr(self, name) is None:
                raise UserInputError(schema.join(path, name), "required key is missing beside generate",
                                     "give both token-latency bounds in ms, e.g. ttft_ms: 2000 and tpot_ms: 200 "
                                     "(MLPerf's Llama2-70B server constraints)")
            schema.require_positive(getattr(self, name), schema.join(path, name))
        self.validate_load(path, "qps")

    @property
    def peak_rule(self) -> str:
        """The name of the rule that judges its runs, as results record it (the vision server's, on either bound)."""
        return rule_name("bound", self.confidence)

    @property
    def max_batch(self) -> int:
        """The most queries a worker serves in one request."""
        return self.batching.max_batch if self.batching is not None else 1

    def query_lengths(self, point: GeneratePoint) -> QueryLengths:
        """What the queries served at ``point`` ask for: ``lengths``, or the point's own lengths."""
        return self.lengths if self.lengths is not None else QueryLengths.fixed(point.prompt_tokens, point.new_tokens)

    def check_against_generate(self, config: Any, path: str) -> None:
        """Some generate entry must have a point at batch 1: a query is one sequence, served at those points; the
        longest sequence ``lengths`` can draw must fit every model's positions (generate checks its own points)."""
        generate = [(i, s) for i, s in enumerate(config.scenarios) if s.name == "generate"]
        if not any(SERVED_BATCH in s.settings.batch for _, s in generate):
            where = f"scenarios[{generate[0][0]}].generate.batch" if generate else "scenarios"
            raise UserInputError(path, f"a query is one sequence, served at generate's points with batch "
                                 f"{SERVED_BATCH}, and {where} lists none",
                                 f"add {SERVED_BATCH} to {where} (e.g. batch: [1]); its other batches are timed by "
                                 f"generate, not served")
        for i, model in enumerate(config.models if self.lengths is not None else ()):
            limit, where = transformers_max_positions(model), "model" if len(config.models) == 1 else f"models[{i}]"
            if limit is not None and self.lengths.longest > limit:
                raise UserInputError(schema.join(path, "lengths"), f"the longest prompt_tokens plus the most "
                                     f"new_tokens reach {self.lengths.longest}, above {where}'s {limit} positions "
                                     f"(max_position_embeddings)",
                                     f"keep the longest prompt plus the most new tokens at most {limit}, or raise "
                                     f"max_position_embeddings in {where}.kwargs")
