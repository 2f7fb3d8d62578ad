"""Where a reduced-precision build diverges from eager fp32: the per-layer harness behind ``trtbench diagnose``.

A model is traced into layers named by module path (:mod:`.graph`); each variant is opened by its taps, extra
graph outputs at every layer boundary (:mod:`.taps`), and localised again by splice bisection (:mod:`.splice`);
:mod:`.harness` runs both within a build count announced first and a budget in minutes. The method, the floor and
the limits: docs/accuracy.md.
"""
