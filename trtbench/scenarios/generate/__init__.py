"""The generate scenario (:mod:`.scenario`); its public face is what LLM serving reads (no other scenario imports
its modules)."""

from trtbench.scenarios.generate.result import DecoderPoint, GeneratePoint, GenerateRecord
from trtbench.scenarios.generate.scenario import Generate, decoder_folder

__all__ = ["DecoderPoint", "Generate", "GeneratePoint", "GenerateRecord", "decoder_folder"]
