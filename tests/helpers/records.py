"""Synthetic records and result sets: a record per variant, a two-variant set, and records timed by several
processes, in one regime or two."""

from __future__ import annotations

import math

import numpy as np

from trtbench.core.case import Case
from trtbench.core.record import Record
from trtbench.results.resultset import ResultSet


def record(variant: str, median: float, env: str = "env-a", point: str = "opt", **kw) -> Record:
    case = Case(model="m", variant=variant, precision="fp32", point=point, input_shapes=((2, 3, 8, 8),), threads=2,
                device="cpu")
    rounds = [[median * f for f in (0.98, 1.0, 1.03)] for _ in range(4)]
    return Record(case=case, environment=env, rounds=rounds, **kw)


def two_variant_set(env: str = "env-a", scale: float = 1.0) -> ResultSet:
    results = ResultSet(environments={env: {"id": env, "cpu": f"cpu of {env}"}},
                        runs=[{"name": "t", "environment": env}])
    results.add(record("eager", 10.0 * scale, env, accuracy={"ok": True, "max_abs_err": 0.0}))
    results.add(record("traced", 4.0 * scale, env, accuracy={"ok": True, "max_abs_err": 1e-6},
                       build={"build_s": 0.5, "info": {"strict": True}}, metrics={"flops": 123},
                       warnings=["FutureWarning: x"], stopped_by="target_rel_ci"))
    results.add(Record(case=record("scripted", 1.0).case, environment=env, status="failed",
                       reason="build scripted fp32: RuntimeError: no"))
    return results


def _case(variant: str) -> Case:
    return Case(model="m", variant=variant, precision="fp32", point="opt", input_shapes=((4, 3, 8, 8),), threads=2,
                device="cpu")


def replicated(variant: str, ms_per_round, offsets, seed: int = 0, facts=None) -> Record:
    """A record timed by ``len(offsets)`` processes in every round: 5 calls per block around the round's ms times
    the process's offset."""
    rng = np.random.default_rng(seed)
    rounds, processes, round_ids = [], [], []
    for r, ms in enumerate(ms_per_round):
        for process, offset in enumerate(offsets):
            rounds.append([float(ms * offset * math.exp(0.003 * rng.standard_normal())) for _ in range(5)])
            processes.append(process)
            round_ids.append(r)
    return Record(case=_case(variant), environment="e", rounds=rounds, block_process=processes, block_round=round_ids,
                  accuracy={"ok": True, "max_abs_err": 0.0}, metrics={"processes": facts} if facts else {})


def regime_results() -> ResultSet:
    """The issue's regime test in a result set: from round 25 of 50 the machine slows eager by 20% and scripted
    less (1.03 -> 1.06 speedup), traced alike (1.2 -> 1.2)."""
    levels = np.r_[np.ones(25), np.full(25, 1.2)]
    results = ResultSet(environments={"e": {"id": "e"}})
    results.add(replicated("eager", 20.0 * levels, [1.0, 1.01, 0.995]))
    scripted_levels = np.r_[np.ones(25), np.full(25, 1.2 * 1.03 / 1.06)]
    results.add(replicated("scripted", 20.0 / 1.03 * scripted_levels, [1.0, 0.99, 1.005], seed=1))
    results.add(replicated("traced", 20.0 / 1.2 * levels, [1.0, 1.002, 0.998], seed=2))
    return results
