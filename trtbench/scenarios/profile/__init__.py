"""The profile scenario: where one variant's time and memory go (:mod:`.scenario`), and its report section."""

from trtbench.scenarios.profile.scenario import Profile, ProfilePart

__all__ = ["Profile", "ProfilePart"]
