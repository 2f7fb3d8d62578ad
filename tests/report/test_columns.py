"""Column sets declare their own columns: a toy column set, one definition in this file, appears in the
Markdown table, the terminal table and the CSV without touching the tables."""

import csv
import io

import pytest

from helpers.records import two_variant_set
from trtbench.report.columns import Column, ColumnSet, register, registered, unregister
from trtbench.report.tables import csv_columns, csv_text, markdown_table, text_table


@pytest.fixture
def calls_per_round():
    """A toy column set: the calls each record made per round (its iterations over its rounds)."""
    def per_round(row):
        r = row.record
        return len(r.samples_ms) / len(r.rounds) if r.timed else None

    def text(row):
        return "" if per_round(row) is None else f"{per_round(row):.1f}"

    column_set = register(ColumnSet("calls_per_round", columns=(Column("calls/round", text),),
                                    fields=("calls_per_round",),
                                    values=lambda row: {"calls_per_round": per_round(row)}))
    yield column_set
    unregister(column_set.name)


def test_a_column_set_in_one_file_is_a_column_everywhere(calls_per_round):
    results = two_variant_set()
    header = markdown_table(results).splitlines()[0]
    assert header.endswith("| calls/round |")
    assert "calls/round" in text_table(results).splitlines()[0]
    csv_rows = list(csv.DictReader(io.StringIO(csv_text(results))))
    assert {row["variant"]: row["calls_per_round"] for row in csv_rows} == {"eager": "3.0", "traced": "3.0",
                                                                            "scripted": ""}
    assert "| 3.0 |" in markdown_table(results)
    assert csv_columns()[-2:] == ("calls_per_round", "fastest")


def test_without_it_the_tables_do_not_have_it():
    results = two_variant_set()
    assert "calls/round" not in markdown_table(results) and "calls_per_round" not in csv_text(results)


def test_the_built_in_column_sets_are_registered_in_column_order():
    assert [c.name for c in registered()][:9] == ["build_time", "latency", "throughput", "speedup", "precision_speedup",
                                                  "flops", "accuracy", "kernels", "processes"]
    assert markdown_table(two_variant_set()).splitlines()[0] == (
        "| variant | point | status | median ms (95% CI, 1 process x rounds) | p99 ms | samples/s | "
        "speedup [95% CI, 1 process x rounds] | GFLOP/s (% peak, % matmul) | parity | processes | process spread |")


def test_a_column_set_cannot_take_another_ones_name_or_field(calls_per_round):
    with pytest.raises(ValueError, match="registered already"):
        register(calls_per_round)
    with pytest.raises(ValueError, match="speedup_low"):
        register(ColumnSet("other", columns=(), fields=("speedup_low",), values=lambda row: {}))


def test_ort_cuda_rows_are_read_by_host_time_and_the_report_says_why():
    """ONNX Runtime's CUDA provider runs on its own stream: CUDA events on torch's stream do not bracket its work,
    so the report names its rows and results.csv gives no device median for them (eager's stays)."""
    from helpers.records import record
    from trtbench.results.resultset import ResultSet

    results = ResultSet(environments={"env-a": {"id": "env-a"}})
    device = [[0.5, 0.5, 0.5]] * 4
    results.add(record("eager", 10.0, device_rounds=device))
    used = ["CUDAExecutionProvider", "CPUExecutionProvider"]  # the build info's: what its session used, first first
    results.add(record("ort_cuda", 8.0, device_rounds=device, build={"info": {"providers": used}}))
    results.add(record("ort", 9.0, build={"info": {"providers": ["CPUExecutionProvider"]}}))  # on the CPU: no note
    notes = [line for line in markdown_table(results).splitlines() if "stream of its own" in line]
    assert len(notes) == 1 and "host" in notes[0]
    assert notes[0].startswith("- ort_cuda fp32: ONNX Runtime's CUDA provider")
    medians = {row["variant"]: row["device_median_ms"] for row in csv.DictReader(io.StringIO(csv_text(results)))}
    assert medians == {"eager": "0.5", "ort_cuda": "", "ort": ""}
