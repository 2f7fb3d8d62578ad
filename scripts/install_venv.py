#!/usr/bin/env python3
"""The virtualenv `make run` and `make test` use: VENV, with SPEC installed editable and every module byte-compiled.

uv installs it (it unpacks the wheels and byte-compiles on every core; pip does both one file at a time), from the
package sources pip is configured with: uv reads neither pip's config files nor its PIP_* variables, so they are
handed over as uv's options. pip installs it where uv cannot be installed, or where pip's configuration sets
anything this script does not hand over, or uv's install fails. Why and how much faster: docs/getting-started.md.

Usage: install_venv.py VENV SPEC   (SPEC as pip takes it after -e, e.g. '.[test,openvino]')
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from typing import Optional

# pip's options that name where packages come from, as uv's: (uv's flag, whether pip's value is a list)
SOURCES = {"index-url": ("--index-url", False), "extra-index-url": ("--extra-index-url", True),
           "find-links": ("--find-links", True), "constraint": ("--constraint", True),
           "trusted-host": ("--allow-insecure-host", True)}
# pip's options that change how pip runs, not what it installs
IGNORED = {"cache-dir", "no-cache-dir", "default-timeout", "timeout", "disable-pip-version-check", "quiet",
           "verbose", "progress-bar", "root-user-action", "no-input", "retries", "no-color", "log"}
SECTIONS = ("global", "install", ":env:")  # pip install's own precedence: the environment's values win


def pip_settings(listing: str) -> dict[str, str]:
    """The settings ``pip config list`` printed (``section.key='value'`` lines) that pip install reads, each at
    the value that wins (see ``SECTIONS``)."""
    found: dict[str, dict[str, str]] = {}
    for line in listing.splitlines():
        name, sep, value = line.partition("=")
        section, dot, key = name.rpartition(".")
        if sep and dot and section in SECTIONS:
            found.setdefault(section, {})[key] = ast.literal_eval(value)
    return {key: value for section in SECTIONS for key, value in found.get(section, {}).items()}


def uv_options(settings: dict[str, str]) -> Optional[tuple[list[str], dict[str, str]]]:
    """uv's flags and environment for pip's ``settings``; None where a setting has no counterpart here."""
    flags, env = [], {}
    for key, value in settings.items():
        if key in SOURCES:
            flag, many = SOURCES[key]
            flags += [part for item in (value.split() if many else [value]) for part in (flag, item)]
        elif key == "no-index":
            if value.lower() in ("1", "true", "yes", "on"):
                flags.append("--no-index")
        elif key == "cert":
            env["SSL_CERT_FILE"] = value
        elif key not in IGNORED:
            return None
    return flags, env


def run(command: list[str], env: Optional[dict] = None) -> bool:
    """Run ``command``; whether it succeeded."""
    return subprocess.run(command, env=env).returncode == 0


def main(venv: str, spec: str) -> int:
    python = os.path.join(venv, "bin", "python")
    if not run([sys.executable, "-m", "venv", venv]):
        return 1
    listing = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    options = uv_options(pip_settings(listing))
    if options is None:
        why = "pip's configuration sets what this script does not hand over to uv"
    elif not run([python, "-m", "pip", "install", "--quiet", "uv"]):
        why = "uv could not be installed"
    else:
        flags, env = options
        # pip takes the best version over every index; uv takes the first index's unless told so
        if run([os.path.join(venv, "bin", "uv"), "pip", "install", "--quiet", "--python", python, "--compile-bytecode",
                "--index-strategy", "unsafe-best-match", *flags, "-e", spec], {**os.environ, **env}):
            return 0
        why = "uv's install failed (its error above)"
    print(f"note: installing with pip, a few minutes: {why}", file=sys.stderr)
    # pip byte-compiles one file at a time: it installs without, then compileall compiles on every core (files no
    # Python of this version parses, such as torch's py312 test helpers, left as pip leaves them)
    if not run([python, "-m", "pip", "install", "--quiet", "--no-compile", "-e", spec]):
        return 1
    return 0 if run([python, "-c", "import compileall, sysconfig; "
                     "compileall.compile_dir(sysconfig.get_path('purelib'), quiet=2, workers=0)"]) else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
