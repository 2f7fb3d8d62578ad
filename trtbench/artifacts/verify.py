"""Reload saved artifacts in fresh processes and time their cold start: ``python verify.py`` (docs/artifacts.md)."""

import hashlib
import importlib
import json
import logging
import os
import signal
import sys
import tempfile
import time
import warnings


def sha256_of(path):
    """Hex SHA-256 of a file (trtbench.artifacts.store uses this one too)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def describe(err):
    """One line: the exception's type and the first non-empty line of its message."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return f"{type(err).__name__}: {lines[0]}" if lines else type(err).__name__


def flatten(output):
    from torch.utils._pytree import tree_flatten

    return [t.detach().float().cpu() for t in tree_flatten(output)[0] if hasattr(t, "detach")]


def onnxruntime_model(torch, path, settings):
    import onnxruntime

    session = onnxruntime.InferenceSession(path, providers=[tuple(p) for p in settings["providers"]])
    names = [value.name for value in session.get_inputs()]

    def run(*inputs):
        feed = {name: t.detach().cpu().contiguous().numpy() for name, t in zip(names, inputs)}
        return [torch.from_numpy(out) for out in session.run(None, feed)]

    return run


def openvino_model(torch, path, settings):
    import openvino

    request = openvino.Core().compile_model(path, settings["device"], settings["config"]).create_infer_request()

    def run(*inputs):  # a bf16 row's inputs in fp32, as the model takes them (its bf16 is the plugin's hint)
        arrays = [t.detach().cpu().contiguous().to(torch.float32 if t.dtype == torch.bfloat16 else t.dtype).numpy()
                  for t in inputs]
        return [torch.from_numpy(out) for out in request.infer(arrays, share_inputs=True).to_tuple()]

    return run


def compiled(torch, module, settings):
    """``torch.compile`` of a loaded program as its manifest says it was compiled; the first call compiles."""
    compiled_module = torch.compile(module, mode=settings["mode"], dynamic=settings["dynamic"])

    def run(*inputs):
        with torch._inductor.config.patch(settings["inductor_configs"]):
            return compiled_module(*inputs)

    return run


def load(torch, job, device):
    """The artifact as a callable on torch tensors, or None for an unknown loader."""
    loader, path = job["loader"], job["path"]
    if loader == "torch.jit.load":
        return torch.jit.load(path, map_location=device)
    if loader == "torch.export.load":
        module = torch.export.load(path).module()
        return module if "compile" not in job["settings"] else compiled(torch, module, job["settings"]["compile"])
    if loader == "aoti_load_package":
        from torch._inductor import aoti_load_package

        return aoti_load_package(path)
    if loader == "onnxruntime":
        return onnxruntime_model(torch, path, job["settings"])
    if loader == "openvino":
        return openvino_model(torch, path, job["settings"])
    return None


