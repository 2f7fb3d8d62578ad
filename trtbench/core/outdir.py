"""The output directory: checked, locked for one run at a time, with its failures log; the default places."""

from __future__ import annotations

import errno
import fcntl
import os
import traceback
from pathlib import Path
from typing import Mapping

from trtbench.core.errors import UserInputError
from trtbench.core.fsutil import atomic_write, ensure_writable_dir, write_bytes

RESULTS_ROOT = Path("results")  # the default run folders' root, which the Docker recipe mounts
DEFAULT_HISTORY = str(RESULTS_ROOT / "history.sqlite")  # the history runs in that root append to
LOCK_NAME = ".trtbench.lock"
FAILURE_LOG = "failures.log"
_HELD: dict[Path, list] = {}  # folders this process has locked: [holders, the lock's fd]


class OutputDir:
    """``<out>``, created if missing, refused (exit 2) when a file, unwritable or in use; locked by an ``flock``."""

    def __init__(self, path: str | Path, key: str = "output.dir", joins: bool = False):
        self.path, self.key, self.joins = Path(path), key, joins
        self._held: Path | None = None  # the folder it holds, resolved

    def acquire(self) -> "OutputDir":
        path, key = self.path, self.key
        held = path.resolve()
        if held in _HELD:
            if not self.joins:
                raise _busy(path, key)
            _HELD[held][0] += 1
            self._held = held
            return self
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
                raise _busy(path, key) from err
            raise
        _HELD[held] = [1, fd]
        self._held = held
        return self

    def release(self) -> None:
        held, self._held = self._held, None
        if held is None:
            return
        _HELD[held][0] -= 1
        if _HELD[held][0] == 0:
            os.close(_HELD.pop(held)[1])

    def __enter__(self) -> "OutputDir":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _busy(path: Path, key: str) -> UserInputError:
    return UserInputError(key, f"another trtbench run is writing to '{path}'",
                          "wait for it to finish, or give this run its own --output "
                          "(each shard needs its own directory)")


def write_files(out_dir: str | Path, files: Mapping[str, bytes | str], key: str = "output.dir") -> dict[str, Path]:
    """Write ``files`` (path under ``out_dir`` -> bytes or text) atomically under ``out_dir``'s lock; their paths."""
    written = {}
    with OutputDir(out_dir, key=key, joins=True) as folder:
        for name, content in files.items():
            path = folder.path / name
            data = content.encode() if isinstance(content, str) else content
            atomic_write(path, lambda tmp, data=data, name=name: write_bytes(tmp, data, name))  # full: DiskFullError
            written[name] = path
    return written


class FailureLog:
    """Appends the full traceback of every failed build, check or save to ``<out>/failures.log``."""

    def __init__(self, out_dir: Path):
        self.path, self.count = Path(out_dir) / FAILURE_LOG, 0

    def reason(self, what: str, err: BaseException) -> str:
        """Log ``err`` under ``what``; return the one-line reason that names the log entry."""
        self.count += 1
        entry = f"#{os.getpid()}.{self.count}"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(f"=== {entry} {what}\n{''.join(traceback.format_exception(type(err), err, err.__traceback__))}\n")
        return f"{what}: {describe_error(err)} (traceback: {FAILURE_LOG} {entry})"


def describe_error(err: BaseException) -> str:
    """One line for a table: the exception type and the first line of its message."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}".rstrip(": ")
