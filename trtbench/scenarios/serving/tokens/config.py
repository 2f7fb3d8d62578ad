"""The settings of a ``serving`` entry beside generate: LLM serving under LoadGen's token latencies (docs/serving.md,
"LLM serving under token latencies")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from trtbench.core import schema
from trtbench.core.errors import UserInputError
from trtbench.models import transformers_max_positions
from trtbench.scenarios.generate import GeneratePoint
from trtbench.scenarios.serving.loadgen.settings import BatchingConfig, LoadSettings
from trtbench.scenarios.serving.tokens.lengths import QueryLengths

SERVED_BATCH = 1  # a query is one sequence: the generate points served are those at this batch
BATCHING_MODES = ("static", "continuous")
TOKEN_VALIDITY_RULES = ("estimate", "bound")  # LoadGen's verdict (the vision server's loadgen) is not a token rule


@dataclass(frozen=True)
class DecoderBatching:
    """How a worker batches its queries: ``static`` (gathered within ``window_ms``, served as one request) or
    ``continuous`` (each joins the worker's engine as it arrives), up to ``max_batch`` at once."""

    mode: str = "static"
    max_batch: int = 4
    window_ms: Optional[float] = None  # static only; default 2 ms

    def validate(self, path: str) -> None:
        schema.require_choice(self.mode, BATCHING_MODES, schema.join(path, "mode"))
        schema.require_positive_fields(self, ("max_batch", "window_ms"), path)
        if self.mode == "continuous" and self.window_ms is not None:
            raise UserInputError(schema.join(path, "window_ms"), "is static batching's gathering window, and "
                                 "continuous batching gathers nothing: each query joins the running batch as it "
                                 "arrives", "leave window_ms out with mode: continuous (or write mode: static)")

    @property
    def static(self) -> Optional[BatchingConfig]:
        """The static batching (its window filled in), or None in continuous mode."""
        window = self.window_ms if self.window_ms is not None else BatchingConfig.window_ms
        return BatchingConfig(self.max_batch, window) if self.mode == "static" else None

    def to_dict(self) -> dict:
        """As results record it: the mode and max_batch, with the window (ms) where static."""
        static = self.static
        return {"mode": self.mode, "max_batch": self.max_batch,
                **({"window_ms": static.window_ms} if static is not None else {})}


@dataclass(frozen=True)
class DecoderServingConfig(LoadSettings):
    """LoadGen's Server scenario with token latencies over generate's decoders, and its bounds."""

    batching: Optional[DecoderBatching] = None
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
        schema.require_choice(self.validity, TOKEN_VALIDITY_RULES, schema.join(path, "validity"))
        self.validate_load(path, "qps")

    @property
    def max_batch(self) -> int:
        """The most queries a worker serves at once (in one request, or in flight in its engine)."""
        return self.batching.max_batch if self.batching is not None else 1

    @property
    def continuous(self) -> bool:
        """Whether its workers batch continuously (an engine each), not one request at a time."""
        return self.batching is not None and self.batching.mode == "continuous"

    @property
    def request_batch(self) -> int:
        """The most queries in one request: a static batch's, else 1 (an engine admits queries one by one)."""
        return 1 if self.continuous else self.max_batch

    def query_lengths(self, point: GeneratePoint) -> QueryLengths:
        """What the queries served at ``point`` ask for: ``lengths``, or the point's own lengths."""
        return self.lengths if self.lengths is not None else QueryLengths.fixed(point.prompt_tokens, point.new_tokens)

    def check_against_generate(self, config: Any, path: str) -> None:
        """Generate must have a point at batch 1, and ``lengths`` must fit every model's positions."""
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
