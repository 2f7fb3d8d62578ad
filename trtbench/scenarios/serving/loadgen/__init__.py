"""The one LoadGen core both kinds of serving stand on: a run (:mod:`.harness`), the shared settings, summary, pass
rule and peak searches."""

from trtbench.scenarios.serving.loadgen.harness import (KEPT_LOGS, LatencyBound, Query, ServerLoad, loadgen_settings,
                                                       log_settings, run_loadgen)
from trtbench.scenarios.serving.loadgen.settings import BatchingConfig, LoadSettings

__all__ = ["KEPT_LOGS", "BatchingConfig", "LatencyBound", "LoadSettings", "Query", "ServerLoad", "loadgen_settings",
           "log_settings", "run_loadgen"]
