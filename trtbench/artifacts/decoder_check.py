"""A published decoder artifact checked in the verify worker's fresh process (docs/artifacts.md)."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from trtbench.measure.logit_accuracy import logit_agreement, logit_misses
from trtbench.measure.token_timing import timed_request


def check_decoder(job: dict) -> dict:
    """The verify worker's row for decoder job ``job``: ``ok``, ``error``, its cold start and its logits' figures."""
    start = time.perf_counter()
    from trtbench.decoders import get_decoder

    session = get_decoder(job["decoder"]).load(Path(job["path"]), job["device"], job["threads"])
    load_s = time.perf_counter() - start
    try:
        with np.load(job["reference"]) as saved:
            reference = {name: saved[name] for name in saved.files}
        first = timed_request(session, reference["prompt"], int(reference["new_tokens"]))
        cold = {"load_s": load_s, "first_token_ms": (first.stamps[0] - first.start) * 1e3}
        tolerance = SimpleNamespace(**job["tolerance"])
        found = logit_agreement(session.logits(reference["teacher"]), reference["logits"], tolerance.top1_margin)
    finally:
        session.close()
    misses = logit_misses(found, tolerance)
    error = (f"{job['name']}: its teacher-forced logits miss the saved eager fp32 reference "
             f"({'; '.join(misses)}; max abs error {found['max_abs_err']:.3g})") if misses else ""
    return {"ok": not misses, "max_abs_err": found["max_abs_err"], "logits": found, "error": error, **cold}
