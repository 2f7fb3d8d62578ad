"""A variant that crashes the run process natively fails alone (trtbench.pipeline.supervisor): ``trtbench run`` on the
smoke config with a stand-in variant that crashes the process in its build (SIGSEGV, tests/assets/crash_variants.py)
keeps every other row, marks its rows failed with the signal, writes its results and report, and exits 1; the run the
supervisor relaunches fails what crashed (in a build, or in a save after timing) without trying it again. A signal that
stops a run (SIGINT, SIGTERM) still stops it, through the supervisor."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import output_free
from trtbench.results.journal import JOURNAL_NAME, Journal
from helpers.paths import REPO

SITECUSTOMIZE = """import os
if os.environ.get("TRTBENCH_INFLIGHT"):  # the run process and its workers: the supervisor needs no variant
    import crash_variants
"""


@pytest.fixture
def crash_env(subprocess_env, tmp_path) -> dict:
    """``subprocess_env`` whose run processes register the crashing variants (a ``sitecustomize`` imports them)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return {**subprocess_env, "PYTHONPATH": os.pathsep.join([str(site), subprocess_env["PYTHONPATH"]])}


@pytest.fixture
def smoke(tmp_path) -> Path:
    """configs/smoke.yaml, timed in the run process (a worker per variant costs seconds) at one point."""
    config = yaml.safe_load((REPO / "configs" / "smoke.yaml").read_text())
    config["benchmark"].update(isolation="in_process", measure_ceiling=False, shapes=["min"])
    config["output"].update(cold_start=False)
    path = tmp_path / "smoke.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_native_crash_fails_its_variant_alone(smoke, crash_env, tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "trtbench", "run", "--config", str(smoke), "--device", "cpu",
                           "--variants", "eager,crasher,traced", "--output", str(out), "--fresh"],
                          env=crash_env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr
    assert "killed by signal 11, SIGSEGV) while building builtin:cifar_resnet20 crasher fp32" in proc.stderr
    assert "error: 1 variant(s) crashed the run process natively and failed" in proc.stderr

    doc = json.loads((out / "results.json").read_text())
    rows = {(r["case"]["variant"], r["case"]["point"]): r for r in doc["records"]}
    assert set(rows) == {(v, p) for v in ("eager", "crasher", "traced") for p in ("min",)}
    for point in ("min",):
        for ok in ("eager", "traced"):
            assert rows[ok, point]["status"] == "ok", rows[ok, point]
        assert rows["crasher", point]["status"] == "failed"
        assert rows["crasher", point]["reason"] == (
            "build crasher fp32: the run process crashed (killed by signal 11, SIGSEGV) while building it; the run "
            "went on without it (see crash.log)")
    assert "crasher" in (out / "report.md").read_text()
    assert "crash_variants.py" in (out / "crash.log").read_text(), "faulthandler wrote the native stacks"
    saved = json.loads((out / "artifacts" / "manifest.json").read_text())
    assert {a["variant"] for a in saved["artifacts"]} == {"traced"}

    journal = [json.loads(line) for line in (out / JOURNAL_NAME).read_text().splitlines()]  # every line whole
    assert [e["key"] for e in journal if e["kind"] == "crash"] == [["builtin:cifar_resnet20", "fp32", "crasher"]]
    assert journal[-1]["kind"] == "complete"
    assert Journal(out).read().complete


