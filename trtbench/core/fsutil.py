"""Output files: a writable output folder, atomic writes, and a clear error when the disk is full."""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Callable

from trtbench.core.errors import OUTPUT_FIX, DiskFullError, UserInputError


def ensure_writable_dir(path: Path | str) -> None:
    """Raise UserInputError unless this process can write ``path`` (or create it), writing nothing."""
    existing = target = Path(path).absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UserInputError(str(target), f"{existing} is a file, not a folder", "choose another --output")
    if not os.access(existing, os.W_OK | os.X_OK):
        info = existing.stat()
        uid, gid = os.getuid(), os.getgid()
        raise UserInputError(
            str(target), f"this user (uid {uid}, gid {gid}) cannot write {existing} (owner uid {info.st_uid}, "
                         f"gid {info.st_gid}, mode {info.st_mode & 0o7777:o})",
            f"run as the folder's owner (in Docker: --user \"$(id -u):$(id -g)\", as scripts/docker_run.sh does), "
            f"or make it writable for uid {uid} (chown -R {uid}:{gid} on the host folder), or choose another --output")


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp_path)`` and rename the temp file onto ``path`` once it is complete."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual permissions
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def json_text(data: Any) -> str:
    """``data`` as the indented JSON every output file holds."""
    return json.dumps(data, indent=2, sort_keys=False) + "\n"


def atomic_write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON to ``path`` atomically."""
    atomic_write_text(path, json_text(data))


def free_bytes(folder: Path | str) -> int:
    """Bytes this process may still write into ``folder``'s filesystem."""
    return shutil.disk_usage(folder).free


def require_space(folder: Path, needed: int, what: str, fix: str = OUTPUT_FIX) -> None:
    """Raise DiskFullError (saying ``fix``) unless ``needed`` bytes fit into ``folder``."""
    free = free_bytes(folder)
    if needed > free:
        raise DiskFullError(folder, needed, free, what, fix)


def write_bytes(path: Path, data: bytes | memoryview, what: str | None = None, fix: str = OUTPUT_FIX) -> None:
    """Write ``data`` to ``path``; a full disk raises DiskFullError naming ``what`` and ``fix``, leaving no file."""
    path = Path(path)
    what = what or path.name
    require_space(path.parent, len(data), what, fix)
    try:
        with open(path, "wb") as fh:
            fh.write(data)
    except OSError as err:
        if err.errno != errno.ENOSPC:
            raise
        path.unlink(missing_ok=True)
        raise DiskFullError(path.parent, len(data), free_bytes(path.parent), what, fix) from err


def save_through_memory(path: Path, save: Callable[[BinaryIO], None], what: str | None = None,
                        fix: str = OUTPUT_FIX) -> None:
    """Serialize with ``save(buffer)`` into memory, then :func:`write_bytes` it to ``path`` (``what``, ``fix``: a
    full disk's message)."""
    buffer = io.BytesIO()
    save(buffer)
    write_bytes(path, buffer.getbuffer(), what, fix)


def require_readable_file(path: str, key: str) -> Path:
    """Return ``path`` as a Path, or raise naming ``key`` when it is missing or unreadable."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise UserInputError(key, f"file not found: {p}",
                             "check the path (relative paths resolve from the current directory)")
    try:
        with p.open("rb") as fh:
            fh.read(1)
    except OSError as err:
        raise UserInputError(key, f"cannot read {p}: {err.strerror}", "check the file's permissions") from err
    return p
