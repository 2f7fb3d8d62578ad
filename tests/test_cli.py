"""The command line as users call it: a run in a separate process (under its supervisor), the other commands
through the same entry point in this process (a process each would only import torch again)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

import pytest
import yaml

from helpers.cli import trtbench
from helpers.planted import planted_config
from trtbench.config.config import bundled_config_dir, load_config
from trtbench.core.env import default_threads
from trtbench.models.planted import planted_path

REPO = Path(__file__).resolve().parents[1]


def test_run_end_to_end_in_a_subprocess_with_plain_progress(tiny_config, write_config, subprocess_env, tmp_path):
    path = write_config(tiny_config)
    history = tmp_path / "history.sqlite"
    proc = trtbench("--config", str(path), "--output", str(tmp_path / "elsewhere"), "--history", str(history),
                    "--label", "abc123", env=subprocess_env)
    assert proc.returncode == 0, proc.stderr
    # the run appended its figures to the history it was told, with its label, and timed that inside the run
    assert f"history {history}: 1 run(s) added" in proc.stderr
    from trtbench import api

    runs = {(p.run.run_id, p.run.label, p.run.source) for s in api.history_series(history) for p in s.points}
    assert [run[1:] for run in runs] == [("abc123", str(tmp_path / "elsewhere"))]
    assert "speedup" in proc.stdout and "traced" in proc.stdout
    assert "FutureWarning" not in proc.stderr, "torch.jit warnings are captured into the results"
    # its output is a pipe, not a terminal: plain progress lines, no bars
    assert "build python:toy_models:tiny_cnn traced fp32\n" in proc.stdout
    assert f"time python:toy_models:tiny_cnn fp32 t{default_threads()['threads']} max ..." in proc.stdout
    doc = json.loads((tmp_path / "elsewhere" / "results.json").read_text())
    assert len(doc["records"]) == 9 and all(r["status"] == "ok" for r in doc["records"])
    assert not (tmp_path / "out").exists(), "--output overrides output.dir"


def test_quiet_prints_only_the_table(tiny_config, write_config, capsys):
    from trtbench.cli import main

    tiny_config["output"]["save_artifacts"] = False
    tiny_config["benchmark"]["shapes"] = ["opt"]
    code = main(["--config", str(write_config(tiny_config)), "--quiet", "--variants", "eager,traced"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "build " not in out and "traced" in out and "scripted" not in out


def test_bare_config_name_resolves_to_bundled_configs(tmp_path, monkeypatch, capsys):
    from trtbench.cli import main

    monkeypatch.chdir(tmp_path)  # no configs/ here: the bundled one, with the suffix and without
    for name in ("resnet34.yaml", "resnet34"):
        assert main(["validate", name]) == 0, name
        assert "torchvision:resnet34" in capsys.readouterr().out, name


def test_unknown_bare_config_name_suggests(tmp_path, monkeypatch, capsys):
    from trtbench.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["--config", "resnet43.yaml"]) == 2
    assert "file not found" in capsys.readouterr().err


def test_models_lists_torchvision_and_builtin(capsys):
    from trtbench.cli import main

    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "resnet34" in out and "builtin" in out


def test_every_bundled_config_validates():
    paths = sorted(bundled_config_dir().glob("*.yaml"))
    assert {"resnet34.yaml", "smoke.yaml"} <= {p.name for p in paths}
    for path in paths:
        config = load_config(path)
        assert config.name == yaml.safe_load(path.read_text())["name"]


def test_resnet34_config_is_the_reference_setup():
    config = load_config("resnet34.yaml")
    (spec,) = config.inputs
    assert (spec.min_shape, spec.opt_shape, spec.max_shape) == ([1, 3, 224, 224], [2, 3, 224, 224], [16, 3, 224, 224])
    assert config.variant_names == ["eager", "traced", "scripted", "exported", "compiled", "aoti", "ort", "openvino",
                                    "trt", "trt_traced", "trt_scripted", "ort_cuda", "ort_trt"]
    assert config.benchmark.timing.mode == "adaptive" and config.benchmark.shapes == ["min", "opt", "max"]


def test_profile_command_turns_profiling_on(tiny_config, write_config, tmp_path, capsys):
    from trtbench.cli import main

    assert "profile" not in tiny_config
    tiny_config["variants"] = ["eager", "traced"]
    tiny_config["output"]["save_artifacts"] = False  # profiles of saved files: tests/profiling/test_profiling.py
    tiny_config["benchmark"]["shapes"] = ["opt"]
    code = main(["profile", "--config", str(write_config(tiny_config)), "--output", str(tmp_path / "p")])
    assert code == 0, capsys.readouterr().err
    doc = json.loads((tmp_path / "p" / "results.json").read_text())
    assert doc["profiles"][0]["data"]["precision"] == "fp32"
    report = (tmp_path / "p" / "report.md").read_text()
    assert "**Layers**" in report and "**Operators**" in report and "**Peak memory**" in report


def test_variants_lists_options_and_why_trt_cannot_run_here(subprocess_env):
    import torch

    proc = trtbench("variants", env=subprocess_env)
    assert proc.returncode == 0, proc.stderr
    for name in ("eager", "traced", "scripted", "exported", "trt", "trt_traced", "trt_scripted"):
        assert f"\n{name}: " in "\n" + proc.stdout
    assert "builds from: traced" in proc.stdout and "min_block_size" in proc.stdout
    if not torch.cuda.is_available():
        assert "skipped: CUDA is not available" in proc.stdout
        from trtbench.core.env import bf16_compute

        # eager's bf16 line: native or emulated, and why
        eager = proc.stdout.split("\neager: ", 1)[1].split("\nexported: ", 1)[0]
        assert f"  bf16 here: {bf16_compute('cpu').text}" in eager
        trt_traced = proc.stdout.split("\ntrt_traced: ", 1)[1]
        assert "bf16 here: skipped: Torch-TensorRT's TorchScript frontend takes no bf16" in trt_traced


def run_cli_in_a_fork(args: list[str], cwd: Path, out: Path, uid: int | None = None) -> tuple[int, str, str, list]:
    """``trtbench.cli.main(args)`` in a forked child, in ``cwd``, as ``uid`` when given (then root drops to it):
    (exit code, stdout, stderr, files under the checkout or the Python environment that the child imported
    after the drop).

    The child has imported trtbench, and loaded its registries of built-in models and variants, before it
    drops: a fresh process as another uid cannot read a checkout (nor a ``.venv`` in it) that lives under
    a folder other users cannot read, as a clone under ``mktemp -d`` (mode 0700) does. Its output goes to
    files under ``out``, opened before the drop.
    """
    from trtbench import cli
    from trtbench.models import builtin_model_names
    from trtbench.pipeline import runner  # noqa: F401  (what cmd_run imports)
    from trtbench.variants import variant_names

    stdout, stderr, imported = out / "stdout", out / "stderr", out / "imported"
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code, streams = 70, []
        try:
            sys.stdout, sys.stderr, report = streams = [open(path, "w") for path in (stdout, stderr, imported)]
            os.chdir(cwd)
            builtin_model_names(), variant_names()  # both import their modules from the checkout
            before = set(sys.modules)
            if uid is not None:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            code = cli.main(args)
            roots = (str(REPO), sys.prefix)
            late = [getattr(sys.modules[name], "__file__", None) or "" for name in set(sys.modules) - before]
            report.write("\n".join(sorted(f for f in late if f.startswith(roots))))
        except BaseException:
            traceback.print_exc()
        finally:
            for stream in streams:
                stream.flush()
            os._exit(code)
    deadline = time.monotonic() + 600
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"trtbench {' '.join(args)} did not end in 600 s")
        time.sleep(0.05)
    return (os.waitstatus_to_exitcode(done[1]), stdout.read_text(), stderr.read_text(),
            [line for line in imported.read_text().splitlines() if line])


def test_an_unwritable_output_folder_is_bad_input(tmp_path):
    """A results folder this user cannot write: exit 2 naming it and the fix, nothing run, no traceback.

    As root (who may write anywhere) the run drops to uid 65534, the way a container user meets a host
    folder owned by someone else: in a forked child that has imported trtbench, with the config copied
    out of the checkout, so the test passes wherever the checkout lives.
    """
    root = Path(tempfile.mkdtemp(prefix="trtbench-locked-"))  # not under pytest's 0700 tmp: uid 65534 enters it
    try:
        shutil.copyfile(bundled_config_dir() / "smoke.yaml", root / "smoke.yaml")
        root.chmod(0o555)
        code, stdout, stderr, late = run_cli_in_a_fork(["run", "--config", "smoke.yaml", "--output", "out"], root,
                                                       tmp_path, uid=65534 if os.geteuid() == 0 else None)
    finally:
        root.chmod(0o755)
        shutil.rmtree(root)
    assert code == 2, stdout + stderr
    assert late == [], "the child read these from the checkout or its environment after dropping to uid 65534"
    assert "Traceback" not in stderr and "build " not in stdout
    assert f"trtbench: error: {root / 'out'}: this user (uid " in stderr
    assert "--user" in stderr and "chown" in stderr


def test_diagnose_writes_its_files_and_exits_1_naming_the_layer(tmp_path, capsys):
    from trtbench.cli import main

    path = tmp_path / "planted.yaml"
    path.write_text(yaml.safe_dump(planted_config(tmp_path, "fp16", 2)))
    assert main(["diagnose", "--config", str(path), "--precision", "fp16"]) == 1
    out = capsys.readouterr().out
    folder = tmp_path / "out" / "diagnose"
    entry = json.loads((folder / "eager-fp16-opt.json").read_text())
    assert entry["named"] == planted_path(2) and entry["confirmed"] and entry["builds"] == entry["builds_announced"]
    report = (folder / "report.md").read_text()
    assert f"`{planted_path(2)}` **(named)**" in report and "plots/diagnose-sqnr-fp16.png" in report
    assert (folder / "plots" / "diagnose-sqnr-fp16.png").stat().st_size > 0
    assert f"builds {entry['builds']} (announced {entry['builds']})" in out


@pytest.mark.parametrize("args, key", [(["--precision", "fp8"], "--precision"), (["--variants", "ort"], "--variants"),
                                       (["--point", "b64"], "--point")])
def test_diagnose_bad_input_exits_2_naming_the_flag(tmp_path, capsys, args, key):
    from trtbench.cli import main

    path = tmp_path / "planted.yaml"
    path.write_text(yaml.safe_dump(planted_config(tmp_path, "fp16", 2)))
    assert main(["diagnose", "--config", str(path), *args]) == 2
    assert key in capsys.readouterr().err
    assert not (tmp_path / "out" / "diagnose").exists()
