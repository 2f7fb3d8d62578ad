"""The serving scenario: serving under MLPerf LoadGen's Poisson load (:mod:`.scenario`, the only module that sees
both kinds), over one LoadGen core (:mod:`.loadgen`). Its two kinds are siblings on that core that never import each
other: :mod:`.vision` serves the latency scenario's variants, :mod:`.tokens` the generate scenario's decoders under
token latencies (TTFT, TPOT)."""

from trtbench.scenarios.serving.scenario import Serving

__all__ = ["Serving"]
