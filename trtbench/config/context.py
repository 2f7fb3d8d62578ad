"""The run context: what every stage of one run needs, built once by the runner and passed down frozen."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: the context is built at the top (trtbench.pipeline.runner)
    import torch

    from trtbench.config.config import Config
    from trtbench.config.plan import RunPlan
    from trtbench.core.outdir import FailureLog
    from trtbench.core.progress import Progress
    from trtbench.measure.timing import TimingSettings


@dataclass(frozen=True)
class RunContext:
    """One run's plan, environment, failure log, progress, and the variants that crashed earlier."""

    plan: RunPlan
    environment: dict  # trtbench.core.env.collect_environment(); its "id" names the records' environment
    failures: FailureLog
    progress: Progress
    crashed: dict = field(default_factory=dict)  # (model, precision, variant) -> why it crashed an earlier process

    @property
    def config(self) -> Config:
        return self.plan.config

    @property
    def device(self) -> torch.device:
        return self.plan.device

    @property
    def timing(self) -> TimingSettings:
        return self.plan.timing

    @property
    def env_id(self) -> str:
        return self.environment["id"]

    @property
    def out_dir(self) -> Path:
        return Path(self.plan.config.output.dir)

    def log(self, line: str) -> None:
        self.progress.log(line)
