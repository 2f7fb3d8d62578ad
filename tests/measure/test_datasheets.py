"""NVIDIA's datasheet tables (trtbench/measure/datasheets.yaml) as read into named rows: every row reachable in its
table's most-specific-first order, every figure a positive number."""

from __future__ import annotations

import pytest

from trtbench.measure.datasheets import gpu_peaks, memory_bandwidths, not_in_table, row_covering


@pytest.mark.parametrize("table", [memory_bandwidths, gpu_peaks])
def test_each_row_is_the_one_its_own_label_finds(table):
    rows = table()
    found = {row: row_covering(rows, row.label) for row in rows}
    shadowed = [(row.label, first.label) for row, first in found.items() if first != row]
    assert len(rows) > 5 and not shadowed, f"rows found as a row above them (list the more specific first): {shadowed}"


def test_every_figure_is_positive_and_tf32_missing_only_where_stated():
    assert all(row.tb_per_s > 0 for row in memory_bandwidths())
    assert all(row.fp32 > 0 and row.fp16 > row.fp32 and (row.tf32 is None or row.tf32 > row.fp32)
               for row in gpu_peaks())
    assert [row.label for row in gpu_peaks() if row.tf32 is None] == ["T4", "V100 SXM2"]


def test_a_gpu_in_no_row_is_named_with_the_table():
    assert row_covering(memory_bandwidths(), "NVIDIA GeForce RTX 4090") is None
    assert not_in_table(memory_bandwidths()[:2], "RTX") == "'RTX' is not in the table (H200 (SXM and NVL), H100 NVL)"
