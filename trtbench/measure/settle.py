"""Wait until a process's own threads have gone idle between blocks (docs/measuring.md, "Module notes")."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Optional

WINDOW_S = 0.001  # between two polls
IDLE_WINDOWS = 2  # consecutive idle polls that mean idle
IDLE_SHARE = 0.05  # without /proc: a window with less CPU than this share of its length is idle
CAP_S = 1.0  # never wait longer than this after one block
TASKS = "/proc/self/task"


@dataclass(frozen=True)
class Settle:
    """How long a process took to go idle, whether within the cap, and the CPU used meanwhile."""

    wait_s: float
    idle: bool
    cpu_s: float = 0.0


def runnable_threads(tasks: str = TASKS) -> Optional[int]:
    """How many threads of this process other than the caller are runnable (None where the kernel does not say)."""
    me = threading.get_native_id()
    try:
        ids = os.listdir(tasks)
    except OSError:
        return None
    runnable = 0
    for tid in ids:
        if tid == str(me):
            continue
        try:
            with open(f"{tasks}/{tid}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:  # the thread ended meanwhile
            continue
        runnable += stat[stat.rindex(b")") + 2:stat.rindex(b")") + 3] == b"R"
    return runnable


def wait_until_idle(cap_s: float = CAP_S, window_s: float = WINDOW_S, tasks: str = TASKS) -> Settle:
    """Poll until ``IDLE_WINDOWS`` polls in a row find this process's other threads idle."""
    started, cpu_started = time.perf_counter(), time.process_time()
    quiet = 0
    while True:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        time.sleep(window_s)
        runnable = runnable_threads(tasks)
        if runnable is None:
            idle = time.process_time() - cpu0 < IDLE_SHARE * (time.perf_counter() - wall0)
        else:
            idle = runnable == 0
        quiet = quiet + 1 if idle else 0
        waited = time.perf_counter() - started
        if quiet >= IDLE_WINDOWS or waited >= cap_s:
            return Settle(waited, quiet >= IDLE_WINDOWS, time.process_time() - cpu_started)
