"""The race at a point (trtbench/measure/race.py): a variant slower than the leader by more than the margin stops,
saying so, and is never restarted; eager is never stopped; a decided point ends, an undecided one at its budget as a
tie; a further process goes only to a contender whose interval is mostly between-process spread. Over synthetic
block series and scripted timers (nothing slept), so what the race decides is exact."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers.timers import ScriptedCost
from trtbench.analysis.race import call_point
from trtbench.core.stats import BlockSeries
from trtbench.measure.race import BUDGET, DECIDED, RACE_MIN_CYCLES, STOPPED, Entrants, Lap, Race
from trtbench.measure.timing import BUDGET_S, TimingSettings, measure_interleaved

CPU = torch.device("cpu")
RACING = TimingSettings(mode="adaptive", warmup=0, warmup_s=0, budget_s=4, block_s=0.001, switch_in_below_s=0)


def _series(means: dict[str, float], rounds: int, seed: int = 0, offsets=(1.0, 1.0)) -> dict[str, BlockSeries]:
    """Each variant's blocks over ``rounds`` rounds, its processes taking them in turn (each its ``offsets``' luck),
    with a drift every variant shares and 1% noise."""
    rng = np.random.default_rng(seed)
    drift = np.exp(rng.normal(0, 0.05, rounds))
    return {name: BlockSeries(tuple(float(mean * drift[r] * offsets[r % len(offsets)] * np.exp(rng.normal(0, 0.01)))
                                    for r in range(rounds)),
                              tuple(r % len(offsets) for r in range(rounds)), tuple(range(rounds)))
            for name, mean in means.items()}


def _lap(series: dict[str, BlockSeries], spent_s: float = 0.0, processes: int = 2) -> Lap:
    rounds = len(next(iter(series.values())).medians)
    return Lap(rounds, rounds // processes, dict.fromkeys(series, processes), spent_s)


def test_a_variant_slower_than_the_leader_by_more_than_the_margin_stops_and_eager_stays():
    series = _series({"eager": 1.3, "ort": 0.6, "openvino": 0.61, "exported": 1.2}, rounds=12)
    race = Race(0.05, budget_s=60, entrants=Entrants("eager"))
    step = race.step(series, _lap(series))
    assert step.stops == {"exported": STOPPED}  # eager is out of the race, never stopped: the drift reference
    assert race.contenders(list(series)) == ["ort", "openvino"]
    parts = race.outcomes(series)
    assert parts["exported"]["outcome"] == "stopped" and parts["eager"]["outcome"] == "out"
    assert parts["exported"]["text"].startswith("stopped early: slower than ort by >= ")
    assert parts["exported"]["text"].endswith("% (95%)") and parts["eager"]["text"].startswith("out of the race")
    lead = int(parts["exported"]["text"].split(">= ")[1].split("%")[0]) / 100
    assert 0.05 < lead <= parts["exported"]["behind"]["value"] - 1  # a bound below the measured lead


def test_nothing_stops_before_the_minimum_of_rounds_of_each_process():
    series = _series({"eager": 2.0, "ort": 1.0}, rounds=2 * RACE_MIN_CYCLES - 2)
    assert Race(0.05, budget_s=60, entrants=Entrants("eager")).step(series, _lap(series)).stops == {}


def test_a_point_with_one_contender_left_is_decided_and_a_stopped_variant_never_wins():
    series = _series({"eager": 1.0, "ort": 0.5, "slow": 2.0}, rounds=10)
    race = Race(0.05, budget_s=60, entrants=Entrants("eager"))
    step = race.step(series, _lap(series))
    assert step.stops == {"slow": STOPPED, "ort": DECIDED, "eager": DECIDED} and race.ended == DECIDED
    assert race.outcomes(series)["ort"]["outcome"] == "winner" and race.outcomes(series)["ort"]["behind"] is None
    faster = dict(series, slow=_series({"slow": 0.1}, rounds=10)["slow"])  # had it gone on: never restarted
    assert race.outcomes(faster)["slow"]["outcome"] == "stopped" and race.outcomes(faster)["ort"]["outcome"] == "winner"


def test_the_budget_ends_an_undecided_point_as_a_tie_and_twins_tie_within_the_margin_at_once():
    noisy = _series({"eager": 1.0, "a": 0.8, "b": 0.83}, rounds=8, offsets=(1.0, 1.08))  # processes 8% apart
    race = Race(0.05, budget_s=5, entrants=Entrants("eager"))
    assert race.step(noisy, _lap(noisy, spent_s=1.0)).stops == {}  # undecided, within the budget
    assert set(race.step(noisy, _lap(noisy, spent_s=5.0)).stops.values()) == {BUDGET}
    parts = race.outcomes(noisy)
    assert {parts["a"]["outcome"], parts["b"]["outcome"]} == {"tie"} and parts["a"]["ended"] == BUDGET
    twins = {name: BlockSeries((0.5,) * 8, (0, 1) * 4, tuple(range(8))) for name in ("a", "b")}
    twins["eager"] = BlockSeries((1.0,) * 8, (0, 1) * 4, tuple(range(8)))
    race = Race(0.05, budget_s=60, entrants=Entrants("eager"))
    assert set(race.step(twins, _lap(twins)).stops.values()) == {DECIDED} and race.outcomes(twins)["b"]["outcome"] \
        == "tie"


def test_a_barred_variant_never_leads():
    series = _series({"eager": 1.0, "wrong": 0.2, "ort": 0.5}, rounds=10)
    race = Race(0.05, budget_s=60, entrants=Entrants("eager", barred=frozenset({"wrong"})))
    race.step(series, _lap(series))
    assert race.call.leader == "ort" and race.outcomes(series)["wrong"]["outcome"] == "barred"


def test_a_further_process_goes_to_an_undecided_contender_dominated_by_process_spread_with_half_the_budget_left():
    spread = _series({"eager": 1.0, "a": 0.8, "b": 0.83}, rounds=8, offsets=(1.0, 1.08))
    race = Race(0.05, budget_s=10, entrants=Entrants("eager", most=3))
    wants = race.step(spread, _lap(spread, spent_s=1.0)).wants
    assert wants is not None and wants.variant in ("a", "b") and wants.share > 0.5
    race.asked(wants, started=False)  # could not start: not asked again
    again = race.step(spread, _lap(spread, spent_s=1.0)).wants
    assert again is None or again.variant != wants.variant
    assert Race(0.05, 10, Entrants("eager", most=3)).step(spread, _lap(spread, spent_s=6.0)).wants is None  # late
    assert Race(0.05, 10, Entrants("eager", most=2)).step(spread, _lap(spread, spent_s=1.0)).wants is None  # most
    costly = Entrants("eager", most=3, start_s=lambda variant: 5.0)  # its start would eat the rest of the budget
    assert Race(0.05, 10, costly).step(spread, _lap(spread, spent_s=1.0)).wants is None
    assert Race(0.05, 12, costly).step(spread, _lap(spread, spent_s=1.0)).wants is not None
    steady = _series({"eager": 1.0, "a": 0.8, "b": 0.83}, rounds=8)  # no process spread: rounds decide it
    assert Race(0.05, 10, Entrants("eager", most=3)).step(steady, _lap(steady, spent_s=1.0)).wants is None


def test_the_call_ranks_the_runner_up_first():
    series = _series({"eager": 1.0, "ort": 0.5, "openvino": 0.55, "traced": 0.9}, rounds=10)
    call = call_point(series, list(series), 0.05, None)
    assert call.leader == "ort" and [s.variant for s in call.standings] == ["openvino", "traced", "eager"]


class _Starts:
    """``more`` for the entrants: a further process per ask, each a scripted timer; the asks kept."""

    def __init__(self, ms: float):
        self.ms, self.asked = ms, []

    def __call__(self, variant: str):
        self.asked.append(variant)
        return ScriptedCost(self.ms)


def test_the_interleaved_rounds_race_stop_the_slow_keep_eager_and_start_processes_on_demand():
    starts = _Starts(1.0)
    timers = {"eager": [ScriptedCost(3.0), ScriptedCost(3.0)], "slow": [ScriptedCost(2.0), ScriptedCost(2.0)],
              "a": [ScriptedCost(1.0, 1.1), ScriptedCost(1.1)], "b": [ScriptedCost(1.0), ScriptedCost(1.0)]}
    result = measure_interleaved(timers, CPU, RACING, entrants=Entrants("eager", most=3, more=starts))
    assert result["slow"].stopped_by == STOPPED and result["slow"].race["outcome"] == "stopped"
    assert len(result["slow"].rounds) < len(result["eager"].rounds)  # not timed once stopped
    assert max(result["eager"].block_round) == max(max(m.block_round) for m in result.values())  # to the end
    assert starts.asked and set(starts.asked) <= {"a", "b"}  # only contenders get a further process
    grown = starts.asked[0]
    assert 2 in result[grown].block_process and result[grown].race["processes"][0]["started"]
    assert {result[n].race["outcome"] for n in ("a", "b")} == {"tie"}


def test_race_false_keeps_the_old_rule():
    timing = TimingSettings(mode="adaptive", race=False, warmup=0, warmup_s=0, target_rel_ci=0.5, max_time_s=30,
                            min_iterations=1, block_s=0.001, switch_in_below_s=0)
    result = measure_interleaved({"eager": ScriptedCost(3.0), "slow": ScriptedCost(2.0)}, CPU, timing,
                                 entrants=Entrants("eager"))
    assert {m.stopped_by for m in result.values()} == {"target_rel_ci"} and all(m.race is None for m in result.values())


@pytest.mark.parametrize("benchmark, where", [({"target_rel_ci": 0.02}, "benchmark.target_rel_ci"),
                                              ({"max_time_s": 10}, "benchmark.max_time_s"),
                                              ({"race": False, "budget_s": 5}, "benchmark.budget_s")])
def test_a_config_mixing_the_race_with_the_old_rule_is_refused_naming_the_key_and_the_fix(benchmark, where):
    from conftest import TINY_CONFIG
    from trtbench.config.config import config_from_dict
    from trtbench.core.errors import UserInputError

    config = {**TINY_CONFIG, "benchmark": {"mode": "adaptive", **benchmark}}
    with pytest.raises(UserInputError) as caught:
        config_from_dict(config)
    assert caught.value.where == where and ("race: false" in caught.value.hint or "race" in caught.value.hint)


def test_processes_default_to_four_at_most_when_raced_and_three_otherwise_and_the_rule_is_resolved(monkeypatch):
    from conftest import TINY_CONFIG
    from trtbench.config.config import config_from_dict
    from trtbench.workers.isolation import Replicates, replicates_of

    monkeypatch.delenv("TRTBENCH_PROCESSES")
    raced = config_from_dict({**TINY_CONFIG, "benchmark": {"mode": "adaptive"}}).benchmark
    assert raced.processes == 4 and replicates_of(raced) == Replicates(start=2, most=4)
    assert raced.timing.budget_s == BUDGET_S and raced.timing.target_rel_ci is None  # as the run records it
    full = config_from_dict({**TINY_CONFIG, "benchmark": {"mode": "adaptive", "race": False}}).benchmark
    assert full.processes == 3 and replicates_of(full) == Replicates(start=3, most=3)
    assert (full.timing.target_rel_ci, full.timing.max_time_s, full.timing.budget_s) == (0.02, 20.0, None)
    one = config_from_dict({**TINY_CONFIG, "benchmark": {"mode": "adaptive", "processes": 1}}).benchmark
    assert replicates_of(one) == Replicates(start=1, most=1)


def test_the_budget_ends_a_point_at_the_cycles_end_nearest_it():
    """A cycle of 2 s ending at 4 s of a 5 s budget ends the point there (the next would end 1 s past it, farther
    than 4 s falls short); cycles of 1 s go on to the one ending at 5 s."""
    noisy = _series({"eager": 1.0, "a": 0.8, "b": 0.83}, rounds=8, offsets=(1.0, 1.08))
    long_cycles = Race(0.05, budget_s=5, entrants=Entrants("eager"))
    assert long_cycles.step(noisy, _lap(noisy, spent_s=2.0)).stops == {}
    assert set(long_cycles.step(noisy, _lap(noisy, spent_s=4.0)).stops.values()) == {BUDGET}
    short_cycles = Race(0.05, budget_s=5, entrants=Entrants("eager"))
    assert all(short_cycles.step(noisy, _lap(noisy, spent_s=s)).stops == {} for s in (1.0, 2.0, 3.0, 4.0))
    assert set(short_cycles.step(noisy, _lap(noisy, spent_s=5.0)).stops.values()) == {BUDGET}


def test_the_budget_ends_a_point_mid_cycle_where_that_round_is_nearest_and_the_race_calls_only_at_cycle_ends():
    """Rounds of 2.1 s against a 6 s budget (single long calls, 2 processes): the third round, mid-cycle, ends the
    point at 6.3 s, where the second cycle would end at 8.4 s; mid-cycle, a round short of the budget decides
    nothing, not even a clear loser."""
    clear = _series({"eager": 1.0, "slow": 2.0, "fast": 0.5}, rounds=3)
    race = Race(0.05, budget_s=6, entrants=Entrants("eager"))
    steps = [race.step(clear, Lap(r, r // 2, dict.fromkeys(clear, 2), 2.1 * r, cycle_end=r % 2 == 0))
             for r in (1, 2, 3)]
    assert steps[0].stops == {} and steps[1].stops == {}  # before CAPPED_MIN_ROUNDS and RACE_MIN_CYCLES
    assert set(steps[2].stops) == set(clear) and set(steps[2].stops.values()) <= {BUDGET, DECIDED, STOPPED}
    early = Race(0.05, budget_s=60, entrants=Entrants("eager"))
    mid = early.step(_series({"eager": 1.0, "slow": 2.0, "fast": 0.5}, rounds=13),
                     Lap(13, 6, dict.fromkeys(clear, 2), 10.0, cycle_end=False))
    assert mid.stops == {} and mid.wants is None and early.stopped == {}


def test_a_reduced_rows_fp32_row_is_timed_on_while_that_row_races_then_stops():
    """``ov@int8`` leads; ``ov`` (its fp32 row) and ``ov@bf16`` are far behind: ``ov`` is out of the race but timed on
    while ``ov@int8`` races (its paired ratio over fp32 needs both), and stops with it once ``ov@int8`` is stopped."""
    series = _series({"eager": 1.0, "ov": 0.9, "ov@bf16": 0.5, "ov@int8": 0.2, "ort@int8": 0.21}, rounds=12)
    race = Race(0.05, budget_s=60, entrants=Entrants("eager", references={"ov@bf16": "ov", "ov@int8": "ov"}))
    step = race.step(series, _lap(series))
    assert step.stops == {"ov@bf16": STOPPED} and "ov" in race.stopped  # not a contender, still timed
    assert race.outcomes(series)["ov"]["outcome"] == "stopped"
    assert race.outcomes(series)["ov"]["text"].startswith("out of the race")  # timed on, not stopped early
    race.stopped["ov@int8"] = race.stopped["ov@bf16"]  # had ov@int8 fallen behind at the next cycle's end
    again = race.step({k: v for k, v in series.items() if k != "ov@bf16"},
                      _lap({k: v for k, v in series.items() if k != "ov@bf16"}))
    assert again.stops.get("ov") == STOPPED and again.stops.get("ov@int8") == STOPPED
    assert race.outcomes(series)["ov"]["text"].startswith("stopped early")  # it left with its last reduced row
