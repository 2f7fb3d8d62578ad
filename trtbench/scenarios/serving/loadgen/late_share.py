"""What the late-share plot (:mod:`trtbench.report.late_share`) draws of a joint estimate, for either kind of serving:
each step's late share with its interval, and the share the estimate's reader expects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from trtbench.scenarios.serving.loadgen.peak_estimate import READERS, Step
from trtbench.scenarios.serving.loadgen.peaks import PeakInterval


@dataclass(frozen=True)
class SharePanel:
    """One joint estimate as the late-share plot draws it (the confirming run left out)."""

    title: str
    ylabel: str
    steps: tuple[Step, ...]
    allowed: float
    peak: float
    interval: PeakInterval

    def shares(self) -> np.ndarray:
        """Each step's offered QPS, late share, and the low and high end of Wilson's 90% interval on that share, as if
        the step's queries were independent (4 x steps)."""
        from scipy.stats import binomtest

        wilson = [binomtest(int(s.late.sum()), s.queries).proportion_ci(confidence_level=0.9, method="wilson")
                  for s in self.steps]
        return np.array([(s.qps, s.share, w.low, w.high) for s, w in zip(self.steps, wilson)]).T

    def expected(self, qps: np.ndarray) -> Optional[np.ndarray]:
        """The late share the estimate's reader expects at each of ``qps`` (None: it draws none)."""
        return READERS[self.interval.read_by].expected_shares(self.steps, qps)
