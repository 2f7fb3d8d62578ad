"""Decoder registry: the deployment paths of a causal language model that the generate scenario times (eager,
compiled, exported, AOTInductor, ONNX Runtime GenAI, OpenVINO GenAI). Each module in this package defines and
registers one decoder (:mod:`.base` holds the interface); adding one is adding a module."""

from __future__ import annotations


from trtbench.core.plugins import import_plugins
from trtbench.decoders.base import Decoder, DecoderSession, register_decoder, registered_decoder, registered_names

__all__ = ["Decoder", "DecoderSession", "register_decoder", "get_decoder", "decoder_names"]

_loaded = False


def _load_all() -> None:
    global _loaded
    if not _loaded:
        import_plugins(__name__, __path__)
        _loaded = True


def decoder_names() -> list[str]:
    """Names of all registered decoders."""
    _load_all()
    return registered_names()


def get_decoder(name: str) -> Decoder:
    """A fresh instance of the decoder called ``name`` (KeyError where there is none)."""
    _load_all()
    cls = registered_decoder(name)
    if cls is None:
        raise KeyError(name)
    return cls()
