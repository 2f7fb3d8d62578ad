"""The generate scenario's memory budget and the groups of workers that fit it (docs/generate.md, "Memory")."""

from __future__ import annotations

from trtbench.core.errors import UserInputError
from trtbench.core.procfs import available_bytes, proc_kib

MIB = 2**20
WORKER_OVERHEAD_BYTES = 1000 * MIB
AVAILABLE_SHARE = 0.8  # the default budget's share of MemAvailable: the rest is the margin
WEIGHT_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "int8": 1.0, "int4": 0.5}


def default_budget_bytes() -> int:
    """80% of MemAvailable (/proc/meminfo); a config must give the budget where that cannot be read."""
    available = available_bytes()
    if available is None:
        raise UserInputError("generate.memory_budget_mb", "has no default here: /proc/meminfo gives no MemAvailable",
                             "set memory_budget_mb under the generate entry, e.g. memory_budget_mb: 8000")
    return int(available * AVAILABLE_SHARE)


def own_rss_bytes() -> int:
    """This process's resident memory now (VmRSS), 0 where it cannot be read."""
    return (proc_kib("/proc/self/status", "VmRSS") or 0) * 1024


def worker_bytes(parameters: int, precision: str, kv_bytes: int) -> int:
    """The estimated peak of a decoder worker at ``precision`` (docs/generate.md, "Memory")."""
    weights = parameters * 4 + (int(parameters * WEIGHT_BYTES.get(precision, 4.0)) if precision != "fp32" else 0)
    return WORKER_OVERHEAD_BYTES + weights + kv_bytes


def plan_groups(estimates: dict[str, int], budget: int, reference: str) -> tuple[list[list[str]], dict[str, str]]:
    """The slots in groups that fit ``budget``, each led by ``reference``; and those that fit none."""
    base = estimates.get(reference, 0)
    groups: list[list[str]] = []
    too_big: dict[str, str] = {}
    used = budget + 1  # no open group yet
    for slot, need in estimates.items():
        if slot == reference:
            continue
        if base + need > budget:
            too_big[slot] = (f"does not fit the memory budget: its worker needs about {need / MIB:.0f} MiB and eager "
                             f"fp32's {base / MIB:.0f} MiB beside it, over the budget of {budget / MIB:.0f} MiB; "
                             f"raise memory_budget_mb under the generate entry, or free memory")
            continue
        if used + need > budget:
            groups.append([reference] if reference in estimates else [])
            used = base
        groups[-1].append(slot)
        used += need
    if not groups and reference in estimates:
        groups.append([reference])
    return groups, too_big
