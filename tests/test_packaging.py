"""What an install ships: every file of the package that is not Python (bundled configs, the datasheets, the report's
assets) is matched by pyproject.toml's package data, so a wheel or sdist built from the checkout has it."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_every_data_file_of_the_package_is_package_data():
    if shutil.which("git") is None:
        pytest.skip("no git here to list the package's files")
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "trtbench"], cwd=ROOT,
                            capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    data = [path.removeprefix("trtbench/") for path in listed.stdout.splitlines() if not path.endswith(".py")]
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["trtbench"]
    unshipped = [path for path in data if not any(fnmatch(path, pattern) for pattern in patterns)]
    assert data and not unshipped, f"add these to [tool.setuptools.package-data] in pyproject.toml: {unshipped}"
