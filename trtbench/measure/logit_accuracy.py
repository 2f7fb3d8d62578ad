"""A decoder's accuracy against eager fp32 that works with random weights (docs/generate.md)."""

from __future__ import annotations

import numpy as np


def logit_agreement(logits: np.ndarray, reference: np.ndarray, margin: float) -> dict:
    """``logits`` against ``reference``: max abs error, cosines, top-1 agreement past a top-two ``margin``."""
    got = np.asarray(logits, dtype=np.float64).reshape(-1, np.shape(logits)[-1])
    ref = np.asarray(reference, dtype=np.float64).reshape(-1, np.shape(reference)[-1])
    if got.shape != ref.shape:
        raise ValueError(f"logits of shape {got.shape} against a reference of shape {ref.shape}")
    norms = np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1)
    cosine = np.where(norms > 0, np.sum(got * ref, axis=1) / np.where(norms > 0, norms, 1), 1.0)
    top2 = np.sort(ref, axis=1)[:, -2:]
    decided = (top2[:, 1] - top2[:, 0]) > margin
    agree = np.argmax(got, axis=1) == np.argmax(ref, axis=1)
    return {"max_abs_err": float(np.max(np.abs(got - ref))), "cosine_min": float(cosine.min()),
            "cosine_median": float(np.median(cosine)), "positions": int(ref.shape[0]),
            "top1_positions": int(decided.sum()), "top1_margin": margin,
            "top1_agree": float(agree[decided].mean()) if decided.any() else None}


def logit_misses(found: dict, tolerance) -> list[str]:
    """How :func:`logit_agreement`'s ``found`` misses ``tolerance``, with the figures (empty: it keeps it)."""
    misses = []
    if found["cosine_min"] < tolerance.cosine_min:
        misses.append(f"cosine {found['cosine_min']:.6f} < {tolerance.cosine_min}")
    if found["top1_agree"] is not None and found["top1_agree"] < tolerance.top1_agree_min:
        misses.append(f"top-1 agreement {found['top1_agree']:.3f} < {tolerance.top1_agree_min} over "
                      f"{found['top1_positions']} of {found['positions']} positions")
    return misses


def matching_prefix(tokens: np.ndarray, reference: np.ndarray) -> int:
    """How many leading tokens match ``reference``'s: the shortest over the batch."""
    got, ref = np.atleast_2d(tokens), np.atleast_2d(reference)
    length = min(got.shape[1], ref.shape[1])
    differ = got[:, :length] != ref[:, :length]
    return int(min(np.argmax(row) if row.any() else length for row in differ))
