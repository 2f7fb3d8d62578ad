"""The generate scenario: a causal language model's TTFT, TPOT, tokens/s and E2E on every listed decoder
(:mod:`.scenario`). Its public face is what LLM serving (:mod:`trtbench.scenarios.serving.tokens`) reads; no other
scenario imports its modules.
"""

from trtbench.scenarios.generate.result import DecoderPoint, GeneratePoint, GenerateRecord
from trtbench.scenarios.generate.scenario import Generate, decoder_folder

__all__ = ["DecoderPoint", "Generate", "GeneratePoint", "GenerateRecord", "decoder_folder"]