def check_reproduces(job):
    """Whether the job's files, unchanged, load and reproduce the recorded outputs; with the cold start."""
    import torch

    for file in job["files"]:
        if sha256_of(file["path"]) != file["sha256"]:
            return {"ok": False, "error": f"sha256 mismatch: {file['path']} changed since it was saved"}
    device = torch.device(job["device"])
    if device.type == "cuda" and not torch.cuda.is_available():  # before imports that need CUDA to load
        return {"ok": False, "error": "this artifact was saved for CUDA and this machine has no CUDA device"}
    if job.get("kind") == "decoder":  # loaded by the decoder's own load(), which is trtbench's
        sys.path.insert(0, job["import_path"])
        from trtbench.artifacts.decoder_check import check_decoder

        return check_decoder(job)
    start = time.perf_counter()
    for name in job.get("imports", []):
        try:
            importlib.import_module(name)
        except Exception as err:  # torch_tensorrt also raises RuntimeError, KeyError, plain Exception
            return {"ok": False, "error": f"cannot import {name}, which loading this artifact needs ({describe(err)})"}
    module = load(torch, job, device)
    if module is None:
        return {"ok": False, "error": f"unknown loader {job['loader']}"}
    load_s = time.perf_counter() - start
    reference = torch.load(job["reference"], map_location="cpu", weights_only=True)
    inputs = [t.to(device) for t in reference["inputs"]]
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    with torch.inference_mode():
        raw = module(*inputs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    cold = {"load_s": load_s, "first_call_ms": (time.perf_counter() - start) * 1e3}
    output = flatten(raw)
    expected = reference["outputs"]
    if len(output) != len(expected) or any(o.shape != e.shape for o, e in zip(output, expected)):
        return {"ok": False, "error": "output structure differs from the recorded output", **cold}
    max_abs, ok = 0.0, True
    # the same scale-relative bound as trtbench.measure.accuracy.elementwise_accuracy
    for out, ref in zip(output, expected):
        ref = ref.float()
        finite = torch.isfinite(ref)
        if not torch.equal(torch.isfinite(out), finite):
            return {"ok": False, "error": "NaN/inf where the recorded output has none (or the reverse)", **cold}
        if not finite.any():
            continue
        err = float((out - ref).abs()[finite].max())
        max_abs = max(max_abs, err)
        ok = ok and err <= job["atol"] + job["rtol"] * float(ref.abs()[finite].max())
    return {"ok": ok, "max_abs_err": max_abs, "error": "" if ok else "output differs from the recorded output", **cold}


class LoggedErrors(logging.Handler):
    """The exceptions libraries log instead of raising (``torch.export.load`` logs why, then raises RuntimeError),
    heard on the root logger and on every logger that does not pass its records up (torch.export)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.errors = []
        for logger in [logging.getLogger()] + [logger for logger in logging.Logger.manager.loggerDict.values()
                                               if isinstance(logger, logging.Logger) and not logger.propagate]:
            logger.addHandler(self)

    def emit(self, record):
        if record.exc_info and record.exc_info[1] is not None:
            self.errors.append(describe(record.exc_info[1]))


def run_job(job):
    """Verify one job in this process; the result, with the warnings it raised, as a JSON-ready dict."""
    logged = LoggedErrors()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = check_reproduces(job)
        except Exception as err:  # reported to the parent, which prints it per artifact
            result = {"ok": False, "error": describe(err)}
    if not result["ok"] and logged.errors:
        result["error"] += f" (logged before it: {'; '.join(dict.fromkeys(logged.errors))})"
    result["warnings"] = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    return result


def run_forked(job):
    """Run ``job`` in a fork of this process; its output goes to a log whose tail explains a crash."""
    read_fd, write_fd = os.pipe()
    # the fork's temporary folder, removed once it has ended: it leaves without cleanup, and torch's AOTI loader
    # extracts each package there (trtbench.core.knobs.own_temp_env)
    with tempfile.TemporaryFile() as log, tempfile.TemporaryDirectory(prefix="trtbench-verify-tmp-",
                                                                      ignore_cleanup_errors=True) as temp:
        pid = os.fork()
        if pid == 0:  # the child: report through the pipe, whatever happens, then leave without cleanup
            os.environ["TMPDIR"], tempfile.tempdir = temp, temp
            os.close(read_fd)
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            signal.alarm(max(1, int(job["timeout_s"] + 0.5)))  # SIGALRM's default action ends a hung load
            try:
                data = json.dumps(run_job(job)).encode()
            except BaseException as err:
                data = json.dumps({"ok": False, "error": describe(err)}).encode()
            while data:
                data = data[os.write(write_fd, data):]
            os._exit(0)
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(pid, 0)
        if data:
            return json.loads(data)
        log.seek(0)
        tail = log.read().decode(errors="replace").strip()[-500:]
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM:
        return {"ok": False, "error": f"loading and running it took longer than {job['timeout_s']:g} s"}
    how = (f"was killed by {signal.Signals(os.WTERMSIG(status)).name}" if os.WIFSIGNALED(status)
           else f"exited {os.waitstatus_to_exitcode(status)}")
    return {"ok": False, "error": f"the verify process {how}: {tail}".rstrip(": ")}


def main():
    cpus = os.environ.get("TRTBENCH_BOUND_CPUS")  # trtbench.core.knobs' binding, before torch loads OpenMP
    if cpus:
        os.sched_setaffinity(0, [int(cpu) for cpu in cpus.split(",")])
    import torch  # noqa: F401  (imported once here, so that every fork starts with it, as a deployment does)

    for line in iter(sys.stdin.readline, ""):
        print(json.dumps(run_forked(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
