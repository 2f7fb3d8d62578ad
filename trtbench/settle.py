"""Wait until a process's own threads have gone idle: the measured settle gap between blocks.

Runtimes keep cores busy after a call returns: ONNX Runtime's intra-op threads spin
(``session.intra_op.allow_spinning`` is on by default), OpenMP workers spin before they sleep,
and OpenVINO's TBB workers linger. On shared cores, whatever is timed next competes with them.
After a block of calls, the process sleeps in short windows and reads its own CPU time
(``time.process_time``: every thread of the process, dead ones included, in ns): once
``IDLE_WINDOWS`` windows in a row pass with almost no CPU used, its threads are idle (one quiet
window alone could be a spinning thread that the scheduler preempted). The wait is measured, not guessed, and a
cap bounds it for a runtime whose threads never rest.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

WINDOW_S = 0.002  # one observation window
IDLE_SHARE = 0.05  # a window with less CPU than this share of its length is idle
IDLE_WINDOWS = 2  # consecutive idle windows that mean idle
CAP_S = 1.0  # never wait longer than this after one block


@dataclass(frozen=True)
class Settle:
    """How long a process took to go idle after a block, the CPU its threads used meanwhile (what
    spinning costs), and whether it went idle within the cap."""

    wait_s: float
    idle: bool
    cpu_s: float = 0.0


def wait_until_idle(cap_s: float = CAP_S, window_s: float = WINDOW_S, idle_share: float = IDLE_SHARE) -> Settle:
    """Sleep in ``window_s`` windows until one passes with this process using under ``idle_share`` of it."""
    started, cpu_started = time.perf_counter(), time.process_time()
    quiet = 0
    while True:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        time.sleep(window_s)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        waited = time.perf_counter() - started
        quiet = quiet + 1 if cpu < idle_share * wall else 0
        if quiet >= IDLE_WINDOWS or waited >= cap_s:
            return Settle(waited, quiet >= IDLE_WINDOWS, time.process_time() - cpu_started)
