"""The generate scenario's decoder artifacts on the 2-layer, hidden-size-64 Llama: published into the run's
manifest only where their logits kept their tolerances, self-contained, and reloaded by ``trtbench verify`` in a
fresh process after the output folder moved; a changed file or an accuracy miss fails verify naming it."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("transformers")
pytest.importorskip("onnxruntime_genai")

from test_generate import generate_config  # noqa: E402
from trtbench.artifacts.store import read_manifest, sha256_of, verify  # noqa: E402


@pytest.fixture(scope="module")
def generate_run(tmp_path_factory):
    """eager fp32 and ort_genai fp32 publish; ort_genai int4, held to a cosine floor no int4 build keeps, fails its
    accuracy and publishes nothing (eager int4 is skipped: no int4 path)."""
    from conftest import run_dict

    out = tmp_path_factory.mktemp("gen") / "out"
    data = generate_config(variants=["eager", "ort_genai"], output={"dir": str(out)},
                           tolerances={"int4": {"cosine_min": 0.9999999}},
                           scenarios=[{"generate": {"prompt_tokens": [8], "new_tokens": [2], "min_requests": 1,
                                                    "max_requests": 1}}])
    assert run_dict(data).exit_code == 1, "ort_genai int4 misses its tolerance"
    return out


def test_accurate_decoders_publish_self_contained_artifacts_with_every_files_sha256(generate_run):
    manifest = read_manifest(generate_run)
    entries = {(a["variant"], a["precision"]): a for a in manifest["artifacts"]}
    assert set(entries) == {("eager", "fp32"), ("ort_genai", "fp32")}, "the inaccurate int4 build saves nothing"
    store = generate_run / "artifacts"
    assert not list(store.glob("ort_genai_int4*")) and not list(store.glob(".*")), "no int4 files, no staging"
    for entry in entries.values():
        assert entry["kind"] == "decoder" and entry["model"] == "tiny-llama" and entry["threads"] == 1
        files = {f["file"]: f for f in entry["files"]}
        assert files == {p.relative_to(store).as_posix(): {"file": p.relative_to(store).as_posix(),
                                                           "sha256": sha256_of(p), "bytes": p.stat().st_size}
                         for p in (store / entry["file"]).rglob("*") if p.is_file()}
        assert sha256_of(store / entry["reference"]["file"]) == entry["reference"]["sha256"]
        assert entry["reference"]["request"] == {"batch": 1, "prompt_tokens": 8, "new_tokens": 2}
        assert entry["tolerance"] == {"cosine_min": 0.9999, "top1_agree_min": 1.0, "top1_margin": 1e-4}
        assert entry["accuracy"]["ok"] and entry["fresh_process_check"]["first_token_ms"] > 0
    eager = entries["eager", "fp32"]
    assert eager["artifact"] == "eager_fp32/decoder.json"
    assert json.loads((store / eager["artifact"]).read_text())["folder"] == "model", "named relatively"
    assert any(name.startswith("eager_fp32/model/model.") for name in (f["file"] for f in eager["files"]))
    assert any(f["file"].endswith("model.onnx") for f in entries["ort_genai", "fp32"]["files"])
    rows = {r["slot"]: r for r in json.loads((generate_run / "results.json").read_text())["generate"]}
    missed = rows["ort_genai@int4"]
    assert missed["status"] == "failed" and "published" not in missed["data"]
    assert "tolerances.int4" in missed["reason"] and "cosine" in missed["reason"], "the miss names its figures"
    assert missed["data"]["accuracy"]["ok"] is False and "metrics" not in missed["data"], "not timed"
    assert rows["eager@int4"]["status"] == "skipped"
    assert rows["ort_genai"]["data"]["published"]["file"] == "ort_genai_fp32"
    assert rows["eager"]["data"]["published"]["load_s"] > 0
    report = (generate_run / "report.md").read_text()
    assert "| saved artifact load s | saved first token ms |" in report
    assert "ort_genai@int4: accuracy against eager fp32" in report


def test_verify_reloads_them_in_a_fresh_process_after_the_output_folder_moves(generate_run, tmp_path, capsys):
    """Through the command's entry point; each artifact loads in a fork of the verify worker, a process that has
    imported torch alone. Nothing is left where the run wrote: no path the artifacts named still resolves."""
    from trtbench.cli import main

    moved = tmp_path / "moved"
    shutil.move(generate_run, moved)
    try:
        assert main(["verify", str(moved)]) == 0, capsys.readouterr().out
    finally:
        shutil.move(moved, generate_run)
    out = capsys.readouterr().out
    assert "2 verified, 0 failed" in out and "eager_fp32" in out and "first token" in out, out


def test_a_changed_weights_file_or_an_accuracy_miss_fails_verify_naming_it(generate_run, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(generate_run / "artifacts", copy / "artifacts")  # copies: the run's own files stay as saved
    weights = copy / "artifacts" / "eager_fp32" / "model" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF
    weights.write_bytes(bytes(data))
    manifest_path = copy / "artifacts" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    ort = next(a for a in manifest["artifacts"] if a["variant"] == "ort_genai")
    ort["tolerance"]["cosine_min"] = 1.5  # a floor no cosine reaches: verify holds the manifest's tolerance
    manifest_path.write_text(json.dumps(manifest))
    rows = {row["file"]: row for row in verify(copy)}
    assert not rows["eager_fp32"]["ok"] and "sha256 mismatch" in rows["eager_fp32"]["error"]
    assert str(weights) in rows["eager_fp32"]["error"] and "load_s" not in rows["eager_fp32"], "not loaded"
    missed = rows["ort_genai_fp32"]
    assert not missed["ok"] and "ort_genai_fp32: its teacher-forced logits miss the saved eager fp32" in missed["error"]
    assert "cosine" in missed["error"] and "< 1.5" in missed["error"] and missed["first_token_ms"] > 0
