"""Statuses are one enum: no status word is written as a literal outside trtbench/core/status.py."""

import ast
import json
from pathlib import Path

import pytest

from trtbench.core.record import Record
from trtbench.core.status import DiagnosisStatus, RunStatus, Status
from helpers.paths import REPO

ROOT = REPO
WORDS = {s.value for s in Status} | {s.value for s in RunStatus}


def _mentions_status(node: ast.AST) -> bool:
    return "status" in ast.unparse(node).lower()


def _status_contexts(tree: ast.AST):
    """Subtrees whose string literals would be statuses: comparisons with something named status,
    ``status=`` keywords, ``"status":`` dict values and assignments to a status."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(_mentions_status(x) for x in [node.left, *node.comparators]):
            yield node
        elif isinstance(node, ast.keyword) and node.arg == "status":
            yield node.value
        elif isinstance(node, ast.Dict):
            yield from (v for k, v in zip(node.keys, node.values)
                        if isinstance(k, ast.Constant) and k.value == "status")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_mentions_status(t) for t in targets):
                yield node.value


def _literal_uses(path: Path) -> list[str]:
    """Status words written as string literals where a status is compared, passed or assigned."""
    tree = ast.parse(path.read_text(), str(path))
    found = {(node.lineno, node.value) for context in _status_contexts(tree) for node in ast.walk(context)
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in WORDS}
    return [f"{path.relative_to(ROOT)}:{line}: {word!r}" for line, word in sorted(found)]


def test_no_status_literals_outside_the_enum():
    sources = [p for p in sorted((ROOT / "trtbench").rglob("*.py")) + sorted((ROOT / "scripts").glob("*.py"))
               if p.name != "status.py"]
    found = [use for path in sources for use in _literal_uses(path)]
    assert not found, "status words as literals (use trtbench.core.status.Status):\n" + "\n".join(found)


def test_the_scan_finds_a_literal(tmp_path):
    """The check above can fail: a comparison with a status word is found, a parity key is not."""
    sample = ROOT / "tests" / "_status_sample.py"
    sample.write_text('def f(r, parity):\n    r.status, x = "skipped", 1\n'
                      '    return r.status in ("ok", "failed") and parity["ok"] and {"ok": 1, "status": "failed"}\n')
    try:
        assert _literal_uses(sample) == ["tests/_status_sample.py:2: 'skipped'", "tests/_status_sample.py:3: 'failed'",
                                         "tests/_status_sample.py:3: 'ok'"]
    finally:
        sample.unlink()


def test_status_is_its_word_in_json_and_text():
    assert json.dumps({"status": Status.SKIPPED}) == '{"status": "skipped"}'
    assert f"{Status.FAILED}: x" == "failed: x" and str(RunStatus.COMPLETE) == "complete"
    assert json.dumps({"status": DiagnosisStatus.AGREES}) == '{"status": "agrees"}'
    assert f"{DiagnosisStatus.DIVERGES}" == "diverges" and DiagnosisStatus("stopped") is DiagnosisStatus.STOPPED
    assert [s for s in Status if s.final] == [Status.OK, Status.FAILED, Status.SKIPPED]


def test_a_record_reads_its_status_back_as_the_enum():
    from trtbench.core.case import Case

    case = Case("m", "eager", "fp32", "opt", ((1, 3),), 1, "cpu")
    record = Record.from_dict(json.loads(json.dumps(Record(case, "env", Status.SKIPPED, "why").to_dict())))
    assert record.status is Status.SKIPPED
    with pytest.raises(ValueError):
        Record.from_dict({**record.to_dict(), "status": "fine"})


def test_the_record_and_its_parts_are_frozen():
    """No stage changes another's output: a record, its case, a table row, a published result are frozen."""
    import dataclasses

    from trtbench.core.case import Case
    from trtbench.report.columns import Column, ColumnSet
    from trtbench.artifacts.publish import Published
    from trtbench.measure.references import MissingReference, References
    from trtbench.report.rows import Row

    for cls in (Record, Case, Row, ColumnSet, Column, Published, References, MissingReference):
        assert cls.__dataclass_params__.frozen, cls
    case = Case("m", "eager", "fp32", "opt", ((1, 3),), 1, "cpu")
    record = Record(case, "env", rounds=[[1.0]])
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.status = Status.FAILED
    failed = record.with_metrics(flops=3).failed("why")
    assert (record.status, record.metrics) == (Status.OK, {})
    assert (failed.status, failed.reason, failed.metrics, failed.rounds) == (Status.FAILED, "why", {"flops": 3},
                                                                             [[1.0]])
