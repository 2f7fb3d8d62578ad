"""Decoder serving: the generate scenario's decoders served under LoadGen's token latencies (:mod:`.run`), with
the peak QPS whose TTFT and TPOT percentiles stay within their bounds."""
