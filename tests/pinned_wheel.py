"""A released wheel, pinned by sha256 and cached in .cache/, opened as a zip: the real sources that
contract tests hold trtbench's calls against (the libraries themselves cannot run here)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

CACHE_ROOT = Path(__file__).resolve().parents[1] / ".cache"


def open_pinned_wheel(requirement: str, filename: str, sha256: str, cache: Path,
                      pip_args: tuple[str, ...] = ()) -> zipfile.ZipFile:
    """``filename`` from ``cache``, downloaded there with ``pip download --no-deps requirement`` when absent;
    the test fails (it needs the package registry) when it cannot be had or its sha256 is not ``sha256``."""
    path = cache / filename
    if not path.is_file():
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                               *pip_args, requirement, "--dest", str(cache)], capture_output=True, text=True)
        if not path.is_file():
            pytest.fail(f"could not download {filename} (pip exited {done.returncode}); this test needs the package "
                        f"registry (PyPI):\n{done.stdout[-1000:]}{done.stderr[-2000:]}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sha256:
        pytest.fail(f"{path} has sha256 {digest}, not the {sha256} this contract was checked against; delete it "
                    f"and run again")
    return zipfile.ZipFile(path)
