"""Replicate worker processes (benchmark.processes): each variant timed in several fresh processes, taking the
rounds in turn, each block keeping its process and round; sets of processes taking turns where memory is short; a
resumed point timed again whole.

Two runs of a toy (tests/assets/toy_models.py, ``process_luck``) whose speed is fixed per worker process by a
seeded draw at its start: slow (+8%) with probability 1/3. eager fp32 is the baseline, eager fp16 the row (fp16
let onto the CPU: every call sleeps the same, so the mixture's speedup is 1). Run A draws eager fp32's processes
fast, fast, slow and eager fp16's fast, fast, fast; run B (a resume of run A's folder with one record dropped, under
a memory budget that fits one process per variant at a time) draws slow, fast, fast and fast, fast, fast. Each
run's first processes (those a one-process run would have timed) thus read 1.00 and 1.08.
"""

from __future__ import annotations

import copy
import json

import pytest

from conftest import TINY_CONFIG, run_dict
from trtbench.core.stats import BlockSeries, pooled_between_variance, speedup_interval
from trtbench.results.journal import JOURNAL_NAME

SEEDS = {"A": 0, "B": 12}  # toy_models.luck_draws: A: fp32 FFS, fp16 FFF; B: fp32 SFF, fp16 FFF
MIXTURE_SPEEDUP = 1.0  # both slots draw from one mixture


