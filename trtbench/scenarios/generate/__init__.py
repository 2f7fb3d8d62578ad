"""The generate scenario: a causal language model's TTFT, TPOT, tokens/s and E2E on every listed decoder
(:mod:`.scenario`, over :mod:`trtbench.decoders`); its parts (:mod:`.result`), report section (:mod:`.report`),
memory budget (:mod:`.memory`) and published artifacts (:mod:`.publish`).

Its public face is what the scenario that serves its decoders (:mod:`trtbench.scenarios.serving.tokens`) reads:
where a decoder's part belongs (its key), a point, a row, and the model folder the decoders are built from; no other
scenario imports its modules.
"""

from trtbench.scenarios.generate.result import DecoderPoint, GeneratePoint, GenerateRecord
from trtbench.scenarios.generate.scenario import Generate, decoder_folder

__all__ = ["DecoderPoint", "Generate", "GeneratePoint", "GenerateRecord", "decoder_folder"]
