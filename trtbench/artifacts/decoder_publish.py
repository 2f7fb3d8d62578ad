"""Publishing an accurate decoder's artifact as one self-contained folder ``<stem>/`` (docs/artifacts.md)."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trtbench.artifacts.store import DECODER_KIND, ArtifactLoadError, describe_file, sha256_of, verify_artifact
from trtbench.core.knobs import Knobs
from trtbench.decoders import get_decoder

FRESH_FIGURES = ("load_s", "first_token_ms", "max_abs_err")  # of the fresh-process check, kept in the entry


@dataclass(frozen=True)
class DecoderBuild:
    """A decoder's build: its ``artifact`` (what its build returned) under its build folder ``out_dir``."""

    decoder: str
    precision: str
    model: str
    out_dir: Path
    artifact: Path
    device: str
    threads: int


@dataclass(frozen=True)
class DecoderReference:
    """What a decoder's artifact is re-checked with: eager fp32's ``logits`` of ``teacher``, the run's first request."""

    teacher: np.ndarray
    logits: np.ndarray
    tolerance: dict
    accuracy: dict
    prompt: np.ndarray
    new_tokens: int


class DecoderPublisher:
    """Publishes decoders' artifacts into the store folder ``directory``, each checked in a process with ``knobs``."""

    def __init__(self, directory: Path, knobs: Knobs = Knobs()):
        self.directory, self.knobs = Path(directory), knobs
        self._brought: dict[Path, Path] = {}  # a folder outside an artifact -> its published copy

    def publish(self, build: DecoderBuild, reference: DecoderReference, stem: str) -> dict:
        """Publish ``build``'s artifact as ``<stem>/``; its manifest entry (ArtifactLoadError: it failed its check)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{stem}.", dir=self.directory))
        try:
            artifact, brought = self._gather(build, staging / stem)
            saved = staging / f"{stem}.ref.npz"
            np.savez(saved, teacher=reference.teacher, logits=reference.logits.astype(np.float32),
                     prompt=reference.prompt, new_tokens=np.int64(reference.new_tokens))
            entry = self._entry(build, reference, staging / stem, artifact, saved)
            fresh = verify_artifact(entry, staging)
            if not fresh["ok"]:
                raise ArtifactLoadError(f"{stem} fails to load and keep its tolerance in a fresh process "
                                        f"({build.decoder}'s load): {fresh['error']}")
            entry["fresh_process_check"] = {key: fresh[key] for key in FRESH_FIGURES}
            published = self.directory / stem
            shutil.rmtree(published, ignore_errors=True)  # an earlier run's: replaced, never written in place
            os.replace(staging / stem, published)
            os.replace(saved, self.directory / saved.name)
            self._brought.update({outside: published / inside for outside, inside in brought.items()})
            return entry
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _gather(self, build: DecoderBuild, folder: Path) -> tuple[Path, dict[Path, Path]]:
        """The build's files and what they name outside gathered into ``folder``; the artifact's path, what came in."""
        folder.mkdir()
        for path in build.out_dir.iterdir():
            shutil.move(path, folder / path.name)
        artifact = folder / build.artifact.relative_to(build.out_dir)
        brought: dict[Path, Path] = {}

        def bring(outside: Path, inside: Path) -> None:
            self._bring(outside, inside)
            brought[outside.resolve()] = inside.relative_to(folder)

        get_decoder(build.decoder).self_contained(artifact, bring)
        return artifact, brought

    def _entry(self, build: DecoderBuild, reference: DecoderReference, folder: Path, artifact: Path,
               saved: Path) -> dict:
        """The manifest entry of ``artifact`` in ``folder``, staged beside its reference file ``saved``."""
        staging = folder.parent
        return {"kind": DECODER_KIND, "model": build.model, "variant": build.decoder, "precision": build.precision,
                "file": folder.name, "artifact": artifact.relative_to(staging).as_posix(),
                "files": [describe_file(path, staging) for path in sorted(folder.rglob("*")) if path.is_file()],
                "device": build.device, "threads": build.threads,
                "reference": {"file": saved.name, "sha256": sha256_of(saved),
                              "teacher_tokens": int(reference.teacher.shape[1]),
                              "request": {"batch": int(reference.prompt.shape[0]),
                                          "prompt_tokens": int(reference.prompt.shape[1]),
                                          "new_tokens": reference.new_tokens}},
                "tolerance": dict(reference.tolerance), "accuracy": dict(reference.accuracy),
                "knobs": self.knobs.to_dict()}

    def _bring(self, outside: Path, inside: Path) -> None:
        """Folder ``outside`` copied to ``inside``: hard links to its published copy where there is one."""
        earlier = self._brought.get(outside.resolve())
        if earlier is not None and earlier.is_dir():
            try:
                shutil.copytree(earlier, inside, copy_function=os.link)
                return
            except OSError:  # a file system without hard links, or another device: copy
                shutil.rmtree(inside, ignore_errors=True)
        shutil.copytree(outside, inside)
