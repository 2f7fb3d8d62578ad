"""Decoder registry: each module in this package registers one decoder (:mod:`.base` holds the interface)."""

from __future__ import annotations

from trtbench.decoders.base import DECODERS, Decoder, DecoderSession, register_decoder

__all__ = ["DECODERS", "Decoder", "DecoderSession", "register_decoder", "get_decoder", "decoder_names"]

decoder_names = DECODERS.names


def get_decoder(name: str) -> Decoder:
    """A fresh instance of the decoder called ``name`` (an UnknownName error, a KeyError, where there is none)."""
    return DECODERS.get(name)()
