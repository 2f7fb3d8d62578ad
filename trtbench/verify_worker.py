"""Reload one saved artifact in a fresh process, using only torch (and the imports the manifest names).

Run by ``trtbench verify`` as ``python verify_worker.py '<json job>'``; deliberately imports nothing
from trtbench, so it proves the artifact loads the way a deployment would load it.
Prints one JSON object: {"ok": bool, "max_abs_err": float, "error": str, "warnings": [...]}.
"""

import hashlib
import importlib
import json
import sys
import warnings


def sha256_of(path):
    """Hex SHA-256 of a file (trtbench.artifacts uses this one too)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def flatten(output):
    from torch.utils._pytree import tree_flatten

    return [t.detach().float().cpu() for t in tree_flatten(output)[0] if hasattr(t, "detach")]


def verify(job):
    import torch

    if sha256_of(job["path"]) != job["sha256"]:
        return {"ok": False, "error": "sha256 mismatch: the file changed since it was saved"}
    device = torch.device(job["device"])
    if device.type == "cuda" and not torch.cuda.is_available():  # before imports that need CUDA to load
        return {"ok": False, "error": "this artifact was saved for CUDA and this machine has no CUDA device"}
    for name in job.get("imports", []):
        try:
            importlib.import_module(name)
        except Exception as err:  # torch_tensorrt also raises RuntimeError, KeyError, plain Exception
            return {"ok": False, "error": f"cannot import {name}, which loading this artifact needs "
                                          f"({type(err).__name__}: {err})"}
    if job["loader"] == "torch.jit.load":
        module = torch.jit.load(job["path"], map_location=device)
    elif job["loader"] == "torch.export.load":
        module = torch.export.load(job["path"]).module()
    else:
        return {"ok": False, "error": f"unknown loader {job['loader']}"}
    reference = torch.load(job["reference"], map_location="cpu", weights_only=True)
    inputs = [t.to(device) for t in reference["inputs"]]
    with torch.inference_mode():
        output = flatten(module(*inputs))
    expected = reference["outputs"]
    if len(output) != len(expected) or any(o.shape != e.shape for o, e in zip(output, expected)):
        return {"ok": False, "error": "output structure differs from the recorded output"}
    max_abs, ok = 0.0, True
    for out, ref in zip(output, expected):  # the same scale-relative bound as trtbench.parity.compare
        ref = ref.float()
        finite = torch.isfinite(ref)
        if not torch.equal(torch.isfinite(out), finite):
            return {"ok": False, "error": "NaN/inf where the recorded output has none (or the reverse)"}
        if not finite.any():
            continue
        err = float((out - ref).abs()[finite].max())
        max_abs = max(max_abs, err)
        ok = ok and err <= job["atol"] + job["rtol"] * float(ref.abs()[finite].max())
    return {"ok": ok, "max_abs_err": max_abs, "error": "" if ok else "output differs from the recorded output"}


def main():
    job = json.loads(sys.argv[1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = verify(job)
        except Exception as err:  # reported to the parent, which prints it per artifact
            result = {"ok": False, "error": f"{type(err).__name__}: {err}"}
    result["warnings"] = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    print(json.dumps(result))


if __name__ == "__main__":
    main()
