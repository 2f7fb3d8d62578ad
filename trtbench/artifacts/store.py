"""Deployable artifacts: saved with a manifest, published once they reload and verify (docs/artifacts.md)."""

from __future__ import annotations

import atexit
import contextlib
import errno
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from trtbench.core.version import __version__
from trtbench.artifacts.engine_compat import check_engine_compat, engine_environment
from trtbench.core.knobs import Knobs, own_temp_env, worker_env
from trtbench.core.errors import DiskFullError, UserInputError
from trtbench.core.fsutil import atomic_write_json, free_bytes, require_space, save_through_memory
from trtbench.measure.accuracy import elementwise_accuracy, flatten_outputs
from trtbench.artifacts.verify import sha256_of  # the worker's own copy, so both hash alike
from trtbench.variants import Built, Variant

if TYPE_CHECKING:  # a type only: the config's tolerances are built above this layer
    from trtbench.config.config import Tolerance

MANIFEST_VERSION = 1
MANIFEST = "manifest.json"
WORKER = Path(__file__).with_name("verify.py")


@dataclass(frozen=True)
class ArtifactSource:
    """What a variant's files are saved from, as their manifest entries name it."""

    variant: Variant
    built: Built
    precision: str
    device: torch.device
    model: str | None = None


@dataclass(frozen=True)
class PublishCheck:
    """What each saved file is checked with before it is published (``worker_checked``: the file's suffix)."""

    inputs: dict[str, tuple]
    reference_shape: str
    tolerance: Tolerance
    checked_by_worker: str | None = None


@dataclass(frozen=True)
class Saved:
    """The manifest entries of a save a scenario made itself (generate's decoders), journaled as the stage's are."""

    variant: str
    precision: str
    entries: tuple[dict, ...]


class ArtifactStore:
    """Saves each variant's files into ``<out>/artifacts`` and keeps the manifest entries."""

    def __init__(self, directory: Path, knobs: Knobs = Knobs()):
        self.directory = Path(directory)
        self.knobs = knobs  # trtbench.core.knobs: the deployment knobs each fresh-process check starts with
        self.entries: list[dict] = []

    def start_checks(self) -> None:
        """Start the fresh-process checks' server now: it imports torch while a build runs, then idles till asked."""
        FreshProcesses.shared(self.knobs)

    def save(self, source: ArtifactSource, check: PublishCheck, stem: str | None = None,
             expected_bytes: int = 0) -> list[dict]:
        """Save ``source``'s build, reload each file here and in a fresh process, publish those that pass; entries."""
        if not source.variant.saves_files:
            return []
        stem = stem or f"{source.variant.name}_{source.precision}"
        self.directory.mkdir(parents=True, exist_ok=True)
        require_space(self.directory, expected_bytes, f"saving {stem} (about the model's weights)")
        staging = Path(tempfile.mkdtemp(prefix=f".{stem}.", dir=self.directory))
        try:
            outputs = _BuiltOutputs(source.variant, source.built, check.inputs)
            return self._check_and_publish(source, check, outputs, stem, staging)
        except (DiskFullError, OSError) as err:
            if isinstance(err, OSError) and err.errno != errno.ENOSPC:
                raise
            needed = max(expected_bytes, _bytes_under(staging) + (err.needed if isinstance(err, DiskFullError) else 0))
            shutil.rmtree(staging, ignore_errors=True)
            raise DiskFullError(self.directory, needed, free_bytes(self.directory), f"saving {stem}") from err
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _check_and_publish(self, source: ArtifactSource, check: PublishCheck, outputs: "_BuiltOutputs", stem: str,
                           staging: Path) -> list[dict]:
        variant, device, tolerance = source.variant, source.device, check.tolerance
        artifacts = variant.save(source.built, staging, stem)
        if not artifacts:
            return []
        checks = {artifact.path.name: ({"shapes": list(outputs.inputs), "by": WORKER_CHECK}
                                       if artifact.path.suffix == check.checked_by_worker
                                       else reload_check(variant, artifact, device, outputs.runs(), tolerance))
                  for artifact in artifacts}
        reference_inputs, reference_output = outputs.run(check.reference_shape)
        reference = staging / f"{stem}.ref.pt"
        save_through_memory(reference, lambda fh: torch.save({"inputs": [t.detach().cpu() for t in reference_inputs],
                                                              "outputs": flatten_outputs(reference_output)}, fh))
        entries = []
        for artifact in artifacts:
            entry = {
                "model": source.model, "variant": variant.name, "precision": source.precision,
                **describe_file(artifact.path),
                "companions": [describe_file(companion) for companion in artifact.companions],
                "loader": artifact.loader, "settings": artifact.settings, "imports": list(artifact.imports),
                **({"outputs": list(artifact.outputs)} if artifact.outputs else {}),
                "device": str(device),
                "reference": {"file": reference.name, "sha256": sha256_of(reference), "shape": check.reference_shape,
                              "input_shapes": [list(t.shape) for t in reference_inputs]},
                "tolerance": {"atol": tolerance.atol, "rtol": tolerance.rtol},
                "reload_check": checks[artifact.path.name],
                "knobs": self.knobs.to_dict(),
            }
            fresh = verify_artifact(entry, staging)
            if not fresh["ok"]:
                how = artifact.loader + "".join(f" after import {name}" for name in artifact.imports)
                raise ArtifactLoadError(f"{artifact.path.name} fails to load and run in a fresh process ({how}): "
                                        f"{fresh['error']}")
            entry["fresh_process_check"] = {key: fresh[key] for key in ("max_abs_err", "load_s", "first_call_ms")}
            if "torch_tensorrt" in artifact.imports:
                entry["engine"] = engine_environment(device)
            entries.append(entry)
        os.replace(reference, self.directory / reference.name)
        for artifact in artifacts:
            for companion in artifact.companions:
                os.replace(companion, self.directory / companion.name)
            os.replace(artifact.path, self.directory / artifact.path.name)
        self.entries.extend(entries)
        return entries

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


