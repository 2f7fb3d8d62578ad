"""Reduced precision: each backend's own quantizer (ONNX Runtime, NNCF, torchao PT2E, ModelOpt),
fed by one calibration set and held to one accuracy budget; :mod:`trtbench.quantize.common` holds
what they share."""
