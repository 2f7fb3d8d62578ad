"""How a call is timed and judged: rounds, settling, interference, ceilings, the accuracy reference and judgement."""
