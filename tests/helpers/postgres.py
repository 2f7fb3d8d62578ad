"""A real PostgreSQL 15 server for the history's tests, one per test process: the ``postgresql`` system package's
server, started through ``runuser -u postgres`` (it refuses to run as root) in a temporary folder that also holds
its socket (no TCP port), and stopped after.

Without the package or root the tests that need it skip, saying how to install it; under ``CI=true`` they fail,
since ``make test`` installs it (scripts/system_packages.sh)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
INSTALL = "apt-get install -y postgresql (make test does, as root: scripts/system_packages.sh)"


def _missing() -> str | None:
    if not BIN_DIRS or not (BIN_DIRS[0] / "initdb").is_file():
        return f"no PostgreSQL server here: {INSTALL}"
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        return "starting PostgreSQL as its own user needs root and runuser"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return f"no postgres user: {INSTALL}"
    return None


def _as_postgres(*args: str) -> None:
    subprocess.run(["runuser", "-u", "postgres", "--", *args], check=True, capture_output=True, timeout=120)


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A running server's URL (database ``postgres``, user ``postgres``, trusted over its socket)."""
    missing = _missing()
    if missing is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(missing)
        pytest.skip(missing)
    user = pwd.getpwnam("postgres")
    folder = Path(tempfile.mkdtemp(prefix="trtbench-pg-"))
    os.chown(folder, user.pw_uid, user.pw_gid)
    data, bin_dir = folder / "data", BIN_DIRS[0]
    try:
        _as_postgres(str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
        _as_postgres(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-w", "-o",
                     f"-k {folder} -c listen_addresses='' -F", "start")
        try:
            yield f"postgresql://postgres@/postgres?host={folder}"
        finally:
            _as_postgres(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
