"""The command line as users call it: ``python -m trtbench`` in a process of its own, and ``trtbench merge`` through
the entry point in this process."""

from __future__ import annotations

import subprocess
import sys


def trtbench(*args, env, cwd=None):
    return subprocess.run([sys.executable, "-m", "trtbench", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=600)


def merge_command(*args, capsys) -> tuple[int, str, str]:
    """``trtbench merge ARGS`` through the command line's entry point in this process: exit code, stdout, stderr
    (a process of its own would only import torch again; tests/test_cli.py runs the command as one)."""
    from trtbench.cli import main

    capsys.readouterr()
    code = main(["merge", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err
