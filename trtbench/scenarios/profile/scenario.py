"""The profile scenario: where one variant's time and memory go, once per run (:mod:`trtbench.profiling`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Iterator, Optional

from trtbench.building.stage import capture_warnings
from trtbench.core.codec import Coded
from trtbench.core.precision import unsupported_reason
from trtbench.profiling.config import ProfileConfig
from trtbench.profiling.runner import ProfiledVariant, run_profiles
from trtbench.core.env import environment_name
from trtbench.core.errors import UserInputError
from trtbench.core.status import Status
from trtbench.report.section import ReportSection
from trtbench.scenarios.base import Scenario, register
from trtbench.scenarios.profile.report import layer_plots, profile_markdown


@dataclass(frozen=True)
class ProfilePart(Coded):
    """The run's profile (:func:`profile_stage`'s data) of one model at the profile's precision."""

    KIND: ClassVar[str] = "profile"
    JOINS_RECORD: ClassVar[bool] = False
    RESULTS_KEY: ClassVar[str] = "profiles"
    fails_run: ClassVar[bool] = False  # a profile that failed says so in its data; the rows are what fail a run

    environment: str
    model: str
    precision: str
    data: dict

    @property
    def key(self) -> tuple:
        return (self.environment, self.model, self.precision)


@register
class Profile(Scenario):
    """Where one variant's time and memory go, once per run; on when the config has ``profile:``."""

    name = "profile"
    parts = (ProfilePart,)
    after_save = True  # it reports the saved files' sizes
    listed = False  # the config's profile: section turns it on
    example = "profile: {variants: [eager], shapes: [opt]}"

    @classmethod
    def parse(cls, value: Any, key: str) -> "Profile":
        raise UserInputError(key, "'profile' is configured by the top-level profile: section",
                             "remove it from scenarios and write e.g. profile: {variants: [eager], shapes: [opt]}")

    def owes(self, group, done) -> bool:
        return self.settings.precision in group.precisions and not done.parts(ProfilePart.KIND)

    def run(self, ctx, built, prepared) -> Iterator[ProfilePart]:
        group, precision = built.group, self.settings.precision
        saved = built.done.saved_files(group, precision, ctx.out_dir / "artifacts")
        yield ProfilePart(ctx.env_id, group.model.id, precision,
                          profile_stage(ctx, built, self.settings, saved))

    @classmethod
    def report(cls, results, budget_ms: Optional[float]) -> Optional[ReportSection]:
        parts = results.parts(ProfilePart.KIND)
        profiles = [(f"{p.model}, {environment_name(results.environments.get(p.environment, {'id': p.environment}))}",
                     p.data) for p in parts]
        profiles += [("", run["profiles"]) for run in results.runs if run.get("profiles")]  # results of schema 4
        if not profiles:
            return None
        plots = [plot for i, (_, data) in enumerate(profiles)  # several (a merge): each its own plot files
                 for plot in layer_plots(data, f"{i}_" if len(profiles) > 1 else "")]
        return ReportSection("\n".join(profile_markdown(data, where if len(profiles) > 1 else "")
                                        for where, data in profiles), plots=tuple(plots))


def profile_stage(ctx, built, settings: ProfileConfig, artifacts: dict[str, list[Path]]) -> dict:
    """The run's profile of the built group's variants at the profile's precision and shapes."""
    group, precision, device = built.group, settings.precision, ctx.device
    outcomes = {e.name: built.outcomes[group.slot_id(e.name, precision)] for e in group.entries_at(precision)
                if group.slot_id(e.name, precision) in built.outcomes}
    points = [p for p in group.points if p.label in settings.shapes]
    inputs = {p.label: built.copies[precision].inputs[p.label] for p in points}
    reason = unsupported_reason(precision, device)
    if reason:
        return {"status": Status.SKIPPED, "reason": reason, "precision": precision, "device": str(device)}
    labels = [p.label for p in points]
    missing = [label for label in settings.shapes if label not in labels]
    chosen = [ProfiledVariant(name, outcomes[name].variant, outcomes[name].built, tuple(artifacts.get(name, ())))
              for name in settings.variants if name in outcomes and outcomes[name].built is not None]
    with ctx.progress.task(f"profile {precision}", total=len(chosen) * len(labels)) as tick:
        profiles, caught = capture_warnings(lambda: run_profiles(
            dataclasses.replace(settings, shapes=labels), chosen, inputs, device, ctx.out_dir, tick),
            [d for p in chosen for d in p.variant.deprecations])
    if missing:
        caught = [f"profile.shapes {', '.join(missing)}: not profiled, this run has no such point (its points are "
                  f"{', '.join(p.label for p in group.points)}: a batch sweep replaces min/opt/max)"] + list(caught)
    profiles["warnings"] = caught
    return profiles
