"""A toy scenario, laid out as trtbench's own are: a folder with its result (:mod:`.result`) and its scenario
(:mod:`.scenario`). tests/scenarios/test_scenario_plugin.py registers it with one line and shows it run, journal,
resume, merge and report with no other edit."""

from tally_scenario.result import TallyPart
from tally_scenario.scenario import Tally

__all__ = ["Tally", "TallyPart"]