def _config(out) -> dict:
    config = copy.deepcopy(TINY_CONFIG)
    config.update(model={"source": "python", "name": "toy_models:process_luck", "kwargs": {"call_ms": 10.0}},
                  precisions=["fp32", "fp16"], variants=["eager"])
    config["benchmark"].update(isolation="process", processes=3, shapes=["opt"], iterations=60, warmup=2)
    config["output"].update(dir=str(out), save_artifacts=False)
    return config


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run A, then run B: run A's folder resumed with eager fp16's record and the run's end dropped from its
    journal, with 1 byte available for further processes (so each process of a variant takes its own turn)."""
    import trtbench.config.plan
    import trtbench.workers.isolation

    out = tmp_path_factory.mktemp("replicates") / "out"
    counters = tmp_path_factory.mktemp("luck")
    made = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trtbench.config.plan, "unsupported_reason", lambda precision, device: None)  # fp16 on the CPU
        patch.setenv("TOY_PROCESS_LUCK", f"{counters / 'A.json'}:{SEEDS['A']}")
        made["A"] = run_dict(_config(out))
        journal = out / JOURNAL_NAME
        kept = [line for line in journal.read_text().splitlines()
                if json.loads(line)["kind"] != "complete" and '"precision":"fp16"' not in line]
        journal.write_text("\n".join(kept) + "\n")
        patch.setenv("TOY_PROCESS_LUCK", f"{counters / 'B.json'}:{SEEDS['B']}")
        patch.setattr(trtbench.workers.isolation, "available_bytes", lambda: 1)
        made["B"] = run_dict(_config(out))
    rows = {name: {(r.case.variant, r.case.precision): r for r in outcome.results} for name, outcome in made.items()}
    return {**rows, "reported": {name: outcome.results.speedup(rows[name][("eager", "fp16")])
                                 for name, outcome in made.items()}}


def _speedup(rows: dict, process: int):
    """eager fp16's speedup over eager fp32 with its two-level interval over ``process``'s blocks alone: what a run
    of one process would have timed and reported."""
    series = [rows[("eager", p)].block_series for p in ("fp32", "fp16")]
    series = [BlockSeries(*zip(*[b for b in zip(s.medians, s.processes, s.rounds) if b[1] == process]))
              for s in series]
    return speedup_interval(*series, between_var=pooled_between_variance(series))


def test_the_processes_of_every_variant_take_the_rounds_in_turn(runs):
    rows = runs["A"]
    for record in rows.values():
        assert record.status == "ok", record.reason
        assert record.process_count == 3 and "process_turns" not in record.metrics
        assert len(set(record.round_ids)) == len(record.round_ids)  # a round holds one block of the variant
        first = record.round_ids[0]
        assert record.processes == [(r - first) % 3 for r in record.round_ids], record.processes  # in turn
        # fixed: per process
        assert sum(len(block) for block, p in zip(record.rounds, record.processes) if p == 0) == 60
        facts = record.metrics["processes"]
        assert [f["process"] for f in facts] == [0, 1, 2]
        assert len({f["pid"] for f in facts}) == 3 and len({f["hash_seed"] for f in facts}) == 3
        for f in facts:
            assert {"env_padding_bytes", "rss_mb", "voluntary_ctx_switches", "involuntary_ctx_switches",
                    "minor_faults_per_call_median"} <= set(f)
            assert f["allocator"]["allocator"] == "default" and f["rss_mb"] > 0
            assert f["ready_cpu_s"] > 0.5  # what the process cost before it timed: importing torch is more than that
        assert record.metrics["isolation"]["method"] == "process"
    assert set(rows[("eager", "fp32")].round_ids) == set(rows[("eager", "fp16")].round_ids)  # paired by round


def test_processes_that_do_not_fit_take_turns_each_interleaved(runs):
    for record in runs["B"].values():
        assert record.status == "ok", record.reason
        assert record.metrics["process_turns"] == 3 and record.process_count == 3
        turns = {p: {r for r, q in zip(record.round_ids, record.processes) if q == p} for p in range(3)}
        assert not (turns[0] & turns[1]) and not (turns[1] & turns[2])  # one process per variant at a time
        assert max(turns[0]) < min(turns[1]) and max(turns[1]) < min(turns[2])  # the rounds go on across turns
        assert [f["process"] for f in record.metrics["processes"]] == [0, 1, 2]
    fp32, fp16 = runs["B"][("eager", "fp32")], runs["B"][("eager", "fp16")]
    assert set(fp32.round_ids) == set(fp16.round_ids)  # each turn's rounds hold both variants


def test_a_resumed_point_is_timed_again_whole_in_every_process(runs):
    """Run B resumed run A's folder with only eager fp32's record of the point: both were timed again."""
    for key, record in runs["B"].items():
        before = {f["pid"] for f in runs["A"][key].metrics["processes"]}
        after = {f["pid"] for f in record.metrics["processes"]}
        assert len(after) == 3 and not before & after and record.rounds != runs["A"][key].rounds


def test_intervals_over_processes_hold_across_runs_where_one_process_does_not(runs):
    a, b = runs["reported"]["A"], runs["reported"]["B"]  # as each run reports eager fp16's speedup
    assert a.low <= b.high and b.low <= a.high, (a, b)  # the two runs' intervals overlap
    assert a.low <= MIXTURE_SPEEDUP <= a.high and b.low <= MIXTURE_SPEEDUP <= b.high, (a, b)
    one_a, one_b = _speedup(runs["A"], process=0), _speedup(runs["B"], process=0)
    assert one_b.value > 1.05 > 1.03 > one_a.value, (one_a, one_b)  # B's first eager fp32 process drew slow
    assert not one_a.low <= one_b.value <= one_a.high, (one_a, one_b)  # one process: excludes the other run's


def test_plan_turns_fits_as_many_sets_as_the_memory_allows():
    from trtbench.workers.isolation import plan_turns

    gib = 2**30
    assert plan_turns(3, gib, 10 * gib) == [[0, 1, 2]]
    assert plan_turns(3, gib, int(1.3 * gib)) == [[0, 1], [2]]  # 80% of it: one more set beside process 0
    assert plan_turns(3, gib, gib) == [[0], [1], [2]]
    assert plan_turns(4, gib, int(1.3 * gib)) == [[0, 1], [2, 3]]
    assert plan_turns(3, gib, None) == [[0, 1, 2]]  # unknown: as before


@pytest.mark.parametrize("value, says", [(0, "must be positive"), (2.5, "expected an integer"),
                                         (True, "expected an integer")])
def test_processes_must_be_a_count(value, says):
    from trtbench.config.config import config_from_dict
    from trtbench.core.errors import UserInputError

    config = copy.deepcopy(TINY_CONFIG)
    config["benchmark"]["processes"] = value
    with pytest.raises(UserInputError, match=says) as caught:
        config_from_dict(config)
    assert caught.value.where == "benchmark.processes"


def test_the_default_is_three_and_the_environment_may_set_another(monkeypatch):
    from trtbench.config.config import config_from_dict
    from trtbench.core.errors import UserInputError

    monkeypatch.delenv("TRTBENCH_PROCESSES")
    assert config_from_dict(copy.deepcopy(TINY_CONFIG)).benchmark.processes == 3
    monkeypatch.setenv("TRTBENCH_PROCESSES", "2")
    assert config_from_dict(copy.deepcopy(TINY_CONFIG)).benchmark.processes == 2
    monkeypatch.setenv("TRTBENCH_PROCESSES", "many")
    with pytest.raises(UserInputError, match="TRTBENCH_PROCESSES"):
        config_from_dict(copy.deepcopy(TINY_CONFIG))


def test_the_command_line_sets_the_processes_and_refuses_a_non_count(capsys):
    from trtbench.cli import build_parser

    assert build_parser().parse_args(["run", "--config", "x.yaml", "--processes", "1"]).processes == 1
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["run", "--config", "x.yaml", "--processes", "0"])
    assert exited.value.code == 2 and "not a count of processes" in capsys.readouterr().err