class ArtifactLoadError(Exception):
    """A saved file that does not load, or does not reproduce its reference output, in a fresh process."""


def weights_bytes(model: torch.nn.Module) -> int:
    """The bytes of ``model``'s parameters and buffers: about what each saved copy of it takes on disk."""
    return sum(t.numel() * t.element_size() for t in itertools.chain(model.parameters(), model.buffers()))


def _bytes_under(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


def describe_file(path: Path, root: Path | None = None) -> dict:
    """A saved file's manifest fields: its name (its path under ``root``, where given), SHA-256 and size."""
    name = path.relative_to(root).as_posix() if root is not None else path.name
    return {"file": name, "sha256": sha256_of(path), "bytes": path.stat().st_size}


WORKER_CHECK = "its timing worker: the same save() of this build, loaded and run at every point"


class _BuiltOutputs:
    """The built variant's outputs at each point, each computed once and only when a check needs it."""

    def __init__(self, variant, built, inputs: dict[str, tuple]):
        self.variant, self.built, self.inputs = variant, built, inputs
        self._outputs: dict[str, object] = {}

    def run(self, label: str) -> tuple[tuple, object]:
        """(inputs, output of the built variant) at ``label``."""
        if label not in self._outputs:
            with torch.inference_mode():
                self._outputs[label] = self.variant.run(self.built,
                                                        self.variant.prepare(self.built, self.inputs[label]))
        return self.inputs[label], self._outputs[label]

    def runs(self) -> dict[str, tuple]:
        return {label: self.run(label) for label in self.inputs}


def reload_check(variant, artifact, device: torch.device, runs: dict[str, tuple], tolerance) -> dict:
    """Reload ``artifact`` and compare it with the built variant at every shape (``runs``: label -> its run)."""
    module = variant.load(artifact, device)
    worst = 0.0
    with torch.inference_mode():
        for label, (inputs, expected) in runs.items():
            accuracy = elementwise_accuracy(module(*inputs), expected, tolerance.atol, tolerance.rtol)
            if not accuracy.ok:
                raise ValueError(f"reloaded {artifact.path.name} differs from the built variant at {label} "
                                 f"(max abs err {accuracy.max_abs_err:.3g})")
            worst = max(worst, accuracy.max_abs_err)
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
    """Reload one artifact in a fresh process and rerun its reference: ``ok``, ``max_abs_err``, the cold start."""
    directory = Path(directory).absolute()
    job = decoder_job(entry, directory) if entry.get("kind") == DECODER_KIND else {
        "path": str(directory / entry["file"]), "loader": entry["loader"],
        "files": [{"path": str(directory / f["file"]), "sha256": f["sha256"]}
                  for f in [entry, *entry.get("companions", [])]],
        "settings": entry.get("settings", {}), "imports": entry.get("imports", []), "device": entry["device"],
        "reference": str(directory / entry["reference"]["file"]),
        "atol": entry["tolerance"]["atol"], "rtol": entry["tolerance"]["rtol"]}
    for file in job["files"]:
        if not Path(file["path"]).is_file():
            return {"ok": False, "error": f"missing file {file['path']}"}
    knobs = entry.get("knobs") or {"allocator": entry.get("allocator", "default")}  # manifests before the knobs
    return FreshProcesses.shared(Knobs(**knobs)).run({**job, "timeout_s": timeout_s})


DECODER_KIND = "decoder"  # a manifest entry's kind for a decoder's artifact (trtbench.artifacts.decoder_publish)


def decoder_job(entry: dict, directory: Path) -> dict:
    """The verify worker's job for a decoder's artifact (:mod:`trtbench.artifacts.decoder_check`)."""
    reference = entry["reference"]
    files = [*entry["files"], reference]
    return {"kind": DECODER_KIND, "name": entry["file"], "decoder": entry["variant"],
            "path": str(directory / entry["artifact"]),
            "files": [{"path": str(directory / f["file"]), "sha256": f["sha256"]} for f in files],
            "device": entry["device"], "threads": entry["threads"], "reference": str(directory / reference["file"]),
            "tolerance": entry["tolerance"], "import_path": str(Path(__file__).resolve().parents[2])}


class FreshProcesses:
    """The verify worker, each job in a fork of it; started again when its environment changed or it died."""

    _shared: "FreshProcesses | None" = None

    def __init__(self, knobs: Knobs = Knobs()):
        self.environment = worker_env(knobs)
        self.log = tempfile.TemporaryFile()
        self.temp = tempfile.TemporaryDirectory(prefix="trtbench-verify-tmp-", ignore_cleanup_errors=True)
        self.proc = subprocess.Popen([sys.executable, str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, start_new_session=True,
                                     env=own_temp_env(self.environment, self.temp.name))
        atexit.register(self.close)

    @classmethod
    def shared(cls, knobs: Knobs = Knobs()) -> "FreshProcesses":
        """The server whose forks start with ``knobs`` (:mod:`trtbench.core.knobs`)."""
        server = cls._shared
        if server is None or server.proc.poll() is not None or server.environment != worker_env(knobs):
            if server is not None:
                server.close()
            cls._shared = server = cls(knobs)
        return server

    def run(self, job: dict) -> dict:
        """The worker's result for ``job`` (its fork ends itself after ``job["timeout_s"]``)."""
        try:
            self.proc.stdin.write(json.dumps(job) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except BrokenPipeError:
            line = ""
        except BaseException:  # Ctrl-C mid-job: the worker's state is unknown, end it
            self.close()
            raise
        if line:
            return json.loads(line)
        self.log.seek(0)
        tail = self.log.read().decode(errors="replace").strip()[-500:]
        self.close()
        return {"ok": False, "error": f"verify process exited {self.proc.returncode}: {tail}".rstrip(": ")}

    def close(self) -> None:
        """End the worker and the job it may be running (its process group)."""
        atexit.unregister(self.close)
        # not reaped yet, so its process group id is still its own; a fork that outlived it goes too
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.log):
            # a broken pipe has nothing left to flush
            with contextlib.suppress(OSError):
                stream.close()
        self.temp.cleanup()


def verify_manifest(out_dir: Path, force: bool = False) -> list[dict]:
    """Verify every artifact in the manifest, a row each; a TensorRT engine built elsewhere only with ``force``."""
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
