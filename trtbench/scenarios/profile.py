"""The profile scenario: where one variant's time and memory go (layers, operators, memory, structure,
a training step), once per run at the profile's precision; the sections themselves are
:mod:`trtbench.profiling`'s, and :mod:`trtbench.report.profile` presents them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch

from trtbench.build.stage import capture_warnings
from trtbench.core.precision import unsupported_reason
from trtbench.profiling.config import ProfileConfig
from trtbench.profiling.runner import run_profiles
from trtbench.core.status import Status


def profile_group(profile_cfg: ProfileConfig, outcomes: dict, points: list, inputs: dict[str, tuple], all_points: list,
                  device: torch.device, out_dir: Path, artifacts: dict[str, list[Path]], progress) -> dict:
    """Profile a build group's variants (``outcomes``: name -> BuildOutcome) at the ``points`` of
    ``profile_cfg.shapes`` found among the group's ``all_points``; a point label the run does not have
    (a batch sweep names its points b<N>) is said in the result's warnings, not dropped silently."""
    reason = unsupported_reason(profile_cfg.precision, device)
    if reason:
        return {"status": Status.SKIPPED, "reason": reason, "precision": profile_cfg.precision, "device": str(device)}
    labels = [p.label for p in points]
    missing = [label for label in profile_cfg.shapes if label not in labels]
    chosen = {name: (outcomes[name].variant, outcomes[name].built) for name in profile_cfg.variants
              if name in outcomes and outcomes[name].built is not None}
    with progress.task(f"profile {profile_cfg.precision}", total=len(chosen) * len(labels)) as tick:
        profiles, caught = capture_warnings(lambda: run_profiles(
            dataclasses.replace(profile_cfg, shapes=labels), chosen, inputs, device, out_dir, artifacts, tick))
    if missing:
        caught = [f"profile.shapes {', '.join(missing)}: not profiled, this run has no such point (its points are "
                  f"{', '.join(p.label for p in all_points)}: a batch sweep replaces min/opt/max)"] + list(caught)
    profiles["warnings"] = caught
    return profiles


def profiles_group(profile_cfg: ProfileConfig | None, group) -> bool:
    """Whether the run's profile is taken on build ``group``: one with the profile's precision."""
    return profile_cfg is not None and profile_cfg.enabled and profile_cfg.precision in group.precisions


def profile_stage(config, group, outcomes: dict, artifacts: dict[str, list[Path]], copies: dict,
                  device: torch.device, out_dir: Path, progress) -> dict:
    """The run's profile on ``group`` (:func:`profiles_group`) at the profile's precision (its variants
    there, of ``outcomes`` by slot id; its inputs from ``copies``, by precision), at the points
    ``config.profile.shapes`` names."""
    precision = config.profile.precision
    at_precision = {e.name: outcomes[group.slot_id(e.name, precision)] for e in group.entries_at(precision)
                    if group.slot_id(e.name, precision) in outcomes}
    points = [p for p in group.points if p.label in config.profile.shapes]
    inputs = {p.label: copies[precision].inputs[p.label] for p in points}
    return profile_group(config.profile, at_precision, points, inputs, group.points, device, out_dir, artifacts,
                         progress)
