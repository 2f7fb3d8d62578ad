"""Deployable artifacts: saving them with a manifest, and verifying them in a fresh process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import torch

from trtbench import __version__
from trtbench.engine_compat import check_engine_compat, engine_environment
from trtbench.errors import UserInputError
from trtbench.fsutil import atomic_write_json
from trtbench.parity import check_parity, flatten_outputs
from trtbench.verify_worker import sha256_of  # the worker's own copy, so both hash alike

MANIFEST_VERSION = 1
MANIFEST = "manifest.json"
WORKER = Path(__file__).with_name("verify_worker.py")


class ArtifactStore:
    """Saves each variant's files into ``<out>/artifacts`` and keeps the manifest entries."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.entries: list[dict] = []

    def save(self, variant, built, precision: str, device: torch.device, runs: dict[str, tuple],
             reference_shape: str, tolerance, stem: str | None = None, model: str | None = None) -> list[dict]:
        """Save ``built``, reload each file and check it, then publish it with its reference input/output.

        ``runs`` maps shape labels to ``(inputs, output of the built variant)``. Every saved file is
        reloaded in this process with the variant's own ``load`` and must reproduce those outputs at
        every shape (a dynamic-shape artifact that lost its range fails here); otherwise nothing is
        published and ValueError says where it differs. Files appear only once complete.
        """
        stem = stem or f"{variant.name}_{precision}"
        self.directory.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{stem}.", dir=self.directory))
        try:
            artifacts = variant.save(built, staging, stem)
            if not artifacts:
                return []
            checks = {artifact.path.name: reload_check(variant, artifact, device, runs, tolerance)
                      for artifact in artifacts}
            reference_inputs, reference_output = runs[reference_shape]
            reference = staging / f"{stem}.ref.pt"
            torch.save({"inputs": [t.detach().cpu() for t in reference_inputs],
                        "outputs": flatten_outputs(reference_output)}, reference)
            final_reference = self.directory / reference.name
            os.replace(reference, final_reference)
            added = []
            for artifact in artifacts:
                final = self.directory / artifact.path.name
                companions = []
                for companion in artifact.companions:
                    os.replace(companion, self.directory / companion.name)
                    companions.append(describe_file(self.directory / companion.name))
                os.replace(artifact.path, final)
                added.append({
                    "model": model, "variant": variant.name, "precision": precision, **describe_file(final),
                    "companions": companions, "loader": artifact.loader, "settings": artifact.settings,
                    "imports": list(artifact.imports), "device": str(device),
                    "reference": {"file": final_reference.name, "sha256": sha256_of(final_reference),
                                  "shape": reference_shape,
                                  "input_shapes": [list(t.shape) for t in reference_inputs]},
                    "tolerance": {"atol": tolerance.atol, "rtol": tolerance.rtol},
                    "reload_check": checks[final.name],
                })
                if "torch_tensorrt" in artifact.imports:
                    added[-1]["engine"] = engine_environment(device)
            self.entries.extend(added)
            return added
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def discard_previous_manifest(self) -> None:
        """Remove a manifest left by an earlier run into the same directory (it would describe old files)."""
        (self.directory / MANIFEST).unlink(missing_ok=True)

    def write_manifest(self, config: dict, environment: dict) -> Path | None:
        """Write ``manifest.json`` describing every saved artifact (None when nothing was saved)."""
        if not self.entries:
            return None
        path = self.directory / MANIFEST
        atomic_write_json(path, {
            "manifest_version": MANIFEST_VERSION,
            "trtbench_version": __version__,
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "inputs": config["inputs"],
            "environment": environment,
            "config": config,
            "artifacts": self.entries,
        })
        return path


def describe_file(path: Path) -> dict:
    """A saved file's manifest fields: its name, SHA-256 and size."""
    return {"file": path.name, "sha256": sha256_of(path), "bytes": path.stat().st_size}


def reload_check(variant, artifact, device: torch.device, runs: dict[str, tuple], tolerance) -> dict:
    """Reload ``artifact`` with ``variant.load`` and compare it with the built variant at every shape."""
    module = variant.load(artifact, device)
    worst = 0.0
    with torch.inference_mode():
        for label, (inputs, expected) in runs.items():
            parity = check_parity(module(*inputs), expected, tolerance.atol, tolerance.rtol)
            if not parity.ok:
                raise ValueError(f"reloaded {artifact.path.name} differs from the built variant at {label} "
                                 f"(max abs err {parity.max_abs_err:.3g})")
            worst = max(worst, parity.max_abs_err)
    return {"shapes": list(runs), "max_abs_err": worst}


def read_manifest(out_dir: Path) -> dict:
    """Load ``<out>/artifacts/manifest.json`` (or a manifest path given directly)."""
    out_dir = Path(out_dir)
    path = out_dir if out_dir.is_file() else out_dir / "artifacts" / MANIFEST
    if not path.is_file():
        raise UserInputError(str(out_dir), f"no manifest at {path}",
                             "pass the output directory of a run that saved artifacts (output.save_artifacts: true)")
    try:
        return json.loads(path.read_text(encoding="utf-8")) | {"_dir": str(path.parent)}
    except json.JSONDecodeError as err:
        raise UserInputError(str(path), f"not valid JSON: {err}", "re-run the benchmark to rewrite it") from err


def verify_artifact(entry: dict, directory: Path, timeout_s: float = 600) -> dict:
    """Reload one artifact in a fresh Python process and rerun its reference input.

    Besides ``ok`` and ``max_abs_err``, the row has the cold start the worker measured:
    ``load_s`` (the loader's import and load) and ``first_call_ms`` (its first forward pass).
    """
    job = {
        "path": str(directory / entry["file"]), "sha256": entry["sha256"], "loader": entry["loader"],
        "companions": [{"path": str(directory / c["file"]), "sha256": c["sha256"]} for c in entry.get("companions", [])],
        "settings": entry.get("settings", {}), "imports": entry.get("imports", []), "device": entry["device"],
        "reference": str(directory / entry["reference"]["file"]),
        "atol": entry["tolerance"]["atol"], "rtol": entry["tolerance"]["rtol"],
    }
    for path in [job["path"], *(c["path"] for c in job["companions"])]:
        if not Path(path).is_file():
            return {"ok": False, "error": f"missing file {path}"}
    try:
        proc = subprocess.run([sys.executable, str(WORKER), json.dumps(job)], capture_output=True, text=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"loading and running it took longer than {timeout_s:g} s"}
    lines = proc.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        return {"ok": False, "error": f"verify process exited {proc.returncode}: {proc.stderr.strip()[-500:]}"}


def verify(out_dir: Path, force: bool = False) -> list[dict]:
    """Verify every artifact in the manifest; returns one row per artifact with ``ok`` and ``error``.

    A TensorRT engine built for another TensorRT version or GPU architecture is not loaded
    (it would fail or misbehave) unless ``force``; its row says why.
    """
    manifest = read_manifest(out_dir)
    directory = Path(manifest["_dir"])
    rows = []
    current_engine_env = None
    for entry in manifest["artifacts"]:
        mismatch = None
        if "engine" in entry and not force:
            current_engine_env = current_engine_env or engine_environment(entry["device"])
            mismatch = check_engine_compat(entry["engine"], current_engine_env)
        outcome = {"ok": False, "error": mismatch} if mismatch else verify_artifact(entry, directory)
        rows.append({"file": entry["file"], "variant": entry["variant"], "precision": entry["precision"], **outcome})
    return rows
