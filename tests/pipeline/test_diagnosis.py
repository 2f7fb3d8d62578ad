"""A run's rows that fail their check, diagnosed after it (trtbench/pipeline/diagnosis.py): each variant and
precision once, at its first failing point, unless the config says ``diagnose: false``. The run around it:
tests/pipeline/test_pipeline.py's accuracy failure."""

from __future__ import annotations

import json
from types import SimpleNamespace

from helpers.planted import planted_config
from trtbench.config.config import config_from_dict
from trtbench.core.status import Status
from trtbench.models.planted import planted_path
from trtbench.pipeline.diagnosis import diagnose_failing


def failing_rows(model_id: str) -> list:
    """Rows as a result set holds them: eager fp16 failing its check at two points, eager fp32 passing."""
    def row(precision: str, point: str, failed: bool):
        case = SimpleNamespace(model=model_id, variant="eager", precision=precision, point=point)
        return SimpleNamespace(case=case, accuracy_failed=failed, status=Status.OK, reason="")
    return [row("fp32", "opt", False), row("fp16", "opt", True), row("fp16", "opt", True)]


def test_each_failing_variant_and_precision_is_diagnosed_once(tmp_path):
    config = config_from_dict(planted_config(tmp_path, "fp16", 3))
    section = diagnose_failing(config, failing_rows(config.models[0].id), lambda line: None)
    entry = json.loads((tmp_path / "out" / "diagnose" / "eager-fp16-opt.json").read_text())
    assert entry["named"] == planted_path(3) and entry["confirmed"]
    assert [p.name for p in (tmp_path / "out" / "diagnose").glob("*.json")] == ["eager-fp16-opt.json"]
    assert section.markdown.startswith("## Where reduced precision diverges") and planted_path(3) in section.markdown
    assert [plot.file_name for plot in section.plots] == ["diagnose-sqnr-fp16.png"]
    assert section.plots[0].figure.axes, "the run's report draws its own copy of the figure diagnose/ saved"


def test_diagnose_false_turns_it_off(tmp_path):
    config = config_from_dict({**planted_config(tmp_path, "fp16", 3), "diagnose": False})
    assert diagnose_failing(config, failing_rows(config.models[0].id), lambda line: None) is None
    assert not (tmp_path / "out" / "diagnose").exists()
