"""Vision serving: the variants the latency scenario timed, served by a pool of worker processes under LoadGen
(:mod:`.run`), with the peak QPS whose latency percentile stays within a bound."""
