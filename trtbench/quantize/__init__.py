"""Reduced precision: each backend's own quantizer, fed by one calibration set and held to one accuracy budget."""
