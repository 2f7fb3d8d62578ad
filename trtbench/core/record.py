"""What a measurement produced: a frozen :class:`Record` per case, with its raw samples (stats derived)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import ClassVar, Optional

from trtbench.core.case import Case
from trtbench.core.codec import Coded, key
from trtbench.core.part import register_part
from trtbench.core.stats import BlockSeries, Stats, summarize
from trtbench.core.status import Status


@register_part
@dataclass(frozen=True)
class Record(Coded):
    """One case measured in one environment: status, raw samples per block, accuracy, build facts."""

    KIND: ClassVar[str] = "record"
    JOINS_RECORD: ClassVar[bool] = False
    RESULTS_KEY: ClassVar[str] = "records"
    WRITTEN_AFTER: ClassVar[dict] = {"case": ("case_key",)}

    case: Case
    environment: str  # environment id (trtbench.core.env.environment_id)
    status: Status = Status.OK
    reason: str = ""
    rounds: list[list[float]] = field(default_factory=list)  # host ms per call, one list per interleaved round
    device_rounds: Optional[list[list[float]]] = None  # CUDA-event ms per call (CUDA only)
    # per entry of ``rounds``: the replicate process that timed it and the point's round (None: an older result)
    block_process: Optional[list[int]] = None
    block_round: Optional[list[int]] = None
    stopped_by: Optional[str] = None  # iterations | target_rel_ci | max_time_s
    accuracy: Optional[dict] = field(default=None, metadata=key("parity"))  # trtbench.measure.accuracy's to_dict()
    build: dict = field(default_factory=dict)  # build_s, first-call and compile facts, variant info
    metrics: dict = field(default_factory=dict)  # measured values besides the timings: flops, memory, cold start...
    warnings: list[str] = field(default_factory=list)
    run_id: str = ""  # the run that measured it (its entry in results.json's runs); "" before schema 6

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))  # a word from JSON or a caller is checked here

    def with_metrics(self, **metrics) -> "Record":
        """This record with more measured values (flops, cold_start...)."""
        return replace(self, metrics={**self.metrics, **metrics})

    def with_build_info(self, info: dict) -> "Record":
        """This record with facts its build gave only after every point ran (compiled's recompilations)."""
        return replace(self, build={**self.build, "info": {**self.build.get("info", {}), **info}})

    def of_run(self, run_id: str) -> "Record":
        """This record as measured by run ``run_id``."""
        return replace(self, run_id=run_id)

    def with_warnings(self, warnings) -> "Record":
        return replace(self, warnings=sorted(set(self.warnings) | set(warnings)))

    def failed(self, reason: str) -> "Record":
        """This record failed for ``reason``, its timings kept (a file that cannot ship, say)."""
        return replace(self, status=Status.FAILED, reason=reason)

    @property
    def key(self) -> tuple[str, str]:
        return (self.case.key, self.environment)

    @property
    def case_key(self) -> str:
        return self.case.key

    @property
    def fails_run(self) -> bool:
        """A failed case, or one that failed its accuracy check, makes the run exit 1."""
        return self.status is Status.FAILED or self.accuracy_failed

    @property
    def processes(self) -> list[int]:
        """Each block's process (all 0 for a result written before replicate processes)."""
        return list(self.block_process) if self.block_process is not None else [0] * len(self.rounds)

    @property
    def round_ids(self) -> list[int]:
        """Each block's global round index (its position for a result written before replicate processes)."""
        return list(self.block_round) if self.block_round is not None else list(range(len(self.rounds)))

    @property
    def process_count(self) -> int:
        """How many worker processes timed this case (1 for an old result, 0 without blocks)."""
        return len(set(self.processes))

    @cached_property
    def block_series(self) -> BlockSeries:
        """Each block's median (ms) with its process and global round; blocks without samples left out."""
        return BlockSeries.of_blocks(self.rounds, self.processes, self.round_ids)

    @property
    def samples_ms(self) -> list[float]:
        return [s for r in self.rounds for s in r]

    @property
    def device_samples_ms(self) -> Optional[list[float]]:
        return None if self.device_rounds is None else [s for r in self.device_rounds for s in r]

    @property
    def stats(self) -> Optional[Stats]:
        """Host-latency statistics from the raw samples (None without samples)."""
        return summarize(self.samples_ms) if any(self.rounds) else None

    @property
    def device_stats(self) -> Optional[Stats]:
        return summarize(self.device_samples_ms) if any(self.device_rounds or ()) else None

    @property
    def timed(self) -> bool:
        return self.status is Status.OK and bool(self.rounds)

    @property
    def accuracy_failed(self) -> bool:
        return self.accuracy is not None and not self.accuracy.get("ok", False)

    @property
    def throughput(self) -> Optional[float]:
        """Samples per second from the median host latency."""
        stats = self.stats
        return self.case.batch * 1000.0 / stats.median if stats and stats.median > 0 else None

    @property
    def kernels_text(self) -> str:
        """The precision its kernels ran, as its runtime reported it (trtbench.measure.kernels); "" where unread."""
        return (self.metrics.get("kernels") or {}).get("text", "")

    @property
    def achieved_flops_per_s(self) -> Optional[float]:
        """The model's FLOPs at this point over the median latency (None without both)."""
        stats, flops = self.stats, self.metrics.get("flops")
        return flops / (stats.median / 1e3) if stats and flops and stats.median > 0 else None
