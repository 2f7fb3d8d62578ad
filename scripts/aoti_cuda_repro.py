"""Does ``aoti_load_package`` crash on this machine, and in which of the ways trtbench loads a package?

    python3 scripts/aoti_cuda_repro.py              # on a GPU machine, with its own torch (nothing of trtbench)
    python3 scripts/aoti_cuda_repro.py --device cpu # the same on the CPU, as a rehearsal

On torch 2.11.0+cu130 (an H100) trtbench's aoti timing worker died with SIGSEGV inside ``aoti_load_package`` at
every point (issue 34), and trtbench now skips aoti on CUDA with torch 2.11 or older. This script compiles a
small conv net (fp32 and fp16 on CUDA) into AOTInductor packages, then loads and calls each one in a child
process, one way per line, as trtbench's paths do:

- ``fresh``: a fresh interpreter that imports torch and loads the package (a deployment);
- ``worker``: a fresh interpreter that first sets the device and maps a ``torch.save``d payload with
  ``torch.load(mmap=True)``, as trtbench's timing worker does before it loads;
- ``fork-clean``: a fork of a process that imported torch and never touched CUDA (trtbench's verify worker);
- ``fork-after-cuda``: a fork of a process that initialised CUDA (a known-bad pattern, for comparison: CUDA
  refuses to initialise again in such a child).

Each line prints how the child ended (ok, its exit code, or the signal that killed it) and its last output line.
The parent also loads each package itself, as trtbench's build does. Exit 0 when every child but
``fork-after-cuda`` ran ok.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

LOAD = """
import sys, torch
from torch._inductor import aoti_load_package
if sys.argv[3] != "none":
    if sys.argv[2].startswith("cuda"):
        torch.cuda.set_device(sys.argv[2])
    torch.load(sys.argv[3], map_location=sys.argv[2], mmap=True, weights_only=True)
model = aoti_load_package(sys.argv[1])
x = torch.randn(2, 3, 64, 64, device=sys.argv[2], dtype=getattr(torch, sys.argv[4]))
with torch.inference_mode():
    out = model(x)
print("ran", tuple(out[0].shape if isinstance(out, (list, tuple)) else out.shape))
"""


def package(torch, device: str, dtype, folder: Path) -> str:
    """A small conv net at ``dtype`` on ``device`` compiled into an AOTInductor package under ``folder``."""
    from torch._inductor import aoti_compile_and_package

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                                torch.nn.Flatten(), torch.nn.Linear(16, 10)).to(device, dtype).eval()
    example = torch.randn(2, 3, 64, 64, device=device, dtype=dtype)
    program = torch.export.export(model, (example,))
    return aoti_compile_and_package(program, package_path=str(folder / f"model-{str(dtype)[6:]}.pt2"))


def ended(status: int, output: str) -> str:
    """How a child ended, from its wait status, with its last output line."""
    last = (output.strip().splitlines() or [""])[-1][:160]
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}: {last}"
    code = os.waitstatus_to_exitcode(status)
    return f"ok: {last}" if code == 0 else f"exited {code}: {last}"


def in_fresh_process(args: list[str]) -> str:
    done = subprocess.run([sys.executable, "-c", LOAD, *args], capture_output=True, text=True, timeout=600)
    status = (-done.returncode) if done.returncode < 0 else (done.returncode << 8)
    return ended(status, done.stdout if done.returncode == 0 else done.stdout + done.stderr)


def in_fork(args: list[str]) -> str:
    """``LOAD`` run in a fork of this process, its output through a temporary file."""
    with tempfile.TemporaryFile() as log:
        pid = os.fork()
        if pid == 0:
            signal.alarm(120)  # a fork of a threaded process may hang: SIGALRM ends it
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            sys.argv = ["load", *args]
            try:
                exec(LOAD, {})
            except BaseException as err:  # noqa: BLE001 - reported as the child's last line
                print(f"{type(err).__name__}: {err}", flush=True)
                os._exit(1)
            sys.stdout.flush()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        log.seek(0)
        return ended(status, log.read().decode(errors="replace"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    device = parser.parse_args().device
    import torch

    print(f"torch {torch.__version__}, device {device}"
          + (f" ({torch.cuda.get_device_name(device)})" if device.startswith("cuda") else ""))
    dtypes = [torch.float32, torch.float16] if device.startswith("cuda") else [torch.float32]
    bad = 0
    with tempfile.TemporaryDirectory(prefix="aoti-repro-") as scratch:
        folder = Path(scratch)
        payload = folder / "payload.pt"
        packages = {dtype: package(torch, device, dtype, folder) for dtype in dtypes}  # initialises CUDA here
        torch.save({"w": torch.randn(1024, 1024)}, payload)
        for dtype, path in packages.items():
            name = str(dtype)[6:]
            torch._inductor.aoti_load_package(path)  # the parent's own load, as trtbench's build does
            for way, run in (("fresh", in_fresh_process), ("worker", in_fresh_process), ("fork-after-cuda", in_fork)):
                result = run([path, device, str(payload) if way == "worker" else "none", name])
                bad += way != "fork-after-cuda" and not result.startswith("ok")
                print(f"{name:8} {way:16} {result}", flush=True)
        clean = subprocess.run([sys.executable, "-c", "import os, signal, sys, torch\n" + FORK_CLEAN,
                                packages[dtypes[0]],
                                device, str(dtypes[0])[6:]], capture_output=True, text=True, timeout=600)
        last = (clean.stdout.strip().splitlines() or [clean.stderr.strip()[-160:]])[-1]
        print(f"{str(dtypes[0])[6:]:8} {'fork-clean':16} {last}")
        bad += last != "ok"
    return 1 if bad else 0


# a process that imported torch (no CUDA call) forks and the child loads: what trtbench's verify worker does
FORK_CLEAN = f"""
LOAD = {LOAD!r}
pid = os.fork()
if pid == 0:
    signal.alarm(120)
    sys.argv = ["load", sys.argv[1], sys.argv[2], "none", sys.argv[3]]
    try:
        exec(LOAD, {{}})
    except BaseException as err:
        print(type(err).__name__, err)
        os._exit(1)
    sys.stdout.flush()
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("ok" if status == 0 else f"child ended with wait status {{status}}")
"""


if __name__ == "__main__":
    sys.exit(main())
