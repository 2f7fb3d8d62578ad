"""The profile scenario: where one variant's time and memory go (:mod:`.scenario`); its report section
(:mod:`.report`)."""

from trtbench.scenarios.profile.scenario import Profile, ProfilePart

__all__ = ["Profile", "ProfilePart"]
