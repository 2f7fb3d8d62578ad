"""The datasheet tables (trtbench/measure/datasheets.yaml) as read into named rows: every GPU row reachable in its
table's most-specific-first order, every figure a positive number, a CPU's strongest unit found by its flags."""

from __future__ import annotations

import pytest
import torch

from trtbench.measure.datasheets import (cpu_reduced_units, cpu_vector_units, gpu_peaks, memory_bandwidths,
                                         not_in_table, row_covering)


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


def test_a_cpu_has_the_strongest_unit_its_flags_hold():
    assert row_covering(cpu_vector_units(), {"sse2", "avx", "avx2", "fma"}).flop_per_cycle == 32
    assert row_covering(cpu_vector_units(), {"sse2", "avx", "avx2"}).name == "AVX"  # no FMA: not AVX2+FMA
    int8 = cpu_reduced_units()[torch.int8]
    assert row_covering(int8, {"avx512_vnni", "amx_int8"}).per_cycle == 2048
    assert row_covering(int8, {"avx_vnni"}).times == 4 and row_covering(int8, {"avx2"}) is None
    assert set(cpu_reduced_units()) == {torch.bfloat16, torch.int8}
