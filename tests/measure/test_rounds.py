"""The interleaved rounds (trtbench/measure/rounds.py) that latency's blocks and generate's requests are timed in:
the order, the process turns, the stops asked after each round (at a cycle's end or not) and a variant leaving at
once. Followed through latency
and generate: tests/measure/test_measurement.py and tests/scenarios/generate/test_generate_processes.py."""

from __future__ import annotations

from trtbench.measure.rounds import BlockAt, Rounds


def test_processes_take_the_rounds_in_turn_and_the_order_rotates_each_cycle():
    rounds, timed, ticks, asked = Rounds({"a": 2, "b": 1}), [], [], []

    def finished(at: Rounds) -> dict[str, str]:
        asked.append((at.rounds, at.cycles, at.at_cycle_end))
        return dict.fromkeys(at.active, "enough") if at.cycles == 2 else {}

    rounds.run(timed.append, finished, lambda: ticks.append(len(timed)))
    assert [(at.variant, at.process) for at in timed] == [("a", 0), ("b", 0), ("a", 1), ("b", 0),  # cycle 0
                                                          ("b", 0), ("a", 0), ("b", 0), ("a", 1)]  # rotated
    assert [at.round for at in timed] == [0, 0, 1, 1, 2, 2, 3, 3] and ticks == [2, 4, 6, 8]
    assert asked == [(1, 0, False), (2, 1, True), (3, 1, False), (4, 2, True)], "asked after each round"
    assert rounds.stopped_by == {"a": "enough", "b": "enough"} and not rounds.active


def test_a_variant_that_stops_leaves_at_a_cycles_end_and_one_that_fails_at_once():
    rounds, timed = Rounds({"a": 1, "b": 1, "c": 1}), []

    def block(at: BlockAt) -> None:
        timed.append(at)
        if (at.variant, at.round) == ("c", 1):
            rounds.leave("a")  # a fails while c is timed, before a's turn in the round: the round goes on without it

    def finished(at: Rounds) -> dict[str, str]:
        return {"c": "precise"} if at.rounds == 2 else dict.fromkeys(at.active, "cap") if at.rounds == 3 else {}

    rounds.run(block, finished)
    assert [(at.variant, at.round) for at in timed] == [("a", 0), ("b", 0), ("c", 0), ("b", 1), ("c", 1), ("b", 2)]
    assert rounds.stopped_by == {"c": "precise", "b": "cap"}, "a failed: it was not stopped"
