"""``output.history`` and ``output.label``: the default store only for the default output folder, a path or URL
as given, false for none, and true refused naming the key."""

from __future__ import annotations

import copy

import pytest

from conftest import TINY_CONFIG
from trtbench.config.config import config_from_dict
from trtbench.core.errors import UserInputError


def config(**output):
    data = copy.deepcopy(TINY_CONFIG)
    data["output"] = {**data["output"], **output}
    return config_from_dict(data)


def test_the_default_output_folder_appends_to_the_default_history():
    assert config().output.history == "results/history.sqlite"
    assert config(history=False).output.history is False


def test_a_folder_of_the_users_own_appends_only_when_told():
    assert config(dir="/tmp/mine").output.history is None
    assert config(dir="/tmp/mine", history="postgresql://db/h", label="abc123").output.history == "postgresql://db/h"
    assert config(label="abc123").output.label == "abc123"


@pytest.mark.parametrize("value", [True, 5])
def test_a_history_that_names_no_store_is_bad_input(value):
    with pytest.raises(UserInputError) as info:
        config(history=value)
    assert info.value.where == "output.history" and info.value.hint


def test_a_folder_named_in_results_appends_to_the_default_history_and_one_elsewhere_only_when_told():
    from pathlib import Path

    from trtbench.pipeline.history import history_for

    assert history_for(None, Path("results/resnet34")) == "results/history.sqlite"  # the bundled configs' dir
    assert history_for(None, Path("/tmp/mine")) is None
    assert history_for(False, Path("results/resnet34")) is None
    assert history_for("/tmp/h.sqlite", Path("/tmp/mine")) == "/tmp/h.sqlite"