def _stopped_by(signum: int, smoke: Path, env: dict, out: Path) -> subprocess.CompletedProcess:
    """``trtbench run`` sent ``signum`` once its run process times (the supervisor passes it on); eager alone, so
    that no other build comes before the timing."""
    proc = subprocess.Popen([sys.executable, "-m", "trtbench", "run", "--config", str(smoke), "--device", "cpu",
                             "--variants", "eager", "--output", str(out)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    seen = []
    for line in proc.stdout:  # progress, unbuffered under the supervisor
        seen.append(line)
        if line.startswith("time "):  # timing (its warm-up), after the builds
            break
    assert proc.poll() is None, "".join(seen) + proc.stderr.read()
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=120)
    assert output_free(out), "the run process is gone: its lock is free"
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def test_sigint_and_sigterm_still_stop_the_run(smoke, subprocess_env, tmp_path):
    config = yaml.safe_load(smoke.read_text())
    # a run the signal must stop: it cannot end first, however busy the machine
    config["benchmark"].update(warmup_s=600)
    smoke.write_text(yaml.safe_dump(config))
    interrupted = _stopped_by(signal.SIGINT, smoke, subprocess_env, tmp_path / "int")
    assert interrupted.returncode == 130, interrupted.stderr
    assert "interrupted: partial results were written" in interrupted.stderr
    doc = json.loads((tmp_path / "int" / "results.json").read_text())
    assert any(r["status"] == "interrupted" for r in doc["records"])

    terminated = _stopped_by(signal.SIGTERM, smoke, subprocess_env, tmp_path / "term")
    assert terminated.returncode == -signal.SIGTERM, terminated.stderr
    assert "crashed" not in terminated.stderr



def _relaunched(out: Path, lines: list[str], crashed: str, reason: str, config: dict):
    """The run the supervisor relaunches after ``crashed`` (a variant of the tiny model at fp32) crashed its process
    with the journal at ``lines``: run here, on the journal as the supervisor leaves it."""
    from conftest import run_dict

    (out / JOURNAL_NAME).write_text("".join(line + "\n" for line in lines))
    Journal(out).crash(("python:toy_models:tiny_cnn", "fp32", crashed), reason)
    return run_dict(config)


def test_a_relaunched_run_fails_what_crashed_without_trying_it_again(tiny_config, tmp_path):
    """What the supervisor's ``crash`` line does to the run it relaunches: a save that crashed after its variant
    was timed fails the rows it has, their timings kept, and is not tried again; a build that crashed fails its
    rows at every point without building again."""
    from conftest import run_dict

    out = tmp_path / "out"
    tiny_config["output"]["dir"] = str(out)
    tiny_config["benchmark"]["shapes"] = ["min", "max"]  # two points show "every point"; a third adds nothing
    first = run_dict(tiny_config)
    assert first.exit_code == 0
    lines = [line for line in (out / JOURNAL_NAME).read_text().splitlines() if json.loads(line)["kind"] != "complete"]

    def without(variant: str, kinds: tuple) -> list[str]:
        """``lines`` but ``variant``'s of ``kinds``."""
        def its(entry: dict) -> bool:
            if entry["kind"] == "artifacts":
                return entry["key"][2] == variant
            return entry["kind"] == "record" and entry["record"]["case"]["variant"] == variant
        return [line for line in lines if not (json.loads(line)["kind"] in kinds and its(json.loads(line)))]

    saving = "save traced fp32: the run process crashed (killed by signal 6, SIGABRT) while saving it"
    resumed = _relaunched(out, without("traced", ("artifacts",)), "traced", saving, tiny_config)
    assert resumed.exit_code == 1 and resumed.resumed == 6
    rows = {(r.case.variant, r.case.point): r for r in resumed.results}
    timed = {r.case.point: r.rounds for r in first.results if r.case.variant == "traced"}
    for point in ("min", "max"):
        assert rows["eager", point].status == rows["scripted", point].status == "ok"
        assert (rows["traced", point].status, rows["traced", point].reason) == ("failed", saving)
        assert rows["traced", point].rounds == timed[point], "timed before the crash: its timings are kept"
    manifest = json.loads((out / "artifacts" / "manifest.json").read_text())
    assert {a["variant"] for a in manifest["artifacts"]} == {"scripted"}, "traced is not saved again"

    building = "build scripted fp32: the run process crashed (killed by signal 11, SIGSEGV) while building it"
    resumed = _relaunched(out, without("scripted", ("artifacts", "record")), "scripted", building, tiny_config)
    assert resumed.exit_code == 1
    rows = {(r.case.variant, r.case.point): r for r in resumed.results}
    for point in ("min", "max"):
        assert rows["eager", point].status == rows["traced", point].status == "ok"
        assert (rows["scripted", point].status, rows["scripted", point].reason) == ("failed", building)
        assert rows["scripted", point].build["build_s"] is None, "not built again"
