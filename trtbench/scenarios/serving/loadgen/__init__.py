"""The one LoadGen core both kinds of serving stand on: a run's settings, SUT and logs (:mod:`.harness`), what both
kinds' settings share (:mod:`.settings`), LoadGen's summary and percentiles (:mod:`.summary`), the pass rule
(:mod:`.rule`), the peak search's bisection (:mod:`.search`) and its peaks (:mod:`.peaks`), the batch window
(:mod:`.batch_window`) and the late-share plot (:mod:`.late_share`)."""

from trtbench.scenarios.serving.loadgen.harness import (KEPT_LOGS, Query, ServerLoad, loadgen_settings, log_settings,
                                                       run_loadgen)
from trtbench.scenarios.serving.loadgen.settings import BatchingConfig, LoadSettings

__all__ = ["KEPT_LOGS", "BatchingConfig", "LoadSettings", "Query", "ServerLoad", "loadgen_settings", "log_settings",
           "run_loadgen"]
