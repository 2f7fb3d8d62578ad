"""Toy "runtimes" for the timing-worker tests: recipes a worker process can host (importable by
name, since a worker unpickles them). Each ``materialize()`` runs in the worker."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any


def _spin(seconds: float) -> None:
    """Spin for ``seconds`` of this thread's CPU time (a pool thread's spin count is work, not wall time:
    on a busy machine the spin stretches, and still costs the same CPU)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


@dataclass(frozen=True)
class Spinner:
    """Like ONNX Runtime's intra-op pool: after each call a background thread spins for ``spin_s`` of CPU."""

    spin_s: float = 0.05
    device: str = "cpu"

    def materialize(self):
        def call():
            sum(range(2000))
            threading.Thread(target=_spin, args=(self.spin_s,), daemon=True).start()
        return {"p": call}, {"runtime": "spinner"}


@dataclass(frozen=True)
class Sleeper:
    """A neighbour whose calls take ``call_s`` of wall time and no CPU."""

    call_s: float = 0.06
    device: str = "cpu"

    def materialize(self):
        return {"p": lambda: time.sleep(self.call_s)}, {"runtime": "sleeper"}


@dataclass(frozen=True)
class Refaults:
    """A runtime whose allocator hands a ``megabytes`` buffer back to the OS after every call (as glibc
    does with blocks above its mmap threshold): each call maps fresh pages and faults every one in."""

    megabytes: int = 8
    device: str = "cpu"

    def materialize(self):
        import mmap

        def call():
            buffer = mmap.mmap(-1, self.megabytes << 20)
            buffer[::mmap.PAGESIZE] = b"x" * ((self.megabytes << 20) // mmap.PAGESIZE)  # touch every page
            buffer.close()

        return {"p": call}, {"runtime": "refaults"}


@dataclass(frozen=True)
class Marks:
    """A neighbour that leaves a mark in the file ``mark`` on every call (a new one each time)."""

    mark: str
    device: str = "cpu"

    def materialize(self):
        count = iter(range(1 << 62))

        def call():
            with open(self.mark, "w") as fh:
                fh.write(f"{os.getpid()}:{next(count)}")
        return {"p": call}, {"runtime": "marks"}


@dataclass(frozen=True)
class ColdAfterOthers:
    """Like a runtime whose caches another runtime evicted: a call is cold (sleeps ``cold_s``) when a
    :class:`Marks` neighbour called since this one's last call (the file ``mark`` changed), else free."""

    mark: str
    cold_s: float = 0.25
    device: str = "cpu"

    def materialize(self):
        seen = [None]

        def call():
            try:
                with open(self.mark) as fh:
                    now = fh.read()
            except FileNotFoundError:
                now = ""
            if now != seen[0]:
                time.sleep(self.cold_s)
            seen[0] = now
        return {"p": call}, {"runtime": "cold-after-others"}


@dataclass(frozen=True)
class Two:
    """Two toys hosted by one worker (each worker process costs a torch import): ``first``'s points under their
    own names, ``second``'s with ``also_`` before theirs; the facts are ``first``'s."""

    first: Any
    second: Any
    device: str = "cpu"

    def materialize(self):
        calls, facts = self.first.materialize()
        also, _ = self.second.materialize()
        return {**calls, **{f"also_{name}": call for name, call in also.items()}}, facts


@dataclass(frozen=True)
class Hangs:
    """Its calls never return."""

    device: str = "cpu"

    def materialize(self):
        return {"p": lambda: time.sleep(3600)}, {}


@dataclass(frozen=True)
class Crashes:
    """Its process dies in a call, as a segfaulting runtime would."""

    device: str = "cpu"

    def materialize(self):
        def call():
            print("engine: fatal error in kernel 3", flush=True)  # what a crashing runtime says last
            os._exit(7)
        return {"p": call}, {}


@dataclass(frozen=True)
class FailsToBuild:
    device: str = "cpu"

    def materialize(self):
        raise RuntimeError("this runtime cannot load its model")


@dataclass(frozen=True)
class SleepsPerCall:
    """A server's toy model: every call (of 1 to ``max_batch`` queries, labelled ``x<k>``) sleeps
    ``call_s``; from its ``hang_from``-th call on (counting from 1, in its process), calls never return.
    With ``pid_dir``, each worker process that hosts it leaves an empty file named by its pid there."""

    call_s: float = 0.0102
    max_batch: int = 1
    hang_from: int | None = None
    device: str = "cpu"
    pid_dir: str | None = None

    def materialize(self):
        made = [0]
        if self.pid_dir:
            open(os.path.join(self.pid_dir, str(os.getpid())), "w").close()

        def call():
            made[0] += 1
            time.sleep(3600 if self.hang_from is not None and made[0] >= self.hang_from else self.call_s)
        return {f"x{k}": call for k in range(1, self.max_batch + 1)}, {"runtime": "sleeps per call"}


@dataclass(frozen=True)
class MallocsPerCall:
    """A runtime that mallocs a ``megabytes`` buffer through the C library, touches every page and frees it,
    on every call: whether its pages fault in again each call is up to the process's allocator (glibc
    maps a block above its mmap threshold afresh and unmaps it on free; a fixed high threshold, jemalloc
    or TCMalloc keep it). Its facts say which allocator library the process loaded."""

    megabytes: int = 48
    device: str = "cpu"

    def materialize(self):
        import ctypes
        import mmap

        libc = ctypes.CDLL(None)
        libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
        libc.free.argtypes = [ctypes.c_void_p]
        libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
        size = self.megabytes << 20

        def call():
            buffer = libc.malloc(size)
            libc.memset(buffer, 1, size)  # touch every page
            libc.free(buffer)

        with open("/proc/self/maps") as maps:
            loaded = sorted({name for line in maps for name in ("jemalloc", "tcmalloc") if name in line})
        return {"p": call}, {"runtime": "mallocs", "page": mmap.PAGESIZE, "preloaded": loaded}


@dataclass(frozen=True)
class MarksFreedOutputs:
    """A runtime whose every call returns a fresh tensor that appends its call's number to the file ``mark``
    once the process frees it: which outputs the process still holds shows as the numbers missing there."""

    mark: str
    device: str = "cpu"

    def materialize(self):
        import weakref

        import torch

        def freed(number: int) -> None:
            with open(self.mark, "a") as fh:
                fh.write(f"{number}\n")

        made = []

        def call():
            made.append(len(made) + 1)
            output = torch.zeros(256)
            weakref.finalize(output, freed, made[-1])
            return output

        return {"p": call}, {"runtime": "marks freed outputs"}


@dataclass(frozen=True)
class ListsModules:
    """A server's toy model whose call ``x1`` does nothing and whose call ``modules`` returns the modules its process
    has loaded under ``prefixes``."""

    prefixes: tuple[str, ...] = ("trtbench.scenarios", "matplotlib")
    device: str = "cpu"

    def materialize(self):
        import sys

        return ({"x1": lambda: None, "modules": lambda: sorted(m for m in sys.modules if m.startswith(self.prefixes))},
                {"runtime": "lists modules"})


@dataclass(frozen=True)
class ExtractsLikeAoti:
    """A toy that, as torch's AOTI package loader does, extracts into a folder of its process's temporary folder
    (``aotinductor_XXXXXX`` under ``TMPDIR``), which it removes only when the model is destroyed: never, where the
    process leaves by os._exit or is killed. Its call ``where`` returns the folder."""

    device: str = "cpu"

    def materialize(self):
        import tempfile

        folder = tempfile.mkdtemp(prefix="aotinductor_")
        with open(os.path.join(folder, "model.so"), "wb") as f:
            f.write(b"\0" * 4096)
        return {"where": lambda: folder}, {"runtime": "extracts like AOTI"}
