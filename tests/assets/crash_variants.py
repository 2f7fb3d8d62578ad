"""A stand-in variant that crashes the process natively, as a library's C++ code may (torch 2.11's
``aoti_load_package`` segfaulted on an H100): ``crasher``, in its build (a read of address 0: SIGSEGV). For
tests/workers/test_crash.py, whose run imports this module in every process (a ``sitecustomize`` on its path), so
that the config can list it.
"""

from __future__ import annotations

import ctypes

from trtbench.variants import register
from trtbench.variants.traced import Traced


@register
class Crasher(Traced):
    name = "crasher"
    description = "crashes the process (SIGSEGV) in its build"

    def build(self, model, ctx):
        ctypes.string_at(0)  # reads address 0
        raise AssertionError("unreachable: reading address 0 crashes the process")
