"""The output directory: checked before anything is written, locked for one run at a time,
and a log of the full traceback of every failure in it."""

from __future__ import annotations

import errno
import fcntl
import os
import traceback
from pathlib import Path

from trtbench.core.errors import UserInputError
from trtbench.core.fsutil import ensure_writable_dir

LOCK_NAME = ".trtbench.lock"
FAILURE_LOG = "failures.log"


class OutputDir:
    """``<out>``: created if missing, refused (exit 2) when it is a file, unwritable or in use.

    The lock is an ``flock`` on ``<out>/.trtbench.lock``: the kernel drops it when the process
    dies however it dies, so a killed run never leaves a stale lock behind its resume.
    """

    def __init__(self, path: str | Path, key: str = "output.dir"):
        self.path = Path(path)
        self.key = key
        self._lock_fd: int | None = None

    def acquire(self) -> "OutputDir":
        path, key = self.path, self.key
        if path.exists() and not path.is_dir():
            raise UserInputError(key, f"'{path}' exists and is a file, not a directory",
                                 "choose another --output, or move the file away")
        ensure_writable_dir(path)
        try:
            path.mkdir(parents=True, exist_ok=True)
            fd = os.open(path / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        except PermissionError as err:
            raise UserInputError(key, f"cannot write to '{path}' ({err.strerror})",
                                 "choose a writable --output; in Docker, run with --user \"$(id -u):$(id -g)\" "
                                 "or chown the mounted results folder to the image user") from err
        except OSError as err:
            raise UserInputError(key, f"cannot create '{path}' ({err.strerror})", "choose another --output") from err
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno in (errno.EWOULDBLOCK, errno.EACCES):
                raise UserInputError(key, f"another trtbench run is writing to '{path}'",
                                     "wait for it to finish, or give this run its own --output "
                                     "(each shard needs its own directory)") from err
            raise
        self._lock_fd = fd
        return self

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> "OutputDir":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


class FailureLog:
    """Appends the full traceback of every failed build, check or save to ``<out>/failures.log``."""

    def __init__(self, out_dir: Path):
        self.path = Path(out_dir) / FAILURE_LOG
        self.count = 0

    def reason(self, what: str, err: BaseException) -> str:
        """Log ``err`` under ``what``; return the one-line reason that names the log entry."""
        self.count += 1
        entry = f"#{os.getpid()}.{self.count}"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(f"=== {entry} {what}\n")
            fh.write("".join(traceback.format_exception(type(err), err, err.__traceback__)))
            fh.write("\n")
        return f"{what}: {describe_error(err)} (traceback: {FAILURE_LOG} {entry})"


def describe_error(err: BaseException) -> str:
    """One line for a table: the exception type and the first line of its message."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}".rstrip(": ")
