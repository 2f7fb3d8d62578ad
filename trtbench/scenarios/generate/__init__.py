"""The generate scenario (:mod:`.scenario`); its public face is what LLM serving reads."""

from trtbench.scenarios.generate.result import DecoderPoint, GeneratePoint, GenerateRecord
from trtbench.scenarios.generate.scenario import Generate, decoder_folder

__all__ = ["DecoderPoint", "Generate", "GeneratePoint", "GenerateRecord", "decoder_folder"]
