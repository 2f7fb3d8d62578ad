"""The one registry helper that variants, decoders and scenarios keep their classes in."""

from __future__ import annotations

import pytest

from trtbench.core.registry import Registry, UnknownName


class _Thing:
    name = "alpha"


class _Other:
    name = "beta"


def test_a_registry_keeps_classes_by_name_in_registration_order_and_forgets_one_on_unregister():
    things: Registry[object] = Registry("thing")
    assert things.register(_Other) is _Other and things.register(_Thing) is _Thing
    assert things.names() == ["beta", "alpha"] and things.classes() == [_Other, _Thing]
    assert things.get("alpha") is _Thing and things.find("gamma") is None
    assert things.unregister("alpha") is _Thing and things.unregister("alpha") is None
    assert things.names() == ["beta"]


def test_an_unknown_name_is_a_key_error_that_suggests_the_close_one_or_lists_them_all():
    things: Registry[object] = Registry("thing")
    things.register(_Thing)
    with pytest.raises(KeyError, match=r"unknown thing 'alpah': did you mean 'alpha'\?"):
        things.get("alpah")
    with pytest.raises(UnknownName, match="unknown thing 'zzz': known things: alpha"):
        things.get("zzz")
    assert things.hint("zzz", among=[]) == "known things: none"


def test_a_plugin_package_registers_its_modules_at_the_first_lookup():
    from trtbench.decoders import DECODERS, get_decoder
    from trtbench.scenarios import registered, scenario_class
    from trtbench.variants import VARIANTS, get_variant

    assert {"eager", "traced", "ort"} <= set(VARIANTS.names()) and get_variant("traced").name == "traced"
    assert {"eager", "compiled"} <= set(DECODERS.names()) and get_decoder("compiled").name == "compiled"
    assert scenario_class("latency").name == "latency" and registered()[0].name == "latency"
    with pytest.raises(KeyError, match="unknown variant 'tracd': did you mean 'traced'"):
        get_variant("tracd")
    with pytest.raises(KeyError, match="unknown decoder"):
        get_decoder("nope")
