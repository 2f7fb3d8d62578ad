"""Where a reduced-precision build diverges from eager fp32: the per-layer harness behind ``trtbench diagnose``
(:mod:`.harness` over :mod:`.graph`, :mod:`.taps`, :mod:`.splice`; the method and its limits: docs/accuracy.md)."""
