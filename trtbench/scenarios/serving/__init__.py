"""The serving scenario (:mod:`.scenario`) over one LoadGen core (:mod:`.loadgen`); its two kinds, which never import
each other: :mod:`.vision` serves the latency scenario's variants, :mod:`.tokens` the generate scenario's decoders."""

from trtbench.scenarios.serving.scenario import Serving

__all__ = ["Serving"]
