"""The supervisor of a run's child process, relaunched after a native crash (docs/resuming.md, "Native crashes")."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from trtbench.core.inflight import CRASH_LOG, INFLIGHT_ENV, InFlight, read_in_flight

CRASH_SIGNALS = (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGILL, signal.SIGFPE)
PASSED_ON = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies
DOING = {"build": "building", "save": "saving", "check": "checking"}


def supervised() -> bool:
    """Whether this process is the child of a supervisor."""
    return bool(os.environ.get(INFLIGHT_ENV))


def signal_text(number: int) -> str:
    """``signal 11, SIGSEGV``."""
    return f"signal {number}, {signal.Signals(number).name}"


def supervise(argv: list[str]) -> int:
    """Run ``trtbench <argv>`` in a child process, relaunched after each crash in one variant's step; the exit code."""
    crashed: list[InFlight] = []
    with tempfile.TemporaryDirectory(prefix="trtbench-") as folder:
        marker = Path(folder) / "inflight.json"
        env = {**os.environ, INFLIGHT_ENV: str(marker), "PYTHONUNBUFFERED": "1"}  # a crash loses nothing printed
        while True:
            code = _run_child(argv, env)
            if code >= 0 or -code not in CRASH_SIGNALS:
                break
            step = read_in_flight(marker)
            marker.unlink(missing_ok=True)
            if step is None or _key(step) in {_key(c) for c in crashed}:
                print(f"error: the run process crashed (killed by {signal_text(-code)}) outside any one variant's "
                      f"build, save or check; {CRASH_LOG} in the output directory has its native stack. What it "
                      f"measured is kept in its journal: the same command resumes it", file=sys.stderr)
                return 1
            _journal_crash(step, -code)
            crashed.append(step)
            argv = [arg for arg in argv if arg != "--fresh"]  # the relaunch resumes
    if code < 0:
        _die_of(-code)
    if crashed:
        steps = ", ".join(f"{c.stage} {c.model} {c.variant} {c.precision}" for c in crashed)
        print(f"error: {len(crashed)} variant(s) crashed the run process natively and failed ({steps}); the run went "
              f"on without them. Native stack: {Path(crashed[0].out_dir) / CRASH_LOG}", file=sys.stderr)
        return max(code, 1)
    return code


def _key(step: InFlight) -> tuple:
    """The save key of the variant ``step`` belongs to (the journal's, imported after a crash only)."""
    from trtbench.results.journal import save_key

    return save_key(step.model, step.precision, step.variant)


def _journal_crash(step: InFlight, number: int) -> None:
    """Journal the crash of ``step`` (the relaunch fails its variant), note it in the crash log, and say so."""
    from trtbench.results.journal import Journal

    out_dir, crashed = Path(step.out_dir), f"the run process crashed (killed by {signal_text(number)})"
    # the failed rows' reason, in results.json
    reason = (f"{step.stage} {step.variant} {step.precision}: {crashed} while {DOING[step.stage]} it; the run went on "
              f"without it (see {CRASH_LOG})")
    Journal(out_dir).crash(_key(step), reason)
    line = f"{crashed} while {DOING[step.stage]} {step.model} {step.variant} {step.precision}"
    with open(out_dir / CRASH_LOG, "a", encoding="utf-8") as log:
        log.write(f"trtbench: {line}: the stack above\n")
    print(f"trtbench: {line} (native stack: {out_dir / CRASH_LOG}); going on without it", file=sys.stderr)


def _run_child(argv: list[str], env: dict) -> int:
    """Run ``trtbench <argv>`` in a child process (its own process group), signals passed on; its return code."""
    prctl = getattr(ctypes.CDLL(None), "prctl", None)  # Linux's

    def child_setup() -> None:
        os.setpgid(0, 0)
        # the Ctrl-C passed on stops the run, also where this process was started ignoring SIGINT (a background job)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)

    child = subprocess.Popen([sys.executable, "-m", "trtbench", *argv], env=env, preexec_fn=child_setup)

    def pass_on(number: int, frame) -> None:
        with contextlib.suppress(ProcessLookupError):  # it has just ended
            if number == signal.SIGINT:
                os.killpg(child.pid, number)
            else:
                child.send_signal(number)

    handlers = {number: signal.signal(number, pass_on) for number in PASSED_ON}
    try:
        return child.wait()
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)


def _die_of(number: int) -> None:
    """End this process by signal ``number``, as the child ended."""
    with contextlib.suppress(OSError, ValueError):  # SIGKILL has no handler to reset
        signal.signal(number, signal.SIG_DFL)
    os.kill(os.getpid(), number)
    sys.exit(128 + number)  # a signal this process cannot die of
