"""How a built variant is exercised: one folder per scenario, each registered by its name on the one line below;
the protocol (:mod:`.base`) and the ``scenarios:`` list (:mod:`.entries`)."""

from trtbench.scenarios import latency, serving, profile, generate  # noqa: F401  (registration, in report order)
from trtbench.scenarios.base import Testbed, Scenario, register, registered, scenario_class, unregister

__all__ = ["Testbed", "Scenario", "register", "registered", "scenario_class", "unregister"]
