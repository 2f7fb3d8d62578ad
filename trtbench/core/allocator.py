"""The memory allocator a timed process runs with: a stated state, set in its environment when it starts.

PyTorch's CPU deployment tools set it on purpose (``torch.backends.xeon.run_cpu`` and ``ipexrun``
preload jemalloc or TCMalloc), and it changes what a variant costs: glibc hands blocks above its mmap
threshold back to the OS on free, and a process that does so faults them in again on every call
(thousands of page faults per call), while another whose allocation history raised the threshold
does not. So every worker process (timing, serving, verify) starts in the state
``benchmark.allocator`` names, and its rows say which:

- ``default``: glibc as a fresh deployment starts: none of the knobs below set (the parent's
  ``LD_PRELOAD`` and ``MALLOC_*`` tunables are removed from the worker's environment);
- ``tuned``: glibc with a fixed mmap threshold and trim threshold (:data:`TUNED`), so buffers up to
  the threshold come from the heap and stay there;
- ``jemalloc``, ``tcmalloc``: the library preloaded (``LD_PRELOAD``); where it is not installed the
  rows are skipped with the install line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Optional

ALLOCATORS = ("default", "tuned", "jemalloc", "tcmalloc")
TUNED = {"MALLOC_MMAP_THRESHOLD_": str(256 << 20), "MALLOC_TRIM_THRESHOLD_": str(512 << 20)}
# the library file each preloaded allocator needs, and the Debian/Ubuntu package that installs it
PRELOADED = {"jemalloc": ("libjemalloc.so.2", "apt-get install libjemalloc2"),
             "tcmalloc": ("libtcmalloc_minimal.so.4", "apt-get install libtcmalloc-minimal4")}
KNOBS = ("LD_PRELOAD", "GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
         "MALLOC_MMAP_MAX_", "MALLOC_ARENA_MAX", "MALLOC_CONF", "TCMALLOC_RELEASE_RATE")
LIBRARY_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                "/usr/local/lib", "/lib/x86_64-linux-gnu", "/lib64", "/lib")


def library_path(allocator: str, dirs: Optional[Iterable[str]] = None) -> Optional[Path]:
    """The preloaded ``allocator``'s library file in ``dirs`` (default :data:`LIBRARY_DIRS`; None when it is
    not installed)."""
    name, _ = PRELOADED[allocator]
    return next((Path(d) / name for d in (dirs or LIBRARY_DIRS) if (Path(d) / name).is_file()), None)


def unavailable_reason(allocator: str, dirs: Optional[Iterable[str]] = None) -> Optional[str]:
    """Why a process cannot start with ``allocator`` here, with the install line (None when it can)."""
    if allocator not in PRELOADED or library_path(allocator, dirs) is not None:
        return None
    name, install = PRELOADED[allocator]
    return f"benchmark.allocator {allocator}: {name} is not installed here ({install})"


def process_env(allocator: str, env: dict, dirs: Optional[Iterable[str]] = None) -> dict:
    """``env`` for a process that starts with ``allocator``: the knobs of any other state removed, then
    this one's set. Raises ValueError where a preloaded library is missing (:func:`unavailable_reason`)."""
    out = {key: value for key, value in env.items() if key not in KNOBS}
    if allocator == "tuned":
        out.update(TUNED)
    elif allocator in PRELOADED:
        path = library_path(allocator, dirs)
        if path is None:
            raise ValueError(unavailable_reason(allocator, dirs))
        out["LD_PRELOAD"] = str(path)
    elif allocator != "default":
        raise ValueError(f"unknown allocator {allocator!r}: one of {', '.join(ALLOCATORS)}")
    return out


def worker_env(allocator: str) -> dict:
    """This process's environment for a worker that starts with ``allocator``."""
    return process_env(allocator, dict(os.environ))
