"""Results written before the LLM side's renames still load: a run of generate and serving (then called ``server``)
of eager on the tiny Llama, written by trtbench before the serving core was shared (tests/assets/
results_before_renames: its results.json and journal), whose decoder serving list was ``llm_serving``. Both read
as today's parts, under today's key; a result set saved again writes the new key only."""

from __future__ import annotations

import json
from pathlib import Path

from trtbench.results.journal import JOURNAL_NAME, Journal
from trtbench.results.resultset import ResultSet
from trtbench.scenarios.generate import GenerateRecord
from trtbench.scenarios.serving.tokens.result import ServedDecoder

BEFORE = Path(__file__).parents[2] / "assets" / "results_before_renames"


def test_a_stored_result_with_the_former_decoder_serving_key_loads_under_the_new_one(tmp_path):
    doc = json.loads((BEFORE / "results.json").read_text(encoding="utf-8"))
    assert "llm_serving" in doc and "decoder_serving" not in doc, "the asset is a result written before the rename"
    results = ResultSet.load(BEFORE)
    (served,) = results.parts(ServedDecoder.KIND)
    (row,) = results.parts(GenerateRecord.KIND)
    assert isinstance(served, ServedDecoder) and served.key == row.key
    assert (served.decoder, served.precision, served.point) == ("eager", "fp32", "p8-n4-b1")
    (result,) = served.results
    assert result.status == "ok" and result.steps, result
    results.save(tmp_path / "results.json")
    again = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert "llm_serving" not in again and "llm_serving" not in again["part_lists"]
    assert again["decoder_serving"] == doc["llm_serving"]


def test_its_journal_resumes_as_todays_parts(tmp_path):
    """The run's journal as a killed run would have left it (its last line, that it completed, cut)."""
    lines = (BEFORE / JOURNAL_NAME).read_text(encoding="utf-8").splitlines(keepends=True)
    assert json.loads(lines[-1]) == {"kind": "complete"}
    (tmp_path / JOURNAL_NAME).write_text("".join(lines[:-1]), encoding="utf-8")
    left = Journal(tmp_path).read()
    (served,) = left.parts.of(ServedDecoder.KIND)
    (row,) = left.parts.of(GenerateRecord.KIND)
    assert isinstance(served, ServedDecoder) and served.results[0].status == "ok" and served.key == row.key
