"""Stand-in variants that crash the process natively, as a library's C++ code may (torch 2.11's
``aoti_load_package`` segfaulted on an H100): ``crasher`` in its build (a read of address 0: SIGSEGV), and
``save_crasher`` in its save (``abort()``: SIGABRT), having built, run and timed as ``traced`` does. For
tests/test_crash.py, whose run imports this module in every process (a ``sitecustomize`` on its path), so
that the config can list them and the timing workers rebuild them.
"""

from __future__ import annotations

import ctypes
import os

from trtbench.variants import register
from trtbench.variants.traced import Traced


@register
class Crasher(Traced):
    name = "crasher"
    description = "crashes the process (SIGSEGV) in its build"

    def build(self, model, ctx):
        ctypes.string_at(0)  # reads address 0
        raise AssertionError("unreachable: reading address 0 crashes the process")


@register
class SaveCrasher(Traced):
    name = "save_crasher"
    description = "traced, but crashes the process (SIGABRT) in its save"

    def save(self, built, directory, stem):
        os.abort()
