"""The memory allocator a timed process starts with (more: docs/measuring.md, "Module notes")."""

from __future__ import annotations

import ctypes
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


def find_library(name: str, dirs: Optional[Iterable[str]] = None) -> Optional[Path]:
    """The library file ``name`` in the first of ``dirs`` (default :data:`LIBRARY_DIRS`) that has it, or None."""
    return next((Path(d) / name for d in (dirs or LIBRARY_DIRS) if (Path(d) / name).is_file()), None)


def library_path(allocator: str, dirs: Optional[Iterable[str]] = None) -> Optional[Path]:
    """The preloaded ``allocator``'s library file in ``dirs`` (None when it is not installed)."""
    return find_library(PRELOADED[allocator][0], dirs)


def missing_library(allocator: str, dirs: Optional[Iterable[str]] = None) -> Optional[str]:
    """Why a process cannot start with ``allocator`` here, with the install line (None when it can)."""
    if allocator not in PRELOADED or library_path(allocator, dirs) is not None:
        return None
    name, install = PRELOADED[allocator]
    return f"benchmark.allocator {allocator}: {name} is not installed here ({install})"


def process_env(allocator: str, env: dict, dirs: Optional[Iterable[str]] = None) -> dict:
    """``env`` for a process that starts with ``allocator`` (ValueError: a preloaded library is missing)."""
    out = {key: value for key, value in env.items() if key not in KNOBS}
    if allocator == "tuned":
        out.update(TUNED)
    elif allocator in PRELOADED:
        path = library_path(allocator, dirs)
        if path is None:
            raise ValueError(missing_library(allocator, dirs))
        out["LD_PRELOAD"] = str(path)
    elif allocator != "default":
        raise ValueError(f"unknown allocator {allocator!r}: one of {', '.join(ALLOCATORS)}")
    return out


# mmap_threshold's probe sizes: 128 KiB (glibc's initial threshold) doubling to 32 MiB (its dynamic maximum on 64-bit)
PROBE_SIZES = tuple((128 << 10) << i for i in range(9))
_IS_MMAPPED = 0x2  # glibc's chunk flag in the size word before a block (malloc/malloc.c: IS_MMAPPED)


def _glibc():
    """This process's C library where its ``malloc`` is glibc's own, else None."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018 - only glibc has it
    except (OSError, AttributeError):
        return None
    mine = ctypes.cast(ctypes.CDLL(None).malloc, ctypes.c_void_p).value
    if mine != ctypes.cast(libc.malloc, ctypes.c_void_p).value:  # LD_PRELOAD put another malloc first
        return None
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return libc


def _heap_serves(libc, size: int) -> bool:
    """Whether glibc serves a ``size``-byte block from its heap (a mapped one unmapped, not ``free``d)."""
    block = libc.malloc(size)
    if not block:
        raise MemoryError(size)
    word = ctypes.c_size_t.from_address(block - ctypes.sizeof(ctypes.c_size_t)).value
    if word & _IS_MMAPPED:  # the chunk starts two words before the block, less its alignment offset (prev_size)
        offset = ctypes.c_size_t.from_address(block - 2 * ctypes.sizeof(ctypes.c_size_t)).value
        libc.munmap(block - 2 * ctypes.sizeof(ctypes.c_size_t) - offset, offset + (word & ~0x7))
        return False
    libc.free(block)
    return True


def mmap_threshold() -> Optional[int]:
    """The largest of :data:`PROBE_SIZES` glibc serves from its heap now (0: none; None: not glibc)."""
    libc = _glibc()
    if libc is None:
        return None
    return max((size for size in PROBE_SIZES if _heap_serves(libc, size)), default=0)


def threshold_text(threshold: Optional[int]) -> str:
    """:func:`mmap_threshold`'s reading as a table cell."""
    if threshold is None:
        return "not glibc"
    if threshold == 0:
        return "< 128 KiB (fresh)"
    if threshold >= PROBE_SIZES[-1]:
        return ">= 32 MiB"
    return f">= {threshold >> 20} MiB" if threshold >= 1 << 20 else f">= {threshold >> 10} KiB"
