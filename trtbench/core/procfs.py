"""What ``/proc`` says about memory and a process (each None where it cannot be read)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional


def proc_kib(path: str, field: str) -> Optional[int]:
    """A ``field: N kB`` (or ``field: N``) line of a /proc file, as its number; None where it cannot be read."""
    try:
        with open(path) as handle:
            found = re.search(rf"^{re.escape(field)}\s*:?\s+(\d+)", handle.read(), re.MULTILINE)
    except OSError:
        return None
    return int(found.group(1)) if found else None


def available_bytes() -> Optional[int]:
    """The memory the kernel says new work can use without swapping (MemAvailable); None where unknown."""
    kib = proc_kib("/proc/meminfo", "MemAvailable")
    return None if kib is None else kib * 1024


def _task_sum(pid: int, name: str, field: str) -> Optional[int]:
    """``field`` of ``/proc/<pid>/task/*/<name>`` summed over the threads; None where none reads."""
    values = [v for task in Path(f"/proc/{pid}/task").glob("*") if (v := proc_kib(str(task / name), field)) is not None]
    return sum(values) if values else None


def process_facts(pid: int) -> dict:
    """A live process's RSS (MiB), context switches and CPU migrations of all its threads; keys absent where unknown."""
    rss = proc_kib(f"/proc/{pid}/status", "VmRSS")
    found = {"rss_mb": round(rss / 1024, 1) if rss is not None else None,
             "voluntary_ctx_switches": _task_sum(pid, "status", "voluntary_ctxt_switches"),
             "involuntary_ctx_switches": _task_sum(pid, "status", "nonvoluntary_ctxt_switches"),
             "cpu_migrations": _task_sum(pid, "sched", "se.nr_migrations")}
    return {key: value for key, value in found.items() if value is not None}
