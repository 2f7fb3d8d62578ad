"""How a call is timed and judged: interleaved rounds and settling, interference, FLOP/s ceilings, the accuracy
reference and judgement."""
