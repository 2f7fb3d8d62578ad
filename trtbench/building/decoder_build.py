"""A decoder's build in a process of its own where it loads anything (``Decoder.builds_apart``), else in the worker:
``python -m trtbench.building.decoder_build SPEC``, a child that dies with the worker and writes the artifact's path
and its peak resident memory (more: docs/generate.md, "Module notes", trtbench/building/decoder_build.py).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

OUTPUT_TAIL = 3000  # characters of a failed build's output quoted in its error
MIB = 2**20
PR_SET_PDEATHSIG = 1  # linux/prctl.h


class DecoderBuildError(RuntimeError):
    """A decoder's build process failed: its exit and the end of its output."""


@dataclass(frozen=True)
class DecoderBuild:
    """A decoder's build from the Hugging Face folder ``source``, for the (batch, cache length) ``shapes``."""

    decoder: str
    precision: str
    source: str
    out_dir: str
    threads: int
    shapes: tuple[tuple[int, int], ...]
    device: str  # the run's device as configured (cuda:1 stays cuda:1): what the build is for

    def run(self) -> Path:
        """The artifact, built here by the decoder's own :meth:`~trtbench.decoders.base.Decoder.build`."""
        from trtbench.decoders import get_decoder

        return get_decoder(self.decoder).build(Path(self.source), self.precision, Path(self.out_dir), self.threads,
                                               self.shapes, self.device)


@dataclass(frozen=True)
class BuiltDecoder:
    """A finished build: the artifact, and ``facts``: ``build_s`` (in a child, its wall time, interpreter start
    included), ``build_pid`` and, for a build in a child, ``build_peak_rss_mb``."""

    artifact: Path
    facts: dict


def build_decoder(build: DecoderBuild) -> BuiltDecoder:
    """``build`` in a process of its own (:func:`build_in_child`), or here where its decoder's build loads nothing."""
    from trtbench.decoders import get_decoder

    if get_decoder(build.decoder).builds_apart:
        return build_in_child(build)
    started = time.perf_counter()
    return BuiltDecoder(build.run(), {"build_s": round(time.perf_counter() - started, 3), "build_pid": os.getpid()})


def build_in_child(build: DecoderBuild) -> BuiltDecoder:
    """Run ``build`` in a fresh interpreter; :class:`DecoderBuildError` with the end of its output where it fails."""
    with tempfile.TemporaryDirectory(prefix="trtbench-decoder-build-") as scratch:
        result = Path(scratch) / "result.json"
        spec = {**asdict(build), "parent": os.getpid(), "result": str(result)}
        started = time.perf_counter()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # this process's trtbench
        done = subprocess.run([sys.executable, "-m", __name__, json.dumps(spec)], env=env, capture_output=True,
                              text=True, check=False)
        took = time.perf_counter() - started
        if done.returncode != 0 or not result.is_file():
            code = done.returncode
            how = (f"killed by signal {signal.Signals(-code).name} (the kernel's OOM killer sends SIGKILL when "
                   f"memory runs out)" if code < 0 else f"exit {code}")
            raise DecoderBuildError(f"{build.decoder} at {build.precision}: its build process failed ({how}); the "
                                    f"end of its output:\n{(done.stdout + done.stderr)[-OUTPUT_TAIL:]}")
        out = json.loads(result.read_text())
    return BuiltDecoder(Path(out["artifact"]), {"build_s": round(took, 3), "build_peak_rss_mb": out["peak_rss_mb"],
                                                "build_pid": out["pid"]})


def _die_with(parent: int) -> None:
    """Have the kernel kill this process when its parent dies (Linux; nothing elsewhere)."""
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name, use_errno=True) if name else None
    if libc is not None and hasattr(libc, "prctl"):
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(1)


def _peak_rss_mb() -> float:
    """The larger of this process's VmHWM and its waited-for children's ru_maxrss, in MiB."""
    from trtbench.profiling.memory import proc_status_bytes

    try:
        own = proc_status_bytes("VmHWM")
    except (OSError, KeyError):
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return round(max(own, children) / MIB, 1)


def main(argv: list[str]) -> None:
    """The child: build the spec ``argv[0]`` names and write the result file."""
    spec = json.loads(argv[0])
    _die_with(spec["parent"])
    build = DecoderBuild(**{f.name: spec[f.name] for f in fields(DecoderBuild) if f.name != "shapes"},
                         shapes=tuple(tuple(shape) for shape in spec["shapes"]))
    artifact = build.run()
    Path(spec["result"]).write_text(json.dumps({"artifact": str(artifact), "peak_rss_mb": _peak_rss_mb(),
                                                "pid": os.getpid()}))


if __name__ == "__main__":
    main(sys.argv[1:])
