"""The generate scenario's replicate processes, without a model: how a point's rounds interleave the processes of
every decoder (the rounds latency's blocks take: trtbench/measure/rounds.py), how turns join, and the two-level
statistics the record gives. The requests come from a fake of trtbench's own decoder worker
(:class:`trtbench.workers.loop.Worker`: ``check(label)`` returning a :class:`~trtbench.workers.checked_call.CheckedCall`
whose output holds the request's step timestamps, as ``trtbench.building.decoder_recipe``'s calls return them); the
real workers run in tests/scenarios/generate/test_generate_run.py."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch

from helpers.timers import ScriptedCost

from trtbench.core.outdir import FailureLog
from trtbench.core.status import Status
from trtbench.measure.rounds import BlockAt, Rounds
from trtbench.measure.timing import TimingSettings, measure_interleaved
from trtbench.measure.trackers.energy import PointEnergy
from trtbench.scenarios.generate.scenario import GenerateSettings, _joined, _MemoryPlan, _rounds, _Row, _Timed
from trtbench.scenarios.generate.memory import MIB
from trtbench.scenarios.generate.report import process_line
from trtbench.scenarios.generate.result import (GeneratePoint, GenerateRecord, RequestSeries, process_count,
                                                requests_per_process, speedups_of)
from trtbench.workers.checked_call import CheckedCall
from trtbench.workers.loop import WorkerError

POINT = GeneratePoint(12, 4, 1)


class FakeDecoderWorker:
    """One replicate process of a decoder: each request takes ``e2e_ms`` x ``factor`` (its process's luck) x the
    round's shared drift, with 1% of noise, split evenly over the point's new tokens. Every call is logged."""

    def __init__(self, name: tuple[str, int], e2e_ms: float, factor: float, log: list, fail_at: int = -1):
        self.name, self.e2e_ms, self.factor, self.log, self.fail_at = name, e2e_ms, factor, log, fail_at
        self.rng = np.random.default_rng([*name[0].encode(), name[1]])
        self.process = SimpleNamespace(poll=lambda: None)  # alive: no SIGKILL to explain

    def check(self, label: str) -> CheckedCall:
        made = sum(1 for who in self.log if who == self.name)
        self.log.append(self.name)
        if made == self.fail_at:
            raise WorkerError(f"{self.name} died")
        drift = 1.0 + 0.3 * np.sin(made / 2)  # the machine's drift: shared by a round's requests
        e2e_s = self.e2e_ms * self.factor * drift * self.rng.normal(1.0, 0.01) / 1e3
        stamps = tuple(e2e_s * (k + 1) / POINT.new_tokens for k in range(POINT.new_tokens))
        return CheckedCall({"start": 0.0, "stamps": stamps, "tokens": np.zeros((1, 4)), "facts": {}}, {}, [], e2e_s)


def timed(tmp_path, factors: dict[str, list[float]], rounds: int = 12, fail: tuple = ()) -> tuple[dict, list]:
    """Every slot of ``factors`` (eager at 10 ms, the others at 5 ms) in one process per factor, timed in
    ``rounds`` rounds at POINT; the rows by slot and the order of the calls."""
    log: list = []
    workers = {slot: {i: FakeDecoderWorker((slot, i), 10.0 if slot == "eager" else 5.0, f, log,
                                           3 if (slot, i) == fail else -1) for i, f in enumerate(found)}
               for slot, found in factors.items()}
    rows = {slot: _Row() for slot in factors}
    ctx = SimpleNamespace(failures=FailureLog(tmp_path))
    settings = GenerateSettings(min_requests=rounds, max_requests=rounds)
    stopped = _rounds(ctx, workers, POINT, settings, rows, lambda: None)
    assert stopped == "max_requests"
    return rows, log


def test_a_round_is_one_request_of_every_decoder_its_processes_taking_the_rounds_in_turn(tmp_path):
    """As latency's rounds (trtbench/measure/rounds.py): round r is made by process r mod 3 of every decoder, the
    decoders' order rotating each cycle of 3 rounds; ``max_requests`` counts the requests of each process."""
    rows, log = timed(tmp_path, {"eager": [1.0, 1.0, 1.0], "exported": [1.0, 1.0, 1.0]}, rounds=4)
    cycle = [("eager", 0), ("exported", 0), ("eager", 1), ("exported", 1), ("eager", 2), ("exported", 2)]
    swapped = [("exported", 0), ("eager", 0), ("exported", 1), ("eager", 1), ("exported", 2), ("eager", 2)]
    assert log == cycle + swapped + cycle + swapped
    for row in rows.values():
        assert row.blocks == [(r % 3, r) for r in range(12)] and len(row.requests) == 12


def test_a_process_that_dies_fails_its_decoder_at_once_and_the_others_go_on(tmp_path):
    rows, log = timed(tmp_path, {"eager": [1.0, 1.0], "exported": [1.0, 1.0]}, rounds=5, fail=("exported", 1))
    assert rows["exported"].status is Status.FAILED and "exported (process 2) at p12-n4-b1" in rows["exported"].reason
    died = [k for k, who in enumerate(log) if who == ("exported", 1)][3]  # its fourth request, in round 7
    assert died in (14, 15) and not [who for who in log[died + 1:] if who[0] == "exported"], "it leaves at once"
    assert rows["eager"].status is Status.OK and rows["eager"].blocks == [(r % 2, r) for r in range(10)]


def test_the_speedup_interval_covers_the_processes_luck_that_one_process_alone_misses(tmp_path):
    """The issue's toy: one of three processes of a decoder is 8% slow. Its two-level interval holds both the fast
    processes' speedup (2.0) and the slow one's (1.85); process 0's rounds alone exclude the slow one's."""
    rows, _ = timed(tmp_path, {"eager": [1.0, 1.0, 1.0], "exported": [1.0, 1.0, 1.08]}, rounds=12)
    eager, exported = (RequestSeries(rows[s].requests, rows[s].blocks) for s in ("eager", "exported"))
    spread = speedups_of(exported, eager, {})["e2e_ms"]
    assert spread["low"] < 2.0 / 1.08 and spread["high"] > 2.0
    first = [tuple(zip(*[(q, b) for q, b in zip(row.requests, row.blocks) if b[0] == 0])) for row in (exported, eager)]
    alone = speedups_of(*[RequestSeries(list(q), list(b)) for q, b in first], {})["e2e_ms"]
    assert alone["low"] > 2.0 / 1.08 and alone["high"] - alone["low"] < (spread["high"] - spread["low"]) / 2
    assert speedups_of(eager, eager, {})["e2e_ms"] == {"value": 1.0, "low": 1.0, "high": 1.0}  # the reference's own


def test_a_later_turns_rounds_follow_the_earlier_ones_and_the_baseline_is_the_joined_eager(tmp_path):
    first, _ = timed(tmp_path, {"eager": [1.0], "exported": [1.0]}, rounds=3)
    second, _ = timed(tmp_path, {"eager": [1.0, 1.0], "exported": [1.0, 1.0]}, rounds=3)
    second = {slot: _Row(Status.OK, "", row.requests, [(p + 1, r) for p, r in row.blocks], row.tokens)
              for slot, row in second.items()}  # the second turn's processes 1 and 2
    shared = {"accuracy": {}, "reference_logits": None, "worker": {}, "stopped_by": "max_requests", "memory": {}}
    energies = [PointEnergy(None, idle_w=50.0, start={"temperature_c": 40}, end={"temperature_c": 60}),
                PointEnergy(None, idle_w=55.0, start={"temperature_c": 58}, end={"temperature_c": 70})]
    both = _joined(_joined(None, _Timed(first, {**shared, "energy": energies[0],
                                                "processes": {"eager": {0: {"pid": 10}}}})),
                   _Timed(second, {**shared, "energy": energies[1],
                                   "processes": {"eager": {1: {"pid": 11}, 2: {"pid": 12}}}}))
    rows, joined = both.rows, both.shared
    assert joined["processes"]["eager"] == {0: {"pid": 10}, 1: {"pid": 11}, 2: {"pid": 12}}  # each turn's facts
    # the point's energy: the first turn's idle draw and state at the start, the last turn's state at the end
    assert joined["energy"] == PointEnergy(None, idle_w=50.0, start={"temperature_c": 40}, end={"temperature_c": 70})
    assert rows["exported"].blocks == [(0, 0), (0, 1), (0, 2)] + [(1 + r % 2, 3 + r) for r in range(6)]
    assert joined["baseline"] is rows["eager"] and joined["stopped_by"] == "max_requests, then max_requests"
    assert joined["between"]["e2e_ms"] is not None  # three processes a row: the pooled between-process variance


def test_replicate_processes_take_turns_where_the_memory_budget_holds_too_few_sets():
    plan = _MemoryPlan({"eager": 600 * MIB, "exported": 400 * MIB}, 2500 * MIB, [["eager", "exported"]], {})
    assert plan.turns(0, 3) == [[0, 1], [2]]  # 1000 MiB a set: a second fits beside the first, not a third
    assert _MemoryPlan(plan.estimates, 3000 * MIB, plan.groups, {}).turns(0, 3) == [[0, 1, 2]]
    assert _MemoryPlan(plan.estimates, 1000 * MIB, plan.groups, {}).turns(0, 3) == [[0], [1], [2]]
    assert plan.turns(0, 1) == [[0]]


def _part(data: dict) -> GenerateRecord:
    return GenerateRecord("env", "m", 1, "p8-n3-b1", "eager", "eager", "fp32", Status.OK, "", data)


def test_the_report_states_the_process_count_and_old_records_read_as_one_process():
    old = GenerateRecord.from_dict({**_part({}).to_dict(), "data": {"requests": {"e2e_ms": [1.0, 2.0]}}})
    assert process_count(old.data) == 1
    assert "95% CI, 1 process x rounds" in process_line([old])
    three = _part({"requests": {}, "processes": 3, "process_turns": [[0, 1], [2]]})
    line = process_line([three])
    assert "95% CI, 3 processes x rounds" in line and "eager in 2 turns" in line
    rotated = {"requests": {"e2e_ms": [1.0] * 12}, "rounds": 12, "processes": 3}  # a request of one process a round
    every = {**rotated, "rounds": 4}  # written before the rounds rotated the processes: every process a round
    assert requests_per_process(rotated) == requests_per_process(every) == 4
    assert requests_per_process({"rounds": 5}) == 5
    assert "requests: requests per process x processes" in line


def test_a_latency_round_and_a_generate_round_go_through_the_one_engine(tmp_path, monkeypatch):
    """Followed through the calls, latency's blocks (measure_interleaved) and generate's requests (_rounds) are each
    timed from the engine's run (trtbench/measure/rounds.py), at the coordinates it gives, which each block keeps."""
    given: list[BlockAt] = []
    run = Rounds.run

    def spied(self, block, finished, tick=lambda: None):
        def noted(at: BlockAt) -> None:
            given.append(at)
            block(at)
        return run(self, noted, finished, tick)

    monkeypatch.setattr(Rounds, "run", spied)
    fixed = TimingSettings(mode="fixed", warmup=0, warmup_s=0, iterations=3, switch_in_below_s=0)
    latency = measure_interleaved({n: [ScriptedCost(1.0), ScriptedCost(2.0)] for n in ("a", "b")},
                                  torch.device("cpu"), fixed)
    for name, m in latency.items():
        assert [(at.process, at.round) for at in given if at.variant == name] == list(
            zip(m.block_process, m.block_round)) == [(r % 2, r) for r in range(6)]
    given.clear()
    rows, _ = timed(tmp_path, {"eager": [1.0, 1.0], "exported": [1.0, 1.0]}, rounds=3)
    for slot, row in rows.items():
        assert [(at.process, at.round) for at in given if at.variant == slot] == row.blocks == [
            (r % 2, r) for r in range(6)]
